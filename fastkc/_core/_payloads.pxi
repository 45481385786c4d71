# Included by the bridges _avro.pyx, _protobuf.pyx and _json.pyx (after
# _arrow_rows.pxi), which cimport what it uses: a call's payloads as C
# pointers and lengths, from a list of buffers, a run of one Schema Registry
# frame, or a pyarrow binary column's rows.

cdef class _Payloads:
    """A call's payloads as pointers and lengths, held until it ends: bytes
    are read in place, other buffers through a view released here."""
    cdef list items  # keeps every payload alive while the pointers are used (GIL released)
    cdef size_t count
    cdef const uint8_t **ptrs
    cdef size_t *lengths
    cdef size_t *starts
    cdef Py_buffer *views
    cdef size_t nviews

    def __cinit__(self, payloads, bytes prefix=None, Py_ssize_t start=0, Py_ssize_t arrow_skip=-1):
        cdef size_t i
        if prefix is not None:
            self._prefixed(payloads, prefix, start)
            return
        if arrow_skip >= 0:  # a pyarrow binary column, its rows read in place
            self.items = [payloads]
            self.count = len(payloads)
            self._alloc(self.count)
            self.views = <Py_buffer *>malloc(2 * sizeof(Py_buffer))
            if self.views == NULL:
                raise MemoryError()
            _arrow_column_rows(payloads, arrow_skip, self.count, self.items, self.views, &self.nviews, self.ptrs,
                               self.lengths)
            return
        # a copy: the pointers must outlive any change to the caller's list
        # while the GIL is released
        self.items = list(payloads)
        self.count = len(self.items)
        self._alloc(self.count)
        for i in range(self.count):
            p = self.items[i]
            if PyBytes_CheckExact(p):
                self.ptrs[i] = <const uint8_t *>PyBytes_AS_STRING(p)
                self.lengths[i] = <size_t>PyBytes_GET_SIZE(p)
            else:
                if self.views == NULL:
                    self.views = <Py_buffer *>malloc(max(self.count, 1) * sizeof(Py_buffer))
                    if self.views == NULL:
                        raise MemoryError()
                PyObject_GetBuffer(p, &self.views[self.nviews], PyBUF_SIMPLE)
                self.ptrs[i] = <const uint8_t *>self.views[self.nviews].buf
                self.lengths[i] = <size_t>self.views[self.nviews].len
                self.nviews += 1

    cdef int _alloc(self, size_t n) except -1:
        self.ptrs = <const uint8_t **>malloc(max(n, 1) * sizeof(uint8_t *))
        self.lengths = <size_t *>malloc(max(n, 1) * sizeof(size_t))
        self.starts = <size_t *>malloc((n + 1) * sizeof(size_t))
        if self.ptrs == NULL or self.lengths == NULL or self.starts == NULL:
            raise MemoryError()
        return 0

    cdef int _prefixed(self, list payloads, bytes prefix, Py_ssize_t start) except -1:
        """The leading payloads from payloads[start] on that are bytes
        starting with `prefix` (one schema's Schema Registry frame), each
        read past it in place; the run ends at the first that is not."""
        cdef Py_ssize_t k = len(prefix), total, i, n
        cdef const char *want = PyBytes_AS_STRING(prefix)
        cdef const char *data
        if start < 0 or start > len(payloads):
            raise IndexError("fastkc: start outside the payloads")
        total = len(payloads) - start
        self._alloc(<size_t>total)
        for i in range(total):
            p = <object>PyList_GET_ITEM(payloads, start + i)
            if not PyBytes_CheckExact(p):
                break
            n = PyBytes_GET_SIZE(p)
            data = PyBytes_AS_STRING(p)
            if n < k or memcmp(data, want, <size_t>k) != 0:
                break
            self.ptrs[self.count] = <const uint8_t *>data + k
            self.lengths[self.count] = <size_t>(n - k)
            self.count += 1
        # the run's own list: its bytes outlive any change to the caller's
        # list while the GIL is released
        self.items = payloads[start:start + <Py_ssize_t>self.count]
        return 0

    def __dealloc__(self):
        cdef size_t i
        for i in range(self.nviews):
            PyBuffer_Release(&self.views[i])
        free(self.views)
        free(self.ptrs)
        free(self.lengths)
        free(self.starts)
