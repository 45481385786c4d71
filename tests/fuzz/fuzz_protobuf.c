/*
 * libFuzzer target: the Protobuf interpreter (csrc/fkc_protobuf.c).
 *
 * Input: byte 0 < 0x80 picks one of the compiled programs in
 * fuzz_protobuf_programs.inc (tests/fuzz/make_protobuf_seeds.py writes them
 * and the seeds); byte 1 % 4 + 1 says how many payloads the rest is split
 * into, evenly. Byte 0 >= 0x80: the input carries its own program (byte 1 =
 * how many int32s, little-endian, follow; then the payloads' bytes), which
 * must pass fkc_pb_check_program() before it runs: the check itself is
 * fuzzed, and a program it admits must never read out of bounds.
 *
 * Checks beyond the sanitizers (trap on a violation): the tape honours
 * fkc_protobuf.h's contract, walked with the program as the object builder
 * walks it (every frame's entry count and word count exact, slots inside
 * their message, strings and bytes inside their payload, strings valid
 * UTF-8, bools 0/1, 32-bit kinds in range, each payload's frame exactly
 * [starts[i], starts[i + 1])); an error names a payload before the count
 * and an offset inside it; the same input decoded twice gives the same
 * tape and the same answer.
 *
 * The Arrow builder (csrc/fkc_protobuf_arrow.c): a built-in program with an
 * Arrow plan (programs 2.., compiled by protobuf_arrow.py) also turns the
 * payloads into one struct array twice, each appended in two chunks as
 * decode_arrow appends them; the plan must pass fkc_pb_arrow_check(). Once
 * by the tape walk over the payloads read whole (append_tape), once by
 * append(), whose in-order reader writes a payload in field order straight
 * into the columns and takes any other back to the tape. Both must end
 * alike: the same read error (payload, offset, words), or the same refused
 * value (a typed error naming a payload and a byte inside it), or exactly
 * one row per payload with equal rows (aw_row_digest), each array walked
 * as a consumer would (arrow_walk.h: null counts, offsets and lengths
 * agreeing, which a bad rollback breaks) and released with a child moved
 * out (the order from the last input byte).
 *
 * The plan check: byte 1 >= 0x80 (a built-in program) puts plan mutations
 * before the payloads: ((byte 1 >> 2) & 3) + 1 of them, six bytes each:
 * which words (% 4: columns, steps, strings, the root step), the word's
 * index (two bytes, little-endian, modulo the words), how (% 4: set to,
 * add, flip bit, copy the word at an index), and two operands. A mutated
 * plan the check refuses is dropped; one it admits must build memory-safe
 * and export an array that walks clean, like a compiled one.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_protobuf.h"
#include "fkc_protobuf_arrow.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if (!(x))                                                                                                      \
            __builtin_trap();                                                                                          \
    } while (0)

#include "arrow_walk.h"

#include "plan_mutation.h"

typedef fuzz_plan pb_fuzz_plan; /* the name fuzz_protobuf_programs.inc uses */

#include "fuzz_protobuf_programs.inc"

typedef struct walk {
    const int32_t *code;
    const int64_t *tape;
    const uint8_t *payload;
    size_t payload_len;
} walk;

/* The frame at `pos` of message m; returns the position after it. */
static size_t walk_frame(const walk *w, size_t pos, size_t limit, int32_t m, int depth)
{
    CHECK(depth <= 1001);
    CHECK(limit - pos >= FKC_PB_FRAME);
    int64_t count = w->tape[pos], words = w->tape[pos + 1], off = w->tape[pos + 2];
    CHECK(count >= 0 && words >= 0 && (uint64_t)words <= limit - pos - FKC_PB_FRAME);
    CHECK(off >= 0 && (uint64_t)off <= w->payload_len);
    size_t p = pos + FKC_PB_FRAME, end = p + (size_t)words;
    const int32_t *msg = w->code + w->code[FKC_PB_HEADER + m];
    const int32_t *fields = msg + FKC_PB_MSG_HEAD + msg[1];
    int64_t seen = 0;
    while (p < end) {
        int64_t slot = w->tape[p++];
        CHECK(slot >= 0 && slot < msg[0]);
        const int32_t *f = fields + slot * FKC_PB_FIELD_WIDTH;
        int32_t kind = f[1];
        if (kind == FKC_PB_MESSAGE) {
            p = walk_frame(w, p, end, f[4], depth + 1);
        } else if (kind == FKC_PB_STRING || kind == FKC_PB_BYTES) {
            CHECK(end - p >= 2);
            int64_t o = w->tape[p], len = w->tape[p + 1];
            CHECK(o >= 0 && len >= 0 && (uint64_t)o <= w->payload_len && (uint64_t)len <= w->payload_len - (uint64_t)o);
            if (kind == FKC_PB_STRING)
                CHECK(fkc_utf8_valid(w->payload + o, (size_t)len));
            p += 2;
        } else {
            CHECK(end - p >= 1);
            int64_t v = w->tape[p++];
            if (kind == FKC_PB_BOOL)
                CHECK(v == 0 || v == 1);
            else if (kind == FKC_PB_INT32 || kind == FKC_PB_ENUM || kind == FKC_PB_SINT32 || kind == FKC_PB_SFIXED32)
                CHECK(v >= INT32_MIN && v <= INT32_MAX);
            else if (kind == FKC_PB_UINT32 || kind == FKC_PB_FIXED32 || kind == FKC_PB_FLOAT)
                CHECK(v >= 0 && v <= (int64_t)UINT32_MAX);
        }
        seen++;
    }
    CHECK(p == end && seen == count);
    return end;
}

static size_t run(const int32_t *code, size_t code_len, const uint8_t *const *ptrs, const size_t *lens, size_t n,
                  fkc_pb_tape *tape, size_t *starts, fkc_pb_error *err)
{
    size_t done = fkc_pb_decode_many(code, code_len, ptrs, lens, n, tape, starts, err);
    CHECK(done <= n);
    if (done < n) {
        CHECK(err->index == done);
        if (!err->nomem)
            CHECK(err->offset <= lens[done] && err->what != NULL && err->problem != NULL);
    }
    for (size_t i = 0; i < done; i++) {
        walk w = {code, tape->v, ptrs[i], lens[i]};
        size_t limit = starts[i + 1]; /* set for i + 1 <= done: also when payload done failed */
        CHECK(walk_frame(&w, starts[i], limit, code[2], 0) == limit);
    }
    return done;
}

/* One build of payloads [0, n) by a checked plan, appended in two chunks as
 * decode_arrow appends (the second chunk's rows go on after the first's, and
 * an error names a payload of all): by the tape walk (append_tape over the
 * tape's payloads [0, done), then the read error of payload done, if any)
 * or by append() (the in-order reader, which falls back to the tape). */
typedef struct built {
    int rc;             /* FKC_TC_OK, a column failure, or FKC_PA_READ */
    fkc_tc_error err;   /* a column failure */
    fkc_pb_error read;  /* FKC_PA_READ: index from the first payload of all */
    struct ArrowArray array;
    struct ArrowSchema schema;
} built;

static void build(built *out, const fkc_pb_arrow_plan *plan, const fkc_pb_tape *tape, const size_t *starts,
                  const uint8_t *const *ptrs, const size_t *lens, size_t n, size_t done, const fkc_pb_error *read)
{
    fkc_pb_arrow_builder *b = fkc_pb_arrow_start(plan, n);
    CHECK(b != NULL);
    size_t half = (tape != NULL ? done : n) / 2;
    int rc;
    if (tape != NULL) {
        rc = fkc_pb_arrow_append_tape(b, tape, starts, ptrs, half, &out->err);
        if (rc == FKC_TC_OK)
            rc = fkc_pb_arrow_append_tape(b, tape, starts + half, ptrs + half, done - half, &out->err);
        if (rc == FKC_TC_OK && done < n) {
            rc = FKC_PA_READ;
            out->read = *read;
        }
    } else {
        rc = fkc_pb_arrow_append(b, ptrs, lens, half, &out->read, &out->err);
        if (rc == FKC_TC_OK) {
            rc = fkc_pb_arrow_append(b, ptrs + half, lens + half, n - half, &out->read, &out->err);
            if (rc == FKC_PA_READ)
                out->read.index += half;
        }
    }
    out->rc = rc;
    if (rc != FKC_TC_OK) {
        fkc_pb_arrow_discard(b);
        return;
    }
    rc = fkc_pb_arrow_finish(b, &out->array, &out->schema, &out->err);
    CHECK(rc == FKC_TC_OK);
    CHECK(out->array.length == (int64_t)n && strcmp(out->schema.format, "+s") == 0);
    aw_walk(&out->array, &out->schema, 0);
}

/* The Arrow builds of payloads [0, n): the tape walk, and append() with its
 * in-order reader, which must agree on every row and every error. */
static void run_arrow(const fkc_pb_arrow_plan *plan, const fkc_pb_tape *tape, const size_t *starts,
                      const uint8_t *const *ptrs, const size_t *lens, size_t n, size_t done,
                      const fkc_pb_error *read, unsigned order)
{
    built by_tape, in_order;
    build(&by_tape, plan, tape, starts, ptrs, lens, n, done, read);
    build(&in_order, plan, NULL, NULL, ptrs, lens, n, done, read);
    CHECK(in_order.rc == by_tape.rc);
    if (by_tape.rc == FKC_PA_READ) {
        CHECK(in_order.read.index == by_tape.read.index && in_order.read.offset == by_tape.read.offset);
        CHECK(strcmp(in_order.read.what, by_tape.read.what) == 0);
        CHECK(strcmp(in_order.read.problem, by_tape.read.problem) == 0);
        return;
    }
    if (by_tape.rc != FKC_TC_OK) {
        fkc_tc_error *e = &by_tape.err, *f = &in_order.err;
        CHECK(by_tape.rc == FKC_TC_VALUE && e->kind == by_tape.rc && e->index < done && e->what != NULL &&
              e->problem != NULL);
        CHECK(e->offset <= lens[e->index]);
        CHECK(f->kind == e->kind && f->index == e->index && f->offset == e->offset);
        CHECK(strcmp(f->what, e->what) == 0 && strcmp(f->problem, e->problem) == 0);
        return;
    }
    for (int64_t row = 0; row < (int64_t)n; row++)
        CHECK(aw_row_digest(&by_tape.array, &by_tape.schema, row) ==
              aw_row_digest(&in_order.array, &in_order.schema, row));
    aw_release(&by_tape.array, &by_tape.schema, order);
    aw_release(&in_order.array, &in_order.schema, order >> 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const int32_t *code;
    size_t code_len;
    int32_t *own = NULL;
    size_t at = 2;
    const pb_fuzz_plan *arrow_plan = NULL;
    const uint8_t *mutations = NULL;
    size_t nmutations = 0;
    if (data[0] < 0x80) {
        size_t k = data[0] % (sizeof(pb_programs) / sizeof(pb_programs[0]));
        code = pb_programs[k];
        code_len = pb_program_lens[k];
        if (pb_plans[k].columns != NULL)
            arrow_plan = &pb_plans[k];
        if (!take_mutations(data, size, &at, &mutations, &nmutations))
            return 0;
    } else {
        code_len = data[1];
        if (size - at < code_len * 4)
            return 0;
        own = malloc((code_len ? code_len : 1) * sizeof(int32_t));
        if (own == NULL)
            return 0;
        for (size_t i = 0; i < code_len; i++) {
            const uint8_t *b = data + at + 4 * i;
            own[i] = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        }
        at += code_len * 4;
        code = own;
    }
    if (!fkc_pb_check_program(code, code_len)) {
        CHECK(own != NULL); /* the built-in programs are well-formed */
        free(own);
        return 0;
    }
    size_t n = data[0] < 0x80 ? (size_t)(data[1] % 4) + 1 : 1;
    size_t rest = size - at, each = rest / n;
    const uint8_t *ptrs[4];
    size_t lens[4], starts[5], starts2[5];
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = data + at + i * each;
        lens[i] = i + 1 < n ? each : rest - i * each;
    }
    /* the second read reserves at most 8 words at once: every payload of
     * more than 2 bytes is read with the checked growth a large one gets,
     * and must give the same tape */
    fkc_pb_tape tape = {NULL, 0, 0, 0}, tape2 = {NULL, 0, 0, 8};
    fkc_pb_error err, err2;
    size_t done = run(code, code_len, ptrs, lens, n, &tape, starts, &err);
    size_t done2 = run(code, code_len, ptrs, lens, n, &tape2, starts2, &err2);
    CHECK(done == done2 && tape.len == tape2.len);
    CHECK(tape.len == 0 || memcmp(tape.v, tape2.v, tape.len * sizeof(int64_t)) == 0);
    for (size_t i = 0; i < done; i++) /* the room the reader reserves before a payload (tape_room) */
        CHECK(starts[i + 1] - starts[i] <= 2 * lens[i] + FKC_PB_FRAME);
    if (done < n)
        CHECK(err.offset == err2.offset && strcmp(err.what, err2.what) == 0 && strcmp(err.problem, err2.problem) == 0);
    owned_plan op = {0};
    if (arrow_plan != NULL && !(done < n && err.nomem) && own_plan(&op, arrow_plan)) {
        for (size_t i = 0; i < nmutations; i++)
            mutate(&op, mutations + i * MUTATION);
        fkc_pb_arrow_plan plan = {code,       code_len,         op.columns, op.column_words / FKC_TC_COL_WIDTH,
                                  op.steps,   op.steps_len,     op.strings, op.strings_len,
                                  op.root_step};
        int ok = fkc_pb_arrow_check(&plan);
        CHECK(ok || nmutations > 0); /* the compiled plans pass */
        if (ok)
            run_arrow(&plan, &tape, starts, ptrs, lens, n, done, &err, data[size - 1]);
    }
    free_plan(&op);
    fkc_pb_tape_free(&tape);
    fkc_pb_tape_free(&tape2);
    free(own);
    return 0;
}
