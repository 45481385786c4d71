# cython: language_level=3
# What the bridges declare alike: the CPython calls they use beyond Cython's
# own cpython/ declarations (the GC pause of _records, _avro and _protobuf;
# the UTF-8 and presized-dict builders of the Schema Registry bridges), and
# how a tape word holding a float's IEEE bits becomes a Python float. Only
# extern declarations and inline functions: cimported, never imported.
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void *PyUnicode_DATA(object o)
    object _PyDict_NewPresized(Py_ssize_t minused)
    int PyGC_Disable()
    int PyGC_Enable()


cdef extern from "fkc_records.h":
    size_t fkc_ascii_prefix(const unsigned char *p, size_t n) nogil


# A str of bytes a reader has already checked as UTF-8. ASCII (most keys,
# names and ids) is copied into a new compact str after one inline check:
# CPython's decoder scans and copies it in a call of its own, about a
# hundred instructions a short string more.
cdef inline object str_from_valid_utf8(const char *p, Py_ssize_t n):
    if fkc_ascii_prefix(<const unsigned char *>p, <size_t>n) != <size_t>n:
        return PyUnicode_DecodeUTF8(p, n, NULL)
    s = PyUnicode_New(n, 127)
    memcpy(PyUnicode_DATA(s), p, <size_t>n)
    return s


# The readers keep a float in the low 32 bits of its word, a double in all 64.
cdef inline double float32_bits(int64_t bits) noexcept:
    cdef uint32_t b = <uint32_t>bits
    cdef float f
    memcpy(&f, &b, 4)
    return f


cdef inline double float64_bits(int64_t bits) noexcept:
    cdef uint64_t b = <uint64_t>bits
    cdef double d
    memcpy(&d, &b, 8)
    return d
