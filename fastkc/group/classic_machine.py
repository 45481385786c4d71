r"""The classic group protocol (JoinGroup / SyncGroup / Heartbeat /
LeaveGroup), eager and cooperative (KIP-429), with static membership
(KIP-345), as an I/O-free state machine (see machine.py for the driving loop).

States (`ClassicState`; `_LEGAL` lists every allowed transition):

    UNJOINED --> PREPARING --> JOINING --> [ASSIGNING] --> SYNCING --> STABLE
       ^  \___________________^   |             |             |          |
       |__________________________|_____________|_____________|__________|  (error, rejoin, fenced)
    any of them --> LEAVING --> UNJOINED;  any --> CLOSED

- UNJOINED: no current generation, or a rejoin is due.
- PREPARING: the application must act before we may rejoin: under the eager
  protocol it revokes everything it owns (committing first); after the
  member was fenced it hands its partitions to on_partitions_lost. The
  machine waits for `app_done()` (the application's next poll; Java does
  this in poll too).
- JOINING / ASSIGNING / SYNCING: JoinGroup, the leader's Metadata (its view
  of the subscribed topics, to assign from), SyncGroup on the wire.
- STABLE: a member of the current generation; heartbeats flow. The
  assignment SyncGroup returned waits as an `AssignmentReceived` event until
  the application applies it.
- LEAVING: LeaveGroup on the wire (dynamic members; a static member keeps
  its place until session_timeout_ms, as Java's does).
- CLOSED: the consumer closed; nothing leaves this state.

Events for the application (`take_events()`, run on its thread by the
driver, acknowledged with `app_done()`): `PartitionsLost` (fenced or left
after max_poll_interval_ms: on_partitions_lost, no commit),
`RevokeBeforeRejoin` (eager: commit, then on_partitions_revoked of
everything), `AssignmentReceived` (revoke what moved, assign what is new).
Fatal errors (INCONSISTENT_GROUP_PROTOCOL, GROUP_AUTHORIZATION_FAILED, ...)
are raised from `on_response`.
"""
import enum
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from fastkc.assignors import (
    ASSIGNORS_BY_NAME,
    AbstractPartitionAssignor,
    CooperativeStickyAssignor,
    GroupMember,
    RebalanceProtocol,
    StaticCluster,
    validate_cooperative_assignment,
)
from fastkc.config import Config
from fastkc.errors import (
    CommitFailedError,
    CoordinatorLoadInProgressError,
    IllegalGenerationError,
    IllegalStateError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
)
from fastkc.group.coordinator_machine import CoordinatorMachine, is_coordinator_error, is_retriable
from fastkc.group.machine import DUE_NOW, earliest
from fastkc.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    with_member_state,
)
from fastkc.request import ANY_NODE, COORDINATOR, Request, Token
from fastkc.state_machine import StateHolder
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import BrokerMetadata, ClusterMetadata, TopicMetadata
    from fastkc.protocol.consumer_protocol import Assignment

log = logging.getLogger(__name__)

NO_GENERATION = -1


class ClassicState(enum.Enum):
    UNJOINED = "unjoined"
    PREPARING = "preparing"
    JOINING = "joining"
    ASSIGNING = "assigning"
    SYNCING = "syncing"
    STABLE = "stable"
    LEAVING = "leaving"
    CLOSED = "closed"


_M = ClassicState
_LEAVABLE = {_M.UNJOINED, _M.PREPARING, _M.JOINING, _M.ASSIGNING, _M.SYNCING, _M.STABLE}
_LEGAL = {
    _M.UNJOINED: {_M.PREPARING, _M.JOINING, _M.LEAVING, _M.CLOSED},
    _M.PREPARING: {_M.JOINING, _M.UNJOINED, _M.LEAVING, _M.CLOSED},
    _M.JOINING: {_M.ASSIGNING, _M.SYNCING, _M.UNJOINED, _M.LEAVING, _M.CLOSED},
    _M.ASSIGNING: {_M.SYNCING, _M.UNJOINED, _M.LEAVING, _M.CLOSED},
    _M.SYNCING: {_M.STABLE, _M.UNJOINED, _M.LEAVING, _M.CLOSED},
    _M.STABLE: {_M.UNJOINED, _M.LEAVING, _M.CLOSED},
    _M.LEAVING: {_M.UNJOINED, _M.CLOSED},
    _M.CLOSED: set(),
}

# kafka-python's MemberState strings, for group_metadata().state
KAFKA_PYTHON_STATE = {_M.UNJOINED: "<unjoined>", _M.PREPARING: "<rebalancing>", _M.JOINING: "<rebalancing>",
                      _M.ASSIGNING: "<rebalancing>", _M.SYNCING: "<rebalancing>", _M.STABLE: "<stable>",
                      _M.LEAVING: "<unjoined>", _M.CLOSED: "<unjoined>"}

#: events for the application's thread
class PartitionsLost(NamedTuple):
    partitions: list[TopicPartition]


class RevokeBeforeRejoin(NamedTuple):
    partitions: list[TopicPartition]


class AssignmentReceived(NamedTuple):
    generation: int
    protocol: str
    assignment: "Assignment"


#: what take_events() hands the application
Event = PartitionsLost | RevokeBeforeRejoin | AssignmentReceived
#: the member left the group because the application stopped polling
class PollTimeoutExpired(NamedTuple):
    max_poll_interval_ms: int


def resolve_assignors(strategy: Any) -> Any:
    """partition_assignment_strategy with the built-in assignors' names (the
    configuration's defaults, the CLI's -X) replaced by fastkc's classes of
    that protocol name; classes and instances kept. Returns `strategy` itself
    when it names none, else a sequence of its type (kafka-python's consumer
    shows the classes: (RangePartitionAssignor, RoundRobinPartitionAssignor))."""
    if not any(isinstance(item, str) for item in strategy):
        return strategy
    resolved = [ASSIGNORS_BY_NAME[item] if isinstance(item, str) else item for item in strategy]
    return tuple(resolved) if isinstance(strategy, tuple) else resolved


def instantiate_assignors(strategy: Iterable[Any]) -> list[AbstractPartitionAssignor]:
    """partition_assignment_strategy holds names, classes (kafka-python) or instances."""
    out: list[AbstractPartitionAssignor] = []
    for item in resolve_assignors(strategy):
        out.append(item() if isinstance(item, type) else item)
    if not out:
        raise IllegalStateError("partition_assignment_strategy is empty")
    return out


class ClassicMachine(StateHolder[ClassicState]):
    _LEGAL = _LEGAL
    _machine_name = "group member"

    def __init__(self, config: Config, coordinator: CoordinatorMachine, now: float) -> None:
        self._init_state(_M.UNJOINED)
        self.config = config
        self.coordinator = coordinator
        self.group_id = config["group_id"]
        self.group_instance_id = config["group_instance_id"]
        self.assignors = instantiate_assignors(config["partition_assignment_strategy"])
        self.assignors_by_name = {a.name: a for a in self.assignors}
        common = set(RebalanceProtocol)
        for a in self.assignors:
            common &= set(a.supported_protocols())
        if not common:
            raise IllegalStateError("the assignors {0} share no rebalance protocol".format(
                [a.name for a in self.assignors]))
        self.rebalance_protocol = max(common)  # Java: the highest protocol every assignor supports
        self._backoff = config["retry_backoff_ms"] / 1000.0
        self._session = config["session_timeout_ms"]
        self._rebalance_timeout = config["max_poll_interval_ms"]
        self._interval = config["heartbeat_interval_ms"] / 1000.0
        # membership
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol: str | None = None
        self.leader_id: str | None = None
        self.subscription: list[str] | None = None  # sorted topic names while subscribed
        # what the application holds (assignment order); the driver keeps it current
        self.owned: list[TopicPartition] = []
        # what the application has to do
        self.pending: AssignmentReceived | None = None  # waiting for the application
        self.applying = False  # the application is applying an assignment: no rejoin meanwhile
        self.lost_pending = False  # fenced: the application must hand its partitions to on_partitions_lost
        self.prepared = False  # the application finished PREPARING's work
        self.rejoin_requested: str | None = None  # why to rejoin once the join in flight completes
        self.rejoined_at_once = False  # the last JoinGroup failure was followed by an immediate rejoin
        # the clock
        self.last_poll = now
        self.poll_timeout_expired = False
        self.next_heartbeat = 0.0
        self.retry_at: float | None = None  # the next JoinGroup not before (after a failure)
        self.leader_snapshot: dict[str, int] | None = None  # {topic: partition count} the leader assigned from
        self._token: Token | None = None  # the request in flight
        self._leader_members: list[GroupMember] | None = None  # the JoinGroup answer's members while ASSIGNING
        self._leave_reason: str | None = None
        self._pending_assignments: list[dict[str, Any]] = []  # the leader's SyncGroup assignments
        self.fatal_error: BaseException | None = None  # a commit answered FENCED_INSTANCE_ID: raised from the next poll

    # --- what the application (through the driver) tells the machine ------------------------
    def set_subscription(self, topics: Iterable[str] | None) -> bool:
        wanted = None if topics is None else sorted(set(topics))
        if wanted == self.subscription:
            return False
        self.subscription = wanted
        if wanted is not None:
            self.rebalance_needed("subscription changed")
        return True

    def app_polled(self, now: float) -> None:
        self.last_poll = now
        self.poll_timeout_expired = False

    def rebalance_needed(self, reason: str) -> None:
        if self.state is _M.STABLE:
            log.info("group %s: rejoining (%s)", self.group_id, reason)
            self._set_state(_M.UNJOINED)
        elif self.state in (_M.JOINING, _M.ASSIGNING, _M.SYNCING):
            # the join on the wire carries the old state: join again after it
            self.rejoin_requested = reason

    def fenced(self, reason: str) -> None:
        log.info("group %s: member %s generation %s fenced (%s)", self.group_id, self.member_id,
                 self.generation, reason)
        self.generation = NO_GENERATION
        self.protocol = None
        self.pending = None
        self.lost_pending = True
        if self.state not in (_M.UNJOINED, _M.CLOSED):
            self._set_state(_M.UNJOINED)
        self._token = None

    def fatal(self, error: BaseException) -> None:
        """A commit answered FENCED_INSTANCE_ID: the driver raises it from poll."""
        self.fatal_error = error

    def metadata_changed(self, partition_counts: Mapping[str, int]) -> bool:
        """The leader rejoins when a subscribed topic's partition count
        changes (Java's metadata snapshot check); True when it will."""
        snap = self.leader_snapshot
        if snap is None or self.member_id != self.leader_id:
            return False
        for topic, count in snap.items():
            # a topic the snapshot has at 0 had no metadata when the leader
            # assigned: its partitions appearing is a change too (else a
            # member whose metadata answer lacked the topic, as a broker just
            # restarted answers, leaves the group with nothing assigned)
            if topic in partition_counts and partition_counts[topic] != count:
                self.leader_snapshot = None
                self.rebalance_needed("partitions of {0} changed".format(topic))
                return True
        return False

    @property
    def leader_snapshot_incomplete(self) -> bool:
        """This member led the last assignment and a subscribed topic had
        no metadata then: the drivers look at metadata again after
        retry_backoff_ms, not metadata_max_age_ms (Java asks again at once
        for a topic its metadata answer lacked), so the partitions are
        assigned as soon as a broker describes them."""
        snap = self.leader_snapshot
        return snap is not None and self.member_id == self.leader_id and 0 in snap.values()

    def close(self) -> None:
        if self.state is not _M.CLOSED:
            self._set_state(_M.CLOSED)
        self._token = None

    # --- commits ------------------------------------------------------------------------------
    def commit_identity(self) -> tuple[int, str]:
        if self.state is _M.STABLE or self.pending is not None or self.generation != NO_GENERATION:
            return self.generation, self.member_id
        return NO_GENERATION, self.member_id

    def check_can_commit(self) -> None:
        """Raise before sending when a subscribed member has no generation
        (Java checks this client-side: such a commit would be accepted as a
        "simple" commit and overwrite the new owner's progress)."""
        if self.subscription is None or self.generation != NO_GENERATION:
            return
        if self.state in (_M.PREPARING, _M.JOINING, _M.ASSIGNING, _M.SYNCING):
            raise RebalanceInProgressError("the group is rebalancing; commit after the rebalance completes (poll)")
        raise CommitFailedError("Commit cannot be completed since this member is not part of an active group "
                                "generation (it left after max_poll_interval_ms without poll(), or was removed)")

    # --- the application's side ----------------------------------------------------------------
    def take_events(self) -> list[Event]:
        """What the application must do now, in this order; acknowledge with
        app_done(events) once done (also when a listener raised)."""
        events: list[Event] = []
        if self.lost_pending:  # also what PREPARING waits for: nothing is left to revoke
            events.append(PartitionsLost(list(self.owned)))
        elif self.state is _M.PREPARING and not self.prepared:
            events.append(RevokeBeforeRejoin(list(self.owned)))
        if self.pending is not None:
            events.append(self.pending)
            self.pending = None
            self.applying = True
        return events

    def app_done(self, events: Iterable[object]) -> None:
        # any iterable of events: the ones this machine did not emit are ignored
        for event in events:
            if isinstance(event, (PartitionsLost, RevokeBeforeRejoin)):
                if isinstance(event, PartitionsLost):
                    self.lost_pending = False
                if self.state is _M.PREPARING:
                    self.prepared = True
            elif isinstance(event, AssignmentReceived):
                self.applying = False

    def assignment_applied(self, revoked_any: bool) -> None:
        if revoked_any and self.rebalance_protocol is RebalanceProtocol.COOPERATIVE:
            # KIP-429: what we gave up goes to its new owner in a second round
            self.rebalance_needed("partitions revoked in a cooperative rebalance")

    # --- leaving -------------------------------------------------------------------------------
    def leave(self, reason: str, now: float) -> None:
        """Start leaving: LeaveGroup goes out with the next requests (a
        dynamic member that joined, with a known coordinator); else the
        membership is forgotten at once."""
        if self.state is _M.CLOSED:
            return
        if self.member_id and self.group_instance_id is None and self.coordinator.known \
                and self.state in _LEAVABLE:
            self._leave_reason = reason
            self._token = None
            self._set_state(_M.LEAVING)
            return
        self._left()

    def _left(self) -> None:
        if self.group_instance_id is None:
            self.member_id = ""
        self.generation = NO_GENERATION
        self.pending = None
        self._token = None
        if self.state not in (_M.UNJOINED, _M.CLOSED):
            self._set_state(_M.UNJOINED)

    # --- requests --------------------------------------------------------------------------------
    @property
    def follow_up_now(self) -> bool:
        """A JoinGroup was answered: the Metadata / SyncGroup that complete
        it follow at once."""
        return self.state in (_M.ASSIGNING, _M.SYNCING) and self._token is None

    def next_requests(self, now: float) -> list[Request[Token]]:
        if self._token is not None or self.state is _M.CLOSED:
            return []  # one request at a time
        if self.state is _M.LEAVING:
            return self._send("LeaveGroup", COORDINATOR, {
                "group_id": self.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None, "reason": self._leave_reason}],
            }, min(self.config["request_timeout_ms"], 5000))
        if self.state is _M.ASSIGNING:
            assert self._leader_members is not None  # ASSIGNING is entered with the JoinGroup answer's members
            topics = sorted({t for m in self._leader_members for t in m.metadata.topics})
            return self._send("Metadata", ANY_NODE, {"topics": topics}, self.config["request_timeout_ms"])
        if self.state is _M.SYNCING:
            assignments, self._pending_assignments = self._pending_assignments, []
            return self._send_sync(assignments)
        if self.subscription is None or self.poll_timeout_expired:
            return []
        if self.state in (_M.STABLE, _M.PREPARING) and \
                now - self.last_poll > self.config["max_poll_interval_ms"] / 1000.0:
            log.warning("group %s: no poll() for more than max_poll_interval_ms (%s ms); leaving the group so "
                        "its partitions move to live members", self.group_id, self.config["max_poll_interval_ms"])
            self.poll_timeout_expired = True
            self.lost_pending = True
            self.leave("consumer poll timeout has expired", now)
            return self.next_requests(now) if self._leaving() else []
        if self.state is _M.STABLE and self.rejoin_requested and self.pending is None and not self.applying:
            reason, self.rejoin_requested = self.rejoin_requested, None
            self.rebalance_needed(reason)
        if self.state is _M.UNJOINED:
            if self.pending is not None or self.applying:
                return []  # the application applies the last assignment first
            if self.lost_pending or (self.rebalance_protocol is RebalanceProtocol.EAGER and self.owned):
                self.prepared = False
                self._set_state(_M.PREPARING)
                return []
            return self._join(now)
        if self.state is _M.PREPARING:
            return self._join(now) if self.prepared else []
        if self.state is _M.STABLE and now >= self.next_heartbeat:
            if not self.coordinator.known:  # a lost coordinator is looked up again; the membership survives
                return self.coordinator.next_requests(now)
            return self._send("Heartbeat", COORDINATOR, {
                "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id,
            }, min(self.config["request_timeout_ms"], self._session))
        return []

    def next_deadline(self) -> float | None:
        """When next_requests has something to do (DUE_NOW: at once); None
        when only an answer or the application moves the member."""
        if self._token is not None or self.state is _M.CLOSED:
            return None
        if self.state in (_M.LEAVING, _M.ASSIGNING, _M.SYNCING):
            return DUE_NOW
        if self.subscription is None or self.poll_timeout_expired:
            return None  # the application's next poll moves us
        deadlines: list[float | None] = []
        if self.state in (_M.STABLE, _M.PREPARING):
            deadlines.append(self.last_poll + self.config["max_poll_interval_ms"] / 1000.0)
        join_due = None
        if self.state is _M.STABLE:
            if self.rejoin_requested and self.pending is None and not self.applying:
                return DUE_NOW
            deadlines.append(self.coordinator.after_lookup(self.next_heartbeat))
        elif self.state is _M.UNJOINED and self.pending is None and not self.applying:
            if self.lost_pending or (self.rebalance_protocol is RebalanceProtocol.EAGER and self.owned):
                return DUE_NOW  # to PREPARING, where the application acts
            join_due = self.retry_at if self.retry_at is not None else DUE_NOW
        elif self.state is _M.PREPARING and self.prepared:
            join_due = self.retry_at if self.retry_at is not None else DUE_NOW
        if join_due is not None:
            deadlines.append(self.coordinator.after_lookup(join_due))
        return earliest(*deadlines)

    def _leaving(self) -> bool:
        # a method, not `self.state is _M.LEAVING` inline: the type checker
        # keeps the state it narrowed before leave() moved it
        return self.state is _M.LEAVING

    def _send(self, api: str, target: str, body: dict[str, Any], timeout_ms: float) -> list[Request[Token]]:
        self._token = Token(api)
        return [Request(target, api, body, timeout_ms, self._token)]

    def _join(self, now: float) -> list[Request[Token]]:
        if self.retry_at is not None and now < self.retry_at:
            return []
        if not self.coordinator.known:
            return self.coordinator.next_requests(now)
        self.rejoin_requested = None  # this join carries the latest subscription and ownership
        self._set_state(_M.JOINING)
        return self._send("JoinGroup", COORDINATOR, self._join_body(),
                          max(self.config["request_timeout_ms"], self._rebalance_timeout + 5000))

    def _join_body(self) -> dict[str, Any]:
        rack = self.config["client_rack"] or None
        assert self.subscription is not None  # next_requests joins only while subscribed
        protocols: list[dict[str, Any]] = []
        for assignor in self.assignors:
            if self.rebalance_protocol not in assignor.supported_protocols():
                continue
            subscription = with_member_state(assignor.metadata(list(self.subscription)), self.owned,
                                             self.generation, rack)
            protocols.append({"name": assignor.name, "metadata": encode_subscription(subscription)})
        return {
            "group_id": self.group_id, "session_timeout_ms": self._session,
            "rebalance_timeout_ms": self._rebalance_timeout, "member_id": self.member_id,
            "group_instance_id": self.group_instance_id, "protocol_type": "consumer", "protocols": protocols,
            "reason": None,
        }

    def _send_sync(self, assignments: Iterable[dict[str, Any]]) -> list[Request[Token]]:
        return self._send("SyncGroup", COORDINATOR, {
            "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
            "protocol_name": self.protocol, "assignments": list(assignments),
        }, max(self.config["request_timeout_ms"], self._rebalance_timeout + 5000))

    # --- answers -------------------------------------------------------------------------------
    def owns(self, token: Token | None) -> bool:
        return token is not None and token is self._token

    def on_response(self, token: Token, response: Any, now: float) -> None:
        if self.coordinator.owns(token):
            self.coordinator.on_response(token, response, now)
            return
        if token is None or token is not self._token:
            return  # an answer to a request the machine moved past
        self._token = None
        api = token.what
        if api == "LeaveGroup":
            if isinstance(response, BaseException):
                log.info("LeaveGroup failed: %s", response)
            elif response["error_code"]:
                log.info("LeaveGroup: %s", for_code(response["error_code"]).__name__)
            self._left()
            return
        if isinstance(response, BaseException):
            self._on_failure(api, response, now)
            return
        if api == "JoinGroup":
            self._on_join_response(response, now)
        elif api == "Metadata":
            self._on_metadata(response, now)
        elif api == "SyncGroup":
            self._on_sync_response(response, now)
        elif api == "Heartbeat":
            self._on_heartbeat_response(response, now)

    def _on_failure(self, api: str, error: BaseException, now: float) -> None:
        """The request got no answer (connection, timeout) or the leader's
        assignment failed: a retriable error backs off, any other is raised."""
        if is_coordinator_error(error):
            self.coordinator.lost(now)
        if api == "Heartbeat":
            self.next_heartbeat = now + self._backoff
        elif self.state in (_M.JOINING, _M.ASSIGNING, _M.SYNCING):
            self._set_state(_M.UNJOINED)
            self.retry_at = now + self._backoff
        if not is_retriable(error):
            raise error
        log.debug("group %s: %s failed: %s", self.group_id, api, error)

    def _on_join_response(self, response: Any, now: float) -> None:
        code = response["error_code"]
        if code == 0:
            self.generation = response["generation_id"]
            self.member_id = response["member_id"]
            self.protocol = response["protocol_name"]
            self.leader_id = response["leader"]
            self.rejoined_at_once = False
            self.retry_at = None
            if self.protocol not in self.assignors_by_name:
                self._set_state(_M.UNJOINED)
                self.retry_at = now + self._backoff
                raise IllegalStateError("the coordinator chose assignor {0!r}, which this member did not offer".format(
                    self.protocol))
            if self.member_id == self.leader_id:
                self._leader_members = [GroupMember(m["member_id"], m["group_instance_id"],
                                                    decode_subscription(m["metadata"]))
                                        for m in response["members"]]
                self._set_state(_M.ASSIGNING)
            else:
                self._set_state(_M.SYNCING)
            return
        cls = for_code(code)
        self._set_state(_M.UNJOINED)
        if cls is MemberIdRequiredError:
            # KIP-394: rejoin at once with the member id the coordinator gave
            self.member_id = response["member_id"]
        elif cls is UnknownMemberIdError:
            self.member_id = ""
            self.generation = NO_GENERATION
        elif is_coordinator_error(cls("")):
            self.coordinator.lost(now)
        elif cls not in (RebalanceInProgressError, CoordinatorLoadInProgressError, IllegalGenerationError):
            # anything else no retry fixes (INCONSISTENT_GROUP_PROTOCOL, FENCED_INSTANCE_ID,
            # GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED, ...): raised from poll
            self.retry_at = now + self._backoff
            raise cls("JoinGroup for group {0}".format(self.group_id))
        # KIP-394 and friends: rejoin at once with the member id just given,
        # but once only: a coordinator that keeps answering so is asked
        # again after retry_backoff_ms, not in a tight loop
        quick = bool(self.member_id) and not self.rejoined_at_once
        self.rejoined_at_once = quick
        self.retry_at = now if quick else now + self._backoff

    def _on_metadata(self, cluster: "ClusterMetadata", now: float) -> None:
        """The leader's work: run the chosen assignor over every member's
        subscription, on metadata refreshed now."""
        members, self._leader_members = self._leader_members, None
        # the Metadata answered is the one asked while ASSIGNING, entered with the members
        assert members is not None
        topics = sorted({t for m in members for t in m.metadata.topics})
        try:
            snapshot = StaticCluster.from_metadata(_only(cluster, topics))
            assert self.protocol is not None  # the JoinGroup answer that made us leader named it
            assignor = self.assignors_by_name[self.protocol]
            result = assignor.assign(snapshot, members)
            if self.rebalance_protocol is RebalanceProtocol.COOPERATIVE and \
                    not isinstance(assignor, CooperativeStickyAssignor):
                validate_cooperative_assignment({m.member_id: m.metadata.owned_topic_partitions() for m in members},
                                                result)
        except Exception:
            self._set_state(_M.UNJOINED)
            self.retry_at = now + self._backoff
            raise
        # {topic: partition count} of every subscribed topic, 0 for one the
        # metadata did not describe (Java's MetadataSnapshot: it differs from
        # a later one when a count changes or a topic appears)
        self.leader_snapshot = {t: len(cluster.topics[t].partitions)
                                if t in cluster.topics and cluster.topics[t].error_code == 0 else 0
                                for t in topics}
        self._set_state(_M.SYNCING)
        self._pending_assignments = [{"member_id": member_id, "assignment": encode_assignment(assignment)}
                                     for member_id, assignment in result.items()]

    def _on_sync_response(self, response: Any, now: float) -> None:
        code = response["error_code"]
        if code == 0:
            assert self.protocol is not None  # the JoinGroup answer this SyncGroup follows named it
            self.pending = AssignmentReceived(self.generation, self.protocol, decode_assignment(response["assignment"]))
            self._set_state(_M.STABLE)
            self.next_heartbeat = now + self._interval
            return
        cls = for_code(code)
        self._set_state(_M.UNJOINED)
        self.retry_at = now + self._backoff
        if cls in (UnknownMemberIdError, IllegalGenerationError):
            if cls is UnknownMemberIdError:
                self.member_id = ""
            self.fenced("SyncGroup answered {0}".format(cls.__name__))
        elif is_coordinator_error(cls("")):
            self.coordinator.lost(now)
        elif cls is not RebalanceInProgressError:
            raise cls("SyncGroup for group {0}".format(self.group_id))

    def _on_heartbeat_response(self, response: Any, now: float) -> None:
        code = response["error_code"]
        if self.state is _M.STABLE:
            self.next_heartbeat = now + self._interval
        if code == 0:
            return
        cls = for_code(code)
        if cls is RebalanceInProgressError:
            self.rebalance_needed("heartbeat answered REBALANCE_IN_PROGRESS")
        elif cls in (UnknownMemberIdError, IllegalGenerationError):
            if cls is UnknownMemberIdError:
                self.member_id = ""
            self.fenced("heartbeat answered {0}".format(cls.__name__))
        elif is_coordinator_error(cls("")):
            self.coordinator.lost(now)
            self.next_heartbeat = now + self._backoff
        else:
            raise cls("Heartbeat for group {0}".format(self.group_id))


class _ClusterView(NamedTuple):
    """What StaticCluster.from_metadata reads of a metadata view."""

    brokers: "Mapping[int, BrokerMetadata]"
    topics: "dict[str, TopicMetadata]"


def _only(cluster: "ClusterMetadata", topics: Iterable[str]) -> _ClusterView:
    """The metadata view restricted to `topics` (the leader assigns those)."""
    return _ClusterView(cluster.brokers, {t: cluster.topics[t] for t in topics
                                          if t in cluster.topics and cluster.topics[t].error_code == 0})
