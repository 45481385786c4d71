"""ProtobufDeserializer with a message_type (confluent-kafka's form), against
a hand-written fake registry: the framing with message indexes, the batch
runs, the typed errors naming topic, partition, offset and schema id. The
values are checked against a real registry and confluent-kafka's own
deserializer in tests/integration/test_protobuf_deserializer_real.py."""
import pytest

from fastkc.errors import KafkaError
from fastkc.schema_registry import (
    DeserializationError,
    DeserializerConfigurationError,
    MessageField,
    PayloadDecodeError,
    ProtobufDeserializer,
    SerializationContext,
    ValueFramingError,
    frame_schema_id,
)
from tests.support.fake_registry import FakeRegistry
from tests.support.protobuf_types import Event, event_of


def _framed(i, schema_id=3, indexes=(0,)):
    return frame_schema_id(schema_id, indexes) + event_of(i).SerializeToString()


def _assert_names(exc, topic, partition, offset, schema_id):
    assert isinstance(exc, DeserializationError) and isinstance(exc, KafkaError)
    assert (exc.topic, exc.partition, exc.offset, exc.schema_id) == (topic, partition, offset, schema_id)


def test_a_value_becomes_a_message_of_the_type_per_value_and_in_a_batch():
    deserializer = ProtobufDeserializer(Event, {"use.deprecated.format": False})
    ctx = SerializationContext("t", MessageField.VALUE)
    assert deserializer(_framed(5), ctx) == event_of(5)
    assert deserializer(None, ctx) is None
    # the common [0] as one byte, a longer index path, another schema id: each frame read
    values = [_framed(1), None, _framed(2, indexes=(1, 0)), _framed(3, schema_id=9), _framed(4)]
    out = deserializer.deserialize_many(values, "t", 0, [10, 11, 12, 13, 14])
    assert out == [event_of(1), None, event_of(2), event_of(3), event_of(4)]
    assert all(type(v) is Event for v in out if v is not None)


def test_no_registry_is_needed_with_a_message_type():
    # Protobuf bytes are self-describing: the message type reads them
    registry = FakeRegistry({})
    deserializer = ProtobufDeserializer(Event, None, registry)
    assert deserializer.deserialize_many([_framed(1)], "t", 0, [0]) == [event_of(1)]
    assert registry.prefetched == []


def test_an_unframed_value_names_its_offset_and_the_values_before_it_are_not_lost():
    deserializer = ProtobufDeserializer(Event)
    with pytest.raises(ValueFramingError) as info:
        deserializer.deserialize_many([_framed(1), b"\x07junk", _framed(2)], "t", 2, [40, 41, 42])
    _assert_names(info.value, "t", 2, 41, None)


def test_a_message_index_array_cut_short_is_a_framing_error():
    deserializer = ProtobufDeserializer(Event)
    # count 2 (zigzag 4) but one index follows
    with pytest.raises(ValueFramingError) as info:
        deserializer.deserialize_many([frame_schema_id(3) + b"\x04\x02"], "t", 0, [7])
    _assert_names(info.value, "t", 0, 7, 3)


@pytest.mark.parametrize("payload", [
    b"\x0a\x05ab",          # field 1 (a length) says 5 bytes, 2 follow
    b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",  # a varint of 11 bytes
    b"\x00",                # field number 0
])
def test_a_corrupt_payload_is_a_typed_error_naming_its_record(payload):
    deserializer = ProtobufDeserializer(Event)
    values = [_framed(1), frame_schema_id(3, (0,)) + payload, _framed(2)]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_many(values, "t", 1, [100, 101, 102])
    _assert_names(info.value, "t", 1, 101, 3)
    with pytest.raises(PayloadDecodeError):
        deserializer(values[1], SerializationContext("t", MessageField.VALUE))


@pytest.mark.parametrize("conf, why", [
    ({"use.deprecated.format": True}, "no longer supported"),
    ({"use.deprecated.format": "no"}, "boolean"),
    ({"auto.register.schemas": True}, "Unrecognized properties"),
])
def test_confluents_settings_are_checked(conf, why):
    with pytest.raises(DeserializerConfigurationError, match=why):
        ProtobufDeserializer(Event, conf)


def test_a_message_type_must_be_a_generated_class():
    with pytest.raises(DeserializerConfigurationError, match="generated protobuf message class"):
        ProtobufDeserializer(dict)


def test_without_a_message_type_a_registry_is_required():
    with pytest.raises(DeserializerConfigurationError, match="schema_registry_client"):
        ProtobufDeserializer(None)


# --- message_type=None: dicts, from the registry's schema ------------------------------------

def _serialized_schema(message_class=Event):
    import base64

    from google.protobuf import descriptor_pb2

    from fastkc.schema_registry.client import Schema

    proto = descriptor_pb2.FileDescriptorProto()
    message_class.DESCRIPTOR.file.CopyToProto(proto)
    return Schema(base64.b64encode(proto.SerializeToString()).decode(), "PROTOBUF")


def _expected_dict(message):
    """MessageToDict's keys and nesting, with native values (what the C decoder gives)."""
    from google.protobuf import json_format

    shaped = json_format.MessageToDict(message, preserving_proto_field_name=True)
    for field in ("id", "count", "stamp"):  # 64-bit ints: native, not strings
        if field in shaped:
            shaped[field] = getattr(message, field)
    if "digest" in shaped:
        shaped["digest"] = message.digest
    if "attrs" in shaped:
        shaped["attrs"] = dict(message.attrs)
    if "ratio" in shaped:
        shaped["ratio"] = message.ratio
    return shaped


def test_without_a_message_type_values_become_dicts_from_the_registrys_schema():
    # Event is the file's second message: the frame's indexes are [1]
    registry = FakeRegistry({3: _serialized_schema()})
    deserializer = ProtobufDeserializer(None, None, registry)
    values = [_framed(i, indexes=(1,)) for i in range(12)] + [None]
    out = deserializer.deserialize_many(values, "t", 0, list(range(13)))
    assert out[:12] == [_expected_dict(event_of(i)) for i in range(12)]
    assert out[12] is None
    assert deserializer(values[5], SerializationContext("t", MessageField.VALUE)) == _expected_dict(event_of(5))


def test_without_a_message_type_a_corrupt_payload_names_its_record_and_byte():
    registry = FakeRegistry({3: _serialized_schema()})
    deserializer = ProtobufDeserializer(None, None, registry)
    values = [_framed(1, indexes=(1,)), frame_schema_id(3, (1,)) + b"\x12\x64ab"]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_many(values, "t", 4, [50, 51])
    _assert_names(info.value, "t", 4, 51, 3)
    assert "byte" in str(info.value)


def test_message_indexes_that_name_no_message_are_a_writer_schema_error():
    from fastkc.schema_registry import WriterSchemaError

    registry = FakeRegistry({3: _serialized_schema()})
    deserializer = ProtobufDeserializer(None, None, registry)
    with pytest.raises(WriterSchemaError, match="out of range") as info:
        deserializer.deserialize_many([_framed(1, indexes=(7,))], "t", 0, [9])
    _assert_names(info.value, "t", 0, 9, 3)


def test_proto_text_in_the_registry_is_asked_again_in_the_serialized_form():
    from fastkc.schema_registry.client import Schema

    class TextRegistry(FakeRegistry):
        asked = []

        def get_schema(self, schema_id, subject_name=None, fmt=None):
            self.asked.append((schema_id, fmt))
            return _serialized_schema()

    registry = TextRegistry({3: Schema('syntax = "proto3"; message Event { int64 id = 1; }', "PROTOBUF")})
    deserializer = ProtobufDeserializer(None, None, registry)
    assert deserializer.deserialize_many([_framed(2, indexes=(1,))], "t", 0, [0]) == [_expected_dict(event_of(2))]
    assert registry.asked == [(3, "serialized")]


def test_a_schema_of_another_type_is_refused():
    from fastkc.schema_registry import WrongSchemaTypeError
    from fastkc.schema_registry.client import Schema

    registry = FakeRegistry({3: Schema('{"type": "string"}', "AVRO")})
    with pytest.raises(WrongSchemaTypeError):
        ProtobufDeserializer(None, None, registry).deserialize_many([_framed(1)], "t", 0, [0])


# --- poll_arrow(): typed Arrow columns --------------------------------------------------------

def test_deserialize_arrow_gives_one_struct_column_with_nulls_in_place():
    import pyarrow as pa

    from fastkc.schema_registry.protobuf import ProtobufDecoder

    for deserializer in (ProtobufDeserializer(Event), ProtobufDeserializer(None, None,
                                                                           FakeRegistry({3: _serialized_schema()}))):
        values = [_framed(i, indexes=(1,)) for i in range(6)]
        values[2] = None
        column = pa.array(values, pa.binary())
        out = deserializer.deserialize_arrow(column, "t", 0, list(range(6)))
        expected = ProtobufDecoder(Event.DESCRIPTOR).decode_arrow([event_of(i).SerializeToString()
                                                                   for i in (0, 1, 3, 4, 5)])
        assert pa.types.is_struct(out.type) and len(out) == 6
        assert out.is_null().to_pylist() == [False, False, True, False, False, False]
        assert out.filter(out.is_valid()).to_pylist() == expected.to_pylist()


def test_deserialize_arrow_stops_before_a_corrupt_row_and_raises_for_it_alone():
    import pyarrow as pa

    deserializer = ProtobufDeserializer(Event)
    values = [_framed(1), _framed(2), frame_schema_id(3, (0,)) + b"\x12\x64ab", _framed(3)]
    out = deserializer.deserialize_arrow(pa.array(values, pa.binary()), "t", 0, [10, 11, 12, 13])
    assert len(out) == 2
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_arrow(pa.array(values[2:], pa.binary()), "t", 0, [12, 13])
    _assert_names(info.value, "t", 0, 12, 3)
