"""fastkc's AvroDeserializer against a real Schema Registry and confluent-kafka.

The registry is Apicurio's Confluent-compatible API (the `schema_registry`
fixture); the values are written by confluent-kafka's AvroSerializer (schemas
auto-registered), and what fastkc's deserializer gives, per value and in
batches, must equal what confluent-kafka's own AvroDeserializer gives for the
same bytes.
"""
import datetime
import decimal
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from fastkc.schema_registry import (
    AvroDeserializer,
    MessageField,
    SerializationContext,
    frame_schema_id,
    split_value,
)
from tests.support.kafka_tools import unique_name

sr = pytest.importorskip("confluent_kafka.schema_registry")
avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
pytest.importorskip("fastavro")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402

EVENT_V1 = {
    "type": "record", "name": "Event", "namespace": "fastkc.deser",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "int"},
        {"name": "tag", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "key", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "where", "type": {"type": "record", "name": "Place", "fields": [
            {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"], "default": None}]}},
        {"name": "items", "type": {"type": "array", "items": "double"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
    ],
}
# v2: `score` promoted int -> long, `tag` removed, `level` added with a default
EVENT_V2 = dict(EVENT_V1, fields=[
    {"name": "score", "type": "long"} if f["name"] == "score" else f
    for f in EVENT_V1["fields"] if f["name"] != "tag"
] + [{"name": "level", "type": "string", "default": "info"}])


def _event(i, **extra):
    record = {
        "id": i, "name": "event-{0}".format(i), "score": i * 7 - 50, "tag": None if i % 2 else "t{0}".format(i),
        "at": datetime.datetime(2026, 11, 27, 12, 0, i % 60, tzinfo=datetime.UTC),
        "day": datetime.date(2026, 1, 1 + i % 28), "price": decimal.Decimal("{0}.{1:02d}".format(i, i % 100)),
        "key": uuid.UUID(int=i + 1), "where": {"city": "c{0}".format(i), "zip": None if i % 3 else i},
        "items": [float(i), i / 4], "attrs": {"a": str(i)}, "kind": "ABC"[i % 3], "digest": bytes([i % 256] * 4),
    }
    record.update(extra)
    return record


def _v2_event(i):
    record = _event(i, level="warn" if i % 2 else "info")
    del record["tag"]
    return record


def _unique(prefix):
    return unique_name(prefix)


def _their_context(topic, headers=None):
    return confluent_serialization.SerializationContext(topic, confluent_serialization.MessageField.VALUE, headers)


def _serialized(theirs, topic, schema, records):
    serializer = avro_serde.AvroSerializer(theirs, json.dumps(schema))
    return [serializer(r, _their_context(topic)) for r in records]


def test_values_equal_confluents_per_value_and_in_a_batch(registries):
    theirs, ours = registries
    topic = _unique("deser")
    records = [_event(i) for i in range(40)]
    values = _serialized(theirs, topic, EVENT_V1, records)
    expected = [avro_serde.AvroDeserializer(theirs)(v, _their_context(topic)) for v in values]
    assert expected[5]["price"] == decimal.Decimal("5.05")  # their values carry the logical types
    deserializer = AvroDeserializer(ours)
    # a confluent-kafka SerializationContext and fastkc's both work, and no context at all
    assert [deserializer(v, _their_context(topic)) for v in values] == expected
    assert [deserializer(v, SerializationContext(topic, MessageField.VALUE)) for v in values] == expected
    assert deserializer(values[0]) == expected[0]
    assert deserializer(None, _their_context(topic)) is None
    batch = values[:20] + [None] + values[20:]
    got = deserializer.deserialize_many(batch, topic, 0, list(range(100, 100 + len(batch))))
    assert got == expected[:20] + [None] + expected[20:]


def test_schema_evolution_with_and_without_a_reader_schema(registries):
    theirs, ours = registries
    topic = _unique("evolve")
    v1 = _serialized(theirs, topic, EVENT_V1, [_event(i) for i in range(0, 10)])
    v2 = _serialized(theirs, topic, EVENT_V2, [_v2_event(i) for i in range(10, 20)])
    assert split_value(v1[0]).schema_id != split_value(v2[0]).schema_id
    mixed = [value for pair in zip(v1, v2) for value in pair]
    offsets = list(range(len(mixed)))
    # without a reader schema: each value in its writer's shape
    writers_shape = [avro_serde.AvroDeserializer(theirs)(v, _their_context(topic)) for v in mixed]
    assert {"tag" in value for value in writers_shape} == {True, False}
    assert AvroDeserializer(ours).deserialize_many(mixed, topic, 1, offsets) == writers_shape
    # with v2 as the reader schema: one shape, v1's values resolved (tag dropped, level defaulted, score long)
    reader = json.dumps(EVENT_V2)
    one_shape = [avro_serde.AvroDeserializer(theirs, reader)(v, _their_context(topic)) for v in mixed]
    assert all(set(value) == set(one_shape[1]) and "tag" not in value for value in one_shape)
    assert one_shape[0]["level"] == "info"
    resolving = AvroDeserializer(ours, reader)
    assert resolving.deserialize_many(mixed, topic, 1, offsets) == one_shape
    assert [resolving(v, _their_context(topic)) for v in mixed] == one_shape
    # use.latest.version reads with the subject's latest (v2) as confluent-kafka's does
    conf = {"use.latest.version": True}
    latest = [avro_serde.AvroDeserializer(theirs, conf=conf)(v, _their_context(topic)) for v in mixed]
    assert latest == one_shape
    assert [AvroDeserializer(ours, conf=conf)(v, _their_context(topic)) for v in mixed] == latest


def test_from_dict_and_the_schema_id_header(registries):
    theirs, ours = registries
    topic = _unique("fromdict")
    values = _serialized(theirs, topic, EVENT_V1, [_event(i) for i in range(5)])

    def to_pair(obj, ctx):
        return (ctx.topic, str(ctx.field), obj["id"], obj["name"])

    theirs_from = [avro_serde.AvroDeserializer(theirs, from_dict=to_pair)(v, _their_context(topic)) for v in values]
    ours_from = AvroDeserializer(ours, from_dict=to_pair)
    assert [ours_from(v, _their_context(topic)) for v in values] == theirs_from
    assert ours_from.deserialize_many(values, topic, 0, [0, 1, 2, 3, 4]) == theirs_from
    # the schema id in the __value_schema_id header, the value the bare payload
    frames = [split_value(v) for v in values]
    headers = [[("__value_schema_id", frame_schema_id(f.schema_id))] for f in frames]
    payloads = [f.payload for f in frames]
    expected = [avro_serde.AvroDeserializer(theirs)(p, _their_context(topic, h)) for p, h in zip(payloads, headers)]
    deserializer = AvroDeserializer(ours)
    assert [deserializer(p, _their_context(topic, h)) for p, h in zip(payloads, headers)] == expected
    assert deserializer.deserialize_many(payloads, topic, 0, [0, 1, 2, 3, 4], headers) == expected


def test_references_resolve_through_the_registry(registries):
    theirs, ours = registries
    topic = _unique("refs")
    base_subject = _unique("base")
    base = {"type": "record", "name": "Base", "namespace": "d", "fields": [{"name": "v", "type": "int"}]}
    top = {"type": "record", "name": "Top", "namespace": "d",
           "fields": [{"name": "b", "type": "d.Base"}, {"name": "more", "type": {"type": "array", "items": "Base"}}]}
    theirs.register_schema(base_subject, sr.Schema(json.dumps(base), "AVRO"))
    top_schema = sr.Schema(json.dumps(top), "AVRO", [sr.SchemaReference("d.Base", base_subject, 1)])
    theirs.register_schema(topic + "-value", top_schema)
    serializer = avro_serde.AvroSerializer(theirs, top_schema, conf={"auto.register.schemas": False,
                                                                      "use.latest.version": True})
    record = {"b": {"v": 7}, "more": [{"v": 1}, {"v": 2}]}
    value = serializer(record, _their_context(topic))
    assert avro_serde.AvroDeserializer(theirs)(value, _their_context(topic)) == record
    assert AvroDeserializer(ours)(value, _their_context(topic)) == record
    # a reader Schema with references is resolved through the registry too
    assert AvroDeserializer(ours, top_schema).deserialize_many([value], topic, 0, [0]) == [record]


@pytest.mark.parametrize("conf", [
    {"subject.name.strategy": sr.record_subject_name_strategy},
    {"subject.name.strategy.type": "RECORD"},
])
def test_use_latest_version_under_the_record_subject_strategy(registries, conf):
    theirs, ours = registries
    topic = _unique("record-subject")
    # no namespace: Apicurio's ccompat API does not find a subject with dots in it again
    name = "Event" + uuid.uuid4().hex[:8]
    v1, v2 = (dict(s, name=name, namespace="") for s in (EVENT_V1, EVENT_V2))
    values = _serialized(theirs, topic, v1, [_event(i) for i in range(4)])
    # the record's subject holds v1 then v2 (confluent-kafka looks the writer
    # schema up in it): both deserializers resolve v1's values to its latest, v2
    for version in (v1, v2):
        theirs.register_schema(name, sr.Schema(json.dumps(version), "AVRO"))
    conf = dict(conf, **{"use.latest.version": True})
    if "subject.name.strategy.type" in conf:
        expected = [avro_serde.AvroDeserializer(theirs, conf={"use.latest.version": True,
                                                              "subject.name.strategy": sr.record_subject_name_strategy})
                    (v, _their_context(topic)) for v in values]
    else:
        expected = [avro_serde.AvroDeserializer(theirs, conf=conf)(v, _their_context(topic)) for v in values]
    assert all("level" in value and "tag" not in value for value in expected)
    deserializer = AvroDeserializer(ours, conf=conf)
    assert [deserializer(v, _their_context(topic)) for v in values] == expected
    assert deserializer.deserialize_many(values, topic, 0, [0, 1, 2, 3]) == expected


def test_one_deserializer_shared_by_threads(registries):
    theirs, ours = registries
    topic = _unique("threads")
    values = _serialized(theirs, topic, EVENT_V1, [_event(i) for i in range(200)])
    expected = [avro_serde.AvroDeserializer(theirs)(v, _their_context(topic)) for v in values]
    deserializer = AvroDeserializer(ours)
    offsets = list(range(len(values)))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: deserializer.deserialize_many(values, topic, 0, offsets), range(16)))
    assert all(result == expected for result in results)
