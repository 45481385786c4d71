"""What every group member shares, whichever protocol it speaks: the
threading contract, the rebalance listener, offset commits and fetches.

Threads (see DESIGN.md, "Groups"):
- the application's thread calls KafkaConsumer.poll(); inside it the member
  applies what the group decided (`on_app_poll`): listener callbacks,
  assignment changes, committed positions, async-commit callbacks, auto
  commits. Listener callbacks therefore always run on the application's
  thread, inside poll (or commit/close), as the Java client runs them.
- the group thread (`_run`) finds the coordinator, joins, heartbeats, sends
  queued async commits, and leaves the group when the application stops
  polling for longer than max_poll_interval_ms.
Two locks: `_io_lock` serialises every use of the group's own KafkaClient
(the thread's steps, commits, offset fetches, leaving); `_lock` guards the
state handed between the threads and is only ever held briefly, so the
application's poll never waits behind a JoinGroup the broker holds open
(cooperative members keep consuming during a rebalance). A Condition on
`_lock` wakes the thread. The consumer's fetch client is only ever used from
the application's thread.

Commits carry the offset of the next record the application has not been
handed (fetcher positions), the leader epoch of the last record handed out,
and metadata; the error semantics are the Java client's (see `_commit_error`).
"""
import abc
import contextlib
import collections
import logging
import threading
import time

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
from fastkc.group.transport import CoordinatorUnknownError, is_coordinator_error
from fastkc.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

NO_GENERATION = -1
NO_EPOCH = -1


class ConsumerRebalanceListener(abc.ABC):
    """kafka-python's listener interface: an abstract class (revoked and
    assigned must be implemented, as in kafka-python). on_partitions_lost
    defaults to on_partitions_revoked, as in kafka-python and Java."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked):
        pass

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned):
        pass

    def on_partitions_lost(self, lost):
        self.on_partitions_revoked(lost)


def _sorted_tps(tps):
    return sorted(tps, key=lambda tp: (tp.topic, tp.partition))


def call_listener(listener, method, partitions):
    """Call a listener method with a sorted list of partitions. A listener
    without on_partitions_lost (kafka-python's abstract class predates it)
    gets on_partitions_revoked, as Java's default method does."""
    if listener is None:
        return
    fn = getattr(listener, method, None)
    if fn is None and method == "on_partitions_lost":
        fn = getattr(listener, "on_partitions_revoked", None)
    if fn is None:
        return
    fn(_sorted_tps(partitions))


class GroupMemberBase:
    """Shared machinery; subclasses implement the membership protocol:
    `_step()` (the group thread's work, lock held), `_apply_pending()`
    (application-thread side), `_commit_identity()`, `_leave()`."""

    protocol_name = None  # "classic" / "consumer"

    def __init__(self, config, transport, app, *, clock=time.monotonic, start_thread=True):
        """app: the consumer side, called only from the application's thread:
        app.positions() -> {tp: (offset, leader_epoch)} of assigned partitions
        with a position; app.set_assignment(partitions); app.seek(tp, offset, epoch)."""
        self.config = config
        self.group_id = config["group_id"]
        self.group_instance_id = config["group_instance_id"]
        self.transport = transport
        self.app = app
        self._clock = clock
        self._lock = threading.RLock()
        self._io_lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._kick = False  # the thread has work: skip its next sleep
        self._closed = False
        self._thread = None
        self._thread_error = None  # fatal error of the group thread, raised from poll
        self._subscription = None  # sorted list of topic names while subscribed
        self._listener = None
        self._owned = []  # what the application holds (list of TopicPartition, assignment order)
        self._last_poll = clock()
        self._poll_timeout_expired = False
        self._next_find = 0.0
        # async commits: queued by the application, sent by the group thread,
        # their callbacks run by the application in poll
        self._commit_queue = collections.deque()
        self._commit_done = collections.deque()
        self._auto_commit = bool(config["enable_auto_commit"])
        self._auto_commit_interval = config["auto_commit_interval_ms"] / 1000.0
        self._next_auto_commit = clock() + self._auto_commit_interval
        self._start_thread = start_thread
        self._listener_error = None  # raised from poll after the hand-over it interrupted
        self._manual = None  # partitions assign()ed by the application (no subscription)
        self._manual_unresolved = []  # of those, the ones still to start at committed offsets

    # --- lifecycle ------------------------------------------------------------------------
    def _ensure_thread(self):
        if self._start_thread and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fastkc-group-{0}".format(self.group_id),
                                            daemon=True)
            self._thread.start()

    def _run(self):
        wait = 0.0
        while True:
            with self._lock:
                if self._closed:
                    return
                if wait > 0 and not self._kick:
                    self._wake.wait(wait)
                self._kick = False
                if self._closed:
                    return
            with self._io_lock:
                if self._closed:
                    return
                wait = self.run_step()

    def run_step(self):
        """One step of the group thread (tests call it directly)."""
        try:
            return self._step()
        except Exception as exc:  # keep the thread alive; fatal errors reach the application
            if isinstance(exc, KafkaError) and (exc.retriable or is_coordinator_error(exc)):
                log.debug("group step: %s", exc)
                return self.config["retry_backoff_ms"] / 1000.0
            log.warning("group thread error: %r", exc)
            self._thread_error = exc
            return 1.0

    def _io(self, deadline, interrupt=None):
        """The group client, waited for until `deadline` (a JoinGroup the
        broker holds open keeps it busy): KafkaTimeoutError past that, or
        interrupt()'s error when it raises meanwhile."""
        return _IoSlot(self._io_lock, max(0.0, deadline - self._clock()), interrupt)

    def _interruptible(self, interrupt):
        hook = getattr(self.transport, "interruptible", None)  # test fakes have none
        if interrupt is None or hook is None:
            return contextlib.nullcontext()
        return hook(interrupt)

    def wake_caller(self):
        """From another thread: end the application's current wait on the
        group's client early, so its interrupt check runs."""
        wake = getattr(self.transport, "wake", None)
        if wake is not None:
            wake()

    def _back_off(self, deadline, interrupt):
        """retry_backoff_ms (not past `deadline`) before a retry; with an
        interrupt, in short slices so a wakeup() ends it promptly."""
        wait = min(self.config["retry_backoff_ms"] / 1000.0, max(0.0, deadline - self._clock()))
        if interrupt is None:
            time.sleep(wait)
            return
        # sliced on the real clock: the injected one (tests) need not move while we sleep
        until = time.monotonic() + wait
        while True:
            interrupt()
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.02))

    def _kick_thread(self):
        with self._lock:
            self._kick = True
            self._wake.notify_all()

    def close(self, autocommit=True, timeout_ms=None):
        """Commit (when autocommit and enable_auto_commit), revoke through
        the listener, leave the group, stop the thread."""
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        try:
            if autocommit and self._auto_commit and self._committable():
                try:
                    self.commit_sync(None, timeout_ms)
                except KafkaError as exc:
                    log.warning("commit on close failed: %s", exc)
            if self._owned and self._subscription is not None:
                self._revoke_on_app_thread(list(self._owned), lost=False, commit=False)
        finally:
            # a JoinGroup in flight may hold the group client for up to the
            # rebalance timeout: wait a bounded time, then go without leaving
            acquired = self._io_lock.acquire(timeout=max(0.1, timeout_ms / 1000.0))
            abort = getattr(self.transport, "abort", None)
            if not acquired and abort is not None:
                # end the JoinGroup (or other call) holding it, then leave
                abort()
                acquired = self._io_lock.acquire(timeout=1.0)
            try:
                if acquired:
                    try:
                        self._flush_async_commits_locked()
                        self._leave("the consumer is being closed")
                    except Exception as exc:  # closing must close
                        log.debug("leaving the group failed: %s", exc)
                else:
                    log.warning("group %s: the group client stayed busy; closing without LeaveGroup", self.group_id)
                self._closed = True
                self._mark_closed()
            finally:
                if acquired:
                    self._io_lock.release()
            self._kick_thread()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout=5.0)
            if acquired and (self._thread is None or not self._thread.is_alive()):
                self.transport.close()
            self._deliver_commit_callbacks()

    # --- subscription -----------------------------------------------------------------------
    def subscribe(self, topics, listener):
        with self._lock:
            self._listener = listener
            self._set_subscription(topics)
        self._ensure_thread()

    def update_subscription(self, topics):
        """A pattern's matches changed (from the consumer's metadata)."""
        with self._lock:
            self._set_subscription(topics)

    def _set_subscription(self, topics):
        topics = sorted(set(topics))
        if topics != self._subscription:
            self._subscription = topics
            self._subscription_changed()
            self._kick_thread()

    def unsubscribe(self):
        """Revoke (listener), leave the group, forget the subscription."""
        if self._owned:
            if self._auto_commit:
                try:
                    self.commit_sync(None, self.config["request_timeout_ms"])
                except KafkaError as exc:
                    log.warning("commit before unsubscribe failed: %s", exc)
            self._revoke_on_app_thread(list(self._owned), lost=False, commit=False)
        with self._io_lock:
            self._subscription = None
            self._leave("the consumer unsubscribed")

    def subscription(self):
        return None if self._subscription is None else set(self._subscription)

    def manual_assignment(self, partitions):
        """assign() with a group_id: no membership, but committed offsets
        are the starting positions and auto commit covers these partitions."""
        self._manual = list(partitions)
        self._manual_unresolved = list(partitions)

    def assignment(self):
        return set(self._owned)

    # --- the application's side -------------------------------------------------------------
    def on_app_poll(self):
        """Called at the start of every KafkaConsumer.poll() round."""
        self._last_poll = self._clock()
        if self._thread_error is not None:
            error, self._thread_error = self._thread_error, None
            raise error
        self._deliver_commit_callbacks()
        if self._poll_timeout_expired:
            with self._lock:
                self._poll_timeout_expired = False
                self._kick_thread()
        if self._manual_unresolved and self._subscription is None:
            self._start_manual_at_committed()
        self._apply_pending()
        if self._listener_error is not None:
            error, self._listener_error = self._listener_error, None
            raise error
        if self._auto_commit and self._committable() and self._clock() >= self._next_auto_commit:
            self._next_auto_commit = self._clock() + self._auto_commit_interval
            self.commit_async(None, self.config["default_offset_commit_callback"])

    def _revoke_on_app_thread(self, partitions, *, lost, commit):
        """Give partitions up: commit their positions first (auto commit,
        not when lost: the group has moved on), call the listener, stop
        fetching them."""
        if commit and not lost and self._auto_commit and partitions:
            positions = self._positions(partitions)
            if positions:
                try:
                    self.commit_sync(positions, self.config["request_timeout_ms"])
                except KafkaError as exc:
                    log.warning("commit before revocation failed: %s", exc)
        self._call_listener("on_partitions_lost" if lost else "on_partitions_revoked", partitions)
        gone = set(partitions)
        with self._lock:
            self._owned = [tp for tp in self._owned if tp not in gone]
        self.app.set_assignment(list(self._owned))

    def _assign_on_app_thread(self, added, all_assigned):
        """Take partitions: fetch their committed offsets (falling back to
        auto_offset_reset when none), then tell the listener."""
        with self._lock:
            self._owned = list(all_assigned)
        self.app.set_assignment(list(all_assigned))
        if added:
            committed = self.fetch_committed(added, self.config["request_timeout_ms"])
            for tp in added:
                entry = committed.get(tp)
                if entry is not None and entry.offset >= 0:
                    self.app.seek(tp, entry.offset, entry.leader_epoch)
        self._call_listener("on_partitions_assigned", added)

    def _call_listener(self, method, partitions):
        """A listener that raises does not stop the hand-over half way (the
        group would be left inconsistent); the first error is raised from
        poll once the hand-over is complete, as the Java client does."""
        try:
            call_listener(self._listener, method, partitions)
        except Exception as exc:
            log.error("group %s: %s raised %r", self.group_id, method, exc)
            if self._listener_error is None:
                self._listener_error = exc

    def _committable(self):
        return bool(self._owned) if self._subscription is not None else bool(self._manual)

    def _start_manual_at_committed(self):
        positions = self.app.positions()
        need = [tp for tp in self._manual_unresolved if tp not in positions]
        committed = self.fetch_committed(need, self.config["request_timeout_ms"])
        self._manual_unresolved = []
        for tp in need:
            entry = committed.get(tp)
            if entry is not None and entry.offset >= 0:
                self.app.seek(tp, entry.offset, entry.leader_epoch)

    def _positions(self, partitions=None):
        positions = self.app.positions()
        if partitions is None:
            partitions = self._owned if self._subscription is not None else (self._manual or ())
        wanted = set(partitions)
        return {tp: OffsetAndMetadata(offset, "", epoch) for tp, (offset, epoch) in positions.items()
                if tp in wanted}

    # --- commits ------------------------------------------------------------------------------
    def _normalise_offsets(self, offsets):
        if offsets is None:
            return self._positions()
        out = {}
        for tp, value in offsets.items():
            if not isinstance(tp, TopicPartition):
                raise TypeError("commit offsets are keyed by TopicPartition, not {0!r}".format(tp))
            if isinstance(value, int) and not isinstance(value, bool):
                value = OffsetAndMetadata(value, "", -1)
            elif not isinstance(value, OffsetAndMetadata):
                if isinstance(value, tuple) and len(value) in (2, 3):
                    value = OffsetAndMetadata(*value)
                else:
                    raise TypeError("commit offsets must be OffsetAndMetadata, not {0!r}".format(value))
            if not isinstance(value.offset, int) or value.offset < 0:
                raise ValueError("commit offset for {0} must be a non-negative int".format(tp))
            out[tp] = value
        return out

    def _commit_body(self, offsets):
        generation, member_id = self._commit_identity()
        by_topic = {}
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

    def commit_sync(self, offsets, timeout_ms, interrupt=None):
        """Commit and wait; retriable failures (coordinator moves, timeouts)
        are retried until timeout_ms. Raises CommitFailedError /
        RebalanceInProgressError as the Java client does. interrupt: a check
        that raises to end the wait (the consumer's wakeup()); the commit
        may or may not have reached the coordinator then, as in Java."""
        offsets = self._normalise_offsets(offsets)
        if not offsets:
            return
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            with self._io(deadline, interrupt), self._interruptible(interrupt):
                try:
                    self._ensure_coordinator_locked(deadline)
                    self._send_commit_locked(offsets, max(1.0, (deadline - self._clock()) * 1000.0))
                    return
                except KafkaError as exc:
                    if not (exc.retriable or is_coordinator_error(exc)):
                        raise
                    last = exc
            if self._clock() >= deadline:
                raise KafkaTimeoutError("commit not done within {0} ms: {1}".format(timeout_ms, last))
            self._back_off(deadline, interrupt)

    def commit_async(self, offsets, callback):
        """Queue a commit for the group thread; callback(offsets, response)
        runs in a later poll on the application's thread (response is None on
        success, else the exception)."""
        offsets = self._normalise_offsets(offsets)
        if not offsets:
            return
        with self._lock:
            self._commit_queue.append((offsets, callback))
            self._kick_thread()
        self._ensure_thread()

    def _flush_async_commits_locked(self):
        while self._commit_queue:
            offsets, callback = self._commit_queue.popleft()
            try:
                self._ensure_coordinator_locked(self._clock() + self.config["request_timeout_ms"] / 1000.0)
                self._send_commit_locked(offsets, self.config["request_timeout_ms"])
                self._commit_done.append((callback, offsets, None))
            except Exception as exc:
                self._commit_done.append((callback, offsets, exc))

    def _deliver_commit_callbacks(self):
        while True:
            try:
                callback, offsets, error = self._commit_done.popleft()
            except IndexError:
                return
            if error is not None:
                log.warning("async offset commit failed: %s", error)
            if callback is not None:
                callback(offsets, error)

    def _send_commit_locked(self, offsets, timeout_ms):
        self._check_can_commit()
        identity_before = self._commit_identity()
        response = self.transport.call("OffsetCommit", self._commit_body(offsets), timeout_ms)
        first_error = None
        for topic in response["topics"]:
            for part in topic["partitions"]:
                if part["error_code"] and first_error is None:
                    first_error = part["error_code"]
        if first_error:
            raise self._commit_error(first_error, identity_before)

    def _commit_error(self, code, identity):
        """The Java client's reading of an OffsetCommit error."""
        cls = for_code(code)
        if is_coordinator_error(cls("")):
            self.transport.coordinator_lost()
            return cls("offset commit")
        if cls is RebalanceInProgressError:
            self._rebalance_needed("commit answered REBALANCE_IN_PROGRESS")
            return RebalanceInProgressError(
                "the group is rebalancing; the commit can be retried after the rebalance completes (poll)")
        if cls in (UnknownMemberIdError, IllegalGenerationError):
            self._member_fenced("commit answered {0}".format(cls.__name__))
            return CommitFailedError(
                "Commit cannot be completed since the group has already rebalanced and assigned the partitions "
                "to another member (generation/member {0} is no longer current). The time between poll() calls "
                "may be longer than max_poll_interval_ms, or poll() spends too long processing records.".format(
                    identity))
        if cls is StaleMemberEpochError:
            # KIP-848: our epoch is behind the member's; a retry uses the newer one
            return StaleMemberEpochError("offset commit with a stale member epoch {0}".format(identity[0]))
        if cls is FencedInstanceIdError:
            self._thread_error = cls("another consumer with group_instance_id {0!r} joined".format(
                self.group_instance_id))
            return self._thread_error
        return cls("offset commit")

    # --- committed offsets -------------------------------------------------------------------
    def fetch_committed(self, partitions, timeout_ms, interrupt=None):
        """{tp: OffsetAndMetadata or None} by OffsetFetch (require_stable, so
        offsets with pending transactional commits are waited for)."""
        partitions = list(partitions)
        if not partitions:
            return {}
        deadline = self._clock() + timeout_ms / 1000.0
        by_topic = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": sorted(p)} for t, p in sorted(by_topic.items())]
        body = {"group_id": self.group_id, "topics": topics, "require_stable": True,
                "groups": [{"group_id": self.group_id, "member_id": None, "member_epoch": -1, "topics": topics}]}
        last = None
        while True:
            with self._io(deadline, interrupt), self._interruptible(interrupt):
                try:
                    self._ensure_coordinator_locked(deadline)
                    response = self.transport.call("OffsetFetch", body, max(1.0, (deadline - self._clock()) * 1000))
                    return self._read_offset_fetch(response, partitions)
                except KafkaError as exc:
                    if not (exc.retriable or is_coordinator_error(exc)):
                        raise
                    last = exc
            if self._clock() >= deadline:
                raise KafkaTimeoutError("committed offsets not fetched within {0} ms: {1}".format(timeout_ms, last))
            self._back_off(deadline, interrupt)

    def _read_offset_fetch(self, response, partitions):
        if response.get("groups"):
            group = response["groups"][0]
            top_error, topics = group["error_code"], group["topics"]
        else:
            top_error, topics = response.get("error_code", 0), response["topics"]
        if top_error:
            cls = for_code(top_error)
            if is_coordinator_error(cls("")):
                self.transport.coordinator_lost()
            raise cls("offset fetch for group {0}".format(self.group_id))
        out = {tp: None for tp in partitions}
        for topic in topics:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], part["partition_index"])
                if part["error_code"]:
                    cls = for_code(part["error_code"])
                    raise cls("offset fetch for {0}".format(tp))
                if part["committed_offset"] >= 0:
                    out[tp] = OffsetAndMetadata(part["committed_offset"], part["metadata"] or "",
                                                part["committed_leader_epoch"])
        return out

    # --- the coordinator ----------------------------------------------------------------------
    def _ensure_coordinator_locked(self, deadline):
        """Find the coordinator, retrying COORDINATOR_NOT_AVAILABLE and
        friends with retry_backoff_ms until `deadline` (_io_lock held)."""
        while self.transport.coordinator_id is None:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise CoordinatorUnknownError("group coordinator for {0!r} not found in time".format(self.group_id))
            try:
                self.transport.find_coordinator(self.group_id, max(1.0, remaining * 1000.0))
            except KafkaError as exc:
                if not (exc.retriable or is_coordinator_error(exc)):
                    raise
                log.debug("FindCoordinator: %s", exc)
                time.sleep(min(self.config["retry_backoff_ms"] / 1000.0, max(0.0, remaining)))

    # --- protocol hooks -----------------------------------------------------------------------
    def _check_can_commit(self):
        """Raise before sending when a subscribed member has no generation
        (Java checks this client-side: such a commit would be accepted as a
        "simple" commit and overwrite the new owner's progress)."""
    def _subscription_changed(self):
        raise NotImplementedError

    def _rebalance_needed(self, reason):
        raise NotImplementedError

    def _member_fenced(self, reason):
        raise NotImplementedError

    def _commit_identity(self):
        raise NotImplementedError

    def _mark_closed(self):
        raise NotImplementedError

    def _apply_pending(self):
        raise NotImplementedError

    def _step(self):
        raise NotImplementedError

    def _leave(self, reason):
        raise NotImplementedError

    def group_metadata(self):
        raise NotImplementedError


class _IoSlot:
    """`with` over the group client's lock, waited for a bounded time (in
    short slices when an interrupt check must run meanwhile)."""

    _SLICE = 0.05

    def __init__(self, lock, timeout, interrupt=None):
        self.lock, self.timeout, self.interrupt = lock, timeout, interrupt

    def __enter__(self):
        if self.interrupt is None:
            acquired = self.lock.acquire(timeout=self.timeout)
        else:
            deadline = time.monotonic() + self.timeout
            while True:
                self.interrupt()
                left = deadline - time.monotonic()
                acquired = self.lock.acquire(timeout=max(0.0, min(left, self._SLICE)))
                if acquired or left <= self._SLICE:
                    break
        if not acquired:
            raise KafkaTimeoutError("the group client stayed busy (a rebalance in progress) for {0:.1f} s".format(
                self.timeout))
        return self

    def __exit__(self, *exc_info):
        self.lock.release()
