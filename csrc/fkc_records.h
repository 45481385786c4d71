/*
 * fkc_records.h — phase 1 of decoding: a partition's records blob (record
 * batches v2 and legacy message sets v0/v1) → a flat array of record
 * descriptors. Pure C, no Python objects: it can run with the GIL released
 * (only the codec host's callbacks need it back).
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
 *   - Filtering: records below fetch_offset, at or past stop_offset (when
 *     >= 0), control batches and (read_committed) aborted transactional
 *     batches are left out. next_offset = one past the last complete batch
 *     processed (magic 2: BaseOffset + LastOffsetDelta + 1; legacy: the
 *     last (inner) message offset + 1), never lower than fetch_offset.
 *   - Offsets and timestamps are computed in checked int64 arithmetic: a
 *     result that does not fit is InvalidRecordError, never wrapped.
 *   - Descriptors point into the input blob or into decompressed buffers the
 *     result owns; they stay valid until fkc_decode_result_free().
 */
#ifndef FKC_RECORDS_H
#define FKC_RECORDS_H

#include <stddef.h>
#include <stdint.h>

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
} fkc_record;

typedef struct fkc_decode_opts {
    int64_t fetch_offset;
    int64_t stop_offset;            /* exclusive; < 0 means no bound */
    int check_crcs;
    int read_committed;
    const int64_t *aborted_pids;    /* aborted transactions, sorted by first offset */
    const int64_t *aborted_first_offsets;
    size_t aborted_count;
    size_t max_decompressed_bytes;  /* cap per batch */
    int arrow_timestamps;           /* 1: kept records' ms timestamps must fit int64 µs (Arrow output) */
    const fkc_codec_host *host;     /* decompression primitives */
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

/* Re-walk one record's already-validated header list: reads header `*pos`
 * onward; returns 1 and sets key/value (value NULL with value_len -1 for a
 * null value), or 0 at the end. Used by the bridge to build header objects. */
typedef struct fkc_header_iter {
    const uint8_t *pos;
    const uint8_t *end;
} fkc_header_iter;

int fkc_header_next(fkc_header_iter *it, const uint8_t **key, int32_t *key_len, const uint8_t **value,
                    int32_t *value_len);

/* 1 when [p, p+len) is valid UTF-8 (header keys must be, as they become str). */
int fkc_utf8_valid(const uint8_t *p, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* FKC_RECORDS_H */
