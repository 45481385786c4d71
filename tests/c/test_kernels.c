/*
 * C unit tests for the kernels every parser stands on: the bounds-checked
 * cursor, strict varints, CRC-32C (hardware and software paths), CRC-32 and
 * the growth rule of the growable arrays (fkc_grow.h).
 * Built and run by `make test-c` (and by tests/c/test_c_kernels.py).
 * Exit status 0 only if every check passed; each failure is printed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_codec.h"
#include "fkc_copy.h"
#include "fkc_crc32.h"
#include "fkc_crc32c.h"
#include "fkc_cursor.h"
#include "fkc_grow.h"
#include "fkc_records.h"
#include "fkc_varint.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        checks++;                                                                      \
        if (!(cond)) {                                                                 \
            failures++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                              \
    } while (0)

static const uint8_t *B(const char *s)
{
    return (const uint8_t *)s;
}

/* ---- cursor ---- */
static void test_cursor(void)
{
    const uint8_t data[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0xFF, 0xFE};
    fkc_cursor c;
    fkc_cursor_init(&c, data, sizeof data, 100);
    CHECK(fkc_read_u8(&c, "a") == 0x01);
    CHECK(fkc_read_u16(&c, "b") == 0x0203);
    CHECK(fkc_read_u32(&c, "c") == 0x04050607u);
    CHECK(fkc_cursor_tell(&c) == 107);
    CHECK(fkc_cursor_remaining(&c) == 4);
    /* an 8-byte read with 4 left fails, does not move, and is sticky */
    CHECK(fkc_read_u64(&c, "too long") == 0);
    CHECK(c.failed);
    CHECK(c.fail_pos == 107);
    CHECK(strcmp(c.what, "too long") == 0);
    CHECK(strcmp(c.problem, "truncated") == 0);
    CHECK(c.pos == data + 7);
    CHECK(fkc_read_u8(&c, "after") == 0); /* sticky: even a 1-byte read now fails */
    CHECK(strcmp(c.what, "too long") == 0); /* the first failure is the one kept */
    CHECK(fkc_cursor_remaining(&c) == 0);

    /* signed big-endian */
    fkc_cursor_init(&c, data + 9, 2, 0);
    CHECK(fkc_read_i16(&c, "neg") == (int16_t)0xFFFE);

    /* a huge length must not wrap around the end pointer */
    fkc_cursor_init(&c, data, sizeof data, 0);
    CHECK(fkc_read_bytes(&c, SIZE_MAX, "huge") == NULL);
    CHECK(c.failed && c.pos == data);
    fkc_cursor_init(&c, data, sizeof data, 0);
    CHECK(fkc_read_bytes(&c, SIZE_MAX - 3, "huge2") == NULL);

    /* zero-length borrow succeeds and returns a non-NULL pointer */
    fkc_cursor_init(&c, data, 0, 0);
    CHECK(fkc_read_bytes(&c, 0, "empty") != NULL);
    CHECK(!c.failed);

    /* sub-cursor positions stay blob-relative */
    fkc_cursor child;
    fkc_cursor_init(&c, data, sizeof data, 50);
    fkc_skip(&c, 2, "skip");
    CHECK(fkc_cursor_sub(&c, 4, &child, "sub"));
    CHECK(fkc_cursor_tell(&child) == 52);
    CHECK(fkc_read_u32(&child, "x") == 0x03040506u);
    CHECK(fkc_read_u8(&child, "past sub end") == 0 && child.failed && child.fail_pos == 56);
    CHECK(!c.failed && fkc_cursor_tell(&c) == 56);
    CHECK(!fkc_cursor_sub(&c, 100, &child, "sub too big"));
    CHECK(c.failed && child.failed);

    /* 64-bit value */
    const uint8_t be64[] = {0x80, 0, 0, 0, 0, 0, 0, 0x01};
    fkc_cursor_init(&c, be64, 8, 0);
    CHECK(fkc_read_i64(&c, "i64") == INT64_MIN + 1);
}

/* ---- varint ---- */
static void test_varint(void)
{
    uint32_t v32;
    uint64_t v64;
    size_t n;
    /* boundaries decode and round-trip */
    const uint32_t u32s[] = {0, 1, 127, 128, 16383, 16384, 0x0FFFFFFFu, 0x10000000u, UINT32_MAX};
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
        uint8_t buf[5];
        size_t len = fkc_uvarint32_encode(u32s[i], buf);
        CHECK(fkc_uvarint32_decode(buf, len, &v32, &n) == FKC_VARINT_OK && v32 == u32s[i] && n == len);
        /* every strict prefix is truncated, and nothing is written */
        for (size_t k = 0; k < len; k++) {
            v32 = 12345;
            n = 999;
            CHECK(fkc_uvarint32_decode(buf, k, &v32, &n) == FKC_VARINT_TRUNCATED && v32 == 12345 && n == 999);
        }
    }
    const uint64_t u64s[] = {0, 1, 300, UINT32_MAX, (uint64_t)1 << 62, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof u64s / sizeof u64s[0]; i++) {
        uint8_t buf[10];
        size_t len = fkc_uvarint64_encode(u64s[i], buf);
        CHECK(fkc_uvarint64_decode(buf, len, &v64, &n) == FKC_VARINT_OK && v64 == u64s[i] && n == len);
    }
    CHECK(fkc_uvarint32_encode(UINT32_MAX, (uint8_t[5]){0}) == 5);
    CHECK(fkc_uvarint64_encode(UINT64_MAX, (uint8_t[10]){0}) == 10);

    /* zigzag */
    CHECK(fkc_zigzag32_decode(0) == 0 && fkc_zigzag32_decode(1) == -1 && fkc_zigzag32_decode(2) == 1);
    CHECK(fkc_zigzag32_decode(UINT32_MAX) == INT32_MIN && fkc_zigzag32_decode(UINT32_MAX - 1) == INT32_MAX);
    CHECK(fkc_zigzag64_decode(UINT64_MAX) == INT64_MIN && fkc_zigzag64_decode(UINT64_MAX - 1) == INT64_MAX);
    CHECK(fkc_zigzag32_encode(-1) == 1 && fkc_zigzag32_encode(INT32_MIN) == UINT32_MAX);
    CHECK(fkc_zigzag64_encode(INT64_MIN) == UINT64_MAX);

    /* over-long: continuation on the 5th / 10th byte */
    CHECK(fkc_uvarint32_decode(B("\x80\x80\x80\x80\x80\x00"), 6, &v32, &n) == FKC_VARINT_OVERLONG);
    CHECK(fkc_uvarint64_decode(B("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00"), 11, &v64, &n) ==
          FKC_VARINT_OVERLONG);
    /* overflow: bits past 32 / 64 in the last byte */
    CHECK(fkc_uvarint32_decode(B("\xFF\xFF\xFF\xFF\x1F"), 5, &v32, &n) == FKC_VARINT_OVERFLOW);
    CHECK(fkc_uvarint32_decode(B("\xFF\xFF\xFF\xFF\x0F"), 5, &v32, &n) == FKC_VARINT_OK && v32 == UINT32_MAX);
    CHECK(fkc_uvarint64_decode(B("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x02"), 10, &v64, &n) == FKC_VARINT_OVERFLOW);
    CHECK(fkc_uvarint64_decode(B("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"), 10, &v64, &n) == FKC_VARINT_OK &&
          v64 == UINT64_MAX);
    /* redundant zero continuation is accepted (Java accepts it) */
    CHECK(fkc_uvarint32_decode(B("\x80\x00"), 2, &v32, &n) == FKC_VARINT_OK && v32 == 0 && n == 2);
    /* empty input */
    CHECK(fkc_uvarint32_decode(B(""), 0, &v32, &n) == FKC_VARINT_TRUNCATED);

    /* cursor readers: failure leaves pos and records the reason */
    fkc_cursor c;
    fkc_cursor_init(&c, B("\x80\x80\x80\x80\x80\x00"), 6, 10);
    CHECK(fkc_read_varint(&c, "len") == 0);
    CHECK(c.failed && c.pos == c.start && c.fail_pos == 10);
    CHECK(strcmp(c.problem, "over-long varint") == 0);
    fkc_cursor_init(&c, B("\x03\x96\x01\x01"), 4, 0);
    CHECK(fkc_read_varint(&c, "a") == -2);
    CHECK(fkc_read_varlong(&c, "b") == 75);
    CHECK(fkc_read_varint(&c, "c") == -1);
    CHECK(!c.failed && fkc_cursor_remaining(&c) == 0);
    CHECK(fkc_read_varint(&c, "d") == 0 && c.failed && strcmp(c.problem, "truncated") == 0);

    /* the inline one- and two-byte fast paths agree with the full decoder */
    for (uint32_t u = 0; u < 20000; u += 7) {
        uint8_t buf[6];
        size_t len = fkc_uvarint32_encode(u, buf);
        fkc_cursor_init(&c, buf, len, 0);
        CHECK(fkc_read_uvarint(&c, "u32") == u && !c.failed && fkc_cursor_remaining(&c) == 0);
        fkc_cursor_init(&c, buf, len, 0);
        CHECK(fkc_read_uvarlong(&c, "u64") == u && !c.failed && fkc_cursor_remaining(&c) == 0);
    }
    fkc_cursor_init(&c, B("\xAC\x02"), 2, 0);
    CHECK(fkc_read_varint(&c, "300") == 150);
    fkc_cursor_init(&c, B("\x80"), 1, 0); /* a lone continuation byte: truncated, not a 2-byte value */
    CHECK(fkc_read_uvarint(&c, "cut") == 0 && c.failed && c.pos == c.start);
    fkc_cursor_init(&c, B("\x80\x80"), 2, 0);
    CHECK(fkc_read_uvarlong(&c, "cut2") == 0 && c.failed && strcmp(c.problem, "truncated") == 0);
}

/* ---- CRCs ---- */

/* The hardware path's three interleaved chains (768-byte and 12 KiB rounds,
 * joined by the zero-byte shift tables) against the software oracle: pseudo-
 * random bytes, every length 0..1024 at every start alignment 0..7 (both
 * sides of the 768-byte round), lengths around the 12 KiB rounds, large
 * buffers, and a nonzero running CRC carried in. */
static void test_crc_three_chains(void)
{
    size_t cap = 200000 + 8;
    uint8_t *buf = (uint8_t *)malloc(cap);
    CHECK(buf != NULL);
    if (buf == NULL)
        return;
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < cap; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)(x >> 24);
    }
    size_t mismatches = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 1024; len++)
            if (fkc_crc32c_hardware(0, buf + off, len) != fkc_crc32c_software(0, buf + off, len))
                mismatches++;
    CHECK(mismatches == 0);
    const size_t lens[] = {767, 768, 769, 1535, 1536, 12287, 12288, 12289, 12288 + 768, 24575, 24576, 36864 + 777,
                           65536, 100003, 200000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (size_t off = 0; off < 8; off += 3) {
            CHECK(fkc_crc32c_hardware(0, buf + off, lens[i]) == fkc_crc32c_software(0, buf + off, lens[i]));
            CHECK(fkc_crc32c_hardware(0xDEADBEEFu, buf + off, lens[i]) ==
                  fkc_crc32c_software(0xDEADBEEFu, buf + off, lens[i]));
        }
    /* chaining across a round boundary equals one pass */
    CHECK(fkc_crc32c_hardware(fkc_crc32c_hardware(0, buf, 5000), buf + 5000, 30000) ==
          fkc_crc32c_software(0, buf, 35000));
    free(buf);
}

static void test_crc(void)
{
    const uint8_t *s = B("123456789");
    CHECK(fkc_crc32c_software(0, s, 9) == 0xE3069283u);
    CHECK(fkc_crc32c(0, s, 9) == 0xE3069283u);
    CHECK(fkc_crc32c_software(0, B(""), 0) == 0);
    /* RFC 3720 B.4 vectors: 32 bytes of zeros / of 0xFF */
    uint8_t zeros[32], ones[32], incr[32];
    memset(zeros, 0, sizeof zeros);
    memset(ones, 0xFF, sizeof ones);
    for (int i = 0; i < 32; i++)
        incr[i] = (uint8_t)i;
    CHECK(fkc_crc32c_software(0, zeros, 32) == 0x8A9136AAu);
    CHECK(fkc_crc32c_software(0, ones, 32) == 0x62A8AB43u);
    CHECK(fkc_crc32c_software(0, incr, 32) == 0x46DD794Eu);
    /* chaining */
    CHECK(fkc_crc32c_software(fkc_crc32c_software(0, s, 4), s + 4, 5) == 0xE3069283u);

    /* hardware path, when the CPU has it: same answers at every length and
     * alignment (exercises the 8-byte loop and the byte tail) */
    uint8_t big[1031];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 131u + 7u);
    if (fkc_crc32c_hardware_available()) {
        CHECK(fkc_crc32c_hardware(0, s, 9) == 0xE3069283u);
        CHECK(fkc_crc32c_hardware(0, zeros, 32) == 0x8A9136AAu);
        for (size_t off = 0; off < 8; off++)
            for (size_t len = 0; len < 40; len++)
                CHECK(fkc_crc32c_hardware(0, big + off, len) == fkc_crc32c_software(0, big + off, len));
        CHECK(fkc_crc32c_hardware(0, big, sizeof big) == fkc_crc32c_software(0, big, sizeof big));
        CHECK(strcmp(fkc_crc32c_implementation(), "sse4.2") == 0);
        test_crc_three_chains();
    } else {
        printf("note: no SSE4.2 on this CPU, hardware CRC32C path not exercised\n");
        CHECK(strcmp(fkc_crc32c_implementation(), "software") == 0);
    }
    fkc_crc32c_force_software(1);
    CHECK(strcmp(fkc_crc32c_implementation(), "software") == 0);
    CHECK(fkc_crc32c(0, s, 9) == 0xE3069283u);
    fkc_crc32c_force_software(0);

    /* IEEE CRC-32 (zlib's): "123456789" -> 0xCBF43926 */
    CHECK(fkc_crc32(0, s, 9) == 0xCBF43926u);
    CHECK(fkc_crc32(fkc_crc32(0, s, 3), s + 3, 6) == 0xCBF43926u);
    CHECK(fkc_crc32(0, B(""), 0) == 0);

    /* xxHash32 reference values (seed 0): "" and "abc" */
    CHECK(fkc_xxh32(B(""), 0, 0) == 0x02CC5D05u);
    CHECK(fkc_xxh32(B("abc"), 3, 0) == 0x32D153FFu);
}

/* ---- the resumable decoder and the scan ---- */

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xFF);
        v >>= 8;
    }
}

/* A v2 batch at base_offset of `n` (<= 32) records with null keys and the
 * value "v", no compression; returns its length. */
static size_t v2_batch(uint8_t *out, int64_t base_offset, int n)
{
    size_t pos = 61;
    for (int i = 0; i < n; i++) {
        const uint8_t body[7] = {0, 0, (uint8_t)(2 * i), 0x01, 0x02, 'v', 0};
        out[pos++] = 14; /* zigzag(7) */
        memcpy(out + pos, body, 7);
        pos += 7;
    }
    memset(out, 0, 61);
    put_be(out, (uint64_t)base_offset, 8);
    put_be(out + 8, pos - 12, 4);
    put_be(out + 12, 3, 4); /* PartitionLeaderEpoch */
    out[16] = 2;
    put_be(out + 23, (uint64_t)(n - 1), 4); /* LastOffsetDelta */
    put_be(out + 43, UINT64_MAX, 8);        /* ProducerId -1 */
    put_be(out + 51, 0xFFFF, 2);
    put_be(out + 53, UINT32_MAX, 4);
    put_be(out + 57, (uint64_t)n, 4);
    put_be(out + 17, fkc_crc32c(0, out + 21, pos - 21), 4);
    return pos;
}

static void test_stream(void)
{
    uint8_t blob[1024];
    size_t len = v2_batch(blob, 0, 4);
    len += v2_batch(blob + len, 4, 3);
    fkc_decode_opts o;
    memset(&o, 0, sizeof o);
    o.stop_offset = -1;
    o.check_crcs = 1;
    o.max_decompressed_bytes = 1 << 20;

    /* steps of 1..8 join to the one-shot decode */
    for (size_t k = 1; k <= 8; k++) {
        fkc_stream *s = fkc_stream_new(blob, len, &o);
        fkc_decode_result out;
        memset(&out, 0, sizeof out);
        int64_t expect = 0;
        int steps = 0;
        while (!fkc_stream_done(s) && steps < 20) {
            CHECK(fkc_stream_step(s, k, SIZE_MAX, &out) == FKC_OK);
            CHECK(out.count >= 1 && out.count <= k);
            for (size_t i = 0; i < out.count; i++)
                CHECK(out.records[i].offset == expect++ && out.records[i].value_len == 1);
            CHECK(out.next_offset == expect);
            CHECK(fkc_stream_leader_epoch(s) == 3);
            steps++;
        }
        CHECK(expect == 7 && fkc_stream_done(s));
        CHECK(steps == (int)((7 + k - 1) / k) || k >= 4); /* (k >= 4: batch boundaries allow fewer) */
        fkc_decode_result_free(&out);
        fkc_stream_free(s);
    }

    /* the one-shot Arrow decode stops at the int32 limits with a typed
     * error: rows x topic bytes passes 2^31 - 1 at the third row (no 2 GiB
     * of data needed, the decoder only counts) */
    o.arrow_timestamps = 1;
    o.arrow_limits = 1;
    o.arrow_topic_len = INT32_MAX / 3 + 1;
    fkc_decode_result r;
    CHECK(fkc_decode_records(blob, len, &o, &r) == FKC_ERR_ARROW_LIMIT);
    CHECK(r.count == 2 && r.error_offset == 2 && r.next_offset == 2);
    fkc_decode_result_free(&r);
    o.arrow_limits = 0;
    o.arrow_timestamps = 0;

    /* the record budget, before anything is decoded */
    o.max_batch_records = 3;
    CHECK(fkc_decode_records(blob, len, &o, &r) == FKC_ERR_BUDGET);
    CHECK(r.count == 0 && r.error_offset == 0);
    fkc_decode_result_free(&r);
    o.max_batch_records = 0;

    /* the scan agrees with the framing: complete, cut, malformed */
    fkc_scan_info info;
    fkc_scan_blob(blob, len, &info);
    CHECK(info.tail == FKC_TAIL_NONE && info.entries == 2 && info.next_offset == 7 && info.complete_bytes == len);
    fkc_scan_blob(blob, len - 1, &info);
    CHECK(info.tail == FKC_TAIL_CUT && info.entries == 1 && info.next_offset == 4 && info.tail_offset == 4);

    /* the benchmark ceiling's walk: the same framing, CRCs checked, counts declared */
    size_t first_len = 12 + (size_t)fkc_load_be32(blob + 8);
    int64_t declared = (int32_t)fkc_load_be32(blob + 57) + (int32_t)fkc_load_be32(blob + first_len + 57);
    fkc_check_info ci;
    fkc_check_blob(blob, len, 0, &ci);
    CHECK(ci.status == FKC_CHECK_OK && ci.batches == 2 && ci.next_offset == 7 && ci.checked_bytes == len &&
          ci.records == declared);
    fkc_check_blob(blob, len, 5, &ci); /* from the middle of the second batch: its offsets 5 and 6 */
    CHECK(ci.status == FKC_CHECK_OK && ci.records == 2 && ci.next_offset == 7);
    fkc_check_blob(blob, len, 9, &ci); /* all below the position */
    CHECK(ci.status == FKC_CHECK_OK && ci.records == 0 && ci.next_offset == 9);
    fkc_check_blob(blob, len - 1, 0, &ci);
    CHECK(ci.status == FKC_CHECK_CORRUPT && ci.batches == 1 && ci.error_offset == 4 && ci.checked_bytes == first_len);
    blob[len - 1] ^= 1;
    fkc_check_blob(blob, len, 0, &ci);
    CHECK(ci.status == FKC_CHECK_BAD_CRC && ci.batches == 1 && ci.error_offset == 4);
    blob[len - 1] ^= 1;
    blob[first_len + 16] = 1;
    fkc_check_blob(blob, len, 0, &ci);
    CHECK(ci.status == FKC_CHECK_LEGACY && ci.batches == 1 && ci.error_offset == 4);
    blob[first_len + 16] = 2;
    blob[16] = 7;
    fkc_scan_blob(blob, len, &info);
    CHECK(info.tail == FKC_TAIL_MALFORMED && info.entries == 0 && info.tail_offset == 0);
    blob[16] = 2;
    put_be(blob + 23, UINT32_MAX, 4); /* LastOffsetDelta -1 */
    fkc_scan_blob(blob, len, &info);
    CHECK(info.tail == FKC_TAIL_MALFORMED && info.entries == 0);
}

/* ---- growth (fkc_grow.h) ---- */
static void test_grow(void)
{
    /* from nothing: the first size, doubled until `need` fits */
    CHECK(fkc_grown_cap(0, 1, 8, 256) == 256);
    CHECK(fkc_grown_cap(0, 257, 8, 256) == 512);
    CHECK(fkc_grown_cap(0, 1, 8, 0) == 1);
    /* from a capacity: doubled, whatever the first size */
    CHECK(fkc_grown_cap(100, 101, 8, 256) == 200);
    CHECK(fkc_grown_cap(100, 1000, 8, 256) == 1600);
    /* near the limit: exactly what is needed, then nothing (0) */
    const size_t most = SIZE_MAX / 16;
    CHECK(fkc_grown_cap(most / 2 + 1, most, 16, 8) == most);
    CHECK(fkc_grown_cap(most / 2 + 1, most + 1, 16, 8) == 0);
    CHECK(fkc_grown_cap(0, SIZE_MAX, 1, 256) == SIZE_MAX);
    CHECK(fkc_grown_cap(SIZE_MAX / 2 + 1, SIZE_MAX, 2, 8) == 0); /* cap alone already passes SIZE_MAX bytes */
    CHECK(fkc_grown_cap(0, 2, SIZE_MAX, 1) == 0);
    /* the array grows and keeps what it held; a failure leaves both alone */
    size_t cap = 0;
    int64_t *v = (int64_t *)fkc_grow(NULL, &cap, 3, sizeof *v, 4);
    CHECK(v != NULL && cap == 4);
    if (v == NULL)
        return;
    v[0] = 7;
    v[3] = 9;
    int64_t *w = (int64_t *)fkc_grow(v, &cap, 5, sizeof *w, 4);
    CHECK(w != NULL && cap == 8);
    if (w == NULL) {
        free(v);
        return;
    }
    CHECK(w[0] == 7 && w[3] == 9);
    CHECK(fkc_grow(w, &cap, SIZE_MAX, sizeof *w, 4) == NULL && cap == 8 && w[3] == 9);
    /* by a count after what is used: the sum that would wrap fails, leaving both alone */
    CHECK(fkc_grow_by(w, &cap, SIZE_MAX - 1, 2, 1, 4) == NULL && cap == 8 && w[3] == 9);
    int64_t *x = (int64_t *)fkc_grow_by(w, &cap, 6, 5, sizeof *x, 4);
    CHECK(x != NULL && cap == 16);
    if (x == NULL) {
        free(w);
        return;
    }
    CHECK(x[0] == 7 && x[3] == 9);
    free(x);
}

/* The inline ASCII check agrees with the byte loop on every length up to
 * 40 with any one sequence anywhere, each string alone in a block of its
 * own size (ASan sees a load past it). */
static void test_utf8(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        int valid;
    } seqs[] = {{"\x80", 1, 0},         {"\xc3\xa9", 2, 1},         {"\xe2\x82\xac", 3, 1},
                {"\xf0\x9f\x98\x80", 4, 1}, {"\xed\xa0\x80", 3, 0}, {"\xff", 1, 0},
                {"\xc0\xaf", 2, 0},     {"\x7f", 1, 1}};
    for (size_t len = 0; len <= 40; len++) {
        uint8_t *p = malloc(len ? len : 1);
        CHECK(p != NULL);
        if (p == NULL)
            return;
        memset(p, 'a', len);
        CHECK(fkc_utf8_valid(p, len) == 1 && fkc_ascii_prefix(p, len) == len);
        for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
            for (size_t at = 0; at + seqs[s].len <= len; at++) {
                memset(p, 'a', len);
                memcpy(p + at, seqs[s].bytes, seqs[s].len);
                CHECK(fkc_utf8_valid(p, len) == fkc_utf8_valid_any(p, len));
                CHECK(fkc_utf8_valid(p, len) == seqs[s].valid);
                size_t ascii = fkc_ascii_prefix(p, len);
                CHECK((ascii == len) == (seqs[s].bytes[0] == '\x7f'));
                CHECK(ascii == len || (ascii <= at && ascii % 8 == 0)); /* only bytes before the sequence */
            }
        }
        free(p);
    }
}

/* The inline copy moves exactly n bytes for every length through the
 * inline sizes and past them, each source and destination alone in a block
 * of its own size (ASan sees a move past either). */
static void test_copy_field(void)
{
    for (size_t n = 0; n <= FKC_INLINE_COPY_MAX + 20; n++) {
        uint8_t *src = malloc(n ? n : 1), *dst = malloc(n ? n : 1);
        CHECK(src != NULL && dst != NULL);
        if (src == NULL || dst == NULL) {
            free(src);
            free(dst);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            src[i] = (uint8_t)(i * 37 + n);
            dst[i] = (uint8_t)~src[i];
        }
        fkc_copy_field(dst, src, n);
        CHECK(n == 0 || memcmp(dst, src, n) == 0);
        free(src);
        free(dst);
    }
}

int main(void)
{
    test_grow();
    test_utf8();
    test_copy_field();
    test_cursor();
    test_varint();
    test_crc();
    test_stream();
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
