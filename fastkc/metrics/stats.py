"""Windowed statistics as kafka-python's (and Java's): MetricName, Metric and
the Sensor whose one ring of samples all its stats read (the arithmetic: the
package docstring, fastkc/metrics/__init__.py)."""
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

_INF = float("inf")

Clock = Callable[[], float]  # seconds, monotonic
Measure = Callable[[], float]
# (start_ms, count, total, max, min): a list, updated in place
_Sample = list[float]


class MetricsReporter(Protocol):
    """kafka-python's AbstractMetricsReporter, as metric_reporters are called."""

    def init(self, metrics: list["Metric"]) -> None: ...

    def metric_change(self, metric: "Metric") -> None: ...

    def metric_removal(self, metric: "Metric") -> None: ...

    def close(self) -> None: ...



class MetricName:
    """kafka-python's MetricName: name, group, description and tags
    ({tag: value}); two names are equal when name, group and tags are."""

    __slots__ = ("name", "group", "description", "tags", "_key")

    def __init__(self, name: str, group: str, description: str = "", tags: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.group = group
        self.description = description
        self.tags = dict(tags or {})
        self._key = (name, group, tuple(sorted(self.tags.items())))

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MetricName) and self._key == other._key

    def __repr__(self) -> str:
        return "MetricName(name={0!r}, group={1!r}, description={2!r}, tags={3!r})".format(
            self.name, self.group, self.description, self.tags)


class Metric:
    """kafka-python's KafkaMetric surface: `metric_name` and `value()`."""

    __slots__ = ("metric_name", "_measure")

    def __init__(self, metric_name: MetricName, measure: Measure) -> None:
        self.metric_name = metric_name
        self._measure = measure

    def value(self) -> float:
        return self._measure()

    def __repr__(self) -> str:
        return "Metric({0!r}, {1!r})".format(self.metric_name.name, self.value())


class Sensor:
    """A ring of time-window samples shared by every stat read from it.

    A sample is a list [start_ms, count, total, max, min]; `last` is the
    latest value recorded (Java's Value stat: records-lag, records-lead)."""

    __slots__ = ("_window_ms", "_samples_max", "_samples", "_current", "_clock", "_lock", "last")

    def __init__(self, num_samples: int, window_ms: float, clock: Clock, lock: threading.Lock) -> None:
        self._window_ms = float(window_ms)
        self._samples_max = int(num_samples)
        self._samples: list[_Sample] = []
        self._current = 0
        self._clock = clock  # seconds, monotonic
        # one registry-wide lock: the group's thread records while the
        # application's thread reads
        self._lock = lock
        self.last: float | None = None

    def record(self, value: float, now_ms: float | None = None) -> None:
        if now_ms is None:
            now_ms = self._clock() * 1000.0
        with self._lock:
            self.put(value, now_ms)

    def put(self, value: float, now_ms: float) -> None:
        """record() for a caller that holds the registry's lock (several
        sensors recorded under one acquisition)."""
        samples = self._samples
        if samples:
            sample = samples[self._current]
            if now_ms - sample[0] >= self._window_ms:
                self._current = (self._current + 1) % self._samples_max
                if self._current >= len(samples):
                    sample = [now_ms, 0, 0, -_INF, _INF]
                    samples.append(sample)
                else:
                    sample = samples[self._current]
                    sample[:] = (now_ms, 0, 0, -_INF, _INF)
        else:
            sample = [now_ms, 0, 0, -_INF, _INF]
            samples.append(sample)
        sample[1] += 1
        sample[2] += value
        if value > sample[3]:
            sample[3] = value
        if value < sample[4]:
            sample[4] = value
        self.last = value

    def _purged(self, now_ms: float) -> list[_Sample]:
        # kafka-python's purge_obsolete_samples: a sample past every window
        # is emptied and starts now; the caller holds the lock
        expire = self._samples_max * self._window_ms
        for sample in self._samples:
            if now_ms - sample[0] >= expire:
                sample[:] = (now_ms, 0, 0.0, -_INF, _INF)
        return self._samples

    def _now(self, now_ms: float | None) -> float:
        return self._clock() * 1000.0 if now_ms is None else now_ms

    def avg(self, now_ms: float | None = None) -> float:
        now_ms = self._now(now_ms)
        with self._lock:
            samples = self._purged(now_ms)
            count = sum(s[1] for s in samples)
            return float(sum(s[2] for s in samples)) / count if count else 0.0

    def max(self, now_ms: float | None = None) -> float:
        now_ms = self._now(now_ms)
        with self._lock:
            samples = self._purged(now_ms)
            return float(max((s[3] for s in samples), default=-_INF))

    def min(self, now_ms: float | None = None) -> float:
        now_ms = self._now(now_ms)
        with self._lock:
            samples = self._purged(now_ms)
            return float(min((s[4] for s in samples), default=_INF))

    def rate(self, now_ms: float | None = None) -> float:
        """Sum of the values per second (kafka-python's Rate())."""
        return self._rate(2, now_ms)

    def count_rate(self, now_ms: float | None = None) -> float:
        """Events per second (kafka-python's Rate(sampled_stat=Count()))."""
        return self._rate(1, now_ms)

    def _rate(self, field: int, now_ms: float | None) -> float:
        now = self._now(now_ms)
        with self._lock:
            samples = self._purged(now)
            total = float(sum(s[field] for s in samples))
            # kafka-python's Rate.window_size(); with no sample yet it makes
            # one starting now (elapsed 0), which changes nothing read here
            oldest = min((s[0] for s in samples), default=now)
            elapsed = now - oldest
            full = int(elapsed / self._window_ms)
            if full < self._samples_max - 1:
                elapsed += (self._samples_max - 1 - full) * self._window_ms
            if elapsed <= 0:
                # metrics_num_samples=1 read at the instant of its first
                # sample: kafka-python divides by zero here; no time, no rate
                return 0.0
            return total / (elapsed / 1000.0)

    def value(self) -> float:
        """The latest value recorded (Java's Value stat), NaN before any
        (Java's figure for a metric with nothing measured)."""
        return float("nan") if self.last is None else float(self.last)

