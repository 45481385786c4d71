"""A share group member (KIP-932): ShareGroupHeartbeat as an I/O-free state
machine (see fastkc/group/machine.py for the driving loop, fastkc/request.py
for Request).

The broker assigns partitions to share group members by itself; unlike a
consumer group, a partition may be assigned to several members at once and
nothing is revoked before it moves (records, not partitions, are what a
member holds). So the member reports no owned partitions, and an assignment
applies as soon as its topic ids have names.

States (`ShareMemberState`; `_LEGAL` lists every allowed move):
- UNSUBSCRIBED: no subscription, or the member left.
- JOINING: the epoch-0 heartbeat is due or on the wire.
- RECONCILING: the broker's assignment names topic ids this member cannot
  name yet: a Metadata request comes first (Java waits for metadata too).
- STABLE: heartbeats every heartbeat_interval_ms (the broker's value).
- FENCED: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: the broker dropped the
  member and released what it had acquired; the assignment is dropped and
  the member joins again with epoch 0 and the same member id.
- LEAVING: the heartbeat with epoch -1 on the wire.
- CLOSED.

The member id is the client's (KIP-1082: a UUID string made once, kept
across rejoins); ShareFetch and ShareAcknowledge carry the same id.
Errors no retry fixes (authorization, an unsupported version, a full group)
are raised from `on_response` and the member keeps its state.
"""
from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from fastkc.errors import (
    FencedMemberEpochError,
    KafkaError,
    UnknownMemberIdError,
    for_code,
)
from fastkc.group.coordinator_machine import CoordinatorMachine, is_coordinator_error, is_retriable
from fastkc.group.machine import DUE_NOW, earliest
from fastkc.protocol.consumer_protocol import resolve_heartbeat_assignment
from fastkc.request import ANY_NODE, COORDINATOR, Request, Token
from fastkc.state_machine import StateHolder
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1


class ShareMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    STABLE = "stable"
    FENCED = "fenced"
    LEAVING = "leaving"
    CLOSED = "closed"


_S = ShareMemberState
_LEGAL = {
    _S.UNSUBSCRIBED: {_S.JOINING, _S.CLOSED},
    _S.JOINING: {_S.STABLE, _S.RECONCILING, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.RECONCILING: {_S.STABLE, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.STABLE: {_S.RECONCILING, _S.FENCED, _S.LEAVING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.FENCED: {_S.JOINING, _S.UNSUBSCRIBED, _S.CLOSED},
    _S.LEAVING: {_S.UNSUBSCRIBED, _S.CLOSED},
    _S.CLOSED: set(),
}
_IN_GROUP = (_S.STABLE, _S.RECONCILING)


class ShareMemberMachine(StateHolder[ShareMemberState]):
    _LEGAL = _LEGAL
    _machine_name = "share group member"

    def __init__(self, group_id: str, coordinator: CoordinatorMachine, *, heartbeat_interval_ms: int = 5000,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30000, rack_id: str | None = None,
                 member_id: str | None = None) -> None:
        self._init_state(_S.UNSUBSCRIBED)
        self.group_id = group_id
        self.coordinator = coordinator
        self.member_id = member_id or str(uuid.uuid4())
        self.member_epoch = 0
        self.rack_id = rack_id
        self.subscription: list[str] | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        #: bumped whenever `assignment` changes (the driver hands the new one to the fetch machine)
        self.assignment_version = 0
        self.interval = heartbeat_interval_ms / 1000.0
        self._backoff = retry_backoff_ms / 1000.0
        self._request_timeout_ms = request_timeout_ms
        self.next_heartbeat = 0.0
        self.heartbeat_now = False
        self.topic_names: dict[bytes, str] = {}
        self._target_ids: list[Mapping[str, Any]] | None = None  # an assignment waiting for topic names
        self._metadata_due = False
        self._metadata_retry_at: float | None = None
        self._token: Token | None = None
        self.fenced_count = 0

    # --- what the application tells the member ----------------------------------------------------
    def set_subscription(self, topics: list[str] | None) -> None:
        topics = None if topics is None else sorted(set(topics))
        if topics == self.subscription:
            return
        self.subscription = topics
        self.heartbeat_now = True
        if topics is not None and self.state is _S.UNSUBSCRIBED:
            self._join()

    def learn_topics(self, topic_names_by_id: Mapping[bytes, str]) -> None:
        self.topic_names.update(topic_names_by_id)

    def leave(self) -> None:
        """The epoch -1 heartbeat goes out next when the member holds an
        epoch and the coordinator is known; else it is forgotten at once."""
        if self.state in (_S.CLOSED, _S.LEAVING):
            return
        if self.member_epoch > 0 and self.coordinator.known and self.state in _IN_GROUP + (_S.JOINING,):
            self._token = None
            self._set_state(_S.LEAVING)
            return
        self._left()

    def close(self) -> None:
        if self.state is not _S.CLOSED:
            self._set_state(_S.CLOSED)
        self._token = None

    @property
    def leaving(self) -> bool:
        return self.state is _S.LEAVING

    # --- requests ----------------------------------------------------------------------------------
    def next_requests(self, now: float) -> list[Request[Token]]:
        if self._token is not None or self.state in (_S.CLOSED, _S.UNSUBSCRIBED):
            return []
        if self.state is _S.FENCED:
            self._join()
        if self.state is not _S.LEAVING and self._metadata_due and self._metadata_allowed(now):
            self._metadata_due = False
            return self._send("Metadata", ANY_NODE, {"topics": None}, self._request_timeout_ms)
        if self.state is not _S.LEAVING and not (self.heartbeat_now or now >= self.next_heartbeat):
            return []
        if not self.coordinator.known:
            return list(self.coordinator.next_requests(now))
        self.heartbeat_now = False
        body = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch,
                "rack_id": self.rack_id, "subscribed_topic_names": list(self.subscription or ())}
        if self.state is _S.LEAVING:
            body["member_epoch"] = LEAVE_EPOCH
            body["subscribed_topic_names"] = None
        return self._send("ShareGroupHeartbeat", COORDINATOR, body, self._request_timeout_ms)

    def next_deadline(self) -> float | None:
        if self._token is not None or self.state in (_S.CLOSED, _S.UNSUBSCRIBED):
            return None
        if self.state in (_S.LEAVING, _S.FENCED):
            return DUE_NOW
        due: float = DUE_NOW if self.heartbeat_now else self.next_heartbeat
        metadata = None
        if self._metadata_due:
            metadata = self._metadata_retry_at if self._metadata_retry_at is not None else DUE_NOW
        result: float | None = earliest(self.coordinator.after_lookup(due), metadata)
        return result

    def _send(self, api: str, target: str, body: dict[str, Any], timeout_ms: int) -> list[Request[Token]]:
        self._token = Token(api)
        return [Request(target, api, body, timeout_ms, self._token)]

    def _metadata_allowed(self, now: float) -> bool:
        return self._metadata_retry_at is None or now >= self._metadata_retry_at

    # --- answers -----------------------------------------------------------------------------------
    def owns(self, token: object) -> bool:
        return isinstance(token, Token) and (token is self._token or bool(self.coordinator.owns(token)))

    def on_response(self, token: object, response: Any, now: float) -> None:
        if not isinstance(token, Token):
            return
        if self.coordinator.owns(token):
            self.coordinator.on_response(token, response, now)
            return
        if token is not self._token:
            return  # an answer that lost a race with a state change
        self._token = None
        if token.what == "Metadata":
            self._on_metadata(response, now)
        elif self.state is _S.LEAVING:
            if isinstance(response, BaseException):
                log.info("share group %s: leaving failed: %s", self.group_id, response)
            elif response["error_code"]:
                log.info("share group %s: leaving: %s", self.group_id, for_code(response["error_code"]).__name__)
            self._left()
        elif isinstance(response, BaseException):
            if is_coordinator_error(response):
                self.coordinator.lost(now)
            self.next_heartbeat = now + self._backoff
            if not is_retriable(response):
                raise response
        else:
            self._on_heartbeat(response, now)

    def _on_metadata(self, cluster: Any, now: float) -> None:
        self._metadata_retry_at = now + self._backoff
        if isinstance(cluster, BaseException):
            self._metadata_due = True
            if not is_retriable(cluster):
                raise cluster
            return
        self.learn_topics(getattr(cluster, "topic_names_by_id", None) or {})
        self._resolve(now)

    def _on_heartbeat(self, response: Mapping[str, Any], now: float) -> None:
        code = response["error_code"]
        if code:
            cls = for_code(code)
            self.next_heartbeat = now + self._backoff
            if cls in (UnknownMemberIdError, FencedMemberEpochError):
                self.fenced("heartbeat answered {0}".format(cls.__name__))
                return
            error: KafkaError = cls("ShareGroupHeartbeat: {0}".format(response.get("error_message") or ""))
            if is_coordinator_error(error):
                self.coordinator.lost(now)
                return
            if getattr(cls, "retriable", False):
                return
            raise error
        if response.get("member_id"):
            self.member_id = response["member_id"]
        self.member_epoch = response["member_epoch"]
        if response["heartbeat_interval_ms"] > 0:
            self.interval = response["heartbeat_interval_ms"] / 1000.0
        self.next_heartbeat = now + self.interval
        if self.state is _S.JOINING:
            self._set_state(_S.STABLE)
        if response["assignment"] is not None:
            self._target_ids = list(response["assignment"]["topic_partitions"])
            self._metadata_retry_at = None
            self._resolve(now)

    def _resolve(self, now: float) -> None:
        if self._target_ids is None or self.state not in _IN_GROUP:
            return
        target, unresolved = resolve_heartbeat_assignment(self._target_ids, self.topic_names)
        if unresolved:
            log.debug("share group %s: assignment names unknown topic ids %s; asking metadata", self.group_id,
                      unresolved)
            self._metadata_due = True
            if self.state is _S.STABLE:
                self._set_state(_S.RECONCILING)
            return
        self._target_ids = None
        self._metadata_due = False
        self._set_assignment(frozenset(target))
        if self.state is _S.RECONCILING:
            self._set_state(_S.STABLE)

    def _set_assignment(self, assignment: frozenset[TopicPartition]) -> None:
        if assignment != self.assignment:
            log.info("share group %s: member %s assigned %s", self.group_id, self.member_id, sorted(assignment))
            self.assignment = assignment
            self.assignment_version += 1

    # --- fencing and leaving -------------------------------------------------------------------
    def fenced(self, reason: str) -> None:
        log.info("share group %s: member %s epoch %s fenced (%s)", self.group_id, self.member_id,
                 self.member_epoch, reason)
        self.fenced_count += 1
        self.member_epoch = 0
        self._target_ids = None
        self._token = None
        self._set_assignment(frozenset())
        if self.state not in (_S.FENCED, _S.CLOSED, _S.UNSUBSCRIBED, _S.LEAVING):
            self._set_state(_S.FENCED)

    def _join(self) -> None:
        self.member_epoch = 0
        self.heartbeat_now = True
        self._set_state(_S.JOINING)

    def _left(self) -> None:
        self.member_epoch = 0
        self._target_ids = None
        self._token = None
        self._set_assignment(frozenset())
        if self.state not in (_S.UNSUBSCRIBED, _S.CLOSED):
            self._set_state(_S.UNSUBSCRIBED)
