"""Schema Registry Avro straight into typed Arrow columns on the consumers'
Arrow paths: KafkaConsumer.poll_arrow(), arrow_stream() and fastkc.aio's
getmany_arrow(), against a real Schema Registry (the `schema_registry`
fixture) and bytes written by confluent-kafka's AvroSerializer. Every row's
key and value equal what confluent-kafka's AvroDeserializer gives for the
same bytes.

Schema evolution: a partition whose records move from writer schema v1 to
v2 gives one batch per Arrow type with no reader schema (a batch never mixes
two), and one type throughout with a reader schema. A corrupt value among
good ones: the rows before it come, then poll_arrow() raises the typed error
naming its offset, and seek() past it goes on.
"""
import asyncio
import json
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.aio import AIOKafkaConsumer
from fastkc.schema_registry import AvroDeserializer, PayloadDecodeError
from tests.support.avro_topics import COUNT, PARTITIONS, confluent_value, context, write_avro
from tests.support.kafka_tools import Message, produce

avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
pa = pytest.importorskip("pyarrow")
from confluent_kafka.serialization import MessageField  # noqa: E402

EVENT_V1 = {"type": "record", "name": "Event", "namespace": "fastkc.evolve", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"}]}
EVENT_V2 = {"type": "record", "name": "Event", "namespace": "fastkc.evolve", "fields": EVENT_V1["fields"] + [
    {"name": "score", "type": ["null", "double"], "default": None}]}


def _consumer(bootstrap, **configs):
    return KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                         **configs)


def _drain_arrow(consumer, want, timeout=30.0):
    batches, rows = [], 0
    deadline = time.monotonic() + timeout
    while rows < want and time.monotonic() < deadline:
        batch = consumer.poll_arrow(timeout_ms=500)
        if batch.num_rows:
            batches.append(batch)
            rows += batch.num_rows
    return batches


def _assert_rows_equal_theirs(registries, topic, batches, written):
    rows = [row for batch in batches for row in batch.to_pylist()]
    assert len(rows) == len(written)
    assert {(r["partition"], r["offset"]) for r in rows} == set(written)
    for row in rows:
        raw_key, raw_value = written[row["partition"], row["offset"]]
        assert row["value"] == confluent_value(registries, topic, raw_value, MessageField.VALUE)
        assert row["key"] == confluent_value(registries, topic, raw_key, MessageField.KEY)


@pytest.fixture
def typed_consumer(registries, kafka_broker, make_topic):
    """(consumer, topic, written): COUNT Avro records over PARTITIONS, and a
    KafkaConsumer assigned to them with AvroDeserializer keys and values."""
    _, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    written = write_avro(registries, bootstrap, topic)
    with _consumer(bootstrap, key_deserializer=AvroDeserializer(ours),
                   value_deserializer=AvroDeserializer(ours)) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        yield consumer, topic, written


def test_poll_arrow_gives_typed_key_and_value_columns(registries, typed_consumer):
    consumer, topic, written = typed_consumer
    batches = _drain_arrow(consumer, COUNT)
    _assert_rows_equal_theirs(registries, topic, batches, written)
    value_type = batches[0].schema.field("value").type
    assert pa.types.is_struct(value_type)
    assert value_type.field("at").type == pa.timestamp("ms", tz="UTC")
    assert value_type.field("tags").type == pa.list_(pa.field("item", pa.string(), nullable=False))
    assert all(b.schema == batches[0].schema for b in batches)


def _write_evolving(registries, bootstrap, topic, v1_count, v2_count):
    """v1_count Event v1 records, then v2_count Event v2 records, one partition."""
    theirs, _ = registries
    v1 = avro_serde.AvroSerializer(theirs, json.dumps(EVENT_V1))
    v2 = avro_serde.AvroSerializer(theirs, json.dumps(EVENT_V2))
    ctx = context(topic, MessageField.VALUE)
    messages = [Message(value=v1({"id": i, "name": "n%d" % i}, ctx), partition=0) for i in range(v1_count)]
    messages += [Message(value=v2({"id": i, "name": "n%d" % i, "score": i / 2}, ctx), partition=0)
                 for i in range(v1_count, v1_count + v2_count)]
    return produce(bootstrap, topic, messages)


def test_a_writer_schema_change_starts_a_new_batch_without_a_reader_schema(registries, kafka_broker, make_topic):
    _, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    _write_evolving(registries, bootstrap, topic, 30, 20)
    with _consumer(bootstrap, value_deserializer=AvroDeserializer(ours)) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        batches = _drain_arrow(consumer, 50)
        assert consumer.position(TopicPartition(topic, 0)) == 50
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(50))  # nothing lost, nothing twice
    types = [b.schema.field("value").type for b in batches]
    v1_type = types[0]
    assert [f.name for f in v1_type] == ["id", "name"]
    # every batch holds one type; the change falls between batches, at offset 30
    change = next(i for i, t in enumerate(types) if t != v1_type)
    assert batches[change].column("offset")[0].as_py() == 30
    assert all(t == v1_type for t in types[:change]) and all(t == types[change] for t in types[change:])
    assert [f.name for f in types[change]] == ["id", "name", "score"]
    values = [v for b in batches for v in b.column("value").to_pylist()]
    assert values[29] == {"id": 29, "name": "n29"} and values[31] == {"id": 31, "name": "n31", "score": 15.5}


def test_a_reader_schema_gives_one_type_across_the_change(registries, kafka_broker, make_topic):
    _, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    _write_evolving(registries, bootstrap, topic, 30, 20)
    with _consumer(bootstrap, value_deserializer=AvroDeserializer(ours, json.dumps(EVENT_V2))) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        batches = _drain_arrow(consumer, 50)
    values = [v for b in batches for v in b.column("value").to_pylist()]
    assert values == [{"id": i, "name": "n%d" % i, "score": None if i < 30 else i / 2} for i in range(50)]
    assert len({b.schema for b in batches}) == 1


def test_a_corrupt_value_raises_at_its_offset_and_seek_goes_past(registries, kafka_broker, make_topic):
    _, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    written = write_avro(registries, bootstrap, topic, count=20, partition=0)
    # a framed value whose payload is cut short, written after the 20 good ones, then 5 more
    bad = written[0, 3][1][:7]
    produce(bootstrap, topic, [Message(value=bad, partition=0)])
    more = write_avro(registries, bootstrap, topic, count=5, partition=0)
    tp = TopicPartition(topic, 0)
    with _consumer(bootstrap, value_deserializer=AvroDeserializer(ours)) as consumer:
        consumer.assign([tp])
        rows = []
        deadline = time.monotonic() + 30
        with pytest.raises(PayloadDecodeError) as info:
            while time.monotonic() < deadline:
                rows.extend(consumer.poll_arrow(timeout_ms=500).column("offset").to_pylist())
        assert rows == list(range(20))
        assert (info.value.topic, info.value.partition, info.value.offset) == (topic, 0, 20)
        assert consumer.position(tp) == 20
        with pytest.raises(PayloadDecodeError):  # again, as Java's RecordDeserializationException
            consumer.poll_arrow(timeout_ms=5000)
        consumer.seek(tp, 21)
        after = _drain_arrow(consumer, 5)
    assert [o for b in after for o in b.column("offset").to_pylist()] == sorted(o for _, o in more)


def test_arrow_stream_reads_typed_rows(registries, typed_consumer):
    consumer, topic, written = typed_consumer
    table = consumer.arrow_stream(until="end", timeout_ms=30000).reader().read_all()
    _assert_rows_equal_theirs(registries, topic, table.to_batches(), written)


def test_aio_getmany_arrow_gives_typed_columns(registries, kafka_broker, make_topic):
    _, ours = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    written = write_avro(registries, bootstrap, topic)

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, key_deserializer=AvroDeserializer(ours),
                                    value_deserializer=AvroDeserializer(ours), auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            batches, rows = [], 0
            deadline = time.monotonic() + 30
            while rows < COUNT and time.monotonic() < deadline:
                batch = await consumer.getmany_arrow(timeout_ms=500, max_records=50)
                if batch.num_rows:
                    batches.append(batch)
                    rows += batch.num_rows
            return batches
        finally:
            await consumer.stop()

    batches = asyncio.run(asyncio.wait_for(scenario(), 60))
    _assert_rows_equal_theirs(registries, topic, batches, written)
