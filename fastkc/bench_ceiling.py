"""The benchmark's ceiling: fastkc's own network path with nothing decoded.

`CeilingReader` is a `KafkaConsumer` (same client, connections, fetch
sessions, pipelining, positions and buffering limits) whose poll() stops
where decoding would start: each buffered partition fetch, as the fetcher
left it (parsed out of the Fetch response, cut after its last complete batch
by `fastkc.records.scan_blob`), is walked batch header by batch header, the
CRC-32C of every batch is checked over its CRC span (attributes to the end
of the batch, KIP-98), and the position moves past the complete batches.
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
legacy message set is refused with ValueError, not guessed at, and a bad
CRC or an impossible header is a CorruptRecordError naming the batch.
"""
import struct

from fastkc._core.records import crc32c
from fastkc.errors import CorruptRecordError

# Record batch v2 header (Kafka's DefaultRecordBatch field offsets).
_BASE_OFFSET = 0
_BATCH_LENGTH = 8  # bytes after this field
_MAGIC = 16
_CRC = 17
_ATTRIBUTES = 21  # the CRC span starts here and runs to the batch's end
_LAST_OFFSET_DELTA = 23
_RECORDS_COUNT = 57
_HEADER_BYTES = 61
_LOG_OVERHEAD = 12  # BaseOffset + BatchLength
_CONTROL_FLAG = 0x20

_HEADER = struct.Struct(">qi")
_CRC_FIELD = struct.Struct(">I")
_ATTRS_AND_DELTA = struct.Struct(">hi")
_COUNT = struct.Struct(">i")


def check_blob(data, topic, partition, position):
    """Walk the complete batches of one partition's fetched blob, CRC-check
    each, and return (records at or past `position`, next offset).

    `data` holds complete batches only (the fetcher cut it where scan_blob
    said the complete entries end)."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    records = 0
    next_offset = position
    while pos < end:
        if end - pos <= _MAGIC:
            raise CorruptRecordError("{0} bytes left at byte {1}, less than an entry header".format(end - pos, pos),
                                     topic, partition, -1)
        base_offset, batch_length = _HEADER.unpack_from(view, pos)
        magic = view[pos + _MAGIC]
        if magic != 2:
            raise ValueError("the ceiling reads record batch v2 only; magic {0} at offset {1}".format(
                magic, base_offset))
        if end - pos < _HEADER_BYTES:
            raise CorruptRecordError("{0} bytes left at byte {1}, less than a batch header".format(end - pos, pos),
                                     topic, partition, base_offset)
        batch_end = pos + _LOG_OVERHEAD + batch_length
        if batch_length < _HEADER_BYTES - _LOG_OVERHEAD or batch_end > end:
            raise CorruptRecordError("batch length {0} at byte {1} does not fit the blob".format(batch_length, pos),
                                     topic, partition, base_offset)
        (stored_crc,) = _CRC_FIELD.unpack_from(view, pos + _CRC)
        computed = crc32c(view[pos + _ATTRIBUTES:batch_end])
        if computed != stored_crc:
            raise CorruptRecordError("CRC-32C mismatch: stored {0:#010x}, computed {1:#010x}".format(
                stored_crc, computed), topic, partition, base_offset)
        attributes, last_offset_delta = _ATTRS_AND_DELTA.unpack_from(view, pos + _ATTRIBUTES)
        last_offset = base_offset + last_offset_delta
        if not attributes & _CONTROL_FLAG and last_offset >= next_offset:
            (count,) = _COUNT.unpack_from(view, pos + _RECORDS_COUNT)
            if base_offset >= next_offset:
                records += count
            else:
                # A batch that starts below the position (a fetch from the
                # middle of a batch): only its offsets from the position on.
                records += min(count, last_offset + 1 - next_offset)
        next_offset = max(next_offset, last_offset + 1)
        pos = batch_end
    return records, next_offset


class CeilingReader:
    """A KafkaConsumer whose poll_raw() CRC-checks fetched batches instead of
    decoding them (see the module docstring). Takes KafkaConsumer's config;
    `consumer` is the underlying KafkaConsumer for assign/seek/position/close."""

    def __init__(self, **config):
        from fastkc.consumer import KafkaConsumer

        if config.get("group_id") is not None:
            # positions are moved here, not by poll(): a group's commits would not see them
            raise ValueError("CeilingReader reads assigned partitions without a group (group_id=None)")
        self.consumer = KafkaConsumer(**config)
        self._fetcher = self.consumer._fetcher
        self._client = self.consumer._client

    def poll_raw(self, timeout_ms=0):
        """Records CRC-checked from every buffered fetch (all of them, like
        poll_arrow() with max_records=None), waiting up to timeout_ms for
        some; 0 when none came in time."""
        consumer = self.consumer
        fetcher = self._fetcher
        clock = consumer._clock
        deadline = clock() + max(0, timeout_ms) / 1000.0
        while True:
            fetcher.raise_pending()
            self._client.raise_fatal()
            n = self._take_buffered()
            if n:
                fetcher.send_requests()  # pipelining, as poll() does before returning
                return n
            consumer._poll_once(max(0.0, deadline - clock()))
            if clock() >= deadline and not fetcher.has_buffered():
                fetcher.raise_pending()
                return 0

    def _take_buffered(self):
        fetcher = self._fetcher
        total = 0
        for state in fetcher.states.values():
            if state.paused:
                continue
            while state.buffered:
                completed = state.buffered[0]
                if completed.fetch_offset != state.position:
                    fetcher._drop_buffered(state)  # stale (sought since): fetched again, as poll() does
                    break
                tp = state.tp
                try:
                    records, next_offset = check_blob(completed.data, tp.topic, tp.partition, state.position)
                except CorruptRecordError as exc:
                    # the position stays before the bad batch; fetched again only after retry_backoff_ms
                    fetcher._stop_at_bad_batch(state, exc, None, advance=False)
                    raise
                total += records
                state.position = max(next_offset, completed.next_offset)
                if completed.leader_epoch >= 0:
                    state.position_epoch = completed.leader_epoch
                fetcher._used_up(state, completed)
        return total

    def close(self):
        self.consumer.close()

