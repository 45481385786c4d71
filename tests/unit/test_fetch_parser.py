"""The compiled Fetch response parser (csrc/fkc_fetch.c via fastkc._core.fetch).

Three sources of expected values, so a misreading of the spec cannot hide in
one of them:
  - hand-built vectors: bytes assembled field by field below, following
    Kafka's FetchResponse.json layout for each version;
  - kafka-python 3's protocol classes (an independent, JSON-driven encoder);
  - fastkc's own generic protocol codec (fastkc/protocol, the oracle the
    brief names), encoding hypothesis-generated responses and decoding them
    for comparison.
Plus robustness: every prefix, random byte flips, hostile counts/lengths.
"""
import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc._core.fetch import SUPPORTED_VERSIONS, parse_fetch_response
from fastkc.errors import ProtocolParseError
from fastkc.structs import FetchPartitionResponse, FetchResponse, FetchTopicResponse
from tests.support import property_settings

# kafka-python's JSON schema loader uses a deprecated importlib API
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")


# --------------------------------------------------------------------------
# a field-by-field writer for hand-built vectors
# --------------------------------------------------------------------------
def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tags(*fields):
    """A tagged-field section: (tag, data) pairs, written in the given order."""
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(d)) + d for t, d in fields)


NO_TAGS = tags()


class Enc:
    """Primitive forms of one version: classic (v4-11) or flexible (v12+)."""

    def __init__(self, version):
        self.version = version
        self.flexible = version >= 12

    def string(self, s):
        if s is None:
            return uvarint(0) if self.flexible else i16(-1)
        raw = s.encode() if isinstance(s, str) else s
        return (uvarint(len(raw) + 1) if self.flexible else i16(len(raw))) + raw

    def bytes_(self, b):
        if b is None:
            return uvarint(0) if self.flexible else i32(-1)
        return (uvarint(len(b) + 1) if self.flexible else i32(len(b))) + b

    def array(self, items):
        if items is None:
            return uvarint(0) if self.flexible else i32(-1)
        return (uvarint(len(items) + 1) if self.flexible else i32(len(items))) + b"".join(items)

    def struct_tags(self, *fields):
        return tags(*fields) if self.flexible else b""


def build_partition(
    e,
    index=0,
    error=0,
    hw=100,
    lso=90,
    log_start=5,
    aborted=None,
    replica=-1,
    records=b"",
    ptags=(),
    aborted_tags=(),
):
    out = i32(index) + i16(error) + i64(hw) + i64(lso)
    if e.version >= 5:
        out += i64(log_start)
    out += e.array(
        None
        if aborted is None
        else [i64(pid) + i64(first) + e.struct_tags(*aborted_tags) for pid, first in aborted]
    )
    if e.version >= 11:
        out += i32(replica)
    out += e.bytes_(records)
    return out + e.struct_tags(*ptags)


def build_topic(e, name_or_id, partitions, ttags=()):
    head = name_or_id if e.version >= 13 else e.string(name_or_id)
    return head + e.array(partitions) + e.struct_tags(*ttags)


def build_response(e, topics, correlation_id=42, throttle=7, error=0, session=0, header_tags=(), top_tags=()):
    out = i32(correlation_id)
    if e.flexible:
        out += tags(*header_tags)
    out += i32(throttle)
    if e.version >= 7:
        out += i16(error) + i32(session)
    out += e.array(topics)
    return out + e.struct_tags(*top_tags)


def exact(data):
    """A copy of `data` in a buffer that ends exactly where the data ends.

    A bytes object keeps a NUL after its last byte (and a bytearray spare
    capacity), so a one-byte over-read of either stays inside the allocation
    and AddressSanitizer (`make asan`) could not see it. A ctypes array of
    more than 16 bytes is a heap block of exactly its length (with
    PYTHONMALLOC=malloc, as `make asan` sets, an ASan-guarded malloc block).
    """
    import ctypes

    return (ctypes.c_ubyte * len(data)).from_buffer_copy(data)


def plain(resp):
    """The parsed response with records turned into bytes, for comparisons."""
    topics = []
    for t in resp.topics:
        parts = [p._replace(records=None if p.records is None else bytes(p.records)) for p in t.partitions]
        topics.append(t._replace(partitions=parts))
    return resp._replace(topics=topics)


def expect_error(buf, version):
    with pytest.raises(ProtocolParseError) as info:
        parse_fetch_response(buf, version)
    err = info.value
    assert err.api == "Fetch" and err.version == version
    assert 0 <= err.position <= len(buf)
    return err


TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0").bytes


# --------------------------------------------------------------------------
# hand-built vectors, version by version
# --------------------------------------------------------------------------
def test_v4_two_partitions_aborted_null_and_set():
    e = Enc(4)
    buf = build_response(
        e,
        [
            build_topic(
                e,
                "orders",
                [
                    build_partition(e, index=0, hw=100, lso=90, aborted=None, records=b"batch-bytes"),
                    build_partition(e, index=3, error=1, hw=7, lso=-1, aborted=[(11, 2), (12, 5)], records=None),
                ],
            )
        ],
        correlation_id=42,
        throttle=7,
    )
    resp = parse_fetch_response(buf, 4)
    assert plain(resp) == FetchResponse(
        correlation_id=42,
        throttle_time_ms=7,
        error_code=0,
        session_id=0,
        topics=[
            FetchTopicResponse(
                topic="orders",
                topic_id=None,
                partitions=[
                    FetchPartitionResponse(0, 0, 100, 90, -1, None, None, None, None, -1, b"batch-bytes"),
                    FetchPartitionResponse(3, 1, 7, -1, -1, None, None, None, [(11, 2), (12, 5)], -1, None),
                ],
            )
        ],
        node_endpoints=[],
    )


def test_v7_session_and_top_level_error():
    e = Enc(7)
    buf = build_response(
        e,
        [build_topic(e, "t", [build_partition(e, log_start=3, aborted=[], records=b"")])],
        error=-1 & 0x7FFF,
        session=123456,
    )
    resp = parse_fetch_response(buf, 7)
    assert (resp.error_code, resp.session_id) == (0x7FFF, 123456)
    p = resp.topics[0].partitions[0]
    assert p.log_start_offset == 3
    assert p.aborted_transactions == []  # empty, not null
    assert p.records is not None and bytes(p.records) == b""  # empty, not null


def test_v11_preferred_read_replica():
    e = Enc(11)
    buf = build_response(e, [build_topic(e, "t", [build_partition(e, replica=2, records=b"x")])])
    p = parse_fetch_response(buf, 11).topics[0].partitions[0]
    assert p.preferred_read_replica == 2
    assert bytes(p.records) == b"x"


def test_v12_flexible_with_partition_tags_and_unknown_tags_everywhere():
    e = Enc(12)
    diverging = i32(4) + i64(400) + NO_TAGS
    leader = i32(2) + i32(9) + NO_TAGS
    snapshot = i64(77) + i32(3) + NO_TAGS
    part = build_partition(
        e,
        index=1,
        aborted=[(5, 10)],
        aborted_tags=[(33, b"zz")],
        records=b"rec",
        ptags=[(0, diverging), (1, leader), (2, snapshot), (9, b"future")],
    )
    buf = build_response(
        e,
        [build_topic(e, "flex", [part], ttags=[(5, b"\x01\x02")])],
        header_tags=[(0, b"hdr"), (7, b"")],
        # top-level tag 0 is NodeEndpoints only from v16: in v12 it is unknown
        top_tags=[(0, b"\x99\x99"), (3, b"q")],
    )
    resp = parse_fetch_response(buf, 12)
    assert resp.correlation_id == 42 and resp.node_endpoints == []
    t = resp.topics[0]
    assert t.topic == "flex" and t.topic_id is None
    p = t.partitions[0]
    assert p.diverging_epoch == (4, 400)
    assert p.current_leader == (2, 9)
    assert p.snapshot_id == (77, 3)
    assert p.aborted_transactions == [(5, 10)]
    assert bytes(p.records) == b"rec"


def test_v12_absent_tags_are_none_and_nested_struct_tags_are_skipped():
    e = Enc(12)
    # a nested struct carrying its own unknown tag: size covers it
    leader = i32(2) + i32(9) + tags((4, b"abc"))
    buf = build_response(e, [build_topic(e, "t", [build_partition(e, ptags=[(1, leader)])])])
    p = parse_fetch_response(buf, 12).topics[0].partitions[0]
    assert p.diverging_epoch is None and p.snapshot_id is None
    assert p.current_leader == (2, 9)


def test_v13_topic_ids_replace_names():
    e = Enc(13)
    buf = build_response(e, [build_topic(e, TOPIC_ID, [build_partition(e, records=None)])])
    t = parse_fetch_response(buf, 13).topics[0]
    assert t.topic is None and t.topic_id == TOPIC_ID
    assert t.partitions[0].records is None


@pytest.mark.parametrize("version", [16, 17, 18])
def test_v16_to_v18_node_endpoints(version):
    e = Enc(version)
    node = lambda nid, host, port, rack: i32(nid) + e.string(host) + i32(port) + e.string(rack) + NO_TAGS  # noqa: E731
    endpoints = e.array([node(1, "b1.example", 9092, "rack-a"), node(2, "b2", 19092, None)])
    buf = build_response(
        e,
        [build_topic(e, TOPIC_ID, [build_partition(e, error=6, ptags=[(1, i32(2) + i32(11) + NO_TAGS)])])],
        top_tags=[(0, endpoints)],
    )
    resp = parse_fetch_response(buf, version)
    assert resp.node_endpoints == [(1, "b1.example", 9092, "rack-a"), (2, "b2", 19092, None)]
    assert resp.topics[0].partitions[0].current_leader == (2, 11)


def test_many_topics_and_empty_topic_list():
    for version in (4, 12, 13):
        e = Enc(version)
        name = (lambda i: uuid.UUID(int=i).bytes) if version >= 13 else (lambda i: "t%d" % i)
        topics = [build_topic(e, name(i), [build_partition(e, index=j) for j in range(i)]) for i in range(5)]
        resp = parse_fetch_response(build_response(e, topics), version)
        assert [len(t.partitions) for t in resp.topics] == [0, 1, 2, 3, 4]
        assert [p.partition for p in resp.topics[4].partitions] == [0, 1, 2, 3]
        assert parse_fetch_response(build_response(e, []), version).topics == []


# --------------------------------------------------------------------------
# records: zero copy
# --------------------------------------------------------------------------
def test_records_are_memoryviews_into_the_callers_buffer():
    e = Enc(11)
    payload = b"ABCDEFGH"
    buf = bytearray(build_response(e, [build_topic(e, "t", [build_partition(e, records=payload)])]))
    rec = parse_fetch_response(buf, 11).topics[0].partitions[0].records
    assert isinstance(rec, memoryview) and rec.obj is buf
    at = bytes(buf).index(payload)
    buf[at] = ord("Z")  # a change to the buffer shows through: same memory
    assert bytes(rec) == b"ZBCDEFGH"
    with pytest.raises(BufferError):
        buf.extend(b"x")  # the export pins the buffer while a slice lives
    rec.release()


def test_memoryview_input_with_offset_positions_are_relative_to_it():
    e = Enc(12)
    body = build_response(e, [build_topic(e, "t", [build_partition(e, records=b"xyz")])])
    backing = b"\xee" * 13 + body + b"\xee" * 5
    view = memoryview(backing)[13 : 13 + len(body)]
    rec = parse_fetch_response(view, 12).topics[0].partitions[0].records
    assert bytes(rec) == b"xyz" and rec.obj is backing
    err = expect_error(memoryview(backing)[13 : 13 + len(body) + 2], 12)
    assert err.position == len(body)  # trailing bytes start right after the body


def test_exporter_with_another_item_format_is_sliced_by_byte():
    import array

    e = Enc(4)
    body = build_response(e, [build_topic(e, "t", [build_partition(e, records=b"\x80\x01\xff")])])
    source = array.array("b", body)  # signed chars: format "b", not "B"
    rec = parse_fetch_response(source, 4).topics[0].partitions[0].records
    assert rec.format == "B" and bytes(rec) == b"\x80\x01\xff"


# --------------------------------------------------------------------------
# malformations
# --------------------------------------------------------------------------
def _valid_vectors():
    out = []
    for version in SUPPORTED_VERSIONS:
        e = Enc(version)
        name = TOPIC_ID if version >= 13 else "topic"
        ptags = [(1, i32(1) + i32(2) + NO_TAGS), (8, b"u")]
        parts = [
            build_partition(e, aborted=[(1, 2)], records=b"r" * 20, ptags=ptags),
            build_partition(e, index=1, aborted=None, records=None),
        ]
        top = []
        if version >= 16:
            top = [(0, e.array([i32(1) + e.string("h") + i32(1) + e.string(None) + NO_TAGS]))]
        out.append((version, build_response(e, [build_topic(e, name, parts)], top_tags=top, header_tags=[(2, b"h")])))
    return out


VALID = _valid_vectors()


@pytest.mark.parametrize("version,buf", VALID, ids=["v%d" % v for v, _ in VALID])
def test_every_strict_prefix_raises_the_typed_error(version, buf):
    parse_fetch_response(exact(buf), version)  # the whole vector is valid
    for cut in range(len(buf)):
        err = expect_error(exact(buf[:cut]), version)
        assert err.position <= cut


@pytest.mark.parametrize("version,buf", VALID, ids=["v%d" % v for v, _ in VALID])
def test_trailing_bytes_are_rejected_at_their_position(version, buf):
    err = expect_error(buf + b"\x00", version)
    assert err.position == len(buf)
    assert "trailing" in err.reason


def test_unsupported_versions():
    for version in (3, 19, -1):
        with pytest.raises(ValueError):
            parse_fetch_response(b"\x00" * 64, version)


def test_null_topic_name_is_rejected():
    buf = i32(1) + i32(0) + i32(1) + i16(-1) + i32(0)
    err = expect_error(buf, 4)
    assert err.position == 12 and "Topic" in err.reason


def test_negative_lengths_are_rejected():
    e = Enc(5)
    good = build_response(e, [build_topic(e, "t", [build_partition(e, records=b"abc")])])
    # records length -2: neither null nor a length
    at = good.rindex(i32(3) + b"abc")
    err = expect_error(good[:at] + i32(-2), 5)
    assert err.position == at and "negative" in err.reason
    # aborted transactions count -5
    at = good.rindex(i32(-1) + i32(3))  # null aborted array, then records length
    err = expect_error(good[:at] + i32(-5) + good[at + 4 :], 5)
    assert err.position == at


def test_length_past_the_end_names_the_length_prefix():
    e = Enc(4)
    good = build_response(e, [build_topic(e, "t", [build_partition(e, records=b"abc")])])
    at = len(good) - 7
    assert good[at:] == i32(3) + b"abc"
    err = expect_error(good[:at] + i32(4) + b"abc", 4)
    assert err.position == at


@pytest.mark.parametrize("version", [4, 12])
def test_hostile_counts_fail_fast_without_allocating(version):
    e = Enc(version)
    huge = uvarint(0xFFFFFFFF) if e.flexible else i32(0x7FFFFFFF)
    head = i32(1) + (NO_TAGS if e.flexible else b"") + i32(0)
    if version >= 7:
        head += i16(0) + i32(0)  # ErrorCode, SessionId
    err = expect_error(head + huge + b"\x00" * 32, version)
    assert err.position == len(head) and "count" in err.reason
    # the same for a partition's aborted transactions
    one = uvarint(2) if e.flexible else i32(1)
    before_count = head + one + e.string("t") + one + i32(0) + i16(0) + i64(0) + i64(0)
    if version >= 5:
        before_count += i64(0)  # LogStartOffset
    err = expect_error(before_count + huge + b"\x00" * 40, version)
    assert err.position == len(before_count)
    assert "AbortedTransactions" in err.reason


def test_over_long_varint_is_rejected():
    # header tagged-field count as a 6-byte varint: over-long
    buf = i32(1) + b"\x80\x80\x80\x80\x80\x00" + i32(0) + i16(0) + i32(0) + uvarint(1) + NO_TAGS
    err = expect_error(buf, 12)
    assert err.position == 4 and "over-long" in err.reason


def test_tag_order_is_free_but_a_known_tag_may_not_repeat():
    e = Enc(12)
    leader = i32(2) + i32(9) + NO_TAGS
    epoch = i32(4) + i64(400) + NO_TAGS
    # out of order, unknown tags repeated: accepted, as Java's reader does
    ptags = [(9, b"a"), (1, leader), (0, epoch), (9, b"b")]
    buf = build_response(e, [build_topic(e, "t", [build_partition(e, ptags=ptags)])], header_tags=[(3, b""), (1, b"")])
    p = parse_fetch_response(buf, 12).topics[0].partitions[0]
    assert (p.current_leader, p.diverging_epoch) == ((2, 9), (4, 400))
    # a known tag twice: which value would be meant?
    ptags = [(1, leader), (1, i32(3) + i32(3) + NO_TAGS)]
    buf = build_response(e, [build_topic(e, "t", [build_partition(e, ptags=ptags)])])
    err = expect_error(buf, 12)
    assert "twice" in err.reason
    assert buf[err.position : err.position + 2] == b"\x01\x09"  # the second tag 1, size 9


def test_known_tag_must_fill_its_declared_size():
    e = Enc(12)
    for leader in (i32(2) + i32(9) + NO_TAGS + b"\x00", i32(2) + i32(9)):  # one byte extra / nested tags missing
        buf = build_response(e, [build_topic(e, "t", [build_partition(e, ptags=[(1, leader)])])])
        expect_error(buf, 12)


def test_node_endpoint_host_cannot_be_null():
    e = Enc(16)
    endpoints = e.array([i32(1) + e.string(None) + i32(1) + e.string(None) + NO_TAGS])
    err = expect_error(build_response(e, [], top_tags=[(0, endpoints)]), 16)
    assert "Host" in err.reason


def test_invalid_utf8_topic_name_is_a_parse_error():
    e = Enc(4)
    buf = build_response(e, [build_topic(e, b"\xff\xfe", [])])
    err = expect_error(buf, 4)
    assert err.position == 4 + 4 + 4 + 2 and "UTF-8" in err.reason


@property_settings(fast_examples=300, slow_examples=20000)
@given(data=st.data())
def test_random_byte_flips_parse_or_raise_the_typed_error(data):
    version, buf = data.draw(st.sampled_from(VALID))
    mutated = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(buf) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    try:
        resp = parse_fetch_response(exact(mutated), version)
    except ProtocolParseError as err:
        assert 0 <= err.position <= len(mutated)
    else:
        assert isinstance(resp, FetchResponse)


# --------------------------------------------------------------------------
# differential: independent encoders
# --------------------------------------------------------------------------
int16s = st.integers(-(2**15), 2**15 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
pairs32_64 = st.tuples(int32s, int64s)


@st.composite
def fetch_bodies(draw, version):
    """A random Fetch response as fastkc.protocol's codec spells it."""

    def tagged_pair(first, second, s1, s2):
        # Kafka omits a tagged struct equal to its default (-1, -1)
        v = draw(st.none() | st.tuples(s1, s2).filter(lambda t: t != (-1, -1)))
        return None if v is None else {first: v[0], second: v[1]}

    topics = []
    for _ in range(draw(st.integers(0, 3))):
        parts = []
        for _ in range(draw(st.integers(0, 3))):
            p = {
                "partition_index": draw(int32s),
                "error_code": draw(int16s),
                "high_watermark": draw(int64s),
                "last_stable_offset": draw(int64s),
                "aborted_transactions": draw(
                    st.none()
                    | st.lists(st.fixed_dictionaries({"producer_id": int64s, "first_offset": int64s}), max_size=3)
                ),
                "records": draw(st.none() | st.binary(max_size=40)),
            }
            if version >= 5:
                p["log_start_offset"] = draw(int64s)
            if version >= 11:
                p["preferred_read_replica"] = draw(int32s)
            if version >= 12:
                for key, value in (
                    ("diverging_epoch", tagged_pair("epoch", "end_offset", int32s, int64s)),
                    ("current_leader", tagged_pair("leader_id", "leader_epoch", int32s, int32s)),
                    ("snapshot_id", tagged_pair("end_offset", "epoch", int64s, int32s)),
                ):
                    if value is not None:
                        p[key] = value
            parts.append(p)
        t = {"partitions": parts}
        if version >= 13:
            t["topic_id"] = draw(st.binary(min_size=16, max_size=16))
        else:
            t["topic"] = draw(names)
        topics.append(t)
    body = {"throttle_time_ms": draw(int32s), "responses": topics}
    if version >= 7:
        body["error_code"] = draw(int16s)
        body["session_id"] = draw(int32s)
    if version >= 16:
        body["node_endpoints"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"node_id": int32s, "host": names, "port": int32s, "rack": st.none() | names}
                ),
                max_size=3,
            )
        )
    return body


@property_settings(fast_examples=200, slow_examples=5000)
@given(data=st.data())
def test_differential_against_the_protocol_codec(data):
    from fastkc.protocol import codec

    version = data.draw(st.sampled_from(list(SUPPORTED_VERSIONS)))
    body = data.draw(fetch_bodies(version))
    correlation_id = data.draw(int32s)
    buf = codec.encode_response("Fetch", version, body, correlation_id=correlation_id)
    expected = codec.to_fetch_response(*codec.decode_response("Fetch", version, buf), version)
    got = parse_fetch_response(buf, version)
    assert plain(got) == expected
    # the structure survived the round trip at all (not two empty results)
    assert [len(t.partitions) for t in got.topics] == [len(t["partitions"]) for t in body["responses"]]


@property_settings(fast_examples=100, slow_examples=3000)
@given(data=st.data())
def test_differential_against_kafka_python_encoder(data):
    from kafka.protocol.consumer.fetch import FetchResponse as KP

    T = KP.FetchableTopicResponse
    P = T.PartitionData
    version = data.draw(st.sampled_from(list(SUPPORTED_VERSIONS)))
    body = data.draw(fetch_bodies(version))
    correlation_id = data.draw(int32s)

    def kp_partition(p):
        kw = {k: v for k, v in p.items()
              if k not in ("aborted_transactions", "diverging_epoch", "current_leader", "snapshot_id")}
        aborted = p["aborted_transactions"]
        kw["aborted_transactions"] = None if aborted is None else [P.AbortedTransaction(**a) for a in aborted]
        if "diverging_epoch" in p:
            kw["diverging_epoch"] = P.EpochEndOffset(**p["diverging_epoch"])
        if "current_leader" in p:
            kw["current_leader"] = P.LeaderIdAndEpoch(**p["current_leader"])
        if "snapshot_id" in p:
            kw["snapshot_id"] = P.SnapshotId(**p["snapshot_id"])
        return P(**kw)

    topics = []
    for t in body["responses"]:
        parts = [kp_partition(p) for p in t["partitions"]]
        if version >= 13:
            topics.append(T(topic_id=uuid.UUID(bytes=t["topic_id"]), partitions=parts))
        else:
            topics.append(T(topic=t["topic"], partitions=parts))
    top = {k: v for k, v in body.items() if k in ("throttle_time_ms", "error_code", "session_id")}
    if version >= 16:
        top["node_endpoints"] = [KP.NodeEndpoint(**n) for n in body["node_endpoints"]]
    msg = KP[version](responses=topics, **top)
    msg.with_header(correlation_id=correlation_id)
    buf = bytes(msg.encode(header=True))

    got = parse_fetch_response(buf, version)
    assert got.correlation_id == correlation_id
    assert got.throttle_time_ms == body["throttle_time_ms"]
    assert got.error_code == body.get("error_code", 0)
    assert got.session_id == body.get("session_id", 0)
    assert got.node_endpoints == [(n["node_id"], n["host"], n["port"], n["rack"])
                                  for n in body.get("node_endpoints", [])]
    assert len(got.topics) == len(body["responses"])
    for gt, bt in zip(got.topics, body["responses"]):
        if version >= 13:
            assert (gt.topic, gt.topic_id) == (None, bt["topic_id"])
        else:
            assert (gt.topic, gt.topic_id) == (bt["topic"], None)
        assert len(gt.partitions) == len(bt["partitions"])
        for gp, bp in zip(gt.partitions, bt["partitions"]):
            aborted = bp["aborted_transactions"]
            assert gp == FetchPartitionResponse(
                partition=bp["partition_index"],
                error_code=bp["error_code"],
                high_watermark=bp["high_watermark"],
                last_stable_offset=bp["last_stable_offset"],
                log_start_offset=bp.get("log_start_offset", -1),
                diverging_epoch=tuple(bp["diverging_epoch"].values()) if "diverging_epoch" in bp else None,
                current_leader=tuple(bp["current_leader"].values()) if "current_leader" in bp else None,
                snapshot_id=tuple(bp["snapshot_id"].values()) if "snapshot_id" in bp else None,
                aborted_transactions=(None if aborted is None
                                      else [(a["producer_id"], a["first_offset"]) for a in aborted]),
                preferred_read_replica=bp.get("preferred_read_replica", -1),
                records=gp.records,
            )
            assert (None if gp.records is None else bytes(gp.records)) == bp["records"]
