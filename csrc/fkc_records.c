/* fkc_records.c — record batches v2 and legacy message sets → descriptors.
 * See fkc_records.h for the contract. Layouts (Kafka's field names):
 *
 *   v2 batch: BaseOffset i64, BatchLength i32, PartitionLeaderEpoch i32,
 *     Magic i8, CRC u32 (CRC-32C over Attributes..end), Attributes i16,
 *     LastOffsetDelta i32, BaseTimestamp i64, MaxTimestamp i64,
 *     ProducerId i64, ProducerEpoch i16, BaseSequence i32, RecordCount i32,
 *     records (one compressed payload when the codec is not none).
 *   v2 record: Length varint, Attributes i8, TimestampDelta varlong,
 *     OffsetDelta varint, KeyLength varint, Key, ValueLength varint, Value,
 *     HeaderCount varint, headers (KeyLength varint, Key, ValueLength varint,
 *     Value).
 *   legacy message: Offset i64, MessageSize i32, CRC u32 (IEEE CRC-32 over
 *     Magic..end), Magic i8, Attributes i8, [Timestamp i64 when magic 1],
 *     KeyLength i32, Key, ValueLength i32, Value.
 */
#include "fkc_records.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_arrow_builder.h"
#include "fkc_copy.h"
#include "fkc_crc32.h"
#include "fkc_crc32c.h"
#include "fkc_cursor.h"
#include "fkc_grow.h"
#include "fkc_varint.h"

#define FKC_LOG_OVERHEAD 12        /* Offset i64 + length i32, before every batch / message */
#define FKC_MESSAGE_MIN_SIZE_V0 14 /* CRC + Magic + Attributes + KeyLength + ValueLength */
#define FKC_MESSAGE_MIN_SIZE_V1 22 /* ... + Timestamp */
#define FKC_V2_HEADER_SIZE 61      /* whole v2 batch header, BaseOffset..RecordCount */
#define FKC_V2_CRC_START 21        /* Attributes: where the CRC-32C coverage begins */
#define FKC_HEADER_UP_TO_MAGIC 17  /* Offset + size + 4 bytes + Magic: enough to dispatch */
#define FKC_ARROW_HINT_MAX ((size_t)16 << 20) /* fkc_decode_arrow: input bytes that size the first reservation */
#define FKC_RECORD_MIN_SIZE 7      /* v2 record: Length + Attributes + the 5 varints, 1 byte each */

/* The kept records of one batch: parsed whole before any is handed out. */
typedef struct fkc_recbuf {
    fkc_record *records;
    size_t count;
    size_t capacity;
} fkc_recbuf;

/* The resumable decoder (fkc_stream in the header). */
typedef struct fkc_stream {
    const uint8_t *data;
    size_t len;
    fkc_decode_opts own_opts; /* a copy: the caller's struct need not outlive the stream */
    const fkc_decode_opts *opts;
    size_t pos; /* blob byte where the next entry starts */

    /* A batch is parsed straight into the step's output array (`dst` points
     * at a view of it while parsing); the records of it the step cannot take
     * (past max_records or the Arrow limits) are moved to `batch` and handed
     * out from batch_index on by later steps. `blob` is the open batch's
     * decompressed buffer (at most one per batch or legacy wrapper). */
    fkc_recbuf *dst;
    fkc_recbuf batch;
    size_t batch_index;
    int64_t batch_floor; /* next_offset before the open batch */
    int64_t open_resume; /* one past the last record handed out of the open batch, else batch_floor */
    fkc_blob blob;
    int have_blob;

    /* Decompressed buffers of batches finished during the current step:
     * the step's descriptors point into them, so they live until the next
     * step (or free). held_bytes bounds how many a step accumulates. */
    fkc_blob *held;
    size_t held_count;
    size_t held_capacity;
    size_t held_bytes;

    /* Decompressed bytes of every batch this stream opened, all steps
     * together (saturating): the record buffer charges each poll with what
     * the steps it handed out decompressed, and starts no further step once
     * a poll's charge passes its budget (fastkc/config.py, decode_budget). */
    size_t decompressed_bytes;
    /* Decompressed bytes of the entry being opened (0 when uncompressed),
     * added to decompressed_bytes once it decoded. Kept apart from `blob`
     * because a zero-copy Arrow sink takes the buffer over while the entry
     * is parsed: the stream no longer has it, yet it did decompress it. */
    size_t opening_bytes;

    int64_t next_offset;  /* one past the complete entries processed, never below fetch_offset,
                           * never backwards; also the floor below which records are skipped */
    int32_t leader_epoch; /* of the batch last opened */
    int done;

    /* read_committed state, as the Java client's: aborted transactions not
     * yet reached (index into the sorted list) and the set of producer ids
     * whose abort marker has not been seen yet. Kept across steps, so abort
     * markers of earlier batches count for later ones. */
    size_t aborted_next;
    int64_t *aborted_set;
    size_t aborted_set_count;
    size_t aborted_set_capacity;
    int64_t batch_offset; /* base offset of the batch being decoded, for errors */
    int64_t batch_last;   /* its last offset as its header says (fkc_entry_last_offset), for errors */

    /* Share filter (opts->share): the first acquired range not yet passed,
     * and one past the last record compared with the ranges (no offset is
     * handed out twice); both only move forward. */
    size_t share_index;
    int64_t share_floor;

    /* Arrow totals already handed out into the caller's output that this
     * step's records will be appended to (poll_arrow joins the steps of
     * several partitions into one batch): the limits apply to the sum. */
    uint64_t arrow_base[6];

    /* Arrow in one pass: the step's column builder. A v2 batch whose
     * RecordCount the step can take whole, and whose payload cannot pass the
     * int32 offsets, is parsed straight into it;
     * any other batch is parsed into descriptors, appended as they are
     * handed out. cols_cap: rows the step can still take. */
    fkc_arrow_builder *cols;
    size_t cols_cap;

    /* With record_marks: where the step's output crosses a batch boundary
     * (fkc_stream_marks), so a caller handing a large prepared step out in
     * smaller pieces can say exactly what a step ending there would have
     * said. Reset by every step. */
    int record_marks;
    fkc_step_mark *marks;
    size_t mark_count;
    size_t mark_capacity;

    int error;            /* sticky: once set, the stream is done */
    int64_t error_offset;
    int64_t error_batch_last;
    char error_reason[256];
} fkc_decoder;

static int fkc_fail(fkc_decoder *d, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fkc_fail(fkc_decoder *d, int kind, const char *fmt, ...)
{
    if (d->error == FKC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->error_reason, sizeof d->error_reason, fmt, ap);
        va_end(ap);
        d->error = kind;
        d->error_offset = d->batch_offset;
        d->error_batch_last = d->batch_last;
    }
    return kind;
}

/* `where` tells whether positions are in the blob or inside a decompressed
 * payload (which has its own byte numbering). */
static int fkc_fail_cursor(fkc_decoder *d, const fkc_cursor *c, const char *where)
{
    return fkc_fail(d, FKC_ERR_INVALID, "%s: %s at byte %zu%s", c->what ? c->what : "read",
                    c->problem ? c->problem : "failed", c->fail_pos, where);
}

/* ---- UTF-8 -------------------------------------------------------------- */

int fkc_utf8_valid_any(const uint8_t *p, size_t len)
{
    size_t i = 0;
    /* Header keys are almost always ASCII: 8 bytes at a time while no byte
     * has its high bit set, then byte by byte from the first one that does. */
    while (len - i >= 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        if (word & UINT64_C(0x8080808080808080))
            break;
        i += 8;
    }
    while (i < len) {
        uint8_t b = p[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (b >= 0xC2 && b <= 0xDF) {
            n = 1;
            cp = b & 0x1Fu;
        } else if (b >= 0xE0 && b <= 0xEF) {
            n = 2;
            cp = b & 0x0Fu;
        } else if (b >= 0xF0 && b <= 0xF4) {
            n = 3;
            cp = b & 0x07u;
        } else {
            return 0; /* continuation byte first, overlong 2-byte lead, or > U+10FFFF */
        }
        if (n > len - i - 1)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            uint8_t cb = p[i + k];
            if ((cb & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (cb & 0x3Fu);
        }
        /* Reject overlong forms, surrogates and code points past U+10FFFF,
         * exactly what Python's strict utf-8 decoder rejects. */
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

/* ---- arena ------------------------------------------------------------- */

static int fkc_reserve_one(fkc_decoder *d)
{
    fkc_recbuf *r = d->dst;
    if (r->count < r->capacity)
        return FKC_OK;
    fkc_record *grown = (fkc_record *)fkc_grow(r->records, &r->capacity, r->count + 1, sizeof *grown, 256);
    if (grown == NULL)
        return fkc_fail(d, FKC_ERR_NOMEM, "out of memory for record descriptors");
    r->records = grown;
    return FKC_OK;
}

/* Take ownership of the open batch's decompressed buffer (one per batch). */
static int fkc_keep_blob(fkc_decoder *d, fkc_blob *blob)
{
    if (d->have_blob) { /* cannot happen: one payload per batch; never leak */
        fkc_blob_release(d->opts->host, blob);
        return fkc_fail(d, FKC_ERR_INVALID, "internal: a second decompressed buffer for one batch");
    }
    d->blob = *blob;
    d->have_blob = 1;
    d->opening_bytes = blob->len;
    return FKC_OK;
}

static int fkc_decompress_payload(fkc_decoder *d, int codec, int legacy_magic0, const uint8_t *in, size_t len,
                                  size_t blob_pos, fkc_blob *out)
{
    char reason[160];
    reason[0] = 0;
    int rc = fkc_decompress(d->opts->host, codec, legacy_magic0, in, len, d->opts->max_decompressed_bytes, out,
                            reason, sizeof reason);
    if (rc != FKC_OK) {
        if (rc == FKC_ERR_SIZE_LIMIT)
            return fkc_fail(d, rc, "payload at byte %zu decompresses past max_decompressed_bytes=%zu (%s)", blob_pos,
                            d->opts->max_decompressed_bytes, reason);
        if (rc == FKC_ERR_UNSUPPORTED_CODEC)
            return fkc_fail(d, rc, "unknown compression codec id %d at byte %zu", codec, blob_pos);
        return fkc_fail(d, rc, "cannot decompress codec %d payload at byte %zu: %s", codec, blob_pos, reason);
    }
    return fkc_keep_blob(d, out);
}

/* Java's CompletedFetch rule: a record below the position reached so far
 * (fetch_offset, then one past each complete batch) is skipped, so a batch
 * that repeats offsets of an earlier one never hands them out twice. */
static int fkc_keep_offset(const fkc_decoder *d, const fkc_decode_opts *o, int64_t offset)
{
    if (offset < d->next_offset)
        return 0;
    if (o->stop_offset >= 0 && offset >= o->stop_offset)
        return 0;
    return 1;
}

/* The share filter (fkc_decode_opts.share): 1 when the record at `offset`
 * is acquired and past every record compared before it; then *count is its
 * range's delivery count. Java's ShareCompletedFetch compares each record
 * with the next acquired offset; with ranges the same rule is a floor (one
 * past the last record compared) and a forward-only range cursor. */
static inline int fkc_share_keep(fkc_decoder *d, const fkc_decode_opts *o, int64_t offset, int16_t *count)
{
    if (offset < d->share_floor)
        return 0;
    d->share_floor = offset < INT64_MAX ? offset + 1 : INT64_MAX;
    while (d->share_index < o->acquired_n && o->acquired_last[d->share_index] < offset)
        d->share_index++;
    if (d->share_index == o->acquired_n || offset < o->acquired_first[d->share_index])
        return 0;
    *count = o->acquired_count[d->share_index];
    return 1;
}

static void fkc_advance(fkc_decoder *d, int64_t next)
{
    if (next > d->next_offset)
        d->next_offset = next;
}

/* ---- read_committed --------------------------------------------------- */

static int fkc_aborted_contains(const fkc_decoder *d, int64_t pid)
{
    for (size_t i = 0; i < d->aborted_set_count; i++)
        if (d->aborted_set[i] == pid)
            return 1;
    return 0;
}

static int fkc_aborted_add(fkc_decoder *d, int64_t pid)
{
    if (fkc_aborted_contains(d, pid))
        return FKC_OK;
    if (d->aborted_set_count == d->aborted_set_capacity) {
        int64_t *grown = (int64_t *)fkc_grow(d->aborted_set, &d->aborted_set_capacity, d->aborted_set_count + 1,
                                             sizeof *grown, 8);
        if (grown == NULL)
            return fkc_fail(d, FKC_ERR_NOMEM, "out of memory for aborted producer ids");
        d->aborted_set = grown;
    }
    d->aborted_set[d->aborted_set_count++] = pid;
    return FKC_OK;
}

static void fkc_aborted_remove(fkc_decoder *d, int64_t pid)
{
    for (size_t i = 0; i < d->aborted_set_count; i++) {
        if (d->aborted_set[i] == pid) {
            d->aborted_set[i] = d->aborted_set[--d->aborted_set_count];
            return;
        }
    }
}

/* ---- v2 records ------------------------------------------------------- */

static int fkc_add_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out) ? 0 : 1;
}

static int fkc_fail_timestamp_us(fkc_decoder *d, const fkc_record *rec) __attribute__((noinline, cold));
static int fkc_fail_arrow_nomem(fkc_decoder *d) __attribute__((noinline, cold));

static int fkc_fail_arrow_nomem(fkc_decoder *d)
{
    return fkc_fail(d, FKC_ERR_ARROW_NOMEM, "out of memory for the Arrow columns of the batch");
}

static int fkc_fail_timestamp_us(fkc_decoder *d, const fkc_record *rec)
{
    return fkc_fail(d, FKC_ERR_INVALID, "record at offset %lld: timestamp %lld ms overflows int64 microseconds",
                    (long long)rec->offset, (long long)rec->timestamp);
}

/* Keep or drop a decoded record: to_columns (a constant where it is
 * inlined), append it to the step's Arrow columns, else count the
 * descriptor already written at records[count]; also the Arrow-only check
 * that the timestamp fits int64 microseconds. Inlined: it runs once per
 * record, and its error path is kept out of line. */
static inline __attribute__((always_inline)) int fkc_commit_record(fkc_decoder *d, fkc_record *rec,
                                                                   const int to_columns)
{
    const fkc_decode_opts *o = d->opts;
    if (!fkc_keep_offset(d, o, rec->offset))
        return FKC_OK;
    if (o->share && !fkc_share_keep(d, o, rec->offset, &rec->delivery_count))
        return FKC_OK; /* not acquired: no descriptor, no row */
    if (o->arrow_timestamps && rec->timestamp_type >= 0) {
        int64_t us;
        if (__builtin_mul_overflow(rec->timestamp, (int64_t)1000, &us))
            return fkc_fail_timestamp_us(d, rec);
    }
    if (to_columns) {
        if (!fkc_builder_append(d->cols, rec))
            return fkc_fail_arrow_nomem(d);
    } else
        d->dst->count++;
    return FKC_OK;
}

/* Fast path for the common record: every varint 1-3 bytes (unsigned value
 * below 2^21, where strict and lenient decoding agree). Reads
 * through plain pointers with the same overflow-safe bound checks (`need >
 * end - p`) but without the sticky cursor's bookkeeping. Returns 0 for
 * anything else -- a longer varint, a bad length or UTF-8 key, a short record --
 * and the caller then runs the checked parser from the same byte, which
 * accepts or reports it exactly as before; on 0 nothing is consumed. */
static inline __attribute__((always_inline)) int fkc_fast_uvarint21(const uint8_t **pp, const uint8_t *end,
                                                                   uint32_t *out)
{
    const uint8_t *p = *pp;
    size_t avail = (size_t)(end - p);
    if (avail >= 1 && p[0] < 0x80) {
        *out = p[0];
        *pp = p + 1;
        return 1;
    }
    if (avail >= 2 && p[1] < 0x80) {
        *out = (uint32_t)(p[0] & 0x7F) | ((uint32_t)p[1] << 7);
        *pp = p + 2;
        return 1;
    }
    if (avail >= 3 && p[2] < 0x80) {
        *out = (uint32_t)(p[0] & 0x7F) | ((uint32_t)(p[1] & 0x7F) << 7) | ((uint32_t)p[2] << 14);
        *pp = p + 3;
        return 1;
    }
    return 0;
}

/* The fast path's header list (kept out of line: most records have none,
 * and inlining it costs the header-less path registers). Same rules as the
 * checked parser; returns 0 for anything it does not accept as is. */
static __attribute__((noinline)) int fkc_fast_headers(const uint8_t **pp, const uint8_t *end, const uint8_t **headers,
                                                      int32_t *count, int64_t *size, int64_t *key_bytes)
{
    const uint8_t *p = *pp;
    uint32_t u;
    if (!fkc_fast_uvarint21(&p, end, &u))
        return 0;
    int32_t header_count = fkc_zigzag32_decode(u);
    if (header_count < 0)
        return 0;
    *headers = p;
    int64_t header_size = 0, header_key_bytes = 0;
    /* header_count is untrusted: every header takes >= 2 bytes, and the loop
     * gives up as soon as the record's bytes run out. */
    for (int32_t i = 0; i < header_count; i++) {
        if (!fkc_fast_uvarint21(&p, end, &u))
            return 0;
        int32_t hkey_len = fkc_zigzag32_decode(u);
        if (hkey_len < 0 || (size_t)hkey_len > (size_t)(end - p) || !fkc_utf8_valid(p, (size_t)hkey_len))
            return 0;
        p += hkey_len;
        if (!fkc_fast_uvarint21(&p, end, &u))
            return 0;
        int32_t hvalue_len = fkc_zigzag32_decode(u);
        if (hvalue_len >= 0) {
            if ((size_t)hvalue_len > (size_t)(end - p))
                return 0;
            p += hvalue_len;
        } else if (hvalue_len != -1) {
            return 0;
        }
        header_key_bytes += hkey_len;
        header_size += (int64_t)hkey_len + (hvalue_len > 0 ? (int64_t)hvalue_len : 0);
    }
    *pp = p;
    *count = header_count;
    *size = header_size;
    *key_bytes = header_key_bytes;
    return 1;
}

static inline __attribute__((always_inline)) int fkc_parse_record_v2_fast_body(fkc_cursor *c, fkc_record *rec,
                                                                              int64_t *timestamp_delta,
                                                                              int32_t *offset_delta, int allow_headers)
{
    if (c->failed)
        return 0;
    const uint8_t *p = c->pos;
    uint32_t u;
    if (!fkc_fast_uvarint21(&p, c->end, &u))
        return 0;
    int32_t length = fkc_zigzag32_decode(u);
    if (length < 1 || (size_t)length > (size_t)(c->end - p))
        return 0;
    const uint8_t *end = p + length;
    p++; /* record attributes: unused */
    if (!fkc_fast_uvarint21(&p, end, &u))
        return 0;
    int64_t ts_delta = (int64_t)fkc_zigzag32_decode(u); /* |value| < 2^20: same in 32 or 64 bits */
    if (!fkc_fast_uvarint21(&p, end, &u))
        return 0;
    int32_t off_delta = fkc_zigzag32_decode(u);
    if (!fkc_fast_uvarint21(&p, end, &u))
        return 0;
    int32_t key_len = fkc_zigzag32_decode(u);
    const uint8_t *key = NULL;
    if (key_len >= 0) {
        if ((size_t)key_len > (size_t)(end - p))
            return 0;
        key = p;
        p += key_len;
    } else if (key_len != -1) {
        return 0;
    }
    if (!fkc_fast_uvarint21(&p, end, &u))
        return 0;
    int32_t value_len = fkc_zigzag32_decode(u);
    const uint8_t *value = NULL;
    if (value_len >= 0) {
        if ((size_t)value_len > (size_t)(end - p))
            return 0;
        value = p;
        p += value_len;
    } else if (value_len != -1) {
        return 0;
    }
    const uint8_t *headers;
    int32_t header_count = 0;
    int64_t header_size = 0, header_key_bytes = 0;
    if (end - p == 1 && *p == 0) {
        /* no headers (count 0 as the single byte 0x00): the common case */
        headers = ++p;
    } else if (!allow_headers || !fkc_fast_headers(&p, end, &headers, &header_count, &header_size, &header_key_bytes)) {
        return 0;
    }
    if (p != end)
        return 0;
    c->pos = end;
    *timestamp_delta = ts_delta;
    *offset_delta = off_delta;
    rec->key = key;
    rec->key_len = key_len;
    rec->value = value;
    rec->value_len = value_len;
    rec->headers = headers;
    rec->headers_len = (size_t)(end - headers);
    rec->header_count = header_count;
    rec->header_size = header_count > 0 ? (int32_t)header_size : -1;
    rec->header_key_bytes = (int32_t)header_key_bytes;
    rec->checksum = 0;
    rec->magic = 2;
    return 1;
}

/* Two instances: the header-less one inlined into the batch loop (the
 * common record; no call inside keeps the loop's registers free), the one
 * that also takes headers out of line, tried before the checked parser. */
static inline __attribute__((always_inline)) int fkc_parse_record_v2_fast(fkc_cursor *c, fkc_record *rec,
                                                                         int64_t *timestamp_delta,
                                                                         int32_t *offset_delta)
{
    return fkc_parse_record_v2_fast_body(c, rec, timestamp_delta, offset_delta, 0);
}

static __attribute__((noinline)) int fkc_parse_record_v2_fast_headers(fkc_cursor *c, fkc_record *rec,
                                                                     int64_t *timestamp_delta, int32_t *offset_delta)
{
    return fkc_parse_record_v2_fast_body(c, rec, timestamp_delta, offset_delta, 1);
}

/* Parse one v2 record at the cursor into *rec. Offsets and timestamps are
 * not computed here (control records never need them). Returns FKC_OK or an
 * error already recorded. */
static int fkc_parse_record_v2(fkc_decoder *d, fkc_cursor *c, const char *where, fkc_record *rec,
                               int64_t *timestamp_delta, int32_t *offset_delta)
{
    size_t at = fkc_cursor_tell(c);
    int32_t length = fkc_read_varint(c, "record length");
    if (c->failed)
        return fkc_fail_cursor(d, c, where);
    if (length < 0)
        return fkc_fail(d, FKC_ERR_INVALID, "negative record length %d at byte %zu%s", length, at, where);
    fkc_cursor rc;
    if (!fkc_cursor_sub(c, (size_t)length, &rc, "record (length past the batch end)"))
        return fkc_fail_cursor(d, c, where);

    (void)fkc_read_i8(&rc, "record attributes");
    *timestamp_delta = fkc_read_varlong(&rc, "record timestamp delta");
    *offset_delta = fkc_read_varint(&rc, "record offset delta");
    int32_t key_len = fkc_read_varint(&rc, "record key length");
    if (!rc.failed && key_len < -1)
        return fkc_fail(d, FKC_ERR_INVALID, "record key length %d at byte %zu%s", key_len, at, where);
    const uint8_t *key = key_len >= 0 ? fkc_read_bytes(&rc, (size_t)key_len, "record key") : NULL;
    int32_t value_len = fkc_read_varint(&rc, "record value length");
    if (!rc.failed && value_len < -1)
        return fkc_fail(d, FKC_ERR_INVALID, "record value length %d at byte %zu%s", value_len, at, where);
    const uint8_t *value = value_len >= 0 ? fkc_read_bytes(&rc, (size_t)value_len, "record value") : NULL;
    int32_t header_count = fkc_read_varint(&rc, "record header count");
    if (!rc.failed && header_count < 0)
        return fkc_fail(d, FKC_ERR_INVALID, "negative header count %d at byte %zu%s", header_count, at, where);
    const uint8_t *headers = rc.pos;
    int64_t header_size = 0;
    int64_t header_key_bytes = 0;
    /* header_count is untrusted: the loop ends as soon as the bytes do. */
    for (int32_t i = 0; i < header_count && !rc.failed; i++) {
        size_t hat = fkc_cursor_tell(&rc);
        int32_t hkey_len = fkc_read_varint(&rc, "header key length");
        if (rc.failed)
            break;
        if (hkey_len < 0)
            return fkc_fail(d, FKC_ERR_INVALID, "header key length %d at byte %zu%s (keys are never null)", hkey_len,
                            hat, where);
        const uint8_t *hkey = fkc_read_bytes(&rc, (size_t)hkey_len, "header key");
        if (rc.failed)
            break;
        if (!fkc_utf8_valid(hkey, (size_t)hkey_len))
            return fkc_fail(d, FKC_ERR_INVALID, "header key at byte %zu%s is not valid UTF-8", hat, where);
        int32_t hvalue_len = fkc_read_varint(&rc, "header value length");
        if (rc.failed)
            break;
        if (hvalue_len < -1)
            return fkc_fail(d, FKC_ERR_INVALID, "header value length %d at byte %zu%s", hvalue_len, hat, where);
        if (hvalue_len > 0)
            fkc_skip(&rc, (size_t)hvalue_len, "header value");
        if (rc.failed)
            break;
        /* int64 sums: two int32 lengths near 2^31 must not be added in int */
        header_size += (int64_t)hkey_len + (hvalue_len > 0 ? (int64_t)hvalue_len : 0);
        header_key_bytes += hkey_len;
    }
    if (rc.failed)
        return fkc_fail_cursor(d, &rc, where);
    if (fkc_cursor_remaining(&rc) != 0)
        return fkc_fail(d, FKC_ERR_INVALID, "record at byte %zu%s has length %d but its fields end %zu bytes early",
                        at, where, length, fkc_cursor_remaining(&rc));

    rec->key = key;
    rec->key_len = key_len;
    rec->value = value;
    rec->value_len = value_len;
    rec->headers = headers;
    rec->headers_len = (size_t)(rc.pos - headers);
    rec->header_count = header_count;
    rec->header_size = header_count > 0 ? (int32_t)header_size : -1;
    rec->header_key_bytes = (int32_t)header_key_bytes;
    rec->checksum = 0;
    rec->magic = 2;
    return FKC_OK;
}

/* Releases a decompressed buffer the C side allocated (xerial snappy). */
static void fkc_free_owner(void *ctx, void *owner)
{
    (void)ctx;
    free(owner);
}

/* A v2 batch's header fields its record loop needs. */
typedef struct fkc_batch_fields {
    int64_t base_offset, base_timestamp, max_timestamp;
    size_t blob_pos;
    const char *where; /* "" or where a decompressed payload came from, for errors */
    int32_t last_offset_delta, leader_epoch, record_count;
    int timestamp_type, control;
} fkc_batch_fields;

/* One key or value of a run into its column: the bytes (len >= 0) or a
 * null (len -1: the validity bit cleared, the null counted), then the
 * row's end offset. The locals of fkc_columns_run stay in registers (the
 * pointers to them vanish when this is inlined). */
static inline __attribute__((always_inline)) void fkc_run_put_field(uint8_t *data, size_t *len, int32_t *ends,
                                                                     uint8_t *validity, int64_t *nulls, size_t row,
                                                                     const uint8_t *src, int32_t n)
{
    if (n >= 0) {
        fkc_copy_field(data + *len, src, (size_t)n);
        *len += (size_t)n;
    } else {
        fkc_builder_bit_clear(validity, row);
        (*nulls)++;
    }
    ends[row + 1] = (int32_t)*len;
}

/* The copying Arrow sink's run of common records: records i, i + 1, ... of
 * the batch at *pc, parsed by the fast parser and written straight into the
 * columns, with the columns' pointers and lengths held in locals for the
 * whole run (through the builder they are reloaded after every store, which
 * may alias them) and short fields copied inline. On 100-byte records this
 * took parsing and committing from about 3.4 to 2.7 times the CRC pass's
 * time (perf samples, three alternating runs each). The run stops, before
 * consuming it, at the first record that is anything but common -- one the
 * fast parser does not take (headers, long varints, anything malformed), an
 * offset delta out of order, an offset or timestamp that would overflow, a
 * record the position or stop offset drops, one that does not fit the
 * columns as they are -- and the general loop then takes that record exactly
 * as it always did (reporting, skipping or growing), so what the run accepts
 * is only what the general loop accepts, written as fkc_builder_put writes
 * it. Returns the index of the first record it did not take; *prev_delta and
 * the cursor follow the records taken. Only for a builder without zero-copy
 * views and without the share column (fkc_parse_records_v2 checks). */
static __attribute__((noinline)) int32_t fkc_columns_run(fkc_decoder *d, fkc_cursor *pc, const fkc_batch_fields *h,
                                                         int32_t i, int32_t *prev_delta)
{
    fkc_arrow_builder *b = d->cols;
    const fkc_decode_opts *o = d->opts;
    fkc_cursor cur = *pc;
    const int32_t record_count = h->record_count, last_offset_delta = h->last_offset_delta;
    const int64_t base_offset = h->base_offset, base_timestamp = h->base_timestamp;
    const int64_t max_timestamp = h->max_timestamp;
    const int timestamp_type = h->timestamp_type;
    const int64_t floor = d->next_offset, stop = o->stop_offset;
    const int check_us = o->arrow_timestamps;
    int32_t prev = *prev_delta;
    size_t row = b->rows;
    const size_t rows_cap = b->rows_cap;
    uint8_t *const key_data = b->key_data.data, *const value_data = b->value_data.data;
    size_t key_len = b->key_data.len, value_len = b->value_data.len;
    const size_t key_cap = b->key_data.cap, value_cap = b->value_data.cap;
    int32_t *const key_offsets = b->key_offsets, *const value_offsets = b->value_offsets;
    int32_t *const headers_offsets = b->headers_offsets, *const timestamp_types = b->timestamp_type;
    int64_t *const offsets = b->offset, *const timestamps = b->timestamp;
    uint8_t *const key_validity = b->key_validity, *const value_validity = b->value_validity;
    const int32_t headers_so_far = (int32_t)b->headers;
    int64_t key_nulls = b->key_nulls, value_nulls = b->value_nulls, headers_nulls = b->headers_nulls;
    for (; i < record_count && row < rows_cap; i++) {
        fkc_cursor at = cur;
        fkc_record rec;
        int64_t timestamp_delta;
        int32_t offset_delta;
        if (!fkc_parse_record_v2_fast(&at, &rec, &timestamp_delta, &offset_delta))
            break;
        if (offset_delta <= prev || offset_delta > last_offset_delta)
            break;
        int64_t offset, timestamp = max_timestamp, us;
        if (__builtin_add_overflow(base_offset, (int64_t)offset_delta, &offset))
            break;
        if (timestamp_type != 1 && __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp))
            break;
        if (offset < floor || (stop >= 0 && offset >= stop))
            break;
        if (check_us && __builtin_mul_overflow(timestamp, (int64_t)1000, &us))
            break;
        if (fkc_len_or_0(rec.key_len) > key_cap - key_len || fkc_len_or_0(rec.value_len) > value_cap - value_len)
            break;
        fkc_run_put_field(key_data, &key_len, key_offsets, key_validity, &key_nulls, row, rec.key, rec.key_len);
        fkc_run_put_field(value_data, &value_len, value_offsets, value_validity, &value_nulls, row, rec.value,
                          rec.value_len);
        offsets[row] = offset;
        timestamps[row] = (int64_t)((uint64_t)timestamp * 1000u); /* as fkc_builder_put: wrapping, checked above */
        timestamp_types[row] = timestamp_type;
        headers_offsets[row + 1] = headers_so_far; /* no headers: a null list */
        headers_nulls++;
        row++;
        prev = offset_delta;
        cur = at;
    }
    b->rows = row;
    b->key_data.len = key_len;
    b->value_data.len = value_len;
    b->key_nulls = key_nulls;
    b->value_nulls = value_nulls;
    b->headers_nulls = headers_nulls;
    *prev_delta = prev;
    *pc = cur;
    return i;
}

/* Parse a v2 batch's RecordCount records from *pc into the sink:
 * to_columns (a constant at both call sites, so each instance keeps only
 * its sink's code): the step's Arrow columns, else descriptors (control
 * records: scratch, the first one's key returned as the marker). */
static inline __attribute__((always_inline)) int fkc_parse_records_v2(fkc_decoder *d, fkc_cursor *pc,
                                                                      const fkc_batch_fields *h, const int to_columns,
                                                                      const uint8_t **marker_key,
                                                                      int32_t *marker_key_len)
{
    fkc_recbuf *r = d->dst;
    const size_t blob_pos = h->blob_pos;
    const int32_t record_count = h->record_count, last_offset_delta = h->last_offset_delta;
    const int control = h->control;
    fkc_record scratch;
    fkc_record parsed; /* the record on its way to the columns */
    int32_t prev_delta = -1;
    /* The copying Arrow sink takes runs of common records in fkc_columns_run;
     * this loop takes each record a run stops at, then the next run starts.
     * A run that takes nothing ends the runs for the batch: its records are
     * not common (headers, say), and a call per record would cost more than
     * the run saves. */
    int runs = to_columns && !d->cols->zero_copy && !d->cols->share && !d->opts->share;
    for (int32_t i = 0; i < record_count; i++) {
        if (runs) {
            int32_t stopped = fkc_columns_run(d, pc, h, i, &prev_delta);
            runs = stopped > i;
            i = stopped;
            if (i == record_count)
                break;
        }
        /* Each record takes at least one byte, so a count larger than the
         * bytes left fails here rather than looping or preallocating. */
        if (fkc_cursor_remaining(pc) == 0)
            return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: payload ends after %d of %d records",
                            blob_pos, i, record_count);
        fkc_record *rec = &scratch;
        if (to_columns) {
            rec = &parsed;
        } else if (!control) {
            int rrc = fkc_reserve_one(d);
            if (rrc != FKC_OK)
                return rrc;
            rec = &r->records[r->count];
        }
        int64_t timestamp_delta = 0;
        int32_t offset_delta = 0;
        int rrc;
        if (!fkc_parse_record_v2_fast(pc, rec, &timestamp_delta, &offset_delta) &&
            !fkc_parse_record_v2_fast_headers(pc, rec, &timestamp_delta, &offset_delta)) {
            rrc = fkc_parse_record_v2(d, pc, h->where, rec, &timestamp_delta, &offset_delta);
            if (rrc != FKC_OK)
                return rrc;
        }
        /* Offsets in a batch strictly increase (compaction leaves gaps, never
         * reorders) and stay within LastOffsetDelta: anything else would hand
         * out offsets the position has passed or the batch does not cover. */
        if (offset_delta <= prev_delta || offset_delta > last_offset_delta)
            return fkc_fail(d, FKC_ERR_INVALID,
                            "record batch at byte %zu: record %d has OffsetDelta %d (previous %d, LastOffsetDelta %d)",
                            blob_pos, i, offset_delta, prev_delta, last_offset_delta);
        prev_delta = offset_delta;
        if (!to_columns && control) {
            if (i == 0) {
                *marker_key = rec->key;
                *marker_key_len = rec->key_len;
            }
            continue;
        }
        if (!fkc_add_i64(h->base_offset, offset_delta, &rec->offset))
            return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: record offset does not fit in int64",
                            blob_pos);
        if (h->timestamp_type == 1)
            rec->timestamp = h->max_timestamp;
        else if (!fkc_add_i64(h->base_timestamp, timestamp_delta, &rec->timestamp))
            return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: record timestamp does not fit in int64",
                            blob_pos);
        rec->timestamp_type = (int8_t)h->timestamp_type;
        rec->leader_epoch = h->leader_epoch;
        rrc = fkc_commit_record(d, rec, to_columns);
        if (rrc != FKC_OK)
            return rrc;
    }
    return FKC_OK;
}

static int fkc_decode_v2(fkc_decoder *d, const uint8_t *batch, size_t batch_len, size_t blob_pos)
{
    const fkc_decode_opts *o = d->opts;
    if (batch_len < FKC_V2_HEADER_SIZE)
        return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: BatchLength %zu is below the 49-byte minimum",
                        blob_pos, batch_len - FKC_LOG_OVERHEAD);
    fkc_cursor c;
    fkc_cursor_init(&c, batch, batch_len, blob_pos);
    int64_t base_offset = fkc_read_i64(&c, "BaseOffset");
    (void)fkc_read_i32(&c, "BatchLength");
    int32_t leader_epoch = fkc_read_i32(&c, "PartitionLeaderEpoch");
    (void)fkc_read_i8(&c, "Magic");
    uint32_t stored_crc = fkc_read_u32(&c, "CRC");
    int16_t attributes = fkc_read_i16(&c, "Attributes");
    int32_t last_offset_delta = fkc_read_i32(&c, "LastOffsetDelta");
    int64_t base_timestamp = fkc_read_i64(&c, "BaseTimestamp");
    int64_t max_timestamp = fkc_read_i64(&c, "MaxTimestamp");
    int64_t producer_id = fkc_read_i64(&c, "ProducerId");
    (void)fkc_read_i16(&c, "ProducerEpoch");
    (void)fkc_read_i32(&c, "BaseSequence");
    int32_t record_count = fkc_read_i32(&c, "RecordCount");
    if (c.failed) /* cannot happen: batch_len >= 61 was checked */
        return fkc_fail_cursor(d, &c, "");
    if (record_count < 0)
        return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: negative record count %d", blob_pos,
                        record_count);
    if (o->check_crcs) {
        uint32_t computed = fkc_crc32c(0, batch + FKC_V2_CRC_START, batch_len - FKC_V2_CRC_START);
        if (computed != stored_crc)
            return fkc_fail(d, FKC_ERR_CRC, "record batch at byte %zu: CRC-32C mismatch (stored 0x%08x, computed 0x%08x)",
                            blob_pos, stored_crc, computed);
    }
    /* (fkc_frame_entry already refused a negative LastOffsetDelta and a last
     * offset past int64: the batch could not advance the position.) */
    int64_t last_offset, batch_next;
    if (last_offset_delta < 0 || !fkc_add_i64(base_offset, last_offset_delta, &last_offset) ||
        !fkc_add_i64(last_offset, 1, &batch_next))
        return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: LastOffsetDelta %d is impossible", blob_pos,
                        last_offset_delta);
    d->leader_epoch = leader_epoch;
    /* A RecordCount that says more records than LastOffsetDelta leaves
     * offsets for cannot be true (deltas are distinct and in
     * [0, LastOffsetDelta]); checked before anything is decompressed. */
    if ((int64_t)record_count > (int64_t)last_offset_delta + 1)
        return fkc_fail(d, FKC_ERR_INVALID,
                        "record batch at byte %zu: RecordCount %d exceeds the %lld offsets LastOffsetDelta %d spans",
                        blob_pos, record_count, (long long)last_offset_delta + 1, last_offset_delta);
    int codec = attributes & 0x7;
    int timestamp_type = (attributes >> 3) & 1;
    int transactional = (attributes >> 4) & 1;
    int control = (attributes >> 5) & 1;

    int consult_txn = o->read_committed && producer_id >= 0;
    if (consult_txn) {
        while (d->aborted_next < o->aborted_count && o->aborted_first_offsets[d->aborted_next] <= last_offset) {
            int arc = fkc_aborted_add(d, o->aborted_pids[d->aborted_next]);
            if (arc != FKC_OK)
                return arc;
            d->aborted_next++;
        }
        if (!control && transactional && fkc_aborted_contains(d, producer_id)) {
            /* aborted: skipped without decompressing, as Java does */
            fkc_advance(d, batch_next);
            return FKC_OK;
        }
    }
    if (codec > FKC_CODEC_ZSTD)
        return fkc_fail(d, FKC_ERR_UNSUPPORTED_CODEC, "record batch at byte %zu: unknown compression codec id %d",
                        blob_pos, codec);
    if (o->max_batch_records && (uint64_t)record_count > (uint64_t)o->max_batch_records)
        return fkc_fail(d, FKC_ERR_BUDGET,
                        "record batch at byte %zu: RecordCount %d exceeds the budget of %zu records per batch",
                        blob_pos, record_count, o->max_batch_records);

    const uint8_t *payload = c.pos;
    size_t payload_len = fkc_cursor_remaining(&c);
    size_t payload_pos = fkc_cursor_tell(&c);
    char where[64];
    where[0] = 0;
    if (codec != FKC_CODEC_NONE) {
        fkc_blob out;
        int prc = fkc_decompress_payload(d, codec, 0, payload, payload_len, payload_pos, &out);
        if (prc != FKC_OK)
            return prc;
        payload = out.data;
        payload_len = out.len;
        payload_pos = 0;
        snprintf(where, sizeof where, " of the batch at byte %zu, decompressed", blob_pos);
    }

    fkc_cursor pc;
    fkc_cursor_init(&pc, payload, payload_len, payload_pos);
    /* The sink: the step's Arrow columns when the whole batch fits them (its
     * kept records are at most RecordCount, their bytes at most the
     * payload's: no int32 offset can pass its limit), else descriptors. One
     * parser either way. Nothing is reserved here: each append grows the
     * columns for the record it writes (fkc_builder_append), so neither
     * RecordCount nor the payload length sizes an allocation. A count the
     * payload cannot hold (each record takes >= FKC_RECORD_MIN_SIZE bytes)
     * fails in the descriptor sink exactly as it would here. */
    int to_columns = 0;
    if (d->cols != NULL && !control && (uint64_t)record_count <= d->cols_cap &&
        (size_t)record_count <= payload_len / FKC_RECORD_MIN_SIZE &&
        fkc_builder_batch_fits(d->cols, (uint64_t)record_count, payload_len) &&
        (!d->cols->zero_copy || payload_len <= (size_t)INT32_MAX)) {
        /* zero-copy: long keys and values become views into the payload
         * (the input's bytes, or the decompressed buffer kept below) */
        if (d->cols->zero_copy && !fkc_builder_region(d->cols, payload, payload_len))
            return fkc_fail_arrow_nomem(d);
        to_columns = 1;
    }
    fkc_batch_fields fields = {base_offset, base_timestamp, max_timestamp, blob_pos, where, last_offset_delta,
                               leader_epoch, record_count, timestamp_type, control};
    const uint8_t *marker_key = NULL;
    int32_t marker_key_len = -1;
    /* two instances of one loop: the compiler drops the other sink's code
     * and the per-record choice between them */
    int lrc = to_columns ? fkc_parse_records_v2(d, &pc, &fields, 1, &marker_key, &marker_key_len)
                         : fkc_parse_records_v2(d, &pc, &fields, 0, &marker_key, &marker_key_len);
    if (lrc != FKC_OK)
        return lrc;
    if (fkc_cursor_remaining(&pc) != 0)
        return fkc_fail(d, FKC_ERR_INVALID, "record batch at byte %zu: %zu bytes left over after %d records",
                        blob_pos, fkc_cursor_remaining(&pc), record_count);
    if (control && consult_txn && record_count > 0) {
        /* The control record's key: version i16, type i16 (0 abort, 1 commit). */
        if (marker_key_len < 4)
            return fkc_fail(d, FKC_ERR_INVALID, "control record at byte %zu: key shorter than 4 bytes", blob_pos);
        if (fkc_load_be16(marker_key + 2) == 0)
            fkc_aborted_remove(d, producer_id); /* ABORT ends the producer's aborted transaction */
    }
    if (to_columns && d->cols->zero_copy) {
        d->cols->region = -1;
        /* the views point into the decompressed buffer: the exported batch
         * owns it from here (the stream no longer releases it) */
        if (d->have_blob) {
            int kept = d->blob.owner_is_malloc ? fkc_builder_keep(d->cols, d->blob.owner, fkc_free_owner, NULL)
                                               : fkc_builder_keep(d->cols, d->blob.owner, d->opts->host->release,
                                                                  d->opts->host->ctx);
            if (!kept)
                return fkc_fail_arrow_nomem(d);
            d->have_blob = 0;
        }
    }
    fkc_advance(d, batch_next); /* control batches are never returned, but do advance */
    return FKC_OK;
}

/* ---- legacy message sets (magic 0 and 1) ----------------------------- */

typedef struct fkc_legacy_message {
    int64_t offset;
    int64_t timestamp;
    const uint8_t *key;
    const uint8_t *value;
    int32_t key_len;
    int32_t value_len;
    uint32_t crc;
    int8_t magic;
    int8_t attributes;
} fkc_legacy_message;

/* Parse one message spanning exactly [c.start, c.end) (log overhead
 * included), whose size was already checked against the minimum of `magic`.
 * The CRC is checked first (it covers every later field), as Java does. */
static int fkc_parse_legacy(fkc_decoder *d, fkc_cursor *c, const char *where, int8_t magic, fkc_legacy_message *m)
{
    size_t at = fkc_cursor_tell(c);
    m->offset = fkc_read_i64(c, "message offset");
    (void)fkc_read_i32(c, "message size");
    m->crc = fkc_read_u32(c, "message CRC");
    const uint8_t *crc_start = c->pos;
    if (c->failed)
        return fkc_fail_cursor(d, c, where);
    if (d->opts->check_crcs) {
        uint32_t computed = fkc_crc32(0, crc_start, (size_t)(c->end - crc_start));
        if (computed != m->crc)
            return fkc_fail(d, FKC_ERR_CRC, "message at byte %zu%s: CRC-32 mismatch (stored 0x%08x, computed 0x%08x)",
                            at, where, m->crc, computed);
    }
    (void)fkc_read_i8(c, "message magic");
    m->magic = magic;
    m->attributes = fkc_read_i8(c, "message attributes");
    m->timestamp = magic == 1 ? fkc_read_i64(c, "message timestamp") : -1;
    m->key_len = fkc_read_i32(c, "message key length");
    if (!c->failed && m->key_len < -1)
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu%s: key length %d", at, where, m->key_len);
    m->key = m->key_len >= 0 ? fkc_read_bytes(c, (size_t)m->key_len, "message key") : NULL;
    m->value_len = fkc_read_i32(c, "message value length");
    if (!c->failed && m->value_len < -1)
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu%s: value length %d", at, where, m->value_len);
    m->value = m->value_len >= 0 ? fkc_read_bytes(c, (size_t)m->value_len, "message value") : NULL;
    if (c->failed)
        return fkc_fail_cursor(d, c, where);
    if (fkc_cursor_remaining(c) != 0)
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu%s: %zu bytes left over after the value", at, where,
                        fkc_cursor_remaining(c));
    return FKC_OK;
}

static void fkc_fill_legacy(fkc_record *rec, const fkc_legacy_message *m, int64_t offset, int64_t timestamp,
                            int timestamp_type)
{
    rec->offset = offset;
    rec->timestamp = timestamp;
    rec->key = m->key;
    rec->key_len = m->key_len;
    rec->value = m->value;
    rec->value_len = m->value_len;
    rec->headers = NULL;
    rec->headers_len = 0;
    rec->header_count = 0;
    rec->header_size = -1;
    rec->header_key_bytes = 0;
    /* Java: legacy batches have no partition leader epoch. (kafka-python
     * leaks the previous v2 batch's epoch into them, an accident of state.) */
    rec->leader_epoch = -1;
    rec->checksum = m->crc;
    rec->timestamp_type = (int8_t)timestamp_type;
    rec->magic = m->magic;
}

static int fkc_legacy_min_size(int magic)
{
    return magic == 1 ? FKC_MESSAGE_MIN_SIZE_V1 : FKC_MESSAGE_MIN_SIZE_V0;
}

static int fkc_decode_legacy(fkc_decoder *d, const uint8_t *msg, size_t msg_len, size_t blob_pos, int8_t magic)
{
    fkc_recbuf *r = d->dst;
    d->leader_epoch = -1;
    size_t size = msg_len - FKC_LOG_OVERHEAD;
    if (size < (size_t)fkc_legacy_min_size(magic))
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: MessageSize %zu is below the magic-%d minimum %d",
                        blob_pos, size, magic, fkc_legacy_min_size(magic));
    fkc_cursor c;
    fkc_cursor_init(&c, msg, msg_len, blob_pos);
    fkc_legacy_message w;
    int rc = fkc_parse_legacy(d, &c, "", magic, &w);
    if (rc != FKC_OK)
        return rc;
    int codec = w.attributes & 0x7;
    int timestamp_type = magic == 0 ? -1 : (w.attributes >> 3) & 1;
    int64_t next;

    if (codec == FKC_CODEC_NONE) {
        if (!fkc_add_i64(w.offset, 1, &next))
            return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: next offset does not fit in int64", blob_pos);
        rc = fkc_reserve_one(d);
        if (rc != FKC_OK)
            return rc;
        fkc_fill_legacy(&r->records[r->count], &w, w.offset, w.timestamp, timestamp_type);
        rc = fkc_commit_record(d, &r->records[r->count], 0);
        if (rc != FKC_OK)
            return rc;
        fkc_advance(d, next);
        return FKC_OK;
    }
    if (codec > FKC_CODEC_LZ4) /* zstd needs magic 2 (KIP-110); 5-7 do not exist */
        return fkc_fail(d, FKC_ERR_UNSUPPORTED_CODEC, "message at byte %zu: unknown compression codec id %d",
                        blob_pos, codec);
    if (w.value == NULL)
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: compressed wrapper has a null value", blob_pos);

    fkc_blob out;
    rc = fkc_decompress_payload(d, codec, magic == 0, w.value, (size_t)w.value_len, blob_pos, &out);
    if (rc != FKC_OK)
        return rc;
    char where[64];
    snprintf(where, sizeof where, " of the message at byte %zu, decompressed", blob_pos);

    /* Inner messages are collected unfiltered first: with magic 1 their
     * offsets are relative to the last one, known only at the end. */
    size_t first = r->count;
    fkc_cursor ic;
    fkc_cursor_init(&ic, out.data, out.len, 0);
    while (fkc_cursor_remaining(&ic) > 0) {
        size_t at = fkc_cursor_tell(&ic);
        if (fkc_cursor_remaining(&ic) < FKC_LOG_OVERHEAD)
            return fkc_fail(d, FKC_ERR_INVALID, "inner message at byte %zu%s: header cut off", at, where);
        int32_t isize = (int32_t)fkc_load_be32(ic.pos + 8);
        if (isize < fkc_legacy_min_size(magic) || (size_t)isize > fkc_cursor_remaining(&ic) - FKC_LOG_OVERHEAD)
            return fkc_fail(d, FKC_ERR_INVALID, "inner message at byte %zu%s: MessageSize %d is impossible", at, where,
                            isize);
        int8_t inner_magic = (int8_t)ic.pos[16];
        if (inner_magic != magic)
            return fkc_fail(d, FKC_ERR_INVALID, "inner message at byte %zu%s: magic %d inside a magic-%d wrapper", at,
                            where, inner_magic, magic);
        fkc_cursor mc;
        fkc_cursor_sub(&ic, FKC_LOG_OVERHEAD + (size_t)isize, &mc, "inner message");
        fkc_legacy_message m;
        rc = fkc_parse_legacy(d, &mc, where, magic, &m);
        if (rc != FKC_OK)
            return rc;
        if ((m.attributes & 0x7) != FKC_CODEC_NONE)
            return fkc_fail(d, FKC_ERR_INVALID, "inner message at byte %zu%s is compressed again", at, where);
        if (d->opts->max_batch_records && r->count - first >= d->opts->max_batch_records)
            return fkc_fail(d, FKC_ERR_BUDGET,
                            "message at byte %zu: the compressed wrapper holds more than the budget of %zu records",
                            blob_pos, d->opts->max_batch_records);
        rc = fkc_reserve_one(d);
        if (rc != FKC_OK)
            return rc;
        /* A magic-1 wrapper with LogAppendTime stamps every inner record with its own time. */
        int64_t timestamp = timestamp_type == 1 ? w.timestamp : m.timestamp;
        fkc_fill_legacy(&r->records[r->count], &m, m.offset, timestamp, timestamp_type);
        r->count++;
    }
    if (r->count == first)
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: compressed wrapper holds no messages", blob_pos);
    if (magic == 1) {
        /* Relative offsets: the wrapper carries the absolute offset of the
         * last inner message. As Java and kafka-python, only applied when the
         * resulting base is not negative. */
        int64_t base;
        if (__builtin_sub_overflow(w.offset, r->records[r->count - 1].offset, &base))
            base = -1;
        if (base >= 0)
            for (size_t i = first; i < r->count; i++)
                if (!fkc_add_i64(r->records[i].offset, base, &r->records[i].offset))
                    return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: inner offset does not fit in int64",
                                    blob_pos);
    }
    if (!fkc_add_i64(r->records[r->count - 1].offset, 1, &next))
        return fkc_fail(d, FKC_ERR_INVALID, "message at byte %zu: next offset does not fit in int64", blob_pos);
    /* Filter in place: records [first, count) are compacted to the kept ones. */
    size_t end = r->count;
    r->count = first;
    for (size_t i = first; i < end; i++) {
        if (r->count != i)
            r->records[r->count] = r->records[i];
        rc = fkc_commit_record(d, &r->records[r->count], 0);
        if (rc != FKC_OK)
            return rc;
    }
    fkc_advance(d, next);
    return FKC_OK;
}

int fkc_header_next(fkc_header_iter *it, const uint8_t **key, int32_t *key_len, const uint8_t **value,
                    int32_t *value_len)
{
    if (it->pos >= it->end)
        return 0;
    /* Short key and value (one-byte lengths, the usual header): read
     * directly, with the same bounds; anything else takes the cursor. */
    const uint8_t *p = it->pos, *e = it->end;
    if (p[0] < 0x80) {
        int32_t fast_klen = fkc_zigzag32_decode(p[0]);
        p++;
        if (fast_klen >= 0 && (size_t)fast_klen < (size_t)(e - p) && p[fast_klen] < 0x80) {
            const uint8_t *fast_k = p;
            p += fast_klen;
            int32_t fast_vlen = fkc_zigzag32_decode(p[0]);
            p++;
            if (fast_vlen == -1 || (fast_vlen >= 0 && (size_t)fast_vlen <= (size_t)(e - p))) {
                *key = fast_k;
                *key_len = fast_klen;
                *value = fast_vlen >= 0 ? p : NULL;
                *value_len = fast_vlen;
                it->pos = fast_vlen >= 0 ? p + fast_vlen : p;
                return 1;
            }
        }
    }
    fkc_cursor c;
    fkc_cursor_init(&c, it->pos, (size_t)(it->end - it->pos), 0);
    int32_t klen = fkc_read_varint(&c, "header key length");
    const uint8_t *k = klen >= 0 ? fkc_read_bytes(&c, (size_t)klen, "header key") : NULL;
    int32_t vlen = fkc_read_varint(&c, "header value length");
    const uint8_t *v = vlen >= 0 ? fkc_read_bytes(&c, (size_t)vlen, "header value") : NULL;
    if (c.failed || k == NULL || vlen < -1) { /* validated in phase 1; defensive */
        it->pos = it->end;
        return 0;
    }
    *key = k;
    *key_len = klen;
    *value = v;
    *value_len = vlen >= 0 ? vlen : -1;
    it->pos = c.pos;
    return 1;
}

/* ---- framing -------------------------------------------------------- */

/* The last offset an entry's header claims: a v2 batch's BaseOffset +
 * LastOffsetDelta when both are readable and the sum is sane, else the base
 * offset (a legacy entry's offset is that of its last message). Errors
 * carry it, so a share decode can reject the bad batch's acquired offsets. */
static int64_t fkc_entry_last_offset(const uint8_t *p, size_t avail, int64_t base_offset)
{
    if (avail >= 27 && p[16] == 2) {
        int32_t delta = (int32_t)fkc_load_be32(p + 23);
        int64_t last;
        if (delta >= 0 && !__builtin_add_overflow(base_offset, (int64_t)delta, &last))
            return last;
    }
    return base_offset;
}

enum { FKC_FRAME_END, FKC_FRAME_COMPLETE, FKC_FRAME_CUT, FKC_FRAME_MALFORMED };

/* The one framing rule, used by the scan and by the decoder alike. Java's
 * ByteBufferLogInputStream order: fewer bytes than it takes to see the magic
 * byte is a cut tail; a size below the smallest legacy message, or a magic
 * that does not exist, is malformed even in a cut tail; a v2 header that is
 * too small, or whose LastOffsetDelta is negative or passes int64, is
 * malformed too (such a batch could never advance the position); only then
 * is a size past the end a cut tail. */
static int fkc_frame_entry(const uint8_t *p, size_t avail, size_t *entry_len, char *reason, size_t reason_len)
{
    if (avail == 0)
        return FKC_FRAME_END;
    if (avail < FKC_HEADER_UP_TO_MAGIC)
        return FKC_FRAME_CUT;
    int64_t base_offset = (int64_t)fkc_load_be64(p);
    int32_t length = (int32_t)fkc_load_be32(p + 8);
    int8_t magic = (int8_t)p[16];
    if (length < FKC_MESSAGE_MIN_SIZE_V0) {
        snprintf(reason, reason_len, "size field %d is below the 14-byte minimum", length);
        return FKC_FRAME_MALFORMED;
    }
    if (magic < 0 || magic > 2) {
        snprintf(reason, reason_len, "unknown magic %d", magic);
        return FKC_FRAME_MALFORMED;
    }
    if (magic == 2) {
        if ((size_t)length < FKC_V2_HEADER_SIZE - FKC_LOG_OVERHEAD) {
            snprintf(reason, reason_len, "BatchLength %d is below the 49-byte minimum", length);
            return FKC_FRAME_MALFORMED;
        }
        if (avail >= 27) {
            int32_t last_delta = (int32_t)fkc_load_be32(p + 23);
            int64_t last;
            if (last_delta < 0 || __builtin_add_overflow(base_offset, (int64_t)last_delta, &last) ||
                last == INT64_MAX) {
                snprintf(reason, reason_len, "LastOffsetDelta %d is impossible", last_delta);
                return FKC_FRAME_MALFORMED;
            }
        }
    } else if (base_offset == INT64_MAX) {
        snprintf(reason, reason_len, "message offset %lld leaves no next offset", (long long)base_offset);
        return FKC_FRAME_MALFORMED;
    }
    if ((size_t)length > avail - FKC_LOG_OVERHEAD)
        return FKC_FRAME_CUT;
    *entry_len = FKC_LOG_OVERHEAD + (size_t)length;
    return FKC_FRAME_COMPLETE;
}

void fkc_scan_blob(const uint8_t *data, size_t len, fkc_scan_info *info)
{
    memset(info, 0, sizeof *info);
    info->next_offset = -1;
    info->leader_epoch = -1;
    info->tail_offset = -1;
    info->tail_size = -1;
    size_t pos = 0;
    for (;;) {
        size_t avail = len - pos, entry_len = 0;
        int kind = fkc_frame_entry(data + pos, avail, &entry_len, info->reason, sizeof info->reason);
        if (kind == FKC_FRAME_END)
            break;
        if (kind != FKC_FRAME_COMPLETE) {
            info->tail = kind == FKC_FRAME_CUT ? FKC_TAIL_CUT : FKC_TAIL_MALFORMED;
            if (avail >= 8)
                info->tail_offset = (int64_t)fkc_load_be64(data + pos);
            if (avail >= FKC_LOG_OVERHEAD)
                info->tail_size = (int64_t)(int32_t)fkc_load_be32(data + pos + 8) + FKC_LOG_OVERHEAD;
            break;
        }
        const uint8_t *p = data + pos;
        int64_t base_offset = (int64_t)fkc_load_be64(p);
        int64_t next; /* fkc_frame_entry proved it fits */
        int codec;    /* the low three bits of Attributes: v2 int16 at 21, legacy int8 at 17 */
        if (p[16] == 2) {
            next = base_offset + (int64_t)(int32_t)fkc_load_be32(p + 23) + 1;
            info->leader_epoch = (int32_t)fkc_load_be32(p + 12);
            codec = p[22] & 0x07;
        } else {
            next = base_offset + 1; /* a wrapper's offset is that of its last inner message */
            info->leader_epoch = -1;
            codec = p[17] & 0x07;
        }
        if (codec == FKC_CODEC_GZIP || codec == FKC_CODEC_SNAPPY || codec == FKC_CODEC_ZSTD)
            info->slow_codec_bytes += entry_len;
        if (next > info->next_offset)
            info->next_offset = next;
        info->entries++;
        pos += entry_len;
        info->complete_bytes = pos;
    }
}

void fkc_check_blob(const uint8_t *data, size_t len, int64_t position, fkc_check_info *info)
{
    memset(info, 0, sizeof *info);
    info->next_offset = position;
    info->error_offset = -1;
    size_t pos = 0;
    for (;;) {
        size_t avail = len - pos, entry_len = 0;
        int kind = fkc_frame_entry(data + pos, avail, &entry_len, info->reason, sizeof info->reason);
        if (kind == FKC_FRAME_END)
            return;
        const uint8_t *p = data + pos;
        if (avail >= 8)
            info->error_offset = (int64_t)fkc_load_be64(p);
        if (kind == FKC_FRAME_MALFORMED) {
            info->status = FKC_CHECK_CORRUPT;
            return;
        }
        if (avail >= FKC_HEADER_UP_TO_MAGIC && p[16] != 2) {
            info->status = FKC_CHECK_LEGACY;
            snprintf(info->reason, sizeof info->reason, "the ceiling reads record batch v2 only; magic %d", (int)p[16]);
            return;
        }
        if (kind == FKC_FRAME_CUT) {
            info->status = FKC_CHECK_CORRUPT;
            if (avail >= FKC_LOG_OVERHEAD)
                snprintf(info->reason, sizeof info->reason, "batch length %d at byte %zu does not fit the %zu bytes left",
                         (int32_t)fkc_load_be32(p + 8), pos, avail);
            else
                snprintf(info->reason, sizeof info->reason, "%zu bytes left at byte %zu, less than an entry header",
                         avail, pos);
            return;
        }
        /* a complete v2 batch: fkc_frame_entry proved entry_len >= 61 and that
         * base + LastOffsetDelta + 1 fits int64 */
        uint32_t stored = fkc_load_be32(p + 17);
        uint32_t computed = fkc_crc32c(0, p + 21, entry_len - 21);
        if (stored != computed) {
            info->status = FKC_CHECK_BAD_CRC;
            snprintf(info->reason, sizeof info->reason, "CRC-32C mismatch: stored 0x%08x, computed 0x%08x",
                     stored, computed);
            return;
        }
        int32_t count = (int32_t)fkc_load_be32(p + 57);
        if (count < 0) {
            info->status = FKC_CHECK_CORRUPT;
            snprintf(info->reason, sizeof info->reason, "RecordCount %d is negative", count);
            return;
        }
        int64_t base = info->error_offset;
        int64_t last = base + (int64_t)(int32_t)fkc_load_be32(p + 23);
        int control = (fkc_load_be16(p + 21) & 0x20) != 0;
        if (!control && last >= info->next_offset) {
            if (base >= info->next_offset)
                info->records += count;
            else {
                int64_t from_position = last + 1 - info->next_offset;
                info->records += (int64_t)count < from_position ? (int64_t)count : from_position;
            }
        }
        if (last + 1 > info->next_offset)
            info->next_offset = last + 1;
        info->batches++;
        pos += entry_len;
        info->checked_bytes = pos;
        info->error_offset = -1;
    }
}

/* ---- the stream ------------------------------------------------------ */

static void fkc_stream_init(fkc_decoder *d, const uint8_t *data, size_t len, const fkc_decode_opts *opts)
{
    memset(d, 0, sizeof *d);
    d->data = data;
    d->len = len;
    d->own_opts = *opts;
    d->opts = &d->own_opts;
    d->next_offset = opts->fetch_offset;
    d->batch_floor = opts->fetch_offset;
    d->leader_epoch = -1;
    d->batch_offset = -1;
    d->batch_last = -1;
    d->error_offset = -1;
    d->error_batch_last = -1;
    d->share_floor = INT64_MIN;
}

static void fkc_release_held(fkc_decoder *d)
{
    for (size_t i = 0; i < d->held_count; i++)
        fkc_blob_release(d->opts->host, &d->held[i]);
    d->held_count = 0;
    d->held_bytes = 0;
}

/* The open batch is used up: its buffer is released, or held until the
 * next step when this step handed out records pointing into it. */
static int fkc_close_batch(fkc_decoder *d, int referenced)
{
    d->batch.count = 0;
    d->batch_index = 0;
    d->batch_floor = d->next_offset;
    if (!d->have_blob)
        return FKC_OK;
    if (!referenced) {
        fkc_blob_release(d->opts->host, &d->blob);
        d->have_blob = 0;
        return FKC_OK;
    }
    if (d->held_count == d->held_capacity) {
        fkc_blob *grown = (fkc_blob *)fkc_grow(d->held, &d->held_capacity, d->held_count + 1, sizeof *grown, 8);
        if (grown == NULL) /* the buffer stays the open batch's: descriptors remain valid */
            return fkc_fail(d, FKC_ERR_NOMEM, "out of memory for decompressed buffers");
        d->held = grown;
    }
    d->held[d->held_count++] = d->blob;
    d->held_bytes += d->blob.len;
    d->have_blob = 0;
    return FKC_OK;
}

/* Frame, check and parse the next entry, appending its kept records to
 * *dst. Sets d->done at the end of the complete entries; on failure the
 * error is recorded (sticky) and dst->count is left where it was. */
static int fkc_open_next(fkc_decoder *d, fkc_recbuf *dst)
{
    size_t pos = d->pos, avail = d->len - d->pos, entry_len = 0;
    char reason[128];
    reason[0] = 0;
    int kind = fkc_frame_entry(d->data + pos, avail, &entry_len, reason, sizeof reason);
    if (kind == FKC_FRAME_END || kind == FKC_FRAME_CUT) {
        d->done = 1; /* a partial entry at the end: the broker cut the fetch here */
        return FKC_OK;
    }
    const uint8_t *batch = d->data + pos;
    d->batch_offset = avail >= 8 ? (int64_t)fkc_load_be64(batch) : -1;
    d->batch_last = fkc_entry_last_offset(batch, avail, d->batch_offset);
    d->batch.count = 0;
    d->batch_index = 0;
    d->batch_floor = d->next_offset;
    d->open_resume = d->next_offset;
    size_t first = dst->count;
    d->dst = dst;
    d->opening_bytes = 0;
    fkc_builder_mark mark;
    if (d->cols != NULL)
        fkc_builder_mark_at(d->cols, &mark);
    int rc;
    if (kind == FKC_FRAME_MALFORMED) {
        rc = fkc_fail(d, FKC_ERR_INVALID, "batch at byte %zu: %s", pos, reason);
    } else {
        int8_t magic = (int8_t)batch[16];
        if (magic == 2)
            rc = fkc_decode_v2(d, batch, entry_len, pos);
        else
            rc = fkc_decode_legacy(d, batch, entry_len, pos, magic);
    }
    d->dst = NULL;
    if (rc != FKC_OK) {
        fkc_fail(d, rc, "failed"); /* keeps the first reason; makes sure error is set */
        dst->count = first; /* the bad batch's records are not returned */
        if (d->cols != NULL)
            fkc_builder_rollback(d->cols, &mark);
        if (d->have_blob) {
            fkc_blob_release(d->opts->host, &d->blob);
            d->have_blob = 0;
        }
        d->done = 1;
        return rc;
    }
    d->pos = pos + entry_len;
    d->decompressed_bytes =
        d->opening_bytes > SIZE_MAX - d->decompressed_bytes ? SIZE_MAX : d->decompressed_bytes + d->opening_bytes;
    if (dst->count == first)
        return fkc_close_batch(d, 0);
    return FKC_OK;
}

fkc_stream *fkc_stream_new(const uint8_t *data, size_t len, const fkc_decode_opts *opts)
{
    fkc_decoder *d = (fkc_decoder *)malloc(sizeof *d);
    if (d != NULL)
        fkc_stream_init(d, data, len, opts);
    return d;
}

static void fkc_stream_clear(fkc_decoder *d)
{
    fkc_release_held(d);
    if (d->have_blob) {
        fkc_blob_release(d->opts->host, &d->blob);
        d->have_blob = 0;
    }
    free(d->held);
    free(d->batch.records);
    free(d->aborted_set);
    free(d->marks);
    d->marks = NULL;
    d->held = NULL;
    d->batch.records = NULL;
    d->aborted_set = NULL;
}

void fkc_stream_free(fkc_stream *d)
{
    if (d == NULL)
        return;
    fkc_stream_clear(d);
    free(d);
}

int fkc_stream_done(const fkc_stream *d)
{
    return d->error != FKC_OK || (d->done && d->batch_index >= d->batch.count);
}

int32_t fkc_stream_leader_epoch(const fkc_stream *d)
{
    return d->leader_epoch;
}

void fkc_stream_arrow_base(fkc_stream *d, const uint64_t base[6])
{
    for (int i = 0; i < 6; i++)
        d->arrow_base[i] = base[i] > INT32_MAX ? INT32_MAX : base[i];
}

size_t fkc_stream_held_bytes(const fkc_stream *d)
{
    return d->held_bytes + (d->have_blob ? d->blob.len : 0);
}

size_t fkc_stream_decompressed_bytes(const fkc_stream *d)
{
    return d->decompressed_bytes;
}

static int fkc_out_reserve(fkc_decode_result *out, size_t n)
{
    if (n <= out->capacity - out->count)
        return 1;
    fkc_record *grown = fkc_grow_by(out->records, &out->capacity, out->count, n, sizeof *grown, 256);
    if (grown == NULL)
        return 0;
    out->records = grown;
    return 1;
}

/* How many of recs[0..n) fit the Arrow columns after what *out holds:
 * every total (and the topic column, n * topic_len) must stay <= INT32_MAX.
 * Adds their sizes to out's totals. */
static size_t fkc_arrow_room(fkc_decode_result *out, const uint64_t base[6], const fkc_record *recs, size_t n,
                             size_t topic_len)
{
    const uint64_t limit = INT32_MAX;
    /* The common case first: the sums of all n in locals, one check. */
    uint64_t skb = 0, svb = 0, shc = 0, shk = 0, shv = 0;
    for (size_t j = 0; j < n; j++) {
        const fkc_record *rec = &recs[j];
        skb += rec->key_len > 0 ? (uint64_t)rec->key_len : 0;
        svb += rec->value_len > 0 ? (uint64_t)rec->value_len : 0;
        if (rec->header_count > 0) {
            shc += (uint64_t)rec->header_count;
            shk += (uint64_t)rec->header_key_bytes;
            shv += (uint64_t)((int64_t)rec->header_size - rec->header_key_bytes);
        }
    }
    uint64_t rows = (uint64_t)out->count + n + base[0];
    if (rows <= limit && out->key_bytes + skb + base[1] <= limit && out->value_bytes + svb + base[2] <= limit &&
        out->header_count + shc + base[3] <= limit && out->header_key_bytes + shk + base[4] <= limit &&
        out->header_value_bytes + shv + base[5] <= limit && (!topic_len || rows <= limit / topic_len)) {
        out->key_bytes += skb;
        out->value_bytes += svb;
        out->header_count += shc;
        out->header_key_bytes += shk;
        out->header_value_bytes += shv;
        return n;
    }
    size_t i = 0;
    for (; i < n; i++) {
        const fkc_record *rec = &recs[i];
        uint64_t count = (uint64_t)out->count + i + 1;
        uint64_t kb = out->key_bytes + (rec->key_len > 0 ? (uint64_t)rec->key_len : 0);
        uint64_t vb = out->value_bytes + (rec->value_len > 0 ? (uint64_t)rec->value_len : 0);
        uint64_t hc = out->header_count, hk = out->header_key_bytes, hv = out->header_value_bytes;
        if (rec->header_count > 0) {
            hc += (uint64_t)rec->header_count;
            hk += (uint64_t)rec->header_key_bytes;
            hv += (uint64_t)((int64_t)rec->header_size - rec->header_key_bytes);
        }
        /* base values are bounded by the caller's own Arrow batches (<= INT32_MAX each) */
        uint64_t all = count + base[0];
        if (all > limit || kb + base[1] > limit || vb + base[2] > limit || hc + base[3] > limit ||
            hk + base[4] > limit || hv + base[5] > limit || (topic_len && all > limit / topic_len))
            break;
        out->key_bytes = kb;
        out->value_bytes = vb;
        out->header_count = hc;
        out->header_key_bytes = hk;
        out->header_value_bytes = hv;
    }
    return i;
}

void fkc_result_totals(fkc_decode_result *r)
{
    r->key_bytes = r->value_bytes = r->header_count = r->header_key_bytes = r->header_value_bytes = 0;
    for (size_t i = 0; i < r->count; i++) {
        const fkc_record *rec = &r->records[i];
        if (rec->key_len > 0)
            r->key_bytes += (uint64_t)rec->key_len;
        if (rec->value_len > 0)
            r->value_bytes += (uint64_t)rec->value_len;
        if (rec->header_count > 0) {
            r->header_count += (uint64_t)rec->header_count;
            r->header_key_bytes += (uint64_t)rec->header_key_bytes;
            r->header_value_bytes += (uint64_t)((int64_t)rec->header_size - rec->header_key_bytes);
        }
    }
}

static int64_t fkc_resume_offset(const fkc_decoder *d)
{
    if (d->error == FKC_OK && d->batch_index < d->batch.count)
        return d->open_resume;
    return d->next_offset;
}

void fkc_stream_record_marks(fkc_stream *d, int on)
{
    d->record_marks = on ? 1 : 0;
}

size_t fkc_stream_marks(const fkc_stream *d, const fkc_step_mark **marks)
{
    *marks = d->marks;
    return d->mark_count;
}

/* A batch whose records this step handed out was just closed, `count`
 * records into the output: record what a step ending here would report --
 * its resume offset, and whether only a cut tail (or nothing) follows (the
 * look-ahead at the end of fkc_stream_step). */
static int fkc_mark(fkc_decoder *d, size_t count)
{
    if (!d->record_marks)
        return FKC_OK;
    if (d->mark_count == d->mark_capacity) {
        fkc_step_mark *grown = (fkc_step_mark *)fkc_grow(d->marks, &d->mark_capacity, d->mark_count + 1,
                                                         sizeof *grown, 64);
        if (grown == NULL)
            return fkc_fail(d, FKC_ERR_NOMEM, "out of memory for step marks");
        d->marks = grown;
    }
    int done = d->done;
    if (!done) {
        size_t entry_len = 0;
        char reason[128];
        int kind = fkc_frame_entry(d->data + d->pos, d->len - d->pos, &entry_len, reason, sizeof reason);
        done = kind == FKC_FRAME_END || kind == FKC_FRAME_CUT;
    }
    fkc_step_mark *m = &d->marks[d->mark_count++];
    m->count = count;
    m->resume = d->next_offset;
    m->done = done;
    return FKC_OK;
}

/* Keep `excess` kept records a step could not hand out for the next step
 * (d->batch); 0 when memory ran out (the stream failed). */
static int fkc_hold_back(fkc_decoder *d, const fkc_record *recs, size_t excess)
{
    if (excess > d->batch.capacity) {
        fkc_record *grown = (fkc_record *)realloc(d->batch.records, excess * sizeof(fkc_record));
        if (grown == NULL) {
            fkc_fail(d, FKC_ERR_NOMEM, "out of memory for record descriptors");
            return 0;
        }
        d->batch.records = grown;
        d->batch.capacity = excess;
    }
    memcpy(d->batch.records, recs, excess * sizeof(fkc_record));
    d->batch.count = excess;
    d->batch_index = 0;
    return 1;
}

int fkc_stream_step(fkc_stream *d, size_t max_records, size_t max_held_bytes, fkc_decode_result *out)
{
    out->count = 0;
    out->key_bytes = out->value_bytes = out->header_count = out->header_key_bytes = out->header_value_bytes = 0;
    out->error = FKC_OK;
    out->error_offset = -1;
    out->error_batch_last = -1;
    out->error_reason[0] = 0;
    out->host = d->opts->host;
    d->mark_count = 0;
    fkc_release_held(d); /* the previous step's records have been built */
    int arrow_full = 0;
    while (d->error == FKC_OK && out->count < max_records) {
        if (d->batch_index < d->batch.count) {
            size_t n = d->batch.count - d->batch_index;
            if (n > max_records - out->count)
                n = max_records - out->count;
            const fkc_record *src = &d->batch.records[d->batch_index];
            if (d->opts->arrow_limits) {
                n = fkc_arrow_room(out, d->arrow_base, src, n, d->opts->arrow_topic_len);
                if (n == 0) {
                    arrow_full = 1;
                    break;
                }
            }
            if (!fkc_out_reserve(out, n)) {
                fkc_fail(d, FKC_ERR_NOMEM, "out of memory for record descriptors");
                break;
            }
            memcpy(out->records + out->count, src, n * sizeof(fkc_record));
            out->count += n;
            d->batch_index += n;
            d->open_resume = d->batch.records[d->batch_index - 1].offset + 1;
            if (d->batch_index == d->batch.count &&
                (fkc_close_batch(d, 1) != FKC_OK || fkc_mark(d, out->count) != FKC_OK))
                break;
            if (d->opts->arrow_limits && d->batch_index < d->batch.count && out->count < max_records) {
                arrow_full = 1; /* stopped short of the batch by the Arrow limits */
                break;
            }
            continue;
        }
        if (d->done)
            break;
        if (out->count > 0 && d->held_bytes >= max_held_bytes)
            break; /* bounded: decompress nothing more in this step */
        /* Parse the next batch straight into the output (one pass, no copy
         * for the records this step takes); move what it cannot take. */
        size_t before = out->count;
        fkc_recbuf view = {out->records, out->count, out->capacity};
        int orc = fkc_open_next(d, &view);
        out->records = view.records;
        out->capacity = view.capacity;
        if (orc != FKC_OK)
            break;
        size_t added = view.count - before;
        if (added == 0)
            continue; /* nothing kept (control, aborted, below the position, the end) */
        size_t keep = added < max_records - before ? added : max_records - before;
        if (d->opts->arrow_limits)
            keep = fkc_arrow_room(out, d->arrow_base, out->records + before, keep, d->opts->arrow_topic_len);
        size_t excess = added - keep;
        if (excess && !fkc_hold_back(d, out->records + before + keep, excess))
            break;
        out->count = before + keep;
        if (keep)
            d->open_resume = out->records[out->count - 1].offset + 1;
        if (!excess) {
            if (fkc_close_batch(d, 1) != FKC_OK || (keep && fkc_mark(d, out->count) != FKC_OK))
                break;
        } else if (d->opts->arrow_limits && out->count < max_records) {
            arrow_full = 1; /* stopped short of the batch by the Arrow limits */
            break;
        }
    }
    (void)arrow_full;
    if (d->error == FKC_OK && !d->done && d->batch_index >= d->batch.count) {
        /* Say "done" as soon as only a cut tail (or nothing) is left, so the
         * caller needs no empty step to find out. A malformed header is not
         * done: the next step raises its error. */
        size_t entry_len = 0;
        char reason[128];
        int kind = fkc_frame_entry(d->data + d->pos, d->len - d->pos, &entry_len, reason, sizeof reason);
        if (kind == FKC_FRAME_END || kind == FKC_FRAME_CUT)
            d->done = 1;
    }
    out->next_offset = fkc_resume_offset(d);
    if (d->error != FKC_OK) {
        out->error = d->error;
        out->error_offset = d->error_offset;
        out->error_batch_last = d->error_batch_last;
        memcpy(out->error_reason, d->error_reason, sizeof out->error_reason);
        out->next_offset = d->error_offset;
    }
    return out->error;
}

/* Hand n descriptors to the builder (the room was checked). */
static int fkc_append_out(fkc_decoder *d, fkc_arrow_builder *b, const fkc_record *src, size_t n)
{
    if (!fkc_builder_append_records(b, src, n))
        return fkc_fail_arrow_nomem(d);
    return FKC_OK;
}

/* fkc_stream_step's walk with the Arrow columns as the sink: the same
 * batches, filters, limits and resume points, but records land in *b
 * (v2 batches that fit whole in one pass, others through descriptors);
 * out->count and out's byte totals say what this step appended. */
int fkc_stream_step_arrow(fkc_stream *d, size_t max_records, size_t max_held_bytes, fkc_arrow_builder *b,
                          fkc_decode_result *out)
{
    out->count = 0;
    out->key_bytes = out->value_bytes = out->header_count = out->header_key_bytes = out->header_value_bytes = 0;
    out->error = FKC_OK;
    out->error_offset = -1;
    out->error_batch_last = -1;
    out->error_reason[0] = 0;
    out->host = d->opts->host;
    fkc_release_held(d);
    uint64_t start[6];
    fkc_builder_totals(b, start);
    size_t rows = 0; /* appended by this step */
    /* Decompressed bytes of the batches this step parsed straight into the
     * columns: their buffers are released at once, but the columns now hold
     * a copy of them, so they count against max_held_bytes as held buffers
     * do (else one step of a fetch of many compressed batches would decode
     * the whole fetch into the columns). */
    size_t direct_bytes = 0;
    while (d->error == FKC_OK && rows < max_records) {
        if (d->batch_index < d->batch.count) {
            /* the rest of a batch a previous step could not take whole */
            size_t n = d->batch.count - d->batch_index;
            if (n > max_records - rows)
                n = max_records - rows;
            const fkc_record *src = &d->batch.records[d->batch_index];
            n = fkc_builder_room(b, src, n);
            if (n == 0)
                break; /* the Arrow batch is full */
            if (fkc_append_out(d, b, src, n) != FKC_OK)
                break;
            rows += n;
            d->batch_index += n;
            d->open_resume = d->batch.records[d->batch_index - 1].offset + 1;
            if (d->batch_index == d->batch.count) {
                if (fkc_close_batch(d, 1) != FKC_OK)
                    break;
            } else if (rows < max_records) {
                break; /* stopped short of the batch by the Arrow limits */
            }
            continue;
        }
        if (d->done)
            break;
        if (rows > 0 && (d->held_bytes >= max_held_bytes || direct_bytes >= max_held_bytes - d->held_bytes))
            break;
        size_t rows_before = b->rows;
        size_t decompressed_before = d->decompressed_bytes;
        fkc_recbuf view = {out->records, 0, out->capacity}; /* descriptors, when the batch needs them */
        d->cols = b;
        d->cols_cap = max_records - rows;
        int orc = fkc_open_next(d, &view);
        d->cols = NULL;
        out->records = view.records;
        out->capacity = view.capacity;
        if (orc != FKC_OK)
            break;
        size_t direct = b->rows - rows_before;
        if (direct) {
            size_t opened = d->decompressed_bytes - decompressed_before; /* 0 when uncompressed */
            direct_bytes = opened > SIZE_MAX - direct_bytes ? SIZE_MAX : direct_bytes + opened;
            rows += direct;
            d->open_resume = b->offset[b->rows - 1] + 1;
            if (fkc_close_batch(d, 0) != FKC_OK) /* copied: its buffer is no longer needed */
                break;
            continue;
        }
        size_t added = view.count;
        if (added == 0)
            continue;
        size_t keep = added < max_records - rows ? added : max_records - rows;
        keep = fkc_builder_room(b, view.records, keep);
        if (keep && fkc_append_out(d, b, view.records, keep) != FKC_OK)
            break;
        size_t excess = added - keep;
        if (excess && !fkc_hold_back(d, view.records + keep, excess))
            break;
        rows += keep;
        if (keep)
            d->open_resume = view.records[keep - 1].offset + 1;
        if (!excess) {
            if (fkc_close_batch(d, 1) != FKC_OK)
                break;
        } else if (rows < max_records) {
            break; /* stopped short of the batch by the Arrow limits */
        }
    }
    if (d->error == FKC_OK && !d->done && d->batch_index >= d->batch.count) {
        size_t entry_len = 0;
        char reason[128];
        int kind = fkc_frame_entry(d->data + d->pos, d->len - d->pos, &entry_len, reason, sizeof reason);
        if (kind == FKC_FRAME_END || kind == FKC_FRAME_CUT)
            d->done = 1;
    }
    uint64_t now[6];
    fkc_builder_totals(b, now);
    out->count = (size_t)(now[0] - start[0]);
    out->key_bytes = now[1] - start[1];
    out->value_bytes = now[2] - start[2];
    out->header_count = now[3] - start[3];
    out->header_key_bytes = now[4] - start[4];
    out->header_value_bytes = now[5] - start[5];
    out->next_offset = fkc_resume_offset(d);
    if (d->error != FKC_OK) {
        out->error = d->error;
        out->error_offset = d->error_offset;
        out->error_batch_last = d->error_batch_last;
        memcpy(out->error_reason, d->error_reason, sizeof out->error_reason);
        out->next_offset = d->error_offset;
    }
    return out->error;
}

int fkc_decode_arrow(const uint8_t *data, size_t len, const fkc_decode_opts *opts, fkc_arrow_builder *b,
                     fkc_decode_result *r)
{
    memset(r, 0, sizeof *r);
    r->next_offset = opts->fetch_offset;
    r->error_offset = -1;
    r->host = opts->host;
    fkc_decoder d;
    fkc_stream_init(&d, data, len, opts);
    /* Capacity from the blob's size, never from a RecordCount field: values
     * take at most the blob's bytes when uncompressed, and a record of a
     * typical fetch takes >= 32 bytes; growth covers the rest (small or
     * compressed records). Only the first FKC_ARROW_HINT_MAX bytes count:
     * unused capacity is never touched, but it is address space, which a
     * container's limit counts; past that the columns grow with what is
     * decoded. The hint is an optimisation: when it cannot be had, growth
     * decides (and reports a real shortage as ArrowMemoryError). */
    if (len > 4096) {
        size_t basis = len < FKC_ARROW_HINT_MAX ? len : FKC_ARROW_HINT_MAX;
        (void)fkc_builder_hint(b, basis / 32, basis);
    }
    fkc_stream_step_arrow(&d, SIZE_MAX, SIZE_MAX, b, r);
    if (r->error == FKC_OK && !fkc_stream_done(&d)) {
        /* only the Arrow limits stop a one-step decode early */
        r->error = FKC_ERR_ARROW_LIMIT;
        r->error_offset = r->next_offset;
        /* no batch is at fault: nothing at or past next_offset to reject */
        r->error_batch_last = r->next_offset > INT64_MIN ? r->next_offset - 1 : INT64_MIN;
        snprintf(r->error_reason, sizeof r->error_reason,
                 "the records from offset %lld on do not fit one Arrow batch's int32 offsets",
                 (long long)r->next_offset);
    }
    /* every record was copied into the columns: no buffer outlives the walk */
    fkc_stream_clear(&d);
    free(r->records);
    r->records = NULL;
    r->capacity = 0;
    return r->error;
}

int fkc_decode_records(const uint8_t *data, size_t len, const fkc_decode_opts *opts, fkc_decode_result *r)
{
    memset(r, 0, sizeof *r);
    r->next_offset = opts->fetch_offset;
    r->error_offset = -1;
    r->host = opts->host;
    fkc_decoder d;
    fkc_stream_init(&d, data, len, opts);

    /* Size the descriptor array from the blob length (one descriptor per 96
     * input bytes, ~ the input's own size in memory), never from a RecordCount
     * field: typical fetches then fit without a realloc-and-copy, and the
     * geometric growth in fkc_out_reserve covers small or compressed records. */
    if (len / 96 > 256) {
        size_t want = len / 96;
        if (want > ((size_t)1 << 22))
            want = (size_t)1 << 22;
        r->records = (fkc_record *)malloc(want * sizeof(fkc_record));
        if (r->records != NULL)
            r->capacity = want; /* on failure fkc_out_reserve grows as usual */
    }
    fkc_stream_step(&d, SIZE_MAX, SIZE_MAX, r);
    if (r->error == FKC_OK && !fkc_stream_done(&d)) {
        /* only the Arrow limits stop a one-step decode early */
        r->error = FKC_ERR_ARROW_LIMIT;
        r->error_offset = r->next_offset;
        /* no batch is at fault: nothing at or past next_offset to reject */
        r->error_batch_last = r->next_offset > INT64_MIN ? r->next_offset - 1 : INT64_MIN;
        snprintf(r->error_reason, sizeof r->error_reason,
                 "the records from offset %lld on do not fit one Arrow batch's int32 offsets",
                 (long long)r->next_offset);
    }
    /* The result owns the buffers its descriptors point into. */
    size_t nblobs = d.held_count + (d.have_blob ? 1u : 0u);
    if (nblobs) {
        r->blobs = (fkc_blob *)malloc(nblobs * sizeof(fkc_blob));
        if (r->blobs == NULL) {
            fkc_stream_clear(&d);
            free(r->records);
            r->records = NULL;
            r->count = r->capacity = 0;
            r->error = FKC_ERR_NOMEM;
            snprintf(r->error_reason, sizeof r->error_reason, "out of memory for decompressed buffers");
            return r->error;
        }
        memcpy(r->blobs, d.held, d.held_count * sizeof(fkc_blob));
        if (d.have_blob)
            r->blobs[d.held_count] = d.blob;
        r->blob_count = r->blob_capacity = nblobs;
        d.held_count = 0;
        d.held_bytes = 0;
        d.have_blob = 0;
    }
    if (opts->arrow_timestamps && !opts->arrow_limits)
        fkc_result_totals(r); /* (with arrow_limits the step summed them as it handed records out) */
    fkc_stream_clear(&d);
    return r->error;
}
void fkc_decode_result_free(fkc_decode_result *r)
{
    for (size_t i = 0; i < r->blob_count; i++)
        fkc_blob_release(r->host, &r->blobs[i]);
    free(r->blobs);
    free(r->records);
    r->blobs = NULL;
    r->records = NULL;
    r->count = r->capacity = r->blob_count = r->blob_capacity = 0;
}

/* ---- share decode: the gaps ------------------------------------------- */

typedef struct fkc_pairs {
    int64_t *data;
    size_t count;
    size_t capacity; /* in pairs */
} fkc_pairs;

static int fkc_pairs_add(fkc_pairs *p, int64_t first, int64_t last)
{
    if (p->count == p->capacity) {
        int64_t *grown = (int64_t *)fkc_grow(p->data, &p->capacity, p->count + 1, 2 * sizeof *grown, 16);
        if (grown == NULL)
            return 0;
        p->data = grown;
    }
    p->data[2 * p->count] = first;
    p->data[2 * p->count + 1] = last;
    p->count++;
    return 1;
}

int fkc_share_gaps(const fkc_decode_opts *o, const int64_t *offsets, size_t stride, size_t n, int64_t **pairs,
                   size_t *count)
{
    fkc_pairs out = {NULL, 0, 0};
    const uint8_t *at = (const uint8_t *)offsets;
    size_t i = 0, r = 0;
    /* `next`: the first offset of range r not yet accounted for (handed
     * out or reported); every offset is inside a range and increasing, so
     * the holes before it in range r are gaps, and ranges it passes are
     * gaps from `next` to their end. */
    int64_t next = o->acquired_n ? o->acquired_first[0] : 0;
    int ok = 1;
    for (; i < n && r < o->acquired_n && ok; i++, at += stride) {
        int64_t offset;
        memcpy(&offset, at, sizeof offset);
        while (ok && r < o->acquired_n && o->acquired_last[r] < offset) {
            if (next <= o->acquired_last[r])
                ok = fkc_pairs_add(&out, next, o->acquired_last[r]);
            if (++r < o->acquired_n)
                next = o->acquired_first[r];
        }
        if (!ok || r == o->acquired_n)
            break;
        if (next < offset)
            ok = fkc_pairs_add(&out, next, offset - 1);
        next = offset < INT64_MAX ? offset + 1 : INT64_MAX; /* (checked ranges end below it anyway) */
    }
    for (; ok && r < o->acquired_n; r++) {
        if (next <= o->acquired_last[r])
            ok = fkc_pairs_add(&out, next, o->acquired_last[r]);
        if (r + 1 < o->acquired_n)
            next = o->acquired_first[r + 1];
    }
    if (!ok) {
        free(out.data);
        *pairs = NULL;
        *count = 0;
        return 0;
    }
    *pairs = out.data;
    *count = out.count;
    return 1;
}
