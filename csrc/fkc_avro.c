/* fkc_avro.c — the Avro program interpreter (phase 1); see fkc_avro.h. */
#include "fkc_avro.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_avro_read.h"
#include "fkc_grow.h"

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
/* The interpreter: fkc_avro_read.h reads, this writes the tape. */

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

/* Inlined into the record loop: a call per field cost as much as reading it. */
static inline __attribute__((always_inline)) int scalar(avro_run *r, const int32_t *op, int emit)
{
    int64_t words[2];
    if (!emit)
        return fkc_avro_read_scalar(&r->cur, op, 0, words) >= 0;
    if (!tape_reserve(r, 3))
        return 0;
    if (op[3]) /* a writer's logical type: its first byte, for the sink's errors */
        tape_push(r, (int64_t)fkc_cursor_tell(&r->cur));
    int n = fkc_avro_read_scalar(&r->cur, op, 1, r->w);
    if (n < 0)
        return 0;
    r->w += n;
    return 1;
}

static int value(avro_run *r, int32_t pc, int32_t depth, int emit);

/* An array's or map's blocks: [count (, byte size if count < 0), items]* 0. */
static int blocks(avro_run *r, const int32_t *op, int32_t depth, int emit, int is_map)
{
    fkc_cursor *c = &r->cur;
    size_t slot = 0;
    if (emit) {
        if (!tape_reserve(r, 1))
            return 0;
        slot = (size_t)(r->w - r->tape->v); /* an index: the tape may move as it grows */
        tape_push(r, 0);
    }
    int64_t total = 0, count;
    while (fkc_avro_read_block(c, op, is_map, &r->empty_budget, &count) && count > 0) {
        total += count;
        for (int64_t i = 0; i < count; i++) {
            if (is_map) {
                size_t off, len;
                if (!fkc_avro_read_key(c, emit, &off, &len))
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
    if (c->failed)
        return 0;
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
    if (!fkc_avro_nest(c, op, depth, r->max_depth))
        return 0;
    switch (op[0]) {
    case FKC_AVRO_OP_ENUM: {
        int32_t i;
        if (!fkc_avro_read_enum(c, op, &i))
            return 0;
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
        int32_t i;
        if (!fkc_avro_read_branch(c, op, &i))
            return 0;
        if (emit) {
            if (!tape_reserve(r, 1))
                return 0;
            tape_push(r, i);
        }
        return value(r, op[2 + 2 * i], depth + 1, emit);
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

int fkc_avro_skip_value(const int32_t *code, int32_t pc, fkc_cursor *c, int32_t depth, int64_t *empty_budget)
{
    avro_run r;
    r.code = code;
    r.cur = *c;
    r.tape = NULL;
    r.w = r.w_end = NULL;
    r.max_depth = code[2];
    r.empty_budget = *empty_budget;
    r.nomem = 0;
    int ok = value(&r, pc, depth, 0);
    *c = r.cur;
    *empty_budget = r.empty_budget;
    return ok;
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
            ok = fkc_avro_fail_at(&r.cur, fkc_cursor_tell(&r.cur), "datum", "trailing bytes");
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
