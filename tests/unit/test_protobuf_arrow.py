"""The Protobuf → Arrow path (ProtobufDecoder.decode_arrow, csrc/fkc_protobuf_arrow.c)
against the protobuf runtime and pyarrow: payloads serialized (or written by
hand) and parsed back by the runtime; the expected column is
pyarrow.array(the parsed message's values, type=T) where T is the mapping of
docs/guide/schema-registry-protobuf.md written out again here
(`arrow_type`), independently of fastkc's plan. Generated messages of every
scalar kind, nested, repeated (packed and not), maps of each key kind,
oneofs, enums and the well-known types; hand-made wire for what the
runtime's serializer never writes (a field repeated, a sub-message twice, a
map key twice, packed and unpacked mixed, unknown fields); bad payloads,
out-of-range times, refused types and hostile plans."""
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

from google.protobuf import (  # noqa: E402
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: E402

from fastkc.schema_registry import protobuf_arrow, protobuf_schema  # noqa: E402
from fastkc.schema_registry.protobuf import ProtobufDecoder  # noqa: E402
from fastkc.schema_registry.protobuf_errors import (  # noqa: E402
    ProtobufArrowUnsupportedError,
    ProtobufDecodeError,
)
from tests.support.protobuf import SCALARS, add_field  # noqa: E402
from tests.support.sanitizers import examples  # noqa: E402

# fewer examples under the sanitizers (make asan): the point there is memory
# errors on every path, the plain run searches wider
SETTINGS = settings(max_examples=examples(150, 25), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

F = descriptor_pb2.FieldDescriptorProto
_KEY_KINDS = ["string", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32",
              "sfixed64", "bool"]
_WRAPPERS = ["Int32", "Int64", "UInt32", "UInt64", "Bool", "String", "Bytes", "Double", "Float"]


def _build_pool():
    pool = descriptor_pool.DescriptorPool()
    for mod in (timestamp_pb2, duration_pb2, wrappers_pb2, empty_pb2, struct_pb2, any_pb2):
        pool.AddSerializedFile(mod.DESCRIPTOR.serialized_pb)
    deps = ["google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "google/protobuf/wrappers.proto",
            "google/protobuf/empty.proto", "google/protobuf/struct.proto", "google/protobuf/any.proto"]
    fdp = descriptor_pb2.FileDescriptorProto(name="arrowtest.proto", package="at", syntax="proto3", dependency=deps)
    color = fdp.enum_type.add(name="Color")
    for name, number in (("COLOR_ZERO", 0), ("RED", 1), ("GREEN", 2), ("BLUE", 7), ("NEG", -3)):
        color.value.add(name=name, number=number)
    inner = fdp.message_type.add(name="Inner")
    add_field(inner, "a", 1, F.TYPE_INT32)
    add_field(inner, "s", 2, F.TYPE_STRING)
    add_field(inner, "r", 3, F.TYPE_INT64, F.LABEL_REPEATED)
    add_field(inner, "c", 4, F.TYPE_ENUM, type_name=".at.Color")
    add_field(inner, "o", 5, F.TYPE_INT32, proto3_optional=True, oneof_index=0)
    inner.oneof_decl.add(name="_o")
    ev = fdp.message_type.add(name="Ev")
    n = 1
    for kind, t in SCALARS.items():
        add_field(ev, "f_" + kind, n, t)
        add_field(ev, "r_" + kind, n + 100, t, F.LABEL_REPEATED)
        # the same kinds unpacked (proto3 packs repeated scalars by default)
        if kind not in ("string", "bytes"):
            add_field(ev, "u_" + kind, n + 200, t, F.LABEL_REPEATED).options.packed = False
        n += 1
    ev.oneof_decl.add(name="choice")  # synthetic oneofs (proto3 optional) come after the real ones
    ev.oneof_decl.add(name="_opt_i32")
    ev.oneof_decl.add(name="_opt_str")
    add_field(ev, "opt_i32", 20, F.TYPE_INT32, proto3_optional=True, oneof_index=1)
    add_field(ev, "opt_str", 21, F.TYPE_STRING, proto3_optional=True, oneof_index=2)
    add_field(ev, "o_int", 40, F.TYPE_INT64, oneof_index=0)
    add_field(ev, "o_str", 41, F.TYPE_STRING, oneof_index=0)
    add_field(ev, "o_msg", 42, F.TYPE_MESSAGE, type_name=".at.Inner", oneof_index=0)
    add_field(ev, "inner", 22, F.TYPE_MESSAGE, type_name=".at.Inner")
    add_field(ev, "inners", 23, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".at.Inner")
    add_field(ev, "color", 24, F.TYPE_ENUM, type_name=".at.Color")
    add_field(ev, "colors", 25, F.TYPE_ENUM, F.LABEL_REPEATED, type_name=".at.Color")
    for i, key in enumerate(_KEY_KINDS):
        entry = ev.nested_type.add(name=f"M{i}Entry")
        entry.options.map_entry = True
        add_field(entry, "key", 1, SCALARS[key])
        if i % 3 == 0:
            add_field(entry, "value", 2, F.TYPE_MESSAGE, type_name=".at.Inner")
        elif i % 3 == 1:
            add_field(entry, "value", 2, F.TYPE_ENUM, type_name=".at.Color")
        else:
            add_field(entry, "value", 2, F.TYPE_STRING)
        add_field(ev, f"m_{key}", 60 + i, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=f".at.Ev.M{i}Entry")
    add_field(ev, "ts", 80, F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    add_field(ev, "du", 81, F.TYPE_MESSAGE, type_name=".google.protobuf.Duration")
    add_field(ev, "tss", 82, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".google.protobuf.Timestamp")
    add_field(ev, "empty", 83, F.TYPE_MESSAGE, type_name=".google.protobuf.Empty")
    for i, w in enumerate(_WRAPPERS):
        add_field(ev, f"w_{w.lower()}", 90 + i, F.TYPE_MESSAGE, type_name=f".google.protobuf.{w}Value")
    # refused: each in its own message
    for name, tname in (("HasStruct", "google.protobuf.Struct"), ("HasAny", "google.protobuf.Any"),
                        ("HasValue", "google.protobuf.Value")):
        m = fdp.message_type.add(name=name)
        add_field(m, "x", 1, F.TYPE_MESSAGE, type_name="." + tname)
    rec = fdp.message_type.add(name="Node")
    add_field(rec, "v", 1, F.TYPE_INT32)
    add_field(rec, "next", 2, F.TYPE_MESSAGE, type_name=".at.Node")
    pool.Add(fdp)
    # proto2: explicit presence everywhere, a closed enum
    p2 = descriptor_pb2.FileDescriptorProto(name="arrowtest2.proto", package="at2", syntax="proto2")
    shade = p2.enum_type.add(name="Shade")
    shade.value.add(name="DARK", number=3)
    shade.value.add(name="LIGHT", number=5)
    old = p2.message_type.add(name="Old")
    add_field(old, "i", 1, F.TYPE_INT32)
    add_field(old, "s", 2, F.TYPE_STRING, default_value="dflt")
    add_field(old, "shade", 3, F.TYPE_ENUM, type_name=".at2.Shade")
    add_field(old, "req", 4, F.TYPE_INT64, F.LABEL_REQUIRED)
    entry = old.nested_type.add(name="ShadesEntry")
    entry.options.map_entry = True
    add_field(entry, "key", 1, F.TYPE_STRING)
    add_field(entry, "value", 2, F.TYPE_INT32)
    add_field(old, "shades", 5, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".at2.Old.ShadesEntry")
    pool.Add(p2)
    return pool


POOL = _build_pool()
EV = POOL.FindMessageTypeByName("at.Ev")
OLD = POOL.FindMessageTypeByName("at2.Old")
Ev = message_factory.GetMessageClass(EV)
Old = message_factory.GetMessageClass(OLD)


# --- the mapping, written out independently of fastkc -------------------------

_ARROW_SCALARS = {
    FD.TYPE_DOUBLE: pa.float64(), FD.TYPE_FLOAT: pa.float32(), FD.TYPE_INT64: pa.int64(),
    FD.TYPE_UINT64: pa.uint64(), FD.TYPE_INT32: pa.int32(), FD.TYPE_FIXED64: pa.uint64(),
    FD.TYPE_FIXED32: pa.uint32(), FD.TYPE_BOOL: pa.bool_(), FD.TYPE_STRING: pa.utf8(), FD.TYPE_BYTES: pa.binary(),
    FD.TYPE_UINT32: pa.uint32(), FD.TYPE_SFIXED32: pa.int32(), FD.TYPE_SFIXED64: pa.int64(),
    FD.TYPE_SINT32: pa.int32(), FD.TYPE_SINT64: pa.int64(), FD.TYPE_ENUM: pa.dictionary(pa.int32(), pa.utf8()),
}


def _is_map(f):
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def value_type(f):
    """The Arrow type of one value of field f (an element when repeated)."""
    if f.type != FD.TYPE_MESSAGE:
        return _ARROW_SCALARS[f.type]
    name = f.message_type.full_name
    if name == "google.protobuf.Timestamp":
        return pa.timestamp("ns", tz="UTC")
    if name == "google.protobuf.Duration":
        return pa.duration("ns")
    if name.startswith("google.protobuf.") and name.endswith("Value"):
        return _ARROW_SCALARS[f.message_type.fields_by_name["value"].type]
    return arrow_type(f.message_type)


def field_type(f):
    if _is_map(f):
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return pa.map_(value_type(key), value_type(value))
    if f.is_repeated:
        return pa.list_(value_type(f))
    return value_type(f)


def arrow_type(d):
    return pa.struct([pa.field(f.name, field_type(f)) for f in sorted(d.fields, key=lambda f: f.number)])


def _value(f, v):
    """One parsed value of field f as its Arrow column's Python value."""
    if f.type == FD.TYPE_ENUM:
        known = f.enum_type.values_by_number.get(v)
        return known.name if known is not None else None
    if f.type != FD.TYPE_MESSAGE:
        return v
    name = f.message_type.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        return v.seconds * 10**9 + v.nanos
    if name.startswith("google.protobuf.") and name.endswith("Value"):
        return v.value
    return expected_row(v)


def expected_row(msg):
    row = {}
    for f in sorted(msg.DESCRIPTOR.fields, key=lambda f: f.number):
        v = getattr(msg, f.name)
        if _is_map(f):
            vf = f.message_type.fields_by_name["value"]
            row[f.name] = [(k, _value(vf, v[k])) for k in v]
        elif f.is_repeated:
            row[f.name] = [_value(f, x) for x in v]
        elif f.has_presence and not msg.HasField(f.name):
            row[f.name] = None
        else:
            row[f.name] = _value(f, v)
    return row


def canon(v, t):
    """A pylist value with its maps' entries sorted (map order is the runtime's own)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {t.field(i).name: canon(v[t.field(i).name], t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return sorted(((k, canon(x, t.item_type)) for k, x in v), key=lambda e: e[0])
    if pa.types.is_list(t):
        return [canon(x, t.value_type) for x in v]
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return v.value if hasattr(v, "value") else v  # pandas' ns types: their int
    return v


def expected_array(messages, d):
    return pa.array([expected_row(m) for m in messages], type=arrow_type(d))


def assert_same(got, messages, d):
    want = expected_array(messages, d)
    assert got.type == want.type
    t = want.type
    assert [canon(r, t) for r in got.to_pylist()] == [canon(r, t) for r in want.to_pylist()]
    got.validate(full=True)


# --- generated messages ---------------------------------------------------------

_INT_RANGES = {
    FD.TYPE_INT32: 31, FD.TYPE_SINT32: 31, FD.TYPE_SFIXED32: 31, FD.TYPE_INT64: 63, FD.TYPE_SINT64: 63,
    FD.TYPE_SFIXED64: 63,
}
_UINT_RANGES = {FD.TYPE_UINT32: 32, FD.TYPE_FIXED32: 32, FD.TYPE_UINT64: 64, FD.TYPE_FIXED64: 64}


def scalar_strategy(f):
    t = f.type
    if t in _INT_RANGES:
        b = _INT_RANGES[t]
        return st.one_of(st.integers(-(2**b), 2**b - 1), st.sampled_from([0, -1, 1]))
    if t in _UINT_RANGES:
        return st.integers(0, 2 ** _UINT_RANGES[t] - 1)
    if t == FD.TYPE_BOOL:
        return st.booleans()
    if t == FD.TYPE_FLOAT:
        return st.floats(allow_nan=False, width=32)
    if t == FD.TYPE_DOUBLE:
        return st.floats(allow_nan=False)
    if t == FD.TYPE_STRING:
        return st.text(max_size=8)
    if t == FD.TYPE_BYTES:
        return st.binary(max_size=8)
    numbers = [v.number for v in f.enum_type.values]
    if f.enum_type.is_closed:
        return st.sampled_from(numbers)
    return st.one_of(st.sampled_from(numbers), st.integers(-5, 100))  # an open enum keeps unknown numbers


def message_setter(d, depth):
    """A strategy of functions that fill a message of type d."""
    parts = []
    for f in d.fields:
        parts.append(field_setter(f, depth))
    return st.lists(st.sampled_from(range(len(parts))), max_size=min(len(parts), 12), unique=True).flatmap(
        lambda picked: st.tuples(*[parts[i] for i in picked]))


def _apply(msg, setters):
    for s in setters:
        s(msg)


def sub_message(f, depth):
    name = f.message_type.full_name
    if name == "google.protobuf.Timestamp":
        return st.tuples(st.integers(-9 * 10**9, 9 * 10**9), st.integers(0, 10**9 - 1)).map(
            lambda sn: (lambda m: (setattr(m, "seconds", sn[0]), setattr(m, "nanos", sn[1]))))
    if name == "google.protobuf.Duration":
        return st.tuples(st.integers(0, 9 * 10**9), st.integers(0, 10**9 - 1), st.booleans()).map(
            lambda x: (lambda m: (setattr(m, "seconds", -x[0] if x[2] else x[0]),
                                  setattr(m, "nanos", -x[1] if x[2] else x[1]))))
    if name == "google.protobuf.Empty":
        return st.just(lambda m: m.SetInParent())
    if name.startswith("google.protobuf."):
        return scalar_strategy(f.message_type.fields_by_name["value"]).map(
            lambda v: (lambda m: (m.SetInParent(), setattr(m, "value", v))))
    if depth <= 0:
        return st.just(lambda m: m.SetInParent())
    return message_setter(f.message_type, depth - 1).map(lambda ss: (lambda m: (m.SetInParent(), _apply(m, ss))))


def field_setter(f, depth):
    name = f.name
    if _is_map(f):
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        if vf.type == FD.TYPE_MESSAGE:
            entries = st.lists(st.tuples(scalar_strategy(kf), sub_message(vf, depth - 1)), max_size=3)
            return entries.map(lambda es: (lambda m: [fill(getattr(m, name)[k]) for k, fill in es]))
        entries = st.lists(st.tuples(scalar_strategy(kf), scalar_strategy(vf)), max_size=3)
        return entries.map(lambda es: (lambda m: [getattr(m, name).__setitem__(k, v) for k, v in es]))
    if f.is_repeated:
        if f.type == FD.TYPE_MESSAGE:
            items = st.lists(sub_message(f, depth - 1), max_size=3)
            return items.map(lambda fills: (lambda m: [fill(getattr(m, name).add()) for fill in fills]))
        return st.lists(scalar_strategy(f), max_size=4).map(lambda vs: (lambda m: getattr(m, name).extend(vs)))
    if f.type == FD.TYPE_MESSAGE:
        return sub_message(f, depth).map(lambda fill: (lambda m: fill(getattr(m, name))))
    return scalar_strategy(f).map(lambda v: (lambda m: setattr(m, name, v)))


@pytest.fixture(scope="module")
def ev_decoder():
    return ProtobufDecoder(EV)


@SETTINGS
@given(st.lists(message_setter(EV, 2), min_size=1, max_size=6))
def test_generated_messages_match_the_runtime(ev_decoder, fills):
    messages = []
    for setters in fills:
        m = Ev()
        _apply(m, setters)
        messages.append(Ev.FromString(m.SerializeToString()))
    got = ev_decoder.decode_arrow([m.SerializeToString() for m in messages])
    assert_same(got, messages, EV)


def _field_runs(payload):
    """A payload's top-level fields as {number: [their wire chunks, in order]}."""
    def read_varint(at):
        v, shift = 0, 0
        while True:
            v |= (payload[at] & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if payload[at - 1] < 0x80:
                return v, at

    runs, at = {}, 0
    while at < len(payload):
        start = at
        key, at = read_varint(at)
        wire = key & 7
        if wire == 0:
            _, at = read_varint(at)
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            n, at = read_varint(at)
            at += n
        runs.setdefault(key >> 3, []).append(payload[start:at])
    return runs


@SETTINGS
@given(st.lists(message_setter(EV, 2), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_fields_out_of_number_order_read_the_same(ev_decoder, fills, rnd):
    # writers lay fields out by number, and the sink takes that order in one
    # pass; any other order of the fields (each field's own occurrences kept
    # in order, so the message is the same) goes the general way
    in_order, shuffled = [], []
    for setters in fills:
        m = Ev()
        _apply(m, setters)
        runs = list(_field_runs(m.SerializeToString()).values())
        in_order.append(b"".join(b"".join(r) for r in runs))
        rnd.shuffle(runs)
        shuffled.append(b"".join(b"".join(r) for r in reversed(runs)))
    got = check_wire(ev_decoder, shuffled)
    assert got.equals(ev_decoder.decode_arrow(in_order))


@SETTINGS
@given(st.lists(message_setter(OLD, 1), min_size=1, max_size=4))
def test_proto2_explicit_presence_and_closed_enums(fills):
    messages = []
    for setters in fills:
        m = Old(req=1)
        _apply(m, setters)
        messages.append(Old.FromString(m.SerializeToString()))
    got = ProtobufDecoder(OLD).decode_arrow([m.SerializeToString() for m in messages])
    assert_same(got, messages, OLD)


def test_absent_fields_defaults_and_nulls(ev_decoder):
    row = ev_decoder.decode_arrow([b""]).to_pylist()[0]
    # implicit presence: the runtime's defaults
    assert row["f_int32"] == 0 and row["f_string"] == "" and row["f_bool"] is False and row["f_bytes"] == b""
    assert row["color"] == "COLOR_ZERO"
    # explicit presence: null
    assert row["opt_i32"] is None and row["inner"] is None and row["ts"] is None and row["w_int32"] is None
    assert row["o_int"] is None and row["o_msg"] is None
    # repeated and maps: empty, never null
    assert row["r_int32"] == [] and row["m_string"] == [] and row["inners"] == []
    old = ProtobufDecoder(OLD).decode_arrow([b""]).to_pylist()[0]
    assert old == {"i": None, "s": None, "shade": None, "req": None, "shades": []}


def test_dictionary_is_the_enum_names_by_number(ev_decoder):
    got = ev_decoder.decode_arrow([Ev(color=7).SerializeToString(), Ev(color=99).SerializeToString()])
    col = got.field("color")
    assert col.dictionary.to_pylist() == ["NEG", "COLOR_ZERO", "RED", "GREEN", "BLUE"]
    assert col.to_pylist() == ["BLUE", None]  # 99: an open enum's unknown number is null


# --- hand-made wire ---------------------------------------------------------------


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number, wire):
    return varint(number << 3 | wire)


def ld(number, data):
    return tag(number, 2) + varint(len(data)) + data


def vi(number, v):
    return tag(number, 0) + varint(v)


def num(name, d=EV):
    return d.fields_by_name[name].number


def check_wire(decoder, payloads, d=EV, cls=Ev):
    got = decoder.decode_arrow(payloads)
    assert_same(got, [cls.FromString(p) for p in payloads], d)
    return got


def test_singular_field_repeated_last_wins(ev_decoder):
    p = vi(num("f_int32"), 5) + vi(num("f_int32"), 7) + ld(num("f_string"), b"a") + ld(num("f_string"), b"")
    p += vi(num("opt_i32"), 3) + vi(num("opt_i32"), 0) + vi(num("color"), 2) + vi(num("color"), 0)
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    assert row["f_int32"] == 7 and row["f_string"] == "" and row["opt_i32"] == 0 and row["color"] == "COLOR_ZERO"


def test_sub_message_twice_is_merged(ev_decoder):
    first = vi(1, 4) + vi(3, 1) + vi(3, 2) + vi(5, 9)
    second = ld(2, b"x") + vi(3, 3) + vi(4, 7)
    p = ld(num("inner"), first) + vi(num("f_int32"), 1) + ld(num("inner"), second)
    # a Timestamp and a wrapper seen twice merge too
    p += ld(num("ts"), vi(1, 10) + vi(2, 5)) + ld(num("ts"), vi(1, 11))
    p += ld(num("w_string"), ld(1, b"a")) + ld(num("w_string"), b"")
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    assert row["inner"] == {"a": 4, "s": "x", "r": [1, 2, 3], "c": "BLUE", "o": 9}
    assert row["w_string"] == "a"
    # merged frames whose fields never go down across them (the one-pass way)
    p = ld(num("inner"), vi(1, 4) + vi(3, 1)) + ld(num("inner"), vi(3, 2) + vi(5, 9))
    assert check_wire(ev_decoder, [p]).to_pylist()[0]["inner"]["r"] == [1, 2]


def test_map_key_twice_keeps_the_last_entry(ev_decoder):
    def entry(k, v):  # m_string: string keys, Inner values
        return ld(num("m_string"), ld(1, k) + ld(2, v))
    p = entry(b"k", vi(1, 10)) + entry(b"j", vi(1, 20)) + entry(b"k", vi(1, 30)) + entry(b"z", b"")
    p += entry(b"j", vi(1, 40))
    # an entry with its key twice (last wins inside it), one without a key
    # (the default, 0) and one without a value (the default enum)
    p += ld(num("m_int32"), vi(1, 5) + vi(1, 6) + vi(2, 7)) + ld(num("m_int32"), vi(2, 1))
    p += ld(num("m_int32"), vi(1, 6))
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    # each key once, at its last entry's place
    assert [k for k, _ in row["m_string"]] == ["k", "z", "j"]
    assert dict(row["m_string"])["k"]["a"] == 30 and dict(row["m_string"])["z"]["a"] == 0
    assert row["m_int32"] == [(0, "RED"), (6, "COLOR_ZERO")]


def test_many_map_keys_and_hash_paths(ev_decoder):
    # past the small sizes: the sort of the keys; strings, ints and bools
    entries = b"".join(ld(num("m_string"), ld(1, str(i % 37).encode()) + ld(2, vi(1, i))) for i in range(300))
    entries += b"".join(ld(num("m_bool"), vi(1, i % 2 * (i + 1)) + ld(2, str(i).encode())) for i in range(40))
    entries += b"".join(ld(num("m_sint32"), vi(1, (i % 5) * 2) + ld(2, b"v")) for i in range(50))
    got = check_wire(ev_decoder, [entries]).to_pylist()[0]
    assert len(got["m_string"]) == 37 and len(got["m_bool"]) == 2 and len(got["m_sint32"]) == 5
    assert dict(got["m_string"])["0"]["a"] == 296


def test_map_entry_with_an_unknown_field_is_dropped(ev_decoder):
    # upb keeps such an entry in the unknown fields, out of the map; unknown
    # fields inside the value message do not count
    p = ld(num("m_string"), ld(1, b"a") + vi(3, 1)) + ld(num("m_string"), ld(1, b"b") + vi(2, 1))
    p += ld(num("m_string"), ld(1, b"c") + ld(2, vi(99, 1)))
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    assert [k for k, _ in row["m_string"]] == ["c"]


def test_packed_and_unpacked_mixed(ev_decoder):
    packed = varint(1) + varint(2)
    p = ld(num("r_int32"), packed) + vi(num("r_int32"), 3) + ld(num("r_int32"), varint(2**64 - 4))
    p += vi(num("u_sint64"), 5) + ld(num("u_sint64"), varint(6) + varint(7))
    p += ld(num("r_double"), struct.pack("<2d", 1.5, -2.0)) + tag(num("r_double"), 1) + struct.pack("<d", 3.0)
    p += ld(num("r_float"), struct.pack("<f", 0.25))
    p += ld(num("colors"), varint(1) + varint(55)) + vi(num("colors"), 7)
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    assert row["r_int32"] == [1, 2, 3, -4] and row["u_sint64"] == [-3, 3, -4]
    assert row["colors"] == ["RED", None, "BLUE"]


def test_unknown_fields_and_wrong_wire_types_are_skipped(ev_decoder):
    p = vi(999, 1) + ld(5000, b"zz") + tag(77, 3) + vi(1, 2) + tag(77, 4) + tag(78, 5) + b"\0\0\0\0"
    p += ld(num("f_int32"), b"abc")  # a known field with a wire type it cannot have: unknown
    p += vi(num("f_int64"), 12)
    row = check_wire(ev_decoder, [p]).to_pylist()[0]
    assert row["f_int64"] == 12 and row["f_int32"] == 0


def test_oneof_last_member_wins(ev_decoder):
    m1 = ld(num("o_msg"), vi(1, 1) + vi(3, 5))
    m2 = ld(num("o_msg"), ld(2, b"y") + vi(3, 6))
    cases = [
        vi(num("o_int"), 3) + ld(num("o_str"), b"s"),
        ld(num("o_str"), b"s") + vi(num("o_int"), 0),
        m1 + m2,  # merged
        m1 + ld(num("o_str"), b"s") + m2,  # the string replaced the first: only the second
        m1 + vi(num("o_int"), 4),
        vi(num("o_int"), 4) + m1 + vi(num("f_int32"), 1),
    ]
    rows = check_wire(ev_decoder, cases).to_pylist()
    assert rows[2]["o_msg"]["r"] == [5, 6] and rows[3]["o_msg"] == {"a": 0, "s": "y", "r": [6], "c": "COLOR_ZERO",
                                                                    "o": None}
    assert rows[3]["o_str"] is None and rows[4]["o_msg"] is None and rows[4]["o_int"] == 4


def test_closed_enum_unknown_numbers_are_dropped():
    # proto2: an unknown number goes to the unknown fields (the last known stays)
    p = vi(3, 5) + vi(3, 4) + vi(4, 1) + ld(5, ld(1, b"a") + vi(2, 3)) + ld(5, ld(1, b"a"))
    row = check_wire(ProtobufDecoder(OLD), [p], OLD, Old).to_pylist()[0]
    assert row["shade"] == "LIGHT" and row["shades"] == [("a", 0)]


def test_payloads_out_of_field_order_among_in_order_ones(ev_decoder):
    # Payloads as writers lay them out are read straight into the columns;
    # each tail below breaks that late, after lists, maps, sub-messages and
    # strings of its payload are in the columns, so those rows are taken
    # back and the payload read by the tape's way. The rows around them
    # must not see any of it.
    def full(i):
        return Ev(f_int32=i, f_string="s" * (i % 5), r_int64=list(range(i % 4)), inner={"a": i, "r": [i, i]},
                  inners=[{"s": "x"}] * (i % 3), m_string={"k": {"a": i}, "j": {}}, m_int32={i: 1},
                  ts={"seconds": i}, w_string={"value": "w"}, colors=[1, 7], o_str="o").SerializeToString()
    tails = [
        vi(num("f_int32"), 99),                          # a singular field again, after everything
        ld(num("m_string"), ld(1, b"k") + ld(2, vi(1, 5))),  # a map key again, after other fields
        ld(num("inner"), vi(1, 3)),                      # a sub-message again: merged
        vi(num("o_int"), 8),                             # a second member of the oneof
        ld(num("ts"), vi(2, 10**9)),                     # a Timestamp merged out of range: an error
        vi(num("r_int64"), 4),                           # a repeated field again, after others
        tag(77, 3) + tag(77, 4),                         # a group (skipped)
    ]
    for k, t in enumerate(tails):
        payloads = [full(i) for i in range(6)]
        payloads[2] += t
        payloads[4] = ld(num("f_string"), b"a") + vi(num("f_int32"), 1) + t  # out of order from its start
        if k == 4:  # the tape's way reports the first bad payload, as decode_many does
            with pytest.raises(ProtobufDecodeError) as e:
                ev_decoder.decode_arrow(payloads)
            assert e.value.index == 2 and "Timestamp" in str(e.value)
            continue
        check_wire(ev_decoder, payloads)


def test_decode_arrow_column_reads_rows_past_the_prefix(ev_decoder):
    msgs = [Ev(f_int32=i, f_string="s" * i, r_int64=[i] * i) for i in range(40)]
    prefix = b"\0\0\0\0\x07\0"
    column = pa.array([prefix + m.SerializeToString() for m in msgs], type=pa.binary())
    got = ev_decoder.decode_arrow_column(column, len(prefix))
    assert_same(got, msgs, EV)
    sliced = ev_decoder.decode_arrow_column(column.slice(5, 20), len(prefix))
    assert_same(sliced, msgs[5:25], EV)
    large = ev_decoder.decode_arrow_column(column.cast(pa.large_binary()), len(prefix))
    assert large.equals(got)


def test_many_payloads_span_chunks(ev_decoder):
    msgs = [Ev(f_int32=i, f_string=str(i), inner={"a": i}, m_int32={i: 1}) for i in range(2000)]
    got = ev_decoder.decode_arrow([m.SerializeToString() for m in msgs])
    assert_same(got, msgs, EV)


# --- errors -------------------------------------------------------------------------


def test_bad_payload_names_its_index(ev_decoder):
    good = Ev(f_int32=1).SerializeToString()
    payloads = [good] * 600 + [b"\x0a\x05ab"] + [good]
    with pytest.raises(ProtobufDecodeError) as e:
        ev_decoder.decode_arrow(payloads)
    assert e.value.index == 600 and e.value.offset >= 0
    with pytest.raises(ProtobufDecodeError) as e:
        ev_decoder.decode_arrow_column(pa.array([b"\0" + good, b"\0" + b"\xff"]), 1)
    assert e.value.index == 1


@pytest.mark.parametrize("field,sub,where", [
    ("ts", vi(1, 10**11), 0),  # past int64 nanoseconds (year 5138)
    ("ts", vi(1, 1) + vi(2, 2**64 - 1), 0),  # nanos -1
    ("ts", vi(2, 10**9), 0),
    ("du", vi(1, 1) + vi(2, 2**64 - 1), 0),  # signs differ
    ("du", vi(1, 2**64 - 10**10), 0),  # about -317 years
])
def test_time_out_of_range_is_a_typed_error(ev_decoder, field, sub, where):
    good = Ev(f_int32=1).SerializeToString()
    bad = vi(num("f_int32"), 1) + ld(num(field), sub)
    with pytest.raises(ProtobufDecodeError) as e:
        ev_decoder.decode_arrow([good, good, bad, good])
    assert e.value.index == 2 and e.value.what.startswith("google.protobuf.")
    body = len(vi(num("f_int32"), 1)) + len(tag(num(field), 2)) + len(varint(len(sub)))
    assert e.value.problem == "value out of range" and e.value.offset == body  # the sub-message's first byte


def test_time_in_range_edges(ev_decoder):
    lo = -(2**63) // 10**9  # floor: the earliest whole second
    cases = [ld(num("ts"), vi(1, lo + 1)), ld(num("ts"), vi(1, 2**63 // 10**9) + vi(2, 2**63 % 10**9 - 1)),
             ld(num("du"), vi(1, 2**64 - 5) + vi(2, 2**64 - 7))]
    rows = ev_decoder.decode_arrow(cases)
    assert rows.field("ts")[1].value == 2**63 - 1
    assert rows.field("du")[2].value == -5 * 10**9 - 7


@pytest.mark.parametrize("name,field", [("at.HasStruct", "x"), ("at.HasAny", "x"), ("at.HasValue", "x"),
                                        ("at.Node", "next")])
def test_unsupported_types_are_refused_naming_the_field(name, field):
    d = ProtobufDecoder(POOL.FindMessageTypeByName(name))
    with pytest.raises(ProtobufArrowUnsupportedError, match=field):
        d.decode_arrow([b""])
    assert d.decode_many([b""]) == [{}]  # the dict path still reads it


# --- hostile plans ------------------------------------------------------------------


def _core(d):
    from fastkc._core._protobuf import ProtobufDecoder as Core

    program = protobuf_schema.compile_program(d)
    return program, Core(program.code, program.messages)


def test_plans_that_disagree_with_the_program_are_refused():
    program, _ = _core(EV)
    plan = protobuf_arrow.compile_plan(program)
    full = Ev(f_int32=1, m_int32={1: 2}, colors=[1, 7], r_string=["x"])
    full.inner.a = 2
    full.ts.seconds = 3
    full.m_string["k"].s = "v"
    payloads = [full.SerializeToString(), b""]
    refused = accepted = 0
    for target in ("columns", "steps"):
        words = getattr(plan, target)
        for i in range(0, len(words), max(1, len(words) // 150)):
            for delta in (1, -1, 7, 1 << 40):
                mutated = list(words)
                mutated[i] += delta
                kw = {"columns": plan.columns, "steps": plan.steps, target: mutated}
                _, core = _core(EV)
                try:
                    core.set_arrow_plan(kw["columns"], kw["steps"], plan.strings, plan.root_step)
                except (ValueError, OverflowError):
                    refused += 1
                    continue
                accepted += 1
                try:  # an accepted plan is memory-safe whatever it builds (the sanitizers watch)
                    core.decode_arrow(payloads).validate(full=True)
                except (ProtobufDecodeError, ValueError, pa.ArrowInvalid):
                    pass
    assert refused > 0
    _, core = _core(EV)
    with pytest.raises(ValueError):
        core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step + 1)
    with pytest.raises(ValueError):
        core.set_arrow_plan(plan.columns[:-1], plan.steps, plan.strings, plan.root_step)
    with pytest.raises(ValueError):
        core.set_arrow_plan(plan.columns, plan.steps, plan.strings[:-1], plan.root_step)
