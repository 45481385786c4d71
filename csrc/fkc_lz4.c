/* fkc_lz4.c — see fkc_lz4.h. liblz4's frame API (lz4frame.h) has kept these
 * signatures and LZ4F_frameInfo_t's layout stable since 1.8.0 (2017); the
 * prototypes are declared here because the headers are a -dev package that
 * a machine running fastkc need not have, while liblz4.so.1 itself is part
 * of every Debian/Ubuntu base system (apt and systemd link it). A version
 * below 1.8.0, or no library, leaves the Python host in charge. */
#include "fkc_lz4.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lz4frame.h, v1.8.0+ */
typedef struct LZ4F_dctx_s LZ4F_dctx;
typedef struct {
    int blockSizeID;                  /* LZ4F_blockSizeID_t */
    int blockMode;                    /* LZ4F_blockMode_t */
    int contentChecksumFlag;          /* LZ4F_contentChecksum_t */
    int frameType;                    /* LZ4F_frameType_t */
    unsigned long long contentSize;   /* 0: unknown */
    unsigned dictID;
    int blockChecksumFlag;            /* LZ4F_blockChecksum_t */
} fkc_LZ4F_frameInfo_t;
#define FKC_LZ4F_VERSION 100u

typedef unsigned (*fn_isError)(size_t);
typedef const char *(*fn_getErrorName)(size_t);
typedef size_t (*fn_createDctx)(LZ4F_dctx **, unsigned);
typedef size_t (*fn_freeDctx)(LZ4F_dctx *);
typedef size_t (*fn_getFrameInfo)(LZ4F_dctx *, fkc_LZ4F_frameInfo_t *, const void *, size_t *);
typedef size_t (*fn_decompress)(LZ4F_dctx *, void *, size_t *, const void *, size_t *, const void *);
typedef int (*fn_versionNumber)(void);
typedef void (*fn_resetDctx)(LZ4F_dctx *);

static struct {
    int loaded;
    int force_host;
    int version;
    fn_isError isError;
    fn_getErrorName getErrorName;
    fn_createDctx createDctx;
    fn_freeDctx freeDctx;
    fn_getFrameInfo getFrameInfo;
    fn_decompress decompress;
    fn_resetDctx resetDctx;
    pthread_key_t dctx_key; /* one decompression context per thread, reused */
} lz4;

/* A context allocates its block buffers (up to ~4 x the frame's block size:
 * 256 KiB for Kafka's 64 KiB blocks, past malloc's mmap threshold) when it
 * reads a frame header; a fresh context per batch paid an mmap, page faults
 * and an munmap each time, more than the decompression itself. So each
 * thread keeps one, reset between frames and freed when the thread ends. */
static void fkc_lz4_free_dctx(void *dctx)
{
    if (dctx != NULL)
        lz4.freeDctx((LZ4F_dctx *)dctx);
}

static void *fkc_sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

int fkc_lz4_load(void)
{
    if (lz4.loaded)
        return 1;
    void *lib = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return 0;
    fn_versionNumber version = (fn_versionNumber)fkc_sym(lib, "LZ4_versionNumber");
    lz4.isError = (fn_isError)fkc_sym(lib, "LZ4F_isError");
    lz4.getErrorName = (fn_getErrorName)fkc_sym(lib, "LZ4F_getErrorName");
    lz4.createDctx = (fn_createDctx)fkc_sym(lib, "LZ4F_createDecompressionContext");
    lz4.freeDctx = (fn_freeDctx)fkc_sym(lib, "LZ4F_freeDecompressionContext");
    lz4.getFrameInfo = (fn_getFrameInfo)fkc_sym(lib, "LZ4F_getFrameInfo");
    lz4.decompress = (fn_decompress)fkc_sym(lib, "LZ4F_decompress");
    lz4.resetDctx = (fn_resetDctx)fkc_sym(lib, "LZ4F_resetDecompressionContext");
    if (version == NULL || lz4.isError == NULL || lz4.getErrorName == NULL || lz4.createDctx == NULL ||
        lz4.freeDctx == NULL || lz4.getFrameInfo == NULL || lz4.decompress == NULL || lz4.resetDctx == NULL ||
        version() < 10800 || pthread_key_create(&lz4.dctx_key, fkc_lz4_free_dctx) != 0) {
        dlclose(lib);
        memset(&lz4, 0, sizeof lz4);
        return 0;
    }
    lz4.version = version();
    lz4.loaded = 1; /* the handle stays open for the life of the process */
    return 1;
}

int fkc_lz4_native(void)
{
    return lz4.loaded && !lz4.force_host;
}

void fkc_lz4_force_host(int force)
{
    lz4.force_host = force ? 1 : 0;
}

int fkc_lz4_version(void)
{
    return lz4.version;
}

static int fkc_lz4_fail(char *errbuf, size_t errbuf_len, int kind, const char *fmt, ...)
{
    if (errbuf != NULL && errbuf_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errbuf_len, fmt, ap);
        va_end(ap);
    }
    return kind;
}

static int fkc_lz4_run(LZ4F_dctx *dctx, const uint8_t *in, size_t in_len, size_t cap, fkc_blob *out, char *errbuf,
                       size_t errbuf_len);

int fkc_lz4_decompress(const uint8_t *in, size_t in_len, size_t cap, fkc_blob *out, char *errbuf,
                       size_t errbuf_len)
{
    LZ4F_dctx *dctx = (LZ4F_dctx *)pthread_getspecific(lz4.dctx_key);
    size_t code;
    if (dctx == NULL) {
        code = lz4.createDctx(&dctx, FKC_LZ4F_VERSION);
        if (lz4.isError(code) || pthread_setspecific(lz4.dctx_key, dctx) != 0) {
            if (!lz4.isError(code))
                lz4.freeDctx(dctx);
            return fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for an lz4 context");
        }
    }
    lz4.resetDctx(dctx);
    int rc = fkc_lz4_run(dctx, in, in_len, cap, out, errbuf, errbuf_len);
    if (rc != FKC_OK) {
        /* A frame abandoned half-way (an error, a size limit) can leave state
         * that a reset does not clear (seen with 1.9.4: a sized frame given
         * up after its header made the next unsized frame fail with
         * ERROR_frameSize_wrong). Failures are rare: start afresh. */
        pthread_setspecific(lz4.dctx_key, NULL);
        lz4.freeDctx(dctx);
    }
    return rc;
}

static int fkc_lz4_run(LZ4F_dctx *dctx, const uint8_t *in, size_t in_len, size_t cap, fkc_blob *out, char *errbuf,
                       size_t errbuf_len)
{
    size_t code;

    fkc_LZ4F_frameInfo_t info;
    memset(&info, 0, sizeof info);
    size_t pos = in_len; /* in: bytes available; out: the descriptor's bytes consumed */
    code = lz4.getFrameInfo(dctx, &info, in, &pos);
    if (lz4.isError(code)) {
        return fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS,
                            "RuntimeError: LZ4F_getFrameInfo failed with code: %s", lz4.getErrorName(code));
    }
    if (info.contentSize > cap) {
        return FKC_ERR_SIZE_LIMIT;
    }
    /* The first guess: the declared size, else 4x the input (at least 64
     * KiB), never past cap + 1; then x2. */
    size_t limit = cap < SIZE_MAX ? cap + 1 : cap;
    size_t size = info.contentSize ? (size_t)info.contentSize + 1 : (in_len > SIZE_MAX / 4 ? SIZE_MAX : in_len * 4);
    if (size < 65536)
        size = 65536;
    if (size > limit)
        size = limit;
    uint8_t *buf = (uint8_t *)malloc(size ? size : 1);
    if (buf == NULL) {
        return fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for an lz4 batch");
    }
    size_t total = 0;
    int rc = FKC_OK;
    for (;;) {
        if (total == size) {
            if (size == limit) {
                rc = FKC_ERR_SIZE_LIMIT; /* cap + 1 bytes made and more to come */
                break;
            }
            size_t grown_size = size > limit / 2 ? limit : size * 2;
            uint8_t *grown = (uint8_t *)realloc(buf, grown_size);
            if (grown == NULL) {
                rc = fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_NOMEM, "out of memory for an lz4 batch");
                break;
            }
            buf = grown;
            size = grown_size;
        }
        size_t dst_len = size - total;
        size_t src_len = in_len - pos;
        code = lz4.decompress(dctx, buf + total, &dst_len, in + pos, &src_len, NULL);
        if (lz4.isError(code)) {
            rc = fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS,
                              "RuntimeError: LZ4F_decompress failed with code: %s", lz4.getErrorName(code));
            break;
        }
        pos += src_len;
        total += dst_len;
        if (total > cap) {
            rc = FKC_ERR_SIZE_LIMIT;
            break;
        }
        if (code == 0) { /* the frame's end mark (and checksum) was read */
            if (pos != in_len)
                rc = fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "ValueError: bytes after the LZ4 frame");
            break;
        }
        if (pos == in_len && total < size) { /* wants more input, and there is none */
            rc = fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "ValueError: LZ4 frame is cut off");
            break;
        }
        if (src_len == 0 && dst_len == 0 && total < size) {
            rc = fkc_lz4_fail(errbuf, errbuf_len, FKC_ERR_DECOMPRESS, "ValueError: LZ4 frame makes no progress");
            break;
        }
    }
    if (rc != FKC_OK) {
        free(buf);
        return rc;
    }
    if (total < size / 2) { /* give back what the guess over-asked (a step may hold many of these) */
        uint8_t *shrunk = (uint8_t *)realloc(buf, total ? total : 1);
        if (shrunk != NULL)
            buf = shrunk;
    }
    out->data = buf;
    out->len = total;
    out->owner = buf;
    out->owner_is_malloc = 1;
    return FKC_OK;
}
