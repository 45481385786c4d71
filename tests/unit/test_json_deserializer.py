"""JSONDeserializer (confluent-kafka's API) against a hand-written fake
registry: the values, validation on and off, the reader schema, and the
typed errors naming topic, partition, offset and schema id. The values are
checked against a real registry and confluent-kafka's own deserializer in
tests/integration/test_json_deserializer_real.py; the codec itself in
tests/unit/test_json_schema_codec.py."""
import json

import pytest

from fastkc.schema_registry import (
    DeserializationError,
    DeserializerConfigurationError,
    JSONDeserializer,
    MessageField,
    PayloadDecodeError,
    SerializationContext,
    WriterSchemaError,
    frame_schema_id,
)
from fastkc.schema_registry.client import Schema
from tests.support.fake_registry import FakeRegistry

SCHEMA = {"type": "object", "title": "Reading",
          "properties": {"id": {"type": "integer"}, "sensor": {"type": "string"}}, "required": ["id"]}


def _json(schema):
    return Schema(json.dumps(schema), "JSON")


def _framed(value, schema_id=4):
    return frame_schema_id(schema_id) + json.dumps(value).encode()


def _assert_names(exc, topic, partition, offset, schema_id):
    assert isinstance(exc, DeserializationError)
    assert (exc.topic, exc.partition, exc.offset, exc.schema_id) == (topic, partition, offset, schema_id)


def test_values_per_value_and_in_a_batch_with_the_writer_schema():
    deserializer = JSONDeserializer(None, schema_registry_client=FakeRegistry({4: _json(SCHEMA)}))
    values = [_framed({"id": i, "sensor": "s{0}".format(i)}) for i in range(5)] + [None]
    assert deserializer.deserialize_many(values, "t", 0, list(range(6))) == [
        {"id": i, "sensor": "s{0}".format(i)} for i in range(5)] + [None]
    assert deserializer(values[2], SerializationContext("t", MessageField.VALUE)) == {"id": 2, "sensor": "s2"}


def test_a_value_that_breaks_the_schema_is_refused_unless_validate_is_off():
    values = [_framed({"id": 1}), _framed({"sensor": "no id"})]
    checked = JSONDeserializer(json.dumps(SCHEMA))
    with pytest.raises(PayloadDecodeError, match="'id' is a required property") as info:
        checked.deserialize_many(values, "t", 2, [70, 71])
    _assert_names(info.value, "t", 2, 71, 4)
    unchecked = JSONDeserializer(json.dumps(SCHEMA), conf={"validate": False})
    assert unchecked.deserialize_many(values, "t", 2, [70, 71]) == [{"id": 1}, {"sensor": "no id"}]


def test_a_payload_that_is_not_json_names_its_record():
    deserializer = JSONDeserializer(json.dumps(SCHEMA))
    values = [_framed({"id": 1}), frame_schema_id(4) + b'{"id": 2', _framed({"id": 3})]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_many(values, "t", 0, [5, 6, 7])
    _assert_names(info.value, "t", 0, 6, 4)


def test_with_a_registry_an_unknown_writer_id_is_an_error_as_confluents():
    deserializer = JSONDeserializer(json.dumps(SCHEMA), schema_registry_client=FakeRegistry({}))
    with pytest.raises(WriterSchemaError) as info:
        deserializer.deserialize_many([_framed({"id": 1}, schema_id=9)], "t", 0, [3])
    _assert_names(info.value, "t", 0, 3, 9)


def test_from_dict_is_applied_last():
    deserializer = JSONDeserializer(json.dumps(SCHEMA), from_dict=lambda value, ctx: (ctx.topic, value["id"]))
    assert deserializer.deserialize_many([_framed({"id": 8})], "t", 0, [0]) == [("t", 8)]


@pytest.mark.parametrize("args, kwargs, why", [
    ((None,), {}, "schema_registry_client must be provided"),
    ((json.dumps(SCHEMA),), {"conf": {"validate": "yes"}}, "boolean"),
    ((json.dumps(SCHEMA),), {"conf": {"auto.register.schemas": True}}, "Unrecognized properties"),
    (("{not json",), {}, "schema_str"),
])
def test_confluents_settings_are_checked(args, kwargs, why):
    with pytest.raises(DeserializerConfigurationError, match=why):
        JSONDeserializer(*args, **kwargs)
