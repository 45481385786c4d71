"""Offset commits and committed-offset fetches, I/O-free: OffsetCommit /
OffsetFetch bodies, the Java client's reading of their errors, retries.

Each commit or fetch is an operation (`CommitOp` / `FetchOp`) queued on the
machine; `next_requests(now)` sends the ones due (after the coordinator
lookup when it is unknown), `on_response` settles them. An operation is done
with `.error` None (and `.result` for a fetch) or the error to raise.

Retries (Java's rules): a synchronous commit or fetch (`retry=True`, with a
deadline) retries what is retriable — the coordinator moved or is loading,
a timeout — after retry_backoff_ms until its deadline (then
KafkaTimeoutError naming the last error); an asynchronous commit waits for
the coordinator and, when the coordinator moved under it (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, a lost connection), is sent again to the one
found next, until its deadline; any other error goes to its callback. A
coordinator outage thus delays commits and nothing else: fetching goes on,
and a commit carries what was handed out when it was asked for, so it can
land late but never ahead. The auto commit keeps one such operation and
refreshes its offsets while it waits (`refresh`). What the membership must react to goes
to the member machine through three hooks, whichever protocol it speaks:

- REBALANCE_IN_PROGRESS -> member.rebalance_needed(); RebalanceInProgressError
- UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION -> member.fenced(); CommitFailedError
- FENCED_INSTANCE_ID -> member.fatal(error) (raised from the next poll too)
- STALE_MEMBER_EPOCH (KIP-848) -> retried with the member's newer epoch

States of an operation: QUEUED -> IN_FLIGHT -> DONE, or IN_FLIGHT -> BACKOFF
-> QUEUED (a retry), or QUEUED/BACKOFF -> DONE (refused before sending,
deadline passed).
"""
import collections
import enum
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from fastkc.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    for_code,
)
from fastkc.group.coordinator_machine import (
    CoordinatorMachine,
    CoordinatorUnknownError,
    is_coordinator_error,
    is_retriable,
)
from fastkc.group.machine import DUE_NOW, earliest
from fastkc.request import COORDINATOR, Request, Token
from fastkc.state_machine import StateHolder
from fastkc.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

#: {tp: OffsetAndMetadata or None}: an OffsetFetch's result (None: nothing committed)
Committed = dict[TopicPartition, OffsetAndMetadata | None]
#: what a commit carries: {tp: OffsetAndMetadata}
Offsets = Mapping[TopicPartition, OffsetAndMetadata]
#: what commit() takes per partition: fastkc's OffsetAndMetadata, an offset, or an
#: (offset, metadata[, leader_epoch]) tuple (fastkc.aio's two-field OffsetAndMetadata is one)
CommitValue = OffsetAndMetadata | int | tuple[int, str] | tuple[int, str, int]


def normalise_offsets(offsets: Mapping[TopicPartition, object]) -> dict[TopicPartition, OffsetAndMetadata]:
    """commit()'s offsets, checked, as OffsetAndMetadata (both consumers): keys
    are TopicPartitions; a value is an OffsetAndMetadata, a non-negative int,
    or an (offset, metadata[, leader_epoch]) tuple. TypeError / ValueError
    name the bad entry."""
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError("commit offsets are keyed by TopicPartition, not {0!r}".format(tp))
        if isinstance(value, int) and not isinstance(value, bool):
            value = OffsetAndMetadata(value, "", -1)
        elif isinstance(value, tuple) and not isinstance(value, OffsetAndMetadata) and len(value) in (2, 3):
            value = OffsetAndMetadata(*value)
        if not isinstance(value, OffsetAndMetadata):
            raise TypeError("commit offsets must be OffsetAndMetadata, not {0!r}".format(value))
        if not isinstance(value.offset, int) or value.offset < 0:
            raise ValueError("commit offset for {0} must be a non-negative int".format(tp))
        out[tp] = value
    return out
#: an asynchronous commit's callback(offsets, the error or None), run by the sync member
CommitCallback = Callable[[Offsets, Exception | None], object]
#: the member identity a commit carries: (generation or member epoch, member id)
Identity = tuple[int, str]


class CommitMember(Protocol):
    """What the commit machine asks of the membership machine (classic or KIP-848)."""

    def commit_identity(self) -> Identity: ...

    def check_can_commit(self) -> None: ...

    def rebalance_needed(self, reason: str) -> None: ...

    def fenced(self, reason: str) -> None: ...

    def fatal(self, error: BaseException) -> None: ...


class OpState(enum.Enum):
    QUEUED = "queued"
    IN_FLIGHT = "in_flight"
    BACKOFF = "backoff"
    DONE = "done"


_O = OpState


class _Op(StateHolder[OpState]):
    _LEGAL = {
        _O.QUEUED: {_O.IN_FLIGHT, _O.DONE},
        _O.IN_FLIGHT: {_O.DONE, _O.BACKOFF},
        _O.BACKOFF: {_O.QUEUED, _O.DONE},
        _O.DONE: set(),
    }
    api = ""

    def __init__(self, deadline: float | None, retry: bool, callback: CommitCallback | None = None,
                 asynchronous: bool = False) -> None:
        self._init_state(_O.QUEUED)
        self.asynchronous = asynchronous  # settled through a CommitCompleted event
        self.deadline = deadline  # None: no deadline (sent once)
        self.retry = retry
        self.callback = callback
        self.error: BaseException | None = None
        self.result: Committed | None = None  # a fetch's
        self.last_error: KafkaError | None = None  # the last retriable failure
        self.retry_at: float | None = None
        self.token: Token | None = None
        self.identity: Identity | None = None  # the member identity the request carried

    @property
    def done(self) -> bool:
        return self.state is _O.DONE

    # --- its moves, made by CommitMachine (_finish: to DONE) ------------------------------
    def sent(self, token: Token) -> None:
        """QUEUED -> IN_FLIGHT: its request went out; the answer comes back under `token`."""
        self.token = token
        self._set_state(_O.IN_FLIGHT)

    def back_off(self, error: KafkaError, retry_at: float) -> None:
        """IN_FLIGHT -> BACKOFF: a retriable `error`; queued again at `retry_at`."""
        self.last_error = error
        self.retry_at = retry_at
        self._set_state(_O.BACKOFF)

    def requeue(self) -> None:
        """BACKOFF -> QUEUED: the backoff is over; sent by the next next_requests()."""
        self._set_state(_O.QUEUED)

    def _finish(self, error: BaseException | None = None, result: Committed | None = None) -> None:
        self.error, self.result = error, result
        self._set_state(_O.DONE)


class CommitOp(_Op):
    api = "OffsetCommit"
    _machine_name = "offset commit"

    def __init__(self, offsets: Offsets, deadline: float | None, retry: bool, callback: CommitCallback | None = None,
                 asynchronous: bool = False) -> None:
        super().__init__(deadline, retry, callback, asynchronous)
        self.offsets = offsets


class FetchOp(_Op):
    api = "OffsetFetch"
    _machine_name = "offset fetch"

    def __init__(self, partitions: list[TopicPartition], deadline: float | None, retry: bool) -> None:
        super().__init__(deadline, retry)
        self.partitions = partitions


#: an asynchronous commit settled (its callback runs on the application's thread)
class CommitCompleted(NamedTuple):
    op: CommitOp


class CommitMachine:
    """member: the membership machine (classic or KIP-848), for
    `commit_identity()` -> (generation or epoch, member id),
    `check_can_commit()` (raises before sending), `rebalance_needed(reason)`,
    `fenced(reason)`, `fatal(error)`."""

    def __init__(self, group_id: str, group_instance_id: str | None, coordinator: CoordinatorMachine,
                 member: CommitMember, retry_backoff_ms: float, request_timeout_ms: float) -> None:
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.coordinator = coordinator
        self.member = member
        self._backoff = retry_backoff_ms / 1000.0
        self._request_timeout_ms = request_timeout_ms
        self._ops: collections.deque[CommitOp | FetchOp] = collections.deque()  # in the order the application asked
        self._by_token: dict[Token, CommitOp | FetchOp] = {}
        self._events: collections.deque[CommitCompleted] = collections.deque()

    # --- the application asks ------------------------------------------------------------
    def commit(self, offsets: Offsets, now: float, *, deadline: float | None = None, retry: bool = False,
               callback: CommitCallback | None = None, asynchronous: bool = False) -> CommitOp:
        """offsets: {TopicPartition: OffsetAndMetadata}, non-empty.
        deadline bounds the coordinator lookup and (with retry) the retries;
        an asynchronous commit's outcome is a CommitCompleted event."""
        op = CommitOp(offsets, deadline, retry, callback, asynchronous)
        self._ops.append(op)
        return op

    def fetch(self, partitions: Iterable[TopicPartition], now: float, *, deadline: float | None = None,
              retry: bool = True) -> FetchOp:
        op = FetchOp(list(partitions), deadline, retry)
        self._ops.append(op)
        return op

    def refresh(self, op: CommitOp, offsets: Offsets, deadline: float | None) -> bool:
        """Give a commit that has not gone out yet (waiting for the
        coordinator, or backing off before a retry) newer offsets and a new
        deadline: the auto commit's one operation, kept through an outage.
        False when it is on the wire or settled (ask for a new one then)."""
        if op.state not in (_O.QUEUED, _O.BACKOFF):
            return False
        op.offsets = offsets
        op.deadline = deadline
        return True

    def cancel(self, op: CommitOp | FetchOp, error: BaseException | None) -> None:
        """The caller stopped waiting (wakeup): forget the operation; an
        answer still on its way is ignored."""
        if op.done:
            return
        if op.token is not None:
            self._by_token.pop(op.token, None)
        op._finish(error)
        self._forget(op)

    @property
    def busy(self) -> bool:
        return bool(self._ops)

    def take_events(self) -> list[CommitCompleted]:
        out = list(self._events)
        self._events.clear()
        return out

    # --- the driver's side ------------------------------------------------------------------
    def next_requests(self, now: float) -> list[Request[Token]]:
        requests: list[Request[Token]] = []
        for op in list(self._ops):
            if op.state is _O.BACKOFF and op.retry_at is not None and now >= op.retry_at:
                op.requeue()
            if op.state is not _O.QUEUED:
                continue
            if op.deadline is not None and now >= op.deadline:
                error: KafkaError
                if op.retry:
                    error = KafkaTimeoutError("{0} not done in time: {1}".format(
                        op.api, op.last_error or "the coordinator was not found"))
                else:  # sent once, never: the coordinator was not found
                    error = CoordinatorUnknownError("group coordinator for {0!r} not found in time".format(
                        self.group_id))
                self._settle(op, error)
                continue
            if not self.coordinator.known:
                continue
            try:
                body = self._body(op)
            except KafkaError as exc:  # refused before sending (no generation, a rebalance)
                self._settle(op, exc)
                continue
            token = Token(op.api)
            self._by_token[token] = op
            op.sent(token)
            timeout = self._request_timeout_ms if op.deadline is None else \
                max(1.0, min(self._request_timeout_ms, (op.deadline - now) * 1000.0))
            requests.append(Request(COORDINATOR, op.api, body, timeout, token))
        if any(op.state is _O.QUEUED for op in self._ops) and not self.coordinator.known:
            requests.extend(self.coordinator.next_requests(now))
        return requests

    def next_deadline(self) -> float | None:
        deadlines = [op.retry_at for op in self._ops if op.state is _O.BACKOFF]
        deadlines += [op.deadline for op in self._ops if op.deadline is not None and op.state is not _O.IN_FLIGHT]
        if any(op.state is _O.QUEUED for op in self._ops):
            deadlines.append(self.coordinator.after_lookup(DUE_NOW))  # sent once the coordinator is known
        return earliest(*deadlines)

    def owns(self, token: Token | None) -> bool:
        return token in self._by_token or self.coordinator.owns(token)

    def on_response(self, token: Token, response: Any, now: float) -> None:
        if self.coordinator.owns(token):
            try:
                self.coordinator.on_response(token, response, now)
            except KafkaError as exc:  # no retry finds this coordinator: every waiting op fails
                for waiting in list(self._ops):
                    if waiting.state is _O.QUEUED:
                        self._settle(waiting, exc)
            return
        op = self._by_token.pop(token, None)
        if op is None or op.state is not _O.IN_FLIGHT:
            return
        op.token = None
        try:
            if isinstance(response, BaseException):
                if is_coordinator_error(response):
                    self.coordinator.lost(now)
                raise response
            if isinstance(op, CommitOp):
                assert op.identity is not None  # _body() set it before the request went out
                self._read_commit(response, op.identity)
                result = None
            else:
                result = self._read_fetch(response, op.partitions)
        except KafkaError as exc:
            # an asynchronous commit is retried only where the coordinator moved:
            # the one found next is asked (Java's RetriableCommitFailedException
            # would leave that to the application)
            again = op.retry or (op.asynchronous and is_coordinator_error(exc))
            if again and is_retriable(exc) and (op.deadline is None or now < op.deadline):
                retry_at = now + self._backoff
                op.back_off(exc, retry_at if op.deadline is None else min(retry_at, op.deadline))
                return
            if op.retry and is_retriable(exc):
                exc = KafkaTimeoutError("{0} not done in time: {1}".format(op.api, exc))
            self._settle(op, exc)
            return
        except Exception as exc:  # a malformed answer: the operation fails, the machine goes on
            self._settle(op, exc)
            return
        self._settle(op, None, result)

    def _settle(self, op: CommitOp | FetchOp, error: BaseException | None, result: Committed | None = None) -> None:
        op._finish(error, result)
        self._forget(op)
        if op.asynchronous and isinstance(op, CommitOp):  # only commits are asynchronous
            self._events.append(CommitCompleted(op))

    def _forget(self, op: CommitOp | FetchOp) -> None:
        try:
            self._ops.remove(op)
        except ValueError:
            pass

    # --- bodies -------------------------------------------------------------------------
    def _body(self, op: CommitOp | FetchOp) -> dict[str, Any]:
        if isinstance(op, CommitOp):
            self.member.check_can_commit()
            op.identity = self.member.commit_identity()
            return self.commit_body(op.offsets, op.identity)
        return self.fetch_body(op.partitions)

    def commit_body(self, offsets: Offsets, identity: Identity) -> dict[str, Any]:
        generation, member_id = identity
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in offsets.items():
            epoch = om.leader_epoch if om.leader_epoch is not None else -1
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": om.offset,
                "committed_leader_epoch": epoch, "committed_metadata": om.metadata or "",
            })
        return {
            "group_id": self.group_id, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": self.group_instance_id, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": parts} for t, parts in sorted(by_topic.items())],
        }

    def fetch_body(self, partitions: Iterable[TopicPartition]) -> dict[str, Any]:
        """require_stable: offsets with pending transactional commits are waited for."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": sorted(p)} for t, p in sorted(by_topic.items())]
        return {"group_id": self.group_id, "topics": topics, "require_stable": True,
                "groups": [{"group_id": self.group_id, "member_id": None, "member_epoch": -1, "topics": topics}]}

    # --- answers --------------------------------------------------------------------------
    def _read_commit(self, response: Any, identity: Identity) -> None:
        first_error = None
        for topic in response["topics"]:
            for part in topic["partitions"]:
                if part["error_code"] and first_error is None:
                    first_error = part["error_code"]
        if first_error:
            raise self.commit_error(first_error, identity)

    def commit_error(self, code: int, identity: Identity) -> KafkaError:
        """The Java client's reading of an OffsetCommit error (and its
        effect on the membership)."""
        cls = for_code(code)
        if is_coordinator_error(cls("")):
            self.coordinator.lost()
            return cls("offset commit")
        if cls is RebalanceInProgressError:
            self.member.rebalance_needed("commit answered REBALANCE_IN_PROGRESS")
            return RebalanceInProgressError(
                "the group is rebalancing; the commit can be retried after the rebalance completes (poll)")
        if cls in (UnknownMemberIdError, IllegalGenerationError):
            self.member.fenced("commit answered {0}".format(cls.__name__))
            return CommitFailedError(
                "Commit cannot be completed since the group has already rebalanced and assigned the partitions "
                "to another member (generation/member {0} is no longer current). The time between poll() calls "
                "may be longer than max_poll_interval_ms, or poll() spends too long processing records.".format(
                    identity))
        if cls is StaleMemberEpochError:
            # KIP-848: our epoch is behind the member's; a retry uses the newer one
            return StaleMemberEpochError("offset commit with a stale member epoch {0}".format(identity[0]))
        if cls is FencedInstanceIdError:
            error = cls("another consumer with group_instance_id {0!r} joined".format(self.group_instance_id))
            self.member.fatal(error)
            return error
        return cls("offset commit")

    def _read_fetch(self, response: Any, partitions: Iterable[TopicPartition]) -> Committed:
        if response.get("groups"):
            group = response["groups"][0]
            top_error, topics = group["error_code"], group["topics"]
        else:
            top_error, topics = response.get("error_code", 0), response["topics"]
        if top_error:
            cls = for_code(top_error)
            if is_coordinator_error(cls("")):
                self.coordinator.lost()
            raise cls("offset fetch for group {0}".format(self.group_id))
        out: Committed = {tp: None for tp in partitions}
        for topic in topics:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], part["partition_index"])
                if part["error_code"]:
                    raise for_code(part["error_code"])("offset fetch for {0}".format(tp))
                if part["committed_offset"] >= 0:
                    out[tp] = OffsetAndMetadata(part["committed_offset"], part["metadata"] or "",
                                                part["committed_leader_epoch"])
        return out
