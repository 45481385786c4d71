/*
 * fkc_avro_read.h — reading one Avro value's bytes, shared by the two walkers
 * of a compiled program: the tape writer (fkc_avro.c, for the object
 * builder) and the Arrow columns writer (fkc_avro_arrow.c). Both read the
 * same bytes with the same checks and fail with the same words, so the two
 * outputs of a payload can never disagree on what is in it.
 *
 * Contract
 *   - Everything goes through the fkc_cursor idiom; the first failure is
 *     kept in the cursor (what, problem, byte offset) and the function
 *     returns 0. fkc_avro_fail_at() reports a value already read at its
 *     first byte.
 *   - A scalar's words are the tape's (fkc_avro.h): the value, the IEEE bits,
 *     a blob's offset and length, a fixed's offset.
 *   - Inline: both walkers call these in their record loops, where a call
 *     per field cost as much as the read.
 */
#ifndef FKC_AVRO_READ_H
#define FKC_AVRO_READ_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_avro.h"
#include "fkc_cursor.h"
#include "fkc_records.h" /* fkc_utf8_valid: UTF-8 as Python's strict decoder takes it */
#include "fkc_varint.h"

#define FKC_AVRO_INLINE static inline __attribute__((always_inline))

static const char *const FKC_AVRO_LENGTH_WHAT[] = {[FKC_AVRO_BYTES] = "bytes length",
                                                   [FKC_AVRO_STRING] = "string length"};
static const char *const FKC_AVRO_VALUE_WHAT[] = {
    [FKC_AVRO_NULL] = "null",     [FKC_AVRO_BOOLEAN] = "boolean", [FKC_AVRO_INT] = "int",
    [FKC_AVRO_LONG] = "long",     [FKC_AVRO_FLOAT] = "float",     [FKC_AVRO_DOUBLE] = "double",
    [FKC_AVRO_BYTES] = "bytes",   [FKC_AVRO_STRING] = "string",   [FKC_AVRO_FIXED] = "fixed",
};

/* A failure about a value already read (its range, its mapping): reported
 * at `at`, the value's first byte. Always 0. */
static inline int fkc_avro_fail_at(fkc_cursor *c, size_t at, const char *what, const char *problem)
{
    if (!c->failed) {
        c->failed = 1;
        c->what = what;
        c->problem = problem;
        c->fail_pos = at;
    }
    return 0;
}

/* A length-prefixed run of bytes (bytes, string, a map key): its offset and
 * length, checked against what is left before anything uses it. */
FKC_AVRO_INLINE int fkc_avro_read_blob(fkc_cursor *c, const char *len_what, const char *what, int utf8, size_t *off,
                                       size_t *len)
{
    size_t at = fkc_cursor_tell(c);
    int64_t n = fkc_read_varlong(c, len_what);
    if (c->failed)
        return 0;
    if (n < 0)
        return fkc_avro_fail_at(c, at, len_what, "negative length");
    *off = fkc_cursor_tell(c);
    const uint8_t *p = fkc_read_bytes(c, (size_t)n, what);
    if (p == NULL)
        return 0;
    if (utf8 && !fkc_utf8_valid(p, (size_t)n))
        return fkc_avro_fail_at(c, *off, what, "invalid UTF-8");
    *len = (size_t)n;
    return 1;
}

/* The scalar of program op `op` (FKC_AVRO_OP_SCALAR) into w[0..) as the tape
 * holds it (a writer's logical offset excluded: the caller has it); returns
 * how many words (0, 1 or 2), or -1 with the cursor failed. `utf8`: a string
 * is checked (every reader of it but a skip). */
FKC_AVRO_INLINE int fkc_avro_read_scalar(fkc_cursor *c, const int32_t *op, int utf8, int64_t *w)
{
    int32_t wire = op[1];
    const char *what = FKC_AVRO_VALUE_WHAT[wire];
    switch (wire) {
    case FKC_AVRO_NULL:
        return 0;
    case FKC_AVRO_BOOLEAN: {
        size_t at = fkc_cursor_tell(c);
        uint8_t b = fkc_read_u8(c, what);
        if (c->failed)
            return -1;
        if (b > 1) {
            fkc_avro_fail_at(c, at, what, "invalid boolean");
            return -1;
        }
        w[0] = b;
        return 1;
    }
    case FKC_AVRO_INT: {
        int32_t v = fkc_read_varint(c, what);
        if (c->failed)
            return -1;
        w[0] = v;
        return 1;
    }
    case FKC_AVRO_LONG: {
        int64_t v = fkc_read_varlong(c, what);
        if (c->failed)
            return -1;
        w[0] = v;
        return 1;
    }
    case FKC_AVRO_FLOAT:
    case FKC_AVRO_DOUBLE: {
        size_t width = wire == FKC_AVRO_FLOAT ? 4 : 8;
        const uint8_t *p = fkc_read_bytes(c, width, what);
        if (p == NULL)
            return -1;
        uint64_t bits = 0;
        for (size_t i = width; i-- > 0;) /* little-endian on the wire */
            bits = (bits << 8) | p[i];
        w[0] = (int64_t)bits;
        return 1;
    }
    case FKC_AVRO_BYTES:
    case FKC_AVRO_STRING: {
        size_t off, len;
        if (!fkc_avro_read_blob(c, FKC_AVRO_LENGTH_WHAT[wire], what, utf8 && op[2] == FKC_AVRO_STRING, &off, &len))
            return -1;
        w[0] = (int64_t)off;
        w[1] = (int64_t)len;
        return 2;
    }
    default: { /* FKC_AVRO_FIXED */
        size_t at = fkc_cursor_tell(c);
        if (!fkc_skip(c, (size_t)op[4], what))
            return -1;
        w[0] = (int64_t)at;
        return 1;
    }
    }
}

/* An enum's writer index or a union's writer branch (`wide`: a long on the
 * wire, else an int): in range of op's n choices, and one the reader
 * resolved (op[2 + 2 * i] >= 0), else `missing_what` with `missing`. */
FKC_AVRO_INLINE int fkc_avro_read_choice(fkc_cursor *c, const int32_t *op, int wide, const char *what,
                                         const char *missing_what, const char *missing, int32_t *choice)
{
    size_t at = fkc_cursor_tell(c);
    int64_t i = wide ? fkc_read_varlong(c, what) : fkc_read_varint(c, what);
    if (c->failed)
        return 0;
    if (i < 0 || i >= op[1])
        return fkc_avro_fail_at(c, at, what, "index out of range");
    if (op[2 + 2 * i] < 0)
        return fkc_avro_fail_at(c, at, missing_what, missing);
    *choice = (int32_t)i;
    return 1;
}

FKC_AVRO_INLINE int fkc_avro_read_enum(fkc_cursor *c, const int32_t *op, int32_t *index)
{
    return fkc_avro_read_choice(c, op, 0, "enum index", "enum symbol", "not in the reader's symbols", index);
}

FKC_AVRO_INLINE int fkc_avro_read_branch(fkc_cursor *c, const int32_t *op, int32_t *branch)
{
    return fkc_avro_read_choice(c, op, 1, "union branch", "union branch", "no match in the reader's schema", branch);
}

/* The next block header of an array or map (op): *count items follow (0:
 * the end). A count cannot claim more items than the bytes left hold (items
 * of at least one byte), or, for items that take no bytes, more than the
 * payload's budget of such values (`empty_budget`, spent here). */
FKC_AVRO_INLINE int fkc_avro_read_block(fkc_cursor *c, const int32_t *op, int is_map, int64_t *empty_budget,
                                        int64_t *count)
{
    const char *count_what = is_map ? "map block count" : "array block count";
    size_t at = fkc_cursor_tell(c);
    int64_t n = fkc_read_varlong(c, count_what);
    if (c->failed)
        return 0;
    if (n == 0) {
        *count = 0;
        return 1;
    }
    if (n < 0) {
        const char *size_what = is_map ? "map block size" : "array block size";
        if (n == INT64_MIN)
            return fkc_avro_fail_at(c, at, count_what, "count out of range");
        n = -n;
        size_t size_at = fkc_cursor_tell(c);
        int64_t size = fkc_read_varlong(c, size_what);
        if (c->failed)
            return 0;
        if (size < 0)
            return fkc_avro_fail_at(c, size_at, size_what, "negative length");
        if ((uint64_t)size > fkc_cursor_remaining(c))
            return fkc_avro_fail_at(c, size_at, size_what, "past the end");
    }
    /* a map item is at least its key's length byte */
    uint64_t min_item = (uint64_t)op[2] + (is_map ? 1u : 0u);
    if (min_item > 0) {
        if ((uint64_t)n > fkc_cursor_remaining(c) / min_item)
            return fkc_avro_fail_at(c, at, count_what, "more items than bytes left");
    } else {
        int64_t weight = op[3]; /* values of no bytes per item, >= 1 */
        if (n > *empty_budget / weight)
            return fkc_avro_fail_at(c, at, count_what, "too many items");
        *empty_budget -= n * weight;
    }
    *count = n;
    return 1;
}

/* A map item's key (a string). */
FKC_AVRO_INLINE int fkc_avro_read_key(fkc_cursor *c, int utf8, size_t *off, size_t *len)
{
    return fkc_avro_read_blob(c, "map key length", "map key", utf8, off, len);
}

/* Whether a value of op may nest at `depth` (scalars and enums always may). */
FKC_AVRO_INLINE int fkc_avro_nest(fkc_cursor *c, const int32_t *op, int32_t depth, int32_t max_depth)
{
    static const char *const names[] = {[FKC_AVRO_OP_ARRAY] = "array", [FKC_AVRO_OP_MAP] = "map",
                                        [FKC_AVRO_OP_UNION] = "union", [FKC_AVRO_OP_RECORD] = "record"};
    if (op[0] == FKC_AVRO_OP_SCALAR || op[0] == FKC_AVRO_OP_ENUM || depth < max_depth)
        return 1;
    return fkc_avro_fail_at(c, fkc_cursor_tell(c), names[op[0]], "nesting too deep");
}

/* Read past one value of the program op at `pc` (a writer field the reader
 * skips), with the same checks as reading it, at nesting `depth`. */
int fkc_avro_skip_value(const int32_t *code, int32_t pc, fkc_cursor *c, int32_t depth, int64_t *empty_budget);

#endif /* FKC_AVRO_READ_H */
