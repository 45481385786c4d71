/* fkc_arrow.c — Arrow column filling; see fkc_arrow.h. */
#include "fkc_arrow.h"

#include <string.h>

int fkc_arrow_fits(const fkc_decode_result *r, size_t topic_len)
{
    const uint64_t limit = INT32_MAX;
    uint64_t n = r->count;
    if (n > limit || r->key_bytes > limit || r->value_bytes > limit || r->header_count > limit ||
        r->header_key_bytes > limit || r->header_value_bytes > limit)
        return 0;
    if (topic_len && n > limit / topic_len)
        return 0;
    return 1;
}

static inline void fkc_bit_clear(uint8_t *bitmap, size_t i)
{
    bitmap[i >> 3] = (uint8_t)(bitmap[i >> 3] & ~(1u << (i & 7)));
}

/* Nulls are the exception (a null key or value, a record without headers or
 * timestamp): a bitmap starts all valid and only nulls touch it, instead of a
 * read-modify-write per record and column. Bits past n stay 0 (Arrow leaves
 * padding unspecified; zero keeps buffers deterministic). */
static void fkc_bitmap_all_valid(uint8_t *bitmap, size_t n)
{
    memset(bitmap, 0xFF, n / 8);
    if (n % 8)
        bitmap[n / 8] = (uint8_t)((1u << (n % 8)) - 1u);
}

void fkc_arrow_fill(const fkc_decode_result *r, const uint8_t *topic, size_t topic_len, int32_t partition,
                    fkc_arrow_columns *c)
{
    size_t n = r->count;
    fkc_bitmap_all_valid(c->key_validity, n);
    fkc_bitmap_all_valid(c->value_validity, n);
    fkc_bitmap_all_valid(c->timestamp_validity, n);
    /* Most records carry no headers: that bitmap starts all null instead. */
    memset(c->headers_validity, 0, fkc_bitmap_bytes(n));
    fkc_bitmap_all_valid(c->hvalue_validity, (size_t)r->header_count);
    c->key_nulls = c->value_nulls = c->timestamp_nulls = c->headers_nulls = c->hvalue_nulls = 0;

    /* Offsets are accumulated in size_t and stored as int32: fkc_arrow_fits()
     * was checked by the caller, so every total is <= INT32_MAX. */
    size_t key_pos = 0, value_pos = 0, topic_pos = 0, header_pos = 0, hkey_pos = 0, hvalue_pos = 0;
    c->key_offsets[0] = 0;
    c->value_offsets[0] = 0;
    c->topic_offsets[0] = 0;
    c->headers_offsets[0] = 0;
    c->hkey_offsets[0] = 0;
    c->hvalue_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const fkc_record *rec = &r->records[i];
        if (rec->key_len >= 0) {
            memcpy(c->key_data + key_pos, rec->key, (size_t)rec->key_len);
            key_pos += (size_t)rec->key_len;
        } else {
            fkc_bit_clear(c->key_validity, i);
            c->key_nulls++;
        }
        c->key_offsets[i + 1] = (int32_t)key_pos;
        if (rec->value_len >= 0) {
            memcpy(c->value_data + value_pos, rec->value, (size_t)rec->value_len);
            value_pos += (size_t)rec->value_len;
        } else {
            fkc_bit_clear(c->value_validity, i);
            c->value_nulls++;
        }
        c->value_offsets[i + 1] = (int32_t)value_pos;
        topic_pos += topic_len; /* the bytes are written once, after the loop */
        c->topic_offsets[i + 1] = (int32_t)topic_pos;
        c->partition[i] = partition;
        c->offset[i] = rec->offset;
        if (rec->timestamp_type >= 0) {
            /* ms -> µs; wrapping multiply so a hostile timestamp is not UB */
            c->timestamp[i] = (int64_t)((uint64_t)rec->timestamp * 1000u);
        } else {
            c->timestamp[i] = 0;
            fkc_bit_clear(c->timestamp_validity, i);
            c->timestamp_nulls++;
        }
        c->timestamp_type[i] = rec->timestamp_type;
        if (rec->header_count > 0) {
            c->headers_validity[i >> 3] = (uint8_t)(c->headers_validity[i >> 3] | (1u << (i & 7)));
            fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
            const uint8_t *k, *v;
            int32_t kl, vl;
            while (fkc_header_next(&it, &k, &kl, &v, &vl)) {
                memcpy(c->hkey_data + hkey_pos, k, (size_t)kl);
                hkey_pos += (size_t)kl;
                c->hkey_offsets[header_pos + 1] = (int32_t)hkey_pos;
                if (vl >= 0) {
                    memcpy(c->hvalue_data + hvalue_pos, v, (size_t)vl);
                    hvalue_pos += (size_t)vl;
                } else {
                    fkc_bit_clear(c->hvalue_validity, header_pos);
                    c->hvalue_nulls++;
                }
                c->hvalue_offsets[header_pos + 1] = (int32_t)hvalue_pos;
                header_pos++;
            }
        } else {
            c->headers_nulls++;
        }
        c->headers_offsets[i + 1] = (int32_t)header_pos;
    }
    /* The topic column repeats one string: copy it once, then double the
     * filled prefix (log2(n) memcpy calls instead of one per record). */
    size_t total = n * topic_len;
    if (total) {
        memcpy(c->topic_data, topic, topic_len);
        size_t filled = topic_len;
        while (filled < total) {
            size_t chunk = filled <= total - filled ? filled : total - filled;
            memcpy(c->topic_data + filled, c->topic_data, chunk);
            filled += chunk;
        }
    }
}
