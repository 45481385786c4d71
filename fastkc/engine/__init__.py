"""The consumer engine: what a blocking front-end consumes records through.

`ConsumerEngine` is a `ClientEngine` (client_engine.py: the KafkaClient,
the clock, open/closed, wakeup, metadata; KafkaShareConsumer stands on one
too) that also owns the Fetcher (its FetchMachine and decode-ahead worker),
the group member once one is attached, and the Arrow stream being read.
Front-ends
(KafkaConsumer, its arrow_stream(), the benchmark's ceiling reader, the
Spark planner, `fastkc consume`) use it through the methods below and read
nothing private of it or of each other. The asyncio consumer has the same
engine on asyncio drivers: `AioConsumerEngine` (aio_engine.py).

The API (all on the thread that drives the consumer, except `wakeup`):

- lifecycle: `check_open()`, `closed`, `mark_closed()`, `close(timeout_ms)`.
- waking: `wakeup()` (any thread) makes the blocking call in progress, or
  the next one (a group member's wait included), raise WakeupException once
  through `raise_wakeup()`.
- one poll round: `raise_pending()` (fetch errors, fatal client errors),
  `poll_once(timeout_s)` (send what is due, block up to timeout_s, send
  again), `round_for_assignment(timeout_s)` (a round that lets the group
  hand out its assignment, and hands out no records).
- records: `check_can_poll()` (an assignment or a subscription, else
  IllegalStateError); `take_records(...)` and `take_arrow(...)` poll until
  records come or the deadline passes (`poll()` and `poll_arrow()`'s loops).
- partitions: `assignment()`, `partitions()` (the partitions' fetch states,
  read-only), `pause`, `resume`, `seek`, `wait_for_position(tp, timeout_ms)`.
- metadata: `cluster` (read-only view), `ensure_metadata(topics, timeout_ms)`,
  `leader_for(tp)`.
- the group: `attach_group(member)`; `on_app_poll()` applies its decisions.
- the Arrow stream: `claim_stream(stream)`, `release_stream(stream)`,
  `check_no_stream()`.
- `client` and `fetcher` are the drivers themselves, for the tools that work
  below records (the ceiling reader CRC-checks buffered fetches; the Spark
  planner sends ListOffsets requests to many leaders at once).
"""
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fastkc.config import Config
from fastkc.engine.client_engine import ClientEngine
from fastkc.errors import IllegalStateError, KafkaTimeoutError
from fastkc.fetch import Fetcher, PartitionState
from fastkc.structs import ConsumerRecord, TopicPartition

log = logging.getLogger(__name__)

#: what take_records() returns (poll()'s answer)
Records = dict[TopicPartition, list[ConsumerRecord]]
# a pyarrow.RecordBatch (pyarrow has no type information)
RecordBatch = Any
# a group member's decisions are applied on the application's thread: a
# poll round with a member looks at least this often
_GROUP_WAKEUP_S = 0.05


class GroupMember(Protocol):
    """What the engine asks of an attached group member."""

    def on_app_poll(self) -> None: ...

    def wake_caller(self) -> None: ...


class ConsumerEngine(ClientEngine):
    """See the module docstring."""

    config: Config

    def __init__(self, config: Config, subscribed: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(config, owner="KafkaConsumer", clock=clock)
        # whether the front-end holds a subscription (an assignment may still come)
        self._subscribed = subscribed
        self.fetcher = Fetcher(self.client, config)
        self._group: GroupMember | None = None
        # the ArrowStream being read: polls wait for its end
        self._stream: object = None

    # --- lifecycle -------------------------------------------------------------------
    def close(self, timeout_ms: float | None) -> None:
        """Free the brokers' fetch-session slots (bounded, never fatal), stop
        the decode worker, close the connections."""
        self._closed = True
        try:
            pending = self.fetcher.close_sessions()
            if pending:
                limit = min(1.0, (timeout_ms if timeout_ms is not None else 1000) / 1000.0)
                deadline = self.clock() + limit
                while pending and self.clock() < deadline:
                    self.client.poll(deadline - self.clock())
        except Exception:  # closing must close, whatever the brokers do
            log.debug("closing fetch sessions failed", exc_info=True)
        finally:
            # the decode worker finishes the step it is on (bounded: one
            # partition's fetch) and is joined; its prepared steps are dropped
            self.fetcher.close_worker()
            self.close_client()

    # --- waking ----------------------------------------------------------------------
    def wakeup(self) -> None:
        """From any thread: the blocking call in progress (or the next one),
        a group member's wait included, raises WakeupException, once."""
        super().wakeup()
        group = self._group
        if group is not None:
            group.wake_caller()

    # --- the group -------------------------------------------------------------------
    def attach_group(self, member: GroupMember) -> None:
        self._group = member

    def on_app_poll(self) -> None:
        """Apply the group member's decisions (assignments, revocations)."""
        if self._group is not None:
            self._group.on_app_poll()

    # --- poll rounds -----------------------------------------------------------------
    def raise_pending(self) -> None:
        """A fetch error waiting for the application, or a fatal client error."""
        self.fetcher.raise_pending()
        self.client.raise_fatal()

    def poll_once(self, timeout_s: float) -> None:
        """Send what is due, then block in select for up to `timeout_s`."""
        fetcher = self.fetcher
        fetcher.send_requests()
        if fetcher.has_buffered():
            timeout_s = 0.0
        # wake for retry backoffs (resets, fetch retries) and metadata
        if self._needs_retry_wakeup():
            timeout_s = min(timeout_s, self.config["retry_backoff_ms"] / 1000.0)
        if self._group is not None:
            timeout_s = min(timeout_s, _GROUP_WAKEUP_S)
        self.client.poll(timeout_s)
        fetcher.send_requests()

    def _needs_retry_wakeup(self) -> bool:
        now = self.clock()
        client = self.client
        for state in self.fetcher.states.values():
            if state.next_retry > now or state.reset_strategy is not None or state.awaiting_validation:
                return True
            if state.fetchable() and client.cluster.leader_for(state.tp) is None:
                return True
            if state.fetchable() and not client.is_connected(client.cluster.leader_for(state.tp)):
                return True
        due: bool = client.metadata_due()
        return due

    def round_for_assignment(self, timeout_s: float) -> None:
        """One poll round that hands out no records: lets a group member
        join and its assignment be applied."""
        self.raise_wakeup()
        self.on_app_poll()
        self.client.raise_fatal()
        self.poll_once(timeout_s)

    def check_can_poll(self) -> None:
        if not self.fetcher.states and not self._subscribed():
            raise IllegalStateError("No partitions assigned and no subscription: call assign() or subscribe()")

    def take_records(self, timeout_ms: float, max_records: int, update_offsets: bool) -> Records:
        """poll()'s loop: {TopicPartition: [ConsumerRecord]} of up to
        max_records records, waiting up to timeout_ms (inf: for ever)."""
        deadline = self.clock() + max(0, timeout_ms) / 1000.0
        fetcher = self.fetcher
        key_d = self.config["key_deserializer"]
        value_d = self.config["value_deserializer"]
        while True:
            self.raise_wakeup()
            self.on_app_poll()
            self.raise_pending()
            records: Records = fetcher.fetched_records(max_records, update_offsets, key_d, value_d)
            if records:
                # pipelining: the next fetches go out before the application
                # sees these records
                fetcher.send_requests()
                return records
            fetcher.raise_pending()
            self.poll_once(max(0.0, deadline - self.clock()))
            if self.clock() >= deadline and not fetcher.has_buffered():
                fetcher.raise_pending()
                return {}

    def take_arrow(self, timeout_ms: float | None, max_records: int | None) -> RecordBatch:
        """poll_arrow()'s loop: one RecordBatch of up to max_records records
        (all buffered when None), empty when none came within timeout_ms."""
        import pyarrow as pa

        from fastkc.records import arrow_schema

        limit: float = max_records if max_records is not None else float("inf")
        deadline = self.clock() + max(0, timeout_ms if timeout_ms is not None else float("inf")) / 1000.0
        fetcher = self.fetcher
        while True:
            self.raise_wakeup()
            self.on_app_poll()
            self.raise_pending()
            batches = fetcher.fetched_arrow(limit, None, self.config["key_deserializer"],
                                            self.config["value_deserializer"])
            if batches:
                fetcher.send_requests()
                return batches[0]  # one batch across partitions, built in place
            self.poll_once(max(0.0, deadline - self.clock()))
            if self.clock() >= deadline and not fetcher.has_buffered():
                fetcher.raise_pending()
                return pa.RecordBatch.from_pylist([], schema=arrow_schema(zero_copy=self.config["arrow_zero_copy"]))

    # --- partitions ------------------------------------------------------------------
    def assignment(self) -> list[TopicPartition]:
        """The assigned partitions, in assignment order."""
        return list(self.fetcher.states)

    def partitions(self) -> Mapping[TopicPartition, PartitionState]:
        """The assigned partitions' fetch states (read them; change them
        through pause, resume and seek)."""
        states: Mapping[TopicPartition, PartitionState] = self.fetcher.states
        return states

    def pause(self, tp: TopicPartition) -> None:
        self.fetcher.pause(tp)

    def resume(self, tp: TopicPartition) -> None:
        self.fetcher.resume(tp)

    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1) -> None:
        self.fetcher.seek(tp, offset, epoch)

    def wait_for_position(self, tp: TopicPartition, timeout_ms: float) -> PartitionState:
        """`tp`'s state once its position is known (a pending reset
        resolved); KafkaTimeoutError past timeout_ms."""
        deadline = self.clock() + timeout_ms / 1000.0
        state = self._assigned_state(tp)
        while state.position is None:
            self.raise_wakeup()  # as Java's position(): only while it blocks
            self.raise_pending()
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise KafkaTimeoutError("position of {0} not known within {1} ms".format(tp, timeout_ms))
            self.poll_once(min(remaining, 0.1))
            state = self._assigned_state(tp)
        return state

    def _assigned_state(self, tp: TopicPartition) -> PartitionState:
        state: PartitionState | None = self.fetcher.states.get(tp)
        if state is None:
            raise IllegalStateError("Partition is not assigned: {0}".format(tp))
        return state

    # --- the Arrow stream ------------------------------------------------------------
    def claim_stream(self, stream: object) -> None:
        """`stream` is read from now on: polls are refused until it is released."""
        if self._stream is not None:
            raise IllegalStateError("another arrow_stream of this consumer is live")
        self._stream = stream

    def release_stream(self, stream: object) -> None:
        if self._stream is stream:
            self._stream = None

    @property
    def stream(self) -> object:
        """The Arrow stream being read, or None."""
        return self._stream

    def check_no_stream(self) -> None:
        if self._stream is not None:
            raise IllegalStateError("an arrow_stream of this consumer is being read: poll(), poll_arrow() and "
                                    "iteration are refused until it ends, is released or is closed")
