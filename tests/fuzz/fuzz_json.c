/*
 * libFuzzer target: the JSON -> Arrow parser (csrc/fkc_json_arrow.c).
 *
 * Input: byte 0 picks one of the compiled plans in fuzz_json_plans.inc
 * (tests/fuzz/make_json_seeds.py writes them and the seeds); byte 1 % 4 + 1
 * says how many payloads the rest is split into, evenly. Byte 1 >= 0x80
 * puts plan mutations before the payloads: ((byte 1 >> 2) & 3) + 1 of them
 * (plan_mutation.h's take_mutations says how they read). A mutated plan the
 * check refuses is dropped; one it admits must build memory-safely and export an array that
 * walks clean, like a compiled one. Byte 1 & 0x40 (with at most MANY_BYTES
 * of payloads) builds more rows than the parser's first chunk (MANY + 1 + ((byte 1 >> 4) & 3)), the payloads
 * repeated in turn, so that the columns are presized from that chunk and
 * grow past it.
 *
 * Checks beyond the sanitizers (trap on a violation): a build either
 * exports exactly one row per payload, which arrow_walk.h walks as a
 * consumer would and releases with a child moved out (the order from the
 * last input byte), or declines naming a payload before the count and a
 * byte inside it with a reason; nothing else (no out-of-memory here, no
 * capacity with inputs this small). The same input built twice gives the
 * same answer, row for row. And a payload's answer does not depend on its
 * neighbours: each payload built alone declines as the batch does at its
 * first declined payload, or every one builds a row whose value is the
 * batch's row (the parser keeps per-payload state between rows: depth,
 * scratch text, the map keys seen in a row, the presized columns); and
 * fkc_ja_verdicts() gives each row the verdict of its payload alone.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_json_arrow.h"

#include "arrow_walk.h" /* CHECK, aw_walk, aw_row_digest, aw_release */
#include "plan_mutation.h"

#include "fuzz_json_plans.inc"

#define MANY 1024 /* fkc_ja_build's chunk: the columns are presized after the first */
#define MAX_PAYLOADS 4
/* the many-row mode only for payloads this short in all: it is about the
 * columns presized from the first chunk, and builds every row three times
 * (each row digested), which would slow the run to a few hundred inputs a
 * second for long ones */
#define MANY_BYTES 256

typedef struct built {
    int rc;
    fkc_ja_error err;
    struct ArrowArray array;
    struct ArrowSchema schema;
} built;

/* One build and what every build must be (see the top). */
static void build(const fkc_ja_plan *plan, const uint8_t *const *ptrs, const size_t *lens, size_t count, built *b)
{
    b->rc = fkc_ja_build(plan, ptrs, lens, count, &b->array, &b->schema, &b->err);
    if (b->rc == FKC_JA_OK) {
        CHECK(b->array.length == (int64_t)count);
        aw_walk(&b->array, &b->schema, 0);
    } else {
        CHECK(b->rc == FKC_JA_DECLINED && b->err.kind == b->rc && b->err.problem != NULL);
        CHECK(b->err.index < count && b->err.offset <= lens[b->err.index]);
    }
}

static void release(built *b, unsigned order)
{
    if (b->rc == FKC_JA_OK)
        aw_release(&b->array, &b->schema, order);
}

static int same_decline(const fkc_ja_error *a, const fkc_ja_error *b)
{
    return a->index == b->index && a->offset == b->offset && strcmp(a->problem, b->problem) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const fuzz_plan *fp = &ja_plans[data[0] % (sizeof(ja_plans) / sizeof(ja_plans[0]))];
    size_t at = 2, nmutations;
    const uint8_t *mutations;
    if (!take_mutations(data, size, &at, &mutations, &nmutations))
        return 0;
    owned_plan op = {0};
    if (!own_plan(&op, fp)) {
        free_plan(&op);
        return 0;
    }
    for (size_t i = 0; i < nmutations; i++)
        mutate(&op, mutations + i * MUTATION);
    fkc_ja_plan plan = {op.columns, op.column_words / FKC_TC_COL_WIDTH, op.steps, op.steps_len,
                        op.strings, op.strings_len, op.root_step};
    int ok = fkc_ja_check(&plan);
    CHECK(ok || nmutations > 0); /* the compiled plans pass */
    if (!ok) {
        free_plan(&op);
        return 0;
    }
    size_t n = (size_t)(data[1] % MAX_PAYLOADS) + 1;
    size_t rest = size - at, each = rest / n;
    const uint8_t *ptrs[MAX_PAYLOADS];
    size_t lens[MAX_PAYLOADS];
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = data + at + i * each;
        lens[i] = i + 1 < n ? each : rest - i * each;
    }
    /* the rows: the payloads once, or in turn past the first chunk */
    size_t rows = data[1] & 0x40 && rest <= MANY_BYTES ? MANY + 1 + (size_t)((data[1] >> 4) & 3) : n;
    const uint8_t **row_ptrs = malloc(rows * sizeof *row_ptrs);
    size_t *row_lens = malloc(rows * sizeof *row_lens);
    if (row_ptrs == NULL || row_lens == NULL) {
        free(row_ptrs);
        free(row_lens);
        free_plan(&op);
        return 0;
    }
    for (size_t i = 0; i < rows; i++) {
        row_ptrs[i] = ptrs[i % n];
        row_lens[i] = lens[i % n];
    }

    built first, second;
    build(&plan, row_ptrs, row_lens, rows, &first);
    build(&plan, row_ptrs, row_lens, rows, &second);
    CHECK(first.rc == second.rc);
    if (first.rc == FKC_JA_OK) {
        for (size_t i = 0; i < rows; i++)
            CHECK(aw_row_digest(&first.array, &first.schema, (int64_t)i) ==
                  aw_row_digest(&second.array, &second.schema, (int64_t)i));
    } else {
        CHECK(same_decline(&first.err, &second.err));
    }

    /* each payload alone; the batch declines at the first row whose
     * payload declines alone, with its offset and reason, or builds every
     * one's row; the values path's verdicts (fkc_ja_verdicts) say, row by
     * row, what the payload alone says */
    int alone_ok[MAX_PAYLOADS];
    uint64_t digest[MAX_PAYLOADS];
    fkc_ja_error alone_err[MAX_PAYLOADS];
    size_t first_declined = n;
    for (size_t j = 0; j < n; j++) {
        built one;
        build(&plan, &ptrs[j], &lens[j], 1, &one);
        alone_ok[j] = one.rc == FKC_JA_OK;
        if (alone_ok[j]) {
            digest[j] = aw_row_digest(&one.array, &one.schema, 0);
            release(&one, (unsigned)j);
        } else {
            alone_err[j] = one.err;
            alone_err[j].index = j;
            if (first_declined == n)
                first_declined = j;
        }
    }
    if (first_declined < n) {
        CHECK(first.rc == FKC_JA_DECLINED && first.err.index == first_declined);
        CHECK(same_decline(&first.err, &alone_err[first_declined]));
    } else {
        CHECK(first.rc == FKC_JA_OK);
        for (size_t i = 0; i < rows; i++)
            CHECK(aw_row_digest(&first.array, &first.schema, (int64_t)i) == digest[i % n]);
    }
    /* the verdicts of the payloads, and of the rows when they all build
     * (the columns rewound after each row, and grown by the long ones) */
    uint8_t verdicts[MAX_PAYLOADS];
    fkc_ja_error verdicts_err;
    CHECK(fkc_ja_verdicts(&plan, ptrs, lens, n, verdicts, &verdicts_err) == FKC_JA_OK);
    for (size_t j = 0; j < n; j++)
        CHECK(verdicts[j] == alone_ok[j]);
    uint8_t *row_verdicts = first.rc == FKC_JA_OK && rows > n ? malloc(rows) : NULL;
    if (row_verdicts != NULL) {
        CHECK(fkc_ja_verdicts(&plan, row_ptrs, row_lens, rows, row_verdicts, &verdicts_err) == FKC_JA_OK);
        for (size_t i = 0; i < rows; i++)
            CHECK(row_verdicts[i] == 1);
        free(row_verdicts);
    }

    release(&first, data[size - 1]);
    release(&second, (unsigned)data[size - 1] ^ 3);
    free(row_ptrs);
    free(row_lens);
    free_plan(&op);
    return 0;
}
