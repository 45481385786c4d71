/* fkc_varint.c — strict varint decoding; see fkc_varint.h for the contract. */
#include "fkc_varint.h"

fkc_varint_status fkc_uvarint32_decode(const uint8_t *p, size_t avail, uint32_t *value, size_t *consumed)
{
    /* Fast path: one byte covers |v| < 64 after zigzag, the common case for
     * attributes, deltas and header counts. */
    if (avail >= 1 && p[0] < 0x80) {
        *value = p[0];
        *consumed = 1;
        return FKC_VARINT_OK;
    }
    uint32_t result = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i >= avail)
            return FKC_VARINT_TRUNCATED;
        uint8_t b = p[i];
        if (i == 4) {
            if (b & 0x80)
                return FKC_VARINT_OVERLONG;
            if (b > 0x0F)
                return FKC_VARINT_OVERFLOW;
        }
        result |= (uint32_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *value = result;
            *consumed = i + 1;
            return FKC_VARINT_OK;
        }
    }
    return FKC_VARINT_OVERLONG; /* not reached: i == 4 returns above */
}

fkc_varint_status fkc_uvarint64_decode(const uint8_t *p, size_t avail, uint64_t *value, size_t *consumed)
{
    if (avail >= 1 && p[0] < 0x80) {
        *value = p[0];
        *consumed = 1;
        return FKC_VARINT_OK;
    }
    uint64_t result = 0;
    for (size_t i = 0; i < 10; i++) {
        if (i >= avail)
            return FKC_VARINT_TRUNCATED;
        uint8_t b = p[i];
        if (i == 9) {
            if (b & 0x80)
                return FKC_VARINT_OVERLONG;
            if (b > 0x01)
                return FKC_VARINT_OVERFLOW;
        }
        result |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *value = result;
            *consumed = i + 1;
            return FKC_VARINT_OK;
        }
    }
    return FKC_VARINT_OVERLONG;
}

size_t fkc_uvarint32_encode(uint32_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t fkc_uvarint64_encode(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

const char *fkc_varint_problem(fkc_varint_status st)
{
    switch (st) {
    case FKC_VARINT_OK:
        return "ok";
    case FKC_VARINT_TRUNCATED:
        return "truncated";
    case FKC_VARINT_OVERLONG:
        return "over-long varint";
    case FKC_VARINT_OVERFLOW:
        return "varint overflows its width";
    }
    return "bad varint";
}
