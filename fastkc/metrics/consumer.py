"""One consumer's metrics registry (ConsumerMetrics) and the per-response
tally (ResponseTally) the fetcher feeds it."""
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fastkc.metrics.stats import Clock, Measure, Metric, MetricName, MetricsReporter, Sensor

if TYPE_CHECKING:
    from fastkc.structs import TopicPartition


class _PartitionState(Protocol):
    """What partition_position() reads of the fetcher's partition state."""

    tp: "TopicPartition"
    position: int | None
    highwater: int | None
    last_stable_offset: int | None
    log_start_offset: int | None


class ResponseTally:
    """kafka-python's FetchResponseMetricAggregator (and Java's
    FetchMetricsAggregator): one Fetch response's partitions report their
    bytes and records as each buffered fetch is used up (or dropped); when
    the last has, the response is recorded as one request (fetch-size-*,
    records-per-request-avg, the consumed rates), per topic too. Partitions
    that brought nothing count as 0, so an empty long-poll answer is a
    request of 0 records, as in both clients."""

    __slots__ = ("_metrics", "pending", "nbytes", "records", "topics", "sealed")

    def __init__(self, metrics: "ConsumerMetrics") -> None:
        self._metrics = metrics
        self.pending = 0
        self.nbytes = 0
        self.records = 0
        self.topics: dict[str, list[int]] = {}  # topic -> [bytes, records]
        self.sealed = False  # every partition of the response seen

    def add_topic(self, topic: str) -> None:
        if topic not in self.topics:
            self.topics[topic] = [0, 0]

    def seal(self) -> None:
        self.sealed = True
        if self.pending == 0:
            self._metrics.fetch_response_consumed(self)

    def done(self, topic: str, nbytes: int, records: int) -> None:
        self.pending -= 1
        self.nbytes += nbytes
        self.records += records
        per_topic = self.topics.get(topic)
        if per_topic is None:
            self.topics[topic] = [nbytes, records]
        else:
            per_topic[0] += nbytes
            per_topic[1] += records
        if self.pending == 0 and self.sealed:
            self._metrics.fetch_response_consumed(self)


def _client_tags(client_id: str) -> dict[str, str]:
    return {"client-id": client_id}


class ConsumerMetrics:
    """One consumer's metrics registry (see the module docstring).

    `fetch_counters` is the fetcher's dict of plain totals (fetch-total,
    records-consumed-total, ...), kept as they were and shown in the
    fetch-manager group; `extra` maps group -> {name: function} for figures
    owned by others (the consumer's connection counters)."""

    def __init__(self, config: Mapping[str, Any], clock: Clock, fetch_counters: dict[str, int] | None = None,
                 reporters: Iterable[MetricsReporter] = ()) -> None:
        self.prefix = config["metric_group_prefix"]
        self.fetch_group = "{0}-fetch-manager-metrics".format(self.prefix)
        self.coordinator_group = "{0}-coordinator-metrics".format(self.prefix)
        self.client_id = config["client_id"]
        self._samples = config["metrics_num_samples"]
        self._window_ms = config["metrics_sample_window_ms"]
        self._read_committed = config["isolation_level"] == "read_committed"
        self._clock = clock
        self._lock = threading.Lock()
        self._metrics: dict[MetricName, Metric] = {}  # registration order
        self._topic_sensors: dict[str, tuple[Sensor, Sensor]] = {}  # topic -> (bytes sensor, records sensor)
        self._partition_sensors: dict[TopicPartition, tuple[Sensor, Sensor]] = {}  # tp -> (lag, lead)
        self._fetch_counters = fetch_counters if fetch_counters is not None else {}
        # called with (MetricName, Metric) on each registration (the OTel bridge)
        self._listeners: list[Callable[[MetricName, Metric], object]] = []
        self._removal_listeners: list[Callable[[MetricName, Metric], object]] = []
        self._closers: list[Callable[[], object]] = []
        # kafka-python's metric_reporters (AbstractMetricsReporter): init([])
        # now, metric_change() per metric, metric_removal(), close()
        self._reporters = list(reporters)
        self._reporters_ready = False
        for reporter in self._reporters:
            reporter.init([])
        tags = _client_tags(self.client_id)
        self._tags = tags
        group = self.fetch_group

        # kafka-python's FetchManagerMetrics, in its order
        self.bytes_fetched = self.sensor()
        self._add("fetch-size-avg", group, "The average number of bytes fetched per request", tags,
                  self.bytes_fetched.avg)
        self._add("fetch-size-max", group, "The maximum number of bytes fetched per request", tags,
                  self.bytes_fetched.max)
        self._add("bytes-consumed-rate", group, "The average number of bytes consumed per second", tags,
                  self.bytes_fetched.rate)
        self.records_fetched = self.sensor()
        self._add("records-per-request-avg", group, "The average number of records in each request", tags,
                  self.records_fetched.avg)
        self._add("records-consumed-rate", group, "The average number of records consumed per second", tags,
                  self.records_fetched.rate)
        self.fetch_latency = self.sensor()
        self._add("fetch-latency-avg", group, "The average time taken for a fetch request.", tags,
                  self.fetch_latency.avg)
        self._add("fetch-latency-max", group, "The max time taken for any fetch request.", tags,
                  self.fetch_latency.max)
        self._add("fetch-rate", group, "The number of fetch requests per second.", tags,
                  self.fetch_latency.count_rate)
        self.records_lag = self.sensor()
        self._add("records-lag-max", group,
                  "The maximum lag in terms of number of records for any partition in this window", tags,
                  self.records_lag.max)
        # the Java client's, which kafka-python lacks
        self.records_lead = self.sensor()
        self._add("records-lead-min", group,
                  "The minimum lead in terms of number of records for any partition in this window", tags,
                  self.records_lead.min)
        self.fetch_throttle = self.sensor()
        self._add("fetch-throttle-time-avg", group, "The average throttle time in ms", tags,
                  self.fetch_throttle.avg)
        self._add("fetch-throttle-time-max", group, "The maximum throttle time in ms", tags,
                  self.fetch_throttle.max)
        for name, description in (
                ("fetch-total", "The total number of fetch requests."),
                ("records-consumed-total", "The total number of records consumed"),
                ("bytes-consumed-total", "The total number of bytes consumed"),
                ("fetch-bytes-total", "The total number of complete bytes buffered from fetch responses"),
                ("offset-validations-total", "The total number of positions validated (KIP-320)")):
            self._add(name, group, description, tags, self._counter(name))

        # kafka-python's GroupCoordinatorMetrics and ConsumerCoordinatorMetrics,
        # then the Java client's rebalance figures
        group = self.coordinator_group
        self.heartbeat_latency = self.sensor()
        self._add("heartbeat-response-time-max", group,
                  "The max time taken to receive a response to a heartbeat request", tags,
                  self.heartbeat_latency.max)
        self._add("heartbeat-rate", group, "The average number of heartbeats per second", tags,
                  self.heartbeat_latency.count_rate)
        self.join_latency = self.sensor()
        self._add("join-time-avg", group, "The average time taken for a group rejoin", tags, self.join_latency.avg)
        self._add("join-time-max", group, "The max time taken for a group rejoin", tags, self.join_latency.max)
        self._add("join-rate", group, "The number of group joins per second", tags, self.join_latency.count_rate)
        self.sync_latency = self.sensor()
        self._add("sync-time-avg", group, "The average time taken for a group sync", tags, self.sync_latency.avg)
        self._add("sync-time-max", group, "The max time taken for a group sync", tags, self.sync_latency.max)
        self._add("sync-rate", group, "The number of group syncs per second", tags, self.sync_latency.count_rate)
        self.last_heartbeat_sent: float = -float("inf")  # kafka-python's Heartbeat.last_send before the first
        self._add("last-heartbeat-seconds-ago", group,
                  "The number of seconds since the last coordinator heartbeat was sent", tags,
                  lambda: self._clock() - self.last_heartbeat_sent)
        self.commit_latency = self.sensor()
        self._add("commit-latency-avg", group, "The average time taken for a commit request", tags,
                  self.commit_latency.avg)
        self._add("commit-latency-max", group, "The max time taken for a commit request", tags,
                  self.commit_latency.max)
        self._add("commit-rate", group, "The number of commit calls per second", tags,
                  self.commit_latency.count_rate)
        self.assigned_partitions: Callable[[], int] = lambda: 0  # the consumer sets its own
        self._add("assigned-partitions", group, "The number of partitions currently assigned to this consumer",
                  tags, lambda: self.assigned_partitions())
        self.rebalance_latency = self.sensor()
        self._rebalance_started: float | None = None
        self._rebalances = 0
        self._rebalance_ms_total = 0.0
        self.last_rebalance_done: float | None = None
        self._add("rebalance-latency-avg", group,
                  "The average time taken for a group to complete a successful rebalance", tags,
                  self.rebalance_latency.avg)
        self._add("rebalance-latency-max", group,
                  "The max time taken for a group to complete a successful rebalance", tags,
                  self.rebalance_latency.max)
        self._add("rebalance-latency-total", group,
                  "The total number of milliseconds this consumer has spent in successful rebalances", tags,
                  lambda: self._rebalance_ms_total)
        self._add("rebalance-total", group, "The total number of successful rebalance events", tags,
                  lambda: float(self._rebalances))
        self._add("last-rebalance-seconds-ago", group,
                  "The number of seconds since the last successful rebalance event", tags,
                  lambda: -1.0 if self.last_rebalance_done is None else self._clock() - self.last_rebalance_done)

    # --- registration ------------------------------------------------------------------
    def sensor(self) -> Sensor:
        return Sensor(self._samples, self._window_ms, self._clock, self._lock)

    def _counter(self, name: str) -> Measure:
        counters = self._fetch_counters
        return lambda: counters.get(name, 0)

    def _add(self, name: str, group: str, description: str, tags: Mapping[str, str], measure: Measure) -> Metric:
        metric_name = MetricName(name, group, description, tags)
        metric = Metric(metric_name, measure)
        with self._lock:
            self._metrics[metric_name] = metric
            listeners = list(self._listeners)
        for listener in listeners:
            listener(metric_name, metric)
        return metric

    def add_extra(self, name: str, group: str, description: str, measure: Measure) -> Metric:
        """A figure owned elsewhere, read on demand (client-id tag)."""
        return self._add(name, group, description, self._tags, measure)

    def add_listener(self, listener: Callable[[MetricName, Metric], object],
                     removal: Callable[[MetricName, Metric], object] | None = None) -> None:
        """listener(metric_name, metric) for each metric registered from now
        on; removal(metric_name, metric) for each removed."""
        with self._lock:
            self._listeners.append(listener)
            if removal is not None:
                self._removal_listeners.append(removal)

    def remove_listener(self, listener: Callable[[MetricName, Metric], object],
                        removal: Callable[[MetricName, Metric], object] | None = None) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
            if removal in self._removal_listeners:
                self._removal_listeners.remove(removal)

    def reporters_ready(self) -> None:
        """The consumer's own metrics are in: the reporters hear of them
        (metric_change per metric, as kafka-python's registration does) and
        of every one registered from now on."""
        if not self._reporters or self._reporters_ready:
            return
        self._reporters_ready = True
        for metric in self.all_metrics().values():
            for reporter in self._reporters:
                reporter.metric_change(metric)

        def changed(name: MetricName, metric: Metric) -> None:
            for reporter in self._reporters:
                reporter.metric_change(metric)

        def removed(name: MetricName, metric: Metric) -> None:
            for reporter in self._reporters:
                reporter.metric_removal(metric)

        self.add_listener(changed, removed)

    def close(self) -> None:
        """The consumer closed: the reporters are closed, and listeners (the
        OTel bridge) told through their close callbacks."""
        with self._lock:
            closers, self._closers = list(self._closers), []
        for close in closers:
            close()
        for reporter in self._reporters:
            reporter.close()

    def on_close(self, callback: Callable[[], object]) -> None:
        with self._lock:
            self._closers.append(callback)

    def remove_on_close(self, callback: Callable[[], object]) -> None:
        with self._lock:
            if callback in self._closers:
                self._closers.remove(callback)

    def all_metrics(self) -> dict[MetricName, Metric]:
        """{MetricName: Metric}, a copy (kafka-python's metrics(raw=True))."""
        with self._lock:
            return dict(self._metrics)

    def grouped(self) -> dict[str, dict[str, float]]:
        """{group: {name: value}} (kafka-python's metrics()). Only the
        client-wide metrics (tags = client-id alone): kafka-python flattens
        its per-topic metrics into the same {name: value} dict, where the
        last topic's figure overwrites the client-wide one under the same
        name; the per-topic and per-partition figures are in raw=True."""
        out: dict[str, dict[str, float]] = {}
        for metric_name, metric in self.all_metrics().items():
            if len(metric_name.tags) != 1:
                continue
            out.setdefault(metric_name.group, {})[metric_name.name] = metric.value()
        return out

    # --- the fetcher's hooks (per request, per response, per step) ----------------------
    def fetch_answered(self, latency_ms: float, throttle_ms: float) -> None:
        self.fetch_latency.record(latency_ms)
        self.fetch_throttle.record(throttle_ms)

    def tally(self) -> ResponseTally:
        return ResponseTally(self)

    def fetch_response_consumed(self, tally: ResponseTally) -> None:
        now_ms = self._clock() * 1000.0
        per_topic = []
        for topic, (nbytes, records) in tally.topics.items():
            sensors = self._topic_sensors.get(topic)
            if sensors is None:
                sensors = self._topic_metrics(topic)
            per_topic.append((sensors, nbytes, records))
        with self._lock:
            self.bytes_fetched.put(tally.nbytes, now_ms)
            self.records_fetched.put(tally.records, now_ms)
            for sensors, nbytes, records in per_topic:
                sensors[0].put(nbytes, now_ms)
                sensors[1].put(records, now_ms)

    def _topic_metrics(self, topic: str) -> tuple[Sensor, Sensor]:
        # kafka-python's record_topic_fetch_metrics: tag topic with "." as "_"
        tags = dict(self._tags, topic=topic.replace(".", "_"))
        group = self.fetch_group
        nbytes, records = self.sensor(), self.sensor()
        self._add("fetch-size-avg", group, "The average number of bytes fetched per request for topic " + topic,
                  tags, nbytes.avg)
        self._add("fetch-size-max", group, "The maximum number of bytes fetched per request for topic " + topic,
                  tags, nbytes.max)
        self._add("bytes-consumed-rate", group, "The average number of bytes consumed per second for topic " + topic,
                  tags, nbytes.rate)
        self._add("records-per-request-avg", group, "The average number of records in each request for topic " + topic,
                  tags, records.avg)
        self._add("records-consumed-rate", group,
                  "The average number of records consumed per second for topic " + topic, tags, records.rate)
        sensors = self._topic_sensors[topic] = (nbytes, records)
        return sensors

    def partition_position(self, state: _PartitionState) -> None:
        """After a poll's steps for one partition: its lag (high watermark,
        or the last stable offset under read_committed, minus the position)
        and lead (position minus the log start offset), as Java records them
        per partition; once per partition per poll, not per record."""
        position = state.position
        if position is None:
            return
        end = state.last_stable_offset if self._read_committed else state.highwater
        start = state.log_start_offset
        now_ms = self._clock() * 1000.0
        sensors = self._partition_sensors.get(state.tp)
        if sensors is None:
            sensors = self._partition_metrics(state.tp)
        with self._lock:  # once for the four sensors
            if end is not None and end >= 0:
                lag = end - position
                self.records_lag.put(lag, now_ms)
                sensors[0].put(lag, now_ms)
            if start is not None and start >= 0:
                lead = position - start
                self.records_lead.put(lead, now_ms)
                sensors[1].put(lead, now_ms)

    def _partition_metrics(self, tp: "TopicPartition") -> tuple[Sensor, Sensor]:
        # the Java client's per-partition metrics (kafka-python has none)
        tags = dict(self._tags, topic=tp.topic, partition=str(tp.partition))
        group = self.fetch_group
        lag, lead = self.sensor(), self.sensor()
        self._add("records-lag", group, "The latest lag of the partition", tags, lag.value)
        self._add("records-lag-avg", group, "The average lag of the partition", tags, lag.avg)
        self._add("records-lag-max", group, "The max lag of the partition", tags, lag.max)
        self._add("records-lead", group, "The latest lead of the partition", tags, lead.value)
        self._add("records-lead-avg", group, "The average lead of the partition", tags, lead.avg)
        self._add("records-lead-min", group, "The min lead of the partition", tags, lead.min)
        sensors = self._partition_sensors[tp] = (lag, lead)
        return sensors

    def partitions_kept(self, partitions: Collection["TopicPartition"]) -> None:
        """The assignment changed: the per-partition metrics of partitions
        no longer assigned go (as Java removes their sensors)."""
        gone = [tp for tp in self._partition_sensors if tp not in partitions]
        if not gone:
            return
        with self._lock:
            for tp in gone:
                del self._partition_sensors[tp]
            gone_tags = {(tp.topic, str(tp.partition)) for tp in gone}
            removed = []
            for metric_name in [m for m in self._metrics if "partition" in m.tags]:
                if (metric_name.tags.get("topic"), metric_name.tags["partition"]) in gone_tags:
                    removed.append(self._metrics.pop(metric_name))
            listeners = list(self._removal_listeners)
        for metric in removed:
            for listener in listeners:
                listener(metric.metric_name, metric)

    # --- the group's hook ---------------------------------------------------------------
    def group_answer(self, api_name: str, response: object, sent_at: float, answered_at: float) -> None:
        """A coordinator request answered (GroupTransport.call): the latency
        figures as kafka-python records them (join and sync only when they
        succeeded; commit and heartbeat whatever the answer), and the Java
        client's rebalance latency: from the first JoinGroup of a rebalance
        to the SyncGroup that completed it (retries included)."""
        latency_ms = (answered_at - sent_at) * 1000.0
        code = response.get("error_code", 0) if isinstance(response, dict) else 0
        if api_name in ("Heartbeat", "ConsumerGroupHeartbeat"):
            self.last_heartbeat_sent = sent_at
            self.heartbeat_latency.record(latency_ms, answered_at * 1000.0)
        elif api_name == "OffsetCommit":
            self.commit_latency.record(latency_ms, answered_at * 1000.0)
        elif api_name == "JoinGroup":
            if self._rebalance_started is None:
                self._rebalance_started = sent_at
            if code == 0:
                self.join_latency.record(latency_ms, answered_at * 1000.0)
        elif api_name == "SyncGroup" and code == 0:
            self.sync_latency.record(latency_ms, answered_at * 1000.0)
            if self._rebalance_started is not None:
                took_ms = (answered_at - self._rebalance_started) * 1000.0
                self._rebalance_started = None
                self.rebalance_latency.record(took_ms, answered_at * 1000.0)
                self._rebalances += 1
                self._rebalance_ms_total += took_ms
                self.last_rebalance_done = answered_at
