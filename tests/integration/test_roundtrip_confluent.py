"""The real broker round trip with independent clients: what confluent-kafka's
producer (or Kafka's ProducerPerformance) wrote is exactly what
confluent-kafka's consumer reads back. This proves the harness and the
producer helpers before fastkc's own consumer is judged against them."""
import pytest

from tests.support.kafka_tools import (
    CODECS,
    CREATE_TIME,
    LOG_APPEND_TIME,
    Message,
    TransactionalWriter,
    consume_all,
    monotonic_values,
    produce,
    producer_performance,
    visible,
)

# Fixed, recognisable create times (ms) in 2021: nothing the clock would produce.
BASE_TS = 1_600_000_000_000


def _mixed_messages(n, *, partition=0, tag=b""):
    """Keys, null keys, null values, empty values, headers (incl. a null-valued
    and a duplicate header) and explicit create timestamps."""
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"k-%d" % i
        if i % 7 == 3:
            value = None
        elif i % 11 == 4:
            value = b""
        else:
            value = tag + (b"v-%d-" % i) * (1 + i % 9)
        headers = ()
        if i % 3 == 1:
            headers = (("h1", b"x%d" % i), ("empty", b""), ("nullv", None), ("h1", b"dup"))
        out.append(Message(key=key, value=value, headers=headers, timestamp=BASE_TS + i * 1000,
                           partition=partition))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_exactly(kafka_broker, make_topic, codec):
    topic = make_topic(partitions=2)
    messages = _mixed_messages(40, partition=0) + _mixed_messages(25, partition=1, tag=b"p1")
    written = produce(kafka_broker.bootstrap_servers, topic, messages, compression=codec)

    assert [(r.key, r.value, r.headers, r.timestamp) for r in written] == [
        (m.key, m.value, tuple(m.headers), m.timestamp) for m in messages]
    assert all(r.timestamp_type == CREATE_TIME for r in written)
    # Offsets are dense from 0 in each partition.
    assert sorted(r.offset for r in written if r.partition == 0) == list(range(40))
    assert sorted(r.offset for r in written if r.partition == 1) == list(range(25))

    read = consume_all(kafka_broker.bootstrap_servers, topic)
    assert [r.comparable() for r in read] == [r.comparable() for r in visible(written)]


def test_log_append_time_topic_reports_broker_time(kafka_broker, make_topic):
    topic = make_topic(configs={"message.timestamp.type": "LogAppendTime"})
    messages = [Message(key=b"k%d" % i, value=b"v%d" % i, timestamp=BASE_TS + i) for i in range(10)]
    written = produce(kafka_broker.bootstrap_servers, topic, messages, compression="lz4")

    assert all(r.timestamp_type == LOG_APPEND_TIME for r in written)
    # The broker replaced the create times we chose with its own clock.
    assert all(r.timestamp > BASE_TS + 10 ** 10 for r in written)
    read = consume_all(kafka_broker.bootstrap_servers, topic)
    assert [r.comparable() for r in read] == [r.comparable() for r in visible(written)]


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_transactions_committed_and_aborted(kafka_broker, make_topic, codec):
    topic = make_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    written = produce(bootstrap, topic, _mixed_messages(5, partition=0, tag=b"plain"), compression=codec)
    with TransactionalWriter(bootstrap, compression=codec) as tx:
        written += tx.write(topic, _mixed_messages(12, partition=0, tag=b"c1")
                            + _mixed_messages(4, partition=1, tag=b"c1"), commit=True)
        written += tx.write(topic, _mixed_messages(9, partition=0, tag=b"a1")
                            + _mixed_messages(3, partition=1, tag=b"a1"), commit=False)
        written += tx.write(topic, _mixed_messages(6, partition=0, tag=b"c2"), commit=True)

    outcomes = {r.transaction for r in written}
    assert outcomes == {None, "committed", "aborted"}
    committed = consume_all(bootstrap, topic, isolation_level="read_committed")
    uncommitted = consume_all(bootstrap, topic, isolation_level="read_uncommitted")
    assert [r.comparable() for r in committed] == [r.comparable() for r in visible(written, "read_committed")]
    assert [r.comparable() for r in uncommitted] == [r.comparable() for r in visible(written)]
    # Control markers occupy offsets: the committed data is not dense.
    p0 = [r.offset for r in committed if r.partition == 0]
    assert p0[-1] > len(p0) - 1
    assert len(uncommitted) - len(committed) == 12


def test_producer_performance_bulk_data(kafka_broker, make_topic):
    topic = make_topic()
    # The Java producer from the same Kafka release as the broker (None: the default release).
    run = producer_performance(kafka_broker.bootstrap_servers, topic, 3000, compression="lz4",
                               kafka_version=kafka_broker.kafka_version)
    assert run.num_records == 3000
    read = consume_all(kafka_broker.bootstrap_servers, topic)
    assert [r.offset for r in read] == list(range(3000))
    assert [r.value for r in read] == monotonic_values(3000)
    assert all(r.key is None and r.headers == () for r in read)
