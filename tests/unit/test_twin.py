"""Targeted cases, one per semantic rule and per error class, of the decode
contract (see the docstring of fastkc/_twin/records.py). Each runs on both
backends through fastkc.records."""
import struct
import zlib

import crc32c as crc32c_pkg
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from fastkc import records as R
from fastkc._twin import records as twin
from fastkc.errors import (
    CorruptRecordError,
    DecompressedSizeLimitError,
    InvalidRecordError,
    RecordCrcError,
    RecordDecompressionError,
    UnsupportedCompressionError,
)
from tests.support import batchgen as g
from tests.support import property_settings, using_backend

TS = 1_700_000_000_000
ALL_CODECS = [
    pytest.param(dict(codec=g.NONE), id="none"),
    pytest.param(dict(codec=g.GZIP), id="gzip"),
    pytest.param(dict(codec=g.SNAPPY, snappy_framing="xerial"), id="snappy-xerial"),
    pytest.param(dict(codec=g.SNAPPY, snappy_framing="raw"), id="snappy-raw"),
    pytest.param(dict(codec=g.LZ4), id="lz4"),
    pytest.param(dict(codec=g.ZSTD), id="zstd"),
]
LEGACY_CODECS = [g.NONE, g.GZIP, g.SNAPPY, g.LZ4]


def three_records(**kw):
    return g.record_batch(
        [
            g.Record(key=b"k0", value=b"v0", headers=[("a", b"1")], offset_delta=0, timestamp_delta=0),
            g.Record(key=None, value=b"v1", headers=[], offset_delta=1, timestamp_delta=5),
            g.Record(key=b"k2", value=None, headers=[("b", None), ("\u00e9", b"xy")], offset_delta=2,
                     timestamp_delta=-3),
        ],
        **kw,
    )


def expect_error(cls, blob, **kw):
    with pytest.raises(CorruptRecordError) as info:
        R.decode_partition(blob, **kw)
    assert type(info.value) is cls, info.value
    return info.value


# --- magic 2, valid ----------------------------------------------------------------------------
@pytest.mark.parametrize("codec_kw", ALL_CODECS)
def test_v2_fields_every_codec(backend, codec_kw):
    blob = three_records(base_offset=100, leader_epoch=7, base_timestamp=TS, **codec_kw)
    out = R.decode_partition(blob, topic="t", partition=3)
    assert out.next_offset == 103
    assert [tuple(r) for r in out.records] == [
        ("t", 3, 7, 100, TS, 0, b"k0", b"v0", [("a", b"1")], None, 2, 2, 2),
        ("t", 3, 7, 101, TS + 5, 0, None, b"v1", [], None, -1, 2, -1),
        ("t", 3, 7, 102, TS - 3, 0, b"k2", None, [("b", None), ("\u00e9", b"xy")], None, 2, -1, 1 + 2 + 2),
    ]
    assert all(type(r) is R.ConsumerRecord for r in out.records)


def test_log_append_time_uses_max_timestamp(backend):
    blob = three_records(log_append_time=True, base_timestamp=TS, max_timestamp=TS + 999)
    recs = R.decode(blob)
    assert [(r.timestamp, r.timestamp_type) for r in recs] == [(TS + 999, 1)] * 3


def test_empty_blob_and_tiny_tail(backend):
    assert R.decode_partition(b"", fetch_offset=42) == ([], 42)
    # fewer than 17 bytes cannot show a magic byte: a cut-off batch, not an error
    assert R.decode_partition(b"\x00" * 16, fetch_offset=5) == ([], 5)


def test_partial_trailing_batch_is_silent_at_every_cut(backend):
    first = three_records(base_offset=0)
    second = three_records(base_offset=3, codec=g.LZ4)
    blob = first + second
    for cut in range(len(first), len(blob)):
        out = R.decode_partition(blob[:cut])
        assert [r.offset for r in out.records] == [0, 1, 2], cut
        assert out.next_offset == 3
    assert R.decode_partition(blob).next_offset == 6


def test_fetch_offset_inside_compressed_batch_and_stop_offset(backend):
    blob = g.record_batch(g.records_from_values([b"%d" % i for i in range(10)]), base_offset=50, codec=g.ZSTD)
    out = R.decode_partition(blob, fetch_offset=54)
    assert [r.offset for r in out.records] == list(range(54, 60))
    assert out.next_offset == 60
    out = R.decode_partition(blob, fetch_offset=52, stop_offset=55)
    assert [r.offset for r in out.records] == [52, 53, 54]
    assert out.next_offset == 60  # the whole batch was processed


def test_next_offset_uses_last_offset_delta_after_compaction(backend):
    # compaction removed the tail records; LastOffsetDelta still says 9
    blob = g.record_batch(g.records_from_values([b"a", b"b"]), base_offset=10, last_offset_delta=9)
    out = R.decode_partition(blob, fetch_offset=10)
    assert [r.offset for r in out.records] == [10, 11]
    assert out.next_offset == 20


def test_empty_batch_advances_next_offset(backend):
    blob = g.record_batch([], base_offset=30, last_offset_delta=4)
    assert R.decode_partition(blob, fetch_offset=30) == ([], 35)


def test_next_offset_never_moves_backwards(backend):
    blob = three_records(base_offset=0)
    assert R.decode_partition(blob, fetch_offset=100) == ([], 100)


def test_control_batches_are_never_returned(backend):
    blob = (
        three_records(base_offset=0)
        + g.control_batch(g.CONTROL_COMMIT, base_offset=3, producer_id=9)
        + three_records(base_offset=4)
    )
    out = R.decode_partition(blob)
    assert [r.offset for r in out.records] == [0, 1, 2, 4, 5, 6]
    assert out.next_offset == 7
    # a trailing marker still moves the position past itself
    assert R.decode_partition(blob[: len(blob) - len(three_records(base_offset=4))]).next_offset == 4


def txn_blob():
    """pid 1: aborted txn at 0-1 (+abort marker at 2), pid 2: committed txn
    at 3-4 (+commit marker at 5), pid 1 again: a later committed txn at 6 (+commit at 7)."""
    def txn(base, pid):
        return g.record_batch(
            g.records_from_values([b"p%d-%d" % (pid, base), b"p%d-%d" % (pid, base + 1)])[: 2 if base != 6 else 1],
            base_offset=base, transactional=True, producer_id=pid, producer_epoch=0, base_sequence=0,
        )
    return (
        txn(0, 1)
        + g.control_batch(g.CONTROL_ABORT, base_offset=2, producer_id=1)
        + txn(3, 2)
        + g.control_batch(g.CONTROL_COMMIT, base_offset=5, producer_id=2)
        + txn(6, 1)
        + g.control_batch(g.CONTROL_COMMIT, base_offset=7, producer_id=1)
    )


def test_control_batches_are_decoded_strictly(backend):
    # never returned, but their bytes are still checked like any batch
    bad = g.record_batch([g.control_record(g.CONTROL_COMMIT)], transactional=True, control=True,
                         producer_id=1, producer_epoch=0, count=2, base_offset=3)
    err = expect_error(InvalidRecordError, three_records() + bad)
    assert (err.offset, len(err.records)) == (3, 3)


def test_read_committed_skips_aborted_and_keeps_committed(backend):
    blob = txn_blob()
    out = R.decode_partition(blob, isolation_level="read_committed", aborted_transactions=[(1, 0)])
    # the ABORT marker at 2 removed pid 1, so its later transaction at 6 is kept
    assert [r.offset for r in out.records] == [3, 4, 6]
    assert out.next_offset == 8
    uncommitted = R.decode_partition(blob, aborted_transactions=[(1, 0)])
    assert [r.offset for r in uncommitted.records] == [0, 1, 3, 4, 6]


def test_read_committed_aborted_queue_only_applies_from_first_offset(backend):
    blob = txn_blob()
    # the aborted txn of pid 2 starts at 3: the pid-2 batch at 3-4 is dropped
    out = R.decode_partition(blob, isolation_level="read_committed", aborted_transactions=[(2, 3)])
    assert [r.offset for r in out.records] == [0, 1, 6]


def test_read_committed_ignores_non_transactional_batches(backend):
    blob = g.record_batch(g.records_from_values([b"x"]), base_offset=0, producer_id=1, producer_epoch=0)
    out = R.decode_partition(blob, isolation_level="read_committed", aborted_transactions=[(1, 0)])
    assert [r.offset for r in out.records] == [0]


def test_aborted_batch_is_not_decoded(backend):
    # an aborted batch is skipped before decompression (as Java): a broken
    # payload inside it is never seen
    broken = g.record_batch(
        g.records_from_values([b"x"]), base_offset=0, transactional=True, producer_id=1,
        producer_epoch=0, base_sequence=0, extra_attributes=g.LZ4, raw_records=b"not an lz4 frame",
    )
    blob = broken + g.control_batch(g.CONTROL_ABORT, base_offset=1, producer_id=1)
    out = R.decode_partition(blob, isolation_level="read_committed", aborted_transactions=[(1, 0)])
    assert out == ([], 2)
    expect_error(RecordDecompressionError, blob)  # read_uncommitted must decode it


def test_isolation_level_is_validated(backend):
    with pytest.raises(ValueError):
        R.decode(b"", isolation_level="serializable")


# --- input types and deserializers -----------------------------------------------------------------
def test_memoryview_slice_and_bytearray(backend):
    blob = three_records(base_offset=5, codec=g.GZIP)
    big = bytearray(b"\xff" * 13 + blob + b"\xee" * 7)
    view = memoryview(big)[13 : 13 + len(blob)]
    expected = R.decode(blob)
    assert R.decode(view) == expected
    assert R.decode(bytearray(blob)) == expected
    assert len(expected) == 3


def test_plain_callable_deserializer_also_gets_none(backend):
    seen = []

    def deser(data):
        seen.append(data)
        return ("D", data)

    recs = R.decode(three_records(), key_deserializer=deser, value_deserializer=deser)
    assert [r.key for r in recs] == [("D", b"k0"), ("D", None), ("D", b"k2")]
    assert [r.value for r in recs] == [("D", b"v0"), ("D", b"v1"), ("D", None)]
    assert seen == [b"k0", b"v0", None, b"v1", b"k2", None]  # key before value, in order
    # sizes are of the raw bytes
    assert [r.serialized_key_size for r in recs] == [2, -1, 2]


def test_deserializer_object_gets_topic_and_headers(backend):
    class Deser:
        def deserialize(self, topic, headers, data):
            return (topic, list(headers), data)

    recs = R.decode(three_records(), topic="tp", value_deserializer=Deser())
    assert recs[0].value == ("tp", [("a", b"1")], b"v0")
    assert recs[1].value == ("tp", [], b"v1")


def test_deserializer_exception_propagates_unchanged(backend):
    class Boom(Exception):
        pass

    def deser(data):
        raise Boom(data)

    with pytest.raises(Boom):
        R.decode(three_records(), value_deserializer=deser)


# --- legacy magic 0 / 1 ----------------------------------------------------------------------------
def test_legacy_uncompressed_fields(backend):
    blob = (
        g.legacy_message(0, 10, b"k", b"v")
        + g.legacy_message(1, 11, None, b"w", timestamp=TS)
        + g.legacy_message(1, 12, b"k", None, timestamp=TS + 1, log_append_time=True)
    )
    out = R.decode_partition(blob, topic="t", partition=0)
    crc0 = struct.unpack_from(">I", blob, 12)[0]
    assert tuple(out.records[0]) == ("t", 0, -1, 10, None, None, b"k", b"v", [], crc0, 1, 1, -1)
    assert out.records[1][3:8] == (11, TS, 0, None, b"w")
    assert out.records[2][3:8] == (12, TS + 1, 1, b"k", None)
    assert out.next_offset == 13


@pytest.mark.parametrize("codec", LEGACY_CODECS[1:])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_compressed_wrapper(backend, magic, codec):
    inner = [(b"a", b"1", TS), (None, b"2", TS + 1), (b"c", None, TS + 2)]
    blob = g.legacy_wrapper(magic, 42, inner, codec=codec, timestamp=TS + 50)
    out = R.decode_partition(blob)
    assert [r.offset for r in out.records] == [40, 41, 42]
    assert [(r.key, r.value) for r in out.records] == [(b"a", b"1"), (None, b"2"), (b"c", None)]
    if magic == 1:
        assert [(r.timestamp, r.timestamp_type) for r in out.records] == [(TS, 0), (TS + 1, 0), (TS + 2, 0)]
    else:
        assert [(r.timestamp, r.timestamp_type) for r in out.records] == [(None, None)] * 3
    assert all(r.checksum is not None and r.leader_epoch == -1 for r in out.records)
    assert out.next_offset == 43


def test_legacy_wrapper_log_append_time_overrides_inner(backend):
    blob = g.legacy_wrapper(1, 5, [(b"a", b"1", 1), (b"b", b"2", 2)], codec=g.GZIP, timestamp=TS, log_append_time=True)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in R.decode(blob)] == [(4, TS, 1), (5, TS, 1)]


def test_empty_xerial_stream_is_no_records(backend):
    # what the Java producer's SnappyOutputStream writes for an empty payload
    # (e.g. a batch emptied by compaction): the 16-byte header alone.
    # kafka-python fails on it (it wants more than 16 bytes to detect xerial).
    blob = g.record_batch([], codec=g.SNAPPY, base_offset=4, last_offset_delta=2)
    assert len(blob) == g.V2_HEADER_SIZE + 16
    assert R.decode_partition(blob, fetch_offset=4) == ([], 7)


def test_legacy_next_offset_follows_the_last_inner_offset(backend):
    # magic-0 inner offsets are absolute; a wrapper offset that disagrees
    # (producer-side data) does not decide where to resume
    inner = g.legacy_message(0, 5, b"a", b"1") + g.legacy_message(0, 6, b"b", b"2")
    for wrapper_offset in (100, 2):
        blob = g.legacy_wrapper(0, wrapper_offset, [None, None], codec=g.GZIP, inner_set=inner)
        out = R.decode_partition(blob)
        assert ([r.offset for r in out.records], out.next_offset) == ([5, 6], 7)


def test_magic0_lz4_with_correct_header_checksum_also_decodes(backend):
    inner = g.legacy_message(0, 0, b"k", b"v")
    payload = g.compress(g.LZ4, inner)  # a standard frame, correct HC
    blob = g.legacy_message(0, 0, None, payload, codec=g.LZ4)
    assert [(r.key, r.value) for r in R.decode(blob)] == [(b"k", b"v")]


# --- errors ------------------------------------------------------------------------------------------
def test_v2_crc_mismatch_and_check_crcs_off(backend):
    good = three_records(base_offset=0)
    bad = g.bad_crc(three_records(base_offset=3))
    err = expect_error(RecordCrcError, good + bad, topic="t", partition=2)
    assert (err.topic, err.partition, err.offset, err.next_offset) == ("t", 2, 3, 3)
    assert [r.offset for r in err.records] == [0, 1, 2]
    assert [r.offset for r in R.decode(good + bad, check_crcs=False)] == [0, 1, 2, 3, 4, 5]


def test_legacy_crc_mismatch_outer_and_inner(backend):
    expect_error(RecordCrcError, g.legacy_bad_crc(g.legacy_message(1, 0, b"k", b"v")))
    inner = g.legacy_bad_crc(g.legacy_message(1, 0, b"k", b"v"))
    wrapper = g.legacy_wrapper(1, 0, [None], codec=g.GZIP, inner_set=inner)
    err = expect_error(RecordCrcError, wrapper)
    assert err.offset == 0
    assert len(R.decode(wrapper, check_crcs=False)) == 1


def test_legacy_crc_is_checked_before_the_fields(backend):
    # Java's LegacyRecord.ensureValid and kafka-python both check the CRC
    # first; a message broken twice reports the CRC
    blob = g.legacy_message(1, 0, b"k", b"v", trailing=b"\x00", crc=12345)
    expect_error(RecordCrcError, blob)
    expect_error(InvalidRecordError, blob, check_crcs=False)


@pytest.mark.parametrize("size", [-1, 0, 13])
def test_size_field_below_minimum(backend, size):
    blob = g.patch(three_records(base_offset=8), 8, ">i", size) + b"\x00" * 64
    err = expect_error(InvalidRecordError, blob)
    assert err.offset == 8 and err.next_offset == 8


def test_batch_length_below_v2_header(backend):
    blob = g.patch(three_records(), 8, ">i", 40)
    expect_error(InvalidRecordError, blob)


@pytest.mark.parametrize("magic", [3, 0x7F, 0xFF])
def test_unknown_magic(backend, magic):
    blob = g.patch(three_records(), 16, ">B", magic)
    expect_error(InvalidRecordError, blob, check_crcs=False)


def test_record_count_mismatch_and_negative(backend):
    expect_error(InvalidRecordError, three_records(count=4))  # too few records
    expect_error(InvalidRecordError, three_records(count=2))  # bytes left over
    expect_error(InvalidRecordError, three_records(count=-1))
    expect_error(InvalidRecordError, three_records(count=2, codec=g.ZSTD))


def test_trailing_garbage_inside_batch(backend):
    recs = g.records_from_values([b"a"])
    raw = g.encode_record(recs[0]) + b"\x00"
    expect_error(InvalidRecordError, g.record_batch(recs, raw_records=raw))


def test_record_length_disagrees_with_fields(backend):
    rec = g.encode_record(g.Record(value=b"abc"))
    longer = g.varint(len(rec) - 1 + 1) + rec[1:] + b"\x00"  # claims one extra byte
    expect_error(InvalidRecordError, g.record_batch([g.Record()], raw_records=longer))
    body = rec[1:]
    shorter = g.varint(len(body) - 1) + body  # its value runs past the record end
    expect_error(InvalidRecordError, g.record_batch([g.Record()], raw_records=shorter))


def raw_record(fields):
    body = b"".join(fields)
    return g.varint(len(body)) + body


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param(
            [b"\x00", g.overlong_varint(0, 11), g.varint(0), g.varint(-1), g.varint(-1), g.varint(0)],
            id="overlong-varlong",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.overlong_varint(0, 6), g.varint(-1), g.varint(-1), g.varint(0)],
            id="overlong-varint",
        ),
        pytest.param(
            [b"\x00", g.varint(0), b"\xff\xff\xff\xff\x7f", g.varint(-1), g.varint(-1), g.varint(0)],
            id="varint-overflow",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(-2), g.varint(-1), g.varint(0)],
            id="key-length-minus-2",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(-1), g.varint(-1), g.varint(-1)],
            id="negative-header-count",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(-1), g.varint(-1), g.varint(1), g.varint(-1), g.varint(-1)],
            id="null-header-key",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(-1), g.varint(-1), g.varint(1), g.varint(2), b"\xff\xfe",
             g.varint(-1)],
            id="header-key-not-utf8",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(100), b"short", g.varint(-1), g.varint(0)],
            id="key-past-record-end",
        ),
        pytest.param(
            [b"\x00", g.varint(0), g.varint(0), g.varint(-1), g.varint(-1), g.varint(3)],
            id="header-count-past-end",
        ),
    ],
)
def test_invalid_record_fields(backend, fields):
    blob = g.record_batch([g.Record()], raw_records=raw_record(fields), base_offset=77)
    err = expect_error(InvalidRecordError, three_records(base_offset=0) + blob)
    assert (err.offset, err.next_offset, len(err.records)) == (77, 77, 3)


@pytest.mark.parametrize(
    "key_bytes",
    [
        pytest.param(b"\xc0\x80", id="overlong-nul"),
        pytest.param(b"\xed\xa0\x80", id="surrogate"),
        pytest.param(b"\xe2\x82", id="cut-off"),
        pytest.param(b"\xf4\x90\x80\x80", id="above-U+10FFFF"),
        pytest.param(b"\xf8\x88\x80\x80\x80", id="five-byte-form"),
        pytest.param(b"ok\x80", id="stray-continuation"),
    ],
)
def test_header_key_must_be_strict_utf8(backend, key_bytes):
    # the header key is a Kafka STRING; Python's strict UTF-8 decoder is the rule
    fields = [b"\x00", g.varint(0), g.varint(0), g.varint(-1), g.varint(-1), g.varint(1),
              g.varint(len(key_bytes)), key_bytes, g.varint(-1)]
    blob = g.record_batch([g.Record()], raw_records=raw_record(fields))
    expect_error(InvalidRecordError, blob)
    expect_error(InvalidRecordError, blob, check_crcs=False)


def test_header_key_accepts_any_valid_utf8(backend):
    key = "\u00e9\u4e2d\U0001f600\x00"
    blob = g.record_batch([g.Record(value=b"v", headers=[(key, b"h")])])
    assert R.decode(blob)[0].headers == [(key, b"h")]
    assert R.decode(blob)[0].serialized_header_size == len(key.encode("utf-8")) + 1


def test_redundant_varint_bytes_are_accepted(backend):
    # 0x80 0x00 for zero: not minimal, but Java accepts it and so do we
    fields = [b"\x00", g.overlong_varint(0, 10), g.overlong_varint(0, 5), g.varint(-1), g.varint(1), b"v", g.varint(0)]
    blob = g.record_batch([g.Record()], raw_records=raw_record(fields), base_offset=3)
    assert [(r.offset, r.value) for r in R.decode(blob)] == [(3, b"v")]


def test_offset_overflowing_int64_is_invalid(backend):
    blob = g.record_batch(g.records_from_values([b"a", b"b"]), base_offset=(1 << 63) - 1)
    expect_error(InvalidRecordError, blob)


def test_legacy_structural_errors(backend):
    expect_error(InvalidRecordError, g.legacy_message(1, 0, b"k", b"v", trailing=b"\x00"))
    # MessageSize 20 is below the magic-1 minimum of 22 (checked before the CRC)
    expect_error(InvalidRecordError, struct.pack(">qiIb", 0, 20, 0, 1) + b"\x00" * 15)
    # a compressed wrapper with a null value
    expect_error(InvalidRecordError, g.legacy_message(1, 0, None, None, codec=g.GZIP))
    # an empty inner set
    expect_error(InvalidRecordError, g.legacy_wrapper(1, 0, [], codec=g.GZIP, inner_set=b""))
    # an inner message that is itself compressed
    inner = g.legacy_message(1, 0, None, b"x", codec=g.GZIP)
    expect_error(InvalidRecordError, g.legacy_wrapper(1, 0, [None], codec=g.GZIP, inner_set=inner))
    # a cut-off inner entry is corruption, not a partial batch
    whole = g.legacy_message(1, 0, b"k", b"v")
    expect_error(InvalidRecordError, g.legacy_wrapper(1, 0, [None], codec=g.GZIP, inner_set=whole + whole[:20]))
    # inner magic differs from the wrapper's
    expect_error(InvalidRecordError,
                 g.legacy_wrapper(1, 0, [None], codec=g.GZIP, inner_set=g.legacy_message(0, 0, b"k", b"v")))


@pytest.mark.parametrize("codec", [g.GZIP, g.SNAPPY, g.LZ4, g.ZSTD])
def test_codec_rejects_garbage(backend, codec):
    garbage = g.record_batch(
        g.records_from_values([b"x"]), codec=g.NONE, extra_attributes=codec,
        raw_records=b"\x00\x01garbage that is not a compressed stream\xff" * 3,
    )
    err = expect_error(RecordDecompressionError, three_records(base_offset=0) + g.patch(garbage, 0, ">q", 9))
    assert (err.offset, len(err.records)) == (9, 3)


def test_gzip_codec_rejects_a_zlib_stream(backend):
    # codec 1 is the gzip container (Java's GZIPInputStream, kafka-python's
    # GzipFile); a bare zlib stream is not gzip, however it inflates
    raw = g.encode_record(g.Record(value=b"v"))
    blob = g.record_batch([g.Record(value=b"v")], extra_attributes=g.GZIP, raw_records=zlib.compress(raw))
    expect_error(RecordDecompressionError, blob)


@pytest.mark.parametrize("codec_kw", ALL_CODECS[1:])
def test_truncated_compressed_payload(backend, codec_kw):
    full = g.compress(codec_kw["codec"], g.encode_record(g.Record(value=b"x" * 3000)) * 4,
                      snappy_framing=codec_kw.get("snappy_framing", "xerial"))
    blob = g.record_batch(g.records_from_values([b"x"] * 4), codec=g.NONE, extra_attributes=codec_kw["codec"],
                          raw_records=full[: len(full) - 5], count=4)
    expect_error(RecordDecompressionError, blob)


@pytest.mark.parametrize("codec_kw", ALL_CODECS[1:])
def test_decompressed_size_cap(backend, codec_kw):
    blob = g.record_batch(g.records_from_values([b"z" * 5000] * 4), **codec_kw)
    assert len(R.decode(blob, max_decompressed_bytes=1 << 20)) == 4
    err = expect_error(DecompressedSizeLimitError, blob, max_decompressed_bytes=4096)
    assert err.offset == 0


def test_declared_size_is_rejected_before_decompressing(backend):
    # a zstd frame whose header declares 1 MiB: rejected on the header alone
    import zstandard

    header = zstandard.ZstdCompressor().compress(b"\x00" * (1 << 20))
    blob = g.record_batch(g.records_from_values([b"x"]), codec=g.NONE, extra_attributes=g.ZSTD, raw_records=header)
    expect_error(DecompressedSizeLimitError, blob, max_decompressed_bytes=1000)
    # a raw snappy block whose length varint claims 4 GiB - 1
    claim = g.uvarint(0xFFFFFFFF) + b"\x00" * 8
    blob = g.record_batch(g.records_from_values([b"x"]), codec=g.NONE, extra_attributes=g.SNAPPY, raw_records=claim)
    expect_error(DecompressedSizeLimitError, blob, max_decompressed_bytes=1 << 20)


def test_legacy_decompressed_size_cap(backend):
    blob = g.legacy_wrapper(1, 10, [(None, b"q" * 4000, TS)] * 3, codec=g.LZ4)
    expect_error(DecompressedSizeLimitError, blob, max_decompressed_bytes=1000)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_v2(backend, codec):
    blob = g.record_batch(g.records_from_values([b"x"]), extra_attributes=codec)
    err = expect_error(UnsupportedCompressionError, blob)
    assert isinstance(err, CorruptRecordError)


@pytest.mark.parametrize("codec", [4, 5, 7])
def test_unknown_codec_legacy(backend, codec):
    # zstd (4) never existed for magic 0/1
    blob = g.legacy_message(1, 0, None, b"payload", codec=codec)
    expect_error(UnsupportedCompressionError, blob)


def test_error_pickles_with_its_fields(backend):
    import pickle

    err = expect_error(RecordCrcError, three_records() + g.bad_crc(three_records(base_offset=3)),
                       topic="x", partition=1)
    again = pickle.loads(pickle.dumps(err))
    assert (again.reason, again.offset, again.next_offset, again.records) == (err.reason, 3, 3, err.records)


# --- Arrow ----------------------------------------------------------------------------------------------
def test_arrow_schema_and_values(backend):
    import pyarrow as pa

    blob = three_records(base_offset=100, base_timestamp=TS) + g.legacy_message(0, 103, b"L", b"M")
    out = R.decode_partition_arrow(blob, topic="t", partition=4)
    rb = out.records
    assert isinstance(rb, pa.RecordBatch)
    assert rb.schema.equals(R.arrow_schema())
    assert out.next_offset == 104
    d = rb.to_pydict()
    assert d["key"] == [b"k0", None, b"k2", b"L"]
    assert d["value"] == [b"v0", b"v1", None, b"M"]
    assert d["topic"] == ["t"] * 4 and d["partition"] == [4] * 4
    assert d["offset"] == [100, 101, 102, 103]
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [TS * 1000, (TS + 5) * 1000, (TS - 3) * 1000, None]
    assert d["timestampType"] == [0, 0, 0, -1]
    assert d["headers"] == [
        [{"key": "a", "value": b"1"}],
        None,
        [{"key": "b", "value": None}, {"key": "\u00e9", "value": b"xy"}],
        None,
    ]


def test_arrow_matches_records(backend):
    blob = txn_blob() + three_records(base_offset=8, codec=g.LZ4)
    kw = dict(topic="q", partition=1, fetch_offset=1, isolation_level="read_committed", aborted_transactions=[(1, 0)])
    recs = R.decode(blob, **kw)
    rb = R.decode_arrow(blob, **kw)
    assert rb.column("offset").to_pylist() == [r.offset for r in recs]
    assert rb.column("value").to_pylist() == [r.value for r in recs]


def test_arrow_error_carries_record_batch(backend):
    import pyarrow as pa

    blob = three_records() + g.bad_crc(three_records(base_offset=3))
    with pytest.raises(RecordCrcError) as info:
        R.decode_arrow(blob)
    assert isinstance(info.value.records, pa.RecordBatch)
    assert info.value.records.column("offset").to_pylist() == [0, 1, 2]


def test_arrow_timestamp_overflow_is_invalid(backend):
    blob = three_records(base_timestamp=(1 << 62))
    assert R.decode(blob)[0].timestamp == 1 << 62  # fine as milliseconds
    with pytest.raises(InvalidRecordError):
        R.decode_arrow(blob)


# --- the twin's own kernels ---------------------------------------------------------------------------
@pytest.mark.parametrize("data", [b"", b"123456789", bytes(range(256)) * 3])
def test_twin_crc32c_and_xxh32_match_reference_packages(data):
    assert twin.crc32c(data) == crc32c_pkg.crc32c(data)
    assert twin.crc32c(data[5:], twin.crc32c(data[:5])) == crc32c_pkg.crc32c(data)
    for seed in (0, 1, 0xDEADBEEF):
        assert twin.xxh32(data, seed) == xxhash.xxh32(data, seed=seed).intdigest()
    assert twin.crc32c(b"123456789") == 0xE3069283


def test_twin_legacy_crc_is_ieee_crc32():
    entry = g.legacy_message(1, 0, b"k", b"v")
    assert struct.unpack_from(">I", entry, 12)[0] == zlib.crc32(entry[16:])


def test_record_error_classes_are_corrupt_record_errors():
    # the broker error-code table once rebound InvalidRecordError (errno 87)
    # to an unrelated class, so `except CorruptRecordError` missed it
    from fastkc import errors

    for cls in (InvalidRecordError, RecordCrcError, RecordDecompressionError,
                DecompressedSizeLimitError, UnsupportedCompressionError):
        assert issubclass(cls, CorruptRecordError), cls
        assert getattr(errors, cls.__name__) is cls
    assert errors.for_code(87) is InvalidRecordError


# --- robustness: arbitrary bytes ---------------------------------------------------------------------
@pytest.fixture(params=["python", "c"], scope="module")
def backend_module(request):
    # module-scoped: a hypothesis test may not use a function-scoped fixture
    if request.param == "python":
        return twin
    return request.getfixturevalue("compiled_backend")


@st.composite
def framed_garbage(draw):
    """Random bytes behind a plausible frame (size matching the bytes, magic
    0, 1 or 2), so the garbage reaches the batch parsers, not just the framing."""
    body = draw(st.binary(min_size=5, max_size=300))
    magic = draw(st.sampled_from([0, 1, 2]))
    frame = struct.pack(">qi", draw(st.integers(0, 1 << 40)), len(body)) + body
    frame = frame[:16] + bytes([magic]) + frame[17:]
    if magic == 2 and len(frame) > g.V2_HEADER_SIZE and draw(st.booleans()):
        frame = g.fix_crc(frame)
    tail = draw(st.binary(max_size=40))
    return frame + tail


@property_settings(fast_examples=150, slow_examples=5000)
@given(data=st.one_of(st.binary(max_size=200), framed_garbage()), check_crcs=st.booleans(),
       read_committed=st.booleans())
def test_arbitrary_bytes_raise_only_corrupt_record_errors(backend_module, data, check_crcs, read_committed):
    kw = dict(check_crcs=check_crcs, isolation_level="read_committed" if read_committed else "read_uncommitted",
              aborted_transactions=[(0, 0), (1, 5)], max_decompressed_bytes=4096)
    with using_backend(backend_module):
        for fn in (R.decode_partition, R.decode_partition_arrow):
            try:
                out = fn(data, **kw)
            except CorruptRecordError as exc:
                assert exc.next_offset == exc.offset
            else:
                assert out.next_offset >= 0
