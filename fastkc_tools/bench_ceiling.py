"""The benchmark's ceiling: fastkc's own network path with nothing decoded.

`CeilingReader` is a `KafkaConsumer` (same client, connections, fetch
sessions, pipelining, positions and buffering limits) whose poll() stops
where decoding would start: each buffered partition fetch, as the fetch
machine left it (parsed out of the Fetch response, cut after its last
complete batch by `fastkc.records.scan_blob`), is walked batch header by
batch header by `fastkc.records.check_blob` (the decoder's framing, in C),
the CRC-32C of every batch is checked over its CRC span (attributes to the
end of the batch, KIP-98), and the position moves past the complete batches.
Nothing is decompressed, no record is parsed, no Python object per record.

So its rate is what the broker and the socket allow this client: the rate
`poll()` and `poll_arrow()` would reach if decoding cost nothing. It lives
in fastkc, not in the benchmark runner, so that it runs exactly the
consumer's network path (a runner with its own fetch loop would measure a
different client).

What it counts: the records the batches hold (their RecordsCount), control
batches excluded, the part of a batch below the position excluded (offsets
below it, as the decoder skips them). That equals what poll() delivers for a
topic written once by a producer, which is what the benchmark reads. Only
magic-2 batches are read (what every producer since Kafka 0.11 writes); a
legacy message set is refused with ValueError, not guessed at, a bad CRC is
a RecordCrcError and an impossible header or a cut batch an
InvalidRecordError (both CorruptRecordErrors naming the batch).
"""
from typing import Any

from fastkc.errors import CorruptRecordError

# The walk is the decoder's own (C, with the twin as its oracle): the batch
# layout is known in one place only.
from fastkc.records import check_blob

__all__ = ["CeilingReader", "check_blob"]


class CeilingReader:
    """A KafkaConsumer whose poll_raw() CRC-checks fetched batches instead of
    decoding them (see the module docstring). Takes KafkaConsumer's config;
    `consumer` is the underlying KafkaConsumer for assign/seek/position/close."""

    def __init__(self, **config: Any) -> None:
        from fastkc.consumer import KafkaConsumer, engine_of

        if config.get("group_id") is not None:
            # positions are moved here, not by poll(): a group's commits would not see them
            raise ValueError("CeilingReader reads assigned partitions without a group (group_id=None)")
        self.consumer = KafkaConsumer(**config)
        self._engine = engine_of(self.consumer)
        self._fetcher = self._engine.fetcher

    def poll_raw(self, timeout_ms: float = 0) -> int:
        """Records CRC-checked from every buffered fetch (all of them, like
        poll_arrow() with max_records=None), waiting up to timeout_ms for
        some; 0 when none came in time."""
        engine = self._engine
        fetcher = self._fetcher
        clock = engine.clock
        deadline = clock() + max(0, timeout_ms) / 1000.0
        while True:
            engine.raise_pending()
            n = self._take_buffered()
            if n:
                fetcher.send_requests()  # pipelining, as poll() does before returning
                return n
            engine.poll_once(max(0.0, deadline - clock()))
            if clock() >= deadline and not fetcher.has_buffered():
                fetcher.raise_pending()
                return 0

    def _take_buffered(self) -> int:
        fetcher = self._fetcher
        buffer = fetcher.machine.buffer
        total = 0
        for state in fetcher.states.values():
            if state.paused:
                continue
            while state.buffered:
                completed = state.buffered[0]
                if completed.fetch_offset != state.position:
                    buffer.drop(state)  # stale (sought since): fetched again, as poll() does
                    break
                tp = state.tp
                try:
                    records, next_offset = check_blob(completed.data, tp.topic, tp.partition, state.position)
                except CorruptRecordError as exc:
                    # the position stays before the bad batch; fetched again only after retry_backoff_ms
                    buffer.stop_at_bad_batch(state, exc, None, self._engine.clock(), advance=False)
                    raise
                total += records
                state.position = max(next_offset, completed.next_offset)
                if completed.leader_epoch >= 0:
                    state.position_epoch = completed.leader_epoch
                buffer.used_up(state, completed)
        return total

    def close(self) -> None:
        self.consumer.close()

