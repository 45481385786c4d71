"""The pure-Python twin of the Avro interpreter (csrc/fkc_avro.c + the object
builder in fastkc/_core/_avro.pyx): the oracle for differential tests.

It follows the same compiled program (fastkc/schema_registry/avro_schema.py)
in one pass, building the values as it reads, and fails with the same
(payload index, byte offset, what, problem) as the C interpreter: every
check below has its twin in fkc_avro.c, in the same order, with the same
words. It is slow by design; nothing on the hot path uses it.
"""
from __future__ import annotations

import copy
import struct
from collections.abc import Sequence
from typing import Any

from fastkc._twin.payloads import prefixed_run
from fastkc.schema_registry import avro_schema as s
from fastkc.schema_registry.avro_errors import AvroDecodeError
from fastkc.schema_registry.avro_values import convert_logical, python_converts

_VALUE_WHAT = {
    s.W_NULL: "null", s.W_BOOLEAN: "boolean", s.W_INT: "int", s.W_LONG: "long", s.W_FLOAT: "float",
    s.W_DOUBLE: "double", s.W_BYTES: "bytes", s.W_STRING: "string", s.W_FIXED: "fixed",
}
_LENGTH_WHAT = {s.W_BYTES: "bytes length", s.W_STRING: "string length"}
_CONTAINER = {s.OP_ARRAY: "array", s.OP_MAP: "map", s.OP_UNION: "union", s.OP_RECORD: "record"}
_INT64_MIN = -(1 << 63)


class _Fail(Exception):
    def __init__(self, offset: int, what: str, problem: str) -> None:
        super().__init__(offset, what, problem)
        self.offset, self.what, self.problem = offset, what, problem


class _Reader:
    def __init__(self, code: Sequence[int], consts: Sequence[Any], data: bytes) -> None:
        self.code = code
        self.consts = consts
        self.data = data
        self.pos = 0
        self.max_depth = self.code[2]
        self.empty_budget = self.code[3]
        # The compiled decoder reads a whole payload before it builds any
        # value, so a read error anywhere wins over a logical value Python
        # cannot hold; the first such value is kept until the read is done.
        self.logical_fail: _Fail | None = None

    # -- primitives (fkc_varint.h's rules) ---------------------------------

    def uvarint(self, what: str, max_bytes: int, last_max: int) -> int:
        data, start = self.data, self.pos
        result = 0
        for i in range(max_bytes):
            if start + i >= len(data):
                raise _Fail(start, what, "truncated")
            b = data[start + i]
            if i == max_bytes - 1:
                if b & 0x80:
                    raise _Fail(start, what, "over-long varint")
                if b > last_max:
                    raise _Fail(start, what, "varint overflows its width")
            result |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                self.pos = start + i + 1
                return result
        raise AssertionError("unreachable")

    def int32(self, what: str) -> int:
        n = self.uvarint(what, 5, 0x0F)
        return (n >> 1) ^ -(n & 1)

    def int64(self, what: str) -> int:
        n = self.uvarint(what, 10, 0x01)
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int, what: str) -> bytes:
        if n > len(self.data) - self.pos:
            raise _Fail(self.pos, what, "truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def blob(self, len_what: str, what: str) -> tuple[int, bytes]:
        at = self.pos
        n = self.int64(len_what)
        if n < 0:
            raise _Fail(at, len_what, "negative length")
        off = self.pos
        return off, self.take(n, what)

    def text(self, len_what: str, what: str, emit: bool) -> Any:
        off, raw = self.blob(len_what, what)
        if not emit:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Fail(off, what, "invalid UTF-8") from None

    # -- the interpreter -----------------------------------------------------

    def value(self, pc: int, depth: int, emit: bool) -> Any:
        code = self.code
        op = code[pc]
        if op == s.OP_SCALAR:
            return self.scalar(pc, emit)
        if op != s.OP_ENUM and depth >= self.max_depth:
            raise _Fail(self.pos, _CONTAINER[op], "nesting too deep")
        if op == s.OP_ENUM:
            at = self.pos
            i = self.int32("enum index")
            if not 0 <= i < code[pc + 1]:
                raise _Fail(at, "enum index", "index out of range")
            if code[pc + 2 + 2 * i] < 0:
                raise _Fail(at, "enum symbol", "not in the reader's symbols")
            return self.consts[code[pc + 3 + 2 * i]] if emit else None
        if op in (s.OP_ARRAY, s.OP_MAP):
            return self.blocks(pc, depth + 1, emit, op == s.OP_MAP)
        if op == s.OP_UNION:
            at = self.pos
            i = self.int64("union branch")
            if not 0 <= i < code[pc + 1]:
                raise _Fail(at, "union branch", "index out of range")
            target = code[pc + 2 + 2 * i]
            if target < 0:
                raise _Fail(at, "union branch", "no match in the reader's schema")
            return self.value(target, depth + 1, emit)
        # OP_RECORD
        nfields, ndefaults = code[pc + 1], code[pc + 2]
        record: dict[str, Any] = {}
        at = pc + 4
        for _ in range(nfields):
            key = code[at + 1]
            v = self.value(code[at], depth + 1, emit and key >= 0)
            if emit and key >= 0:
                record[self.consts[key]] = v
            at += 2
        if not emit:
            return None
        for _ in range(ndefaults):
            record[self.consts[code[at]]] = copy.deepcopy(self.consts[code[at + 1]])
            at += 2
        return record

    def scalar(self, pc: int, emit: bool) -> Any:
        _, wire, out, logical, size, const = self.code[pc:pc + 6]
        what = _VALUE_WHAT[wire]
        at = self.pos
        raw: Any
        if wire == s.W_NULL:
            raw = None
        elif wire == s.W_BOOLEAN:
            b = self.take(1, what)[0]
            if b > 1:
                raise _Fail(at, what, "invalid boolean")
            raw = b == 1
        elif wire == s.W_INT:
            raw = self.int32(what)
        elif wire == s.W_LONG:
            raw = self.int64(what)
        elif wire == s.W_FLOAT:
            raw = struct.unpack("<f", self.take(4, what))[0]
        elif wire == s.W_DOUBLE:
            raw = struct.unpack("<d", self.take(8, what))[0]
        elif wire == s.W_BYTES:
            if emit and out == s.O_STRING:
                raw = self.text(_LENGTH_WHAT[wire], what, True)
            else:
                raw = self.blob(_LENGTH_WHAT[wire], what)[1]
        elif wire == s.W_STRING:
            if emit and out == s.O_STRING:
                raw = self.text(_LENGTH_WHAT[wire], what, True)
            else:
                # read as bytes: the string's bytes as written (fastavro's
                # str.encode() gives the same for valid UTF-8)
                raw = self.blob(_LENGTH_WHAT[wire], what)[1]
        else:
            raw = self.take(size, what)
        if not emit:
            return None
        if logical and python_converts(logical, wire):
            if wire == s.W_STRING and isinstance(raw, bytes):
                raw = raw.decode("utf-8", "surrogateescape")
            try:
                return convert_logical(logical, wire, raw, self.consts[const] if const >= 0 else None)
            except (ValueError, OverflowError, ArithmeticError):
                if self.logical_fail is None:
                    self.logical_fail = _Fail(at, s.LOGICAL_NAMES[logical], "value out of range")
                return None
        if out in (s.O_FLOAT, s.O_DOUBLE) and wire in (s.W_INT, s.W_LONG):
            return float(raw)
        return raw

    def blocks(self, pc: int, depth: int, emit: bool, is_map: bool) -> Any:
        code = self.code
        count_what = "map block count" if is_map else "array block count"
        size_what = "map block size" if is_map else "array block size"
        min_item = code[pc + 2] + (1 if is_map else 0)
        items: Any = {} if is_map else []
        while True:
            at = self.pos
            count = self.int64(count_what)
            if count == 0:
                break
            if count < 0:
                if count == _INT64_MIN:
                    raise _Fail(at, count_what, "count out of range")
                count = -count
                size_at = self.pos
                size = self.int64(size_what)
                if size < 0:
                    raise _Fail(size_at, size_what, "negative length")
                if size > len(self.data) - self.pos:
                    raise _Fail(size_at, size_what, "past the end")
            if min_item > 0:
                if count > (len(self.data) - self.pos) // min_item:
                    raise _Fail(at, count_what, "more items than bytes left")
            else:
                weight = code[pc + 3]
                if count > self.empty_budget // weight:
                    raise _Fail(at, count_what, "too many items")
                self.empty_budget -= count * weight
            for _ in range(count):
                if is_map:
                    key = self.text("map key length", "map key", emit)
                    v = self.value(code[pc + 1], depth, emit)
                    if emit:
                        items[key] = v
                else:
                    v = self.value(code[pc + 1], depth, emit)
                    if emit:
                        items.append(v)
        return items if emit else None


class Decoder:
    """The twin of fastkc._core._avro.Decoder: Decoder(code, consts,
    allow_trailing) with code and consts from avro_schema.compile_program."""

    def __init__(self, code: Sequence[int], consts: Sequence[Any], allow_trailing: bool = False) -> None:
        self.code = list(code)
        self.consts = tuple(consts)
        self.allow_trailing = allow_trailing

    def decode_many(self, payloads: Sequence[Any]) -> list[Any]:
        """Each payload's value, as the compiled decoder gives it; the first
        bad payload raises AvroDecodeError (its index, offset, what, problem)."""
        out = []
        for index, payload in enumerate(payloads):
            r = _Reader(self.code, self.consts, bytes(payload))
            try:
                v = r.value(self.code[1], 0, True)
                if not self.allow_trailing and r.pos < len(r.data):
                    raise _Fail(r.pos, "datum", "trailing bytes")
                if r.logical_fail is not None:
                    raise r.logical_fail
            except _Fail as f:
                raise AvroDecodeError(index, f.offset, f.what, f.problem) from None
            out.append(v)
        return out

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """decode_many() of the leading values from values[start] on that are
        bytes starting with `prefix`, each past it."""
        return self.decode_many(prefixed_run(values, start, prefix))
