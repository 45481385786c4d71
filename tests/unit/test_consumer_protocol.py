"""The consumer protocol encodings (fastkc/protocol/consumer_protocol.py).

- The declarations equal Kafka's published ConsumerProtocolSubscription /
  ConsumerProtocolAssignment JSON (kafka-clients 4.3.1 exactly, 3.9.2 on every
  version), through the machinery of test_protocol_specs.py.
- The bytes equal kafka-python 3's for the same values, in every version, and
  kafka-python's bytes decode to the same values.
- Reading follows the Java client: newer versions read by their v3 prefix,
  trailing bytes ignored, negative versions and short input refused.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KafkaPythonAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KafkaPythonSubscription

from fastkc.errors import IllegalArgumentError, ProtocolParseError
from fastkc.protocol import consumer_protocol as cp
from fastkc.protocol.consumer_protocol import (
    ASSIGNMENT_MESSAGE,
    SUBSCRIPTION_MESSAGE,
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from fastkc.protocol.schema import in_range, parse_versions
from fastkc.structs import TopicPartition
from tests.support import property_settings
from tests.support.kafka_specs import NEWEST, OLDEST_LINE, compare_exact, load_specs, mine_layout, spec_layout


# --------------------------------------------------------------------------
# declarations against Kafka's published specs
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def newest_specs():
    return load_specs(NEWEST)


@pytest.fixture(scope="module")
def oldest_line_specs():
    return load_specs(OLDEST_LINE)


@pytest.mark.parametrize("message", cp.DATA_MESSAGES, ids=lambda m: m.name)
def test_declaration_matches_the_newest_spec_exactly(message, newest_specs):
    spec = newest_specs[message.name]
    assert spec["type"] == "data"
    assert parse_versions(spec["validVersions"]) == message.versions
    assert parse_versions(spec["flexibleVersions"]) == message.flexible
    problems = []
    compare_exact(spec["fields"], message.struct, spec, message.name, problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("message", cp.DATA_MESSAGES, ids=lambda m: m.name)
def test_declaration_matches_the_3_9_spec_on_every_version(message, oldest_line_specs):
    spec = oldest_line_specs[message.name]
    lo, hi = parse_versions(spec["validVersions"])
    assert (lo, hi) == message.versions
    flexible = parse_versions(spec["flexibleVersions"])
    for version in range(lo, hi + 1):
        assert not in_range(version, flexible)
        assert mine_layout(message.struct, version) == spec_layout(spec["fields"], spec, version), version


# --------------------------------------------------------------------------
# byte-for-byte against kafka-python
# --------------------------------------------------------------------------
_TOPIC = st.text(alphabet="abcxyz._-é", min_size=1, max_size=6)
# at least one partition per topic: fastkc, like the Java client, writes the
# groups from a flat partition list, so a topic with no partitions never
# appears (kafka-python would write what it is handed; see the test below)
_PARTITIONS = st.lists(st.integers(min_value=0, max_value=2**31 - 1), min_size=1, max_size=4, unique=True)
_USER_DATA = st.one_of(st.none(), st.binary(max_size=12))


@st.composite
def subscriptions(draw):
    topics = sorted(draw(st.sets(_TOPIC, max_size=4)))
    owned = draw(st.dictionaries(_TOPIC, _PARTITIONS.map(sorted), max_size=3))
    owned = [TopicPartitions(t, owned[t]) for t in sorted(owned)]
    return dict(
        version=draw(st.integers(min_value=0, max_value=3)),
        topics=topics,
        user_data=draw(_USER_DATA),
        owned=owned,
        generation_id=draw(st.integers(min_value=-1, max_value=2**31 - 1)),
        rack_id=draw(st.one_of(st.none(), _TOPIC)),
    )


def _fields_in_version(value):
    """What survives an encode/decode at value's version (later fields default)."""
    v = value["version"]
    return dict(
        value,
        owned=value["owned"] if v >= 1 else [],
        generation_id=value["generation_id"] if v >= 2 else -1,
        rack_id=value["rack_id"] if v >= 3 else None,
    )


@property_settings()
@given(subscriptions())
def test_subscription_bytes_equal_kafka_python(value):
    ours = Subscription(value["version"], value["topics"], value["user_data"], value["owned"],
                        value["generation_id"], value["rack_id"])
    theirs = KafkaPythonSubscription(
        version=value["version"], topics=value["topics"], user_data=value["user_data"],
        owned_partitions=[KafkaPythonSubscription.TopicPartition(topic=t, partitions=p) for t, p in value["owned"]],
        generation_id=value["generation_id"], rack_id=value["rack_id"],
    )
    data = theirs.encode()
    assert ours.encode() == data
    # kafka-python's own object goes through our encoder unchanged (a custom
    # kafka-python assignor's metadata() output)
    assert encode_subscription(theirs) == data
    kept = _fields_in_version(value)
    decoded = decode_subscription(data)
    assert decoded == Subscription(kept["version"], kept["topics"], kept["user_data"], kept["owned"],
                                   kept["generation_id"], kept["rack_id"] or None)


@st.composite
def assignments(draw):
    groups = draw(st.dictionaries(_TOPIC, _PARTITIONS, max_size=4))
    return dict(
        version=draw(st.integers(min_value=0, max_value=3)),
        groups=[TopicPartitions(t, p) for t, p in groups.items()],
        user_data=draw(_USER_DATA),
    )


@property_settings()
@given(assignments())
def test_assignment_bytes_equal_kafka_python(value):
    theirs = KafkaPythonAssignment(version=value["version"], assigned_partitions=[tuple(g) for g in value["groups"]],
                                   user_data=value["user_data"])
    data = theirs.encode()
    assert Assignment(value["version"], value["groups"], value["user_data"]).encode() == data
    assert encode_assignment(theirs) == data
    decoded = decode_assignment(data)
    assert decoded == Assignment(value["version"], value["groups"], value["user_data"])
    assert decoded.partitions() == [TopicPartition(t, p) for t, ps in value["groups"] for p in ps]
    # and kafka-python reads our bytes back to its own value
    back = KafkaPythonAssignment.decode(Assignment(value["version"], value["groups"], value["user_data"]).encode())
    assert [(tp.topic, list(tp.partitions)) for tp in back.assigned_partitions] == [tuple(g) for g in value["groups"]]


# --------------------------------------------------------------------------
# the Java client's writing rules, pinned on hand-written bytes
# --------------------------------------------------------------------------
def _str(s):
    raw = s.encode()
    return len(raw).to_bytes(2, "big") + raw


def _i32(n):
    return n.to_bytes(4, "big", signed=True)


def test_subscription_v3_bytes_written_by_hand():
    sub = Subscription(3, ["t2", "t1"], None, [("t2", [3, 1]), ("t1", [0])], 7, "rack-a")
    expected = (
        b"\x00\x03"
        + _i32(2) + _str("t1") + _str("t2")              # topics, sorted
        + _i32(-1)                                       # user_data null
        + _i32(2) + _str("t1") + _i32(1) + _i32(0)       # owned, sorted by topic...
        + _str("t2") + _i32(2) + _i32(1) + _i32(3)       # ...then partition
        + _i32(7)                                        # generation
        + _str("rack-a")
    )
    assert sub.encode() == expected
    assert decode_subscription(expected) == Subscription(
        3, ["t1", "t2"], None, [("t1", [0]), ("t2", [1, 3])], 7, "rack-a")


def test_assignment_groups_topics_in_order_of_first_appearance():
    data = encode_assignment([TopicPartition("b", 2), TopicPartition("a", 0), TopicPartition("b", 1)])
    expected = (b"\x00\x03" + _i32(2) + _str("b") + _i32(2) + _i32(2) + _i32(1)
                + _str("a") + _i32(1) + _i32(0) + _i32(-1))
    assert data == expected


def test_a_topic_without_partitions_is_not_written():
    assert Assignment(3, [("empty", []), ("t", [0])]).encode() == Assignment(3, [("t", [0])]).encode()
    assert Subscription(3, ["t"], None, [("empty", [])]).encode() == Subscription(3, ["t"]).encode()


def test_default_version_is_3_and_defaults_are_javas():
    sub = decode_subscription(Subscription(topics=["t"]).encode())
    assert (sub.version, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == (3, None, [], -1, None)
    assert Assignment().encode() == b"\x00\x03" + _i32(0) + _i32(-1)


def test_empty_rack_id_reads_as_none():
    data = b"\x00\x03" + _i32(1) + _str("t") + _i32(-1) + _i32(0) + _i32(-1) + _str("")
    assert decode_subscription(data).rack_id is None


# --------------------------------------------------------------------------
# reading rules: newer versions, trailing bytes, malformed input
# --------------------------------------------------------------------------
def test_newer_subscription_version_reads_by_its_v3_prefix():
    body = Subscription(3, ["t"], b"u", [("t", [0])], 4, "r").encode()[2:]
    newer = b"\x00\x09" + body + b"\x00\x00\x00\x2a future fields"
    sub = decode_subscription(newer)
    assert sub.version == 9
    assert (sub.topics, sub.user_data, sub.owned_topic_partitions(), sub.generation_id, sub.rack_id) == (
        ["t"], b"u", [TopicPartition("t", 0)], 4, "r")


def test_kafka_2_4_assignment_with_trailing_error_code_is_read():
    # Kafka 2.4's Java client wrote assignment v1 with an int16 error code
    # after user_data; newer layouts dropped it and readers skip it.
    data = b"\x00\x01" + _i32(1) + _str("t") + _i32(1) + _i32(5) + _i32(-1) + b"\x00\x00"
    assert decode_assignment(data).partitions() == [TopicPartition("t", 5)]


@pytest.mark.parametrize("decode, value", [
    (decode_subscription, Subscription(3, ["a", "b"], b"xy", [("a", [1, 2])], 3, "r")),
    (decode_assignment, Assignment(3, [("a", [1, 2]), ("b", [0])], b"xy")),
])
def test_every_truncation_is_a_parse_error(decode, value):
    data = value.encode()
    for cut in range(len(data)):
        with pytest.raises(ProtocolParseError) as info:
            decode(data[:cut])
        assert 0 <= info.value.position <= cut
    assert decode(data) == value


@pytest.mark.parametrize("decode", [decode_subscription, decode_assignment])
def test_negative_version_is_refused(decode):
    with pytest.raises(ProtocolParseError, match="unsupported version -2"):
        decode(b"\xff\xfe" + bytes(20))


def test_impossible_counts_are_refused_before_allocating():
    huge = b"\x00\x00" + _i32(2**31 - 1)
    with pytest.raises(ProtocolParseError, match="cannot fit"):
        decode_subscription(huge)
    with pytest.raises(ProtocolParseError, match="negative length"):
        decode_assignment(b"\x00\x00" + _i32(-5))


@pytest.mark.parametrize("decode", [decode_subscription, decode_assignment])
def test_non_bytes_input_is_an_argument_error(decode):
    with pytest.raises(IllegalArgumentError):
        decode("\x00\x00")
    with pytest.raises(IllegalArgumentError):
        decode(None)


def test_memoryview_input_decodes_to_independent_values():
    buf = bytearray(Subscription(3, ["t"], b"data").encode())
    sub = decode_subscription(memoryview(buf))
    buf[:] = bytes(len(buf))
    assert sub.topics == ["t"] and sub.user_data == b"data"


def test_bad_values_are_argument_errors():
    with pytest.raises(IllegalArgumentError, match="topics"):
        encode_subscription(Subscription(3, [1]))
    with pytest.raises(IllegalArgumentError, match="user_data"):
        encode_subscription(Subscription(3, ["t"], "text"))
    with pytest.raises(IllegalArgumentError, match="version"):
        encode_subscription(Subscription(-1, ["t"]))
    with pytest.raises(IllegalArgumentError, match="partitions"):
        encode_assignment(Assignment(3, [("t", [2**31])]))
    with pytest.raises(IllegalArgumentError):
        Assignment(3, ["not-a-pair"])
    with pytest.raises(IllegalArgumentError, match="topics"):
        encode_subscription(object())


def test_newer_version_written_with_the_v3_layout():
    # what the Java client's serializer does for a version above its newest
    data = Subscription(5, ["t"], None, [], 2, "r").encode()
    assert data[:2] == b"\x00\x05"
    assert data[2:] == Subscription(3, ["t"], None, [], 2, "r").encode()[2:]


# --------------------------------------------------------------------------
# helpers for the coordinator
# --------------------------------------------------------------------------
def test_with_member_state_fills_the_v1_to_v3_fields():
    base = KafkaPythonSubscription(version=0, topics=["b", "a"], user_data=b"u")
    sub = cp.with_member_state(base, {TopicPartition("b", 1), TopicPartition("a", 0)}, 12, "")
    assert sub == Subscription(3, ["b", "a"], b"u", [("a", [0]), ("b", [1])], 12, None)


def test_heartbeat_assignment_resolution_keeps_unknown_ids():
    known, unknown = bytes(range(16)), b"\x01" * 16
    resolved, pending = cp.resolve_heartbeat_assignment(
        [{"topic_id": known, "partitions": [2, 0]}, {"topic_id": unknown, "partitions": [1]}], {known: "t"})
    assert resolved == {TopicPartition("t", 0), TopicPartition("t", 2)}
    assert pending == {unknown}
    assert cp.heartbeat_topic_partitions(resolved, {"t": known}) == [{"topic_id": known, "partitions": [0, 2]}]
    with pytest.raises(IllegalArgumentError, match="no topic id"):
        cp.heartbeat_topic_partitions({TopicPartition("x", 0)}, {})


def test_heartbeat_shapes_round_trip_through_the_codec():
    from fastkc.protocol import decode_body, encode_body
    tid = bytes(range(16))
    body = {"group_id": "g", "member_id": "m", "member_epoch": 3,
            "topic_partitions": cp.heartbeat_topic_partitions({TopicPartition("t", 1)}, {"t": tid})}
    assert decode_body("ConsumerGroupHeartbeat", 0, encode_body("ConsumerGroupHeartbeat", 0, body),
                       response=False)["topic_partitions"] == [{"topic_id": tid, "partitions": [1]}]


def test_declared_names_match_the_protocol_type():
    assert cp.PROTOCOL_TYPE == "consumer"
    assert SUBSCRIPTION_MESSAGE.name == "ConsumerProtocolSubscription"
    assert ASSIGNMENT_MESSAGE.name == "ConsumerProtocolAssignment"


def test_librdkafka_shaped_subscription():
    # librdkafka (2.x) writes version 3 with EMPTY (not null) user data when
    # its assignor has none, an explicit generation (-1 before the first
    # join) and a null rack when none is configured
    data = (b"\x00\x03" + _i32(2) + _str("a") + _str("b") + _i32(0)
            + _i32(1) + _str("a") + _i32(2) + _i32(0) + _i32(1)
            + _i32(-1) + b"\xff\xff")
    sub = decode_subscription(data)
    assert (sub.topics, sub.user_data, sub.generation_id, sub.rack_id) == (["a", "b"], b"", -1, None)
    assert sub.owned_topic_partitions() == [TopicPartition("a", 0), TopicPartition("a", 1)]
    # re-encoded by fastkc it is the same bytes (user data b"" stays b"")
    assert sub.encode() == data


def test_topics_and_owned_partitions_sort_by_utf16_unit_as_java():
    high, astral = "t\uff61", "t\U00010000"
    data = Subscription(3, [high, astral], None, [(high, [0]), (astral, [0])]).encode()
    sub = decode_subscription(data)
    assert sub.topics == [astral, high]
    assert [g.topic for g in sub.owned_partitions] == [astral, high]
