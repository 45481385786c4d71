# cython: language_level=3
"""Cython bridge over the JSON → Arrow parser (csrc/fkc_json_arrow.c).

JsonArrowDecoder(columns, steps, strings, root_step) holds a checked plan
(fastkc/schema_registry/json_arrow.py compiles it); decode_arrow parses a
call's payloads into one typed Arrow array with the GIL released and hands
it to pyarrow through the C data interface, or returns None when the parser
declined a payload: the caller then reads the call the Python way
(fastkc/schema_registry/json_schema.py), which is the reference.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM


include "_arrow_rows.pxi"


cdef extern from "fkc_json_arrow.h":
    enum:
        FKC_TC_COL_WIDTH
        FKC_JA_OK
        FKC_JA_NOMEM
        FKC_JA_CAPACITY
        FKC_JA_DECLINED
    ctypedef struct fkc_ja_plan:
        const int64_t *columns
        size_t column_count
        const int64_t *steps
        size_t steps_len
        const uint8_t *strings
        size_t strings_len
        int64_t root_step
    ctypedef struct fkc_ja_error:
        int kind
        size_t index
        size_t offset
        const char *what
        const char *problem
    int fkc_ja_check(const fkc_ja_plan *plan)
    int fkc_ja_build(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                     ArrowArray *out_array, ArrowSchema *out_schema, fkc_ja_error *err) nogil
    int fkc_ja_verdicts(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                        uint8_t *verdicts, fkc_ja_error *err) nogil


# pyarrow.Array._import_from_c, looked up on the first decode (pyarrow is
# optional: only the Arrow path needs it)
_import_array = None



include "_payloads.pxi"


cdef class JsonArrowDecoder:
    """A checked JSON → Arrow plan, ready to parse payloads."""
    cdef fkc_ja_plan plan
    cdef int64_t *plan_columns
    cdef int64_t *plan_steps
    cdef uint8_t *plan_strings
    cdef public object last_declined  # (payload index, byte offset, why) of the last declined call, for tests

    def __cinit__(self, columns, steps, strings, int64_t root_step):
        cdef size_t i
        cdef bytes blob = bytes(strings)
        cdef size_t ncols = len(columns), nsteps = len(steps), nstrings = len(blob)
        self.plan_columns = <int64_t *>malloc(max(ncols, 1) * sizeof(int64_t))
        self.plan_steps = <int64_t *>malloc(max(nsteps, 1) * sizeof(int64_t))
        self.plan_strings = <uint8_t *>malloc(max(nstrings, 1))
        if self.plan_columns == NULL or self.plan_steps == NULL or self.plan_strings == NULL:
            raise MemoryError()
        for i in range(ncols):
            self.plan_columns[i] = columns[i]
        for i in range(nsteps):
            self.plan_steps[i] = steps[i]
        memcpy(self.plan_strings, PyBytes_AS_STRING(blob), nstrings)
        self.plan = fkc_ja_plan(self.plan_columns,
                                ncols // FKC_TC_COL_WIDTH if ncols % FKC_TC_COL_WIDTH == 0 else 0,
                                self.plan_steps, nsteps, self.plan_strings, nstrings, root_step)
        if not fkc_ja_check(&self.plan):
            raise ValueError("fastkc: not a well-formed JSON Arrow plan")

    def __dealloc__(self):
        free(self.plan_columns)
        free(self.plan_steps)
        free(self.plan_strings)

    def decode_arrow(self, payloads):
        """A list of payloads (bytes-like) as one pyarrow array of the plan's
        type, one row each; None when the parser declined one of them."""
        return self._decode(_Payloads(payloads))

    def decode_arrow_column(self, values, Py_ssize_t skip):
        """decode_arrow() of the rows of a pyarrow binary array without
        nulls, each past its first `skip` bytes, read in place."""
        return self._decode(_Payloads(values, None, 0, skip))

    def verdicts(self, payloads):
        """bytes, one a payload: 1 where the plan takes it (a validating
        plan: the schema accepts its value), 0 where it declines it; the
        columns are thrown away (the values path reads with Python)."""
        cdef _Payloads rows = _Payloads(payloads)
        cdef bytearray out = bytearray(rows.count)
        cdef uint8_t *at = <uint8_t *>(<char *>out) if rows.count else NULL
        cdef fkc_ja_error err
        cdef int rc
        with nogil:
            rc = fkc_ja_verdicts(&self.plan, rows.ptrs, rows.lengths, rows.count, at, &err)
        if rc == FKC_JA_NOMEM:
            raise MemoryError("fastkc: out of memory checking JSON values")
        return bytes(out)

    cdef object _decode(self, _Payloads rows):
        global _import_array
        cdef fkc_ja_error err
        cdef ArrowArray array
        cdef ArrowSchema schema
        cdef int rc
        if _import_array is None:
            import pyarrow
            _import_array = pyarrow.Array._import_from_c
        array.release = NULL
        schema.release = NULL
        with nogil:
            rc = fkc_ja_build(&self.plan, rows.ptrs, rows.lengths, rows.count, &array, &schema, &err)
        if rc == FKC_JA_DECLINED:
            self.last_declined = (err.index, err.offset, err.problem.decode())
            return None
        if rc == FKC_JA_NOMEM:
            raise MemoryError("fastkc: out of memory for the JSON Arrow columns")
        if rc == FKC_JA_CAPACITY:
            # past Arrow's int32 offsets: the Python way names the payload
            self.last_declined = (err.index, err.offset, err.problem.decode())
            return None
        try:
            return _import_array(<size_t>&array, <size_t>&schema)
        finally:
            if array.release != NULL:
                array.release(&array)
            if schema.release != NULL:
                schema.release(&schema)
