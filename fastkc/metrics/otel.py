"""fastkc.metrics.otel: the consumer's metrics as OpenTelemetry observable
instruments (extra `otel`: opentelemetry-api; the SDK for a reader).

    from fastkc.metrics.otel import instrument
    bridge = instrument(consumer)               # the global MeterProvider's meter
    bridge = instrument(consumer, meter=meter)  # or a given one
    ...
    bridge.close()   # or consumer.close(), which does it

The mapping is the one OpenTelemetry's own Kafka client bridge uses
(opentelemetry-java-instrumentation, `OpenTelemetryMetricsReporter`, its
"Kafka Metrics" table), so dashboards built for Java consumers read fastkc's:

- instrument name: "kafka.consumer." + the Kafka metric name with "-" as
  "_", whatever its group (consumer-fetch-manager-metrics,
  consumer-coordinator-metrics, consumer-metrics): records-lag-max ->
  kafka.consumer.records_lag_max, assigned-partitions ->
  kafka.consumer.assigned_partitions;
- attributes: the Kafka tags as they are ("client-id", "topic",
  "partition");
- a name reported at several granularities (bytes-consumed-rate for the
  client and per topic; records-lag-max for the client and per partition)
  is exported at the most detailed one only, so a backend that sums over
  attributes does not count twice;
- "-total" names are observable counters (monotonic), every other figure an
  observable gauge; the unit is left empty as in that table.

OpenTelemetry's semantic conventions for messaging metrics
(messaging.client.consumed.messages, ...) describe per-operation
histograms, not these client-internal windowed figures, so they are not
used here. Windows (rates, avg, max) are the consumer's own
(metrics_num_samples x metrics_sample_window_ms), read at each collection.

Nothing in `import fastkc` imports this module or opentelemetry.
"""

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from fastkc._version import __version__
from fastkc.metrics import ConsumerMetrics, Metric, MetricName

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer

__all__ = ["instrument", "OtelBridge", "instrument_name"]

_METER_NAME = "fastkc"


def instrument_name(metric_name: MetricName) -> str:
    """The OpenTelemetry instrument name of a Kafka MetricName."""
    return "kafka.consumer." + metric_name.name.replace("-", "_")


class _MeterInstruments:
    """The instruments made on one Meter, shared by every consumer bridged to
    it: an SDK refuses a second instrument of the same name on a meter, so
    one instrument per name reads all the live bridges (their client-id
    attribute tells them apart)."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.made: dict[str, Any] = {}  # instrument name -> instrument
        self.bridges: list[OtelBridge] = []

    def ensure(self, metric_name: MetricName) -> None:
        name = instrument_name(metric_name)
        if name in self.made:
            return
        kafka_name = metric_name.name
        description = metric_name.description.split(" for topic ")[0]

        def observe(options: CallbackOptions, kafka_name: str = kafka_name) -> Iterable[Observation]:
            out: list[Observation] = []
            for bridge in list(self.bridges):
                out.extend(bridge.observe(kafka_name))
            return out

        made: Any
        if kafka_name.endswith("-total"):
            made = self.meter.create_observable_counter(name, callbacks=[observe], description=description)
        else:
            made = self.meter.create_observable_gauge(name, callbacks=[observe], description=description)
        self.made[name] = made


# id(meter) -> _MeterInstruments (meters live as long as their provider)
_by_meter: dict[int, _MeterInstruments] = {}
_lock = threading.Lock()


class OtelBridge:
    """One consumer's metrics exported through one Meter; close()
    unregisters (the instruments report nothing more for this consumer)."""

    def __init__(self, registry: ConsumerMetrics, meter: Meter) -> None:
        self._registry = registry
        with _lock:
            shared = _by_meter.get(id(meter))
            if shared is None or shared.meter is not meter:
                shared = _by_meter[id(meter)] = _MeterInstruments(meter)
            shared.bridges.append(self)
        self._shared = shared
        self._closed = False
        registry.add_listener(self._registered)
        registry.on_close(self.close)
        for metric_name in registry.all_metrics():
            self._registered(metric_name, None)

    def _registered(self, metric_name: MetricName, _metric: Metric | None) -> None:
        with _lock:
            self._shared.ensure(metric_name)

    def observe(self, kafka_name: str) -> list[Observation]:
        """Observations of one Kafka name at its most detailed granularity."""
        if self._closed:
            return []
        found = [(n, m) for n, m in self._registry.all_metrics().items() if n.name == kafka_name]
        if not found:
            return []
        detail = max(len(n.tags) for n, _ in found)
        return [Observation(float(metric.value()), dict(metric_name.tags))
                for metric_name, metric in found if len(metric_name.tags) == detail]

    def close(self) -> None:
        """Stop exporting this consumer. (The OpenTelemetry API cannot delete
        an asynchronous instrument; the shared one simply stops reading this
        consumer, so a reader sees no new points from it.)"""
        if self._closed:
            return
        self._closed = True
        with _lock:
            if self in self._shared.bridges:
                self._shared.bridges.remove(self)
        self._registry.remove_listener(self._registered)
        self._registry.remove_on_close(self.close)


def instrument(consumer: "KafkaConsumer", meter: Meter | None = None,
               meter_provider: MeterProvider | None = None) -> OtelBridge:
    """Register `consumer`'s metrics (a fastkc KafkaConsumer) on `meter`
    (default: the meter "fastkc" of `meter_provider`, default the global
    provider). Returns the OtelBridge; consumer.close() closes it."""
    registry: ConsumerMetrics | None = getattr(consumer, "_metrics", None)
    if registry is None:
        raise ValueError("the consumer has metrics_enabled=False: nothing to export")
    if meter is None:
        provider = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
        meter = provider.get_meter(_METER_NAME, __version__)
    return OtelBridge(registry, meter)
