"""Protobuf test support: message types built at run time (no protoc), the
compiled decoder paired with its twin, hypothesis strategies for messages,
and the expected value of a parsed message computed from the runtime's own
accessors (independent of the decoders)."""
from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf import (
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.json_format import MessageToDict
from hypothesis import strategies as st

from fastkc._core._protobuf import ProtobufDecoder
from fastkc._twin import protobuf as twin
from fastkc.schema_registry import protobuf_schema
from fastkc.schema_registry.protobuf_errors import ProtobufDecodeError

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
    "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
    "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
    "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64,
}
MAP_KEYS = ["int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string", "uint32", "sfixed32", "sfixed64",
            "sint32", "sint64"]
WKT_FIELDS = {
    "ts": "Timestamp", "dur": "Duration", "fm": "FieldMask", "st": "Struct", "val": "Value", "lv": "ListValue",
    "emp": "Empty", "any": "Any", "w_d": "DoubleValue", "w_f": "FloatValue", "w_i64": "Int64Value",
    "w_u64": "UInt64Value", "w_i32": "Int32Value", "w_u32": "UInt32Value", "w_b": "BoolValue",
    "w_s": "StringValue", "w_by": "BytesValue",
}
_WKT_MODULES = [timestamp_pb2, duration_pb2, field_mask_pb2, struct_pb2, empty_pb2, any_pb2, wrappers_pb2]


def add_field(m: Any, name: str, number: int, kind: int, label: int = 1, type_name: str = "", **kw: Any) -> Any:
    """A field on the DescriptorProto `m` (label 1 optional, 3 repeated)."""
    if type_name:
        kw["type_name"] = type_name
    return m.field.add(name=name, number=number, type=kind, label=label, **kw)


def _build_pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for mod in _WKT_MODULES:
        pool.AddSerializedFile(mod.DESCRIPTOR.serialized_pb)
    # proto3: every kind singular (implicit presence), repeated (packed by
    # default), proto3 optional, a oneof, maps of every key type, recursion,
    # an open enum, the well-known types
    p3 = descriptor_pb2.FileDescriptorProto(name="t3.proto", package="t3", syntax="proto3",
                                            dependency=[m.DESCRIPTOR.name for m in _WKT_MODULES])
    e = p3.enum_type.add(name="Color")
    for name, num in (("RED", 0), ("GREEN", 1), ("BLUE", 7), ("NEG", -3)):
        e.value.add(name=name, number=num)
    m = p3.message_type.add(name="All")
    n = 1
    for kname, kind in SCALARS.items():
        add_field(m, "s_" + kname, n, kind)
        add_field(m, "r_" + kname, n + 1, kind, 3)
        add_field(m, "o_" + kname, n + 2, kind, proto3_optional=True)
        n += 3
    add_field(m, "color", 100, F.TYPE_ENUM, type_name=".t3.Color")
    add_field(m, "colors", 101, F.TYPE_ENUM, 3, ".t3.Color")
    add_field(m, "child", 102, F.TYPE_MESSAGE, type_name=".t3.All")
    add_field(m, "children", 103, F.TYPE_MESSAGE, 3, ".t3.All")
    add_field(m, "big_number", 100000, F.TYPE_INT32)  # past the dense slot table
    m.oneof_decl.add(name="choice")
    add_field(m, "c_int", 110, F.TYPE_INT32, oneof_index=0)
    add_field(m, "c_str", 111, F.TYPE_STRING, oneof_index=0)
    add_field(m, "c_msg", 112, F.TYPE_MESSAGE, type_name=".t3.All", oneof_index=0)
    # synthetic oneofs of the optional fields come after the real one
    for f in m.field:
        if f.proto3_optional:
            f.oneof_index = len(m.oneof_decl)
            m.oneof_decl.add(name="_" + f.name)
    n = 120
    for kname in MAP_KEYS:
        entry = m.nested_type.add(name="M" + kname.capitalize() + "Entry")
        entry.options.map_entry = True
        add_field(entry, "key", 1, SCALARS[kname])
        if kname == "string":
            add_field(entry, "value", 2, F.TYPE_MESSAGE, type_name=".t3.All")
        elif kname == "int32":
            add_field(entry, "value", 2, F.TYPE_ENUM, type_name=".t3.Color")
        else:
            add_field(entry, "value", 2, F.TYPE_STRING)
        add_field(m, "m_" + kname, n, F.TYPE_MESSAGE, 3, ".t3.All." + entry.name)
        n += 1
    n = 200
    for fname, wkt in WKT_FIELDS.items():
        add_field(m, fname, n, F.TYPE_MESSAGE, type_name=".google.protobuf." + wkt)
        n += 1
    pool.Add(p3)
    # proto2: optional (explicit) scalars, repeated unpacked, a closed enum,
    # a required field, a map with a closed-enum value
    p2 = descriptor_pb2.FileDescriptorProto(name="t2.proto", package="t2", syntax="proto2")
    e = p2.enum_type.add(name="Level")
    for name, num in (("LOW", 2), ("HIGH", 5)):
        e.value.add(name=name, number=num)
    e = p2.enum_type.add(name="Mode")  # upb wants a map's enum value to start at 0
    for name, num in (("ZERO", 0), ("ONE", 1), ("SIX", 6)):
        e.value.add(name=name, number=num)
    m = p2.message_type.add(name="Two")
    n = 1
    for kname, kind in SCALARS.items():
        add_field(m, "p_" + kname, n, kind)
        add_field(m, "q_" + kname, n + 1, kind, 3)
        n += 2
    add_field(m, "req", 50, F.TYPE_INT32, 2)
    add_field(m, "level", 51, F.TYPE_ENUM, type_name=".t2.Level")
    add_field(m, "levels", 52, F.TYPE_ENUM, 3, ".t2.Level")
    add_field(m, "packed_levels", 53, F.TYPE_ENUM, 3, ".t2.Level", options=descriptor_pb2.FieldOptions(packed=True))
    add_field(m, "sub", 54, F.TYPE_MESSAGE, type_name=".t2.Two")
    entry = m.nested_type.add(name="ByNameEntry")
    entry.options.map_entry = True
    add_field(entry, "key", 1, F.TYPE_STRING)
    add_field(entry, "value", 2, F.TYPE_ENUM, type_name=".t2.Mode")
    add_field(m, "by_name", 55, F.TYPE_MESSAGE, 3, ".t2.Two.ByNameEntry")
    pool.Add(p2)
    return pool


POOL = _build_pool()
ALL = POOL.FindMessageTypeByName("t3.All")
TWO = POOL.FindMessageTypeByName("t2.Two")
AllMsg = message_factory.GetMessageClass(ALL)
TwoMsg = message_factory.GetMessageClass(TWO)


class Pair:
    """The compiled decoder and the twin for one message type."""

    def __init__(self, descriptor: Any) -> None:
        self.program = protobuf_schema.compile_program(descriptor)
        self.c = ProtobufDecoder(self.program.code, self.program.messages)

    def both(self, payloads: list[bytes]) -> list[Any]:
        got = self.c.decode_many(payloads)
        assert_same(got, twin.decode_many(self.program, payloads))
        return got

    def error(self, payloads: list[bytes]) -> tuple[int, int, str, str]:
        with pytest.raises(ProtobufDecodeError) as c_err:
            self.c.decode_many(payloads)
        with pytest.raises(ProtobufDecodeError) as t_err:
            twin.decode_many(self.program, payloads)
        assert c_err.value.key() == t_err.value.key()
        return c_err.value.key()

    def outcome(self, payloads: list[bytes]) -> Any:
        try:
            got = self.c.decode_many(payloads)
        except ProtobufDecodeError as e:
            with pytest.raises(ProtobufDecodeError) as t_err:
                twin.decode_many(self.program, payloads)
            assert t_err.value.key() == e.key()
            return e.key()
        assert_same(got, twin.decode_many(self.program, payloads))
        return got


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Equal, with types: NaN equals NaN, -0.0 is not 0.0, True is not 1."""
    assert type(a) is type(b), (path, a, b)
    if isinstance(a, dict):
        assert list(sorted(map(repr, a))) == list(sorted(map(repr, b))), (path, a, b)
        for k in a:
            assert_same(a[k], b[k], path + "/" + repr(k))
    elif isinstance(a, list):
        assert len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, "{0}[{1}]".format(path, i))
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), \
            (path, a, b)
    else:
        assert a == b, (path, a, b)


# -- the expected value, from the parsed message's accessors ------------------

def _wkt(msg: Any) -> Any:
    name = msg.DESCRIPTOR.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"):
        return msg.ToJsonString()
    if name == "google.protobuf.Struct":
        return {k: _wkt(v) for k, v in msg.fields.items()}
    if name == "google.protobuf.ListValue":
        return [_wkt(v) for v in msg.values]
    if name == "google.protobuf.Value":
        kind = msg.WhichOneof("kind")
        return None if kind == "null_value" else _wkt(getattr(msg, kind)) if kind in (
            "struct_value", "list_value") else getattr(msg, kind)
    if name == "google.protobuf.Empty":
        return {}
    if name == "google.protobuf.Any":
        return {"type_url": msg.type_url, "value": msg.value}
    return msg.value  # the wrappers


def _one(f: Any, v: Any) -> Any:
    if f.message_type is not None:
        return expected(v)
    if f.enum_type is not None:
        if f.enum_type.full_name == "google.protobuf.NullValue":
            return None
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    return v


def expected(msg: Any) -> Any:
    """MessageToDict's keys and nesting with native values."""
    if msg.DESCRIPTOR.full_name in protobuf_schema.WELL_KNOWN:
        return _wkt(msg)
    out: dict[str, Any] = {}
    for f, v in msg.ListFields():
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {k: _one(vf, v[k]) for k in v}
        elif f.is_repeated:
            out[f.name] = [_one(f, x) for x in v]
        else:
            out[f.name] = _one(f, v)
    return out


def json_key(k: Any) -> str:
    return ("true" if k else "false") if isinstance(k, bool) else str(k)


def assert_shape(native: Any, js: Any) -> None:
    """The same keys and nesting as MessageToDict (map keys as JSON strings)."""
    if isinstance(native, dict) and isinstance(js, dict):
        assert sorted(map(json_key, native)) == sorted(js), (native, js)
        by_key = {json_key(k): v for k, v in native.items()}
        for k, v in js.items():
            assert_shape(by_key[k], v)
    elif isinstance(native, list) and isinstance(js, list):
        assert len(native) == len(js)
        for x, y in zip(native, js):
            assert_shape(x, y)


def message_to_dict(msg: Any) -> Any:
    return MessageToDict(msg, preserving_proto_field_name=True)


# -- strategies ----------------------------------------------------------------

_INTS = {
    "int64": st.integers(-(1 << 63), (1 << 63) - 1), "sfixed64": st.integers(-(1 << 63), (1 << 63) - 1),
    "sint64": st.integers(-(1 << 63), (1 << 63) - 1), "uint64": st.integers(0, (1 << 64) - 1),
    "fixed64": st.integers(0, (1 << 64) - 1), "int32": st.integers(-(1 << 31), (1 << 31) - 1),
    "sfixed32": st.integers(-(1 << 31), (1 << 31) - 1), "sint32": st.integers(-(1 << 31), (1 << 31) - 1),
    "uint32": st.integers(0, (1 << 32) - 1), "fixed32": st.integers(0, (1 << 32) - 1),
}


def scalar_strategy(kname: str) -> Any:
    if kname in _INTS:
        return st.one_of(st.just(0), _INTS[kname])
    if kname == "double":
        return st.floats(allow_nan=True, allow_infinity=True)
    if kname == "float":
        return st.floats(width=32, allow_nan=True, allow_infinity=True)
    if kname == "bool":
        return st.booleans()
    if kname == "string":
        return st.text(max_size=8)
    return st.binary(max_size=8)


def _kname(f: Any) -> str:
    for k, v in SCALARS.items():
        if v == f.type:
            return k
    raise AssertionError(f.type)


def _json_value(depth: int) -> Any:
    leaf = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4))
    if depth <= 0:
        return leaf
    return st.one_of(leaf, st.lists(_json_value(depth - 1), max_size=3),
                     st.dictionaries(st.text(max_size=3), _json_value(depth - 1), max_size=3))


@st.composite
def _wkt_value(draw: Any, wkt: str) -> Any:
    if wkt in ("Timestamp", "Duration"):
        lim = 253402300799 if wkt == "Timestamp" else 315576000000
        lo = -62135596800 if wkt == "Timestamp" else -lim
        secs = draw(st.integers(lo, lim))
        # whole milliseconds and microseconds too: the text form writes 3, 6
        # or 9 digits of fraction (none for 0), the fewest that hold them
        nanos = draw(st.one_of(st.integers(0, 999_999_999), st.integers(0, 999).map(lambda k: k * 1_000_000),
                               st.integers(0, 999_999).map(lambda k: k * 1_000), st.just(0)))
        if wkt == "Duration" and secs < 0:
            nanos = -nanos
        return ("fields", {"seconds": secs, "nanos": nanos})
    if wkt == "FieldMask":
        return ("paths", draw(st.lists(st.from_regex(r"[a-z]{1,4}(_[a-z]{1,3})?(\.[a-z]{1,3})?", fullmatch=True),
                                       max_size=3)))
    if wkt in ("Struct",):
        return ("update", draw(st.dictionaries(st.text(max_size=3), _json_value(2), max_size=3)))
    if wkt == "ListValue":
        return ("extend", draw(st.lists(_json_value(2), max_size=3)))
    if wkt == "Value":
        return ("value", draw(_json_value(2)))
    if wkt == "Empty":
        return ("fields", {})
    if wkt == "Any":
        return ("fields", {"type_url": "type.googleapis.com/not.Known", "value": draw(st.binary(max_size=6))})
    base = {"DoubleValue": "double", "FloatValue": "float", "Int64Value": "int64", "UInt64Value": "uint64",
            "Int32Value": "int32", "UInt32Value": "uint32", "BoolValue": "bool", "StringValue": "string",
            "BytesValue": "bytes"}[wkt]
    return ("fields", draw(st.one_of(st.just({}), scalar_strategy(base).map(lambda v: {"value": v}))))


@st.composite
def fill_ops(draw: Any, desc: Any, depth: int = 2) -> list[tuple[Any, ...]]:
    """A list of assignments to replay on a message of `desc` (the order
    matters for oneofs: the last one set wins)."""
    ops: list[tuple[Any, ...]] = []
    names = draw(st.lists(st.sampled_from([f.name for f in desc.fields]), max_size=10, unique=True))
    for name in names:
        f = desc.fields_by_name[name]
        mt = f.message_type
        if mt is not None and mt.GetOptions().map_entry:
            kf, vf = mt.fields_by_name["key"], mt.fields_by_name["value"]
            keys = draw(st.lists(scalar_strategy(_kname(kf)), max_size=3, unique=True))
            for k in keys:
                if vf.message_type is not None:
                    if depth > 0:
                        ops.append(("map_msg", name, k, draw(fill_ops(vf.message_type, depth - 1))))
                elif vf.enum_type is not None:
                    ops.append(("map", name, k, draw(st.sampled_from([v.number for v in vf.enum_type.values]))))
                else:
                    ops.append(("map", name, k, draw(scalar_strategy(_kname(vf)))))
        elif mt is not None and mt.full_name in protobuf_schema.WELL_KNOWN:
            ops.append(("wkt", name) + draw(_wkt_value(mt.name)))
        elif mt is not None:
            if depth <= 0:
                continue
            if f.is_repeated:
                for sub in draw(st.lists(fill_ops(mt, depth - 1), max_size=2)):
                    ops.append(("add", name, sub))
            else:
                ops.append(("msg", name, draw(fill_ops(mt, depth - 1))))
        else:
            if f.enum_type is not None:
                known = [v.number for v in f.enum_type.values]
                val = st.sampled_from(known) if f.enum_type.is_closed else st.one_of(
                    st.sampled_from(known), st.integers(-(1 << 31), (1 << 31) - 1))
            else:
                val = scalar_strategy(_kname(f))
            if f.is_repeated:
                ops.append(("extend", name, draw(st.lists(val, max_size=4))))
            else:
                ops.append(("set", name, draw(val)))
    return ops


def replay(msg: Any, ops: list[tuple[Any, ...]]) -> Any:
    for op in ops:
        kind, name = op[0], op[1]
        if kind == "set":
            setattr(msg, name, op[2])
        elif kind == "extend":
            getattr(msg, name).extend(op[2])
        elif kind == "map":
            getattr(msg, name)[op[2]] = op[3]
        elif kind == "map_msg":
            replay(getattr(msg, name)[op[2]], op[3])
        elif kind == "add":
            replay(getattr(msg, name).add(), op[2])
        elif kind == "msg":
            sub = getattr(msg, name)
            sub.SetInParent()
            replay(sub, op[2])
        else:  # a well-known type
            sub = getattr(msg, name)
            sub.SetInParent()
            how, data = op[2], op[3]
            if how == "fields":
                for k, v in data.items():
                    setattr(sub, k, v)
            elif how == "paths":
                sub.paths.extend(data)
            elif how == "update":
                sub.update(data)
            elif how == "extend":
                sub.extend(data)
            else:  # a Value
                _set_value(sub, data)
    return msg


def _set_value(v: Any, data: Any) -> None:
    if data is None:
        v.null_value = 0
    elif isinstance(data, bool):
        v.bool_value = data
    elif isinstance(data, float):
        v.number_value = data
    elif isinstance(data, str):
        v.string_value = data
    elif isinstance(data, list):
        v.list_value.SetInParent()  # an empty list still sets the kind
        v.list_value.extend(data)
    else:
        v.struct_value.SetInParent()
        v.struct_value.update(data)
