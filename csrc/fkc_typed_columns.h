/*
 * fkc_typed_columns.h — growable typed Arrow columns, shared by the Arrow
 * sinks of the payload interpreters (fkc_avro_arrow.c, fkc_protobuf_arrow.c).
 *
 * Contract
 *   - A *column tree* describes the Arrow array to build, decided in Python
 *     (fastkc/schema_registry/arrow_columns.py names the same numbers):
 *       columns  FKC_TC_COL_WIDTH int64 words per column:
 *                [layout, nullable, name, format, first child, children,
 *                 p0, p1, p2]; column 0 is the array; a column's children
 *                are the columns [first child, first child + children), all
 *                after their parent and each with one parent (a tree).
 *                name and format are offsets of NUL-terminated strings in
 *                `strings` (Arrow's format strings).
 *                p0..p2 by layout: INT32 and INT64 the bound of a time (a
 *                day in its unit; 0 for the others); FIXED_BINARY size;
 *                DECIMAL byte width (16, 32) and the offset of
 *                10^precision (width bytes, little-endian) in `strings`;
 *                DICT the symbol count, the offset of its count + 1
 *                little-endian int32 offsets and the offset of the symbols'
 *                bytes.
 *     fkc_tc_check_tree() proves the tree well-formed (a tree, strings
 *     inside the blob and NUL-terminated, every format string agreeing with
 *     its layout's buffers, UTF-8 where Arrow wants it, a map's child a
 *     non-nullable struct of a non-nullable key and a value). What may be
 *     written into which column is the walker's to check (its own plan).
 *   - The columns (fkc_tc_set) grow by doubling with overflow checks; every
 *     column's length and every binary column's bytes stay <= INT32_MAX, so
 *     no int32 offset can overflow: a value that would pass them fails with
 *     FKC_TC_CAPACITY naming the payload being appended (set->index). A
 *     failed allocation is FKC_TC_NOMEM. The walker writes rows with the
 *     inline helpers below; a struct row is fkc_tc_begin + len++ followed by
 *     exactly one row in each child; a list/map row is fkc_tc_begin, its
 *     items in the child, then fkc_tc_end_nested; a dense union row is
 *     fkc_tc_union_row(type id) followed by exactly one row in that child.
 *     A dense union has no validity bitmap (Arrow's unions have none: a
 *     null is a row of its null child), so its nullable word must be 0;
 *     its format is "+ud:0,1,...,n-1" for its n children (type id = child
 *     index).
 *   - fkc_tc_finish() exports the array and schema, which own copies of
 *     everything they point at (the caller's payloads, tapes and plan may go
 *     right after); each node's release frees its part, and the last one
 *     frees the rest, so a consumer may move children out and release them
 *     in any order. On any failure everything built so far is freed.
 *   - No Python API: runs with the GIL released.
 */
#ifndef FKC_TYPED_COLUMNS_H
#define FKC_TYPED_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fkc_arrow_abi.h"
#include "fkc_copy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_TC_COL_WIDTH 9
#define FKC_TC_MAX_ROWS ((size_t)INT32_MAX) /* per column: every int32 offset fits */
#define FKC_TC_MAX_DEPTH 4096               /* columns nest at most this deep */
#define FKC_TC_MAX_UNION 127                /* a union's children: Arrow's type ids are int8, 0..127 */

/* Column layouts: which buffers a column has and which values it takes. */
enum {
    FKC_TC_NULL = 0,         /* no buffers */
    FKC_TC_BOOL = 1,         /* validity, bits */
    FKC_TC_INT32 = 2,        /* validity, int32 (int, date, time32) */
    FKC_TC_INT64 = 3,        /* validity, int64 (long, time64, timestamps, durations) */
    FKC_TC_FLOAT32 = 4,      /* validity, float */
    FKC_TC_FLOAT64 = 5,      /* validity, double */
    FKC_TC_FIXED_BINARY = 6, /* validity, p0 bytes per row */
    FKC_TC_DECIMAL = 7,      /* validity, p0 (16 or 32) bytes per row, little-endian two's complement */
    FKC_TC_BINARY = 8,       /* validity, int32 offsets, bytes */
    FKC_TC_UTF8 = 9,         /* validity, int32 offsets, UTF-8 bytes */
    FKC_TC_STRUCT = 10,      /* validity; children */
    FKC_TC_LIST = 11,        /* validity, int32 offsets; one child */
    FKC_TC_MAP = 12,         /* validity, int32 offsets; one child: a struct of (key, value) */
    FKC_TC_DICT = 13,        /* validity, int32 indices; the dictionary (utf8) from p0..p2 */
    FKC_TC_UINT32 = 14,      /* validity, uint32 */
    FKC_TC_UINT64 = 15,      /* validity, uint64 */
    FKC_TC_DENSE_UNION = 16, /* no validity (Arrow's unions have none): int8 type ids, int32 offsets; children
                                (type id i is child i; at most FKC_TC_MAX_UNION) */
    FKC_TC_LAYOUT_MAX = 16
};

/* Column words */
enum { FKC_TC_C_LAYOUT, FKC_TC_C_NULLABLE, FKC_TC_C_NAME, FKC_TC_C_FORMAT, FKC_TC_C_FIRST, FKC_TC_C_COUNT,
       FKC_TC_C_P0, FKC_TC_C_P1, FKC_TC_C_P2 };

enum { FKC_TC_OK = 0, FKC_TC_NOMEM = 1, FKC_TC_CAPACITY = 2, FKC_TC_VALUE = 3 };

/* The column tree (the arrays belong to the caller). */
typedef struct fkc_tc_tree {
    const int64_t *columns; /* column_count * FKC_TC_COL_WIDTH words */
    size_t column_count;
    const uint8_t *strings;
    size_t strings_len;
} fkc_tc_tree;

/* Why a build stopped. `what` and `problem` are static strings. */
typedef struct fkc_tc_error {
    int kind;      /* FKC_TC_NOMEM, FKC_TC_CAPACITY or FKC_TC_VALUE */
    size_t index;  /* which payload */
    size_t offset; /* byte inside it (FKC_TC_VALUE) */
    const char *what;
    const char *problem;
} fkc_tc_error;

/* One column being built. */
typedef struct fkc_tc_col {
    int64_t layout;
    int nullable;
    size_t width;      /* bytes per row of the fixed layouts */
    size_t len, cap;   /* rows */
    int64_t nulls;
    uint8_t *validity; /* cap bits (nullable columns) */
    uint8_t *values;   /* cap * width bytes, cap bits (BOOL), cap + 1 int32 offsets, or cap int8 type ids
                          (DENSE_UNION) */
    uint8_t *data;     /* BINARY, UTF8 (data_len, data_cap bytes); DENSE_UNION: cap int32 offsets, one per
                          row (not cap + 1: a union's offsets point at single child rows) */
    size_t data_len, data_cap;
    size_t first, count; /* children */
    const int64_t *plan; /* its words in the tree */
} fkc_tc_col;

/* Every column of a tree being built, and the payload it is at. */
typedef struct fkc_tc_set {
    const fkc_tc_tree *tree;
    fkc_tc_col *cols;
    size_t index;       /* the payload being appended: errors name it */
    fkc_tc_error *err;  /* where a failure is written (the caller's during an append) */
    fkc_tc_error unused;
    size_t rows;        /* payloads appended so far */
    size_t rows_hint;   /* how many the caller expects in all (0: unknown) */
    uint8_t *per_row;   /* per column: one row per payload (the root, and struct fields under it) */
} fkc_tc_set;

/* Tree helpers (also for the walkers' plan checks). */
static inline const int64_t *fkc_tc_column(const fkc_tc_tree *t, int64_t c)
{
    return t->columns + (size_t)c * FKC_TC_COL_WIDTH;
}
int fkc_tc_span(const fkc_tc_tree *t, int64_t off, int64_t len); /* strings[off, off + len) inside the blob */
int32_t fkc_tc_le32(const uint8_t *p);
/* A little-endian two's complement value of `width` bytes: 1 when its
 * magnitude is below `bound` (10^precision, same width, unsigned). */
int fkc_tc_decimal_fits(const uint8_t *le, size_t width, const uint8_t *bound);
/* An INT32/INT64 column's value is inside a day when it is a time (p0 != 0). */
static inline int fkc_tc_in_day(const int64_t *col, int64_t v)
{
    return col[FKC_TC_C_P0] == 0 || (v >= 0 && v < col[FKC_TC_C_P0]);
}

/* 1 when the tree is well-formed (see the contract). */
int fkc_tc_check_tree(const fkc_tc_tree *t);

/* The columns of a checked tree (NULL: out of memory); rows_hint as the
 * sinks' start(): how many payloads will be appended, 0 when unknown, used
 * only to presize the columns. */
fkc_tc_set *fkc_tc_start(const fkc_tc_tree *t, size_t rows_hint);
/* After a chunk of `count` payloads was appended: after the first, the
 * binary columns' bytes are reserved for the rest in proportion. */
void fkc_tc_chunk_done(fkc_tc_set *s, size_t count);
/* Export every row and free the set (also on failure). */
int fkc_tc_finish(fkc_tc_set *s, struct ArrowArray *out_array, struct ArrowSchema *out_schema, fkc_tc_error *err);
void fkc_tc_discard(fkc_tc_set *s);
/* Every column emptied, its buffers kept for the next rows: for a caller
 * that asks only whether payloads write cleanly (fkc_ja_verdicts), one
 * payload at a time. (Each write sets or clears its validity bit and its
 * value, and a first offset stays 0, so nothing stale is read back.) */
void fkc_tc_rewind(fkc_tc_set *s);

/* Writing rows. Each returns 1, or 0 with s->err filled. */
int fkc_tc_fail(fkc_tc_set *s, int kind, size_t offset, const char *what, const char *problem);
int fkc_tc_grow_rows(fkc_tc_set *s, fkc_tc_col *c);
/* fkc_tc_put_bytes() when the row or its bytes may not fit (grows, or fails). */
int fkc_tc_put_bytes_grow(fkc_tc_set *s, fkc_tc_col *c, const uint8_t *p, size_t n);
/* A row that holds nothing: null where the column may be null, else the
 * zero value (the children of a null struct that are not nullable). */
int fkc_tc_fill(fkc_tc_set *s, fkc_tc_col *c);

/* Column c and everything under it back to its first n rows, as they were
 * when it had n rows (a later row's partial writes included): for a
 * walker that writes a payload optimistically and takes it back to write
 * it another way (fkc_protobuf_arrow.c). n is at most the rows written so
 * far. Not for trees holding a DENSE_UNION (whose child rows are not
 * found from its length alone); the walker that calls it has none. */
void fkc_tc_truncate(fkc_tc_set *s, fkc_tc_col *c, size_t n);

static inline fkc_tc_col *fkc_tc_child(fkc_tc_set *s, const fkc_tc_col *c, size_t i)
{
    return &s->cols[c->first + i];
}

static inline void fkc_tc_bit(uint8_t *bitmap, size_t i, int on)
{
    uint8_t mask = (uint8_t)(1u << (i & 7));
    bitmap[i >> 3] = (uint8_t)(on ? bitmap[i >> 3] | mask : bitmap[i >> 3] & ~mask);
}

/* A new row, valid (its value written by the caller, which then counts it). */
static inline int fkc_tc_begin(fkc_tc_set *s, fkc_tc_col *c)
{
    if (c->len >= c->cap && !fkc_tc_grow_rows(s, c))
        return 0;
    if (c->nullable)
        fkc_tc_bit(c->validity, c->len, 1);
    return 1;
}

static inline int32_t *fkc_tc_offsets(fkc_tc_col *c)
{
    return (int32_t *)(void *)c->values;
}

/* Close a row of an offsets layout at `end` (its data bytes or child rows,
 * both <= INT32_MAX). */
static inline void fkc_tc_end_offsets(fkc_tc_col *c, size_t end)
{
    fkc_tc_offsets(c)[c->len + 1] = (int32_t)end;
    c->len++;
}

/* A list or map row around the items written into its child since its begin. */
static inline void fkc_tc_end_nested(fkc_tc_set *s, fkc_tc_col *c)
{
    fkc_tc_end_offsets(c, fkc_tc_child(s, c, 0)->len);
}

static inline int fkc_tc_put_fixed(fkc_tc_set *s, fkc_tc_col *c, const void *value)
{
    if (!fkc_tc_begin(s, c))
        return 0;
    if (c->width > 0) /* a fixed of size 0 has no buffer to copy into */
        memcpy(c->values + c->len * c->width, value, c->width);
    c->len++;
    return 1;
}

/* A dense union row whose value is the next row of child `type_id` (< c->count),
 * which the caller writes right after. */
static inline int fkc_tc_union_row(fkc_tc_set *s, fkc_tc_col *c, size_t type_id)
{
    if (!fkc_tc_begin(s, c))
        return 0;
    size_t at = fkc_tc_child(s, c, type_id)->len; /* <= INT32_MAX: every column's length is */
    c->values[c->len] = (uint8_t)type_id;
    ((int32_t *)(void *)c->data)[c->len] = (int32_t)at;
    c->len++;
    return 1;
}

/* A BINARY or UTF8 row of p[0, n). Inline for the common case, room for
 * the row and its bytes: the walkers write one per string field, and the
 * call cost about as much as the copy of a short string. (data_cap may pass
 * 2^31 - 1 once doubled, so the limit is checked apart.) */
static inline int fkc_tc_put_bytes(fkc_tc_set *s, fkc_tc_col *c, const uint8_t *p, size_t n)
{
    if (c->len >= c->cap || n > c->data_cap - c->data_len || n > FKC_TC_MAX_ROWS - c->data_len)
        return fkc_tc_put_bytes_grow(s, c, p, n);
    if (c->nullable)
        fkc_tc_bit(c->validity, c->len, 1);
    if (n > 0) /* no buffer yet when nothing was written */
        fkc_copy_field(c->data + c->data_len, p, n);
    c->data_len += n;
    fkc_tc_end_offsets(c, c->data_len);
    return 1;
}

static inline int fkc_tc_put_bool(fkc_tc_set *s, fkc_tc_col *c, int on)
{
    if (!fkc_tc_begin(s, c))
        return 0;
    fkc_tc_bit(c->values, c->len, on);
    c->len++;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* FKC_TYPED_COLUMNS_H */
