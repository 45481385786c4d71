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
    object _PyDict_NewPresized(Py_ssize_t minused)
    int PyGC_Disable()
    int PyGC_Enable()


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
