"""fastkc's ProtobufDeserializer against a real Schema Registry (Apicurio's
Confluent-compatible API, the `schema_registry` fixture), a real broker, and
Protobuf bytes written by confluent-kafka's ProtobufSerializer: on sync
poll(), iteration and fastkc.aio's getmany, every record's value equals what
confluent-kafka's own ProtobufDeserializer gives for the same bytes, and the
deserializer is called once per partition's batch, never per record. A
value that is not Protobuf stops at its offset with the records before it
delivered, and seek() goes past it."""
import asyncio
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.aio import AIOKafkaConsumer
from fastkc.schema_registry import PayloadDecodeError, ProtobufDeserializer, frame_schema_id
from tests.support.counting import CountsCalls
from tests.support.kafka_tools import Message, produce
from tests.support.protobuf_types import Event, event_of

protobuf_serde = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402

PARTITIONS = 2
COUNT = 160
_CONF = {"use.deprecated.format": False}


class CountingProtobufDeserializer(CountsCalls, ProtobufDeserializer):
    """Counts the per-value calls and the batch calls fastkc makes."""


def _context(topic):
    return confluent_serialization.SerializationContext(topic, confluent_serialization.MessageField.VALUE)


@pytest.fixture
def protobuf_topic(registries, kafka_broker, make_topic):
    """(bootstrap, topic, {(partition, offset): value bytes}): COUNT Events
    written through confluent-kafka's ProtobufSerializer (schema
    auto-registered with the real registry); record 77's value is bytes that
    are framed but not an Event."""
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    serializer = protobuf_serde.ProtobufSerializer(Event, theirs, _CONF)
    messages = [Message(value=serializer(event_of(i), _context(topic)), partition=i % PARTITIONS)
                for i in range(COUNT)]
    written = produce(bootstrap, topic, messages)
    return bootstrap, topic, {(w.partition, w.offset): w.value for w in written}


def _theirs(registries, topic, raw):
    theirs, _ = registries
    return protobuf_serde.ProtobufDeserializer(Event, _CONF, theirs)(raw, _context(topic))


def _assert_equal_to_confluents(registries, topic, records, written):
    assert {(r.partition, r.offset) for r in records} == set(written)
    for record in records:
        raw = written[record.partition, record.offset]
        assert type(record.value) is Event
        assert record.value == _theirs(registries, topic, raw)
        assert record.serialized_value_size == len(raw)


def _drain_poll(consumer, want, timeout=30.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    return got


def test_sync_poll_and_iteration_decode_whole_batches(registries, protobuf_topic):
    bootstrap, topic, written = protobuf_topic
    _, ours = registries
    for way in ("poll", "iterate"):
        deserializer = CountingProtobufDeserializer(Event, _CONF, ours)
        with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=deserializer, consumer_timeout_ms=3000,
                           auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=50) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            records = _drain_poll(consumer, COUNT) if way == "poll" else [r for r, _ in zip(consumer, range(COUNT))]
        _assert_equal_to_confluents(registries, topic, records, written)
        assert deserializer.per_value_calls == 0 and 0 < deserializer.batch_calls < COUNT // 2


def test_aio_getmany_decodes_whole_batches(registries, protobuf_topic):
    bootstrap, topic, written = protobuf_topic
    deserializer = CountingProtobufDeserializer(Event, _CONF)

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=deserializer,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            got = []
            deadline = time.monotonic() + 30
            while len(got) < COUNT and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500, max_records=40)).values():
                    got.extend(records)
            return got
        finally:
            await consumer.stop()

    records = asyncio.run(asyncio.wait_for(scenario(), 60))
    _assert_equal_to_confluents(registries, topic, records, written)
    assert deserializer.per_value_calls == 0 and deserializer.batch_calls > 0


def test_a_corrupt_value_stops_at_its_offset_and_seek_goes_past(registries, kafka_broker, make_topic):
    theirs, _ = registries
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    serializer = protobuf_serde.ProtobufSerializer(Event, theirs, _CONF)
    good = [serializer(event_of(i), _context(topic)) for i in range(20)]
    schema_id = int.from_bytes(good[0][1:5], "big")
    # framed with the real id, but the payload's first field claims 100 bytes that are not there
    values = good[:9] + [frame_schema_id(schema_id, (0,)) + b"\x12\x64ab"] + good[9:]
    produce(bootstrap, topic, [Message(value=v, partition=0) for v in values])
    with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=ProtobufDeserializer(Event, _CONF),
                       auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        got = []
        deadline = time.monotonic() + 30
        with pytest.raises(PayloadDecodeError) as info:
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got.extend(records)
        assert (info.value.topic, info.value.partition, info.value.offset, info.value.schema_id) == (
            topic, 0, 9, schema_id)
        assert [r.offset for r in got] == list(range(9))
        assert consumer.position(tp) == 9
        consumer.seek(tp, 10)
        rest = _drain_poll(consumer, 20)
    assert [r.offset for r in rest] == list(range(10, 21))
    assert [r.value for r in rest] == [event_of(i) for i in range(9, 20)]


def test_without_a_message_type_records_get_dicts_from_the_registrys_schema(registries, protobuf_topic):
    """fastkc's extension: no generated class; the writer schema (registered
    by confluent-kafka's serializer) comes from the real registry, and each
    value is MessageToDict's shape with native values."""
    from google.protobuf import json_format

    bootstrap, topic, written = protobuf_topic
    _, ours = registries
    deserializer = CountingProtobufDeserializer(None, _CONF, ours)
    with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=deserializer,
                       auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        records = _drain_poll(consumer, COUNT)
    assert {(r.partition, r.offset) for r in records} == set(written)
    for record in records:
        message = _theirs(registries, topic, written[record.partition, record.offset])
        expected = json_format.MessageToDict(message, preserving_proto_field_name=True)
        for name in ("id", "count", "stamp"):  # native 64-bit ints, not JSON strings
            if name in expected:
                expected[name] = getattr(message, name)
        for name in ("digest", "ratio"):  # native bytes, the float32 the message holds
            if name in expected:
                expected[name] = getattr(message, name)
        if "attrs" in expected:
            expected["attrs"] = dict(message.attrs)
        assert record.value == expected
    assert deserializer.per_value_calls == 0 and deserializer.batch_calls > 0


def test_poll_arrow_gives_typed_columns_of_the_runtimes_values(registries, protobuf_topic):
    """poll_arrow(): the value column is the message as Arrow (one struct
    column), row for row what the runtime parses from the same bytes."""
    import pyarrow as pa

    bootstrap, topic, written = protobuf_topic
    _, ours = registries
    for deserializer in (ProtobufDeserializer(Event, _CONF), ProtobufDeserializer(None, _CONF, ours)):
        with KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=deserializer,
                           auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            batches, rows = [], 0
            deadline = time.monotonic() + 30
            while rows < COUNT and time.monotonic() < deadline:
                batch = consumer.poll_arrow(timeout_ms=500)
                if batch.num_rows:
                    batches.append(batch)
                    rows += batch.num_rows
        table = pa.Table.from_batches(batches)
        assert table.num_rows == COUNT
        value = table.schema.field("value").type
        assert pa.types.is_struct(value)
        assert value.field("id").type == pa.int64() and value.field("at").type == pa.timestamp("ns", tz="UTC")
        positions = list(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
        rows_at = dict(zip(positions, table.column("value").to_pylist()))
        # the timestamps as their int64 nanoseconds (to_pylist would give datetimes, without the nanoseconds)
        at_ns = dict(zip(positions, table.column("value").combine_chunks().field("at").cast(pa.int64()).to_pylist()))
        for (partition, offset), raw in written.items():
            message = _theirs(registries, topic, raw)
            row = rows_at[partition, offset]
            assert (row["id"], row["name"], row["tags"], row["count"]) == (
                message.id, message.name, list(message.tags), message.count)
            assert row["note"] == (message.note.value if message.HasField("note") else None)
            assert row["where"] == ({"city": message.where.city, "zip": message.where.zip}
                                    if message.HasField("where") else None)
            assert dict(row["attrs"]) == dict(message.attrs)
            assert at_ns[partition, offset] == message.at.seconds * 10**9 + message.at.nanos
