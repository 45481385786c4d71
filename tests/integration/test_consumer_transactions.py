"""Issue 4: isolation_level read_committed against read_uncommitted, with
committed and aborted transactions from confluent-kafka's transactional
producer — alone, and interleaved on one partition with a plain producer
and a second transactional producer — and positions that move past the
control batches (commit/abort markers) to the end of the log."""
import time

import pytest

from tests.support.consumers import assert_records_match, mixed_messages, poll_records, read_all
from tests.support.kafka_tools import (
    TransactionalWriter,
    _produce_batch,
    create_topic,
    produce,
    producer_config,
    unique_name,
    visible,
)

PARTITIONS = 2


@pytest.fixture(scope="module")
def transactional_topic(kafka_broker):
    """(topic, written): a 2-partition topic holding, in order: a committed
    transaction, plain records, an aborted transaction, an aborted
    transaction interleaved with plain records and with a second producer's
    committed transaction, then a last committed transaction (so the last
    stable offset reaches the end of the log)."""
    from confluent_kafka import Producer

    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer-tx"), partitions=PARTITIONS)
    written = []
    with TransactionalWriter(bootstrap, compression="lz4") as tx, \
            TransactionalWriter(bootstrap, compression="zstd") as other_tx:
        written += tx.write(topic, mixed_messages(20, PARTITIONS, tag="c1-"), commit=True)
        written += produce(bootstrap, topic, mixed_messages(6, PARTITIONS, tag="plain1-"))
        written += tx.write(topic, mixed_messages(15, PARTITIONS, tag="a1-"), commit=False)

        # Interleaved on the same partitions: tx's records stay open (and are
        # then aborted) while plain records and other_tx's committed
        # transaction land between them.
        tx.producer.begin_transaction()
        written += _produce_batch(tx.producer, topic, mixed_messages(8, PARTITIONS, tag="a2-open-"),
                                  transaction="aborted")
        plain = Producer(producer_config(bootstrap, compression="gzip"))
        written += _produce_batch(plain, topic, mixed_messages(5, PARTITIONS, tag="plain2-"))
        written += other_tx.write(topic, mixed_messages(7, PARTITIONS, tag="c2-other-"), commit=True)
        written += _produce_batch(tx.producer, topic, mixed_messages(8, PARTITIONS, tag="a2-late-"),
                                  transaction="aborted")
        tx.producer.abort_transaction(30)

        written += tx.write(topic, mixed_messages(10, PARTITIONS, tag="c3-"), commit=True)
    return topic, written


def _tps(flavour, topic):
    return [flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
def test_isolation_level_decides_which_transactional_records_are_seen(
        flavour, open_consumer, transactional_topic, isolation_level):
    topic, written = transactional_topic
    expected = visible(written, isolation_level)
    if isolation_level == "read_committed":
        assert not any(b"a1-" in (r.value or b"") or b"a2-" in (r.value or b"") for r in expected)
    consumer = open_consumer(isolation_level=isolation_level)
    consumed = read_all(consumer, _tps(flavour, topic), len(expected), settle_ms=1000)
    assert_records_match(consumed, expected)


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
def test_position_moves_past_the_control_batches(flavour, open_consumer, transactional_topic, isolation_level):
    topic, written = transactional_topic
    expected = visible(written, isolation_level)
    tps = _tps(flavour, topic)
    consumer = open_consumer(isolation_level=isolation_level)
    read_all(consumer, tps, len(expected), settle_ms=1000)
    ends = consumer.end_offsets(tps)
    for tp in tps:
        last_record = max(w.offset for w in written if w.partition == tp.partition)
        # The last thing in each partition is a commit marker (a control
        # batch at last_record + 1): the consumer ends after it.
        assert ends[tp] == last_record + 2
        assert consumer.position(tp) == ends[tp]
    # And nothing more comes.
    assert consumer.poll(timeout_ms=500) == {}


def test_open_transaction_holds_read_committed_at_the_last_stable_offset(
        flavour, open_consumer, kafka_broker, make_topic):
    from confluent_kafka import Producer

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    (tp,) = [flavour.TopicPartition(topic, 0)]
    before = visible(produce(bootstrap, topic, mixed_messages(4, 1, tag="before-")))
    with TransactionalWriter(bootstrap) as tx:
        tx.producer.begin_transaction()
        pending = _produce_batch(tx.producer, topic, mixed_messages(5, 1, tag="pending-"),
                                 transaction="committed")
        after = _produce_batch(Producer(producer_config(bootstrap)), topic, mixed_messages(3, 1, tag="after-"))
        committed_reader = open_consumer(isolation_level="read_committed")
        uncommitted_reader = open_consumer(isolation_level="read_uncommitted")
        # read_committed stops at the open transaction's first record (the
        # last stable offset); read_uncommitted reads everything.
        got = read_all(committed_reader, [tp], len(before), settle_ms=1000)
        assert_records_match(got, before)
        assert committed_reader.position(tp) == pending[0].offset
        everything = visible(before + pending + after)
        assert_records_match(read_all(uncommitted_reader, [tp], len(everything)), everything)
        tx.producer.commit_transaction(30)
    # Once committed, the rest follows, in offset order.
    rest = poll_records(committed_reader, len(pending) + len(after), settle_ms=1000)
    assert_records_match(rest, visible(pending + after))


def test_end_offsets_under_read_committed_is_the_last_stable_offset(flavour, open_consumer, kafka_broker,
                                                                   make_topic):
    # The Java client's endOffsets and seekToEnd follow the consumer's
    # isolation level: the last stable offset under read_committed, the high
    # watermark under read_uncommitted.
    from confluent_kafka import Producer

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    tp = flavour.TopicPartition(topic, 0)
    produce(bootstrap, topic, mixed_messages(4, 1, tag="before-"))
    with TransactionalWriter(bootstrap) as tx:
        tx.producer.begin_transaction()
        pending = _produce_batch(tx.producer, topic, mixed_messages(3, 1, tag="pending-"), transaction="aborted")
        after = _produce_batch(Producer(producer_config(bootstrap)), topic, mixed_messages(2, 1, tag="after-"))
        committed_reader = open_consumer(isolation_level="read_committed")
        uncommitted_reader = open_consumer(isolation_level="read_uncommitted")
        assert uncommitted_reader.end_offsets([tp]) == {tp: after[-1].offset + 1}
        assert committed_reader.end_offsets([tp]) == {tp: pending[0].offset}
        # seek_to_end (and so auto_offset_reset=latest) lands on the same offsets.
        for reader in (committed_reader, uncommitted_reader):
            reader.assign([tp])
            reader.seek_to_end(tp)
        assert uncommitted_reader.position(tp) == after[-1].offset + 1
        assert committed_reader.position(tp) == pending[0].offset
        tx.producer.abort_transaction(30)


def test_log_ending_in_an_aborted_transaction(flavour, open_consumer, kafka_broker, make_topic):
    # read_committed: the aborted records and both markers are skipped and
    # the position still reaches the end of the log.
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    with TransactionalWriter(bootstrap, compression="snappy") as tx:
        written = tx.write(topic, mixed_messages(5, 1, tag="kept-"), commit=True)
        written += tx.write(topic, mixed_messages(5, 1, tag="dropped-"), commit=False)
    tp = flavour.TopicPartition(topic, 0)
    expected = visible(written, "read_committed")
    consumer = open_consumer(isolation_level="read_committed")
    assert_records_match(read_all(consumer, [tp], len(expected), settle_ms=0), expected)
    end = max(w.offset for w in written) + 2
    deadline = time.monotonic() + 30
    while consumer.position(tp) != end:
        assert consumer.poll(timeout_ms=200) == {}
        assert time.monotonic() < deadline, "position stuck at {0}, end {1}".format(consumer.position(tp), end)
