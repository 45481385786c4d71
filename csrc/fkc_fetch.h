/*
 * fkc_fetch.h — the Fetch response walk (API key 1, versions 4-18).
 *
 * Contract
 *   fkc_fetch_parse() walks one Fetch response payload — the bytes after the
 *   4-byte size prefix, response header included (correlation id; from v12
 *   the header's tagged fields) — field by field, in one pass, and fills
 *   flat arrays of plain C structs. It creates no Python objects and copies
 *   no record bytes: strings, topic ids and record sets are reported as
 *   (offset, length) pairs into the caller's buffer, which must stay alive
 *   and unchanged while the result is used.
 *
 *   Every read goes through fkc_cursor (one bounds-check idiom). Any
 *   malformation — truncation, a negative length where null is not allowed,
 *   a length or count the remaining bytes cannot hold, an over-long varint,
 *   a known tagged field whose declared size disagrees with its contents or
 *   that appears twice, bytes left over after the body — ends the walk with
 *   FKC_FETCH_EMALFORMED and (`error_what`, `error_problem`, `error_pos`):
 *   static strings naming what was being read and why it failed, and the
 *   byte offset inside `buf`.
 *
 *   Counts and lengths are untrusted. Before an array is walked its count is
 *   checked against the bytes left (each element has a known minimum wire
 *   size), so no allocation is ever driven by a count the input cannot back;
 *   the arrays grow geometrically as elements are actually parsed.
 *
 *   Tagged fields are accepted in any order, as Java's reader accepts them.
 *   Unknown ones are skipped by their declared size (forward compatibility);
 *   known ones (partition tags 0 DivergingEpoch, 1 CurrentLeader,
 *   2 SnapshotId; top-level tag 0 NodeEndpoints from v16) are decoded, must
 *   consume exactly their declared size and may appear only once.
 *
 * Ownership: the arrays are malloc'ed by the walk and released by
 * fkc_fetch_response_free(), which is safe to call after any outcome
 * (including on a result only initialised with fkc_fetch_response_init()).
 *
 * No Python API, no global state: usable with the GIL released, from several
 * threads on separate results, and from fuzzers.
 */
#ifndef FKC_FETCH_H
#define FKC_FETCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_FETCH_MIN_VERSION 4
#define FKC_FETCH_MAX_VERSION 18

enum {
    FKC_FETCH_OK = 0,
    FKC_FETCH_EMALFORMED = 1, /* the bytes do not follow the declared layout */
    FKC_FETCH_ENOMEM = 2,     /* malloc/realloc failed */
    FKC_FETCH_EVERSION = 3    /* version outside [FKC_FETCH_MIN_VERSION, MAX] */
};

/* A byte range inside the caller's buffer. `length` is -1 for null (only
 * where the field is nullable: Rack, Records). */
typedef struct fkc_fetch_span {
    size_t offset;
    int64_t length;
} fkc_fetch_span;

/* One AbortedTransaction entry (v4+). */
typedef struct fkc_fetch_aborted {
    int64_t producer_id;  /* ProducerId of the aborted transaction */
    int64_t first_offset; /* FirstOffset: first offset the transaction wrote */
} fkc_fetch_aborted;

/* One PartitionData entry. Fields absent from the parsed version keep the
 * defaults Kafka's spec gives them (-1), so the bridge never branches on
 * the version. */
typedef struct fkc_fetch_partition {
    int32_t partition_index;        /* PartitionIndex */
    int16_t error_code;             /* ErrorCode (partition level) */
    int64_t high_watermark;         /* HighWatermark */
    int64_t last_stable_offset;     /* LastStableOffset (v4+) */
    int64_t log_start_offset;       /* LogStartOffset (v5+), else -1 */
    int32_t preferred_read_replica; /* PreferredReadReplica (v11+), else -1 */

    /* Tagged fields (v12+); each has_* is 0 when the tag was absent, so the
     * bridge can yield None rather than invent values. */
    uint8_t has_diverging_epoch;
    uint8_t has_current_leader;
    uint8_t has_snapshot_id;
    int32_t diverging_epoch;         /* tag 0 DivergingEpoch.Epoch */
    int64_t diverging_end_offset;    /* tag 0 DivergingEpoch.EndOffset */
    int32_t current_leader_id;       /* tag 1 CurrentLeader.LeaderId */
    int32_t current_leader_epoch;    /* tag 1 CurrentLeader.LeaderEpoch */
    int64_t snapshot_end_offset;     /* tag 2 SnapshotId.EndOffset */
    int32_t snapshot_epoch;          /* tag 2 SnapshotId.Epoch */

    /* AbortedTransactions: `aborted_count` entries starting at
     * result->aborted[aborted_first]; aborted_count == -1 means null (the
     * broker sends null when the fetch is read_uncommitted). */
    size_t aborted_first;
    int64_t aborted_count;

    /* Records (the opaque record-batch blob): a span into `buf`, length -1
     * when null. Decoding it is fkc_records' job, not this walk's. */
    fkc_fetch_span records;
} fkc_fetch_partition;

/* One FetchableTopicResponse entry. */
typedef struct fkc_fetch_topic {
    fkc_fetch_span name;  /* Topic (v4-v12); length -1 from v13 (absent) */
    size_t topic_id_offset; /* TopicId (v13+): 16 bytes at buf[topic_id_offset] */
    uint8_t has_topic_id;   /* 1 from v13 */
    size_t partition_first; /* its partitions: result->partitions[first .. first+count) */
    size_t partition_count;
} fkc_fetch_topic;

/* One NodeEndpoint (v16+ top-level tagged field 0). */
typedef struct fkc_fetch_node {
    int32_t node_id;    /* NodeId */
    fkc_fetch_span host; /* Host (never null) */
    int32_t port;       /* Port */
    fkc_fetch_span rack; /* Rack, length -1 when null */
} fkc_fetch_node;

typedef struct fkc_fetch_response {
    int version;            /* the version the bytes were parsed as */
    int32_t correlation_id; /* response header CorrelationId */
    int32_t throttle_time_ms; /* ThrottleTimeMs */
    int16_t error_code;     /* top-level ErrorCode (v7+), else 0 */
    int32_t session_id;     /* SessionId (v7+), else 0 */

    fkc_fetch_topic *topics;
    size_t n_topics, cap_topics;
    fkc_fetch_partition *partitions; /* all topics' partitions, in wire order */
    size_t n_partitions, cap_partitions;
    fkc_fetch_aborted *aborted; /* all partitions' aborted transactions, in wire order */
    size_t n_aborted, cap_aborted;
    fkc_fetch_node *nodes;
    size_t n_nodes, cap_nodes;
    uint8_t has_node_endpoints; /* the v16+ tag was present */

    /* On failure: what was being read and why it failed (static strings),
     * and where, as a byte offset into `buf`. Meaningless on success. */
    const char *error_what;
    const char *error_problem;
    size_t error_pos;
} fkc_fetch_response;

void fkc_fetch_response_init(fkc_fetch_response *r);
void fkc_fetch_response_free(fkc_fetch_response *r);

/* Parse `len` bytes at `buf` as a Fetch response of `version`. `r` must have
 * been initialised (or freed) before; it is reset first. Returns FKC_FETCH_OK
 * or one of the FKC_FETCH_E* codes. */
int fkc_fetch_parse(const uint8_t *buf, size_t len, int version, fkc_fetch_response *r);

#ifdef __cplusplus
}
#endif

#endif /* FKC_FETCH_H */
