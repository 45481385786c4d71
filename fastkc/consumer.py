"""KafkaConsumer: kafka-python 3.x's public API over fastkc's consumer engine
(fastkc/engine/: the client, the fetcher, wakeup, poll rounds).

Names, signatures, config keys and defaults are kafka-python's (see
fastkc/config.py); an unknown key raises KafkaConfigurationError. Beyond
kafka-python: poll_arrow() returns one pyarrow.RecordBatch for columnar
consumers, and arrow_stream() those batches as an Arrow PyCapsule stream
(fastkc/arrow_stream.py) for polars, duckdb and pyarrow.

With a group_id, subscribe() joins the group through fastkc.group (the
member lives in `_coordinator`; its decisions are applied at the start of
every poll round, on the application's thread). Without group_id,
subscribe() does what kafka-python does: every partition of the subscribed
topics (or of the topics matching a pattern) is assigned locally, following
metadata.

Not thread-safe, like kafka-python's: one thread drives a consumer.
"""
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from fastkc.cluster.broker_version import infer_broker_version
from fastkc.cluster.metadata import partition_counts
from fastkc.config import CONSUMER_DEFAULTS, consumer_config
from fastkc.engine import ConsumerEngine
from fastkc.errors import (
    IllegalStateError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
)
from fastkc.fetch import EARLIEST, LATEST, PartitionState
from fastkc.group.classic_machine import resolve_assignors
from fastkc.group.subscription import SubscriptionState, visible_topics
from fastkc.structs import ConsumerGroupMetadata, ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

if TYPE_CHECKING:
    from fastkc.arrow_stream import ArrowStream
    from fastkc.group.member import GroupMemberBase
    from fastkc.metrics import ConsumerMetrics

log = logging.getLogger(__name__)


#: what poll() returns
Records = dict[TopicPartition, list[ConsumerRecord]]
#: (offset, leader_epoch) of a partition: its next record's offset and epoch
Position = tuple[int, int]
# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any
# the group member: fastkc.group's classic or KIP-848 one (make_group_member)
_GroupMember: TypeAlias = "GroupMemberBase[Any]"


class KafkaConsumer:
    #: kafka-python's class attribute: every config key and its default
    #: (fastkc's extra keys included; the differences are listed in
    #: tests/support/parity_exceptions.py); the default assignors as kafka-python shows them: classes
    DEFAULT_CONFIG = dict(CONSUMER_DEFAULTS, partition_assignment_strategy=resolve_assignors(
        CONSUMER_DEFAULTS["partition_assignment_strategy"]))
    #: kafka-python's session_timeout_ms default for brokers before 3.0 (KIP-735)
    DEFAULT_SESSION_TIMEOUT_MS_PRE_KIP_735 = 30000

    def __init__(self, *topics: str, **configs: Any) -> None:
        self.config = consumer_config(configs)
        self.config["partition_assignment_strategy"] = resolve_assignors(self.config["partition_assignment_strategy"])
        self._api_version_configured = self.config["api_version"] is not None
        # the engine owns the client, the fetcher, the clock, wakeup and the
        # stream being read; _client, _fetcher and _clock name its drivers here
        self._engine = ConsumerEngine(self.config, subscribed=lambda: self._subscribed_topics is not None)
        self._client = self._engine.client
        self._fetcher = self._engine.fetcher
        self._clock = self._engine.clock
        self._metrics = self._make_metrics() if self.config["metrics_enabled"] else None
        self._assignment: list[TopicPartition] = []
        # topics or a pattern while subscribed (no group: all their partitions assigned)
        self._subscription_state = SubscriptionState()
        self._coordinator: _GroupMember | None = None
        # records the iterator has polled but not all yielded (_HandOut)
        self._handout: _HandOut | None = None
        try:
            self._client.bootstrap()
        except BaseException:
            self._client.close()
            self._engine.mark_closed()
            raise
        self._set_broker_version()
        self._client.metadata_listeners.append(self._update_subscribed_assignment)
        if topics:
            self.subscribe(topics)

    # --- context manager -------------------------------------------------------------
    def __enter__(self) -> "KafkaConsumer":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self, autocommit: bool = True, timeout_ms: float | None = None) -> None:
        """Close the connections. autocommit matters once groups exist."""
        if self._engine.closed:
            return
        # one bound for every step (Java's close(Duration)): what the group
        # leaves of it is what the fetch sessions' close may wait
        started = self._engine.clock()
        if self._coordinator is not None:
            try:
                # commit, revoke through the listener, leave the group
                self._coordinator.close(autocommit=autocommit, timeout_ms=timeout_ms)
            except Exception:  # closing must close
                log.warning("leaving the group failed", exc_info=True)
        left_ms = None if timeout_ms is None else max(0.0, timeout_ms - (self._engine.clock() - started) * 1000.0)
        try:
            self._engine.close(left_ms)
        finally:
            if self._metrics is not None:
                self._metrics.close()

    def _set_broker_version(self) -> None:
        """config["api_version"]: as kafka-python, the broker release inferred
        from the bootstrap broker's ApiVersions answer unless configured."""
        if not self._api_version_configured and self._client.bootstrap_api_versions is not None:
            self.config["api_version"] = infer_broker_version(self._client.bootstrap_api_versions)

    def bootstrap(self, timeout_ms: float | None = None, refresh: bool = False) -> None:
        """Block until cluster metadata is bootstrapped (kafka-python 3):
        fastkc bootstraps at construction, so this returns at once unless
        refresh=True, which bootstraps anew from bootstrap_servers (within
        timeout_ms; None waits indefinitely). Raises KafkaTimeoutError
        (NoBrokersAvailable) when that does not complete in time."""
        self._check_open()
        if self._client.bootstrapped and not refresh:
            return
        self._client.bootstrap(float("inf") if timeout_ms is None else timeout_ms)
        self._set_broker_version()
        self._update_subscribed_assignment()

    def wakeup(self) -> None:
        """From any thread: make the blocking call in progress (or, when none
        is, the next one) raise WakeupException, once - Java's
        KafkaConsumer.wakeup(). The calls: poll(), poll_arrow(), iteration,
        position() while it waits for a reset, offset lookups, commit() and
        committed(). kafka-python 3.0.12 has no wakeup()."""
        self._engine.wakeup()

    def _maybe_raise_wakeup(self) -> None:
        self._engine.raise_wakeup()

    def _check_open(self) -> None:
        self._engine.check_open()

    def bootstrap_connected(self) -> bool:
        return not self._engine.closed and self._client.bootstrapped and self._client.connected_to_any_broker()

    # --- assignment ------------------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manually assign a list of TopicPartition (replaces the assignment)."""
        self._check_open()
        self._subscription_state.check_assign()
        self._set_assignment(partitions)
        if self.config["group_id"] is not None:
            # with a group_id, manually assigned partitions start at the
            # group's committed offsets (else auto_offset_reset) and are
            # auto-committed, as in kafka-python and Java
            self._group().manual_assignment(self._assignment)

    def _set_assignment(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        given = list(partitions)
        for tp in given:
            if not isinstance(tp, TopicPartition):
                if isinstance(tp, tuple) and len(tp) == 2:
                    continue
                raise TypeError("assign() takes TopicPartition objects, not {0!r}".format(tp))
        seen: list[TopicPartition] = []
        for tp in (TopicPartition(*tp) for tp in given):
            if tp not in seen:
                seen.append(tp)
        self._assignment = seen
        if self._handout is not None:
            # records of partitions no longer assigned are not ours to hand out
            for tp in self._handout.partitions():
                if tp not in seen:
                    self._handout.take(tp)
        self._fetcher.assign(seen)
        if self._subscription_state.pattern is None:
            self._client.set_topics(set(self._subscribed_topics or ()) | {tp.topic for tp in seen})

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def subscribe(
        self,
        topics: str | Iterable[str] | None = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: Any = None,
    ) -> None:
        """Without group_id, as kafka-python does: every partition of the
        topics (or of the topics matching `pattern`) is assigned to this
        consumer and the assignment follows metadata (new partitions, new
        matching topics). With group_id the consumer joins the group
        (group_protocol "classic" or "consumer"), which assigns partitions;
        `listener` (a ConsumerRebalanceListener) is called inside poll()."""
        self._check_open()
        topics = [topics] if isinstance(topics, str) else list(topics or ())
        if not topics and not pattern:
            raise ValueError("Must provide topics or pattern")
        state = self._subscription_state
        state.check_subscribe(topics, pattern, bool(self._assignment))
        if listener is not None and not any(hasattr(listener, m) for m in (
                "on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost")):
            raise TypeError("listener must be a ConsumerRebalanceListener")
        if self.config["group_id"] is not None and self._coordinator is None:
            from fastkc.group import make_group_member

            self._coordinator = make_group_member(self.config, _GroupApp(self))
            self._watch_group()
        state.subscribe(topics, pattern)
        subscribed = set(state.topics or ())
        self._client.follow_topics(None if state.pattern is not None else subscribed)
        if self._coordinator is not None:
            if state.pattern is not None and hasattr(self._coordinator, "set_pattern"):
                self._coordinator.set_pattern(state.pattern.pattern)
            self._coordinator.subscribe(subscribed, listener)
        self._update_subscribed_assignment()

    def _update_subscribed_assignment(self) -> None:
        """Assign every known partition of the subscribed (or matching) topics."""
        state = self._subscription_state
        if not state.subscribed:
            return
        cluster = self._client.cluster
        wanted = state.follow_metadata(cluster.topics, self.config["exclude_internal_topics"])
        if self._coordinator is not None:
            # the group assigns; it hears of new pattern matches and partition counts
            if state.pattern is not None:
                self._coordinator.update_subscription(set(state.topics or ()))
            if hasattr(self._coordinator, "metadata_changed"):
                self._coordinator.metadata_changed(partition_counts(cluster))
            return
        if set(wanted) != set(self._assignment):
            self._set_assignment(wanted)

    @property
    def _subscribed_topics(self) -> set[str] | None:
        """The subscribed topics (a pattern's matches), None when not subscribed."""
        return self._subscription_state.topics

    def subscription(self) -> set[str] | None:
        """The subscribed topics (a set), or None without a subscription."""
        if self._subscribed_topics is None:
            return None
        return set(self._subscribed_topics)

    def unsubscribe(self) -> None:
        """Drop the subscription and the assignment."""
        self._check_open()
        if self._coordinator is not None and self._subscribed_topics is not None:
            self._coordinator.unsubscribe()
        self._subscription_state.unsubscribe()
        self._client.subscribe_all_topics = False
        self._set_assignment([])

    def _group(self) -> _GroupMember:
        """The group member (created on first use: committing with a group_id
        works without a subscription, as in kafka-python)."""
        self._check_open()
        if self.config["group_id"] is None:
            raise IllegalStateError("Requires group_id")
        if self._coordinator is None:
            from fastkc.group import make_group_member

            self._coordinator = make_group_member(self.config, _GroupApp(self))
            self._watch_group()
        return self._coordinator

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None, timeout_ms: float | None = None
    ) -> None:
        """Commit `offsets` ({TopicPartition: OffsetAndMetadata}; the
        positions of every assigned partition when None) and wait. Raises
        CommitFailedError / RebalanceInProgressError as the Java client does."""
        group = self._group()
        group.commit_sync(offsets, timeout_ms, interrupt=self._maybe_raise_wakeup)
        group.run_commit_callbacks()

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None,
        callback: Callable[[Mapping[TopicPartition, OffsetAndMetadata], Exception | None], Any] | None = None,
    ) -> None:
        """Commit without waiting; callback(offsets, error_or_None) runs in a
        later poll() (or close) on this thread."""
        self._group().commit_async(offsets, callback or self.config["default_offset_commit_callback"])

    def committed(
        self, partition: TopicPartition, metadata: bool = False, timeout_ms: float | None = None
    ) -> int | OffsetAndMetadata | None:
        """The last committed offset of `partition` (None when none), or the
        OffsetAndMetadata when metadata=True."""
        if not isinstance(partition, TopicPartition):
            raise TypeError("partition must be a TopicPartition")
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        found = self._group().fetch_committed([partition], timeout_ms, interrupt=self._maybe_raise_wakeup)
        entry: OffsetAndMetadata | None = found.get(partition)
        if entry is None:
            return None
        return entry if metadata else entry.offset

    def group_metadata(self) -> ConsumerGroupMetadata:
        """ConsumerGroupMetadata(group_id, generation_id, member_id,
        group_instance_id, state), kafka-python's snapshot."""
        if self._coordinator is None:
            return ConsumerGroupMetadata(self.config["group_id"], -1, "", self.config["group_instance_id"],
                                         "<unjoined>")
        metadata: ConsumerGroupMetadata = self._coordinator.group_metadata()
        return metadata

    # --- polling -----------------------------------------------------------------------
    def poll(
        self, timeout_ms: float | None = 0, max_records: int | None = None, update_offsets: bool = True
    ) -> Records:
        """{TopicPartition: [ConsumerRecord]} of up to max_records
        (max_poll_records when None) records, waiting up to timeout_ms."""
        self._check_open()
        self._check_no_stream()
        if max_records is None:
            max_records = self.config["max_poll_records"]
        elif not isinstance(max_records, int) or max_records < 1:
            raise ValueError("max_records must be a positive integer")
        if not self._assignment and self._subscribed_topics is None:
            raise IllegalStateError("No partitions assigned and no subscription: call assign() or subscribe()")
        if timeout_ms is None:
            timeout_ms = float("inf")
        self._rewind_iteration()
        return self._engine.take_records(timeout_ms, max_records, update_offsets)

    def poll_arrow(self, timeout_ms: float | None = 0, max_records: int | None = None) -> _RecordBatch:
        """One pyarrow.RecordBatch (fastkc.records.arrow_schema(zero_copy=
        arrow_zero_copy), topic and partition columns included) of up to max_records records (all that is
        buffered when None); an empty batch when nothing came within timeout_ms."""
        self._check_open()
        self._check_no_stream()
        return self._poll_arrow(timeout_ms, max_records)

    def arrow_stream(
        self,
        max_records: int | None = None,
        until: Literal["end"] | None = "end",
        timeout_ms: float | None = None,
        batch_records: int | None = None,
    ) -> "ArrowStream":
        """The records as an Arrow stream (the PyCapsule protocol's
        __arrow_c_stream__): polars.from_arrow(stream), duckdb.sql('select
        ... from stream') and pyarrow.RecordBatchReader.from_stream(stream)
        read poll_arrow()'s batches without a copy through Python objects.

        until="end": to the end offsets (high watermark; last stable offset
        under read_committed) of the assigned partitions snapshot at the
        first pull, by position (gaps of transactions and compaction
        included); rows past the snapshot are left for the next poll.
        until=None: until max_records, or until timeout_ms passes with no
        new record (None: never). With until="end", timeout_ms bounds the
        wait without progress (KafkaTimeoutError past it; None: no bound).
        max_records caps the whole stream, batch_records each batch.
        Records in the stream are consumed (positions advance as with
        poll_arrow); single use; while it is read, poll(), poll_arrow() and
        iteration raise IllegalStateError. See fastkc/arrow_stream.py."""
        from fastkc.arrow_stream import ArrowStream

        self._check_open()
        self._check_no_stream()
        if not self._assignment and self._subscribed_topics is None:
            raise IllegalStateError("No partitions assigned and no subscription: call assign() or subscribe()")
        # pull through the attribute at each call (tests watch it)
        return ArrowStream(self._engine, pull=lambda timeout, limit: self._poll_arrow(timeout, limit),
                           position=self.position, end_offsets=self.end_offsets,
                           max_records=max_records, until=until, timeout_ms=timeout_ms, batch_records=batch_records)

    def _check_no_stream(self) -> None:
        self._engine.check_no_stream()

    def _poll_arrow(self, timeout_ms: float | None, max_records: int | None) -> _RecordBatch:
        """poll_arrow() without the stream check (ArrowStream's pulls)."""
        self._check_open()
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError("max_records must be a positive integer")
        if not self._assignment and self._subscribed_topics is None:
            raise IllegalStateError("No partitions assigned and no subscription: call assign() or subscribe()")
        self._rewind_iteration()
        return self._engine.take_arrow(timeout_ms, max_records)

    # --- iteration ------------------------------------------------------------------------
    def __iter__(self) -> "KafkaConsumer":
        return self

    def __next__(self) -> ConsumerRecord:
        self._check_open()
        self._check_no_stream()
        timeout_ms = self.config["consumer_timeout_ms"]
        deadline = self._clock() + timeout_ms / 1000.0 if timeout_ms != float("inf") else None
        while True:
            if self._handout is not None:
                record = self._handout.next_record()
                if record is not None:
                    return record
                self._handout = None
            wait = 1000.0 if deadline is None else max(0.0, (deadline - self._clock()) * 1000.0)
            before = {tp: (state.position, state.position_epoch) for tp, state in self._fetcher.states.items()}
            records = self.poll(timeout_ms=min(wait, 1000.0))
            if records:
                self._handout = _HandOut(records, before)
                continue
            if deadline is not None and self._clock() >= deadline:
                raise StopIteration

    def _rewind_iteration(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Give back what the iterator polled but did not yield (all
        partitions, or `partitions`): the fetcher's position goes back to the
        first record not handed out, so the next poll or iteration fetches it
        again — nothing is skipped when the application leaves a for loop and
        calls poll(), pauses or re-assigns."""
        if self._handout is None:
            return
        for tp in list(self._handout.partitions()) if partitions is None else partitions:
            handed = self._handout.take(tp)
            if handed is not None and tp in self._fetcher.states:
                self._fetcher.seek(tp, handed[0], handed[1])
        if partitions is None:
            self._handout = None

    def _handed_position(self, tp: TopicPartition, state: PartitionState) -> Position:
        """(offset, leader_epoch) after the last record handed to the
        application: the fetcher's position, unless the iterator still holds
        polled records of `tp` it has not yielded."""
        if self._handout is not None:
            handed = self._handout.handed(tp)
            if handed is not None:
                return handed
        assert state.position is not None  # both callers pass a partition whose position is known
        return state.position, state.position_epoch

    # --- positions ---------------------------------------------------------------------------
    def _assigned_state(self, partition: TopicPartition) -> PartitionState:
        if not isinstance(partition, TopicPartition):
            raise TypeError("partition must be a TopicPartition")
        state: PartitionState | None = self._fetcher.states.get(partition)
        if state is None:
            raise IllegalStateError("Partition is not assigned: {0}".format(partition))
        return state

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch from `offset` on the next poll."""
        self._check_open()
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("offset must be a non-negative integer")
        self._assigned_state(partition)
        if self._handout is not None:
            self._handout.take(partition)  # the new position rules
        self._fetcher.seek(partition, offset)

    def _seek_to(self, partitions: Collection[TopicPartition], strategy: str) -> None:
        self._check_open()
        if not partitions:
            partitions = list(self._assignment)
            if not partitions:
                raise IllegalStateError("No partitions are currently assigned")
        for tp in partitions:
            self._assigned_state(tp)
        for tp in partitions:
            if self._handout is not None:
                self._handout.take(tp)
            self._fetcher.request_reset(tp, strategy)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._seek_to(partitions, "earliest")

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._seek_to(partitions, "latest")

    def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record poll() will return for `partition`,
        resolving a pending reset (blocking up to timeout_ms; request_timeout_ms
        when None, as committed() and end_offsets() do: the Java client bounds
        it by default.api.timeout.ms, where kafka-python would block for ever
        when no broker answers). KafkaTimeoutError past it."""
        self._check_open()
        self._assigned_state(partition)
        if timeout_ms is None:
            timeout_ms = self.config["request_timeout_ms"]
        if self._coordinator is not None:
            # a partition held for its committed offset (assign() or the
            # group with a group_id) starts there, as Java's position() does
            started = time.monotonic()
            self._coordinator.start_at_committed(timeout_ms, interrupt=self._maybe_raise_wakeup)
            timeout_ms = max(0.0, timeout_ms - (time.monotonic() - started) * 1000.0)
        state = self._engine.wait_for_position(partition, timeout_ms)
        return self._handed_position(partition, state)[0]

    def highwater(self, partition: TopicPartition) -> int | None:
        """The last high watermark a fetch returned for `partition`, or None."""
        highwater: int | None = self._assigned_state(partition).highwater
        return highwater

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        found = self._list_offsets({tp: EARLIEST for tp in partitions}, timeout_ms)
        return {tp: offset for tp, (offset, _, _) in found.items()}

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        found = self._list_offsets({tp: LATEST for tp in partitions}, timeout_ms)
        return {tp: offset for tp, (offset, _, _) in found.items()}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """{tp: OffsetAndTimestamp or None}: the earliest offset whose
        timestamp is >= the given one (None past the last record)."""
        for tp, ts in timestamps.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError("timestamp for {0} must be a non-negative int (ms), not {1!r}".format(tp, ts))
        found = self._list_offsets(dict(timestamps), timeout_ms)
        return {tp: OffsetAndTimestamp(offset, ts, epoch) if offset >= 0 else None
                for tp, (offset, ts, epoch) in found.items()}

    def _list_offsets(
        self, timestamps: dict[TopicPartition, int], timeout_ms: float | None
    ) -> dict[TopicPartition, tuple[int, int, int]]:
        """{tp: (offset, timestamp, leader_epoch)} in the order of `timestamps`."""
        self._check_open()
        for tp in timestamps:
            if not isinstance(tp, TopicPartition):
                raise TypeError("partitions must be TopicPartition objects")
        if not timestamps:
            return {}
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        with self._client.interruptible(self._maybe_raise_wakeup):
            results = self._fetcher.list_offsets(timestamps, timeout_ms)
        return {tp: results[tp] for tp in timestamps}

    # --- flow control ---------------------------------------------------------------------------
    def pause(self, *partitions: TopicPartition) -> None:
        self._check_open()
        for tp in partitions:
            self._assigned_state(tp)
        # a paused partition's records the iterator holds are fetched again
        # after resume() (kafka-python's iterator skips them likewise)
        self._rewind_iteration(partitions)
        for tp in partitions:
            self._fetcher.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        self._check_open()
        for tp in partitions:
            self._assigned_state(tp)
        for tp in partitions:
            self._fetcher.resume(tp)

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self._fetcher.states.items() if s.paused}

    # --- metadata ---------------------------------------------------------------------------------
    def topics(self) -> set[str]:
        """The set of topics the cluster has (internal ones hidden when
        exclude_internal_topics)."""
        self._check_open()
        self._client.wait_for_metadata(self.config["request_timeout_ms"], all_topics=True)
        return visible_topics(self._client.cluster.topics, self.config["exclude_internal_topics"])

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The set of partition ids of `topic`, or None when it does not exist."""
        self._check_open()
        cluster = self._client.cluster
        meta = cluster.topics.get(topic)
        if meta is None or meta.error_code != 0:
            self._client.add_topics([topic])
            try:
                self._client.wait_for_metadata(self.config["request_timeout_ms"])
            except KafkaTimeoutError:
                return None
            meta = cluster.topics.get(topic)
        if meta is None or meta.error_code != 0:
            if meta is not None and meta.error_code not in (0, UnknownTopicOrPartitionError.errno):
                log.debug("metadata for %s: error %s", topic, meta.error_code)
            return None
        return set(meta.partitions)

    def metrics(self, raw: bool = False) -> dict[Any, Any] | None:
        """kafka-python's metrics(): {group: {name: value}}, or with raw=True
        {MetricName: metric} (each with `metric_name` and `value()`); None
        with metrics_enabled=False. Groups and names are kafka-python's
        (which are the Java client's), plus the Java client's that
        kafka-python lacks (records-lead*, per-partition records-lag*,
        fetch-throttle-time-*, rebalance-*); windows as metrics_num_samples x
        metrics_sample_window_ms. The plain {group: {name: value}} form holds
        the client-wide figures; the per-topic and per-partition ones (tags
        topic, partition) are in raw=True. Also fastkc's counters: the fetch
        path's totals and buffered-bytes, and under "<prefix>-metrics" the
        connections' (the fetch client's and the group member's together):
        successful-/failed-reauthentication-total (KIP-368) and
        connection-lost-total (authenticated connections lost to a
        failure). See fastkc/metrics/__init__.py."""
        if self._metrics is None:
            return None
        if raw:
            return self._metrics.all_metrics()
        return self._metrics.grouped()

    def _make_metrics(self) -> "ConsumerMetrics":
        from fastkc.metrics import ConsumerMetrics

        metrics = ConsumerMetrics(self.config, self._clock, self._fetcher.metrics,
                                  reporters=[reporter() for reporter in self.config["metric_reporters"]])
        metrics.assigned_partitions = lambda: len(self._assignment)
        metrics.add_extra("buffered-bytes", metrics.fetch_group,
                          "The bytes of fetched data buffered, not yet consumed", self._fetcher.buffered_bytes)
        connections = "{0}-metrics".format(metrics.prefix)

        def counter(kind: str) -> Callable[[], int]:
            return lambda: self._connection_counters().get(kind, 0)

        for name, kind, description in (
                ("successful-reauthentication-total", "reauthenticated",
                 "The total number of successful re-authentications of connections"),
                ("failed-reauthentication-total", "reauth_failed",
                 "The total number of failed re-authentications of connections"),
                ("connection-lost-total", "lost", "The total number of authenticated connections lost to a failure")):
            metrics.add_extra(name, connections, description, counter(kind))
        self._fetcher.sensors = metrics
        metrics.reporters_ready()
        return metrics

    def _connection_counters(self) -> dict[str, int]:
        counters = dict(self._client.counters)
        transport = getattr(self._coordinator, "transport", None)
        group_client = getattr(transport, "client", None)
        if group_client is not None and group_client is not self._client:
            for kind, n in getattr(group_client, "counters", {}).items():
                counters[kind] = counters.get(kind, 0) + n
        return counters

    def _watch_group(self) -> None:
        # the coordinator metrics: the group transport reports each answered request
        if self._coordinator is not None:
            self._engine.attach_group(self._coordinator)
        transport = getattr(self._coordinator, "transport", None)
        if self._metrics is not None and transport is not None:
            transport.on_answer = self._metrics.group_answer


def engine_of(consumer: KafkaConsumer) -> ConsumerEngine:
    """The engine under `consumer`: for fastkc's own tools that read below
    KafkaConsumer's API (the benchmark's ceiling reader, the Spark planner,
    `fastkc consume`); not part of kafka-python's surface."""
    return consumer._engine


class _GroupApp:
    """What the group member may do to the consumer (always on the
    application's thread, inside poll/commit/close)."""

    def __init__(self, consumer: KafkaConsumer) -> None:
        self._consumer = consumer

    def positions(self) -> dict[TopicPartition, Position]:
        """What the application has been handed, per partition: commits
        (manual, auto, before revocation, on close) never go past it."""
        consumer = self._consumer
        return {tp: consumer._handed_position(tp, state)
                for tp, state in consumer._fetcher.states.items() if state.position is not None}

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        self._consumer._set_assignment(partitions)

    def seek(self, tp: TopicPartition, offset: int, epoch: int | None) -> None:
        self._consumer._fetcher.seek(tp, offset, epoch if epoch is not None else -1)

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None:
        self._consumer._fetcher.hold_for_committed(tp, held)

    def is_held(self, tp: TopicPartition) -> bool:
        return bool(self._consumer._fetcher.is_held(tp))

    def request_metadata_update(self) -> None:
        """The consumer's metadata is asked for again (after
        retry_backoff_ms); its answer goes through the metadata listener
        to the member's metadata_changed."""
        self._consumer._client.request_metadata_update()


@dataclass(slots=True)
class _Part:
    """One partition's share of a poll the iterator is handing out."""

    tp: TopicPartition
    records: list[ConsumerRecord]
    yielded: int
    # (offset, epoch) the partition was at before the poll; offset None
    # while it had no position
    before: tuple[int | None, int] | None


class _HandOut:
    """Records one poll() returned to the iterator, yielded one at a time.

    poll() moves the fetcher's positions past every record it returns, but
    the iterator hands them to the application one by one: until a
    partition's last record is yielded, the application has been handed less
    than the fetcher's position, and that — not the fetcher's position — is
    what position() and every commit (manual, auto, before revocation, on
    close) must report, or a group's next member would never see the records
    in between. kafka-python's iterator likewise moves the position record
    by record."""

    __slots__ = ("_parts",)

    def __init__(self, records_by_partition: Records,
                 positions_before: Mapping[TopicPartition, tuple[int | None, int]]) -> None:
        # in poll order
        self._parts = deque(_Part(tp, records, 0, positions_before.get(tp))
                            for tp, records in records_by_partition.items() if records)

    def next_record(self) -> ConsumerRecord | None:
        parts = self._parts
        while parts:
            part = parts[0]
            records = part.records
            i = part.yielded
            if i < len(records):
                part.yielded = i + 1
                return records[i]
            parts.popleft()
        return None

    def partitions(self) -> list[TopicPartition]:
        return [part.tp for part in self._parts]

    def _find(self, tp: TopicPartition) -> _Part | None:
        for part in self._parts:
            if part.tp == tp:
                return part
        return None

    def handed(self, tp: TopicPartition) -> Position | None:
        """(offset, epoch) after the last record of `tp` yielded, or None
        when every polled record of `tp` has been yielded (the fetcher's
        position rules then: it may be past control records)."""
        part = self._find(tp)
        if part is None:
            return None
        records, i = part.records, part.yielded
        if i >= len(records):
            return None
        if i == 0:
            if part.before is not None:
                offset, epoch = part.before
                if offset is not None and offset <= records[0].offset:
                    return offset, epoch
            return records[0].offset, records[0].leader_epoch
        last = records[i - 1]
        return last.offset + 1, last.leader_epoch

    def take(self, tp: TopicPartition) -> Position | None:
        """Forget `tp`'s records; what handed() said before."""
        handed = self.handed(tp)
        part = self._find(tp)
        if part is not None:
            self._parts.remove(part)
        return handed
