"""KafkaConsumer.arrow_stream(): the consumer's records as an Arrow stream.

`ArrowStream` implements the Arrow PyCapsule stream protocol
(`__arrow_c_stream__`), so polars.from_arrow(stream), duckdb's replacement
scan (duckdb.sql('select ... from stream')) and
pyarrow.RecordBatchReader.from_stream(stream) read the batches poll_arrow()
builds in C, through the C stream interface: no row becomes a Python object.
The C stream itself is pyarrow's (RecordBatchReader.from_batches over a
generator, exported): pyarrow keeps the ABI, the release callbacks and the
error strings right, and fastkc owns what the stream means:

- Records handed into the stream are consumed: positions advance as
  poll_arrow() advances them, batch by batch. A reader that stops early
  (releases the stream after some batches) leaves the consumer usable with
  its positions just past the last batch it pulled; nothing skipped, nothing
  read twice.
- until="end": the end offsets of the assigned partitions (the high
  watermark; the last stable offset under read_committed) are snapshot when
  the first batch is pulled, and the stream ends when every partition's
  position has reached its snapshot. Positions, not record offsets: aborted
  records, transaction markers and compacted-away offsets leave gaps that no
  record fills; an empty partition is done at once. Rows at or past the
  snapshot are cut from the batch that carried them and their partition is
  sought back to its snapshot, so the stream holds exactly the offsets
  [position at start, snapshot) and the cut rows come again from the next
  poll. A partition that reached its snapshot is paused (its fetches would
  only bring rows to cut) and resumed when the stream ends.
- until=None: the stream ends after max_records, or when timeout_ms passes
  with no new record (None: never; a tail).
- With subscribe() the assignment comes from the group after the first poll:
  the first pull polls until there is one. Partitions assigned later are
  snapshot when they appear; revoked ones are no longer waited for.
- Single use: schema probes (duckdb exports a stream to bind a query and
  exports it again to scan) may export it several times, but once one export
  has pulled a batch, every other pull and every later export raises
  IllegalStateError.
- Threads: duckdb pulls from its own worker threads while the owner thread
  waits inside duckdb. Every pull holds the stream's lock, and while the
  stream is live (from its first pull to its end or release) poll(),
  poll_arrow(), iteration and another arrow_stream() on the consumer raise
  IllegalStateError.
- Typed columns: with a key or value deserializer that gives Arrow columns
  (fastkc.schema_registry's AvroDeserializer), the stream's schema is its
  first batch's, so reader() (and the first export) reads that batch at
  once and holds it for the first pull (a schema probe that never pulls
  leaves the consumer to close()). Where the type changes (a new writer
  schema, no reader schema), the stream ends before the batch of the new
  type, whose partitions are sought back to its rows: a new arrow_stream()
  starts with them, in the new schema (`schema_changed` is then True).
- Errors: a fastkc error in the middle of the stream (CorruptRecordError, a
  fetch error, WakeupException...) ends the stream. Read through
  stream.reader() it is re-raised as it is (pyarrow keeps the Python
  exception of a Python iterator); through the C interface (polars, duckdb,
  RecordBatchReader.from_stream) the reader raises its own error, whose
  message names the fastkc class and message; stream.error holds the original.
"""
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastkc.deserializers import ArrowDeserializers, partition_rows
from fastkc.engine import ConsumerEngine
from fastkc.errors import IllegalStateError, KafkaTimeoutError
from fastkc.structs import TopicPartition

# reader() read the first batch ahead (typed columns): the stream is held, no generator pulled yet
_PEEK = object()

# pyarrow has no type information: its objects (RecordBatch, Schema,
# RecordBatchReader, capsules) are Any here
_Batch = Any

UNTIL_END = "end"
# The longest one poll inside the stream waits before the positions are
# looked at again: transaction markers and aborted batches move a position
# without producing a row, and poll_arrow() only returns early for rows.
_STEP_MS = 100


class ArrowStream:
    """The object KafkaConsumer.arrow_stream() returns; see the module
    docstring for the semantics. It reads through the consumer's `engine`;
    `pull(timeout_ms, max_records)` is the consumer's poll_arrow() without
    the stream check, `position(tp)` and `end_offsets(tps)` the consumer's
    public ones (positions of what was handed out)."""

    def __init__(self, engine: ConsumerEngine, *, pull: Callable[[float, int | None], _Batch],
                 position: Callable[[TopicPartition], int],
                 end_offsets: Callable[[Iterable[TopicPartition]], dict[TopicPartition, int]],
                 max_records: int | None = None, until: str | None = UNTIL_END,
                 timeout_ms: float | None = None, batch_records: int | None = None) -> None:
        if until not in (UNTIL_END, None):
            raise ValueError("until must be 'end' or None, not {0!r}".format(until))
        for name, value in (("max_records", max_records), ("batch_records", batch_records)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError("{0} must be a positive integer or None".format(name))
        if timeout_ms is not None and (not isinstance(timeout_ms, (int, float)) or timeout_ms < 0):
            raise ValueError("timeout_ms must be a non-negative number or None")
        from fastkc.records import arrow_schema

        self._engine = engine
        self._pull = pull
        self._position = position
        self._end_offsets = end_offsets
        self._max_records = max_records
        self._until = until
        self._timeout_ms = timeout_ms
        self._batch_records = batch_records
        self.schema: Any = arrow_schema(zero_copy=engine.config["arrow_zero_copy"])
        # typed key or value columns: the schema is the first batch's (read ahead by reader())
        self._typed = bool(ArrowDeserializers(engine.config["key_deserializer"], engine.config["value_deserializer"]))
        self._peeked: list[_Batch] = []
        self.schema_changed = False
        # the pull in progress (and the claim below) are decided under it:
        # duckdb may pull, probe and release from different threads
        self._lock = threading.RLock()
        self._claimed_by: object = None  # the generator that pulled first; the only one that may pull
        self._finished = False
        self.error: BaseException | None = None  # the fastkc exception that ended the stream, if one did
        self.records = 0  # rows handed out so far
        self.batches = 0
        # until="end": {TopicPartition: end offset} of the partitions still read
        self._ends: dict[TopicPartition, int] = {}
        # {TopicPartition: position} of the partitions assigned at the first
        # pull, before it handed out anything: where a reader that failed
        # as a whole (polars, duckdb) may seek back to
        self.start_positions: dict[TopicPartition, int] | None = None
        self._paused_here: set[TopicPartition] = set()  # partitions this stream paused (resumed at its end)

    # --- the protocol -------------------------------------------------------------------
    def __arrow_c_stream__(self, requested_schema: object = None) -> Any:
        """An ArrowArrayStream capsule. requested_schema is honoured when
        pyarrow can cast the batches to it (the cast is then a copy);
        otherwise the stream keeps its own schema, as the protocol allows
        (best effort: the consumer checks the schema it got)."""
        reader = self.reader()
        if requested_schema is not None:
            import pyarrow as pa

            wanted = pa.Schema._import_from_c_capsule(requested_schema)
            if wanted != self.schema:
                try:
                    return reader.cast(wanted).__arrow_c_stream__()
                except (ValueError, TypeError, pa.ArrowException):
                    pass  # not castable: our own schema, the caller checks
        return reader.__arrow_c_stream__()

    def reader(self) -> Any:
        """A pyarrow.RecordBatchReader over the stream (not through the C
        interface: a fastkc error raised while reading it is the original
        exception, typed)."""
        import pyarrow as pa

        with self._lock:
            if (self._finished and not (self._typed and self.batches == 0 and self._claimed_by is _PEEK)) or (
                    self._claimed_by is not None and self._claimed_by is not _PEEK):
                raise IllegalStateError("this arrow_stream was already read or closed (a stream is single-use): "
                                        "call consumer.arrow_stream() again for the records that follow")
            if self._typed and self._claimed_by is None:
                self._claim(_PEEK)
                first = self._next_batch()
                if first is None:
                    self._end()  # nothing in the stream: its readers get no batch
                else:
                    self.schema = first.schema
                    self._peeked.append(first)
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def close(self) -> None:
        """End the stream where it is (positions stay just past the last
        batch handed out) and give the consumer back. A reader still open
        on it ends with IllegalStateError at its next pull."""
        with self._lock:
            self._end()

    def __enter__(self) -> "ArrowStream":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def live(self) -> bool:
        """True from the first pull to the end of the stream."""
        return self._claimed_by is not None and not self._finished

    # --- the pulls ----------------------------------------------------------------------
    def _batches(self) -> Iterator[_Batch]:
        """The generator behind one export. It claims the stream at its first
        pull; pyarrow closes it when the exported stream is released, which
        runs the finally below (on whichever thread released it)."""
        token = object()
        if self._typed and self._finished and self.batches == 0 and self.error is None:
            return  # reader() found the stream empty
        try:
            while True:
                with self._lock:
                    self._claim(token)
                    batch = self._peeked.pop() if self._peeked else self._next_batch()
                if batch is None:
                    return
                yield batch
        finally:
            with self._lock:
                if self._claimed_by is token:
                    self._end()

    def _claim(self, token: object) -> None:
        if self._claimed_by is token:
            if self._finished:
                raise IllegalStateError("this arrow_stream was closed")
            return
        if self._claimed_by is _PEEK and not self._finished:
            self._claimed_by = token  # the first pull after reader() read the first batch ahead
            return
        if self._claimed_by is not None or self._finished:
            raise IllegalStateError("this arrow_stream is already being read (a stream is single-use)")
        self._engine.check_open()
        self._engine.claim_stream(self)
        self._claimed_by = token

    def _end(self) -> None:
        if self._finished:
            return
        self._finished = True
        engine = self._engine
        engine.release_stream(self)
        assigned = engine.partitions()
        for tp in self._paused_here:
            if tp in assigned:
                engine.resume(tp)
        self._paused_here.clear()

    def _next_batch(self) -> _Batch | None:
        """The next non-empty batch, or None at the end of the stream."""
        if self._max_records is not None and self.records >= self._max_records:
            return None
        idle_since = time.monotonic()
        positions: dict[TopicPartition, int | None] | None = None
        while True:
            if self.start_positions is None and not self._start():
                # until=None that ran out of time before anything was
                # assigned ends here (it went on to subtract None before)
                still = self._check_idle(idle_since, None)
                if still is None:
                    return None
                idle_since = still
                continue
            if self._until == UNTIL_END:
                self._follow_assignment()
                if self._at_end():
                    return None
            limit = self._batch_limit()
            try:
                batch = self._pull(_STEP_MS, limit)
            except Exception as exc:
                self.error = exc
                raise
            if self._until == UNTIL_END and batch.num_rows:
                batch = self._cut_at_ends(batch)
            if self._typed and batch.num_rows and self.batches and batch.schema != self.schema:
                self._give_back(batch)
                self.schema_changed = True
                return None
            if batch.num_rows:
                self.records += batch.num_rows
                self.batches += 1
                return batch
            moved = self._positions()
            if moved != positions:  # a gap was passed: progress without rows
                positions = moved
                idle_since = time.monotonic()
            still = self._check_idle(idle_since, positions)
            if still is None:
                return None
            idle_since = still

    def _give_back(self, batch: _Batch) -> None:
        """A batch of another type ends the stream: its partitions go back to
        their first rows in it (the next arrow_stream() starts there)."""
        offsets = batch.column("offset")
        for run in partition_rows(batch):
            self._engine.seek(TopicPartition(run.topic, run.partition), offsets[run.start].as_py())

    def _check_idle(self, idle_since: float, positions: object) -> float | None:
        """idle_since, or None when until=None ran out of time; raises
        KafkaTimeoutError when until="end" made no progress within
        timeout_ms."""
        if self._timeout_ms is None or time.monotonic() - idle_since < self._timeout_ms / 1000.0:
            return idle_since
        if self._until is None:
            return None
        error = KafkaTimeoutError(
            "arrow_stream(until='end'): no progress within {0} ms; positions {1}, end offsets {2}".format(
                self._timeout_ms, self._positions(), self._ends))
        self.error = error
        raise error

    def _batch_limit(self) -> int | None:
        limits = [n for n in (self._batch_records,
                              None if self._max_records is None else self._max_records - self.records)
                  if n is not None]
        return min(limits) if limits else None

    def _positions(self) -> dict[TopicPartition, int | None]:
        return {tp: state.position for tp, state in self._engine.partitions().items()}

    # --- until="end" ----------------------------------------------------------------------
    def _start(self) -> bool:
        """At the first pull: the positions of the assigned partitions (a
        pending reset resolved) and, until="end", their end offsets. False
        while a group has assigned nothing yet (a poll round is then made,
        which lets the member join; it hands out no rows)."""
        engine = self._engine
        if not engine.assignment():
            engine.check_can_poll()
            engine.round_for_assignment(_STEP_MS / 1000.0)  # applies the group's assignment
            if not engine.assignment():
                return False
        self.start_positions = {tp: self._position(tp) for tp in engine.assignment()}
        if self._until == UNTIL_END:
            self._ends = {}
            self._follow_assignment()
        return True

    def _follow_assignment(self) -> None:
        """Keep _ends in step with the assignment: partitions assigned since
        the last look get their snapshot, revoked ones are dropped. Paused
        partitions (the application's) are not read and not waited for."""
        states = self._engine.partitions()
        assigned = {tp for tp, state in states.items()
                    if not state.paused or tp in self._paused_here}
        for tp in list(self._ends):
            if tp not in assigned:
                del self._ends[tp]
        self._paused_here &= set(states)
        new = [tp for tp in assigned if tp not in self._ends]
        if new:
            self._ends.update(self._end_offsets(new))

    def _at_end(self) -> bool:
        states = self._engine.partitions()
        done = True
        for tp, end in self._ends.items():
            state = states[tp]
            if state.position is not None and state.position >= end:
                if not state.paused:
                    self._engine.pause(tp)
                    self._paused_here.add(tp)
            else:
                done = False
        return done

    def _cut_at_ends(self, batch: _Batch) -> _Batch:
        """Drop the rows at or past their partition's snapshot (each
        partition's rows are one run of increasing offsets in the batch) and
        seek those partitions back to the snapshot. A copy of the batch, made
        only for the batch that crosses an end."""
        states = self._engine.partitions()
        over: list[tuple[TopicPartition, int, int]] = []
        for tp, end in self._ends.items():
            state = states[tp]
            if state.position is not None and state.position > end:
                over.append((tp, end, state.position_epoch))
        if not over:
            return batch
        import pyarrow.compute as pc

        keep = None
        for tp, end, _ in over:
            past = pc.and_(pc.and_(pc.equal(batch.column("topic"), tp.topic),
                                   pc.equal(batch.column("partition"), tp.partition)),
                           pc.greater_equal(batch.column("offset"), end))
            keep = pc.invert(past) if keep is None else pc.and_(keep, pc.invert(past))
        for tp, end, epoch in over:
            self._engine.seek(tp, end, epoch)
        return batch.filter(keep)

