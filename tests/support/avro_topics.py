"""Avro topics written by confluent-kafka's AvroSerializer against the test
registry, and what confluent-kafka's AvroDeserializer reads back from them:
the independent side of the Schema Registry consumers' integration tests
(tests/integration/test_batch_deserializer_consumers.py,
tests/integration/test_avro_arrow_consumers.py)."""
import json

import pytest

from tests.support.kafka_tools import Message, produce

avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402

VALUE_SCHEMA = {
    "type": "record", "name": "Reading", "namespace": "fastkc.batch",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "sensor", "type": "string"},
        {"name": "level", "type": ["null", "double"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
KEY_SCHEMA = {"type": "record", "name": "ReadingKey", "namespace": "fastkc.batch",
              "fields": [{"name": "sensor", "type": "string"}]}
PARTITIONS = 2
COUNT = 120


def context(topic, field):
    return confluent_serialization.SerializationContext(topic, field)


def reading_of(i):
    return {"id": i, "sensor": "s{0}".format(i % 7), "level": None if i % 4 == 0 else i / 8,
            "at": 1_790_000_000_000 + i, "tags": ["t{0}".format(j) for j in range(i % 3)]}


def write_avro(registries, bootstrap, topic, count=COUNT, partition=None, bad=None):
    """`count` Avro records (key and value) written through confluent-kafka's
    serializers; `bad` names record numbers whose value is written unframed.
    Returns {(partition, offset): (key bytes, value bytes)}."""
    theirs, _ = registries
    value_serializer = avro_serde.AvroSerializer(theirs, json.dumps(VALUE_SCHEMA))
    key_serializer = avro_serde.AvroSerializer(theirs, json.dumps(KEY_SCHEMA))
    messages = []
    for i in range(count):
        reading = reading_of(i)
        value = b"not avro at all" if bad and i in bad else value_serializer(
            reading, context(topic, confluent_serialization.MessageField.VALUE))
        key = key_serializer({"sensor": reading["sensor"]}, context(topic, confluent_serialization.MessageField.KEY))
        messages.append(Message(key=key, value=value, partition=i % PARTITIONS if partition is None else partition))
    written = produce(bootstrap, topic, messages)
    return {(w.partition, w.offset): (w.key, w.value) for w in written}


def confluent_value(registries, topic, raw, field):
    """What confluent-kafka's AvroDeserializer gives for these bytes."""
    theirs, _ = registries
    deserializer = avro_serde.AvroDeserializer(theirs)
    return None if raw is None else deserializer(raw, context(topic, field))


