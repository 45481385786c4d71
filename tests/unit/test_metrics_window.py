"""fastkc.metrics' windowed stats against a fake clock: worked values by
hand, and kafka-python 3.0.12's own kafka.metrics (Avg, Max, Rate,
Rate(Count)) on the same values at the same times as the oracle."""
import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkc.metrics import Sensor

kafka_metrics = pytest.importorskip("kafka.metrics")
from kafka.metrics import MetricConfig, Metrics  # noqa: E402
from kafka.metrics.stats import Avg, Count, Max, Rate  # noqa: E402


def _ours(samples, window_ms):
    return Sensor(samples, window_ms, clock=lambda: 0.0, lock=threading.RLock())


def _theirs(samples, window_ms):
    registry = Metrics(MetricConfig(samples=samples, time_window_ms=window_ms))
    sensor = registry.sensor("s")
    names = {}
    for key, stat in (("avg", Avg()), ("max", Max()), ("rate", Rate()), ("count_rate", Rate(sampled_stat=Count()))):
        names[key] = registry.metric_name(key, "g")
        sensor.add(names[key], stat)

    def read(now_ms):
        # KafkaMetric.value(time_ms): each stat measured at the same time
        return {key: registry.metrics[name].value(now_ms) for key, name in names.items()}

    return sensor, read


def _read_ours(sensor, now_ms):
    return {"avg": sensor.avg(now_ms), "max": sensor.max(now_ms), "rate": sensor.rate(now_ms),
            "count_rate": sensor.count_rate(now_ms)}


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if math.isinf(a[key]) or math.isinf(b[key]):
            assert a[key] == b[key], (key, a, b)
        else:
            assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-9), (key, a, b)


def test_worked_example_two_windows_of_one_second():
    sensor = _ours(2, 1000)
    sensor.record(10, 0)
    sensor.record(30, 500)
    # one sample, 500 ms old; a young sensor counts (samples - 1) full windows
    # more: elapsed 500 + 1000 ms
    assert sensor.avg(500) == 20.0
    assert sensor.max(500) == 30.0
    assert sensor.rate(500) == pytest.approx(40 / 1.5)
    assert sensor.count_rate(500) == pytest.approx(2 / 1.5)
    sensor.record(50, 1200)  # the second window starts at 1200
    assert sensor.avg(1200) == 30.0
    assert sensor.rate(1200) == pytest.approx(90 / 1.2)  # one full window elapsed: no padding
    # at 2000 the first sample (started at 0) is 2 windows old: purged
    assert sensor.avg(2000) == 50.0
    assert sensor.max(2000) == 50.0
    # at 3200 every sample is past samples x window: nothing left
    assert sensor.avg(3200) == 0.0
    assert sensor.max(3200) == -math.inf
    assert sensor.rate(3200) == 0.0


def test_a_sensor_never_recorded_reads_like_kafka_pythons():
    ours = _ours(2, 30000)
    _, read = _theirs(2, 30000)
    _same(_read_ours(ours, 12345.0), read(12345.0))
    assert ours.value() != ours.value()  # NaN before any value (Java's Value stat)
    assert ours.min(0) == math.inf


def test_value_and_min_keep_the_latest_and_the_smallest():
    sensor = _ours(2, 1000)
    for t, v in ((0, 7), (100, 3), (200, 9)):
        sensor.record(v, t)
    assert sensor.value() == 9.0
    assert sensor.min(300) == 3.0
    assert sensor.min(2500) == math.inf  # all purged


events = st.lists(st.tuples(st.integers(0, 5000), st.integers(-1000, 10 ** 6)), min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(samples=st.integers(2, 4), window_ms=st.integers(1, 3000), steps=events,
       reads=st.lists(st.integers(0, 4000), min_size=1, max_size=5))
def test_same_figures_as_kafka_python(samples, window_ms, steps, reads):
    ours = _ours(samples, window_ms)
    theirs, read = _theirs(samples, window_ms)
    now = 1_000_000.0
    for gap, value in steps:
        now += gap
        ours.record(value, now)
        theirs.record(value, now)
        _same(_read_ours(ours, now), read(now))
    for gap in reads:  # reading later, with no recording in between
        now += gap
        _same(_read_ours(ours, now), read(now))


def test_one_sample_read_at_its_start_is_no_rate_not_a_division_by_zero():
    # kafka-python raises ZeroDivisionError here (samples=1, elapsed 0)
    sensor = _ours(1, 1000)
    assert sensor.rate(0) == 0.0
    sensor.record(5, 10)
    assert sensor.rate(10) == 0.0
    assert sensor.rate(510) == pytest.approx(5 / 0.5)

