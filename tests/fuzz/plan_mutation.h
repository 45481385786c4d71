/*
 * plan_mutation.h — the Arrow plans of the fuzz targets whose sinks follow a
 * plan (fuzz_protobuf.c, fuzz_json.c): a built-in plan copied into buffers
 * of their exact size (so a read past one is the sanitizers' to see), and
 * the input's mutations applied to the copy, so that the plan checks are
 * fuzzed as well as the sinks. A mutation is MUTATION bytes: which words
 * (% 4: columns, steps, strings, the root step), the word's index (two
 * bytes, little-endian, modulo the words), how (% 4: set to, add, flip a
 * bit, copy the word at an index), and two operands.
 */
#ifndef FKC_PLAN_MUTATION_H
#define FKC_PLAN_MUTATION_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MUTATION 6 /* bytes per plan mutation */

/* A plan as a generated .inc holds it. */
typedef struct fuzz_plan {
    const int64_t *columns;
    size_t column_words;
    const int64_t *steps;
    size_t steps_len;
    const uint8_t *strings;
    size_t strings_len;
    int64_t root_step;
} fuzz_plan;

typedef struct owned_plan {
    int64_t *columns, *steps;
    uint8_t *strings;
    size_t column_words, steps_len, strings_len;
    int64_t root_step;
} owned_plan;

/* 0: out of memory (free_plan() what was made either way). */
static int own_plan(owned_plan *o, const fuzz_plan *fp)
{
    o->column_words = fp->column_words;
    o->steps_len = fp->steps_len;
    o->strings_len = fp->strings_len;
    o->root_step = fp->root_step;
    o->columns = malloc(o->column_words * sizeof(int64_t));
    o->steps = malloc(o->steps_len * sizeof(int64_t));
    o->strings = malloc(o->strings_len);
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

/* The mutations an input carries: none unless byte 1 >= 0x80, then
 * ((byte 1 >> 2) & 3) + 1 of them from data[*at] on, *at moved past them.
 * 0 when the input is too short to hold them (the input is dropped). */
static int take_mutations(const uint8_t *data, size_t size, size_t *at, const uint8_t **mutations, size_t *n)
{
    *mutations = NULL;
    *n = 0;
    if (!(data[1] & 0x80))
        return 1;
    *n = (size_t)((data[1] >> 2) & 3) + 1;
    if (size - *at < *n * MUTATION)
        return 0;
    *mutations = data + *at;
    *at += *n * MUTATION;
    return 1;
}

#endif /* FKC_PLAN_MUTATION_H */
