/*
 * fkc_fetch.c — the Fetch response walk; see fkc_fetch.h for the contract.
 *
 * Layout walked (Kafka's FetchResponse.json, versions 4-18, flexible from 12):
 *
 *   header:   CorrelationId i32 [v12+: tagged fields]
 *   body:     ThrottleTimeMs i32, [v7+ ErrorCode i16, SessionId i32],
 *             Responses[] , [v12+: tagged fields; v16+ tag 0 NodeEndpoints[]]
 *   topic:    v4-12 Topic string | v13+ TopicId uuid, Partitions[],
 *             [v12+: tagged fields]
 *   partition: PartitionIndex i32, ErrorCode i16, HighWatermark i64,
 *             LastStableOffset i64, [v5+ LogStartOffset i64],
 *             AbortedTransactions[]? (nullable), [v11+ PreferredReadReplica i32],
 *             Records bytes? (nullable),
 *             [v12+: tagged fields: 0 DivergingEpoch, 1 CurrentLeader, 2 SnapshotId]
 *   aborted:  ProducerId i64, FirstOffset i64, [v12+: tagged fields]
 *   node:     NodeId i32, Host string, Port i32, Rack string?, [tagged fields]
 *
 * Flexible versions use compact forms: arrays, strings and bytes carry an
 * unsigned varint N, where 0 means null and N-1 is the length; every struct
 * (the nested tagged-field structs included) ends with its own tagged-field
 * section: an unsigned varint count, then per field tag, size, data.
 * Non-flexible versions use i32 array counts and byte lengths, i16 string
 * lengths, -1 for null.
 */
#include "fkc_fetch.h"

#include <stdlib.h>
#include <string.h>

#include "fkc_cursor.h"
#include "fkc_grow.h"
#include "fkc_varint.h"

/* Minimum wire sizes of one array element, per form. A count is accepted
 * only if `count * min_size` bytes remain, which bounds every allocation by
 * the input length (a hostile count cannot make us reserve memory). */
#define MIN_ABORTED_CLASSIC 16u  /* ProducerId + FirstOffset */
#define MIN_ABORTED_FLEX 17u     /* + empty tagged-field section */
#define MIN_NODE_FLEX 11u        /* NodeId 4, Host 1, Port 4, Rack 1, tags 1 */

typedef struct walk {
    fkc_cursor c;
    fkc_fetch_response *r;
    int version;
    int flexible; /* v12+: compact forms and tagged fields */
    int nomem;    /* an allocation failed (the cursor is failed too, to stop) */
} walk;

/* ---- growable arrays ------------------------------------------------------
 * Reserve room for `want` elements. Callers only ask for counts already
 * checked against the remaining bytes. Geometric growth keeps the walk
 * linear when many small arrays append to one flat array. */
static int reserve(walk *w, void **arr, size_t *cap, size_t want, size_t elem_size)
{
    if (want <= *cap)
        return 1;
    if (fkc_grown_cap(*cap, want, elem_size, 8) == 0) {
        w->nomem = 1;
        fkc_cursor_fail_because(&w->c, "array", "too large to allocate");
        return 0;
    }
    void *grown = fkc_grow(*arr, cap, want, elem_size, 8);
    if (grown == NULL) {
        w->nomem = 1;
        fkc_cursor_fail_because(&w->c, "array", "out of memory");
        return 0;
    }
    *arr = grown;
    return 1;
}

/* Fail at an earlier blob position (the length or count prefix that lies,
 * rather than the byte after it): rewind, then record the failure there. */
static void fail_at(fkc_cursor *c, size_t blob_pos, const char *what, const char *problem)
{
    if (c->failed)
        return;
    c->pos = c->start + (blob_pos - c->base_pos);
    fkc_cursor_fail_because(c, what, problem);
}

/* ---- primitive forms ------------------------------------------------------ */

/* An array count. Returns 1 and sets *count (and *is_null) on success.
 * `min_elem` is the smallest wire size of one element: a count the
 * remaining bytes cannot hold is rejected before anything is allocated. */
static int read_array_count(walk *w, int nullable, size_t min_elem, const char *what, size_t *count,
                            int *is_null)
{
    fkc_cursor *c = &w->c;
    size_t at = fkc_cursor_tell(c);
    int64_t n;
    *is_null = 0;
    *count = 0;
    if (w->flexible) {
        uint32_t raw = fkc_read_uvarint(c, what);
        if (c->failed)
            return 0;
        n = (int64_t)raw - 1; /* compact: 0 is null, N is N-1 elements */
    } else {
        n = fkc_read_i32(c, what);
        if (c->failed)
            return 0;
    }
    if (n == -1) {
        if (!nullable) {
            fail_at(c, at, what, "null array where the field is not nullable");
            return 0;
        }
        *is_null = 1;
        return 1;
    }
    if (n < 0) {
        fail_at(c, at, what, "negative array count");
        return 0;
    }
    if ((uint64_t)n > (uint64_t)(fkc_cursor_remaining(c) / min_elem)) {
        fail_at(c, at, what, "array count larger than the remaining bytes can hold");
        return 0;
    }
    *count = (size_t)n;
    return 1;
}

/* A length-prefixed byte range (string or bytes) borrowed in place.
 * `wide` selects the classic i32 length (bytes/records) over i16 (strings);
 * flexible versions always use the compact unsigned varint. Sets span
 * length -1 for null (only when `nullable`). */
static int read_span(walk *w, int nullable, int wide, const char *what, fkc_fetch_span *span)
{
    fkc_cursor *c = &w->c;
    size_t at = fkc_cursor_tell(c);
    int64_t n;
    if (w->flexible) {
        uint32_t raw = fkc_read_uvarint(c, what);
        if (c->failed)
            return 0;
        n = (int64_t)raw - 1;
    } else if (wide) {
        n = fkc_read_i32(c, what);
    } else {
        n = fkc_read_i16(c, what);
    }
    if (c->failed)
        return 0;
    if (n == -1) {
        if (!nullable) {
            fail_at(c, at, what, "null where the field is not nullable");
            return 0;
        }
        span->offset = fkc_cursor_tell(c);
        span->length = -1;
        return 1;
    }
    if (n < 0) {
        fail_at(c, at, what, "negative length");
        return 0;
    }
    span->offset = fkc_cursor_tell(c);
    if ((uint64_t)n > (uint64_t)fkc_cursor_remaining(c)) {
        /* report at the length prefix: that is the byte that lies */
        fail_at(c, at, what, "length larger than the remaining bytes");
        return 0;
    }
    if (!fkc_skip(c, (size_t)n, what))
        return 0;
    span->length = n;
    return 1;
}

/* ---- tagged fields --------------------------------------------------------
 * The section is: count, then per field: tag, size, `size` bytes. Known tags
 * are handed to `on_tag` with a sub-cursor over exactly their bytes; it
 * returns 1 when it knew the tag (and must then consume all of the bytes,
 * failing the sub-cursor on a problem), 0 for an unknown tag, which is
 * skipped by its size.
 *
 * Order is not enforced: Kafka writes tags sorted, but Java's reader accepts
 * any order, and a drop-in consumer must not refuse what the Java client
 * reads. A known tag that repeats is refused (which value would be meant?);
 * unknown tags are skipped unread, so a repeat of one changes nothing. Known
 * tags are all below 32: one bitmask tracks them, O(1) per field whatever
 * the count. */
typedef int (*tag_handler)(walk *w, uint32_t tag, fkc_cursor *field, void *ctx);

static int read_tagged_fields(walk *w, tag_handler on_tag, void *ctx, const char *what)
{
    fkc_cursor *c = &w->c;
    size_t at = fkc_cursor_tell(c);
    uint32_t count = fkc_read_uvarint(c, what);
    if (c->failed)
        return 0;
    /* each field is at least a tag byte and a size byte */
    if ((uint64_t)count > (uint64_t)(fkc_cursor_remaining(c) / 2)) {
        fail_at(c, at, what, "tagged field count larger than the remaining bytes can hold");
        return 0;
    }
    uint32_t known_seen = 0; /* bit t: known tag t already decoded */
    for (uint32_t i = 0; i < count; i++) {
        size_t tag_at = fkc_cursor_tell(c);
        uint32_t tag = fkc_read_uvarint(c, "tagged field tag");
        uint32_t size = fkc_read_uvarint(c, "tagged field size");
        if (c->failed)
            return 0;
        fkc_cursor field;
        if (!fkc_cursor_sub(c, (size_t)size, &field, "tagged field data"))
            return 0;
        if (on_tag == NULL)
            continue;
        if (!on_tag(w, tag, &field, ctx))
            continue; /* unknown tag: skipped by size */
        /* handlers know only tags below 32 (see partition_tag, response_tag) */
        if (known_seen & (1u << (tag & 31u))) {
            fail_at(c, tag_at, "tagged field tag", "a known tagged field appears twice");
            return 0;
        }
        known_seen |= 1u << (tag & 31u);
        if (field.failed) {
            c->failed = 1;
            c->what = field.what;
            c->problem = field.problem;
            c->fail_pos = field.fail_pos;
            return 0;
        }
        if (field.pos != field.end) {
            fail_at(c, fkc_cursor_tell(&field), "tagged field data",
                    "known tagged field does not fill its declared size");
            return 0;
        }
    }
    return 1;
}

/* A nested flexible struct's own tagged-field section, all fields unknown to
 * us: skip them, on the sub-cursor `f`. The loop ends at the first failure,
 * so a huge count costs no more than the bytes it can read. */
static void skip_nested_tags(fkc_cursor *f, const char *what)
{
    uint32_t count = fkc_read_uvarint(f, what);
    for (uint32_t i = 0; i < count && !f->failed; i++) {
        fkc_read_uvarint(f, "tagged field tag");
        uint32_t size = fkc_read_uvarint(f, "tagged field size");
        fkc_skip(f, (size_t)size, "tagged field data");
    }
}

/* Partition-level tags 0 DivergingEpoch, 1 CurrentLeader, 2 SnapshotId: each
 * a small flexible struct (so it ends with its own tagged-field section). */
static int partition_tag(walk *w, uint32_t tag, fkc_cursor *f, void *ctx)
{
    (void)w;
    fkc_fetch_partition *p = (fkc_fetch_partition *)ctx;
    switch (tag) {
    case 0:
        p->diverging_epoch = fkc_read_i32(f, "DivergingEpoch.Epoch");
        p->diverging_end_offset = fkc_read_i64(f, "DivergingEpoch.EndOffset");
        skip_nested_tags(f, "DivergingEpoch tagged fields");
        p->has_diverging_epoch = 1;
        return 1;
    case 1:
        p->current_leader_id = fkc_read_i32(f, "CurrentLeader.LeaderId");
        p->current_leader_epoch = fkc_read_i32(f, "CurrentLeader.LeaderEpoch");
        skip_nested_tags(f, "CurrentLeader tagged fields");
        p->has_current_leader = 1;
        return 1;
    case 2:
        p->snapshot_end_offset = fkc_read_i64(f, "SnapshotId.EndOffset");
        p->snapshot_epoch = fkc_read_i32(f, "SnapshotId.Epoch");
        skip_nested_tags(f, "SnapshotId tagged fields");
        p->has_snapshot_id = 1;
        return 1;
    default:
        return 0;
    }
}

/* Top-level tag 0 NodeEndpoints (v16+): a compact array of NodeEndpoint.
 * Parsed with a walk over the sub-cursor so the shared primitive readers
 * apply; the sub-walk's failure is copied back by read_tagged_fields. */
static int response_tag(walk *w, uint32_t tag, fkc_cursor *f, void *ctx)
{
    (void)ctx;
    if (tag != 0 || w->version < 16)
        return 0;
    /* a repeat of this tag is refused by read_tagged_fields after the call */
    fkc_fetch_response *r = w->r;
    walk sub = *w;
    sub.c = *f;
    size_t count;
    int is_null;
    if (read_array_count(&sub, 0, MIN_NODE_FLEX, "NodeEndpoints count", &count, &is_null)) {
        if (reserve(&sub, (void **)&r->nodes, &r->cap_nodes, r->n_nodes + count, sizeof(fkc_fetch_node))) {
            for (size_t i = 0; i < count && !sub.c.failed; i++) {
                fkc_fetch_node *n = &r->nodes[r->n_nodes];
                memset(n, 0, sizeof(*n));
                n->node_id = fkc_read_i32(&sub.c, "NodeEndpoint.NodeId");
                read_span(&sub, 0, 0, "NodeEndpoint.Host", &n->host);
                n->port = fkc_read_i32(&sub.c, "NodeEndpoint.Port");
                read_span(&sub, 1, 0, "NodeEndpoint.Rack", &n->rack);
                skip_nested_tags(&sub.c, "NodeEndpoint tagged fields");
                if (!sub.c.failed)
                    r->n_nodes++;
            }
        }
    }
    if (sub.nomem)
        w->nomem = 1;
    *f = sub.c;
    r->has_node_endpoints = 1;
    return 1;
}

/* ---- the structs ---------------------------------------------------------- */

static int read_partition(walk *w, fkc_fetch_partition *p)
{
    fkc_cursor *c = &w->c;
    fkc_fetch_response *r = w->r;
    memset(p, 0, sizeof(*p));
    p->log_start_offset = -1;
    p->preferred_read_replica = -1;
    p->diverging_epoch = -1;
    p->diverging_end_offset = -1;
    p->current_leader_id = -1;
    p->current_leader_epoch = -1;
    p->snapshot_end_offset = -1;
    p->snapshot_epoch = -1;
    p->records.length = -1;

    p->partition_index = fkc_read_i32(c, "PartitionIndex");
    p->error_code = fkc_read_i16(c, "ErrorCode");
    p->high_watermark = fkc_read_i64(c, "HighWatermark");
    p->last_stable_offset = fkc_read_i64(c, "LastStableOffset");
    if (w->version >= 5)
        p->log_start_offset = fkc_read_i64(c, "LogStartOffset");
    if (c->failed)
        return 0;

    size_t count;
    int is_null;
    if (!read_array_count(w, 1, w->flexible ? MIN_ABORTED_FLEX : MIN_ABORTED_CLASSIC,
                          "AbortedTransactions count", &count, &is_null))
        return 0;
    p->aborted_first = r->n_aborted;
    if (is_null) {
        p->aborted_count = -1;
    } else {
        if (!reserve(w, (void **)&r->aborted, &r->cap_aborted, r->n_aborted + count,
                     sizeof(fkc_fetch_aborted)))
            return 0;
        for (size_t i = 0; i < count; i++) {
            fkc_fetch_aborted *a = &r->aborted[r->n_aborted];
            a->producer_id = fkc_read_i64(c, "AbortedTransaction.ProducerId");
            a->first_offset = fkc_read_i64(c, "AbortedTransaction.FirstOffset");
            if (w->flexible)
                read_tagged_fields(w, NULL, NULL, "AbortedTransaction tagged fields");
            if (c->failed)
                return 0;
            r->n_aborted++;
        }
        p->aborted_count = (int64_t)count;
    }
    if (w->version >= 11)
        p->preferred_read_replica = fkc_read_i32(c, "PreferredReadReplica");
    if (!read_span(w, 1, 1, "Records", &p->records))
        return 0;
    if (w->flexible && !read_tagged_fields(w, partition_tag, p, "partition tagged fields"))
        return 0;
    return !c->failed;
}

static size_t min_partition_size(const walk *w)
{
    if (w->flexible) /* 4+2+8+8+8, aborted 1, replica 4, records 1, tags 1 */
        return 37;
    /* 4+2+8+8 [+8 v5] + aborted 4 [+4 v11] + records 4 */
    return 30u + (w->version >= 5 ? 8u : 0u) + (w->version >= 11 ? 4u : 0u);
}

static size_t min_topic_size(const walk *w)
{
    if (w->version >= 13)
        return 18; /* uuid 16, partitions 1, tags 1 */
    if (w->flexible)
        return 3; /* name 1, partitions 1, tags 1 */
    return 6;     /* name 2, partitions 4 */
}

static int read_topic(walk *w, fkc_fetch_topic *t)
{
    fkc_cursor *c = &w->c;
    fkc_fetch_response *r = w->r;
    memset(t, 0, sizeof(*t));
    t->name.length = -1;
    if (w->version >= 13) {
        t->topic_id_offset = fkc_cursor_tell(c);
        if (!fkc_skip(c, 16, "TopicId"))
            return 0;
        t->has_topic_id = 1;
    } else if (!read_span(w, 0, 0, "Topic", &t->name)) {
        return 0;
    }
    size_t count;
    int is_null;
    if (!read_array_count(w, 0, min_partition_size(w), "Partitions count", &count, &is_null))
        return 0;
    if (!reserve(w, (void **)&r->partitions, &r->cap_partitions, r->n_partitions + count,
                 sizeof(fkc_fetch_partition)))
        return 0;
    t->partition_first = r->n_partitions;
    for (size_t i = 0; i < count; i++) {
        if (!read_partition(w, &r->partitions[r->n_partitions]))
            return 0;
        r->n_partitions++;
    }
    t->partition_count = count;
    if (w->flexible && !read_tagged_fields(w, NULL, NULL, "topic tagged fields"))
        return 0;
    return 1;
}

/* ---- entry points --------------------------------------------------------- */

void fkc_fetch_response_init(fkc_fetch_response *r)
{
    memset(r, 0, sizeof(*r));
}

void fkc_fetch_response_free(fkc_fetch_response *r)
{
    free(r->topics);
    free(r->partitions);
    free(r->aborted);
    free(r->nodes);
    fkc_fetch_response_init(r);
}

/* Reuse the arrays of a previous parse (their capacity), drop their contents. */
static void reset_keep_capacity(fkc_fetch_response *r)
{
    r->n_topics = r->n_partitions = r->n_aborted = r->n_nodes = 0;
    r->has_node_endpoints = 0;
    r->correlation_id = 0;
    r->throttle_time_ms = 0;
    r->error_code = 0;
    r->session_id = 0;
    r->error_what = NULL;
    r->error_problem = NULL;
    r->error_pos = 0;
}

int fkc_fetch_parse(const uint8_t *buf, size_t len, int version, fkc_fetch_response *r)
{
    reset_keep_capacity(r);
    r->version = version;
    if (version < FKC_FETCH_MIN_VERSION || version > FKC_FETCH_MAX_VERSION) {
        r->error_what = "version";
        r->error_problem = "unsupported Fetch response version";
        return FKC_FETCH_EVERSION;
    }
    walk w;
    w.r = r;
    w.version = version;
    w.flexible = version >= 12;
    w.nomem = 0;
    fkc_cursor_init(&w.c, buf, buf == NULL ? 0 : len, 0);
    fkc_cursor *c = &w.c;

    /* response header: v0 before 12, v1 (with tagged fields) from 12 */
    r->correlation_id = fkc_read_i32(c, "CorrelationId");
    if (w.flexible)
        read_tagged_fields(&w, NULL, NULL, "response header tagged fields");

    r->throttle_time_ms = fkc_read_i32(c, "ThrottleTimeMs");
    if (version >= 7) {
        r->error_code = fkc_read_i16(c, "ErrorCode");
        r->session_id = fkc_read_i32(c, "SessionId");
    }
    if (!c->failed) {
        size_t count;
        int is_null;
        if (read_array_count(&w, 0, min_topic_size(&w), "Responses count", &count, &is_null) &&
            reserve(&w, (void **)&r->topics, &r->cap_topics, count, sizeof(fkc_fetch_topic))) {
            for (size_t i = 0; i < count; i++) {
                if (!read_topic(&w, &r->topics[r->n_topics]))
                    break;
                r->n_topics++;
            }
        }
    }
    if (w.flexible && !c->failed)
        read_tagged_fields(&w, response_tag, NULL, "response tagged fields");
    if (!c->failed && c->pos != c->end)
        fkc_cursor_fail_because(c, "end of response", "trailing bytes after the response body");

    if (c->failed) {
        r->error_what = c->what;
        r->error_problem = c->problem;
        r->error_pos = c->fail_pos;
        return w.nomem ? FKC_FETCH_ENOMEM : FKC_FETCH_EMALFORMED;
    }
    return FKC_FETCH_OK;
}
