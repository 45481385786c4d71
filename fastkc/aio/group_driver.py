"""The asyncio driver of the group state machines (fastkc/group/*_machine.py)
for `fastkc.aio.AIOKafkaConsumer`: the same CoordinatorMachine,
ClassicMachine / ConsumerMachine (group_protocol) and CommitMachine the sync
member drives, moved by asyncio instead of a thread. No protocol decision is
made here.

On the loop:
- one task (`_run`) asks the machines for their due requests, starts one
  exchange task per request (over `AioGroupTransport`'s own connections,
  never the fetch client's), sleeps until the machines' next deadline, the
  auto-commit timer or a wake-up. Heartbeats therefore go out whenever the
  application is not holding the loop, also between getmany calls; the
  machines enforce max_poll_interval_ms from the last `on_app_poll`.
- an exchange task awaits one answer and feeds it (or the error that ended
  it) to the machine that asked, then wakes the task. A machine keeps at
  most one request of its own in flight, so a JoinGroup the coordinator
  holds open never stops a commit from being sent, and cancelling an
  awaited commit()/committed() leaves the exchange (and the driver) alone.
- the application's coroutines (getone/getmany call `on_app_poll`) apply
  the machines' events as the reconciler's steps (fastkc/group/reconciler.py,
  the sync member's list too): revoke before assign, lost after fencing,
  listener callbacks awaited when they are coroutines, committed offsets
  read for new partitions. A commit inside a callback works: the task keeps
  running.
- auto commit is a timer of the task (auto_commit_interval_ms), never while
  an assignment change is being applied.

Errors are fastkc's classes, which are aiokafka's names (fastkc.aio.errors):
CommitFailedError, RebalanceInProgressError, IllegalStateError,
KafkaTimeoutError; an error no retry fixes (authorization, a fenced static
member) is raised from the next on_app_poll.

The application side (`app`), called on the loop, never awaited:
  app.positions(partitions) -> {tp: OffsetAndMetadata}   positions to commit
  app.assign_from_group(partitions)   the whole new assignment (fetch them)
  app.revoke_from_group(partitions)   stop fetching these
  app.topics_matching(pattern) -> set of topic names (pattern subscriptions)
  app.request_metadata_for(topics)    the fetch client's metadata must cover
                                      these (None: every topic)
  app.hold_for_committed(tp, held=True) / app.is_held(tp) / app.seek(tp,
      offset, epoch)   partitions just assigned wait for their committed
      offsets (group/committed_starts.py): read before on_partitions_assigned
      runs, and again after retry_backoff_ms while the read fails
"""
import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from fastkc.aio.abc import ConsumerRebalanceListener, call_listener
from fastkc.aio.group_transport import AioGroupTransport, GroupTransport
from fastkc.config import Config, group_id_of
from fastkc.errors import IllegalStateError, KafkaError
from fastkc.group import classic_machine, consumer_machine
from fastkc.group.commit_machine import (
    CommitCompleted,
    CommitMachine,
    CommitOp,
    Committed,
    CommitValue,
    FetchOp,
    normalise_offsets,
)
from fastkc.group.committed_starts import CommittedStarts, HeldPartitions
from fastkc.group.coordinator_machine import CoordinatorMachine, CoordinatorUnknownError, is_coordinator_error
from fastkc.group.machine import earliest
from fastkc.group.reconciler import (
    COMMIT_BEFORE_REVOKE_FAILED,
    REVOKED,
    AcknowledgeAssignment,
    Assign,
    CallListener,
    CommitBeforeRevoke,
    ListenerErrors,
    Reconciler,
    Revoke,
    Step,
    listener_method,
    sorted_partitions,
)
from fastkc.group.subscription import Pattern, compile_pattern
from fastkc.request import COORDINATOR, Request, Token
from fastkc.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

#: pattern matches are looked at again at most this often (seconds)
_PATTERN_RECHECK_S = 1.0
#: the longest the task sleeps without a deadline (a safety net: every
#: change that matters wakes it)
_IDLE_S = 1.0
#: the shortest sleep after a step that sent nothing
_MIN_WAIT_S = 0.005


#: {tp: OffsetAndMetadata or None}: committed offsets (None: nothing committed)
#: one listener callback run: (listener, method name, partitions)
ListenerRunner = Callable[[ConsumerRebalanceListener, str, list[TopicPartition]], Awaitable[object]]
#: a membership machine (group_protocol picks which)
Membership = classic_machine.ClassicMachine | consumer_machine.ConsumerMachine


class GroupApp(HeldPartitions, Protocol):
    """The application side (module docstring)."""

    def positions(self, partitions: Iterable[TopicPartition] | None = None) -> Mapping[TopicPartition, CommitValue]: ...

    def assign_from_group(self, partitions: Iterable[TopicPartition]) -> None: ...

    def revoke_from_group(self, partitions: Iterable[TopicPartition]) -> None: ...

    def topics_matching(self, pattern: Pattern) -> Collection[str]: ...

    def request_metadata_for(self, topics: Iterable[str] | None) -> None: ...


class AioGroupDriver:
    def __init__(self, config: Config, app: GroupApp, *, listener_runner: ListenerRunner | None = None,
                 transport: GroupTransport | None = None, clock: Callable[[], float] | None = None) -> None:
        """config: fastkc's core consumer config (kafka-python names);
        listener_runner: `async fn(listener, method, partitions)` that runs
        one listener callback (default: call it, await a coroutine);
        transport / clock: tests inject a scripted transport and a clock."""
        self.config = config
        self.app = app
        self.group_id = group_id_of(config)
        self.group_instance_id = config["group_instance_id"]
        self.protocol = config["group_protocol"]
        self.transport: GroupTransport = transport if transport is not None else AioGroupTransport(config)
        self._clock = clock
        self._listener_runner: ListenerRunner = listener_runner or _run_listener
        self.coordinator = CoordinatorMachine(self.group_id, config["retry_backoff_ms"], config["request_timeout_ms"])
        now = self._now_or_zero()
        self.machine: Membership
        if self.protocol == "consumer":
            self.machine = consumer_machine.ConsumerMachine(config, self.coordinator, now)
        else:
            self.machine = classic_machine.ClassicMachine(config, self.coordinator, now)
        self.commits = CommitMachine(self.group_id, self.group_instance_id, self.coordinator, self.machine,
                                     config["retry_backoff_ms"], config["request_timeout_ms"])
        # aiokafka's rules: on_partitions_assigned hears the whole
        # assignment; a failing callback is logged and the hand-over goes on
        self.reconciler = Reconciler(self.group_id, auto_commit=bool(config["enable_auto_commit"]),
                                     assigned_hears_whole_assignment=True)
        self._listener_errors = ListenerErrors(self.group_id, raise_after_hand_over=False)
        self._auto_commit_interval = config["auto_commit_interval_ms"] / 1000.0
        self._next_auto_commit: float | None = None
        self._auto_commit_op: CommitOp | None = None
        self._listener: ConsumerRebalanceListener | None = None
        self._pattern: re.Pattern[str] | None = None
        self._pattern_checked: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None  # the task has work
        self._changed: list[asyncio.Future[None]] = []  # futures of coroutines waiting for any answer
        # exchange task -> (machine, request)
        self._inflight: dict[asyncio.Task[None], tuple[Membership | CommitMachine, Request[Token]]] = {}
        self._apply_lock: asyncio.Lock | None = None
        self._applying = False
        self._error: BaseException | None = None  # what no retry fixes, raised from the next on_app_poll
        self._closed = False
        # partitions held until their committed offsets are read, and the task reading them again
        self._starts = CommittedStarts(config["retry_backoff_ms"])
        self._starts_task: asyncio.Task[None] | None = None

    @property
    def _auto_commit(self) -> bool:  # the reconciler's fact (it commits before revoking)
        return self.reconciler.auto_commit

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def _now_or_zero(self) -> float:
        if self._clock is not None:
            return self._clock()
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return 0.0  # made off the loop: start() sets the poll clock again

    # --- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn the group task on the running loop (once)."""
        if self._task is not None:
            return
        if self._closed:
            raise IllegalStateError("the group driver was stopped")
        self._wake = asyncio.Event()
        self._apply_lock = asyncio.Lock()
        now = self._now()
        self.machine.last_poll = now
        self._next_auto_commit = now + self._auto_commit_interval
        self._task = asyncio.get_running_loop().create_task(self._run(), name="fastkc-group-{0}".format(
            self.group_id))
        if self._starts.pending:
            self._keep_reading_starts()

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _notify(self) -> None:
        """Something was answered: wake the task and every waiter."""
        self._kick()
        waiters, self._changed = self._changed, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _wait_changed(self, timeout: float) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._changed.append(waiter)
        try:
            await asyncio.wait_for(waiter, max(0.0, timeout))
        except TimeoutError:
            pass

    async def _run(self) -> None:
        wake = self._wake
        assert wake is not None  # start() made it before it started this task
        try:
            while not self._closed:
                wake.clear()
                try:
                    wait: float = self._step()
                except Exception as exc:  # noqa: BLE001 - the task must live; the app sees it from poll
                    log.warning("group %s: %r", self.group_id, exc)
                    self._fail(exc)
                    wait = self.config["retry_backoff_ms"] / 1000.0
                if wait > 0:
                    try:
                        await asyncio.wait_for(wake.wait(), wait)
                    except TimeoutError:
                        pass
                else:
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            pass

    def _step(self) -> float:
        """Start the exchanges the machines ask for; the seconds to sleep."""
        now = self._now()
        # with no subscription the membership machine asks only for a leave
        member = not self._closed
        if member and isinstance(self.machine, consumer_machine.ConsumerMachine):  # group_protocol consumer
            self.machine.learn_topics(self.transport.cluster)
            self.machine.heartbeat_version = self.transport.coordinator_version("ConsumerGroupHeartbeat")
        started = 0
        if member:
            started += self._start_exchanges(self.machine, now)
        self._maybe_auto_commit(now)
        self._drop_commit_events()  # auto commits settle as events nobody else takes
        if self.commits.busy:
            started += self._start_exchanges(self.commits, now)
        deadline: float | None = earliest(self.machine.next_deadline() if member else None,
                            self.commits.next_deadline() if self.commits.busy else None,
                            self._next_auto_commit if self._auto_commit and self._committable() else None)
        if deadline is None:
            return _IDLE_S
        wait = min(deadline - self._now(), _IDLE_S)
        # a deadline that passed with nothing to send (the machine waits for
        # an answer or the application) must not spin the loop
        return max(wait, 0.0 if started else _MIN_WAIT_S)

    def _start_exchanges(self, machine: Membership | CommitMachine, now: float) -> int:
        loop = asyncio.get_running_loop()
        requests = machine.next_requests(now)
        for request in requests:
            task = loop.create_task(self._exchange(machine, request))
            self._inflight[task] = (machine, request)
            task.add_done_callback(self._exchange_done)
        return len(requests)

    # --- the classic leader watches partition counts (Java's metadata snapshot) -------------------
    # The consumer's own metadata (refreshed every metadata_max_age_ms, and
    # when asked) reaches metadata_changed through its listener, as in the
    # sync consumer (group/classic.py): no second source of metadata here.
    def _leader_checks(self) -> bool:
        return self.protocol == "classic" and getattr(self.machine, "leader_snapshot", None) is not None

    def metadata_changed(self, partition_counts: Mapping[str, int]) -> None:
        """The consumer's metadata was refreshed ({topic: partition count}
        of the topics described without error): the leader rejoins when
        they differ from what it assigned from; while a subscribed topic is
        still missing from that (ClassicMachine.leader_snapshot_incomplete),
        each answer asks for the next (the client paces them by
        retry_backoff_ms)."""
        if not self._leader_checks():
            return
        if self.machine.metadata_changed(partition_counts):
            self._kick()
        elif self._snapshot_incomplete():
            self._request_metadata()

    def _snapshot_incomplete(self) -> bool:
        machine = self.machine
        return isinstance(machine, classic_machine.ClassicMachine) and machine.leader_snapshot_incomplete

    def _request_metadata(self) -> None:
        self.app.request_metadata_for(None if self._pattern is not None else set(self.machine.subscription or ()))

    def _exchange_done(self, task: asyncio.Task[None]) -> None:
        self._inflight.pop(task, None)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._fail(error)

    async def _exchange(self, machine: Membership | CommitMachine, request: Request[Token]) -> None:
        response: Any  # the decoded answer, or the exception that ended the request
        try:
            response = await self._send(request)
        except Exception as exc:  # noqa: BLE001 - every failure is an answer: the machine decides
            response = exc
        try:
            machine.on_response(request.token, response, self._now())
        except Exception as exc:  # noqa: BLE001 - no retry fixes it: the member keeps its state, the app is told
            log.warning("group %s: %r", self.group_id, exc)
            self._fail(exc)
        finally:
            if not self.coordinator.known:
                await self.transport.coordinator_lost()
            self._notify()

    async def _send(self, request: Request[Token]) -> Any:
        if request.target == COORDINATOR:
            coordinator = self.coordinator.coordinator
            if coordinator is None:
                raise CoordinatorUnknownError("no coordinator known")
            return await self.transport.call(coordinator, request.api, request.body, request.timeout_ms)
        if request.api == "Metadata":
            return await self.transport.metadata(request.body["topics"], request.timeout_ms)
        return await self.transport.request_any(request.api, request.body, request.timeout_ms)

    def _fail(self, exc: BaseException) -> None:
        if isinstance(exc, KafkaError) and (exc.retriable or is_coordinator_error(exc)):
            return
        if self._error is None:
            self._error = exc

    # --- subscription ----------------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] = (), pattern: Pattern | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Join the group for `topics`, or for the topics matching `pattern`
        (a str or compiled regex; the app's metadata says which match)."""
        if self._closed:
            raise IllegalStateError("the group driver was stopped")
        self._listener = listener
        wanted: Collection[str]
        if pattern is not None:
            self._pattern = compile_pattern(pattern)
            if isinstance(self.machine, consumer_machine.ConsumerMachine):  # group_protocol consumer
                self.machine.set_pattern(self._pattern.pattern)
            self.app.request_metadata_for(None)
            wanted = self.app.topics_matching(self._pattern)
            self._pattern_checked = None
        else:
            self._pattern = None
            wanted = set(topics)
            self.app.request_metadata_for(set(wanted))
        self.machine.set_subscription(set(wanted))
        self._kick()

    def unsubscribe(self) -> None:
        """Stop fetching the assignment, leave the group, forget the
        subscription. As aiokafka, no listener callback runs."""
        owned = list(self.machine.owned)
        self.machine.owned = []
        if owned:
            self.app.revoke_from_group(owned)
        self._pattern = None
        if self.machine.subscription is not None:
            self.machine.set_subscription(None)
            self.machine.leave("the consumer unsubscribed", self._now())
        self._kick()

    def subscription(self) -> set[str]:
        subscription = self.machine.subscription
        return set() if subscription is None else set(subscription)

    def assignment(self) -> set[TopicPartition]:
        return set(self.machine.owned)

    def _maybe_update_pattern(self, now: float) -> None:
        if self._pattern is None:
            return
        if self._pattern_checked is not None and now - self._pattern_checked < _PATTERN_RECHECK_S:
            return
        self._pattern_checked = now
        topics = set(self.app.topics_matching(self._pattern))
        if set(self.machine.subscription or ()) != topics and self.machine.set_subscription(topics):
            self._kick()

    # --- the application's side ---------------------------------------------------------------------
    async def on_app_poll(self) -> None:
        """Called by every getone/getmany before fetching: the poll clock,
        then what the group decided, applied (listener callbacks awaited)."""
        now = self._now()
        expired = getattr(self.machine, "poll_timeout_expired", False)
        self.machine.app_polled(now)
        if expired:
            self._kick()
        self._raise_error()
        self._maybe_update_pattern(now)
        await self._apply_pending()
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self.machine.fatal_error is not None:
            error, self.machine.fatal_error = self.machine.fatal_error, None
            raise error

    async def wait_assignment(self, timeout: float) -> bool:
        """Wait (seconds) until the group gave this member partitions,
        applying them as on_app_poll does; True when it has some."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await self._apply_pending()
            if self.machine.owned:
                return True
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closed:
                return False
            await self._wait_changed(remaining)

    async def _apply_pending(self) -> None:
        if self._apply_lock is None:
            return
        async with self._apply_lock:
            events = self.machine.take_events()
            if not events:
                return
            self._applying = True
            try:
                for event in events:
                    await self._execute(self.reconciler.steps(event, self.machine.owned, self.machine.subscription))
            finally:
                self._applying = False
                self.machine.app_done(events)
                self._kick()

    async def _execute(self, steps: list[Step]) -> None:
        """The reconciler's steps, in order; the commit, the committed
        offsets and the listener callbacks awaited (aiokafka's order)."""
        for step in steps:
            if isinstance(step, CommitBeforeRevoke):
                positions = self._positions(step.partitions)
                if positions:
                    try:
                        await self.commit(positions)
                    except KafkaError as exc:
                        log.warning(COMMIT_BEFORE_REVOKE_FAILED, self.group_id, exc)
            elif isinstance(step, CallListener):
                await self._call_listener(step.method, step.partitions)
            elif isinstance(step, Revoke):
                gone = set(step.partitions)
                self.machine.owned = [tp for tp in self.machine.owned if tp not in gone]
                self.app.revoke_from_group(list(step.partitions))
            elif isinstance(step, Assign):
                await self._assign(step.added, step.assignment)
            elif isinstance(step, AcknowledgeAssignment):
                # only the classic machine receives assignments to acknowledge
                assert isinstance(self.machine, classic_machine.ClassicMachine)
                event = step.event
                assignor = self.machine.assignors_by_name.get(event.protocol)
                if assignor is not None:
                    assignor.on_assignment(event.assignment, event.generation)
                self.machine.assignment_applied(step.revoked_any)
                if self.machine.leader_snapshot_incomplete:
                    self._request_metadata()  # the answer reaches metadata_changed

    async def _assign(self, added: list[TopicPartition], assignment: list[TopicPartition]) -> None:
        """Take partitions: fetching starts at the new ones' committed
        offsets (auto_offset_reset where none), read before the listener
        hears of them; a failed read is tried again in the background."""
        self.machine.owned = list(assignment)
        self.app.assign_from_group(list(assignment))
        self._starts.hold(self.app, added)
        if not await self._read_starts():
            self._keep_reading_starts()

    def hold_for_committed(self, partitions: Iterable[TopicPartition]) -> None:
        """assign() with a group_id: these partitions start at the group's
        committed offsets, read as soon as the driver runs."""
        self._starts.hold(self.app, partitions)
        if self._task is not None:
            self._keep_reading_starts()

    async def _read_starts(self) -> bool:
        """One read of the held partitions' committed offsets (when due);
        True when none is left to read."""
        due = self._starts.due(self.app, self._now())
        if due:
            try:
                committed = await self.fetch_committed(due)
            except KafkaError as exc:
                self._starts.failed(self._now(), exc)
                if not exc.retriable:
                    self._fail(exc)  # raised from the next get call, as Java's poll() would
                return False
            self._starts.settle(self.app, committed)
        return not self._starts.pending

    def _keep_reading_starts(self) -> None:
        if self._starts_task is None or self._starts_task.done():
            self._starts_task = asyncio.get_running_loop().create_task(self._read_starts_until_done())

    async def _read_starts_until_done(self) -> None:
        while not self._closed and not await self._read_starts():
            await asyncio.sleep(max(0.001, self._starts.seconds_to_retry(self._now())))

    async def _call_listener(self, method: str, partitions: list[TopicPartition]) -> None:
        listener = self._listener
        name = listener_method(listener, method)
        if listener is None or name is None:
            return
        try:
            await self._listener_runner(listener, name, partitions)
        except Exception as exc:  # noqa: BLE001 - the hand-over goes on (ListenerErrors)
            self._listener_errors.failed(method, exc)

    def _committable(self) -> bool:
        return bool(self.machine.owned) and self.machine.subscription is not None

    def _positions(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, CommitValue]:
        tps = list(self.machine.owned if partitions is None else partitions)
        if not tps:
            return {}
        return dict(self.app.positions(tps))

    def _maybe_auto_commit(self, now: float) -> None:
        if not self._auto_commit or self._next_auto_commit is None or now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self._auto_commit_interval
        if self._applying or not self._committable():
            return
        offsets = self._positions()
        if not offsets:
            return
        deadline = now + self.config["request_timeout_ms"] / 1000.0
        auto = self._auto_commit_op
        if auto is not None and not auto.done:
            # the last one still waits (a coordinator outage): it takes these
            # newer positions; on the wire, the next interval commits them
            self.commits.refresh(auto, normalise_offsets(offsets), deadline)
            return
        self._auto_commit_op = self.commits.commit(normalise_offsets(offsets), now, deadline=deadline,
                                                   asynchronous=True)

    # --- commits ---------------------------------------------------------------------------------------
    async def commit(self, offsets: Mapping[TopicPartition, CommitValue] | None = None) -> None:
        """Commit `offsets` ({tp: OffsetAndMetadata or int}; None: the app's
        positions of the assignment) and wait; retriable failures are
        retried until request_timeout_ms (then KafkaTimeoutError).
        CommitFailedError / RebalanceInProgressError as the Java client."""
        self._check_running()
        normalised = normalise_offsets(self._positions() if offsets is None else offsets)
        if not normalised:
            return
        now = self._now()
        op = self.commits.commit(normalised, now, deadline=now + self.config["request_timeout_ms"] / 1000.0,
                                 retry=True)
        await self._wait_for(op)

    async def committed(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        """The committed OffsetAndMetadata of `tp`, or None."""
        return (await self.fetch_committed([tp])).get(tp)

    async def fetch_committed(self, partitions: Iterable[TopicPartition]) -> Committed:
        """{tp: OffsetAndMetadata or None} for `partitions` (OffsetFetch,
        require_stable)."""
        self._check_running()
        tps = list(partitions)
        if not tps:
            return {}
        now = self._now()
        op = self.commits.fetch(tps, now, deadline=now + self.config["request_timeout_ms"] / 1000.0)
        committed: Committed = await self._wait_for(op)
        return committed

    def _check_running(self) -> None:
        if self._task is None or self._closed:
            raise IllegalStateError("the group driver is not running (start() it first)")

    async def _wait_for(self, op: CommitOp | FetchOp) -> Any:
        """Until `op` is settled by the machine; cancelling the wait
        cancels the operation (its answer, if one comes, is dropped)."""
        self._kick()
        try:
            while not op.done:
                await self._wait_changed(_IDLE_S)
        except BaseException as exc:
            self.commits.cancel(op, exc)
            raise
        finally:
            self._drop_commit_events()
        if op.error is not None:
            raise op.error
        return op.result

    def _drop_commit_events(self) -> None:
        """Completion events are for the sync consumer's commit_async
        callbacks; here each caller awaits its own operation."""
        auto = self._auto_commit_op
        for event in self.commits.take_events():
            if isinstance(event, CommitCompleted) and auto is not None and event.op is auto and auto.error is not None:
                log.warning("group %s: auto commit failed: %s", self.group_id, auto.error)

    # --- stopping ---------------------------------------------------------------------------------------
    async def stop(self, autocommit: bool = True) -> None:
        """Commit (autocommit and enable_auto_commit), revoke the owned
        partitions through the listener (the Java client's close(); aiokafka
        skips it), leave the group (a static member keeps its place), close
        the connections."""
        if self._closed:
            return
        timeout = self.config["request_timeout_ms"] / 1000.0
        try:
            if self._task is not None and autocommit and self._auto_commit and self._committable():
                try:
                    await self.commit()
                except KafkaError as exc:
                    log.warning("group %s: commit on stop failed: %s", self.group_id, exc)
            if self._task is not None and self.machine.owned and self.machine.subscription is not None:
                assert self._apply_lock is not None  # start() made it with the task
                async with self._apply_lock:
                    # the machine keeps its owned list: a KIP-848 leave names them
                    owned = sorted_partitions(self.machine.owned)
                    await self._call_listener(REVOKED, owned)
                    self.app.revoke_from_group(owned)
            if self._task is not None:
                await self._leave(timeout)
        finally:
            self._closed = True
            self.machine.close()
            tasks = list(self._inflight)
            if self._starts_task is not None:
                tasks.append(self._starts_task)
            if self._task is not None:
                tasks.append(self._task)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._notify()
            await self.transport.close()

    async def _leave(self, timeout: float) -> None:
        # a request the membership machine still waits for (a JoinGroup the
        # coordinator holds open) would queue the leave behind it on the
        # coordinator connection: start that connection afresh
        held = any(machine is self.machine and request.target == COORDINATOR
                   for machine, request in self._inflight.values())
        # leave first: the request in flight is then one the machine no
        # longer waits for, so the failure closing its connection brings is
        # ignored instead of forgetting the coordinator the leave goes to
        self.machine.leave("the consumer is being closed", self._now())
        if held and self.machine.state.name == "LEAVING":
            await self.transport.coordinator_lost()
        # the task sends it (a static member has nothing to send: it keeps its place)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._kick()
        while self.machine.state.name == "LEAVING" and loop.time() < deadline:
            await self._wait_changed(deadline - loop.time())
        if self.machine.state.name == "LEAVING":
            log.warning("group %s: the leave was not answered within %.1f s", self.group_id, timeout)

    def group_metadata(self) -> ConsumerGroupMetadata:
        machine = self.machine
        if isinstance(machine, consumer_machine.ConsumerMachine):  # group_protocol consumer
            generation, state = machine.member_epoch, consumer_machine.KAFKA_PYTHON_STATE[machine.state]
        else:
            generation, state = machine.generation, classic_machine.KAFKA_PYTHON_STATE[machine.state]
        return ConsumerGroupMetadata(self.group_id, generation, machine.member_id, self.group_instance_id, state)


async def _run_listener(listener: ConsumerRebalanceListener, method: str, partitions: list[TopicPartition]) -> None:
    await call_listener(getattr(listener, method), partitions)
