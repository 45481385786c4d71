/* fkc_avro_arrow.c — the Avro tape → Arrow array sink; see fkc_avro_arrow.h.
 * The columns themselves (growth, limits, export) are fkc_typed_columns.c's;
 * this file follows the Avro program's steps into them. */
#include "fkc_avro_arrow.h"

#include <stdlib.h>
#include <string.h>

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
/* The columns being built. */

typedef struct aa_run {
    const fkc_avro_arrow_plan *p;
    fkc_tc_set *s;       /* the columns */
    const int64_t *tape;
    size_t pos;
    const uint8_t *base; /* the payload the tape's offsets point into */
} aa_run;

static inline int64_t aa_next(aa_run *r)
{
    return r->tape[r->pos++];
}


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
    int64_t at = op[3] ? aa_next(r) : -1; /* a writer's logical type: its offset first */
    switch (wire) {
    case FKC_AVRO_NULL:
        return fkc_tc_fill(r->s, c);
    case FKC_AVRO_BOOLEAN:
        return fkc_tc_put_bool(r->s, c, aa_next(r) != 0);
    case FKC_AVRO_INT:
    case FKC_AVRO_LONG: {
        int64_t v = aa_next(r);
        if (!fkc_tc_in_day(c->plan, v)) /* the offset is known when the writer declared the logical type */
            return fkc_tc_fail(r->s, FKC_AA_VALUE, at >= 0 ? (size_t)at : 0,
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
        uint32_t bits = (uint32_t)aa_next(r);
        float f;
        memcpy(&f, &bits, 4);
        if (c->layout == FKC_TC_FLOAT32)
            return fkc_tc_put_fixed(r->s, c, &f);
        double x = (double)f;
        return fkc_tc_put_fixed(r->s, c, &x);
    }
    case FKC_AVRO_DOUBLE: {
        uint64_t bits = (uint64_t)aa_next(r);
        return fkc_tc_put_fixed(r->s, c, &bits);
    }
    case FKC_AVRO_BYTES:
    case FKC_AVRO_STRING: {
        size_t off = (size_t)aa_next(r), len = (size_t)aa_next(r);
        if (c->layout == FKC_TC_DECIMAL)
            return aa_decimal(r, c, r->base + off, len, at >= 0 ? (size_t)at : off);
        return fkc_tc_put_bytes(r->s, c, r->base + off, len);
    }
    default: { /* FKC_AVRO_FIXED */
        size_t off = (size_t)aa_next(r);
        if (c->layout == FKC_TC_DECIMAL)
            return aa_decimal(r, c, r->base + off, (size_t)op[4], off);
        return fkc_tc_put_fixed(r->s, c, r->base + off);
    }
    }
}

static int aa_step(aa_run *r, int64_t sid);

/* A list or map row around its items (written by `items`). */
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
static int aa_union(aa_run *r, fkc_tc_col *c, int64_t kid)
{
    size_t child = (size_t)r->p->steps[kid + 1] - c->first;
    return fkc_tc_union_row(r->s, c, child) && aa_step(r, kid);
}

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
            if (!aa_step(r, kids[i]))
                return 0;
        return 1;
    case FKC_TC_LIST:
        if (!fkc_tc_begin(r->s, c))
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[i]))
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
            if (!aa_step(r, kids[i]) || !aa_step(r, kids[i + 1]))
                return 0;
        }
        return aa_nested_end(r, c);
    }
    case FKC_TC_DENSE_UNION:
        return aa_union(r, c, kids[0]);
    default: /* fixed widths */
        return fkc_tc_put_fixed(r->s, c, bytes);
    }
}

static int aa_step(aa_run *r, int64_t sid)
{
    const int64_t *s = r->p->steps + sid;
    fkc_tc_col *c = &r->s->cols[s[1]];
    if (s[0] < 0)
        return aa_const(r, s, c);
    const int64_t *kids = s + 3;
    const int32_t *op = r->p->code + s[0];
    /* a reader union: the writer union's branch the tape names (phase 1 refused
     * one without a step), or the one branch a writer type resolved to */
    if (c->layout == FKC_TC_DENSE_UNION)
        return aa_union(r, c, op[0] == FKC_AVRO_OP_UNION ? kids[aa_next(r)] : kids[0]);
    switch (op[0]) {
    case FKC_AVRO_OP_SCALAR:
        return aa_scalar(r, op, c);
    case FKC_AVRO_OP_ENUM: {
        int32_t reader_index = op[2 + 2 * aa_next(r)]; /* phase 1 refused a symbol the reader lacks */
        return fkc_tc_put_fixed(r->s, c, &reader_index);
    }
    case FKC_AVRO_OP_ARRAY: {
        int64_t n = aa_next(r);
        if (!fkc_tc_begin(r->s, c))
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (!aa_step(r, kids[0]))
                return 0;
        return aa_nested_end(r, c);
    }
    case FKC_AVRO_OP_MAP: {
        int64_t n = aa_next(r);
        if (!fkc_tc_begin(r->s, c))
            return 0;
        fkc_tc_col *entries = fkc_tc_child(r->s, c, 0);
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
        if (!fkc_tc_begin(r->s, c))
            return 0;
        c->len++;
        int64_t n = (int64_t)op[1] + op[2];
        for (int64_t i = 0; i < n; i++) {
            if (kids[i] < 0)
                continue;
            /* a scalar field straight into its column (what aa_step would do
             * for it: not a reader union, not a default) */
            const int64_t *ks = r->p->steps + kids[i];
            if (ks[0] >= 0) {
                const int32_t *kop = r->p->code + ks[0];
                fkc_tc_col *kc = &r->s->cols[ks[1]];
                if (kop[0] == FKC_AVRO_OP_SCALAR && kc->layout != FKC_TC_DENSE_UNION) {
                    if (!aa_scalar(r, kop, kc))
                        return 0;
                    continue;
                }
            }
            if (!aa_step(r, kids[i]))
                return 0;
        }
        return 1;
    }
    }
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
    b->tree = aa_tree(plan);
    b->r.s = fkc_tc_start(&b->tree, rows_hint);
    if (b->r.s == NULL) {
        free(b);
        return NULL;
    }
    return b;
}

int fkc_avro_arrow_append(fkc_avro_arrow_builder *b, const fkc_avro_tape *tape, const size_t *starts,
                          const uint8_t *const *payloads, size_t count, fkc_avro_arrow_error *err)
{
    aa_run *r = &b->r;
    r->tape = tape->v;
    r->s->err = err;
    for (size_t i = 0; i < count; i++) {
        r->pos = starts[i];
        r->base = payloads[i];
        r->s->index = r->s->rows + i;
        if (!aa_step(r, r->p->root_step))
            return err->kind;
    }
    fkc_tc_chunk_done(r->s, count);
    r->tape = NULL; /* the caller may reuse or free the tape: every value was copied */
    r->base = NULL;
    return FKC_AA_OK;
}

void fkc_avro_arrow_discard(fkc_avro_arrow_builder *b)
{
    if (b == NULL)
        return;
    fkc_tc_discard(b->r.s);
    free(b);
}

int fkc_avro_arrow_finish(fkc_avro_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                          fkc_avro_arrow_error *err)
{
    int rc = fkc_tc_finish(b->r.s, out_array, out_schema, err); /* frees the columns, exported or not */
    free(b);
    return rc;
}
