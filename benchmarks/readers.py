"""The decode benchmark's payloads and readers, shared by the pytest-benchmark
suite (test_decode.py) and the table runner (decode_table.py).

Payload (anchors.md, issue 2): 200 record batches x 500 records, 10-byte keys
and 100-byte values (also 1 KiB values, and 100-byte values with 2 headers
per record), codecs none / lz4 / zstd, written by kafka-python's
DefaultRecordBatchBuilder — an encoder independent of every reader measured —
so all readers get identical bytes. Values are random over a 16-letter
alphabet: compressible about 2:1, like typical text payloads, so the codecs
do real work.

Every reader sees the payload as a consumer does: cut at batch boundaries
into fetch-sized pieces of at most 1 MiB (max_partition_fetch_bytes' default),
each piece decoded as one partition fetch, its records handed out 500 at a
time (max_poll_records) and dropped, as one poll after another would. CRCs
are checked by every reader.

Every reader touches the key and value of every record it is handed, the way
the end-to-end runners do (fastkc_tools/bench/common.py, "Equal work": lengths of
record.key and record.value; for Arrow, from the columns' offsets buffers),
and returns (records, bytes touched); the table runner and the suite fail a
reader whose bytes differ from the payload's (`payload_bytes`). The floor
decodes no record (one CRC-32C pass and one copy of the bytes): it has none
to touch and returns None for them.
"""
import os
import random
import struct

TS = 1_700_000_000_000
RECORDS_PER_BATCH = 500
BATCHES = 200
FETCH_BYTES = 1 << 20
POLL_RECORDS = 500

QUICK = os.environ.get("FASTKC_BENCH_QUICK", "") not in ("", "0")

SHAPES = {
    # name: (value size, headers per record)
    "100B": (100, 0),
    "1KiB": (1024, 0),
    "100B+2hdr": (100, 2),
}
CODECS = {"none": 0, "lz4": 3, "zstd": 4}


def build_payload(shape, codec, batches=None, records_per_batch=None):
    """The payload bytes for one (shape, codec), built with kafka-python."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    if batches is None:
        batches = 4 if QUICK else BATCHES
    if records_per_batch is None:
        records_per_batch = 50 if QUICK else RECORDS_PER_BATCH
    value_size, header_count = SHAPES[shape]
    rng = random.Random(2)
    alphabet = b"abcdefghijklmnop"
    # a pool of values, so building the payload does not dominate setup time
    pool = [bytes(rng.choices(alphabet, k=value_size)) for _ in range(997)]
    parts = []
    offset = 0
    for _b in range(batches):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=CODECS[codec], is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
        )
        for i in range(records_per_batch):
            n = offset + i
            headers = [("trace-id", b"%016d" % n), ("source", b"bench")][:header_count]
            builder.append(i, timestamp=TS + n, key=b"key-%06d" % (n % 1_000_000),
                           value=pool[n % len(pool)], headers=headers)
        batch = bytearray(builder.build())
        struct.pack_into(">q", batch, 0, offset)  # the broker's offset assignment
        parts.append(bytes(batch))
        offset += records_per_batch
    return parts


def fetch_pieces(batches, records_per_batch, limit=FETCH_BYTES):
    """Group whole batches into fetch-sized pieces (at least one batch each).
    Returns (pieces, records in each piece)."""
    pieces, counts, current, size = [], [], [], 0
    for batch in batches:
        if current and size + len(batch) > limit:
            pieces.append(b"".join(current))
            counts.append(len(current) * records_per_batch)
            current, size = [], 0
        current.append(batch)
        size += len(batch)
    if current:
        pieces.append(b"".join(current))
        counts.append(len(current) * records_per_batch)
    return pieces, counts


def payload(shape, codec):
    """(pieces, counts) for one (shape, codec) in the current mode."""
    records_per_batch = 50 if QUICK else RECORDS_PER_BATCH
    return fetch_pieces(build_payload(shape, codec, records_per_batch=records_per_batch), records_per_batch)


def first_offsets(pieces):
    return [struct.unpack_from(">q", p, 0)[0] for p in pieces]


KEY_BYTES = len(b"key-%06d" % 0)  # every record's key (build_payload)


def payload_bytes(shape, records):
    """The key + value bytes of `records` records of `shape`: what a reader must touch."""
    return records * (KEY_BYTES + SHAPES[shape][0])


# --- readers: each takes the pieces, returns (records seen, key + value bytes touched) ------
def _drop_in_polls(records):
    from fastkc_tools.bench.common import touch_records

    n = touched = 0
    for i in range(0, len(records), POLL_RECORDS):
        polled = records[i : i + POLL_RECORDS]
        n += len(polled)
        touched += touch_records(polled)
    return n, touched


def fastkc_records(module):
    """fastkc.records.decode routed to `module` (compiled core or twin)."""
    from fastkc import records as R
    from tests.support import using_backend

    def read(pieces):
        n = touched = 0
        with using_backend(module):
            for piece, fetch_offset in zip(pieces, first_offsets(pieces)):
                seen, bytes_seen = _drop_in_polls(R.decode(piece, topic="bench", partition=0,
                                                           fetch_offset=fetch_offset))
                n += seen
                touched += bytes_seen
        return n, touched

    return read


def fastkc_arrow(module, zero_copy=False):
    """decode_arrow per piece; zero_copy: binary_view key/value pointing into
    the piece (or the decompressed buffer) instead of copies."""
    from fastkc import records as R
    from fastkc_tools.bench.common import touch_arrow
    from tests.support import using_backend

    def read(pieces):
        n = touched = 0
        with using_backend(module):
            for piece, fetch_offset in zip(pieces, first_offsets(pieces)):
                batch = R.decode_arrow(piece, topic="bench", partition=0, fetch_offset=fetch_offset,
                                       zero_copy=zero_copy)
                n += batch.num_rows
                touched += touch_arrow(batch)
        return n, touched

    return read


def kafka_python(pieces):
    """kafka-python 3.0.12's consumer path: Fetcher.PartitionRecords over
    MemoryRecords, drained with take(max_poll_records) as its poll does (CRC
    via the crc32c package when installed, which kafka-python picks up)."""
    from kafka.consumer.fetcher import Fetcher
    from kafka.protocol.consumer import IsolationLevel
    from kafka.record.memory_records import MemoryRecords
    from kafka.structs import TopicPartition

    from fastkc_tools.bench.common import touch_records

    tp = TopicPartition("bench", 0)
    n = touched = 0
    for piece, fetch_offset in zip(pieces, first_offsets(pieces)):
        pr = Fetcher.PartitionRecords(
            fetch_offset, tp, MemoryRecords(piece), check_crcs=True,
            isolation_level=IsolationLevel.READ_UNCOMMITTED,
        )
        while pr:
            polled = pr.take(POLL_RECORDS)
            n += len(polled)
            touched += touch_records(polled)
    return n, touched


def aiokafka(pieces):
    """aiokafka 0.14's consumer path as its Fetcher runs it: PartitionRecords
    over (Cython) MemoryRecords, drained max_records at a time like
    FetchResult.getall."""
    from aiokafka.consumer.fetcher import PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords
    from aiokafka.structs import TopicPartition

    from fastkc_tools.bench.common import touch_records

    tp = TopicPartition("bench", 0)
    n = touched = 0
    for piece, fetch_offset in zip(pieces, first_offsets(pieces)):
        pr = PartitionRecords(tp, MemoryRecords(piece), None, fetch_offset, None, None, True, 0)
        polled = []
        for msg in pr:
            polled.append(msg)
            if len(polled) >= POLL_RECORDS:
                n += len(polled)
                touched += touch_records(polled)
                polled = []
        n += len(polled)
        touched += touch_records(polled)
    return n, touched


def floor(crc32c_fn, records_per_piece):
    """The floor: one CRC-32C pass and one memcpy over the same bytes. Counts
    the records those bytes hold, so its rate is comparable."""

    # One buffer, allocated once: a fresh bytearray per piece would also
    # measure malloc and the page faults of new memory, which no decoder
    # needs to pay per piece.
    target = memoryview(bytearray(FETCH_BYTES))

    def read(pieces):
        nonlocal target
        n = 0
        for piece, count in zip(pieces, records_per_piece):
            crc32c_fn(piece)
            if len(piece) > len(target):  # a piece of one batch above FETCH_BYTES
                target = memoryview(bytearray(len(piece)))
            target[: len(piece)] = piece  # one copy of every byte
            n += count
        return n, None  # no record decoded, none touched

    return read


def crc32c_for_floor():
    """fastkc's own CRC-32C when the core is built, else the crc32c package
    (say which, since the floor then measures another implementation)."""
    try:
        from fastkc._core.records import crc32c

        return crc32c, "fastkc._core.records.crc32c"
    except ImportError:
        import crc32c as pkg

        return pkg.crc32c, "crc32c package (fastkc core not built)"


def compiled_module():
    try:
        from fastkc._core import records

        return records
    except ImportError:
        return None


def readers(records_per_piece):
    """name -> reader callable, in table order; C readers only when built."""
    from fastkc._twin import records as twin

    compiled = compiled_module()
    crc_fn, _ = crc32c_for_floor()
    out = {}
    if compiled is not None:
        out["fastkc C → records"] = fastkc_records(compiled)
        out["fastkc C → Arrow"] = fastkc_arrow(compiled)
        out["fastkc C → Arrow zero-copy"] = fastkc_arrow(compiled, zero_copy=True)
    out["fastkc twin → records"] = fastkc_records(twin)
    out["kafka-python consumer path"] = kafka_python
    out["aiokafka consumer path"] = aiokafka
    out["floor (CRC32C + memcpy)"] = floor(crc_fn, records_per_piece)
    return out
