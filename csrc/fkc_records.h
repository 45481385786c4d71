/*
 * fkc_records.h — phase 1 of decoding: a partition's records blob (record
 * batches v2 and legacy message sets v0/v1) → a flat array of record
 * descriptors. Pure C, no Python objects: it can run with the GIL released
 * (only the codec host's callbacks need it back).
 *
 * Three entry points, one walk:
 *   - fkc_scan_blob(): the framing of a blob read from entry headers only
 *     (where the complete entries end, the next fetch offset, the leader
 *     epoch of the last complete batch, whether the tail is cut or a header
 *     no batch can have). The fetcher needs nothing else before decoding;
 *     the decoder frames entries with the same function, so the two never
 *     disagree about the layout.
 *   - fkc_stream_*(): the resumable decoder. It walks the blob a batch at a
 *     time: a batch is decompressed when it is reached, parsed whole (so a
 *     bad batch yields none of its records), and handed out at most
 *     `max_records` descriptors per step; only the open batch's decompressed
 *     buffer and those of batches finished in the current step are alive.
 *   - fkc_decode_records(): the whole blob in one step (the public decode()).
 *
 * Contract
 *   - Input: any bytes, untrusted. Every length is bounds-checked through
 *     fkc_cursor; no allocation is sized by an unchecked field (the record
 *     count of a batch is only trusted as far as the remaining bytes could
 *     hold that many records).
 *   - A trailing partial batch / message (fewer bytes than its length says)
 *     ends decoding silently: brokers cut fetches at a byte limit.
 *   - Anything else malformed stops decoding with an fkc_error_kind, a reason
 *     naming the byte position, and the base offset of the bad batch. The
 *     records of the batches before it are kept (`count`), records of the bad
 *     batch are not, and next_offset is the bad batch's base offset.
 *   - A header must agree with its contents: RecordCount <= LastOffsetDelta
 *     + 1, OffsetDeltas strictly increasing and <= LastOffsetDelta (else
 *     InvalidRecordError); RecordCount above max_batch_records is
 *     FKC_ERR_BUDGET before anything is decompressed.
 *   - Filtering: records below the running position (fetch_offset, then one
 *     past each complete batch, as Java's CompletedFetch), at or past
 *     stop_offset (when >= 0), control batches and (read_committed) aborted
 *     transactional batches are left out. next_offset = one past the last complete batch
 *     processed (magic 2: BaseOffset + LastOffsetDelta + 1; legacy: the
 *     last (inner) message offset + 1), never lower than fetch_offset.
 *   - Share decodes (opts->share, KIP-932): the same walk, and a record is
 *     kept only when its offset lies in an acquired range and is past every
 *     record compared before it, stamped with the range's delivery count
 *     (fkc_share_keep, where a record is kept); fkc_share_gaps() then says
 *     which acquired offsets got no record. Errors also carry the bad
 *     entry's last offset (error_batch_last).
 *   - Offsets and timestamps are computed in checked int64 arithmetic: a
 *     result that does not fit is InvalidRecordError, never wrapped.
 *   - Descriptors point into the input blob or into decompressed buffers the
 *     result owns; they stay valid until fkc_decode_result_free().
 */
#ifndef FKC_RECORDS_H
#define FKC_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fkc_codec.h"
#include "fkc_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One decoded record. Field names follow kafka-python's ConsumerRecord. */
typedef struct fkc_record {
    int64_t offset;         /* absolute offset */
    int64_t timestamp;      /* epoch ms; unused when timestamp_type == -1 */
    const uint8_t *key;     /* NULL when key_len < 0 */
    const uint8_t *value;   /* NULL when value_len < 0 */
    const uint8_t *headers; /* first byte of the header list (already validated) */
    size_t headers_len;     /* bytes the header list spans, so re-walking it is bounded */
    int32_t key_len;        /* -1: null key */
    int32_t value_len;      /* -1: null value */
    int32_t header_count;   /* 0 for legacy messages */
    int32_t header_size;    /* serialized_header_size: sum of key+value lengths, -1 when none */
    int32_t header_key_bytes; /* header key bytes alone (value bytes = header_size - this), so the
                               * Arrow totals are summed as records are kept, without re-walking
                               * the headers; fits the struct's padding */
    int32_t leader_epoch;   /* batch PartitionLeaderEpoch; -1 for legacy messages */
    uint32_t checksum;      /* legacy: the message CRC; unused for magic 2 */
    int8_t timestamp_type;  /* 0 CreateTime, 1 LogAppendTime, -1 none (magic 0) */
    int8_t magic;           /* 0, 1 or 2: decides whether `checksum` is meaningful */
    int16_t delivery_count; /* share decodes only: the acquired range's DeliveryCount (fits the padding) */
} fkc_record;

typedef struct fkc_decode_opts {
    int64_t fetch_offset;
    int64_t stop_offset;            /* exclusive; < 0 means no bound */
    int check_crcs;
    int read_committed;
    const int64_t *aborted_pids;    /* aborted transactions, sorted by first offset */
    const int64_t *aborted_first_offsets;
    size_t aborted_count;
    size_t max_decompressed_bytes;  /* cap per batch (per legacy wrapper) */
    size_t max_batch_records;       /* RecordCount (inner messages of a legacy wrapper) above this is
                                     * FKC_ERR_BUDGET; 0: no bound. Bounds the descriptors one batch
                                     * can make, whatever it compresses to */
    int arrow_timestamps;           /* 1: kept records' ms timestamps must fit int64 µs (Arrow output) */
    int arrow_limits;               /* 1: a step ends before its Arrow columns would pass int32 offsets */
    size_t arrow_topic_len;         /* topic bytes per record in the Arrow topic column */
    const fkc_codec_host *host;     /* decompression primitives */

    /* Share decode (KIP-932), when `share` is 1: only records whose offset
     * lies in one of the acquired ranges [acquired_first[i],
     * acquired_last[i]] are kept, each stamped with acquired_count[i], and
     * each offset at most once (a record at or below one already compared
     * is dropped, as the Java client's ShareCompletedFetch walks its
     * acquired offsets). The ranges are sorted and disjoint (the caller
     * checked; unsorted ones could only drop records, never read out of
     * bounds). A cursor over them moves forward only: O(records + ranges). */
    int share;
    const int64_t *acquired_first;
    const int64_t *acquired_last;
    const int16_t *acquired_count;
    size_t acquired_n;
} fkc_decode_opts;

typedef struct fkc_decode_result {
    fkc_record *records; /* owned; `count` used of `capacity` */
    size_t count;
    size_t capacity;
    int64_t next_offset;

    /* Totals over the returned records, so phase 2b can size Arrow buffers
     * exactly. Summed as each record is kept (and rolled back with a bad
     * batch's records), so no pass over the descriptors is needed. */
    uint64_t key_bytes;
    uint64_t value_bytes;
    uint64_t header_count;
    uint64_t header_key_bytes;
    uint64_t header_value_bytes;

    int error;            /* fkc_error_kind; FKC_OK when the whole blob decoded */
    int64_t error_offset; /* base offset of the failing batch, -1 if unreadable */
    int64_t error_batch_last; /* its last offset as its header says (BaseOffset + LastOffsetDelta when
                               * readable and sane, else error_offset): a share decode rejects the
                               * acquired offsets up to it */
    char error_reason[256];

    fkc_blob *blobs;      /* decompressed buffers the descriptors point into */
    size_t blob_count;
    size_t blob_capacity;
    const fkc_codec_host *host; /* releases the blobs */
} fkc_decode_result;

/* Decode `data`. Always initialises *result; returns result->error. Call
 * fkc_decode_result_free() afterwards in every case. */
int fkc_decode_records(const uint8_t *data, size_t len, const fkc_decode_opts *opts, fkc_decode_result *result);

void fkc_decode_result_free(fkc_decode_result *result);

/* Recompute the byte totals of result->records[0..count) (Arrow sizing). */
void fkc_result_totals(fkc_decode_result *result);

/* The gaps of a share decode: the acquired offsets of opts' ranges that the
 * n handed-out offsets (strictly increasing, as a share decode hands them
 * out, each inside a range; `stride` bytes apart from `offsets`) do not
 * hold, as (first, last) pairs in offset order: *pairs (malloc'd, NULL when
 * none; free() it) holds 2 * *count int64. One merge pass. Returns 0 when
 * memory runs out (*pairs NULL). */
int fkc_share_gaps(const fkc_decode_opts *opts, const int64_t *offsets, size_t stride, size_t n, int64_t **pairs,
                   size_t *count);

/* ---- framing ------------------------------------------------------------ */

enum {
    FKC_TAIL_NONE = 0,      /* the complete entries end exactly at the end of the blob */
    FKC_TAIL_CUT = 1,       /* a partial entry follows (the broker cut at its byte limit) */
    FKC_TAIL_MALFORMED = 2  /* an entry header no batch can have follows */
};

typedef struct fkc_scan_info {
    size_t complete_bytes;  /* bytes of the complete entries before the tail */
    size_t entries;         /* complete entries */
    int64_t next_offset;    /* max over complete entries of one past their last offset; -1 when none */
    int32_t leader_epoch;   /* PartitionLeaderEpoch of the last complete entry (-1 legacy / none) */
    int tail;               /* FKC_TAIL_* */
    int64_t tail_offset;    /* BaseOffset of the cut / malformed entry, -1 when fewer than 8 bytes */
    int64_t tail_size;      /* its declared size with the 12-byte log overhead, -1 when unreadable */
    char reason[128];       /* why the tail is malformed */
    /* bytes of the complete entries compressed with gzip, snappy or zstd:
     * the codecs whose decompression costs milliseconds per MiB (lz4 and
     * none cost a fraction of one), so a driver that must not hold its
     * thread (fastkc.aio's event loop) decodes those fetches elsewhere */
    size_t slow_codec_bytes;
} fkc_scan_info;

void fkc_scan_blob(const uint8_t *data, size_t len, fkc_scan_info *info);

/* The benchmark ceiling's walk (fastkc_tools/bench_ceiling.py): the complete v2
 * batches of a fetched blob, framed by the same rule as the scan and the
 * decoder, each CRC-32C checked over its CRC span, nothing decompressed or
 * parsed. Counts the records the batches declare at or past `position`
 * (control batches excluded; a batch starting below the running position
 * counts only its offsets from there, as the decoder skips the rest). The
 * blob is expected to hold complete batches only (the fetcher cuts it where
 * the scan said), so any tail is an error here. Stops at the first entry
 * that is not a good v2 batch: status CORRUPT (a cut or malformed entry, a
 * negative RecordCount), BAD_CRC or LEGACY (a magic 0/1 entry: the
 * ceiling reads v2 only and refuses to guess). */
enum {
    FKC_CHECK_OK = 0,
    FKC_CHECK_CORRUPT = 1,
    FKC_CHECK_LEGACY = 2,
    FKC_CHECK_BAD_CRC = 3
};

typedef struct fkc_check_info {
    int64_t records;       /* records at or past the position in the good batches */
    int64_t next_offset;   /* max(position, one past the last offset of each good batch) */
    size_t checked_bytes;  /* bytes of the good batches (they are the blob's start) */
    size_t batches;        /* good batches */
    int status;            /* FKC_CHECK_* */
    int64_t error_offset;  /* BaseOffset of the entry the status is about, -1 when unreadable */
    char reason[128];      /* why, when status != FKC_CHECK_OK */
} fkc_check_info;

void fkc_check_blob(const uint8_t *data, size_t len, int64_t position, fkc_check_info *info);

/* ---- the resumable decoder ---------------------------------------------- */

typedef struct fkc_stream fkc_stream;

/* A decoder over data[0..len) (which must outlive it) with a copy of *opts
 * (the aborted-transaction arrays and the host must outlive it). NULL when
 * memory runs out. */
fkc_stream *fkc_stream_new(const uint8_t *data, size_t len, const fkc_decode_opts *opts);

/* Hand out up to max_records of the next kept records into *out (which the
 * caller zero-initialised once; its array is reused between steps): out's
 * count, next_offset (where to resume: the offset after the last record
 * handed out of a partly handed-out batch, else the decoder's next offset),
 * error fields and, with arrow_limits, the byte totals. Descriptors are valid
 * until the next step or fkc_stream_free(). Before it would decompress
 * another batch, a step that already handed out records ends once the
 * decompressed buffers it holds reach max_held_bytes. A batch that fails
 * ends the stream: the step returns the records before it with the error;
 * every later step returns the error again with no records. */
int fkc_stream_step(fkc_stream *s, size_t max_records, size_t max_held_bytes, fkc_decode_result *out);

struct fkc_arrow_builder;

/* fkc_stream_step with Arrow columns as the sink (fkc_arrow_builder.h):
 * the same records, filters, resume points and errors, appended to *b
 * (rolled back to the bad batch's start on error). The step also ends before
 * b's int32 offsets (counting b->base) would overflow. A batch parsed
 * straight into the columns releases its decompressed buffer at once, yet
 * its decompressed bytes count against max_held_bytes with the held buffers
 * (the columns hold their copy). out->count and the byte totals say what the
 * step appended; out->records is scratch. */
int fkc_stream_step_arrow(fkc_stream *s, size_t max_records, size_t max_held_bytes, struct fkc_arrow_builder *b,
                          fkc_decode_result *out);

/* The whole blob in one Arrow step into *b: fkc_decode_records' contract
 * (records kept before an error stay in *b; FKC_ERR_ARROW_LIMIT when the
 * int32 offsets stop it early). Call fkc_decode_result_free() afterwards. */
int fkc_decode_arrow(const uint8_t *data, size_t len, const fkc_decode_opts *opts, struct fkc_arrow_builder *b,
                     fkc_decode_result *result);

/* 1 when nothing is left to hand out (the end, a cut tail, or an error). */
int fkc_stream_done(const fkc_stream *s);

/* PartitionLeaderEpoch of the batch last opened (-1 legacy / none yet). */
int32_t fkc_stream_leader_epoch(const fkc_stream *s);

/* With arrow_limits: totals (rows, key, value, header count, header key and
 * header value bytes) already in the Arrow batch the next steps' records
 * will be joined to; the int32 limits then apply to the sum. */
void fkc_stream_arrow_base(fkc_stream *s, const uint64_t base[6]);

/* Decompressed bytes the stream holds right now (open batch + held buffers). */
size_t fkc_stream_held_bytes(const fkc_stream *s);

/* Decompressed bytes of every batch the stream opened so far, all steps
 * together (a batch that failed to decode is not counted; saturates at
 * SIZE_MAX), whoever keeps the buffer afterwards (a zero-copy Arrow builder
 * takes it over). Grows only when a step opens a compressed batch: a caller
 * compares it across the steps it runs to learn what they decompressed. */
size_t fkc_stream_decompressed_bytes(const fkc_stream *s);

void fkc_stream_free(fkc_stream *s);

/* A batch boundary inside one step's output: had the step ended after its
 * first `count` records (asked for exactly that many), it would have
 * reported next_offset `resume` and fkc_stream_done() == `done`. Between
 * marks a step ending after record i resumes at records[i].offset + 1 and is
 * not done. This lets a caller prepare one large step ahead of time and hand
 * it out in pieces that are exactly what smaller steps would have been. */
typedef struct fkc_step_mark {
    size_t count;
    int64_t resume;
    int done;
} fkc_step_mark;

/* Record marks in the following steps (off by default: a look-ahead per batch). */
void fkc_stream_record_marks(fkc_stream *s, int on);

/* The marks of the last step, in output order; valid until the next step. */
size_t fkc_stream_marks(const fkc_stream *s, const fkc_step_mark **marks);

/* Re-walk one record's already-validated header list: reads header `*pos`
 * onward; returns 1 and sets key/value (value NULL with value_len -1 for a
 * null value), or 0 at the end. Used by the bridge to build header objects. */
typedef struct fkc_header_iter {
    const uint8_t *pos;
    const uint8_t *end;
} fkc_header_iter;

int fkc_header_next(fkc_header_iter *it, const uint8_t **key, int32_t *key_len, const uint8_t **value,
                    int32_t *value_len);

/* 1 when [p, p+len) is valid UTF-8 as Python's strict decoder takes it
 * (header keys must be, as they become str); any bytes. */
int fkc_utf8_valid_any(const uint8_t *p, size_t len);

/* How many leading bytes of [p, p+len) are known ASCII, in whole loads: len
 * when all are (8 bytes at a time, the last ones by a load that overlaps
 * the one before, short strings by two overlapping loads of 4 or 2 bytes),
 * else the 8-byte words before the first one that is not (0 for a short
 * string). Nothing outside [p, p+len) is read. */
static inline __attribute__((always_inline)) size_t fkc_ascii_prefix(const uint8_t *p, size_t len)
{
    if (len >= 8) {
        uint64_t word;
        size_t i = 0;
        for (; i + 8 <= len; i += 8) {
            memcpy(&word, p + i, 8);
            if (word & UINT64_C(0x8080808080808080))
                return i;
        }
        memcpy(&word, p + len - 8, 8);
        return word & UINT64_C(0x8080808080808080) ? i : len;
    }
    if (len >= 4) {
        uint32_t head, tail;
        memcpy(&head, p, 4);
        memcpy(&tail, p + len - 4, 4);
        return (head | tail) & 0x80808080u ? 0 : len;
    }
    if (len >= 2) {
        uint16_t head, tail;
        memcpy(&head, p, 2);
        memcpy(&tail, p + len - 2, 2);
        return (head | tail) & 0x8080u ? 0 : len;
    }
    return len == 0 || p[0] < 0x80 ? len : 0;
}

/* fkc_utf8_valid_any(), with ASCII (what keys, names and most string fields
 * are) decided inline: the decoders check every string they read, and the
 * byte loop cost about 40 instructions for a string of ten bytes. The byte
 * loop starts after the ASCII words already seen (an ASCII byte ends any
 * sequence, so the rest is checked alone). */
static inline __attribute__((always_inline)) int fkc_utf8_valid(const uint8_t *p, size_t len)
{
    size_t ascii = fkc_ascii_prefix(p, len);
    return ascii == len || fkc_utf8_valid_any(p + ascii, len - ascii);
}

#ifdef __cplusplus
}
#endif

#endif /* FKC_RECORDS_H */
