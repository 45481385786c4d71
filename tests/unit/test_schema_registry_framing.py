"""The Schema Registry wire framing against confluent-kafka's own framing code.

confluent-kafka's SchemaId writes (id_to_bytes, guid_to_bytes) and reads
(from_bytes) the frames its serializers and deserializers use: every frame it
writes must split here into the same id / GUID / message indexes and payload,
and every frame fastkc writes must read back the same in confluent-kafka.
"""
import io
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc.errors import KafkaError
from fastkc.schema_registry import (
    InvalidMessageIndexError,
    NotFramedError,
    SchemaFramingError,
    TruncatedFrameError,
    encode_message_indexes,
    frame_guid,
    frame_schema_id,
    split_record,
    split_value,
)

serde = pytest.importorskip("confluent_kafka.schema_registry.common.serde")
SchemaId = serde.SchemaId

schema_ids = st.integers(min_value=0, max_value=2**32 - 1)
payloads = st.binary(max_size=64)
# Protobuf message indexes: a path of non-negative indexes into nested messages
index_paths = st.lists(st.integers(min_value=0, max_value=2**40), min_size=1, max_size=6)
guids = st.uuids()
WHERE = dict(topic="events", partition=3, offset=1234)


@given(schema_ids, payloads)
def test_prefix_form_matches_confluent(schema_id, payload):
    value = SchemaId("AVRO", schema_id=schema_id).id_to_bytes() + payload
    frame = split_value(value)
    assert (frame.schema_id, frame.guid, frame.message_indexes) == (schema_id, None, None)
    assert frame.payload == payload and value[frame.payload_offset:] == payload
    assert frame_schema_id(schema_id) + payload == value


@given(schema_ids, index_paths, payloads)
def test_protobuf_indexes_match_confluent(schema_id, indexes, payload):
    value = SchemaId("PROTOBUF", schema_id=schema_id, message_indexes=indexes).id_to_bytes() + payload
    frame = split_value(value, protobuf=True)
    assert frame.schema_id == schema_id
    assert list(frame.message_indexes) == indexes
    assert frame.payload == payload
    # and the other way: what fastkc writes, confluent-kafka reads
    ours = frame_schema_id(schema_id, indexes) + payload
    theirs = SchemaId("PROTOBUF")
    rest = theirs.from_bytes(io.BytesIO(ours))
    assert (theirs.id, theirs.message_indexes, rest.read()) == (schema_id, indexes, payload)


def test_first_message_is_one_zero_byte_and_long_form_accepted():
    # [0] is written as the single byte 0; a writer may also spell it out
    # as count 1, index 0 — both mean the first message.
    assert encode_message_indexes([0]) == b"\x00"
    short = split_value(frame_schema_id(7) + b"\x00" + b"pay", protobuf=True)
    long_form = split_value(frame_schema_id(7) + b"\x02\x00" + b"pay", protobuf=True)
    assert short.message_indexes == long_form.message_indexes == (0,)
    assert short.payload == long_form.payload == b"pay"


@given(guids, st.one_of(st.none(), index_paths), payloads)
def test_header_form_matches_confluent(guid, indexes, payload):
    protobuf = indexes is not None
    header = SchemaId("PROTOBUF" if protobuf else "AVRO", guid=str(guid), message_indexes=indexes).guid_to_bytes()
    assert header == frame_guid(guid, indexes)
    headers = [("other", b"x"), ("__value_schema_id", header)]
    frame = split_record(payload, headers, protobuf=protobuf)
    assert frame.guid == guid and frame.schema_id is None
    assert frame.payload == payload and frame.payload_offset == 0
    assert frame.schema_key == str(guid)
    if protobuf:
        assert list(frame.message_indexes) == indexes


def test_header_form_key_and_value_headers_are_told_apart():
    key_guid, value_guid = uuid.uuid4(), uuid.uuid4()
    headers = [("__key_schema_id", frame_guid(key_guid)), ("__value_schema_id", frame_guid(value_guid))]
    assert split_record(b"k", headers, is_key=True).guid == key_guid
    assert split_record(b"v", headers).guid == value_guid
    # no header for this side: the prefix form in the bytes
    assert split_record(frame_schema_id(5) + b"k", [("__value_schema_id", frame_guid(value_guid))],
                        is_key=True).schema_id == 5


def _raises(error_class, call):
    with pytest.raises(error_class) as info:
        call()
    error = info.value
    assert isinstance(error, SchemaFramingError) and isinstance(error, KafkaError)
    assert (error.topic, error.partition, error.offset) == ("events", 3, 1234)
    assert "events" in str(error) and "1234" in str(error)
    return error


@pytest.mark.parametrize("value", [b"\x02\x00\x00\x00\x01x", b"{\"json\": 1}", b"\xff"])
def test_not_framed_is_typed(value):
    error = _raises(NotFramedError, lambda: split_value(value, **WHERE))
    assert error.schema_id is None and "magic" in error.reason


def test_null_value_is_not_framed():
    _raises(NotFramedError, lambda: split_value(None, **WHERE))


@pytest.mark.parametrize("value", [b"", b"\x00", b"\x00\x00\x00\x01", b"\x01" + b"\x00" * 15])
def test_truncated_frame_is_typed(value):
    _raises(TruncatedFrameError, lambda: split_value(value, **WHERE))


def test_truncated_message_indexes_name_the_schema_id():
    # count 2 (zigzag 4) but one index only, then the bytes end inside a varint
    error = _raises(TruncatedFrameError, lambda: split_value(frame_schema_id(77) + b"\x04\x02", protobuf=True,
                                                             **WHERE))
    assert error.schema_id == 77
    error = _raises(TruncatedFrameError, lambda: split_value(frame_schema_id(78) + b"\x82", protobuf=True, **WHERE))
    assert error.schema_id == 78
    # a count (127) far beyond the bytes that follow: refused before any index is read
    error = _raises(TruncatedFrameError, lambda: split_value(frame_schema_id(79) + b"\xfe\x01" + b"payload",
                                                             protobuf=True, **WHERE))
    assert error.schema_id == 79 and "only 7 bytes follow" in error.reason


@pytest.mark.parametrize("indexes, why", [
    (b"\xff" * 11, "longer than 64 bits"),
    (b"\xff" * 9 + b"\x02", "longer than 64 bits"),   # a 10th byte above the 64th bit
    (b"\x01", "negative"),                             # count -1
    (b"\x02\x01", "negative"),                         # count 1, index -1
])
def test_bad_message_index_varints_are_typed(indexes, why):
    error = _raises(InvalidMessageIndexError, lambda: split_value(frame_schema_id(9) + indexes + b"payload",
                                                                  protobuf=True, **WHERE))
    assert error.schema_id == 9 and why in error.reason


def test_bad_header_names_the_guid():
    guid = uuid.uuid4()
    error = _raises(SchemaFramingError, lambda: split_record(b"v", [("__value_schema_id", frame_guid(guid) + b"!")],
                                                             **WHERE))
    assert error.schema_id == str(guid)
    _raises(TruncatedFrameError, lambda: split_record(b"v", [("__value_schema_id", b"\x01abc")], **WHERE))
    _raises(NotFramedError, lambda: split_record(None, [("__value_schema_id", frame_guid(guid))], **WHERE))


@given(st.binary(max_size=40), st.booleans())
def test_any_bytes_split_or_raise_a_framing_error(value, protobuf):
    try:
        frame = split_value(value, protobuf=protobuf)
    except SchemaFramingError:
        return
    assert value[frame.payload_offset:] == frame.payload
    # what was split writes back to the same bytes (the canonical forms: a
    # non-canonical index spelling, such as [0] written long, may differ)
    head = (frame_schema_id(frame.schema_id, frame.message_indexes) if frame.schema_id is not None
            else frame_guid(frame.guid, frame.message_indexes))
    if value[:frame.payload_offset] == head:
        assert head + frame.payload == value


def test_framing_errors_pickle_with_their_fields():
    import pickle

    error = InvalidMessageIndexError("bad", "t", 1, 2, 3)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is InvalidMessageIndexError
    assert (copy.reason, copy.topic, copy.partition, copy.offset, copy.schema_id) == ("bad", "t", 1, 2, 3)
