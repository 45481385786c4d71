"""Protobuf message types compiled for the decoders.

`compile_program(descriptor)` walks a root `google.protobuf.descriptor.Descriptor`
and every message and enum type reachable from it (recursion allowed: a type
that refers back to itself or an ancestor is a loop through its index) and
writes:

- `Program.code`: the flat int32 program the C interpreter (csrc/fkc_protobuf.c)
  and its twin (fastkc/_twin/protobuf.py) follow. Every wire-level decision
  (which field a number is, which wire types it accepts, whether an enum is
  closed) is in it; the interpreters only follow it.
- `Program.messages`: the Python-side table the object builders need (field
  names, enum value names, presence, oneof members, defaults, the well-known
  type a message is).

The program's layout (csrc/fkc_protobuf.h names the same numbers):

    header   [MAGIC, nmessages, root, max_depth, nenums]
    index    [message pc] * nmessages, [enum pc] * nenums
    MESSAGE  [nfields, dense, flags, slot * dense, FIELD * nfields]
    FIELD    [number, kind, flags, oneof, ref, 0]       sorted by number
    ENUM     [nvalues, value * nvalues]                  sorted (closed enums only)

`dense` is one past the largest field number below DENSE_MAX: numbers under
it find their slot (the field's place in the message, -1 for none) with one
load; larger numbers are found by binary search over the sorted fields, so
no payload costs an allocation or a hash. `ref` is the message index of a
message field, the enum index of a closed enum field, else -1.

Kinds are descriptor.proto's type numbers (TYPE_DOUBLE = 1 .. TYPE_SINT64 =
18); TYPE_GROUP (10) is refused here.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from fastkc.schema_registry.protobuf_errors import ProtobufSchemaError

MAGIC = 0x50424631  # "PBF1": a program made by this compiler version
HEADER = 5
FIELD_WIDTH = 6
M_HEAD = 3  # a message record's head: nfields, dense, flags
DENSE_MAX = 256  # a dense slot table of at most this many entries per message
MAX_DEPTH = 100  # upb's default nesting bound: 100 nested messages (or groups) decode, 101 fail
MAX_CODE = 1 << 24  # int32 words; a larger program is refused

# field flags
F_REPEATED = 1
F_PACKABLE = 2  # a repeated scalar: wire type 2 (packed) is accepted besides its own
F_EXPLICIT = 4  # explicit presence: present when set, even to the default
F_CLOSED_ENUM = 8  # an unknown number is dropped (goes to the unknown fields)

# message flags
M_MAP_ENTRY = 1

# kinds (descriptor.proto's numbers)
K_DOUBLE = 1
K_FLOAT = 2
K_INT64 = 3
K_UINT64 = 4
K_INT32 = 5
K_FIXED64 = 6
K_FIXED32 = 7
K_BOOL = 8
K_STRING = 9
K_GROUP = 10
K_MESSAGE = 11
K_BYTES = 12
K_UINT32 = 13
K_ENUM = 14
K_SFIXED32 = 15
K_SFIXED64 = 16
K_SINT32 = 17
K_SINT64 = 18

KIND_NAMES = {
    K_DOUBLE: "double", K_FLOAT: "float", K_INT64: "int64", K_UINT64: "uint64", K_INT32: "int32",
    K_FIXED64: "fixed64", K_FIXED32: "fixed32", K_BOOL: "bool", K_STRING: "string", K_MESSAGE: "message",
    K_BYTES: "bytes", K_UINT32: "uint32", K_ENUM: "enum", K_SFIXED32: "sfixed32", K_SFIXED64: "sfixed64",
    K_SINT32: "sint32", K_SINT64: "sint64",
}

# the wire type each kind is written with (wire type 2 for length-delimited)
WIRE_OF_KIND = {
    K_DOUBLE: 1, K_FLOAT: 5, K_INT64: 0, K_UINT64: 0, K_INT32: 0, K_FIXED64: 1, K_FIXED32: 5, K_BOOL: 0,
    K_STRING: 2, K_MESSAGE: 2, K_BYTES: 2, K_UINT32: 0, K_ENUM: 0, K_SFIXED32: 5, K_SFIXED64: 1, K_SINT32: 0,
    K_SINT64: 0,
}

_DEFAULTS: dict[int, Any] = {
    K_DOUBLE: 0.0, K_FLOAT: 0.0, K_INT64: 0, K_UINT64: 0, K_INT32: 0, K_FIXED64: 0, K_FIXED32: 0, K_BOOL: False,
    K_STRING: "", K_BYTES: b"", K_UINT32: 0, K_SFIXED32: 0, K_SFIXED64: 0, K_SINT32: 0, K_SINT64: 0,
}

# the well-known types whose MessageToDict form is not their fields'
WELL_KNOWN = frozenset({
    "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask",
    "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.Empty",
    "google.protobuf.Any", "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
    "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.Int32Value",
    "google.protobuf.UInt32Value", "google.protobuf.BoolValue", "google.protobuf.StringValue",
    "google.protobuf.BytesValue",
})


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """What the object builders need of one field (its slot is its place in
    MessageInfo.fields)."""

    name: str
    number: int
    kind: int
    repeated: bool
    explicit: bool
    oneof: int  # index into MessageInfo.oneofs, -1 for none
    message: int  # message index of a message field, else -1
    enum_names: dict[int, str | None] | None  # value -> name of an enum field (None: NullValue)
    default: Any  # the value a map entry's missing key or value takes (message fields: None)


@dataclasses.dataclass(frozen=True)
class MessageInfo:
    full_name: str
    fields: tuple[FieldInfo, ...]
    oneofs: tuple[tuple[int, ...], ...]  # the slots of each oneof
    map_entry: bool
    well_known: str | None  # the full name when it is one of WELL_KNOWN


@dataclasses.dataclass(frozen=True)
class Program:
    code: list[int]
    messages: list[MessageInfo]
    root: int


def _enum_names(enum: EnumDescriptor) -> dict[int, str | None]:
    if enum.full_name == "google.protobuf.NullValue":
        return {v.number: None for v in enum.values}  # MessageToDict gives None for it
    names: dict[int, str | None] = {}
    for v in enum.values:
        names.setdefault(v.number, v.name)  # an alias: the first name, as the runtime prints
    return names


def _kind(field: FieldDescriptor) -> int:
    kind = int(field.type)
    if kind == K_GROUP:
        raise ProtobufSchemaError("fastkc: field {0} is a proto2 group, which is not supported".format(
            field.full_name))
    if kind not in KIND_NAMES:
        raise ProtobufSchemaError("fastkc: field {0} has unknown type {1}".format(field.full_name, kind))
    return kind


def compile_program(root: Descriptor, max_depth: int = MAX_DEPTH) -> Program:
    """The program and tables of `root` and every type reachable from it."""
    if not 1 <= max_depth <= 1000:
        raise ProtobufSchemaError("fastkc: max_depth must be 1..1000")
    order: list[Descriptor] = []
    index: dict[str, int] = {}
    todo = [root]
    while todo:  # breadth-first, so indexes do not depend on recursion depth
        d = todo.pop(0)
        if d.full_name in index:
            continue
        index[d.full_name] = len(order)
        order.append(d)
        for f in d.fields:
            if f.message_type is not None and f.message_type.full_name not in index:
                todo.append(f.message_type)
    enum_index: dict[str, int] = {}
    enums: list[EnumDescriptor] = []
    messages: list[MessageInfo] = []
    bodies: list[list[int]] = []
    for d in order:
        fields = sorted(d.fields, key=lambda f: f.number)
        oneof_ids: dict[str, int] = {}
        oneof_slots: list[list[int]] = []
        infos: list[FieldInfo] = []
        words: list[int] = []
        for slot, f in enumerate(fields):
            kind = _kind(f)
            repeated = bool(f.is_repeated)
            flags = 0
            if repeated:
                flags |= F_REPEATED
                if WIRE_OF_KIND[kind] != 2:
                    flags |= F_PACKABLE
            explicit = bool(f.has_presence) and not repeated
            if explicit:
                flags |= F_EXPLICIT
            oneof = -1
            # a proto3 `optional` field's synthetic oneof has it alone: treated
            # as any one-member oneof, it changes nothing
            group = f.containing_oneof
            if group is not None:
                oneof = oneof_ids.setdefault(group.full_name, len(oneof_ids))
                if oneof == len(oneof_slots):
                    oneof_slots.append([])
                oneof_slots[oneof].append(slot)
            ref = -1
            names: dict[int, str | None] | None = None
            default: Any = _DEFAULTS.get(kind)
            if kind == K_MESSAGE:
                ref = index[f.message_type.full_name]
                default = None
            elif kind == K_ENUM:
                et = f.enum_type
                names = _enum_names(et)
                first = et.values[0].number if len(et.values) else 0
                default = names.get(first, first) if et.is_closed else names.get(0, 0)
                if et.is_closed:
                    flags |= F_CLOSED_ENUM
                    if et.full_name not in enum_index:
                        enum_index[et.full_name] = len(enums)
                        enums.append(et)
                    ref = enum_index[et.full_name]
            words += [f.number, kind, flags, oneof, ref, 0]
            infos.append(FieldInfo(f.name, f.number, kind, repeated, explicit, oneof, ref if kind == K_MESSAGE
                                   else -1, names, default))
        below = [f.number for f in fields if f.number < DENSE_MAX]
        dense = (max(below) + 1) if below else 0
        table = [-1] * dense
        for slot, f in enumerate(fields):
            if f.number < dense:
                table[f.number] = slot
        map_entry = bool(d.GetOptions().map_entry)
        bodies.append([len(fields), dense, M_MAP_ENTRY if map_entry else 0] + table + words)
        messages.append(MessageInfo(d.full_name, tuple(infos), tuple(tuple(s) for s in oneof_slots), map_entry,
                                    d.full_name if d.full_name in WELL_KNOWN else None))
    enum_bodies = [[len(vals)] + vals for vals in (sorted({v.number for v in e.values}) for e in enums)]
    code = [MAGIC, len(order), 0, max_depth, len(enums)]
    pc = HEADER + len(order) + len(enums)
    pcs = []
    for body in bodies + enum_bodies:
        pcs.append(pc)
        pc += len(body)
        if pc > MAX_CODE:
            raise ProtobufSchemaError("fastkc: {0} compiles to a program of more than {1} words".format(
                root.full_name, MAX_CODE))
    code += pcs
    for body in bodies + enum_bodies:
        code += body
    return Program(code, messages, 0)
