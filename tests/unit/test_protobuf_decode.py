"""The Protobuf decoder against the runtime (upb): payloads the runtime
serializes decode to MessageToDict's keys and nesting with native values,
the compiled decoder and its twin agree, and hand-made wire forms the
runtime accepts (last-wins, merges, packed and unpacked, unknown fields,
non-minimal varints) decode as the runtime parses them."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkc.schema_registry import protobuf_schema
from fastkc.schema_registry.protobuf_errors import ProtobufSchemaError
from tests.support.protobuf import (
    ALL,
    TWO,
    AllMsg,
    Pair,
    TwoMsg,
    assert_same,
    assert_shape,
    expected,
    fill_ops,
    message_to_dict,
    replay,
)
from tests.support.sanitizers import examples

P3 = Pair(ALL)
P2 = Pair(TWO)
_SETTINGS = settings(max_examples=examples(300, 60), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.data_too_large])


def _check(pair, cls, payloads):
    try:
        want = [expected(cls.FromString(p)) for p in payloads]
    except ValueError:
        # a merge made a well-known value the runtime cannot render (a
        # Duration whose seconds and nanos differ in sign): a typed error
        assert pair.error(payloads)[2:] in {(n, "value out of range") for n in protobuf_schema.WELL_KNOWN}
        return None
    got = pair.both(payloads)
    assert_same(got, want)
    for g, p in zip(got, payloads):
        msg = cls.FromString(p)
        assert_same(g, expected(msg))
        try:
            js = message_to_dict(msg)
        except TypeError:  # MessageToDict refuses an Any of an unknown type (the test's Anys are)
            continue
        assert_shape(g, js)
    return got


@_SETTINGS
@given(st.lists(fill_ops(ALL), min_size=1, max_size=3))
def test_proto3_messages_decode_as_the_runtime_parses_them(ops_list):
    payloads = [replay(AllMsg(), ops).SerializeToString() for ops in ops_list]
    _check(P3, AllMsg, payloads)


@_SETTINGS
@given(st.lists(fill_ops(TWO), min_size=1, max_size=3))
def test_proto2_messages_decode_as_the_runtime_parses_them(ops_list):
    payloads = [replay(TwoMsg(), ops).SerializePartialToString() for ops in ops_list]  # req may be missing
    _check(P2, TwoMsg, payloads)


@_SETTINGS
@given(st.lists(fill_ops(ALL), min_size=2, max_size=4))
def test_concatenated_payloads_merge_as_the_runtime_merges(ops_list):
    # parsing A + B is merging B into A: last-wins, repeated concatenated,
    # singular sub-messages merged, oneofs replaced
    payload = b"".join(replay(AllMsg(), ops).SerializeToString() for ops in ops_list)
    _check(P3, AllMsg, [payload])


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(num, wt):
    return _varint(num << 3 | wt)


def _ld(num, body):
    return _tag(num, 2) + _varint(len(body)) + body


S_INT32 = ALL.fields_by_name["s_int32"].number
R_INT32 = ALL.fields_by_name["r_int32"].number
S_STRING = ALL.fields_by_name["s_string"].number
CHILD = ALL.fields_by_name["child"].number
C_INT, C_STR, C_MSG = 110, 111, 112
M_INT32, M_BOOL, M_STRING = (ALL.fields_by_name[n].number for n in ("m_int32", "m_bool", "m_string"))


@pytest.mark.parametrize("payload", [
    _tag(S_INT32, 0) + b"\x05" + _tag(S_INT32, 0) + b"\x07",                        # last wins
    _tag(S_INT32, 0) + b"\x05" + _tag(S_INT32, 0) + b"\x00",                        # last is the default: absent
    _tag(S_INT32, 0) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",                 # -1 as 10 bytes
    _tag(S_INT32, 0) + b"\x85\x80\x80\x80\x80\x80\x80\x80\x80\x00",                 # non-minimal 5
    _tag(S_INT32, 0) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f",                 # bits past 64 dropped
    _tag(S_INT32, 0) + b"\x80\x80\x80\x80\x10",                                     # 2^32: low 32 bits are 0
    _ld(CHILD, _tag(S_INT32, 0) + b"\x01" + _tag(R_INT32, 0) + b"\x02")
    + _ld(CHILD, _tag(S_STRING, 2) + b"\x01x" + _tag(R_INT32, 0) + b"\x03"),       # sub-message merge
    _ld(CHILD, _ld(CHILD, _tag(S_INT32, 0) + b"\x01")) + _ld(CHILD, _ld(CHILD, _tag(R_INT32, 0) + b"\x09")),
    _ld(CHILD, _tag(S_INT32, 0) + b"\x01") + _ld(CHILD, _tag(S_INT32, 0) + b"\x00"),  # merged to default
    _tag(R_INT32, 0) + b"\x01" + _ld(R_INT32, b"\x02\x03") + _tag(R_INT32, 0) + b"\x04",  # packed + unpacked
    _ld(R_INT32, b""),                                                              # an empty packed run
    _tag(C_INT, 0) + b"\x05" + _ld(C_STR, b"a") + _tag(C_INT, 0) + b"\x00",         # oneof: last member wins
    _ld(C_MSG, _tag(S_INT32, 0) + b"\x01") + _tag(C_INT, 0) + b"\x02"
    + _ld(C_MSG, _tag(R_INT32, 0) + b"\x03"),                                       # a oneof message restarts
    _ld(C_MSG, _tag(S_INT32, 0) + b"\x01") + _ld(C_MSG, _tag(R_INT32, 0) + b"\x03"),  # or merges
    _ld(C_MSG, b"") + _ld(C_MSG, b"") + _tag(C_INT, 0) + b"\x00",                   # merged, then replaced
    _tag(9999, 0) + b"\x01" + _tag(9998, 1) + b"12345678" + _tag(9997, 5) + b"1234"
    + _ld(9996, b"xyz") + _tag(9995, 3) + _tag(1, 0) + b"\x01" + _tag(7, 3) + _tag(7, 4)
    + _tag(9995, 4) + _tag(S_INT32, 0) + b"\x01",                                  # unknown fields, groups
    _tag(S_INT32, 2) + b"\x01x" + _tag(S_INT32, 5) + b"abcd" + _tag(S_STRING, 0) + b"\x05"
    + _tag(CHILD, 0) + b"\x01" + _tag(CHILD, 3) + _tag(CHILD, 4),                   # known fields, wrong wire type
    _tag(S_INT32, 0) + b"\x01" + _tag(S_INT32, 1) + b"12345678",
    _tag(100000, 0) + b"\x09",                                                      # a number past the dense table
    _ld(M_STRING, _ld(1, b"a") + _ld(1, b"b") + _ld(2, _tag(S_INT32, 0) + b"\x01"))
    + _ld(M_STRING, b""),                                                         # key last-wins; an empty entry
    _ld(M_STRING, _ld(2, b"")) + _ld(M_STRING, _ld(1, b"") + _ld(2, _tag(S_INT32, 0) + b"\x02")),  # later wins
    _ld(M_INT32, _tag(1, 0) + b"\x01") + _ld(M_INT32, _tag(2, 0) + b"\x07"),      # missing value, missing key
    _ld(M_INT32, _tag(1, 0) + b"\x01" + _tag(2, 0) + b"\x63"),                     # open enum value kept as int
    _ld(M_BOOL, _ld(2, b"v")) + _ld(M_BOOL, _tag(1, 0) + b"\x01" + _ld(2, b"w")),   # bool keys
    _ld(M_BOOL, _tag(1, 0) + b"\x02" + _ld(2, b"x")),                              # bool key 2 is True
    _ld(M_STRING, _ld(1, b"k") + _tag(3, 0) + b"\x01") + _ld(M_STRING, _ld(1, b"j") + _tag(1, 0) + b"\x01")
    + _ld(M_STRING, _ld(1, b"i") + _ld(2, _tag(9, 0) + b"\x01")),                  # entries with unknowns dropped
])
def test_wire_edge_cases_decode_as_the_runtime_parses_them(payload):
    _check(P3, AllMsg, [payload])


#: payload bytes past which the reader's bound (2 tape words a byte, plus a
#: frame head) passes FKC_PB_RESERVE_WORDS (64 Ki words): such a payload is
#: read checked, the tape made room for field by field
RESERVED_BYTES = (1 << 15) - 2


@settings(max_examples=examples(25, 8), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.data_too_large])
@given(st.lists(fill_ops(ALL), min_size=1, max_size=3))
def test_payloads_past_the_reservation_decode_as_the_runtime_parses_them(ops_list):
    # the runtime merges the copies: repeated fields grow, maps and singular values take the last
    one = b"".join(replay(AllMsg(), ops).SerializeToString() for ops in ops_list) or b"\x68\x01"
    payload = one * (RESERVED_BYTES // len(one) + 1)
    assert len(payload) > RESERVED_BYTES
    _check(P3, AllMsg, [one, payload, one])


def test_map_keys_are_native_and_message_values_default_to_empty():
    key_field = ALL.fields_by_name["m_string"].number
    got = _check(P3, AllMsg, [_ld(key_field, _ld(1, b"k")) + _ld(key_field, b"")])
    assert got == [{"m_string": {"k": {}, "": {}}}]


P2_LEVEL, P2_LEVELS, P2_PACKED = 51, 52, 53


@pytest.mark.parametrize("payload", [
    _tag(P2_LEVEL, 0) + b"\x05" + _tag(P2_LEVEL, 0) + b"\x03",                      # unknown closed: dropped
    _tag(P2_LEVEL, 0) + b"\x03",
    _tag(P2_LEVELS, 0) + b"\x02" + _tag(P2_LEVELS, 0) + b"\x04" + _ld(P2_LEVELS, b"\x05\x09\x02"),
    _ld(P2_PACKED, b"\x05\x00\x02") + _tag(P2_PACKED, 0) + b"\x05",
    _ld(55, _ld(1, b"a") + _tag(2, 0) + b"\x05") + _ld(55, _ld(1, b"b") + _tag(2, 0) + b"\x06")
    + _ld(55, _ld(1, b"c")) + _ld(55, _ld(1, b"d") + _tag(2, 0) + b"\x01"),  # closed map value: entry dropped
    _ld(54, _tag(P2_LEVEL, 0) + b"\x06") + _tag(1, 1) + b"\x00" * 8,                # a sub-message's drop stays there
    b"",                                                                            # a missing required field
    _tag(1, 1) + b"\x00\x00\x00\x00\x00\x00\x00\x00" + _tag(2, 5) + b"\x00\x00\x00\x00",  # wrong wire types
])
def test_proto2_wire_cases(payload):
    _check(P2, TwoMsg, [payload])


def test_implicit_zero_is_absent_and_explicit_zero_present():
    got = P3.both([AllMsg(s_int32=0, o_int32=0, s_float=-0.0, o_string="").SerializeToString()])
    assert got == [{"o_int32": 0, "s_float": -0.0, "o_string": ""}]


def test_native_values():
    msg = AllMsg(s_uint64=(1 << 64) - 1, s_bytes=b"\x00\xff", s_float=0.1, color=7, colors=[0, 42])
    msg.w_i64.value = -5
    msg.w_by.value = b"z"
    msg.ts.seconds = 1
    got = P3.both([msg.SerializeToString()])[0]
    assert got["s_uint64"] == (1 << 64) - 1 and got["s_bytes"] == b"\x00\xff"
    assert got["s_float"] == msg.s_float != 0.1  # float32 widened, as the attribute gives it
    assert got["color"] == "BLUE" and got["colors"] == ["RED", 42]
    assert got["w_i64"] == -5 and got["w_by"] == b"z" and got["ts"] == "1970-01-01T00:00:01Z"


def test_decode_prefixed_reads_the_run_past_its_prefix():
    a, b = AllMsg(s_int32=1).SerializeToString(), AllMsg(s_string="x").SerializeToString()
    values = [b"junk", b"\x00\x00\x00\x00\x07" + a, b"\x00\x00\x00\x00\x07" + b, b"\x00\x00\x00\x00\x08" + a, None]
    assert P3.c.decode_prefixed(values, 1, b"\x00\x00\x00\x00\x07") == [{"s_int32": 1}, {"s_string": "x"}]
    assert P3.c.decode_prefixed(values, 0, b"\x00\x00\x00\x00\x07") == []
    assert P3.c.decode_prefixed(values, 4, b"\x00\x00\x00\x00\x07") == []


def test_a_message_types_prefixed_run_is_cut_alike_in_c_and_in_the_twin():
    # the loop MessageTypeCodec.decode_prefixed runs, the runtime parsing each value
    from google.protobuf.message import DecodeError

    from fastkc._core._protobuf import parse_prefixed as compiled
    from fastkc._twin.protobuf import parse_prefixed as twin

    frame, other = b"\x00\x00\x00\x00\x07", b"\x00\x00\x00\x00\x08"
    good = [frame + AllMsg(s_int64=i).SerializeToString() for i in range(4)]
    stops = {"None": None, "another id": other + good[0][5:], "short": frame[:3],
             "a memoryview": memoryview(good[0]), "a bytearray": bytearray(good[0])}
    for why, stop in stops.items():
        values = [b"skipped"] + good[:2] + [stop] + good[2:]
        for start, want in ((1, [0, 1]), (3, []), (4, [2, 3]), (len(values), [])):
            for parse_prefixed in (compiled, twin):
                out = []
                parse_prefixed(AllMsg.FromString, values, start, frame, out)
                assert [m.s_int64 for m in out] == want, (why, start)
    bad = good[:2] + [frame + b"\x08\x81"] + good[2:]  # a varint cut short
    for parse_prefixed in (compiled, twin):
        out = []
        with pytest.raises(DecodeError):
            parse_prefixed(AllMsg.FromString, bad, 0, frame, out)
        assert len(out) == 2  # the value that raised is bad[0 + len(out)]
    # the compiled loop pauses the cyclic collector: back as it was, raised or not
    import gc
    seen = []

    def parse(b):
        seen.append(gc.isenabled())
        return AllMsg.FromString(b)

    for values in (good, bad):
        for was_on in (True, False):
            (gc.enable if was_on else gc.disable)()
            try:
                compiled(parse, values, 0, frame, [])
            except DecodeError:
                assert values is bad
            finally:
                assert gc.isenabled() == was_on
                gc.enable()
    assert seen and not any(seen)  # paused while the runtime made each message
    for parse_prefixed in (compiled, twin):
        for start in (-1, len(bad) + 1):
            with pytest.raises(IndexError):
                parse_prefixed(AllMsg.FromString, bad, start, frame, [])


def test_many_payloads_cross_chunks():
    payloads = [AllMsg(s_int64=i, s_string=str(i)).SerializeToString() for i in range(1500)]
    got = P3.both(payloads)
    assert [g.get("s_int64", 0) for g in got] == list(range(1500))
    assert P3.c.decode_many([bytearray(payloads[3]), memoryview(payloads[4])]) == got[3:5]


def test_groups_and_oversized_programs_are_refused():
    from google.protobuf import descriptor_pb2, descriptor_pool

    fdp = descriptor_pb2.FileDescriptorProto(name="g.proto", package="g", syntax="proto2")
    m = fdp.message_type.add(name="G")
    m.nested_type.add(name="Inner")
    m.field.add(name="inner", number=1, type=10, label=1, type_name=".g.G.Inner")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    with pytest.raises(ProtobufSchemaError, match="group"):
        protobuf_schema.compile_program(pool.FindMessageTypeByName("g.G"))
    old = protobuf_schema.MAX_CODE
    protobuf_schema.MAX_CODE = 100
    try:
        with pytest.raises(ProtobufSchemaError, match="program of more than"):
            protobuf_schema.compile_program(ALL)
    finally:
        protobuf_schema.MAX_CODE = old


def test_a_bad_program_is_refused():
    from fastkc._core._protobuf import ProtobufDecoder

    prog = P3.program
    for i in range(len(prog.code)):
        bad = list(prog.code)
        bad[i] = bad[i] + 1000003
        try:
            dec = ProtobufDecoder(bad, prog.messages)
        except ValueError:
            continue
        # a program the check admits must still decode safely (never crash)
        try:
            dec.decode_many([AllMsg(s_int32=1, child=AllMsg(s_string="x")).SerializeToString()])
        except Exception:  # noqa: BLE001 - any typed outcome is fine; a crash is not
            pass
    with pytest.raises(ValueError):
        ProtobufDecoder([1, 2, 3], prog.messages)
