"""Positions from the broker: offset resets and lookups (ListOffsets) and
KIP-320 truncation validation (OffsetForLeaderEpoch), as request builders
and response handlers of the fetch machine. No waiting happens here: the
application's lookups (beginning_offsets, end_offsets, offsets_for_times) are
`offset_lookup`, a generator of steps (ask a leader, wait for metadata, back
off) that each driver performs its own way -- blocking (fastkc/fetch/driver.py)
or awaiting (fastkc/aio/fetch_driver.py) -- and sends the outcome back.

Truncation, as the Java client does it: after a leader change the position
is validated with OffsetForLeaderEpoch before fetching resumes, and a Fetch
(v12+) may report a diverging epoch directly. If the leader's log ends below
the position for the position's epoch, the position moves to that end offset
-- or, with auto_offset_reset='none', LogTruncationError is raised from poll.
"""
import functools
import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from fastkc import errors
from fastkc.config import Config
from fastkc.errors import LogTruncationError, NoOffsetForPartitionError
from fastkc.fetch import codes
from fastkc.fetch.partitions import FetchPartitions
from fastkc.fetch.reactions import BufferDropper, Reactions
from fastkc.fetch.requests import Link, RequestLedger, isolation_level
from fastkc.fetch.state import FetchState, PartitionState
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import ClusterMetadata

log = logging.getLogger("fastkc.fetch")

EARLIEST = -2
LATEST = -1
RESET_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}


class AskLeader(NamedTuple):
    """Send this ListOffsets body to node_id within `seconds`; the outcome
    is the decoded answer or the exception that ended the request."""
    node_id: int
    body: dict[str, Any]
    seconds: float


class AwaitMetadata(NamedTuple):
    """Add `topics` to the wanted ones, refresh metadata and wait for it
    within `seconds`; the outcome is None or the KafkaTimeoutError."""
    topics: frozenset[str]
    seconds: float


class BackOff(NamedTuple):
    """Wait `seconds` (retry_backoff_ms) while the connections go on; no outcome."""
    seconds: float


#: what offset_lookup yields; a step's outcome goes back in through send()
LookupStep = AskLeader | AwaitMetadata | BackOff
#: {tp: (offset, timestamp, leader_epoch)}: a lookup's result
LookupResults = dict[TopicPartition, tuple[int, int, int]]


def list_offsets_time_left(deadline: float, now: float, timeout_ms: float,
                            missing: Iterable[TopicPartition] = ()) -> float:
    """Seconds left of an offset lookup (both drivers' waiting loops), or the
    KafkaTimeoutError naming the partitions still without a leader."""
    left = deadline - now
    if left <= 0:
        detail = "; no leader known for {0}".format(sorted(missing)) if missing else ""
        raise errors.KafkaTimeoutError("ListOffsets did not complete within {0} ms{1}".format(timeout_ms, detail))
    return left


class OffsetLookups(Protocol):
    """What offset_lookup asks of the machine (OffsetRequests' lookup builders)."""

    def list_offsets_requests(self, timestamps: Mapping[TopicPartition, int],
                              ) -> tuple[dict[int, dict[TopicPartition, int]], list[TopicPartition]]: ...

    def list_offsets_body(self, timestamps: Mapping[TopicPartition, int]) -> dict[str, Any]: ...

    def list_offsets_answer(self, asked: Mapping[TopicPartition, int], response: Any) -> tuple[LookupResults, bool]: ...


def offset_lookup(machine: OffsetLookups, timestamps: Mapping[TopicPartition, int], timeout_ms: float,
                  clock: Callable[[], float], retry_backoff_ms: float) -> Generator[LookupStep, Any, LookupResults]:
    """The lookup of {tp: timestamp} -> {tp: (offset, timestamp, leader_epoch)}
    as steps, retried on retriable errors until timeout_ms, as kafka-python
    and the Java client retry it: a partition without a known leader (even
    one past its topic's count: partitions may be added, a topic created, a
    leader elected) gets a metadata refresh every retry_backoff_ms; a leader
    that answers with a retriable error or without the partition is asked
    again after the backoff and a refresh. Yields AskLeader / AwaitMetadata /
    BackOff and takes each one's outcome; returns the results or raises
    KafkaTimeoutError (naming the partitions still without a leader) or the
    partition's error."""
    deadline = clock() + timeout_ms / 1000.0
    backoff = retry_backoff_ms / 1000.0

    def left(missing: Iterable[TopicPartition] = ()) -> float:
        return list_offsets_time_left(deadline, clock(), timeout_ms, missing)

    def refreshed(outcome: object, missing: Iterable[TopicPartition] = ()) -> None:
        if isinstance(outcome, errors.KafkaTimeoutError):
            left(missing)  # the same message as any other expiry
            raise outcome

    results: LookupResults = {}
    remaining = dict(timestamps)
    looked_up_metadata = False
    while remaining:
        by_node, missing = machine.list_offsets_requests(remaining)
        if missing:
            if looked_up_metadata:
                yield BackOff(min(backoff, left(missing)))
            refreshed((yield AwaitMetadata(frozenset(tp.topic for tp in missing), left(missing))), missing)
            looked_up_metadata = True
            continue
        retry = False
        for node_id, part in by_node.items():
            answer = yield AskLeader(node_id, machine.list_offsets_body(part), left())
            if isinstance(answer, BaseException):
                if isinstance(answer, errors.KafkaTimeoutError) or not getattr(answer, "retriable", False):
                    raise answer
                retry = True
                continue
            answered, again = machine.list_offsets_answer(part, answer)
            retry = retry or again
            for tp, result in answered.items():
                results[tp] = result
                del remaining[tp]
        if retry and remaining:
            # paced by retry_backoff_ms: a broker that keeps answering
            # without the partitions must not be asked in a tight loop
            yield BackOff(min(backoff, max(0.0, deadline - clock())))
            refreshed((yield AwaitMetadata(frozenset(), left())))
    return results


def list_offsets_results(response: Any) -> Iterator[tuple[TopicPartition, int, int, int, int]]:
    """(tp, error_code, offset, leader_epoch, timestamp) per partition of a decoded ListOffsets answer."""
    for topic in response["topics"]:
        for p in topic["partitions"]:
            yield (TopicPartition(topic["name"], p["partition_index"]), p["error_code"], p["offset"],
                   p["leader_epoch"], p["timestamp"])


class OffsetRequests:
    """The fetch machine's resets, lookups and validations (see the module
    docstring). It moves partitions out of INITIALIZING, AWAIT_RESET and
    AWAIT_VALIDATION; the facade keeps `cluster` current."""

    def __init__(self, config: Config, cluster: "ClusterMetadata", partitions: FetchPartitions,
                 requests: RequestLedger, reactions: Reactions, buffer: BufferDropper,
                 metrics: dict[str, int]) -> None:
        self.config = config
        self.cluster = cluster
        self._partitions = partitions
        self._requests = requests
        self._reactions = reactions
        self._buffer = buffer
        self._metrics = metrics  # the machine's counters; this part adds offset validations
        self._isolation = isolation_level(config)
        self._leader_epochs_seen: dict[TopicPartition, int] = {}  # the newest leader epoch metadata showed

    @property
    def _states(self) -> dict[TopicPartition, PartitionState]:
        return self._partitions.states

    def plan(self, now: float, link: Link) -> None:
        """The resets and validations due now, into the request ledger's
        outbox. Raises the NoOffsetForPartitionError of a partition without
        position under auto_offset_reset='none'."""
        self._ensure_reset_strategies()
        self._plan_resets(now, link)
        self._plan_validations(now, link)

    def _leader_ready(self, tp: TopicPartition, link: Link) -> int | None:
        leader = self.cluster.leader_for(tp)
        if leader is None:
            self._partitions.want_metadata()
            return None
        return leader if link(leader) is not None else None

    def _ensure_reset_strategies(self) -> None:
        """INITIALIZING partitions get the auto_offset_reset policy (there are
        no committed offsets without a group), unless held: the driver is
        looking up their committed offsets (hold_for_committed)."""
        policy = self.config["auto_offset_reset"]
        for tp, state in self._states.items():
            if state.fetch_state is FetchState.INITIALIZING and not state.held:
                if policy == "none":
                    raise NoOffsetForPartitionError("no position for {0} and auto_offset_reset='none'".format(tp))
                state.await_reset(policy)

    # --- offset resets -------------------------------------------------------------------
    def _plan_resets(self, now: float, link: Link) -> None:
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, state in self._states.items():
            if state.fetch_state is not FetchState.AWAIT_RESET or state.reset_in_flight or state.next_retry > now:
                continue
            leader = self._leader_ready(tp, link)
            if leader is None:
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            strategies: dict[TopicPartition, str] = {}
            for tp in tps:
                strategy = self._states[tp].reset_strategy
                assert strategy is not None  # AWAIT_RESET is entered only through await_reset(strategy)
                strategies[tp] = strategy
            body = self.list_offsets_body({tp: RESET_TIMESTAMPS[strategies[tp]] for tp in tps})
            for tp in tps:
                self._states[tp].reset_in_flight = True
            self._requests.emit(node_id, "ListOffsets", body, functools.partial(self._reset_answered, strategies))

    def _reset_answered(self, strategies: dict[TopicPartition, str], response: Any,
                        error: BaseException | None, now: float) -> None:
        for tp in strategies:
            if tp in self._states:
                self._states[tp].reset_in_flight = False
        if error is not None:
            self._reactions.retry_later(strategies, now, error)
            return
        unanswered = set(strategies)
        for tp, code, offset, epoch, _ in list_offsets_results(response):
            unanswered.discard(tp)
            state = self._states.get(tp)
            if state is None or state.fetch_state is not FetchState.AWAIT_RESET or \
                    state.reset_strategy != strategies.get(tp):
                continue  # unassigned or sought meanwhile
            if code != codes.NONE:
                self._reactions.partition_error(tp, code, "ListOffsets", now)
                state.next_retry = now + self._reactions.backoff
                continue
            state.seek(offset, epoch)
            self._partitions.replan()
        if unanswered:  # left out by the broker: asked again after the backoff, not at once
            self._reactions.retry_later(unanswered, now, metadata=False)

    def list_offsets_body(self, timestamps: Mapping[TopicPartition, int]) -> dict[str, Any]:
        """The ListOffsets request body for {tp: timestamp} (all to one leader)."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, ts in timestamps.items():
            meta = self.cluster.partition(tp)
            epoch = meta.leader_epoch if meta is not None else -1
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "current_leader_epoch": epoch, "timestamp": ts})
        return {"replica_id": -1, "isolation_level": self._isolation,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "timeout_ms": self.config["request_timeout_ms"]}

    # --- lookups for the application (the driver waits) ----------------------------------
    def list_offsets_requests(self, timestamps: Mapping[TopicPartition, int],
                              ) -> tuple[dict[int, dict[TopicPartition, int]], list[TopicPartition]]:
        """{tp: timestamp} -> ({leader: {tp: timestamp}}, [tps without a known leader])."""
        by_node: dict[int, dict[TopicPartition, int]] = {}
        missing: list[TopicPartition] = []
        for tp, ts in timestamps.items():
            leader = self.cluster.leader_for(tp)
            if leader is None:
                missing.append(tp)
            else:
                by_node.setdefault(leader, {})[tp] = ts
        return by_node, missing

    @staticmethod
    def list_offsets_answer(asked: Mapping[TopicPartition, int], response: Any) -> tuple[LookupResults, bool]:
        """One leader's ListOffsets answer to `asked` ({tp: timestamp}) ->
        ({tp: (offset, timestamp, leader_epoch)}, retry). retry: some
        partition is worth asking again (a retriable error, a moved leader,
        left out by the broker). A partition error that is neither raises
        its class."""
        results: LookupResults = {}
        retry = False
        answered: set[TopicPartition] = set()
        for tp, code, offset, epoch, ts in list_offsets_results(response):
            if tp not in asked:
                continue
            answered.add(tp)
            if code != codes.NONE:
                if codes.retriable(code):
                    retry = True
                    continue
                raise errors.for_code(code)("ListOffsets for {0}".format(tp))
            results[tp] = (offset, ts, epoch)
        if answered != set(asked):
            retry = True  # the broker left partitions out: ask again, after the backoff
        return results, retry

    # --- validation after leader changes (KIP-320) ----------------------------------------
    def on_metadata(self, cluster: "ClusterMetadata") -> None:
        """New metadata: a partition whose leader epoch moved past the one
        seen before has its position validated before fetching resumes."""
        self.cluster = cluster
        self._partitions.replan()
        for tp, state in self._states.items():
            meta = self.cluster.partition(tp)
            if meta is None or meta.leader_epoch < 0:
                continue
            changed = self._epoch_changed(tp, meta.leader_epoch)
            if changed and state.fetch_state is FetchState.FETCHING and state.position_epoch >= 0:
                state.await_validation()
                self._buffer.drop(state)

    def _epoch_changed(self, tp: TopicPartition, epoch: int) -> bool:
        # stale metadata (an older epoch from a lagging broker) is ignored
        seen = self._leader_epochs_seen.get(tp)
        if seen is None or epoch > seen:
            self._leader_epochs_seen[tp] = epoch
        return seen is not None and epoch > seen

    def _plan_validations(self, now: float, link: Link) -> None:
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, state in self._states.items():
            if not state.awaiting_validation or state.validation_in_flight or state.next_retry > now:
                continue
            leader = self._leader_ready(tp, link)
            if leader is None:
                continue
            node = link(leader)
            assert node is not None  # _leader_ready just found it ready; nothing ran in between
            if node.version_for("OffsetForLeaderEpoch") is None:
                state.validated()  # the broker cannot tell: trust the position
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            topics: dict[str, list[dict[str, Any]]] = {}
            requested: dict[TopicPartition, tuple[int | None, int]] = {}
            for tp in tps:
                state = self._states[tp]
                meta = self.cluster.partition(tp)
                assert meta is not None  # _leader_ready found its leader in this same metadata
                topics.setdefault(tp.topic, []).append({"partition": tp.partition,
                                                        "current_leader_epoch": meta.leader_epoch,
                                                        "leader_epoch": state.position_epoch})
                state.validation_in_flight = True
                requested[tp] = (state.position, state.position_epoch)
            body = {"replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
            log.debug("validating positions of %s with broker %s (OffsetForLeaderEpoch)", sorted(requested), node_id)
            self._metrics["offset-validations-total"] += len(requested)
            self._requests.emit(node_id, "OffsetForLeaderEpoch", body,
                                functools.partial(self._validation_answered, requested))

    def _validation_answered(self, requested: dict[TopicPartition, tuple[int | None, int]], response: Any,
                             error: BaseException | None, now: float) -> None:
        for tp in requested:
            if tp in self._states:
                self._states[tp].validation_in_flight = False
        if error is not None:
            self._reactions.retry_later(requested, now, error)
            return
        unanswered = set(requested)
        for topic in response["topics"]:
            for p in topic["partitions"]:
                tp = TopicPartition(topic["topic"], p["partition"])
                unanswered.discard(tp)
                state = self._states.get(tp)
                if state is None or requested.get(tp) != (state.position, state.position_epoch) or \
                        not state.awaiting_validation:
                    continue
                if p["error_code"] != codes.NONE:
                    self._reactions.partition_error(tp, p["error_code"], "OffsetForLeaderEpoch", now)
                    state.next_retry = now + self._reactions.backoff
                    continue
                state.validated()
                self.check_divergence(tp, p["leader_epoch"], p["end_offset"])  # replans
        if unanswered:  # left out by the broker: asked again after the backoff, not at once
            self._reactions.retry_later(unanswered, now, metadata=False)

    def check_divergence(self, tp: TopicPartition, epoch: int, end_offset: int) -> None:
        """The leader's log for the position's epoch ends at end_offset (an
        OffsetForLeaderEpoch answer, or a Fetch's diverging epoch)."""
        self._partitions.replan()
        state = self._states[tp]
        if end_offset < 0 or epoch < 0:
            return  # the broker does not know the epoch: nothing to compare (Java: validated)
        if state.position is not None and end_offset < state.position:
            if self.config["auto_offset_reset"] == "none":
                self._buffer.drop(state)
                self._partitions.fail(LogTruncationError(
                    "log of {0} truncated: position {1} (epoch {2}) is past the leader's end offset {3} for epoch {4}"
                    .format(tp, state.position, state.position_epoch, end_offset, epoch)))
                state.await_validation()  # stays unfetchable until the application seeks
                return
            log.info("truncation detected for %s: position %s moves to %s", tp, state.position, end_offset)
            self._buffer.drop(state)
            state.seek(end_offset, epoch)
        elif state.fetch_offset is not None and end_offset < state.fetch_offset:
            self._buffer.drop(state)  # data buffered past the end of the true log: fetch again
