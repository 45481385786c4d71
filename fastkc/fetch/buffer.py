"""The record buffer and its hand-out (Java's FetchBuffer + FetchCollector):
the buffered CompletedFetches (completed.py), their decoder streams,
fetched_records() / fetched_arrow(), and the decode-ahead jobs. Python runs
here once per buffered fetch (and step); every record is decoded and built
in C by fastkc.records.

Two offsets per partition:
- `position`: the next offset the application will be given (what
  KafkaConsumer.position() returns), advanced here.
- `fetch_offset`: the next offset to ask the broker for (fastkc/fetch/planner.py).

Decoding is lazy and resumable, per partition, at poll time, into records or
Arrow columns as the caller asks: each buffered fetch gets a decoder stream
(fastkc.records.record_stream, Java's CompletedFetch walk) that decompresses
a batch only when it is reached and hands out at most the records asked for,
within the memory budget of fastkc.config.decode_budget(). poll() keeps
draining the partition whose fetch it left mid-way before it starts another
(`_in_line`), so one partition's decoded batch is alive at a time. A take
that has handed out records starts no further step once its steps
decompressed the budget (TakeBudget), however many compressed batches the
buffered fetches hold: the rest waits, raw, for the next take.

Decode ahead, two ways, each a job a driver runs through its
`fastkc.decode_executor.DecodeExecutor` (this part owns no thread):
- `decode_ahead` (the sync consumer's decode_threads=1): after a Fetch
  answer was buffered and after a take that returned records, the first
  fetches the next take will reach get a PrepareRecordsStep
  (`take_decode_jobs()`, the driver submits them).
- `prepared_only` takes (the asyncio consumer): a take hands out only
  prepared steps of heavy fetches and names the fetch it stopped at in
  `unprepared`; the caller submits `prepare_job(unprepared, ...)`.

Interface to the other parts: `add` (the planner buffers a fetch),
`fetched` (a Fetch answer was handled), `drop` (a seek, reset, truncation or
unassignment clears a partition's buffer), `discard_prepared` (pause).
"""
from collections.abc import Container
from typing import TYPE_CHECKING, Any

from fastkc import records as fastkc_records
from fastkc.config import Config, decode_budget
from fastkc.deserializers import ArrowDeserializers, RecordDeserializers, partition_rows, per_record
from fastkc.errors import CorruptRecordError
from fastkc.fetch.completed import (
    ARROW_STEP_MAX,
    CompletedFetch,
    PrepareArrowStep,
    PreparedArrowStep,
    PrepareRecordsStep,
    TakeBudget,
    worth_preparing,
)
from fastkc.fetch.partitions import FetchPartitions
from fastkc.structs import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from fastkc._backend import RecordStream
    from fastkc.fetch.state import PartitionState
    from fastkc.metrics import ConsumerMetrics

# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any
#: a decode-ahead job this part makes
DecodeJob = PrepareRecordsStep | PrepareArrowStep

# poll() decodes a fetched blob in steps of at most this many records instead
# of all at once. Why: ~8,000 ConsumerRecords of one 1 MB blob fill several
# of CPython's 1 MiB object arenas, which are all emptied when the blob is
# used up, handed back to the OS (only one empty arena is kept) and mapped
# again, page by page, by the next decode: on the 2 M x 100 B benchmark that
# was ~100,000 of the run's ~195,000 page faults. A step's records (~1,000,
# under one arena) are mostly freed before the next step is built, so the
# same arena memory is reused while it is mapped and in cache. Measured there
# with pieces of whole batches (perf stat, 3 runs each): 1024 → ~80 k page
# faults, 0.40-0.48 CPU-s; 2048 → ~106 k, 0.45-0.54; 4096 → ~151 k,
# 0.51-0.59; whole blobs → ~193 k, 0.58-0.66.
_STEP_RECORDS = 1024

# A decode-ahead job (decode_threads=1) prepares a stream's next step of up
# to this many records (~1.3 MB of descriptors; a whole 1 MiB fetch of
# 100-byte records is ~9,500): one thread hand-off (tens of us) per fetch,
# not per poll. poll() still builds objects in pieces of _STEP_RECORDS from it.
_PREPARE_RECORDS = 16384
# Streams with a step prepared or in preparation at once: the partition
# poll() is draining and the next one in line. Each prepared step holds at
# most half the per-step decompressed budget (plus its open batch), so the
# two together stay within what one step may hold today.
_PREPARE_AHEAD = 2


class RecordBuffer:
    """The buffered fetches and their hand-out (see the module docstring)."""

    def __init__(self, config: Config, partitions: FetchPartitions, metrics: dict[str, int], *,
                 decode_ahead: bool) -> None:
        self.config = config
        self._partitions = partitions
        self._metrics = metrics  # the machine's counters; this part adds records and bytes consumed
        self.sensors: ConsumerMetrics | None = None  # the windowed metrics (the facade sets them)
        self._buffered_bytes = 0
        self._next_partition = 0  # round-robin start for the takes
        # the partition whose buffered fetch a take left mid-way: drained first
        self._in_line: TopicPartition | None = None
        # the decoding budget (fastkc.config.decode_budget): per-batch
        # decompressed bytes and records, decompressed bytes held per step
        self._max_decompressed, self._max_batch_records, self._max_held = decode_budget(config)
        self._arrow_zero_copy = bool(config.get("arrow_zero_copy", False))
        # decode_threads=1 with streams that can prepare off-thread: steps
        # are prepared ahead (take_decode_jobs)
        self.decode_ahead = decode_ahead
        self._prepare_held = max(1, self._max_held // _PREPARE_AHEAD)
        self._decode_jobs: list[DecodeJob] = []
        # record steps the takes handed out from a step prepared off the
        # caller's thread, had to wait for (being prepared), or decoded themselves
        self.decode_steps = {"prepared": 0, "waited": 0, "inline": 0}
        self.unprepared: CompletedFetch | None = None  # a prepared_only take: the fetch it stopped at
        # fetched_arrow() was called last: no record streams are prepared for
        # fetches as they arrive (the Arrow form would start its own)
        self._records_form = True

    @property
    def _states(self) -> "dict[TopicPartition, PartitionState]":
        return self._partitions.states

    # --- the other parts' side -------------------------------------------------------------
    def add(self, state: "PartitionState", completed: CompletedFetch) -> None:
        """A fetched partition's data, buffered after what it holds (contiguous:
        the planner checked it answers the fetch_offset)."""
        state.buffered.append(completed)
        self._buffered_bytes += completed.nbytes

    def fetched(self) -> None:
        """A Fetch answer was handled: with decode_ahead (and records taken
        last), the first steps of the new data can be prepared while the
        application goes on (a take may still be handing out older data)."""
        if self.decode_ahead and self._records_form:
            self._prepare_ahead(self.config["key_deserializer"], self.config["value_deserializer"])

    def drop(self, state: "PartitionState") -> None:
        """Clear a partition's buffered fetches: it is fetched again from its
        position."""
        for completed in state.buffered:
            self._buffered_bytes -= completed.nbytes
            if completed.tally is not None:
                # dropped, not consumed: its bytes do not count, the records
                # handed out from it before do (kafka-python's drain())
                completed.tally.done(state.tp.topic, 0, completed.records_out)
        state.buffered.clear()
        if self._in_line == state.tp:
            self._in_line = None
        state.stalled = False
        self._partitions.replan()
        if state.position is not None:
            state.fetch_offset = state.position
            state.fetch_epoch = state.position_epoch

    def discard_prepared(self, state: "PartitionState") -> None:
        """A paused partition: a step prepared ahead is not delivered later;
        the stream goes, and the next take after resume() decodes again from
        the position (the fetched bytes stay buffered)."""
        if not self.decode_ahead or not state.buffered:
            return
        completed = state.buffered[0]
        if completed.stream is not None and completed.form == "records" and completed.fetch_offset == state.position:
            completed.stream = None
            completed.form = None

    def has_buffered(self) -> bool:
        return any(s.buffered and not s.paused for s in self._states.values())

    def buffered_bytes(self) -> int:
        return self._buffered_bytes

    def _ordered_states(self) -> "list[PartitionState]":
        """The partitions in the order this take visits them (_take_order);
        the next take starts one partition further on."""
        order = self._take_order()
        if order:
            self._next_partition = self._next_partition % len(order) + 1
        return order

    def stop_at_bad_batch(self, state: "PartitionState", exc: BaseException, handed_out_to: int | None,
                          now: float, advance: bool = True, bad_offset: int | None = None) -> None:
        """After a CorruptRecordError (or a batch deserializer's error, at the
        record `bad_offset`): drop what is buffered, move the position past
        the records already handed out (`handed_out_to`: the offset after the
        last, or None) to the bad batch (record), and fetch again from there
        after retry_backoff_ms — the records before it are delivered, the
        error surfaces next, nothing is skipped."""
        self.drop(state)
        if advance:
            if handed_out_to is not None:
                state.position = handed_out_to
            if bad_offset is None:
                bad_offset = getattr(exc, "offset", None)
            assert state.position is not None  # records were handed out from the buffer: there is one
            if bad_offset is not None and bad_offset > state.position:
                state.position = bad_offset
        state.fetch_offset = state.position
        state.next_retry = now + self.config["retry_backoff_ms"] / 1000.0

    def _stream(self, state: "PartitionState", completed: CompletedFetch, form: str, key_deserializer: Any = None,
                value_deserializer: Any = None) -> "RecordStream | None":
        """The decoder stream of `completed` for `form`, started from the
        position when there is none for that form yet; None (and the buffer
        dropped) when the fetch is not contiguous with the position."""
        if completed.stream is not None and completed.form == form:
            return completed.stream
        if completed.stream is None and completed.fetch_offset != state.position:
            self.drop(state)  # stale: fetch again
            return None
        position = state.position
        # data is buffered only while there is a position: every move that
        # clears it (a reset) drops the buffer first (planner.py's invariant)
        assert position is not None
        completed.stream = self._open_stream(completed, position, form, per_record(key_deserializer),
                                             per_record(value_deserializer))
        completed.form = form
        completed.fetch_offset = position
        completed.decompressed_charged = 0
        completed.arrow_ready = None  # a step of the stream this one replaces is not handed out
        return completed.stream

    def _open_stream(self, completed: CompletedFetch, position: int, form: str, key_deserializer: Any = None,
                     value_deserializer: Any = None) -> "RecordStream":
        config = self.config
        tp = completed.tp
        return fastkc_records.record_stream(
            completed.data, topic=tp.topic, partition=tp.partition, fetch_offset=position,
            check_crcs=config["check_crcs"], isolation_level=config["isolation_level"],
            aborted_transactions=completed.aborted or (), key_deserializer=key_deserializer,
            value_deserializer=value_deserializer, max_decompressed_bytes=self._max_decompressed,
            max_batch_records=self._max_batch_records, arrow=form == "arrow")

    def _raw_step(self, state: "PartitionState", completed: CompletedFetch, max_records: int) -> list[ConsumerRecord]:
        """The records a step of `completed` from the position gives, built
        raw (no deserializer), on a stream of its own (the error path of a
        per-record deserializer: its step is gone from the fetch's stream)."""
        assert state.position is not None
        try:
            records: list[ConsumerRecord] = self._open_stream(completed, state.position, "records").records(
                max_records, self._max_held)
        except CorruptRecordError as exc:
            records = list(getattr(exc, "records", None) or ())
        return records

    @staticmethod
    def _resume_at(stream: "RecordStream", completed: CompletedFetch, done: bool) -> int:
        # A used-up fetch moves the position past its last complete entry
        # even when the decoder's next offset is lower: a legacy wrapper's
        # offset is its last inner offset by definition (Java's
        # batch.nextOffset()), whatever offsets a hostile wrapper holds
        # inside, and this is where the next fetch was pipelined from.
        if done:
            return max(stream.next_offset, completed.next_offset)
        return stream.next_offset

    def used_up(self, state: "PartitionState", completed: CompletedFetch) -> None:
        """A fetch whose records are all out leaves the buffer (consumed)."""
        state.buffered.popleft()
        self._buffered_bytes -= completed.nbytes
        self._metrics["bytes-consumed-total"] += completed.nbytes
        if completed.tally is not None:
            completed.tally.done(state.tp.topic, completed.nbytes, completed.records_out)
        if self._in_line == state.tp:
            self._in_line = None

    def fetched_records(self, now: float, max_records: int, update_offsets: bool = True,
                        key_deserializer: Any = None, value_deserializer: Any = None,
                        partitions: Container[TopicPartition] | None = None,
                        prepared_only: bool = False) -> dict[TopicPartition, list[ConsumerRecord]]:
        """{tp: [ConsumerRecord]} of up to max_records buffered records (of
        `partitions` only, when given: aiokafka's getmany(*partitions)). A
        CorruptRecordError is raised after the records before the bad batch
        were returned (here, or by the next call when some were returned).

        prepared_only (the asyncio driver's takes): hand out only records of
        steps already prepared (RecordStream.prepare, run off this thread by
        the caller), so that no decompression or parsing runs here; the take
        stops at the first stream that has nothing prepared, and
        `self.unprepared` names it (its CompletedFetch) for the caller to
        prepare; a take that stopped for its count names the fetch the next
        take starts with, when that has nothing prepared. Without it,
        `unprepared` is None."""
        self._records_form = True
        self.unprepared = None
        # the streams build records with the per-record deserializers; a
        # batch deserializer's field is replaced per step, below
        deserializers = RecordDeserializers(key_deserializer, value_deserializer)
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        remaining = max_records
        take = TakeBudget(self._max_held)
        for state in self._ordered_states():
            if remaining <= 0 or self.unprepared is not None or (out and take.used_up()):
                break
            if state.paused or not state.buffered or (partitions is not None and state.tp not in partitions):
                continue
            tp = state.tp
            taken: list[ConsumerRecord] = []
            while state.buffered and remaining > 0:
                completed = state.buffered[0]
                stream = self._stream(state, completed, "records", key_deserializer, value_deserializer)
                if stream is None:
                    break
                step = min(remaining, _STEP_RECORDS)
                if prepared_only and hasattr(stream, "prepare"):  # the twin's streams decode inline
                    # `preparing` is read first and without the lock: `prepared`
                    # takes it, and a prepare() in progress holds it
                    ready = 0 if stream.preparing else stream.prepared
                    if ready:
                        step = min(step, ready)  # more would run a real step here
                        self.decode_steps["prepared"] += 1
                    elif completed.nothing_to_prepare or not worth_preparing(completed):
                        # the end or the sticky error (no decoding left), or a
                        # step whose phase 1 costs less than a thread hand-off
                        self.decode_steps["inline"] += 1
                    else:
                        self.unprepared = completed
                        break
                elif self.decode_ahead:
                    # where this step's phase 1 comes from (metrics: how much the decode thread took over)
                    self.decode_steps["waited" if stream.preparing else
                                      "prepared" if stream.pending else "inline"] += 1
                failure: BaseException | None = None
                bad_offset: int | None = None
                deserialized = None
                try:
                    chunk = stream.records(step, self._max_held)
                except CorruptRecordError as exc:
                    chunk = list(getattr(exc, "records", None) or ())
                    failure = exc
                except Exception as exc:  # a per-record deserializer's, at a record the builder does not name
                    deserialized = deserializers.replayed(self._raw_step(state, completed, step), tp.topic,
                                                          tp.partition)
                    if deserialized.error is None:  # it passed when called again: deliver nothing of the step
                        deserialized = deserialized._replace(records=[], error=exc)
                    chunk = []
                take.charge(completed, stream)
                if deserialized is None and deserializers.batched:
                    deserialized = deserializers.deserialize(chunk, tp.topic, tp.partition)
                if deserialized is not None:
                    chunk = deserialized.records
                    if deserialized.error is not None:  # at a record before a corrupt batch, if any
                        failure, bad_offset = deserialized.error, deserialized.failed_at
                if failure is not None:
                    good = chunk
                    if good:
                        taken.extend(good)
                        remaining -= len(good)
                        completed.records_out += len(good)
                        if update_offsets:
                            state.position_epoch = good[-1].leader_epoch
                    self.stop_at_bad_batch(state, failure, good[-1].offset + 1 if good else None, now,
                                           advance=update_offsets, bad_offset=bad_offset)
                    if taken:
                        self._partitions.fail(failure)
                        break
                    if out:
                        self._partitions.fail(failure)
                        return out
                    raise failure
                if chunk:
                    if taken:
                        taken.extend(chunk)
                    else:
                        taken = chunk
                    remaining -= len(chunk)
                    completed.records_out += len(chunk)
                done = stream.done
                if update_offsets:
                    state.position = self._resume_at(stream, completed, done)
                    if chunk:
                        state.position_epoch = chunk[-1].leader_epoch
                    elif done and completed.leader_epoch >= 0:
                        state.position_epoch = completed.leader_epoch
                completed.fetch_offset = stream.next_offset
                if done:
                    self.used_up(state, completed)
                else:
                    self._in_line = tp
                    if not chunk:
                        break  # cannot happen (a step that hands out nothing is the end); never spin
                if not update_offsets or (take.used_up() and (taken or out)):
                    break  # the take's budget: the rest stays buffered for the next take
            if not update_offsets:
                # the position stays: what was handed out will be fetched again
                self.drop(state)
            if taken:
                out[tp] = taken
                self._metrics["records-consumed-total"] += len(taken)
            if self.sensors is not None and update_offsets:
                self.sensors.partition_position(state)  # lag and lead: once per partition per poll
        if self.decode_ahead and out and update_offsets:
            self._prepare_ahead(key_deserializer, value_deserializer)
        if prepared_only and self.unprepared is None and update_offsets:
            self.unprepared = self._next_to_prepare(key_deserializer, value_deserializer, partitions)
        return out

    def _next_to_prepare(self, key_deserializer: Any, value_deserializer: Any,
                         partitions: Container[TopicPartition] | None) -> CompletedFetch | None:
        """After a prepared_only take that stopped for its count: the fetch
        the next take will start with, when its stream has nothing prepared,
        so the caller prepares it while the application handles these
        records (the next take then finds it ready)."""
        for state in self._take_order():
            if state.paused or not state.buffered or (partitions is not None and state.tp not in partitions):
                continue
            completed = state.buffered[0]
            stream = self._stream(state, completed, "records", key_deserializer, value_deserializer)
            if stream is None or not hasattr(stream, "prepare") or stream.preparing:
                return None
            if stream.prepared or completed.nothing_to_prepare or not worth_preparing(completed):
                return None
            return completed
        return None

    def _take_order(self) -> "list[PartitionState]":
        """The partitions in the order the next take will visit them, without
        moving the rotation: round-robin from where the last take started
        plus one, the in-line one first -- the fetch a take left mid-way is
        drained first (Java's nextInLineFetch): one partition's decoded batch
        is alive at a time."""
        states = list(self._states.values())
        if not states:
            return states
        start = self._next_partition % len(states)
        order = states[start:] + states[:start]
        in_line = self._states.get(self._in_line) if self._in_line is not None else None
        if in_line is not None and in_line.buffered and order[0] is not in_line:
            order.remove(in_line)
            order.insert(0, in_line)
        return order

    def _prepare_ahead(self, key_deserializer: Any, value_deserializer: Any) -> None:
        """The jobs for the next steps the next take will need: the first
        buffered fetch of the partitions in the order that take will visit
        them (the in-line one first), _PREPARE_AHEAD of them. They replace
        jobs the driver has not taken (hints for an older buffer)."""
        order = self._take_order()
        jobs: list[DecodeJob] = []
        ahead = 0
        for state in order:
            if ahead >= _PREPARE_AHEAD:
                break
            if state.paused or not state.buffered:
                continue
            completed = state.buffered[0]
            stream = completed.stream
            if stream is None:
                if completed.fetch_offset != state.position:
                    continue  # poll() will find it stale and fetch again
                stream = self._stream(state, completed, "records", key_deserializer, value_deserializer)
                assert stream is not None  # None only for a stale fetch, passed over just above
            elif completed.form != "records":
                continue
            ahead += 1
            if not stream.done and not stream.pending:
                jobs.append(PrepareRecordsStep(completed, _PREPARE_RECORDS, self._prepare_held))
        self._decode_jobs = jobs

    def take_decode_jobs(self) -> list[DecodeJob]:
        """The decode-ahead jobs made since the last call (decode_ahead), for
        the driver's executor."""
        jobs, self._decode_jobs = self._decode_jobs, []
        return jobs

    def prepare_job(self, completed: CompletedFetch, max_records: int, arrow: bool = False) -> DecodeJob:
        """The job preparing the next step of `completed` (the fetch a
        prepared_only take named in `unprepared`): at most max_records
        records, or with `arrow` an Arrow step of at most max_records rows."""
        if arrow:
            return PrepareArrowStep(completed, max_records, self._max_held, self._arrow_zero_copy)
        return PrepareRecordsStep(completed, max_records, self._prepare_held)

    def fetched_arrow(self, now: float, max_records: float, partitions: Container[TopicPartition] | None = None,
                      prepared_only: bool = False, key_deserializer: Any = None,
                      value_deserializer: Any = None) -> list[_RecordBatch]:
        """_take_arrow()'s batch, its key and value columns typed by the
        deserializers that have deserialize_arrow (fastkc/deserializers.py,
        ArrowDeserializers). Where a column's type would change (a new writer
        schema with no reader schema) or a row fails, the take ends: the rows
        from there are given back (their partitions fetched again from that
        row), so a batch never mixes two types, and the next take raises the
        failing row's error with nothing after it handed out."""
        batches = self._take_arrow(now, max_records, partitions, prepared_only)
        deserializers = ArrowDeserializers(key_deserializer, value_deserializer)
        if not batches or not deserializers:
            return batches
        taken = batches[0]
        try:
            typed = deserializers.deserialize(taken)
        except BaseException:
            self._give_back(taken, 0)
            raise
        if typed.num_rows < taken.num_rows:
            self._give_back(taken, typed.num_rows)
        return [typed] if typed.num_rows else []

    def _give_back(self, taken: _RecordBatch, start: int) -> None:
        """Rows [start, ...) of a take are not handed out: each partition among
        them goes back to its first such row, its buffered fetches dropped
        (fetched again: a schema change or a bad row is rare, and the
        position is then exact without undoing the take's steps)."""
        offsets = taken.column("offset")
        for run in partition_rows(taken, start):
            state = self._states.get(TopicPartition(run.topic, run.partition))
            if state is None:  # unassigned meanwhile: nothing to move
                continue
            self.drop(state)
            state.seek(offsets[run.start].as_py(), state.position_epoch)
        self._metrics["records-consumed-total"] -= taken.num_rows - start

    def _take_arrow(self, now: float, max_records: float, partitions: Container[TopicPartition] | None = None,
                    prepared_only: bool = False) -> list[_RecordBatch]:
        """A list holding one pyarrow.RecordBatch (arrow_schema()) of up to
        max_records buffered records (inf: no limit) across partitions (of
        `partitions` only, when given), or an empty list; positions
        advanced. The steps append to one ArrowBuilder (one copy of the data,
        no join afterwards); a step ends before the batch would pass Arrow's
        int32 offsets, and the rest is handed out by the next call.

        prepared_only (the asyncio driver): a heavy fetch (worth_preparing)
        is not decoded here; its rows come from a step decoded off this
        thread (prepare_job(..., arrow=True)) and are joined to the others' (one copy
        of those rows). The take stops at a heavy fetch with no step ready
        and names it in `self.unprepared`."""
        builder = fastkc_records.arrow_builder(zero_copy=self._arrow_zero_copy)
        pieces: list[_RecordBatch] = []  # rows of prepared steps, joined after the builder's

        def finish() -> list[_RecordBatch]:
            batches = ([builder.finish()] if builder.num_rows else []) + pieces
            if len(batches) > 1:
                import pyarrow as pa

                batches = [pa.concat_batches(batches)]
            return batches

        self._records_form = False
        self.unprepared = None
        remaining = max_records
        take = TakeBudget(self._max_held)
        for state in self._ordered_states():
            if remaining <= 0:
                break
            if state.paused or not state.buffered or (partitions is not None and state.tp not in partitions):
                continue
            while state.buffered and remaining > 0:
                if take.used_up() and (builder.num_rows or pieces):
                    return finish()  # the budget: the rest stays buffered for the next take
                completed = state.buffered[0]
                stream = self._stream(state, completed, "arrow")
                if stream is None:
                    break
                if prepared_only and hasattr(stream, "prepare") and worth_preparing(completed):
                    ready = completed.arrow_ready
                    if ready is None or ready.stream is not stream:
                        self.unprepared = completed
                        return finish()
                    take.charge(completed, stream)
                    n, error = self._hand_out_prepared_arrow(state, completed, stream, ready, remaining, pieces, now)
                    remaining -= n
                    if error is not None:
                        if builder.num_rows or pieces:
                            self._partitions.fail(error)
                            return finish()
                        raise error
                    continue
                try:
                    appended = stream.arrow(int(min(remaining, ARROW_STEP_MAX)), self._max_held, None, builder)
                except CorruptRecordError as exc:
                    take.charge(completed, stream)
                    # the step's records before the bad batch are in the builder
                    last_offset = builder.last_offset  # None while the builder holds no row
                    handed_out_to = last_offset + 1 if stream.last_totals[0] and last_offset is not None else None
                    self.stop_at_bad_batch(state, exc, handed_out_to, now)
                    if builder.num_rows:
                        self._partitions.fail(exc)
                        return [builder.finish()]
                    raise
                take.charge(completed, stream)
                if appended:
                    remaining -= appended
                    completed.records_out += appended
                    self._metrics["records-consumed-total"] += appended
                if not self._arrow_step_ended(state, completed, stream) and not appended:
                    return finish()  # full (int32 offsets)
        return finish()

    def _arrow_step_ended(self, state: "PartitionState", completed: CompletedFetch, stream: "RecordStream") -> bool:
        """The position and the fetch's progress after an Arrow step whose rows
        are all out (on this thread or prepared off it); True when the fetch
        is used up."""
        done = stream.done
        state.position = self._resume_at(stream, completed, done)
        completed.fetch_offset = stream.next_offset
        if self.sensors is not None:
            self.sensors.partition_position(state)  # lag and lead: once per step
            if stream.leader_epoch >= 0:
                state.position_epoch = stream.leader_epoch
        if done:
            if completed.leader_epoch >= 0:
                state.position_epoch = completed.leader_epoch
            self.used_up(state, completed)
        else:
            self._in_line = state.tp
        return done

    def _hand_out_prepared_arrow(self, state: "PartitionState", completed: CompletedFetch, stream: "RecordStream",
                                 ready: PreparedArrowStep, remaining: float, pieces: list[_RecordBatch],
                                 now: float) -> tuple[int, CorruptRecordError | None]:
        """Up to `remaining` rows of a prepared Arrow step into `pieces`; once
        all its rows are out, the position moves as a step on this thread
        would have moved it (or stops at its bad batch: the error is
        returned). Returns (rows handed out, error)."""
        batch = ready.batch
        rows = batch.num_rows if batch is not None else 0
        n = int(min(rows - ready.taken, remaining))
        last = None
        if n > 0:
            assert batch is not None  # rows > 0
            piece = batch.slice(ready.taken, n)
            ready.taken += n
            pieces.append(piece)
            last = int(piece.column("offset")[n - 1].as_py())
            completed.records_out += n
            self._metrics["records-consumed-total"] += n
        if ready.taken < rows:  # the rest waits for the next call; the stream has gone past it
            assert last is not None
            state.position = last + 1
            self._in_line = state.tp
            return n, None
        completed.arrow_ready = None
        if ready.error is not None:
            self.stop_at_bad_batch(state, ready.error, last + 1 if last is not None else None, now)
            return n, ready.error
        self._arrow_step_ended(state, completed, stream)
        return n, None
