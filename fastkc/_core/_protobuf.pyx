# cython: language_level=3
"""Cython bridge over the Protobuf interpreter (csrc/fkc_protobuf.c).

Two phases, as the Avro decoder:
  1. fkc_pb_decode_many(): pure C with the GIL released. Reads a chunk of
     payloads by the compiled program onto one int64 tape (wire order, one
     entry per occurrence), checking everything (tags, varints, lengths,
     UTF-8, nesting).
  2. _build: walks the tape and builds MessageToDict's dicts with native
     values, resolving what the wire leaves open: scalar last-wins, the last
     oneof member, sub-message merges, implicit presence. It cannot meet bad
     input (phase 1 proved the tape), except a well-known value
     MessageToDict cannot render (a Timestamp out of range), reported at
     its message's offset.

decode_arrow hands the payloads to the Arrow builder (csrc/fkc_protobuf_arrow.c)
with the GIL released: it reads a payload laid out in field order straight
into the columns, and any other through phase 1's tape. One typed Arrow
array (a struct row per payload) comes back through the C data interface,
by the plan set_arrow_plan() installed
(fastkc/schema_registry/protobuf_arrow.py compiles it).

The program and tables come from fastkc/schema_registry/protobuf_schema.py;
fastkc/_twin/protobuf.py is the oracle.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy
from fastkc._core._bridge cimport (PyGC_Disable, PyGC_Enable, _PyDict_NewPresized, float32_bits, float64_bits,
                                  str_from_valid_utf8)
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_Contains
from cpython.float cimport PyFloat_FromDouble
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM

import sys as _sys

cdef extern from "fkc_civil.h":
    void fkc_civil_from_days(int64_t days, int64_t *year, int *month, int *day) nogil

from cpython.unicode cimport PyUnicode_DecodeASCII

from fastkc.schema_registry.protobuf_errors import ProtobufArrowCapacityError as _ProtobufArrowCapacityError
from fastkc.schema_registry.protobuf_errors import ProtobufDecodeError as _ProtobufDecodeError
from fastkc.schema_registry.protobuf_wkt import WellKnownValueError as _WellKnownValueError
from fastkc.schema_registry.protobuf_wkt import converter as _converter


cdef extern from "Python.h":
    int PyDict_DelItem(object d, object key) except -1

# as the Avro decoder: this many payloads are read and built at a time, on
# one reused tape that stays in cache
cdef enum:
    _CHUNK = 512


cdef extern from "fkc_protobuf.h":
    enum:
        FKC_PB_HEADER
        FKC_PB_FIELD_WIDTH
        FKC_PB_MSG_HEAD
        FKC_PB_FRAME
        FKC_PB_DOUBLE
        FKC_PB_FLOAT
        FKC_PB_INT64
        FKC_PB_UINT64
        FKC_PB_INT32
        FKC_PB_FIXED64
        FKC_PB_FIXED32
        FKC_PB_BOOL
        FKC_PB_STRING
        FKC_PB_MESSAGE
        FKC_PB_BYTES
        FKC_PB_UINT32
        FKC_PB_ENUM
        FKC_PB_SFIXED32
        FKC_PB_SFIXED64
        FKC_PB_SINT32
        FKC_PB_SINT64
        FKC_PB_F_REPEATED
        FKC_PB_F_EXPLICIT
        FKC_PB_M_MAP_ENTRY
    ctypedef struct fkc_pb_tape:
        int64_t *v
        size_t len
        size_t cap
        size_t reserve_words
    ctypedef struct fkc_pb_error:
        size_t index
        size_t offset
        const char *what
        const char *problem
        int nomem
    int fkc_pb_check_program(const int32_t *code, size_t n)
    size_t fkc_pb_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                              const size_t *lengths, size_t count, fkc_pb_tape *tape, size_t *starts,
                              fkc_pb_error *err) nogil
    void fkc_pb_tape_free(fkc_pb_tape *tape)


include "_arrow_rows.pxi"


cdef extern from "fkc_protobuf_arrow.h":
    enum:
        FKC_TC_COL_WIDTH
        FKC_TC_OK
        FKC_TC_NOMEM
        FKC_TC_CAPACITY
        FKC_TC_VALUE
        FKC_PA_READ
    ctypedef struct fkc_pb_arrow_plan:
        const int32_t *code
        size_t code_len
        const int64_t *columns
        size_t column_count
        const int64_t *steps
        size_t steps_len
        const uint8_t *strings
        size_t strings_len
        int64_t root_step
    ctypedef struct fkc_tc_error:
        int kind
        size_t index
        size_t offset
        const char *what
        const char *problem
    int fkc_pb_arrow_check(const fkc_pb_arrow_plan *plan)
    ctypedef struct fkc_pb_arrow_builder:
        pass
    fkc_pb_arrow_builder *fkc_pb_arrow_start(const fkc_pb_arrow_plan *plan, size_t rows_hint) nogil
    int fkc_pb_arrow_append(fkc_pb_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                            size_t count, fkc_pb_error *read_err, fkc_tc_error *err) nogil
    int fkc_pb_arrow_finish(fkc_pb_arrow_builder *b, ArrowArray *out_array, ArrowSchema *out_schema,
                            fkc_tc_error *err) nogil
    void fkc_pb_arrow_discard(fkc_pb_arrow_builder *b) nogil


# pyarrow.Array._import_from_c, looked up on the first decode_arrow (pyarrow
# is optional: only the Arrow path needs it)
_import_array = None


include "_payloads.pxi"


def parse_prefixed(parse, list values, Py_ssize_t start, bytes prefix, list out):
    """Appends parse(value past `prefix`) to `out` for values[start], values[start + 1], ...
    up to the first that is not bytes starting with `prefix` (or the end): a
    message type's values (protobuf_deserializer.MessageTypeCodec), parsed
    by the protobuf runtime. The run is _Payloads' (the one reading of a
    prefixed run); the loop is here, not in Python, where it cost about
    0.3 µs a value beside the runtime's ~1.5 µs parse. Each value is cut as
    a bytes copy (the runtime reads bytes fastest, and may keep a reference
    to what it parsed, which a view without an owner would not survive). A
    parse error propagates: the value that raised is values[start + len(out)].
    The cyclic collector is paused while the messages are made, as decode_many
    pauses it for its dicts: the runtime's messages are GC-tracked, and a
    collection every few hundred of them walked the whole heap's young and
    then old generations over and over."""
    cdef _Payloads run = _Payloads(values, prefix, start)
    cdef size_t i
    cdef int gc_was_on = PyGC_Disable()
    try:
        for i in range(run.count):
            out.append(parse(PyBytes_FromStringAndSize(<const char *>run.ptrs[i], <Py_ssize_t>run.lengths[i])))
    finally:
        if gc_was_on:
            PyGC_Enable()


cdef class ProtobufDecoder:
    """A compiled message type, ready to decode payloads:
    ProtobufDecoder(code, messages) with both from
    protobuf_schema.compile_program (Program.code, Program.messages)."""
    cdef int32_t *code
    cdef size_t code_len
    cdef int32_t root
    cdef int32_t nmsgs
    cdef tuple names      # per message: the field names (interned), by slot
    cdef tuple enums      # per message: per slot, the enum's {number: name} or None
    cdef tuple oneofs     # per message: per slot, the names of its oneof siblings or None
    cdef tuple wkt        # per message: the well-known conversion or None
    cdef tuple wkt_names  # per message: the well-known type's name or None
    cdef tuple defaults   # per message: per slot, a map entry's missing key/value
    cdef int32_t timestamp  # the message index of google.protobuf.Timestamp, -1 when unreached
    # the call in progress (phase 2)
    cdef const int64_t *tape
    cdef const uint8_t *base
    cdef size_t index
    # the Arrow plan (set once by set_arrow_plan; its arrays owned here)
    cdef fkc_pb_arrow_plan plan
    cdef int64_t *plan_columns
    cdef int64_t *plan_steps
    cdef uint8_t *plan_strings

    def __cinit__(self, code, messages):
        cdef size_t i
        n = len(code)
        self.code = <int32_t *>malloc(max(n, 1) * sizeof(int32_t))
        if self.code == NULL:
            raise MemoryError()
        for i in range(n):
            self.code[i] = <int32_t>code[i]
        self.code_len = n
        if not fkc_pb_check_program(self.code, self.code_len):
            raise ValueError("fastkc: not a well-formed Protobuf program")
        self.nmsgs = self.code[1]
        self.root = self.code[2]
        if len(messages) != self.nmsgs:
            raise ValueError("fastkc: the message tables do not match the program")
        names, enums, oneofs, wkt, wkt_names, defaults = [], [], [], [], [], []
        for m, info in enumerate(messages):
            if len(info.fields) != self.code[self.code[FKC_PB_HEADER + m]]:
                raise ValueError("fastkc: the message tables do not match the program")
            names.append(tuple(_sys.intern(f.name) for f in info.fields))
            enums.append(tuple(f.enum_names for f in info.fields))
            oneofs.append(tuple(None if f.oneof < 0 else
                                tuple(_sys.intern(info.fields[o].name) for o in info.oneofs[f.oneof] if o != slot)
                                for slot, f in enumerate(info.fields)))
            wkt.append(None if info.well_known is None else _converter(info.well_known))
            wkt_names.append(info.well_known)
            defaults.append(tuple(f.default for f in info.fields))
            if info.map_entry and (len(info.fields) != 2 or info.fields[0].number != 1
                                   or info.fields[1].number != 2):
                raise ValueError("fastkc: a map entry without fields 1 and 2")
        self.names, self.enums, self.oneofs = tuple(names), tuple(enums), tuple(oneofs)
        self.timestamp = wkt_names.index("google.protobuf.Timestamp") if "google.protobuf.Timestamp" in wkt_names \
            else -1
        self.wkt, self.wkt_names, self.defaults = tuple(wkt), tuple(wkt_names), tuple(defaults)

    def __dealloc__(self):
        free(self.code)
        free(self.plan_columns)
        free(self.plan_steps)
        free(self.plan_strings)

    def set_arrow_plan(self, columns, steps, strings, root_step):
        """Install the Arrow plan of this program (protobuf_arrow.compile_plan:
        its columns, steps, strings and root step), once; a plan that does
        not agree with the program is refused (ValueError)."""
        cdef size_t i
        cdef bytes blob = bytes(strings)
        cdef size_t ncols = len(columns), nsteps = len(steps), nstrings = len(blob)
        if self.plan_columns != NULL:
            raise ValueError("fastkc: this decoder has an Arrow plan already")
        cdef int64_t *cols = <int64_t *>malloc(max(ncols, 1) * sizeof(int64_t))
        cdef int64_t *stps = <int64_t *>malloc(max(nsteps, 1) * sizeof(int64_t))
        cdef uint8_t *strs = <uint8_t *>malloc(max(nstrings, 1))
        try:
            if cols == NULL or stps == NULL or strs == NULL:
                raise MemoryError()
            for i in range(ncols):
                cols[i] = columns[i]
            for i in range(nsteps):
                stps[i] = steps[i]
            memcpy(strs, PyBytes_AS_STRING(blob), nstrings)
            self.plan = fkc_pb_arrow_plan(self.code, self.code_len, cols,
                                          ncols // FKC_TC_COL_WIDTH if ncols % FKC_TC_COL_WIDTH == 0 else 0,
                                          stps, nsteps, strs, nstrings, root_step)
            if not fkc_pb_arrow_check(&self.plan):
                raise ValueError("fastkc: not a well-formed Protobuf Arrow plan for this program")
        except BaseException:
            free(cols)
            free(stps)
            free(strs)
            raise
        self.plan_columns, self.plan_steps, self.plan_strings = cols, stps, strs

    def decode_arrow_column(self, values, Py_ssize_t skip):
        """decode_arrow() of the rows of a pyarrow binary array without
        nulls, each past its first `skip` bytes, read in place."""
        return self.decode_arrow(_Payloads(values, None, 0, skip))

    def decode_arrow(self, payloads):
        """A list of payloads (bytes-like) as one pyarrow struct array of as
        many rows, typed by the plan set_arrow_plan() installed. The first
        bad payload raises ProtobufDecodeError as decode_many does (a
        Timestamp or Duration outside int64 nanoseconds too);
        ProtobufArrowCapacityError names a payload that would pass Arrow's
        int32 offsets (nothing is returned: decode the payloads before it
        first)."""
        global _import_array
        cdef _Payloads p
        cdef size_t start = 0, n = 0
        cdef int rc = FKC_TC_OK
        cdef fkc_pb_error err
        cdef fkc_tc_error aerr
        cdef fkc_pb_arrow_builder *builder = NULL
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
                builder = fkc_pb_arrow_start(&self.plan, p.count)
                if builder == NULL:
                    rc = FKC_TC_NOMEM
                # _CHUNK payloads at a time: after the first, the columns'
                # bytes are reserved for the rest in proportion
                while rc == FKC_TC_OK and start < p.count:
                    n = min(<size_t>_CHUNK, p.count - start)
                    rc = fkc_pb_arrow_append(builder, p.ptrs + start, p.lengths + start, n, &err, &aerr)
                    if rc == FKC_TC_OK:
                        start += n
                if rc == FKC_TC_OK:
                    rc = fkc_pb_arrow_finish(builder, &array, &schema, &aerr)
                    builder = NULL  # finished (or freed by its failure)
            if rc == FKC_TC_NOMEM:
                raise MemoryError("fastkc: out of memory for the Protobuf tape or its Arrow columns")
            if rc == FKC_TC_CAPACITY:
                raise _ProtobufArrowCapacityError(aerr.index, aerr.offset, aerr.what.decode(),
                                                  aerr.problem.decode())
            if rc == FKC_TC_VALUE:
                raise _ProtobufDecodeError(aerr.index, aerr.offset, aerr.what.decode(), aerr.problem.decode())
            if rc == FKC_PA_READ:
                raise _ProtobufDecodeError(start + err.index, err.offset, err.what.decode(), err.problem.decode())
            return _import_array(<size_t>&array, <size_t>&schema)
        finally:
            fkc_pb_arrow_discard(builder)
            # pyarrow took both when the import succeeded (their release is NULL then)
            if array.release != NULL:
                array.release(&array)
            if schema.release != NULL:
                schema.release(&schema)

    def decode_many(self, payloads):
        """The dicts of a list of payloads (bytes-like), in order. The first
        bad payload raises ProtobufDecodeError naming its index and byte
        offset."""
        cdef _Payloads p = payloads if type(payloads) is _Payloads else _Payloads(payloads)
        cdef size_t i, done, start = 0, n
        cdef fkc_pb_tape tape
        cdef fkc_pb_error err
        cdef int gc_was_on
        tape.v = NULL
        tape.len = tape.cap = tape.reserve_words = 0
        out = PyList_New(<Py_ssize_t>p.count)
        # The dicts hold no cycles and building them is the hot path: the
        # cyclic collector would otherwise run every few hundred dicts over
        # ever more of them. Off while they are built, back on only if it was
        # on (another thread's call in between sees it off and leaves it).
        gc_was_on = PyGC_Disable()
        try:
            while start < p.count:
                n = min(<size_t>_CHUNK, p.count - start)
                tape.len = 0
                with nogil:
                    done = fkc_pb_decode_many(self.code, self.code_len, p.ptrs + start, p.lengths + start, n,
                                              &tape, p.starts + start, &err)
                if done < n and err.nomem:
                    raise MemoryError("fastkc: out of memory for the Protobuf tape")
                self.tape = tape.v
                for i in range(start, start + done):
                    self.base = p.ptrs[i]
                    self.index = i
                    v = self._build(self.root, <int64_t>p.starts[i], None)
                    Py_INCREF(v)
                    PyList_SET_ITEM(out, <Py_ssize_t>i, v)
                if done < n:
                    raise _ProtobufDecodeError(start + err.index, err.offset, err.what.decode(),
                                               err.problem.decode())
                start += n
            return out
        finally:
            if gc_was_on:
                PyGC_Enable()
            self.tape = NULL
            fkc_pb_tape_free(&tape)

    def decode_prefixed(self, list values, Py_ssize_t start, bytes prefix):
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix`, each past
        it, read in place. As many dicts as the run has: [] when
        values[start] is not such bytes. ProtobufDecodeError's index counts
        from `start`."""
        return self.decode_many(_Payloads(values, prefix, start))

    cdef object _scalar(self, int32_t kind, int64_t v, object enum_names):
        cdef PyObject *name
        if kind == FKC_PB_INT64 or kind == FKC_PB_INT32 or kind == FKC_PB_SINT32 or kind == FKC_PB_SINT64 \
                or kind == FKC_PB_SFIXED32 or kind == FKC_PB_SFIXED64 or kind == FKC_PB_UINT32 \
                or kind == FKC_PB_FIXED32:
            return PyLong_FromLongLong(v)
        if kind == FKC_PB_UINT64 or kind == FKC_PB_FIXED64:
            return PyLong_FromUnsignedLongLong(<uint64_t>v)
        if kind == FKC_PB_BOOL:
            return v != 0
        if kind == FKC_PB_DOUBLE:
            return PyFloat_FromDouble(float64_bits(v))
        if kind == FKC_PB_FLOAT:
            return PyFloat_FromDouble(float32_bits(v))
        # an enum: its name when known (NullValue's is None), else the number
        key = PyLong_FromLongLong(v)
        name = PyDict_GetItem(enum_names, key)
        return <object>name if name != NULL else key

    cdef object _build(self, int32_t m, int64_t pos, list frames):
        """The dict of message m from the frame at `pos`, or (pos < 0) from
        the frames at `frames` read as one (a merged sub-message)."""
        cdef const int32_t *msg = self.code + self.code[FKC_PB_HEADER + m]
        cdef const int32_t *fields = msg + FKC_PB_MSG_HEAD + msg[1]
        cdef const int32_t *f
        cdef const int64_t *t = self.tape
        cdef int64_t p, end, slot, v, off, ln, sub_pos
        cdef int64_t last_off = 0
        cdef int32_t kind, flags, sub
        cdef Py_ssize_t nframes = 1 if pos >= 0 else len(frames), k
        cdef tuple names = <tuple>PyTuple_GET_ITEM(self.names, m)
        cdef PyObject *cur
        cdef list merge = None
        d = _PyDict_NewPresized(min(msg[0], t[pos] if pos >= 0 else msg[0]))
        for k in range(nframes):
            if pos < 0:
                p = <int64_t>frames[k]
            else:
                p = pos
            end = p + FKC_PB_FRAME + t[p + 1]
            last_off = t[p + 2]
            p += FKC_PB_FRAME
            while p < end:
                slot = t[p]
                p += 1
                f = fields + slot * FKC_PB_FIELD_WIDTH
                kind = f[1]
                flags = f[2]
                name = <object>PyTuple_GET_ITEM(names, slot)
                if f[3] >= 0:  # a oneof member replaces its siblings
                    for other in <tuple>PyTuple_GET_ITEM(<tuple>PyTuple_GET_ITEM(self.oneofs, m), slot):
                        if PyDict_Contains(d, other):
                            PyDict_DelItem(d, other)
                if kind == FKC_PB_MESSAGE:
                    sub = f[4]
                    sub_pos = p
                    p += FKC_PB_FRAME + t[p + 1]
                    if self.code[self.code[FKC_PB_HEADER + sub] + 2] & FKC_PB_M_MAP_ENTRY:
                        cur = PyDict_GetItem(d, name)
                        if cur == NULL:
                            mapping = {}
                            PyDict_SetItem(d, name, mapping)
                        else:
                            mapping = <object>cur
                        self._entry(sub, sub_pos, mapping)
                    elif flags & FKC_PB_F_REPEATED:
                        cur = PyDict_GetItem(d, name)
                        if cur == NULL:
                            PyDict_SetItem(d, name, [self._build(sub, sub_pos, None)])
                        else:
                            PyList_Append(<object>cur, self._build(sub, sub_pos, None))
                    else:
                        if PyDict_Contains(d, name):
                            if merge is None:
                                merge = []
                            if slot not in merge:
                                merge.append(slot)
                        PyDict_SetItem(d, name, self._build(sub, sub_pos, None))
                    continue
                if kind == FKC_PB_STRING or kind == FKC_PB_BYTES:
                    off = t[p]
                    ln = t[p + 1]
                    p += 2
                    if ln == 0 and not (flags & (FKC_PB_F_EXPLICIT | FKC_PB_F_REPEATED)):
                        if PyDict_Contains(d, name):
                            PyDict_DelItem(d, name)  # implicit presence: set to the default is absent
                        continue
                    if kind == FKC_PB_STRING:
                        value = str_from_valid_utf8(<const char *>self.base + off, <Py_ssize_t>ln)
                    else:
                        value = PyBytes_FromStringAndSize(<const char *>self.base + off, <Py_ssize_t>ln)
                else:
                    v = t[p]
                    p += 1
                    if v == 0 and not (flags & (FKC_PB_F_EXPLICIT | FKC_PB_F_REPEATED)):
                        if PyDict_Contains(d, name):
                            PyDict_DelItem(d, name)
                        continue
                    value = self._scalar(kind, v, <object>PyTuple_GET_ITEM(
                        <tuple>PyTuple_GET_ITEM(self.enums, m), slot) if kind == FKC_PB_ENUM else None)
                if flags & FKC_PB_F_REPEATED:
                    cur = PyDict_GetItem(d, name)
                    if cur == NULL:
                        PyDict_SetItem(d, name, [value])
                    else:
                        PyList_Append(<object>cur, value)
                else:
                    PyDict_SetItem(d, name, value)
        if merge is not None:
            for slot in merge:
                # unless a oneof sibling replaced it after its last occurrence
                if PyDict_Contains(d, <object>PyTuple_GET_ITEM(names, slot)):
                    self._merge(m, pos, frames, slot, d)
        if m == self.timestamp:
            # the common well-known type, formatted here (the runtime's formatter
            # costs several µs a value); None: out of range, the hook raises
            text = _rfc3339(d)
            if text is not None:
                return text
        conv = <object>PyTuple_GET_ITEM(self.wkt, m)
        if conv is not None:
            try:
                return conv(d)
            except _WellKnownValueError:
                raise _ProtobufDecodeError(self.index, last_off, <object>PyTuple_GET_ITEM(self.wkt_names, m),
                                           "value out of range") from None
        return d

    cdef int _merge(self, int32_t m, int64_t pos, list frames, int64_t slot, dict d) except -1:
        """A singular message field read more than once: the merge of its
        occurrences since a oneof sibling last replaced it, their entries
        read as one (the runtime parses each into the same message)."""
        cdef const int32_t *msg = self.code + self.code[FKC_PB_HEADER + m]
        cdef const int32_t *fields = msg + FKC_PB_MSG_HEAD + msg[1]
        cdef const int32_t *f = fields + slot * FKC_PB_FIELD_WIDTH
        cdef const int32_t *g
        cdef const int64_t *t = self.tape
        cdef int64_t p, end, s
        cdef Py_ssize_t nframes = 1 if pos >= 0 else len(frames), k
        cdef list parts = []
        for k in range(nframes):
            p = pos if pos >= 0 else <int64_t>frames[k]
            end = p + FKC_PB_FRAME + t[p + 1]
            p += FKC_PB_FRAME
            while p < end:
                s = t[p]
                p += 1
                g = fields + s * FKC_PB_FIELD_WIDTH
                if s == slot:
                    parts.append(p)
                elif f[3] >= 0 and g[3] == f[3]:
                    parts = []
                p += _entry_words(g[1], p, t)
        PyDict_SetItem(d, <object>PyTuple_GET_ITEM(<tuple>PyTuple_GET_ITEM(self.names, m), slot),
                       self._build(f[4], -1, parts))
        return 0

    cdef int _entry(self, int32_t m, int64_t pos, dict mapping) except -1:
        """One map entry into `mapping`: a missing key or value is its type's
        default (a message value: the empty message's dict)."""
        cdef const int32_t *msg = self.code + self.code[FKC_PB_HEADER + m]
        cdef const int32_t *fields = msg + FKC_PB_MSG_HEAD + msg[1]
        kv = self._build(m, pos, None)
        cdef PyObject *key = PyDict_GetItem(kv, "key")
        cdef PyObject *value = PyDict_GetItem(kv, "value")
        defaults = <tuple>PyTuple_GET_ITEM(self.defaults, m)
        k = <object>key if key != NULL else <object>PyTuple_GET_ITEM(defaults, 0)
        if value != NULL:
            PyDict_SetItem(mapping, k, <object>value)
        elif fields[FKC_PB_FIELD_WIDTH + 1] == FKC_PB_MESSAGE:
            PyDict_SetItem(mapping, k, self._build(fields[FKC_PB_FIELD_WIDTH + 4], -1, []))
        else:
            PyDict_SetItem(mapping, k, <object>PyTuple_GET_ITEM(defaults, 1))
        return 0


cdef inline int64_t _entry_words(int32_t kind, int64_t p, const int64_t *t) noexcept:
    # the words of an entry's value after its slot
    if kind == FKC_PB_MESSAGE:
        return FKC_PB_FRAME + t[p + 1]
    if kind == FKC_PB_STRING or kind == FKC_PB_BYTES:
        return 2
    return 1


# Timestamp's range in MessageToDict: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z
cdef int64_t _TS_MIN_SECONDS = -62135596800
cdef int64_t _TS_MAX_SECONDS = 253402300799


cdef object _rfc3339(dict d):
    """A Timestamp's fields (d: "seconds", "nanos", each absent when 0) as
    MessageToDict's text: seconds to the second, then 3, 6 or 9 digits of
    fraction (the fewest that hold the nanos), then Z. None when out of its
    range (the Python hook then raises the runtime's error)."""
    cdef PyObject *found
    cdef int64_t seconds = 0, nanos = 0, days, rest, year
    cdef int month, day, n
    cdef char buf[48]
    found = PyDict_GetItem(d, "seconds")
    if found != NULL:
        seconds = <object>found
    found = PyDict_GetItem(d, "nanos")
    if found != NULL:
        nanos = <object>found
    if seconds < _TS_MIN_SECONDS or seconds > _TS_MAX_SECONDS or nanos < 0 or nanos > 999999999:
        return None
    # floor division (this module divides as C does: toward zero), so a
    # negative instant falls on the day before the epoch
    days = seconds // 86400
    rest = seconds - days * 86400
    if rest < 0:
        rest += 86400
        days -= 1
    fkc_civil_from_days(days, &year, &month, &day)
    # digits by hand, not snprintf: formatting was a twentieth of a dicts
    # decode of an event with one Timestamp (the range check above keeps
    # the year at 4 digits)
    _digits(buf, year, 4)
    buf[4] = b'-'
    _digits(buf + 5, month, 2)
    buf[7] = b'-'
    _digits(buf + 8, day, 2)
    buf[10] = b'T'
    _digits(buf + 11, rest // 3600, 2)
    buf[13] = b':'
    _digits(buf + 14, rest // 60 % 60, 2)
    buf[16] = b':'
    _digits(buf + 17, rest % 60, 2)
    n = 19
    if nanos != 0:
        buf[n] = b'.'
        if nanos % 1000000 == 0:
            _digits(buf + n + 1, nanos // 1000000, 3)
            n += 4
        elif nanos % 1000 == 0:
            _digits(buf + n + 1, nanos // 1000, 6)
            n += 7
        else:
            _digits(buf + n + 1, nanos, 9)
            n += 10
    buf[n] = b'Z'
    return PyUnicode_DecodeASCII(buf, n + 1, NULL)


cdef inline void _digits(char *at, int64_t v, int width) noexcept:
    """v (>= 0, < 10**width) as `width` decimal digits, zero-padded."""
    cdef int i
    for i in range(width - 1, -1, -1):
        at[i] = <char>(48 + v % 10)
        v //= 10
