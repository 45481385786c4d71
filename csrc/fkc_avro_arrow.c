/* fkc_avro_arrow.c — the Avro tape → Arrow array sink; see fkc_avro_arrow.h. */
#include "fkc_avro_arrow.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_records.h" /* fkc_utf8_valid */

#define AA_MAX_ROWS ((size_t)INT32_MAX) /* per column: every int32 offset fits */
#define AA_MAX_DEPTH 4096               /* columns and steps nest at most this deep */
#define AA_FLAG_NULLABLE 2              /* ARROW_FLAG_NULLABLE */
#define AA_DAY_MS INT64_C(86400000)     /* time32[ms] and time64[us] stay inside a day */
#define AA_DAY_US INT64_C(86400000000)

/* Column words */
enum { C_LAYOUT, C_NULLABLE, C_NAME, C_FORMAT, C_FIRST, C_COUNT, C_P0, C_P1, C_P2 };

static const int64_t *aa_column(const fkc_avro_arrow_plan *p, int64_t c)
{
    return p->columns + (size_t)c * FKC_AA_COL_WIDTH;
}

/* Bytes per row of the fixed-width layouts (0: bits, offsets or nothing). */
static size_t aa_width(const int64_t *col)
{
    switch (col[C_LAYOUT]) {
    case FKC_AA_INT32:
    case FKC_AA_FLOAT32:
    case FKC_AA_DICT:
        return 4;
    case FKC_AA_INT64:
    case FKC_AA_FLOAT64:
        return 8;
    case FKC_AA_FIXED_BINARY:
    case FKC_AA_DECIMAL:
        return (size_t)col[C_P0];
    default:
        return 0;
    }
}

static int aa_has_offsets(int64_t layout)
{
    return layout == FKC_AA_BINARY || layout == FKC_AA_UTF8 || layout == FKC_AA_LIST || layout == FKC_AA_MAP;
}

/* strings[off, off + len) lies inside the blob. */
static int aa_span(const fkc_avro_arrow_plan *p, int64_t off, int64_t len)
{
    return off >= 0 && len >= 0 && (uint64_t)off <= p->strings_len && (uint64_t)len <= p->strings_len - (uint64_t)off;
}

static int aa_cstring(const fkc_avro_arrow_plan *p, int64_t off)
{
    return off >= 0 && (uint64_t)off < p->strings_len &&
           memchr(p->strings + off, 0, p->strings_len - (size_t)off) != NULL;
}

static int32_t aa_le32(const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t out;
    memcpy(&out, &v, 4);
    return out;
}

/* A little-endian two's complement value of `width` bytes: 1 when its
 * magnitude is below `bound` (10^precision, same width, unsigned). */
static int aa_decimal_fits(const uint8_t *le, size_t width, const uint8_t *bound)
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

/* Avro's big-endian two's complement bytes p[0, n) as a `width`-byte
 * little-endian value: 0 when they do not fit (more significant bytes than
 * the width holds, or not below 10^precision). */
static int aa_decimal_from_be(const uint8_t *p, size_t n, size_t width, const uint8_t *bound, uint8_t *out)
{
    uint8_t sign = n > 0 && (p[0] & 0x80) ? (uint8_t)0xFF : (uint8_t)0x00;
    if (n > width) {
        for (size_t i = 0; i < n - width; i++)
            if (p[i] != sign)
                return 0;
        if ((p[n - width] ^ sign) & 0x80)
            return 0;
    }
    for (size_t i = 0; i < width; i++)
        out[i] = i < n ? p[n - 1 - i] : sign;
    return aa_decimal_fits(out, width, bound);
}

/* A time column's value is inside a day (Arrow's rule for time32/time64);
 * other integer columns take any value. */
static int aa_in_day(const int64_t *col, int64_t v)
{
    return col[C_P0] == 0 || (v >= 0 && v < col[C_P0]);
}

/* ------------------------------------------------------------------------ */
/* Plan check. */

/* `text` is "<prefix><decimal number>" with the number in [lo, hi]; the rest
 * after the number in *rest. */
static int aa_number_after(const char *text, const char *prefix, int64_t lo, int64_t hi, const char **rest)
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
static int aa_format_fits(const int64_t *col, const char *format)
{
    const char *rest = NULL;
    switch (col[C_LAYOUT]) {
    case FKC_AA_NULL:
        return strcmp(format, "n") == 0;
    case FKC_AA_BOOL:
        return strcmp(format, "b") == 0;
    case FKC_AA_INT32: /* p0: the day's bound of a time, else 0 */
        if (strcmp(format, "ttm") == 0)
            return col[C_P0] == AA_DAY_MS;
        return col[C_P0] == 0 && (strcmp(format, "i") == 0 || strcmp(format, "tdD") == 0);
    case FKC_AA_INT64: /* long, time64[us], a timestamp in any zone */
        if (strcmp(format, "ttu") == 0)
            return col[C_P0] == AA_DAY_US;
        return col[C_P0] == 0 && (strcmp(format, "l") == 0 || (strncmp(format, "ts", 2) == 0 &&
                                                                (format[2] == 'm' || format[2] == 'u' ||
                                                                 format[2] == 'n') &&
                                                                format[3] == ':'));
    case FKC_AA_FLOAT32:
        return strcmp(format, "f") == 0;
    case FKC_AA_FLOAT64:
        return strcmp(format, "g") == 0;
    case FKC_AA_FIXED_BINARY:
        return aa_number_after(format, "w:", col[C_P0], col[C_P0], &rest) && *rest == 0;
    case FKC_AA_DECIMAL: {
        int wide = col[C_P0] == 32;
        const char *scale = NULL;
        return aa_number_after(format, "d:", 1, wide ? 76 : 38, &rest) && *rest == ',' &&
               aa_number_after(rest, ",", 0, 76, &scale) && strcmp(scale, wide ? ",256" : "") == 0;
    }
    case FKC_AA_BINARY:
        return strcmp(format, "z") == 0;
    case FKC_AA_UTF8:
        return strcmp(format, "u") == 0;
    case FKC_AA_STRUCT:
        return strcmp(format, "+s") == 0;
    case FKC_AA_LIST:
        return strcmp(format, "+l") == 0;
    case FKC_AA_MAP:
        return strcmp(format, "+m") == 0;
    default: /* FKC_AA_DICT: int32 indices */
        return strcmp(format, "i") == 0;
    }
}

typedef struct aa_checker {
    const fkc_avro_arrow_plan *p;
    uint8_t *seen;        /* per step word: a step already walked (the steps form a tree) */
    int64_t *covered_by;  /* per column: the record or constant step that wrote it last */
} aa_checker;

static int aa_check_columns(const fkc_avro_arrow_plan *p)
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
        const int64_t *col = aa_column(p, (int64_t)c);
        int64_t layout = col[C_LAYOUT], first = col[C_FIRST], count = col[C_COUNT];
        ok = layout >= 0 && layout <= FKC_AA_LAYOUT_MAX && (col[C_NULLABLE] == 0 || col[C_NULLABLE] == 1) &&
             aa_cstring(p, col[C_NAME]) && aa_cstring(p, col[C_FORMAT]) && count >= 0 && (uint64_t)count <= n &&
             (count == 0 || (first > (int64_t)c && (uint64_t)first <= n - (uint64_t)count)) && depth[c] < AA_MAX_DEPTH;
        if (!ok || !aa_format_fits(col, (const char *)p->strings + col[C_FORMAT])) {
            ok = 0;
            break;
        }
        switch (layout) {
        case FKC_AA_STRUCT:
            break;
        case FKC_AA_LIST:
            ok = count == 1;
            break;
        case FKC_AA_MAP: {
            ok = count == 1;
            if (ok) {
                const int64_t *entries = aa_column(p, first);
                ok = entries[C_LAYOUT] == FKC_AA_STRUCT && entries[C_NULLABLE] == 0 && entries[C_COUNT] == 2 &&
                     entries[C_FIRST] > first && (uint64_t)entries[C_FIRST] <= n - 2 &&
                     aa_column(p, entries[C_FIRST])[C_LAYOUT] == FKC_AA_UTF8 &&
                     aa_column(p, entries[C_FIRST])[C_NULLABLE] == 0;
            }
            break;
        }
        case FKC_AA_FIXED_BINARY:
            ok = count == 0 && col[C_P0] >= 0 && col[C_P0] <= INT32_MAX;
            break;
        case FKC_AA_DECIMAL:
            ok = count == 0 && (col[C_P0] == 16 || col[C_P0] == 32) && aa_span(p, col[C_P1], col[C_P0]);
            break;
        case FKC_AA_DICT: {
            int64_t nsym = col[C_P0];
            ok = count == 0 && nsym >= 0 && nsym < INT32_MAX && aa_span(p, col[C_P1], 4 * (nsym + 1));
            int32_t prev = 0;
            for (int64_t i = 0; ok && i <= nsym; i++) {
                int32_t at = aa_le32(p->strings + col[C_P1] + 4 * i);
                ok = (i == 0 ? at == 0 : at >= prev);
                prev = at;
            }
            ok = ok && aa_span(p, col[C_P2], prev) && fkc_utf8_valid(p->strings + col[C_P2], (size_t)prev);
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

/* Whether a program scalar (wire, out kinds, fixed size) may land in `col`. */
static int aa_scalar_fits(const int32_t *op, const int64_t *col)
{
    int32_t wire = op[1], out = op[2];
    int64_t layout = col[C_LAYOUT];
    int blob = wire == FKC_AVRO_BYTES || wire == FKC_AVRO_STRING;
    if (wire == FKC_AVRO_NULL)
        return layout == FKC_AA_NULL || col[C_NULLABLE];
    switch (layout) {
    case FKC_AA_BOOL:
        return wire == FKC_AVRO_BOOLEAN;
    case FKC_AA_INT32:
        return wire == FKC_AVRO_INT && out == FKC_AVRO_INT;
    case FKC_AA_INT64:
        return (wire == FKC_AVRO_INT || wire == FKC_AVRO_LONG) && out == FKC_AVRO_LONG;
    case FKC_AA_FLOAT32:
        return wire >= FKC_AVRO_INT && wire <= FKC_AVRO_FLOAT && out == FKC_AVRO_FLOAT;
    case FKC_AA_FLOAT64:
        return wire >= FKC_AVRO_INT && wire <= FKC_AVRO_DOUBLE && out == FKC_AVRO_DOUBLE;
    case FKC_AA_BINARY:
        return blob && (out == FKC_AVRO_BYTES || out == FKC_AVRO_STRING);
    case FKC_AA_UTF8: /* phase 1 checked the UTF-8 of what it reads as a string */
        return blob && out == FKC_AVRO_STRING;
    case FKC_AA_FIXED_BINARY:
        return wire == FKC_AVRO_FIXED && op[4] == col[C_P0];
    case FKC_AA_DECIMAL:
        return (blob || wire == FKC_AVRO_FIXED) && (out == FKC_AVRO_BYTES || out == FKC_AVRO_FIXED);
    default:
        return 0;
    }
}

static int aa_check_step(aa_checker *k, int64_t sid, int64_t pc, int64_t column, int depth);

/* A child step of a record or constant struct: on one of its children, each
 * child written once. */
static int aa_check_field(aa_checker *k, int64_t owner, const int64_t *col, int64_t sid, int64_t pc, int depth)
{
    const fkc_avro_arrow_plan *p = k->p;
    if (sid < 0 || (uint64_t)sid >= p->steps_len - 1)
        return 0;
    int64_t target = p->steps[sid + 1];
    if (target < col[C_FIRST] || target >= col[C_FIRST] + col[C_COUNT] || k->covered_by[target] == owner)
        return 0;
    k->covered_by[target] = owner;
    return aa_check_step(k, sid, pc, target, depth + 1);
}

static int aa_check_const(aa_checker *k, int64_t sid, const int64_t *s, const int64_t *col, int depth)
{
    const fkc_avro_arrow_plan *p = k->p;
    int64_t null = s[2], off = s[3], len = s[4], n = s[5];
    const int64_t *kids = s + 6;
    int64_t layout = col[C_LAYOUT];
    if (null != 0 && null != 1)
        return 0;
    if (null || layout == FKC_AA_NULL)
        return null && n == 0 && (layout == FKC_AA_NULL || col[C_NULLABLE]);
    if (!aa_span(p, off, len))
        return 0;
    const uint8_t *bytes = p->strings + off;
    switch (layout) {
    case FKC_AA_BOOL:
        return n == 0 && len == 1 && bytes[0] <= 1;
    case FKC_AA_DICT:
        return n == 0 && len == 4 && aa_le32(bytes) >= 0 && aa_le32(bytes) < col[C_P0];
    case FKC_AA_DECIMAL:
        return n == 0 && len == col[C_P0] && aa_decimal_fits(bytes, (size_t)len, p->strings + col[C_P1]);
    case FKC_AA_INT32:
        return n == 0 && len == 4 && aa_in_day(col, aa_le32(bytes));
    case FKC_AA_INT64: {
        int64_t v;
        if (n != 0 || len != 8)
            return 0;
        memcpy(&v, bytes, 8); /* little-endian, as every host we build for */
        return aa_in_day(col, v);
    }
    case FKC_AA_FLOAT32:
    case FKC_AA_FLOAT64:
    case FKC_AA_FIXED_BINARY:
        return n == 0 && (size_t)len == aa_width(col);
    case FKC_AA_BINARY:
        return n == 0 && len <= INT32_MAX;
    case FKC_AA_UTF8:
        return n == 0 && len <= INT32_MAX && fkc_utf8_valid(bytes, (size_t)len);
    case FKC_AA_STRUCT:
        if (len != 0 || n != col[C_COUNT])
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_check_field(k, sid, col, kids[i], -1, depth))
                return 0;
        return 1;
    case FKC_AA_LIST:
    case FKC_AA_MAP: {
        if (len != 0)
            return 0;
        int64_t item = col[C_FIRST], key = -1;
        if (layout == FKC_AA_MAP) {
            if (n % 2)
                return 0;
            key = aa_column(p, col[C_FIRST])[C_FIRST];
            item = key + 1;
        }
        for (int64_t i = 0; i < n; i++)
            if (!aa_check_step(k, kids[i], -1, key >= 0 && i % 2 == 0 ? key : item, depth + 1))
                return 0;
        return 1;
    }
    default:
        return 0;
    }
}

/* Step `sid` must exist, follow the program op at `pc` (-1: be a
 * constant) and write `column`. */
static int aa_check_step(aa_checker *k, int64_t sid, int64_t pc, int64_t column, int depth)
{
    const fkc_avro_arrow_plan *p = k->p;
    if (depth > AA_MAX_DEPTH || sid < 0 || (uint64_t)sid >= p->steps_len)
        return 0;
    const int64_t *s = p->steps + sid;
    size_t head = s[0] < 0 ? (size_t)6 : (size_t)3;
    size_t left = p->steps_len - (size_t)sid;
    if (left < head || k->seen[sid])
        return 0;
    k->seen[sid] = 1;
    int64_t n = s[head - 1];
    if (s[0] != pc || s[1] != column || n < 0 || (uint64_t)n > left - head)
        return 0;
    const int64_t *kids = s + head;
    for (int64_t i = 0; i < n; i++)
        if (kids[i] != -1 && kids[i] <= sid)
            return 0; /* children after their parent: no cycle */
    const int64_t *col = aa_column(p, column);
    if (pc < 0)
        return aa_check_const(k, sid, s, col, depth);
    const int32_t *op = p->code + pc;
    int64_t layout = col[C_LAYOUT];
    switch (op[0]) {
    case FKC_AVRO_OP_SCALAR:
        return n == 0 && aa_scalar_fits(op, col);
    case FKC_AVRO_OP_ENUM:
        if (n != 0 || layout != FKC_AA_DICT)
            return 0;
        for (int32_t i = 0; i < op[1]; i++)
            if (op[2 + 2 * i] >= col[C_P0])
                return 0;
        return 1;
    case FKC_AVRO_OP_ARRAY:
        return layout == FKC_AA_LIST && n == 1 && aa_check_step(k, kids[0], op[1], col[C_FIRST], depth + 1);
    case FKC_AVRO_OP_MAP:
        return layout == FKC_AA_MAP && n == 1 &&
               aa_check_step(k, kids[0], op[1], aa_column(p, col[C_FIRST])[C_FIRST] + 1, depth + 1);
    case FKC_AVRO_OP_UNION:
        if (n != op[1])
            return 0;
        for (int32_t i = 0; i < op[1]; i++) {
            int32_t target = op[2 + 2 * i];
            if (target < 0 ? kids[i] != -1 : !aa_check_step(k, kids[i], target, column, depth + 1))
                return 0;
        }
        return 1;
    default: { /* FKC_AVRO_OP_RECORD */
        int32_t nfields = op[1], ndefaults = op[2];
        int64_t written = ndefaults;
        if (layout != FKC_AA_STRUCT || n != (int64_t)nfields + ndefaults)
            return 0;
        for (int32_t i = 0; i < nfields; i++) {
            int skipped = op[5 + 2 * i] < 0;
            if (skipped ? kids[i] != -1 : !aa_check_field(k, sid, col, kids[i], op[4 + 2 * i], depth))
                return 0;
            written += !skipped;
        }
        for (int32_t i = 0; i < ndefaults; i++)
            if (!aa_check_field(k, sid, col, kids[nfields + i], -1, depth))
                return 0;
        return written == col[C_COUNT]; /* as many as the children, none twice: each written once */
    }
    }
}

int fkc_avro_arrow_check(const fkc_avro_arrow_plan *plan)
{
    if (plan->code_len < FKC_AVRO_HEADER || plan->steps_len == 0 || !aa_check_columns(plan))
        return 0;
    aa_checker k;
    k.p = plan;
    k.seen = calloc(plan->steps_len, 1);
    k.covered_by = malloc(plan->column_count * sizeof *k.covered_by);
    int ok = k.seen != NULL && k.covered_by != NULL;
    if (ok) {
        for (size_t c = 0; c < plan->column_count; c++)
            k.covered_by[c] = -1;
        ok = aa_check_step(&k, plan->root_step, plan->code[1], 0, 0);
    }
    free(k.seen);
    free(k.covered_by);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The columns being built. */

typedef struct aa_col {
    int64_t layout;
    int nullable;
    size_t width;      /* bytes per row of the fixed layouts */
    size_t len, cap;   /* rows */
    int64_t nulls;
    uint8_t *validity; /* cap bits (nullable columns) */
    uint8_t *values;   /* cap * width bytes, cap bits (BOOL) or cap + 1 int32 offsets */
    uint8_t *data;     /* BINARY, UTF8 */
    size_t data_len, data_cap;
    size_t first, count; /* children */
    const int64_t *plan; /* its words in the plan */
} aa_col;

typedef struct aa_run {
    const fkc_avro_arrow_plan *p;
    aa_col *cols;
    const int64_t *tape;
    size_t pos;
    const uint8_t *base; /* the payload the tape's offsets point into */
    size_t index;
    fkc_avro_arrow_error *err;
} aa_run;

static int aa_fail(aa_run *r, int kind, size_t offset, const char *what, const char *problem)
{
    r->err->kind = kind;
    r->err->index = r->index;
    r->err->offset = offset;
    r->err->what = what;
    r->err->problem = problem;
    return 0;
}

static int aa_nomem(aa_run *r)
{
    return aa_fail(r, FKC_AA_NOMEM, 0, "arrow column", "out of memory");
}

static inline int64_t aa_next(aa_run *r)
{
    return r->tape[r->pos++];
}

static inline void aa_bit(uint8_t *bitmap, size_t i, int on)
{
    uint8_t mask = (uint8_t)(1u << (i & 7));
    bitmap[i >> 3] = (uint8_t)(on ? bitmap[i >> 3] | mask : bitmap[i >> 3] & ~mask);
}

/* realloc to `bytes`, zeroing what is new past `old` bytes. */
static int aa_regrow(uint8_t **buf, size_t old, size_t bytes)
{
    uint8_t *grown = realloc(*buf, bytes);
    if (grown == NULL)
        return 0;
    memset(grown + old, 0, bytes - old);
    *buf = grown;
    return 1;
}

static int aa_grow_rows(aa_run *r, aa_col *c, size_t cap);

/* Room for one more row (doubling, never past AA_MAX_ROWS). */
static int aa_room(aa_run *r, aa_col *c)
{
    if (c->len < c->cap)
        return 1;
    if (c->cap >= AA_MAX_ROWS)
        return aa_fail(r, FKC_AA_CAPACITY, 0, "arrow column", "more than 2^31 - 1 values");
    size_t cap = c->cap ? c->cap * 2 : 64;
    if (cap > AA_MAX_ROWS)
        cap = AA_MAX_ROWS;
    return aa_grow_rows(r, c, cap);
}

/* The row buffers of `c` grown to `cap` rows (c->cap < cap <= AA_MAX_ROWS). */
static int aa_grow_rows(aa_run *r, aa_col *c, size_t cap)
{
    if (c->nullable && !aa_regrow(&c->validity, fkc_bitmap_bytes(c->cap), fkc_bitmap_bytes(cap)))
        return aa_nomem(r);
    if (c->layout == FKC_AA_BOOL) {
        if (!aa_regrow(&c->values, fkc_bitmap_bytes(c->cap), fkc_bitmap_bytes(cap)))
            return aa_nomem(r);
    } else if (aa_has_offsets(c->layout)) { /* cap + 1 offsets, the first 0 */
        size_t old = c->cap ? (c->cap + 1) * 4 : 0;
        if (cap > SIZE_MAX / 4 - 1 || !aa_regrow(&c->values, old, (cap + 1) * 4))
            return aa_nomem(r);
    } else if (c->width > 0) {
        if (cap > SIZE_MAX / c->width || !aa_regrow(&c->values, c->cap * c->width, cap * c->width))
            return aa_nomem(r);
    }
    c->cap = cap;
    return 1;
}

/* A new row, valid (its value written by the caller before aa_done). */
static int aa_begin(aa_run *r, aa_col *c)
{
    if (!aa_room(r, c))
        return 0;
    if (c->nullable)
        aa_bit(c->validity, c->len, 1);
    return 1;
}

static inline int32_t *aa_offsets(aa_col *c)
{
    return (int32_t *)(void *)c->values;
}

/* Close a row of an offsets layout at `end` (its data bytes or child rows,
 * both <= INT32_MAX). */
static void aa_end_offsets(aa_col *c, size_t end)
{
    aa_offsets(c)[c->len + 1] = (int32_t)end;
    c->len++;
}

static int aa_put_fixed(aa_run *r, aa_col *c, const void *value)
{
    if (!aa_begin(r, c))
        return 0;
    if (c->width > 0) /* a fixed of size 0 has no buffer to copy into */
        memcpy(c->values + c->len * c->width, value, c->width);
    c->len++;
    return 1;
}

static int aa_put_bool(aa_run *r, aa_col *c, int on)
{
    if (!aa_begin(r, c))
        return 0;
    aa_bit(c->values, c->len, on);
    c->len++;
    return 1;
}

/* The data buffer of a BINARY / UTF8 column grown to `cap` bytes (> data_cap). */
static int aa_grow_data(aa_col *c, size_t cap)
{
    uint8_t *grown = realloc(c->data, cap);
    if (grown == NULL)
        return 0;
    c->data = grown;
    c->data_cap = cap;
    return 1;
}

static int aa_put_bytes(aa_run *r, aa_col *c, const uint8_t *p, size_t n)
{
    if (!aa_begin(r, c))
        return 0;
    if (n > AA_MAX_ROWS - c->data_len)
        return aa_fail(r, FKC_AA_CAPACITY, 0, "arrow column", "more than 2^31 - 1 bytes");
    if (n > c->data_cap - c->data_len) {
        size_t cap = c->data_cap ? c->data_cap : 256;
        while (n > cap - c->data_len) {
            if (cap > SIZE_MAX / 2)
                return aa_nomem(r);
            cap *= 2;
        }
        if (!aa_grow_data(c, cap))
            return aa_nomem(r);
    }
    if (n > 0)
        memcpy(c->data + c->data_len, p, n);
    c->data_len += n;
    aa_end_offsets(c, c->data_len);
    return 1;
}

static aa_col *aa_child(aa_run *r, const aa_col *c, size_t i)
{
    return &r->cols[c->first + i];
}

/* A row that holds nothing: null where the column may be null, else the
 * zero value (the children of a null struct that are not nullable). */
static int aa_fill(aa_run *r, aa_col *c)
{
    if (c->layout == FKC_AA_NULL) { /* no buffers: a length and a null count */
        if (c->len >= AA_MAX_ROWS)
            return aa_fail(r, FKC_AA_CAPACITY, 0, "arrow column", "more than 2^31 - 1 values");
        c->len++;
        c->nulls++;
        return 1;
    }
    if (!aa_room(r, c))
        return 0;
    if (c->nullable) {
        aa_bit(c->validity, c->len, 0);
        c->nulls++;
    }
    switch (c->layout) {
    case FKC_AA_STRUCT:
        c->len++;
        for (size_t i = 0; i < c->count; i++)
            if (!aa_fill(r, aa_child(r, c, i)))
                return 0;
        return 1;
    case FKC_AA_BINARY:
    case FKC_AA_UTF8:
        aa_end_offsets(c, c->data_len);
        return 1;
    case FKC_AA_LIST:
    case FKC_AA_MAP:
        aa_end_offsets(c, aa_child(r, c, 0)->len);
        return 1;
    case FKC_AA_BOOL:
        aa_bit(c->values, c->len, 0);
        c->len++;
        return 1;
    default: /* fixed widths */
        if (c->width > 0)
            memset(c->values + c->len * c->width, 0, c->width);
        c->len++;
        return 1;
    }
}

static int aa_decimal(aa_run *r, aa_col *c, const uint8_t *p, size_t n, size_t at)
{
    uint8_t le[32];
    if (!aa_decimal_from_be(p, n, c->width, r->p->strings + c->plan[C_P1], le))
        return aa_fail(r, FKC_AA_VALUE, at, "decimal", "value out of range");
    return aa_put_fixed(r, c, le);
}

static int aa_scalar(aa_run *r, const int32_t *op, aa_col *c)
{
    int32_t wire = op[1];
    int64_t at = op[3] ? aa_next(r) : -1; /* a writer's logical type: its offset first */
    switch (wire) {
    case FKC_AVRO_NULL:
        return aa_fill(r, c);
    case FKC_AVRO_BOOLEAN:
        return aa_put_bool(r, c, aa_next(r) != 0);
    case FKC_AVRO_INT:
    case FKC_AVRO_LONG: {
        int64_t v = aa_next(r);
        if (!aa_in_day(c->plan, v)) /* the offset is known when the writer declared the logical type */
            return aa_fail(r, FKC_AA_VALUE, at >= 0 ? (size_t)at : 0,
                           c->layout == FKC_AA_INT32 ? "time-millis" : "time-micros", "value out of range");
        switch (c->layout) {
        case FKC_AA_INT32: {
            int32_t x = (int32_t)v; /* an int: in range */
            return aa_put_fixed(r, c, &x);
        }
        case FKC_AA_INT64:
            return aa_put_fixed(r, c, &v);
        case FKC_AA_FLOAT32: {
            float x = (float)v;
            return aa_put_fixed(r, c, &x);
        }
        default: {
            double x = (double)v;
            return aa_put_fixed(r, c, &x);
        }
        }
    }
    case FKC_AVRO_FLOAT: {
        uint32_t bits = (uint32_t)aa_next(r);
        float f;
        memcpy(&f, &bits, 4);
        if (c->layout == FKC_AA_FLOAT32)
            return aa_put_fixed(r, c, &f);
        double x = (double)f;
        return aa_put_fixed(r, c, &x);
    }
    case FKC_AVRO_DOUBLE: {
        uint64_t bits = (uint64_t)aa_next(r);
        return aa_put_fixed(r, c, &bits);
    }
    case FKC_AVRO_BYTES:
    case FKC_AVRO_STRING: {
        size_t off = (size_t)aa_next(r), len = (size_t)aa_next(r);
        if (c->layout == FKC_AA_DECIMAL)
            return aa_decimal(r, c, r->base + off, len, at >= 0 ? (size_t)at : off);
        return aa_put_bytes(r, c, r->base + off, len);
    }
    default: { /* FKC_AVRO_FIXED */
        size_t off = (size_t)aa_next(r);
        if (c->layout == FKC_AA_DECIMAL)
            return aa_decimal(r, c, r->base + off, (size_t)op[4], off);
        return aa_put_fixed(r, c, r->base + off);
    }
    }
}

static int aa_step(aa_run *r, int64_t sid);

/* A list or map row around its items (written by `items`). */
static int aa_nested_end(aa_run *r, aa_col *c)
{
    aa_end_offsets(c, aa_child(r, c, 0)->len);
    return 1;
}

/* A map entry's row in the entries struct, and its key. */
static int aa_map_key(aa_run *r, aa_col *entries, const uint8_t *key, size_t len)
{
    if (!aa_begin(r, entries))
        return 0;
    entries->len++;
    return aa_put_bytes(r, aa_child(r, entries, 0), key, len);
}

static int aa_const(aa_run *r, const int64_t *s, aa_col *c)
{
    int64_t n = s[5];
    const int64_t *kids = s + 6;
    if (s[2])
        return aa_fill(r, c);
    const uint8_t *bytes = r->p->strings + s[3];
    switch (c->layout) {
    case FKC_AA_BOOL:
        return aa_put_bool(r, c, bytes[0]);
    case FKC_AA_BINARY:
    case FKC_AA_UTF8:
        return aa_put_bytes(r, c, bytes, (size_t)s[4]);
    case FKC_AA_STRUCT:
        if (!aa_begin(r, c))
            return 0;
        c->len++;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[i]))
                return 0;
        return 1;
    case FKC_AA_LIST:
        if (!aa_begin(r, c))
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[i]))
                return 0;
        return aa_nested_end(r, c);
    case FKC_AA_MAP: {
        if (!aa_begin(r, c))
            return 0;
        aa_col *entries = aa_child(r, c, 0);
        for (int64_t i = 0; i < n; i += 2) {
            if (!aa_begin(r, entries))
                return 0;
            entries->len++;
            if (!aa_step(r, kids[i]) || !aa_step(r, kids[i + 1]))
                return 0;
        }
        return aa_nested_end(r, c);
    }
    default: /* fixed widths */
        return aa_put_fixed(r, c, bytes);
    }
}

static int aa_step(aa_run *r, int64_t sid)
{
    const int64_t *s = r->p->steps + sid;
    aa_col *c = &r->cols[s[1]];
    if (s[0] < 0)
        return aa_const(r, s, c);
    const int64_t *kids = s + 3;
    const int32_t *op = r->p->code + s[0];
    switch (op[0]) {
    case FKC_AVRO_OP_SCALAR:
        return aa_scalar(r, op, c);
    case FKC_AVRO_OP_ENUM: {
        int32_t reader_index = op[2 + 2 * aa_next(r)]; /* phase 1 refused a symbol the reader lacks */
        return aa_put_fixed(r, c, &reader_index);
    }
    case FKC_AVRO_OP_ARRAY: {
        int64_t n = aa_next(r);
        if (!aa_begin(r, c))
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[0]))
                return 0;
        return aa_nested_end(r, c);
    }
    case FKC_AVRO_OP_MAP: {
        int64_t n = aa_next(r);
        if (!aa_begin(r, c))
            return 0;
        aa_col *entries = aa_child(r, c, 0);
        for (int64_t i = 0; i < n; i++) {
            size_t off = (size_t)aa_next(r), len = (size_t)aa_next(r);
            if (!aa_map_key(r, entries, r->base + off, len) || !aa_step(r, kids[0]))
                return 0;
        }
        return aa_nested_end(r, c);
    }
    case FKC_AVRO_OP_UNION: /* the branch's step writes this same column (a null branch: a null) */
        return aa_step(r, kids[aa_next(r)]);
    default: { /* FKC_AVRO_OP_RECORD */
        if (!aa_begin(r, c))
            return 0;
        c->len++;
        int64_t n = (int64_t)op[1] + op[2];
        for (int64_t i = 0; i < n; i++)
            if (kids[i] >= 0 && !aa_step(r, kids[i]))
                return 0;
        return 1;
    }
    }
}

/* ------------------------------------------------------------------------ */
/* Export. */

static const int64_t aa_zeros[8]; /* an empty buffer, and the offsets [0] of an empty column */

typedef struct aa_array_export {
    size_t refs;                /* nodes not yet released */
    struct ArrowArray *nodes;   /* the columns, then the dictionaries */
    struct ArrowArray **kids;
    const void **buffers;       /* 3 per node */
    void **owned;               /* every buffer, freed with the last node */
    size_t owned_count;
} aa_array_export;

static void aa_array_export_free(aa_array_export *x)
{
    for (size_t i = 0; i < x->owned_count; i++)
        free(x->owned[i]);
    free(x->owned);
    free(x->nodes);
    free(x->kids);
    free(x->buffers);
    free(x);
}

static void aa_array_release(struct ArrowArray *a)
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
    aa_array_export *x = (aa_array_export *)a->private_data;
    a->release = NULL;
    if (--x->refs == 0)
        aa_array_export_free(x);
}

typedef struct aa_schema_export {
    size_t refs;
    struct ArrowSchema *nodes; /* the columns, then the dictionaries */
    struct ArrowSchema **kids;
    char *strings;             /* names and formats */
} aa_schema_export;

static void aa_schema_release(struct ArrowSchema *s)
{
    if (s == NULL || s->release == NULL)
        return;
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release != NULL)
            s->children[i]->release(s->children[i]);
    if (s->dictionary != NULL && s->dictionary->release != NULL)
        s->dictionary->release(s->dictionary);
    aa_schema_export *x = (aa_schema_export *)s->private_data;
    s->release = NULL;
    if (--x->refs == 0) {
        free(x->nodes);
        free(x->kids);
        free(x->strings);
        free(x);
    }
}

static size_t aa_dict_count(const fkc_avro_arrow_plan *p)
{
    size_t n = 0;
    for (size_t c = 0; c < p->column_count; c++)
        if (aa_column(p, (int64_t)c)[C_LAYOUT] == FKC_AA_DICT)
            n++;
    return n;
}

static int aa_export_schema(const fkc_avro_arrow_plan *p, struct ArrowSchema *out)
{
    size_t ncols = p->column_count, nodes = ncols + aa_dict_count(p);
    aa_schema_export *x = calloc(1, sizeof *x);
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
        const int64_t *col = aa_column(p, (int64_t)c);
        struct ArrowSchema *s = &x->nodes[c];
        s->format = x->strings + col[C_FORMAT];
        s->name = x->strings + col[C_NAME];
        s->metadata = NULL;
        s->flags = col[C_NULLABLE] ? AA_FLAG_NULLABLE : 0;
        s->n_children = col[C_COUNT];
        s->children = col[C_COUNT] ? x->kids + col[C_FIRST] - 1 : NULL;
        for (int64_t i = 0; i < col[C_COUNT]; i++)
            x->kids[col[C_FIRST] + i - 1] = &x->nodes[col[C_FIRST] + i];
        s->dictionary = NULL;
        if (col[C_LAYOUT] == FKC_AA_DICT) {
            struct ArrowSchema *d = &x->nodes[dict++];
            d->format = "u";
            d->name = "";
            d->release = aa_schema_release;
            d->private_data = x;
            s->dictionary = d;
        }
        s->release = aa_schema_release;
        s->private_data = x;
    }
    x->refs = nodes;
    *out = x->nodes[0];
    x->nodes[0].release = NULL; /* moved to *out */
    return 1;
}

static int aa_own(aa_array_export *x, void *buffer)
{
    if (buffer != NULL)
        x->owned[x->owned_count++] = buffer;
    return 1;
}

static void aa_bitmap_trim(uint8_t *bitmap, size_t n)
{
    if (bitmap != NULL && n % 8)
        bitmap[n / 8] = (uint8_t)(bitmap[n / 8] & ((1u << (n % 8)) - 1u));
}

/* Moves the columns' buffers into *out (they are the export's from then on). */
static int aa_export_array(const fkc_avro_arrow_plan *p, aa_col *cols, struct ArrowArray *out)
{
    size_t ncols = p->column_count, ndict = aa_dict_count(p), nodes = ncols + ndict;
    aa_array_export *x = calloc(1, sizeof *x);
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
        if (col[C_LAYOUT] != FKC_AA_DICT)
            continue;
        size_t nsym = (size_t)col[C_P0], offsets_len = 4 * (nsym + 1);
        size_t data_len = (size_t)aa_le32(p->strings + col[C_P1] + offsets_len - 4);
        uint8_t *offsets = malloc(offsets_len), *data = malloc(data_len ? data_len : 1);
        aa_own(x, offsets);
        aa_own(x, data);
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
            d->release = aa_array_release;
            d->private_data = x;
            dict++;
        }
    }
    if (!ok) {
        aa_array_export_free(x); /* frees what it owns: the dictionaries' copies only */
        return 0;
    }
    dict = ncols;
    for (size_t c = 0; c < ncols; c++) {
        aa_col *col = &cols[c];
        struct ArrowArray *a = &x->nodes[c];
        const void **buf = x->buffers + 3 * c;
        aa_bitmap_trim(col->validity, col->len);
        if (col->layout == FKC_AA_BOOL)
            aa_bitmap_trim(col->values, col->len);
        const void *values = col->values != NULL ? (const void *)col->values : (const void *)aa_zeros;
        buf[0] = col->nulls && col->layout != FKC_AA_NULL ? col->validity : NULL;
        buf[1] = values;
        buf[2] = col->data != NULL ? (const void *)col->data : (const void *)aa_zeros;
        switch (col->layout) {
        case FKC_AA_NULL:
            a->n_buffers = 0;
            break;
        case FKC_AA_STRUCT:
            a->n_buffers = 1;
            break;
        case FKC_AA_BINARY:
        case FKC_AA_UTF8:
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
        a->dictionary = col->layout == FKC_AA_DICT ? &x->nodes[dict++] : NULL;
        a->release = aa_array_release;
        a->private_data = x;
        aa_own(x, col->validity);
        aa_own(x, col->values);
        aa_own(x, col->data);
        col->validity = col->values = col->data = NULL;
    }
    x->refs = nodes;
    *out = x->nodes[0];
    x->nodes[0].release = NULL; /* moved to *out */
    return 1;
}

static void aa_cols_free(aa_col *cols, size_t n)
{
    for (size_t c = 0; c < n; c++) {
        free(cols[c].validity);
        free(cols[c].values);
        free(cols[c].data);
    }
    free(cols);
}

struct fkc_avro_arrow_builder {
    aa_run r;
    fkc_avro_arrow_error unused; /* where r.err points between appends */
    size_t rows;                 /* payloads appended so far: the next one's index */
    size_t rows_hint;            /* how many the caller expects in all (0: unknown) */
    uint8_t *per_row;            /* per column: one row per payload (the root, and struct fields under it) */
};

/* Sizing from the caller's hint, so the columns do not grow by doubling
 * (a realloc and a copy each time) through a large batch: the columns with
 * one row per payload get `rows_hint` rows at the start; after the first
 * chunk each binary column's bytes are reserved in proportion to what that
 * chunk wrote. Only a hint: a failed reservation is left to the growth on
 * the way, which reports it. */
static void aa_presize_rows(fkc_avro_arrow_builder *b)
{
    const fkc_avro_arrow_plan *p = b->r.p;
    size_t rows = b->rows_hint < AA_MAX_ROWS ? b->rows_hint : AA_MAX_ROWS;
    b->per_row[0] = 1; /* a column's children come after it: one pass in order */
    for (size_t c = 0; c < p->column_count; c++) {
        aa_col *k = &b->r.cols[c];
        if (!b->per_row[c])
            continue;
        if (k->layout == FKC_AA_STRUCT)
            for (size_t i = 0; i < k->count && k->first + i < p->column_count; i++)
                b->per_row[k->first + i] = 1;
        if (k->layout != FKC_AA_NULL && rows > k->cap)
            (void)aa_grow_rows(&b->r, k, rows);
    }
}

static void aa_presize_data(fkc_avro_arrow_builder *b)
{
    for (size_t c = 0; c < b->r.p->column_count; c++) {
        aa_col *k = &b->r.cols[c];
        if (!aa_has_offsets(k->layout) || k->layout == FKC_AA_LIST || k->layout == FKC_AA_MAP || k->data_len == 0)
            continue;
        /* bytes per payload so far, times the payloads expected, an eighth more */
        double want = (double)k->data_len / (double)b->rows * (double)b->rows_hint * 1.125;
        if (want > (double)AA_MAX_ROWS)
            want = (double)AA_MAX_ROWS;
        if ((size_t)want > k->data_cap)
            (void)aa_grow_data(k, (size_t)want);
    }
}

fkc_avro_arrow_builder *fkc_avro_arrow_start(const fkc_avro_arrow_plan *plan, size_t rows_hint)
{
    fkc_avro_arrow_builder *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->r.p = plan;
    b->r.err = &b->unused;
    b->r.cols = calloc(plan->column_count, sizeof *b->r.cols);
    if (b->r.cols == NULL) {
        free(b);
        return NULL;
    }
    for (size_t c = 0; c < plan->column_count; c++) {
        const int64_t *col = aa_column(plan, (int64_t)c);
        aa_col *k = &b->r.cols[c];
        k->plan = col;
        k->layout = col[C_LAYOUT];
        k->nullable = (int)col[C_NULLABLE];
        k->width = aa_width(col);
        k->first = (size_t)col[C_FIRST];
        k->count = (size_t)col[C_COUNT];
    }
    b->rows_hint = rows_hint;
    if (rows_hint > 0) {
        b->per_row = calloc(plan->column_count ? plan->column_count : 1, 1);
        if (b->per_row == NULL) {
            fkc_avro_arrow_discard(b);
            return NULL;
        }
        aa_presize_rows(b);
    }
    return b;
}

int fkc_avro_arrow_append(fkc_avro_arrow_builder *b, const fkc_avro_tape *tape, const size_t *starts,
                          const uint8_t *const *payloads, size_t count, fkc_avro_arrow_error *err)
{
    aa_run *r = &b->r;
    r->tape = tape->v;
    r->err = err;
    for (size_t i = 0; i < count; i++) {
        r->pos = starts[i];
        r->base = payloads[i];
        r->index = b->rows + i;
        if (!aa_step(r, r->p->root_step))
            return err->kind;
    }
    int first_chunk = b->rows == 0;
    b->rows += count;
    if (first_chunk && b->rows > 0 && b->rows < b->rows_hint)
        aa_presize_data(b);
    r->tape = NULL; /* the caller may reuse or free the tape: every value was copied */
    r->base = NULL;
    r->err = &b->unused;
    return FKC_AA_OK;
}

void fkc_avro_arrow_discard(fkc_avro_arrow_builder *b)
{
    if (b == NULL)
        return;
    aa_cols_free(b->r.cols, b->r.p->column_count);
    free(b->per_row);
    free(b);
}

int fkc_avro_arrow_finish(fkc_avro_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                          fkc_avro_arrow_error *err)
{
    aa_run *r = &b->r;
    r->err = err;
    r->index = b->rows;
    int exported = aa_export_schema(r->p, out_schema);
    if (exported && !aa_export_array(r->p, r->cols, out_array)) {
        out_schema->release(out_schema);
        exported = 0;
    }
    if (!exported)
        aa_nomem(r);
    fkc_avro_arrow_discard(b); /* after an export: only what it did not take */
    return exported ? FKC_AA_OK : err->kind;
}
