/*
 * fkc_lz4.h — LZ4 frame decompression in C, without the GIL, through the
 * system's liblz4 (loaded with dlopen at run time: no build dependency, no
 * vendored copy). Why: the codec host's Python call (python-lz4) needs the
 * GIL, so a decode step prepared on the decode worker (fastkc/decode_worker.py)
 * would wait for the polling thread to let go of it once or more per batch;
 * with this path an lz4 step runs start to end without the GIL.
 *
 * Contract: the same as the Python host's _lz4_decompress (fastkc/_core/_records.pyx),
 * so the two are interchangeable and the differential tests hold both to the
 * twin: the frame descriptor is validated first; a declared content size
 * above `cap` is FKC_ERR_SIZE_LIMIT before anything is decompressed; output
 * is produced into a buffer grown geometrically up to cap + 1 bytes, and one
 * byte past cap is FKC_ERR_SIZE_LIMIT; a frame cut off before its end mark,
 * bytes after the frame, or any liblz4 error is FKC_ERR_DECOMPRESS with a
 * reason. On FKC_OK *out owns a malloc block (owner_is_malloc = 1).
 * Thread-safe: one decompression context per call; fkc_lz4_load() must have
 * run once before (the bridge calls it at import).
 */
#ifndef FKC_LZ4_H
#define FKC_LZ4_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resolve liblz4 (liblz4.so.1). 1 when the native path is usable. Not
 * thread-safe: call once, at import, before any decode. */
int fkc_lz4_load(void);

/* 1 when loaded and not turned off by fkc_lz4_force_host(). */
int fkc_lz4_native(void);

/* Tests: 1 routes every lz4 frame to the host again (both paths are tested). */
void fkc_lz4_force_host(int force);

/* The liblz4 version number (e.g. 10904), 0 when not loaded. */
int fkc_lz4_version(void);

int fkc_lz4_decompress(const uint8_t *in, size_t in_len, size_t cap, fkc_blob *out, char *errbuf,
                       size_t errbuf_len);

#ifdef __cplusplus
}
#endif

#endif /* FKC_LZ4_H */
