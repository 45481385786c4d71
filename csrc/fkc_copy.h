/*
 * fkc_copy.h — a short field's bytes copied inline. The Arrow writers copy
 * one key, value or string per field (fkc_columns_run in fkc_records.c,
 * fkc_tc_put_bytes in fkc_typed_columns.h), and a memcpy call cost more
 * than copying a short field itself.
 */
#ifndef FKC_COPY_H
#define FKC_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* n bytes, w <= n <= 2w, as two moves of w bytes (the first w, the last w;
 * they overlap when n < 2w). w is a constant where this is inlined. */
static inline __attribute__((always_inline)) void fkc_copy_ends(uint8_t *dst, const uint8_t *src, size_t n, size_t w)
{
    uint64_t a, z;
    memcpy(&a, src, w);
    memcpy(&z, src + n - w, w);
    memcpy(dst, &a, w);
    memcpy(dst + n - w, &z, w);
}

/* Up to FKC_INLINE_COPY_MAX bytes inline: overlapping 16-, 8-, 4- or 2-byte
 * moves, never a byte outside [src, src + n) or [dst, dst + n); longer ones
 * by memcpy. */
#define FKC_INLINE_COPY_MAX 128
static inline __attribute__((always_inline)) void fkc_copy_field(uint8_t *dst, const uint8_t *src, size_t n)
{
#if defined(__SSE2__) /* every x86-64; elsewhere memcpy does the long ones */
    if (n >= 16 && n <= FKC_INLINE_COPY_MAX) {
        /* SSE2 moves: GCC turns a loop of plain copies back into a memcpy
         * call (loop distribution), not these */
        for (size_t i = 0; i + 16 < n; i += 16)
            _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        _mm_storeu_si128((__m128i *)(void *)(dst + n - 16),
                         _mm_loadu_si128((const __m128i *)(const void *)(src + n - 16)));
        return;
    }
#endif
    if (n >= 8 && n < 16)
        fkc_copy_ends(dst, src, n, 8);
    else if (n >= 4 && n < 8)
        fkc_copy_ends(dst, src, n, 4);
    else if (n >= 2 && n < 4)
        fkc_copy_ends(dst, src, n, 2);
    else if (n == 1)
        *dst = *src;
    else if (n > 0) /* past the inline sizes; 0 bytes may come with NULL pointers */
        memcpy(dst, src, n);
}

#endif /* FKC_COPY_H */
