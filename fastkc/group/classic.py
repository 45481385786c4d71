r"""The classic group protocol member (JoinGroup / SyncGroup / Heartbeat),
eager and cooperative (KIP-429), with static membership (KIP-345).

States (`MemberState`, changed only through `_set_state`):

    UNJOINED --> PREPARING --> JOINING --> SYNCING --> STABLE
        ^  \____________________^   |          |          |
        |___________________________|__________|__________|   (rejoin, fenced, left)

- UNJOINED: no current generation, or a rejoin is due.
- PREPARING: the application must act before we may rejoin: under the eager
  protocol it revokes everything it owns (committing first); after the
  member was fenced it hands its partitions to on_partitions_lost. The group
  thread waits for the application's next poll (Java does this in poll too).
- JOINING / SYNCING: a JoinGroup / SyncGroup is on the wire (group thread).
- STABLE: a member of the current generation; heartbeats flow. The
  assignment SyncGroup returned waits in `_pending` until the application's
  next poll applies it (listener calls happen there, on its thread).

Decisions live in `_on_join_response`, `_on_sync_response` and
`_on_heartbeat_response`, which read decoded response dicts, so unit tests
feed them canned responses through a fake transport.
"""
import enum
import logging

from fastkc.assignors import (
    CooperativeStickyAssignor,
    GroupMember,
    RebalanceProtocol,
    StaticCluster,
    partition_changes,
    validate_cooperative_assignment,
)
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
from fastkc.group.member import NO_GENERATION, GroupMemberBase
from fastkc.group.transport import is_coordinator_error
from fastkc.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    with_member_state,
)

log = logging.getLogger(__name__)


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    PREPARING = "preparing"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    CLOSED = "closed"


_M = MemberState
_LEGAL = {
    _M.UNJOINED: {_M.PREPARING, _M.JOINING, _M.CLOSED},
    _M.PREPARING: {_M.JOINING, _M.UNJOINED, _M.CLOSED},
    _M.JOINING: {_M.JOINING, _M.SYNCING, _M.UNJOINED, _M.CLOSED},
    _M.SYNCING: {_M.STABLE, _M.UNJOINED, _M.CLOSED},
    _M.STABLE: {_M.UNJOINED, _M.CLOSED},
    _M.CLOSED: set(),
}

# kafka-python's MemberState strings, for group_metadata().state
KAFKA_PYTHON_STATE = {_M.UNJOINED: "<unjoined>", _M.PREPARING: "<rebalancing>", _M.JOINING: "<rebalancing>",
                      _M.SYNCING: "<rebalancing>", _M.STABLE: "<stable>", _M.CLOSED: "<unjoined>"}


def instantiate_assignors(strategy):
    """partition_assignment_strategy holds classes (kafka-python) or instances."""
    out = []
    for item in strategy:
        out.append(item() if isinstance(item, type) else item)
    if not out:
        raise IllegalStateError("partition_assignment_strategy is empty")
    return out


class ClassicGroupMember(GroupMemberBase):
    protocol_name = "classic"

    #: the last JoinGroup failure was followed by an immediate rejoin
    _rejoined_at_once = False

    def __init__(self, config, transport, app, **kwargs):
        super().__init__(config, transport, app, **kwargs)
        self.assignors = instantiate_assignors(config["partition_assignment_strategy"])
        self._assignors_by_name = {a.name: a for a in self.assignors}
        common = set(RebalanceProtocol)
        for a in self.assignors:
            common &= set(a.supported_protocols())
        if not common:
            raise IllegalStateError("the assignors {0} share no rebalance protocol".format(
                [a.name for a in self.assignors]))
        self.rebalance_protocol = max(common)  # Java: the highest protocol every assignor supports
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol = None
        self.leader_id = None
        self._pending = None  # (generation, protocol, Assignment) waiting for the application
        self._applying = False  # the application is applying an assignment: no rejoin meanwhile
        self._rejoin_requested = None  # why to rejoin once the join in flight completes
        self._lost_pending = False  # fenced: the application must hand its partitions to on_partitions_lost
        self._prepared = False  # the application finished PREPARING's work
        self._next_heartbeat = 0.0
        self._leader_snapshot = None  # {topic: partition count} the leader assigned from
        self._session = config["session_timeout_ms"]
        self._rebalance_timeout = config["max_poll_interval_ms"]

    # --- states --------------------------------------------------------------------------------
    def _set_state(self, new):
        with self._lock:
            if new not in _LEGAL[self.state]:
                raise IllegalStateError("group member: illegal transition {0} -> {1}".format(
                    self.state.name, new.name))
            log.debug("group %s member %s: %s -> %s", self.group_id, self.member_id, self.state.name, new.name)
            self.state = new

    def _commit_identity(self):
        if self.state is MemberState.STABLE or self._pending is not None or self.generation != NO_GENERATION:
            return self.generation, self.member_id
        return NO_GENERATION, self.member_id

    def _check_can_commit(self):
        if self._subscription is None or self.generation != NO_GENERATION:
            return
        if self.state in (MemberState.PREPARING, MemberState.JOINING, MemberState.SYNCING):
            raise RebalanceInProgressError("the group is rebalancing; commit after the rebalance completes (poll)")
        raise CommitFailedError("Commit cannot be completed since this member is not part of an active group "
                                "generation (it left after max_poll_interval_ms without poll(), or was removed)")

    def group_metadata(self):
        from fastkc.group import ConsumerGroupMetadata

        return ConsumerGroupMetadata(self.group_id, self.generation, self.member_id, self.group_instance_id,
                                     KAFKA_PYTHON_STATE[self.state])

    # --- hooks from the shared code ------------------------------------------------------------
    def _subscription_changed(self):
        self._rebalance_needed("subscription changed")

    def _rebalance_needed(self, reason):
        with self._lock:
            if self.state is MemberState.STABLE:
                log.info("group %s: rejoining (%s)", self.group_id, reason)
                self._set_state(MemberState.UNJOINED)
            elif self.state in (MemberState.JOINING, MemberState.SYNCING):
                # the join on the wire carries the old state: join again after it
                self._rejoin_requested = reason
            self._kick_thread()

    def _member_fenced(self, reason):
        log.info("group %s: member %s generation %s fenced (%s)", self.group_id, self.member_id,
                 self.generation, reason)
        with self._lock:
            self.generation = NO_GENERATION
            self.protocol = None
            self._pending = None
            self._lost_pending = True
            if self.state is not MemberState.UNJOINED and self.state is not MemberState.CLOSED:
                self._set_state(MemberState.UNJOINED)
            self._kick_thread()

    def _mark_closed(self):
        if self.state is not MemberState.CLOSED:
            self._set_state(MemberState.CLOSED)

    def metadata_changed(self, partition_counts):
        """The leader rejoins when a subscribed topic's partition count
        changes (Java's metadata snapshot check)."""
        with self._lock:
            snap = self._leader_snapshot
            if snap is None or self.member_id != self.leader_id:
                return
            for topic, count in snap.items():
                if partition_counts.get(topic, count) != count:
                    self._leader_snapshot = None
                    self._rebalance_needed("partitions of {0} changed".format(topic))
                    return

    # --- the group thread --------------------------------------------------------------------
    def _step(self):
        """One round of the group thread's work (lock held); returns how long
        to sleep before the next."""
        now = self._clock()
        backoff = self.config["retry_backoff_ms"] / 1000.0
        if self._commit_queue:  # async commits (also of manually assigned partitions)
            self._flush_async_commits_locked()
        if self._subscription is None or self._closed:
            return 1.0
        if self._poll_timeout_expired:
            return 1.0  # wait for the application's next poll
        if self.state in (MemberState.STABLE, MemberState.PREPARING) and \
                now - self._last_poll > self.config["max_poll_interval_ms"] / 1000.0:
            log.warning("group %s: no poll() for more than max_poll_interval_ms (%s ms); leaving the group so "
                        "its partitions move to live members", self.group_id, self.config["max_poll_interval_ms"])
            self._poll_timeout_expired = True
            self._leave("consumer poll timeout has expired")
            self._lost_pending = True
            return 1.0
        if self.state is MemberState.UNJOINED:
            if self._pending is not None or self._applying:
                return 1.0  # the application applies the last assignment first
            if self._lost_pending or (self.rebalance_protocol is RebalanceProtocol.EAGER and self._owned):
                self._prepared = False
                self._set_state(MemberState.PREPARING)
                return 1.0
            return self._join(now)
        if self.state is MemberState.PREPARING:
            if not self._prepared:
                return 1.0
            return self._join(now)
        if self.state is MemberState.STABLE:
            with self._lock:
                if self._rejoin_requested and self._pending is None and not self._applying:
                    reason, self._rejoin_requested = self._rejoin_requested, None
                    self._rebalance_needed(reason)
                    return 0.0
            if now >= self._next_heartbeat:
                self._heartbeat(now)
            return max(0.0, min(self._next_heartbeat - self._clock(), 1.0))
        return backoff

    def _join(self, now):
        backoff = self.config["retry_backoff_ms"] / 1000.0
        self._rejoin_requested = None  # this join carries the latest subscription and ownership
        self._ensure_coordinator_locked(now + self.config["request_timeout_ms"] / 1000.0)
        self._set_state(MemberState.JOINING)
        try:
            response = self.transport.call("JoinGroup", self._join_body(),
                                           max(self.config["request_timeout_ms"], self._rebalance_timeout + 5000))
        except Exception:
            self._set_state(MemberState.UNJOINED)
            raise
        if not self._on_join_response(response):
            # KIP-394 and friends: rejoin at once with the member id just
            # given, but once only: a coordinator that keeps answering so is
            # asked again after retry_backoff_ms, not in a tight loop
            quick = self.state is MemberState.UNJOINED and self.member_id and not self._rejoined_at_once
            self._rejoined_at_once = bool(quick)
            return 0.0 if quick else backoff
        self._rejoined_at_once = False
        assignments = []
        if self.member_id == self.leader_id:
            try:
                assignments = self._perform_assignment(response)
            except Exception:
                self._set_state(MemberState.UNJOINED)
                raise
        try:
            response = self.transport.call("SyncGroup", {
                "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
                "protocol_name": self.protocol, "assignments": assignments,
            }, max(self.config["request_timeout_ms"], self._rebalance_timeout + 5000))
        except Exception:
            self._set_state(MemberState.UNJOINED)
            raise
        if self._on_sync_response(response):
            self._next_heartbeat = self._clock() + self.config["heartbeat_interval_ms"] / 1000.0
            return 0.0
        return backoff

    def _join_body(self):
        rack = self.config["client_rack"] or None
        protocols = []
        for assignor in self.assignors:
            if self.rebalance_protocol not in assignor.supported_protocols():
                continue
            subscription = with_member_state(assignor.metadata(list(self._subscription)), self._owned,
                                             self.generation, rack)
            protocols.append({"name": assignor.name, "metadata": encode_subscription(subscription)})
        return {
            "group_id": self.group_id, "session_timeout_ms": self._session,
            "rebalance_timeout_ms": self._rebalance_timeout, "member_id": self.member_id,
            "group_instance_id": self.group_instance_id, "protocol_type": "consumer", "protocols": protocols,
            "reason": None,
        }

    def _on_join_response(self, response):
        """True when joined (state SYNCING); else the state says what next."""
        code = response["error_code"]
        if code == 0:
            self.generation = response["generation_id"]
            self.member_id = response["member_id"]
            self.protocol = response["protocol_name"]
            self.leader_id = response["leader"]
            if self.protocol not in self._assignors_by_name:
                self._set_state(MemberState.UNJOINED)
                raise IllegalStateError("the coordinator chose assignor {0!r}, which this member did not offer".format(
                    self.protocol))
            self._set_state(MemberState.SYNCING)
            return True
        cls = for_code(code)
        self._set_state(MemberState.UNJOINED)
        if cls is MemberIdRequiredError:
            # KIP-394: rejoin at once with the member id the coordinator gave
            self.member_id = response["member_id"]
            return False
        if cls is UnknownMemberIdError:
            self.member_id = ""
            self.generation = NO_GENERATION
            return False
        if is_coordinator_error(cls("")):
            self.transport.coordinator_lost()
            return False
        if cls in (RebalanceInProgressError, CoordinatorLoadInProgressError, IllegalGenerationError):
            return False
        # anything else no retry fixes (INCONSISTENT_GROUP_PROTOCOL, FENCED_INSTANCE_ID,
        # GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED, ...): raised from poll
        raise cls("JoinGroup for group {0}".format(self.group_id))

    def _perform_assignment(self, response):
        """The leader's work: run the chosen assignor over every member's
        subscription, on metadata refreshed now."""
        members = [GroupMember(m["member_id"], m["group_instance_id"], decode_subscription(m["metadata"]))
                   for m in response["members"]]
        topics = sorted({t for m in members for t in m.metadata.topics})
        cluster = self.transport.metadata(topics, self.config["request_timeout_ms"])
        snapshot = StaticCluster.from_metadata(_only(cluster, topics))
        assignor = self._assignors_by_name[self.protocol]
        result = assignor.assign(snapshot, members)
        if self.rebalance_protocol is RebalanceProtocol.COOPERATIVE and \
                not isinstance(assignor, CooperativeStickyAssignor):
            validate_cooperative_assignment({m.member_id: m.metadata.owned_topic_partitions() for m in members},
                                            result)
        self._leader_snapshot = {t: len(cluster.topics[t].partitions) for t in topics
                                 if t in cluster.topics and cluster.topics[t].error_code == 0}
        return [{"member_id": member_id, "assignment": encode_assignment(assignment)}
                for member_id, assignment in result.items()]

    def _on_sync_response(self, response):
        code = response["error_code"]
        if code == 0:
            assignment = decode_assignment(response["assignment"])
            with self._lock:
                self._pending = (self.generation, self.protocol, assignment)
                self._set_state(MemberState.STABLE)
            return True
        cls = for_code(code)
        self._set_state(MemberState.UNJOINED)
        if cls in (UnknownMemberIdError, IllegalGenerationError):
            if cls is UnknownMemberIdError:
                self.member_id = ""
            self._member_fenced("SyncGroup answered {0}".format(cls.__name__))
            return False
        if is_coordinator_error(cls("")):
            self.transport.coordinator_lost()
            return False
        if cls is RebalanceInProgressError:
            return False
        raise cls("SyncGroup for group {0}".format(self.group_id))

    def _heartbeat(self, now):
        interval = self.config["heartbeat_interval_ms"] / 1000.0
        try:
            # a lost coordinator is looked up again; the membership survives the move
            self._ensure_coordinator_locked(now + self.config["request_timeout_ms"] / 1000.0)
            response = self.transport.call("Heartbeat", {
                "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id,
            }, min(self.config["request_timeout_ms"], self._session))
        except Exception:
            self._next_heartbeat = self._clock() + self.config["retry_backoff_ms"] / 1000.0
            raise
        self._on_heartbeat_response(response)
        if self.state is MemberState.STABLE:
            self._next_heartbeat = now + interval

    def _on_heartbeat_response(self, response):
        code = response["error_code"]
        if code == 0:
            return
        cls = for_code(code)
        if cls is RebalanceInProgressError:
            self._rebalance_needed("heartbeat answered REBALANCE_IN_PROGRESS")
        elif cls in (UnknownMemberIdError, IllegalGenerationError):
            if cls is UnknownMemberIdError:
                self.member_id = ""
            self._member_fenced("heartbeat answered {0}".format(cls.__name__))
        elif is_coordinator_error(cls("")):
            self.transport.coordinator_lost()
            self._next_heartbeat = self._clock() + self.config["retry_backoff_ms"] / 1000.0
        else:
            raise cls("Heartbeat for group {0}".format(self.group_id))

    def _leave(self, reason):
        """LeaveGroup (dynamic members; a static member keeps its place until
        session_timeout_ms, as Java's does), then forget the generation."""
        if self.member_id and self.group_instance_id is None and self.transport.coordinator_id is not None \
                and self.state is not MemberState.CLOSED:
            try:
                response = self.transport.call("LeaveGroup", {
                    "group_id": self.group_id, "member_id": self.member_id,
                    "members": [{"member_id": self.member_id, "group_instance_id": None, "reason": reason}],
                }, min(self.config["request_timeout_ms"], 5000))
                if response["error_code"]:
                    log.info("LeaveGroup: %s", for_code(response["error_code"]).__name__)
            except Exception as exc:
                log.info("LeaveGroup failed: %s", exc)
        if self.group_instance_id is None:
            self.member_id = ""
        self.generation = NO_GENERATION
        self._pending = None
        if self.state not in (MemberState.UNJOINED, MemberState.CLOSED):
            self._set_state(MemberState.UNJOINED)

    # --- the application's side ------------------------------------------------------------
    def _apply_pending(self):
        with self._lock:
            lost = self._lost_pending
            preparing = self.state is MemberState.PREPARING and not self._prepared
            pending, self._pending = self._pending, None
            self._applying = pending is not None
        try:
            self._apply(lost, preparing, pending)
        finally:
            if pending is not None:
                with self._lock:
                    self._applying = False
                self._kick_thread()

    def _apply(self, lost, preparing, pending):
        if lost and self._owned:
            self._revoke_on_app_thread(list(self._owned), lost=True, commit=False)
        if preparing:
            if self._owned:  # eager: everything goes back before we rejoin
                self._revoke_on_app_thread(list(self._owned), lost=False, commit=True)
        if lost or preparing:
            with self._lock:
                self._lost_pending = False if lost else self._lost_pending
                if self.state is MemberState.PREPARING:
                    self._prepared = True
                self._kick_thread()
        if pending is None:
            return
        generation, protocol, assignment = pending
        assigned = [tp for tp in assignment.partitions() if tp.topic in set(self._subscription or ())]
        if len(assigned) != len(assignment.partitions()):
            log.warning("group %s: assigned partitions of topics not subscribed to were ignored", self.group_id)
        revoked, added = partition_changes(self._owned, assigned)
        if revoked:
            self._revoke_on_app_thread(sorted(revoked), lost=False, commit=True)
        ordered_added = [tp for tp in assigned if tp in added]
        self._assign_on_app_thread(ordered_added, assigned)
        assignor = self._assignors_by_name.get(protocol)
        if assignor is not None:
            assignor.on_assignment(assignment, generation)
        if revoked and self.rebalance_protocol is RebalanceProtocol.COOPERATIVE:
            # KIP-429: what we gave up goes to its new owner in a second round
            with self._lock:
                self._rebalance_needed("partitions revoked in a cooperative rebalance")


def _only(cluster, topics):
    """The metadata view restricted to `topics` (the leader assigns those)."""

    class _View:
        pass

    view = _View()
    view.brokers = cluster.brokers
    view.topics = {t: cluster.topics[t] for t in topics if t in cluster.topics and cluster.topics[t].error_code == 0}
    return view

