/* fkc_codec.c — compression dispatch; see fkc_codec.h for the contract. */
#include "fkc_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_cursor.h"
#include "fkc_varint.h"

static int fkc_codec_fail(char *errbuf, size_t errbuf_len, int kind, const char *msg)
{
    if (errbuf_len)
        snprintf(errbuf, errbuf_len, "%s", msg);
    return kind;
}

void fkc_blob_release(const fkc_codec_host *host, fkc_blob *blob)
{
    if (blob->owner != NULL) {
        if (blob->owner_is_malloc)
            free(blob->owner);
        else if (host != NULL && host->release != NULL)
            host->release(host->ctx, blob->owner);
    }
    blob->owner = NULL;
    blob->data = NULL;
    blob->len = 0;
}

/* ---- xxHash32 (for the LZ4 frame descriptor checksum) -------------------- */
#define FKC_XXH_P1 2654435761u
#define FKC_XXH_P2 2246822519u
#define FKC_XXH_P3 3266489917u
#define FKC_XXH_P4 668265263u
#define FKC_XXH_P5 374761393u

static inline uint32_t fkc_rotl32(uint32_t x, unsigned r)
{
    return (x << r) | (x >> (32u - r));
}

static inline uint32_t fkc_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

uint32_t fkc_xxh32(const uint8_t *p, size_t len, uint32_t seed)
{
    const uint8_t *end = p + len;
    uint32_t h;
    if (len >= 16) {
        uint32_t v1 = seed + FKC_XXH_P1 + FKC_XXH_P2, v2 = seed + FKC_XXH_P2, v3 = seed, v4 = seed - FKC_XXH_P1;
        while ((size_t)(end - p) >= 16) {
            v1 = fkc_rotl32(v1 + fkc_load_le32(p) * FKC_XXH_P2, 13) * FKC_XXH_P1;
            v2 = fkc_rotl32(v2 + fkc_load_le32(p + 4) * FKC_XXH_P2, 13) * FKC_XXH_P1;
            v3 = fkc_rotl32(v3 + fkc_load_le32(p + 8) * FKC_XXH_P2, 13) * FKC_XXH_P1;
            v4 = fkc_rotl32(v4 + fkc_load_le32(p + 12) * FKC_XXH_P2, 13) * FKC_XXH_P1;
            p += 16;
        }
        h = fkc_rotl32(v1, 1) + fkc_rotl32(v2, 7) + fkc_rotl32(v3, 12) + fkc_rotl32(v4, 18);
    } else {
        h = seed + FKC_XXH_P5;
    }
    h += (uint32_t)len;
    while ((size_t)(end - p) >= 4) {
        h = fkc_rotl32(h + fkc_load_le32(p) * FKC_XXH_P3, 17) * FKC_XXH_P4;
        p += 4;
    }
    while (p < end) {
        h = fkc_rotl32(h + (uint32_t)(*p) * FKC_XXH_P5, 11) * FKC_XXH_P1;
        p++;
    }
    h ^= h >> 15;
    h *= FKC_XXH_P2;
    h ^= h >> 13;
    h *= FKC_XXH_P3;
    h ^= h >> 16;
    return h;
}

/* ---- frame header size checks ------------------------------------------- */

/* LZ4 frame descriptor length: magic, FLG, BD, [content size u64], [dict id
 * u32], HC. Returns 0 when the bytes are not (the start of) an LZ4 frame. */
static size_t fkc_lz4_header_len(const uint8_t *in, size_t len)
{
    if (len < 7 || fkc_load_le32(in) != 0x184D2204u)
        return 0;
    uint8_t flg = in[4];
    size_t hlen = 7 + ((flg & 0x08) ? 8u : 0u) + ((flg & 0x01) ? 4u : 0u);
    return hlen <= len ? hlen : 0;
}

/* zstd frame header (RFC 8878 3.1.1.1): magic 0xFD2FB528 (LE), descriptor,
 * [window descriptor], [dictionary id], [frame content size]. */
static int fkc_zstd_declared_size(const uint8_t *in, size_t len, uint64_t *declared)
{
    *declared = 0;
    if (len < 5 || fkc_load_le32(in) != 0xFD2FB528u)
        return 0;
    uint8_t fhd = in[4];
    unsigned fcs_flag = fhd >> 6;
    unsigned single_segment = (fhd >> 5) & 1u;
    unsigned dict_flag = fhd & 3u;
    if (fhd & 0x08u)
        return 0; /* reserved bit set: not a valid header, the codec reports it */
    static const size_t dict_sizes[4] = {0, 1, 2, 4};
    size_t pos = 5u + (single_segment ? 0u : 1u) + dict_sizes[dict_flag];
    size_t fcs_size;
    switch (fcs_flag) {
    case 0:
        fcs_size = single_segment ? 1 : 0;
        break;
    case 1:
        fcs_size = 2;
        break;
    case 2:
        fcs_size = 4;
        break;
    default:
        fcs_size = 8;
        break;
    }
    if (fcs_size == 0 || pos > len || fcs_size > len - pos)
        return 0;
    const uint8_t *p = in + pos;
    uint64_t v = 0;
    for (size_t i = 0; i < fcs_size; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (fcs_size == 2)
        v += 256; /* the 2-byte form is offset by 256 */
    *declared = v;
    return 1;
}

/* ---- snappy ---------------------------------------------------------------- */

static const uint8_t fkc_xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

/* One raw snappy block: check the declared length before the host allocates. */
static int fkc_snappy_raw(const fkc_codec_host *host, const uint8_t *in, size_t len, size_t cap, fkc_blob *out,
                          char *errbuf, size_t errbuf_len)
{
    uint32_t declared;
    size_t n;
    if (fkc_uvarint32_decode(in, len, &declared, &n) != FKC_VARINT_OK)
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "snappy block length is not a valid varint");
    if (declared > cap)
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_SIZE_LIMIT, "snappy block declares more than the cap");
    int rc = host->decompress(host->ctx, FKC_OP_SNAPPY_RAW, in, len, cap, declared, out, errbuf, errbuf_len);
    if (rc != FKC_OK)
        return rc;
    if (out->len != declared) {
        fkc_blob_release(host, out);
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "snappy block length mismatch");
    }
    return FKC_OK;
}

/* Kafka's xerial framing (snappy-java): 8-byte magic, version i32, compat
 * i32 (both ignored: some producers write them little-endian), then
 * [i32 BE length][raw block] chunks. Each chunk's declared length is checked
 * against what is left of the cap before that chunk is decompressed; the
 * output buffer only grows as real output arrives, up to the cap. */
static int fkc_snappy_xerial(const fkc_codec_host *host, const uint8_t *in, size_t len, size_t cap,
                             fkc_blob *out, char *errbuf, size_t errbuf_len)
{
    if (len < 16)
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "xerial snappy header cut off");
    fkc_cursor c;
    fkc_cursor_init(&c, in + 16, len - 16, 16);
    uint8_t *buf = NULL;
    size_t filled = 0, capacity = 0;
    int rc = FKC_OK;
    while (fkc_cursor_remaining(&c) > 0) {
        int32_t chunk_len = fkc_read_i32(&c, "xerial chunk length");
        if (c.failed || chunk_len < 0 || !fkc_cursor_need(&c, (size_t)chunk_len, "xerial chunk")) {
            rc = fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "xerial snappy chunk length runs past the data");
            break;
        }
        const uint8_t *block = fkc_read_bytes(&c, (size_t)chunk_len, "xerial chunk");
        fkc_blob part = {0};
        rc = fkc_snappy_raw(host, block, (size_t)chunk_len, cap - filled, &part, errbuf, errbuf_len);
        if (rc != FKC_OK)
            break;
        if (part.len > capacity - filled) {
            size_t want = capacity ? capacity * 2 : 65536;
            if (want > cap)
                want = cap; /* never reserve past the cap... */
            if (want < filled + part.len)
                want = filled + part.len; /* ...which part.len <= cap - filled keeps us within */
            if (want == 0)
                want = 1;
            uint8_t *grown = (uint8_t *)realloc(buf, want);
            if (grown == NULL) {
                fkc_blob_release(host, &part);
                rc = fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for xerial snappy output");
                break;
            }
            buf = grown;
            capacity = want;
        }
        if (part.len)
            memcpy(buf + filled, part.data, part.len);
        filled += part.len;
        fkc_blob_release(host, &part);
    }
    if (rc != FKC_OK) {
        free(buf);
        return rc;
    }
    if (buf == NULL && (buf = (uint8_t *)malloc(1)) == NULL) /* empty stream: still a distinct owner */
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for xerial snappy output");
    out->data = buf;
    out->len = filled;
    out->owner = buf;
    out->owner_is_malloc = 1;
    return FKC_OK;
}

/* ---- dispatch ------------------------------------------------------------- */

static int fkc_check_cap(const fkc_codec_host *host, fkc_blob *out, size_t cap, char *errbuf, size_t errbuf_len)
{
    if (out->len > cap) {
        fkc_blob_release(host, out);
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_SIZE_LIMIT, "decompressed batch exceeds the cap");
    }
    return FKC_OK;
}

/* LZ4: the host validates the frame descriptor and checks its declared
 * content size against the cap before decompressing (so a corrupt header is
 * reported as such rather than as a size). Here: the magic-0 header fix. */
static int fkc_decompress_lz4(const fkc_codec_host *host, int legacy_magic0, const uint8_t *in, size_t len,
                              size_t cap, fkc_blob *out, char *errbuf, size_t errbuf_len)
{
    if (legacy_magic0) {
        size_t header_len = fkc_lz4_header_len(in, len);
        if (header_len == 0)
            return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "not an LZ4 frame (or its header is cut off)");
        /* KAFKA-3160: magic-0 producers hashed the magic number into the
         * frame descriptor checksum (HC). Recompute it over FLG..the last
         * descriptor byte, on a copy (the input belongs to the caller).
         * Rare, so the copy is fine. */
        uint8_t *fixed = (uint8_t *)malloc(len);
        if (fixed == NULL)
            return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for the lz4 header fix");
        memcpy(fixed, in, len);
        fixed[header_len - 1] = (uint8_t)((fkc_xxh32(fixed + 4, header_len - 5, 0) >> 8) & 0xFF);
        int rc = host->decompress(host->ctx, FKC_OP_LZ4_FRAME, fixed, len, cap, 0, out, errbuf, errbuf_len);
        free(fixed);
        return rc == FKC_OK ? fkc_check_cap(host, out, cap, errbuf, errbuf_len) : rc;
    }
    int rc = host->decompress(host->ctx, FKC_OP_LZ4_FRAME, in, len, cap, 0, out, errbuf, errbuf_len);
    return rc == FKC_OK ? fkc_check_cap(host, out, cap, errbuf, errbuf_len) : rc;
}

int fkc_decompress(const fkc_codec_host *host, int codec, int legacy_magic0, const uint8_t *in, size_t in_len,
                   size_t cap, fkc_blob *out, char *errbuf, size_t errbuf_len)
{
    out->data = NULL;
    out->len = 0;
    out->owner = NULL;
    out->owner_is_malloc = 0;
    if (host == NULL || host->decompress == NULL)
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "no decompression host configured");
    int rc;
    switch (codec) {
    case FKC_CODEC_GZIP:
        rc = host->decompress(host->ctx, FKC_OP_GZIP, in, in_len, cap, 0, out, errbuf, errbuf_len);
        return rc == FKC_OK ? fkc_check_cap(host, out, cap, errbuf, errbuf_len) : rc;
    case FKC_CODEC_SNAPPY:
        if (in_len >= 8 && memcmp(in, fkc_xerial_magic, 8) == 0)
            return fkc_snappy_xerial(host, in, in_len, cap, out, errbuf, errbuf_len);
        return fkc_snappy_raw(host, in, in_len, cap, out, errbuf, errbuf_len);
    case FKC_CODEC_LZ4:
        return fkc_decompress_lz4(host, legacy_magic0, in, in_len, cap, out, errbuf, errbuf_len);
    case FKC_CODEC_ZSTD: {
        uint64_t declared;
        if (fkc_zstd_declared_size(in, in_len, &declared) && declared > cap)
            return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_SIZE_LIMIT, "zstd frame declares more than the cap");
        rc = host->decompress(host->ctx, FKC_OP_ZSTD, in, in_len, cap, (size_t)declared, out, errbuf, errbuf_len);
        return rc == FKC_OK ? fkc_check_cap(host, out, cap, errbuf, errbuf_len) : rc;
    }
    default:
        return fkc_codec_fail(errbuf, errbuf_len, FKC_ERR_UNSUPPORTED_CODEC, "unknown compression codec id");
    }
}
