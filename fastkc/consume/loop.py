"""`fastkc consume`'s run loop: start positions, poll_arrow() batches bounded by
-c/-e/--to-time/e@ and written out, and the -G commits of what was written."""
import argparse
import time
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from fastkc.consume.formats import Batch, timestamp_ms
from fastkc.consume.outputs import Output, Progress
from fastkc.errors import UnknownTopicOrPartitionError
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer

_COMMIT_INTERVAL_S = 5.0


class ConsumeRun:
    def __init__(self, args: argparse.Namespace, out: Output | None) -> None:
        self.args = args
        self._out = out
        self._consumer: KafkaConsumer | None = None
        self.count = 0
        self.end: dict[TopicPartition, int] = {}  # end offset read when first seen (-e)
        self.done: set[TopicPartition] = set()  # partitions finished (-e, --to-time, e@)
        self.commit_at: dict[TopicPartition, int] = {}  # next offset after what has been written (-G)
        self.committed_at: dict[TopicPartition, int] = {}
        self.last_commit = time.monotonic()
        self.stop_ms: int | None = None  # stop at the first record past this (inclusive bound)
        self.stop_before_ms: int | None = None  # e@: stop at the first record at or past this

    @property
    def consumer(self) -> "KafkaConsumer":
        if self._consumer is None:
            raise RuntimeError("ConsumeRun.start() has not run")
        return self._consumer

    @property
    def out(self) -> Output:
        if self._out is None:
            raise RuntimeError("ConsumeRun has no output yet")
        return self._out

    @out.setter
    def out(self, out: Output) -> None:
        self._out = out

    # setup
    def start(self, consumer: "KafkaConsumer") -> None:
        args = self.args
        self._consumer = consumer
        if args.to_time is not None:
            self.stop_ms = args.to_time
        if args.offset is not None and args.offset.kind == "stop":
            self.stop_before_ms = args.offset.stop_before_ms
        partitions: list[TopicPartition] = []
        for topic in args.topic:
            known = consumer.partitions_for_topic(topic)
            if known is None:
                raise UnknownTopicOrPartitionError(
                    "unknown topic {0!r} (or no metadata for it within request_timeout_ms)".format(topic))
            if args.partition:
                missing = [p for p in args.partition if p not in known]
                if missing:
                    raise UnknownTopicOrPartitionError("topic {0!r} has no partition {1} (it has {2})".format(
                        topic, ", ".join(map(str, missing)), len(known)))
                partitions += [TopicPartition(topic, p) for p in args.partition]
            else:
                partitions += [TopicPartition(topic, p) for p in sorted(known)]
        if args.group:
            consumer.subscribe(args.topic, listener=_CommitOnRevoke(self))
            return
        consumer.assign(partitions)
        self._seek(partitions)
        if args.exit_at_end:
            self._note_ends(partitions)

    def _seek(self, partitions: Sequence[TopicPartition]) -> None:
        consumer, spec = self.consumer, self.args.offset
        from_ms = self.args.from_time
        if spec is not None and spec.kind == "timestamp":
            from_ms = spec.value
        if from_ms is not None:
            found = consumer.offsets_for_times({tp: from_ms for tp in partitions})
            ends = consumer.end_offsets([tp for tp, hit in found.items() if hit is None])
            for tp in partitions:
                hit = found[tp]
                consumer.seek(tp, hit.offset if hit is not None else ends[tp])
            return
        kind = spec.kind if spec is not None else "end"
        if kind in ("beginning", "stop"):
            consumer.seek_to_beginning(*partitions)
        elif kind == "end":
            consumer.seek_to_end(*partitions)
        elif kind == "offset":
            assert spec is not None  # "end" is the default kind
            for tp in partitions:
                consumer.seek(tp, spec.value)
        elif kind == "relative":
            assert spec is not None
            ends = consumer.end_offsets(partitions)
            starts = consumer.beginning_offsets(partitions)
            for tp in partitions:
                consumer.seek(tp, max(starts[tp], ends[tp] - spec.value))

    def _note_ends(self, partitions: Sequence[TopicPartition]) -> None:
        new = [tp for tp in partitions if tp not in self.end]
        if not new:
            return
        self.end.update(self.consumer.end_offsets(new))
        for tp in new:
            if self.consumer.position(tp) >= self.end[tp]:
                self._finish(tp)

    def _finish(self, tp: TopicPartition) -> None:
        self.done.add(tp)
        if tp in self.consumer.assignment():
            self.consumer.pause(tp)

    def finished(self) -> bool:
        args = self.args
        if args.count is not None and self.count >= args.count:
            return True
        bounded = args.exit_at_end or self.stop_ms is not None or self.stop_before_ms is not None
        if not bounded:
            return False
        assigned = set(self.consumer.assignment())
        return bool(assigned) and assigned <= self.done

    # the loop
    def run(self, progress: Progress | None = None) -> None:
        args = self.args
        consumer = self.consumer
        while not self.finished():
            if args.group and args.exit_at_end:
                self._note_ends(list(consumer.assignment()))
                if self.finished():
                    break
            remaining = None if args.count is None else args.count - self.count
            batch = consumer.poll_arrow(timeout_ms=200, max_records=remaining)
            if batch.num_rows:
                batch, limits = self._bound(batch)
                self.out.write(batch)
                self.count += batch.num_rows
                if args.group:
                    self._note_written(limits)
            self._check_partitions()
            if args.group and time.monotonic() - self.last_commit >= _COMMIT_INTERVAL_S:
                self.out.flush()
                self.commit()
            if progress is not None:
                progress.update(self.count, self._lag())
        self.out.flush()

    def _bound(self, batch: Batch) -> tuple[Batch, dict[TopicPartition, int]]:
        """Drop the records past -e's end offsets and past --to-time / e@,
        per partition; {tp: first dropped offset} for the partitions cut."""
        import pyarrow.compute as pc

        limits: dict[TopicPartition, int] = {}
        if self.end:
            for tp, end in self.end.items():
                if tp not in self.done and self.consumer.position(tp) > end:
                    limits[tp] = end
        if self.stop_ms is not None or self.stop_before_ms is not None:
            stamps = timestamp_ms(batch)
            late = pc.greater(stamps, self.stop_ms) if self.stop_ms is not None else None
            if self.stop_before_ms is not None:
                early_stop = pc.greater_equal(stamps, self.stop_before_ms)
                late = early_stop if late is None else pc.or_(late, early_stop)
            if pc.any(late).as_py():
                past = batch.filter(late)
                for topic, partition, offset in zip(past.column("topic").to_pylist(),
                                                    past.column("partition").to_pylist(),
                                                    past.column("offset").to_pylist()):
                    tp = TopicPartition(topic, partition)
                    if offset < limits.get(tp, offset + 1):
                        limits[tp] = offset
        if not limits:
            return batch, limits
        drop = None
        for tp, limit in limits.items():
            cut = pc.and_(pc.and_(pc.equal(batch.column("partition"), tp.partition),
                                  pc.equal(batch.column("topic"), tp.topic)),
                          pc.greater_equal(batch.column("offset"), limit))
            drop = cut if drop is None else pc.or_(drop, cut)
        for tp in limits:
            self._finish(tp)
        return batch.filter(pc.invert(drop)), limits

    def _check_partitions(self) -> None:
        consumer = self.consumer
        assigned = set(consumer.assignment())
        for tp, end in self.end.items():
            if tp not in self.done and tp in assigned and consumer.position(tp) >= end:
                self._finish(tp)

    def _lag(self) -> int | None:
        lag = 0
        consumer = self.consumer
        for tp in consumer.assignment():
            high = consumer.highwater(tp)
            if high is None:
                return None
            lag += max(0, high - consumer.position(tp))
        return lag

    # commits (-G): the offsets after what has been written and flushed
    def _note_written(self, limits: dict[TopicPartition, int]) -> None:
        for tp in self.consumer.assignment():
            position = self.consumer.position(tp)
            if tp in limits:
                position = min(position, limits[tp])
            self.commit_at[tp] = position

    def commit(self, partitions: Collection[TopicPartition] | None = None) -> None:
        from fastkc.structs import OffsetAndMetadata

        self.last_commit = time.monotonic()
        wanted = {tp: offset for tp, offset in self.commit_at.items()
                  if (partitions is None or tp in partitions) and self.committed_at.get(tp) != offset}
        if wanted:
            self.consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp, offset in wanted.items()})
            self.committed_at.update(wanted)


class _CommitOnRevoke:
    """Commit the written offsets of partitions the group takes away."""

    def __init__(self, run: ConsumeRun) -> None:
        self.run = run

    def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        taken = set(revoked)
        if taken & set(self.run.commit_at):
            self.run.out.flush()
            self.run.commit(taken)
        for tp in taken:
            self.run.commit_at.pop(tp, None)
            self.run.end.pop(tp, None)
            self.run.done.discard(tp)

    def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: Iterable[TopicPartition]) -> None:
        for tp in lost:
            self.run.commit_at.pop(tp, None)
