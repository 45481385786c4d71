"""Issue 4, fastkc only: KafkaConsumer.poll_arrow(timeout_ms, max_records)
returns one pyarrow.RecordBatch with fastkc.records.arrow_schema(), holding
exactly the records poll() would have returned — checked column by column
against what an independent producer wrote, mixed with poll() on one
consumer, bounded by max_records, empty (not an error) when nothing comes,
and without aborted transactions under read_committed."""
import time

import pytest

from tests.support.consumers import mixed_messages
from tests.support.kafka_tools import TransactionalWriter, produce, visible

PARTITIONS = 3
COUNT = 180


@pytest.fixture(scope="module")
def arrow_topic(kafka_broker):
    from tests.support.kafka_tools import create_topic, unique_name

    topic = create_topic(kafka_broker.bootstrap_servers, unique_name("consumer-arrow"), partitions=PARTITIONS)
    base = int(time.time() * 1000) - 120_000
    written = visible(produce(kafka_broker.bootstrap_servers, topic,
                              mixed_messages(COUNT, PARTITIONS, base_timestamp=base, tag="arrow-"),
                              compression="zstd"))
    return topic, written


def _poll_arrow_rows(consumer, count, *, timeout=60.0, max_records=None):
    """poll_arrow until `count` rows came; returns (rows as dicts in delivery
    order, the batches)."""
    import pyarrow as pa

    from fastkc.records import arrow_schema

    batches = []
    rows = 0
    deadline = time.monotonic() + timeout
    while rows < count:
        assert time.monotonic() < deadline, "only {0} of {1} rows within {2}s".format(rows, count, timeout)
        batch = consumer.poll_arrow(timeout_ms=200, max_records=max_records)
        assert isinstance(batch, pa.RecordBatch)
        assert batch.schema.equals(arrow_schema()), batch.schema
        if max_records is not None:
            assert batch.num_rows <= max_records
        batches.append(batch)
        rows += batch.num_rows
    extra = consumer.poll_arrow(timeout_ms=300)
    assert extra.num_rows == 0, "records delivered twice or beyond the end"
    return [row for b in batches for row in b.to_pylist()], batches


def _expected_row(written):
    return {
        "key": written.key,
        "value": written.value,
        "topic": written.topic,
        "partition": written.partition,
        "offset": written.offset,
        "timestamp_us": written.timestamp * 1000,
        "timestampType": written.timestamp_type,
        # decode_arrow's contract: a null list where a record has no headers.
        "headers": [{"key": k, "value": v} for k, v in written.headers] if written.headers else None,
    }


def _as_comparable(row):
    import datetime

    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    out = dict(row)
    ts = out.pop("timestamp")
    delta = ts - epoch
    out["timestamp_us"] = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return out


def _per_partition(rows):
    """Rows grouped by partition in delivery order, then concatenated in
    partition order (the order expected lists use)."""
    by_partition = {}
    for row in rows:
        by_partition.setdefault(row["partition"], []).append(row)
    return [row for p in sorted(by_partition) for row in by_partition[p]]


def test_poll_arrow_columns_match_what_was_written(fastkc_flavour, fastkc_consumer, arrow_topic):
    topic, written = arrow_topic
    consumer = fastkc_consumer()
    tps = [fastkc_flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    rows, _ = _poll_arrow_rows(consumer, len(written))
    assert [_as_comparable(r) for r in _per_partition(rows)] == [_expected_row(w) for w in written]
    for tp in tps:
        assert consumer.position(tp) == max(w.offset for w in written if w.partition == tp.partition) + 1


def test_poll_arrow_respects_max_records_and_mixes_with_poll(fastkc_flavour, fastkc_consumer, arrow_topic):
    topic, written = arrow_topic
    tp = fastkc_flavour.TopicPartition(topic, 0)
    in_partition = [w for w in written if w.partition == 0]
    consumer = fastkc_consumer()
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    head, _ = _poll_arrow_rows_exact(consumer, 10, max_records=4)
    assert [r["offset"] for r in head] == [w.offset for w in in_partition[:10]]
    # poll() continues exactly where poll_arrow stopped, and the other way round.
    middle = []
    deadline = time.monotonic() + 30
    while len(middle) < 5:
        assert time.monotonic() < deadline
        for records in consumer.poll(timeout_ms=200, max_records=5 - len(middle)).values():
            middle.extend(records)
    assert [r.offset for r in middle] == [w.offset for w in in_partition[10:15]]
    tail, _ = _poll_arrow_rows(consumer, len(in_partition) - 15)
    assert [_as_comparable(r) for r in tail] == [_expected_row(w) for w in in_partition[15:]]


def _poll_arrow_rows_exact(consumer, count, *, max_records, timeout=30.0):
    """Exactly `count` rows with poll_arrow(max_records=...) calls, never
    asking past `count` (so nothing is consumed beyond it)."""
    rows = []
    batches = []
    deadline = time.monotonic() + timeout
    while len(rows) < count:
        assert time.monotonic() < deadline
        batch = consumer.poll_arrow(timeout_ms=200, max_records=min(max_records, count - len(rows)))
        assert batch.num_rows <= min(max_records, count - len(rows))
        batches.append(batch)
        rows.extend(batch.to_pylist())
    return rows, batches


def test_poll_arrow_with_nothing_to_read_is_an_empty_batch(fastkc_flavour, fastkc_consumer, make_topic):
    from fastkc.records import arrow_schema

    topic = make_topic(partitions=1)
    tp = fastkc_flavour.TopicPartition(topic, 0)
    consumer = fastkc_consumer()
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    began = time.monotonic()
    batch = consumer.poll_arrow(timeout_ms=500)
    assert batch.num_rows == 0 and batch.schema.equals(arrow_schema())
    assert time.monotonic() - began >= 0.4


def test_poll_arrow_read_committed_drops_aborted_transactions(fastkc_flavour, fastkc_consumer, kafka_broker,
                                                             make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    with TransactionalWriter(bootstrap, compression="lz4") as tx:
        written = tx.write(topic, mixed_messages(12, 1, tag="kept-"), commit=True)
        written += tx.write(topic, mixed_messages(9, 1, tag="dropped-"), commit=False)
        written += tx.write(topic, mixed_messages(6, 1, tag="kept2-"), commit=True)
    expected = visible(written, "read_committed")
    tp = fastkc_flavour.TopicPartition(topic, 0)
    consumer = fastkc_consumer(isolation_level="read_committed")
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    rows, _ = _poll_arrow_rows(consumer, len(expected))
    assert [_as_comparable(r) for r in rows] == [_expected_row(w) for w in expected]
    assert consumer.position(tp) == max(w.offset for w in written) + 2
