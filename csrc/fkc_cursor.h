/*
 * fkc_cursor.h — the one bounds-check idiom of the C kernels.
 *
 * Contract
 *   A cursor is {start, pos, end} over bytes the caller keeps alive. Every
 *   read checks `need > end - pos` (never `pos + need > end`, which can wrap)
 *   before touching memory, so no read ever leaves [start, end).
 *
 *   Errors are sticky (as franz-go's kbin.Reader): the first failed read
 *   records what was being read and the byte position (relative to `start`,
 *   plus `base_pos` so positions inside a sub-slice still name the byte in
 *   the caller's blob), sets `failed`, and from then on every read returns 0
 *   without moving. A parser can therefore do a run of reads and check once.
 *
 *   A failed read never moves the cursor: `pos` stays at the first byte that
 *   could not be read, which is the position reported.
 *
 *   All multi-byte integers are big-endian (Kafka's wire order). Reads go
 *   through memcpy-free byte shifts, so unaligned input is fine.
 *
 * No allocation, no Python API: usable with the GIL released and from fuzzers.
 */
#ifndef FKC_CURSOR_H
#define FKC_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fkc_cursor {
    const uint8_t *start; /* first byte of the slice, for positions in errors */
    const uint8_t *pos;   /* next byte to read */
    const uint8_t *end;   /* one past the last readable byte */
    size_t base_pos;      /* position of `start` inside the caller's whole blob */
    int failed;           /* sticky: nonzero after the first failed read */
    const char *what;     /* what the first failed read was reading (static string) */
    const char *problem;  /* why it failed: "truncated", "over-long varint", ... (static) */
    size_t fail_pos;      /* blob position of the first failure */
} fkc_cursor;

static inline void fkc_cursor_init(fkc_cursor *c, const uint8_t *data, size_t len, size_t base_pos)
{
    c->start = data;
    c->pos = data;
    c->end = data + len;
    c->base_pos = base_pos;
    c->failed = 0;
    c->what = NULL;
    c->problem = NULL;
    c->fail_pos = 0;
}

/* Bytes left to read (0 once failed, so loops on `remaining` end). */
static inline size_t fkc_cursor_remaining(const fkc_cursor *c)
{
    return c->failed ? 0 : (size_t)(c->end - c->pos);
}

/* Position of the next byte inside the caller's whole blob. */
static inline size_t fkc_cursor_tell(const fkc_cursor *c)
{
    return c->base_pos + (size_t)(c->pos - c->start);
}

/* Record the first failure only: later failures are consequences of it.
 * `problem` says why ("truncated" when bytes ran out). */
static inline void fkc_cursor_fail_because(fkc_cursor *c, const char *what, const char *problem)
{
    if (!c->failed) {
        c->failed = 1;
        c->what = what;
        c->problem = problem;
        c->fail_pos = fkc_cursor_tell(c);
    }
}

static inline void fkc_cursor_fail(fkc_cursor *c, const char *what)
{
    fkc_cursor_fail_because(c, what, "truncated");
}

/* The single check every read goes through. Returns 1 when `need` bytes are
 * readable; otherwise marks the cursor failed and returns 0. */
static inline int fkc_cursor_need(fkc_cursor *c, size_t need, const char *what)
{
    if (c->failed)
        return 0;
    if (need > (size_t)(c->end - c->pos)) {
        fkc_cursor_fail(c, what);
        return 0;
    }
    return 1;
}

static inline uint8_t fkc_read_u8(fkc_cursor *c, const char *what)
{
    if (!fkc_cursor_need(c, 1, what))
        return 0;
    return *c->pos++;
}

static inline int8_t fkc_read_i8(fkc_cursor *c, const char *what)
{
    return (int8_t)fkc_read_u8(c, what);
}

static inline uint16_t fkc_load_be16(const uint8_t *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | (unsigned)p[1]);
}

static inline uint32_t fkc_load_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t fkc_load_be64(const uint8_t *p)
{
    return ((uint64_t)fkc_load_be32(p) << 32) | (uint64_t)fkc_load_be32(p + 4);
}

static inline uint16_t fkc_read_u16(fkc_cursor *c, const char *what)
{
    if (!fkc_cursor_need(c, 2, what))
        return 0;
    uint16_t v = fkc_load_be16(c->pos);
    c->pos += 2;
    return v;
}

static inline int16_t fkc_read_i16(fkc_cursor *c, const char *what)
{
    return (int16_t)fkc_read_u16(c, what);
}

static inline uint32_t fkc_read_u32(fkc_cursor *c, const char *what)
{
    if (!fkc_cursor_need(c, 4, what))
        return 0;
    uint32_t v = fkc_load_be32(c->pos);
    c->pos += 4;
    return v;
}

static inline int32_t fkc_read_i32(fkc_cursor *c, const char *what)
{
    return (int32_t)fkc_read_u32(c, what);
}

static inline uint64_t fkc_read_u64(fkc_cursor *c, const char *what)
{
    if (!fkc_cursor_need(c, 8, what))
        return 0;
    uint64_t v = fkc_load_be64(c->pos);
    c->pos += 8;
    return v;
}

static inline int64_t fkc_read_i64(fkc_cursor *c, const char *what)
{
    return (int64_t)fkc_read_u64(c, what);
}

/* Borrow `len` bytes in place (no copy). Returns NULL on failure; a zero-length
 * borrow returns the current position (non-NULL) so callers can tell it from
 * a failure. */
static inline const uint8_t *fkc_read_bytes(fkc_cursor *c, size_t len, const char *what)
{
    if (!fkc_cursor_need(c, len, what))
        return NULL;
    const uint8_t *p = c->pos;
    c->pos += len;
    return p;
}

static inline int fkc_skip(fkc_cursor *c, size_t len, const char *what)
{
    return fkc_read_bytes(c, len, what) != NULL;
}

/* A sub-cursor over the next `len` bytes, advancing the parent past them.
 * Positions reported by the child stay blob-relative. */
static inline int fkc_cursor_sub(fkc_cursor *c, size_t len, fkc_cursor *child, const char *what)
{
    size_t at = fkc_cursor_tell(c);
    const uint8_t *p = fkc_read_bytes(c, len, what);
    if (p == NULL) {
        fkc_cursor_init(child, c->pos, 0, at);
        fkc_cursor_fail(child, what);
        return 0;
    }
    fkc_cursor_init(child, p, len, at);
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* FKC_CURSOR_H */
