/*
 * fkc_protobuf_read.h — the wire reads of a Protobuf payload, shared by the
 * two readers of a compiled program: the tape writer (fkc_protobuf.c, for
 * the dict builder and the Arrow path's fallback) and the in-order Arrow
 * reader (fkc_protobuf_arrow.c). Both decode a varint, a fixed value, a tag
 * and a field number's slot with these, so neither can take bytes the
 * other would read differently.
 *
 * Contract
 *   - Pure: a read advances *pp only on success and never past `end`; what
 *     a failure means (and where it is reported) is the caller's. The tape
 *     writer turns a failure into its error words; the in-order reader
 *     hands the payload to the tape writer, which then reports it.
 *   - Wire rules are upb's (see fkc_protobuf.h).
 *   - Inline: both readers call these once per field or value, where a call
 *     cost as much as the read.
 */
#ifndef FKC_PROTOBUF_READ_H
#define FKC_PROTOBUF_READ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fkc_protobuf.h"

#define FKC_PB_INLINE static inline __attribute__((always_inline))

#define FKC_PB_MAX_FIELD_NUMBER 536870911 /* 2^29 - 1 */

/* the wire type each kind is written with; 0 for kinds that do not exist */
static const uint8_t FKC_PB_WIRE_OF[19] = {
    [FKC_PB_DOUBLE] = 1, [FKC_PB_FLOAT] = 5,    [FKC_PB_INT64] = 0,    [FKC_PB_UINT64] = 0,   [FKC_PB_INT32] = 0,
    [FKC_PB_FIXED64] = 1, [FKC_PB_FIXED32] = 5, [FKC_PB_BOOL] = 0,     [FKC_PB_STRING] = 2,   [FKC_PB_MESSAGE] = 2,
    [FKC_PB_BYTES] = 2,  [FKC_PB_UINT32] = 0,   [FKC_PB_ENUM] = 0,     [FKC_PB_SFIXED32] = 5, [FKC_PB_SFIXED64] = 1,
    [FKC_PB_SINT32] = 0, [FKC_PB_SINT64] = 0,
};

/* Results of fkc_pb_read_varint. */
enum { FKC_PB_VARINT_OVERLONG = -1, FKC_PB_VARINT_TRUNCATED = 0, FKC_PB_VARINT_OK = 1 };

/* A varint of at most 10 bytes as upb reads it: non-minimal encodings are
 * fine, bits past 64 are dropped (the 10th byte's shift keeps its low bit
 * only), a 10th byte with its continuation bit set is over-long. */
FKC_PB_INLINE int fkc_pb_read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    size_t avail = (size_t)(end - p);
    if (avail > 0 && p[0] < 0x80) {
        *out = p[0];
        *pp = p + 1;
        return FKC_PB_VARINT_OK;
    }
    uint64_t v = 0;
    /* the loop's own bound is the bounds test: no second test a byte */
    size_t limit = avail < 10 ? avail : 10;
    for (size_t i = 0; i < limit; i++) {
        uint64_t b = p[i];
        v |= (b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            *pp = p + i + 1;
            return FKC_PB_VARINT_OK;
        }
    }
    return limit < 10 ? FKC_PB_VARINT_TRUNCATED : FKC_PB_VARINT_OVERLONG;
}

/* A little-endian value of 4 or 8 bytes (4: zero-extended); 0 when fewer
 * bytes are left. */
FKC_PB_INLINE int fkc_pb_read_fixed(const uint8_t **pp, const uint8_t *end, size_t width, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (width > (size_t)(end - p))
        return 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* little-endian on the wire, as in memory here: one load */
    if (width == 8) {
        memcpy(out, p, 8);
    } else {
        uint32_t low;
        memcpy(&low, p, 4);
        *out = low;
    }
#else
    uint64_t bits = 0;
    for (size_t i = width; i-- > 0;)
        bits = (bits << 8) | p[i];
    *out = bits;
#endif
    *pp = p + width;
    return 1;
}

/* What is wrong with a tag's value (NULL: nothing): a field number of
 * 1 .. 2^29-1 and a wire type that exists. Wire type 4 (end group) passes,
 * for the caller to judge. */
FKC_PB_INLINE const char *fkc_pb_tag_problem(uint64_t tag)
{
    if (tag > UINT32_MAX)
        return "field number out of range";
    if ((tag >> 3) == 0)
        return "field number 0";
    if ((tag & 7) > 5)
        return "invalid wire type";
    return NULL;
}

/* A varint kind's wire value as the tape holds it (and the columns take it). */
FKC_PB_INLINE int64_t fkc_pb_norm_varint(int32_t kind, uint64_t v)
{
    switch (kind) {
    case FKC_PB_INT32:
    case FKC_PB_ENUM:
        return (int64_t)(int32_t)(uint32_t)v;
    case FKC_PB_UINT32:
        return (int64_t)(uint32_t)v;
    case FKC_PB_SINT32: {
        uint32_t u = (uint32_t)v;
        return (int64_t)(int32_t)((u >> 1) ^ (0u - (u & 1u)));
    }
    case FKC_PB_SINT64:
        return (int64_t)((v >> 1) ^ (0u - (v & 1u)));
    case FKC_PB_BOOL:
        return v != 0;
    default: /* int64, uint64: the bits */
        return (int64_t)v;
    }
}

FKC_PB_INLINE int64_t fkc_pb_norm_fixed(int32_t kind, uint64_t bits)
{
    if (kind == FKC_PB_SFIXED32)
        return (int64_t)(int32_t)(uint32_t)bits;
    return (int64_t)bits; /* fixed32, float: the low 32 bits, zero-extended; the 64-bit kinds: the bits */
}

/* The program words of message m. */
FKC_PB_INLINE const int32_t *fkc_pb_message(const int32_t *code, int64_t m)
{
    return code + code[FKC_PB_HEADER + m];
}

/* The slot of field `num` in a message's program words, -1 when it has none. */
FKC_PB_INLINE int32_t fkc_pb_find_slot(const int32_t *msg, uint32_t num)
{
    int32_t nfields = msg[0], dense = msg[1];
    const int32_t *slots = msg + FKC_PB_MSG_HEAD;
    if (num < (uint32_t)dense)
        return slots[num];
    const int32_t *fields = slots + dense;
    int32_t lo = 0, hi = nfields;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)fields[mid * FKC_PB_FIELD_WIDTH] < num)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nfields && (uint32_t)fields[lo * FKC_PB_FIELD_WIDTH] == num ? lo : -1;
}

/* 1 when `v` is one of closed enum `ref`'s numbers (sorted: binary search). */
static inline int fkc_pb_enum_known(const int32_t *code, int32_t ref, int64_t v)
{
    const int32_t *e = code + code[FKC_PB_HEADER + code[1] + ref];
    int32_t lo = 0, hi = e[0];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (e[1 + mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e[0] && e[1 + lo] == v;
}

#endif /* FKC_PROTOBUF_READ_H */
