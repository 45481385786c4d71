"""AvroDeserializer's error paths and settings, against a hand-written fake
registry (the values themselves are checked against a real registry and
confluent-kafka in tests/integration/test_avro_deserializer_real.py).

Every failure must be a typed DeserializationError naming the topic,
partition, offset and schema id of the record that caused it."""
import json
import pickle

import pytest

from fastkc.errors import KafkaError
from fastkc.schema_registry import (
    AvroDeserializer,
    DeserializationError,
    DeserializerConfigurationError,
    MessageField,
    PayloadDecodeError,
    SchemaNotFoundError,
    SchemaRegistryUnreachableError,
    SerializationContext,
    UnreachableWriterSchemaError,
    ValueFramingError,
    WriterSchemaError,
    WrongSchemaTypeError,
    frame_schema_id,
)
from fastkc.schema_registry.avro_deserializer import inline_references
from fastkc.schema_registry.client import Schema
from tests.support.fake_registry import FakeRegistry

EVENT = {"type": "record", "name": "Event", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "tag", "type": ["null", "string"]}]}


def _avro(schema):
    return Schema(json.dumps(schema), "AVRO")


def _event_value(schema_id, id_, tag=None):
    # Avro binary of Event: zigzag long, then the union branch (0 null, 1 string)
    def zigzag(n):
        raw, out = (n << 1) ^ (n >> 63), bytearray()
        while raw > 0x7F:
            out.append((raw & 0x7F) | 0x80)
            raw >>= 7
        return bytes(out + bytes([raw]))
    body = zigzag(id_) + (b"\x00" if tag is None else b"\x02" + zigzag(len(tag)) + tag.encode())
    return frame_schema_id(schema_id) + body


def _assert_names(exc, topic, partition, offset, schema_id):
    assert isinstance(exc, DeserializationError) and isinstance(exc, KafkaError)
    assert (exc.topic, exc.partition, exc.offset, exc.schema_id) == (topic, partition, offset, schema_id)
    assert "topic={0!r}".format(topic) in str(exc) and "offset={0}".format(offset) in str(exc)


def test_unknown_id_names_the_record_per_value_and_in_a_batch():
    deserializer = AvroDeserializer(FakeRegistry({1: _avro(EVENT)}))
    with pytest.raises(WriterSchemaError) as info:
        deserializer(_event_value(7, 1), SerializationContext("t", MessageField.VALUE))
    _assert_names(info.value, "t", -1, -1, 7)
    assert isinstance(info.value.__cause__, SchemaNotFoundError)
    values = [_event_value(1, 1), _event_value(1, 2), _event_value(7, 3)]
    with pytest.raises(WriterSchemaError) as info:
        deserializer.deserialize_many(values, "t", 3, [100, 101, 102])
    _assert_names(info.value, "t", 3, 102, 7)


def test_unreachable_registry_is_retriable():
    down = SchemaRegistryUnreachableError("no registry answered", "http://fake")
    deserializer = AvroDeserializer(FakeRegistry({5: down}))
    with pytest.raises(UnreachableWriterSchemaError) as info:
        deserializer.deserialize_many([_event_value(5, 1)], "t", 0, [9])
    _assert_names(info.value, "t", 0, 9, 5)
    assert info.value.retriable


@pytest.mark.parametrize("value, reason", [
    (b"\x07\x00\x00\x00\x01\x02", "magic"),
    (b"\x00\x00\x01", "cut short"),
    (b"", "empty"),
])
def test_values_not_framed(value, reason):
    deserializer = AvroDeserializer(FakeRegistry({1: _avro(EVENT)}))
    with pytest.raises(ValueFramingError, match=reason) as info:
        deserializer.deserialize_many([_event_value(1, 1), value], "frames", 2, [40, 41])
    _assert_names(info.value, "frames", 2, 41, None)


@pytest.mark.parametrize("schema_type", ["PROTOBUF", "JSON"])
def test_an_id_of_another_schema_type_is_refused(schema_type):
    text = 'syntax = "proto3"; message M {}' if schema_type == "PROTOBUF" else '{"type": "object"}'
    other = Schema(text, schema_type)
    deserializer = AvroDeserializer(FakeRegistry({3: other}))
    with pytest.raises(WrongSchemaTypeError, match=schema_type) as info:
        deserializer(frame_schema_id(3) + b"\x02", SerializationContext("x", MessageField.VALUE))
    _assert_names(info.value, "x", -1, -1, 3)
    with pytest.raises(WrongSchemaTypeError) as info:
        deserializer.deserialize_many([frame_schema_id(3) + b"\x02"], "x", 1, [5])
    _assert_names(info.value, "x", 1, 5, 3)


def test_a_corrupt_payload_names_its_own_offset_in_a_mixed_batch():
    registry = FakeRegistry({1: _avro(EVENT), 2: _avro(EVENT)})
    deserializer = AvroDeserializer(registry)
    truncated = _event_value(2, 1, "abcdef")[:-3]
    values = [_event_value(1, 1), _event_value(2, 2), truncated, _event_value(1, 4)]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_many(values, "c", 0, [10, 11, 12, 13])
    _assert_names(info.value, "c", 0, 12, 2)
    assert [sorted(ids) for ids in registry.prefetched] == [[1, 2]]  # one prefetch for the batch's ids
    # the good values around it decode (and the schemas were fetched in one prefetch)
    assert deserializer.deserialize_many(values[:2] + [None], "c", 0, [10, 11, 12]) == [
        {"id": 1, "tag": None}, {"id": 2, "tag": None}, None]


def test_an_invalid_writer_schema_is_a_writer_schema_error():
    broken = Schema('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]}')
    deserializer = AvroDeserializer(FakeRegistry({4: broken}))
    with pytest.raises(WriterSchemaError, match="nope") as info:
        deserializer.deserialize_many([frame_schema_id(4) + b"\x00"], "w", 0, [1])
    _assert_names(info.value, "w", 0, 1, 4)


def test_errors_pickle_with_their_fields():
    exc = PayloadDecodeError("bad", "t", 1, 2, 3)
    again = pickle.loads(pickle.dumps(exc))
    assert again == exc and (again.topic, again.partition, again.offset, again.schema_id) == ("t", 1, 2, 3)


@pytest.mark.parametrize("kwargs, match", [
    ({"conf": {"no.such.key": 1}}, "Unrecognized properties: no.such.key"),
    ({"conf": {"use.latest.version": "yes"}}, "use.latest.version"),
    ({"conf": {"subject.name.strategy.type": "NOPE"}}, "subject.name.strategy.type"),
    ({"conf": {"schema.id.deserializer": lambda data, ctx, schema_id: data}}, "schema.id.deserializer"),
    ({"return_record_name": True}, "return_record_name"),
    ({"from_dict": 42}, "from_dict"),
    ({"schema_str": "{not json"}, "schema_str"),
])
def test_bad_settings_are_typed_value_errors(kwargs, match):
    with pytest.raises(DeserializerConfigurationError, match=match) as info:
        AvroDeserializer(FakeRegistry({}), **kwargs)
    assert isinstance(info.value, ValueError)


def test_a_client_without_resolve_is_refused():
    with pytest.raises(DeserializerConfigurationError, match="SchemaRegistryClient"):
        AvroDeserializer(object())


def test_from_dict_without_a_context_is_confluents_type_error():
    deserializer = AvroDeserializer(FakeRegistry({1: _avro(EVENT)}), from_dict=lambda obj, ctx: obj)
    assert deserializer(None) is None
    with pytest.raises(TypeError, match="SerializationContext cannot be None"):
        deserializer(_event_value(1, 1))


def test_inline_references_writes_each_named_type_once_at_first_use():
    base = {"type": "record", "name": "Base", "namespace": "r", "fields": [{"name": "v", "type": "int"}]}
    top = {"type": "record", "name": "Top", "namespace": "r",
           "fields": [{"name": "a", "type": "Base"}, {"name": "b", "type": ["null", "r.Base"]},
                      {"name": "c", "type": {"type": "array", "items": "r.Base"}}]}
    inlined = inline_references(top, [base])
    assert inlined["fields"][0]["type"] == base
    assert inlined["fields"][1]["type"] == ["null", "r.Base"]
    assert inlined["fields"][2]["type"] == {"type": "array", "items": "r.Base"}
    assert top["fields"][0]["type"] == "Base"  # the input is not changed
    assert inline_references(top, []) is top
