"""Planning on the driver (issue 11) and the Spark benchmarks' quick modes.

- resolve_both() (one Metadata request, the ListOffsets of both ends in
  flight together) must give what resolve() gives spec by spec through the
  consumer's blocking offset lookups, for every kind of offset spec.
- A 200-partition topic set is planned exactly (one range per partition, the
  offsets the producer wrote), directly and through a Spark session, and its
  InputPartitions stay small (the settings travel once, with the reader).
- The benchmarks' own functions run against the session broker and the
  shared session, so they cannot rot. No figure is asserted.
"""
import os
import pickle
import sys

import pytest

from fastkc.spark import options as so
from fastkc.spark import ranges
from tests.support.kafka_tools import Message, produce

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "benchmarks", "spark")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import bench_planning  # noqa: E402
import bench_spark  # noqa: E402
import bench_spark_avro  # noqa: E402

PER_TOPIC = 100  # partitions in each of the two planned topics


def _consumer(bootstrap):
    from fastkc import KafkaConsumer

    return KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)


@pytest.fixture(scope="module")
def planned_topics(kafka_broker):
    """2 topics x 100 partitions, 3 records in each partition (reused by name
    when the broker already has them); enough to show per-partition costs,
    small enough that reading them all (one Spark task each) stays quick."""
    names = bench_planning.topic_names(2, PER_TOPIC)
    bench_planning.ensure_topics(kafka_broker.bootstrap_servers, names, PER_TOPIC)
    return names


def test_resolve_both_equals_resolving_each_spec_in_turn(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topics = [make_topic(partitions=3), make_topic(partitions=2)]
    for t_index, topic in enumerate(topics):
        # partition p holds p + 2 records
        produce(bootstrap, topic, [Message(value=b"x", partition=p) for p in range(3 - t_index) for _ in range(p + 2)])
    pairs = sorted((t, p) for i, t in enumerate(topics) for p in range(3 - i))
    spec = so.OffsetSpec
    mixed_start = spec("offsets", {(topics[0], 0): -2, (topics[0], 1): 1, (topics[0], 2): -1,
                                   (topics[1], 0): -1, (topics[1], 1): -2})
    mixed_end = spec("offsets", {(topics[0], 0): 1, (topics[0], 1): -1, (topics[0], 2): 2,
                                 (topics[1], 0): -1, (topics[1], 1): 1})
    cases = [(spec("earliest"), spec("latest")), (mixed_start, spec("latest")), (spec("earliest"), mixed_end),
             (spec("latest"), mixed_end), (spec("timestamp", timestamp=0), spec("latest"))]
    consumer = _consumer(bootstrap)
    try:
        opts = so.parse({"kafka.bootstrap.servers": bootstrap, "subscribe": ",".join(topics)}, streaming=False)
        assert ranges.topic_partitions(consumer, opts) == pairs
        for starting, ending in cases:
            one_by_one = (ranges.resolve(consumer, starting, pairs, starting=True),
                          ranges.resolve(consumer, ending, pairs, starting=False))
            together = ranges.resolve_both(consumer, starting, ending, pairs)
            assert together == one_by_one, (starting, ending)
        earliest, latest = ranges.both_ends(consumer, pairs)
        assert earliest == {tp: 0 for tp in pairs}
        assert latest == {(t, p): p + 2 for t, p in pairs}
    finally:
        consumer.close()


def test_both_ends_falls_back_to_the_consumer_for_partitions_without_a_leader(kafka_broker, make_topic):
    # a partition the cluster does not have: the fast path skips it and the
    # consumer's own lookup raises as it always did (after its timeout)
    from fastkc import KafkaConsumer
    from fastkc.errors import KafkaTimeoutError

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=1500)
    try:
        assert ranges.both_ends(consumer, [(topic, 0)]) == ({(topic, 0): 0}, {(topic, 0): 0})
        with pytest.raises(KafkaTimeoutError):
            ranges.both_ends(consumer, [(topic, 0), (topic, 7)])
    finally:
        consumer.close()


def test_planning_200_partitions_directly_and_in_a_session(spark, kafka_broker, planned_topics):
    from fastkc.spark.source import FastkcBatchReader, KafkaRangePartition

    bootstrap = kafka_broker.bootstrap_servers
    options = bench_planning.source_options(bootstrap, planned_topics)
    parts = FastkcBatchReader(so.parse(options, streaming=False)).partitions()
    expected = sorted((t, p, 0, bench_planning.RECORDS_PER_PARTITION) for t in planned_topics for p in range(PER_TOPIC))
    assert sorted((q.topic, q.partition, q.start, q.end) for q in parts) == expected
    # a partition pickles as its range alone: no consumer settings in each of the 200
    one = pickle.dumps(parts[0])
    assert b"bootstrap" not in one and len(one) < 200
    assert pickle.loads(one).value == parts[0].value and isinstance(pickle.loads(one), KafkaRangePartition)

    seconds, count, size = bench_planning.plan_in_reader(options)
    assert count == 2 * PER_TOPIC and size < 2 * PER_TOPIC * 200
    seconds, tasks = bench_planning.plan_in_session(spark, "fastkc", options)
    assert tasks == 2 * PER_TOPIC
    # and the tasks read exactly those records
    rows = spark.read.format("fastkc").options(**options).load().groupBy("topic").count().collect()
    assert sorted((r["topic"], r["count"]) for r in rows) == [
        (t, PER_TOPIC * bench_planning.RECORDS_PER_PARTITION) for t in planned_topics]


def test_spark_bench_quick_mode_in_the_shared_session(spark, kafka_broker, make_topic, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=4)
    produce(bootstrap, topic, [Message(value=b"v%d" % i, partition=i % 4) for i in range(2000)], compression="lz4")
    # the shared session has no spark-sql-kafka jars: the fastkc half of the bench
    produced = sum(len(b"v%d" % i) for i in range(2000))  # null keys
    measured = {"local[2]": bench_spark.measure_in_session(spark, ("fastkc",), bootstrap, topic, 2000, produced,
                                                           runs=1)}
    with pytest.raises(SystemExit, match="read 2000 rows, expected 2001"):
        bench_spark.measure_in_session(spark, ("fastkc",), bootstrap, topic, 2001, produced, runs=1)
    with pytest.raises(SystemExit, match="touched {0} key \\+ value bytes, {1} were".format(produced, produced + 1)):
        bench_spark.measure_in_session(spark, ("fastkc",), bootstrap, topic, 2000, produced + 1, runs=1)
    summary = bench_spark.summarize(measured, 2000, 2, 4, 1, os.getloadavg()[:2])
    row = summary["shapes"]["local[2]"]
    assert len(row["fastkc"]["seconds"]) == 1 and row["ratio"] is None
    text = bench_spark.table(summary)
    assert "| local[2] | not measured | " in text and "load average" in text
    bench_spark.draw_chart(summary, str(tmp_path / "spark.png"))
    with open(tmp_path / "spark.png", "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_spark_avro_bench_quick_mode_in_the_shared_session(spark, kafka_broker, schema_registry):
    pytest.importorskip("confluent_kafka.schema_registry.avro")
    from pyspark.sql import functions as F

    from tests.support.kafka_tools import unique_name

    bootstrap, url = kafka_broker.bootstrap_servers, schema_registry.url
    topic = bench_spark_avro.ensure_topic(bootstrap, url, 1000, unique_name("spark-avro-bench"))
    # written once: the same name and count reads the topic as it is; another count is refused
    assert bench_spark_avro.topic_events(bootstrap, topic)[0] == 1000
    assert bench_spark_avro.ensure_topic(bootstrap, url, 1000, topic) == topic
    assert bench_spark_avro.topic_events(bootstrap, topic)[0] == 1000
    with pytest.raises(SystemExit, match="holds 1000 records, not --records 999"):
        bench_spark_avro.ensure_topic(bootstrap, url, 999, topic)
    # the shared session has no spark-sql-kafka / spark-avro jars: the fastkc half of the bench
    measured, checked = bench_spark_avro.measure_in_session(spark, ("fastkc",), bootstrap, topic, url, 1000, runs=1)
    assert checked["rows"] == 1000 and checked["sequence_sum"] == 999 * 1000 // 2 and checked["referrers"] == 334
    assert checked["columns"].startswith("struct<event_id:string,user_id:bigint,")
    # the untimed check refuses outputs that differ
    events = bench_spark_avro.events(spark, "fastkc", bootstrap, topic, url)
    with pytest.raises(SystemExit, match="read other events than written"):
        bench_spark_avro.check_equal_output({"fastkc": events, "short": events.limit(999)}, 1000)
    with pytest.raises(SystemExit, match="outputs differ"):
        bench_spark_avro.check_equal_output({"fastkc": events, "other": events.withColumn("url", F.lit("x"))},
                                            1000)
    summary = bench_spark_avro.summarize({"local[2]": measured}, 1000, 1, os.getloadavg()[:2], checked)
    row = summary["shapes"]["local[2]"]
    assert len(row["fastkc"]["seconds"]) == 1 and row["ratio"] is None
    text = bench_spark_avro.table(summary, quick=True)
    assert "| local[2] | not measured | " in text and "QUICK mode" in text and "load average" in text
