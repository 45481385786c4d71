"""The `fastkc` Spark source in a real local[2] session against the real
broker: what it reads is compared with what an independent producer
(confluent-kafka) wrote, field for field."""
import glob
import os

import pyarrow.parquet as pq
import pytest

from tests.support.kafka_tools import CODECS, Message, TransactionalWriter, _wait_for_leaders, produce, visible
from tests.support.spark_options import BATCH_CASES, STREAM_CASES


def _messages(count, partitions, tag=""):
    # every shape a record can take: null key, null value, empty values,
    # no headers, several headers, a null header value, duplicate header keys
    out = []
    for i in range(count):
        headers = ()
        if i % 3 == 1:
            headers = (("h", b"v%d" % i), ("dup", b"1"), ("dup", None))
        out.append(Message(
            key=None if i % 5 == 0 else ("k%d%s" % (i, tag)).encode(),
            value=None if i % 7 == 3 else (b"" if i % 11 == 4 else ("value-%d%s" % (i, tag)).encode() * (i % 4 + 1)),
            headers=headers, partition=i % partitions))
    return out


def _read_batch(spark, bootstrap, topic, **options):
    reader = spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _rows(df, headers=True):
    """(topic, partition, offset, key, value, headers, timestamp ms, type) tuples."""
    cols = "topic, partition, offset, key, value, {0}, unix_millis(timestamp) AS ts, timestampType".format(
        "headers" if headers else "CAST(NULL AS array<struct<key:string,value:binary>>) AS headers")
    out = []
    for r in df.selectExpr(*[c.strip() for c in cols.split(", ")]).collect():
        hdrs = () if r.headers is None else tuple(
            (h.key, None if h.value is None else bytes(h.value)) for h in r.headers)
        out.append((r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value), hdrs, r.ts, r.timestampType))
    return sorted(out, key=lambda t: (t[1], t[2]))


def _expected(written):
    return [r.comparable() for r in written]


@pytest.mark.parametrize("codec", CODECS)
def test_batch_read_equals_what_was_produced(spark, kafka_broker, make_topic, codec):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=3)
    written = produce(bootstrap, topic, _messages(120, 3), compression=codec)
    df = _read_batch(spark, bootstrap, topic, includeHeaders="true")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert _rows(df) == _expected(visible(written))
    # headers are null, not empty, on records without any (Spark's behaviour)
    assert df.where("headers IS NULL").count() == sum(1 for r in written if not r.headers)


def test_batch_without_headers_has_sparks_seven_columns(spark, kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    written = produce(bootstrap, topic, _messages(40, 2), compression="zstd")
    df = _read_batch(spark, bootstrap, topic)
    assert df.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                        "timestamp:timestamp,timestampType:int>")
    assert [row[:5] + row[6:] for row in _rows(df, headers=False)] == [
        row[:5] + row[6:] for row in _expected(visible(written))]


def test_offset_ranges_stop_exactly_and_split_into_tasks(spark, kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    written = produce(bootstrap, topic, _messages(200, 2), compression="lz4")
    df = _read_batch(spark, bootstrap, topic,
                     startingOffsets='{"%s":{"0":5,"1":-2}}' % topic,
                     endingOffsets='{"%s":{"0":17,"1":-1}}' % topic)
    got = [(p, o) for _, p, o, *_ in _rows(df, headers=False)]
    assert got == [(0, o) for o in range(5, 17)] + [(1, o) for o in range(100)]
    # the ranges are split into tasks (Spark's rules) and still read each record once
    many = _read_batch(spark, bootstrap, topic, minPartitions="7", includeHeaders="true")
    assert many.rdd.getNumPartitions() == 8  # round(100/200*7)=4 (3.5 rounds up) per partition
    assert _rows(many) == _expected(visible(written))
    capped = _read_batch(spark, bootstrap, topic, maxRecordsPerPartition="30", includeHeaders="true")
    assert capped.rdd.getNumPartitions() == 8  # ceil(100/30) = 4 per partition
    assert _rows(capped) == _expected(visible(written))


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_transactions_read_committed_and_uncommitted(spark, kafka_broker, make_topic, codec):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    written = []
    with TransactionalWriter(bootstrap, compression=codec) as tx:
        written += tx.write(topic, _messages(30, 2, "a"), commit=True)
        written += tx.write(topic, _messages(25, 2, "b"), commit=False)
        written += tx.write(topic, _messages(20, 2, "c"), commit=True)
        # ranges end on commit/abort markers: the readers must stop at the range end
    for level in ("read_committed", "read_uncommitted"):
        df = _read_batch(spark, bootstrap, topic, includeHeaders="true", **{"kafka.isolation.level": level})
        assert _rows(df) == _expected(visible(written, level)), level
    assert len(visible(written, "read_committed")) == 50 and len(visible(written, "read_uncommitted")) == 75


def test_starting_timestamp_resolves_to_first_offset_at_or_after(spark, kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    base = 1_700_000_000_000
    produce(bootstrap, topic, [Message(value=b"%d" % i, timestamp=base + 10 * i, partition=0) for i in range(10)])
    df = _read_batch(spark, bootstrap, topic, startingTimestamp=str(base + 35),
                     endingOffsetsByTimestamp='{"%s":{"0":%d}}' % (topic, base + 80))
    assert [bytes(r.value) for r in df.orderBy("offset").collect()] == [b"4", b"5", b"6", b"7"]


def test_fail_on_data_loss_when_the_range_start_was_deleted(spark, kafka_broker, make_topic):
    from confluent_kafka import TopicPartition as ConfluentPartition
    from confluent_kafka.admin import AdminClient

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    written = produce(bootstrap, topic, [Message(value=b"%d" % i, partition=0) for i in range(50)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # records 0..19 deleted: the log now starts at 20
    admin.delete_records([ConfluentPartition(topic, 0, 20)])[ConfluentPartition(topic, 0, 20)].result(30)
    start_at_zero = '{"%s":{"0":0}}' % topic
    with pytest.raises(Exception, match='failOnDataLoss'):
        _read_batch(spark, bootstrap, topic, startingOffsets=start_at_zero).collect()
    df = _read_batch(spark, bootstrap, topic, startingOffsets=start_at_zero, failOnDataLoss="false")
    assert [r.offset for r in df.orderBy("offset").collect()] == [r.offset for r in written[20:]]
    # a range past the end of the log (a recreated, shorter partition)
    beyond = {"startingOffsets": '{"%s":{"0":70}}' % topic, "endingOffsets": '{"%s":{"0":90}}' % topic}
    with pytest.raises(Exception, match="failOnDataLoss"):
        _read_batch(spark, bootstrap, topic, **beyond).collect()
    assert _read_batch(spark, bootstrap, topic, failOnDataLoss="false", **beyond).count() == 0


@pytest.mark.parametrize("opts,message", BATCH_CASES[:8])
def test_batch_option_errors_surface_with_sparks_message(spark, opts, message):
    reader = spark.read.format("fastkc")
    for key, value in opts.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as info:
        reader.load().collect()
    assert message in str(info.value)


@pytest.mark.parametrize("opts,message", STREAM_CASES)
def test_stream_option_errors_surface_with_sparks_message(spark, tmp_path, opts, message):
    reader = spark.readStream.format("fastkc")
    for key, value in opts.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as info:
        query = reader.load().writeStream.format("noop").option(
            "checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
    assert message in str(info.value)


def test_user_schema_is_rejected_like_sparks(spark):
    with pytest.raises(Exception, match="Kafka source has a fixed schema and cannot be set with a custom one"):
        spark.read.format("fastkc").schema("value binary").option("kafka.bootstrap.servers", "127.0.0.1:9").option(
            "subscribe", "a").load().collect()


# --- streaming --------------------------------------------------------------------------

def _run_available_now(spark, bootstrap, topic, out_dir, checkpoint, **options):
    reader = (spark.readStream.format("fastkc").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load().selectExpr("partition", "offset", "value").writeStream.format("parquet")
             .option("path", str(out_dir)).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120), "availableNow query did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    return query


def _sink_rows(out_dir):
    files = glob.glob(os.path.join(str(out_dir), "*.parquet"))
    rows = []
    for path in files:
        table = pq.read_table(path)
        rows += list(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                         table.column("value").to_pylist()))
    return sorted(rows)


def test_stream_restart_and_new_partitions_deliver_each_record_once(spark, kafka_broker, make_topic, tmp_path):
    from confluent_kafka.admin import AdminClient, NewPartitions

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = produce(bootstrap, topic, _messages(60, 2, "x"), compression="lz4")
    _run_available_now(spark, bootstrap, topic, out, checkpoint, maxOffsetsPerTrigger="25")
    assert _sink_rows(out) == sorted((r.partition, r.offset, r.value) for r in first)

    # restart from the checkpoint after more records and two new partitions
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
    _wait_for_leaders(bootstrap, topic, 4, 30)
    second = produce(bootstrap, topic, _messages(80, 4, "y"), compression="snappy")
    _run_available_now(spark, bootstrap, topic, out, checkpoint)
    expected = sorted((r.partition, r.offset, r.value) for r in first + second)
    assert _sink_rows(out) == expected
    assert {p for p, _, _ in expected} == {0, 1, 2, 3}

    # a third run with nothing new writes nothing
    _run_available_now(spark, bootstrap, topic, out, checkpoint)
    assert _sink_rows(out) == expected


def test_max_offsets_per_trigger_splits_the_backlog(spark, kafka_broker, make_topic, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=3)
    # a skewed backlog: 90 records in partition 0, 9 in 1, 1 in 2
    produce(bootstrap, topic, [Message(value=b"%d" % i, partition=0 if i < 90 else (1 if i < 99 else 2))
                               for i in range(100)])
    query = _run_available_now(spark, bootstrap, topic, tmp_path / "out", tmp_path / "cp", maxOffsetsPerTrigger="30")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 100 and len(_sink_rows(tmp_path / "out")) == 100
    assert max(sizes) <= 30 + 2  # a share below one row rounds up (Spark's rule), at most one per partition
    assert len(sizes) >= 4


def test_stream_fails_on_a_deleted_topic_unless_told_not_to(spark, kafka_broker, make_topic, tmp_path):
    from confluent_kafka.admin import AdminClient

    bootstrap = kafka_broker.bootstrap_servers
    kept = make_topic(partitions=1)
    doomed = make_topic(partitions=1)
    produce(bootstrap, kept, [Message(value=b"k%d" % i, partition=0) for i in range(5)])
    produce(bootstrap, doomed, [Message(value=b"d%d" % i, partition=0) for i in range(5)])
    both = "{0},{1}".format(kept, doomed)
    out, checkpoint = tmp_path / "out", tmp_path / "cp"
    _run_available_now(spark, bootstrap, both, out, checkpoint)
    assert len(_sink_rows(out)) == 10
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    admin.delete_topics([doomed])[doomed].result(30)
    with pytest.raises(Exception, match="failOnDataLoss"):
        _run_available_now(spark, bootstrap, both, out, checkpoint)
    # failOnDataLoss=false: the query goes on with what is left
    produce(bootstrap, kept, [Message(value=b"k%d" % i, partition=0) for i in range(5, 8)])
    _run_available_now(spark, bootstrap, both, out, checkpoint, failOnDataLoss="false")
    assert sorted(v for _, _, v in _sink_rows(out)) == sorted(
        [b"k%d" % i for i in range(8)] + [b"d%d" % i for i in range(5)])


def test_compacted_gaps_end_ranges_cleanly(spark, kafka_broker, make_topic):
    """After compaction a range's size overstates its records; a range may
    hold none at all. The reader stops at the range end all the same."""
    import time

    from tests.support.kafka_tools import consume_all

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1, configs={
        "cleanup.policy": "compact", "segment.ms": 500, "min.cleanable.dirty.ratio": 0.001,
        "min.compaction.lag.ms": 0, "delete.retention.ms": 0})
    # every tenth key is unique (kept), the others repeat (only the last kept):
    # survivors at 0, 10, 20, ..., 90 and 91..99, with gaps between
    produce(bootstrap, topic, [Message(key=b"u%d" % i if i % 10 == 0 else b"k%d" % (i % 10), value=b"%d" % i,
                                       partition=0) for i in range(100)], compression="lz4")
    time.sleep(1.0)
    produce(bootstrap, topic, [Message(key=b"roll", value=b"closes the first segment", partition=0)])
    written = 101
    deadline = time.monotonic() + 90  # the log cleaner wakes every 15 s by default
    remaining = consume_all(bootstrap, topic)
    while len(remaining) == written and time.monotonic() < deadline:
        time.sleep(2)
        # each write after segment.ms rolls a segment, so the cleaner has one to clean
        produce(bootstrap, topic, [Message(key=b"roll", value=b"again", partition=0)])
        written += 1
        remaining = consume_all(bootstrap, topic)
    assert len(remaining) < written, "the log cleaner did not compact the topic within 90 s"
    offsets = [r.offset for r in remaining]
    assert offsets[:11] == list(range(0, 100, 10)) + [91]

    fast_fail = {"kafkaConsumer.pollTimeoutMs": "20000"}
    got = _rows(_read_batch(spark, bootstrap, topic, includeHeaders="true", **fast_fail))
    after = consume_all(bootstrap, topic)
    # the cleaner may still drop older b"roll" records meanwhile; the first
    # hundred's survivors (their keys never written again) are settled
    settled = [r.comparable() for r in remaining if r.key != b"roll"]
    assert [row for row in got if row[3] != b"roll"] == settled and len(settled) == 19
    rolls = {row for row in got if row[3] == b"roll"}
    assert {r.comparable() for r in after if r.key == b"roll"} <= rolls <= {
        r.comparable() for r in remaining if r.key == b"roll"}
    # ranges that start or end in a gap, and one that compaction emptied completely:
    # exactly their records, and no waiting for the missing ones
    started = time.monotonic()
    inner = _read_batch(spark, bootstrap, topic, startingOffsets='{"%s":{"0":5}}' % topic,
                        endingOffsets='{"%s":{"0":35}}' % topic, **fast_fail)
    assert [r.offset for r in inner.orderBy("offset").collect()] == [10, 20, 30]
    empty = _read_batch(spark, bootstrap, topic, startingOffsets='{"%s":{"0":1}}' % topic,
                        endingOffsets='{"%s":{"0":10}}' % topic, **fast_fail)
    assert empty.count() == 0
    assert time.monotonic() - started < 15


def test_min_offsets_per_trigger_waits_for_a_backlog(spark, kafka_broker, make_topic, tmp_path):
    import time

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, [Message(value=b"a%d" % i, partition=i % 2) for i in range(10)])
    name = "min_offsets_" + topic.replace("-", "_")
    query = (spark.readStream.format("fastkc").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
             .option("startingOffsets", "earliest").option("minOffsetsPerTrigger", "30")
             .option("maxTriggerDelay", "10m").load()
             .writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        time.sleep(3)  # about fifteen triggers: each held back (10 < 30)
        assert spark.table(name).count() == 0
        produce(bootstrap, topic, [Message(value=b"b%d" % i, partition=i % 2) for i in range(30)])
        deadline = time.monotonic() + 30
        while spark.table(name).count() < 40 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert spark.table(name).count() == 40
        assert query.exception() is None
    finally:
        query.stop()


def test_subscribe_pattern_and_assign_select_the_same_partitions_as_spark(spark, kafka_broker, make_topic):
    import re

    bootstrap = kafka_broker.bootstrap_servers
    first = make_topic(partitions=2, prefix="patt-one")
    second = make_topic(partitions=1, prefix="patt-two")
    make_topic(partitions=1, prefix="other-patt")  # must not match: the whole name is matched
    produce(bootstrap, first, [Message(value=b"1-%d" % i, partition=i % 2) for i in range(6)])
    produce(bootstrap, second, [Message(value=b"2-%d" % i, partition=0) for i in range(3)])
    tail = "-[0-9a-f]{10}"
    pattern = "patt-(one{0}|two{0})".format(tail)
    assert re.fullmatch(pattern, first) and re.fullmatch(pattern, second)
    df = (spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribePattern", pattern).load())
    got = sorted((r.topic, r.partition, bytes(r.value)) for r in df.collect())
    assert [t for t, _, _ in got] == [first] * 6 + [second] * 3
    assigned = (spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap)
                .option("assign", '{"%s":[1]}' % first).load())
    assert sorted(bytes(r.value) for r in assigned.collect()) == [b"1-1", b"1-3", b"1-5"]
