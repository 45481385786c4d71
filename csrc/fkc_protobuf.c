/* fkc_protobuf.c — the Protobuf program interpreter; see fkc_protobuf.h. */
#include "fkc_protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_grow.h"
#include "fkc_protobuf_read.h"
#include "fkc_records.h" /* fkc_utf8_valid: UTF-8 as Python's strict decoder takes it */

static const char *const KIND_NAME[19] = {
    [FKC_PB_DOUBLE] = "double",     [FKC_PB_FLOAT] = "float",       [FKC_PB_INT64] = "int64",
    [FKC_PB_UINT64] = "uint64",     [FKC_PB_INT32] = "int32",       [FKC_PB_FIXED64] = "fixed64",
    [FKC_PB_FIXED32] = "fixed32",   [FKC_PB_BOOL] = "bool",         [FKC_PB_STRING] = "string",
    [FKC_PB_MESSAGE] = "message",   [FKC_PB_BYTES] = "bytes",       [FKC_PB_UINT32] = "uint32",
    [FKC_PB_ENUM] = "enum",         [FKC_PB_SFIXED32] = "sfixed32", [FKC_PB_SFIXED64] = "sfixed64",
    [FKC_PB_SINT32] = "sint32",     [FKC_PB_SINT64] = "sint64",
};

static const char *const LENGTH_WHAT[19] = {
    [FKC_PB_STRING] = "string length",
    [FKC_PB_MESSAGE] = "message length",
    [FKC_PB_BYTES] = "bytes length",
};

static int kind_ok(int32_t k)
{
    return k >= 1 && k <= 18 && k != 10;
}

/* ------------------------------------------------------------------------ */
/* Program check: run once per program (the bridge checks at construction). */

/* [pc, pc + words) inside [lo, n): sizes compared, never pc + words summed
 * past n. */
static int span_ok(size_t lo, size_t n, int64_t pc, size_t words)
{
    return pc >= (int64_t)lo && (uint64_t)pc <= n && words <= n - (size_t)pc;
}

int fkc_pb_check_program(const int32_t *code, size_t n)
{
    if (n < FKC_PB_HEADER || n > 0x7FFFFFFF || code[0] != FKC_PB_MAGIC)
        return 0;
    int32_t nmsgs = code[1], root = code[2], depth = code[3], nenums = code[4];
    if (nmsgs < 1 || root < 0 || root >= nmsgs || depth < 1 || depth > 1000 || nenums < 0)
        return 0;
    size_t body = FKC_PB_HEADER + (size_t)nmsgs + (size_t)nenums;
    if (body > n)
        return 0;
    for (int32_t m = 0; m < nmsgs; m++) {
        int64_t pc = code[FKC_PB_HEADER + m];
        if (!span_ok(body, n, pc, FKC_PB_MSG_HEAD))
            return 0;
        const int32_t *msg = code + pc;
        int32_t nfields = msg[0], dense = msg[1];
        if (nfields < 0 || dense < 0 || dense > 65536 || (msg[2] & ~FKC_PB_M_MAP_ENTRY) != 0)
            return 0;
        if (!span_ok(body, n, pc, FKC_PB_MSG_HEAD + (size_t)dense + (size_t)nfields * FKC_PB_FIELD_WIDTH))
            return 0;
        const int32_t *slots = msg + FKC_PB_MSG_HEAD;
        const int32_t *fields = slots + dense;
        for (int32_t i = 0; i < dense; i++) {
            int32_t s = slots[i];
            if (s != -1 && (s < 0 || s >= nfields || fields[s * FKC_PB_FIELD_WIDTH] != i))
                return 0;
        }
        for (int32_t s = 0; s < nfields; s++) {
            const int32_t *f = fields + s * FKC_PB_FIELD_WIDTH;
            int32_t number = f[0], kind = f[1], flags = f[2], oneof = f[3], ref = f[4];
            if (number < 1 || number > FKC_PB_MAX_FIELD_NUMBER || (s > 0 && number <= f[0 - FKC_PB_FIELD_WIDTH]))
                return 0;
            if (number < dense && slots[number] != s)
                return 0;
            if (!kind_ok(kind) || (flags & ~15) != 0 || oneof < -1)
                return 0;
            if ((flags & FKC_PB_F_PACKABLE) && (!(flags & FKC_PB_F_REPEATED) || FKC_PB_WIRE_OF[kind] == 2))
                return 0;
            if (kind == FKC_PB_MESSAGE) {
                if (ref < 0 || ref >= nmsgs || (flags & FKC_PB_F_CLOSED_ENUM))
                    return 0;
            } else if (flags & FKC_PB_F_CLOSED_ENUM) {
                if (kind != FKC_PB_ENUM || ref < 0 || ref >= nenums)
                    return 0;
            } else if (ref != -1) {
                return 0;
            }
        }
    }
    for (int32_t e = 0; e < nenums; e++) {
        int64_t pc = code[FKC_PB_HEADER + nmsgs + e];
        if (!span_ok(body, n, pc, 1) || code[pc] < 0 || !span_ok(body, n, pc, 1 + (size_t)code[pc]))
            return 0;
        for (int32_t i = 1; i < code[pc]; i++)
            if (code[pc + 1 + i] <= code[pc + i])
                return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The interpreter. */

typedef struct pb_run {
    const int32_t *code;
    const uint8_t *base; /* the payload's first byte: offsets are from here */
    const uint8_t *p;    /* next byte to read */
    const uint8_t *end;  /* the innermost length-delimited limit */
    fkc_pb_tape *tape;
    int64_t *w;     /* the tape's next word */
    int64_t *w_end; /* the end of the tape's room (the checked read tests it) */
    int32_t max_depth;
    int dropped;        /* the message just read had unknown fields of its own (a closed
                           enum's unknown number included): a map entry is then dropped */
    int failed;
    int nomem;
    const char *what;
    const char *problem;
    size_t fail_pos;
} pb_run;

/* The single error exit: the first failure is kept, reported at `at`. */
static int fail_at(pb_run *r, const uint8_t *at, const char *what, const char *problem)
{
    if (!r->failed) {
        r->failed = 1;
        r->what = what;
        r->problem = problem;
        r->fail_pos = (size_t)(at - r->base);
    }
    return 0;
}

/* The most words reserved before a payload (see tape_room). */
static inline size_t reserve_ceiling(const fkc_pb_tape *t)
{
    size_t ceiling = t->reserve_words ? t->reserve_words : FKC_PB_RESERVE_WORDS;
    return ceiling < FKC_PB_FRAME ? FKC_PB_FRAME : ceiling;
}

/* Room for `more` words past the first `used` of the tape, which grows by
 * doubling; the cursor is set to word `used` of the (maybe moved) tape. A
 * checked read holds offsets into the tape, never pointers, across a call
 * that may grow it (mark_of/at_mark). */
static int tape_reserve(pb_run *r, size_t used, size_t more)
{
    fkc_pb_tape *t = r->tape;
    if (t->cap - used < more) {
        /* a new tape starts at 256 words, or at the ceiling where a test
         * lowered it below (so that its small payloads make the tape grow) */
        size_t ceiling = reserve_ceiling(t);
        int64_t *v = fkc_grow_by(t->v, &t->cap, used, more, sizeof *v, ceiling < 256 ? ceiling : 256);
        if (v == NULL) {
            r->nomem = r->failed = 1;
            return 0;
        }
        t->v = v;
    }
    r->w = t->v + used;
    r->w_end = t->v + t->cap;
    return 1;
}

/* Room on the tape for a payload of `len` bytes, reserved before it is
 * read so that, for all but large payloads, no value checks capacity. Words
 * per payload byte are at most 2: every entry is at least 2 bytes on the
 * wire (a tag and a one-byte value, length or packed element) and at most
 * 2 words per such pair (a varint or fixed entry: slot, value; a string:
 * slot, offset, length over a tag and a length byte; a sub-message: slot
 * and a 3-word frame head over a tag and a length byte; a packed element:
 * slot, value per byte at least), plus the payload's own frame head.
 * Unknown fields and dropped values write nothing.
 * tests/fuzz/fuzz_protobuf.c checks every payload's words against the bound.
 *
 * The bound is loose where values are long (a 64 MiB string is 3 words, its
 * bound 1 GiB of tape), so it is reserved only up to the tape's
 * reserve_words (FKC_PB_RESERVE_WORDS). A payload whose bound is larger is
 * read checked: the field loop makes room for a field's words
 * (FIELD_WORDS) before each field, a packed run before each element, and
 * the tape grows with what is read. */
static int tape_room(pb_run *r, size_t len, int *checked)
{
    size_t ceiling = reserve_ceiling(r->tape);
    size_t bound = len <= (SIZE_MAX - FKC_PB_FRAME) / 2 ? 2 * len + FKC_PB_FRAME : SIZE_MAX;
    *checked = bound > ceiling;
    return tape_reserve(r, r->tape->len, *checked ? ceiling : bound);
}

/* The most words one field's entry writes at its own level: a
 * sub-message's slot and frame head (its fields make their own room). */
#define FIELD_WORDS (1 + FKC_PB_FRAME)

/* A place on the tape to come back to: a pointer in a reserved read (the
 * tape does not move), the word's offset in a checked one. */
typedef union {
    int64_t *at;
    size_t offset;
} tape_mark;

static inline __attribute__((always_inline)) tape_mark mark_of(const pb_run *r, const int checked)
{
    tape_mark m;
    if (checked)
        m.offset = (size_t)(r->w - r->tape->v);
    else
        m.at = r->w;
    return m;
}

static inline __attribute__((always_inline)) int64_t *at_mark(const pb_run *r, tape_mark m, const int checked)
{
    return checked ? r->tape->v + m.offset : m.at;
}

/* In a checked read, room for `words` more; a constant 0 for `checked`
 * compiles it away (the reserved read). */
static inline __attribute__((always_inline)) int room(pb_run *r, size_t words, const int checked)
{
    if (!checked || (size_t)(r->w_end - r->w) >= words)
        return 1;
    return tape_reserve(r, (size_t)(r->w - r->tape->v), words);
}

static inline void tape_push(pb_run *r, int64_t x)
{
    *r->w++ = x; /* room made by tape_room() or room() */
}

/* A varint (fkc_pb_read_varint); fails at its first byte without moving. */
static inline int rd_varint(pb_run *r, uint64_t *out, const char *what)
{
    int rc = fkc_pb_read_varint(&r->p, r->end, out);
    if (rc == FKC_PB_VARINT_OK)
        return 1;
    return fail_at(r, r->p, what, rc == FKC_PB_VARINT_TRUNCATED ? "truncated" : "over-long varint");
}

static inline int rd_fixed(pb_run *r, size_t width, uint64_t *out, const char *what)
{
    if (!fkc_pb_read_fixed(&r->p, r->end, width, out))
        return fail_at(r, r->p, what, "truncated");
    return 1;
}

/* A length prefix, checked against the bytes left in the innermost limit. */
static inline int rd_length(pb_run *r, const char *what, size_t *len)
{
    const uint8_t *at = r->p;
    uint64_t n;
    if (!rd_varint(r, &n, what))
        return 0;
    if (n > (uint64_t)(r->end - r->p))
        return fail_at(r, at, what, "past the end");
    *len = (size_t)n;
    return 1;
}

/* A tag: field number 1 .. 2^29-1 and a wire type that exists; 4 (end
 * group) is returned for the group skipper to judge. */
static inline int rd_tag(pb_run *r, uint32_t *num, uint32_t *wt)
{
    const uint8_t *at = r->p;
    uint64_t tag;
    if (!rd_varint(r, &tag, "tag"))
        return 0;
    const char *problem = fkc_pb_tag_problem(tag);
    if (problem != NULL)
        return fail_at(r, at, "tag", problem);
    *num = (uint32_t)(tag >> 3);
    *wt = (uint32_t)(tag & 7);
    return 1;
}

/* Skip the value of an unknown field (or a known one with a wire type it
 * cannot have). A group (wire type 3) is skipped to its matching end group,
 * one nesting level deeper. */
static int skip_value(pb_run *r, uint32_t num, uint32_t wt, int32_t depth)
{
    uint64_t v;
    size_t len;
    switch (wt) {
    case 0:
        return rd_varint(r, &v, "unknown varint");
    case 1:
        return rd_fixed(r, 8, &v, "unknown fixed64");
    case 5:
        return rd_fixed(r, 4, &v, "unknown fixed32");
    case 2:
        if (!rd_length(r, "unknown length", &len))
            return 0;
        r->p += len;
        return 1;
    case 3: {
        if (depth + 1 > r->max_depth)
            return fail_at(r, r->p, "group", "nesting too deep");
        for (;;) {
            if (r->p >= r->end)
                return fail_at(r, r->p, "group", "truncated");
            const uint8_t *at = r->p;
            uint32_t n2, w2;
            if (!rd_tag(r, &n2, &w2))
                return 0;
            if (w2 == 4) {
                if (n2 != num)
                    return fail_at(r, at, "end group", "mismatched field number");
                return 1;
            }
            if (!skip_value(r, n2, w2, depth + 1))
                return 0;
        }
    }
    default: /* 4: never passed (message_body() and the group loop take it first) */
        return fail_at(r, r->p, "tag", "unexpected end group");
    }
}

/* The two reads of a message: with the payload's room reserved, and
 * checked (see tape_room). One body, message_body, compiled twice. */
static int message_reserved(pb_run *r, int32_t m, int32_t depth);
static int message_checked(pb_run *r, int32_t m, int32_t depth);

/* One known value with its own wire type onto the tape (slot, value...).
 * Returns 1 when read; *emitted says whether it went on the tape (a closed
 * enum's unknown number does not). Inlined into the field loop: a call per
 * value cost as much as reading it. */
static inline __attribute__((always_inline)) int one_value(pb_run *r, const int32_t *f, int32_t slot,
                                                             int32_t depth, int *emitted, const int checked)
{
    int32_t kind = f[1];
    uint64_t v;
    *emitted = 1;
    switch (FKC_PB_WIRE_OF[kind]) {
    case 0: {
        if (!rd_varint(r, &v, KIND_NAME[kind]))
            return 0;
        int64_t x = fkc_pb_norm_varint(kind, v);
        if ((f[2] & FKC_PB_F_CLOSED_ENUM) && !fkc_pb_enum_known(r->code, f[4], x)) {
            *emitted = 0;
            r->dropped = 1;
            return 1;
        }
        tape_push(r, slot);
        tape_push(r, x);
        return 1;
    }
    case 1:
    case 5:
        if (!rd_fixed(r, FKC_PB_WIRE_OF[kind] == 1 ? 8 : 4, &v, KIND_NAME[kind]))
            return 0;
        tape_push(r, slot);
        tape_push(r, fkc_pb_norm_fixed(kind, v));
        return 1;
    default: {
        size_t len;
        if (!rd_length(r, LENGTH_WHAT[kind], &len))
            return 0;
        const uint8_t *body = r->p;
        if (kind != FKC_PB_MESSAGE) {
            if (kind == FKC_PB_STRING && !fkc_utf8_valid(body, len))
                return fail_at(r, body, "string", "invalid UTF-8");
            tape_push(r, slot);
            tape_push(r, (int64_t)(body - r->base));
            tape_push(r, (int64_t)len);
            r->p = body + len;
            return 1;
        }
        if (depth + 1 > r->max_depth)
            return fail_at(r, body, "message", "nesting too deep");
        tape_mark mark = mark_of(r, checked);
        tape_push(r, slot);
        const uint8_t *outer_end = r->end;
        r->end = body + len;
        int ok = checked ? message_checked(r, f[4], depth + 1) : message_reserved(r, f[4], depth + 1);
        r->end = outer_end;
        if (!ok)
            return 0;
        const int32_t *sub = r->code + r->code[FKC_PB_HEADER + f[4]];
        if (r->dropped && (sub[2] & FKC_PB_M_MAP_ENTRY)) {
            /* upb puts a map entry with unknown fields of its own (an unknown
             * number, a known one with a wrong wire type, a closed enum's
             * unknown value) in the parent's unknown fields whole: the entry
             * is not in the map */
            r->w = at_mark(r, mark, checked);
            *emitted = 0;
        }
        r->dropped = 0;
        return 1;
    }
    }
}

/* A packed run of a repeated scalar: each element its own entry. */
static inline __attribute__((always_inline)) int packed(pb_run *r, const int32_t *f, int32_t slot,
                                                          int64_t *count, const int checked)
{
    size_t len;
    if (!rd_length(r, "packed length", &len))
        return 0;
    const uint8_t *outer_end = r->end;
    r->end = r->p + len;
    int emitted;
    while (r->p < r->end) {
        if (!room(r, 2, checked) || !one_value(r, f, slot, 0, &emitted, checked)) {
            r->end = outer_end;
            return 0;
        }
        *count += emitted;
    }
    r->end = outer_end;
    return 1;
}

/* The fields of message `m` up to r->end, as one frame. Its head's room
 * was made before: by the payload's reservation, or with its field's. */
static inline __attribute__((always_inline)) int message_body(pb_run *r, int32_t m, int32_t depth,
                                                                const int checked)
{
    const int32_t *msg = r->code + r->code[FKC_PB_HEADER + m];
    const int32_t *fields = msg + FKC_PB_MSG_HEAD + msg[1];
    tape_mark frame = mark_of(r, checked);
    tape_push(r, 0);
    tape_push(r, 0);
    tape_push(r, (int64_t)(r->p - r->base));
    int64_t count = 0;
    int dropped = 0;
    while (r->p < r->end) {
        const uint8_t *at = r->p;
        uint32_t num, wt;
        if (!rd_tag(r, &num, &wt))
            return 0;
        if (wt == 4) /* only a group (skipped below) may end with one */
            return fail_at(r, at, "tag", "unexpected end group");
        if (!room(r, FIELD_WORDS, checked))
            return 0;
        int32_t slot = fkc_pb_find_slot(msg, num);
        if (slot >= 0) {
            const int32_t *f = fields + slot * FKC_PB_FIELD_WIDTH;
            if (wt == FKC_PB_WIRE_OF[f[1]]) {
                int emitted;
                r->dropped = 0;
                if (!one_value(r, f, slot, depth, &emitted, checked))
                    return 0;
                dropped |= r->dropped;
                count += emitted;
                continue;
            }
            if (wt == 2 && (f[2] & FKC_PB_F_PACKABLE)) {
                r->dropped = 0;
                if (!packed(r, f, slot, &count, checked))
                    return 0;
                dropped |= r->dropped;
                continue;
            }
        }
        if (!skip_value(r, num, wt, depth))
            return 0;
        dropped = 1; /* an unknown field: upb keeps a map entry holding one as unknown, dropping it from the map */
    }
    int64_t *head = at_mark(r, frame, checked);
    head[0] = count;
    head[1] = (int64_t)(r->w - head - FKC_PB_FRAME);
    r->dropped = dropped;
    return 1;
}

static int message_reserved(pb_run *r, int32_t m, int32_t depth)
{
    return message_body(r, m, depth, 0);
}

static int message_checked(pb_run *r, int32_t m, int32_t depth)
{
    return message_body(r, m, depth, 1);
}

size_t fkc_pb_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                          const size_t *lengths, size_t count, fkc_pb_tape *tape, size_t *starts,
                          fkc_pb_error *err)
{
    (void)code_len;
    pb_run r;
    r.code = code;
    r.tape = tape;
    r.max_depth = code[3];
    r.nomem = 0;
    for (size_t i = 0; i < count; i++) {
        starts[i] = tape->len;
        r.base = r.p = payloads[i];
        r.end = payloads[i] + lengths[i];
        r.failed = 0;
        r.dropped = 0;
        int checked;
        if (!tape_room(&r, lengths[i], &checked) ||
            !(checked ? message_checked(&r, code[2], 0) : message_reserved(&r, code[2], 0))) {
            err->index = i;
            err->nomem = r.nomem;
            err->offset = r.nomem ? 0 : r.fail_pos;
            err->what = r.nomem ? "tape" : r.what;
            err->problem = r.nomem ? "out of memory" : r.problem;
            return i;
        }
        tape->len = (size_t)(r.w - tape->v);
    }
    starts[count] = tape->len;
    return count;
}

void fkc_pb_tape_free(fkc_pb_tape *tape)
{
    free(tape->v);
    tape->v = NULL;
    tape->len = tape->cap = 0;
}
