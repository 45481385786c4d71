"""The pure-Python twin of the Protobuf interpreter (csrc/fkc_protobuf.c + the
object builder in fastkc/_core/_protobuf.pyx): the oracle for differential
tests.

It follows the same compiled program (fastkc/schema_registry/protobuf_schema.py):
a read pass that turns a payload into entries in wire order (each check
below has its twin in fkc_protobuf.c, in the same order, with the same
words), then a build pass that resolves last-wins, oneofs, sub-message
merges and presence into MessageToDict's shape with native values. It is
slow by design; nothing on the hot path uses it.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from fastkc._twin.payloads import prefixed_run
from fastkc.schema_registry import protobuf_schema as s
from fastkc.schema_registry.protobuf_errors import ProtobufDecodeError
from fastkc.schema_registry.protobuf_wkt import WellKnownValueError, converter

_LENGTH_WHAT = {s.K_STRING: "string length", s.K_MESSAGE: "message length", s.K_BYTES: "bytes length"}
_UNSIGNED64 = (s.K_UINT64, s.K_FIXED64)


class _Fail(Exception):
    def __init__(self, offset: int, what: str, problem: str) -> None:
        super().__init__(offset, what, problem)
        self.offset, self.what, self.problem = offset, what, problem


class _Frame:
    """A message's entries: (slot, value) in wire order; a sub-message's
    value is its _Frame, a string's the str, a float's its IEEE bits."""

    __slots__ = ("entries", "offset", "dropped")

    def __init__(self, offset: int) -> None:
        self.entries: list[tuple[int, Any]] = []
        self.offset = offset
        self.dropped = False  # it had unknown fields of its own (a dropped closed-enum value too)


class _Reader:
    def __init__(self, code: Sequence[int], data: bytes) -> None:
        self.code = code
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.nmsgs = code[1]
        self.max_depth = code[3]

    def varint(self, what: str) -> int:
        data, start = self.data, self.pos
        avail = self.end - start
        v = 0
        for i in range(10):
            if i >= avail:
                raise _Fail(start, what, "truncated")
            b = data[start + i]
            v |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                self.pos = start + i + 1
                return v & 0xFFFFFFFFFFFFFFFF  # bits past 64 dropped
        raise _Fail(start, what, "over-long varint")

    def fixed(self, width: int, what: str) -> int:
        if width > self.end - self.pos:
            raise _Fail(self.pos, what, "truncated")
        v = int.from_bytes(self.data[self.pos:self.pos + width], "little")
        self.pos += width
        return v

    def length(self, what: str) -> int:
        at = self.pos
        n = self.varint(what)
        if n > self.end - self.pos:
            raise _Fail(at, what, "past the end")
        return n

    def tag(self) -> tuple[int, int]:
        at = self.pos
        t = self.varint("tag")
        if t > 0xFFFFFFFF:
            raise _Fail(at, "tag", "field number out of range")
        num, wt = t >> 3, t & 7
        if num == 0:
            raise _Fail(at, "tag", "field number 0")
        if wt > 5:
            raise _Fail(at, "tag", "invalid wire type")
        return num, wt

    def skip(self, num: int, wt: int, depth: int) -> None:
        if wt == 0:
            self.varint("unknown varint")
        elif wt == 1:
            self.fixed(8, "unknown fixed64")
        elif wt == 5:
            self.fixed(4, "unknown fixed32")
        elif wt == 2:
            n = self.length("unknown length")  # read before self.pos is: it moves it
            self.pos += n
        else:  # 3: a group, to its matching end
            if depth + 1 > self.max_depth:
                raise _Fail(self.pos, "group", "nesting too deep")
            while True:
                if self.pos >= self.end:
                    raise _Fail(self.pos, "group", "truncated")
                at = self.pos
                n2, w2 = self.tag()
                if w2 == 4:
                    if n2 != num:
                        raise _Fail(at, "end group", "mismatched field number")
                    return
                self.skip(n2, w2, depth + 1)

    def msg_pc(self, m: int) -> int:
        return self.code[s.HEADER + m]

    def find_slot(self, pc: int, num: int) -> int:
        code = self.code
        nfields, dense = code[pc], code[pc + 1]
        if num < dense:
            return code[pc + s.M_HEAD + num]
        fields = pc + s.M_HEAD + dense
        for slot in range(nfields):  # the program's fields are sorted; C bisects, a scan finds the same
            if code[fields + slot * s.FIELD_WIDTH] == num:
                return slot
        return -1

    def enum_known(self, ref: int, v: int) -> bool:
        pc = self.code[s.HEADER + self.nmsgs + ref]
        return v in self.code[pc + 1:pc + 1 + self.code[pc]]

    def one(self, frame: _Frame, f: int, slot: int, depth: int) -> None:
        code = self.code
        kind, flags, ref = code[f + 1], code[f + 2], code[f + 4]
        wire = s.WIRE_OF_KIND[kind]
        name = s.KIND_NAMES[kind]
        if wire == 0:
            v = _norm_varint(kind, self.varint(name))
            if flags & s.F_CLOSED_ENUM and not self.enum_known(ref, v):
                frame.dropped = True
                return
            frame.entries.append((slot, v))
        elif wire in (1, 5):
            v = self.fixed(8 if wire == 1 else 4, name)
            if kind == s.K_SFIXED32:
                v = v - (1 << 32) if v & 0x80000000 else v
            elif kind == s.K_SFIXED64:
                v = v - (1 << 64) if v & (1 << 63) else v
            frame.entries.append((slot, v))
        else:
            n = self.length(_LENGTH_WHAT[kind])
            body = self.pos
            if kind != s.K_MESSAGE:
                raw = self.data[body:body + n]
                if kind == s.K_STRING:
                    try:
                        frame.entries.append((slot, raw.decode("utf-8")))
                    except UnicodeDecodeError:
                        raise _Fail(body, "string", "invalid UTF-8") from None
                else:
                    frame.entries.append((slot, raw))
                self.pos = body + n
                return
            if depth + 1 > self.max_depth:
                raise _Fail(body, "message", "nesting too deep")
            outer_end = self.end
            self.end = body + n
            sub = self.message(ref, depth + 1)
            self.end = outer_end
            if sub.dropped and code[self.msg_pc(ref) + 2] & s.M_MAP_ENTRY:
                return  # a map entry with unknown fields goes to the unknown fields whole
            frame.entries.append((slot, sub))

    def message(self, m: int, depth: int) -> _Frame:
        code = self.code
        pc = self.msg_pc(m)
        fields = pc + s.M_HEAD + code[pc + 1]
        frame = _Frame(self.pos)
        while self.pos < self.end:
            at = self.pos
            num, wt = self.tag()
            if wt == 4:
                raise _Fail(at, "tag", "unexpected end group")
            slot = self.find_slot(pc, num)
            if slot >= 0:
                f = fields + slot * s.FIELD_WIDTH
                kind, flags = code[f + 1], code[f + 2]
                if wt == s.WIRE_OF_KIND[kind]:
                    self.one(frame, f, slot, depth)
                    continue
                if wt == 2 and flags & s.F_PACKABLE:
                    n = self.length("packed length")
                    outer_end = self.end
                    self.end = self.pos + n
                    while self.pos < self.end:
                        self.one(frame, f, slot, 0)
                    self.end = outer_end
                    continue
            self.skip(num, wt, depth)
            frame.dropped = True
        return frame


def _norm_varint(kind: int, v: int) -> int:
    if kind in (s.K_INT32, s.K_ENUM):
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v & 0x80000000 else v
    if kind == s.K_UINT32:
        return v & 0xFFFFFFFF
    if kind == s.K_SINT32:
        u = v & 0xFFFFFFFF
        return (u >> 1) ^ -(u & 1)
    if kind == s.K_SINT64:
        return (v >> 1) ^ -(v & 1)
    if kind == s.K_BOOL:
        return 1 if v else 0
    if kind == s.K_INT64:
        return v - (1 << 64) if v & (1 << 63) else v
    return v  # uint64


class _Builder:
    def __init__(self, messages: Sequence[s.MessageInfo]) -> None:
        self.messages = messages

    def scalar(self, fi: s.FieldInfo, v: Any) -> Any:
        kind = fi.kind
        if kind == s.K_BOOL:
            return v != 0
        if kind == s.K_FLOAT:
            return float(struct.unpack("<f", struct.pack("<I", v))[0])
        if kind == s.K_DOUBLE:
            return float(struct.unpack("<d", struct.pack("<Q", v))[0])
        if kind == s.K_ENUM:
            assert fi.enum_names is not None
            return fi.enum_names[v] if v in fi.enum_names else v
        return v

    def build(self, m: int, frames: Sequence[_Frame]) -> Any:
        info = self.messages[m]
        fields = info.fields
        d: dict[str, Any] = {}
        merge: list[int] = []
        for frame in frames:
            for slot, v in frame.entries:
                fi = fields[slot]
                if fi.oneof >= 0:
                    for other in info.oneofs[fi.oneof]:
                        if other != slot:
                            d.pop(fields[other].name, None)
                if fi.kind == s.K_MESSAGE:
                    sub = self.messages[fi.message]
                    if sub.map_entry:
                        key, val = self.entry(fi.message, v)
                        d.setdefault(fi.name, {})[key] = val
                    elif fi.repeated:
                        d.setdefault(fi.name, []).append(self.build(fi.message, [v]))
                    else:
                        if fi.name in d and slot not in merge:
                            merge.append(slot)
                        d[fi.name] = self.build(fi.message, [v])
                elif fi.repeated:
                    d.setdefault(fi.name, []).append(self.scalar(fi, v))
                elif fi.explicit or (v != 0 if isinstance(v, int) else len(v) != 0):
                    d[fi.name] = self.scalar(fi, v)
                else:  # an implicit-presence field set to its default is absent
                    d.pop(fi.name, None)
        for slot in merge:
            # a singular message field read more than once is the merge of
            # its occurrences since a oneof sibling last replaced it: their
            # entries read as one
            fi = fields[slot]
            if fi.name not in d:  # a oneof sibling replaced it after its last occurrence
                continue
            parts: list[_Frame] = []
            for frame in frames:
                for other, v in frame.entries:
                    if other == slot:
                        parts.append(v)
                    elif fi.oneof >= 0 and fields[other].oneof == fi.oneof:
                        parts = []
            d[fi.name] = self.build(fi.message, parts)
        if info.well_known is not None:
            try:
                return converter(info.well_known)(d)
            except WellKnownValueError:
                raise _Fail(frames[-1].offset if frames else 0, info.well_known, "value out of range") from None
        return d

    def entry(self, m: int, frame: _Frame) -> tuple[Any, Any]:
        info = self.messages[m]
        kv = self.build(m, [frame])
        key_f, val_f = info.fields[0], info.fields[1]
        key = kv["key"] if "key" in kv else key_f.default
        if "value" in kv:
            return key, kv["value"]
        if val_f.kind == s.K_MESSAGE:
            return key, self.build(val_f.message, [])
        return key, val_f.default


def decode_many(program: s.Program, payloads: Sequence[bytes]) -> list[Any]:
    """The dicts of `payloads`, or ProtobufDecodeError for the first bad one."""
    builder = _Builder(program.messages)
    out = []
    for i, p in enumerate(payloads):
        data = bytes(p)
        try:
            frame = _Reader(program.code, data).message(program.code[2], 0)
            out.append(builder.build(program.code[2], [frame]))
        except _Fail as e:
            raise ProtobufDecodeError(i, e.offset, e.what, e.problem) from None
    return out


class Decoder:
    """The compiled ProtobufDecoder's interface (fastkc/_core/_protobuf.pyx)
    over this twin: what fastkc._backend hands out under FASTKC_PURE=1."""

    def __init__(self, code: Sequence[int], messages: Sequence[s.MessageInfo]) -> None:
        self._program = s.Program(list(code), list(messages), code[2])

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        return decode_many(self._program, payloads)

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        return self.decode_many(prefixed_run(values, start, prefix))


def parse_prefixed(parse: Callable[[bytes], Any], values: list[Any], start: int, prefix: bytes,
                   out: list[Any]) -> None:
    """The twin of the compiled loop: parse(value past `prefix`) appended to
    `out` for each value of the prefixed run from `start` on."""
    for payload in prefixed_run(values, start, prefix):
        out.append(parse(payload))
