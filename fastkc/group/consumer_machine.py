"""The KIP-848 group member (group_protocol="consumer") as an I/O-free state
machine (see machine.py for the driving loop): one ConsumerGroupHeartbeat
carries the subscription, the owned partitions and the epoch; the broker
runs the assignor (group_remote_assignor: uniform, range) and answers with
this member's target assignment, which never contains a partition another
member still owns.

States (`ConsumerState`, Java's MemberState names; `_LEGAL` lists every
allowed transition):
- UNSUBSCRIBED: no subscription, or the member left.
- JOINING: the epoch-0 heartbeat is due or on the wire -> STABLE (or
  RECONCILING when it brought partitions).
- RECONCILING: a target assignment differs from what the application owns;
  it waits as a `Reconcile` event for the application's poll, which revokes
  first (commit, on_partitions_revoked), then assigns (committed offsets,
  on_partitions_assigned) — revoke before assign.
- ACKNOWLEDGING: reconciled; the heartbeat reporting the new owned set goes
  out at once (what we release is acknowledged before the broker hands it
  to someone else) -> STABLE when it is answered.
- STABLE: heartbeats every heartbeat_interval_ms (the broker's value).
- FENCED: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH, or left after
  max_poll_interval_ms: the application hands its partitions to
  on_partitions_lost (`PartitionsLost`), then we rejoin with epoch 0 and the
  same member id (KIP-1082: the client makes it).
- LEAVING: the heartbeat with epoch -1 (dynamic) / -2 (static) on the wire.
- CLOSED.

Topic ids: heartbeats name topics by id. The machine learns ids and names
from "Metadata" answers (the driver's cluster view) and asks for them when
an owned topic's id or a target's topic name is unknown (Java waits for
metadata the same way).

Java's FATAL state is not modelled: a heartbeat error no retry fixes is
raised from `on_response` (the application sees it from poll) and the
member keeps its state, as fastkc's member did before the machines.
"""
import enum
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from fastkc.config import Config
from fastkc.errors import (
    CommitFailedError,
    FencedMemberEpochError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    for_code,
)
from fastkc.group.coordinator_machine import CoordinatorMachine, is_coordinator_error, is_retriable
from fastkc.group.machine import DUE_NOW, earliest
from fastkc.protocol.consumer_protocol import heartbeat_topic_partitions, resolve_heartbeat_assignment
from fastkc.request import ANY_NODE, COORDINATOR, Request, Token
from fastkc.state_machine import StateHolder
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import ClusterMetadata

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1  # a dynamic member leaving
LEAVE_STATIC_EPOCH = -2  # a static member leaving temporarily (keeps its assignment for session_timeout)
# After our epoch changes, the partitions still owned by others reach us only
# in a heartbeat answer: for two broker intervals we ask every 200 ms instead
# of waiting a whole interval (a handful of extra heartbeats per rebalance;
# this is what keeps a join under a second with the broker's 1 s interval).
FAST_FOLLOW_UP_S = 0.2


class ConsumerState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    LEAVING = "leaving"
    CLOSED = "closed"


_S = ConsumerState
_LEGAL = {
    _S.UNSUBSCRIBED: {_S.JOINING, _S.CLOSED},
    _S.JOINING: {_S.STABLE, _S.RECONCILING, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.RECONCILING: {_S.ACKNOWLEDGING, _S.STABLE, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.ACKNOWLEDGING: {_S.STABLE, _S.RECONCILING, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.STABLE: {_S.RECONCILING, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.FENCED: {_S.JOINING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.LEAVING: {_S.UNSUBSCRIBED, _S.FENCED, _S.CLOSED},
    _S.CLOSED: set(),
}
_MEMBER = (_S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING)
# ACKNOWLEDGING reads "<stable>": the partitions are the application's already
# (fastkc's member said STABLE there before the machines had this state)
KAFKA_PYTHON_STATE = {_S.UNSUBSCRIBED: "<unjoined>", _S.JOINING: "<rebalancing>", _S.RECONCILING: "<rebalancing>",
                      _S.ACKNOWLEDGING: "<stable>", _S.STABLE: "<stable>", _S.FENCED: "<unjoined>",
                      _S.LEAVING: "<unjoined>", _S.CLOSED: "<unjoined>"}

#: events for the application's thread
class PartitionsLost(NamedTuple):
    partitions: list[TopicPartition]


class Reconcile(NamedTuple):
    target: set[TopicPartition]


#: what take_events() hands the application
Event = PartitionsLost | Reconcile


class ConsumerMachine(StateHolder[ConsumerState]):
    _LEGAL = _LEGAL
    _machine_name = "KIP-848 member"

    def __init__(self, config: Config, coordinator: CoordinatorMachine, now: float, member_id: str | None = None,
                 ) -> None:
        self._init_state(_S.UNSUBSCRIBED)
        self.config = config
        self.coordinator = coordinator
        self.group_id = config["group_id"]
        self.group_instance_id = config["group_instance_id"]
        self._backoff = config["retry_backoff_ms"] / 1000.0
        # KIP-1082: the client makes its member id, kept across rejoins
        self.member_id = member_id or str(uuid.uuid4())
        self.member_epoch = 0
        self.subscription: list[str] | None = None
        self.pattern: str | None = None  # a regex the broker matches (heartbeat v1)
        self.owned: list[TopicPartition] = []
        self.heartbeat_version = 0  # the coordinator's ConsumerGroupHeartbeat version (the driver keeps it current)
        self.interval = config["heartbeat_interval_ms"] / 1000.0
        self.next_heartbeat = 0.0
        self.heartbeat_now = True
        # the last assignment the broker sent, by topic id (None: unchanged)
        self.target_ids: list[dict[str, Any]] | None = None
        self.pending: set[TopicPartition] | None = None  # the resolved target waiting for the application
        self.applying = False
        self.fast_until = 0.0
        self.last_poll = now
        self.poll_timeout_expired = False
        self.topic_ids: dict[str, bytes] = {}  # name -> id
        self.topic_names: dict[bytes, str] = {}  # id -> name
        self.fatal_error: BaseException | None = None
        # topics (ALL_TOPICS: all) to look up before the next heartbeat; None: none
        self._metadata_due: list[str] | str | None = None
        self._metadata_retry_at: float | None = None
        self._token: Token | None = None
        self._sent_epoch: int | None = None
        self._fenced_after_leave = False

    # --- what the application (through the driver) tells the machine ------------------------
    def set_subscription(self, topics: Iterable[str] | None) -> bool:
        wanted = None if topics is None else sorted(set(topics))
        if wanted == self.subscription:
            return False
        self.subscription = wanted
        self.heartbeat_now = True
        if wanted is not None and self.state is _S.UNSUBSCRIBED:
            self._join()
        return True

    def set_pattern(self, pattern: str | None) -> None:
        self.pattern = pattern
        self.heartbeat_now = True

    def app_polled(self, now: float) -> None:
        self.last_poll = now
        self.poll_timeout_expired = False

    def rebalance_needed(self, reason: str) -> None:
        self.heartbeat_now = True

    def fenced(self, reason: str) -> None:
        log.info("group %s: member %s epoch %s fenced (%s)", self.group_id, self.member_id, self.member_epoch, reason)
        self.member_epoch = 0
        self.pending = None
        self.target_ids = None
        self._token = None
        if self.state not in (_S.FENCED, _S.CLOSED, _S.UNSUBSCRIBED):
            self._set_state(_S.FENCED)

    def fatal(self, error: BaseException) -> None:
        self.fatal_error = error

    def metadata_changed(self, partition_counts: Mapping[str, int]) -> bool:
        """Partition counts are the broker's to watch under KIP-848."""
        return False

    def learn_topics(self, cluster: "ClusterMetadata") -> None:
        """Topic ids and names from a cluster view (the driver's metadata)."""
        for name, meta in cluster.topics.items():
            topic_id: bytes | None = getattr(meta, "topic_id", None)  # a test's view may have none
            if topic_id:
                self.topic_ids[name] = topic_id
                self.topic_names[topic_id] = name
        self.topic_names.update(getattr(cluster, "topic_names_by_id", None) or {})

    def close(self) -> None:
        if self.state is not _S.CLOSED:
            self._set_state(_S.CLOSED)
        self._token = None

    def _join(self) -> None:
        self.member_epoch = 0
        self.heartbeat_now = True
        self._set_state(_S.JOINING)

    # --- commits ------------------------------------------------------------------------------
    def commit_identity(self) -> tuple[int, str]:
        return self.member_epoch, self.member_id

    def check_can_commit(self) -> None:
        if self.subscription is None or self.member_epoch > 0:
            return
        if self.state is _S.JOINING:
            raise RebalanceInProgressError("joining the group; commit once partitions are assigned (poll)")
        raise CommitFailedError("Commit cannot be completed since this member is not part of the group "
                                "(it left after max_poll_interval_ms without poll(), or was fenced)")

    # --- the application's side ----------------------------------------------------------------
    def take_events(self) -> list[Event]:
        if self.state is _S.FENCED:
            return [PartitionsLost(list(self.owned))]
        if self.state is _S.RECONCILING and self.pending is not None and not self.applying:
            self.applying = True
            return [Reconcile(self.pending)]
        return []

    def app_done(self, events: Iterable[object]) -> None:
        # any iterable of events: the ones this machine did not emit are ignored
        for event in events:
            if isinstance(event, PartitionsLost):
                if self.state is _S.FENCED and self.subscription is not None:
                    self._join()
                elif self.state is _S.FENCED:
                    self._set_state(_S.UNSUBSCRIBED)
            elif isinstance(event, Reconcile):
                self.applying = False
                if self.state is _S.RECONCILING and self.pending is event.target:
                    self.pending = None
                    self._set_state(_S.ACKNOWLEDGING)
                self.heartbeat_now = True  # acknowledge at once

    # --- leaving -------------------------------------------------------------------------------
    def leave(self, reason: str, now: float, fenced_after: bool = False) -> None:
        """A heartbeat with epoch -1 (-2 for a static member) goes out with
        the next requests when the member holds an epoch and the coordinator
        is known; else the membership is forgotten at once."""
        if self.state is _S.CLOSED:
            return
        self._fenced_after_leave = fenced_after
        if self.coordinator.known and self.member_epoch > 0 and self.state not in (_S.LEAVING, _S.FENCED):
            log.debug("group %s: leaving (%s)", self.group_id, reason)
            self._token = None
            self._set_state(_S.LEAVING)
            return
        self._left()

    def _left(self) -> None:
        self.member_epoch = 0
        self.pending = None
        self.target_ids = None
        self._token = None
        fenced, self._fenced_after_leave = self._fenced_after_leave, False
        if fenced and self.state not in (_S.FENCED, _S.UNSUBSCRIBED, _S.CLOSED):
            self._set_state(_S.FENCED)  # the application must drop its partitions as lost
        elif self.state not in (_S.UNSUBSCRIBED, _S.FENCED, _S.CLOSED):
            self._set_state(_S.UNSUBSCRIBED)

    # --- requests --------------------------------------------------------------------------------
    @property
    def follow_up_now(self) -> bool:
        """Metadata the heartbeat or the target waits for: asked at once."""
        return self._token is None and self._metadata_due is not None

    def next_requests(self, now: float) -> list[Request[Token]]:
        if self._token is not None or self.state is _S.CLOSED:
            return []
        if self.state is _S.LEAVING:
            # what we own goes with us; a topic whose id we never learned cannot be named (nor block leaving)
            body = self._heartbeat_body([tp for tp in self.owned if tp.topic in self.topic_ids])
            body["member_epoch"] = LEAVE_STATIC_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
            return self._send("ConsumerGroupHeartbeat", COORDINATOR, body,
                              min(self.config["request_timeout_ms"], 5000))
        if self._metadata_due is not None:
            topics = None if self._metadata_due is ALL_TOPICS else self._metadata_due
            return self._send("Metadata", ANY_NODE, {"topics": topics}, self.config["request_timeout_ms"])
        if self.subscription is None or self.poll_timeout_expired:
            return []
        if self.state in _MEMBER and now - self.last_poll > self.config["max_poll_interval_ms"] / 1000.0:
            log.warning("group %s: no poll() for more than max_poll_interval_ms; leaving the group", self.group_id)
            self.poll_timeout_expired = True
            self.leave("consumer poll timeout has expired", now, fenced_after=True)
            return self.next_requests(now) if self._leaving() else []
        if self.state in (_S.FENCED, _S.UNSUBSCRIBED):
            return []  # the application hands its partitions to on_partitions_lost first
        if self.target_ids is not None and not self.applying:
            if self._resolve_target(now):
                return self.next_requests(now)
        if not (self.heartbeat_now or now >= self.next_heartbeat):
            return []
        if not self.coordinator.known:
            return self.coordinator.next_requests(now)
        owned_topics = sorted({tp.topic for tp in self.owned} - set(self.topic_ids))
        if owned_topics:  # owned partitions are reported by topic id: learn the ids first
            if self._metadata_allowed(now):
                self._metadata_due = owned_topics
                return self.next_requests(now)
            assert self._metadata_retry_at is not None  # _metadata_allowed said no: a retry time is set
            self.next_heartbeat = max(self.next_heartbeat, self._metadata_retry_at)
            return []
        self.heartbeat_now = False
        self._sent_epoch = self.member_epoch
        return self._send("ConsumerGroupHeartbeat", COORDINATOR, self._heartbeat_body(),
                          self.config["request_timeout_ms"])

    def next_deadline(self) -> float | None:
        """When next_requests has something to do (DUE_NOW: at once); None
        when only an answer or the application moves the member."""
        if self._token is not None or self.state is _S.CLOSED:
            return None
        if self.state is _S.LEAVING or self._metadata_due is not None:
            return DUE_NOW
        if self.subscription is None or self.poll_timeout_expired or self.state in (_S.FENCED, _S.UNSUBSCRIBED):
            return None
        deadlines: list[float | None] = []
        if self.state in _MEMBER:
            deadlines.append(self.last_poll + self.config["max_poll_interval_ms"] / 1000.0)
        if self.target_ids is not None and not self.applying:
            deadlines.append(DUE_NOW if self._metadata_allowed_at() is None else self._metadata_allowed_at())
        heartbeat = DUE_NOW if self.heartbeat_now else self.next_heartbeat
        ids_allowed_at = self._metadata_allowed_at()
        if {tp.topic for tp in self.owned} - set(self.topic_ids) and ids_allowed_at is not None:
            heartbeat = max(heartbeat, ids_allowed_at)  # the ids are looked up first
        deadlines.append(self.coordinator.after_lookup(heartbeat))
        return earliest(*deadlines)

    def _leaving(self) -> bool:
        # a method, not `self.state is _S.LEAVING` inline: the type checker
        # keeps the state it narrowed before leave() moved it
        return self.state is _S.LEAVING

    def _metadata_allowed_at(self) -> float | None:
        return self._metadata_retry_at

    def _metadata_allowed(self, now: float) -> bool:
        return self._metadata_retry_at is None or now >= self._metadata_retry_at

    def _send(self, api: str, target: str, body: dict[str, Any], timeout_ms: float) -> list[Request[Token]]:
        self._token = Token(api)
        return [Request(target, api, body, timeout_ms, self._token)]

    def _heartbeat_body(self, owned: list[TopicPartition] | None = None) -> dict[str, Any]:
        reported = self.owned if owned is None else owned
        ids = {tp.topic: self.topic_ids[tp.topic] for tp in reported if tp.topic in self.topic_ids}
        body: dict[str, Any] = {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch,
            "instance_id": self.group_instance_id, "rack_id": self.config["client_rack"] or None,
            "rebalance_timeout_ms": self.config["max_poll_interval_ms"],
            "subscribed_topic_names": list(self.subscription or ()), "subscribed_topic_regex": None,
            "server_assignor": self.config["group_remote_assignor"],
            "topic_partitions": heartbeat_topic_partitions(reported, ids),
        }
        if self.pattern is not None and self.heartbeat_version >= 1:
            # KIP-848 v1: the broker matches the regex (RE2/J syntax; the
            # common subset with Python's re) against every topic itself
            body["subscribed_topic_regex"] = self.pattern
            body["subscribed_topic_names"] = None
        return body

    def _resolve_target(self, now: float) -> bool:
        """Names for the target's topic ids; True when a metadata lookup
        must come first (unknown ids wait for metadata, as Java waits)."""
        target, unresolved = resolve_heartbeat_assignment(self.target_ids, self.topic_names)
        if unresolved:
            if self._metadata_allowed(now):
                # with a regex the broker matched, our metadata may not know those topics yet
                self._metadata_due = ALL_TOPICS if self.pattern is not None else sorted(set(self.subscription or ()))
                return True
            log.debug("group %s: assignment names unknown topic ids %s; waiting for metadata", self.group_id,
                      unresolved)
            self.next_heartbeat = min(self.next_heartbeat, now + self._backoff)
            return False
        self.target_ids = None
        if target != set(self.owned):
            # a newer target replaces one the application has not started on
            self.pending = target
            if self.state is not _S.RECONCILING:
                self._set_state(_S.RECONCILING)
        elif self.state is _S.RECONCILING:
            self.pending = None
            self._set_state(_S.STABLE)
        return False

    # --- answers -------------------------------------------------------------------------------
    def owns(self, token: Token | None) -> bool:
        return token is not None and token is self._token

    def on_response(self, token: Token, response: Any, now: float) -> None:
        if self.coordinator.owns(token):
            self.coordinator.on_response(token, response, now)
            return
        if token is None or token is not self._token:
            return
        self._token = None
        if token.what == "Metadata":
            self._on_metadata(response, now)
        elif self.state is _S.LEAVING:
            if isinstance(response, BaseException):
                log.info("leaving the group failed: %s", response)
            elif response["error_code"]:
                log.info("leaving: %s", for_code(response["error_code"]).__name__)
            self._left()
        elif isinstance(response, BaseException):
            if is_coordinator_error(response):
                self.coordinator.lost(now)
            self.next_heartbeat = now + self._backoff
            if not is_retriable(response):
                raise response
        else:
            self._on_heartbeat_response(response, now)

    def _on_metadata(self, cluster: "ClusterMetadata | BaseException", now: float) -> None:
        self._metadata_due = None
        self._metadata_retry_at = now + self._backoff  # unresolved ids: at most one lookup per backoff
        if isinstance(cluster, BaseException):
            if not is_retriable(cluster):
                raise cluster
            log.debug("group %s: metadata for the assignment failed: %s", self.group_id, cluster)
            return
        self.learn_topics(cluster)
        if self.target_ids is not None and not self.applying:
            self._resolve_target(now)

    def _on_heartbeat_response(self, response: Any, now: float) -> None:
        code = response["error_code"]
        if code:
            cls = for_code(code)
            self.next_heartbeat = now + self._backoff
            if cls in (UnknownMemberIdError, FencedMemberEpochError):
                self.fenced("heartbeat answered {0}".format(cls.__name__))
                return
            if is_coordinator_error(cls("")):
                self.coordinator.lost(now)
                return
            if cls is UnreleasedInstanceIdError or getattr(cls, "retriable", False):
                return
            raise cls("ConsumerGroupHeartbeat: {0}".format(response.get("error_message") or ""))
        if response["member_id"]:
            self.member_id = response["member_id"]
        if response["member_epoch"] != self.member_epoch:
            # the group is moving: partitions other members are releasing for
            # us only arrive with a heartbeat, so follow up quickly for a while
            self.fast_until = now + 2 * self.interval
        self.member_epoch = response["member_epoch"]
        if response["heartbeat_interval_ms"] > 0:
            self.interval = response["heartbeat_interval_ms"] / 1000.0
        interval = self.interval
        if now < self.fast_until:
            interval = min(interval, FAST_FOLLOW_UP_S)
        self.next_heartbeat = now + interval
        if self.state in (_S.JOINING, _S.ACKNOWLEDGING):
            self._set_state(_S.STABLE)
        assignment = response["assignment"]
        if assignment is not None:
            self.target_ids = assignment["topic_partitions"]
            self._metadata_retry_at = None
            if not self.applying:
                self._resolve_target(now)


#: a Metadata request for every topic (a regex subscription's matches)
ALL_TOPICS = "*"
