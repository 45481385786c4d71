"""The sync driver of the group state machines: what every group member
shares, whichever protocol it speaks — the threading contract, the
rebalance listener, offset commits and fetches.

The protocol decisions live in I/O-free machines (`coordinator_machine.py`,
`commit_machine.py`, `classic_machine.py`, `consumer_machine.py`); this
driver moves their requests over the blocking `GroupTransport` and hands
their events to the application. DESIGN.md, "The group logic", maps the parts.

Threads:
- the application's thread calls KafkaConsumer.poll(); inside it the member
  applies what the group decided (`on_app_poll`): the machine's events
  (listener callbacks, assignment changes, committed positions),
  async-commit callbacks, auto commits. Listener callbacks therefore always
  run on the application's thread, inside poll (or commit/close), as the
  Java client runs them.
- the group thread (`_run`) sends what the membership machine asks for
  (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, ConsumerGroupHeartbeat,
  LeaveGroup after max_poll_interval_ms without a poll) and queued async
  commits, and sleeps until the machines' next deadline or a kick.
Two locks: `_io_lock` serialises every use of the group's own KafkaClient
(the thread's steps, commits, offset fetches, leaving); `_lock` guards the
machines (every call into them holds it) and is only ever held briefly —
never across a request — so the application's poll never waits behind a
JoinGroup the broker holds open (cooperative members keep consuming during
a rebalance). A Condition on `_lock` wakes the thread. The consumer's fetch
client is only ever used from the application's thread.

Commits carry the offset of the next record the application has not been
handed (fetcher positions), the leader epoch of the last record handed out,
and metadata; the error semantics are the Java client's (commit_machine.py).
"""
import abc
import collections
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from fastkc.config import Config, group_id_of
from fastkc.errors import KafkaError, KafkaTimeoutError
from fastkc.group.commit_machine import (
    CommitCallback,
    CommitCompleted,
    CommitMachine,
    CommitOp,
    Committed,
    FetchOp,
    Offsets,
    OpState,
    normalise_offsets,
)
from fastkc.group.committed_starts import CommittedStarts
from fastkc.group.coordinator_machine import (
    Coordinator,
    CoordinatorMachine,
    CoordinatorUnknownError,
    is_coordinator_error,
)
from fastkc.group.machine import earliest
from fastkc.group.reconciler import (
    COMMIT_BEFORE_REVOKE_FAILED,
    AcknowledgeAssignment,
    Assign,
    CallListener,
    CommitBeforeRevoke,
    ListenerErrors,
    Reconciler,
    Revoke,
    Step,
    listener_method,
)
from fastkc.request import COORDINATOR, Request, Token
from fastkc.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import ClusterMetadata
    from fastkc.group.classic_machine import ClassicMachine
    from fastkc.group.consumer_machine import ConsumerMachine

log = logging.getLogger(__name__)

#: the membership machine a member drives (ClassicMachine or ConsumerMachine)
Machine = TypeVar("Machine", "ClassicMachine", "ConsumerMachine")
#: a check that raises to end a wait (the consumer's wakeup())
Interrupt = Callable[[], None]


class MemberTransport(Protocol):
    """What the member asks of its transport (GroupTransport; a test's
    fake). Optional hooks (abort, interruptible, wake, client) are looked
    up with getattr."""

    coordinator_id: int | None

    def request_any(self, api_name: str, body: dict[str, Any], timeout_ms: float) -> Any: ...

    def use_coordinator(self, coordinator: Coordinator) -> None: ...

    def coordinator_lost(self) -> None: ...

    def call(self, api_name: str, body: dict[str, Any], timeout_ms: float) -> Any: ...

    def metadata(self, topics: Iterable[str] | None, timeout_ms: float) -> "ClusterMetadata": ...

    def close(self) -> None: ...


class MemberApp(Protocol):
    """The consumer side (GroupMemberBase's docstring)."""

    def positions(self) -> Mapping[TopicPartition, tuple[int, int]]: ...

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None: ...

    def seek(self, tp: TopicPartition, offset: int, epoch: int) -> None: ...

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None: ...

    def is_held(self, tp: TopicPartition) -> bool: ...

    def request_metadata_update(self) -> None: ...

NO_GENERATION = -1
NO_EPOCH = -1
#: how many request rounds one step of the group thread may chain (a
#: JoinGroup's Metadata and SyncGroup; a heartbeat's metadata lookup)
_MAX_ROUNDS = 8
#: close() past its bound: how long an aborted call gets to let go of the
#: group client (it does within milliseconds: the abort wakes its wait),
#: and how long the group thread gets to end. Neither needs more: without
#: the client close() skips the LeaveGroup (the session timeout removes the
#: member), and a thread that has not ended closes the client as it ends.
_ABORT_GRACE_S = 0.2
_END_GRACE_S = 0.1


class ConsumerRebalanceListener(abc.ABC):
    """kafka-python's listener interface: an abstract class (revoked and
    assigned must be implemented, as in kafka-python). on_partitions_lost
    defaults to on_partitions_revoked, as in kafka-python and Java."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        pass

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        self.on_partitions_revoked(lost)


class GroupMemberBase(Generic[Machine]):
    """The driver; subclasses name their machine (`_make_machine`); its
    events become the reconciler's steps, run on the application's thread."""

    protocol_name = ""  # "classic" / "consumer"

    def __init__(self, config: Config, transport: MemberTransport, app: MemberApp, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 start_thread: bool = True) -> None:
        """app: the consumer side, called only from the application's thread:
        app.positions() -> {tp: (offset, leader_epoch)} of assigned partitions
        with a position; app.set_assignment(partitions); app.seek(tp, offset, epoch).
        clock / sleep: injected together by tests (a fake clock that a fake
        sleep advances)."""
        self.config = config
        self.group_id = group_id_of(config)
        self.group_instance_id = config["group_instance_id"]
        self.transport = transport
        self.app = app
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.RLock()
        self._io_lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._kick = False  # the thread has work: skip its next sleep
        self._closed = False
        self._thread: threading.Thread | None = None
        self._thread_ended = False
        self._thread_closes_transport = False  # close() left the group client to the thread's end
        self._thread_error: Exception | None = None  # fatal error of the group thread, raised from poll
        self._listener: object = None  # kafka-python's or fastkc's ConsumerRebalanceListener, or None
        self.coordinator = CoordinatorMachine(self.group_id, config["retry_backoff_ms"], config["request_timeout_ms"])
        self.machine: Machine = self._make_machine(config, self.coordinator, clock())
        self.commits = CommitMachine(self.group_id, self.group_instance_id, self.coordinator, self.machine,
                                     config["retry_backoff_ms"], config["request_timeout_ms"])
        # (callback, offsets, error) for the application's poll
        self._commit_done: collections.deque[tuple[CommitCallback | None, Offsets, Exception | None]] = \
            collections.deque()
        self._auto_commit_interval = config["auto_commit_interval_ms"] / 1000.0
        self._next_auto_commit = clock() + self._auto_commit_interval
        self._auto_commit_op: CommitOp | None = None  # the last auto commit, refreshed while it waits
        self._start_thread = start_thread
        # Java's rules: on_partitions_assigned hears the added partitions; a
        # listener's error is raised from poll after the hand-over it interrupted
        self.reconciler = Reconciler(self.group_id, auto_commit=bool(config["enable_auto_commit"]),
                                     assigned_hears_whole_assignment=False)
        self._listener_errors = ListenerErrors(self.group_id, raise_after_hand_over=True)
        self._manual: list[TopicPartition] | None = None  # partitions assign()ed by the application (no subscription)
        # partitions (group-assigned or assign()ed) held until their committed offsets are read
        self._starts = CommittedStarts(config["retry_backoff_ms"])
        self._committed_read: FetchOp | None = None  # their OffsetFetch in flight (start_at_committed)

    @property
    def _auto_commit(self) -> bool:  # the reconciler's fact (it commits before revoking)
        return self.reconciler.auto_commit

    @_auto_commit.setter
    def _auto_commit(self, on: bool) -> None:
        self.reconciler.auto_commit = on

    # the machine's view, under the names the consumer-facing code uses
    @property
    def state(self) -> enum.Enum:  # the machine's state (ClassicState or ConsumerState)
        return self.machine.state

    @property
    def member_id(self) -> str:
        return self.machine.member_id

    @property
    def _owned(self) -> list[TopicPartition]:
        return self.machine.owned

    @_owned.setter
    def _owned(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self.machine.owned = list(partitions)

    @property
    def _subscription(self) -> list[str] | None:
        return self.machine.subscription

    @property
    def _last_poll(self) -> float:
        return self.machine.last_poll

    @_last_poll.setter
    def _last_poll(self, now: float) -> None:
        self.machine.last_poll = now

    @property
    def _next_heartbeat(self) -> float:
        return self.machine.next_heartbeat

    @_next_heartbeat.setter
    def _next_heartbeat(self, when: float) -> None:
        self.machine.next_heartbeat = when

    # --- lifecycle ------------------------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._start_thread and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fastkc-group-{0}".format(self.group_id),
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            with self._lock:
                self._thread_ended = True
                close_transport = self._thread_closes_transport
            if close_transport:
                self.transport.close()

    def _loop(self) -> None:
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

    def run_step(self) -> float:
        """One step of the group thread (tests call it directly); returns
        how long to sleep before the next."""
        try:
            return self._step()
        except Exception as exc:  # keep the thread alive; fatal errors reach the application
            if isinstance(exc, KafkaError) and (exc.retriable or is_coordinator_error(exc)):
                log.debug("group step: %s", exc)
                backoff_s: float = self.config["retry_backoff_ms"] / 1000.0
                return backoff_s
            log.warning("group thread error: %r", exc)
            self._thread_error = exc
            return 1.0

    def _step(self) -> float:
        """Queued async commits, then the membership machine's due requests
        (io lock held)."""
        if self.commits.busy:
            self._drive(self.commits)
        member = self._subscription is not None and not self._closed
        if member:
            self._before_requests()
            self._drive(self.machine, chain=True)
        now = self._clock()
        with self._lock:
            deadline = earliest(self.machine.next_deadline() if member else None,
                                self.commits.next_deadline() if self.commits.busy else None)
        if deadline is None:
            return 1.0
        return max(0.0, min(deadline - now, 1.0))

    def _before_requests(self) -> None:
        """What the driver tells the machine before asking for requests."""

    def _drive(self, machine: "Machine | CommitMachine", chain: bool = False, deadline: float | None = None) -> None:
        """Send the machine's due requests and feed back their answers; with
        chain, follow-ups it asks for at once (a JoinGroup's Metadata and
        SyncGroup) go out in the same step (io lock held). deadline: a
        caller's bound (commit_sync's timeout_ms) that no request may outlast
        -- a FindCoordinator made for a commit has the request timeout of its
        own, longer than what the commit was given."""
        for _ in range(_MAX_ROUNDS):
            with self._lock:
                requests = machine.next_requests(self._clock())
            if not requests:
                return
            for request in requests:
                if deadline is not None:
                    left_ms = max(1.0, (deadline - self._clock()) * 1000.0)
                    if request.timeout_ms is None or request.timeout_ms > left_ms:
                        request = request._replace(timeout_ms=left_ms)
                self._exchange(machine, request)
            if isinstance(machine, CommitMachine):  # self.commits, the only one
                if not self.commits.busy:  # else: the coordinator just found, or another operation
                    return
            elif chain:
                # a found coordinator is found for the request that waited for it
                found = any(r.api == "FindCoordinator" for r in requests) and self.coordinator.known
                with self._lock:
                    if not (found or machine.follow_up_now):
                        return
            else:
                return

    def _exchange(self, machine: "Machine | CommitMachine", request: Request[Token]) -> None:
        """One request over the blocking transport; its answer, or the error
        that ended it, goes back to the machine (io lock held)."""
        response: Any  # the decoded answer, or the error that ended the request
        try:
            response = self._send(request)
        except KafkaError as exc:
            response = exc
        with self._lock:
            try:
                machine.on_response(request.token, response, self._clock())
            finally:
                if not self.coordinator.known and self.transport.coordinator_id is not None:
                    self.transport.coordinator_lost()

    def _send(self, request: Request[Token]) -> Any:
        if request.target == COORDINATOR:
            coordinator = self.coordinator.coordinator
            if coordinator is None:
                raise CoordinatorUnknownError("no coordinator known")
            self.transport.use_coordinator(coordinator)
            return self.transport.call(request.api, request.body, request.timeout_ms)
        if request.api == "Metadata":
            return self.transport.metadata(request.body["topics"], request.timeout_ms)
        return self.transport.request_any(request.api, request.body, request.timeout_ms)

    def _io(self, deadline: float, interrupt: Interrupt | None = None) -> "_IoSlot":
        """The group client, waited for until `deadline` (a JoinGroup the
        broker holds open keeps it busy): KafkaTimeoutError past that, or
        interrupt()'s error when it raises meanwhile."""
        return _IoSlot(self._io_lock, max(0.0, deadline - self._clock()), interrupt)

    def _interruptible(self, interrupt: Interrupt | None) -> contextlib.AbstractContextManager[object]:
        hook = getattr(self.transport, "interruptible", None)  # test fakes have none
        if interrupt is None or hook is None:
            return contextlib.nullcontext()
        block: contextlib.AbstractContextManager[object] = hook(interrupt)
        return block

    def wake_caller(self) -> None:
        """From another thread: end the application's current wait on the
        group's client early, so its interrupt check runs."""
        wake = getattr(self.transport, "wake", None)
        if wake is not None:
            wake()

    def _wait_until(self, until: float, interrupt: Interrupt | None) -> None:
        """Sleep until `until` (the machines' next deadline); with an
        interrupt, in short slices so a wakeup() ends it promptly."""
        while True:
            if interrupt is not None:
                interrupt()
            left = until - self._clock()
            if left <= 0:
                return
            self._sleep(min(left, 0.02) if interrupt is not None else left)

    def _kick_thread(self) -> None:
        with self._lock:
            self._kick = True
            self._wake.notify_all()

    def close(self, autocommit: bool = True, timeout_ms: float | None = None) -> None:
        """Commit (when autocommit and enable_auto_commit), revoke through
        the listener, leave the group, stop the thread: all within one
        timeout_ms (default request_timeout_ms), as Java's close(timeout)
        shares one timer across its steps. A step the bound has run out for
        is skipped (the LeaveGroup then goes unsent: the session timeout
        removes the member), never waited for past it."""
        bound_ms: float = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + bound_ms / 1000.0

        def left_s(at_least: float = 0.1) -> float:
            return max(at_least, deadline - self._clock())

        try:
            if autocommit and self._auto_commit and self._committable():
                try:
                    self.commit_sync(None, left_s(0.001) * 1000.0)
                except KafkaError as exc:
                    log.warning("commit on close failed: %s", exc)
            if self._owned and self._subscription is not None:
                self._execute(self.reconciler.release(self._owned))
        finally:
            # a JoinGroup in flight may hold the group client for up to the
            # rebalance timeout: wait what is left of the bound, then end it
            acquired = self._io_lock.acquire(timeout=left_s())
            abort = getattr(self.transport, "abort", None)
            if not acquired and abort is not None:
                # end the JoinGroup (or other call) holding it, then leave
                abort()
                acquired = self._io_lock.acquire(timeout=left_s(_ABORT_GRACE_S))
            try:
                if acquired:
                    try:
                        if self.commits.busy:
                            self._drive(self.commits, deadline=deadline)
                        self._leave("the consumer is being closed", deadline)
                    except Exception as exc:  # closing must close
                        log.debug("leaving the group failed: %s", exc)
                else:
                    log.warning("group %s: the group client stayed busy; closing without LeaveGroup", self.group_id)
                self._closed = True
                with self._lock:
                    self.machine.close()
            finally:
                if acquired:
                    self._io_lock.release()
            self._kick_thread()
            if self._thread is not None and self._thread is not threading.current_thread():
                # the thread sees _closed at its next wake; a request it is
                # in holds it at most that request's timeout
                self._thread.join(timeout=left_s(_END_GRACE_S))
            # The group client is closed once no call uses it: here when the
            # thread has ended, else by the thread as it ends (it must not be
            # closed under the thread's call, nor left open after it).
            with self._lock:
                ended = self._thread is None or self._thread_ended
                if not ended:
                    self._thread_closes_transport = True
            if ended and acquired:
                self.transport.close()
            self.run_commit_callbacks()

    def _leave(self, reason: str, deadline: float | None = None) -> None:
        """Leave the group (io lock held): the machine's leave request, if
        it makes one, is sent and its answer (or failure) read, by deadline
        when one is given (close()'s bound)."""
        with self._lock:
            self.machine.leave(reason, self._clock())
            leaving = self.machine.state.name == "LEAVING"
        if leaving:  # else nothing to send (a static member keeps its place): never ask for more
            self._drive(self.machine, deadline=deadline)

    # --- subscription -----------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str], listener: object) -> None:
        with self._lock:
            self._listener = listener
            self._set_subscription(topics)
        self._ensure_thread()

    def update_subscription(self, topics: Iterable[str]) -> None:
        """A pattern's matches changed (from the consumer's metadata)."""
        with self._lock:
            self._set_subscription(topics)

    def _set_subscription(self, topics: Iterable[str] | None) -> None:
        with self._lock:
            if self.machine.set_subscription(topics):
                self._kick_thread()

    def unsubscribe(self) -> None:
        """Revoke (listener), leave the group, forget the subscription."""
        if self._owned:
            if self._auto_commit:
                try:
                    self.commit_sync(None, self.config["request_timeout_ms"])
                except KafkaError as exc:
                    log.warning("commit before unsubscribe failed: %s", exc)
            self._execute(self.reconciler.release(self._owned))
        with self._io_lock:
            with self._lock:
                self.machine.set_subscription(None)
            self._leave("the consumer unsubscribed")

    def subscription(self) -> set[str] | None:
        return None if self._subscription is None else set(self._subscription)

    def manual_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """assign() with a group_id: no membership, but committed offsets
        are the starting positions and auto commit covers these partitions."""
        self._manual = list(partitions)
        self._starts.hold(self.app, self._manual)

    def assignment(self) -> set[TopicPartition]:
        return set(self._owned)

    def metadata_changed(self, partition_counts: Mapping[str, int]) -> None:
        with self._lock:
            if self.machine.metadata_changed(partition_counts):
                self._kick_thread()

    # --- the application's side -------------------------------------------------------------
    def on_app_poll(self) -> None:
        """Called at the start of every KafkaConsumer.poll() round."""
        with self._lock:
            expired = self.machine.poll_timeout_expired
            self.machine.app_polled(self._clock())
            if expired:
                self._kick_thread()
        if self._thread_error is not None:
            error, self._thread_error = self._thread_error, None
            raise error
        if self.machine.fatal_error is not None:
            fatal, self.machine.fatal_error = self.machine.fatal_error, None
            raise fatal
        self.run_commit_callbacks()
        self._apply_pending()
        self.start_at_committed()
        failed = self._listener_errors.take()
        if failed is not None:
            raise failed
        if self._auto_commit and self._committable() and self._clock() >= self._next_auto_commit:
            self._next_auto_commit = self._clock() + self._auto_commit_interval
            self._auto_commit_now()

    def _auto_commit_now(self) -> None:
        """The positions handed out so far, committed asynchronously. While
        the last auto commit still waits for a coordinator (an outage), it
        is given these newer positions rather than queueing one more: one
        commit lands when the coordinator is back, none expires meanwhile."""
        op = self._auto_commit_op
        offsets = self._positions()
        if op is not None and offsets:
            with self._lock:  # the group thread moves the operation
                deadline = self._clock() + self.config["request_timeout_ms"] / 1000.0
                if self.commits.refresh(op, offsets, deadline) or op.state is OpState.IN_FLIGHT:
                    return  # in flight: the next interval commits what follows
        self._auto_commit_op = self.commit_async(None, self.config["default_offset_commit_callback"])

    def _apply_pending(self) -> None:
        """The machine's events, handled on the application's thread (the
        reconciler's steps), then acknowledged (also when a listener or a
        commit raised)."""
        with self._lock:
            events = self.machine.take_events()
        if not events:
            return
        try:
            for event in events:
                self._execute(self.reconciler.steps(event, self._owned, self._subscription))
        finally:
            with self._lock:
                self.machine.app_done(events)
            self._kick_thread()

    def _execute(self, steps: list[Step]) -> None:
        """The reconciler's steps, in order, on the application's thread."""
        for step in steps:
            if isinstance(step, CommitBeforeRevoke):
                positions = self._positions(step.partitions)
                if positions:
                    try:
                        self.commit_sync(positions, self.config["request_timeout_ms"])
                    except KafkaError as exc:
                        log.warning(COMMIT_BEFORE_REVOKE_FAILED, self.group_id, exc)
            elif isinstance(step, CallListener):
                self._call_listener(step.method, step.partitions)
            elif isinstance(step, Revoke):
                gone = set(step.partitions)
                self._owned = [tp for tp in self._owned if tp not in gone]
                self.app.set_assignment(list(self._owned))
            elif isinstance(step, Assign):
                self._assign(step.added, step.assignment)
            elif isinstance(step, AcknowledgeAssignment):
                self._acknowledge_assignment(step)

    def _assign(self, added: list[TopicPartition], assignment: list[TopicPartition]) -> None:
        """Take partitions: the new ones start at their committed offsets
        (auto_offset_reset when none)."""
        self._owned = list(assignment)
        self.app.set_assignment(list(assignment))
        self._starts.hold(self.app, added)
        self.start_at_committed()

    def _acknowledge_assignment(self, step: AcknowledgeAssignment) -> None:
        """Only the classic member is given this step (ClassicGroupMember)."""
        raise NotImplementedError

    def _call_listener(self, method: str, partitions: list[TopicPartition]) -> None:
        name = listener_method(self._listener, method)
        if name is None:
            return
        try:
            getattr(self._listener, name)(partitions)
        except Exception as exc:
            self._listener_errors.failed(method, exc)

    def _committable(self) -> bool:
        return bool(self._owned) if self._subscription is not None else bool(self._manual)

    def start_at_committed(self, wait_ms: float = 0.0, interrupt: Interrupt | None = None) -> None:
        """Held partitions start at their committed offsets
        (group/committed_starts.py). The read is one OffsetFetch operation
        kept from call to call, as Java keeps its pending committed-offset
        request: poll() starts it, the group thread carries it, and a later
        poll() applies the answer. poll() never waits for it -- a coordinator
        that does not answer must not stretch poll(timeout_ms) to the
        request timeout. position() waits up to wait_ms, driving it on the
        caller's thread. A read that fails for a reason a retry may fix
        leaves the partitions held, read again after retry_backoff_ms; any
        other failure is raised."""
        op = self._committed_read
        if op is None:
            due = self._starts.due(self.app, self._clock())
            if not due:
                return
            with self._lock:
                now = self._clock()
                op = self.commits.fetch(due, now, deadline=now + self.config["request_timeout_ms"] / 1000.0)
                self._kick_thread()
            self._committed_read = op
            self._ensure_thread()
        if wait_ms > 0 and not op.done:
            try:
                self._drive_op(op, self._clock() + wait_ms / 1000.0, interrupt, leave_in_flight=True)
            except BaseException:
                self._committed_read = None  # cancelled: the partitions stay held, read again next time
                raise
        if not op.done:
            return
        self._committed_read = None
        error = op.error
        if error is None:
            assert op.result is not None  # a settled fetch without an error has its result
            self._starts.settle(self.app, op.result)
            return
        self._starts.failed(self._clock(), error)
        if not (isinstance(error, KafkaError) and error.retriable):
            raise error

    def _positions(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        positions = self.app.positions()
        if partitions is None:
            partitions = self._owned if self._subscription is not None else (self._manual or ())
        wanted = set(partitions)
        return {tp: OffsetAndMetadata(offset, "", epoch) for tp, (offset, epoch) in positions.items()
                if tp in wanted}

    # --- commits ------------------------------------------------------------------------------
    def _normalise_offsets(self, offsets: Mapping[TopicPartition, object] | None,
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._positions() if offsets is None else normalise_offsets(offsets)

    def commit_sync(self, offsets: Mapping[TopicPartition, object] | None, timeout_ms: float | None,
                    interrupt: Interrupt | None = None) -> None:
        """Commit and wait; retriable failures (coordinator moves, timeouts)
        are retried until timeout_ms. Raises CommitFailedError /
        RebalanceInProgressError as the Java client does. interrupt: a check
        that raises to end the wait (the consumer's wakeup()); the commit
        may or may not have reached the coordinator then, as in Java."""
        normalised = self._normalise_offsets(offsets)
        if not normalised:
            return
        bound_ms: float = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + bound_ms / 1000.0
        with self._lock:
            op = self.commits.commit(normalised, self._clock(), deadline=deadline, retry=True)
        self._wait_for(op, deadline, interrupt)

    def commit_async(self, offsets: Mapping[TopicPartition, object] | None,
                     callback: CommitCallback | None) -> CommitOp | None:
        """Queue a commit for the group thread; callback(offsets, response)
        runs in a later poll on the application's thread (response is None on
        success, else the exception). Returns the operation (None: nothing
        to commit)."""
        normalised = self._normalise_offsets(offsets)
        if not normalised:
            return None
        with self._lock:
            now = self._clock()
            op = self.commits.commit(normalised, now, deadline=now + self.config["request_timeout_ms"] / 1000.0,
                                     callback=callback, asynchronous=True)
            self._kick_thread()
        self._ensure_thread()
        return op

    def _wait_for(self, op: CommitOp | FetchOp, deadline: float, interrupt: Interrupt | None) -> Committed | None:
        """Drive the commit machine until `op` is settled (its own deadline,
        at most `deadline`, ends it); raises its error."""
        self._drive_op(op, deadline, interrupt, leave_in_flight=False)
        if op.error is not None:
            raise op.error
        return op.result

    def _drive_op(self, op: CommitOp | FetchOp, deadline: float, interrupt: Interrupt | None, *,
                  leave_in_flight: bool) -> None:
        """Drive the commit machine on the caller's thread (io lock held for
        each round) until `op` is settled. leave_in_flight: stop at
        `deadline` (or when the group thread keeps the client until then)
        and leave `op` in flight for the group thread; else go on until the
        machine settles it at its own deadline. An interrupt or any other
        error cancels `op` and is raised."""
        try:
            while not op.done:
                if leave_in_flight and self._clock() >= deadline:
                    return
                try:
                    with self._io(deadline, interrupt), self._interruptible(interrupt):
                        self._drive(self.commits, deadline=deadline)
                except KafkaTimeoutError:
                    if leave_in_flight:
                        return  # the group thread kept the client (a JoinGroup held open) until deadline
                    raise
                if op.done:
                    break
                with self._lock:
                    until = self.commits.next_deadline()
                if until is None:  # nothing scheduled: an answer we wait for was dropped
                    until = self._clock() + self.config["retry_backoff_ms"] / 1000.0
                self._wait_until(min(until, deadline), interrupt)
        except BaseException as exc:
            with self._lock:
                self.commits.cancel(op, exc)
            raise
        finally:
            self._collect_commit_events()

    def _collect_commit_events(self) -> None:
        with self._lock:
            for event in self.commits.take_events():
                if isinstance(event, CommitCompleted):
                    op = event.op
                    error = op.error
                    # an asynchronous commit ends with what its answer or deadline
                    # gave, never a caller's interrupt (only synchronous waits cancel)
                    assert error is None or isinstance(error, Exception)
                    self._commit_done.append((op.callback, op.offsets, error))

    def run_commit_callbacks(self) -> None:
        """On the application's thread: run the callbacks of the
        asynchronous commits settled so far, in the order they settled (a
        failed one logged too). poll() and close() run them, and
        KafkaConsumer.commit() once its own commit is done."""
        self._collect_commit_events()
        while True:
            try:
                callback, offsets, error = self._commit_done.popleft()
            except IndexError:
                return
            if error is not None:
                log.warning("async offset commit failed: %s", error)
            if callback is not None:
                callback(offsets, error)

    # --- committed offsets -------------------------------------------------------------------
    def fetch_committed(self, partitions: Iterable[TopicPartition], timeout_ms: float,
                        interrupt: Interrupt | None = None) -> Committed:
        """{tp: OffsetAndMetadata or None} by OffsetFetch (require_stable, so
        offsets with pending transactional commits are waited for)."""
        tps = list(partitions)
        if not tps:
            return {}
        deadline = self._clock() + timeout_ms / 1000.0
        with self._lock:
            op = self.commits.fetch(tps, self._clock(), deadline=deadline)
        committed = self._wait_for(op, deadline, interrupt)
        assert committed is not None  # a settled fetch without an error has its result
        return committed

    def group_metadata(self) -> ConsumerGroupMetadata:
        raise NotImplementedError

    def _make_machine(self, config: Config, coordinator: CoordinatorMachine, now: float) -> Machine:
        raise NotImplementedError


class _IoSlot:
    """`with` over the group client's lock, waited for a bounded time (in
    short slices when an interrupt check must run meanwhile)."""

    _SLICE = 0.05

    def __init__(self, lock: "threading.RLock", timeout: float, interrupt: Interrupt | None = None) -> None:
        self.lock, self.timeout, self.interrupt = lock, timeout, interrupt

    def __enter__(self) -> "_IoSlot":
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

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.lock.release()
