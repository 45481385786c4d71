/*
 * libFuzzer target: the Avro interpreter (csrc/fkc_avro.c).
 *
 * Input: byte 0 < 0x80 picks one of the compiled programs in
 * fuzz_avro_programs.inc (tests/fuzz/make_avro_seeds.py writes them and the
 * seeds); byte 1 says how many payloads (1-4) the rest is split into,
 * evenly. Byte 0 >= 0x80: the input carries its own program (byte 1 = how
 * many int32s, little-endian, follow; then the payloads' bytes), which
 * must pass fkc_avro_check_program() before it runs: the check itself is
 * fuzzed, and a program it admits must never read out of bounds. Such a
 * program's bounds are clamped (depth 64, 4096 empty values) to keep runs
 * short.
 *
 * Checks beyond the sanitizers (trap on a violation): the tape honours
 * fkc_avro.h's contract, walked by the same program as the object builder
 * walks it (every offset and length inside its payload, strings valid
 * UTF-8, counts and branches in range, each payload's entries exactly
 * [starts[i], starts[i + 1])); an error names a payload before the count
 * and an offset inside it; the same input decoded twice gives the same
 * tape and the same answer. A built-in program with an Arrow plan also
 * reads the payloads into Arrow columns (csrc/fkc_avro_arrow.c): it fails
 * at the payload, offset and reason phase 1 failed at (or refuses a value
 * of an earlier payload with a typed error), else builds an array of every
 * row; the export is walked as a consumer reads it (arrow_walk.h) and
 * released with a child moved out, in an order the last input byte picks;
 * releasing frees everything (the leak checker of `make fuzz` sees what is
 * left).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_avro.h"
#include "fkc_avro_arrow.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#include "plan_mutation.h" /* fuzz_plan */

typedef fuzz_plan avro_fuzz_plan; /* the name fuzz_avro_programs.inc uses */

#include "fuzz_avro_programs.inc"

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if (!(x))                                                                                                      \
            __builtin_trap();                                                                                          \
    } while (0)

#include "arrow_walk.h"

typedef struct walk {
    const int32_t *code;
    const int64_t *tape;
    size_t pos, end;
    const uint8_t *payload;
    size_t payload_len;
} walk;

static int64_t next(walk *w)
{
    CHECK(w->pos < w->end);
    return w->tape[w->pos++];
}

static void blob(walk *w, int utf8)
{
    int64_t off = next(w), len = next(w);
    CHECK(off >= 0 && len >= 0 && (uint64_t)off <= w->payload_len && (uint64_t)len <= w->payload_len - (uint64_t)off);
    if (utf8)
        CHECK(fkc_utf8_valid(w->payload + off, (size_t)len));
}

static void walk_value(walk *w, int32_t pc, int depth)
{
    const int32_t *op = w->code + pc;
    CHECK(depth <= 1000);
    switch (op[0]) {
    case FKC_AVRO_OP_SCALAR: {
        if (op[3]) {
            int64_t at = next(w);
            CHECK(at >= 0 && (uint64_t)at <= w->payload_len);
        }
        switch (op[1]) {
        case FKC_AVRO_NULL:
            break;
        case FKC_AVRO_BOOLEAN: {
            int64_t b = next(w);
            CHECK(b == 0 || b == 1);
            break;
        }
        case FKC_AVRO_INT: {
            int64_t v = next(w);
            CHECK(v >= INT32_MIN && v <= INT32_MAX);
            break;
        }
        case FKC_AVRO_LONG:
        case FKC_AVRO_DOUBLE:
            next(w);
            break;
        case FKC_AVRO_FLOAT: {
            int64_t v = next(w);
            CHECK(v >= 0 && v <= (int64_t)UINT32_MAX);
            break;
        }
        case FKC_AVRO_BYTES:
        case FKC_AVRO_STRING:
            blob(w, op[2] == FKC_AVRO_STRING);
            break;
        default: {
            int64_t off = next(w);
            CHECK(off >= 0 && (uint64_t)off <= w->payload_len && (uint64_t)op[4] <= w->payload_len - (uint64_t)off);
        }
        }
        return;
    }
    case FKC_AVRO_OP_ENUM: {
        int64_t i = next(w);
        CHECK(i >= 0 && i < op[1] && op[2 + 2 * i] >= 0);
        return;
    }
    case FKC_AVRO_OP_UNION: {
        int64_t i = next(w);
        CHECK(i >= 0 && i < op[1] && op[2 + 2 * i] >= 0);
        walk_value(w, op[2 + 2 * i], depth + 1);
        return;
    }
    case FKC_AVRO_OP_RECORD:
        for (int32_t i = 0; i < op[1]; i++)
            if (op[5 + 2 * i] >= 0)
                walk_value(w, op[4 + 2 * i], depth + 1);
        return;
    default: { /* array, map */
        int64_t n = next(w);
        CHECK(n >= 0);
        for (int64_t i = 0; i < n; i++) {
            if (op[0] == FKC_AVRO_OP_MAP)
                blob(w, 1);
            walk_value(w, op[1], depth + 1);
        }
    }
    }
}

static size_t run(const int32_t *code, size_t code_len, const uint8_t *const *ptrs, const size_t *lens, size_t count,
                  int allow_trailing, fkc_avro_tape *tape, size_t *starts, fkc_avro_error *err)
{
    memset(tape, 0, sizeof *tape);
    size_t done = fkc_avro_decode_many(code, code_len, ptrs, lens, count, allow_trailing, tape, starts, err);
    CHECK(done <= count);
    if (done < count) {
        CHECK(err->index == done);
        CHECK(err->nomem || err->offset <= lens[done]);
        CHECK(err->what != NULL && err->problem != NULL);
    }
    for (size_t i = 0; i < done; i++) {
        /* starts[i + 1] is set: the next payload's start, or the end after the last */
        walk w = {code, tape->v, starts[i], starts[i + 1], ptrs[i], lens[i]};
        walk_value(&w, code[1], 0);
        CHECK(w.pos == w.end);
    }
    return done;
}

/* The payloads straight into Arrow columns: they must fail where and why
 * phase 1 failed (`done` payloads read whole, `read` its error), unless a
 * value of an earlier payload is refused first. */
static void run_arrow(const avro_fuzz_plan *fp, const int32_t *code, size_t code_len, const uint8_t *const *ptrs,
                      const size_t *lens, size_t count, int allow_trailing, size_t done, const fkc_avro_error *read,
                      unsigned order)
{
    fkc_avro_arrow_plan plan = {code,          code_len,      fp->columns, fp->column_words / FKC_AA_COL_WIDTH,
                                fp->steps,     fp->steps_len, fp->strings, fp->strings_len,
                                fp->root_step};
    CHECK(fkc_avro_arrow_check(&plan));
    struct ArrowArray array;
    struct ArrowSchema schema;
    fkc_avro_arrow_error err;
    fkc_avro_error rerr;
    /* in two chunks, as decode_arrow appends them: the second chunk's rows
     * go on after the first's, and a column error names a row of all */
    fkc_avro_arrow_builder *b = fkc_avro_arrow_start(&plan, count);
    CHECK(b != NULL);
    size_t half = count / 2, base = 0;
    int rc = fkc_avro_arrow_append(b, ptrs, lens, half, allow_trailing, &rerr, &err);
    if (rc == FKC_AA_OK) {
        base = half;
        rc = fkc_avro_arrow_append(b, ptrs + half, lens + half, count - half, allow_trailing, &rerr, &err);
    }
    if (rc != FKC_AA_OK) {
        fkc_avro_arrow_discard(b);
        if (rc == FKC_AA_READ) {
            /* the same words (each file has its own copy of the literals) */
            CHECK(done < count && base + rerr.index == done && rerr.offset == read->offset &&
                  strcmp(rerr.what, read->what) == 0 && strcmp(rerr.problem, read->problem) == 0);
            return;
        }
        CHECK(rc == FKC_AA_VALUE && err.index < count && err.what != NULL && err.problem != NULL);
        CHECK(err.index < done || done == count);
        return;
    }
    CHECK(done == count);
    rc = fkc_avro_arrow_finish(b, &array, &schema, &err);
    CHECK(rc == FKC_AA_OK);
    CHECK(array.length == (int64_t)count && array.release != NULL && schema.release != NULL);
    aw_walk(&array, &schema, 0);
    aw_release(&array, &schema, order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int32_t own[256];
    const int32_t *code;
    size_t code_len;
    const avro_fuzz_plan *arrow_plan = NULL;
    const uint8_t *rest;
    size_t rest_len;
    size_t count;
    if (data[0] < 0x80) {
        size_t which = data[0] % (sizeof avro_programs / sizeof avro_programs[0]);
        code = avro_programs[which];
        code_len = avro_program_lengths[which];
        if (avro_plans[which].columns != NULL)
            arrow_plan = &avro_plans[which];
        count = (size_t)(data[1] % 4) + 1;
        rest = data + 2;
        rest_len = size - 2;
    } else {
        code_len = data[1];
        if (size - 2 < code_len * 4)
            return 0;
        for (size_t i = 0; i < code_len; i++) {
            const uint8_t *p = data + 2 + 4 * i;
            own[i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        }
        if (!fkc_avro_check_program(own, code_len))
            return 0;
        if (own[2] > 64)
            own[2] = 64;
        if (own[3] > 4096)
            own[3] = 4096;
        code = own;
        count = 1;
        rest = data + 2 + 4 * code_len;
        rest_len = size - 2 - 4 * code_len;
    }
    const uint8_t *ptrs[4];
    size_t lens[4], starts[5];
    size_t each = rest_len / count;
    for (size_t i = 0; i < count; i++) {
        ptrs[i] = rest + i * each;
        lens[i] = i + 1 == count ? rest_len - i * each : each;
    }
    int allow_trailing = (size & 1) != 0;
    fkc_avro_tape t1, t2;
    fkc_avro_error e1, e2;
    size_t starts2[5];
    size_t d1 = run(code, code_len, ptrs, lens, count, allow_trailing, &t1, starts, &e1);
    size_t d2 = run(code, code_len, ptrs, lens, count, allow_trailing, &t2, starts2, &e2);
    CHECK(d1 == d2 && t1.len == t2.len);
    CHECK(t1.len == 0 || memcmp(t1.v, t2.v, t1.len * sizeof(int64_t)) == 0);
    if (d1 < count)
        CHECK(e1.offset == e2.offset && e1.what == e2.what && e1.problem == e2.problem);
    if (arrow_plan != NULL && !(d1 < count && e1.nomem))
        run_arrow(arrow_plan, code, code_len, ptrs, lens, count, allow_trailing, d1, &e1, data[size - 1]);
    fkc_avro_tape_free(&t1);
    fkc_avro_tape_free(&t2);
    return 0;
}
