/* fkc_protobuf_arrow.c — the Protobuf tape → Arrow array sink; see
 * fkc_protobuf_arrow.h. The columns are fkc_typed_columns.c's; this file
 * resolves the runtime's field semantics over the tape and writes them. */
#include "fkc_protobuf_arrow.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_grow.h"
#include "fkc_protobuf_read.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#define PA_NS INT64_C(1000000000)

/* Column words, short */
enum { C_LAYOUT = FKC_TC_C_LAYOUT, C_NULLABLE = FKC_TC_C_NULLABLE, C_FIRST = FKC_TC_C_FIRST, C_COUNT = FKC_TC_C_COUNT,
       C_P0 = FKC_TC_C_P0 };
/* Step words */
enum { S_OP, S_COLUMN, S_REF, S_ABSENT, S_N };

static const int32_t *pa_fields(const int32_t *msg)
{
    return msg + FKC_PB_MSG_HEAD + msg[1];
}

/* The tape words of an entry's value (after its slot word). */
static inline int64_t pa_value_words(int32_t kind, const int64_t *at)
{
    if (kind == FKC_PB_MESSAGE)
        return FKC_PB_FRAME + at[1];
    if (kind == FKC_PB_STRING || kind == FKC_PB_BYTES)
        return 2;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Plan check. */

typedef struct pa_checker {
    const fkc_pb_arrow_plan *p;
    fkc_tc_tree tree;
    uint8_t *seen; /* per step word: a step already walked (the steps form a tree) */
} pa_checker;

/* The column layout a scalar kind's values are written as. */
static int64_t pa_layout_of(int32_t kind)
{
    switch (kind) {
    case FKC_PB_INT32:
    case FKC_PB_SINT32:
    case FKC_PB_SFIXED32:
        return FKC_TC_INT32;
    case FKC_PB_INT64:
    case FKC_PB_SINT64:
    case FKC_PB_SFIXED64:
        return FKC_TC_INT64;
    case FKC_PB_UINT32:
    case FKC_PB_FIXED32:
        return FKC_TC_UINT32;
    case FKC_PB_UINT64:
    case FKC_PB_FIXED64:
        return FKC_TC_UINT64;
    case FKC_PB_FLOAT:
        return FKC_TC_FLOAT32;
    case FKC_PB_DOUBLE:
        return FKC_TC_FLOAT64;
    case FKC_PB_BOOL:
        return FKC_TC_BOOL;
    case FKC_PB_STRING:
        return FKC_TC_UTF8;
    case FKC_PB_BYTES:
        return FKC_TC_BINARY;
    case FKC_PB_ENUM:
        return FKC_TC_DICT;
    default:
        return -1;
    }
}

/* Message m has exactly these (number, kind) singular fields. */
static int pa_shape(const int32_t *code, int64_t m, int32_t n, const int32_t *kinds)
{
    const int32_t *msg = fkc_pb_message(code, m);
    if (msg[0] != n)
        return 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t *f = pa_fields(msg) + i * FKC_PB_FIELD_WIDTH;
        if (f[0] != i + 1 || f[1] != kinds[i] || (f[2] & FKC_PB_F_REPEATED) || f[3] >= 0)
            return 0;
    }
    return 1;
}

static int pa_check_step(pa_checker *k, int64_t sid, int64_t column, const int32_t *field, int item, int depth);

/* Step `sid` exists whole, is walked once, writes `column`, and may leave
 * it null only when the column is nullable. */
static int pa_check_head(pa_checker *k, int64_t sid, int64_t column)
{
    const fkc_pb_arrow_plan *p = k->p;
    if (sid < 0 || (uint64_t)sid >= p->steps_len)
        return 0;
    size_t left = p->steps_len - (size_t)sid;
    const int64_t *s = p->steps + sid;
    if (left < FKC_PA_STEP_HEAD || k->seen[sid])
        return 0;
    k->seen[sid] = 1;
    int64_t n = s[S_N];
    if (s[S_COLUMN] != column || (s[S_ABSENT] != 0 && s[S_ABSENT] != 1) || n < 0 ||
        (uint64_t)n > left - FKC_PA_STEP_HEAD)
        return 0;
    return s[S_ABSENT] == 1 || fkc_tc_column(&k->tree, column)[C_NULLABLE];
}

/* A VALUE step of scalar `kind` on `col`: enums carry their numbers. */
static int pa_check_value(const int64_t *s, const int64_t *col, int32_t kind)
{
    int64_t n = s[S_N];
    if (pa_layout_of(kind) != col[C_LAYOUT])
        return 0;
    if (kind != FKC_PB_ENUM)
        return n == 0;
    /* an open enum's unknown number is null: the column must allow it */
    if (n != col[C_P0] || !col[C_NULLABLE])
        return 0;
    const int64_t *numbers = s + FKC_PA_STEP_HEAD;
    for (int64_t i = 0; i < n; i++)
        if (numbers[i] < INT32_MIN || numbers[i] > INT32_MAX || (i > 0 && numbers[i] <= numbers[i - 1]))
            return 0;
    return 1;
}

/* A message-valued step (STRUCT or a well-known type) over message m. */
static int pa_check_message(pa_checker *k, const int64_t *s, int64_t sid, const int64_t *col, int64_t m,
                            int depth)
{
    const int32_t *code = k->p->code;
    int64_t op = s[S_OP], n = s[S_N];
    if (s[S_REF] != m)
        return 0;
    const int32_t *msg = fkc_pb_message(code, m);
    switch (op) {
    case FKC_PA_STRUCT: {
        if (col[C_LAYOUT] != FKC_TC_STRUCT || n != msg[0] || n != col[C_COUNT])
            return 0;
        const int64_t *kids = s + FKC_PA_STEP_HEAD;
        for (int64_t i = 0; i < n; i++) {
            const int32_t *f = pa_fields(msg) + i * FKC_PB_FIELD_WIDTH;
            if (f[3] >= msg[0] || kids[i] <= sid) /* oneof ids index per-message scratch; children after parents */
                return 0;
            if (!pa_check_step(k, kids[i], col[C_FIRST] + i, f, 0, depth + 1))
                return 0;
        }
        return 1;
    }
    case FKC_PA_TIMESTAMP:
    case FKC_PA_DURATION: {
        static const int32_t kinds[2] = {FKC_PB_INT64, FKC_PB_INT32};
        return n == 0 && col[C_LAYOUT] == FKC_TC_INT64 && col[C_P0] == 0 && pa_shape(code, m, 2, kinds);
    }
    default: { /* FKC_PA_WRAPPER */
        if (n != 0 || msg[0] != 1)
            return 0;
        const int32_t *f = pa_fields(msg);
        int32_t kind = f[1];
        return kind != FKC_PB_ENUM && kind != FKC_PB_MESSAGE && pa_shape(code, m, 1, &kind) &&
               pa_layout_of(kind) == col[C_LAYOUT];
    }
    }
}

/* Step `sid` writes `column` the values of `field` (its program words): all
 * its occurrences (a LIST or MAP), or, when `item`, one element of them. */
static int pa_check_step(pa_checker *k, int64_t sid, int64_t column, const int32_t *field, int item, int depth)
{
    const fkc_pb_arrow_plan *p = k->p;
    if (depth > FKC_TC_MAX_DEPTH || !pa_check_head(k, sid, column))
        return 0;
    const int64_t *s = p->steps + sid;
    int64_t op = s[S_OP], n = s[S_N];
    const int64_t *col = fkc_tc_column(&k->tree, column);
    int32_t kind = field[1], ref = field[4];
    int repeated = (field[2] & FKC_PB_F_REPEATED) && !item;
    const int64_t *kids = s + FKC_PA_STEP_HEAD;
    if (repeated) {
        int map = kind == FKC_PB_MESSAGE && (fkc_pb_message(p->code, ref)[2] & FKC_PB_M_MAP_ENTRY);
        if (n != 1 || kids[0] <= sid)
            return 0;
        if (op == FKC_PA_LIST && !map)
            return col[C_LAYOUT] == FKC_TC_LIST && pa_check_step(k, kids[0], col[C_FIRST], field, 1, depth + 1);
        if (op != FKC_PA_MAP || !map || col[C_LAYOUT] != FKC_TC_MAP)
            return 0;
        /* the entry: a STRUCT step on the entries column, over a message of
         * key (1) and value (2), each a non-null column of its kind */
        const int32_t *entry = fkc_pb_message(p->code, ref);
        const int64_t *entries = fkc_tc_column(&k->tree, col[C_FIRST]);
        if (entry[0] != 2 || pa_fields(entry)[0] != 1 || pa_fields(entry)[FKC_PB_FIELD_WIDTH] != 2)
            return 0;
        int32_t key_kind = pa_fields(entry)[1];
        int64_t key_layout = pa_layout_of(key_kind);
        if (key_kind == FKC_PB_ENUM || key_layout < 0 || key_layout == FKC_TC_FLOAT32 ||
            key_layout == FKC_TC_FLOAT64 || key_layout == FKC_TC_BINARY)
            return 0;
        if (!pa_check_head(k, kids[0], col[C_FIRST]))
            return 0;
        const int64_t *es = p->steps + kids[0];
        return es[S_OP] == FKC_PA_STRUCT && pa_check_message(k, es, kids[0], entries, ref, depth + 1);
    }
    if (kind == FKC_PB_MESSAGE) {
        if (op != FKC_PA_STRUCT && op != FKC_PA_TIMESTAMP && op != FKC_PA_DURATION && op != FKC_PA_WRAPPER)
            return 0;
        return pa_check_message(k, s, sid, col, ref, depth);
    }
    return op == FKC_PA_VALUE && pa_check_value(s, col, kind);
}

int fkc_pb_arrow_check(const fkc_pb_arrow_plan *plan)
{
    pa_checker k;
    k.p = plan;
    k.tree.columns = plan->columns;
    k.tree.column_count = plan->column_count;
    k.tree.strings = plan->strings;
    k.tree.strings_len = plan->strings_len;
    if (plan->code_len < FKC_PB_HEADER || !fkc_tc_check_tree(&k.tree) || plan->steps_len < FKC_PA_STEP_HEAD)
        return 0;
    int64_t root = plan->root_step;
    if (root < 0 || (uint64_t)root > plan->steps_len - FKC_PA_STEP_HEAD)
        return 0;
    const int64_t *rs = plan->steps + root;
    k.seen = calloc(plan->steps_len, 1);
    if (k.seen == NULL)
        return 0;
    int ok = pa_check_head(&k, root, 0) && rs[S_OP] == FKC_PA_STRUCT && rs[S_ABSENT] == 1 &&
             pa_check_message(&k, rs, root, fkc_tc_column(&k.tree, 0), plan->code[2], 0);
    free(k.seen);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The walk. */

typedef struct pa_run {
    const fkc_pb_arrow_plan *p;
    fkc_tc_set *s;
    const int64_t *tape;
    const uint8_t *base; /* the payload the tape's offsets point into */
    /* a stack of int64 words: each message level's positions sorted by slot,
     * the frames of its merged sub-messages, a map's keys; addressed by
     * index, since a deeper level may move it when it grows */
    int64_t *scratch;
    size_t top, cap;
    int32_t max_depth; /* the program's nesting bound (the in-order reader keeps it too) */
} pa_run;

/* `n` more scratch words at r->top (returned), or -1 out of memory. */
static int64_t pa_push(pa_run *r, size_t n)
{
    if (n > r->cap - r->top) {
        int64_t *grown = fkc_grow_by(r->scratch, &r->cap, r->top, n, sizeof *grown, 1024);
        if (grown == NULL) {
            fkc_tc_fail(r->s, FKC_TC_NOMEM, 0, "arrow scratch", "out of memory");
            return -1;
        }
        r->scratch = grown;
    }
    size_t at = r->top;
    r->top += n;
    return (int64_t)at;
}

static int pa_message_row(pa_run *r, int64_t sid, int64_t frames, int64_t nframes);

/* The dictionary index of enum number v in a VALUE step, or -1. */
static int64_t pa_enum_index(const int64_t *s, int64_t v)
{
    const int64_t *numbers = s + FKC_PA_STEP_HEAD;
    int64_t lo = 0, hi = s[S_N];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (numbers[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s[S_N] && numbers[lo] == v ? lo : -1;
}

/* One number of `kind` into `c` (an enum's: its number; float and double:
 * their IEEE bits), normalized as the reader leaves it. */
static inline __attribute__((always_inline)) int pa_number(pa_run *r, const int64_t *s, fkc_tc_col *c,
                                                             int32_t kind, int64_t v)
{
    switch (kind) {
    case FKC_PB_BOOL:
        return fkc_tc_put_bool(r->s, c, v != 0);
    case FKC_PB_FLOAT: {
        uint32_t bits = (uint32_t)v;
        return fkc_tc_put_fixed(r->s, c, &bits);
    }
    case FKC_PB_ENUM: {
        int64_t i = pa_enum_index(s, v);
        if (i < 0) /* an open enum's number it does not name */
            return fkc_tc_fill(r->s, c);
        int32_t index = (int32_t)i;
        return fkc_tc_put_fixed(r->s, c, &index);
    }
    default:
        if (c->width == 4) { /* int32, uint32: the low 32 bits (the reader normalized them) */
            uint32_t low = (uint32_t)(uint64_t)v;
            return fkc_tc_put_fixed(r->s, c, &low);
        }
        return fkc_tc_put_fixed(r->s, c, &v); /* int64, uint64 and double bits */
    }
}

/* One scalar of `kind` into `c`: the entry value at tape position `at`, or
 * (at < 0) the kind's default. */
static inline __attribute__((always_inline)) int pa_scalar(pa_run *r, const int64_t *s, fkc_tc_col *c,
                                                             int32_t kind, int64_t at)
{
    if (kind == FKC_PB_STRING || kind == FKC_PB_BYTES) {
        if (at < 0)
            return fkc_tc_put_bytes(r->s, c, NULL, 0);
        return fkc_tc_put_bytes(r->s, c, r->base + r->tape[at], (size_t)r->tape[at + 1]);
    }
    return pa_number(r, s, c, kind, at >= 0 ? r->tape[at] : kind == FKC_PB_ENUM ? s[S_REF] : 0);
}

/* The last entry of slot 0 and slot 1 (-1: none) across merged frames. */
static void pa_last_two(pa_run *r, const int32_t *msg, int64_t frames, int64_t nframes, int64_t *last)
{
    const int32_t *fields = pa_fields(msg);
    const int64_t *t = r->tape;
    last[0] = last[1] = -1;
    for (int64_t k = 0; k < nframes; k++) {
        int64_t p = r->scratch[frames + k], end = p + FKC_PB_FRAME + t[p + 1];
        for (p += FKC_PB_FRAME; p < end;) {
            int64_t slot = t[p++];
            if (slot < 2)
                last[slot] = p;
            p += pa_value_words(fields[slot * FKC_PB_FIELD_WIDTH + 1], t + p);
        }
    }
}

/* A Timestamp's or Duration's seconds and nanos as int64 nanoseconds: 0
 * when the runtime's rules refuse them or they do not fit. */
static int pa_time_ns(int64_t op, int64_t seconds, int64_t nanos, int64_t *ns)
{
    int ok;
    if (op == FKC_PA_TIMESTAMP)
        ok = nanos >= 0 && nanos < PA_NS;
    else
        ok = nanos > -PA_NS && nanos < PA_NS && !(seconds > 0 && nanos < 0) && !(seconds < 0 && nanos > 0);
    return ok && !__builtin_mul_overflow(seconds, PA_NS, ns) && !__builtin_add_overflow(*ns, nanos, ns);
}

/* A Timestamp or Duration as int64 nanoseconds, refused when out of range. */
static int pa_time(pa_run *r, const int64_t *s, fkc_tc_col *c, int64_t frames, int64_t nframes)
{
    int64_t last[2];
    const int32_t *msg = fkc_pb_message(r->p->code, s[S_REF]);
    pa_last_two(r, msg, frames, nframes, last);
    int64_t seconds = last[0] >= 0 ? r->tape[last[0]] : 0;
    int64_t nanos = last[1] >= 0 ? (int64_t)(int32_t)r->tape[last[1]] : 0;
    int64_t ns = 0;
    if (!pa_time_ns(s[S_OP], seconds, nanos, &ns)) {
        int64_t frame = nframes > 0 ? r->scratch[frames + nframes - 1] : -1;
        return fkc_tc_fail(r->s, FKC_TC_VALUE, frame >= 0 ? (size_t)r->tape[frame + 2] : 0,
                           s[S_OP] == FKC_PA_TIMESTAMP ? "google.protobuf.Timestamp" : "google.protobuf.Duration",
                           "value out of range");
    }
    return fkc_tc_put_fixed(r->s, c, &ns);
}

/* A message value from its merged frames (none: the empty message). */
static int pa_message_value(pa_run *r, int64_t sid, int64_t frames, int64_t nframes)
{
    const int64_t *s = r->p->steps + sid;
    fkc_tc_col *c = &r->s->cols[s[S_COLUMN]];
    switch (s[S_OP]) {
    case FKC_PA_STRUCT:
        return pa_message_row(r, sid, frames, nframes);
    case FKC_PA_TIMESTAMP:
    case FKC_PA_DURATION:
        return pa_time(r, s, c, frames, nframes);
    default: { /* FKC_PA_WRAPPER: its value, the default when the wrapper is empty */
        int64_t last[2];
        const int32_t *msg = fkc_pb_message(r->p->code, s[S_REF]);
        pa_last_two(r, msg, frames, nframes, last);
        return pa_scalar(r, s, c, pa_fields(msg)[1], last[0]);
    }
    }
}

/* A string key's hash (FNV-1a): equal bytes, equal words. */
static uint64_t pa_fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}

/* Map keys compared: sorted pairs (key, entry) by key then entry. */
static int pa_pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* A map row: each key once, its last entry, at that entry's place. */
static int pa_map(pa_run *r, const int64_t *s, fkc_tc_col *c, int64_t pos, int64_t npos)
{
    const int64_t *es = r->p->steps + s[FKC_PA_STEP_HEAD];
    const int32_t *entry = fkc_pb_message(r->p->code, es[S_REF]);
    const int32_t *fields = pa_fields(entry);
    int32_t key_kind = fields[1], value_kind = fields[FKC_PB_FIELD_WIDTH + 1];
    int blob = key_kind == FKC_PB_STRING;
    if (npos <= 1) { /* no key to find twice: the row is its entry, if any */
        if (!fkc_tc_begin(r->s, c))
            return 0;
        if (npos == 1 && !pa_message_row(r, s[FKC_PA_STEP_HEAD], pos, 1))
            return 0;
        fkc_tc_end_nested(r->s, c);
        return 1;
    }
    /* [npos] keys (hash for strings), [2 * npos] sorted pairs, [npos] alive,
     * [2 * npos] key bytes (offset, length) */
    int64_t keys = pa_push(r, 6 * (size_t)npos);
    if (keys < 0)
        return 0;
    int64_t pairs = keys + npos, alive = pairs + 2 * npos, spans = alive + npos;
    const int64_t *t = r->tape;
    for (int64_t j = 0; j < npos; j++) {
        int64_t frame = r->scratch[pos + j], at = -1, end = frame + FKC_PB_FRAME + t[frame + 1];
        for (int64_t p = frame + FKC_PB_FRAME; p < end;) {
            int64_t slot = t[p++];
            if (slot == 0)
                at = p;
            p += pa_value_words(slot == 0 ? key_kind : value_kind, t + p);
        }
        uint64_t key = 0;
        int64_t off = 0, len = 0;
        if (blob && at >= 0) {
            off = t[at];
            len = t[at + 1];
            key = pa_fnv1a(r->base + off, (size_t)len);
        } else if (at >= 0) {
            key = (uint64_t)t[at]; /* normalized by the reader: equal keys, equal words */
        }
        r->scratch[keys + j] = (int64_t)key;
        r->scratch[pairs + 2 * j] = (int64_t)key;
        r->scratch[pairs + 2 * j + 1] = j;
        r->scratch[alive + j] = 1;
        r->scratch[spans + 2 * j] = off;
        r->scratch[spans + 2 * j + 1] = len;
    }
    qsort(r->scratch + pairs, (size_t)npos, 2 * sizeof(int64_t), pa_pair_cmp);
    /* in each run of one key value, every entry but the last of each key dies */
    for (int64_t a = 0; a < npos;) {
        int64_t b = a + 1;
        while (b < npos && r->scratch[pairs + 2 * b] == r->scratch[pairs + 2 * a])
            b++;
        for (int64_t i = a; i < b - 1; i++) {
            int64_t ji = r->scratch[pairs + 2 * i + 1];
            if (!blob) {
                r->scratch[alive + ji] = 0;
                continue;
            }
            for (int64_t k = i + 1; k < b; k++) { /* same hash: the bytes decide */
                int64_t jk = r->scratch[pairs + 2 * k + 1];
                int64_t li = r->scratch[spans + 2 * ji + 1], lk = r->scratch[spans + 2 * jk + 1];
                if (li == lk && memcmp(r->base + r->scratch[spans + 2 * ji], r->base + r->scratch[spans + 2 * jk],
                                       (size_t)li) == 0) {
                    r->scratch[alive + ji] = 0;
                    break;
                }
            }
        }
        a = b;
    }
    if (!fkc_tc_begin(r->s, c))
        return 0;
    int64_t frame = pa_push(r, 1); /* one frame at a time for the entry's row */
    if (frame < 0)
        return 0;
    for (int64_t j = 0; j < npos; j++) {
        if (!r->scratch[alive + j])
            continue;
        r->scratch[frame] = r->scratch[pos + j];
        if (!pa_message_row(r, s[FKC_PA_STEP_HEAD], frame, 1))
            return 0;
    }
    fkc_tc_end_nested(r->s, c);
    r->top = (size_t)keys;
    return 1;
}

/* Field step `sid` from the field's occurrences (tape positions of their
 * values at scratch[pos, pos + npos), in wire order). */
static inline __attribute__((always_inline)) int pa_field(pa_run *r, int64_t sid, const int32_t *field,
                                                            int64_t pos, int64_t npos)
{
    const int64_t *s = r->p->steps + sid;
    fkc_tc_col *c = &r->s->cols[s[S_COLUMN]];
    int32_t kind = field[1];
    switch (s[S_OP]) {
    case FKC_PA_VALUE:
        if (npos == 0 && s[S_ABSENT] == 0)
            return fkc_tc_fill(r->s, c);
        return pa_scalar(r, s, c, kind, npos ? r->scratch[pos + npos - 1] : -1);
    case FKC_PA_LIST: {
        const int64_t *item = r->p->steps + s[FKC_PA_STEP_HEAD];
        fkc_tc_col *items = &r->s->cols[item[S_COLUMN]];
        if (!fkc_tc_begin(r->s, c))
            return 0;
        for (int64_t j = 0; j < npos; j++) {
            int ok = kind == FKC_PB_MESSAGE ? pa_message_value(r, s[FKC_PA_STEP_HEAD], pos + j, 1)
                                            : pa_scalar(r, item, items, kind, r->scratch[pos + j]);
            if (!ok)
                return 0;
        }
        fkc_tc_end_nested(r->s, c);
        return 1;
    }
    case FKC_PA_MAP:
        return pa_map(r, s, c, pos, npos);
    default: /* a singular message: null when absent (explicit presence), else the merge */
        if (npos == 0 && s[S_ABSENT] == 0)
            return fkc_tc_fill(r->s, c);
        return pa_message_value(r, sid, pos, npos);
    }
}

/* One struct row of STRUCT step `sid` from the merged frames at
 * scratch[frames, frames + nframes) (none: the empty message). */
static int pa_message_row(pa_run *r, int64_t sid, int64_t frames, int64_t nframes)
{
    const int64_t *s = r->p->steps + sid;
    const int32_t *msg = fkc_pb_message(r->p->code, s[S_REF]);
    const int32_t *fields = pa_fields(msg);
    const int64_t *t = r->tape;
    fkc_tc_col *c = &r->s->cols[s[S_COLUMN]];
    int64_t nf = msg[0], nentries = 0;
    for (int64_t k = 0; k < nframes; k++)
        nentries += t[r->scratch[frames + k]];
    /* [nf + 1] slot starts, [nf] fill cursors, [nf] oneof winners, [nf] oneof
     * cut-offs, [nentries] value positions grouped by slot */
    size_t words = 4 * (size_t)nf + 1 + (size_t)nentries;
    size_t mark = r->top;
    int64_t start = pa_push(r, words);
    if (start < 0)
        return 0;
    int64_t *w = r->scratch + start; /* valid until the first push below */
    int64_t *fill = w + nf + 1, *winner = fill + nf, *cut = winner + nf, *at = cut + nf;
    memset(w, 0, ((size_t)nf + 1) * sizeof *w);
    /* count per slot; when the slots never go down across the frames (how
     * writers lay a message out: field order, a repeated field's elements
     * together) the positions are already grouped by slot, in wire order,
     * so they are written in the same pass and the second is skipped */
    int64_t in_order = 1, prev = 0, n = 0;
    for (int64_t k = 0; k < nframes; k++) {
        int64_t p = r->scratch[frames + k], end = p + FKC_PB_FRAME + t[p + 1];
        for (p += FKC_PB_FRAME; p < end;) {
            int64_t slot = t[p++];
            w[slot + 1]++;
            in_order &= slot >= prev;
            prev = slot;
            at[n++] = p;
            p += pa_value_words(fields[slot * FKC_PB_FIELD_WIDTH + 1], t + p);
        }
    }
    for (int64_t i = 0; i < nf; i++) {
        w[i + 1] += w[i];
        fill[i] = w[i];
        winner[i] = -1;
        cut[i] = -1;
    }
    for (int64_t k = 0; !in_order && k < nframes; k++) { /* positions by slot, wire order kept */
        int64_t p = r->scratch[frames + k], end = p + FKC_PB_FRAME + t[p + 1];
        for (p += FKC_PB_FRAME; p < end;) {
            int64_t slot = t[p++];
            at[fill[slot]++] = p;
            p += pa_value_words(fields[slot * FKC_PB_FIELD_WIDTH + 1], t + p);
        }
    }
    /* a oneof: the member seen last wins; a message member keeps only its
     * occurrences after every other member's last (each replaced it) */
    for (int64_t i = 0; i < nf; i++) {
        int32_t o = fields[i * FKC_PB_FIELD_WIDTH + 3];
        if (o < 0 || w[i + 1] == w[i])
            continue;
        int64_t last = at[w[i + 1] - 1];
        if (winner[o] < 0 || last > at[w[winner[o] + 1] - 1]) {
            if (winner[o] >= 0)
                cut[o] = at[w[winner[o] + 1] - 1];
            winner[o] = i;
        } else if (last > cut[o]) {
            cut[o] = last;
        }
    }
    if (!fkc_tc_begin(r->s, c))
        return 0;
    c->len++;
    const int64_t *kids = s + FKC_PA_STEP_HEAD;
    for (int64_t i = 0; i < nf; i++) {
        const int32_t *f = fields + i * FKC_PB_FIELD_WIDTH;
        w = r->scratch + start; /* a child may have moved the stack */
        int64_t first = w[i], count = w[i + 1] - w[i];
        int32_t o = f[3];
        if (o >= 0) {
            int64_t *won = w + 2 * nf + 1;
            if (won[o] != i) {
                count = 0;
            } else {
                int64_t cutoff = won[nf + o];
                const int64_t *pos = w + 4 * nf + 1;
                while (count > 0 && pos[first] < cutoff) {
                    first++;
                    count--;
                }
            }
        }
        if (!pa_field(r, kids[i], f, start + 4 * nf + 1 + first, count))
            return 0;
    }
    r->top = mark;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The in-order reader: a payload straight into the columns.
 *
 * Writers lay a message out in field-number order, each singular field at
 * most once, a repeated field's elements (a map's entries) together. For
 * such a payload the runtime's rules resolve to "write what comes, and the
 * plan's absent value for every field that does not", so it needs no tape:
 * each value goes into its column as it is read, and the fields between two
 * that occur are filled on the way. Anything else (a field out of order or
 * twice, two members of one oneof, a wrong wire type, a group, a closed
 * enum's unknown number, an unknown field in a map entry, a map key twice,
 * a Timestamp out of range, any fault) makes the reader give up: the
 * columns are truncated back to the row count before the payload
 * (fkc_tc_truncate) and the payload is read onto the tape and walked as
 * above, which resolves every case and reports every fault. So the output
 * and the errors are the tape path's by construction; the in-order reader
 * only decides when it may take the short way.
 * tests/fuzz/fuzz_protobuf.c checks both ways build the same rows. */

typedef struct po_msg po_msg;

/* How one value of a field is written. */
typedef struct po_value {
    const int64_t *step; /* its step (an enum's numbers; a well-known type's op) */
    fkc_tc_col *col;
    const po_msg *msg; /* STRUCT: the message's fields */
    int32_t op;        /* VALUE, STRUCT, TIMESTAMP, DURATION, WRAPPER */
    int32_t kind;      /* a scalar's kind; a WRAPPER's wrapped kind */
    int32_t closed;    /* a closed enum's index in the program, else -1 */
    int32_t fast;      /* how po_value_in writes it (PF_*) */
    int32_t wrapped;   /* a WRAPPER's: how its value is written (PF_*) */
} po_value;

/* How a value is read and written, decided once per field: each scalar
 * kind straight from the wire into a column of known width, messages
 * through po_message. */
enum {
    PF_MESSAGE, /* po_message */
    PF_VAR64,   /* int64, uint64: the varint's bits, 8 bytes */
    PF_VAR32,   /* int32, uint32: the varint's low 32 bits, 4 bytes */
    PF_ZIGZAG32,
    PF_ZIGZAG64,
    PF_BOOL,
    PF_FIXED64, /* double, fixed64, sfixed64: the 8 bytes as they are */
    PF_FIXED32, /* float, fixed32, sfixed32: the 4 bytes */
    PF_STRING,
    PF_BYTES,
    PF_ENUM,       /* an open enum: the dictionary index of its number (null when none) */
    PF_CLOSED_ENUM /* the same, once the number is one of the enum's (else the tape's way) */
};

static int32_t po_fast_of(int32_t op, int32_t kind, int32_t closed)
{
    if (op != FKC_PA_VALUE)
        return PF_MESSAGE;
    switch (kind) {
    case FKC_PB_INT64:
    case FKC_PB_UINT64:
        return PF_VAR64;
    case FKC_PB_INT32:
    case FKC_PB_UINT32:
        return PF_VAR32;
    case FKC_PB_SINT32:
        return PF_ZIGZAG32;
    case FKC_PB_SINT64:
        return PF_ZIGZAG64;
    case FKC_PB_BOOL:
        return PF_BOOL;
    case FKC_PB_DOUBLE:
    case FKC_PB_FIXED64:
    case FKC_PB_SFIXED64:
        return PF_FIXED64;
    case FKC_PB_FLOAT:
    case FKC_PB_FIXED32:
    case FKC_PB_SFIXED32:
        return PF_FIXED32;
    case FKC_PB_STRING:
        return PF_STRING;
    case FKC_PB_BYTES:
        return PF_BYTES;
    default: /* FKC_PB_ENUM (the plan check admits no other scalar kind) */
        return closed < 0 ? PF_ENUM : PF_CLOSED_ENUM;
    }
}

enum { PO_SINGLE, PO_LIST, PO_MAP };

typedef struct po_field {
    uint32_t number;
    int32_t shape;    /* PO_SINGLE, PO_LIST, PO_MAP */
    int32_t oneof;    /* -1: none */
    int32_t packable; /* a repeated scalar whose elements may come packed */
    uint32_t wire;    /* the wire type of one value */
    uint64_t tag;     /* the tag writers put before it (a packable field's: packed) */
    int64_t sid;      /* the field's step: absent, it is written by pa_field */
    const int32_t *f; /* its program words */
    fkc_tc_col *col;  /* PO_LIST, PO_MAP: the field's own column */
    po_value v;       /* the value; a list's item; a map's entry (a STRUCT) */
} po_field;

struct po_msg {
    const int32_t *msg; /* program words: slots by number */
    int32_t nf;
    int32_t map_entry;
    fkc_tc_col *col;
    po_field fields[];
};

/* The compiled messages, owned by the builder. */
typedef struct po_tree {
    po_msg **msgs;
    size_t count, cap;
    const po_msg *root;
} po_tree;

static const po_msg *po_compile_msg(po_tree *t, const fkc_pb_arrow_plan *p, fkc_tc_set *set, int64_t sid);

static int po_compile_value(po_tree *t, const fkc_pb_arrow_plan *p, fkc_tc_set *set, po_value *v, int64_t sid,
                            const int32_t *field)
{
    const int64_t *s = p->steps + sid;
    v->step = s;
    v->col = &set->cols[s[S_COLUMN]];
    v->op = (int32_t)s[S_OP];
    v->kind = field[1];
    v->closed = (field[2] & FKC_PB_F_CLOSED_ENUM) ? field[4] : -1;
    v->msg = NULL;
    if (v->op == FKC_PA_WRAPPER)
        v->kind = pa_fields(fkc_pb_message(p->code, s[S_REF]))[1];
    v->fast = po_fast_of(v->op, v->kind, v->closed);
    v->wrapped = v->op == FKC_PA_WRAPPER ? po_fast_of(FKC_PA_VALUE, v->kind, -1) : PF_MESSAGE;
    if (v->op == FKC_PA_STRUCT) {
        v->msg = po_compile_msg(t, p, set, sid);
        return v->msg != NULL;
    }
    return 1;
}

/* A checked plan's STRUCT step `sid` compiled (NULL: out of memory). The
 * steps form a tree, so the recursion ends; its depth is the plan's. */
static const po_msg *po_compile_msg(po_tree *t, const fkc_pb_arrow_plan *p, fkc_tc_set *set, int64_t sid)
{
    const int64_t *s = p->steps + sid;
    const int32_t *msg = fkc_pb_message(p->code, s[S_REF]);
    int32_t nf = msg[0];
    if (t->count == t->cap) {
        po_msg **grown = fkc_grow(t->msgs, &t->cap, t->count + 1, sizeof *grown, 16);
        if (grown == NULL)
            return NULL;
        t->msgs = grown;
    }
    po_msg *m = calloc(1, sizeof *m + (size_t)nf * sizeof(po_field));
    if (m == NULL)
        return NULL;
    t->msgs[t->count++] = m;
    m->msg = msg;
    m->nf = nf;
    m->map_entry = (msg[2] & FKC_PB_M_MAP_ENTRY) != 0;
    m->col = &set->cols[s[S_COLUMN]];
    const int64_t *kids = s + FKC_PA_STEP_HEAD;
    for (int32_t i = 0; i < nf; i++) {
        const int32_t *f = pa_fields(msg) + i * FKC_PB_FIELD_WIDTH;
        po_field *fd = &m->fields[i];
        const int64_t *ks = p->steps + kids[i];
        fd->number = (uint32_t)f[0];
        fd->oneof = f[3];
        fd->packable = (f[2] & FKC_PB_F_PACKABLE) != 0;
        fd->wire = FKC_PB_WIRE_OF[f[1]];
        fd->tag = (uint64_t)fd->number << 3 | (fd->packable ? 2 : fd->wire);
        fd->sid = kids[i];
        fd->f = f;
        fd->col = &set->cols[ks[S_COLUMN]];
        int64_t value_sid = kids[i];
        fd->shape = PO_SINGLE;
        if (ks[S_OP] == FKC_PA_LIST || ks[S_OP] == FKC_PA_MAP) {
            fd->shape = ks[S_OP] == FKC_PA_LIST ? PO_LIST : PO_MAP;
            value_sid = ks[FKC_PA_STEP_HEAD];
        }
        if (!po_compile_value(t, p, set, &fd->v, value_sid, f))
            return NULL;
    }
    return m;
}

static void po_tree_free(po_tree *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->msgs[i]);
    free(t->msgs);
    t->msgs = NULL;
    t->count = t->cap = 0;
}

/* A tag: 0 when it cannot be read, is not one, or starts or ends a group
 * (the tape path skips groups). */
static inline __attribute__((always_inline)) int po_tag(const uint8_t **pp, const uint8_t *end, uint32_t *num,
                                                          uint32_t *wt)
{
    uint64_t tag;
    if (fkc_pb_read_varint(pp, end, &tag) != FKC_PB_VARINT_OK || fkc_pb_tag_problem(tag) != NULL)
        return 0;
    *num = (uint32_t)(tag >> 3);
    *wt = (uint32_t)(tag & 7);
    return *wt != 3 && *wt != 4;
}

/* A length prefix and the bytes it covers: [*body, *body_end), *pp past them. */
static inline __attribute__((always_inline)) int po_span(const uint8_t **pp, const uint8_t *end,
                                                           const uint8_t **body, const uint8_t **body_end)
{
    uint64_t n;
    if (fkc_pb_read_varint(pp, end, &n) != FKC_PB_VARINT_OK || n > (uint64_t)(end - *pp))
        return 0;
    *body = *pp;
    *body_end = *pp + n;
    *pp = *body_end;
    return 1;
}

/* An unknown field's value skipped (wire types 0, 1, 2, 5). */
static int po_skip(const uint8_t **pp, const uint8_t *end, uint32_t wt)
{
    uint64_t v;
    const uint8_t *body, *body_end;
    switch (wt) {
    case 0:
        return fkc_pb_read_varint(pp, end, &v) == FKC_PB_VARINT_OK;
    case 1:
        return fkc_pb_read_fixed(pp, end, 8, &v);
    case 5:
        return fkc_pb_read_fixed(pp, end, 4, &v);
    default:
        return po_span(pp, end, &body, &body_end);
    }
}

/* A fixed-width row of a column whose width is `width` (a constant where
 * this is inlined: one store). */
static inline __attribute__((always_inline)) int po_put(pa_run *r, fkc_tc_col *c, const void *value, size_t width)
{
    if (!fkc_tc_begin(r->s, c))
        return 0;
    memcpy(c->values + c->len * width, value, width);
    c->len++;
    return 1;
}

/* One scalar from the wire (its wire type checked by the caller) into v's
 * column, the way `fast` says. */
static inline __attribute__((always_inline)) int po_scalar(pa_run *r, const po_value *v, int32_t fast,
                                                             const uint8_t **pp, const uint8_t *end)
{
    uint64_t u;
    switch (fast) {
    case PF_VAR64:
        return fkc_pb_read_varint(pp, end, &u) == FKC_PB_VARINT_OK && po_put(r, v->col, &u, 8);
    case PF_VAR32: {
        if (fkc_pb_read_varint(pp, end, &u) != FKC_PB_VARINT_OK)
            return 0;
        uint32_t low = (uint32_t)u;
        return po_put(r, v->col, &low, 4);
    }
    case PF_ZIGZAG32: {
        if (fkc_pb_read_varint(pp, end, &u) != FKC_PB_VARINT_OK)
            return 0;
        int32_t x = (int32_t)fkc_pb_norm_varint(FKC_PB_SINT32, u);
        return po_put(r, v->col, &x, 4);
    }
    case PF_ZIGZAG64: {
        if (fkc_pb_read_varint(pp, end, &u) != FKC_PB_VARINT_OK)
            return 0;
        int64_t x = fkc_pb_norm_varint(FKC_PB_SINT64, u);
        return po_put(r, v->col, &x, 8);
    }
    case PF_BOOL:
        return fkc_pb_read_varint(pp, end, &u) == FKC_PB_VARINT_OK && fkc_tc_put_bool(r->s, v->col, u != 0);
    case PF_FIXED64:
        return fkc_pb_read_fixed(pp, end, 8, &u) && po_put(r, v->col, &u, 8);
    case PF_FIXED32: {
        if (!fkc_pb_read_fixed(pp, end, 4, &u))
            return 0;
        uint32_t low = (uint32_t)u;
        return po_put(r, v->col, &low, 4);
    }
    case PF_STRING:
    case PF_BYTES: {
        const uint8_t *body, *body_end;
        if (!po_span(pp, end, &body, &body_end))
            return 0;
        size_t n = (size_t)(body_end - body);
        if (fast == PF_STRING && !fkc_utf8_valid(body, n))
            return 0;
        return fkc_tc_put_bytes(r->s, v->col, body, n);
    }
    default: { /* PF_ENUM, PF_CLOSED_ENUM */
        if (fkc_pb_read_varint(pp, end, &u) != FKC_PB_VARINT_OK)
            return 0;
        int64_t x = fkc_pb_norm_varint(FKC_PB_ENUM, u);
        if (fast == PF_CLOSED_ENUM && !fkc_pb_enum_known(r->p->code, v->closed, x))
            return 0; /* the runtime drops it: the tape's way does */
        int64_t i = pa_enum_index(v->step, x);
        if (i < 0) /* an open enum's number it does not name */
            return fkc_tc_fill(r->s, v->col);
        int32_t index = (int32_t)i;
        return po_put(r, v->col, &index, 4);
    }
    }
}

static int po_row(pa_run *r, const po_msg *m, const uint8_t *p, const uint8_t *end, int32_t depth);

/* A Timestamp or Duration: seconds (1) and nanos (2), each at most once. */
static int po_time(pa_run *r, const po_value *v, const uint8_t *p, const uint8_t *end)
{
    int64_t part[3] = {0, 0, 0};
    uint32_t seen = 0, num, wt;
    uint64_t u;
    while (p < end) {
        if (!po_tag(&p, end, &num, &wt) || wt != 0 || (num != 1 && num != 2) || (seen & num) ||
            fkc_pb_read_varint(&p, end, &u) != FKC_PB_VARINT_OK)
            return 0;
        seen |= num;
        part[num] = num == 1 ? (int64_t)u : fkc_pb_norm_varint(FKC_PB_INT32, u);
    }
    int64_t ns;
    return pa_time_ns(v->op, part[1], part[2], &ns) && fkc_tc_put_fixed(r->s, v->col, &ns);
}

/* A wrapper: its value (1) at most once; none is the default. */
static int po_wrapper(pa_run *r, const po_value *v, const uint8_t *p, const uint8_t *end)
{
    uint32_t num, wt;
    if (p == end)
        return pa_scalar(r, v->step, v->col, v->kind, -1);
    if (!po_tag(&p, end, &num, &wt) || num != 1 || wt != FKC_PB_WIRE_OF[v->kind] ||
        !po_scalar(r, v, v->wrapped, &p, end))
        return 0;
    return p == end;
}

/* A message value (wire type 2, checked by the caller). */
static int po_message(pa_run *r, const po_value *v, const uint8_t **pp, const uint8_t *end, int32_t depth)
{
    const uint8_t *body, *body_end;
    if (depth + 1 > r->max_depth || !po_span(pp, end, &body, &body_end))
        return 0;
    switch (v->op) {
    case FKC_PA_STRUCT:
        return po_row(r, v->msg, body, body_end, depth + 1);
    case FKC_PA_TIMESTAMP:
    case FKC_PA_DURATION:
        return po_time(r, v, body, body_end);
    default:
        return po_wrapper(r, v, body, body_end);
    }
}

/* One occurrence of a field's value (its wire type checked by the caller). */
static inline __attribute__((always_inline)) int po_value_in(pa_run *r, const po_value *v, const uint8_t **pp,
                                                               const uint8_t *end, int32_t depth)
{
    if (v->fast == PF_MESSAGE)
        return po_message(r, v, pp, end, depth);
    return po_scalar(r, v, v->fast, pp, end);
}

/* Past the occurrence that ends at *pp: 1 with its wire type when the
 * next field is the same field again (the tag consumed), else 0 (nothing
 * consumed: the row's loop reads that tag). */
static inline __attribute__((always_inline)) int po_again(const po_field *fd, const uint8_t **pp,
                                                            const uint8_t *end, uint32_t *wt)
{
    const uint8_t *q = *pp;
    uint32_t num;
    if (q >= end || !po_tag(&q, end, &num, wt) || num != fd->number)
        return 0;
    *pp = q;
    return 1;
}

/* Map key rows i and j of `k` (a non-null scalar column) equal. */
static int po_key_equal(const fkc_tc_col *k, size_t i, size_t j)
{
    if (k->layout == FKC_TC_UTF8) {
        const int32_t *o = (const int32_t *)(const void *)k->values;
        size_t li = (size_t)(o[i + 1] - o[i]), lj = (size_t)(o[j + 1] - o[j]);
        return li == lj && (li == 0 || memcmp(k->data + o[i], k->data + o[j], li) == 0); /* no bytes: data may be NULL */
    }
    if (k->layout == FKC_TC_BOOL)
        return ((k->values[i >> 3] >> (i & 7)) & 1) == ((k->values[j >> 3] >> (j & 7)) & 1);
    return memcmp(k->values + i * k->width, k->values + j * k->width, k->width) == 0;
}

/* Map key row i's hash: equal keys, equal words. */
static uint64_t po_key_hash(const fkc_tc_col *k, size_t i)
{
    if (k->layout == FKC_TC_UTF8) {
        const int32_t *o = (const int32_t *)(const void *)k->values;
        return o[i + 1] == o[i] ? 0 : pa_fnv1a(k->data + o[i], (size_t)(o[i + 1] - o[i])); /* data may be NULL */
    }
    if (k->layout == FKC_TC_BOOL)
        return (k->values[i >> 3] >> (i & 7)) & 1;
    uint64_t h = 0;
    memcpy(&h, k->values + i * k->width, k->width); /* 4 or 8 bytes */
    return h;
}

/* 1 when the keys of entries [first, len) are distinct; 0 when one is
 * there twice (the tape path keeps its last entry) or out of memory. A
 * few are compared pairwise, more by sorted hashes. */
static int po_keys_distinct(pa_run *r, const fkc_tc_col *entries, size_t first)
{
    const fkc_tc_col *k = fkc_tc_child(r->s, entries, 0);
    size_t n = entries->len - first;
    if (n <= 8) {
        for (size_t i = first; i < entries->len; i++)
            for (size_t j = i + 1; j < entries->len; j++)
                if (po_key_equal(k, i, j))
                    return 0;
        return 1;
    }
    size_t mark = r->top;
    int64_t pairs = pa_push(r, 2 * n);
    if (pairs < 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        r->scratch[pairs + 2 * (int64_t)i] = (int64_t)po_key_hash(k, first + i);
        r->scratch[pairs + 2 * (int64_t)i + 1] = (int64_t)(first + i);
    }
    qsort(r->scratch + pairs, n, 2 * sizeof(int64_t), pa_pair_cmp);
    const int64_t *sorted = r->scratch + pairs;
    int distinct = 1;
    for (size_t a = 0; distinct && a + 1 < n; a++) /* a run of one hash: the keys decide */
        for (size_t b = a + 1; distinct && b < n && sorted[2 * b] == sorted[2 * a]; b++)
            distinct = !po_key_equal(k, (size_t)sorted[2 * a + 1], (size_t)sorted[2 * b + 1]);
    r->top = mark;
    return distinct;
}

/* A repeated field's occurrences, from the one whose tag (wire type wt)
 * was just read to the last that follows it directly, as one list row. */
static int po_list(pa_run *r, const po_field *fd, uint32_t wt, const uint8_t **pp, const uint8_t *end,
                   int32_t depth)
{
    if (!fkc_tc_begin(r->s, fd->col))
        return 0;
    do {
        if (wt == fd->wire) {
            if (!po_value_in(r, &fd->v, pp, end, depth))
                return 0;
        } else if (wt == 2 && fd->packable) {
            const uint8_t *q, *run_end;
            if (!po_span(pp, end, &q, &run_end))
                return 0;
            while (q < run_end)
                if (!po_value_in(r, &fd->v, &q, run_end, depth))
                    return 0;
        } else {
            return 0;
        }
    } while (po_again(fd, pp, end, &wt));
    fkc_tc_end_nested(r->s, fd->col);
    return 1;
}

/* A map field's entries, read as its list is, then their keys checked. */
static int po_map(pa_run *r, const po_field *fd, uint32_t wt, const uint8_t **pp, const uint8_t *end,
                  int32_t depth)
{
    const fkc_tc_col *entries = fd->v.col;
    size_t first = entries->len;
    if (!fkc_tc_begin(r->s, fd->col))
        return 0;
    do {
        if (wt != 2 || !po_message(r, &fd->v, pp, end, depth))
            return 0;
    } while (po_again(fd, pp, end, &wt));
    if (!po_keys_distinct(r, entries, first))
        return 0;
    fkc_tc_end_nested(r->s, fd->col);
    return 1;
}

/* One struct row of message m from its bytes [p, end). 0: the payload
 * must go the tape's way (the caller truncates what was written). */
static int po_row(pa_run *r, const po_msg *m, const uint8_t *p, const uint8_t *end, int32_t depth)
{
    fkc_tc_col *c = m->col;
    if (!fkc_tc_begin(r->s, c))
        return 0;
    c->len++;
    int32_t next = 0; /* the slots before it are written */
    uint64_t oneofs = 0;
    while (p < end) {
        uint64_t tag;
        if (fkc_pb_read_varint(&p, end, &tag) != FKC_PB_VARINT_OK)
            return 0;
        uint32_t wt = (uint32_t)(tag & 7);
        /* writers put the fields in number order: the next slot's tag is the
         * likely one (and, being a field's, a valid tag) */
        if (next >= m->nf || tag != m->fields[next].tag) {
            if (fkc_pb_tag_problem(tag) != NULL || wt == 3 || wt == 4) /* groups: the tape's way */
                return 0;
            int32_t slot = fkc_pb_find_slot(m->msg, (uint32_t)(tag >> 3));
            if (slot < 0) {
                if (m->map_entry || !po_skip(&p, end, wt)) /* upb drops a map entry with an unknown field */
                    return 0;
                continue;
            }
            if (slot < next) /* out of order, or a singular field again */
                return 0;
            for (; next < slot; next++)
                if (!pa_field(r, m->fields[next].sid, m->fields[next].f, 0, 0))
                    return 0;
            if (m->fields[slot].shape == PO_SINGLE && wt != m->fields[slot].wire)
                return 0;
        }
        const po_field *fd = &m->fields[next++];
        if (fd->oneof >= 0) { /* a oneof's second member: the tape path keeps the last */
            if (fd->oneof >= 64 || (oneofs >> fd->oneof) & 1)
                return 0;
            oneofs |= UINT64_C(1) << fd->oneof;
        }
        int ok;
        switch (fd->shape) {
        case PO_SINGLE:
            ok = po_value_in(r, &fd->v, &p, end, depth);
            break;
        case PO_LIST:
            ok = po_list(r, fd, wt, &p, end, depth);
            break;
        default:
            ok = po_map(r, fd, wt, &p, end, depth);
            break;
        }
        if (!ok)
            return 0;
    }
    for (; next < m->nf; next++)
        if (!pa_field(r, m->fields[next].sid, m->fields[next].f, 0, 0))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The builder. */

struct fkc_pb_arrow_builder {
    pa_run r;
    fkc_tc_tree tree;
    po_tree inorder;
    fkc_pb_tape tape; /* a payload the in-order reader gave up on */
};

fkc_pb_arrow_builder *fkc_pb_arrow_start(const fkc_pb_arrow_plan *plan, size_t rows_hint)
{
    fkc_pb_arrow_builder *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->r.p = plan;
    b->r.max_depth = plan->code[3];
    b->tree.columns = plan->columns;
    b->tree.column_count = plan->column_count;
    b->tree.strings = plan->strings;
    b->tree.strings_len = plan->strings_len;
    b->r.s = fkc_tc_start(&b->tree, rows_hint);
    if (b->r.s == NULL) {
        free(b);
        return NULL;
    }
    b->inorder.root = po_compile_msg(&b->inorder, plan, b->r.s, plan->root_step);
    if (b->inorder.root == NULL) {
        fkc_pb_arrow_discard(b);
        return NULL;
    }
    return b;
}

/* Payloads [0, count) of a tape as rows. 0 with r->s->err filled. */
static int pa_tape_rows(pa_run *r, const fkc_pb_tape *tape, const size_t *starts, const uint8_t *const *payloads,
                        size_t count, size_t first_index)
{
    r->tape = tape->v;
    r->top = 0;
    int64_t frame = pa_push(r, 1);
    if (frame < 0)
        return 0;
    for (size_t i = 0; i < count; i++) {
        r->base = payloads[i];
        r->s->index = first_index + i;
        r->scratch[frame] = (int64_t)starts[i];
        if (!pa_message_row(r, r->p->root_step, frame, 1))
            return 0;
    }
    r->top = 0;
    r->tape = NULL; /* the caller may reuse or free the tape: every value was copied */
    r->base = NULL;
    return 1;
}

int fkc_pb_arrow_append_tape(fkc_pb_arrow_builder *b, const fkc_pb_tape *tape, const size_t *starts,
                             const uint8_t *const *payloads, size_t count, fkc_tc_error *err)
{
    pa_run *r = &b->r;
    r->s->err = err;
    if (!pa_tape_rows(r, tape, starts, payloads, count, r->s->rows))
        return err->kind;
    fkc_tc_chunk_done(r->s, count);
    return FKC_TC_OK;
}

int fkc_pb_arrow_append(fkc_pb_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                        size_t count, fkc_pb_error *read_err, fkc_tc_error *err)
{
    pa_run *r = &b->r;
    fkc_tc_col *root = &r->s->cols[0];
    r->s->err = err;
    for (size_t i = 0; i < count; i++) {
        size_t rows = root->len, index = r->s->rows + i;
        r->s->index = index;
        r->top = 0;
        if (po_row(r, b->inorder.root, payloads[i], payloads[i] + lengths[i], 0))
            continue;
        /* the tape's way: the row taken back, the payload read whole (a
         * fault is reported as the object path reports it), then walked */
        fkc_tc_truncate(r->s, root, rows);
        size_t starts[2];
        b->tape.len = 0;
        if (fkc_pb_decode_many(r->p->code, r->p->code_len, payloads + i, lengths + i, 1, &b->tape, starts,
                               read_err) < 1) {
            if (read_err->nomem) {
                fkc_tc_fail(r->s, FKC_TC_NOMEM, 0, "protobuf tape", "out of memory");
                return FKC_TC_NOMEM;
            }
            read_err->index = i;
            return FKC_PA_READ;
        }
        if (!pa_tape_rows(r, &b->tape, starts, payloads + i, 1, index))
            return err->kind;
    }
    r->top = 0;
    fkc_tc_chunk_done(r->s, count);
    return FKC_TC_OK;
}

void fkc_pb_arrow_discard(fkc_pb_arrow_builder *b)
{
    if (b == NULL)
        return;
    fkc_tc_discard(b->r.s);
    free(b->r.scratch);
    po_tree_free(&b->inorder);
    fkc_pb_tape_free(&b->tape);
    free(b);
}

int fkc_pb_arrow_finish(fkc_pb_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                        fkc_tc_error *err)
{
    int rc = fkc_tc_finish(b->r.s, out_array, out_schema, err); /* frees the columns, exported or not */
    free(b->r.scratch);
    po_tree_free(&b->inorder);
    fkc_pb_tape_free(&b->tape);
    free(b);
    return rc;
}
