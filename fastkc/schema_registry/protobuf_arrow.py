"""Protobuf → Arrow: the Arrow type each field becomes, compiled into the plan
the C sink (csrc/fkc_protobuf_arrow.c) follows over the Protobuf tape.

`compile_plan(program)` walks a compiled program (protobuf_schema.py) from its
root message and writes the column tree (arrow_columns.py) and the steps
(csrc/fkc_protobuf_arrow.h: [op, column, ref, absent, n, word * n]). The
mapping (docs/guide/schema-registry-protobuf.md has it as one table):

    message -> struct (every field a child, nullable)
    repeated T -> list<T> (empty when absent, never null)
    map<K, V> -> map<K, V> (per key its last entry)
    int32, sint32, sfixed32 -> int32        int64, sint64, sfixed64 -> int64
    uint32, fixed32 -> uint32               uint64, fixed64 -> uint64
    float -> float32    double -> float64   bool -> bool
    string -> utf8      bytes -> binary
    enum -> dictionary<int32, utf8> (the value names, by ascending number;
            a number an open enum does not name: null)
    google.protobuf.Timestamp -> timestamp[ns, tz=UTC]
    google.protobuf.Duration -> duration[ns]
    google.protobuf.*Value wrappers -> the wrapped type, nullable
    google.protobuf.Empty -> struct<> (a message without fields)

Absent fields: implicit presence (proto3 scalars without `optional`) reads
as the type's default, as the runtime does; explicit presence (proto2,
proto3 optional, message fields, oneof members) as null. Struct, Value,
ListValue, Any and FieldMask, and a message that contains itself, have no
Arrow mapping here: ProtobufArrowUnsupportedError, before anything is decoded.
"""
from __future__ import annotations

from fastkc.schema_registry import protobuf_schema as ps
from fastkc.schema_registry.arrow_columns import (
    BINARY,
    BOOL,
    DICT,
    FLOAT32,
    FLOAT64,
    INT32,
    INT64,
    LIST,
    MAP,
    STRUCT,
    UINT32,
    UINT64,
    UTF8,
    ArrowPlan,
    ColumnTree,
)
from fastkc.schema_registry.protobuf_errors import ProtobufArrowUnsupportedError, ProtobufSchemaError

# Step ops (csrc/fkc_protobuf_arrow.h)
OP_STRUCT = 0
OP_VALUE = 1
OP_LIST = 2
OP_MAP = 3
OP_TIMESTAMP = 4
OP_DURATION = 5
OP_WRAPPER = 6
STEP_HEAD = 5

_SCALARS = {
    ps.K_INT32: (INT32, "i"), ps.K_SINT32: (INT32, "i"), ps.K_SFIXED32: (INT32, "i"),
    ps.K_INT64: (INT64, "l"), ps.K_SINT64: (INT64, "l"), ps.K_SFIXED64: (INT64, "l"),
    ps.K_UINT32: (UINT32, "I"), ps.K_FIXED32: (UINT32, "I"),
    ps.K_UINT64: (UINT64, "L"), ps.K_FIXED64: (UINT64, "L"),
    ps.K_FLOAT: (FLOAT32, "f"), ps.K_DOUBLE: (FLOAT64, "g"), ps.K_BOOL: (BOOL, "b"),
    ps.K_STRING: (UTF8, "u"), ps.K_BYTES: (BINARY, "z"),
}
_WRAPPERS = frozenset(f"google.protobuf.{n}Value" for n in (
    "Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"))
_REFUSED = frozenset(f"google.protobuf.{n}" for n in ("Struct", "Value", "ListValue", "Any", "FieldMask"))


def compile_plan(program: ps.Program) -> ArrowPlan:
    """The Arrow plan of `program`: one struct row per payload of its root message."""
    c = _PlanCompiler(program)
    root = c.new_column()
    step = c.struct_step(root, program.root, "", False, 1, ())
    return c.plan(step)


class _PlanCompiler(ColumnTree):
    def __init__(self, program: ps.Program) -> None:
        super().__init__()
        self.messages = program.messages

    def new_column(self) -> int:
        cid = self.add_column()
        if cid is None:
            raise ProtobufSchemaError(f"fastkc: Protobuf message: {self.too_many()}")
        return cid

    def reserve(self, op: int, cid: int, ref: int, absent: int, words: list[int]) -> int:
        sid = len(self.steps)
        self.steps += [op, cid, ref, absent, len(words)] + words
        return sid

    def struct_step(self, cid: int, m: int, name: str, nullable: bool, absent: int, stack: tuple[int, ...]) -> int:
        """Message m as a struct row of column `cid`, its fields the children."""
        info = self.messages[m]
        self.set_column(cid, STRUCT, nullable, name, "+s")
        ids = [self.new_column() for _ in info.fields]
        col = self.columns[cid]
        col[4], col[5] = (ids[0] if ids else 0), len(ids)
        sid = self.reserve(OP_STRUCT, cid, m, absent, [-1] * len(info.fields))
        for slot, f in enumerate(info.fields):
            self.steps[sid + STEP_HEAD + slot] = self.field_step(ids[slot], info, f, stack + (m,))
        return sid

    def message_step(self, cid: int, m: int, name: str, nullable: bool, absent: int, stack: tuple[int, ...],
                     where: str) -> int:
        """A message-typed value: a struct, or a well-known type's own column."""
        info = self.messages[m]
        wk = info.well_known
        if wk in _REFUSED:
            raise ProtobufArrowUnsupportedError(
                f"Protobuf message: field {where} is a {wk}, which has no Arrow mapping")
        if m in stack:
            raise ProtobufArrowUnsupportedError(
                f"Protobuf message: field {where} makes {info.full_name} contain itself, and Arrow types cannot "
                "be recursive")
        if wk == "google.protobuf.Timestamp":
            self.set_column(cid, INT64, nullable, name, "tsn:UTC")
            return self.reserve(OP_TIMESTAMP, cid, m, absent, [])
        if wk == "google.protobuf.Duration":
            self.set_column(cid, INT64, nullable, name, "tDn")
            return self.reserve(OP_DURATION, cid, m, absent, [])
        if wk in _WRAPPERS:
            layout, fmt = _SCALARS[info.fields[0].kind]
            self.set_column(cid, layout, nullable, name, fmt)
            return self.reserve(OP_WRAPPER, cid, m, absent, [])
        return self.struct_step(cid, m, name, nullable, absent, stack)

    def field_step(self, cid: int, owner: ps.MessageInfo, f: ps.FieldInfo, stack: tuple[int, ...]) -> int:
        where = f"{owner.full_name}.{f.name}"
        if f.repeated and f.kind == ps.K_MESSAGE and self.messages[f.message].map_entry:
            return self.map_step(cid, f, stack, where)
        if f.repeated:
            self.set_column(cid, LIST, True, f.name, "+l")
            item = self.new_column()
            self.columns[cid][4:6] = [item, 1]
            sid = self.reserve(OP_LIST, cid, -1, 1, [-1])
            self.steps[sid + STEP_HEAD] = self.value_step(item, f, "item", 1, stack, where)
            return sid
        # message fields and explicit presence: null when absent; implicit: the default
        return self.value_step(cid, f, f.name, 0 if f.explicit or f.kind == ps.K_MESSAGE else 1, stack, where)

    def map_step(self, cid: int, f: ps.FieldInfo, stack: tuple[int, ...], where: str) -> int:
        entry = self.messages[f.message]
        self.set_column(cid, MAP, True, f.name, "+m")
        entries = self.new_column()
        self.columns[cid][4:6] = [entries, 1]
        self.set_column(entries, STRUCT, False, "entries", "+s")
        key, value = self.new_column(), self.new_column()
        self.columns[entries][4:6] = [key, 2]
        sid = self.reserve(OP_MAP, cid, -1, 1, [-1])
        # a missing key or value is its type's default (a message value: the empty message)
        esid = self.reserve(OP_STRUCT, entries, f.message, 1, [-1, -1])
        self.steps[sid + STEP_HEAD] = esid
        kf, vf = entry.fields
        self.steps[esid + STEP_HEAD] = self.scalar_step(key, kf, "key", False, 1)
        self.steps[esid + STEP_HEAD + 1] = self.value_step(value, vf, "value", 1, stack, where)
        return sid

    def value_step(self, cid: int, f: ps.FieldInfo, name: str, absent: int, stack: tuple[int, ...],
                   where: str) -> int:
        if f.kind == ps.K_MESSAGE:
            return self.message_step(cid, f.message, name, True, absent, stack, where)
        return self.scalar_step(cid, f, name, True, absent)

    def scalar_step(self, cid: int, f: ps.FieldInfo, name: str, nullable: bool, absent: int) -> int:
        if f.kind != ps.K_ENUM:
            layout, fmt = _SCALARS[f.kind]
            self.set_column(cid, layout, nullable, name, fmt)
            return self.reserve(OP_VALUE, cid, -1, absent, [])
        names = f.enum_names or {}
        numbers = sorted(names)
        # NullValue's one name reads as None in dicts; here it is its own name
        symbols = [names[n] or "NULL_VALUE" for n in numbers]
        default = 0  # an open enum's default; a closed one's is its first value, named by FieldInfo.default
        for n in numbers:
            if names[n] == f.default:
                default = n
                break
        # nullable whatever the field: an open enum's number it does not name is null
        self.set_column(cid, DICT, True, name, "i", self.symbols(symbols))
        return self.reserve(OP_VALUE, cid, default, absent, numbers)
