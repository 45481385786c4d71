"""Write the Protobuf fuzz target's programs, Arrow plans and seeds.

    python tests/fuzz/make_protobuf_seeds.py [--check]

tests/fuzz/fuzz_protobuf_programs.inc: programs compiled by
fastkc/schema_registry/protobuf_schema.py, and for those that have one the
Arrow plan fastkc/schema_registry/protobuf_arrow.py compiles (columns, steps,
strings, root step). Programs 0 and 1 are the reader's test types
(tests/support/protobuf.py: proto3 "All" with every kind, maps, oneofs,
recursion and the well-known types; proto2 "Two" with closed enums); both
recurse, so they have no plan. Programs 2.. are the types below, built for
the Arrow sink: every scalar kind singular, optional, packed and unpacked,
nested messages, maps of every key kind, oneofs (a message member too),
open and closed enums, Timestamp, Duration, Empty and the wrappers.
`--check` says whether the .inc is current (rewrite it when the program or
plan layout changes).
tests/fuzz/corpus/protobuf/: payloads the runtime serializes, in the
harness's input format: byte 0 = program index, byte 1 % 4 + 1 = how many
payloads (the rest split evenly), then the payload bytes; byte 1 >= 0x80
puts plan mutations first (fuzz_protobuf.c says how).
"""
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from google.protobuf import (  # noqa: E402
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    message_factory,
    timestamp_pb2,
    wrappers_pb2,
)

from fastkc.schema_registry import protobuf_arrow, protobuf_schema  # noqa: E402
from tests.support.protobuf import ALL, SCALARS, TWO, AllMsg, TwoMsg, add_field  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto
KEYS = ["string", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32",
        "sfixed64", "bool"]
WRAPPERS = ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"]


def _map(owner, name, number, key, value_kind, value_type="", package=""):
    entry = owner.nested_type.add(name=name.title().replace("_", "") + "Entry")
    entry.options.map_entry = True
    add_field(entry, "key", 1, SCALARS[key])
    add_field(entry, "value", 2, value_kind, type_name=value_type)
    full = ".".join(["", *filter(None, [package]), owner.name, entry.name])
    add_field(owner, name, number, F.TYPE_MESSAGE, F.LABEL_REPEATED, full)


def _types():
    """The Arrow-mappable message types (no recursion, no Struct/Any)."""
    pool = descriptor_pool.DescriptorPool()
    for mod in (timestamp_pb2, duration_pb2, empty_pb2, wrappers_pb2):
        pool.AddSerializedFile(mod.DESCRIPTOR.serialized_pb)
    p3 = descriptor_pb2.FileDescriptorProto(name="fz3.proto", package="", syntax="proto3", dependency=[
        "google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "google/protobuf/empty.proto",
        "google/protobuf/wrappers.proto"])
    color = p3.enum_type.add(name="Color")
    for name, number in (("ZERO", 0), ("RED", 1), ("BLUE", 7), ("NEG", -3)):
        color.value.add(name=name, number=number)
    leaf = p3.message_type.add(name="Leaf")
    add_field(leaf, "a", 1, F.TYPE_INT32)
    add_field(leaf, "s", 2, F.TYPE_STRING)
    add_field(leaf, "r", 3, F.TYPE_SINT64, F.LABEL_REPEATED)
    add_field(leaf, "c", 4, F.TYPE_ENUM, type_name=".Color")
    add_field(leaf, "ts", 5, F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    ev = p3.message_type.add(name="Ev")
    ev.oneof_decl.add(name="choice")  # real oneofs first, then proto3 optional's synthetic ones
    for i, (kname, kind) in enumerate(SCALARS.items()):
        add_field(ev, "s_" + kname, 1 + i, kind)
        add_field(ev, "r_" + kname, 20 + i, kind, F.LABEL_REPEATED)  # packed (proto3's default) where packable
        if kname not in ("string", "bytes"):
            add_field(ev, "u_" + kname, 40 + i, kind, F.LABEL_REPEATED).options.packed = False
        ev.oneof_decl.add(name="_o_" + kname)
        add_field(ev, "o_" + kname, 60 + i, kind, proto3_optional=True, oneof_index=len(ev.oneof_decl) - 1)
    add_field(ev, "color", 80, F.TYPE_ENUM, type_name=".Color")
    add_field(ev, "colors", 81, F.TYPE_ENUM, F.LABEL_REPEATED, type_name=".Color")
    add_field(ev, "leaf", 82, F.TYPE_MESSAGE, type_name=".Leaf")
    add_field(ev, "leaves", 83, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".Leaf")
    add_field(ev, "c_int", 84, F.TYPE_INT64, oneof_index=0)
    add_field(ev, "c_str", 85, F.TYPE_STRING, oneof_index=0)
    add_field(ev, "c_leaf", 86, F.TYPE_MESSAGE, type_name=".Leaf", oneof_index=0)
    values = [(F.TYPE_MESSAGE, ".Leaf"), (F.TYPE_ENUM, ".Color"), (F.TYPE_STRING, ""), (F.TYPE_BYTES, ""),
              (F.TYPE_MESSAGE, ".google.protobuf.Timestamp"), (F.TYPE_MESSAGE, ".google.protobuf.Int32Value"),
              (F.TYPE_DOUBLE, "")]
    for i, key in enumerate(KEYS):
        _map(ev, "m_" + key, 90 + i, key, *values[i % len(values)])
    add_field(ev, "ts", 110, F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    add_field(ev, "du", 111, F.TYPE_MESSAGE, type_name=".google.protobuf.Duration")
    add_field(ev, "tss", 112, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".google.protobuf.Timestamp")
    add_field(ev, "dus", 113, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".google.protobuf.Duration")
    add_field(ev, "empty", 114, F.TYPE_MESSAGE, type_name=".google.protobuf.Empty")
    for i, w in enumerate(WRAPPERS):
        add_field(ev, "w_" + w.lower(), 120 + i, F.TYPE_MESSAGE, type_name=".google.protobuf." + w + "Value")
        add_field(ev, "ws_" + w.lower(), 140 + i, F.TYPE_MESSAGE, F.LABEL_REPEATED,
             type_name=".google.protobuf." + w + "Value")
    # a few fields, so that random bytes hit them often: the merge, oneof and map paths
    small = p3.message_type.add(name="Small")
    small.oneof_decl.add(name="pick")
    add_field(small, "leaf", 1, F.TYPE_MESSAGE, type_name=".Leaf")
    add_field(small, "p_leaf", 2, F.TYPE_MESSAGE, type_name=".Leaf", oneof_index=0)
    add_field(small, "p_str", 3, F.TYPE_STRING, oneof_index=0)
    _map(small, "by_name", 4, "string", F.TYPE_MESSAGE, ".Leaf")
    _map(small, "by_num", 5, "sint32", F.TYPE_ENUM, ".Color")
    add_field(small, "du", 6, F.TYPE_MESSAGE, type_name=".google.protobuf.Duration")
    add_field(small, "ws", 7, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".google.protobuf.StringValue")
    add_field(small, "b", 8, F.TYPE_BOOL)
    pool.Add(p3)
    # proto2: explicit presence, defaults, closed enums, required, unpacked and packed
    p2 = descriptor_pb2.FileDescriptorProto(name="fz2.proto", package="p2", syntax="proto2")
    shade = p2.enum_type.add(name="Shade")
    shade.value.add(name="DARK", number=3)
    shade.value.add(name="LIGHT", number=5)
    mode = p2.enum_type.add(name="Mode")  # a closed enum as a map value must start at 0 (upb)
    for name, number in (("ZERO", 0), ("ONE", 1), ("SIX", 6)):
        mode.value.add(name=name, number=number)
    sub = p2.message_type.add(name="Sub")
    add_field(sub, "shade", 1, F.TYPE_ENUM, type_name=".p2.Shade")
    add_field(sub, "n", 2, F.TYPE_SINT32, default_value="-4")
    old = p2.message_type.add(name="Old")
    old.oneof_decl.add(name="either")
    for i, (kname, kind) in enumerate(SCALARS.items()):
        add_field(old, "p_" + kname, 1 + i, kind)
        add_field(old, "q_" + kname, 20 + i, kind, F.LABEL_REPEATED)
    add_field(old, "req", 40, F.TYPE_INT64, F.LABEL_REQUIRED)
    add_field(old, "dflt", 41, F.TYPE_STRING, default_value="dflt")
    add_field(old, "shade", 42, F.TYPE_ENUM, type_name=".p2.Shade")
    add_field(old, "shades", 43, F.TYPE_ENUM, F.LABEL_REPEATED, type_name=".p2.Shade")
    add_field(old, "packed_shades", 44, F.TYPE_ENUM, F.LABEL_REPEATED, type_name=".p2.Shade",
         options=descriptor_pb2.FieldOptions(packed=True))
    add_field(old, "sub", 45, F.TYPE_MESSAGE, type_name=".p2.Sub")
    add_field(old, "subs", 46, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".p2.Sub")
    add_field(old, "e_int", 47, F.TYPE_INT32, oneof_index=0)
    add_field(old, "e_sub", 48, F.TYPE_MESSAGE, type_name=".p2.Sub", oneof_index=0)
    _map(old, "by_name", 49, "string", F.TYPE_ENUM, ".p2.Mode", "p2")
    _map(old, "by_id", 50, "fixed64", F.TYPE_MESSAGE, ".p2.Sub", "p2")
    pool.Add(p2)
    return [pool.FindMessageTypeByName(n) for n in ("Ev", "Small", "p2.Old")]


def _ints(words):
    return ", ".join(map(str, words))


def render(programs):
    lines = ["/* Generated by tests/fuzz/make_protobuf_seeds.py: programs of "
             "fastkc/schema_registry/protobuf_schema.py and their Arrow plans (protobuf_arrow.py). */"]
    plans = []
    for i, (program, plan) in enumerate(programs):
        lines.append(f"static const int32_t pb_program_{i}[] = {{{_ints(program.code)}}};")
        if plan is None:
            plans.append("{NULL, 0, NULL, 0, NULL, 0, 0}")
            continue
        lines.append(f"static const int64_t pb_plan_{i}_columns[] = {{{_ints(plan.columns)}}};")
        lines.append(f"static const int64_t pb_plan_{i}_steps[] = {{{_ints(plan.steps)}}};")
        lines.append(f"static const uint8_t pb_plan_{i}_strings[] = {{{_ints(plan.strings)}}};")
        plans.append(f"{{pb_plan_{i}_columns, sizeof pb_plan_{i}_columns / sizeof(int64_t), pb_plan_{i}_steps,"
                     f" sizeof pb_plan_{i}_steps / sizeof(int64_t), pb_plan_{i}_strings,"
                     f" sizeof pb_plan_{i}_strings, {plan.root_step}}}")
    lines.append("static const int32_t *const pb_programs[] = {"
                 + ", ".join(f"pb_program_{i}" for i in range(len(programs))) + "};")
    lines.append("static const size_t pb_program_lens[] = {"
                 + ", ".join(f"sizeof pb_program_{i} / sizeof(int32_t)" for i in range(len(programs))) + "};")
    lines.append("static const pb_fuzz_plan pb_plans[] = {" + ", ".join(plans) + "};")
    return "\n".join(lines) + "\n"


def _ev_seeds(ev_cls, small_cls, old_cls):
    e = ev_cls(s_int32=-7, s_string="héllo", s_uint64=(1 << 64) - 1, s_float=1.25, s_bool=True, s_bytes=b"\0x",
               s_sint64=-(1 << 63), s_fixed32=9, s_double=-0.5, r_int32=[1, -2, 300], r_double=[1.5, 2.5],
               r_string=["a", ""], r_bytes=[b"z"], u_sint32=[-1, 1], u_bool=[True, False], o_int32=0,
               o_string="", color=7, colors=[0, 7, 99, -3], c_leaf={"a": 1, "r": [5, -5], "c": 2})
    e.leaf.s = "in"
    e.leaf.ts.seconds = 1
    e.leaves.add(a=3).ts.nanos = 5
    e.leaves.add()
    e.m_string["k"].a = 4
    e.m_string[""].s = "e"
    e.m_int32[1] = 7
    e.m_int32[2] = 55  # an open enum's unknown number: null
    e.m_int64[-9] = "v"
    e.m_uint32[3] = b"b"
    e.m_uint64[(1 << 64) - 1].seconds = 6
    e.m_sint32[-1].value = 2
    e.m_sint64[0] = 1.5
    e.m_bool[True].seconds = 1
    e.m_fixed32[5].a = 2
    e.m_fixed64[9] = 1
    e.m_sfixed32[-1] = "s"
    e.ts.seconds, e.ts.nanos = -5, 999999999
    e.du.seconds, e.du.nanos = -1, -2
    e.tss.add(seconds=1 << 33)
    e.dus.add(nanos=3)
    e.empty.SetInParent()
    e.w_string.value = "w"
    e.w_uint64.value = (1 << 64) - 1
    e.ws_bool.add(value=True)
    e.ws_bytes.add()
    s = small_cls(p_str="x", b=True)
    s.leaf.r.extend([1, 2])
    s.by_name["a"].c = 1
    s.by_num[-2] = 7
    s.du.seconds = 2
    s.ws.add(value="q")
    o = old_cls(req=5, p_int32=-1, p_string="", shade=5, shades=[3, 5], packed_shades=[5], e_int=1,
                q_sint64=[-1, 2], by_name={"a": 6})
    o.sub.n = 7
    o.subs.add(shade=3)
    o.by_id[7].shade = 5
    return e, s, o


def main() -> None:
    ev, small, old = _types()
    programs = [(protobuf_schema.compile_program(ALL), None), (protobuf_schema.compile_program(TWO), None)]
    for d in (ev, small, old):
        p = protobuf_schema.compile_program(d)
        programs.append((p, protobuf_arrow.compile_plan(p)))
    inc = os.path.join(HERE, "fuzz_protobuf_programs.inc")
    text = render(programs)
    if "--check" in sys.argv:
        with open(inc) as f:
            current = f.read() == text
        sys.exit(0 if current else "fuzz_protobuf_programs.inc is out of date: rerun make_protobuf_seeds.py")
    with open(inc, "w") as f:
        f.write(text)
    m = AllMsg(s_int32=-7, s_string="héllo", r_int32=[1, 2, 300], r_double=[1.5], s_uint64=(1 << 64) - 1,
               child=AllMsg(s_bytes=b"x", child=AllMsg(s_sint64=-9)), m_string={"k": AllMsg(s_int64=3)},
               m_bool={True: "t"}, m_int32={4: 7}, c_str="o", colors=[0, 7, 99], s_float=1.25, s_fixed32=9)
    m.ts.seconds = 5
    m.st.update({"a": [1.0, "b", None]})
    ev_cls, small_cls, old_cls = (message_factory.GetMessageClass(d) for d in (ev, small, old))
    e, s, o = _ev_seeds(ev_cls, small_cls, old_cls)
    # a sub-message twice (merged), a oneof switched back and forth, a map key twice: wire the
    # runtime's serializer never writes, joined by hand
    merged = (ev_cls(leaf={"a": 1, "r": [1]}, c_str="a").SerializeToString(deterministic=True)
              + ev_cls(leaf={"s": "b", "r": [2]}, c_leaf={"a": 2}).SerializeToString(deterministic=True)
              + ev_cls(c_int=3, m_string={"k": {"a": 1}}).SerializeToString(deterministic=True)
              + ev_cls(c_leaf={"s": "z"}, m_string={"k": {"s": "2"}, "j": {}}).SerializeToString(deterministic=True))
    # one mutation (byte 1 >= 0x80: fuzz_protobuf.c): the root step's absent word (4 of 6 bytes: steps)
    mutate = bytes([1, 0, 3, 0, 0, 1])
    seeds = {
        "all": bytes([0, 0]) + m.SerializeToString(deterministic=True),
        "all_split": bytes([0, 1]) + AllMsg(s_int32=1).SerializeToString(deterministic=True)
        + AllMsg(s_string="ab").SerializeToString(deterministic=True),
        "two": bytes([1, 0]) + TwoMsg(req=1, level=5, levels=[2, 5], packed_levels=[5, 2], p_string="x",
                                      q_sint32=[-1, 2], by_name={"a": 6}).SerializePartialToString(deterministic=True),
        "unknown": bytes([0, 0]) + b"\xf8\xf0\x04\x01\x5b\x08\x01\x5c\xf2\xff\x01\x01z",
        "ev": bytes([2, 0]) + e.SerializeToString(deterministic=True),
        "ev_merged": bytes([2, 0]) + merged,
        "ev_split": bytes([2, 3]) + b"".join(ev_cls(s_int64=i, leaf={"a": i}).SerializeToString(deterministic=True)
                                             for i in range(4)),
        "small": bytes([3, 0]) + s.SerializeToString(deterministic=True),
        "small_two": bytes([3, 1]) + s.SerializeToString(deterministic=True)
        + small_cls(b=True).SerializeToString(deterministic=True),
        "old": bytes([4, 0]) + o.SerializeToString(deterministic=True),
        "ev_mutated": bytes([2, 0x80]) + mutate + e.SerializeToString(deterministic=True),
        "small_mutated": bytes([3, 0x80]) + bytes([0, 2, 0, 0, 1, 0]) + s.SerializeToString(deterministic=True),
    }
    out = os.path.join(HERE, "corpus", "protobuf")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name + "-" + hashlib.sha1(data).hexdigest()[:12]), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
