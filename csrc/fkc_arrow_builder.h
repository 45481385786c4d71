/*
 * fkc_arrow_builder.h — growable Arrow columns that the record decoder
 * writes while it parses (one pass: no descriptor array between parsing and
 * the columns), shared by the steps of several partitions so poll_arrow()
 * gets one RecordBatch with one copy of the data.
 *
 * Contract
 *   - Columns follow fastkc.records.arrow_schema(): key/value binary (int32
 *     offsets), topic string, partition int32, offset int64, timestamp µs,
 *     timestampType int32, headers list<struct<key string, value binary>>;
 *     with `share` set (a share decode), a ninth column delivery_count int16
 *     (fastkc.records.share_arrow_schema()), written by the same append.
 *   - Capacity follows what is written, never what a batch claims: the
 *     per-record append compares the record's own row, key, value and header
 *     bytes with the room left (a few compares, no allocation on the common
 *     path) and grows the columns geometrically when they do not fit
 *     (fkc_builder_grow_for). A batch's RecordCount or payload length
 *     reserves nothing: a hostile batch costs at most what it actually
 *     decodes (times the growth factor), and an allocation that fails is
 *     reported (0) for the decoder to raise as a typed error.
 *   - int32 offsets: the decoder writes a batch in one pass only when
 *     fkc_builder_batch_fits() proves no offset can pass INT32_MAX whatever
 *     the batch holds; otherwise it parses descriptors and appends the ones
 *     fkc_builder_room() admits, exactly as many as fit.
 *   - Rollback: fkc_builder_mark() before a batch, fkc_builder_rollback() when
 *     it turns out bad, so a bad batch adds none of its records.
 *   - Topic and partition are not written per record: each run of rows
 *     belongs to the segment opened by fkc_builder_segment(), and the two
 *     columns are filled from the segments at export.
 *   - fkc_builder_export() moves every buffer into an ArrowArray (C data
 *     interface) and leaves the builder empty and reusable.
 */
#ifndef FKC_ARROW_BUILDER_H
#define FKC_ARROW_BUILDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fkc_codec.h"
#include "fkc_records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A byte column's data: `len` used of `cap`. */
typedef struct fkc_bytes {
    uint8_t *data;
    size_t len;
    size_t cap;
} fkc_bytes;

/* Rows [row_start, next segment's row_start) carry this topic and partition. */
typedef struct fkc_builder_seg {
    size_t row_start;
    size_t topic_at;  /* into the builder's topic store */
    size_t topic_len;
    int32_t partition;
} fkc_builder_seg;

/* Where a batch started, to roll its records back. */
/* Zero-copy: a region of bytes the key/value views may point into (variadic
 * buffer 1 + its index; buffer 0 is the builder's own copy, value_data). */
typedef struct fkc_zc_buffer {
    const uint8_t *data;
    int64_t len;
} fkc_zc_buffer;

/* Zero-copy: what keeps a region alive until the exported batch is
 * released (the input's buffer export, a decompressed buffer). `release`
 * may be called without the GIL: the Python host's takes it itself. */
typedef struct fkc_zc_keep {
    void *owner;
    fkc_codec_release_fn release;
    void *ctx;
} fkc_zc_keep;

typedef struct fkc_builder_mark {
    size_t rows, key_len, value_len, headers, hkey_len, hvalue_len, buffer_count, keep_count;
    int64_t key_nulls, value_nulls, timestamp_nulls, headers_nulls, hvalue_nulls;
} fkc_builder_mark;

typedef struct fkc_arrow_builder {
    void *arena;               /* every column below: one 64-byte-aligned allocation */
    int32_t *topic_offsets;    /* rows_cap + 1, filled at export from the segments */
    int32_t *partition;        /* rows_cap, likewise */
    size_t rows;
    size_t rows_cap;
    int32_t *key_offsets;      /* rows_cap + 1 */
    int32_t *value_offsets;    /* rows_cap + 1 */
    int64_t *offset;           /* rows_cap */
    int64_t *timestamp;        /* rows_cap, µs */
    int32_t *timestamp_type;   /* rows_cap */
    int32_t *headers_offsets;  /* rows_cap + 1 */
    /* Bitmaps (rows_cap bits). Bits at and past `rows` always hold the
     * default (valid for key/value/timestamp, null for headers), so an
     * append touches a bitmap only for the exception. */
    uint8_t *key_validity;
    uint8_t *value_validity;
    uint8_t *timestamp_validity;
    uint8_t *headers_validity;
    fkc_bytes key_data;
    fkc_bytes value_data;

    size_t headers;            /* header entries written */
    size_t headers_cap;
    int32_t *hkey_offsets;     /* headers_cap + 1 */
    int32_t *hvalue_offsets;   /* headers_cap + 1 */
    uint8_t *hvalue_validity;  /* headers_cap bits, default valid */
    fkc_bytes hkey_data;
    fkc_bytes hvalue_data;

    int64_t key_nulls, value_nulls, timestamp_nulls, headers_nulls, hvalue_nulls;

    fkc_builder_seg *segments;
    size_t segment_count;
    size_t segment_cap;
    fkc_bytes topics;          /* the segments' topic bytes */
    uint64_t closed_topic_bytes; /* topic column bytes of the segments before the last */

    /* Totals of Arrow batches the caller will join this one to (rows, key,
     * value, header count, header key, header value bytes): the int32
     * limits apply to the sum. */
    uint64_t base[6];

    /* Zero-copy (set before the first append): key and value are binary_view
     * columns (16-byte views; values of <= 12 bytes inline, longer ones
     * pointing into a registered region, or into value_data when the
     * record came through descriptors). */
    int zero_copy;
    uint8_t *key_views;      /* rows_cap * 16 */
    uint8_t *value_views;    /* rows_cap * 16 */
    fkc_zc_buffer *buffers;  /* regions (variadic buffers 1..) */
    size_t buffer_count, buffer_cap;
    fkc_zc_keep *keeps;      /* released with the exported batch */
    size_t keep_count, keep_cap;
    int32_t region;          /* variadic index of the batch being parsed into the columns, -1 none */

    /* Share decode (set before the first append, as zero_copy): each row's
     * delivery count, from the acquired range the record fell in. */
    int share;
    int16_t *delivery_count; /* rows_cap, when share */
    const uint8_t *region_base;
    size_t region_len;
} fkc_arrow_builder;

/* NULL when memory runs out. */
fkc_arrow_builder *fkc_builder_new(void);
void fkc_builder_free(fkc_arrow_builder *b);

/* Rows that follow carry this topic and partition (copies the topic). 0 when
 * memory runs out. */
int fkc_builder_segment(fkc_arrow_builder *b, const uint8_t *topic, size_t topic_len, int32_t partition);

/* Grow the columns (geometrically) so `rec` fits after what they hold. 0
 * when memory runs out (nothing changed). Out of line: the append calls it
 * only when the record does not fit. */
int fkc_builder_grow_for(fkc_arrow_builder *b, const fkc_record *rec);

/* How many builders were given a released arena instead of fresh memory
 * (for tests: the reuse must happen, see "arena reuse" in the .c file). */
uint64_t fkc_arena_reuse_count(void);

/* Capacity for a decode whose input size is known up front, so the arena
 * is not reallocated on the way: `rows`, and `bytes` in the key and value
 * columns (the caller bounds both by the bytes it holds). Capacity never
 * touched costs address space, not memory. 0 when memory runs out. */
int fkc_builder_hint(fkc_arrow_builder *b, size_t rows, size_t bytes);

/* 1 when `rows` more rows of at most `payload` bytes in all cannot pass an
 * int32 offset (nor the topic column), whatever they hold. */
int fkc_builder_batch_fits(const fkc_arrow_builder *b, uint64_t rows, uint64_t payload);

/* How many of recs[0..n) fit after what the builder holds (exactly). */
size_t fkc_builder_room(const fkc_arrow_builder *b, const fkc_record *recs, size_t n);

/* Append n descriptors (reserving exactly what they hold; the caller
 * checked the int32 room). 0 when memory runs out (nothing appended). */
int fkc_builder_append_records(fkc_arrow_builder *b, const fkc_record *recs, size_t n);

void fkc_builder_mark_at(const fkc_arrow_builder *b, fkc_builder_mark *m);
void fkc_builder_rollback(fkc_arrow_builder *b, const fkc_builder_mark *m);

/* Current totals (rows, key, value, header count, header key, header value
 * bytes), not counting base. */
void fkc_builder_totals(const fkc_arrow_builder *b, uint64_t out[6]);

/* The header list of one record (validated already by the parser). */
void fkc_builder_append_headers(fkc_arrow_builder *b, const fkc_record *rec);

static inline void fkc_builder_bit_clear(uint8_t *bitmap, size_t i)
{
    bitmap[i >> 3] = (uint8_t)(bitmap[i >> 3] & ~(1u << (i & 7)));
}

/* Zero-copy: the next appends' long values point into [data, data + len)
 * (a v2 batch's payload; len <= INT32_MAX). 0 when memory runs out. */
int fkc_builder_region(fkc_arrow_builder *b, const uint8_t *data, size_t len);
/* Zero-copy: keep `owner` alive until the batch built from here is
 * released (release(ctx, owner) then). 0 when memory runs out (nothing kept). */
int fkc_builder_keep(fkc_arrow_builder *b, void *owner, fkc_codec_release_fn release, void *ctx);

/* One binary_view entry (Arrow's layout, little-endian as every host we
 * build for): length, then the bytes inline (<= 12) or a 4-byte prefix,
 * the variadic buffer index and the offset in it. */
static inline int fkc_builder_in_region(const fkc_arrow_builder *b, const uint8_t *p, int32_t len)
{
    return b->region >= 0 && p >= b->region_base && (size_t)(p - b->region_base) <= b->region_len - (size_t)len;
}

/* Zero-copy: the bytes a view of [p, p + len) copies into value_data (a
 * long value outside the batch's region: a descriptor's record). */
static inline size_t fkc_builder_view_copy(const fkc_arrow_builder *b, const uint8_t *p, int32_t len)
{
    return len > 12 && !fkc_builder_in_region(b, p, len) ? (size_t)len : 0;
}

static inline void fkc_builder_view(fkc_arrow_builder *b, uint8_t *view, const uint8_t *p, int32_t len)
{
    memset(view, 0, 16);
    if (len <= 0)
        return;
    memcpy(view, &len, 4);
    if (len <= 12) {
        memcpy(view + 4, p, (size_t)len);
        return;
    }
    memcpy(view + 4, p, 4);
    int32_t index, offset;
    if (fkc_builder_in_region(b, p, len)) {
        index = b->region;
        offset = (int32_t)(p - b->region_base);
    } else { /* not in the batch's region (a descriptor's record): copied */
        index = 0;
        offset = (int32_t)b->value_data.len;
        memcpy(b->value_data.data + b->value_data.len, p, (size_t)len);
        b->value_data.len += (size_t)len;
    }
    memcpy(view + 8, &index, 4);
    memcpy(view + 12, &offset, 4);
}

static inline size_t fkc_len_or_0(int32_t len)
{
    return len > 0 ? (size_t)len : 0;
}

/* 1 when `rec` fits the columns' capacity as they are: one row, its key and
 * value bytes (zero-copy: the bytes its views copy) and its headers. */
static inline __attribute__((always_inline)) int fkc_builder_fits(const fkc_arrow_builder *b, const fkc_record *rec)
{
    if (b->rows >= b->rows_cap)
        return 0;
    if (rec->header_count > 0 &&
        ((size_t)rec->header_count > b->headers_cap - b->headers ||
         (size_t)rec->header_key_bytes > b->hkey_data.cap - b->hkey_data.len ||
         (size_t)((int64_t)rec->header_size - rec->header_key_bytes) > b->hvalue_data.cap - b->hvalue_data.len))
        return 0;
    if (b->zero_copy)
        return fkc_builder_view_copy(b, rec->key, rec->key_len) + fkc_builder_view_copy(b, rec->value, rec->value_len) <=
               b->value_data.cap - b->value_data.len;
    return fkc_len_or_0(rec->key_len) <= b->key_data.cap - b->key_data.len &&
           fkc_len_or_0(rec->value_len) <= b->value_data.cap - b->value_data.len;
}

/* One record whose capacity is there (fkc_builder_fits, or reserved). */
static inline __attribute__((always_inline)) void fkc_builder_put(fkc_arrow_builder *b, const fkc_record *rec)
{
    size_t i = b->rows;
    if (b->zero_copy) {
        /* views in place of offsets and data (the offsets stay 0) */
        fkc_builder_view(b, b->key_views + 16 * i, rec->key, rec->key_len);
        fkc_builder_view(b, b->value_views + 16 * i, rec->value, rec->value_len);
        if (rec->key_len < 0) {
            fkc_builder_bit_clear(b->key_validity, i);
            b->key_nulls++;
        }
        if (rec->value_len < 0) {
            fkc_builder_bit_clear(b->value_validity, i);
            b->value_nulls++;
        }
    } else {
        if (rec->key_len >= 0) {
            memcpy(b->key_data.data + b->key_data.len, rec->key, (size_t)rec->key_len);
            b->key_data.len += (size_t)rec->key_len;
        } else {
            fkc_builder_bit_clear(b->key_validity, i);
            b->key_nulls++;
        }
        b->key_offsets[i + 1] = (int32_t)b->key_data.len;
        if (rec->value_len >= 0) {
            memcpy(b->value_data.data + b->value_data.len, rec->value, (size_t)rec->value_len);
            b->value_data.len += (size_t)rec->value_len;
        } else {
            fkc_builder_bit_clear(b->value_validity, i);
            b->value_nulls++;
        }
        b->value_offsets[i + 1] = (int32_t)b->value_data.len;
    }
    b->offset[i] = rec->offset;
    if (rec->timestamp_type >= 0) {
        /* ms -> µs; wrapping multiply so a hostile timestamp is not UB (the
         * decoder's arrow_timestamps check refuses one that overflows) */
        b->timestamp[i] = (int64_t)((uint64_t)rec->timestamp * 1000u);
    } else {
        b->timestamp[i] = 0;
        fkc_builder_bit_clear(b->timestamp_validity, i);
        b->timestamp_nulls++;
    }
    b->timestamp_type[i] = rec->timestamp_type;
    if (b->share)
        b->delivery_count[i] = rec->delivery_count;
    if (rec->header_count > 0)
        fkc_builder_append_headers(b, rec);
    else
        b->headers_nulls++;
    b->headers_offsets[i + 1] = (int32_t)b->headers;
    b->rows = i + 1;
}

/* One record, growing the columns when it does not fit. Inlined into the
 * decoder's batch loop: the record goes from the parser's registers
 * straight to the columns. 0 when memory runs out (nothing appended). */
static inline __attribute__((always_inline)) int fkc_builder_append(fkc_arrow_builder *b, const fkc_record *rec)
{
    if (__builtin_expect(!fkc_builder_fits(b, rec), 0) && !fkc_builder_grow_for(b, rec))
        return 0;
    fkc_builder_put(b, rec);
    return 1;
}

struct ArrowArray;

/* Move the columns into *out (a struct array following arrow_schema()) and
 * leave the builder empty (its segments too). 1, or 0 when memory runs out
 * (the builder is unchanged). */
int fkc_builder_export(fkc_arrow_builder *b, struct ArrowArray *out);

#ifdef __cplusplus
}
#endif

#endif /* FKC_ARROW_BUILDER_H */
