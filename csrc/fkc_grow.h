/*
 * fkc_grow.h — how a growable C array here grows: to the smallest capacity
 * that holds what is needed, doubling from its current one (or a first size
 * when it has none), so n appends cost O(n) copies in all; a size that would
 * not fit in size_t fails as an allocation that fails does. One helper, so
 * that no array grows without the overflow check (some of the copies this
 * replaced had none, safe only because other limits bounded their counts).
 *
 * The Arrow builder's arena (fkc_arrow_builder.c) and the xerial snappy
 * output (fkc_codec.c) size themselves by their own rules and do not use it.
 */
#ifndef FKC_GROW_H
#define FKC_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity, in elements, of an array of `cap` growing to hold `need`:
 * cap (or `first` when cap is 0) doubled until it does. 0 when no such
 * capacity of elem_size-byte elements fits in size_t. */
static inline size_t fkc_grown_cap(size_t cap, size_t need, size_t elem_size, size_t first)
{
    size_t n = cap ? cap : (first ? first : 1);
    const size_t most = SIZE_MAX / elem_size; /* elements whose bytes fit in size_t */
    if (n > most)
        return 0;
    while (n < need) {
        if (n > most / 2)
            return need <= most ? need : 0; /* doubling would pass the limit: exactly what is needed */
        n *= 2;
    }
    return n;
}

/* `data` (an array of *cap elements of elem_size bytes, or NULL) grown to
 * hold at least `need` elements (callers ask only when need > *cap): the
 * array, perhaps moved, with *cap updated. NULL when the size overflows or
 * memory runs out; `data` and *cap are then unchanged (the caller still
 * owns and frees the old array). */
static inline void *fkc_grow(void *data, size_t *cap, size_t need, size_t elem_size, size_t first)
{
    size_t n = fkc_grown_cap(*cap, need, elem_size, first);
    if (n == 0)
        return NULL;
    void *grown = realloc(data, n * elem_size);
    if (grown != NULL)
        *cap = n;
    return grown;
}

/* fkc_grow() for `more` elements after the `used` ones the array holds:
 * the one place that checks used + more against size_t, so that callers
 * count in what they append rather than in totals. Same result contract. */
static inline void *fkc_grow_by(void *data, size_t *cap, size_t used, size_t more, size_t elem_size,
                                size_t first)
{
    if (more > SIZE_MAX - used)
        return NULL;
    return fkc_grow(data, cap, used + more, elem_size, first);
}

#endif /* FKC_GROW_H */
