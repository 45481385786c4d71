"""Hostile record batches through the real Fetcher (canned Fetch responses
through the real parser, as tests/unit/test_fetcher.py feeds them):
decompression bombs per codec and record-count amplification must give a
typed error naming topic, partition and offset with bounded memory, after
which seek() past the batch resumes consumption; batches whose header
contradicts their contents give the records that can be proven and a typed
error; data that cannot advance the position is never refetched silently
forever.

Memory is measured in a fresh subprocess: the peak RSS (VmHWM, reset through
/proc/self/clear_refs after the payloads are built) minus the RSS before
consuming. The bounds asserted (BOMB_RSS_BOUND, RECORDS_RSS_BOUND) are
computed from the decode budget below, with why each holds, and each is
checked to lie well below the whole decompressed size of the fetch it bounds:
a bound above it would pass a decoder that inflated everything."""
import json
import os
import struct
import subprocess
import sys

import pytest

from fastkc import errors
from fastkc.config import decode_budget
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg
from tests.support.batchgen import raw_batch
from tests.support.scripted_fetch import TOPIC, TP0
from tests.support.scripted_fetch import answer_fetch as _answer_fetch
from tests.support.scripted_fetch import batch as _batch
from tests.support.scripted_fetch import positioned as _positioned

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TP1 = TopicPartition(TOPIC, 1)

# max_partition_fetch_bytes for these tests: the decode budget is then the
# 16 MiB floor per batch (fastkc.config.decode_budget), 256 Ki records.
SMALL_PARTITION_BYTES = 256 * 1024
BATCH_BUDGET, BATCH_RECORD_BUDGET, _ = decode_budget({"max_partition_fetch_bytes": SMALL_PARTITION_BYTES})
# What the allocator and the interpreter may add around a decode (arenas, the
# records delivered before and after the bad batches, the error objects).
SLACK = 8 << 20
# Peak RSS growth allowed while a bomb fetch is consumed. A batch is
# decompressed at most up to the per-batch budget, then refused; the output
# buffer grows by doubling, so when the decoder stops it has reserved at most
# 2 x budget, and while a growth step copies, the old buffer (at most one
# budget) is alive beside it: 3 x budget. Bombs are decoded one batch at a
# time (the error ends the step), so the fetch's other bombs add nothing.
# Before the lazy decoder, these fetches drove the process to several GiB.
BOMB_RSS_BOUND = 3 * BATCH_BUDGET + SLACK
# The record-count bomb declares more records than the batch's record budget:
# it is refused from its header and the count, before any record is built, so
# only the slack may show (measured: well under 1 MiB).
RECORDS_RSS_BOUND = SLACK


def _zeros_compressed(codec, nbytes):
    """`nbytes` zero bytes compressed by `codec`, streamed (the uncompressed
    bytes never exist at once), declaring no content size."""
    import zlib

    chunk = bytes(1 << 20)
    if codec == bg.GZIP:
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
        out = [co.compress(chunk) for _ in range(nbytes >> 20)]
        return b"".join(out) + co.flush()
    if codec == bg.ZSTD:
        import zstandard

        co = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        out = [co.compress(chunk) for _ in range(nbytes >> 20)]
        return b"".join(out) + co.flush()
    if codec == bg.LZ4:
        import lz4.frame

        co = lz4.frame.LZ4FrameCompressor(block_linked=True, content_checksum=False)
        out = [co.begin()] + [co.compress(chunk) for _ in range(nbytes >> 20)]
        return b"".join(out) + co.flush()
    if codec == bg.SNAPPY:
        # snappy's ratio is ~21x at best, so its bomb is the lie: a raw block
        # (xerial framing) declaring 1 GiB of output in its length varint
        length = (1 << 30)
        varint = bytearray()
        while True:
            byte = length & 0x7F
            length >>= 7
            varint.append(byte | (0x80 if length else 0))
            if not length:
                break
        block = bytes(varint) + b"\x00" * 64
        return bg.XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    raise ValueError(codec)


# Uncompressed size of each bomb batch, and how many of them one fetch holds;
# each fetch decompresses (or claims) well over BOMB_RSS_BOUND in all.
BOMBS = {
    "gzip": (bg.GZIP, 96 << 20, 1),       # deflate's ratio is ~1000x: ~96 KB
    "zstd": (bg.ZSTD, 1 << 30, 3),        # 3 x 1 GiB in ~100 KB
    "lz4": (bg.LZ4, 256 << 20, 1),        # lz4's ratio is ~250x: ~1 MB
    "snappy": (bg.SNAPPY, 1 << 30, 3),    # declared, not real (see above)
}
EMPTY_RECORDS = 2_000_000  # the record-count bomb's records


def bomb_fetch_decompressed(name):
    """The bytes a fetch of `name` bombs decompresses to (or claims), all batches together."""
    _, size, n = BOMBS[name]
    return size * n


def bomb_fetch(name):
    """(blob, bomb offsets, offset of the good batch after them): a good
    batch at 0, the bombs at 1.., a good batch after them."""
    n = BOMBS[name][2]
    blob = _batch(0, [b"before"])
    offsets = list(range(1, 1 + n))
    for offset in offsets:
        blob += raw_batch(offset, *bomb_parts(name))
    good = 1 + n
    return blob, offsets, good


def empty_records_batch(base_offset, n, codec=bg.ZSTD):
    """n real empty records (null key and value, no headers), compressed."""
    payload = empty_records_payload(n)
    return raw_batch(base_offset, codec, bg.compress(codec, payload), n, n - 1)


def empty_records_payload(n):
    """The records of empty_records_batch, uncompressed."""
    parts = []
    for i in range(n):
        zz = i << 1
        varint = bytearray()
        while True:
            byte = zz & 0x7F
            zz >>= 7
            varint.append(byte | (0x80 if zz else 0))
            if not zz:
                break
        body = b"\x00\x00" + bytes(varint) + b"\x01\x01\x00"
        parts.append(bytes([len(body) << 1]) + body)
    return b"".join(parts)


# --- the scenario every bomb test runs (in a subprocess, for the RSS) -------------------
def consume_through_bad_batches(fetcher, client, blob, bad_offsets, good_offset, *, answer_with=None):
    """Answer one fetch with `blob`; poll as KafkaConsumer.poll does; each
    typed error must name the partition and the bad batch; seek past it and
    answer the refetch with what follows. Returns (errors as dicts, offsets
    of the records delivered)."""
    seen, delivered = [], []
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": blob}})
    polls = 0
    while True:
        polls += 1
        assert polls <= 4 * (len(bad_offsets) + 2), "too many polls: something stalls"
        try:
            fetcher.raise_pending()
            out = fetcher.fetched_records(500)
        except errors.CorruptRecordError as exc:
            seen.append({"cls": type(exc).__name__, "topic": exc.topic, "partition": exc.partition,
                         "offset": exc.offset, "budget": isinstance(exc, errors.RecordBudgetExceededError)})
            fetcher.seek(TP0, exc.offset + 1)
            rest = answer_with(exc.offset + 1) if answer_with else None
            client.now += 1.0  # past retry_backoff_ms
            fetcher.send_requests()
            _answer_fetch(client, client.take("Fetch"), {0: {"records": rest}})
            continue
        delivered.extend(r.offset for r in out.get(TP0, []))
        if good_offset in delivered:
            return seen, delivered
        if fetcher.pending_error is not None:
            continue  # raised by the next poll, after the records before it
        fetcher.send_requests()
        if client.pending("Fetch"):
            _answer_fetch(client, client.take("Fetch"), {0: {"records": b""}})


_CHILD = r"""
import json, sys
sys.path.insert(0, {root!r})
from tests.hostile import test_batch_bombs as T
from tests.support.scripted_fetch import positioned as _positioned, batch as _batch

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

kind = {kind!r}
if kind == "records":
    n = T.EMPTY_RECORDS
    blob = _batch(0, [b"before"]) + T.empty_records_batch(1, n) + _batch(n + 1, [b"after"])
    bad, good = [1], n + 1
    def answer_with(offset):
        return _batch(n + 1, [b"after"])
else:
    blob, bad, good = T.bomb_fetch(kind)
    def answer_with(offset):
        # what the broker would send from `offset` on: the remaining bombs, then the good batch
        rest = b"".join(T.raw_batch(o, *T.bomb_parts(kind)) for o in bad if o >= offset)
        return rest + _batch(good, [b"after"])
    blob += _batch(good, [b"after"])
client, fetcher = _positioned({{0: 0}}, max_partition_fetch_bytes=T.SMALL_PARTITION_BYTES)
import gc; gc.collect()
open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to the current RSS
rss = status("VmRSS")
seen, delivered = T.consume_through_bad_batches(fetcher, client, blob, bad, good, answer_with=answer_with)
print(json.dumps({{"growth": status("VmHWM") - rss, "errors": seen, "delivered": delivered,
                  "fetch_bytes": len(blob)}}))
"""

_PAYLOADS = {}


def bomb_parts(kind):
    """(codec, payload, count, last_offset_delta) of one bomb batch."""
    if kind not in _PAYLOADS:
        codec, size, _ = BOMBS[kind]
        _PAYLOADS[kind] = (codec, _zeros_compressed(codec, size), 1, 0)
    return _PAYLOADS[kind]


def _run_child(kind):
    code = _CHILD.format(root=ROOT, kind=kind)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_is_a_typed_error_with_bounded_memory(kind):
    # the bound proves something: the whole fetch decompresses to more than it
    assert 1.5 * BOMB_RSS_BOUND < bomb_fetch_decompressed(kind), (BOMB_RSS_BOUND, bomb_fetch_decompressed(kind))
    result = _run_child(kind)
    _, _, n = BOMBS[kind]
    assert result["fetch_bytes"] * 200 < bomb_fetch_decompressed(kind)  # a bomb: over 200:1
    # one typed error per bomb, each naming the partition and its batch
    assert [e["offset"] for e in result["errors"]] == list(range(1, 1 + n))
    for e in result["errors"]:
        assert (e["cls"], e["topic"], e["partition"], e["budget"]) == ("DecompressedSizeLimitError", TOPIC, 0, True)
    # the record before the bombs was delivered, and after seek() the next good batch
    assert result["delivered"] == [0, 1 + n]
    assert result["growth"] < BOMB_RSS_BOUND, result["growth"]


def test_millions_of_empty_records_is_a_typed_error_with_bounded_memory():
    # the bound lies below the records' decompressed bytes (~8 per record; the
    # ConsumerRecord tuples they would become take ~20x more) and the budget refuses the count
    assert EMPTY_RECORDS > BATCH_RECORD_BUDGET
    assert 1.5 * RECORDS_RSS_BOUND < len(empty_records_payload(EMPTY_RECORDS))
    result = _run_child("records")
    assert result["fetch_bytes"] < 2_000_000  # 2 M records of 7-9 bytes, zstd: ~1.5 MB
    assert result["errors"] == [{"cls": "RecordCountLimitError", "topic": TOPIC, "partition": 0, "offset": 1,
                                 "budget": True}]
    assert result["delivered"] == [0, EMPTY_RECORDS + 1]
    assert result["growth"] < RECORDS_RSS_BOUND, result["growth"]


# --- headers that contradict the contents -----------------------------------------------------
def _records(values, deltas):
    return [bg.Record(value=v, offset_delta=d) for v, d in zip(values, deltas)]


CONTRADICTIONS = {
    # an OffsetDelta past LastOffsetDelta
    "delta past LastOffsetDelta": bg.record_batch(_records([b"x", b"y", b"z"], [0, 1, 2]), base_offset=1,
                                                  leader_epoch=5, last_offset_delta=1),
    # offsets that go backwards inside the batch
    "delta goes backwards": bg.record_batch(_records([b"x", b"y"], [1, 0]), base_offset=1, leader_epoch=5,
                                            last_offset_delta=1),
    # a repeated offset
    "delta repeats": bg.record_batch(_records([b"x", b"y"], [0, 0]), base_offset=1, leader_epoch=5,
                                     last_offset_delta=1),
    # RecordCount says more records than present / fewer than present
    "RecordCount too high": bg.record_batch(bg.records_from_values([b"x", b"y"]), base_offset=1, leader_epoch=5,
                                            count=3, last_offset_delta=2),
    "RecordCount too low": bg.record_batch(bg.records_from_values([b"x", b"y"]), base_offset=1, leader_epoch=5,
                                           count=1),
    # RecordCount larger than the offsets the batch spans
    "RecordCount past LastOffsetDelta": bg.record_batch(bg.records_from_values([b"x", b"y"]), base_offset=1,
                                                        leader_epoch=5, last_offset_delta=0),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_contradicting_header_gives_proven_records_then_a_typed_error(name):
    client, fetcher = _positioned({0: 0})
    blob = _batch(0, [b"before"]) + CONTRADICTIONS[name] + _batch(5, [b"after"])
    seen, delivered = consume_through_bad_batches(fetcher, client, blob, [1], 5,
                                                  answer_with=lambda offset: _batch(5, [b"after"]))
    assert seen == [{"cls": "InvalidRecordError", "topic": TOPIC, "partition": 0, "offset": 1, "budget": False}]
    assert delivered == [0, 5]


# --- data that cannot advance the position ------------------------------------------------------
def _round(client, fetcher, partitions):
    """One fetch answered with `partitions` ({p: records}) in that order, then
    one poll's worth of fetched_records. Returns the records (or raises)."""
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {p: {"records": r} for p, r in partitions.items()})
    fetcher.raise_pending()
    out = fetcher.fetched_records(500)
    fetcher.raise_pending()
    return out


def test_cut_first_batch_of_a_partition_fetched_alone_is_a_typed_error_not_a_silent_loop():
    client, fetcher = _positioned({0: 0})
    liar = bytearray(_batch(0, [b"x" * 1000]))
    liar[8:12] = (10_000_000).to_bytes(4, "big")  # declares ~10 MB; the broker "sent" ~1 KB
    polls = 0
    with pytest.raises(errors.FetchProgressError) as info:
        for polls in range(1, 10):  # noqa: B007 (read after the loop: how many polls it took)
            assert _round(client, fetcher, {0: bytes(liar)}) == {}
            client.now += 1.0
    assert polls <= 2  # one refetch, then the error
    exc = info.value
    assert (exc.topic, exc.partition, exc.offset) == (TOPIC, 0, 0)
    assert isinstance(exc, errors.CorruptRecordError)
    # raised again on every later answer like it, never silently
    client.now += 1.0
    with pytest.raises(errors.FetchProgressError):
        _round(client, fetcher, {0: bytes(liar)})
    # seek past it: consumption continues
    fetcher.seek(TP0, 1)
    client.now += 1.0
    assert [r.offset for r in _round(client, fetcher, {0: _batch(1, [b"ok"])})[TP0]] == [1]


def test_cut_first_batch_of_a_later_partition_is_refetched():
    # partition 1's first batch cut after partition 0 used the response's
    # bytes: legitimate (only the first partition with data is sent whole)
    client, fetcher = _positioned({0: 0, 1: 0}, enable_incremental_fetch_sessions=False)
    big = _batch(0, [b"y" * 1000])
    for round_ in range(5):
        fetcher.send_requests()
        request = client.take("Fetch")
        _answer_fetch(client, request, {0: {"records": _batch(round_, [b"a"])}, 1: {"records": big[:100]}})
        fetcher.raise_pending()
        assert [r.offset for r in fetcher.fetched_records(500)[TP0]] == [round_]
    # ... and when it is the first with data, the whole batch comes
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {1: {"records": big}, 0: {"records": b""}})
    assert [r.offset for r in fetcher.fetched_records(500)[TP1]] == [0]


def test_batches_only_below_the_fetch_offset_are_a_typed_error():
    client, fetcher = _positioned({0: 5})
    stale = _batch(0, [b"a", b"b"])
    with pytest.raises(errors.FetchProgressError) as info:
        for _ in range(3):
            assert _round(client, fetcher, {0: stale}) == {}
            client.now += 1.0
    assert (info.value.topic, info.value.partition, info.value.offset) == (TOPIC, 0, 5)


def test_malformed_header_at_the_start_raises_from_poll():
    client, fetcher = _positioned({0: 0})
    bad = bytearray(_batch(0, [b"a"]))
    bad[16] = 9  # no such magic
    with pytest.raises(errors.InvalidRecordError) as info:
        _round(client, fetcher, {0: bytes(bad)})
    assert (info.value.topic, info.value.partition, info.value.offset) == (TOPIC, 0, 0)


def test_legacy_wrapper_whose_inner_offsets_lag_its_own_moves_past_it():
    # A magic-0 wrapper at offset 100 holding inner messages 5 and 6: the
    # wrapper's offset is its last inner offset by definition (Java's
    # batch.nextOffset()), so the position must end past 100 -- resuming at 7
    # would refetch the same wrapper, decode nothing new, forever.
    client, fetcher = _positioned({0: 5})
    inner_set = bg.legacy_message(0, 5, None, b"a") + bg.legacy_message(0, 6, None, b"b")
    wrapper = bg.legacy_wrapper(0, 100, [], codec=bg.GZIP, inner_set=inner_set)
    out = _round(client, fetcher, {0: wrapper})
    assert [r.offset for r in out[TP0]] == [5, 6]
    assert fetcher.state(TP0).position == 101
    fetcher.send_requests()
    request = client.take("Fetch")
    assert [p["fetch_offset"] for t in request[2]["topics"] for p in t["partitions"]] == [101]
