/* fkc_avro_arrow.c — Avro payloads → one Arrow array, by a plan; see fkc_avro_arrow.h.
 * The columns themselves (growth, limits, export) are fkc_typed_columns.c's;
 * this file follows the Avro program's steps into them. */
#include "fkc_avro_arrow.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_avro_read.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#define AA_MAX_DEPTH FKC_TC_MAX_DEPTH /* steps nest at most as deep as columns */

/* Column words, short */
enum { C_LAYOUT = FKC_TC_C_LAYOUT, C_NULLABLE = FKC_TC_C_NULLABLE, C_FIRST = FKC_TC_C_FIRST, C_COUNT = FKC_TC_C_COUNT,
       C_P0 = FKC_TC_C_P0, C_P1 = FKC_TC_C_P1 };

/* The plan's column tree, as fkc_typed_columns.c takes it. */
static fkc_tc_tree aa_tree(const fkc_avro_arrow_plan *p)
{
    fkc_tc_tree t = {p->columns, p->column_count, p->strings, p->strings_len};
    return t;
}

static const int64_t *aa_column(const fkc_avro_arrow_plan *p, int64_t c)
{
    return p->columns + (size_t)c * FKC_AA_COL_WIDTH;
}

static int aa_span(const fkc_avro_arrow_plan *p, int64_t off, int64_t len)
{
    fkc_tc_tree t = aa_tree(p);
    return fkc_tc_span(&t, off, len);
}

/* Avro's big-endian two's complement bytes p[0, n) as a `width`-byte
 * little-endian value: 0 when they do not fit (more significant bytes than
 * the width holds, or not below 10^precision). */
static int aa_decimal_from_be(const uint8_t *p, size_t n, size_t width, const uint8_t *bound, uint8_t *out)
{
    uint8_t sign = n > 0 && (p[0] & 0x80) ? (uint8_t)0xFF : (uint8_t)0x00;
    if (n <= 8) {
        /* most decimals (amounts, prices) take a few bytes: read them as one
         * int64 and compare its magnitude with the bound's low and high
         * words, instead of byte loops over the whole width */
        uint64_t u = sign ? UINT64_MAX : 0, lo, rest = 0;
        for (size_t i = 0; i < n; i++)
            u = (u << 8) | p[i];
        uint64_t mag = sign ? ~u + 1 : u; /* INT64_MIN's magnitude is 2^63: still a uint64 */
        memcpy(&lo, bound, 8);            /* little-endian, as every host we build for */
        for (size_t i = 8; i < width; i++)
            rest |= bound[i];
        if (rest == 0 && mag >= lo)
            return 0;
        memcpy(out, &u, 8);
        memset(out + 8, sign, width - 8);
        return 1;
    }
    if (n > width) {
        for (size_t i = 0; i < n - width; i++)
            if (p[i] != sign)
                return 0;
        if ((p[n - width] ^ sign) & 0x80)
            return 0;
    }
    for (size_t i = 0; i < width; i++)
        out[i] = i < n ? p[n - 1 - i] : sign;
    return fkc_tc_decimal_fits(out, width, bound);
}

/* A time column's value is inside a day (Arrow's rule for time32/time64);
 * other integer columns take any value. */
/* ------------------------------------------------------------------------ */
/* Plan check. */

typedef struct aa_checker {
    const fkc_avro_arrow_plan *p;
    uint8_t *seen;        /* per step word: a step already walked (the steps form a tree) */
    int64_t *covered_by;  /* per column: the record or constant step that wrote it last */
} aa_checker;

/* Whether a program scalar (wire, out kinds, fixed size) may land in `col`. */
static int aa_scalar_fits(const int32_t *op, const int64_t *col)
{
    int32_t wire = op[1], out = op[2];
    int64_t layout = col[C_LAYOUT];
    int blob = wire == FKC_AVRO_BYTES || wire == FKC_AVRO_STRING;
    if (wire == FKC_AVRO_NULL)
        return layout == FKC_TC_NULL || col[C_NULLABLE];
    switch (layout) {
    case FKC_TC_BOOL:
        return wire == FKC_AVRO_BOOLEAN;
    case FKC_TC_INT32:
        return wire == FKC_AVRO_INT && out == FKC_AVRO_INT;
    case FKC_TC_INT64:
        return (wire == FKC_AVRO_INT || wire == FKC_AVRO_LONG) && out == FKC_AVRO_LONG;
    case FKC_TC_FLOAT32:
        return wire >= FKC_AVRO_INT && wire <= FKC_AVRO_FLOAT && out == FKC_AVRO_FLOAT;
    case FKC_TC_FLOAT64:
        return wire >= FKC_AVRO_INT && wire <= FKC_AVRO_DOUBLE && out == FKC_AVRO_DOUBLE;
    case FKC_TC_BINARY:
        return blob && (out == FKC_AVRO_BYTES || out == FKC_AVRO_STRING);
    case FKC_TC_UTF8: /* phase 1 checked the UTF-8 of what it reads as a string */
        return blob && out == FKC_AVRO_STRING;
    case FKC_TC_FIXED_BINARY:
        return wire == FKC_AVRO_FIXED && op[4] == col[C_P0];
    case FKC_TC_DECIMAL:
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

/* The column step `sid` writes when that is a child of the dense union
 * `col`, else -1 (the step itself is checked by the caller). */
static int64_t aa_union_child(const aa_checker *k, const int64_t *col, int64_t sid)
{
    const fkc_avro_arrow_plan *p = k->p;
    if (sid < 0 || (uint64_t)sid >= p->steps_len - 1)
        return -1;
    int64_t target = p->steps[sid + 1];
    return target >= col[C_FIRST] && target < col[C_FIRST] + col[C_COUNT] ? target : -1;
}

/* A step on a dense union `col` (pc: the program op, -1 a constant): its
 * one child step writes the row's value into one of the union's children,
 * so every union row points at exactly one child row. */
static int aa_check_union_kid(aa_checker *k, const int64_t *col, int64_t kid, int64_t pc, int depth)
{
    int64_t child = aa_union_child(k, col, kid);
    return child >= 0 && aa_check_step(k, kid, pc, child, depth + 1);
}

static int aa_check_const(aa_checker *k, int64_t sid, const int64_t *s, const int64_t *col, int depth)
{
    const fkc_avro_arrow_plan *p = k->p;
    int64_t null = s[2], off = s[3], len = s[4], n = s[5];
    const int64_t *kids = s + 6;
    int64_t layout = col[C_LAYOUT];
    if (null != 0 && null != 1)
        return 0;
    if (null || layout == FKC_TC_NULL)
        return null && n == 0 && (layout == FKC_TC_NULL || col[C_NULLABLE]);
    if (!aa_span(p, off, len))
        return 0;
    const uint8_t *bytes = p->strings + off;
    switch (layout) {
    case FKC_TC_BOOL:
        return n == 0 && len == 1 && bytes[0] <= 1;
    case FKC_TC_DICT:
        return n == 0 && len == 4 && fkc_tc_le32(bytes) >= 0 && fkc_tc_le32(bytes) < col[C_P0];
    case FKC_TC_DECIMAL:
        return n == 0 && len == col[C_P0] && fkc_tc_decimal_fits(bytes, (size_t)len, p->strings + col[C_P1]);
    case FKC_TC_INT32:
        return n == 0 && len == 4 && fkc_tc_in_day(col, fkc_tc_le32(bytes));
    case FKC_TC_INT64: {
        int64_t v;
        if (n != 0 || len != 8)
            return 0;
        memcpy(&v, bytes, 8); /* little-endian, as every host we build for */
        return fkc_tc_in_day(col, v);
    }
    case FKC_TC_FLOAT32:
        return n == 0 && len == 4;
    case FKC_TC_FLOAT64:
        return n == 0 && len == 8;
    case FKC_TC_FIXED_BINARY:
        return n == 0 && len == col[C_P0];
    case FKC_TC_BINARY:
        return n == 0 && len <= INT32_MAX;
    case FKC_TC_UTF8:
        return n == 0 && len <= INT32_MAX && fkc_utf8_valid(bytes, (size_t)len);
    case FKC_TC_STRUCT:
        if (len != 0 || n != col[C_COUNT])
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_check_field(k, sid, col, kids[i], -1, depth))
                return 0;
        return 1;
    case FKC_TC_DENSE_UNION: /* a default of one branch: a constant on that child */
        return len == 0 && n == 1 && aa_check_union_kid(k, col, kids[0], -1, depth);
    case FKC_TC_LIST:
    case FKC_TC_MAP: {
        if (len != 0)
            return 0;
        int64_t item = col[C_FIRST], key = -1;
        if (layout == FKC_TC_MAP) {
            if (n % 2 || aa_column(p, aa_column(p, col[C_FIRST])[C_FIRST])[C_LAYOUT] != FKC_TC_UTF8)
                return 0; /* Avro's keys are strings */
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
    if (layout == FKC_TC_DENSE_UNION) {
        /* a reader union: a writer union's branches each write the child of
         * the reader branch it resolved to (-1: a branch phase 1 refuses);
         * any other writer type resolved to one reader branch, whose child
         * a step of the same op writes */
        if (op[0] != FKC_AVRO_OP_UNION)
            return n == 1 && aa_check_union_kid(k, col, kids[0], pc, depth);
        if (n != op[1])
            return 0;
        for (int32_t i = 0; i < op[1]; i++) {
            int32_t target = op[2 + 2 * i];
            if (target < 0 ? kids[i] != -1 : !aa_check_union_kid(k, col, kids[i], target, depth))
                return 0;
        }
        return 1;
    }
    switch (op[0]) {
    case FKC_AVRO_OP_SCALAR:
        return n == 0 && aa_scalar_fits(op, col);
    case FKC_AVRO_OP_ENUM:
        if (n != 0 || layout != FKC_TC_DICT)
            return 0;
        for (int32_t i = 0; i < op[1]; i++)
            if (op[2 + 2 * i] >= col[C_P0])
                return 0;
        return 1;
    case FKC_AVRO_OP_ARRAY:
        return layout == FKC_TC_LIST && n == 1 && aa_check_step(k, kids[0], op[1], col[C_FIRST], depth + 1);
    case FKC_AVRO_OP_MAP: /* Avro's keys are strings */
        return layout == FKC_TC_MAP && n == 1 &&
               aa_column(p, aa_column(p, col[C_FIRST])[C_FIRST])[C_LAYOUT] == FKC_TC_UTF8 &&
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
        if (layout != FKC_TC_STRUCT || n != (int64_t)nfields + ndefaults)
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
    fkc_tc_tree tree = aa_tree(plan);
    if (plan->code_len < FKC_AVRO_HEADER || plan->steps_len == 0 || !fkc_tc_check_tree(&tree))
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
/* The columns being built, straight from the payload's bytes: the steps
 * are walked as fkc_avro.c walks the program (the same reads, checks and
 * nesting, fkc_avro_read.h's), each value written into its column as soon
 * as it is read. (Reading onto a tape first and walking the steps over it
 * cost about twice as much: every value was dispatched, stored and loaded
 * twice.) */

/* A record's fields, resolved once per build (fkc_avro_arrow_start) so the
 * record loop dispatches on one word per field instead of loading its step,
 * its op and its column in turn (that was a third of the walk's cost). */
enum {
    AF_STEP = 0,   /* anything else: aa_step(kid) */
    AF_SKIP = 1,   /* a writer field the reader does not have: read past it */
    AF_SCALAR = 2, /* a scalar into its column (aa_scalar) */
    AF_BLOB = 3,   /* bytes or string into a binary or utf8 column */
    AF_LONG = 4,   /* int or long into an int64 column that is not a time */
    AF_INT = 5,    /* int into an int32 column that is not a time */
    AF_ENUM = 6,   /* an enum into its dictionary column */
    AF_UNION = 7   /* a writer union into one column, every branch a scalar (a nullable field) */
};

typedef struct aa_field {
    int32_t kind;
    int32_t pc;        /* AF_SKIP: the writer field's program op */
    const int32_t *op; /* every kind but AF_STEP and AF_SKIP: the program op */
    fkc_tc_col *col;   /* the scalar kinds and AF_ENUM: the column */
    int64_t kid;       /* AF_STEP and AF_UNION: the step */
} aa_field;

typedef struct aa_run {
    const fkc_avro_arrow_plan *p;
    fkc_tc_set *s;        /* the columns */
    aa_field *fields;     /* every record step's fields, in turn */
    size_t *first_field;   /* per step word: where its fields start in `fields` (records only) */
    fkc_cursor cur;       /* the payload being read */
    const uint8_t *base;  /* its first byte: what read offsets count from */
    int32_t max_depth;    /* the program's nesting bound */
    int64_t empty_budget; /* zero-byte items still allowed in this payload */
} aa_run;

static int aa_decimal(aa_run *r, fkc_tc_col *c, const uint8_t *p, size_t n, size_t at)
{
    uint8_t le[32];
    if (!aa_decimal_from_be(p, n, c->width, r->p->strings + c->plan[C_P1], le))
        return fkc_tc_fail(r->s, FKC_AA_VALUE, at, "decimal", "value out of range");
    return fkc_tc_put_fixed(r->s, c, le);
}

/* Inlined into the record loop too: a call per field cost as much as the write. */
static inline __attribute__((always_inline)) int aa_scalar(aa_run *r, const int32_t *op, fkc_tc_col *c)
{
    int32_t wire = op[1];
    const uint8_t *first = r->cur.pos; /* the value's first byte (its offset is needed only for an error) */
    int64_t w[2];
    if (fkc_avro_read_scalar(&r->cur, op, 1, w) < 0)
        return 0;
    switch (wire) {
    case FKC_AVRO_NULL:
        return fkc_tc_fill(r->s, c);
    case FKC_AVRO_BOOLEAN:
        return fkc_tc_put_bool(r->s, c, w[0] != 0);
    case FKC_AVRO_INT:
    case FKC_AVRO_LONG: {
        int64_t v = w[0];
        if (!fkc_tc_in_day(c->plan, v)) /* the object path names the offset where the writer declared the type */
            return fkc_tc_fail(r->s, FKC_AA_VALUE, op[3] ? (size_t)(first - r->base) : 0,
                               c->layout == FKC_TC_INT32 ? "time-millis" : "time-micros", "value out of range");
        switch (c->layout) {
        case FKC_TC_INT32: {
            int32_t x = (int32_t)v; /* an int: in range */
            return fkc_tc_put_fixed(r->s, c, &x);
        }
        case FKC_TC_INT64:
            return fkc_tc_put_fixed(r->s, c, &v);
        case FKC_TC_FLOAT32: {
            float x = (float)v;
            return fkc_tc_put_fixed(r->s, c, &x);
        }
        default: {
            double x = (double)v;
            return fkc_tc_put_fixed(r->s, c, &x);
        }
        }
    }
    case FKC_AVRO_FLOAT: {
        uint32_t bits = (uint32_t)w[0];
        float f;
        memcpy(&f, &bits, 4);
        if (c->layout == FKC_TC_FLOAT32)
            return fkc_tc_put_fixed(r->s, c, &f);
        double x = (double)f;
        return fkc_tc_put_fixed(r->s, c, &x);
    }
    case FKC_AVRO_DOUBLE: {
        uint64_t bits = (uint64_t)w[0];
        return fkc_tc_put_fixed(r->s, c, &bits);
    }
    case FKC_AVRO_BYTES:
    case FKC_AVRO_STRING: {
        size_t off = (size_t)w[0], len = (size_t)w[1];
        if (c->layout == FKC_TC_DECIMAL)
            return aa_decimal(r, c, r->base + off, len, op[3] ? (size_t)(first - r->base) : off);
        return fkc_tc_put_bytes(r->s, c, r->base + off, len);
    }
    default: { /* FKC_AVRO_FIXED */
        size_t off = (size_t)w[0];
        if (c->layout == FKC_TC_DECIMAL)
            return aa_decimal(r, c, r->base + off, (size_t)op[4], off);
        return fkc_tc_put_fixed(r->s, c, r->base + off);
    }
    }
}

static int aa_step(aa_run *r, int64_t sid, int32_t depth);

/* A list or map row around its items (written by its steps). */
static int aa_nested_end(aa_run *r, fkc_tc_col *c)
{
    fkc_tc_end_nested(r->s, c);
    return 1;
}

/* A map entry's row in the entries struct, and its key. */
static int aa_map_key(aa_run *r, fkc_tc_col *entries, const uint8_t *key, size_t len)
{
    if (!fkc_tc_begin(r->s, entries))
        return 0;
    entries->len++;
    return fkc_tc_put_bytes(r->s, fkc_tc_child(r->s, entries, 0), key, len);
}

/* A dense union row whose value step `kid` writes into one of its children
 * (the plan check proved the child is one of c's). */
static int aa_union(aa_run *r, fkc_tc_col *c, int64_t kid, int32_t depth)
{
    size_t child = (size_t)r->p->steps[kid + 1] - c->first;
    return fkc_tc_union_row(r->s, c, child) && aa_step(r, kid, depth);
}

/* A constant step (a reader's default): reads nothing. */
static int aa_const(aa_run *r, const int64_t *s, fkc_tc_col *c)
{
    int64_t n = s[5];
    const int64_t *kids = s + 6;
    if (s[2])
        return fkc_tc_fill(r->s, c);
    const uint8_t *bytes = r->p->strings + s[3];
    switch (c->layout) {
    case FKC_TC_BOOL:
        return fkc_tc_put_bool(r->s, c, bytes[0]);
    case FKC_TC_BINARY:
    case FKC_TC_UTF8:
        return fkc_tc_put_bytes(r->s, c, bytes, (size_t)s[4]);
    case FKC_TC_STRUCT:
        if (!fkc_tc_begin(r->s, c))
            return 0;
        c->len++;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[i], 0))
                return 0;
        return 1;
    case FKC_TC_LIST:
        if (!fkc_tc_begin(r->s, c))
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[i], 0))
                return 0;
        return aa_nested_end(r, c);
    case FKC_TC_MAP: {
        if (!fkc_tc_begin(r->s, c))
            return 0;
        fkc_tc_col *entries = fkc_tc_child(r->s, c, 0);
        for (int64_t i = 0; i < n; i += 2) {
            if (!fkc_tc_begin(r->s, entries))
                return 0;
            entries->len++;
            if (!aa_step(r, kids[i], 0) || !aa_step(r, kids[i + 1], 0))
                return 0;
        }
        return aa_nested_end(r, c);
    }
    case FKC_TC_DENSE_UNION:
        return aa_union(r, c, kids[0], 0);
    default: /* fixed widths */
        return fkc_tc_put_fixed(r->s, c, bytes);
    }
}

/* An array's or map's items, block by block, each into the child column
 * (a map's: the entries struct's key and value). */
static int aa_blocks(aa_run *r, const int32_t *op, fkc_tc_col *c, int64_t kid, int32_t depth)
{
    int is_map = op[0] == FKC_AVRO_OP_MAP;
    fkc_cursor *cur = &r->cur;
    if (!fkc_tc_begin(r->s, c))
        return 0;
    fkc_tc_col *entries = fkc_tc_child(r->s, c, 0);
    int64_t count;
    while (fkc_avro_read_block(cur, op, is_map, &r->empty_budget, &count) && count > 0) {
        for (int64_t i = 0; i < count; i++) {
            if (is_map) {
                size_t off, len;
                if (!fkc_avro_read_key(cur, 1, &off, &len) || !aa_map_key(r, entries, r->base + off, len))
                    return 0;
            }
            if (!aa_step(r, kid, depth))
                return 0;
        }
    }
    return !cur->failed && aa_nested_end(r, c);
}

/* A record's row: its fields in writer order, then the reader's defaults. */
static int aa_record(aa_run *r, fkc_tc_col *c, const aa_field *f, int64_t n, int32_t depth)
{
    fkc_cursor *cur = &r->cur;
    if (!fkc_tc_begin(r->s, c))
        return 0;
    c->len++;
    for (const aa_field *end = f + n; f < end; f++) {
        fkc_tc_col *fc = f->col;
        int32_t i;
        switch (f->kind) {
        case AF_BLOB: {
            size_t off, len;
            if (!fkc_avro_read_blob(cur, FKC_AVRO_LENGTH_WHAT[f->op[1]], FKC_AVRO_VALUE_WHAT[f->op[1]],
                                    f->op[2] == FKC_AVRO_STRING, &off, &len) ||
                !fkc_tc_put_bytes(r->s, fc, r->base + off, len))
                return 0;
            break;
        }
        case AF_LONG: {
            const char *what = FKC_AVRO_VALUE_WHAT[f->op[1]];
            int64_t v = f->op[1] == FKC_AVRO_INT ? fkc_read_varint(cur, what) : fkc_read_varlong(cur, what);
            if (cur->failed || !fkc_tc_put_fixed(r->s, fc, &v))
                return 0;
            break;
        }
        case AF_INT: {
            int32_t v = fkc_read_varint(cur, FKC_AVRO_VALUE_WHAT[FKC_AVRO_INT]);
            if (cur->failed || !fkc_tc_put_fixed(r->s, fc, &v))
                return 0;
            break;
        }
        case AF_SCALAR:
            if (!aa_scalar(r, f->op, fc))
                return 0;
            break;
        case AF_ENUM: {
            if (!fkc_avro_read_enum(cur, f->op, &i))
                return 0;
            int32_t reader_index = f->op[2 + 2 * i]; /* the read refused a symbol the reader lacks */
            if (!fkc_tc_put_fixed(r->s, fc, &reader_index))
                return 0;
            break;
        }
        case AF_UNION: { /* what aa_step does for it, its branch's scalar inline */
            if (!fkc_avro_nest(cur, f->op, depth + 1, r->max_depth) || !fkc_avro_read_branch(cur, f->op, &i))
                return 0;
            const int64_t *ks = r->p->steps + r->p->steps[f->kid + 3 + i];
            if (!aa_scalar(r, r->p->code + ks[0], &r->s->cols[ks[1]]))
                return 0;
            break;
        }
        case AF_SKIP:
            if (!fkc_avro_skip_value(r->p->code, f->pc, cur, depth + 1, &r->empty_budget))
                return 0;
            break;
        default:
            if (!aa_step(r, f->kid, depth + 1))
                return 0;
        }
    }
    return 1;
}

/* The value of step `sid` (its program op's) at nesting `depth`, as
 * fkc_avro.c's value() reads it. */
static int aa_step(aa_run *r, int64_t sid, int32_t depth)
{
    const int64_t *s = r->p->steps + sid;
    fkc_tc_col *c = &r->s->cols[s[1]];
    if (s[0] < 0)
        return aa_const(r, s, c);
    const int64_t *kids = s + 3;
    const int32_t *op = r->p->code + s[0];
    if (op[0] == FKC_AVRO_OP_SCALAR && c->layout != FKC_TC_DENSE_UNION)
        return aa_scalar(r, op, c);
    if (!fkc_avro_nest(&r->cur, op, depth, r->max_depth))
        return 0;
    int32_t i;
    /* a reader union: the writer union's branch (phase 1's checks refuse one
     * without a step), or the one branch a writer type resolved to, whose
     * step reads the same value */
    if (c->layout == FKC_TC_DENSE_UNION) {
        if (op[0] != FKC_AVRO_OP_UNION)
            return aa_union(r, c, kids[0], depth);
        return fkc_avro_read_branch(&r->cur, op, &i) && aa_union(r, c, kids[i], depth + 1);
    }
    switch (op[0]) {
    case FKC_AVRO_OP_ENUM: {
        if (!fkc_avro_read_enum(&r->cur, op, &i))
            return 0;
        int32_t reader_index = op[2 + 2 * i]; /* the read refused a symbol the reader lacks */
        return fkc_tc_put_fixed(r->s, c, &reader_index);
    }
    case FKC_AVRO_OP_ARRAY:
    case FKC_AVRO_OP_MAP:
        return aa_blocks(r, op, c, kids[0], depth + 1);
    case FKC_AVRO_OP_UNION: /* the branch's step writes this same column (a null branch: a null) */
        return fkc_avro_read_branch(&r->cur, op, &i) && aa_step(r, kids[i], depth + 1);
    default: /* FKC_AVRO_OP_RECORD */
        return aa_record(r, c, r->fields + r->first_field[sid], (int64_t)op[1] + op[2], depth);
    }
}

/* Whether every branch step of union step `us` (on a column that is not a
 * dense union) is a scalar on a column that is not one, or refused (-1). */
static int aa_scalar_branches(const fkc_avro_arrow_plan *p, const int64_t *us)
{
    for (int64_t i = 0; i < us[2]; i++) {
        int64_t kid = us[3 + i];
        if (kid < 0)
            continue;
        const int64_t *ks = p->steps + kid;
        if (ks[0] < 0 || p->code[ks[0]] != FKC_AVRO_OP_SCALAR || aa_column(p, ks[1])[C_LAYOUT] == FKC_TC_DENSE_UNION)
            return 0;
    }
    return 1;
}

/* The field table of every record step under `sid` (the plan check proved
 * the steps a tree that nests at most AA_MAX_DEPTH deep). */
static void aa_compile(aa_run *r, int64_t sid, size_t *used)
{
    const fkc_avro_arrow_plan *p = r->p;
    const int64_t *s = p->steps + sid;
    if (s[0] < 0)
        return; /* a constant: aa_const walks it */
    const int32_t *op = p->code + s[0];
    const int64_t *kids = s + 3;
    int64_t n = s[2];
    if (op[0] == FKC_AVRO_OP_RECORD && aa_column(p, s[1])[C_LAYOUT] != FKC_TC_DENSE_UNION) {
        aa_field *f = r->fields + *used;
        r->first_field[sid] = *used;
        *used += (size_t)n;
        for (int64_t i = 0; i < n; i++, f++) {
            memset(f, 0, sizeof *f);
            f->kid = kids[i];
            if (kids[i] < 0) {
                f->kind = AF_SKIP;
                f->pc = op[4 + 2 * i];
                continue;
            }
            const int64_t *ks = p->steps + kids[i];
            f->kind = AF_STEP;
            if (ks[0] < 0)
                continue; /* a default */
            const int32_t *kop = p->code + ks[0];
            const int64_t *kc = aa_column(p, ks[1]);
            int64_t layout = kc[C_LAYOUT];
            f->op = kop;
            f->col = &r->s->cols[ks[1]];
            if (kop[0] == FKC_AVRO_OP_ENUM && layout != FKC_TC_DENSE_UNION) {
                f->kind = AF_ENUM;
                continue;
            }
            if (kop[0] == FKC_AVRO_OP_UNION && layout != FKC_TC_DENSE_UNION && aa_scalar_branches(p, ks)) {
                f->kind = AF_UNION;
                continue;
            }
            if (kop[0] != FKC_AVRO_OP_SCALAR || layout == FKC_TC_DENSE_UNION) {
                f->kind = AF_STEP;
                continue;
            }
            int32_t wire = kop[1];
            f->kind = AF_SCALAR;
            if ((wire == FKC_AVRO_BYTES || wire == FKC_AVRO_STRING) &&
                (layout == FKC_TC_BINARY || layout == FKC_TC_UTF8))
                f->kind = AF_BLOB;
            else if ((wire == FKC_AVRO_INT || wire == FKC_AVRO_LONG) && layout == FKC_TC_INT64 && kc[C_P0] == 0)
                f->kind = AF_LONG;
            else if (wire == FKC_AVRO_INT && layout == FKC_TC_INT32 && kc[C_P0] == 0)
                f->kind = AF_INT;
        }
    }
    for (int64_t i = 0; i < n; i++)
        if (kids[i] >= 0)
            aa_compile(r, kids[i], used);
}

struct fkc_avro_arrow_builder {
    aa_run r;
    fkc_tc_tree tree; /* the plan's columns, as r.s builds them */
};

fkc_avro_arrow_builder *fkc_avro_arrow_start(const fkc_avro_arrow_plan *plan, size_t rows_hint)
{
    fkc_avro_arrow_builder *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->r.p = plan;
    b->r.max_depth = plan->code[2];
    b->tree = aa_tree(plan);
    /* a record's fields are words of its step: fewer fields than step words */
    b->r.fields = malloc(plan->steps_len * sizeof *b->r.fields);
    b->r.first_field = malloc(plan->steps_len * sizeof *b->r.first_field);
    b->r.s = fkc_tc_start(&b->tree, rows_hint);
    if (b->r.s == NULL || b->r.fields == NULL || b->r.first_field == NULL) {
        fkc_avro_arrow_discard(b);
        return NULL;
    }
    size_t used = 0;
    aa_compile(&b->r, plan->root_step, &used);
    return b;
}

/* Payload `i` failed to go into the columns (not a read failure): the
 * error is its read error when it has one anywhere (phase 1 alone, as the
 * object path reads it), since that path reports those first. */
static int aa_read_error_first(const fkc_avro_arrow_plan *p, const uint8_t *payload, size_t length,
                               int allow_trailing, size_t index, fkc_avro_error *read_err)
{
    fkc_avro_tape tape = {NULL, 0, 0};
    size_t starts[2];
    size_t done = fkc_avro_decode_many(p->code, p->code_len, &payload, &length, 1, allow_trailing, &tape, starts,
                                       read_err);
    fkc_avro_tape_free(&tape);
    if (done == 1 || read_err->nomem)
        return 0;
    read_err->index = index;
    return 1;
}

int fkc_avro_arrow_append(fkc_avro_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                          size_t count, int allow_trailing, fkc_avro_error *read_err, fkc_avro_arrow_error *err)
{
    aa_run *r = &b->r;
    fkc_cursor *cur = &r->cur;
    r->s->err = err;
    for (size_t i = 0; i < count; i++) {
        r->base = payloads[i];
        fkc_cursor_init(cur, payloads[i], lengths[i], 0);
        r->empty_budget = r->p->code[3];
        r->s->index = r->s->rows + i;
        int ok = aa_step(r, r->p->root_step, 0);
        if (ok && !allow_trailing && fkc_cursor_remaining(cur) > 0)
            ok = fkc_avro_fail_at(cur, fkc_cursor_tell(cur), "datum", "trailing bytes");
        if (ok)
            continue;
        if (cur->failed) {
            read_err->index = i;
            read_err->nomem = 0;
            read_err->offset = cur->fail_pos;
            read_err->what = cur->what;
            read_err->problem = cur->problem;
            return FKC_AA_READ;
        }
        if (aa_read_error_first(r->p, payloads[i], lengths[i], allow_trailing, i, read_err))
            return FKC_AA_READ;
        return err->kind;
    }
    fkc_tc_chunk_done(r->s, count);
    r->base = NULL; /* the caller may reuse or free the payloads: every value was copied */
    return FKC_AA_OK;
}

void fkc_avro_arrow_discard(fkc_avro_arrow_builder *b)
{
    if (b == NULL)
        return;
    fkc_tc_discard(b->r.s);
    free(b->r.fields);
    free(b->r.first_field);
    free(b);
}

int fkc_avro_arrow_finish(fkc_avro_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                          fkc_avro_arrow_error *err)
{
    int rc = fkc_tc_finish(b->r.s, out_array, out_schema, err); /* frees the columns, exported or not */
    free(b->r.fields);
    free(b->r.first_field);
    free(b);
    return rc;
}
