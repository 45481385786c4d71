"""The generic codec on hand-built wire bytes, and its errors on bad input."""
import struct

import pytest

from fastkc.errors import IllegalArgumentError, ProtocolParseError
from fastkc.protocol import codec
from fastkc.protocol.types import Malformed, Reader, Writer


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


# --- headers ------------------------------------------------------------------
def test_request_header_v1_for_non_flexible_versions():
    data = codec.encode_request("Metadata", 1, {"topics": None}, correlation_id=7, client_id="ab")
    # api key 3, version 1, correlation id 7, client id "ab" (int16 length), then
    # the body: topics null as int32 -1; no tagged-field byte anywhere
    assert data == i16(3) + i16(1) + i32(7) + i16(2) + b"ab" + i32(-1)


def test_request_header_v2_keeps_the_client_id_non_compact():
    data = codec.encode_request("Metadata", 9, {"topics": []}, correlation_id=1, client_id="ab")
    header = i16(3) + i16(9) + i32(1) + i16(2) + b"ab" + b"\x00"
    # body v9: compact array of 0 (=1), allow_auto_topic_creation (default true),
    # include_cluster_authorized_operations false, include_topic... false, no tags
    assert data == header + b"\x01" + b"\x01\x00\x00" + b"\x00"
    hdr, body = codec.decode_request(data)
    assert hdr["api_name"] == "Metadata" and hdr["api_version"] == 9 and hdr["client_id"] == "ab"
    assert body == {
        "topics": [],
        "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_null_client_id():
    data = codec.encode_request("Heartbeat", 0, {}, correlation_id=3, client_id=None)
    assert data[8:10] == i16(-1)
    assert codec.decode_request(data)[0]["client_id"] is None


def test_api_versions_response_header_is_always_v0():
    body = {"error_code": 0, "api_keys": [{"api_key": 1, "min_version": 4, "max_version": 18}]}
    data = codec.encode_response("ApiVersions", 3, body, correlation_id=9)
    # correlation id, then the body directly: no header tagged-field byte
    assert data[:4] == i32(9)
    assert data[4:6] == i16(0)  # error_code
    assert data[6] == 2  # compact array of 1
    cid, decoded = codec.decode_response("ApiVersions", 3, data)
    assert cid == 9
    assert decoded["api_keys"] == body["api_keys"]
    assert decoded["finalized_features_epoch"] == -1  # tagged default
    assert decoded["supported_features"] == []


def test_flexible_response_header_has_tagged_fields():
    data = codec.encode_response("Heartbeat", 4, {"error_code": 27}, correlation_id=5)
    assert data == i32(5) + b"\x00" + i32(0) + i16(27) + b"\x00"


# --- Fetch response, the compiled parser's oracle -------------------------------
def _fetch_v4_bytes():
    return (
        i32(11)  # correlation id (header v0)
        + i32(0)  # throttle_time_ms
        + i32(1) + i16(1) + b"t"  # one topic "t"
        + i32(1)  # one partition
        + i32(2) + i16(0) + i64(100) + i64(90)  # partition, error, hw, lso
        + i32(1) + i64(77) + i64(5)  # one aborted transaction
        + i32(3) + b"abc"  # records
    )


def test_fetch_v4_response_decodes_every_field_with_defaults():
    cid, body = codec.decode_response("Fetch", 4, _fetch_v4_bytes())
    assert cid == 11
    assert body["error_code"] == 0 and body["session_id"] == 0 and body["node_endpoints"] == []
    part = body["responses"][0]["partitions"][0]
    assert body["responses"][0]["topic"] == "t"
    assert part["partition_index"] == 2 and part["high_watermark"] == 100
    assert part["last_stable_offset"] == 90
    assert part["log_start_offset"] == -1  # v5+, default before
    assert part["preferred_read_replica"] == -1  # v11+
    assert part["aborted_transactions"] == [{"producer_id": 77, "first_offset": 5}]
    assert part["records"] == b"abc"
    assert part["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    # and the encoder writes back exactly the same bytes
    assert codec.encode_response("Fetch", 4, body, correlation_id=11) == _fetch_v4_bytes()


def _fetch_v16_bytes(unknown_partition_tag=False):
    topic_id = bytes(range(16))
    # tag 0, diverging epoch: 13 bytes (epoch, end offset and the struct's own
    # empty tagged-field section)
    diverging = b"\x00" + b"\x0d" + i32(4) + i64(1234) + b"\x00"
    partition_tags = b"\x01" + diverging
    if unknown_partition_tag:
        partition_tags = b"\x02" + diverging + b"\x09" + b"\x02" + b"hi"
    return (
        i32(12) + b"\x00"  # header v1
        + i32(0) + i16(0) + i32(99)  # throttle, error, session id
        + b"\x02" + topic_id  # compact array of 1 topic, topic id
        + b"\x02"  # one partition
        + i32(0) + i16(0) + i64(10) + i64(10) + i64(0)
        + b"\x00"  # aborted transactions: compact null
        + i32(-1)  # preferred read replica
        + b"\x04" + b"xyz"  # compact records
        + partition_tags
        + b"\x00"  # topic tags
        + b"\x01" + b"\x00"  # top-level: tag 0 node endpoints
        + bytes([1 + 4 + 1 + 2 + 4 + 1 + 1])  # its size
        + b"\x02" + i32(1) + b"\x03ab" + i32(9092) + b"\x00" + b"\x00"
    )


def test_fetch_v16_tags_null_aborted_and_node_endpoints():
    cid, body = codec.decode_response("Fetch", 16, _fetch_v16_bytes())
    assert cid == 12 and body["session_id"] == 99
    topic = body["responses"][0]
    assert topic["topic_id"] == bytes(range(16)) and topic["topic"] == ""
    part = topic["partitions"][0]
    assert part["aborted_transactions"] is None
    assert part["diverging_epoch"] == {"epoch": 4, "end_offset": 1234}
    assert body["node_endpoints"] == [{"node_id": 1, "host": "ab", "port": 9092, "rack": None}]
    assert codec.encode_response("Fetch", 16, body, correlation_id=12) == _fetch_v16_bytes()
    fr = codec.to_fetch_response(cid, body, 16)
    assert fr.topics[0].topic is None and fr.topics[0].topic_id == bytes(range(16))
    assert fr.topics[0].partitions[0].diverging_epoch == (4, 1234)
    assert fr.topics[0].partitions[0].current_leader is None
    assert fr.node_endpoints == [(1, "ab", 9092, None)]


def test_unknown_tagged_fields_are_kept_and_re_emitted():
    data = _fetch_v16_bytes(unknown_partition_tag=True)
    _, body = codec.decode_response("Fetch", 16, data)
    part = body["responses"][0]["partitions"][0]
    assert part["_unknown_tags"] == {9: b"hi"}
    assert part["diverging_epoch"]["epoch"] == 4
    assert codec.encode_response("Fetch", 16, body, correlation_id=12) == data


# --- malformed input: always ProtocolParseError with a position ----------------
@pytest.mark.parametrize("version,make", [(4, _fetch_v4_bytes), (16, _fetch_v16_bytes)])
def test_every_prefix_and_any_trailing_byte_is_rejected(version, make):
    data = make()
    for cut in range(len(data)):
        with pytest.raises(ProtocolParseError) as info:
            codec.decode_response("Fetch", version, data[:cut])
        assert info.value.api == "Fetch" and info.value.version == version
        assert 0 <= info.value.position <= cut
    with pytest.raises(ProtocolParseError, match="left after the body"):
        codec.decode_response("Fetch", version, data + b"\x00")


def test_negative_non_null_length_is_rejected():
    data = bytearray(_fetch_v4_bytes())
    data[12:14] = i16(-2)  # the topic name's length
    with pytest.raises(ProtocolParseError, match="negative length") as info:
        codec.decode_response("Fetch", 4, bytes(data))
    assert info.value.position == 12


def test_null_where_not_nullable_is_rejected():
    data = bytearray(_fetch_v4_bytes())
    data[12:14] = i16(-1)  # topic name null: not nullable in any version
    with pytest.raises(ProtocolParseError, match="not nullable"):
        codec.decode_response("Fetch", 4, bytes(data))


def test_huge_array_count_fails_before_allocating():
    data = i32(1) + i32(0) + i32(0x7FFFFFFF)
    with pytest.raises(ProtocolParseError, match="cannot fit"):
        codec.decode_response("Fetch", 4, data)


def test_tagged_field_must_fill_its_size_exactly():
    data = bytearray(_fetch_v16_bytes())
    size_at = data.index(b"\x01\x00\x0d" + i32(4))
    data[size_at + 2] = 0x0C  # claims 12 bytes for a 13-byte struct
    with pytest.raises(ProtocolParseError):
        codec.decode_response("Fetch", 16, bytes(data))


def test_invalid_utf8_is_rejected():
    data = bytearray(_fetch_v4_bytes())
    data[14] = 0xFF  # the one byte of the topic name
    with pytest.raises(ProtocolParseError, match="UTF-8"):
        codec.decode_response("Fetch", 4, bytes(data))


# --- varints ------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**32 - 1])
def test_uvarint_round_trip(value):
    w = Writer()
    w.uvarint(value)
    r = Reader(w.getvalue())
    assert r.uvarint() == value and r.remaining() == 0


@pytest.mark.parametrize("value", [0, -1, 1, -64, 64, 2**31 - 1, -(2**31)])
def test_zigzag_varint_round_trip(value):
    w = Writer()
    w.varint(value)
    assert Reader(w.getvalue()).varint() == value


def test_overlong_and_overflowing_varints_are_rejected_without_moving():
    for bad in (b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\x1f", b"\x80\x80"):
        r = Reader(b"\x00" + bad, pos=1)
        with pytest.raises(Malformed):
            r.uvarint()
        assert r.pos == 1
    w = Writer()
    w.varlong(-(2**63))
    assert Reader(w.getvalue()).varlong() == -(2**63)
    with pytest.raises(Malformed):
        Reader(b"\xff" * 10 + b"\x01").uvarlong()


# --- encoding errors ------------------------------------------------------------
def test_encode_rejects_unknown_keys_bad_types_and_nulls():
    with pytest.raises(IllegalArgumentError, match="partiton"):
        codec.encode_body("Heartbeat", 0, {"group_id": "g", "partiton": 1})
    with pytest.raises(IllegalArgumentError, match="generation_id"):
        codec.encode_body("Heartbeat", 0, {"group_id": "g", "generation_id": "1"})
    with pytest.raises(IllegalArgumentError, match="generation_id"):
        codec.encode_body("Heartbeat", 0, {"generation_id": 2**31})
    with pytest.raises(IllegalArgumentError, match="not nullable"):
        codec.encode_body("Heartbeat", 0, {"group_id": None})
    with pytest.raises(IllegalArgumentError, match="not declared"):
        codec.encode_body("Fetch", 3, {})


def test_missing_keys_take_defaults_and_absent_versions_are_skipped():
    # group_instance_id is v3+: ignored at v0, written (null) at v3
    v0 = codec.encode_body("Heartbeat", 0, {"group_id": "g", "group_instance_id": "x"})
    assert v0 == i16(1) + b"g" + i32(0) + i16(0)
    v3 = codec.encode_body("Heartbeat", 3, {"group_id": "g"})
    assert v3 == i16(1) + b"g" + i32(0) + i16(0) + i16(-1)


def test_nullable_struct_uses_an_int8_marker():
    body = {"member_id": "m", "member_epoch": 1, "heartbeat_interval_ms": 5}
    null_assignment = codec.encode_body("ConsumerGroupHeartbeat", 0, body, response=True)
    assert null_assignment.endswith(b"\xff\x00")  # marker -1, then the top-level tags
    body["assignment"] = {"topic_partitions": []}
    present = codec.encode_body("ConsumerGroupHeartbeat", 0, body, response=True)
    assert present.endswith(b"\x01\x01\x00\x00")  # marker 1, empty array, struct tags, top tags
    decoded = codec.decode_body("ConsumerGroupHeartbeat", 0, present)
    assert decoded["assignment"] == {"topic_partitions": []}
    assert codec.decode_body("ConsumerGroupHeartbeat", 0, null_assignment)["assignment"] is None


def test_decode_request_rejects_undeclared_keys_and_versions():
    with pytest.raises(ProtocolParseError, match="undeclared api key 999"):
        codec.decode_request(i16(999) + i16(0) + i32(1) + i16(-1))
    with pytest.raises(ProtocolParseError, match="undeclared version 3") as info:
        codec.decode_request(i16(1) + i16(3) + i32(1) + i16(-1))
    assert info.value.position == 2
    with pytest.raises(ProtocolParseError, match="request header"):
        codec.decode_request(i16(1) + i16(4))


def test_any_buffer_type_decodes_the_same():
    data = _fetch_v16_bytes(unknown_partition_tag=True)
    expected = codec.decode_response("Fetch", 16, data)
    for buf in (bytearray(data), memoryview(data), memoryview(b"??" + data)[2:]):
        cid, body = codec.decode_response("Fetch", 16, buf)
        assert (cid, body) == expected
        part = body["responses"][0]["partitions"][0]
        assert type(part["records"]) is bytes  # copied out: never pins the caller's buffer
