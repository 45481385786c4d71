"""The compiled Arrow path hands its columns to pyarrow through the Arrow C
data interface (csrc/fkc_arrow_builder.c fkc_builder_export): one arena per decode,
owned by the exported tree. These tests pin the ownership contract -- columns
outlive the batch, the arena is freed, the buffers are aligned and the batch
validates -- and that the fast record parser and the checked one agree on
records at the edge between them (3- and 4-byte varints, headers, nulls).
"""
import gc
import os
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from fastkc import records as R
from fastkc._twin import records as twin
from fastkc.errors import InvalidRecordError
from tests.support import using_backend

pa = pytest.importorskip("pyarrow")

TS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def compiled(compiled_backend):
    with using_backend(compiled_backend):
        yield compiled_backend


def batch(records, *, base_offset=0, codec=0):
    """records: (timestamp_delta, key, value, headers) per record."""
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 30,
    )
    for i, (ts_delta, key, value, headers) in enumerate(records):
        b.append(i, timestamp=TS + ts_delta, key=key, value=value, headers=headers)
    buf = b.build()
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def rss_mib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / (1 << 20)


def test_columns_outlive_their_batch():
    data = batch([(i, b"k%d" % i, b"v" * i, [("h", b"x")] if i % 2 else []) for i in range(50)])
    rb = R.decode_arrow(data, topic="t", partition=3)
    headers = rb.column("headers")
    values = rb.column("value")
    del rb
    gc.collect()
    assert values[49].as_py() == b"v" * 49
    assert headers[1].as_py() == [{"key": "h", "value": b"x"}]
    assert headers[0].as_py() is None
    assert headers.null_count == 25


def test_export_validates_and_keeps_schema():
    data = batch([(0, None, None, [("a", None), ("b", b"")]), (5, b"", b"v", [])])
    rb = R.decode_arrow(data, topic="t", partition=0)
    rb.validate(full=True)
    assert rb.schema == R.arrow_schema()
    assert rb.column("key").to_pylist() == [None, b""]
    assert rb.column("value").to_pylist() == [None, b"v"]
    assert rb.column("headers").to_pylist() == [[{"key": "a", "value": None}, {"key": "b", "value": b""}], None]
    for column in rb.columns:
        for buf in column.buffers():
            if buf is not None:
                assert buf.address % 64 == 0


def test_empty_input_gives_an_empty_valid_batch():
    rb = R.decode_arrow(b"", topic="t", partition=0)
    rb.validate(full=True)
    assert rb.num_rows == 0
    assert rb.schema == R.arrow_schema()


@pytest.mark.skipif(bool(os.environ.get("FASTKC_ASAN_LIB")), reason="ASan's quarantine keeps freed memory resident")
def test_arena_is_freed():
    # ~1 MiB of columns per decode: a leaked arena would add ~200 MiB.
    data = batch([(0, b"k" * 10, b"v" * 1000, []) for _ in range(1000)])
    R.decode_arrow(data, topic="t", partition=0)
    before = rss_mib()
    for _ in range(200):
        rb = R.decode_arrow(data, topic="t", partition=0)
        col = rb.column(1)
        del rb, col
    assert rss_mib() - before < 50


def test_a_released_arena_serves_the_next_batch_and_never_a_live_one():
    from fastkc._core import _records

    # The last released arena is kept for the next builder (fkc_arrow_builder.c,
    # "arena reuse"): batches decoded while others are alive, released in any
    # order, must each keep their own values; and the reuse must happen.
    def data(tag):
        return batch([(0, b"%s-%d" % (tag, i), tag * 120, []) for i in range(1000)])

    def expect(rb, tag):
        assert rb.column("value").to_pylist() == [tag * 120] * 1000
        assert rb.column("key").to_pylist() == [b"%s-%d" % (tag, i) for i in range(1000)]

    a = R.decode_arrow(data(b"a"), topic="t", partition=0)
    b = R.decode_arrow(data(b"b"), topic="t", partition=0)
    expect(a, b"a")
    del a
    gc.collect()
    reuses = _records._arena_reuses()
    c = R.decode_arrow(data(b"c"), topic="t", partition=0)
    assert _records._arena_reuses() == reuses + 1  # c took a's released arena ...
    expect(b, b"b")  # ... and b, alive all along, kept its own
    expect(c, b"c")
    for _ in range(20):
        d = R.decode_arrow(data(b"d"), topic="t", partition=0)
        expect(d, b"d")
        expect(b, b"b")
        expect(c, b"c")
        del d


def test_two_arenas_released_together_both_serve_the_next_batches():
    from fastkc._core import _records

    # An application that drops the batch it held and the one before together
    # (the end of a loop, a list let go) releases two arenas at once; both
    # are kept idle (fkc_arrow_builder.c, "arena reuse") so that neither of
    # the next two decodes maps and faults in a fresh one.
    def data(tag):
        return batch([(0, b"%s-%d" % (tag, i), tag * 120, []) for i in range(1000)])

    first = [R.decode_arrow(data(b"a"), topic="t", partition=0), R.decode_arrow(data(b"b"), topic="t", partition=0)]
    del first
    gc.collect()
    reuses = _records._arena_reuses()
    c = R.decode_arrow(data(b"c"), topic="t", partition=0)
    d = R.decode_arrow(data(b"d"), topic="t", partition=0)
    assert _records._arena_reuses() == reuses + 2
    assert c.column("value").to_pylist() == [b"c" * 120] * 1000
    assert d.column("value").to_pylist() == [b"d" * 120] * 1000
    assert d.column("key").to_pylist() == [b"d-%d" % i for i in range(1000)]


@pytest.mark.parametrize("ts_delta", [0, 1, 63, 64, 8191, 8192, (1 << 20) - 1, 1 << 20, 1 << 27, -(1 << 20), 1 << 40])
@pytest.mark.parametrize("value_len", [0, 63, 64, 8191, 8192, 1 << 20, 1 << 21])
def test_fast_and_checked_parsers_agree(ts_delta, value_len):
    # Varints of 1 to 6 bytes on both sides of the fast path's 3-byte limit.
    records = [
        (ts_delta, b"key", b"x" * value_len, []),
        (0, None, b"y", [("h", b"z"), ("h\u00e9\u4e2d\U0001f600", b"w" * value_len), ("", None)]),
        (ts_delta, b"", None, []),
    ]
    data = batch(records, base_offset=100)
    rows = R.decode(data, topic="t", partition=0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in rows] == [
        (100, TS + ts_delta, b"key", b"x" * value_len, []),
        (101, TS, None, b"y", [("h", b"z"), ("h\u00e9\u4e2d\U0001f600", b"w" * value_len), ("", None)]),
        (102, TS + ts_delta, b"", None, []),
    ]
    with using_backend(twin):
        expected = R.decode_arrow(data, topic="t", partition=0)
    assert R.decode_arrow(data, topic="t", partition=0).equals(expected)


def test_header_key_strings_are_shared_only_when_equal():
    # The records path reuses the previous record's str for an equal header
    # key at the same position: keys of equal length but other bytes, a
    # changed header count and more headers than the reuse slots must all
    # still come out as the twin decodes them.
    headers = [
        [("ab", b"1"), ("cd", None)],
        [("ac", b"2"), ("cd", b"")],
        [("ab", b"3")],
        [("k%d" % j, b"%d" % j) for j in range(12)],
        [("k%d" % (11 - j), None) for j in range(12)],
        [],
        [("\u00e9", b"e"), ("ab", b"4")],
    ]
    data = batch([(0, b"k", b"v", h) for h in headers])
    got = R.decode(data, topic="t", partition=0)
    with using_backend(twin):
        expected = R.decode(data, topic="t", partition=0)
    assert [r.headers for r in got] == [r.headers for r in expected] == headers
    assert got[0].headers[1][0] is got[1].headers[1][0]  # "cd" at the same position: shared


@pytest.mark.skipif(bool(os.environ.get("FASTKC_ASAN_LIB")), reason="ASan's quarantine keeps freed memory resident")
def test_a_huge_record_count_sizes_no_allocation():
    # The one-pass Arrow sink reserves rows per batch before parsing it: an
    # untrusted RecordCount of 2^31 - 1 (with a LastOffsetDelta to match) over
    # two records' bytes must fail as the twin says, having allocated nothing
    # sized by that count (rows of ~40 bytes each would be ~80 GiB).
    from tests.support import batchgen as g

    records = [g.Record(key=b"k", value=b"v", offset_delta=i) for i in range(2)]
    data = g.record_batch(records, count=(1 << 31) - 1, last_offset_delta=(1 << 31) - 2)
    before = rss_mib()
    with pytest.raises(InvalidRecordError) as ours:  # (no record budget: 0)
        R.decode_partition_arrow(data, topic="t", partition=0, max_batch_records=0)
    assert rss_mib() - before < 50
    with using_backend(twin):
        with pytest.raises(type(ours.value)) as expected:
            R.decode_partition_arrow(data, topic="t", partition=0, max_batch_records=0)
    assert (ours.value.offset, ours.value.next_offset) == (expected.value.offset, expected.value.next_offset)


# --- zero-copy: binary_view key/value pointing into the input ------------------------


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_zero_copy_values_equal_and_outlive_the_source(codec):
    records = [(i, b"k" * (i % 20) if i % 7 else None, (b"value-%d-" % i) * (i % 9) if i % 5 else None,
                [("h", b"x" * i)] if i % 3 == 0 else []) for i in range(60)]
    source = bytearray(batch(records, codec=codec) + batch(records, base_offset=60, codec=codec))
    copied = R.decode_arrow(bytes(source), topic="t", partition=2)
    viewed = R.decode_arrow(source, topic="t", partition=2, zero_copy=True)
    viewed.validate(full=True)
    assert viewed.schema == R.arrow_schema(zero_copy=True)
    assert viewed.column("key").type == pa.binary_view() and viewed.column("value").type == pa.binary_view()
    for name in R.arrow_schema().names:
        assert viewed.column(name).to_pylist() == copied.column(name).to_pylist(), name
    if codec == 0:
        # the views point into `source`: while they live it stays exported
        with pytest.raises(BufferError):
            source.extend(b"x")
    values, keys = viewed.column("value"), viewed.column("key")
    del viewed, source
    gc.collect()
    assert values.to_pylist() == copied.column("value").to_pylist()
    assert keys.to_pylist() == copied.column("key").to_pylist()


def test_zero_copy_views_point_into_the_input_not_a_copy():
    import ctypes

    value = b"0123456789abcdef" * 4  # longer than 12 bytes: not inlined
    source = batch([(0, None, value, [])])
    rb = R.decode_arrow(source, topic="t", partition=0, zero_copy=True)
    addresses = [buf.address for buf in rb.column("value").buffers()[2:] if buf is not None and buf.size]
    source_address = ctypes.cast(ctypes.c_char_p(source), ctypes.c_void_p).value  # the bytes' own storage
    assert any(source_address <= a < source_address + len(source) for a in addresses)
    assert rb.column("value")[0].as_py() == value


def test_zero_copy_release_on_another_thread():
    # pyarrow may release the batch on any thread, without the GIL held by
    # the caller: the release takes the GIL itself to drop the input's export
    import threading

    source = bytearray(batch([(i, b"k", b"v" * 40, []) for i in range(20)]))
    holder = [R.decode_arrow(source, topic="t", partition=0, zero_copy=True)]

    def drop():
        holder.clear()
        gc.collect()

    t = threading.Thread(target=drop)
    t.start()
    t.join()
    source.extend(b"x")  # released: resizable again


def test_zero_copy_builder_across_partitions():
    a = batch([(i, b"ka", b"value-a-%020d" % i, []) for i in range(5)])
    b = batch([(i, b"kb", b"value-b-%020d" % i, []) for i in range(4)], base_offset=100)
    builder = R.arrow_builder(zero_copy=True)
    for blob, topic, partition in ((a, "ta", 0), (b, "tb", 1)):
        stream = R.record_stream(blob, topic=topic, partition=partition, arrow=True)
        assert stream.arrow(1000, None, None, builder) > 0
    del a, b, stream
    gc.collect()
    rb = builder.finish()
    rb.validate(full=True)
    assert rb.schema == R.arrow_schema(zero_copy=True)
    assert rb.column("value").to_pylist() == [b"value-a-%020d" % i for i in range(5)] + \
        [b"value-b-%020d" % i for i in range(4)]
    assert rb.column("topic").to_pylist() == ["ta"] * 5 + ["tb"] * 4
