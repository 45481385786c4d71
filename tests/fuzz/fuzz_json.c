/*
 * libFuzzer target: the JSON -> Arrow parser (csrc/fkc_json_arrow.c).
 *
 * Input: byte 0 picks one of the compiled plans in fuzz_json_plans.inc
 * (tests/fuzz/make_json_seeds.py writes them and the seeds); byte 1 % 4 + 1
 * says how many payloads the rest is split into, evenly. Byte 1 >= 0x80
 * puts plan mutations before the payloads: ((byte 1 >> 2) & 3) + 1 of them,
 * six bytes each: which words (% 4: columns, steps, strings, the root
 * step), the word's index (two bytes, little-endian, modulo the words), how
 * (% 4: set to, add, flip a bit, copy the word at an index), and two
 * operands. A mutated plan the check refuses is dropped; one it admits
 * must build memory-safely and export an array that walks clean, like a
 * compiled one.
 *
 * Checks beyond the sanitizers (trap on a violation): a build either
 * exports exactly one row per payload, which arrow_walk.h walks as a
 * consumer would and releases with a child moved out (the order from the
 * last input byte), or declines naming a payload before the count and a
 * byte inside it with a reason; nothing else (no out-of-memory here, no
 * capacity with inputs this small); the same input built twice gives the
 * same answer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_json_arrow.h"

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if (!(x))                                                                                                      \
            __builtin_trap();                                                                                          \
    } while (0)

#include "arrow_walk.h"

typedef struct ja_fuzz_plan {
    const int64_t *columns;
    size_t column_words;
    const int64_t *steps;
    size_t steps_len;
    const uint8_t *strings;
    size_t strings_len;
    int64_t root_step;
} ja_fuzz_plan;

#include "fuzz_json_plans.inc"

#define MUTATION 6 /* bytes per plan mutation */

/* A plan's arrays copied, so mutations never touch the built-in ones. */
typedef struct owned_plan {
    int64_t *columns;
    size_t column_words;
    int64_t *steps;
    size_t steps_len;
    uint8_t *strings;
    size_t strings_len;
    int64_t root_step;
} owned_plan;

static int own_plan(owned_plan *o, const ja_fuzz_plan *fp)
{
    o->column_words = fp->column_words;
    o->steps_len = fp->steps_len;
    o->strings_len = fp->strings_len;
    o->root_step = fp->root_step;
    o->columns = malloc(o->column_words * sizeof(int64_t));
    o->steps = malloc(o->steps_len * sizeof(int64_t));
    o->strings = malloc(o->strings_len ? o->strings_len : 1);
    if (o->columns == NULL || o->steps == NULL || o->strings == NULL)
        return 0;
    memcpy(o->columns, fp->columns, o->column_words * sizeof(int64_t));
    memcpy(o->steps, fp->steps, o->steps_len * sizeof(int64_t));
    memcpy(o->strings, fp->strings, o->strings_len);
    return 1;
}

static void free_plan(owned_plan *o)
{
    free(o->columns);
    free(o->steps);
    free(o->strings);
}

static int64_t mutate_word(int64_t w, uint8_t how, uint8_t x, int64_t other)
{
    switch (how % 4) {
    case 0:
        return (int8_t)x;
    case 1:
        return (int64_t)((uint64_t)w + (uint64_t)(int64_t)(int8_t)x);
    case 2:
        return (int64_t)((uint64_t)w ^ (UINT64_C(1) << (x % 64)));
    default:
        return other;
    }
}

static void mutate(owned_plan *o, const uint8_t *m)
{
    size_t at = (size_t)m[1] | (size_t)m[2] << 8;
    switch (m[0] % 4) {
    case 0:
        if (o->column_words)
            o->columns[at % o->column_words] = mutate_word(o->columns[at % o->column_words], m[3], m[4],
                                                           o->columns[m[5] % o->column_words]);
        break;
    case 1:
        if (o->steps_len)
            o->steps[at % o->steps_len] = mutate_word(o->steps[at % o->steps_len], m[3], m[4],
                                                      o->steps[m[5] % o->steps_len]);
        break;
    case 2:
        if (o->strings_len)
            o->strings[at % o->strings_len] = (uint8_t)mutate_word(o->strings[at % o->strings_len], m[3], m[4],
                                                                   o->strings[m[5] % o->strings_len]);
        break;
    default:
        o->root_step = mutate_word(o->root_step, m[3], m[4], (int64_t)at);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const ja_fuzz_plan *fp = &ja_plans[data[0] % (sizeof(ja_plans) / sizeof(ja_plans[0]))];
    size_t at = 2, nmutations = 0;
    const uint8_t *mutations = NULL;
    if (data[1] & 0x80) {
        nmutations = (size_t)((data[1] >> 2) & 3) + 1;
        if (size - at < nmutations * MUTATION)
            return 0;
        mutations = data + at;
        at += nmutations * MUTATION;
    }
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
