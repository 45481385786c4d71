"""KafkaConsumer.metrics() on canned broker answers (the fake broker): the
figures a scripted response determines, checked exactly (sizes, lag, lead,
throttle, counts) or bounded by an injected delay (latencies); the group's
figures; assignment changes; metrics_enabled=False; metric_reporters; and
the OpenTelemetry bridge exporting the same values (in-memory reader)."""
import itertools
import subprocess
import sys
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from tests.support.fake_broker import FakeBroker, answer, delay, wait_for

TP = TopicPartition("t", 0)
HIGH_WATERMARK = 50
LAST_STABLE = 20
LOG_START = 3
THROTTLE_MS = 7
FIRST_DELAY_S = 0.3


def _scripted_fetch(later_wait_s=5.0):
    """Fetch answers with known end offsets and throttle time: the first
    FIRST_DELAY_S late, the later ones held `later_wait_s` (so a test reads
    the metrics of exactly one response)."""
    def edit(header, body, default):
        for topic in default["responses"]:
            for part in topic["partitions"]:
                part["high_watermark"] = HIGH_WATERMARK
                part["last_stable_offset"] = LAST_STABLE
                part["log_start_offset"] = LOG_START
        default["throttle_time_ms"] = THROTTLE_MS
        return default

    send = answer(edit)
    counter = itertools.count()

    def act(link, request):
        if not link.wait(FIRST_DELAY_S if next(counter) == 0 else later_wait_s):
            send(link, request)
    return act


def _consumer(broker, **config):
    config.setdefault("fetch_max_wait_ms", 100)
    config.setdefault("enable_auto_commit", False)
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000, **config)


def _reading_from_start(broker, **config):
    """A consumer of the broker's partition t-0, positioned at offset 0."""
    consumer = _consumer(broker, **config)
    consumer.assign([TP])
    consumer.seek(TP, 0)
    return consumer


def _poll_until(consumer, count, timeout=10.0, arrow=False):
    got = 0
    deadline = time.monotonic() + timeout
    while got < count and time.monotonic() < deadline:
        if arrow:
            got += consumer.poll_arrow(timeout_ms=200).num_rows
        else:
            got += sum(len(records) for records in consumer.poll(timeout_ms=200).values())
    assert got == count
    return got


def _raw(consumer, name, **tags):
    """The value of the metric `name` whose tags (besides client-id) are `tags`."""
    found = [m.value() for n, m in consumer.metrics(raw=True).items()
             if n.name == name and {k: v for k, v in n.tags.items() if k != "client-id"} == tags]
    assert len(found) == 1, (name, tags, found)
    return found[0]


def test_one_response_exactly():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", _scripted_fetch())
        blob_size = len(broker._batch("t", 0))
        consumer = _reading_from_start(broker)
        began = time.monotonic()
        _poll_until(consumer, 10)
        after = time.monotonic()
        fetch = consumer.metrics()["consumer-fetch-manager-metrics"]
        # one response, consumed: its bytes and records, as one request
        assert fetch["fetch-size-avg"] == fetch["fetch-size-max"] == blob_size
        assert fetch["records-per-request-avg"] == 10
        assert fetch["bytes-consumed-total"] == blob_size and fetch["records-consumed-total"] == 10
        # lag = high watermark - position (read_uncommitted); lead = position - log start
        assert fetch["records-lag-max"] == HIGH_WATERMARK - 10
        assert fetch["records-lead-min"] == 10 - LOG_START
        assert _raw(consumer, "records-lag", topic="t", partition="0") == HIGH_WATERMARK - 10
        assert _raw(consumer, "records-lag-avg", topic="t", partition="0") == HIGH_WATERMARK - 10
        assert _raw(consumer, "records-lead", topic="t", partition="0") == 10 - LOG_START
        assert fetch["fetch-throttle-time-avg"] == fetch["fetch-throttle-time-max"] == THROTTLE_MS
        # the injected delay bounds the latency from below; the poll's span from above
        assert FIRST_DELAY_S * 1000 <= fetch["fetch-latency-max"] == fetch["fetch-latency-avg"]
        assert fetch["fetch-latency-max"] <= (after - began) * 1000
        # rates: a young sensor (2 samples of 30 s): elapsed + one full window
        span = 30 + (time.monotonic() - began)
        assert 1 / span <= fetch["fetch-rate"] <= 1 / 30
        assert 10 / span <= fetch["records-consumed-rate"] <= 10 / 30
        assert blob_size / span <= fetch["bytes-consumed-rate"] <= blob_size / 30
        # per topic, kafka-python's tag (dots as underscores) and the same figures
        assert _raw(consumer, "fetch-size-avg", topic="t") == blob_size
        assert _raw(consumer, "records-per-request-avg", topic="t") == 10
        consumer.close()
        assert not broker.errors


def test_lag_under_read_committed_is_to_the_last_stable_offset():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", _scripted_fetch())
        consumer = _reading_from_start(broker, isolation_level="read_committed")
        _poll_until(consumer, 10)
        assert _raw(consumer, "records-lag", topic="t", partition="0") == LAST_STABLE - 10
        assert consumer.metrics()["consumer-fetch-manager-metrics"]["records-lag-max"] == LAST_STABLE - 10
        consumer.close()


def test_poll_arrow_records_the_same_lag_and_counts():
    pytest.importorskip("pyarrow")
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", _scripted_fetch())
        blob_size = len(broker._batch("t", 0))
        consumer = _reading_from_start(broker)
        _poll_until(consumer, 10, arrow=True)
        fetch = consumer.metrics()["consumer-fetch-manager-metrics"]
        assert fetch["records-per-request-avg"] == 10 and fetch["fetch-size-max"] == blob_size
        assert _raw(consumer, "records-lag", topic="t", partition="0") == HIGH_WATERMARK - 10
        consumer.close()


def test_empty_answers_are_requests_of_no_records():
    # the kit answers nothing past offset 10: after the data, empty responses
    # (as kafka-python and Java count them) pull the average down
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        consumer = _reading_from_start(broker, fetch_max_wait_ms=10)
        _poll_until(consumer, 10)
        for _ in range(5):
            consumer.poll(timeout_ms=100)
        fetch = consumer.metrics()["consumer-fetch-manager-metrics"]
        assert 0 < fetch["records-per-request-avg"] < 10
        assert fetch["records-lag-max"] == 0  # the kit's high watermark is 10
        consumer.close()


def test_unassigned_partitions_lose_their_metrics():
    with FakeBroker(topics={"t": 2}, records=5) as broker:
        consumer = _consumer(broker)
        tp1 = TopicPartition("t", 1)
        consumer.assign([TP, tp1])
        consumer.seek(TP, 0)
        consumer.seek(tp1, 0)
        _poll_until(consumer, 10)
        tagged = {(n.name, n.tags["partition"]) for n in consumer.metrics(raw=True) if "partition" in n.tags}
        assert ("records-lag", "0") in tagged and ("records-lag", "1") in tagged
        consumer.assign([tp1])
        tagged = {(n.name, n.tags["partition"]) for n in consumer.metrics(raw=True) if "partition" in n.tags}
        assert tagged and all(partition == "1" for _, partition in tagged)
        consumer.close()


def test_group_figures():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("OffsetCommit", delay(250), times=1)
        consumer = _consumer(broker, group_id="g", heartbeat_interval_ms=100, auto_offset_reset="earliest")
        consumer.subscribe(["t"])
        _poll_until(consumer, 10)
        consumer.commit()
        consumer.commit()
        assert wait_for(lambda: consumer.metrics()["consumer-coordinator-metrics"]["heartbeat-rate"] > 0, 5.0)
        group = consumer.metrics()["consumer-coordinator-metrics"]
        assert group["assigned-partitions"] == 1
        assert group["join-rate"] > 0 and group["sync-rate"] > 0
        assert group["join-time-max"] >= group["join-time-avg"] >= 0
        assert group["rebalance-total"] == 1
        # a rebalance spans its JoinGroup and SyncGroup
        assert group["rebalance-latency-max"] >= group["join-time-max"] + group["sync-time-max"] - 1e-6
        assert group["rebalance-latency-total"] == group["rebalance-latency-max"]
        assert 0 <= group["last-rebalance-seconds-ago"] < 60
        assert group["commit-latency-max"] >= 250  # the delayed first commit
        assert group["commit-latency-avg"] < group["commit-latency-max"]  # the second was not delayed
        assert 2 / 32 <= group["commit-rate"] <= 2 / 30
        assert 0 <= group["last-heartbeat-seconds-ago"] < 5
        assert group["heartbeat-response-time-max"] >= 0
        consumer.close()
        assert not broker.errors


def test_metrics_disabled_is_none_as_kafka_python():
    with FakeBroker(topics={"t": 1}, records=3) as broker:
        consumer = _reading_from_start(broker, metrics_enabled=False)
        _poll_until(consumer, 3)
        assert consumer.metrics() is None and consumer.metrics(raw=True) is None
        consumer.close()


class _Reporter:
    # kafka-python's AbstractMetricsReporter surface
    instances = []

    def __init__(self):
        self.calls = []
        self.metrics = {}
        _Reporter.instances.append(self)

    def init(self, metrics):
        self.calls.append(("init", len(metrics)))

    def metric_change(self, metric):
        self.metrics[metric.metric_name] = metric

    def metric_removal(self, metric):
        self.metrics.pop(metric.metric_name, None)

    def configure(self, configs):
        pass

    def close(self):
        self.calls.append(("close",))


def test_metric_reporters_hear_every_metric_and_the_close():
    _Reporter.instances.clear()
    with FakeBroker(topics={"t": 1}, records=4) as broker:
        consumer = _consumer(broker, metric_reporters=[_Reporter])
        (reporter,) = _Reporter.instances
        consumer.assign([TP])
        consumer.seek(TP, 0)
        _poll_until(consumer, 4)
        assert set(reporter.metrics) == set(consumer.metrics(raw=True))  # per-partition ones included
        consumer.close()
        assert reporter.calls == [("init", 0), ("close",)]


# --- OpenTelemetry --------------------------------------------------------------------------
def _points(reader):
    """{(instrument name, frozenset(attributes)): value} of one collection."""
    out = {}
    data = reader.get_metrics_data()
    if data is None:
        return out
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    out[(metric.name, frozenset(point.attributes.items()))] = point.value
    return out


def test_otel_bridge_exports_the_same_figures_and_stops_on_close():
    # the dev extra holds the SDK: no skip, a missing SDK fails here
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from fastkc.metrics.otel import instrument

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", _scripted_fetch())
        blob_size = len(broker._batch("t", 0))
        consumer = _consumer(broker, client_id="otel-test")
        instrument(consumer, meter_provider=provider)
        consumer.assign([TP])
        consumer.seek(TP, 0)
        _poll_until(consumer, 10)
        points = _points(reader)
        client = ("client-id", "otel-test")
        part = frozenset({client, ("topic", "t"), ("partition", "0")})
        topic = frozenset({client, ("topic", "t")})
        # the most detailed granularity only (OpenTelemetry's Java bridge's rule)
        assert points[("kafka.consumer.records_lag", part)] == HIGH_WATERMARK - 10
        assert points[("kafka.consumer.records_lag_max", part)] == HIGH_WATERMARK - 10
        assert ("kafka.consumer.records_lag_max", frozenset({client})) not in points
        assert points[("kafka.consumer.records_lead_min", part)] == 10 - LOG_START
        assert points[("kafka.consumer.fetch_size_avg", topic)] == blob_size
        assert points[("kafka.consumer.records_per_request_avg", topic)] == 10
        # client-wide only: exported with client-id alone, the same values as metrics()
        fetch = consumer.metrics()["consumer-fetch-manager-metrics"]
        for name in ("fetch-latency-max", "fetch-latency-avg", "fetch-throttle-time-max", "records-consumed-total",
                     "fetch-total", "bytes-consumed-total"):
            assert points[("kafka.consumer." + name.replace("-", "_"), frozenset({client}))] == fetch[name], name
        assert points[("kafka.consumer.assigned_partitions", frozenset({client}))] == 1
        consumer.close()
        after = _points(reader)
        assert not any(dict(attrs).get("client-id") == "otel-test" for _, attrs in after)


def test_two_consumers_on_one_meter_are_told_apart_by_client_id():
    # the dev extra holds the SDK: no skip, a missing SDK fails here
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from fastkc.metrics.otel import instrument

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with FakeBroker(topics={"t": 1}, records=4) as broker:
        consumers = [_consumer(broker, client_id="c%d" % i) for i in range(2)]
        meter = provider.get_meter("test")
        for consumer in consumers:
            instrument(consumer, meter=meter)
            consumer.assign([TP])
            consumer.seek(TP, 0)
            _poll_until(consumer, 4)
        points = _points(reader)
        for i in range(2):
            assert points[("kafka.consumer.records_consumed_total", frozenset({("client-id", "c%d" % i)}))] == 4
        consumers[0].close()
        points = _points(reader)
        ids = {dict(attrs).get("client-id") for _, attrs in points}
        assert ids == {"c1"}
        consumers[1].close()


def test_importing_fastkc_imports_no_opentelemetry():
    code = ("import sys, fastkc, fastkc.metrics; from fastkc import KafkaConsumer; "
            "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))


def test_window_and_prefix_come_from_the_config():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", _scripted_fetch())
        consumer = _reading_from_start(broker, metrics_num_samples=2, metrics_sample_window_ms=200,
                                       metric_group_prefix="app")
        _poll_until(consumer, 10)
        fetch = consumer.metrics()["app-fetch-manager-metrics"]
        assert "app-coordinator-metrics" in consumer.metrics() and "app-metrics" in consumer.metrics()
        assert fetch["records-lag-max"] == HIGH_WATERMARK - 10
        time.sleep(0.5)  # past 2 x 200 ms with nothing recorded (the next Fetch is held 5 s)
        fetch = consumer.metrics()["app-fetch-manager-metrics"]
        assert fetch["records-lag-max"] == float("-inf") and fetch["fetch-latency-avg"] == 0
        assert fetch["records-consumed-total"] == 10  # totals are not windowed
        consumer.close()
