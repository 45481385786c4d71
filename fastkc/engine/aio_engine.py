"""AioConsumerEngine: the consumer engine for asyncio front-ends
(`fastkc.aio.AIOKafkaConsumer`).

It is `ConsumerEngine`'s counterpart on an event loop: the same I/O-free
parts (the FetchMachine and its partition states, the cluster core, the
decode steps) moved by asyncio drivers instead of a thread: the AioClient
(connections, metadata) and the AioFetchDriver (one task driving the
FetchMachine, its decode thread). The front-end keeps what is its API's
(aiokafka's argument checks, the subscription, the group driver it makes)
and reads nothing private of the engine; the group driver, once attached,
is asked for its decisions inside every get call (`on_app_poll`).

The API (all on the loop):

- lifecycle: `started`, `closed`, `check_running()` (ConsumerStoppedError
  once stopped), `await start(infer_version)`, `mark_stopped()` (waiting get
  calls wake and raise), `await close()`.
- records: `await take_one(partitions)`, `await take_records(partitions,
  limit, timeout_ms)`, `await take_arrow(partitions, limit, timeout_ms)`:
  getone(), getmany() and getmany_arrow()'s loops, of `partitions` only when
  given. Cancelled while they wait, they have taken nothing.
- waiting: `await wait_data(timeout)` (the next answer, stop(), or a group
  look), `await wait_positions(partitions, deadline)`, `await position(tp)`.
- partitions: `assignment()`, `set_assignment(partitions, topics)`,
  `partitions()` (the fetch states, read-only), `state(tp)`, `pause`,
  `resume`, `seek`, `request_reset`, `hold_for_committed`, `is_held`,
  `positions(partitions)` (what a commit of them sends).
- metadata: `cluster` (read-only view), `await wait_for_metadata(timeout_ms,
  all_topics)`, `follow_topics(topics | None)`, `add_topics(topics)`,
  `stop_following_all()`, `on_metadata(callback)`.
- offsets: `await list_offsets({tp: timestamp}, timeout_ms)`.
- the group: `attach_group(member)`.
- `fetcher`: the AioFetchDriver itself, for tests and tools that look at
  the decode steps.
"""
import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from fastkc.aio.client import AioClient
from fastkc.aio.errors import ConsumerStoppedError, IllegalStateError
from fastkc.aio.fetch_driver import AioFetchDriver
from fastkc.aio.structs import OffsetAndMetadata, TopicPartition, is_topic_partition
from fastkc.cluster import ClusterMetadata
from fastkc.cluster.broker_version import infer_broker_version
from fastkc.config import Config
from fastkc.fetch.completed import streams_prepare_off_thread
from fastkc.fetch.offsets import LookupResults
from fastkc.fetch.state import PartitionState
from fastkc.structs import ConsumerRecord

#: what take_records() returns (getmany()'s answer)
Records = dict[TopicPartition, list[ConsumerRecord]]
# a pyarrow.RecordBatch (pyarrow has no type information)
RecordBatch = Any
#: the group's decisions are applied inside get calls: a waiting call looks
#: at least this often
_GROUP_LOOK_S = 0.1


class AioGroupMember(Protocol):
    """What the engine asks of an attached group driver."""

    async def on_app_poll(self) -> None: ...


class AioConsumerEngine:
    """See the module docstring. `decode_threads` is the front-end's
    setting: 1 prepares decode steps on the fetch driver's decode thread
    (the twin's streams cannot, and decode on the loop). The deserializers
    are aiokafka's (called with the bytes alone), kept apart from `config`,
    which holds the core's keys."""

    def __init__(self, config: Config, *, period_ms: float, decode_threads: int,
                 key_deserializer: Callable[[bytes], Any] | None = None,
                 value_deserializer: Callable[[bytes], Any] | None = None) -> None:
        self.config = config
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self.client = AioClient(config)
        self.fetcher = AioFetchDriver(self.client, config, period_ms=period_ms)
        self._machine = self.fetcher.machine
        self._offload_decode = decode_threads == 1 and streams_prepare_off_thread()
        self._started = False
        self._closed = False
        self._assignment: list[TopicPartition] = []
        self._group: AioGroupMember | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._closed

    def check_running(self) -> None:
        if self._closed:
            raise ConsumerStoppedError()

    async def start(self, infer_version: bool) -> None:
        """Bootstrap and start the fetch task. `infer_version`: api_version
        becomes the broker's, read from the bootstrap's ApiVersions answer.
        A failed bootstrap closes the connections and the engine."""
        self._started = True
        try:
            await self.client.bootstrap()
        except BaseException:
            await self.client.close()
            self._closed = True
            raise
        if infer_version and self.client.bootstrap_api_versions:
            self.config["api_version"] = infer_broker_version(self.client.bootstrap_api_versions)
        self.fetcher.start()

    def mark_stopped(self) -> None:
        """Refuse every later call; get calls waiting now wake and raise
        ConsumerStoppedError."""
        self._closed = True
        self._notify_waiters()

    async def close(self) -> None:
        """Stop the fetch task (its sessions closed, bounded) and the decode
        thread, close the connections."""
        self._closed = True
        try:
            if self._started:
                await self.fetcher.close()
        finally:
            # a step being prepared finishes on its own (milliseconds); nothing waits for it
            self.fetcher.decode_executor.close()
            await self.client.close()

    # --- the group ---------------------------------------------------------------------------
    def attach_group(self, member: AioGroupMember) -> None:
        """Every get call applies `member`'s decisions first; a waiting one
        looks at least every 100 ms."""
        self._group = member

    # --- getting records ---------------------------------------------------------------------
    async def _before_take(self, partitions: Iterable[TopicPartition]) -> None:
        """Before taking records: one turn of the loop (answers read, timers
        run: a loop of get calls that always find records never starves the
        loop; cancelled here, a call has taken nothing), the group's
        decisions applied, errors raised."""
        self.check_running()
        await asyncio.sleep(0)
        self.check_running()
        if self._group is not None:
            await self._group.on_app_poll()
            self.check_running()
        self.fetcher.raise_pending()
        self.client.raise_fatal()
        for tp in partitions:
            # a partition not (or no longer) assigned just yields nothing, as in aiokafka
            if not is_topic_partition(tp):
                raise TypeError("partitions must be TopicPartition namedtuples")

    async def _take(self, limit: int, wanted: set[TopicPartition] | None) -> Records:
        """Records taken from the machine (positions advanced) with no decoding
        on the loop: when the take stops at a fetch whose next step is not
        prepared, that step is prepared on the decode thread, awaited when
        nothing was taken, else left to finish while the application works.
        Cancelled while it waits, a call has taken nothing: the step being
        prepared stays in its stream for the next call."""
        fetcher = self.fetcher
        key_d = self._key_deserializer
        value_d = self._value_deserializer
        while True:
            records: Records = fetcher.fetched_records(limit, True, key_d, value_d, wanted,
                                                       prepared_only=self._offload_decode)
            unprepared = self._machine.unprepared
            if unprepared is None:
                return records
            step = fetcher.prepare(unprepared, limit)
            if records:
                return records
            await asyncio.shield(step)
            self.check_running()

    async def take_one(self, partitions: tuple[TopicPartition, ...]) -> ConsumerRecord:
        """getone()'s loop: the next record (of `partitions` when given); waits for one."""
        wanted = set(partitions) if partitions else None
        while True:
            await self._before_take(partitions)
            records = await self._take(1, wanted)
            if records:
                self.fetcher.send_requests()
                for chunk in records.values():
                    return chunk[0]
            await self.wait_data(None)

    async def take_records(self, partitions: tuple[TopicPartition, ...], limit: int, timeout_ms: float) -> Records:
        """getmany()'s loop: up to `limit` records (of `partitions` when
        given), waiting up to timeout_ms for some."""
        wanted = set(partitions) if partitions else None
        deadline = time.monotonic() + max(0, timeout_ms) / 1000.0
        while True:
            await self._before_take(partitions)
            records = await self._take(limit, wanted)
            if records:
                # pipelining, as the sync poll(): the next fetches are on the
                # wire before the application sees these records
                self.fetcher.send_requests()
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            await self.wait_data(remaining)

    async def take_arrow(self, partitions: tuple[TopicPartition, ...], limit: int, timeout_ms: float) -> RecordBatch:
        """getmany_arrow()'s loop: one RecordBatch of up to `limit` records in
        poll_arrow()'s schema, empty when nothing came within timeout_ms."""
        import pyarrow as pa

        from fastkc.records import arrow_schema

        wanted = set(partitions) if partitions else None
        deadline = time.monotonic() + max(0, timeout_ms) / 1000.0
        fetcher = self.fetcher
        while True:
            await self._before_take(partitions)
            batches = fetcher.fetched_arrow(limit, wanted, self._offload_decode, self._key_deserializer,
                                            self._value_deserializer)
            unprepared = self._machine.unprepared
            if unprepared is not None:
                # a heavy fetch's next Arrow step, decoded on the decode thread
                step = fetcher.prepare(unprepared, limit, arrow=True)
                if not batches:
                    await asyncio.shield(step)
                    self.check_running()
                    continue
            if batches:
                fetcher.send_requests()
                return batches[0]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return pa.RecordBatch.from_pylist([], schema=arrow_schema(zero_copy=self.config["arrow_zero_copy"]))
            await self.wait_data(remaining)

    # --- waiting -----------------------------------------------------------------------------
    async def wait_data(self, timeout: float | None) -> None:
        """Wait for the next answer (or stop(), or the group's next look)."""
        event = self.fetcher.data_event
        if event is None:
            raise IllegalStateError("the consumer is not started: await start() first")
        event.clear()
        if self._group is not None:
            timeout = _GROUP_LOOK_S if timeout is None else min(timeout, _GROUP_LOOK_S)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        self.check_running()

    def _notify_waiters(self) -> None:
        """Waiting get calls and position() look again."""
        if self.fetcher.data_event is not None:
            self.fetcher.data_event.set()

    async def wait_positions(self, partitions: Iterable[TopicPartition], deadline: float) -> bool:
        """Wait until every partition's position is known; False at the
        deadline (time.monotonic())."""
        tps = list(partitions)
        while True:
            states = [self._machine.states.get(tp) for tp in tps]
            if all(s is None or s.position is not None for s in states):
                return True
            self.fetcher.raise_pending()
            self.client.raise_fatal()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await self.wait_data(remaining)

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record a get call returns, waiting for a
        reset to resolve (the group's decisions applied meanwhile)."""
        self.check_running()
        while True:
            position: int | None = self.state(tp).position
            if position is not None:
                return position
            await self._before_take(())
            self.fetcher.wake()
            await self.wait_data(None)

    # --- partitions --------------------------------------------------------------------------
    def assignment(self) -> list[TopicPartition]:
        """The partitions fetched, in assignment order."""
        return list(self._assignment)

    def set_assignment(self, partitions: Iterable[TopicPartition], topics: set[str] | None) -> None:
        """Fetch `partitions` (duplicates dropped) from now on. `topics`:
        the named topics whose metadata is followed besides the assigned
        ones; None while a pattern subscription follows every topic."""
        seen = list(dict.fromkeys(partitions))
        self._assignment = seen
        self._machine.assign(seen)
        if topics is not None:
            self.client.set_topics(topics | {tp.topic for tp in seen})
        self.fetcher.wake()

    def partitions(self) -> Mapping[TopicPartition, PartitionState]:
        """The assigned partitions' fetch states (read them; change them
        through the methods below)."""
        states: Mapping[TopicPartition, PartitionState] = self._machine.states
        return states

    def state(self, tp: TopicPartition) -> PartitionState:
        """`tp`'s fetch state; IllegalStateError when it is not assigned."""
        state: PartitionState | None = self._machine.states.get(tp)
        if state is None:
            raise IllegalStateError("No current assignment for partition {0}".format(tp))
        return state

    def positions(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """{tp: OffsetAndMetadata(position, "")} of the partitions (all
        assigned when None) whose position is known: what a commit sends."""
        states = self._machine.states
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in (states if partitions is None else partitions):
            state = states.get(tp)
            if state is not None and state.position is not None:
                out[tp] = OffsetAndMetadata(state.position, "")
        return out

    def seek(self, tp: TopicPartition, offset: int, epoch: int = -1) -> None:
        self._machine.seek(tp, offset, epoch)
        self.fetcher.wake()
        self._notify_waiters()

    def request_reset(self, partitions: Iterable[TopicPartition], strategy: str) -> None:
        """Reset each partition's position to `strategy` ("earliest", "latest")."""
        for tp in partitions:
            self._machine.request_reset(tp, strategy)
        self.fetcher.wake()

    def pause(self, tp: TopicPartition) -> None:
        self._machine.pause(tp)
        self.fetcher.wake()

    def resume(self, tp: TopicPartition) -> None:
        self._machine.resume(tp)
        self.fetcher.wake()

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None:
        """`tp` is not fetched while held (its committed offset is being
        read); released, it is planned at once and position() looks again."""
        self._machine.hold_for_committed(tp, held)
        if not held:
            self.fetcher.wake()
            self._notify_waiters()

    def is_held(self, tp: TopicPartition) -> bool:
        held: bool = self._machine.is_held(tp)
        return held

    # --- metadata ----------------------------------------------------------------------------
    @property
    def cluster(self) -> ClusterMetadata:
        cluster: ClusterMetadata = self.client.cluster
        return cluster

    async def wait_for_metadata(self, timeout_ms: float, all_topics: bool = False) -> None:
        await self.client.wait_for_metadata(timeout_ms, all_topics=all_topics)

    def follow_topics(self, topics: set[str] | None) -> None:
        """Metadata follows these topics (None: every topic, for a pattern)."""
        self.client.follow_topics(topics)

    def add_topics(self, topics: Iterable[str]) -> None:
        """These topics join the next metadata refresh."""
        self.client.add_topics(topics)

    def stop_following_all(self) -> None:
        """A pattern subscription ended: metadata follows the named topics only."""
        self.client.subscribe_all_topics = False

    def on_metadata(self, callback: Callable[[], None]) -> None:
        """Call `callback` after every metadata update."""
        self.client.metadata_listeners.append(callback)

    # --- offsets -----------------------------------------------------------------------------
    async def list_offsets(self, timestamps: dict[TopicPartition, int], timeout_ms: float) -> LookupResults:
        """{tp: timestamp} -> {tp: (offset, timestamp, leader_epoch)}."""
        results: LookupResults = await self.fetcher.list_offsets(timestamps, timeout_ms)
        return results
