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
 * The Arrow sink (csrc/fkc_protobuf_arrow.c): a built-in program with an
 * Arrow plan (programs 2.., compiled by protobuf_arrow.py) also turns the
 * payloads read whole into one struct array, appended in two chunks as
 * decode_arrow appends its tapes; the plan must pass fkc_pb_arrow_check().
 * The build either refuses a value with a typed error naming a payload and
 * a byte inside it, or exports exactly one row per payload, which
 * arrow_walk.h walks as a consumer would and releases with a child moved
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

/* The Arrow sink over payloads [0, done) of a tape, by a plan that passed the check. */
static void run_arrow(const fkc_pb_arrow_plan *plan, const fkc_pb_tape *tape, const size_t *starts,
                      const uint8_t *const *ptrs, const size_t *lens, size_t done, unsigned order)
{
    struct ArrowArray array;
    struct ArrowSchema schema;
    fkc_tc_error err;
    fkc_pb_arrow_builder *b = fkc_pb_arrow_start(plan, done);
    CHECK(b != NULL);
    /* in two chunks, as decode_arrow appends its tapes: the second chunk's
     * rows go on after the first's, and an error names a payload of all */
    size_t half = done / 2;
    int rc = fkc_pb_arrow_append(b, tape, starts, ptrs, half, &err);
    if (rc == FKC_TC_OK)
        rc = fkc_pb_arrow_append(b, tape, starts + half, ptrs + half, done - half, &err);
    if (rc != FKC_TC_OK) {
        fkc_pb_arrow_discard(b);
        CHECK(rc == FKC_TC_VALUE && err.kind == rc && err.index < done && err.what != NULL && err.problem != NULL);
        CHECK(err.offset <= lens[err.index]);
        return;
    }
    rc = fkc_pb_arrow_finish(b, &array, &schema, &err);
    CHECK(rc == FKC_TC_OK);
    CHECK(array.length == (int64_t)done && strcmp(schema.format, "+s") == 0);
    aw_walk(&array, &schema, 0);
    aw_release(&array, &schema, order);
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
            run_arrow(&plan, &tape, starts, ptrs, lens, done, data[size - 1]);
    }
    free_plan(&op);
    fkc_pb_tape_free(&tape);
    fkc_pb_tape_free(&tape2);
    free(own);
    return 0;
}
