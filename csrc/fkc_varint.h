/*
 * fkc_varint.h — strict Kafka varints (protobuf base-128, zigzag for signed).
 *
 * Contract
 *   - An int32 varint is at most 5 bytes, an int64 varlong at most 10. A
 *     continuation bit on the last allowed byte is "over-long" and rejected
 *     (as Java's ByteUtils does).
 *   - Bits that do not fit the width ("overflow": the 5th byte above 0x0F,
 *     the 10th byte above 0x01) are rejected too. Java silently truncates
 *     them; no conforming encoder emits them, so accepting them would only
 *     let a corrupt batch decode to invented numbers.
 *   - Redundant zero continuation bytes (0x80 0x00 for 0) are accepted, as
 *     Java accepts them.
 *   - On any failure nothing moves: the raw decoders return a status and do
 *     not write *consumed; the cursor readers leave pos where it was and make
 *     the cursor's error sticky with the reason.
 *   - The shift never reaches the width of the type (librdkafka's uncapped
 *     shift is undefined behaviour on hostile input).
 */
#ifndef FKC_VARINT_H
#define FKC_VARINT_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_cursor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fkc_varint_status {
    FKC_VARINT_OK = 0,
    FKC_VARINT_TRUNCATED = 1, /* input ended before the last byte */
    FKC_VARINT_OVERLONG = 2,  /* continuation bit on the last allowed byte */
    FKC_VARINT_OVERFLOW = 3   /* last allowed byte carries bits past the width */
} fkc_varint_status;

/* Unsigned base-128 decoders over [p, p+avail). On FKC_VARINT_OK, *value and
 * *consumed are set; otherwise neither is written. */
fkc_varint_status fkc_uvarint32_decode(const uint8_t *p, size_t avail, uint32_t *value, size_t *consumed);
fkc_varint_status fkc_uvarint64_decode(const uint8_t *p, size_t avail, uint64_t *value, size_t *consumed);

static inline int32_t fkc_zigzag32_decode(uint32_t n)
{
    return (int32_t)((n >> 1) ^ (~(n & 1u) + 1u));
}

static inline int64_t fkc_zigzag64_decode(uint64_t n)
{
    return (int64_t)((n >> 1) ^ (~(n & 1u) + 1u));
}

static inline uint32_t fkc_zigzag32_encode(int32_t v)
{
    return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

static inline uint64_t fkc_zigzag64_encode(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Encoders (used by tests and fuzz seeds). `out` must hold 5 / 10 bytes.
 * Return the number of bytes written. */
size_t fkc_uvarint32_encode(uint32_t v, uint8_t *out);
size_t fkc_uvarint64_encode(uint64_t v, uint8_t *out);

/* Human-readable reason for a status (static string). */
const char *fkc_varint_problem(fkc_varint_status st);

/* Cursor readers: zigzag-signed varint (int32) and varlong (int64), the forms
 * record batches use, plus the unsigned form (compact lengths in flexible
 * protocol versions). On failure: 0, cursor unmoved and failed with reason. */
static inline uint32_t fkc_read_uvarint(fkc_cursor *c, const char *what)
{
    uint32_t v;
    size_t n;
    if (c->failed)
        return 0;
    /* One or two bytes (values < 16384): most lengths and deltas; skip the call. */
    if (c->pos < c->end && *c->pos < 0x80)
        return *c->pos++;
    if (c->end - c->pos >= 2 && c->pos[1] < 0x80) {
        v = (uint32_t)(c->pos[0] & 0x7F) | ((uint32_t)c->pos[1] << 7);
        c->pos += 2;
        return v;
    }
    fkc_varint_status st = fkc_uvarint32_decode(c->pos, (size_t)(c->end - c->pos), &v, &n);
    if (st != FKC_VARINT_OK) {
        fkc_cursor_fail_because(c, what, fkc_varint_problem(st));
        return 0;
    }
    c->pos += n;
    return v;
}

static inline int32_t fkc_read_varint(fkc_cursor *c, const char *what)
{
    return fkc_zigzag32_decode(fkc_read_uvarint(c, what));
}

static inline uint64_t fkc_read_uvarlong(fkc_cursor *c, const char *what)
{
    uint64_t v;
    size_t n;
    if (c->failed)
        return 0;
    if (c->pos < c->end && *c->pos < 0x80)
        return *c->pos++;
    if (c->end - c->pos >= 2 && c->pos[1] < 0x80) {
        v = (uint64_t)(c->pos[0] & 0x7F) | ((uint64_t)c->pos[1] << 7);
        c->pos += 2;
        return v;
    }
    fkc_varint_status st = fkc_uvarint64_decode(c->pos, (size_t)(c->end - c->pos), &v, &n);
    if (st != FKC_VARINT_OK) {
        fkc_cursor_fail_because(c, what, fkc_varint_problem(st));
        return 0;
    }
    c->pos += n;
    return v;
}

static inline int64_t fkc_read_varlong(fkc_cursor *c, const char *what)
{
    return fkc_zigzag64_decode(fkc_read_uvarlong(c, what));
}

#ifdef __cplusplus
}
#endif

#endif /* FKC_VARINT_H */
