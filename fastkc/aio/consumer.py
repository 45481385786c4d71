"""AIOKafkaConsumer: aiokafka 0.14's consumer API over fastkc's I/O-free machines.

    consumer = AIOKafkaConsumer("topic", bootstrap_servers="host:9092", group_id="g")
    await consumer.start()
    async for record in consumer: ...
    batch = await consumer.getmany(timeout_ms=100)      # {tp: [record]}
    table = await consumer.getmany_arrow(timeout_ms=100)  # one pyarrow.RecordBatch
    await consumer.stop()

A front-end over `fastkc.engine.aio_engine.AioConsumerEngine`, never a
thread running the sync consumer. The engine owns the asyncio drivers:
- `fastkc.aio.client.AioClient`: connections (fastkc.net.aio), metadata;
- `fastkc.aio.fetch_driver.AioFetchDriver`: one task driving the
  `FetchMachine` the sync consumer drives;
and, once attached, the group driver this class makes with a group_id:
- `fastkc.aio.group_driver.AioGroupDriver`: the group machines; its `app`
  (`_AioGroupApp`) acts on the engine through the engine's API.
This class keeps aiokafka's argument checks, the subscription and the
group driver's making.

Records are fastkc's C-built `fastkc.structs.ConsumerRecord`s, handed out as
the decoder makes them (no Python object per record is rebuilt): they carry
every attribute of aiokafka's ConsumerRecord (topic, partition, offset,
timestamp, timestamp_type, key, value, checksum, serialized_key_size,
serialized_value_size, headers) plus kafka-python's leader_epoch and
serialized_header_size; they are tuples (aiokafka's is a dataclass), and
headers is a list of (str, bytes) tuples (aiokafka: a tuple of them).

Decoding is split as the decode worker splits it: a step's phase 1 (CRC
checks, decompression, parsing into descriptors; C with the GIL released)
runs on the consumer's decode thread (decode_threads=1, the default) while
the loop goes on, and getmany()/getone() only build records from prepared
steps on the loop, at most 4096 a call without max_records: a large or badly
compressed batch never holds the loop. The bench runner reports the longest
hold it saw (`longest_loop_stall_ms`, `python -m fastkc_tools.bench.run_fastkc_aio`).

Cancellation: records leave the machine (and positions advance) only in
the synchronous part of a get call that returns them; a get cancelled while
it waits has taken nothing, so nothing is lost.
"""
import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fastkc.aio.abc import ConsumerRebalanceListener
from fastkc.aio.config import KEYS, resolve
from fastkc.aio.errors import ConsumerStoppedError, IllegalOperation, IllegalStateError
from fastkc.aio.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition, is_topic_partition
from fastkc.cluster.metadata import partition_counts
from fastkc.engine.aio_engine import AioConsumerEngine
from fastkc.fetch import EARLIEST, LATEST
from fastkc.fetch.state import PartitionState
from fastkc.group.subscription import Pattern, SubscriptionState, compile_pattern, visible_topics
from fastkc.structs import ConsumerRecord

if TYPE_CHECKING:
    from fastkc.aio.group_driver import AioGroupDriver

log = logging.getLogger(__name__)

#: getmany()'s limit when max_records and max_poll_records are None. aiokafka
#: then returns all that is buffered (its fetches are a partition's at a time);
#: here one call's decoding is bounded so that it holds the loop for a few ms
#: at most: what stays buffered comes with the next call.
_GETMANY_CHUNK = 4096

#: what getmany() returns
Records = dict[TopicPartition, list[ConsumerRecord]]
# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any
#: what commit() takes per partition: an offset, (offset, metadata) or an OffsetAndMetadata
CommitOffset = int | tuple[int, str] | OffsetAndMetadata


class AIOKafkaConsumer:
    def __init__(self, *topics: str, **configs: Any) -> None:
        resolved = resolve(**configs)
        self._aio_config = resolved.aio
        self._config = resolved.core
        self._driver_config = resolved.driver
        self._max_poll_records = resolved.driver["max_poll_records"]
        # phase 1 of the decode steps off the loop (module docstring): on the
        # fetch driver's decode thread (decode_threads=1)
        self._engine = AioConsumerEngine(self._config, period_ms=resolved.driver["consumer_timeout_ms"],
                                         decode_threads=resolved.driver["decode_threads"],
                                         key_deserializer=resolved.driver["key_deserializer"],
                                         value_deserializer=resolved.driver["value_deserializer"])
        # topics or a pattern while subscribed (no group: all their partitions assigned)
        self._subscription_state = SubscriptionState()
        self._listener: ConsumerRebalanceListener | None = None
        # with a group_id and a subscription or a commit (attached to the engine)
        self._group: AioGroupDriver | None = None
        # subscribe()'s (topics, pattern, listener) with a group_id
        self._group_subscription: tuple[list[str], Pattern | None, ConsumerRebalanceListener | None] | None = None
        # the task starting the group driver for assign()ed partitions' committed offsets
        self._committed_tasks: set[asyncio.Task[None]] = set()
        self._engine.on_metadata(self._metadata_updated)
        if topics:
            self.subscribe(topics)

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Bootstrap, start the fetch task (and the group's, when subscribed with a group_id)."""
        engine = self._engine
        engine.check_running()
        if engine.started:
            return
        await engine.start(infer_version=self._aio_config.get("api_version") in (None, "auto"))
        if self._group is not None:
            self._read_committed_starts()
        if self._subscription_state.subscribed and self._group is None:
            await engine.wait_for_metadata(self._config["request_timeout_ms"],
                                           all_topics=self._subscription_state.pattern is not None)
            self._update_subscribed_assignment()
        if self._group is not None:
            await self._start_group()

    async def _start_group(self) -> None:
        """Start the group driver; with a subscription, as aiokafka's start():
        metadata first (a pattern needs every topic's name), the subscription
        handed over again with it, then wait until the group assigned. The
        wait is bounded by rebalance_timeout_ms where aiokafka's is not: the
        group driver applies a rebalance inside get calls (the Java model),
        so a member that joins while the others are not polling would
        otherwise wait for them for ever."""
        group = self._group
        assert group is not None  # start() calls this only with a group driver
        await group.start()
        if not self._subscription_state.subscribed or self._group_subscription is None:
            return
        await self._engine.wait_for_metadata(self._config["request_timeout_ms"],
                                             all_topics=self._subscription_state.pattern is not None)
        topics, pattern, listener = self._group_subscription
        group.subscribe(topics=topics, pattern=pattern, listener=listener)
        deadline = time.monotonic() + self._driver_config["rebalance_timeout_ms"] / 1000.0
        while not self._engine.closed and time.monotonic() < deadline:
            if await group.wait_assignment(min(1.0, max(0.0, deadline - time.monotonic()))):
                break

    def _read_committed_starts(self) -> None:
        """The group driver reads the committed offsets of the partitions
        assign() held (group/committed_starts.py): started here, since
        assign() is not a coroutine."""
        async def start_group() -> None:
            try:
                await self._running_group()
            except Exception as exc:  # noqa: BLE001 - the partitions stay held; the next get call raises it
                log.warning("the group driver did not start: %s", exc)

        task = asyncio.get_running_loop().create_task(start_group())
        self._committed_tasks.add(task)
        task.add_done_callback(self._committed_tasks.discard)

    async def _running_group(self) -> "AioGroupDriver":
        """The group driver, started (commit() and committed() work without a
        subscription, as in aiokafka)."""
        group = self._group_driver()
        if not self._engine.started:
            raise IllegalStateError("the consumer is not started: await start() first")
        await group.start()
        return group

    async def stop(self) -> None:
        """Commit (auto-commit), leave the group, close the connections; a
        get call waiting now raises ConsumerStoppedError. Idempotent."""
        engine = self._engine
        if engine.closed:
            return
        engine.mark_stopped()  # waiting get calls wake and see the consumer stopped
        for task in list(self._committed_tasks):
            task.cancel()
        try:
            if self._group is not None:
                try:
                    await self._group.stop(autocommit=self._config["enable_auto_commit"])
                except Exception:  # stopping must stop
                    log.warning("leaving the group failed", exc_info=True)
        finally:
            await engine.close()

    async def __aenter__(self) -> "AIOKafkaConsumer":
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def __aiter__(self) -> "AIOKafkaConsumer":
        self._engine.check_running()
        return self

    async def __anext__(self) -> ConsumerRecord:
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # --- assignment ----------------------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manually assign partitions (replaces the assignment)."""
        self._subscription_state.check_assign()
        given = list(partitions)
        for tp in given:
            if not is_topic_partition(tp):
                raise TypeError("partitions must be TopicPartition namedtuples")
        before = set(self._engine.partitions())
        self._set_assignment([TopicPartition(tp.topic, tp.partition) for tp in given])
        if self._config["group_id"] is not None:
            # as aiokafka and Java: manually assigned partitions of a group
            # start at its committed offsets (auto_offset_reset where none)
            fresh = [tp for tp in self._engine.assignment() if tp not in before]
            self._group_driver().hold_for_committed(fresh)
            if self._engine.started and not self._engine.closed:
                self._read_committed_starts()

    def _set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        state = self._subscription_state
        # a pattern subscription follows every topic's metadata already
        self._engine.set_assignment(partitions, None if state.pattern is not None else set(state.topics or ()))

    def assignment(self) -> set[TopicPartition]:
        if self._group is not None and self._subscription_state.subscribed:
            return set(self._group.assignment())
        return set(self._engine.assignment())

    def subscribe(self, topics: Iterable[str] | str = (), pattern: Pattern | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Subscribe to topics or a pattern. With a group_id the group
        assigns (listener: a ConsumerRebalanceListener, its callbacks run
        inside get calls); without one every partition of the topics is
        assigned here and follows metadata."""
        names = [topics] if isinstance(topics, str) else list(topics or ())
        if not names and pattern is None:
            raise ValueError("You should provide either `topics` or `pattern`")
        state = self._subscription_state
        state.check_subscribe(names, pattern, bool(self._engine.assignment()))
        if listener is not None:
            from fastkc.aio.abc import check_listener

            check_listener(listener)
        if self._config["group_id"] is not None:
            group = self._group_driver()
            state.subscribe(names, pattern)
            if pattern is not None:  # named topics: the group driver asks for them
                self._engine.follow_topics(None)
            self._group_subscription = (names, pattern, listener)
            group.subscribe(topics=names, pattern=pattern, listener=listener)
            if self._engine.started and not self._engine.closed:
                # subscribed after start(): the group's task starts now (start() only spawns it)
                asyncio.get_running_loop().create_task(group.start())
            return
        self._listener = listener
        state.subscribe(names, pattern)
        self._engine.follow_topics(None if pattern is not None else set(names))
        self._update_subscribed_assignment()

    def _metadata_updated(self) -> None:
        if self._group is None:
            self._update_subscribed_assignment()
        else:
            self._group_notify_metadata()

    def _group_notify_metadata(self) -> None:
        group = self._group
        if group is not None:
            group.metadata_changed(partition_counts(self._engine.cluster))

    def _update_subscribed_assignment(self) -> None:
        """No group: every known partition of the subscribed (or matching) topics."""
        state = self._subscription_state
        if not state.subscribed or self._group is not None:
            return
        wanted = state.follow_metadata(self._engine.cluster.topics, self._config["exclude_internal_topics"])
        if set(wanted) != set(self._engine.assignment()):
            self._set_assignment(wanted)

    def subscription(self) -> set[str]:
        state = self._subscription_state
        if self._group is not None and state.subscribed:
            return set(self._group.subscription())
        return set(state.topics or ())

    def unsubscribe(self) -> None:
        if self._group is not None and self._subscription_state.subscribed:
            self._group.unsubscribe()
        self._group_subscription = None
        self._subscription_state.unsubscribe()
        self._engine.stop_following_all()
        self._set_assignment([])

    def _group_driver(self) -> "AioGroupDriver":
        if self._config["group_id"] is None:
            raise IllegalOperation("Requires group_id")
        if self._group is None:
            from fastkc.aio.group_driver import AioGroupDriver

            # (aiokafka's rebalance_timeout_ms stays the driver's: the group
            # member sends max_poll_interval_ms, fastkc/aio/config.py says why)
            self._group = AioGroupDriver(self._config, _AioGroupApp(self._engine, self._set_assignment))
            self._engine.attach_group(self._group)
        return self._group

    # --- getting records -----------------------------------------------------------------
    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record (of `partitions` only, when given); waits for one."""
        return await self._engine.take_one(partitions)

    async def getmany(self, *partitions: TopicPartition, timeout_ms: float = 0,
                      max_records: int | None = None) -> Records:
        """{TopicPartition: [record]}: what is buffered (of `partitions` only,
        when given), up to max_records (max_poll_records when None; all
        buffered when that is None too), waiting up to timeout_ms for some."""
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError("`max_records` must be a positive Integer")
        limit = max_records or self._max_poll_records or _GETMANY_CHUNK
        return await self._engine.take_records(partitions, limit, timeout_ms or 0)

    async def getmany_arrow(self, *partitions: TopicPartition, timeout_ms: float = 0,
                            max_records: int | None = None) -> _RecordBatch:
        """getmany()'s records as one pyarrow.RecordBatch in poll_arrow()'s
        schema (fastkc.records.arrow_schema(zero_copy=arrow_zero_copy));
        empty when nothing came within timeout_ms."""
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError("`max_records` must be a positive Integer")
        limit = max_records or self._max_poll_records or (1 << 62)
        return await self._engine.take_arrow(partitions, limit, timeout_ms or 0)

    # --- positions --------------------------------------------------------------------------
    def _state(self, partition: TopicPartition) -> PartitionState:
        if not is_topic_partition(partition):
            raise TypeError("partition must be a TopicPartition")
        return self._engine.state(partition)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch from `offset` next."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        self._state(partition)
        self._engine.seek(partition, offset)

    async def _seek_to(self, partitions: Iterable[TopicPartition], strategy: str) -> bool:
        engine = self._engine
        engine.check_running()
        tps = list(partitions) or engine.assignment()
        for tp in tps:
            self._state(tp)
        engine.request_reset(tps, strategy)
        deadline = time.monotonic() + self._config["request_timeout_ms"] / 1000.0
        return await engine.wait_positions(tps, deadline)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        return await self._seek_to(partitions, "earliest")

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        return await self._seek_to(partitions, "latest")

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Seek to the group's committed offsets; {tp: offset or None}."""
        group = await self._running_group()
        tps = list(partitions) or self._engine.assignment()
        for tp in tps:
            self._state(tp)
        committed = await group.fetch_committed(tps)
        out: dict[TopicPartition, int | None] = {}
        for tp in tps:
            entry = committed.get(tp)
            if entry is None:
                out[tp] = None
                continue
            offset = entry.offset
            assert offset is not None  # the commit machine makes an entry only of an offset >= 0
            out[tp] = offset
            if tp in self._engine.partitions():
                self._engine.seek(tp, offset)
        return out

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record a get call returns, waiting for a
        reset to resolve."""
        self._engine.check_running()
        self._state(partition)
        return await self._engine.position(partition)

    def highwater(self, partition: TopicPartition) -> int | None:
        return self._state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        return self._state(partition).last_stable_offset

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """The wall-clock time (ms) of the last fetch answer that carried
        `partition`, or None before one."""
        fetched_at = self._state(partition).fetched_at
        if fetched_at is None:
            return None
        return int((time.time() - (time.monotonic() - fetched_at)) * 1000)

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _offsets_only(await self._offsets({tp: EARLIEST for tp in partitions}))

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _offsets_only(await self._offsets({tp: LATEST for tp in partitions}))

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """{tp: OffsetAndTimestamp or None}: the earliest offset whose
        timestamp is >= the given one (None past the last record)."""
        for tp, ts in timestamps.items():
            if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
                raise ValueError("The target time for partition {0} is {1}. The target time cannot be "
                                 "negative.".format(tp, ts))
        looked_up = await self._offsets(dict(timestamps))
        return {tp: None if offset < 0 else OffsetAndTimestamp(offset, ts) for tp, (offset, ts) in looked_up.items()}

    async def _offsets(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int]]:
        """{tp: (offset, timestamp)} of a ListOffsets lookup, in the order asked."""
        self._engine.check_running()
        for tp in timestamps:
            if not is_topic_partition(tp):
                raise TypeError("partitions must be TopicPartition namedtuples")
        if not timestamps:
            return {}
        results = await self._engine.list_offsets(timestamps, self._config["request_timeout_ms"])
        out: dict[TopicPartition, tuple[int, int]] = {}
        for tp in timestamps:
            offset, ts, _epoch = results[tp]
            out[tp] = (offset, ts)
        return out

    # --- flow control --------------------------------------------------------------------------
    def pause(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp)
        for tp in partitions:
            self._engine.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp)
        for tp in partitions:
            self._engine.resume(tp)

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self._engine.partitions().items() if s.paused}

    # --- committing (the group) -----------------------------------------------------------------
    async def commit(self, offsets: Mapping[TopicPartition, CommitOffset] | None = None) -> None:
        """Commit `offsets` ({tp: offset or OffsetAndMetadata}; the positions
        of the assignment when None) and wait for the answer."""
        self._engine.check_running()
        group = await self._running_group()
        committing: dict[TopicPartition, OffsetAndMetadata] | None = None
        if offsets is not None:
            from fastkc.aio.structs import normalize_commit_offsets

            committing = normalize_commit_offsets(offsets)
        elif self._group_subscription is None:
            # a manual assignment: the group driver's assignment is the
            # subscription's, so the positions are named here
            committing = self._engine.positions(self._engine.assignment())
            if not committing:
                return
        await group.commit(committing)

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's last committed offset of `partition`, or None."""
        self._engine.check_running()
        entry = await (await self._running_group()).committed(partition)
        # aiokafka's committed() is the offset alone (None: nothing committed)
        return None if entry is None else entry.offset

    # --- metadata ----------------------------------------------------------------------------
    async def topics(self) -> set[str]:
        """Every topic of the cluster (internal ones hidden when exclude_internal_topics)."""
        self._engine.check_running()
        await self._engine.wait_for_metadata(self._config["request_timeout_ms"], all_topics=True)
        return visible_topics(self._engine.cluster.topics, self._config["exclude_internal_topics"])

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of `topic` the cached metadata knows, or None
        (as aiokafka: no lookup; the topic is added to the next refresh)."""
        meta = self._engine.cluster.topics.get(topic)
        if meta is None or meta.error_code != 0:
            self._engine.add_topics([topic])
            return None
        return set(meta.partitions)


def _offsets_only(looked_up: dict[TopicPartition, tuple[int, int]]) -> dict[TopicPartition, int]:
    return {tp: offset for tp, (offset, _ts) in looked_up.items()}


def _constructor_signature() -> inspect.Signature:
    """AIOKafkaConsumer(*topics, <every keyword of fastkc.aio.config's table,
    with its default>): the signature aiokafka's constructor has, from the one
    table that checks the keywords (so the two cannot drift apart)."""
    kind = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter("topics", inspect.Parameter.VAR_POSITIONAL)]
        + [inspect.Parameter(key.name, kind, default=key.default) for key in KEYS])


# inspect.signature() reads __signature__; typeshed's functions do not declare it
AIOKafkaConsumer.__init__.__signature__ = _constructor_signature()  # type: ignore[attr-defined]


class _AioGroupApp:
    """What the group driver may do to the consumer (on the loop, inside get
    calls and commits: fastkc.aio.group_driver's `app`), through the engine's
    API; `set_assignment` is the consumer's (it knows the subscription whose
    topics metadata follows)."""

    def __init__(self, engine: AioConsumerEngine, set_assignment: Callable[[list[TopicPartition]], None]) -> None:
        self._engine = engine
        self._set_assignment = set_assignment

    def positions(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._engine.positions(partitions)

    def assign_from_group(self, partitions: Iterable[TopicPartition]) -> None:
        self._set_assignment(list(partitions))

    def revoke_from_group(self, partitions: Iterable[TopicPartition]) -> None:
        gone = set(partitions)
        self._set_assignment([tp for tp in self._engine.assignment() if tp not in gone])

    def topics_matching(self, pattern: Pattern) -> set[str]:
        engine = self._engine
        return visible_topics(engine.cluster.topics, engine.config["exclude_internal_topics"], compile_pattern(pattern))

    def request_metadata_for(self, topics: Iterable[str] | None) -> None:
        engine = self._engine
        engine.follow_topics(None if topics is None else set(topics) | {tp.topic for tp in engine.assignment()})

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None:
        self._engine.hold_for_committed(tp, held)

    def is_held(self, tp: TopicPartition) -> bool:
        return self._engine.is_held(tp)

    def seek(self, tp: TopicPartition, offset: int, epoch: int) -> None:
        self._engine.seek(tp, offset, epoch)
