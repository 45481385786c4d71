/* fkc_typed_columns.c — growable typed Arrow columns and their export; see fkc_typed_columns.h. */
#include "fkc_typed_columns.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_grow.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#define TC_FLAG_NULLABLE 2              /* ARROW_FLAG_NULLABLE */
#define TC_DAY_MS INT64_C(86400000)     /* time32[ms] and time64[us] stay inside a day */
#define TC_DAY_US INT64_C(86400000000)

/* Column words, short */
enum { C_LAYOUT = FKC_TC_C_LAYOUT, C_NULLABLE = FKC_TC_C_NULLABLE, C_NAME = FKC_TC_C_NAME, C_FORMAT = FKC_TC_C_FORMAT,
       C_FIRST = FKC_TC_C_FIRST, C_COUNT = FKC_TC_C_COUNT, C_P0 = FKC_TC_C_P0, C_P1 = FKC_TC_C_P1, C_P2 = FKC_TC_C_P2 };

/* Bytes per row of the fixed-width layouts (0: bits, offsets or nothing). */
static size_t tc_width(const int64_t *col)
{
    switch (col[C_LAYOUT]) {
    case FKC_TC_INT32:
    case FKC_TC_FLOAT32:
    case FKC_TC_DICT:
    case FKC_TC_UINT32:
        return 4;
    case FKC_TC_INT64:
    case FKC_TC_UINT64:
    case FKC_TC_FLOAT64:
        return 8;
    case FKC_TC_FIXED_BINARY:
    case FKC_TC_DECIMAL:
        return (size_t)col[C_P0];
    default:
        return 0;
    }
}

static int tc_has_offsets(int64_t layout)
{
    return layout == FKC_TC_BINARY || layout == FKC_TC_UTF8 || layout == FKC_TC_LIST || layout == FKC_TC_MAP;
}

/* strings[off, off + len) lies inside the blob. */
int fkc_tc_span(const fkc_tc_tree *p, int64_t off, int64_t len)
{
    return off >= 0 && len >= 0 && (uint64_t)off <= p->strings_len && (uint64_t)len <= p->strings_len - (uint64_t)off;
}

static int tc_cstring(const fkc_tc_tree *p, int64_t off)
{
    return off >= 0 && (uint64_t)off < p->strings_len &&
           memchr(p->strings + off, 0, p->strings_len - (size_t)off) != NULL;
}

int32_t fkc_tc_le32(const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t out;
    memcpy(&out, &v, 4);
    return out;
}

int fkc_tc_decimal_fits(const uint8_t *le, size_t width, const uint8_t *bound)
{
    uint8_t mag[32];
    if (le[width - 1] & 0x80) { /* negative: the magnitude is ~v + 1 */
        unsigned carry = 1;
        for (size_t i = 0; i < width; i++) {
            unsigned v = (unsigned)(uint8_t)~le[i] + carry;
            mag[i] = (uint8_t)v;
            carry = v >> 8;
        }
    } else {
        memcpy(mag, le, width);
    }
    for (size_t i = width; i-- > 0;)
        if (mag[i] != bound[i])
            return mag[i] < bound[i];
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Tree check. */

/* `text` is "<prefix><decimal number>" with the number in [lo, hi]; the rest
 * after the number in *rest. */
static int tc_number_after(const char *text, const char *prefix, int64_t lo, int64_t hi, const char **rest)
{
    size_t n = strlen(prefix);
    if (strncmp(text, prefix, n) != 0)
        return 0;
    const char *p = text + n;
    int64_t v = 0;
    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*p - '0');
        if (v > hi)
            return 0;
    }
    *rest = p;
    return v >= lo;
}

/* The Arrow format string agrees with the layout's buffers (pyarrow reads
 * the buffers by the format: a wrong one would read past them). */
static int tc_format_fits(const int64_t *col, const char *format)
{
    const char *rest = NULL;
    switch (col[C_LAYOUT]) {
    case FKC_TC_NULL:
        return strcmp(format, "n") == 0;
    case FKC_TC_BOOL:
        return strcmp(format, "b") == 0;
    case FKC_TC_INT32: /* p0: the day's bound of a time, else 0 */
        if (strcmp(format, "ttm") == 0)
            return col[C_P0] == TC_DAY_MS;
        return col[C_P0] == 0 && (strcmp(format, "i") == 0 || strcmp(format, "tdD") == 0);
    case FKC_TC_INT64: /* long, time64[us], a timestamp in any zone, a duration */
        if (strcmp(format, "ttu") == 0)
            return col[C_P0] == TC_DAY_US;
        if (col[C_P0] != 0)
            return 0;
        if (strcmp(format, "l") == 0)
            return 1;
        if (strncmp(format, "ts", 2) == 0 || strncmp(format, "tD", 2) == 0) {
            int unit = format[2] == 's' || format[2] == 'm' || format[2] == 'u' || format[2] == 'n';
            return unit && (format[1] == 's' ? format[3] == ':' : format[3] == 0);
        }
        return 0;
    case FKC_TC_UINT32:
        return strcmp(format, "I") == 0;
    case FKC_TC_UINT64:
        return strcmp(format, "L") == 0;
    case FKC_TC_FLOAT32:
        return strcmp(format, "f") == 0;
    case FKC_TC_FLOAT64:
        return strcmp(format, "g") == 0;
    case FKC_TC_FIXED_BINARY:
        return tc_number_after(format, "w:", col[C_P0], col[C_P0], &rest) && *rest == 0;
    case FKC_TC_DECIMAL: {
        int wide = col[C_P0] == 32;
        const char *scale = NULL;
        return tc_number_after(format, "d:", 1, wide ? 76 : 38, &rest) && *rest == ',' &&
               tc_number_after(rest, ",", 0, 76, &scale) && strcmp(scale, wide ? ",256" : "") == 0;
    }
    case FKC_TC_BINARY:
        return strcmp(format, "z") == 0;
    case FKC_TC_UTF8:
        return strcmp(format, "u") == 0;
    case FKC_TC_STRUCT:
        return strcmp(format, "+s") == 0;
    case FKC_TC_LIST:
        return strcmp(format, "+l") == 0;
    case FKC_TC_MAP:
        return strcmp(format, "+m") == 0;
    case FKC_TC_DENSE_UNION: { /* "+ud:0,1,...,n-1": type id i is child i, which the sinks rely on */
        const char *p = format;
        if (strncmp(p, "+ud:", 4) != 0)
            return 0;
        p += 3;
        for (int64_t i = 0; i < col[C_COUNT]; i++) {
            const char *sep = i == 0 ? ":" : ",";
            if (!tc_number_after(p, sep, i, i, &rest))
                return 0;
            p = rest;
        }
        return *p == 0;
    }
    default: /* FKC_TC_DICT: int32 indices */
        return strcmp(format, "i") == 0;
    }
}

int fkc_tc_check_tree(const fkc_tc_tree *p)
{
    size_t n = p->column_count;
    if (n == 0 || n > (size_t)INT32_MAX)
        return 0;
    uint32_t *depth = calloc(n, sizeof *depth);
    uint8_t *parents = calloc(n, 1);
    if (depth == NULL || parents == NULL) {
        free(depth);
        free(parents);
        return 0;
    }
    int ok = 1;
    for (size_t c = 0; ok && c < n; c++) {
        const int64_t *col = fkc_tc_column(p, (int64_t)c);
        int64_t layout = col[C_LAYOUT], first = col[C_FIRST], count = col[C_COUNT];
        ok = layout >= 0 && layout <= FKC_TC_LAYOUT_MAX && (col[C_NULLABLE] == 0 || col[C_NULLABLE] == 1) &&
             tc_cstring(p, col[C_NAME]) && tc_cstring(p, col[C_FORMAT]) && count >= 0 && (uint64_t)count <= n &&
             (count == 0 || (first > (int64_t)c && (uint64_t)first <= n - (uint64_t)count)) && depth[c] < FKC_TC_MAX_DEPTH;
        if (!ok || !tc_format_fits(col, (const char *)p->strings + col[C_FORMAT])) {
            ok = 0;
            break;
        }
        switch (layout) {
        case FKC_TC_STRUCT:
            break;
        case FKC_TC_LIST:
            ok = count == 1;
            break;
        case FKC_TC_MAP: {
            ok = count == 1;
            if (ok) {
                const int64_t *entries = fkc_tc_column(p, first);
                ok = entries[C_LAYOUT] == FKC_TC_STRUCT && entries[C_NULLABLE] == 0 && entries[C_COUNT] == 2 &&
                     entries[C_FIRST] > first && (uint64_t)entries[C_FIRST] <= n - 2;
                /* Arrow's map keys are never null; which key types a walker
                 * writes is its own plan check's */
                const int64_t *key = ok ? fkc_tc_column(p, entries[C_FIRST]) : NULL;
                ok = ok && key[C_NULLABLE] == 0 && key[C_LAYOUT] != FKC_TC_NULL && key[C_COUNT] == 0;
            }
            break;
        }
        case FKC_TC_FIXED_BINARY:
            ok = count == 0 && col[C_P0] >= 0 && col[C_P0] <= INT32_MAX;
            break;
        case FKC_TC_DENSE_UNION: /* no validity bitmap to be nullable with; type ids are int8 */
            ok = count >= 1 && count <= FKC_TC_MAX_UNION && col[C_NULLABLE] == 0;
            break;
        case FKC_TC_DECIMAL:
            ok = count == 0 && (col[C_P0] == 16 || col[C_P0] == 32) && fkc_tc_span(p, col[C_P1], col[C_P0]);
            break;
        case FKC_TC_DICT: {
            int64_t nsym = col[C_P0];
            ok = count == 0 && nsym >= 0 && nsym < INT32_MAX && fkc_tc_span(p, col[C_P1], 4 * (nsym + 1));
            int32_t prev = 0;
            for (int64_t i = 0; ok && i <= nsym; i++) {
                int32_t at = fkc_tc_le32(p->strings + col[C_P1] + 4 * i);
                ok = (i == 0 ? at == 0 : at >= prev);
                prev = at;
            }
            ok = ok && fkc_tc_span(p, col[C_P2], prev) && fkc_utf8_valid(p->strings + col[C_P2], (size_t)prev);
            break;
        }
        default:
            ok = count == 0;
        }
        for (int64_t k = 0; ok && k < count; k++) {
            size_t child = (size_t)(first + k);
            ok = parents[child] == 0;
            parents[child] = 1;
            depth[child] = depth[c] + 1;
        }
    }
    for (size_t c = 1; ok && c < n; c++)
        ok = parents[c] == 1; /* every column but the array's own hangs off one parent */
    free(depth);
    free(parents);
    return ok;
}
/* ------------------------------------------------------------------------ */
/* The columns being built. */

/* realloc to `bytes`, zeroing what is new past `old` bytes. */
static int tc_regrow(uint8_t **buf, size_t old, size_t bytes)
{
    uint8_t *grown = realloc(*buf, bytes);
    if (grown == NULL)
        return 0;
    memset(grown + old, 0, bytes - old);
    *buf = grown;
    return 1;
}

static int tc_nomem(fkc_tc_set *s)
{
    return fkc_tc_fail(s, FKC_TC_NOMEM, 0, "arrow column", "out of memory");
}

int fkc_tc_fail(fkc_tc_set *s, int kind, size_t offset, const char *what, const char *problem)
{
    s->err->kind = kind;
    s->err->index = s->index;
    s->err->offset = offset;
    s->err->what = what;
    s->err->problem = problem;
    return 0;
}

/* The row buffers of `c` grown to `cap` rows (c->cap < cap <= FKC_TC_MAX_ROWS). */
static int tc_grow_rows_to(fkc_tc_set *s, fkc_tc_col *c, size_t cap)
{
    if (c->nullable && !tc_regrow(&c->validity, fkc_bitmap_bytes(c->cap), fkc_bitmap_bytes(cap)))
        return tc_nomem(s);
    if (c->layout == FKC_TC_BOOL) {
        if (!tc_regrow(&c->values, fkc_bitmap_bytes(c->cap), fkc_bitmap_bytes(cap)))
            return tc_nomem(s);
    } else if (tc_has_offsets(c->layout)) { /* cap + 1 offsets, the first 0 */
        size_t old = c->cap ? (c->cap + 1) * 4 : 0;
        if (cap > SIZE_MAX / 4 - 1 || !tc_regrow(&c->values, old, (cap + 1) * 4))
            return tc_nomem(s);
    } else if (c->layout == FKC_TC_DENSE_UNION) { /* cap type ids, cap offsets */
        if (cap > SIZE_MAX / 4 || !tc_regrow(&c->values, c->cap, cap) || !tc_regrow(&c->data, c->cap * 4, cap * 4))
            return tc_nomem(s);
    } else if (c->width > 0) {
        if (cap > SIZE_MAX / c->width || !tc_regrow(&c->values, c->cap * c->width, cap * c->width))
            return tc_nomem(s);
    }
    c->cap = cap;
    return 1;
}

/* Room for one more row when the column is full (doubling, never past
 * FKC_TC_MAX_ROWS): out of line, the inline fkc_tc_begin() checks first. */
int fkc_tc_grow_rows(fkc_tc_set *s, fkc_tc_col *c)
{
    if (c->len < c->cap)
        return 1;
    if (c->cap >= FKC_TC_MAX_ROWS)
        return fkc_tc_fail(s, FKC_TC_CAPACITY, 0, "arrow column", "more than 2^31 - 1 values");
    size_t cap = c->cap ? c->cap * 2 : 64;
    if (cap > FKC_TC_MAX_ROWS)
        cap = FKC_TC_MAX_ROWS;
    return tc_grow_rows_to(s, c, cap);
}

/* The data buffer of a BINARY / UTF8 column grown to `cap` bytes (> data_cap). */
static int tc_grow_data(fkc_tc_col *c, size_t cap)
{
    uint8_t *grown = realloc(c->data, cap);
    if (grown == NULL)
        return 0;
    c->data = grown;
    c->data_cap = cap;
    return 1;
}

int fkc_tc_put_bytes_grow(fkc_tc_set *r, fkc_tc_col *c, const uint8_t *p, size_t n)
{
    if (!fkc_tc_begin(r, c))
        return 0;
    if (n > FKC_TC_MAX_ROWS - c->data_len)
        return fkc_tc_fail(r, FKC_TC_CAPACITY, 0, "arrow column", "more than 2^31 - 1 bytes");
    if (n > c->data_cap - c->data_len) {
        /* c->data_len + n <= FKC_TC_MAX_ROWS: checked above */
        uint8_t *grown = fkc_grow(c->data, &c->data_cap, c->data_len + n, 1, 256);
        if (grown == NULL)
            return tc_nomem(r);
        c->data = grown;
    }
    if (n > 0)
        memcpy(c->data + c->data_len, p, n);
    c->data_len += n;
    fkc_tc_end_offsets(c, c->data_len);
    return 1;
}


int fkc_tc_fill(fkc_tc_set *r, fkc_tc_col *c)
{
    if (c->layout == FKC_TC_NULL) { /* no buffers: a length and a null count */
        if (c->len >= FKC_TC_MAX_ROWS)
            return fkc_tc_fail(r, FKC_TC_CAPACITY, 0, "arrow column", "more than 2^31 - 1 values");
        c->len++;
        c->nulls++;
        return 1;
    }
    if (c->layout == FKC_TC_DENSE_UNION) {
        /* no validity of its own: a row of its null child when it has one,
         * else of its first child (filled the same way) */
        size_t branch = 0;
        for (size_t i = 0; i < c->count; i++)
            if (fkc_tc_child(r, c, i)->layout == FKC_TC_NULL) {
                branch = i;
                break;
            }
        return fkc_tc_union_row(r, c, branch) && fkc_tc_fill(r, fkc_tc_child(r, c, branch));
    }
    if (!fkc_tc_grow_rows(r, c))
        return 0;
    if (c->nullable) {
        fkc_tc_bit(c->validity, c->len, 0);
        c->nulls++;
    }
    switch (c->layout) {
    case FKC_TC_STRUCT:
        c->len++;
        for (size_t i = 0; i < c->count; i++)
            if (!fkc_tc_fill(r, fkc_tc_child(r, c, i)))
                return 0;
        return 1;
    case FKC_TC_BINARY:
    case FKC_TC_UTF8:
        fkc_tc_end_offsets(c, c->data_len);
        return 1;
    case FKC_TC_LIST:
    case FKC_TC_MAP:
        fkc_tc_end_offsets(c, fkc_tc_child(r, c, 0)->len);
        return 1;
    case FKC_TC_BOOL:
        fkc_tc_bit(c->values, c->len, 0);
        c->len++;
        return 1;
    default: /* fixed widths */
        if (c->width > 0)
            memset(c->values + c->len * c->width, 0, c->width);
        c->len++;
        return 1;
    }
}

/* Zero bits of bitmap[from, to). */
static size_t tc_zero_bits(const uint8_t *bitmap, size_t from, size_t to)
{
    size_t zeros = 0;
    for (size_t i = from; i < to; i++) /* a rollback's few rows: no word tricks */
        zeros += !((bitmap[i >> 3] >> (i & 7)) & 1);
    return zeros;
}

void fkc_tc_truncate(fkc_tc_set *s, fkc_tc_col *c, size_t n)
{
    if (n < c->len) {
        if (c->layout == FKC_TC_NULL)
            c->nulls = (int64_t)n;
        else if (c->nullable)
            c->nulls -= (int64_t)tc_zero_bits(c->validity, n, c->len);
        c->len = n;
    }
    /* below: also when the column is not longer than n, since a list or
     * binary row being written has its items or bytes before its length */
    switch (c->layout) {
    case FKC_TC_BINARY:
    case FKC_TC_UTF8:
        c->data_len = n > 0 ? (size_t)fkc_tc_offsets(c)[n] : 0;
        return;
    case FKC_TC_LIST:
    case FKC_TC_MAP:
        fkc_tc_truncate(s, fkc_tc_child(s, c, 0), n > 0 ? (size_t)fkc_tc_offsets(c)[n] : 0);
        return;
    case FKC_TC_STRUCT:
        for (size_t i = 0; i < c->count; i++)
            fkc_tc_truncate(s, fkc_tc_child(s, c, i), n);
        return;
    default: /* fixed widths: the length is all; DENSE_UNION is not supported (see the header) */
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Export. */

static const int64_t tc_zeros[8]; /* an empty buffer, and the offsets [0] of an empty column */

typedef struct tc_array_export {
    size_t refs;                /* nodes not yet released */
    struct ArrowArray *nodes;   /* the columns, then the dictionaries */
    struct ArrowArray **kids;
    const void **buffers;       /* 3 per node */
    void **owned;               /* every buffer, freed with the last node */
    size_t owned_count;
} tc_array_export;

static void tc_array_export_free(tc_array_export *x)
{
    for (size_t i = 0; i < x->owned_count; i++)
        free(x->owned[i]);
    free(x->owned);
    free(x->nodes);
    free(x->kids);
    free(x->buffers);
    free(x);
}

static void tc_array_release(struct ArrowArray *a)
{
    if (a == NULL || a->release == NULL)
        return;
    /* children and a dictionary still in place go with their parent; a
     * moved one was marked released by whoever moved it */
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL)
            a->children[i]->release(a->children[i]);
    if (a->dictionary != NULL && a->dictionary->release != NULL)
        a->dictionary->release(a->dictionary);
    tc_array_export *x = (tc_array_export *)a->private_data;
    a->release = NULL;
    if (--x->refs == 0)
        tc_array_export_free(x);
}

typedef struct tc_schema_export {
    size_t refs;
    struct ArrowSchema *nodes; /* the columns, then the dictionaries */
    struct ArrowSchema **kids;
    char *strings;             /* names and formats */
} tc_schema_export;

static void tc_schema_release(struct ArrowSchema *s)
{
    if (s == NULL || s->release == NULL)
        return;
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release != NULL)
            s->children[i]->release(s->children[i]);
    if (s->dictionary != NULL && s->dictionary->release != NULL)
        s->dictionary->release(s->dictionary);
    tc_schema_export *x = (tc_schema_export *)s->private_data;
    s->release = NULL;
    if (--x->refs == 0) {
        free(x->nodes);
        free(x->kids);
        free(x->strings);
        free(x);
    }
}

static size_t tc_dict_count(const fkc_tc_tree *p)
{
    size_t n = 0;
    for (size_t c = 0; c < p->column_count; c++)
        if (fkc_tc_column(p, (int64_t)c)[C_LAYOUT] == FKC_TC_DICT)
            n++;
    return n;
}

static int tc_export_schema(const fkc_tc_tree *p, struct ArrowSchema *out)
{
    size_t ncols = p->column_count, nodes = ncols + tc_dict_count(p);
    tc_schema_export *x = calloc(1, sizeof *x);
    if (x == NULL)
        return 0;
    x->nodes = calloc(nodes, sizeof *x->nodes);
    x->kids = calloc(ncols, sizeof *x->kids); /* every column but the array's own is one child */
    x->strings = malloc(p->strings_len);
    if (x->nodes == NULL || x->kids == NULL || x->strings == NULL) {
        free(x->nodes);
        free(x->kids);
        free(x->strings);
        free(x);
        return 0;
    }
    memcpy(x->strings, p->strings, p->strings_len);
    size_t dict = ncols;
    for (size_t c = 0; c < ncols; c++) {
        const int64_t *col = fkc_tc_column(p, (int64_t)c);
        struct ArrowSchema *s = &x->nodes[c];
        s->format = x->strings + col[C_FORMAT];
        s->name = x->strings + col[C_NAME];
        s->metadata = NULL;
        s->flags = col[C_NULLABLE] ? TC_FLAG_NULLABLE : 0;
        s->n_children = col[C_COUNT];
        s->children = col[C_COUNT] ? x->kids + col[C_FIRST] - 1 : NULL;
        for (int64_t i = 0; i < col[C_COUNT]; i++)
            x->kids[col[C_FIRST] + i - 1] = &x->nodes[col[C_FIRST] + i];
        s->dictionary = NULL;
        if (col[C_LAYOUT] == FKC_TC_DICT) {
            struct ArrowSchema *d = &x->nodes[dict++];
            d->format = "u";
            d->name = "";
            d->release = tc_schema_release;
            d->private_data = x;
            s->dictionary = d;
        }
        s->release = tc_schema_release;
        s->private_data = x;
    }
    x->refs = nodes;
    *out = x->nodes[0];
    x->nodes[0].release = NULL; /* moved to *out */
    return 1;
}

static int tc_own(tc_array_export *x, void *buffer)
{
    if (buffer != NULL)
        x->owned[x->owned_count++] = buffer;
    return 1;
}

static void tc_bitmap_trim(uint8_t *bitmap, size_t n)
{
    if (bitmap != NULL && n % 8)
        bitmap[n / 8] = (uint8_t)(bitmap[n / 8] & ((1u << (n % 8)) - 1u));
}

/* Moves the columns' buffers into *out (they are the export's from then on). */
static int tc_export_array(const fkc_tc_tree *p, fkc_tc_col *cols, struct ArrowArray *out)
{
    size_t ncols = p->column_count, ndict = tc_dict_count(p), nodes = ncols + ndict;
    tc_array_export *x = calloc(1, sizeof *x);
    if (x == NULL)
        return 0;
    x->nodes = calloc(nodes, sizeof *x->nodes);
    x->kids = calloc(ncols, sizeof *x->kids);
    x->buffers = calloc(3 * nodes, sizeof *x->buffers);
    x->owned = calloc(3 * ncols + 2 * ndict, sizeof *x->owned);
    /* the dictionaries' own copies of their offsets and symbols */
    int ok = x->nodes != NULL && x->kids != NULL && x->buffers != NULL && x->owned != NULL;
    size_t dict = ncols;
    for (size_t c = 0; ok && c < ncols; c++) {
        const int64_t *col = cols[c].plan;
        if (col[C_LAYOUT] != FKC_TC_DICT)
            continue;
        size_t nsym = (size_t)col[C_P0], offsets_len = 4 * (nsym + 1);
        size_t data_len = (size_t)fkc_tc_le32(p->strings + col[C_P1] + offsets_len - 4);
        uint8_t *offsets = malloc(offsets_len), *data = malloc(data_len ? data_len : 1);
        tc_own(x, offsets);
        tc_own(x, data);
        ok = offsets != NULL && data != NULL;
        if (ok) {
            memcpy(offsets, p->strings + col[C_P1], offsets_len); /* little-endian, as every host we build for */
            memcpy(data, p->strings + col[C_P2], data_len);
            struct ArrowArray *d = &x->nodes[dict];
            const void **buf = x->buffers + 3 * dict;
            buf[0] = NULL;
            buf[1] = offsets;
            buf[2] = data;
            d->length = (int64_t)nsym;
            d->n_buffers = 3;
            d->buffers = buf;
            d->release = tc_array_release;
            d->private_data = x;
            dict++;
        }
    }
    if (!ok) {
        tc_array_export_free(x); /* frees what it owns: the dictionaries' copies only */
        return 0;
    }
    dict = ncols;
    for (size_t c = 0; c < ncols; c++) {
        fkc_tc_col *col = &cols[c];
        struct ArrowArray *a = &x->nodes[c];
        const void **buf = x->buffers + 3 * c;
        tc_bitmap_trim(col->validity, col->len);
        if (col->layout == FKC_TC_BOOL)
            tc_bitmap_trim(col->values, col->len);
        const void *values = col->values != NULL ? (const void *)col->values : (const void *)tc_zeros;
        buf[0] = col->nulls && col->layout != FKC_TC_NULL ? col->validity : NULL;
        buf[1] = values;
        buf[2] = col->data != NULL ? (const void *)col->data : (const void *)tc_zeros;
        switch (col->layout) {
        case FKC_TC_NULL:
            a->n_buffers = 0;
            break;
        case FKC_TC_STRUCT:
            a->n_buffers = 1;
            break;
        case FKC_TC_DENSE_UNION: /* the C data interface's dense union: type ids, offsets (no validity slot) */
            a->n_buffers = 2;
            buf[0] = values;
            buf[1] = col->data != NULL ? (const void *)col->data : (const void *)tc_zeros;
            break;
        case FKC_TC_BINARY:
        case FKC_TC_UTF8:
            a->n_buffers = 3;
            break;
        default:
            a->n_buffers = 2;
        }
        a->length = (int64_t)col->len;
        a->null_count = col->nulls;
        a->offset = 0;
        a->buffers = buf;
        a->n_children = (int64_t)col->count;
        a->children = col->count ? x->kids + col->first - 1 : NULL;
        for (size_t i = 0; i < col->count; i++)
            x->kids[col->first + i - 1] = &x->nodes[col->first + i];
        a->dictionary = col->layout == FKC_TC_DICT ? &x->nodes[dict++] : NULL;
        a->release = tc_array_release;
        a->private_data = x;
        tc_own(x, col->validity);
        tc_own(x, col->values);
        tc_own(x, col->data);
        col->validity = col->values = col->data = NULL;
    }
    x->refs = nodes;
    *out = x->nodes[0];
    x->nodes[0].release = NULL; /* moved to *out */
    return 1;
}

static void tc_cols_free(fkc_tc_col *cols, size_t n)
{
    for (size_t c = 0; c < n; c++) {
        free(cols[c].validity);
        free(cols[c].values);
        free(cols[c].data);
    }
    free(cols);
}

/* Sizing from the caller's hint, so the columns do not grow by doubling
 * (a realloc and a copy each time) through a large batch: the columns with
 * one row per payload get `rows_hint` rows at the start; after the first
 * chunk each binary column's bytes are reserved in proportion to what that
 * chunk wrote. Only a hint: a failed reservation is left to the growth on
 * the way, which reports it. */
static void tc_presize_rows(fkc_tc_set *s)
{
    const fkc_tc_tree *p = s->tree;
    size_t rows = s->rows_hint < FKC_TC_MAX_ROWS ? s->rows_hint : FKC_TC_MAX_ROWS;
    s->per_row[0] = 1; /* a column's children come after it: one pass in order */
    for (size_t c = 0; c < p->column_count; c++) {
        fkc_tc_col *k = &s->cols[c];
        if (!s->per_row[c])
            continue;
        if (k->layout == FKC_TC_STRUCT)
            for (size_t i = 0; i < k->count && k->first + i < p->column_count; i++)
                s->per_row[k->first + i] = 1;
        if (k->layout != FKC_TC_NULL && rows > k->cap)
            (void)tc_grow_rows_to(s, k, rows);
    }
}

static void tc_presize_data(fkc_tc_set *s)
{
    for (size_t c = 0; c < s->tree->column_count; c++) {
        fkc_tc_col *k = &s->cols[c];
        if (!tc_has_offsets(k->layout) || k->layout == FKC_TC_LIST || k->layout == FKC_TC_MAP || k->data_len == 0)
            continue;
        /* bytes per payload so far, times the payloads expected, an eighth more */
        double want = (double)k->data_len / (double)s->rows * (double)s->rows_hint * 1.125;
        if (want > (double)FKC_TC_MAX_ROWS)
            want = (double)FKC_TC_MAX_ROWS;
        if ((size_t)want > k->data_cap)
            (void)tc_grow_data(k, (size_t)want);
    }
}

fkc_tc_set *fkc_tc_start(const fkc_tc_tree *t, size_t rows_hint)
{
    fkc_tc_set *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->tree = t;
    s->err = &s->unused;
    s->cols = calloc(t->column_count, sizeof *s->cols);
    if (s->cols == NULL) {
        free(s);
        return NULL;
    }
    for (size_t c = 0; c < t->column_count; c++) {
        const int64_t *col = fkc_tc_column(t, (int64_t)c);
        fkc_tc_col *k = &s->cols[c];
        k->plan = col;
        k->layout = col[C_LAYOUT];
        k->nullable = (int)col[C_NULLABLE];
        k->width = tc_width(col);
        k->first = (size_t)col[C_FIRST];
        k->count = (size_t)col[C_COUNT];
    }
    s->rows_hint = rows_hint;
    if (rows_hint > 0) {
        s->per_row = calloc(t->column_count ? t->column_count : 1, 1);
        if (s->per_row == NULL) {
            fkc_tc_discard(s);
            return NULL;
        }
        tc_presize_rows(s);
    }
    return s;
}

void fkc_tc_chunk_done(fkc_tc_set *s, size_t count)
{
    int first_chunk = s->rows == 0;
    s->rows += count;
    if (first_chunk && s->rows > 0 && s->rows < s->rows_hint)
        tc_presize_data(s);
    s->err = &s->unused; /* the caller's error goes with its call */
}

void fkc_tc_rewind(fkc_tc_set *s)
{
    for (size_t c = 0; c < s->tree->column_count; c++) {
        s->cols[c].len = 0;
        s->cols[c].nulls = 0;
        s->cols[c].data_len = 0;
    }
    s->rows = 0;
}

void fkc_tc_discard(fkc_tc_set *s)
{
    if (s == NULL)
        return;
    tc_cols_free(s->cols, s->tree->column_count);
    free(s->per_row);
    free(s);
}

int fkc_tc_finish(fkc_tc_set *s, struct ArrowArray *out_array, struct ArrowSchema *out_schema, fkc_tc_error *err)
{
    s->err = err;
    s->index = s->rows;
    int exported = tc_export_schema(s->tree, out_schema);
    if (exported && !tc_export_array(s->tree, s->cols, out_array)) {
        out_schema->release(out_schema);
        exported = 0;
    }
    if (!exported)
        tc_nomem(s);
    fkc_tc_discard(s); /* after an export: only what it did not take */
    return exported ? FKC_TC_OK : err->kind;
}
