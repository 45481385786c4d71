/*
 * fkc_codec.h — compression dispatch for record batches and legacy wrappers.
 *
 * Contract
 *   fkc_decompress() turns one batch's compressed payload into bytes, never
 *   producing more than `cap` bytes: every size a header declares (zstd and
 *   lz4 frame content sizes, a raw snappy block's length varint, xerial chunk
 *   lengths) is checked against the cap BEFORE anything is allocated, and
 *   the streaming primitives are asked for at most cap+1 bytes, so one byte
 *   too many means FKC_ERR_SIZE_LIMIT rather than an unbounded allocation.
 *
 *   The framing work is done here, in C: Kafka/Java's xerial snappy framing
 *   (magic \x82SNAPPY\x00, two i32 versions, then [i32 BE length][raw block]
 *   chunks), the LZ4 frame header fix for magic-0 producers (KAFKA-3160: they
 *   computed the header checksum over the wrong bytes), zstd/lz4 frame header
 *   size checks. The primitive decompressions (zlib, one raw snappy block, an
 *   lz4 frame, zstd) are delegated to a host through fkc_codec_host: the
 *   Cython bridge supplies callbacks into the well-kept Python packages
 *   (zlib, cramjam, lz4, zstandard). That is one call per batch, not per
 *   record, so the callback cost is amortised over the batch's records and
 *   we do not vendor four compression libraries.
 *
 *   Output ownership: a successful call fills an fkc_blob whose bytes stay
 *   valid until fkc_blob_release(); the record decoder keeps every blob in
 *   its arena until the records have been built.
 */
#ifndef FKC_CODEC_H
#define FKC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kafka codec ids (Attributes bits 0-2). */
enum {
    FKC_CODEC_NONE = 0,
    FKC_CODEC_GZIP = 1,
    FKC_CODEC_SNAPPY = 2,
    FKC_CODEC_LZ4 = 3,
    FKC_CODEC_ZSTD = 4
};

/* The primitive operations a host performs. */
typedef enum fkc_codec_op {
    FKC_OP_GZIP = 1,       /* gzip (or zlib) stream, possibly several members */
    FKC_OP_SNAPPY_RAW = 2, /* one raw snappy block; its declared length was checked */
    FKC_OP_LZ4_FRAME = 3,  /* one or more LZ4 frames */
    FKC_OP_ZSTD = 4        /* one or more zstd frames */
} fkc_codec_op;

typedef struct fkc_blob {
    const uint8_t *data; /* decompressed bytes */
    size_t len;
    void *owner;         /* host object (released by the host) or malloc block */
    int owner_is_malloc; /* 1: `owner` is a malloc block freed with free() */
} fkc_blob;

/* A host primitive: decompress in[0..in_len) producing at most cap+1 bytes
 * (so the caller can tell "exactly cap" from "more than cap"). `size_hint`
 * is the output size a frame header declared, 0 when unknown. On success
 * returns FKC_OK and fills *out (owner_is_malloc = 0); otherwise returns
 * FKC_ERR_DECOMPRESS (message in errbuf), FKC_ERR_SIZE_LIMIT or FKC_ERR_HOST. */
typedef int (*fkc_codec_fn)(void *ctx, fkc_codec_op op, const uint8_t *in, size_t in_len, size_t cap,
                            size_t size_hint, fkc_blob *out, char *errbuf, size_t errbuf_len);
typedef void (*fkc_codec_release_fn)(void *ctx, void *owner);

typedef struct fkc_codec_host {
    fkc_codec_fn decompress;
    fkc_codec_release_fn release;
    void *ctx;
} fkc_codec_host;

/* Decompress one payload. `codec` is the Kafka codec id; `legacy_magic0`
 * selects the KAFKA-3160 LZ4 header fix. Returns an fkc_error_kind; on
 * FKC_OK *out holds at most `cap` bytes. errbuf gets a reason on failure. */
int fkc_decompress(const fkc_codec_host *host, int codec, int legacy_magic0, const uint8_t *in, size_t in_len,
                   size_t cap, fkc_blob *out, char *errbuf, size_t errbuf_len);

void fkc_blob_release(const fkc_codec_host *host, fkc_blob *blob);

/* Exposed for tests: xxHash32 (the LZ4 frame header checksum uses it). */
uint32_t fkc_xxh32(const uint8_t *p, size_t len, uint32_t seed);

#ifdef __cplusplus
}
#endif

#endif /* FKC_CODEC_H */
