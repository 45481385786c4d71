"""fastkc's consumers hand a batch deserializer (AvroDeserializer) whole
partitions of values: against a real Schema Registry (Apicurio, the
`schema_registry` fixture) and Avro bytes written by confluent-kafka's
AvroSerializer, on sync poll(), iteration, fastkc.aio's getmany / getone and
the share consumer's poll(). Every record's key and value equal what
confluent-kafka's own AvroDeserializer gives for the same bytes, and the
deserializer is never called per record.

A value that is not Schema Registry framing, among good ones, behaves as
Java's RecordDeserializationException: the records before it are delivered,
poll() raises an error naming topic, partition and offset, the position stays
at it (poll() raises again), and seeking past it goes on with the rest; a
per-record deserializer that raises gives the same records, error and
positions.
"""
import asyncio
import time

import pytest

from fastkc import KafkaConsumer, KafkaShareConsumer, TopicPartition
from fastkc.aio import AIOKafkaConsumer
from fastkc.schema_registry import AvroDeserializer, ValueFramingError
from tests.support.avro_topics import COUNT, PARTITIONS, confluent_value, write_avro
from tests.support.counting import CountsCalls
from tests.support.share import set_group_configs

avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
pytest.importorskip("fastavro")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402


class CountingAvroDeserializer(CountsCalls, AvroDeserializer):
    """Counts the per-value calls and the batch calls fastkc makes."""


def _deserializers(registries):
    _, ours = registries
    return CountingAvroDeserializer(ours), CountingAvroDeserializer(ours)


@pytest.fixture
def avro_topic(registries, kafka_broker, make_topic):
    """(bootstrap, topic, written, key deserializer, value deserializer): a
    topic of PARTITIONS partitions holding COUNT Avro records, and two
    counting AvroDeserializers."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    written = write_avro(registries, bootstrap, topic)
    return (bootstrap, topic, written) + _deserializers(registries)


def _assert_records_equalconfluent_value(registries, topic, records, written):
    assert len(records) == len(written)
    assert {(r.partition, r.offset) for r in records} == set(written)
    for record in records:
        raw_key, raw_value = written[record.partition, record.offset]
        assert record.value == confluent_value(registries, topic, raw_value, confluent_serialization.MessageField.VALUE)
        assert record.key == confluent_value(registries, topic, raw_key, confluent_serialization.MessageField.KEY)
        # the sizes stay the raw bytes' (kafka-python's serialized sizes)
        assert (record.serialized_key_size, record.serialized_value_size) == (len(raw_key), len(raw_value))


def _assert_batch_path(key_d, value_d):
    assert key_d.per_value_calls == 0 and value_d.per_value_calls == 0
    assert key_d.batch_calls > 0 and value_d.batch_calls > 0


def _drain_poll(consumer, want, timeout=30.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    return got


def _consumer(bootstrap, key_d, value_d, **configs):
    return KafkaConsumer(bootstrap_servers=bootstrap, key_deserializer=key_d, value_deserializer=value_d,
                         auto_offset_reset="earliest", enable_auto_commit=False, **configs)


def test_sync_poll_decodes_whole_batches(registries, avro_topic):
    bootstrap, topic, written, key_d, value_d = avro_topic
    with _consumer(bootstrap, key_d, value_d, max_poll_records=50) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        records = _drain_poll(consumer, COUNT)
    _assert_records_equalconfluent_value(registries, topic, records, written)
    _assert_batch_path(key_d, value_d)
    # one call per partition's step, not per record
    assert value_d.batch_calls < COUNT // 2


def test_iteration_decodes_whole_batches(registries, avro_topic):
    bootstrap, topic, written, key_d, value_d = avro_topic
    with _consumer(bootstrap, key_d, value_d, consumer_timeout_ms=3000) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        records = [record for record, _ in zip(consumer, range(COUNT))]
    _assert_records_equalconfluent_value(registries, topic, records, written)
    _assert_batch_path(key_d, value_d)


def test_aio_getmany_and_getone_decode_whole_batches(registries, avro_topic):
    bootstrap, topic, written, key_d, value_d = avro_topic

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, key_deserializer=key_d, value_deserializer=value_d,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            got = [await consumer.getone()]
            deadline = time.monotonic() + 30
            while len(got) < COUNT and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500, max_records=40)).values():
                    got.extend(records)
            return got
        finally:
            await consumer.stop()

    records = asyncio.run(asyncio.wait_for(scenario(), 60))
    _assert_records_equalconfluent_value(registries, topic, records, written)
    _assert_batch_path(key_d, value_d)


def test_share_poll_decodes_whole_batches(registries, avro_topic):
    bootstrap, topic, written, key_d, value_d = avro_topic
    group = "share-batch-" + topic[-12:]
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with KafkaShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group, key_deserializer=key_d,
                            value_deserializer=value_d, fetch_max_wait_ms=200) as share:
        records = _drain_poll(share, COUNT)
    _assert_records_equalconfluent_value(registries, topic, records, written)
    _assert_batch_path(key_d, value_d)


@pytest.mark.parametrize("way", ["batch", "per record"])
def test_an_unframed_value_stops_at_its_offset_and_seek_goes_past(registries, kafka_broker, make_topic, way):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    bad = 23
    written = write_avro(registries, bootstrap, topic, count=60, partition=0, bad={bad})
    tp = TopicPartition(topic, 0)
    key_d, value_d = _deserializers(registries)
    # behind a plain callable the same deserializer is called per record (by
    # the compiled record builder): the same records, error and positions
    given_value_d = value_d if way == "batch" else lambda data: value_d(data)
    with _consumer(bootstrap, key_d, given_value_d, max_poll_records=500) as consumer:
        consumer.assign([tp])
        before = []
        deadline = time.monotonic() + 30
        error = None
        while error is None and time.monotonic() < deadline:
            try:
                for records in consumer.poll(timeout_ms=500).values():
                    before.extend(records)
            except ValueFramingError as exc:
                error = exc
        # the good records before it came, the error names the bad one, the position stays at it
        assert error is not None
        if way == "batch":  # called per value, the deserializer is not told where the value came from
            assert (error.topic, error.partition, error.offset) == (topic, 0, bad)
        assert [r.offset for r in before] == list(range(bad))
        assert consumer.position(tp) == bad
        with pytest.raises(ValueFramingError):
            _drain_poll(consumer, 1, timeout=10.0)
        assert consumer.position(tp) == bad
        # the application skips it: the rest comes, nothing after it lost
        consumer.seek(tp, bad + 1)
        after = _drain_poll(consumer, 60 - bad - 1)
    assert [r.offset for r in after] == list(range(bad + 1, 60))
    good = {k: v for k, v in written.items() if k[1] != bad}
    _assert_records_equalconfluent_value(registries, topic, before + after, good)
    if way == "batch":
        _assert_batch_path(key_d, value_d)
    else:
        assert value_d.batch_calls == 0 and value_d.per_value_calls >= 59
