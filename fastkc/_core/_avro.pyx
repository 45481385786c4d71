# cython: language_level=3
"""Cython bridge over the Avro interpreter (csrc/fkc_avro.c).

Two phases, as the record decoder (decode_many):
  1. fkc_avro_decode_many(): pure C with the GIL released. Reads every
     payload of the call by the compiled program onto one int64 tape,
     checking everything (lengths, varints, indexes, UTF-8, nesting).
  2. _Builder: walks the same program over the tape and builds the Python
     values fastavro's schemaless_reader gives (dicts, lists, str, bytes,
     int, float, bool, None, logical types by fastavro's conversions). It
     cannot meet bad input (phase 1 proved the tape), except a logical
     value Python cannot hold, which it reports at the value's offset.

decode_arrow reads the payloads straight into Arrow columns
(csrc/fkc_avro_arrow.c: the same reads and checks as phase 1, no tape),
with the GIL released, by the plan set_arrow_plan() installed
(fastkc/schema_registry/avro_arrow.py compiles it); the one typed Arrow
array is handed to pyarrow through the C data interface.

The program and its constants come from
fastkc/schema_registry/avro_schema.py; fastkc/_twin/avro.py is the oracle.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy
from fastkc._core._bridge cimport (PyGC_Disable, PyGC_Enable, PyUnicode_DecodeUTF8, _PyDict_NewPresized,
                                  float32_bits, float64_bits, str_from_valid_utf8)
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.float cimport PyFloat_FromDouble
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.datetime cimport datetime_new, import_datetime

import copy as _copy
import datetime as _datetime

from fastkc.schema_registry.avro_errors import AvroArrowCapacityError as _AvroArrowCapacityError
from fastkc.schema_registry.avro_errors import AvroDecodeError as _AvroDecodeError
from fastkc.schema_registry.avro_schema import LOGICAL_NAMES as _LOGICAL_NAMES
from fastkc.schema_registry.avro_values import convert_logical as _convert_logical
from fastkc.schema_registry.avro_values import python_converts as _python_converts


cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)

# decode_many reads and builds this many payloads at a time: the tape of a
# chunk stays in cache and is reused, where one tape for a whole fetch
# (megabytes) was mapped, faulted in and unmapped on every call;
# decode_arrow appends this many at a time (the columns reserve their bytes
# after the first chunk)
cdef enum:
    _CHUNK = 512


cdef extern from "fkc_civil.h":
    void fkc_civil_from_days(int64_t days, int64_t *year, int *month, int *day) nogil


cdef extern from "fkc_avro.h":
    enum:
        FKC_AVRO_OP_SCALAR
        FKC_AVRO_OP_ENUM
        FKC_AVRO_OP_ARRAY
        FKC_AVRO_OP_MAP
        FKC_AVRO_OP_UNION
        FKC_AVRO_OP_RECORD
        FKC_AVRO_NULL
        FKC_AVRO_BOOLEAN
        FKC_AVRO_INT
        FKC_AVRO_LONG
        FKC_AVRO_FLOAT
        FKC_AVRO_DOUBLE
        FKC_AVRO_BYTES
        FKC_AVRO_STRING
        FKC_AVRO_FIXED
        FKC_AVRO_LOGICAL_MAX
    ctypedef struct fkc_avro_tape:
        int64_t *v
        size_t len
        size_t cap
    ctypedef struct fkc_avro_error:
        size_t index
        size_t offset
        const char *what
        const char *problem
        int nomem
    int fkc_avro_check_program(const int32_t *code, size_t n)
    size_t fkc_avro_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                                const size_t *lengths, size_t count, int allow_trailing, fkc_avro_tape *tape,
                                size_t *starts, fkc_avro_error *err) nogil
    void fkc_avro_tape_free(fkc_avro_tape *tape)


include "_arrow_rows.pxi"


cdef extern from "fkc_avro_arrow.h":
    enum:
        FKC_AA_COL_WIDTH
        FKC_AA_OK
        FKC_AA_NOMEM
        FKC_AA_CAPACITY
        FKC_AA_VALUE
        FKC_AA_READ
    ctypedef struct fkc_avro_arrow_plan:
        const int32_t *code
        size_t code_len
        const int64_t *columns
        size_t column_count
        const int64_t *steps
        size_t steps_len
        const uint8_t *strings
        size_t strings_len
        int64_t root_step
    ctypedef struct fkc_avro_arrow_error:
        int kind
        size_t index
        size_t offset
        const char *what
        const char *problem
    int fkc_avro_arrow_check(const fkc_avro_arrow_plan *plan)
    ctypedef struct fkc_avro_arrow_builder:
        pass
    fkc_avro_arrow_builder *fkc_avro_arrow_start(const fkc_avro_arrow_plan *plan, size_t rows_hint) nogil
    int fkc_avro_arrow_append(fkc_avro_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                              size_t count, int allow_trailing, fkc_avro_error *read_err,
                              fkc_avro_arrow_error *err) nogil
    int fkc_avro_arrow_finish(fkc_avro_arrow_builder *b, ArrowArray *out_array, ArrowSchema *out_schema,
                              fkc_avro_arrow_error *err) nogil
    void fkc_avro_arrow_discard(fkc_avro_arrow_builder *b) nogil


import_datetime()

# Timestamps take the C path below (a timedelta from the C API added to the
# epoch: the same value as fastavro's epoch + timedelta(microseconds=...));
# the logical kinds' numbers are avro_schema's.
from fastkc.schema_registry.avro_schema import (
    L_DECIMAL as _DECIMAL,
    L_LOCAL_TIMESTAMP_MICROS as _LTS_US,
    L_LOCAL_TIMESTAMP_MILLIS as _LTS_MS,
    L_TIMESTAMP_MICROS as _TS_US,
    L_TIMESTAMP_MILLIS as _TS_MS,
)
cdef int L_DECIMAL_ = _DECIMAL, L_TS_MS = _TS_MS, L_TS_US = _TS_US, L_LTS_MS = _LTS_MS, L_LTS_US = _LTS_US
# Decimals of at most 18 digits: Decimal(unscaled).scaleb(-scale) in a
# context wide enough to be exact, which is fastavro's value (its context
# of `precision` digits rounds only longer coefficients, left to it).
import decimal as _decimal
cdef object _Decimal = _decimal.Decimal
cdef object _EXACT = _decimal.Context(prec=40)
cdef int64_t _POW10[19]
_POW10[0] = 1
for _i in range(1, 19):
    _POW10[_i] = _POW10[_i - 1] * 10

cdef object _UTC = _datetime.timezone.utc  # fastavro's tzinfo for the aware timestamps
# |microseconds| below this is inside datetime's range and far from int64's
cdef int64_t _US_BOUND = 400_000_000_000_000_000
# Typed, not literals: Cython makes an integer literal past 32 bits a Python
# int, and the arithmetic on it Python calls (a third of a timestamp's cost).
cdef int64_t _US_PER_DAY = 86_400_000_000
cdef int64_t _US_PER_HOUR = 3_600_000_000


cdef object _import_array = None


include "_payloads.pxi"


cdef class Decoder:
    """A compiled program, ready to decode payloads: Decoder(code, consts,
    allow_trailing) with code and consts from avro_schema.compile_program."""
    cdef int32_t *code
    cdef size_t code_len
    cdef tuple consts
    cdef frozenset mutable_consts  # defaults that are copied per value (dicts, lists)
    cdef int allow_trailing
    cdef uint8_t converts[FKC_AVRO_LOGICAL_MAX + 1][FKC_AVRO_FIXED + 1]
    # the call in progress (phase 2)
    cdef const int64_t *tape
    cdef size_t pos
    cdef const uint8_t *base
    cdef size_t index
    # the Arrow plan (set once by set_arrow_plan; its arrays owned here)
    cdef fkc_avro_arrow_plan plan
    cdef int64_t *plan_columns
    cdef int64_t *plan_steps
    cdef uint8_t *plan_strings

    def __cinit__(self, code, consts, allow_trailing=False):
        cdef size_t i
        cdef int logical, wire
        self.code = NULL
        n = len(code)
        self.code = <int32_t *>malloc(max(n, 1) * sizeof(int32_t))
        if self.code == NULL:
            raise MemoryError()
        for i in range(n):
            self.code[i] = <int32_t>code[i]
        self.code_len = n
        if not fkc_avro_check_program(self.code, self.code_len):
            raise ValueError("fastkc: not a well-formed Avro program")
        self.consts = tuple(consts)
        self.mutable_consts = frozenset(i for i, c in enumerate(self.consts) if isinstance(c, (dict, list)))
        self.allow_trailing = 1 if allow_trailing else 0
        for logical in range(FKC_AVRO_LOGICAL_MAX + 1):
            for wire in range(FKC_AVRO_FIXED + 1):
                self.converts[logical][wire] = 1 if logical and _python_converts(logical, wire) else 0

    def __dealloc__(self):
        free(self.code)
        free(self.plan_columns)
        free(self.plan_steps)
        free(self.plan_strings)

    def decode_many(self, payloads):
        """The values of a list of payloads (bytes-like), in order. The first
        bad payload raises AvroDecodeError naming its index and byte offset."""
        cdef _Payloads p = payloads if type(payloads) is _Payloads else _Payloads(payloads)
        cdef size_t i, done, start = 0, n
        cdef fkc_avro_tape tape
        cdef fkc_avro_error err
        cdef int gc_was_on
        tape.v = NULL
        tape.len = tape.cap = 0
        out = PyList_New(<Py_ssize_t>p.count)
        # The values hold no cycles, and building them is the hot path: the
        # cyclic collector would run every few hundred records over ever more
        # of them (a fifth of the time, measured). Off while they are built;
        # its counters still see them afterwards. Turned back on only if it
        # was on (another thread's call in between sees it off and leaves it).
        gc_was_on = PyGC_Disable()
        try:
            while start < p.count:
                n = min(<size_t>_CHUNK, p.count - start)
                tape.len = 0
                with nogil:
                    done = fkc_avro_decode_many(self.code, self.code_len, p.ptrs + start, p.lengths + start, n,
                                                self.allow_trailing, &tape, p.starts + start, &err)
                if done < n and err.nomem:
                    raise MemoryError("fastkc: out of memory for the Avro tape")
                self.tape = tape.v
                for i in range(start, start + done):
                    self.pos = p.starts[i]
                    self.base = p.ptrs[i]
                    self.index = i
                    v = self._value(self.code[1])
                    Py_INCREF(v)
                    PyList_SET_ITEM(out, <Py_ssize_t>i, v)
                if done < n:
                    raise _AvroDecodeError(start + err.index, err.offset, err.what.decode(), err.problem.decode())
                start += n
            return out
        finally:
            if gc_was_on:
                PyGC_Enable()
            self.tape = NULL
            fkc_avro_tape_free(&tape)

    def decode_prefixed(self, list values, Py_ssize_t start, bytes prefix):
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix` (the 5-byte
        frame of one writer schema), each past it, read in place (no slice
        per value). As many values as the run has: [] when values[start]
        is not such bytes. AvroDecodeError's index counts from `start`."""
        return self.decode_many(_Payloads(values, prefix, start))

    def set_arrow_plan(self, columns, steps, strings, root_step):
        """Install the Arrow plan of this program (avro_arrow.compile_plan:
        its columns, steps, strings and root step), once; a plan that does
        not agree with the program is refused (ValueError)."""
        cdef size_t i
        cdef bytes blob = bytes(strings)
        cdef size_t ncols = len(columns), nsteps = len(steps), nstrings = len(blob)
        cdef int64_t *cols = NULL
        cdef int64_t *stps = NULL
        cdef uint8_t *strs = NULL
        if self.plan_columns != NULL:
            raise ValueError("fastkc: this decoder has an Arrow plan already")
        cols = <int64_t *>malloc(max(ncols, 1) * sizeof(int64_t))
        stps = <int64_t *>malloc(max(nsteps, 1) * sizeof(int64_t))
        strs = <uint8_t *>malloc(max(nstrings, 1))
        try:
            if cols == NULL or stps == NULL or strs == NULL:
                raise MemoryError()
            for i in range(ncols):
                cols[i] = columns[i]
            for i in range(nsteps):
                stps[i] = steps[i]
            memcpy(strs, PyBytes_AS_STRING(blob), nstrings)
            self.plan.code = self.code
            self.plan.code_len = self.code_len
            self.plan.columns = cols
            self.plan.column_count = ncols // FKC_AA_COL_WIDTH if ncols % FKC_AA_COL_WIDTH == 0 else 0
            self.plan.steps = stps
            self.plan.steps_len = nsteps
            self.plan.strings = strs
            self.plan.strings_len = nstrings
            self.plan.root_step = root_step
            if not fkc_avro_arrow_check(&self.plan):
                raise ValueError("fastkc: not a well-formed Avro Arrow plan for this program")
        except BaseException:
            free(cols)
            free(stps)
            free(strs)
            self.plan.columns = NULL
            raise
        self.plan_columns, self.plan_steps, self.plan_strings = cols, stps, strs

    def decode_arrow_column(self, values, Py_ssize_t skip):
        """decode_arrow() of the rows of a pyarrow binary array without
        nulls, each past its first `skip` bytes, read in place."""
        return self.decode_arrow(_Payloads(values, None, 0, skip))

    def decode_arrow(self, payloads):
        """A list of payloads (bytes-like) as one pyarrow.Array of as many
        rows, typed by the plan set_arrow_plan() installed. The first bad
        payload raises AvroDecodeError as decode_many does;
        AvroArrowCapacityError names a payload that would pass Arrow's int32
        offsets (nothing is returned: decode the payloads before it first)."""
        global _import_array
        cdef _Payloads p
        cdef size_t start = 0, n = 0
        cdef int rc = FKC_AA_OK
        cdef fkc_avro_error err
        cdef fkc_avro_arrow_error aerr
        cdef fkc_avro_arrow_builder *builder = NULL
        cdef ArrowArray array
        cdef ArrowSchema schema
        if self.plan_columns == NULL:
            raise ValueError("fastkc: no Arrow plan: call set_arrow_plan() first")
        if _import_array is None:
            import pyarrow
            _import_array = pyarrow.Array._import_from_c
        p = payloads if type(payloads) is _Payloads else _Payloads(payloads)
        array.release = NULL
        schema.release = NULL
        try:
            with nogil:
                builder = fkc_avro_arrow_start(&self.plan, p.count)
                if builder == NULL:
                    rc = FKC_AA_NOMEM
                # _CHUNK payloads at a time: after the first chunk the columns
                # reserve their bytes for the rest in proportion
                while rc == FKC_AA_OK and start < p.count:
                    n = min(<size_t>_CHUNK, p.count - start)
                    rc = fkc_avro_arrow_append(builder, p.ptrs + start, p.lengths + start, n, self.allow_trailing,
                                               &err, &aerr)
                    if rc == FKC_AA_OK:
                        start += n
                if rc == FKC_AA_OK:
                    rc = fkc_avro_arrow_finish(builder, &array, &schema, &aerr)
                    builder = NULL  # finished (or freed by its failure)
            if rc == FKC_AA_NOMEM:
                raise MemoryError("fastkc: out of memory for the Avro Arrow columns")
            if rc == FKC_AA_CAPACITY:
                raise _AvroArrowCapacityError(aerr.index, aerr.offset, aerr.what.decode(), aerr.problem.decode())
            if rc == FKC_AA_VALUE:
                raise _AvroDecodeError(aerr.index, aerr.offset, aerr.what.decode(), aerr.problem.decode())
            if rc == FKC_AA_READ:
                raise _AvroDecodeError(start + err.index, err.offset, err.what.decode(), err.problem.decode())
            return _import_array(<size_t>&array, <size_t>&schema)
        finally:
            fkc_avro_arrow_discard(builder)
            # pyarrow took both when the import succeeded (their release is NULL then)
            if array.release != NULL:
                array.release(&array)
            if schema.release != NULL:
                schema.release(&schema)

    cdef inline int64_t _next(self) noexcept:
        cdef int64_t v = self.tape[self.pos]
        self.pos += 1
        return v

    cdef object _value(self, int32_t pc):
        cdef const int32_t *op = self.code + pc
        cdef int32_t kind = op[0]
        cdef int64_t n, i, off, ln
        cdef int32_t at
        if kind == FKC_AVRO_OP_SCALAR:
            return self._scalar(op)
        if kind == FKC_AVRO_OP_RECORD:
            record = _PyDict_NewPresized(op[1] + op[2])  # no resizes while its fields go in
            at = 4
            for i in range(op[1]):
                if op[at + 1] >= 0:  # a skipped field (-1) wrote nothing on the tape
                    PyDict_SetItem(record, <object>PyTuple_GET_ITEM(self.consts, op[at + 1]), self._value(op[at]))
                at += 2
            for i in range(op[2]):
                d = <object>PyTuple_GET_ITEM(self.consts, op[at + 1])
                if op[at + 1] in self.mutable_consts:
                    d = _copy.deepcopy(d)
                PyDict_SetItem(record, <object>PyTuple_GET_ITEM(self.consts, op[at]), d)
                at += 2
            return record
        if kind == FKC_AVRO_OP_UNION:
            i = self._next()
            return self._value(op[2 + 2 * i])
        if kind == FKC_AVRO_OP_ENUM:
            i = self._next()
            return <object>PyTuple_GET_ITEM(self.consts, op[3 + 2 * i])
        n = self._next()
        if kind == FKC_AVRO_OP_ARRAY:
            items = PyList_New(<Py_ssize_t>n)
            for i in range(n):
                v = self._value(op[1])
                Py_INCREF(v)
                PyList_SET_ITEM(items, <Py_ssize_t>i, v)
            return items
        mapping = {}
        for i in range(n):
            off = self._next()
            ln = self._next()
            key = str_from_valid_utf8(<const char *>self.base + off, <Py_ssize_t>ln)
            PyDict_SetItem(mapping, key, self._value(op[1]))
        return mapping

    cdef object _decimal(self, bytes raw, int32_t const):
        # None: not the fast path's case (the Python conversion decides)
        cdef Py_ssize_t n = len(raw), i
        cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(raw)
        cdef int64_t unscaled, bound
        cdef uint64_t acc, magnitude
        cdef int scale_, digits = 0, at = 0
        cdef char rev[20]
        cdef char text[48]
        precision, scale = <object>PyTuple_GET_ITEM(self.consts, const)
        if n == 0 or n > 8 or precision > 18 or scale < 0 or scale > precision:
            return None
        acc = 0xFFFFFFFFFFFFFFFF if p[0] & 0x80 else 0  # sign extension
        for i in range(n):
            acc = (acc << 8) | p[i]
        unscaled = <int64_t>acc
        bound = _POW10[<int>precision]
        if unscaled >= bound or unscaled <= -bound:
            return None
        # Decimal("-123.45") is Decimal(-12345).scaleb(-2) exactly (the same
        # digits and exponent) in one call instead of three: the text is
        # built here, at least scale + 1 digits, the point before the last
        # `scale`.
        scale_ = scale
        magnitude = <uint64_t>(-unscaled) if unscaled < 0 else <uint64_t>unscaled
        while magnitude > 0 or digits <= scale_:
            rev[digits] = <char>(48 + magnitude % 10)
            magnitude //= 10
            digits += 1
        if unscaled < 0:
            text[at] = 45  # '-'
            at += 1
        while digits > 0:
            if digits == scale_:
                text[at] = 46  # '.'
                at += 1
            digits -= 1
            text[at] = rev[digits]
            at += 1
        return _Decimal(PyUnicode_DecodeASCII(text, at, NULL))

    cdef object _timestamp(self, int32_t logical, int64_t v):
        # None: outside the fast path's range (the Python conversion decides)
        cdef int64_t us, days, rest, year
        cdef int month, day
        if v > _US_BOUND // 1000 or v < -(_US_BOUND // 1000):
            return None
        us = v * 1000 if logical == L_TS_MS or logical == L_LTS_MS else v
        if us > _US_BOUND or us < -_US_BOUND:
            return None
        days = us // _US_PER_DAY  # C division (cdivision): toward zero
        rest = us - days * _US_PER_DAY
        if rest < 0:  # floored: the day before the epoch for a negative instant
            days -= 1
            rest += _US_PER_DAY
        # The civil date (csrc/fkc_civil.h): the datetime is built in one call,
        # where the epoch plus a timedelta cost two objects and a normalisation.
        fkc_civil_from_days(days, &year, &month, &day)
        if year < 1 or year > 9999:
            return None
        return datetime_new(<int>year, month, day, <int>(rest // _US_PER_HOUR), <int>(rest // 60_000_000 % 60),
                            <int>(rest // 1_000_000 % 60), <int>(rest % 1_000_000),
                            _UTC if logical == L_TS_MS or logical == L_TS_US else None)

    cdef object _scalar(self, const int32_t *op):
        cdef int32_t wire = op[1], out = op[2], logical = op[3]
        cdef int64_t at = 0, off, ln, v
        if logical:
            at = self._next()
        if wire == FKC_AVRO_NULL:
            raw = None
        elif wire == FKC_AVRO_BOOLEAN:
            raw = self._next() != 0
        elif wire == FKC_AVRO_INT or wire == FKC_AVRO_LONG:
            v = self._next()
            if (out == FKC_AVRO_FLOAT or out == FKC_AVRO_DOUBLE) and not self.converts[logical][wire]:
                return PyFloat_FromDouble(<double>v)
            raw = PyLong_FromLongLong(v)
        elif wire == FKC_AVRO_FLOAT:
            raw = PyFloat_FromDouble(float32_bits(self._next()))
        elif wire == FKC_AVRO_DOUBLE:
            raw = PyFloat_FromDouble(float64_bits(self._next()))
        elif wire == FKC_AVRO_FIXED:
            raw = PyBytes_FromStringAndSize(<const char *>self.base + self._next(), op[4])
        else:
            off = self._next()
            ln = self._next()
            if out == FKC_AVRO_STRING:
                # validated by phase 1
                raw = str_from_valid_utf8(<const char *>self.base + off, <Py_ssize_t>ln)
            elif wire == FKC_AVRO_STRING and self.converts[logical][wire]:
                # a uuid string read as bytes: fastavro converts the str
                raw = PyUnicode_DecodeUTF8(<const char *>self.base + off, <Py_ssize_t>ln, "surrogateescape")
            else:
                raw = PyBytes_FromStringAndSize(<const char *>self.base + off, <Py_ssize_t>ln)
        if not self.converts[logical][wire]:
            return raw
        if logical == L_DECIMAL_ and (wire == FKC_AVRO_BYTES or wire == FKC_AVRO_FIXED):
            d = self._decimal(raw, op[5])
            if d is not None:
                return d
        if wire == FKC_AVRO_LONG and (logical == L_TS_MS or logical == L_TS_US or logical == L_LTS_MS
                                      or logical == L_LTS_US):
            ts = self._timestamp(logical, v)
            if ts is not None:
                return ts
        param = <object>PyTuple_GET_ITEM(self.consts, op[5]) if op[5] >= 0 else None
        try:
            return _convert_logical(logical, wire, raw, param)
        except (ValueError, OverflowError, ArithmeticError):
            raise _AvroDecodeError(self.index, at, _LOGICAL_NAMES[logical], "value out of range") from None
