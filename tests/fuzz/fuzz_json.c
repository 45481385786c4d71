/*
 * libFuzzer target: the JSON -> Arrow parser (csrc/fkc_json_arrow.c).
 *
 * Input: byte 0 picks one of the compiled plans in fuzz_json_plans.inc
 * (tests/fuzz/make_json_seeds.py writes them and the seeds); byte 1 % 4 + 1
 * says how many payloads the rest is split into, evenly. Byte 1 >= 0x80
 * puts plan mutations before the payloads: ((byte 1 >> 2) & 3) + 1 of them
 * (plan_mutation.h says how they read). A mutated plan the check refuses is dropped; one it admits
 * must build memory-safely and export an array that walks clean, like a
 * compiled one.
 *
 * Checks beyond the sanitizers (trap on a violation): a build either
 * exports exactly one row per payload, which arrow_walk.h walks as a
 * consumer would and releases with a child moved out (the order from the
 * last input byte), or declines naming a payload before the count and a
 * byte inside it with a reason; nothing else (no out-of-memory here, no
 * capacity with inputs this small); the same input built twice gives the
 * same answer; fkc_ja_verdicts() agrees with the builds, payload by payload.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_json_arrow.h"

#include "arrow_walk.h" /* CHECK, aw_walk, aw_release */
#include "plan_mutation.h"

#include "fuzz_json_plans.inc"

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
    size_t n = (size_t)(data[1] % 4) + 1;
    size_t rest = size - at, each = rest / n;
    const uint8_t *ptrs[4];
    size_t lens[4];
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = data + at + i * each;
        lens[i] = i + 1 < n ? each : rest - i * each;
    }
    struct ArrowArray array, array2;
    struct ArrowSchema schema, schema2;
    fkc_ja_error err, err2;
    int rc = fkc_ja_build(&plan, ptrs, lens, n, &array, &schema, &err);
    int rc2 = fkc_ja_build(&plan, ptrs, lens, n, &array2, &schema2, &err2);
    CHECK(rc == rc2);
    /* the values path's verdicts: 1 for each payload before the one the
     * build declined, 0 for that one, and for each after it what a build
     * of it alone says */
    uint8_t verdicts[4];
    fkc_ja_error verr;
    CHECK(fkc_ja_verdicts(&plan, ptrs, lens, n, verdicts, &verr) == FKC_JA_OK);
    size_t first = rc == FKC_JA_OK ? n : err.index;
    for (size_t i = 0; i < n; i++) {
        if (i != first) {
            CHECK(verdicts[i] == (i < first));
            continue;
        }
        CHECK(verdicts[i] == 0);
        for (size_t j = i + 1; j < n; j++) {
            struct ArrowArray one;
            struct ArrowSchema one_schema;
            fkc_ja_error one_err;
            int alone = fkc_ja_build(&plan, ptrs + j, lens + j, 1, &one, &one_schema, &one_err);
            CHECK(verdicts[j] == (alone == FKC_JA_OK));
            if (alone == FKC_JA_OK)
                aw_release(&one, &one_schema, 0);
        }
        break;
    }
    if (rc == FKC_JA_OK) {
        CHECK(array.length == (int64_t)n && array2.length == (int64_t)n);
        aw_walk(&array, &schema, 0);
        aw_release(&array, &schema, data[size - 1]);
        aw_release(&array2, &schema2, 0);
    } else {
        CHECK(rc == FKC_JA_DECLINED && err.kind == rc && err.problem != NULL);
        CHECK(err.index < n && err.offset <= lens[err.index]);
        CHECK(err.index == err2.index && err.offset == err2.offset && strcmp(err.problem, err2.problem) == 0);
    }
    free_plan(&op);
    return 0;
}
