"""The KIP-848 group member (group_protocol="consumer"): one
ConsumerGroupHeartbeat carries the subscription, the owned partitions and the
epoch; the broker runs the assignor (group_remote_assignor: uniform, range)
and answers with this member's assignment, which never contains a partition
another member still owns.

States (`Member848State`, changed only through `_set_state`):
- UNJOINED: to (re)join with epoch 0 (first join, after fencing, after leaving).
- JOINING: the epoch-0 heartbeat is answered by a member epoch -> STABLE.
- STABLE: heartbeats every heartbeat_interval_ms (the broker's value).
- RECONCILING: a new target assignment waits for the application's poll,
  which revokes first (commit, on_partitions_revoked), then assigns (committed
  offsets, on_partitions_assigned), then a heartbeat reports the new owned set
  at once (revoke-before-assign: what we release is acknowledged before the
  broker hands it to someone else).
- FENCED: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH; the application hands its
  partitions to on_partitions_lost, then we rejoin with epoch 0.
"""
import enum
import logging
import uuid

from fastkc.errors import (
    CommitFailedError,
    FencedMemberEpochError,
    RebalanceInProgressError,
    IllegalStateError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    for_code,
)
from fastkc.group.member import GroupMemberBase
from fastkc.group.transport import is_coordinator_error
from fastkc.protocol.consumer_protocol import heartbeat_topic_partitions, resolve_heartbeat_assignment

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1  # a dynamic member leaving
LEAVE_STATIC_EPOCH = -2  # a static member leaving temporarily (keeps its assignment for session_timeout)
# After our epoch changes, the partitions still owned by others reach us only
# in a heartbeat answer: for two broker intervals we ask every 200 ms instead
# of waiting a whole interval (a handful of extra heartbeats per rebalance;
# this is what keeps a join under a second with the broker's 1 s interval).
FAST_FOLLOW_UP_S = 0.2


class Member848State(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    STABLE = "stable"
    RECONCILING = "reconciling"
    FENCED = "fenced"
    CLOSED = "closed"


_S = Member848State
_LEGAL = {
    _S.UNJOINED: {_S.JOINING, _S.FENCED, _S.CLOSED},
    _S.JOINING: {_S.STABLE, _S.RECONCILING, _S.UNJOINED, _S.FENCED, _S.CLOSED},
    _S.STABLE: {_S.RECONCILING, _S.UNJOINED, _S.FENCED, _S.CLOSED},
    _S.RECONCILING: {_S.STABLE, _S.RECONCILING, _S.UNJOINED, _S.FENCED, _S.CLOSED},
    _S.FENCED: {_S.UNJOINED, _S.CLOSED},
    _S.CLOSED: set(),
}
_KAFKA_PYTHON_STATE = {_S.UNJOINED: "<unjoined>", _S.JOINING: "<rebalancing>", _S.STABLE: "<stable>",
                       _S.RECONCILING: "<rebalancing>", _S.FENCED: "<unjoined>", _S.CLOSED: "<unjoined>"}


class ConsumerProtocolMember(GroupMemberBase):
    protocol_name = "consumer"

    def __init__(self, config, transport, app, **kwargs):
        super().__init__(config, transport, app, **kwargs)
        self.state = Member848State.UNJOINED
        # KIP-1082: the client makes its member id, kept across rejoins
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self._interval = config["heartbeat_interval_ms"] / 1000.0
        self._next_heartbeat = 0.0
        self._heartbeat_now = True
        self._target_ids = None  # the last assignment the broker sent, by topic id (None: unchanged)
        self._pending = None  # resolved target waiting for the application
        self._applying = False  # the application is reconciling `_pending` right now
        self._fast_until = 0.0  # heartbeat every FAST_FOLLOW_UP_S until then (after an epoch change)
        self._pattern = None

    def _set_state(self, new):
        with self._lock:
            if new not in _LEGAL[self.state]:
                raise IllegalStateError("KIP-848 member: illegal transition {0} -> {1}".format(
                    self.state.name, new.name))
            log.debug("group %s member %s: %s -> %s", self.group_id, self.member_id, self.state.name, new.name)
            self.state = new

    def _commit_identity(self):
        return self.member_epoch, self.member_id

    def _check_can_commit(self):
        if self._subscription is None or self.member_epoch > 0:
            return
        if self.state is Member848State.JOINING:
            raise RebalanceInProgressError("joining the group; commit once partitions are assigned (poll)")
        raise CommitFailedError("Commit cannot be completed since this member is not part of the group "
                                "(it left after max_poll_interval_ms without poll(), or was fenced)")

    def group_metadata(self):
        from fastkc.group import ConsumerGroupMetadata

        return ConsumerGroupMetadata(self.group_id, self.member_epoch, self.member_id, self.group_instance_id,
                                     _KAFKA_PYTHON_STATE[self.state])

    def _mark_closed(self):
        if self.state is not Member848State.CLOSED:
            self._set_state(Member848State.CLOSED)

    def set_pattern(self, pattern):
        with self._lock:
            self._pattern = pattern
            self._heartbeat_now = True

    # --- hooks ------------------------------------------------------------------------------
    def _subscription_changed(self):
        self._heartbeat_now = True

    def _rebalance_needed(self, reason):
        self._heartbeat_now = True
        self._kick_thread()

    def _member_fenced(self, reason):
        log.info("group %s: member %s epoch %s fenced (%s)", self.group_id, self.member_id, self.member_epoch, reason)
        with self._lock:
            self.member_epoch = 0
            self._pending = None
            self._target_ids = None
            if self.state is not Member848State.FENCED and self.state is not Member848State.CLOSED:
                self._set_state(Member848State.FENCED)
            self._kick_thread()

    # --- the group thread -------------------------------------------------------------------
    def _step(self):
        now = self._clock()
        if self._commit_queue:  # async commits (also of manually assigned partitions)
            self._flush_async_commits_locked()
        if self._subscription is None or self._closed:
            return 1.0
        if self._poll_timeout_expired:
            return 1.0
        if self.state in (Member848State.STABLE, Member848State.RECONCILING) and \
                now - self._last_poll > self.config["max_poll_interval_ms"] / 1000.0:
            log.warning("group %s: no poll() for more than max_poll_interval_ms; leaving the group", self.group_id)
            self._poll_timeout_expired = True
            self._leave("consumer poll timeout has expired")
            self._set_state(Member848State.FENCED)  # the application must drop its partitions as lost
            return 1.0
        if self.state is Member848State.FENCED:
            return 1.0  # the application hands its partitions to on_partitions_lost first
        if self._target_ids is not None and not self._applying:
            self._resolve_target()
        if self.state is Member848State.UNJOINED:
            self.member_epoch = 0
            self._set_state(Member848State.JOINING)
            self._heartbeat()
            return 0.0
        if self._heartbeat_now or now >= self._next_heartbeat:
            self._heartbeat()
        return max(0.0, min(self._next_heartbeat - self._clock(), 1.0))

    def _heartbeat_body(self):
        body = {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch,
            "instance_id": self.group_instance_id, "rack_id": self.config["client_rack"] or None,
            "rebalance_timeout_ms": self.config["max_poll_interval_ms"],
            "subscribed_topic_names": list(self._subscription or ()), "subscribed_topic_regex": None,
            "server_assignor": self.config["group_remote_assignor"],
            "topic_partitions": heartbeat_topic_partitions(self._owned, self._topic_ids(self._owned)),
        }
        if self._pattern is not None and self._heartbeat_version() >= 1:
            # KIP-848 v1: the broker matches the regex (RE2/J syntax; the
            # common subset with Python's re) against every topic itself
            body["subscribed_topic_regex"] = self._pattern
            body["subscribed_topic_names"] = None
        return body

    def _heartbeat_version(self):
        conn = self.transport.client.connection(self.transport.coordinator_id) \
            if self.transport.coordinator_id is not None else None
        if conn is None or not conn.established:  # its versions hold while re-authenticating
            return 0
        return conn.version_for("ConsumerGroupHeartbeat")

    def _topic_ids(self, partitions):
        topics = sorted({tp.topic for tp in partitions})
        if not topics:
            return {}
        cluster = self.transport.client.cluster
        ids = {t: cluster.topics[t].topic_id for t in topics if t in cluster.topics and cluster.topics[t].topic_id}
        if len(ids) < len(topics):
            cluster = self.transport.metadata(topics, self.config["request_timeout_ms"])
            ids = {t: cluster.topics[t].topic_id for t in topics
                   if t in cluster.topics and cluster.topics[t].topic_id}
        return ids

    def _heartbeat(self):
        self._ensure_coordinator_locked(self._clock() + self.config["request_timeout_ms"] / 1000.0)
        sent_epoch = self.member_epoch
        self._heartbeat_now = False
        try:
            response = self.transport.call("ConsumerGroupHeartbeat", self._heartbeat_body(),
                                           self.config["request_timeout_ms"])
        except Exception:
            self._next_heartbeat = self._clock() + self.config["retry_backoff_ms"] / 1000.0
            if self.state is Member848State.JOINING:
                self._set_state(Member848State.UNJOINED)
            raise
        self._on_heartbeat_response(response, sent_epoch)

    def _on_heartbeat_response(self, response, sent_epoch):
        now = self._clock()
        code = response["error_code"]
        if code:
            cls = for_code(code)
            self._next_heartbeat = now + self.config["retry_backoff_ms"] / 1000.0
            if cls in (UnknownMemberIdError, FencedMemberEpochError):
                self._member_fenced("heartbeat answered {0}".format(cls.__name__))
                return
            if is_coordinator_error(cls("")):
                self.transport.coordinator_lost()
                if self.state is Member848State.JOINING:
                    self._set_state(Member848State.UNJOINED)
                return
            if cls is UnreleasedInstanceIdError:
                if self.state is Member848State.JOINING:
                    self._set_state(Member848State.UNJOINED)
                return
            if getattr(cls, "retriable", False):
                if self.state is Member848State.JOINING:
                    self._set_state(Member848State.UNJOINED)
                return
            raise cls("ConsumerGroupHeartbeat: {0}".format(response.get("error_message") or ""))
        if response["member_id"]:
            self.member_id = response["member_id"]
        if response["member_epoch"] != self.member_epoch:
            # the group is moving: partitions other members are releasing for
            # us only arrive with a heartbeat, so follow up quickly for a while
            self._fast_until = now + 2 * self._interval
        self.member_epoch = response["member_epoch"]
        if response["heartbeat_interval_ms"] > 0:
            self._interval = response["heartbeat_interval_ms"] / 1000.0
        interval = self._interval
        if now < self._fast_until:
            interval = min(interval, FAST_FOLLOW_UP_S)
        self._next_heartbeat = now + interval
        if self.state is Member848State.JOINING:
            self._set_state(Member848State.STABLE)
        assignment = response["assignment"]
        if assignment is not None:
            self._target_ids = assignment["topic_partitions"]
            if not self._applying:
                self._resolve_target()

    def _resolve_target(self):
        """Names for the target's topic ids; reconcile once all are known
        (unknown ids wait for metadata, as the Java client waits)."""
        cluster = self.transport.client.cluster
        target, unresolved = resolve_heartbeat_assignment(self._target_ids, cluster.topic_names_by_id)
        if unresolved:
            if self._pattern is not None:
                # the broker matched the regex: our metadata may not know those topics yet
                self.transport.client.wait_for_metadata(self.config["request_timeout_ms"], all_topics=True)
                cluster = self.transport.client.cluster
            else:
                cluster = self.transport.metadata(sorted(set(self._subscription or ())),
                                                  self.config["request_timeout_ms"])
            target, unresolved = resolve_heartbeat_assignment(self._target_ids, cluster.topic_names_by_id)
            if unresolved:
                log.debug("group %s: assignment names unknown topic ids %s; waiting for metadata", self.group_id,
                          unresolved)
                self._next_heartbeat = min(self._next_heartbeat,
                                           self._clock() + self.config["retry_backoff_ms"] / 1000.0)
                return
        with self._lock:
            if self._applying:
                return  # resolved again once the application is done
            self._target_ids = None
            if target != set(self._owned):
                # a newer target replaces one the application has not started on
                self._pending = target
                if self.state is not Member848State.RECONCILING:
                    self._set_state(Member848State.RECONCILING)
            elif self.state is Member848State.RECONCILING:
                self._pending = None
                self._set_state(Member848State.STABLE)
            self._kick_thread()

    def _leave(self, reason):
        if self.transport.coordinator_id is not None and self.member_epoch > 0 and \
                self.state is not Member848State.CLOSED:
            epoch = LEAVE_STATIC_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
            body = self._heartbeat_body()
            body["member_epoch"] = epoch
            try:
                response = self.transport.call("ConsumerGroupHeartbeat", body,
                                               min(self.config["request_timeout_ms"], 5000))
                if response["error_code"]:
                    log.info("leaving: %s", for_code(response["error_code"]).__name__)
            except Exception as exc:
                log.info("leaving the group failed: %s", exc)
        self.member_epoch = 0
        self._pending = None
        self._target_ids = None
        if self.state not in (Member848State.UNJOINED, Member848State.FENCED, Member848State.CLOSED):
            self._set_state(Member848State.UNJOINED)

    # --- the application's side ----------------------------------------------------------------
    def _apply_pending(self):
        with self._lock:
            state = self.state
            pending = self._pending if state is Member848State.RECONCILING else None
            self._applying = pending is not None
        try:
            self._reconcile(state, pending)
        finally:
            if pending is not None:
                with self._lock:
                    self._applying = False
                self._kick_thread()

    def _reconcile(self, state, pending):
        if state is Member848State.FENCED:
            if self._owned:
                self._revoke_on_app_thread(list(self._owned), lost=True, commit=False)
            with self._lock:
                if self.state is Member848State.FENCED:
                    self._set_state(Member848State.UNJOINED)
                self._kick_thread()
            return
        if pending is None:
            return
        revoked = set(self._owned) - pending
        if revoked:
            self._revoke_on_app_thread(sorted(revoked, key=lambda tp: (tp.topic, tp.partition)), lost=False,
                                       commit=True)
        kept = [tp for tp in self._owned if tp in pending]
        added = sorted(pending - set(kept), key=lambda tp: (tp.topic, tp.partition))
        self._assign_on_app_thread(added, kept + added)
        with self._lock:
            if self.state is Member848State.RECONCILING and self._pending is pending:
                self._pending = None
                self._set_state(Member848State.STABLE)
            self._heartbeat_now = True  # acknowledge at once
            self._kick_thread()
