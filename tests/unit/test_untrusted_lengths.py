"""Lengths and counts near the int32 limits, from untrusted bytes: every one
must be a typed CorruptRecordError on both backends, through the one-shot
decoder, the resumable one and the scan -- never wrapped arithmetic. Run by
`make asan` (ASan + UBSan with -fno-wrapv and -fno-sanitize-recover): a
signed overflow in the kernels aborts the run. Before the fix, a header of
key length 1 and value length 2^31 - 1 added the two as int after the value's
bounds check had already failed (fkc_records.c, the checked header loop).
Buffers are ctypes arrays ending exactly at the data, so an over-read by one
byte is an ASan report, not a read of a bytes object's trailing NUL."""
import ctypes

import pytest

from fastkc import records as R
from fastkc.errors import CorruptRecordError, InvalidRecordError
from tests.support import batchgen as g

INT32_MAX = (1 << 31) - 1


def varint(n):
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return bytes(out)


def record(body):
    return varint(len(body)) + body


def exact(blob):
    return (ctypes.c_ubyte * len(blob)).from_buffer_copy(blob)


# attributes, timestamp delta, offset delta, then the fields under test
HEAD = b"\x00" + varint(0) + varint(0)

CASES = {
    "header value 2^31-1 after a 1-byte key": HEAD + varint(-1) + varint(-1) + varint(1) + varint(1) + b"a"
    + varint(INT32_MAX) + b"xyz",
    "header key 2^31-1": HEAD + varint(-1) + varint(-1) + varint(1) + varint(INT32_MAX) + b"abc",
    "two headers, the second 2^31-1": HEAD + varint(-1) + varint(-1) + varint(2) + varint(1) + b"a" + varint(3)
    + b"bcd" + varint(1) + b"e" + varint(INT32_MAX) + b"f",
    "header count 2^31-1": HEAD + varint(-1) + varint(-1) + varint(INT32_MAX) + varint(1) + b"a" + varint(-1),
    "key 2^31-1": HEAD + varint(INT32_MAX) + b"k" * 4,
    "value 2^31-1": HEAD + varint(-1) + varint(INT32_MAX) + b"v" * 4,
    "key -2^31": HEAD + varint(-(1 << 31)) + b"k",
}


def batches():
    for name, body in CASES.items():
        yield name, g.record_batch([], raw_records=record(body), count=1)
    # a record whose length says 2^31 - 1
    yield "record length 2^31-1", g.record_batch([], raw_records=varint(INT32_MAX) + HEAD + b"\x01\x01\x00", count=1)
    # a legacy message with key and value lengths of 2^31 - 1
    msg = bytearray(g.legacy_message(1, 0, b"k", b"v"))
    msg[26:30] = INT32_MAX.to_bytes(4, "big")
    yield "legacy key 2^31-1", bytes(msg)
    # RecordCount and LastOffsetDelta at the limits (nothing may be sized by them)
    yield "RecordCount 2^31-1", g.record_batch(g.records_from_values([b"x"]), count=INT32_MAX,
                                               last_offset_delta=INT32_MAX)


@pytest.mark.parametrize("name,blob", list(batches()), ids=[n for n, _ in batches()])
@pytest.mark.parametrize("check_crcs", [True, False])
def test_lengths_at_the_int32_limit_are_typed_errors(backend, name, blob, check_crcs):
    good = g.record_batch(g.records_from_values([b"before"]), base_offset=0)
    bad_base = 1
    data = good + g.patch(blob, 0, ">q", bad_base) if blob[16] == 2 else good + blob
    kw = dict(topic="t", partition=2, check_crcs=check_crcs and blob[16] != 2, max_batch_records=0)
    with pytest.raises(CorruptRecordError) as info:
        R.decode_partition(exact(data), **kw)
    assert [r.value for r in info.value.records] == [b"before"]
    # the resumable decoder: the same records, then the same error
    stream = R.record_stream(exact(data), **kw)
    got = []
    with pytest.raises(type(info.value)):
        while not stream.done:
            got.extend(stream.records(1))
    assert [r.value for r in got] == [b"before"]
    with pytest.raises(CorruptRecordError):
        R.decode_partition_arrow(exact(data), topic="t", partition=2, check_crcs=False, max_batch_records=0)
    R.scan_blob(exact(data))  # header-only: must not fail or over-read


def test_batch_length_and_last_offset_delta_at_the_limits(backend):
    batch = bytearray(g.record_batch(g.records_from_values([b"x"]), base_offset=(1 << 63) - 2))
    info = R.scan_blob(exact(bytes(batch)))
    assert info.tail == "none" and info.next_offset == (1 << 63) - 1
    batch[23:27] = INT32_MAX.to_bytes(4, "big")  # LastOffsetDelta: base + delta passes int64
    info = R.scan_blob(exact(bytes(batch)))
    assert info.tail == "malformed" and info.entries == 0
    with pytest.raises(InvalidRecordError):
        R.decode_partition(exact(bytes(batch)), check_crcs=False)
    batch[8:12] = INT32_MAX.to_bytes(4, "big")  # BatchLength 2^31 - 1: a cut tail, not an allocation
    assert R.scan_blob(exact(bytes(batch))).tail == "malformed"  # (the LastOffsetDelta still decides)
    batch[23:27] = (0).to_bytes(4, "big")
    info = R.scan_blob(exact(bytes(batch)))
    assert info.tail == "cut" and info.tail_size == INT32_MAX + 12
    assert R.decode_partition(exact(bytes(batch))).records == []


def test_scan_counts_the_bytes_of_slow_codecs(backend):
    """scan_blob's slow_codec_bytes (what fastkc.aio decodes off its loop):
    the complete entries compressed with gzip, snappy or zstd, v2 batches
    and legacy wrappers alike; lz4, uncompressed and a cut tail count nothing."""
    values = [b"value %d" % i * 20 for i in range(30)]
    gzip = g.record_batch(g.records_from_values(values), base_offset=0, codec=g.GZIP)
    lz4 = g.record_batch(g.records_from_values(values), base_offset=30, codec=g.LZ4)
    zstd = g.record_batch(g.records_from_values(values), base_offset=60, codec=g.ZSTD)
    plain = g.record_batch(g.records_from_values(values), base_offset=90)
    snappy = g.legacy_wrapper(1, 129, [(None, values[i], 1_700_000_000_000) for i in range(10)], codec=g.SNAPPY)
    cut = g.record_batch(g.records_from_values(values), base_offset=130, codec=g.GZIP)[:-10]
    info = R.scan_blob(gzip + lz4 + zstd + plain + snappy + cut)
    assert info.tail == "cut" and info.entries == 5
    assert info.slow_codec_bytes == len(gzip) + len(zstd) + len(snappy)
    assert R.scan_blob(lz4 + plain).slow_codec_bytes == 0
