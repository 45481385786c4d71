"""fastkc's JSONDeserializer against a real Schema Registry (Apicurio's
Confluent-compatible API), a real broker and JSON written by confluent-kafka's
JSONSerializer: on poll() every value equals what confluent-kafka's own
JSONDeserializer gives for the same bytes (whole batches, never per record);
on poll_arrow() the value column is typed by the schema's Arrow mapping and
holds the same values; a value that breaks the schema stops at its offset
and seek() goes past it."""
import json
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.schema_registry import JSONDeserializer, PayloadDecodeError, frame_schema_id
from tests.support.kafka_tools import Message, produce

json_serde = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402

PARTITIONS = 2
COUNT = 150
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "sensor": {"type": "string"}, "level": {"type": ["number", "null"]},
        "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}},
        "kind": {"type": "string", "enum": ["A", "B", "C"]},
    },
    "required": ["id", "sensor"],
}


def reading_of(i):
    value = {"id": i, "sensor": "s{0}".format(i % 7), "level": None if i % 4 == 0 else i / 8, "ok": i % 2 == 0,
             "tags": ["t{0}".format(j) for j in range(i % 3)], "kind": "ABC"[i % 3]}
    if i % 5:
        value["where"] = {"city": "c{0}".format(i), "zip": i}
    return value


def _context(topic):
    return confluent_serialization.SerializationContext(topic, confluent_serialization.MessageField.VALUE)


@pytest.fixture
def json_topic(registries, kafka_broker, make_topic):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    serializer = json_serde.JSONSerializer(json.dumps(SCHEMA), theirs)
    messages = [Message(value=serializer(reading_of(i), _context(topic)), partition=i % PARTITIONS)
                for i in range(COUNT)]
    written = produce(bootstrap, topic, messages)
    return bootstrap, topic, {(w.partition, w.offset): w.value for w in written}


def _drain(take, want, timeout=30.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got.extend(take())
    return got


def test_poll_gives_what_confluents_deserializer_gives(registries, json_topic):
    theirs, ours = registries
    bootstrap, topic, written = json_topic
    confluent = json_serde.JSONDeserializer(None, schema_registry_client=theirs)
    for ours_d in (JSONDeserializer(None, schema_registry_client=ours), JSONDeserializer(json.dumps(SCHEMA))):
        with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=ours_d, auto_offset_reset="earliest",
                           enable_auto_commit=False) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            records = _drain(lambda: [r for rs in consumer.poll(timeout_ms=500).values() for r in rs], COUNT)
        assert {(r.partition, r.offset) for r in records} == set(written)
        for record in records:
            assert record.value == confluent(written[record.partition, record.offset], _context(topic))


def test_poll_arrow_gives_typed_columns_of_the_same_values(registries, json_topic):
    _, ours = registries
    bootstrap, topic, written = json_topic
    with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=JSONDeserializer(None,
                       schema_registry_client=ours), auto_offset_reset="earliest",
                       enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        batches = []
        rows = 0
        deadline = time.monotonic() + 30
        while rows < COUNT and time.monotonic() < deadline:
            batch = consumer.poll_arrow(timeout_ms=500)
            rows += batch.num_rows
            batches.append(batch)
    import pyarrow as pa

    table = pa.Table.from_batches([b for b in batches if b.num_rows])
    assert table.num_rows == COUNT
    value_type = table.schema.field("value").type
    assert pa.types.is_struct(value_type) and value_type.field("id").type == pa.int64()
    assert pa.types.is_dictionary(value_type.field("kind").type)
    by_position = dict(zip(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()),
                           table.column("value").to_pylist()))
    for (partition, offset), raw in written.items():
        expected = json.loads(raw[5:])
        got = {k: v for k, v in by_position[partition, offset].items() if v is not None or k in expected}
        assert got == {k: expected.get(k) for k in got}
        assert set(expected) <= set(got)


def test_a_value_that_breaks_the_schema_stops_at_its_offset_and_seek_goes_past(registries, kafka_broker,
                                                                              make_topic):
    theirs, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    serializer = json_serde.JSONSerializer(json.dumps(SCHEMA), theirs)
    good = [serializer(reading_of(i), _context(topic)) for i in range(12)]
    schema_id = int.from_bytes(good[0][1:5], "big")
    values = good[:5] + [frame_schema_id(schema_id) + b'{"id": "not a number", "sensor": "x"}'] + good[5:]
    produce(bootstrap, topic, [Message(value=v, partition=0) for v in values])
    tp = TopicPartition(topic, 0)
    with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=JSONDeserializer(None,
                       schema_registry_client=ours), auto_offset_reset="earliest",
                       enable_auto_commit=False) as consumer:
        consumer.assign([tp])
        got = []
        with pytest.raises(PayloadDecodeError) as info:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                got.extend(r for rs in consumer.poll(timeout_ms=500).values() for r in rs)
        assert (info.value.offset, info.value.schema_id) == (5, schema_id)
        assert [r.offset for r in got] == list(range(5))
        consumer.seek(tp, 6)
        rest = _drain(lambda: [r for rs in consumer.poll(timeout_ms=500).values() for r in rs], 12)
    assert [r.value for r in rest] == [reading_of(i) for i in range(5, 12)]
