"""metrics() on the real broker, data written by confluent-kafka: fastkc's
metric names and groups against kafka-python 3.0.12's on the same topic
(fastkc holds every fetch-manager and coordinator name kafka-python has),
lag at the end and mid-way, the consumed rate, the group's figures, and the
OpenTelemetry bridge."""
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from tests.support.kafka_tools import Message, produce

PER_PARTITION = 300
GROUPS = ("consumer-fetch-manager-metrics", "consumer-coordinator-metrics")


@pytest.fixture(scope="module")
def written(kafka_broker):
    from tests.support.kafka_tools import create_topic, unique_name

    topic = unique_name("metrics")
    create_topic(kafka_broker.bootstrap_servers, topic, partitions=2)
    produce(kafka_broker.bootstrap_servers, topic,
            [Message(key=b"k%d" % i, value=b"v" * 50, partition=p) for p in (0, 1) for i in range(PER_PARTITION)])
    return topic


def _read_all(consumer, count, timeout=60.0):
    got = 0
    deadline = time.monotonic() + timeout
    while got < count and time.monotonic() < deadline:
        got += sum(len(records) for records in consumer.poll(timeout_ms=500).values())
    assert got == count
    return got


def _names(metrics_raw):
    """{(group, name, tag keys)} of a raw metrics() answer, for our groups."""
    return {(n.group, n.name, frozenset(n.tags)) for n in metrics_raw if n.group in GROUPS}


def test_names_and_groups_include_kafka_pythons(kafka_broker, written):
    kafka = pytest.importorskip("kafka")
    bootstrap = kafka_broker.bootstrap_servers
    config = dict(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    theirs = kafka.KafkaConsumer(written, group_id="metrics-kp", **config)
    try:
        # kafka-python 3.0.12's group leader assigns from the metadata it has:
        # when the topic's had not come yet ("No partition metadata for topic")
        # it assigned nothing and read nothing for 60 s on a loaded CI machine.
        # Its metadata first, then the join.
        assert theirs.partitions_for_topic(written)
        _read_all(theirs, 2 * PER_PARTITION)
        theirs.commit()
        their_plain = {g: set(names) for g, names in theirs.metrics().items() if g in GROUPS}
        their_raw = _names(theirs.metrics(raw=True))
    finally:
        theirs.close()
    with KafkaConsumer(written, group_id="metrics-fastkc", **config) as ours:
        _read_all(ours, 2 * PER_PARTITION)
        ours.commit()
        our_plain = {g: set(names) for g, names in ours.metrics().items() if g in GROUPS}
        our_raw = _names(ours.metrics(raw=True))
    assert set(their_plain) == set(GROUPS)  # kafka-python has both groups here: the comparison means something
    for group in GROUPS:
        missing = their_plain[group] - our_plain[group]
        assert not missing, (group, missing)
    # per-topic metrics too, with kafka-python's tags (client-id, topic)
    assert their_raw <= our_raw, their_raw - our_raw
    assert ("consumer-fetch-manager-metrics", "records-lag", frozenset({"client-id", "topic", "partition"})) in our_raw


def test_lag_at_the_end_and_mid_way(kafka_broker, written):
    tps = [TopicPartition(written, p) for p in (0, 1)]
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, fetch_max_wait_ms=100) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        began = time.monotonic()
        _read_all(consumer, 2 * PER_PARTITION)
        consumer.poll(timeout_ms=300)  # a poll at the end: the lag recorded there
        took = time.monotonic() - began
        raw = consumer.metrics(raw=True)
        lags = {n.tags["partition"]: m.value() for n, m in raw.items() if n.name == "records-lag"}
        assert lags == {"0": 0, "1": 0}
        leads = {n.tags["partition"]: m.value() for n, m in raw.items() if n.name == "records-lead"}
        assert leads == {"0": PER_PARTITION, "1": PER_PARTITION}  # nothing deleted: log start 0
        fetch = consumer.metrics()["consumer-fetch-manager-metrics"]
        total = 2 * PER_PARTITION
        # a young window (2 x 30 s): the rate is over elapsed + one full window
        assert total / (30 + took + 1) <= fetch["records-consumed-rate"] <= total / 30
        assert fetch["records-lag-max"] >= 0 and fetch["fetch-latency-avg"] > 0

    # mid-way: lag == end - position, for the position poll() left
    tp = tps[0]
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, max_poll_records=100,
                       fetch_max_wait_ms=100) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got = 0
        deadline = time.monotonic() + 30
        while got == 0 and time.monotonic() < deadline:
            got = sum(len(r) for r in consumer.poll(timeout_ms=500, max_records=100).values())
        assert 0 < got <= 100
        position = consumer.position(tp)
        end = consumer.end_offsets([tp])[tp]
        assert end == PER_PARTITION and position < end
        raw = consumer.metrics(raw=True)
        (lag,) = [m.value() for n, m in raw.items() if n.name == "records-lag"]
        assert lag == end - position


def test_group_figures_and_the_otel_bridge(kafka_broker, written):
    from opentelemetry.sdk import metrics as otel  # the dev extra: no skip
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from fastkc.metrics.otel import instrument

    reader = InMemoryMetricReader()
    provider = otel.MeterProvider(metric_readers=[reader])
    with KafkaConsumer(written, bootstrap_servers=kafka_broker.bootstrap_servers, group_id="metrics-group",
                       auto_offset_reset="earliest", enable_auto_commit=False, client_id="live-otel") as consumer:
        instrument(consumer, meter_provider=provider)
        _read_all(consumer, 2 * PER_PARTITION)
        for _ in range(3):
            consumer.commit()
        group = consumer.metrics()["consumer-coordinator-metrics"]
        assert group["assigned-partitions"] == 2
        assert group["commit-latency-avg"] > 0 and group["commit-latency-max"] >= group["commit-latency-avg"]
        assert group["commit-rate"] > 0 and group["join-rate"] > 0 and group["rebalance-total"] >= 1
        points = {}
        for resource in reader.get_metrics_data().resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        points[(metric.name, frozenset(point.attributes.items()))] = point.value
        client = frozenset({("client-id", "live-otel")})
        assert points[("kafka.consumer.assigned_partitions", client)] == 2
        assert points[("kafka.consumer.commit_latency_max", client)] == group["commit-latency-max"]
        assert points[("kafka.consumer.records_consumed_total", client)] == 2 * PER_PARTITION
        for p in ("0", "1"):
            attrs = frozenset({("client-id", "live-otel"), ("topic", written), ("partition", p)})
            assert points[("kafka.consumer.records_lag", attrs)] == 0
