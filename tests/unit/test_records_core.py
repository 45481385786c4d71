"""The compiled record decoder (fastkc/_core/records.py over csrc/), through
the public fastkc.records functions with the compiled backend selected.

Bytes come from kafka-python's own builders where they suffice (so the
expected values are what an independent encoder wrote) and from
tests/support/batchgen for what producers never write (control batches,
LogAppendTime, corruption). Behaviour shared with the twin is also covered,
for both backends, by tests/unit/test_twin.py and test_differential.py; this
file pins what is specific to the C path: buffer-protocol input without a
copy, records built in C, the GC policy, threads, the codec host, the size
cap, and the Arrow buffers.
"""
import gc
import struct
import threading
import zlib

import lz4.frame
import pytest
import zstandard  # noqa: F401 (kafka-python's zstd batches need it: missing, this file fails at once)
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from fastkc import records as R
from fastkc._core import records as core
from fastkc.errors import (
    CorruptRecordError,
    DecompressedSizeLimitError,
    InvalidRecordError,
    RecordCountLimitError,
    RecordCrcError,
    RecordDecompressionError,
    UnsupportedCompressionError,
)
from fastkc.structs import ConsumerRecord
from tests.support import batchgen as g
from tests.support import using_backend

TS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def compiled(compiled_backend):
    with using_backend(compiled_backend):
        yield compiled_backend


def kp_batch(codec, n, *, base_offset=0, headers=None, key=lambda i: b"key-%d" % i, value=lambda i: b"value-%d" % i):
    """A magic-2 batch written by kafka-python's builder."""
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 30,
    )
    for i in range(n):
        b.append(i, timestamp=TS + i, key=key(i), value=value(i), headers=headers(i) if headers else [])
    buf = b.build()
    struct.pack_into(">q", buf, 0, base_offset)  # the builder writes 0; the broker assigns offsets
    return bytes(buf)


def kp_legacy(magic, codec, n, *, base_offset=0):
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i in range(n):
        b.append(base_offset + i if codec == 0 else i, timestamp=TS + i if magic else None,
                 key=b"lk%d" % i, value=b"lv%d" % i)
    return bytes(b.build())


def expect(cls, blob, **kw):
    with pytest.raises(CorruptRecordError) as info:
        R.decode_partition(blob, **kw)
    assert type(info.value) is cls, info.value
    return info.value


# --- valid input --------------------------------------------------------------------------------
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_kafka_python_batches(codec):
    def hdrs(i):
        return [("h%d" % i, b"x" * i), ("null", None)] if i % 2 else []

    blob = kp_batch(codec, 20, base_offset=1000, headers=hdrs) + kp_batch(codec, 5, base_offset=1020)
    out = R.decode_partition(blob, topic="orders", partition=7)
    assert out.next_offset == 1025
    assert [r.offset for r in out.records] == list(range(1000, 1025))
    r3 = out.records[3]
    assert type(r3) is ConsumerRecord
    assert r3 == ConsumerRecord(
        "orders", 7, 0, 1003, TS + 3, 0, b"key-3", b"value-3", [("h3", b"xxx"), ("null", None)], None,
        5, 7, len("h3") + 3 + len("null"),
    )
    r4 = out.records[4]
    assert r4.headers == [] and r4.serialized_header_size == -1
    assert r4._asdict()["value"] == b"value-4"
    assert r4._replace(offset=1)[3] == 1


def test_null_keys_values_and_empty_bytes():
    blob = kp_batch(0, 4, key=lambda i: None if i % 2 else b"", value=lambda i: None if i < 2 else b"")
    recs = R.decode(blob)
    assert [(r.key, r.value) for r in recs] == [(b"", None), (None, None), (b"", b""), (None, b"")]
    assert [(r.serialized_key_size, r.serialized_value_size) for r in recs] == [(0, -1), (-1, -1), (0, 0), (-1, 0)]


def test_log_append_time_uses_max_timestamp_for_every_record():
    recs = g.records_from_values([b"a", b"b", b"c"])
    blob = g.record_batch(recs, base_offset=5, base_timestamp=TS, max_timestamp=TS + 999, log_append_time=True,
                          leader_epoch=12)
    out = R.decode(blob)
    assert [(r.timestamp, r.timestamp_type, r.leader_epoch) for r in out] == [(TS + 999, 1, 12)] * 3


def test_control_batches_are_never_returned_but_advance():
    data = g.record_batch(g.records_from_values([b"t1"]), base_offset=0, transactional=True, producer_id=9,
                          producer_epoch=0, base_sequence=0)
    marker = g.control_batch(g.CONTROL_COMMIT, base_offset=1, producer_id=9)
    after = g.record_batch(g.records_from_values([b"t2"]), base_offset=2)
    for level in ("read_uncommitted", "read_committed"):
        out = R.decode_partition(data + marker + after, isolation_level=level)
        assert [r.value for r in out.records] == [b"t1", b"t2"]
        assert out.next_offset == 3


def test_read_committed_drops_aborted_keeps_committed():
    def txn(pid, base, values):
        return g.record_batch(g.records_from_values(values), base_offset=base, transactional=True, producer_id=pid,
                              producer_epoch=0, base_sequence=0)

    blob = (
        txn(1, 0, [b"aborted-0", b"aborted-1"])
        + txn(2, 2, [b"committed-2"])
        + g.control_batch(g.CONTROL_ABORT, base_offset=3, producer_id=1)
        + g.control_batch(g.CONTROL_COMMIT, base_offset=4, producer_id=2)
        + txn(1, 5, [b"pid1-later-committed"])  # after its abort marker pid 1 is clean again
        + g.control_batch(g.CONTROL_COMMIT, base_offset=6, producer_id=1)
    )
    aborted = [(1, 0)]
    rc = R.decode_partition(blob, isolation_level="read_committed", aborted_transactions=aborted)
    assert [r.value for r in rc.records] == [b"committed-2", b"pid1-later-committed"]
    assert rc.next_offset == 7
    ru = R.decode_partition(blob, isolation_level="read_uncommitted", aborted_transactions=aborted)
    assert [r.value for r in ru.records] == [b"aborted-0", b"aborted-1", b"committed-2", b"pid1-later-committed"]


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_fetch_offset_in_the_middle_of_a_compressed_batch(codec):
    blob = kp_batch(codec, 10, base_offset=100)
    out = R.decode_partition(blob, fetch_offset=104, stop_offset=108)
    assert [r.offset for r in out.records] == [104, 105, 106, 107]
    assert out.next_offset == 110
    arrow = R.decode_partition_arrow(blob, fetch_offset=104, stop_offset=108)
    assert arrow.records.column("offset").to_pylist() == [104, 105, 106, 107]


def test_partial_trailing_batch_ends_silently():
    first = kp_batch(0, 3, base_offset=0)
    second = kp_batch(0, 3, base_offset=3)
    for cut in range(0, len(second)):
        out = R.decode_partition(first + second[:cut])
        assert [r.offset for r in out.records] == [0, 1, 2]
        assert out.next_offset == 3
    assert R.decode_partition(b"") == ([], 0)
    assert R.decode_partition(b"", fetch_offset=42) == ([], 42)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_legacy_message_sets(magic, codec):
    blob = kp_legacy(magic, codec, 3)
    recs = R.decode(blob)
    assert [(r.key, r.value) for r in recs] == [(b"lk0", b"lv0"), (b"lk1", b"lv1"), (b"lk2", b"lv2")]
    assert all(r.leader_epoch == -1 and r.headers == [] and r.serialized_header_size == -1 for r in recs)
    assert all(isinstance(r.checksum, int) for r in recs)
    if magic == 0:
        assert all(r.timestamp is None and r.timestamp_type is None for r in recs)
    else:
        assert [r.timestamp for r in recs] == [TS, TS + 1, TS + 2]


def test_legacy_relative_offsets_log_append_time_and_magic0_lz4_fix():
    inner = [(b"k%d" % i, b"v%d" % i, TS + i) for i in range(3)]
    wrapper = g.legacy_wrapper(1, 52, inner, codec=g.LZ4, timestamp=TS + 77, log_append_time=True)
    out = R.decode_partition(wrapper, fetch_offset=51)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in out.records] == [(51, TS + 77, 1), (52, TS + 77, 1)]
    assert out.next_offset == 53
    # magic 0 + LZ4 carries KAFKA-3160's wrong header checksum: still decodes
    old = g.legacy_wrapper(0, 12, inner, codec=g.LZ4)
    assert [r.offset for r in R.decode(old)] == [10, 11, 12]


def test_memoryview_bytearray_and_slice_of_a_larger_buffer():
    blob = kp_batch(0, 4, base_offset=10)
    big = bytearray(b"\xAA" * 37 + blob + b"\xBB" * 11)
    view = memoryview(big)[37 : 37 + len(blob)]
    for data in (blob, bytearray(blob), view):
        out = R.decode_partition(data)
        assert [r.value for r in out.records] == [b"value-%d" % i for i in range(4)]
    # the records own their bytes: mutating the source afterwards changes nothing
    recs = R.decode(view)
    big[37:] = b"\x00" * (len(big) - 37)
    assert recs[0].value == b"value-0"


def test_deserializer_forms_and_exceptions():
    blob = kp_batch(0, 2, headers=lambda i: [("h", b"1")], key=lambda i: None if i else b"k")
    seen = []

    class Full:
        def deserialize(self, topic, headers, data):
            seen.append((topic, headers, data))
            return ("full", data)

    recs = R.decode(blob, topic="t", key_deserializer=lambda d: ("plain", d), value_deserializer=Full())
    assert [r.key for r in recs] == [("plain", b"k"), ("plain", None)]  # also called for None
    assert [r.value for r in recs] == [("full", b"value-0"), ("full", b"value-1")]
    assert seen[0] == ("t", [("h", b"1")], b"value-0")
    assert seen[0][1] is recs[0].headers  # the record's own headers list, as kafka-python passes
    assert recs[0].serialized_key_size == 1  # sizes are of the raw bytes

    class Boom(Exception):
        pass

    def explode(data):
        raise Boom(data)

    with pytest.raises(Boom) as info:  # propagates unchanged, not wrapped
        R.decode(blob, value_deserializer=explode)
    assert info.value.args == (b"value-0",)


# --- errors -------------------------------------------------------------------------------------
def test_crc_error_carries_earlier_records_and_can_be_skipped_with_check_crcs_false():
    good = kp_batch(0, 2, base_offset=0)
    bad = g.bad_crc(kp_batch(0, 2, base_offset=2))
    err = expect(RecordCrcError, good + bad, topic="t", partition=1)
    assert (err.topic, err.partition, err.offset, err.next_offset) == ("t", 1, 2, 2)
    assert [r.offset for r in err.records] == [0, 1]
    assert "byte %d" % len(good) in err.reason
    assert [r.offset for r in R.decode(good + bad, check_crcs=False)] == [0, 1, 2, 3]
    legacy = g.legacy_bad_crc(g.legacy_message(1, 5, b"k", b"v"))
    assert expect(RecordCrcError, legacy).offset == 5


def test_invalid_record_errors():
    # BatchLength too small to be a batch
    assert expect(InvalidRecordError, g.patch(kp_batch(0, 1), 8, ">i", 5)).offset == 0
    # unknown magic
    expect(InvalidRecordError, g.patch(kp_batch(0, 1), 16, ">b", 3))
    # over-long varint as a record length
    batch = g.record_batch([], raw_records=g.overlong_varint(3, 6), count=1)
    err = expect(InvalidRecordError, batch)
    assert "over-long" in err.reason
    # record count larger than what the bytes hold (never preallocated)
    huge = g.record_batch(g.records_from_values([b"x"]), count=2_000_000_000)
    assert "RecordCount 2000000000 exceeds" in expect(InvalidRecordError, huge).reason
    huge = g.record_batch(g.records_from_values([b"x"]), count=2_000_000_000, last_offset_delta=2_000_000_000)
    assert "exceeds the budget of" in expect(RecordCountLimitError, huge).reason
    assert "1 of 2000000000" in expect(InvalidRecordError, huge, max_batch_records=0).reason
    # bytes left over after the records
    trailing = g.record_batch([], raw_records=g.encode_record(g.Record(value=b"a")) + b"\x00", count=1)
    expect(InvalidRecordError, trailing)
    # header key that is not UTF-8
    bad_key = g.record_batch([g.Record(value=b"v", headers=[(b"\xff\xfe", b"x")])])
    expect(InvalidRecordError, bad_key)
    # negative key length other than -1
    neg = g.record_batch([], raw_records=g.varint(4) + b"\x00\x00\x00" + g.varint(-5), count=1)
    expect(InvalidRecordError, neg)


def test_decompression_errors_and_unsupported_codec():
    # the codec bits set, the payload not compressed: every codec must refuse it
    for codec in (1, 2, 3, 4):
        body = g.record_batch([], raw_records=b"\x01\x02\x03 definitely not compressed", count=1,
                              extra_attributes=codec)
        err = expect(RecordDecompressionError, body)
        assert err.offset == 0 and err.records == []
    unknown = g.record_batch(g.records_from_values([b"x"]), extra_attributes=6)
    err = expect(UnsupportedCompressionError, unknown)
    assert "codec" in err.reason


def test_size_cap_rejects_declared_sizes_before_allocating_and_streams_stop_at_cap():
    payload = b"".join(g.encode_record(r) for r in g.records_from_values([b"z" * 1000] * 50))
    for codec in (1, 2, 3, 4):
        blob = g.record_batch(g.records_from_values([b"z" * 1000] * 50), codec=codec)
        assert len(R.decode(blob, max_decompressed_bytes=len(payload))) == 50  # exactly the cap is fine
        expect(DecompressedSizeLimitError, blob, max_decompressed_bytes=len(payload) - 1)
    # a zstd frame that *declares* 1 GiB is refused from its header alone
    # (descriptor 0xA0: 4-byte content size, single segment; the blocks never arrive)
    header = b"\x28\xb5\x2f\xfd" + bytes([0x80 | 0x20]) + struct.pack("<I", 1 << 30)
    bomb = g.record_batch([], raw_records=header + b"\x00" * 16, count=1, extra_attributes=g.ZSTD)
    err = expect(DecompressedSizeLimitError, bomb)
    assert "max_decompressed_bytes" in err.reason
    # a gzip bomb without a declared size stops streaming at the cap
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    gzip_bomb = gz.compress(b"\x00" * (64 << 20)) + gz.flush()
    blob = g.record_batch([], raw_records=gzip_bomb, count=1, extra_attributes=g.GZIP)
    expect(DecompressedSizeLimitError, blob, max_decompressed_bytes=1 << 20)


def test_lz4_frames_without_a_declared_size_decode_past_the_first_output_guess():
    # Java's producer stores no content size; the host asks the lz4 package for
    # output in growing pieces (not cap + 1 bytes at once), so a frame that
    # expands far more than 4x must still come out whole, and the cap still holds.
    values = [bytes([65 + i % 26]) * 4000 for i in range(200)]
    raw = b"".join(g.encode_record(r) for r in g.records_from_values(values))
    frame = lz4.frame.compress(raw, store_size=False)
    assert len(raw) > 40 * len(frame)
    blob = g.record_batch([], raw_records=frame, count=len(values), last_offset_delta=len(values) - 1,
                         extra_attributes=g.LZ4)
    assert [r.value for r in R.decode(blob)] == values
    assert len(R.decode(blob, max_decompressed_bytes=len(raw))) == len(values)
    expect(DecompressedSizeLimitError, blob, max_decompressed_bytes=len(raw) - 1)
    expect(RecordDecompressionError, g.record_batch([], raw_records=frame[:-9], count=len(values),
                                                    last_offset_delta=len(values) - 1,
                                                    extra_attributes=g.LZ4))


# --- C-path specifics ----------------------------------------------------------------------------
def test_crc32c_entry_points_and_forced_software_path():
    assert core.crc32c(b"123456789") == 0xE3069283
    assert core.crc32c(b"6789", core.crc32c(b"12345")) == 0xE3069283
    assert core.crc32c(memoryview(b"xx123456789")[2:]) == 0xE3069283
    assert core.crc32c_implementation() in ("sse4.2", "software")
    core.force_crc32c_software(True)
    try:
        assert core.crc32c_implementation() == "software"
        assert core.crc32c(b"123456789") == 0xE3069283
        blob = kp_batch(4, 50)
        assert len(R.decode(blob)) == 50  # batch CRCs verified on the software path
        expect(RecordCrcError, g.bad_crc(kp_batch(0, 3)))
    finally:
        core.force_crc32c_software(False)


def test_records_survive_gc_and_headers_stay_mutable():
    blob = kp_batch(0, 300, headers=lambda i: [("a", b"1")] if i % 3 == 0 else [])
    recs = R.decode(blob)
    gc.collect()
    assert [r.offset for r in recs] == list(range(300))
    # GC policy (see _records.pyx): without deserializers nothing in a record
    # can point back at it, so it and its headers list are left untracked;
    # with a deserializer the values are user objects, so records stay tracked.
    assert not gc.is_tracked(recs[0]) and not gc.is_tracked(recs[0].headers)
    tracked = R.decode(blob, value_deserializer=lambda d: {"v": d})
    assert gc.is_tracked(tracked[0]) and tracked[0].value == {"v": b"value-0"}
    recs[1].headers.append(("added", None))
    assert recs[1].headers == [("added", None)] and recs[2].headers == []  # a list per record, not shared
    assert gc.isenabled()  # the build pauses the GC and must restore it
    gc.disable()
    try:
        R.decode(blob)
        assert not gc.isenabled()  # ... and must not turn it on if the caller had it off
    finally:
        gc.enable()


def test_concurrent_decoding_in_threads_gives_identical_results():
    blob = b"".join(kp_batch(codec, 200, base_offset=200 * i) for i, codec in enumerate([0, 3, 4, 1, 2] * 2))
    expected = [tuple(r) for r in R.decode(blob)]
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append([tuple(r) for r in R.decode(blob)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 20 and all(r == expected for r in results)


# --- Arrow --------------------------------------------------------------------------------------
def test_arrow_schema_values_and_nulls():
    pa = pytest.importorskip("pyarrow")
    batch = g.record_batch(
        [
            g.Record(key=b"k0", value=b"v0", headers=[("a", b"1"), ("\u00e9", None)], offset_delta=0),
            g.Record(key=None, value=None, headers=[], offset_delta=1, timestamp_delta=5),
        ],
        base_offset=40, base_timestamp=TS,
    )
    legacy0 = g.legacy_message(0, 42, None, b"old")
    rb = R.decode_arrow(batch + legacy0, topic="tp\u00e9", partition=3)
    assert rb.schema == R.arrow_schema()
    assert rb.num_rows == 3
    rows = rb.to_pylist()
    assert [r["key"] for r in rows] == [b"k0", None, None]
    assert [r["value"] for r in rows] == [b"v0", None, b"old"]
    assert [r["topic"] for r in rows] == ["tp\u00e9"] * 3
    assert [r["partition"] for r in rows] == [3, 3, 3]
    assert [r["offset"] for r in rows] == [40, 41, 42]
    ts = rb.column("timestamp").cast(pa.int64()).to_pylist()
    assert ts == [TS * 1000, (TS + 5) * 1000, None]  # magic 0: no timestamp
    assert [r["timestampType"] for r in rows] == [0, 0, -1]
    assert rows[0]["headers"] == [{"key": "a", "value": b"1"}, {"key": "\u00e9", "value": None}]
    assert rows[1]["headers"] is None and rows[2]["headers"] is None
    rb.validate(full=True)


def test_arrow_matches_records_path_on_a_mixed_blob():
    pytest.importorskip("pyarrow")
    blob = b"".join(
        kp_batch(codec, 30, base_offset=30 * i, headers=(lambda j: [("h", b"%d" % j)] if j % 2 else []))
        for i, codec in enumerate([0, 1, 2, 3, 4])
    )
    recs = R.decode(blob, topic="t", partition=0)
    rb = R.decode_arrow(blob, topic="t", partition=0)
    rb.validate(full=True)
    rows = rb.to_pylist()
    assert len(rows) == len(recs) == 150
    for rec, row in zip(recs, rows):
        assert (row["key"], row["value"], row["offset"]) == (rec.key, rec.value, rec.offset)
        assert row["timestamp"].timestamp() * 1000 == pytest.approx(rec.timestamp)
        assert (row["headers"] or []) == [{"key": k, "value": v} for k, v in rec.headers]


def test_arrow_error_carries_a_record_batch():
    pa = pytest.importorskip("pyarrow")
    blob = kp_batch(0, 3) + g.bad_crc(kp_batch(0, 2, base_offset=3))
    with pytest.raises(RecordCrcError) as info:
        R.decode_arrow(blob)
    assert isinstance(info.value.records, pa.RecordBatch)
    assert info.value.records.column("offset").to_pylist() == [0, 1, 2]
    assert info.value.next_offset == 3
    empty = R.decode_arrow(b"")
    assert empty.num_rows == 0 and empty.schema == R.arrow_schema()
