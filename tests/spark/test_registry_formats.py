"""valueFormat=protobuf and valueFormat=json (fastkc/spark/formats.py) on a
real local SparkSession, a real Schema Registry and bytes written by
confluent-kafka's ProtobufSerializer and JSONSerializer: the value is a
typed Spark column, its type read from the registry at planning, its rows
what the protobuf runtime / json.loads read from the same bytes."""
import json

import pytest

from tests.support.kafka_tools import Message, produce
from tests.support.protobuf_types import Event, event_of

pytestmark = pytest.mark.broker
protobuf_serde = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
json_serde = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

COUNT = 60
READING = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
           "properties": {"id": {"type": "integer"}, "sensor": {"type": "string"},
                          "tags": {"type": "array", "items": {"type": "string"}},
                          "kind": {"type": "string", "enum": ["A", "B"]}},
           "required": ["id"]}


def _read(spark, bootstrap, topic, registry_url, **options):
    reader = (spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("schema.registry.url", registry_url))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_protobuf_values_are_typed_columns_of_the_runtimes_values(spark, kafka_broker, make_topic, registries,
                                                                   schema_registry):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    serializer = protobuf_serde.ProtobufSerializer(Event, theirs, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    written = produce(bootstrap, topic, [Message(value=serializer(event_of(i), ctx), partition=i % 2)
                                         for i in range(COUNT)])
    df = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="protobuf",
               valueMessage="fastkc.tests.Event")
    value_type = df.schema["value"].dataType
    assert value_type.simpleString().startswith("struct<id:bigint,name:string,score:int,")
    assert value_type["count"].dataType.simpleString() == "decimal(20,0)"  # uint64
    rows = df.toArrow().to_pylist()
    assert len(rows) == COUNT
    by_offset = {(w.partition, w.offset): i for i, w in enumerate(written)}
    for row in rows:
        expected = event_of(by_offset[row["partition"], row["offset"]])
        value = row["value"]
        assert (value["id"], value["name"], value["score"], value["tags"], int(value["count"])) == (
            expected.id, expected.name, expected.score, list(expected.tags), expected.count)
        assert value["kind"] == ("KIND_UNSPECIFIED", "KIND_A", "KIND_B")[expected.kind]
        assert dict(value["attrs"]) == dict(expected.attrs)
        assert value["where"] == ({"city": expected.where.city, "zip": expected.where.zip}
                                  if expected.HasField("where") else None)
    assert df.where("value.id < 10").count() == 10


def test_protobuf_without_a_message_name_reads_the_files_first_message(spark, kafka_broker, make_topic,
                                                                        registries, schema_registry):
    # Event is the file's second message; the first is Place: the option is what picks Event
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    serializer = protobuf_serde.ProtobufSerializer(Event, theirs, {"use.deprecated.format": False})
    produce(bootstrap, topic, [Message(value=serializer(event_of(1), SerializationContext(
        topic, MessageField.VALUE)), partition=0)])
    df = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="protobuf")
    assert [f.name for f in df.schema["value"].dataType.fields] == ["city", "zip"]


def test_json_values_are_typed_columns_of_json_loads(spark, kafka_broker, make_topic, registries, schema_registry):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    serializer = json_serde.JSONSerializer(json.dumps(READING), theirs)
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [{"id": i, "sensor": "s{0}".format(i), "tags": ["t"] * (i % 3), "kind": "AB"[i % 2]}
              for i in range(COUNT)]
    produce(bootstrap, topic, [Message(value=serializer(v, ctx), partition=0) for v in values])
    df = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="json")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,sensor:string,tags:array<string>,kind:string>")
    rows = sorted(df.toArrow().to_pylist(), key=lambda row: row["offset"])
    assert [row["value"] for row in rows] == values
