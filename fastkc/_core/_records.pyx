# cython: language_level=3
"""Cython bridge over the C record decoder (csrc/fkc_records.c).

Decoding is two phases for records, one for Arrow:
  1. fkc_decode_records() / fkc_stream_step(): pure C, run with the GIL
     released. Walks the blob, checks CRCs, decompresses (through the codec
     host below, which re-takes the GIL for the one Python codec call per
     batch), parses records into a flat descriptor array and filters them.
  2. fkc_py_build_list() (fkc_pybuild.h): descriptors -> ConsumerRecord
     tuples, built in C.
  Arrow: fkc_decode_arrow() / fkc_stream_step_arrow() run the same walk with
     the Arrow columns (csrc/fkc_arrow_builder.c) as the sink: records are
     written into the columns as they are parsed, and the batch is handed to
     pyarrow through the C data interface in one call (ArrowBuilder.finish).

The input is read through the buffer protocol (bytes, bytearray, memoryview
slices of a larger response buffer): no copy. The C declarations are in
_records.pxd.
"""
cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset, strlen
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.ref cimport PyObject
from cpython.list cimport PyList_GET_ITEM

import threading
import zlib

import cramjam
import lz4.frame
import zstandard

from fastkc import errors as _errors
from fastkc.share_ranges import share_failure as _share_failure
from fastkc.structs import ConsumerRecord as _ConsumerRecord, DecodedPartition as _DecodedPartition
from fastkc.structs import ShareDecoded as _ShareDecoded, ShareRecord as _ShareRecord


# ---------------------------------------------------------------------------
# CRC32C


def crc32c(data, unsigned int crc=0):
    """CRC-32C of a bytes-like object, continuing from `crc` (0 to start)."""
    cdef Py_buffer view
    cdef uint32_t out
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            out = fkc_crc32c(crc, <const uint8_t *>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return out


def crc32c_implementation():
    """'sse4.2' (hardware, chosen at run time) or 'software'."""
    return fkc_crc32c_implementation().decode("ascii")


def force_crc32c_software(bint force):
    """Pin CRC-32C to the portable software path (tests check both paths)."""
    fkc_crc32c_force_software(1 if force else 0)


# ---------------------------------------------------------------------------
# Codec host: the primitive decompressions, through the Python packages.
# One call per compressed batch, so the Python call cost is paid per batch
# (hundreds of records), not per record. Every function gets at most
# cap + 1 bytes of output, so "too big" is detected without unbounded memory.


class _SizeLimit(Exception):
    pass


def _gzip_decompress(src, size_t cap):
    # gzip container only (wbits 16 + 15), as Java's GZIPInputStream; RFC
    # 1952 concatenated members are decoded one after another.
    chunks = []
    cdef size_t total = 0
    data = src
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        # cap + 1 - total >= 1 here, so zlib never reads it as "unlimited"
        chunk = d.decompress(data, cap + 1 - total)
        total += len(chunk)
        chunks.append(chunk)
        if total > cap:
            raise _SizeLimit()
        if not d.eof:
            raise ValueError("gzip stream is cut off")
        data = d.unused_data
        if not data:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _lz4_decompress(src, size_t cap):
    # The frame descriptor is validated (get_frame_info) and its declared
    # content size checked against the cap before anything is decompressed.
    info = lz4.frame.get_frame_info(src)
    cdef size_t declared = info.get("content_size", 0)  # 0: not stored (Kafka's producers never store it)
    if declared > cap:
        raise _SizeLimit()
    d = lz4.frame.LZ4FrameDecompressor()
    # max_length is the size of the output buffer python-lz4 allocates up
    # front: asking for cap + 1 (32 MiB by default) at once cost a 32 MiB
    # malloc/free per batch, ~20 us, most of a 16 KB batch's decode. So the
    # output is asked for in growing pieces (a guess first, then 4x), never
    # more than cap + 1 in total, so the cap still holds.
    cdef size_t total = 0
    cdef size_t want = declared + 1 if declared else max(<size_t>4 * <size_t>len(src), <size_t>65536)
    chunks = []
    data = src
    while True:
        piece = d.decompress(data, max_length=min(want, cap + 1 - total))
        data = b""
        total += len(piece)
        chunks.append(piece)
        if total > cap:
            raise _SizeLimit()
        if d.eof or d.needs_input or not piece:
            break
        want = total * 4
    if not d.eof:
        raise ValueError("LZ4 frame is cut off")
    if d.unused_data:
        raise ValueError("bytes after the LZ4 frame")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# Input fed per call when a zstd frame does not declare its size: a 4-byte
# RLE block can expand to 128 KiB, so small feeds bound how far past the cap
# the output can run before it is checked (512 bytes: ~16 MiB at worst).
# A frame that declares its size is fed whole: libzstd stops a frame whose
# output passes its declared size (checked per block of <= 128 KiB).
cdef Py_ssize_t _ZSTD_UNKNOWN_SIZE_FEED = 512


def _zstd_decompress(src, size_t cap):
    # A new decompressor per frame: python-zstandard objects are not
    # thread-safe and decoding may run in several threads (phase 1 drops the
    # GIL). Concatenated frames are allowed.
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t n = len(src)
    cdef Py_ssize_t feed
    cdef size_t total = 0
    chunks = []
    while True:
        declared = zstandard.frame_content_size(src[pos:])  # -1: not stored
        if declared >= 0 and <size_t>declared > cap - total:
            raise _SizeLimit()
        d = zstandard.ZstdDecompressor().decompressobj()
        feed = n if declared >= 0 else _ZSTD_UNKNOWN_SIZE_FEED
        while not d.eof:
            if pos >= n:
                raise ValueError("zstd frame is cut off")
            piece = d.decompress(src[pos:pos + feed])
            pos += min(feed, n - pos)
            total += len(piece)
            if piece:
                chunks.append(piece)
            if total > cap:
                raise _SizeLimit()
        pos -= len(d.unused_data)
        if pos >= n:
            break
    if not chunks:
        return b""
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


cdef class _DecodeState:
    # Holds an exception a codec callback could not report as a codec
    # failure (MemoryError, KeyboardInterrupt...): it is re-raised as is.
    cdef object pending


cdef int _host_decompress(void *ctx, fkc_codec_op op, const uint8_t *inp, size_t in_len, size_t cap,
                          size_t size_hint, fkc_blob *out, char *errbuf, size_t errbuf_len) noexcept with gil:
    cdef _DecodeState state = <_DecodeState>ctx
    cdef Py_buffer *view
    cdef bytes message
    try:
        src = PyMemoryView_FromMemory(<char *>inp, <Py_ssize_t>in_len, PyBUF_READ)
        if op == FKC_OP_GZIP:
            result = _gzip_decompress(src, cap)
        elif op == FKC_OP_SNAPPY_RAW:
            result = cramjam.snappy.decompress_raw(src)
        elif op == FKC_OP_LZ4_FRAME:
            result = _lz4_decompress(src, cap)
        elif op == FKC_OP_ZSTD:
            result = _zstd_decompress(src, cap)
        else:
            raise ValueError("unknown codec operation")
        view = <Py_buffer *>malloc(sizeof(Py_buffer))
        if view == NULL:
            raise MemoryError()
        try:
            PyObject_GetBuffer(result, view, PyBUF_SIMPLE)
        except BaseException:
            free(view)
            raise
        out.data = <const uint8_t *>view.buf
        out.len = <size_t>view.len
        out.owner = <void *>view
        out.owner_is_malloc = 0
        return FKC_OK
    except _SizeLimit:
        return FKC_ERR_SIZE_LIMIT
    except MemoryError as exc:
        state.pending = exc
        return FKC_ERR_HOST
    except Exception as exc:
        # The codec rejected the bytes: reported as RecordDecompressionError.
        message = "{0}: {1}".format(type(exc).__name__, exc).encode("utf-8", "replace")[:errbuf_len - 1]
        memcpy(errbuf, <const char *>message, len(message))
        errbuf[len(message)] = 0
        return FKC_ERR_DECOMPRESS
    except BaseException as exc:
        state.pending = exc
        return FKC_ERR_HOST


cdef int _host_dispatch(void *ctx, fkc_codec_op op, const uint8_t *inp, size_t in_len, size_t cap,
                        size_t size_hint, fkc_blob *out, char *errbuf, size_t errbuf_len) noexcept nogil:
    # LZ4 frames are decompressed by liblz4 in C (fkc_lz4.c) when the system
    # has it: no GIL, so a step prepared on the decode worker does not wait
    # for the polling thread once per batch. Everything else goes to the
    # Python packages, which take the GIL.
    if op == FKC_OP_LZ4_FRAME and fkc_lz4_native():
        return fkc_lz4_decompress(inp, in_len, cap, out, errbuf, errbuf_len)
    return _host_decompress(ctx, op, inp, in_len, cap, size_hint, out, errbuf, errbuf_len)


fkc_lz4_load()


def lz4_implementation():
    """'liblz4 <version>' (C, no GIL) or 'python-lz4' (the codec host)."""
    if fkc_lz4_native():
        v = fkc_lz4_version()
        return "liblz4 {0}.{1}.{2}".format(v // 10000, v // 100 % 100, v % 100)
    return "python-lz4"


def force_lz4_host(bint force):
    """Route lz4 frames to the Python host (python-lz4) even when liblz4 is
    loaded: tests check both paths."""
    fkc_lz4_force_host(1 if force else 0)


cdef void _host_release(void *ctx, void *owner) noexcept with gil:
    cdef Py_buffer *view = <Py_buffer *>owner
    PyBuffer_Release(view)
    free(view)


# ---------------------------------------------------------------------------
# Phase 1 driver


cdef class _Phase1:
    """Owns one phase-1 result: the input buffer, aborted arrays, the C arena."""
    cdef Py_buffer view
    cdef bint have_view
    cdef fkc_decode_result result
    cdef bint have_result
    cdef int64_t *aborted
    cdef _DecodeState state
    cdef fkc_codec_host host
    cdef ArrowBuilder builder  # the Arrow form's columns
    cdef object partition
    cdef bint zero_copy
    cdef object acquired  # share decode: the checked (first, last, count) ranges, else None
    cdef int64_t *acquired_bounds  # their firsts then lasts (opts points into it)
    cdef int16_t *acquired_counts
    cdef fkc_decode_opts opts  # kept: the share gaps are computed against its ranges

    def __cinit__(self):
        self.builder = None
        self.partition = 0
        self.zero_copy = False
        self.acquired = None
        self.acquired_bounds = NULL
        self.acquired_counts = NULL
        self.have_view = False
        self.have_result = False
        self.aborted = NULL
        self.state = _DecodeState()

    def __dealloc__(self):
        if self.have_result:
            fkc_decode_result_free(&self.result)
        if self.have_view:
            PyBuffer_Release(&self.view)
        free(self.aborted)
        free(self.acquired_bounds)
        free(self.acquired_counts)

    cdef _fill_share(self):
        # The share filter's ranges as C arrays (checked by fastkc.share_ranges)
        cdef Py_ssize_t n = len(self.acquired)
        cdef Py_ssize_t i
        self.acquired_bounds = <int64_t *>malloc(2 * n * sizeof(int64_t) + 1)
        self.acquired_counts = <int16_t *>malloc(n * sizeof(int16_t) + 1)
        if self.acquired_bounds == NULL or self.acquired_counts == NULL:
            raise MemoryError()
        for i in range(n):
            first, last, count = self.acquired[i]
            self.acquired_bounds[i] = first
            self.acquired_bounds[n + i] = last
            self.acquired_counts[i] = count
        self.opts.share = 1
        self.opts.acquired_first = self.acquired_bounds
        self.opts.acquired_last = self.acquired_bounds + n
        self.opts.acquired_count = self.acquired_counts
        self.opts.acquired_n = <size_t>n

    cdef run(self, data, int64_t fetch_offset, int64_t stop_offset, bint check_crcs, bint read_committed,
             aborted_transactions, max_decompressed_bytes, max_batch_records, bint arrow, topic):
        cdef int rc
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE)
        self.have_view = True
        self.aborted = _fill_opts(&self.opts, self.state, &self.host, fetch_offset, stop_offset, check_crcs,
                                  read_committed, aborted_transactions, max_decompressed_bytes, max_batch_records,
                                  arrow, topic)
        if self.acquired is not None:
            self._fill_share()
        if arrow:
            self.builder = ArrowBuilder(None, self.zero_copy)
            self.builder.b.share = self.opts.share
            self.builder._segment(topic, self.partition)
            self.builder._keep_input(data)
            with nogil:
                rc = fkc_decode_arrow(<const uint8_t *>self.view.buf, <size_t>self.view.len, &self.opts,
                                      self.builder.b, &self.result)
        else:
            with nogil:
                rc = fkc_decode_records(<const uint8_t *>self.view.buf, <size_t>self.view.len, &self.opts,
                                        &self.result)
        self.have_result = True
        return rc


_SIZE_LIMIT = 1 << 62
INT32_MAX_ = (1 << 31) - 1


cdef int64_t *_fill_opts(fkc_decode_opts *opts, _DecodeState state, fkc_codec_host *host, int64_t fetch_offset,
                         int64_t stop_offset, bint check_crcs, bint read_committed, aborted_transactions,
                         max_decompressed_bytes, max_batch_records, bint arrow, topic) except? NULL:
    # Fills *opts; returns the malloc'd aborted-transaction arrays (NULL when
    # none) the caller owns and must keep alive as long as opts is used.
    cdef Py_ssize_t n_aborted = len(aborted_transactions) if read_committed else 0
    cdef Py_ssize_t i
    cdef int64_t *aborted = NULL
    if max_decompressed_bytes is None or max_decompressed_bytes < 0:
        raise ValueError("max_decompressed_bytes must be a non-negative int")
    if max_batch_records is None or max_batch_records < 0:
        raise ValueError("max_batch_records must be a non-negative int (0: no bound)")
    if n_aborted:
        aborted = <int64_t *>malloc(2 * n_aborted * sizeof(int64_t))
        if aborted == NULL:
            raise MemoryError()
        try:
            for i in range(n_aborted):
                pid, first = aborted_transactions[i]
                aborted[i] = pid
                aborted[n_aborted + i] = first
        except BaseException:
            free(aborted)
            raise
    host.decompress = _host_dispatch
    host.release = _host_release
    host.ctx = <void *>state
    memset(opts, 0, sizeof(fkc_decode_opts))
    opts.fetch_offset = fetch_offset
    opts.stop_offset = stop_offset
    opts.check_crcs = 1 if check_crcs else 0
    opts.read_committed = 1 if read_committed else 0
    opts.aborted_pids = aborted
    opts.aborted_first_offsets = aborted + n_aborted if n_aborted else NULL
    opts.aborted_count = <size_t>n_aborted
    # Clamped well below SIZE_MAX: the codec host asks for cap + 1 bytes,
    # which must not wrap to 0 (zlib's "unlimited").
    opts.max_decompressed_bytes = <size_t>min(max_decompressed_bytes, _SIZE_LIMIT)
    opts.max_batch_records = <size_t>min(max_batch_records, _SIZE_LIMIT)
    opts.arrow_timestamps = 1 if arrow else 0
    opts.arrow_limits = 1 if arrow else 0
    opts.arrow_topic_len = len(topic.encode("utf-8")) if arrow else 0
    opts.host = host
    return aborted


_ERROR_CLASSES = {
    FKC_ERR_INVALID: _errors.InvalidRecordError,
    FKC_ERR_CRC: _errors.RecordCrcError,
    FKC_ERR_DECOMPRESS: _errors.RecordDecompressionError,
    FKC_ERR_SIZE_LIMIT: _errors.DecompressedSizeLimitError,
    FKC_ERR_UNSUPPORTED_CODEC: _errors.UnsupportedCompressionError,
    FKC_ERR_BUDGET: _errors.RecordCountLimitError,
    FKC_ERR_ARROW_LIMIT: _errors.ArrowCapacityError,
    FKC_ERR_ARROW_NOMEM: _errors.ArrowMemoryError,
}


cdef _raise_result_error(const fkc_decode_result *result, _DecodeState state, topic, partition, records):
    cdef int kind = result.error
    if kind == FKC_ERR_HOST and state.pending is not None:
        exc = state.pending
        state.pending = None
        raise exc
    if kind == FKC_ERR_NOMEM or kind == FKC_ERR_HOST:
        raise MemoryError("fastkc: " + result.error_reason.decode("utf-8", "replace"))
    cls = _ERROR_CLASSES[kind]
    raise cls(
        result.error_reason.decode("utf-8", "replace"),
        topic,
        partition,
        result.error_offset,
        records,
        result.next_offset,
    )


cdef _raise_error(_Phase1 p, topic, partition, records):
    _raise_result_error(&p.result, p.state, topic, partition, records)


def _deserializer_parts(spec):
    if spec is None:
        return None, False
    fn, full = spec
    return fn, bool(full)


# ---------------------------------------------------------------------------
# Phase 2a: ConsumerRecord tuples


cdef object _record_type = _ConsumerRecord
cdef bint _untrack_records = True


def _arena_reuses():
    """How many Arrow builders got a released arena instead of fresh memory (tests)."""
    return fkc_arena_reuse_count()


def _set_untrack_records(bint flag):
    """Benchmark/test switch for the GC policy described in decode_partition."""
    global _untrack_records
    _untrack_records = flag


def replace_fields(list records, list fields):
    """Backend contract: see fastkc/_backend.py. `records` rebuilt, slot
    `index` of record i holding values[i] for each (index, values) of
    `fields` (at most two: key and value): the batch deserializers' step
    (fastkc/deserializers.py). In C: the same rebuild in Python, through
    zip and tuple.__new__, costs about a microsecond a record, more than
    building the record did."""
    cdef Py_ssize_t n = len(records), width, i, k, nf = len(fields)
    cdef Py_ssize_t indexes[2]
    cdef PyObject *items[2]
    cdef list columns = []
    cdef list out
    cdef int gc_was_enabled
    if nf > 2:
        raise ValueError("replace_fields: at most two fields, not {0}".format(nf))
    if n == 0:
        return []
    first = records[0]
    kind = type(first)
    if not isinstance(first, tuple):
        raise TypeError("replace_fields: records are tuples, not {0}".format(kind.__name__))
    width = len(first)
    for k in range(nf):
        index, values = fields[k]
        values = values if type(values) is list else list(values)
        if len(values) != n:
            raise ValueError("replace_fields: {0} values for {1} records".format(len(values), n))
        if not 0 <= index < width:
            raise IndexError("replace_fields: no field {0} in a record of {1}".format(index, width))
        indexes[k] = index
        columns.append(values)
    out = [None] * n
    # the rebuilt records are GC-tracked (their values may be anything): the
    # GC is paused while they are made, as in decode_partition
    gc_was_enabled = PyGC_Disable()
    try:
        for i in range(n):
            record = records[i]
            if type(record) is not kind or len(<tuple>record) != width:
                raise TypeError("replace_fields: record {0} is not a {1} of {2} fields".format(
                    i, kind.__name__, width))
            for k in range(nf):
                items[k] = PyList_GET_ITEM(columns[k], i)
            out[i] = fkc_py_record_with(record, indexes, items, nf)
    finally:
        if gc_was_enabled:
            PyGC_Enable()
    return out


def decode_partition(data, topic, partition, fetch_offset, stop_offset, check_crcs, read_committed,
                     aborted_transactions, key_deserializer, value_deserializer, max_decompressed_bytes,
                     max_batch_records=0):
    """Backend contract: see fastkc/_backend.py. Returns DecodedPartition(list, next_offset)."""
    cdef _Phase1 p = _Phase1()
    rc = p.run(data, fetch_offset, stop_offset, check_crcs, read_committed, aborted_transactions,
               max_decompressed_bytes, max_batch_records, False, topic)
    records = _build_records(&p.result, topic, partition, key_deserializer, value_deserializer)
    if rc != FKC_OK:
        _raise_error(p, topic, partition, records)
    return _DecodedPartition(records, p.result.next_offset)


cdef _build_records(const fkc_decode_result *result, topic, partition, key_deserializer, value_deserializer,
                    bint share=False):
    cdef fkc_build_ctx b
    cdef int gc_was_enabled
    key_fn, key_full = _deserializer_parts(key_deserializer)
    value_fn, value_full = _deserializer_parts(value_deserializer)
    b.record_type = <PyTypeObject *>(_ShareRecord if share else _record_type)
    b.share = 1 if share else 0
    b.topic = <PyObject *>topic
    b.partition = <PyObject *>partition
    b.key_fn = <PyObject *>key_fn if key_fn is not None else NULL
    b.key_full = 1 if key_full else 0
    b.value_fn = <PyObject *>value_fn if value_fn is not None else NULL
    b.value_full = 1 if value_full else 0
    b.untrack = 1 if (_untrack_records and key_fn is None and value_fn is None) else 0
    # The cyclic GC is paused while one fetch's records are built: every
    # record is a GC-tracked tuple holding a (mutable, so trackable) headers
    # list, and with the GC running, allocating ~10^4 of them triggers
    # repeated young-generation collections that rescan the growing list
    # (anchors.md: 1.0 M/s with the GC on vs 2.8 M/s paused for a bare build
    # loop). Pausing defers that work to one collection after the build.
    #
    # Beyond the pause, when no deserializer is given each record tuple and
    # its headers list are untracked (b.untrack): then a record holds only
    # str/int/bytes/None and a list of (str, bytes|None) tuples, none of which
    # can point back at it, so the GC has nothing to find; the deferred young
    # collection after the build then has ~0 objects to scan instead of two
    # per record. Measured on this 2-vCPU box, 100k records, CPU time:
    # tracked 1.5 M records/s, untracked 3.0 M records/s.
    # The price, accepted knowingly: if user code later mutates a record's
    # headers list into a cycle through that record (rec.headers.append(rec)),
    # that cycle is never collected (a leak, not a crash). With deserializers
    # the values are arbitrary user objects that may be mutated into cycles,
    # so records stay tracked. _set_untrack_records(False) turns it off.
    gc_was_enabled = PyGC_Disable()
    try:
        return fkc_py_build_list(&b, result, result.count)
    finally:
        if gc_was_enabled:
            PyGC_Enable()


# ---------------------------------------------------------------------------
# Phase 2b: Arrow


cdef object _schema = None
cdef object _view_schema = None
cdef object _share_schema = None
cdef object _share_view_schema = None
cdef object _import_batch = None


cdef _arrow_init():
    global _schema, _view_schema, _share_schema, _share_view_schema, _import_batch
    if _schema is None:
        import pyarrow
        from fastkc.records import arrow_schema, share_arrow_schema

        _import_batch = pyarrow.RecordBatch._import_from_c
        _view_schema = arrow_schema(zero_copy=True)
        _share_schema = share_arrow_schema()
        _share_view_schema = share_arrow_schema(zero_copy=True)
        _schema = arrow_schema()


cdef class ArrowBuilder:
    """Arrow columns that RecordStream.arrow(..., builder=b) steps append to
    (the decoder writes them while it parses), across partitions: finish()
    returns one pyarrow.RecordBatch (arrow_schema()) holding every step's
    records, with one copy of the data, and empties the builder for reuse.
    The int32 offsets bound what it holds: a step ends before it would pass
    them, and the rest follows after finish()."""
    cdef fkc_arrow_builder *b

    def __cinit__(self, base=None, zero_copy=False):
        # base: totals (as RecordStream.last_totals) of batches the finished
        # batch will be joined to; the int32 limits apply to the sum.
        # zero_copy: key/value as binary_view into the steps' input buffers.
        cdef int i
        self.b = fkc_builder_new()
        if self.b == NULL:
            raise MemoryError()
        self.b.zero_copy = 1 if zero_copy else 0
        if base is not None:
            for i in range(6):
                self.b.base[i] = min(int(base[i]), INT32_MAX_)

    cdef _keep_input(self, data):
        # Zero-copy: views may point into `data` (an uncompressed batch's
        # bytes), so the exported batch holds its own buffer export of it,
        # released by the batch's release callback through _host_release,
        # which takes the GIL (pyarrow may release on any thread).
        cdef Py_buffer *view
        if not self.b.zero_copy:
            return
        view = <Py_buffer *>malloc(sizeof(Py_buffer))
        if view == NULL:
            raise MemoryError()
        try:
            PyObject_GetBuffer(data, view, PyBUF_SIMPLE)
        except BaseException:
            free(view)
            raise
        if not fkc_builder_keep(self.b, <void *>view, _host_release, NULL):
            PyBuffer_Release(view)
            free(view)
            raise MemoryError()

    def __dealloc__(self):
        fkc_builder_free(self.b)

    cdef _segment(self, topic, partition):
        cdef bytes topic_utf8 = topic.encode("utf-8")
        if not fkc_builder_segment(self.b, <const uint8_t *>topic_utf8, <size_t>len(topic_utf8),
                                   <int32_t>partition):
            raise MemoryError()

    @property
    def num_rows(self):
        return self.b.rows

    @property
    def last_offset(self):
        """The offset of the last row appended (None when empty)."""
        return self.b.offset[self.b.rows - 1] if self.b.rows else None

    @property
    def totals(self):
        """(rows, key bytes, value bytes, header count, header key bytes,
        header value bytes) held now."""
        cdef uint64_t t[6]
        fkc_builder_totals(self.b, t)
        return (t[0], t[1], t[2], t[3], t[4], t[5])

    def finish(self):
        """The records appended so far as one pyarrow.RecordBatch; the
        builder is empty afterwards."""
        cdef ArrowArray exported
        cdef int ok
        _arrow_init()
        with nogil:
            ok = fkc_builder_export(self.b, &exported)
        if not ok:
            raise MemoryError("fastkc: out of memory for Arrow columns")
        try:
            if self.b.share:
                schema = _share_view_schema if self.b.zero_copy else _share_schema
            else:
                schema = _view_schema if self.b.zero_copy else _schema
            return _import_batch(<size_t>&exported, schema)
        finally:
            if exported.release != NULL:
                exported.release(&exported)


def decode_partition_arrow(data, topic, partition, fetch_offset, stop_offset, check_crcs, read_committed,
                           aborted_transactions, max_decompressed_bytes, max_batch_records=0, zero_copy=False):
    """Backend contract: see fastkc/_backend.py. Returns DecodedPartition(pyarrow.RecordBatch, next_offset)."""
    cdef _Phase1 p = _Phase1()
    p.partition = partition
    p.zero_copy = bool(zero_copy)
    rc = p.run(data, fetch_offset, stop_offset, check_crcs, read_committed, aborted_transactions,
               max_decompressed_bytes, max_batch_records, True, topic)
    if rc == FKC_ERR_HOST or rc == FKC_ERR_NOMEM:
        _raise_error(p, topic, partition, None)
    batch = p.builder.finish()
    if rc != FKC_OK:
        _raise_error(p, topic, partition, batch)
    return _DecodedPartition(batch, p.result.next_offset)


# ---------------------------------------------------------------------------
# Share groups (KIP-932): the one walk with the range filter (fkc_share_keep)


cdef list _share_gaps(_Phase1 p, const int64_t *offsets, size_t stride, size_t n):
    # the gaps in C (fkc_share_gaps: one merge pass), as (first, last) tuples
    cdef int64_t *pairs = NULL
    cdef size_t count = 0
    cdef size_t i
    cdef int ok
    with nogil:
        ok = fkc_share_gaps(&p.opts, offsets, stride, n, &pairs, &count)
    if not ok:
        raise MemoryError("fastkc: out of memory for share gaps")
    try:
        return [(pairs[2 * i], pairs[2 * i + 1]) for i in range(count)]
    finally:
        free(pairs)


cdef _raise_share_error(_Phase1 p, topic, partition, records, delivered):
    # decode()'s typed error, plus what becomes of the acquired offsets not
    # handed out (fastkc.structs.ShareFailure; the rare path, in Python)
    try:
        _raise_error(p, topic, partition, records)
    except _errors.CorruptRecordError as error:
        error.share = _share_failure(p.acquired, delivered, p.result.error_offset, p.result.error_batch_last)
        raise


def decode_share(data, topic, partition, acquired, check_crcs, key_deserializer, value_deserializer,
                 max_decompressed_bytes, max_batch_records=0):
    """Backend contract: see fastkc/_backend.py. ShareDecoded(list of ShareRecord, gaps)."""
    cdef _Phase1 p = _Phase1()
    p.acquired = acquired
    # no position and no transaction filter (see fastkc/_twin/records.py _share_stream)
    rc = p.run(data, 0, -1, check_crcs, False, (), max_decompressed_bytes, max_batch_records, False, topic)
    records = _build_records(&p.result, topic, partition, key_deserializer, value_deserializer, True)
    if rc != FKC_OK:
        _raise_share_error(p, topic, partition, records, [r.offset for r in records])
    offsets = &p.result.records[0].offset if p.result.count else NULL
    return _ShareDecoded(records, _share_gaps(p, offsets, sizeof(fkc_record), p.result.count))


def decode_share_arrow(data, topic, partition, acquired, check_crcs, max_decompressed_bytes, max_batch_records=0,
                       zero_copy=False):
    """Backend contract: see fastkc/_backend.py. ShareDecoded(pyarrow.RecordBatch with delivery_count, gaps)."""
    cdef _Phase1 p = _Phase1()
    p.partition = partition
    p.zero_copy = bool(zero_copy)
    p.acquired = acquired
    rc = p.run(data, 0, -1, check_crcs, False, (), max_decompressed_bytes, max_batch_records, True, topic)
    if rc == FKC_ERR_HOST or rc == FKC_ERR_NOMEM:
        _raise_error(p, topic, partition, None)
    # the gaps from the offset column before the export moves it
    gaps = _share_gaps(p, p.builder.b.offset, sizeof(int64_t), p.builder.b.rows) if rc == FKC_OK else None
    batch = p.builder.finish()
    if rc != FKC_OK:
        _raise_share_error(p, topic, partition, batch, batch.column("offset").to_pylist())
    return _ShareDecoded(batch, gaps)


# ---------------------------------------------------------------------------
# The blob's framing, and the resumable decoder


def scan_blob(data):
    """Backend contract: see fastkc/_backend.py. The framing of a records
    blob from entry headers only: ScanInfo(complete_bytes, entries,
    next_offset (None without a complete entry), leader_epoch, tail
    ('none' | 'cut' | 'malformed'), tail_offset, tail_size, reason,
    slow_codec_bytes)."""
    cdef Py_buffer view
    cdef fkc_scan_info info
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            fkc_scan_blob(<const uint8_t *>view.buf, <size_t>view.len, &info)
    finally:
        PyBuffer_Release(&view)
    return _ScanInfo(info.complete_bytes, info.entries, info.next_offset if info.entries else None,
                     info.leader_epoch, _TAILS[info.tail], info.tail_offset, info.tail_size,
                     info.reason.decode("utf-8", "replace") if info.tail == FKC_TAIL_MALFORMED else "",
                     info.slow_codec_bytes)


from fastkc.structs import ScanInfo as _ScanInfo


def check_blob(data, topic, partition, int64_t position):
    """Backend contract: see fastkc/_backend.py. The benchmark ceiling's
    walk (csrc fkc_check_blob): (records at or past position, next offset)
    of a blob of complete v2 batches, each CRC-checked, none decoded."""
    cdef Py_buffer view
    cdef fkc_check_info info
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            fkc_check_blob(<const uint8_t *>view.buf, <size_t>view.len, position, &info)
    finally:
        PyBuffer_Release(&view)
    if info.status == FKC_CHECK_OK:
        return info.records, info.next_offset
    reason = info.reason.decode("utf-8", "replace")
    if info.status == FKC_CHECK_LEGACY:
        raise ValueError("{0} (offset {1})".format(reason, info.error_offset))
    cls = _errors.RecordCrcError if info.status == FKC_CHECK_BAD_CRC else _errors.InvalidRecordError
    raise cls(reason, topic, partition, info.error_offset)

_TAILS = {FKC_TAIL_NONE: "none", FKC_TAIL_CUT: "cut", FKC_TAIL_MALFORMED: "malformed"}


# RecordStream's states: IDLE (no step kept), PREPARED (a step run by
# prepare() is kept in `out`, handed out from `prepared_pos` on). PREPARING is
# "prepare() holds the lock"; TAKEN is "records() holds the lock".
cdef enum:
    _IDLE = 0
    _PREPARED = 1


@cython.no_gc_clear
cdef class RecordStream:
    """Backend contract: see fastkc/_backend.py. The resumable decoder over
    one partition's blob: records(n) / arrow(n) hand out the next at most n
    kept records, decompressing a batch only when it is reached; only the
    open batch's buffer (and those of batches finished in the current step)
    are alive. A bad batch raises its CorruptRecordError (carrying the step's
    records before it) and ends the stream; later steps raise it again.

    prepare(n) runs the next step's phase 1 (decompression included) ahead
    of time, on any thread, with the GIL released except in codec calls;
    records() then hands that step out, in pieces that are exactly what
    records() steps of those sizes would have returned (same records,
    next_offset, done, errors on the same call). One lock serialises
    prepare() and the hand-outs, so a stream is never stepped by two threads
    at once; next_offset and done are snapshots taken under it, at the last
    hand-out, so reading them never races with a prepare() in progress."""
    # The input's buffer export lives in malloc'd memory, not in a Py_buffer
    # member: Cython would make the GC traverse a member's view.obj, so a
    # reference cycle through this object could tp_clear an exporting
    # memoryview under us (memory_clear drops its buffer even while exported).
    # Untraversed, the export is an outside reference: the exporter stays
    # alive and intact until __dealloc__ releases it.
    cdef Py_buffer *view
    cdef fkc_stream *stream
    cdef fkc_decode_result out
    cdef int64_t *aborted
    cdef _DecodeState state
    cdef fkc_codec_host host
    cdef object topic
    cdef object partition
    cdef object key_deserializer
    cdef object value_deserializer
    cdef bint arrow_mode
    cdef object error
    cdef object lock
    cdef int phase
    cdef size_t prepared_pos     # records of the prepared step handed out
    cdef size_t mark_index       # the first mark at or past prepared_pos
    cdef int64_t snap_next       # next_offset as of the last hand-out
    cdef bint snap_done          # done as of the last hand-out
    cdef size_t snap_decompressed  # fkc_stream_decompressed_bytes as of the last hand-out
    cdef bint busy               # prepare() is running (set and cleared with the GIL held)

    def __cinit__(self, data, topic, partition, int64_t fetch_offset, int64_t stop_offset, bint check_crcs,
                  bint read_committed, aborted_transactions, max_decompressed_bytes, max_batch_records,
                  bint arrow=False, key_deserializer=None, value_deserializer=None):
        cdef fkc_decode_opts opts
        self.view = NULL
        self.stream = NULL
        self.aborted = NULL
        memset(&self.out, 0, sizeof(self.out))
        self.out.next_offset = fetch_offset
        self.snap_next = fetch_offset
        self.snap_done = False
        self.snap_decompressed = 0
        self.phase = _IDLE
        self.busy = False
        self.prepared_pos = 0
        self.mark_index = 0
        self.lock = threading.Lock()
        self.state = _DecodeState()
        self.topic = topic
        self.partition = partition
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.arrow_mode = arrow
        self.error = None
        self.view = <Py_buffer *>malloc(sizeof(Py_buffer))
        if self.view == NULL:
            raise MemoryError()
        try:
            PyObject_GetBuffer(data, self.view, PyBUF_SIMPLE)
        except BaseException:
            free(self.view)
            self.view = NULL
            raise
        self.aborted = _fill_opts(&opts, self.state, &self.host, fetch_offset, stop_offset, check_crcs,
                                  read_committed, aborted_transactions, max_decompressed_bytes, max_batch_records,
                                  arrow, topic)
        self.stream = fkc_stream_new(<const uint8_t *>self.view.buf, <size_t>self.view.len, &opts)
        if self.stream == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self.stream != NULL:
            fkc_stream_free(self.stream)
        fkc_decode_result_free(&self.out)
        if self.view != NULL:
            PyBuffer_Release(self.view)
            free(self.view)
        free(self.aborted)

    cdef int _step_bounds(self, max_records, max_held_bytes, size_t *n, size_t *held) except -1:
        # What a step may take, or the stream's sticky error raised again.
        if max_records < 1:
            raise ValueError("max_records must be >= 1")
        n[0] = <size_t>min(max_records, _SIZE_LIMIT)
        held[0] = _held_limit(max_held_bytes)
        if self.error is not None:
            cls, reason, offset, next_offset = self.error
            raise cls(reason, self.topic, self.partition, offset, None, next_offset)
        return 0

    cdef void _snapshot(self):
        self.snap_next = self.out.next_offset
        self.snap_done = fkc_stream_done(self.stream) != 0
        self.snap_decompressed = fkc_stream_decompressed_bytes(self.stream)

    cdef int _step(self, max_records, max_held_bytes) except -1:
        # caller holds self.lock
        cdef size_t n
        cdef size_t held
        cdef int rc
        self._step_bounds(max_records, max_held_bytes, &n, &held)
        self.phase = _IDLE
        with nogil:
            rc = fkc_stream_step(self.stream, n, held, &self.out)
        self._snapshot()
        return rc

    cdef _fail(self, records):
        try:
            _raise_result_error(&self.out, self.state, self.topic, self.partition, records)
        except _errors.CorruptRecordError as exc:
            # kept as plain values: the exception's traceback would make a
            # reference cycle through this object (and its exported buffer)
            self.error = (exc.__class__, exc.reason, exc.offset, exc.next_offset)
            raise

    def prepare(self, max_records, max_held_bytes=None):
        """Run the next step of at most max_records records now and keep it
        for the next records() calls. Callable from any thread, never
        concurrently with another call on this stream (the lock waits).
        True when a step was prepared; False when there was nothing to do
        (one is prepared already, the stream is done or failed)."""
        cdef size_t n
        cdef size_t held
        cdef int rc
        if self.arrow_mode:
            raise ValueError("this stream decodes to Arrow")
        if max_records < 1:
            raise ValueError("max_records must be >= 1")
        n = <size_t>min(max_records, _SIZE_LIMIT)
        held = _held_limit(max_held_bytes)
        with self.lock:
            if (self.phase == _PREPARED and self.prepared_pos < self.out.count) or self.error is not None \
                    or fkc_stream_done(self.stream):
                return False
            self.busy = True
            try:
                fkc_stream_record_marks(self.stream, 1)
                with nogil:
                    rc = fkc_stream_step(self.stream, n, held, &self.out)
                fkc_stream_record_marks(self.stream, 0)
                self.phase = _PREPARED
                self.prepared_pos = 0
                self.mark_index = 0
            finally:
                self.busy = False
            return True

    @property
    def preparing(self):
        """A prepare() is running right now (read without the lock: a hint)."""
        return self.busy

    @property
    def pending(self):
        """A prepare() is running or its step is not all handed out. Read
        without the lock (a hint for schedulers: it may be stale by the time
        it is used, never unsafe)."""
        return self.busy or (self.phase == _PREPARED and self.prepared_pos < self.out.count)

    @property
    def prepared(self):
        """Records of a prepared step not handed out yet (0: none kept)."""
        with self.lock:
            return self.out.count - self.prepared_pos if self.phase == _PREPARED else 0

    cdef _take_prepared(self, size_t n):
        # Hands out the next min(n, left) records of the prepared step, and
        # sets the snapshots to what a step of exactly that many would have
        # said (fkc_step_mark). Never raises a decode error: a step's error
        # is reported after its good records, by the next (real) step, which
        # returns the stream's sticky error -- as a step ending here would.
        cdef const fkc_step_mark *marks
        cdef size_t nmarks = fkc_stream_marks(self.stream, &marks)
        cdef size_t left = self.out.count - self.prepared_pos
        cdef size_t take = n if n < left else left
        cdef fkc_decode_result piece = self.out
        cdef size_t end
        piece.records = self.out.records + self.prepared_pos
        piece.count = take
        records = _build_records(&piece, self.topic, self.partition, self.key_deserializer,
                                 self.value_deserializer)
        self.prepared_pos += take
        end = self.prepared_pos
        # the prepared step's decompression counts from its first hand-out
        self.snap_decompressed = fkc_stream_decompressed_bytes(self.stream)
        while self.mark_index < nmarks and marks[self.mark_index].count < end:
            self.mark_index += 1
        if self.mark_index < nmarks and marks[self.mark_index].count == end:
            self.snap_next = marks[self.mark_index].resume
            self.snap_done = marks[self.mark_index].done != 0
        else:  # inside a batch: resume after the last record handed out
            self.snap_next = self.out.records[end - 1].offset + 1
            self.snap_done = False
        # At the prepared step's end the mark (or the last record) still
        # rules, not the step's own end state: it may have walked on past
        # batches that keep nothing, which a step asked for exactly `end`
        # records would not have. A caller asking for more steps again and
        # gets there (records() below), as it would have from a larger step.
        return records

    def records(self, max_records, max_held_bytes=None):
        """The next at most max_records ConsumerRecords (a list, maybe empty)."""
        cdef int rc
        if self.arrow_mode:
            raise ValueError("this stream decodes to records")
        if max_records < 1:
            raise ValueError("max_records must be >= 1")
        cdef size_t left
        head = None
        with self.lock:
            if self.phase == _PREPARED:
                left = self.out.count - self.prepared_pos
                if left > 0 and left >= max_records:
                    return self._take_prepared(<size_t>max_records)
                # The prepared step runs out before max_records: a step asked
                # for that many would have gone on, to more records, to the
                # end or to the error after them. So do: the rest of the
                # prepared step, then a real step for what is still wanted,
                # handed out (or failed) together.
                if left > 0:
                    head = self._take_prepared(left)
                    max_records -= left
                self.phase = _IDLE
            rc = self._step(max_records, max_held_bytes)
            if rc == FKC_ERR_HOST or rc == FKC_ERR_NOMEM:
                self._fail(None)
            records = _build_records(&self.out, self.topic, self.partition, self.key_deserializer,
                                     self.value_deserializer)
            if head is not None:
                head.extend(records)
                records = head
            if rc != FKC_OK:
                self._fail(records)
            return records

    def arrow(self, max_records, max_held_bytes=None, base=None, builder=None):
        """The next at most max_records records as one pyarrow.RecordBatch
        (maybe empty): a step also ends before Arrow's int32 offsets would
        overflow, so no batch ever needs more. `base`: the totals (as
        last_totals gives them) of batches this one will be joined to; the
        limits then apply to the sum.

        With `builder` (an ArrowBuilder), the records are appended to it
        instead (its own contents count against the limits) and the number
        appended is returned; a bad batch adds none of its records, and the
        CorruptRecordError carries no batch (the step's good records stay in
        the builder)."""
        cdef ArrowBuilder target
        cdef bint own = builder is None
        if not self.arrow_mode:
            raise ValueError("this stream decodes to records")
        with self.lock:
            target = ArrowBuilder(base) if own else <ArrowBuilder?>builder
            target._segment(self.topic, self.partition)
            target._keep_input(<object>self.view.obj)
            rc = self._step_arrow(max_records, max_held_bytes, target)
            if rc == FKC_ERR_HOST or rc == FKC_ERR_NOMEM:
                self._fail(None)
            if not own:
                if rc != FKC_OK:
                    self._fail(None)
                return self.out.count
            batch = target.finish()
            if rc != FKC_OK:
                self._fail(batch)
            return batch

    cdef int _step_arrow(self, max_records, max_held_bytes, ArrowBuilder target) except -1:
        # caller holds self.lock; the Arrow twin of _step (same checks, same snapshots)
        cdef size_t n
        cdef size_t held
        cdef int rc
        self._step_bounds(max_records, max_held_bytes, &n, &held)
        with nogil:
            rc = fkc_stream_step_arrow(self.stream, n, held, target.b, &self.out)
        self._snapshot()
        return rc

    @property
    def next_offset(self):
        """Where to resume: after the last record handed out of a partly
        handed-out batch, else one past the complete batches walked (never
        below fetch_offset); the bad batch's base offset after an error.
        As of the last hand-out (a prepared step not handed out yet does not
        move it)."""
        return self.snap_next

    @property
    def done(self):
        """Nothing left to hand out, as of the last hand-out."""
        return self.error is not None or self.snap_done

    @property
    def last_totals(self):
        """(rows, key bytes, value bytes, header count, header key bytes,
        header value bytes) of the last arrow() step."""
        return (self.out.count, self.out.key_bytes, self.out.value_bytes, self.out.header_count,
                self.out.header_key_bytes, self.out.header_value_bytes)

    @property
    def leader_epoch(self):
        return fkc_stream_leader_epoch(self.stream)

    @property
    def held_bytes(self):
        return fkc_stream_held_bytes(self.stream)

    @property
    def decompressed_bytes(self):
        """Decompressed bytes of the batches opened by the steps handed out
        so far, all together (a prepared step counts once its first record
        is handed out). As of the last hand-out, like next_offset."""
        return self.snap_decompressed


cdef size_t _held_limit(max_held_bytes) except? 0:
    if max_held_bytes is not None and max_held_bytes >= 0:
        return <size_t>min(max_held_bytes, _SIZE_LIMIT)
    return <size_t>-1
