"""KafkaShareConsumer: a share group member (KIP-932, "queues for Kafka")
in kafka-python's naming, the sync driver of the share machines.

The member heartbeats from a thread of its own over its own connections
(heartbeat.py, as Java's share consumer does from its background thread):
an application busy between calls stays in the group. Fetching and
acknowledging run on the application's thread, inside its calls (poll,
commit_*, acknowledge_batch, unsubscribe, close): the driver asks the fetch
machine (fetch_machine.py: ShareFetch / ShareAcknowledge, acknowledgements.py,
session.py) for requests, sends them through the KafkaClient of its engine
(fastkc.engine.ClientEngine, which also keeps open/closed and wakeup), and hands
their answers back after each client poll, so a machine's error reaches the
caller, never a callback inside the selector loop. What the member decides
(assignment, fencing, its id and epoch) is read under the thread's lock at
each round.

Acknowledgement modes (Java's share.acknowledgement.mode):
- "implicit": every record a poll() delivered is ACCEPTed by the next
  poll(), commit_sync(), commit_async() or close(); acknowledge() raises.
- "explicit": the application settles each delivered record with
  acknowledge() / acknowledge_batch() before the next poll() (which raises
  IllegalStateError otherwise, as Java's does); close() RELEASEs whatever
  it did not settle.
"""
from __future__ import annotations

import logging
import operator
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from fastkc.config import CONSUMER_DEFAULTS, Config, consumer_config, group_id_of
from fastkc.engine.client_engine import ClientEngine
from fastkc.errors import (
    IllegalArgumentError,
    IllegalStateError,
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.request import Request
from fastkc.share.acknowledgements import AcknowledgeType
from fastkc.share.fetch_machine import AckResult, ShareFetchMachine, ShareFetchToken
from fastkc.share.heartbeat import ShareHeartbeat
from fastkc.share.member_machine import ShareMemberMachine
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

#: the keys of KafkaConsumer that mean nothing to a share group member: the
#: broker keeps the group's place (share.auto.offset.reset, a group config),
#: assigns partitions and tracks each record; there are no offsets to commit
_NOT_SHARE_KEYS = frozenset((
    "group_instance_id", "group_protocol", "group_remote_assignor", "enable_incremental_fetch_sessions",
    "auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "default_offset_commit_callback",
    "isolation_level", "partition_assignment_strategy", "max_poll_interval_ms", "session_timeout_ms",
    "consumer_timeout_ms", "exclude_internal_topics", "decode_threads", "arrow_zero_copy", "kafka_client",
    "selector", "api_version", "metric_reporters", "metrics_enabled", "metrics_num_samples",
    "metrics_sample_window_ms", "metric_group_prefix", "allow_auto_create_topics",
))
SHARE_DEFAULTS: dict[str, Any] = {key: value for key, value in CONSUMER_DEFAULTS.items() if key not in _NOT_SHARE_KEYS}
SHARE_DEFAULTS["share_acknowledgement_mode"] = "implicit"
# Java's share.acquire.mode (KIP-1206, ShareFetch v2): "batch_optimized" lets
# the broker round max_poll_records up to whole batches; "record_limit" makes
# it a strict limit (a slow handler holds no more records than it asked for)
SHARE_DEFAULTS["share_acquire_mode"] = "batch_optimized"
SHARE_DEFAULTS["heartbeat_interval_ms"] = 5000  # the broker's group.share.heartbeat.interval.ms rules once joined
ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
#: close()'s bound when the caller gives none (Java's default close timeout)
DEFAULT_CLOSE_TIMEOUT_MS = 30000

#: what poll() returns: the records by partition (fastkc.structs.ShareRecord)
ShareRecords = dict[TopicPartition, list[Any]]
#: a commit's answer by partition: None, or the error the broker gave
CommitResults = dict[TopicPartition, KafkaError | None]
#: acknowledge_batch's rows by partition (their offsets) and their one type
_Grouped = tuple[dict[TopicPartition, list[int]], AcknowledgeType]
AckCallback = Callable[[dict[TopicPartition, frozenset[int]], KafkaError | None], None]


class ShareConsumerConfig(Config):
    """KafkaConsumer's configuration and the two keys only a share consumer
    has (Java's share.acknowledgement.mode and share.acquire.mode)."""

    share_acknowledgement_mode: str
    share_acquire_mode: str


def share_config(configs: Mapping[str, Any]) -> ShareConsumerConfig:
    """The share consumer's configuration: KafkaConsumer's checks for the
    keys they share, share_acknowledgement_mode, and every other key
    refused by name."""
    unknown = sorted(set(configs).difference(SHARE_DEFAULTS))
    if unknown:
        raise KafkaConfigurationError("Unrecognized configs for KafkaShareConsumer: {0}".format(unknown))
    mode = configs.get("share_acknowledgement_mode", "implicit")
    if mode not in ACKNOWLEDGEMENT_MODES:
        raise KafkaConfigurationError("share_acknowledgement_mode must be 'implicit' or 'explicit', not {0!r}".format(
            mode))
    acquire = configs.get("share_acquire_mode", "batch_optimized")
    if acquire not in ("batch_optimized", "record_limit"):
        raise KafkaConfigurationError(
            "share_acquire_mode must be 'batch_optimized' or 'record_limit', not {0!r}".format(acquire))
    group_id = configs.get("group_id")
    if not isinstance(group_id, str) or not group_id:
        raise KafkaConfigurationError("group_id is required: the share group's name (a non-empty str)")
    plain = {key: value for key, value in configs.items()
             if key not in ("share_acknowledgement_mode", "share_acquire_mode")}
    if "heartbeat_interval_ms" not in plain:
        plain["heartbeat_interval_ms"] = SHARE_DEFAULTS["heartbeat_interval_ms"]
    return ShareConsumerConfig(**consumer_config(plain), share_acknowledgement_mode=mode, share_acquire_mode=acquire)


class _Waiter:
    """A commit waiting for the broker's answers to the acknowledgements
    outstanding when it was made."""

    def __init__(self, outstanding: dict[TopicPartition, set[int]],
                 callback: Callable[[CommitResults], None] | None) -> None:
        self.outstanding = outstanding
        self.results: CommitResults = {}
        self.callback = callback

    def absorb(self, result: AckResult) -> None:
        wanted = self.outstanding.get(result.partition)
        if wanted is None or not wanted & result.offsets:
            return
        wanted -= result.offsets
        if not wanted:
            del self.outstanding[result.partition]
        if result.error is not None or result.partition not in self.results:
            if self.results.get(result.partition) is None:
                self.results[result.partition] = result.error

    @property
    def done(self) -> bool:
        return not self.outstanding


class KafkaShareConsumer:
    DEFAULT_CONFIG = SHARE_DEFAULTS

    def __init__(self, *topics: str, **configs: Any) -> None:
        self.config = share_config(configs)
        self._explicit = self.config["share_acknowledgement_mode"] == "explicit"
        # the client, the clock, open/closed and wakeup(): the same engine
        # layer KafkaConsumer stands on (fastkc.engine)
        self._engine = ClientEngine(self.config, owner="KafkaShareConsumer", clock=time.monotonic)
        self._clock = self._engine.clock
        self._client = self._engine.client
        try:
            self._client.bootstrap()
        except BaseException:
            self._engine.close_client()
            raise
        config = self.config
        group_id = group_id_of(config)
        self._coordinator = CoordinatorMachine(group_id, config["retry_backoff_ms"], config["request_timeout_ms"])
        self._member = ShareMemberMachine(
            group_id, self._coordinator, heartbeat_interval_ms=config["heartbeat_interval_ms"],
            retry_backoff_ms=config["retry_backoff_ms"], request_timeout_ms=config["request_timeout_ms"],
            rack_id=config["client_rack"] or None)
        from fastkc import records

        self._fetch = ShareFetchMachine(config, group_id, self._member.member_id, decode=records.decode_share,
                                        decode_arrow=records.decode_share_arrow)
        # the member heartbeats from a thread of its own, over its own connections; an assignment it
        # brings ends the application's wait (the client's wakeup socket: any thread may write it)
        self._heartbeat = ShareHeartbeat(self._member, config, on_change=self._client.wakeup)
        self._heartbeat.start()
        self._assignment_version = 0
        self._fenced_seen = 0
        # requests the machines made whose broker was not ready yet: (request, machine, first tried)
        self._unsent: list[tuple[Request[ShareFetchToken], Any, float]] = []
        self._answers: list[tuple[Any, object, Any]] = []  # (machine, token, answer) after a client poll
        self._handed_arrow: tuple[weakref.ref[Any], dict[TopicPartition, list[int]]] | None = None
        self._cluster_seen: tuple[Any, ...] | None = None  # (last_refresh, topics) the routes were made from
        self._leader_nodes: set[int] = set()
        self._waiters: list[_Waiter] = []
        self._ack_callback: AckCallback | None = None
        self._callback_queue: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        if topics:
            try:
                self.subscribe(topics)
            except BaseException:
                self.close(timeout_ms=0)
                raise

    # --- context manager ---------------------------------------------------------------------------
    def __enter__(self) -> KafkaShareConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # --- subscription ------------------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for these topics (replaces the subscription)."""
        self._engine.check_open()
        given = [topics] if isinstance(topics, str) else list(topics)
        if not given or not all(isinstance(t, str) and t for t in given):
            raise IllegalArgumentError("subscribe() needs one or more topic names, not {0!r}".format(topics))
        wanted = sorted(set(given))
        self._client.set_topics(wanted)
        with self._heartbeat.lock:
            self._member.set_subscription(wanted)
        self._heartbeat.kick()

    def subscription(self) -> set[str]:
        self._engine.check_open()
        with self._heartbeat.lock:
            return set(self._member.subscription or ())

    def unsubscribe(self) -> None:
        """Leave the group, within request_timeout_ms: implicit mode ACCEPTs
        what was delivered first; records still buffered are RELEASEd (the
        empty assignment hands them back); explicit mode's unacknowledged
        records stay delivered (acknowledge them, or close() releases them)."""
        self._engine.check_open()
        self._implicit_accept()
        with self._heartbeat.lock:
            self._member.set_subscription(None)
            self._member.leave()
        self._heartbeat.kick()
        deadline = self._clock() + self.config["request_timeout_ms"] / 1000.0
        while True:
            self._run_once(fetch=False)
            if not (self._leaving() or self._fetch.acks_outstanding()) or self._wait(deadline, member_wait=True):
                break
        self._deliver_callbacks()

    def _leaving(self) -> bool:
        with self._heartbeat.lock:
            return bool(self._member.leaving)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the broker assigned to this member (shared with others)."""
        self._engine.check_open()
        with self._heartbeat.lock:
            return set(self._member.assignment)

    # --- polling -----------------------------------------------------------------------------------
    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ShareRecords:
        """Records acquired for this member, up to max_records
        (max_poll_records when None), waiting up to timeout_ms for the first.
        Implicit mode: ACCEPTs what the previous poll delivered first."""
        records: ShareRecords | None = self._poll_for(timeout_ms, max_records, self._fetch.hand_out)
        return records or {}

    def poll_arrow(self, timeout_ms: float = 0, max_records: int | None = None) -> Any:
        """poll()'s records as one pyarrow.RecordBatch (the records' Arrow
        schema plus delivery_count); an empty batch when none came."""
        batches = self._poll_for(timeout_ms, max_records, self._fetch.hand_out_arrow)
        if batches:
            batch = _one_batch(batches)
            # acknowledge_batch(this batch) reads its rows' grouping from here instead of its columns; a weak
            # reference: the batch's buffers (slices of a whole fetch's) live only as long as the caller keeps it
            self._handed_arrow = (weakref.ref(batch), self._fetch.arrow_offsets)
            return batch
        import pyarrow as pa

        from fastkc.records import share_arrow_schema

        return pa.RecordBatch.from_pylist([], schema=share_arrow_schema())

    def _poll_for(self, timeout_ms: float, max_records: int | None, hand_out: Callable[[int], Any]) -> Any:
        """The poll loop both forms share: hand_out(limit)'s first non-empty
        answer, or None when timeout_ms passed without one."""
        self._start_poll()
        limit = self._limit(max_records)
        deadline = self._clock() + max(0.0, timeout_ms) / 1000.0
        while True:
            self._run_once(fetch=True)
            if self._fetch.buffered():
                handed = hand_out(limit)
                if handed:
                    # the next ShareFetch goes out now, while the application works on these, when what
                    # is left buffered allows it (fetch_machine.py: fetching ahead, bounded)
                    self._run_once(fetch=True)
                    self._deliver_callbacks()
                    return handed
                continue  # only gaps: the buffer shrank, look again
            if self._wait(deadline):
                self._deliver_callbacks()
                return None

    def _start_poll(self) -> None:
        self._engine.check_open()
        self._engine.raise_wakeup()
        if not self.subscription():
            raise IllegalStateError("Consumer is not subscribed to any topics")
        if self._explicit:
            unsettled = self._fetch.unacknowledged()
            if unsettled:
                raise IllegalStateError(
                    "explicit acknowledgement mode: {0} record(s) delivered by the last poll are not acknowledged; "
                    "acknowledge() each before polling again".format(unsettled))
        else:
            self._fetch.acknowledge_delivered(AcknowledgeType.ACCEPT)

    def _limit(self, max_records: int | None) -> int:
        limit = self.config["max_poll_records"] if max_records is None else max_records
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise IllegalArgumentError("max_records must be a positive int, not {0!r}".format(max_records))
        return int(limit)

    # --- acknowledging -----------------------------------------------------------------------------
    def acknowledge(self, record: Any, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:  # noqa: A002
        """Settle one delivered record (explicit mode). The acknowledgement
        goes to the broker with the next poll's ShareFetch, or commit_*()."""
        self._engine.check_open()
        kind = self._check_explicit(type)
        self._fetch.acknowledge(TopicPartition(record.topic, record.partition), record.offset, kind)

    def acknowledge_batch(self, batch_or_records: Any, types: Any = AcknowledgeType.ACCEPT) -> None:
        """Settle many delivered records at once: a poll_arrow() batch (its
        topic, partition and offset columns) or a sequence of records; types
        is one AcknowledgeType for all, or one per row (a sequence or an
        Arrow array of AcknowledgeType values or their ints). All or nothing:
        a row that cannot be acknowledged raises before any is."""
        self._engine.check_open()
        self._check_explicit(AcknowledgeType.ACCEPT)
        grouped = self._handed_grouping(batch_or_records, types)
        if grouped is None:
            grouped = _grouped(batch_or_records, types)
        if grouped is not None and self._acknowledge_grouped(grouped):
            return
        # per-row types that differ, or a row that fails: row by row, which words the first failure
        rows = _rows(batch_or_records)
        kinds = _types_for(rows, types)
        seen: set[tuple[TopicPartition, int]] = set()
        for (tp, offset), kind in zip(rows, kinds):
            acks = self._fetch.acks.get(tp)
            if acks is None or offset not in acks.delivered or (tp, offset) in seen:
                what = "record {0}-{1}@{2}".format(tp.topic, tp.partition, offset)
                if (tp, offset) in seen:
                    raise IllegalStateError("{0} appears twice in the batch; a record is acknowledged once".format(
                        what))
                # the single-record path words the reason (already acknowledged / not delivered)
                self._fetch.acknowledge(tp, offset, kind)
            if kind is AcknowledgeType.RENEW:
                self._fetch.check_renew(tp)
            seen.add((tp, offset))
        for (tp, offset), kind in zip(rows, kinds):
            self._fetch.acknowledge(tp, offset, kind)

    def _handed_grouping(self, batch: Any, types: Any) -> _Grouped | None:
        """The batch the last poll_arrow() returned, acknowledged whole with
        one type: its rows by partition as the fetch machine handed them
        out (an Arrow batch is immutable, so the same object has the same
        rows); None for anything else."""
        if self._handed_arrow is None or self._handed_arrow[0]() is not batch:
            return None
        if not isinstance(types, (AcknowledgeType, int)) or isinstance(types, bool):
            return None
        return self._handed_arrow[1], _ack_type(types)

    def _acknowledge_grouped(self, grouped: _Grouped) -> bool:
        """The happy path of acknowledge_batch: every row delivered, none
        twice, one type. Checked with C-level set passes per partition
        before anything changes; False (nothing changed) sends the caller
        row by row, to word the failure."""
        by_partition, kind = grouped
        fetch = self._fetch
        for tp, offsets in by_partition.items():
            acks = fetch.acks.get(tp)
            if acks is None or not acks.check_many(offsets):
                return False
        if kind is AcknowledgeType.RENEW:
            for tp in by_partition:
                fetch.check_renew(tp)
        for tp, offsets in by_partition.items():
            fetch.acks[tp].acknowledge_many(offsets, kind)
        return True

    def _check_explicit(self, kind: Any) -> AcknowledgeType:
        if not self._explicit:
            raise IllegalStateError("acknowledge() needs share_acknowledgement_mode='explicit'; implicit mode "
                                    "accepts every delivered record on the next poll(), commit or close()")
        return _ack_type(kind)

    def set_acknowledgement_commit_callback(self, callback: AckCallback | None) -> None:
        """callback(offsets {TopicPartition: frozenset of offsets}, error or
        None), called on the application's thread (inside poll, commit_*,
        close) once the broker answered acknowledgements — Java's
        AcknowledgementCommitCallback."""
        self._engine.check_open()
        self._ack_callback = callback

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker holds a delivered record for this member
        (its last ShareFetch answer); None before the first answer."""
        return self._fetch.acquisition_lock_timeout_ms

    # --- commits -----------------------------------------------------------------------------------
    def commit_sync(self, timeout_ms: float | None = None) -> CommitResults:
        """Send the acknowledgements not sent yet and wait for the broker's
        answers (to them and to those already on the wire): {partition: None
        or the broker's error}. Partitions still unanswered at timeout_ms
        (request_timeout_ms when None) get KafkaTimeoutError; their
        acknowledgements are still answered later."""
        self._engine.check_open()
        self._engine.raise_wakeup()
        self._implicit_accept()
        waiter = self._new_waiter(None)
        limit = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + max(0.0, limit) / 1000.0
        while not waiter.done:
            self._run_once(fetch=False)
            if waiter.done or self._wait(deadline):
                break
        if waiter in self._waiters:
            self._waiters.remove(waiter)
        results = dict(waiter.results)
        for tp in waiter.outstanding:
            results[tp] = KafkaTimeoutError("acknowledgements for {0} not answered within {1} ms".format(tp, limit))
        self._deliver_callbacks()
        return results

    def commit_async(self, callback: Callable[[CommitResults], None] | None = None) -> None:
        """Send the acknowledgements not sent yet without waiting; callback
        (results as commit_sync returns them) runs inside a later call once
        they are all answered."""
        self._engine.check_open()
        self._implicit_accept()
        self._new_waiter(callback)
        self._run_once(fetch=False)
        self._deliver_callbacks()

    def _implicit_accept(self) -> None:
        if not self._explicit:
            self._fetch.acknowledge_delivered(AcknowledgeType.ACCEPT)

    def _new_waiter(self, callback: Callable[[CommitResults], None] | None) -> _Waiter:
        outstanding = {tp: set(acks.pending) | set(acks.sent) for tp, acks in self._fetch.acks.items()
                       if acks.pending or acks.sent}
        waiter = _Waiter(outstanding, callback)
        if waiter.done:
            if callback is not None:
                self._callback_queue.append((callback, ({},)))
        else:
            self._waiters.append(waiter)
        return waiter

    # --- wakeup and close --------------------------------------------------------------------------
    def wakeup(self) -> None:
        """From any thread: the blocking call in progress (or the next)
        raises WakeupException, once."""
        self._engine.wakeup()

    def close(self, timeout_ms: float | None = None) -> None:
        """Acknowledge (implicit mode: ACCEPT what was delivered), RELEASE
        every record acquired and not acknowledged, close the share sessions
        (epoch -1), leave the group (epoch -1), within timeout_ms (30 s when
        None); then close the connections. Later calls raise IllegalStateError."""
        if self._engine.closed:
            return
        limit = DEFAULT_CLOSE_TIMEOUT_MS if timeout_ms is None else timeout_ms
        deadline = self._clock() + max(0.0, limit) / 1000.0
        self._engine.forget_wakeup()
        try:
            self._implicit_accept()
            self._fetch.start_close()
            while not self._fetch.close_done():
                self._run_once(fetch=False)
                if self._fetch.close_done() or self._wait(deadline):
                    break
            with self._heartbeat.lock:
                self._member.leave()
            self._heartbeat.kick()
            while self._leaving():
                self._run_once(fetch=False)
                if not self._leaving() or self._wait(deadline, member_wait=True):
                    break
            self._deliver_callbacks()
        except Exception:  # closing must close, whatever the brokers do
            log.warning("closing the share consumer: acknowledgements or leaving failed", exc_info=True)
        finally:
            self._engine.mark_closed()
            self._heartbeat.stop(max(0.1, deadline - self._clock()))
            with self._heartbeat.lock:
                self._member.close()
            self._engine.close_client()

    # --- the driver --------------------------------------------------------------------------------
    def _run_once(self, fetch: bool) -> None:
        """One round: what the member (on its thread) decided reaches the
        fetch machine; what the fetch machine wants sent goes out; answers
        that came are handed to it."""
        self._client.raise_fatal()
        self._heartbeat.raise_error()
        now = self._clock()
        self._sync_cluster()
        fetch_machine = self._fetch
        with self._heartbeat.lock:
            member = self._member
            member.learn_topics(self._client.cluster.topic_names_by_id)
            fenced = member.fenced_count != self._fenced_seen
            self._fenced_seen = member.fenced_count
            assignment = member.assignment if member.assignment_version != self._assignment_version else None
            self._assignment_version = member.assignment_version
            joined = member.member_epoch > 0
            fetch_machine.member_id = member.member_id  # the client's id (KIP-1082), kept across rejoins
        if fenced:
            fetch_machine.fenced()
        if assignment is not None:
            fetch_machine.set_assignment(assignment)
        for request in fetch_machine.next_requests(now, fetch and joined):
            self._send(request, fetch_machine, now)
        if fetch_machine.metadata_wanted:
            fetch_machine.metadata_wanted = False
            self._client.request_metadata_update()
        self._retry_unsent(now)

    def _wait(self, deadline: float, member_wait: bool = False) -> bool:
        """Poll the client until the next thing to do (at most until
        deadline); True when the deadline has passed. member_wait: the
        caller waits for the member's thread (leaving), which does not
        wake this client: look again every retry_backoff_ms."""
        now = self._clock()
        if now >= deadline:
            self._handle_answers()
            return True
        wait = deadline - now
        if self._unsent or member_wait:
            wait = min(wait, self.config["retry_backoff_ms"] / 1000.0)
        self._client.poll(wait)
        self._handle_answers()
        self._engine.raise_wakeup()
        return False

    def _sync_cluster(self) -> None:
        cluster = self._client.cluster
        seen = (cluster.last_refresh, id(cluster.topics))
        if seen != self._cluster_seen:  # the routes change only with a metadata update (asked at every round)
            self._cluster_seen = seen
            topic_ids = {name: meta.topic_id for name, meta in cluster.topics.items() if meta.topic_id is not None}
            leaders: dict[TopicPartition, int] = {}
            for name, meta in cluster.topics.items():
                for index, partition in meta.partitions.items():
                    if partition.leader >= 0:
                        leaders[TopicPartition(name, index)] = partition.leader
            self._fetch.set_routes(topic_ids, leaders)
            self._leader_nodes = set(leaders.values())
        for node in self._leader_nodes:
            conn = self._client.connection(node)
            if conn is not None and conn.established:
                # RENEW (ShareAcknowledge) and record_limit (ShareFetch) both came with v2 of both APIs
                self._fetch.versions[node] = min(conn.version_for("ShareAcknowledge"), conn.version_for("ShareFetch"))

    def _send(self, request: Request[ShareFetchToken], machine: Any, now: float) -> None:
        node = request.node_id  # the fetch machine addresses leaders by node id
        if not self._client.ready(node):
            self._unsent.append((request, machine, now))
            return
        self._client.send(node, request.api, request.body, self._collector(machine, request.token),
                          timeout_ms=request.timeout_ms)

    def _retry_unsent(self, now: float) -> None:
        if not self._unsent:
            return
        waiting, self._unsent = self._unsent, []
        for request, machine, first in waiting:
            node = request.node_id
            if self._client.ready(node):
                self._client.send(node, request.api, request.body, self._collector(machine, request.token),
                                  timeout_ms=request.timeout_ms)
            elif now - first > request.timeout_ms / 1000.0:
                conn = self._client.connection(node)
                cause = conn.last_error if conn is not None else None
                self._answers.append((machine, request.token, KafkaConnectionError(
                    "{0}: broker {1} not reachable within {2} ms ({3})".format(request.api, node, request.timeout_ms,
                                                                              cause))))
            else:
                self._unsent.append((request, machine, first))

    def _collector(self, machine: Any, token: object) -> Callable[[Any, BaseException | None], None]:
        def answered(response: Any, error: BaseException | None) -> None:
            self._answers.append((machine, token, error if error is not None else response))
        return answered

    def _handle_answers(self) -> None:
        now = self._clock()
        while self._answers:
            machine, token, answer = self._answers.pop(0)
            machine.on_response(token, answer, now)
        for result in self._fetch.take_results():
            self._dispatch(result)

    def _dispatch(self, result: AckResult) -> None:
        if result.error is not None:
            log.info("acknowledgements of %s offsets %s..: %s", result.partition, sorted(result.offsets)[:5],
                     result.error)
        if self._ack_callback is not None:
            self._callback_queue.append((self._ack_callback, ({result.partition: result.offsets}, result.error)))
        for waiter in list(self._waiters):
            waiter.absorb(result)
            if waiter.done:
                self._waiters.remove(waiter)
                if waiter.callback is not None:
                    self._callback_queue.append((waiter.callback, (dict(waiter.results),)))

    def _deliver_callbacks(self) -> None:
        queue, self._callback_queue = self._callback_queue, []
        for callback, args in queue:
            try:
                callback(*args)
            except Exception:  # the application's callback must not break the consumer
                log.exception("acknowledgement callback %r raised", callback)


def _ack_type(kind: Any) -> AcknowledgeType:
    try:
        return AcknowledgeType(kind)
    except ValueError:
        raise IllegalArgumentError("not an AcknowledgeType: {0!r} (ACCEPT, RELEASE, REJECT or RENEW)".format(
            kind)) from None


def _rows(batch_or_records: Any) -> list[tuple[TopicPartition, int]]:
    if hasattr(batch_or_records, "column") and hasattr(batch_or_records, "num_rows"):
        topics = batch_or_records.column("topic").to_pylist()
        partitions = batch_or_records.column("partition").to_pylist()
        offsets = batch_or_records.column("offset").to_pylist()
        return [(TopicPartition(t, p), o) for t, p, o in zip(topics, partitions, offsets)]
    if isinstance(batch_or_records, Mapping):  # poll()'s dict
        return [(TopicPartition(r.topic, r.partition), r.offset) for recs in batch_or_records.values() for r in recs]
    return [(TopicPartition(r.topic, r.partition), r.offset) for r in batch_or_records]


def _types_for(rows: Sequence[tuple[TopicPartition, int]], types: Any) -> list[AcknowledgeType]:
    if isinstance(types, (AcknowledgeType, int)) and not isinstance(types, bool):
        return [_ack_type(types)] * len(rows)
    values = types.to_pylist() if hasattr(types, "to_pylist") else list(types)
    if len(values) != len(rows):
        raise IllegalArgumentError("{0} acknowledgement types for {1} rows: give one per row, or one for all".format(
            len(values), len(rows)))
    return [_ack_type(value) for value in values]


def _grouped(batch_or_records: Any, types: Any) -> _Grouped | None:
    """acknowledge_batch's rows as {partition: offsets} and their one type,
    read column by column (an Arrow batch) or with C-level getters (poll()'s
    dict); None when the types differ per row (the row-by-row path takes
    it). Bad types raise IllegalArgumentError here, as there."""
    if isinstance(types, (AcknowledgeType, int)) and not isinstance(types, bool):
        kind = _ack_type(types)
    else:
        values = types.to_pylist() if hasattr(types, "to_pylist") else list(types)
        distinct = set(values)
        if len(distinct) != 1:
            return None  # several types, or none for an empty batch: row by row
        kind = _ack_type(next(iter(distinct)))
        if len(values) != _row_count(batch_or_records):
            return None  # the row-by-row path words the mismatch
    by_partition: dict[TopicPartition, list[int]] = {}
    if hasattr(batch_or_records, "column") and hasattr(batch_or_records, "num_rows"):
        topics = batch_or_records.column("topic")
        partitions = batch_or_records.column("partition")
        offsets = batch_or_records.column("offset")
        if partitions.null_count or offsets.null_count or topics.null_count:
            return None
        import pyarrow.compute as pc

        for topic in pc.unique(topics).to_pylist():
            in_topic = pc.equal(topics, topic)
            topic_partitions = pc.filter(partitions, in_topic)
            topic_offsets = pc.filter(offsets, in_topic)
            for partition in pc.unique(topic_partitions).to_pylist():
                chosen = pc.filter(topic_offsets, pc.equal(topic_partitions, partition)).to_pylist()
                by_partition[TopicPartition(topic, partition)] = chosen
        return by_partition, kind
    if isinstance(batch_or_records, Mapping):  # poll()'s dict: each list one partition's records
        for records in batch_or_records.values():
            for (topic, partition), offsets_of in _by_partition(records):
                by_partition.setdefault(TopicPartition(topic, partition), []).extend(offsets_of)
        return by_partition, kind
    for (topic, partition), offsets_of in _by_partition(batch_or_records):
        by_partition.setdefault(TopicPartition(topic, partition), []).extend(offsets_of)
    return by_partition, kind


_TOPIC_PARTITION = operator.attrgetter("topic", "partition")
_OFFSET = operator.attrgetter("offset")


def _by_partition(records: Iterable[Any]) -> list[tuple[tuple[str, int], list[int]]]:
    """Records -> [((topic, partition), offsets)]: one C-level pass when they
    are all one partition's (poll()'s lists are), else grouped row by row."""
    records = records if isinstance(records, (list, tuple)) else list(records)
    keys = set(map(_TOPIC_PARTITION, records))
    if len(keys) == 1:
        return [(next(iter(keys)), list(map(_OFFSET, records)))]
    grouped: dict[tuple[str, int], list[int]] = {}
    for record in records:
        grouped.setdefault((record.topic, record.partition), []).append(record.offset)
    return list(grouped.items())


def _row_count(batch_or_records: Any) -> int:
    if hasattr(batch_or_records, "num_rows"):
        return int(batch_or_records.num_rows)
    if isinstance(batch_or_records, Mapping):
        return sum(len(records) for records in batch_or_records.values())
    return len(batch_or_records)


def _one_batch(batches: list[Any]) -> Any:
    if len(batches) == 1:
        return batches[0]
    import pyarrow as pa

    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
