# Included by the decoders' bridges (_avro.pyx, _protobuf.pyx, _json.pyx),
# which cimport what it uses, before their own C declarations: the Arrow C
# data interface's structs (the bridges only release them), and one reading
# of a pyarrow binary column's rows for all.

cdef extern from "fkc_arrow_abi.h":
    struct ArrowArray:
        void (*release)(ArrowArray *)
    struct ArrowSchema:
        void (*release)(ArrowSchema *)


cdef int _arrow_column_rows(object array, Py_ssize_t skip, size_t count, list keep, Py_buffer *views,
                            size_t *nviews, const uint8_t **ptrs, size_t *lengths) except -1:
    """The rows of a pyarrow binary array (int32 offsets, no nulls), each
    past its first `skip` bytes (the Schema Registry prefix), read in place:
    no bytes object per row. Every offset is checked against the buffers
    before it is used. `views` has room for two buffers, released by the
    caller (*nviews of them); `keep` holds the buffers while the pointers
    are used."""
    cdef size_t i
    cdef Py_ssize_t first = array.offset
    cdef const int32_t *offsets
    cdef const uint8_t *data
    cdef Py_ssize_t data_len, a, b
    if array.null_count:
        raise ValueError("fastkc: an Arrow column with nulls (decode its non-null rows)")
    buffers = array.buffers()
    keep.extend(buffers)
    PyObject_GetBuffer(buffers[1], &views[0], PyBUF_SIMPLE)
    nviews[0] = 1
    if <size_t>views[0].len < (<size_t>first + count + 1) * sizeof(int32_t):
        raise ValueError("fastkc: the Arrow column's offsets buffer is shorter than its rows")
    offsets = <const int32_t *>views[0].buf + first
    if buffers[2] is None:
        data = <const uint8_t *>b""
        data_len = 0
    else:
        PyObject_GetBuffer(buffers[2], &views[1], PyBUF_SIMPLE)
        nviews[0] = 2
        data = <const uint8_t *>views[1].buf
        data_len = views[1].len
    for i in range(count):
        a = offsets[i]
        b = offsets[i + 1]
        if a < 0 or b < a or b > data_len or b - a < skip:
            raise ValueError("fastkc: row {0} of the Arrow column is not {1} bytes or more inside its "
                             "data buffer".format(i, skip))
        ptrs[i] = data + a + skip
        lengths[i] = <size_t>(b - a - skip)
    return 0
