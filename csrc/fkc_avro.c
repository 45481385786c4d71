/* fkc_avro.c — the Avro program interpreter (phase 1); see fkc_avro.h. */
#include "fkc_avro.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_grow.h"
#include "fkc_records.h" /* fkc_utf8_valid: UTF-8 as Python's strict decoder takes it */
#include "fkc_varint.h"

/* ------------------------------------------------------------------------ */
/* Program check: run once per program (the bridge checks at construction). */

static int op_width(const int32_t *code, size_t n, size_t pc, size_t *width)
{
    if (pc >= n)
        return 0;
    size_t avail = n - pc;
    switch (code[pc]) {
    case FKC_AVRO_OP_SCALAR:
        *width = 6;
        break;
    case FKC_AVRO_OP_ENUM:
    case FKC_AVRO_OP_UNION:
        if (avail < 2 || code[pc + 1] < 0)
            return 0;
        *width = 2 + 2 * (size_t)code[pc + 1];
        break;
    case FKC_AVRO_OP_ARRAY:
    case FKC_AVRO_OP_MAP:
        *width = 4;
        break;
    case FKC_AVRO_OP_RECORD:
        if (avail < 4 || code[pc + 1] < 0 || code[pc + 2] < 0)
            return 0;
        *width = 4 + 2 * (size_t)code[pc + 1] + 2 * (size_t)code[pc + 2];
        break;
    default:
        return 0;
    }
    return *width <= avail;
}

int fkc_avro_check_program(const int32_t *code, size_t n)
{
    if (n < FKC_AVRO_HEADER || n > 0x7FFFFFFF || code[0] != FKC_AVRO_MAGIC || code[2] < 1 || code[2] > 1000 ||
        code[3] < 0)
        return 0;
    /* Pass 1: the ops tile [HEADER, n); mark where each starts. */
    uint8_t *starts = calloc(n, 1);
    if (starts == NULL)
        return 0;
    int ok = 1;
    size_t pc = FKC_AVRO_HEADER, width = 0;
    while (ok && pc < n) {
        if (!op_width(code, n, pc, &width))
            ok = 0;
        else {
            starts[pc] = 1;
            pc += width;
        }
    }
#define PC_OK(x) ((x) >= 0 && (size_t)(x) < n && starts[(size_t)(x)])
    /* Pass 2: operands. */
    ok = ok && PC_OK(code[1]);
    for (pc = FKC_AVRO_HEADER; ok && pc < n; pc += width) {
        const int32_t *op = code + pc;
        op_width(code, n, pc, &width);
        switch (op[0]) {
        case FKC_AVRO_OP_SCALAR:
            ok = op[1] >= FKC_AVRO_NULL && op[1] <= FKC_AVRO_FIXED && op[2] >= FKC_AVRO_NULL &&
                 op[2] <= FKC_AVRO_FIXED && op[3] >= 0 && op[3] <= FKC_AVRO_LOGICAL_MAX && op[4] >= 0;
            break;
        case FKC_AVRO_OP_ENUM:
            for (int32_t i = 0; ok && i < op[1]; i++)
                ok = op[2 + 2 * i] >= -1;
            break;
        case FKC_AVRO_OP_ARRAY:
        case FKC_AVRO_OP_MAP:
            ok = PC_OK(op[1]) && op[2] >= 0 && op[3] >= 1;
            break;
        case FKC_AVRO_OP_UNION:
            for (int32_t i = 0; ok && i < op[1]; i++)
                ok = op[2 + 2 * i] == -1 || PC_OK(op[2 + 2 * i]);
            break;
        case FKC_AVRO_OP_RECORD:
            for (int32_t i = 0; ok && i < op[1]; i++)
                ok = PC_OK(op[4 + 2 * i]);
            break;
        }
    }
#undef PC_OK
    free(starts);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The interpreter. */

typedef struct avro_run {
    const int32_t *code;
    fkc_cursor cur;
    fkc_avro_tape *tape;
    int64_t *w, *w_end; /* the tape's next word and the end of its room (tape->len is
                           brought up to date after each payload) */
    int32_t max_depth;
    int64_t empty_budget; /* zero-byte items still allowed in this payload */
    int nomem;
} avro_run;

/* A failure about a value already read (its range, its mapping): reported
 * at `at`, the value's first byte. */
static int fail_at(avro_run *r, size_t at, const char *what, const char *problem)
{
    fkc_cursor *c = &r->cur;
    if (!c->failed) {
        c->failed = 1;
        c->what = what;
        c->problem = problem;
        c->fail_pos = at;
    }
    return 0;
}

static int tape_grow(avro_run *r, size_t more)
{
    fkc_avro_tape *t = r->tape;
    t->len = t->v != NULL ? (size_t)(r->w - t->v) : 0;
    int64_t *v = t->cap - t->len >= more ? t->v : fkc_grow_by(t->v, &t->cap, t->len, more, sizeof *v, 256);
    if (v == NULL) {
        r->nomem = 1;
        return 0;
    }
    t->v = v;
    r->w = v + t->len;
    r->w_end = v + t->cap;
    return 1;
}

/* Pushes go through a cursor kept in the run (not tape->len, re-read after
 * every store): a value's few words cost a compare and stores. */
static inline int tape_reserve(avro_run *r, size_t more)
{
    return (size_t)(r->w_end - r->w) >= more || tape_grow(r, more);
}

static inline void tape_push(avro_run *r, int64_t x)
{
    *r->w++ = x; /* room reserved by the caller */
}

static inline size_t here(const avro_run *r)
{
    return fkc_cursor_tell(&r->cur);
}

static const char *const LENGTH_WHAT[] = {[FKC_AVRO_BYTES] = "bytes length", [FKC_AVRO_STRING] = "string length"};
static const char *const VALUE_WHAT[] = {
    [FKC_AVRO_NULL] = "null",     [FKC_AVRO_BOOLEAN] = "boolean", [FKC_AVRO_INT] = "int",
    [FKC_AVRO_LONG] = "long",     [FKC_AVRO_FLOAT] = "float",     [FKC_AVRO_DOUBLE] = "double",
    [FKC_AVRO_BYTES] = "bytes",   [FKC_AVRO_STRING] = "string",   [FKC_AVRO_FIXED] = "fixed",
};

/* A length-prefixed run of bytes (bytes, string, a map key): its offset and
 * length, checked against what is left before anything uses it. */
static inline __attribute__((always_inline)) int read_blob(avro_run *r, const char *len_what, const char *what,
                                                            int utf8, size_t *off, size_t *len)
{
    fkc_cursor *c = &r->cur;
    size_t at = here(r);
    int64_t n = fkc_read_varlong(c, len_what);
    if (c->failed)
        return 0;
    if (n < 0)
        return fail_at(r, at, len_what, "negative length");
    *off = here(r);
    const uint8_t *p = fkc_read_bytes(c, (size_t)n, what);
    if (p == NULL)
        return 0;
    if (utf8 && !fkc_utf8_valid(p, (size_t)n))
        return fail_at(r, *off, what, "invalid UTF-8");
    *len = (size_t)n;
    return 1;
}

/* Inlined into the record loop: a call per field cost as much as reading it. */
static inline __attribute__((always_inline)) int scalar(avro_run *r, const int32_t *op, int emit)
{
    fkc_cursor *c = &r->cur;
    int32_t wire = op[1], out = op[2], logical = op[3];
    const char *what = VALUE_WHAT[wire];
    size_t at = here(r);
    if (emit && !tape_reserve(r, 3))
        return 0;
    if (emit && logical)
        tape_push(r, (int64_t)at);
    switch (wire) {
    case FKC_AVRO_NULL:
        return 1;
    case FKC_AVRO_BOOLEAN: {
        uint8_t b = fkc_read_u8(c, what);
        if (c->failed)
            return 0;
        if (b > 1)
            return fail_at(r, at, what, "invalid boolean");
        if (emit)
            tape_push(r, b);
        return 1;
    }
    case FKC_AVRO_INT: {
        int32_t v = fkc_read_varint(c, what);
        if (c->failed)
            return 0;
        if (emit)
            tape_push(r, v);
        return 1;
    }
    case FKC_AVRO_LONG: {
        int64_t v = fkc_read_varlong(c, what);
        if (c->failed)
            return 0;
        if (emit)
            tape_push(r, v);
        return 1;
    }
    case FKC_AVRO_FLOAT:
    case FKC_AVRO_DOUBLE: {
        size_t width = wire == FKC_AVRO_FLOAT ? 4 : 8;
        const uint8_t *p = fkc_read_bytes(c, width, what);
        if (p == NULL)
            return 0;
        uint64_t bits = 0;
        for (size_t i = width; i-- > 0;) /* little-endian on the wire */
            bits = (bits << 8) | p[i];
        if (emit)
            tape_push(r, (int64_t)bits);
        return 1;
    }
    case FKC_AVRO_BYTES:
    case FKC_AVRO_STRING: {
        size_t off, len;
        if (!read_blob(r, LENGTH_WHAT[wire], what, emit && out == FKC_AVRO_STRING, &off, &len))
            return 0;
        if (emit) {
            tape_push(r, (int64_t)off);
            tape_push(r, (int64_t)len);
        }
        return 1;
    }
    default: { /* FKC_AVRO_FIXED */
        if (!fkc_skip(c, (size_t)op[4], what))
            return 0;
        if (emit)
            tape_push(r, (int64_t)at);
        return 1;
    }
    }
}

static int value(avro_run *r, int32_t pc, int32_t depth, int emit);

/* An array's or map's blocks: [count (, byte size if count < 0), items]* 0. */
static int blocks(avro_run *r, const int32_t *op, int32_t depth, int emit, int is_map)
{
    fkc_cursor *c = &r->cur;
    const char *count_what = is_map ? "map block count" : "array block count";
    const char *size_what = is_map ? "map block size" : "array block size";
    /* a map item is at least its key's length byte */
    uint64_t min_item = (uint64_t)op[2] + (is_map ? 1u : 0u);
    size_t slot = 0;
    if (emit) {
        if (!tape_reserve(r, 1))
            return 0;
        slot = (size_t)(r->w - r->tape->v); /* an index: the tape may move as it grows */
        tape_push(r, 0);
    }
    int64_t total = 0;
    for (;;) {
        size_t at = here(r);
        int64_t count = fkc_read_varlong(c, count_what);
        if (c->failed)
            return 0;
        if (count == 0)
            break;
        if (count < 0) {
            if (count == INT64_MIN)
                return fail_at(r, at, count_what, "count out of range");
            count = -count;
            size_t size_at = here(r);
            int64_t size = fkc_read_varlong(c, size_what);
            if (c->failed)
                return 0;
            if (size < 0)
                return fail_at(r, size_at, size_what, "negative length");
            if ((uint64_t)size > fkc_cursor_remaining(c))
                return fail_at(r, size_at, size_what, "past the end");
        }
        if (min_item > 0) {
            if ((uint64_t)count > fkc_cursor_remaining(c) / min_item)
                return fail_at(r, at, count_what, "more items than bytes left");
        } else {
            int64_t weight = op[3]; /* values of no bytes per item, >= 1 */
            if (count > r->empty_budget / weight)
                return fail_at(r, at, count_what, "too many items");
            r->empty_budget -= count * weight;
        }
        total += count;
        for (int64_t i = 0; i < count; i++) {
            if (is_map) {
                size_t off, len;
                if (!read_blob(r, "map key length", "map key", emit, &off, &len))
                    return 0;
                if (emit) {
                    if (!tape_reserve(r, 2))
                        return 0;
                    tape_push(r, (int64_t)off);
                    tape_push(r, (int64_t)len);
                }
            }
            if (!value(r, op[1], depth, emit))
                return 0;
        }
    }
    if (emit)
        r->tape->v[slot] = total;
    return 1;
}

static int value(avro_run *r, int32_t pc, int32_t depth, int emit)
{
    fkc_cursor *c = &r->cur;
    const int32_t *op = r->code + pc;
    if (op[0] == FKC_AVRO_OP_SCALAR)
        return scalar(r, op, emit);
    if (op[0] != FKC_AVRO_OP_ENUM && depth >= r->max_depth) {
        static const char *const names[] = {[FKC_AVRO_OP_ARRAY] = "array", [FKC_AVRO_OP_MAP] = "map",
                                            [FKC_AVRO_OP_UNION] = "union", [FKC_AVRO_OP_RECORD] = "record"};
        return fail_at(r, here(r), names[op[0]], "nesting too deep");
    }
    switch (op[0]) {
    case FKC_AVRO_OP_ENUM: {
        size_t at = here(r);
        int32_t i = fkc_read_varint(c, "enum index");
        if (c->failed)
            return 0;
        if (i < 0 || i >= op[1])
            return fail_at(r, at, "enum index", "index out of range");
        if (op[2 + 2 * i] < 0)
            return fail_at(r, at, "enum symbol", "not in the reader's symbols");
        if (emit) {
            if (!tape_reserve(r, 1))
                return 0;
            tape_push(r, i);
        }
        return 1;
    }
    case FKC_AVRO_OP_ARRAY:
    case FKC_AVRO_OP_MAP:
        return blocks(r, op, depth + 1, emit, op[0] == FKC_AVRO_OP_MAP);
    case FKC_AVRO_OP_UNION: {
        size_t at = here(r);
        int64_t i = fkc_read_varlong(c, "union branch");
        if (c->failed)
            return 0;
        if (i < 0 || i >= op[1])
            return fail_at(r, at, "union branch", "index out of range");
        int32_t target = op[2 + 2 * i];
        if (target < 0)
            return fail_at(r, at, "union branch", "no match in the reader's schema");
        if (emit) {
            if (!tape_reserve(r, 1))
                return 0;
            tape_push(r, i);
        }
        return value(r, target, depth + 1, emit);
    }
    default: { /* FKC_AVRO_OP_RECORD */
        int32_t nfields = op[1];
        for (int32_t i = 0; i < nfields; i++) {
            const int32_t *field = r->code + op[4 + 2 * i];
            int field_emit = emit && op[5 + 2 * i] >= 0;
            if (!(field[0] == FKC_AVRO_OP_SCALAR ? scalar(r, field, field_emit)
                                                 : value(r, op[4 + 2 * i], depth + 1, field_emit)))
                return 0;
        }
        return 1;
    }
    }
}

size_t fkc_avro_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                            const size_t *lengths, size_t count, int allow_trailing, fkc_avro_tape *tape,
                            size_t *starts, fkc_avro_error *err)
{
    (void)code_len;
    avro_run r;
    r.code = code;
    r.tape = tape;
    r.max_depth = code[2];
    r.nomem = 0;
    r.w = r.w_end = NULL; /* no room yet: the first push grows the tape (no offset on a NULL tape) */
    if (tape->v != NULL) {
        r.w = tape->v + tape->len;
        r.w_end = tape->v + tape->cap;
    }
    for (size_t i = 0; i < count; i++) {
        starts[i] = tape->len;
        fkc_cursor_init(&r.cur, payloads[i], lengths[i], 0);
        r.empty_budget = code[3];
        int ok = value(&r, code[1], 0, 1);
        if (ok && !allow_trailing && fkc_cursor_remaining(&r.cur) > 0)
            ok = fail_at(&r, here(&r), "datum", "trailing bytes");
        if (!ok) {
            err->index = i;
            err->nomem = r.nomem;
            err->offset = r.cur.fail_pos;
            err->what = r.nomem ? "tape" : r.cur.what;
            err->problem = r.nomem ? "out of memory" : r.cur.problem;
            return i;
        }
        if (tape->v != NULL)
            tape->len = (size_t)(r.w - tape->v);
    }
    starts[count] = tape->len;
    return count;
}

void fkc_avro_tape_free(fkc_avro_tape *tape)
{
    free(tape->v);
    tape->v = NULL;
    tape->len = tape->cap = 0;
}
