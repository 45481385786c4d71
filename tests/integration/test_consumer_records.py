"""Issue 4: every record an independent producer wrote comes back exactly once,
in order per partition, field for field — every codec, null keys/values,
headers (null values, duplicates, non-ASCII keys), chosen and LogAppendTime
timestamps, several partitions, ~1 MB values, 100k small records from Kafka's
Java producer, and key/value deserializers. Run over kafka-python's and
fastkc's KafkaConsumer (the `flavour` fixture)."""
import os
import time

import pytest
from kafka.serializer import Deserializer as KafkaPythonDeserializer

from tests.support.consumers import assert_records_match, mixed_messages, poll_records, read_all
from tests.support.kafka_tools import (
    CODECS,
    LOG_APPEND_TIME,
    Message,
    create_topic,
    monotonic_values,
    produce,
    producer_performance,
    unique_name,
    visible,
)

PARTITIONS = 3
RECORDS_PER_CODEC = 240
LARGE_VALUE_BYTES = 1_000_000
BULK_RECORDS = 100_000


def _topic_partitions(flavour, topic, partitions):
    return [flavour.TopicPartition(topic, p) for p in range(partitions)]


@pytest.fixture(scope="module")
def codec_topics(kafka_broker):
    """codec → (topic, written records): one 3-partition topic per codec,
    written in one burst so compressed batches hold many records."""
    base = int(time.time() * 1000) - 3_600_000
    out = {}
    for codec in CODECS:
        topic = create_topic(kafka_broker.bootstrap_servers, unique_name("consumer-codec-" + codec),
                             partitions=PARTITIONS)
        messages = mixed_messages(RECORDS_PER_CODEC, PARTITIONS, base_timestamp=base, tag=codec)
        out[codec] = (topic, visible(produce(kafka_broker.bootstrap_servers, topic, messages,
                                             compression=codec)))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_record_of_every_codec_comes_back_once_in_order(flavour, open_consumer, codec_topics, codec):
    topic, written = codec_topics[codec]
    consumer = open_consumer()
    consumed = read_all(consumer, _topic_partitions(flavour, topic, PARTITIONS), len(written))
    assert_records_match(consumed, written)
    # The producer's own timestamps (CreateTime) survive unchanged.
    assert {r.timestamp_type for r in consumed} == {0}


def test_log_append_time_topic_carries_the_broker_timestamps(flavour, open_consumer, kafka_broker, make_topic):
    topic = make_topic(partitions=2, configs={"message.timestamp.type": "LogAppendTime"})
    # Chosen timestamps a day in the past: the broker must overwrite them.
    chosen = int(time.time() * 1000) - 86_400_000
    before = int(time.time() * 1000)
    written = visible(produce(kafka_broker.bootstrap_servers, topic,
                              mixed_messages(60, 2, base_timestamp=chosen), compression="lz4"))
    assert all(w.timestamp_type == LOG_APPEND_TIME and w.timestamp >= before for w in written)
    consumer = open_consumer()
    consumed = read_all(consumer, _topic_partitions(flavour, topic, 2), len(written))
    assert_records_match(consumed, written)


def test_large_values_near_one_megabyte(flavour, open_consumer, kafka_broker, make_topic):
    # Incompressible ~1 MB values; the topic and producer allow 3 MB
    # messages, and the consumer's fetch limits are a quarter / half of one
    # record: a first batch larger than them must still be returned whole
    # (KIP-74), and the consumer must make progress one record at a time.
    topic = make_topic(partitions=1, configs={"max.message.bytes": 3_000_000})
    messages = [Message(key=b"big-%d" % i, value=os.urandom(LARGE_VALUE_BYTES + i * 4099), partition=0)
                for i in range(4)]
    written = visible(produce(kafka_broker.bootstrap_servers, topic, messages,
                              config={"message.max.bytes": 3_000_000, "linger.ms": 0}))
    consumer = open_consumer(max_partition_fetch_bytes=256 * 1024, fetch_max_bytes=512 * 1024)
    consumed = read_all(consumer, _topic_partitions(flavour, topic, 1), len(written))
    assert_records_match(consumed, written)
    assert [len(r.value) for r in consumed] == [LARGE_VALUE_BYTES + i * 4099 for i in range(4)]


@pytest.fixture(scope="module")
def bulk_topic(kafka_broker):
    """BULK_RECORDS monotonic records (value str(i), null key) written by
    Kafka's Java ProducerPerformance, lz4, into one partition."""
    topic = create_topic(kafka_broker.bootstrap_servers, unique_name("consumer-bulk"), partitions=1)
    run = producer_performance(kafka_broker.bootstrap_servers, topic, BULK_RECORDS,
                               kafka_version=getattr(kafka_broker, "kafka_version", None), compression="lz4")
    assert run.num_records == BULK_RECORDS
    return topic


def test_many_small_records_from_the_java_producer(flavour, open_consumer, bulk_topic):
    consumer = open_consumer(max_poll_records=5000)
    tp = flavour.TopicPartition(bulk_topic, 0)
    consumed = read_all(consumer, [tp], BULK_RECORDS, timeout=120.0, settle_ms=500)
    assert len(consumed) == BULK_RECORDS
    assert [r.offset for r in consumed] == list(range(BULK_RECORDS))
    assert [r.value for r in consumed] == monotonic_values(BULK_RECORDS)
    assert all(r.key is None and r.serialized_key_size == -1 for r in consumed)
    assert consumer.position(tp) == BULK_RECORDS


def test_key_and_value_deserializers(flavour, open_consumer, codec_topics):
    topic, written = codec_topics["zstd"]

    # Deserializers see null keys/values too (as in the Java client) and must
    # say what to return for them.
    def key_deserializer(data):
        return None if data is None else data.decode("utf-8").upper()

    def value_deserializer(data):
        return None if data is None else ("len", len(data), data[:8])

    consumer = open_consumer(key_deserializer=key_deserializer, value_deserializer=value_deserializer)
    consumed = read_all(consumer, _topic_partitions(flavour, topic, PARTITIONS), len(written))

    def expected(w):
        return (None if w.key is None else w.key.decode().upper(),
                None if w.value is None else ("len", len(w.value), w.value[:8]))

    # Serialized sizes stay those of the raw bytes.
    assert_records_match(consumed, written, deserialized=expected)


def test_records_are_built_by_the_implementation_under_test(flavour, open_consumer, codec_topics):
    # Guards the parametrization itself: the fastkc case must not be running
    # kafka-python (or the other way round).
    topic, written = codec_topics["none"]
    consumer = open_consumer()
    assert type(consumer).__module__.split(".")[0] == {"kafka-python": "kafka", "fastkc": "fastkc"}[flavour.name]
    consumed = read_all(consumer, _topic_partitions(flavour, topic, PARTITIONS), len(written))
    assert {type(r).__module__.split(".")[0] for r in consumed} == {type(consumer).__module__.split(".")[0]}


def test_every_codec_topic_in_one_assignment(flavour, open_consumer, codec_topics):
    # 15 partitions of 5 topics in one consumer: one fetch carries several
    # topics, each partition keeps its own order.
    tps = []
    expected = []
    for codec in CODECS:
        topic, written = codec_topics[codec]
        tps += _topic_partitions(flavour, topic, PARTITIONS)
        expected += written
    expected.sort(key=lambda w: (w.topic, w.partition, w.offset))
    consumer = open_consumer()
    consumed = read_all(consumer, tps, len(expected))
    assert_records_match(consumed, expected)


@pytest.mark.parametrize("sessions", [True, False], ids=["fetch-sessions", "no-fetch-sessions"])
def test_tiny_fetch_limits_still_deliver_every_record(flavour, open_consumer, codec_topics, sessions):
    # Limits far below one compressed batch: the broker returns a first
    # batch whole anyway (KIP-74) and cuts the rest mid-batch, so every
    # response ends in a partial batch the consumer must drop and re-fetch.
    tps = []
    expected = []
    for codec in ("lz4", "none"):
        topic, written = codec_topics[codec]
        tps += _topic_partitions(flavour, topic, PARTITIONS)
        expected += written
    expected.sort(key=lambda w: (w.topic, w.partition, w.offset))
    consumer = open_consumer(max_partition_fetch_bytes=512, fetch_max_bytes=1024, fetch_max_wait_ms=50,
                             enable_incremental_fetch_sessions=sessions)
    consumed = read_all(consumer, tps, len(expected), timeout=120.0)
    assert_records_match(consumed, expected)


def test_many_partitions_under_a_small_fetch_max_bytes(flavour, open_consumer, kafka_broker, make_topic):
    # 40 partitions, a response budget of a few partitions' worth: the
    # consumer must still reach every partition (none starves) and keep
    # each one's order.
    partitions = 40
    topic = make_topic(partitions=partitions)
    written = visible(produce(kafka_broker.bootstrap_servers, topic,
                              mixed_messages(partitions * 12, partitions, tag="many-"), compression="gzip"))
    consumer = open_consumer(fetch_max_bytes=4096, max_partition_fetch_bytes=1024)
    consumed = read_all(consumer, _topic_partitions(flavour, topic, partitions), len(written), timeout=120.0)
    assert_records_match(consumed, written)


class _HeaderAwareDeserializer(KafkaPythonDeserializer):
    """kafka-python 3's Deserializer protocol: deserialize(topic, headers,
    data). Subclassing kafka-python's base class is what code written for
    kafka-python does (kafka-python wraps anything else as a plain callable);
    a drop-in must accept the same object."""

    def __init__(self, label):
        self.label = label

    def deserialize(self, topic, headers, data):
        return (self.label, topic, tuple((k, v) for k, v in (headers or ())), data)


def test_deserializer_objects_get_topic_and_headers(flavour, open_consumer, codec_topics):
    topic, written = codec_topics["snappy"]
    consumer = open_consumer(key_deserializer=_HeaderAwareDeserializer("k"),
                             value_deserializer=_HeaderAwareDeserializer("v"))
    consumed = read_all(consumer, _topic_partitions(flavour, topic, PARTITIONS), len(written))

    def expected(w):
        return (("k", w.topic, w.headers, w.key), ("v", w.topic, w.headers, w.value))

    assert_records_match(consumed, written, deserialized=expected)


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_seek_into_the_middle_of_a_batch(flavour, open_consumer, codec_topics, codec):
    # The broker answers from the start of the batch holding the offset
    # (for compressed batches the whole batch): records before the seek
    # offset must be dropped, not delivered.
    topic, written = codec_topics[codec]
    in_partition = [w for w in written if w.partition == 1]
    start = in_partition[len(in_partition) // 2 + 3].offset
    tp = flavour.TopicPartition(topic, 1)
    consumer = open_consumer()
    consumer.assign([tp])
    consumer.seek(tp, start)
    expected = [w for w in in_partition if w.offset >= start]
    assert_records_match(poll_records(consumer, len(expected)), expected)


def test_consumers_in_parallel_threads(flavour, open_consumer, codec_topics):
    # One consumer per thread (a consumer is not shared between threads, as
    # in the Java client), decoding different codecs at the same time: each
    # gets exactly its own records.
    import threading

    codecs = ("gzip", "lz4", "zstd", "snappy")
    consumers = {codec: open_consumer() for codec in codecs}
    results = {}
    failures = []

    def run(codec):
        topic, written = codec_topics[codec]
        try:
            results[codec] = read_all(consumers[codec], _topic_partitions(flavour, topic, PARTITIONS),
                                      len(written))
        except BaseException as exc:  # reported below, in the main thread
            failures.append((codec, exc))

    threads = [threading.Thread(target=run, args=(codec,)) for codec in codecs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads), "a consumer thread hung"
    assert not failures, failures
    for codec in codecs:
        assert_records_match(results[codec], codec_topics[codec][1])
