"""Cython bridge over csrc/fkc_fetch.c: Fetch response bytes -> FetchResponse.

The C walk (one pass, GIL released) fills flat arrays of plain structs with
offsets into the caller's buffer; this layer turns them into the namedtuples
of fastkc.structs. Record sets are not copied: each partition's `records` is a
memoryview slice of the caller's buffer (so the buffer stays exported, and a
bytearray cannot be resized, while any slice is alive). The C declarations
are in _fetch.pxd.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytearray cimport PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, int16_t, int32_t, int64_t

from fastkc.errors import ProtocolParseError
from fastkc.structs import FetchPartitionResponse, FetchResponse, FetchTopicResponse


MIN_VERSION = FKC_FETCH_MIN_VERSION
MAX_VERSION = FKC_FETCH_MAX_VERSION

# tuple.__new__ fills a namedtuple without going through its Python-level
# __new__ (argument parsing per partition), the same object results.
cdef object _tuple_new = tuple.__new__


cdef object _utf8(const uint8_t *base, fkc_fetch_span span, int version, str what):
    # Strings on the wire are UTF-8; bytes that are not become the same typed
    # error as any other malformation, pointing at the string.
    try:
        return PyUnicode_DecodeUTF8(<const char *>(base + span.offset), <Py_ssize_t>span.length, "strict")
    except UnicodeDecodeError as exc:
        raise ProtocolParseError(
            "{0}: not valid UTF-8 ({1})".format(what, exc.reason), "Fetch", version, <Py_ssize_t>span.offset
        ) from None


def parse_fetch_response(buf, int version):
    """Parse one Fetch response payload (after the 4-byte size prefix, response
    header included) of API `version` (4-18) into a fastkc.structs.FetchResponse.

    Raises ProtocolParseError (with the byte position) on any malformation,
    ValueError for an unsupported version, MemoryError if allocation fails.
    """
    cdef Py_buffer view
    cdef fkc_fetch_response res
    cdef int rc
    cdef const uint8_t *base
    cdef size_t i, j, k
    cdef fkc_fetch_topic *t
    cdef fkc_fetch_partition *p
    cdef fkc_fetch_aborted *a
    cdef fkc_fetch_node *n

    if version < FKC_FETCH_MIN_VERSION or version > FKC_FETCH_MAX_VERSION:
        raise ValueError(
            "Fetch response version {0} is not supported (supported: {1}-{2})".format(
                version, FKC_FETCH_MIN_VERSION, FKC_FETCH_MAX_VERSION
            )
        )
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    fkc_fetch_response_init(&res)
    try:
        base = <const uint8_t *>view.buf
        with nogil:
            rc = fkc_fetch_parse(base, <size_t>view.len, version, &res)
        if rc == FKC_FETCH_ENOMEM:
            raise MemoryError("fastkc: out of memory parsing a Fetch response")
        if rc != FKC_FETCH_OK:
            raise ProtocolParseError(
                "{0}: {1}".format(
                    (<bytes>res.error_what).decode("ascii"), (<bytes>res.error_problem).decode("ascii")
                ),
                "Fetch",
                version,
                <Py_ssize_t>res.error_pos,
            )

        # One memoryview of the whole buffer; per-partition slices of it share
        # the export (no copy). Cast to unsigned bytes so slicing is by byte
        # whatever the exporter's own format is.
        whole = None
        topics = []
        for i in range(res.n_topics):
            t = &res.topics[i]
            if t.has_topic_id:
                topic_name = None
                topic_id = PyBytes_FromStringAndSize(<const char *>(base + t.topic_id_offset), 16)
            else:
                topic_name = _utf8(base, t.name, version, "Topic")
                topic_id = None
            partitions = []
            for j in range(t.partition_first, t.partition_first + t.partition_count):
                p = &res.partitions[j]
                if p.aborted_count < 0:
                    aborted = None
                else:
                    aborted = []
                    for k in range(p.aborted_first, p.aborted_first + <size_t>p.aborted_count):
                        a = &res.aborted[k]
                        aborted.append((a.producer_id, a.first_offset))
                if p.records.length < 0:
                    records = None
                else:
                    if whole is None:
                        whole = memoryview(buf)
                        if whole.format != "B" or whole.ndim != 1:
                            whole = whole.cast("B")
                    records = whole[p.records.offset : p.records.offset + <size_t>p.records.length]
                partitions.append(
                    _tuple_new(
                        FetchPartitionResponse,
                        (
                            p.partition_index,
                            p.error_code,
                            p.high_watermark,
                            p.last_stable_offset,
                            p.log_start_offset,
                            (p.diverging_epoch, p.diverging_end_offset) if p.has_diverging_epoch else None,
                            (p.current_leader_id, p.current_leader_epoch) if p.has_current_leader else None,
                            (p.snapshot_end_offset, p.snapshot_epoch) if p.has_snapshot_id else None,
                            aborted,
                            p.preferred_read_replica,
                            records,
                        ),
                    )
                )
            topics.append(_tuple_new(FetchTopicResponse, (topic_name, topic_id, partitions)))

        node_endpoints = []
        for i in range(res.n_nodes):
            n = &res.nodes[i]
            node_endpoints.append(
                (
                    n.node_id,
                    _utf8(base, n.host, version, "NodeEndpoint.Host"),
                    n.port,
                    None if n.rack.length < 0 else _utf8(base, n.rack, version, "NodeEndpoint.Rack"),
                )
            )
        return _tuple_new(
            FetchResponse,
            (res.correlation_id, res.throttle_time_ms, res.error_code, res.session_id, topics, node_endpoints),
        )
    finally:
        fkc_fetch_response_free(&res)
        PyBuffer_Release(&view)


def grow_bytearray(bytearray buf, Py_ssize_t size):
    """Resize `buf` in place to `size` bytes, leaving the new tail unfilled
    (the connection's frame reader overwrites it with received bytes).
    realloc moves a large buffer by remapping its pages, not by copying, so a
    frame buffer grown as bytes arrive costs what one exact allocation costs.
    Raises BufferError while `buf` is exported."""
    PyByteArray_Resize(buf, size)
