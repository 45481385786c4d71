# cython: language_level=3
# The C declarations _fetch.pyx uses: csrc/fkc_fetch.h as Cython sees it
# (Cython reads this file before _fetch.pyx, whose namespace it joins).
from libc.stdint cimport uint8_t, int16_t, int32_t, int64_t


cdef extern from "fkc_fetch.h" nogil:
    int FKC_FETCH_MIN_VERSION
    int FKC_FETCH_MAX_VERSION
    int FKC_FETCH_OK
    int FKC_FETCH_EMALFORMED
    int FKC_FETCH_ENOMEM
    int FKC_FETCH_EVERSION

    ctypedef struct fkc_fetch_span:
        size_t offset
        int64_t length

    ctypedef struct fkc_fetch_aborted:
        int64_t producer_id
        int64_t first_offset

    ctypedef struct fkc_fetch_partition:
        int32_t partition_index
        int16_t error_code
        int64_t high_watermark
        int64_t last_stable_offset
        int64_t log_start_offset
        int32_t preferred_read_replica
        uint8_t has_diverging_epoch
        uint8_t has_current_leader
        uint8_t has_snapshot_id
        int32_t diverging_epoch
        int64_t diverging_end_offset
        int32_t current_leader_id
        int32_t current_leader_epoch
        int64_t snapshot_end_offset
        int32_t snapshot_epoch
        size_t aborted_first
        int64_t aborted_count
        fkc_fetch_span records

    ctypedef struct fkc_fetch_topic:
        fkc_fetch_span name
        size_t topic_id_offset
        uint8_t has_topic_id
        size_t partition_first
        size_t partition_count

    ctypedef struct fkc_fetch_node:
        int32_t node_id
        fkc_fetch_span host
        int32_t port
        fkc_fetch_span rack

    ctypedef struct fkc_fetch_response:
        int version
        int32_t correlation_id
        int32_t throttle_time_ms
        int16_t error_code
        int32_t session_id
        fkc_fetch_topic *topics
        size_t n_topics
        fkc_fetch_partition *partitions
        size_t n_partitions
        fkc_fetch_aborted *aborted
        size_t n_aborted
        fkc_fetch_node *nodes
        size_t n_nodes
        uint8_t has_node_endpoints
        const char *error_what
        const char *error_problem
        size_t error_pos

    void fkc_fetch_response_init(fkc_fetch_response *r)
    void fkc_fetch_response_free(fkc_fetch_response *r)
    int fkc_fetch_parse(const uint8_t *buf, size_t len, int version, fkc_fetch_response *r)
