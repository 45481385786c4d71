"""valueFormat=avro / keyFormat=avro (fastkc/spark/formats.py) on a real
local SparkSession, a real Schema Registry and bytes written by
confluent-kafka's AvroSerializer: the key and value are typed Spark columns
whose rows equal what confluent-kafka's AvroDeserializer gives, the schema
read from the registry at planning; a reader schema (valueSchema) resolves
records of two writer versions into one type."""
import json

import pytest

from tests.support.avro_topics import COUNT, PARTITIONS, confluent_value, write_avro
from tests.support.kafka_tools import Message, produce

pytestmark = pytest.mark.broker
avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402


def _read(spark, bootstrap, topic, registry_url, **options):
    reader = (spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("schema.registry.url", registry_url))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_key_and_value_are_typed_columns_equal_to_confluents(spark, kafka_broker, make_topic, registries,
                                                             schema_registry):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    written = write_avro(registries, bootstrap, topic)
    df = _read(spark, bootstrap, topic, schema_registry.url, keyFormat="avro", valueFormat="avro")
    value_type = df.schema["value"].dataType
    assert value_type.simpleString().startswith("struct<id:bigint,sensor:string,level:double,at:timestamp,")
    rows = df.toArrow().to_pylist()
    assert len(rows) == COUNT
    for row in rows:
        raw_key, raw_value = written[row["partition"], row["offset"]]
        assert row["value"] == confluent_value(registries, topic, raw_value, MessageField.VALUE)
        assert row["key"] == confluent_value(registries, topic, raw_key, MessageField.KEY)
    # a filter on a field of the value runs in Spark on the typed column
    assert df.where("value.id < 10").count() == 10


EVENT_V1 = {"type": "record", "name": "Evolving", "namespace": "fastkc.spark", "fields": [
    {"name": "id", "type": "int"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]}
EVENT_V2 = {"type": "record", "name": "Evolving", "namespace": "fastkc.spark", "fields": [
    {"name": "id", "type": "long"},  # promoted
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "note", "type": ["null", "string"], "default": None}]}


def test_two_writer_versions_read_as_the_latest(spark, kafka_broker, make_topic, registries, schema_registry):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = avro_serde.AvroSerializer(theirs, json.dumps(EVENT_V1))
    v2 = avro_serde.AvroSerializer(theirs, json.dumps(EVENT_V2))
    produce(bootstrap, topic, [Message(value=v1({"id": i, "kind": "AB"[i % 2]}, ctx), partition=0) for i in range(5)]
            + [Message(value=v2({"id": i, "kind": "A", "note": "n%d" % i}, ctx), partition=0) for i in range(5, 8)])
    # no valueSchema: the subject's latest (v2) read at planning; v1's records resolve to it
    df = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="avro")
    assert df.schema["value"].dataType.simpleString() == "struct<id:bigint,kind:string,note:string>"
    values = [row["value"] for row in df.orderBy("offset").toArrow().to_pylist()]
    assert values == [{"id": i, "kind": "AB"[i % 2], "note": None} for i in range(5)] + [
        {"id": i, "kind": "A", "note": "n%d" % i} for i in range(5, 8)]
    # a given reader schema instead: v1's shape, for the records v1 wrote
    older = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="avro", valueSchema=json.dumps(EVENT_V1),
                  endingOffsets=json.dumps({topic: {"0": 5}}))
    assert older.schema["value"].dataType.simpleString() == "struct<id:int,kind:string>"
    assert [r["value"]["id"] for r in older.orderBy("offset").collect()] == list(range(5))
    # v2's records cannot be read as v1 (long is not promoted to int): the
    # task fails with the typed error naming the first of them
    everything = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="avro",
                       valueSchema=json.dumps(EVENT_V1))
    with pytest.raises(Exception, match=r"WriterSchemaError.*long cannot be read as int.*offset=5"):
        everything.collect()


def test_a_missing_registry_url_is_an_option_error(spark, kafka_broker, make_topic):
    topic = make_topic(partitions=1)
    reader = (spark.read.format("fastkc").option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
              .option("subscribe", topic).option("valueFormat", "avro"))
    with pytest.raises(Exception, match="schema.registry.url"):
        reader.load()


WITH_UNIONS = {"type": "record", "name": "WithUnions", "namespace": "fastkc.spark", "fields": [
    {"name": "id", "type": "int"},
    {"name": "u", "type": ["null", "int", "string"]},
    {"name": "both", "type": ["string", {"type": "record", "name": "Point",
                                         "fields": [{"name": "x", "type": "double"}]}]},
]}


def test_a_union_of_several_types_is_spark_avros_struct_of_members(spark, kafka_broker, make_topic, registries,
                                                                    schema_registry):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = avro_serde.AvroSerializer(theirs, json.dumps(WITH_UNIONS))
    values = [{"id": 0, "u": None, "both": "s"}, {"id": 1, "u": 5, "both": {"x": 1.5}},
              {"id": 2, "u": "t", "both": "r"}]
    produce(bootstrap, topic, [Message(value=serializer(v, ctx), partition=0) for v in values])
    df = _read(spark, bootstrap, topic, schema_registry.url, valueFormat="avro")
    # spark-avro's (from_avro's) shape: the branches besides null as member0, member1, ...
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:int,u:struct<member0:int,member1:string>,both:struct<member0:string,member1:struct<x:double>>>")
    # (collect, not toArrow: pyspark 4.3's toArrow refuses any null row of a struct with a non-nullable
    # field, here member1's x, as Spark's own Arrow writer nulls the children of a null struct)
    rows = [row["value"].asDict(recursive=True) for row in df.orderBy("offset").collect()]
    assert rows == [
        {"id": 0, "u": None, "both": {"member0": "s", "member1": None}},
        {"id": 1, "u": {"member0": 5, "member1": None}, "both": {"member0": None, "member1": {"x": 1.5}}},
        {"id": 2, "u": {"member0": None, "member1": "t"}, "both": {"member0": "r", "member1": None}},
    ]
    assert df.where("value.u.member0 = 5").count() == 1
