# cython: language_level=3
# The C declarations _records.pyx uses: csrc's headers as Cython sees them
# (Cython reads this file before _records.pyx, whose namespace it joins).
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cpython.ref cimport PyObject
from fastkc._core._bridge cimport PyGC_Disable, PyGC_Enable


cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        pass
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ


cdef extern from "fkc_errors.h":
    enum:
        FKC_OK
        FKC_ERR_INVALID
        FKC_ERR_CRC
        FKC_ERR_DECOMPRESS
        FKC_ERR_SIZE_LIMIT
        FKC_ERR_UNSUPPORTED_CODEC
        FKC_ERR_HOST
        FKC_ERR_NOMEM
        FKC_ERR_BUDGET
        FKC_ERR_ARROW_LIMIT
        FKC_ERR_ARROW_NOMEM


cdef extern from "fkc_crc32c.h":
    uint32_t fkc_crc32c(uint32_t crc, const uint8_t *data, size_t length) nogil
    const char *fkc_crc32c_implementation() nogil
    void fkc_crc32c_force_software(int force) nogil


cdef extern from "fkc_codec.h":
    ctypedef enum fkc_codec_op:
        FKC_OP_GZIP
        FKC_OP_SNAPPY_RAW
        FKC_OP_LZ4_FRAME
        FKC_OP_ZSTD
    ctypedef struct fkc_blob:
        const uint8_t *data
        size_t len
        void *owner
        int owner_is_malloc
    ctypedef int (*fkc_codec_fn)(void *ctx, fkc_codec_op op, const uint8_t *inp, size_t in_len, size_t cap,
                                 size_t size_hint, fkc_blob *out, char *errbuf, size_t errbuf_len) noexcept
    ctypedef void (*fkc_codec_release_fn)(void *ctx, void *owner) noexcept
    ctypedef struct fkc_codec_host:
        fkc_codec_fn decompress
        fkc_codec_release_fn release
        void *ctx


cdef extern from "fkc_lz4.h":
    int fkc_lz4_load()
    int fkc_lz4_native() nogil
    void fkc_lz4_force_host(int force)
    int fkc_lz4_version()
    int fkc_lz4_decompress(const uint8_t *inp, size_t in_len, size_t cap, fkc_blob *out, char *errbuf,
                           size_t errbuf_len) nogil


cdef extern from "fkc_records.h":
    ctypedef struct fkc_record:
        int64_t offset
        int32_t key_len
        int32_t value_len
    ctypedef struct fkc_decode_opts:
        int64_t fetch_offset
        int64_t stop_offset
        int check_crcs
        int read_committed
        const int64_t *aborted_pids
        const int64_t *aborted_first_offsets
        size_t aborted_count
        size_t max_decompressed_bytes
        size_t max_batch_records
        int arrow_timestamps
        int arrow_limits
        size_t arrow_topic_len
        const fkc_codec_host *host
        int share
        const int64_t *acquired_first
        const int64_t *acquired_last
        const int16_t *acquired_count
        size_t acquired_n
    ctypedef struct fkc_decode_result:
        fkc_record *records
        size_t count
        size_t capacity
        int64_t next_offset
        uint64_t key_bytes
        uint64_t value_bytes
        uint64_t header_count
        uint64_t header_key_bytes
        uint64_t header_value_bytes
        int error
        int64_t error_offset
        int64_t error_batch_last
        char error_reason[256]
    int fkc_share_gaps(const fkc_decode_opts *opts, const int64_t *offsets, size_t stride, size_t n,
                       int64_t **pairs, size_t *count) nogil
    int fkc_decode_records(const uint8_t *data, size_t length, const fkc_decode_opts *opts,
                           fkc_decode_result *result) nogil
    void fkc_decode_result_free(fkc_decode_result *result)
    enum:
        FKC_TAIL_NONE
        FKC_TAIL_CUT
        FKC_TAIL_MALFORMED
    ctypedef struct fkc_scan_info:
        size_t complete_bytes
        size_t entries
        int64_t next_offset
        int32_t leader_epoch
        int tail
        int64_t tail_offset
        int64_t tail_size
        char reason[128]
        size_t slow_codec_bytes
    void fkc_scan_blob(const uint8_t *data, size_t length, fkc_scan_info *info) nogil
    enum:
        FKC_CHECK_OK
        FKC_CHECK_CORRUPT
        FKC_CHECK_LEGACY
        FKC_CHECK_BAD_CRC
    ctypedef struct fkc_check_info:
        int64_t records
        int64_t next_offset
        size_t checked_bytes
        size_t batches
        int status
        int64_t error_offset
        char reason[128]
    void fkc_check_blob(const uint8_t *data, size_t length, int64_t position, fkc_check_info *info) nogil
    ctypedef struct fkc_stream:
        pass
    fkc_stream *fkc_stream_new(const uint8_t *data, size_t length, const fkc_decode_opts *opts)
    int fkc_stream_step(fkc_stream *s, size_t max_records, size_t max_held_bytes, fkc_decode_result *out) nogil
    int fkc_stream_done(const fkc_stream *s)
    int32_t fkc_stream_leader_epoch(const fkc_stream *s)
    size_t fkc_stream_held_bytes(const fkc_stream *s)
    size_t fkc_stream_decompressed_bytes(const fkc_stream *s)
    void fkc_stream_free(fkc_stream *s)
    ctypedef struct fkc_step_mark:
        size_t count
        int64_t resume
        int done
    void fkc_stream_record_marks(fkc_stream *s, int on)
    size_t fkc_stream_marks(const fkc_stream *s, const fkc_step_mark **marks)


cdef extern from "fkc_arrow_abi.h":
    struct ArrowArray:
        void (*release)(ArrowArray *)


cdef extern from "fkc_arrow_builder.h":
    ctypedef struct fkc_arrow_builder:
        size_t rows
        int64_t *offset
        uint64_t base[6]
        int zero_copy
        int share
    int fkc_builder_keep(fkc_arrow_builder *b, void *owner, fkc_codec_release_fn release, void *ctx)
    fkc_arrow_builder *fkc_builder_new()
    uint64_t fkc_arena_reuse_count()
    void fkc_builder_free(fkc_arrow_builder *b)
    int fkc_builder_segment(fkc_arrow_builder *b, const uint8_t *topic, size_t topic_len, int32_t partition)
    void fkc_builder_totals(const fkc_arrow_builder *b, uint64_t out[6])
    int fkc_builder_export(fkc_arrow_builder *b, ArrowArray *out) nogil
    int fkc_stream_step_arrow(fkc_stream *s, size_t max_records, size_t max_held_bytes, fkc_arrow_builder *b,
                              fkc_decode_result *out) nogil
    int fkc_decode_arrow(const uint8_t *data, size_t length, const fkc_decode_opts *opts, fkc_arrow_builder *b,
                         fkc_decode_result *result) nogil


cdef extern from "fkc_pybuild.h":
    ctypedef struct fkc_build_ctx:
        PyTypeObject *record_type
        PyObject *topic
        PyObject *partition
        PyObject *key_fn
        int key_full
        PyObject *value_fn
        int value_full
        int untrack
        int share
    object fkc_py_build_list(const fkc_build_ctx *b, const fkc_decode_result *res, size_t count)
    object fkc_py_record_with(object src, const Py_ssize_t *indexes, PyObject **items, Py_ssize_t count)
