"""The share decode (KIP-932): one partition of a ShareFetch answer, its
records blob filtered by the acquired ranges (fastkc.records.decode_share /
decode_share_arrow), on both backends.

Hand-written cases pin the Java client's ShareCompletedFetch rules (records
outside the ranges dropped, acquired offsets without a record reported as
gaps, control records are gaps, each offset handed out once, a corrupt batch
raises decode()'s error with what to REJECT / RELEASE); bad ranges are a
typed error before anything is decoded; captured broker bytes decode to
exactly what the producer wrote inside made-up ranges; and hypothesis holds
the compiled core to the twin over generated, cut and corrupted blobs with
random ranges (tests/unit/test_differential.py's generators).
"""
import base64
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc import records as R
from fastkc.errors import (
    CorruptRecordError,
    InvalidAcquiredRecordsError,
    InvalidRecordError,
    RecordCountLimitError,
    RecordCrcError,
)
from fastkc.structs import ConsumerRecord, ShareFailure, ShareRecord
from tests.support import batchgen as g
from tests.support import property_settings, using_backend
from tests.support.differential import blobs, comparable, damaged, flipped

T = dict(topic="t", partition=3)


def _values(decoded):
    return [(r.offset, r.value, r.delivery_count) for r in decoded.records]


def _batch(values, base_offset, **kw):
    return g.record_batch(g.records_from_values(values), base_offset=base_offset, **kw)


# --- the records and gaps -----------------------------------------------------------------------------
def test_share_record_is_consumer_record_plus_delivery_count():
    assert ShareRecord._fields == ConsumerRecord._fields + ("delivery_count",)


def test_records_outside_the_ranges_are_dropped_and_holes_are_gaps(backend):
    blob = _batch([b"a", b"b", b"c", b"d"], 10) + _batch([b"e", b"f"], 15)
    got = R.decode_share(blob, acquired=[(9, 11, 1), (13, 16, 3), (20, 22, 2)], **T)
    assert _values(got) == [(10, b"a", 1), (11, b"b", 1), (13, b"d", 3), (15, b"e", 3), (16, b"f", 3)]
    # 9: before the first batch; 14: no record (the batches leave it out); 20-22: past every batch
    assert got.gaps == [(9, 9), (14, 14), (20, 22)]
    rec = got.records[0]
    assert (rec.topic, rec.partition, rec.key, rec.headers, rec.checksum) == ("t", 3, None, [], None)


def test_ranges_start_and_end_mid_batch(backend):
    blob = _batch([b"%d" % i for i in range(10)], 100, codec=g.ZSTD)
    got = R.decode_share(blob, acquired=[(102, 103, 1), (105, 105, 7), (108, 108, 2)], **T)
    assert _values(got) == [(102, b"2", 1), (103, b"3", 1), (105, b"5", 7), (108, b"8", 2)]
    assert got.gaps == []


def test_control_records_inside_a_range_are_gaps(backend):
    # a committed transaction: data 0-1, its COMMIT marker at 2, then 3
    blob = (_batch([b"x", b"y"], 0, transactional=True, producer_id=7, producer_epoch=0, base_sequence=0)
            + g.control_batch(g.CONTROL_COMMIT, base_offset=2, producer_id=7)
            + _batch([b"z"], 3))
    got = R.decode_share(blob, acquired=[(0, 3, 1)], **T)
    assert [r.offset for r in got.records] == [0, 1, 3]
    assert got.gaps == [(2, 2)]


def test_aborted_data_inside_a_range_is_handed_out(backend):
    """A ShareFetch answer carries no aborted transactions: what the broker
    acquired is delivered (it never acquires aborted data for a
    read_committed share group; SharePartition archives it)."""
    blob = (_batch([b"x"], 0, transactional=True, producer_id=7, producer_epoch=0, base_sequence=0)
            + g.control_batch(g.CONTROL_ABORT, base_offset=1, producer_id=7))
    got = R.decode_share(blob, acquired=[(0, 1, 2)], **T)
    assert _values(got) == [(0, b"x", 2)]
    assert got.gaps == [(1, 1)]


def test_compacted_batch_leaves_gaps(backend):
    records = [g.Record(value=b"a", offset_delta=0), g.Record(value=b"d", offset_delta=3)]
    blob = g.record_batch(records, base_offset=50, last_offset_delta=5)
    got = R.decode_share(blob, acquired=[(50, 55, 1)], **T)
    assert [r.offset for r in got.records] == [50, 53]
    assert got.gaps == [(51, 52), (54, 55)]


def test_empty_ranges_hand_out_nothing_but_still_check_the_bytes(backend):
    blob = _batch([b"a"], 0)
    assert R.decode_share(blob, acquired=[], **T) == ([], [], [])
    with pytest.raises(RecordCrcError) as info:
        R.decode_share(g.bad_crc(blob), acquired=[], **T)
    assert info.value.share == ShareFailure([], [], [])


def test_an_offset_repeated_by_a_later_batch_is_handed_out_once(backend):
    blob = _batch([b"a", b"b"], 0) + _batch([b"again"], 1)
    got = R.decode_share(blob, acquired=[(0, 2, 1)], **T)
    assert _values(got) == [(0, b"a", 1), (1, b"b", 1)]
    assert got.gaps == [(2, 2)]


def test_legacy_entries_and_deserializers(backend):
    blob = g.legacy_message(1, 4, b"k", b"v", timestamp=5) + _batch([b"w"], 5)
    got = R.decode_share(blob, acquired=[(4, 5, 4)], key_deserializer=lambda d: d and d.upper(),
                         value_deserializer=lambda d: d + b"!", **T)
    assert [(r.offset, r.key, r.value, r.delivery_count) for r in got.records] == [
        (4, b"K", b"v!", 4), (5, None, b"w!", 4)]
    assert got.records[0].checksum is not None


def test_records_outside_the_ranges_never_reach_a_deserializer(backend):
    """Dropped before any object is made for them: the deserializers see
    exactly the handed-out records (the compiled core skips the rest in C)."""
    seen = []

    def spy(data):
        seen.append(data)
        return data

    blob = _batch([b"%d" % i for i in range(50)], 0, codec=g.SNAPPY)
    got = R.decode_share(blob, acquired=[(7, 9, 1), (40, 40, 1)], value_deserializer=spy, **T)
    assert seen == [b"7", b"8", b"9", b"40"] == [r.value for r in got.records]


def test_a_cut_tail_stops_silently_and_its_acquired_offsets_are_released(backend):
    """Java would GAP (archive) them; they may hold records the bytes cut
    off, so they are released (delivered again). A real gap before the cut
    stays a gap; with too little of the cut header to read its base offset,
    everything past the complete batches is released."""
    whole = _batch([b"a", b"b"], 0) + _batch([b"d", b"e"], 3) + _batch([b"f", b"g"], 5)
    cut = whole[:-5]
    for form in (R.decode_share, R.decode_share_arrow):
        got = form(cut, acquired=[(0, 6, 1)], **T)
        assert got.gaps == [(2, 2)] and got.released == [(5, 6)]
    got = R.decode_share(cut, acquired=[(0, 1, 1), (5, 9, 2)], **T)
    assert [r.offset for r in got.records] == [0, 1] and got.gaps == [] and got.released == [(5, 9)]
    head = len(_batch([b"a", b"b"], 0) + _batch([b"d", b"e"], 3))
    got = R.decode_share(cut[:head + 4], acquired=[(0, 6, 1)], **T)  # 4 bytes of the third header
    assert got.gaps == [(2, 2)] and got.released == [(5, 6)]
    got = R.decode_share(whole, acquired=[(0, 8, 1)], **T)  # complete: past the data are gaps, as in Java
    assert got.gaps == [(2, 2), (7, 8)] and got.released == []


def test_arrow_form_has_the_delivery_count_column(backend):
    import pyarrow as pa

    blob = _batch([b"a", b"b", b"c"], 0, codec=g.LZ4) + _batch([b"d"], 3)
    for zero_copy in (False, True):
        batch, gaps, _ = R.decode_share_arrow(blob, acquired=[(1, 1, 5), (3, 4, 2)], zero_copy=zero_copy, **T)
        assert batch.schema == R.share_arrow_schema(zero_copy)
        assert batch.schema.field("delivery_count").type == pa.int16()
        assert batch.column("offset").to_pylist() == [1, 3]
        assert batch.column("delivery_count").to_pylist() == [5, 2]
        assert batch.column("value").to_pylist() == [b"b", b"d"]
        assert gaps == [(4, 4)]
    empty, gaps, _ = R.decode_share_arrow(b"", acquired=[(0, 0, 1)], **T)
    assert empty.num_rows == 0 and empty.schema == R.share_arrow_schema() and gaps == [(0, 0)]


# --- corrupt batches ----------------------------------------------------------------------------------
def test_a_corrupt_batch_raises_with_what_to_reject_and_release(backend):
    blob = (_batch([b"a", b"b"], 10) + g.bad_crc(_batch([b"x", b"y", b"z"], 13)) + _batch([b"q"], 16))
    with pytest.raises(RecordCrcError) as info:
        R.decode_share(blob, acquired=[(5, 11, 1), (12, 14, 2), (16, 20, 1)], **T)
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("t", 3, 13)
    assert [(r.offset, r.delivery_count) for r in err.records] == [(10, 1), (11, 1)]
    # 5-9 and 12: below the bad batch, no record; 13-14: inside it (REJECT
    # as Java's rejectRecordBatch); 16-20: past it, not decoded (RELEASE)
    assert err.share == ShareFailure(gaps=[(5, 9), (12, 12)], rejected=[(13, 14)], released=[(16, 20)])


def test_a_corrupt_batch_in_arrow_form(backend):
    blob = _batch([b"a"], 0) + g.bad_crc(_batch([b"x", b"y"], 1))
    with pytest.raises(RecordCrcError) as info:
        R.decode_share_arrow(blob, acquired=[(0, 5, 1)], **T)
    assert info.value.records.column("offset").to_pylist() == [0]
    assert info.value.share == ShareFailure(gaps=[], rejected=[(1, 2)], released=[(3, 5)])


def test_budgets_apply_as_in_decode(backend):
    blob = _batch([b"a"] * 10, 0, codec=g.GZIP)
    with pytest.raises(RecordCountLimitError) as info:
        R.decode_share(blob, acquired=[(0, 9, 1)], max_batch_records=5, **T)
    assert info.value.share.rejected == [(0, 9)]
    with pytest.raises(CorruptRecordError):
        R.decode_share(blob, acquired=[(0, 9, 1)], max_decompressed_bytes=10, **T)


def test_a_malformed_entry_is_typed(backend):
    blob = _batch([b"a"], 0) + g.patch(_batch([b"b"], 1), 16, ">b", 7)  # magic 7
    with pytest.raises(InvalidRecordError) as info:
        R.decode_share(blob, acquired=[(0, 1, 1)], **T)
    assert [r.offset for r in info.value.records] == [0]
    assert info.value.share.rejected == [(1, 1)]


# --- bad ranges ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("acquired, index", [
    ([(5, 4, 1)], 0),                      # first > last
    ([(-1, 4, 1)], 0),                     # negative
    ([(0, 4, 1), (4, 6, 1)], 1),           # overlapping
    ([(10, 14, 1), (0, 4, 1)], 1),         # unsorted
    ([(0, 4, 0)], 0),                      # delivery count below 1
    ([(0, 4, 1 << 15)], 0),                # past int16
    ([(0, (1 << 63) - 1, 1)], 0),          # leaves no next offset
    ([(0, 4)], 0),                         # not a triple
    ([("a", 4, 1)], 0),                    # not ints
])
def test_bad_ranges_are_refused_before_decoding(backend, acquired, index):
    bad_bytes = g.bad_crc(_batch([b"a"], 0))  # would raise RecordCrcError if decoded
    for call in (R.decode_share, R.decode_share_arrow):
        with pytest.raises(InvalidAcquiredRecordsError) as info:
            call(bad_bytes, acquired=acquired, **T)
        assert (info.value.topic, info.value.partition, info.value.index) == ("t", 3, index)


# --- captured broker bytes ----------------------------------------------------------------------------
CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "fetch")
with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as _fh:
    MANIFEST = json.load(_fh)
TOPIC_BY_ID = {bytes.fromhex(info["topic_id"]): name for name, info in MANIFEST["topics"].items()}


def _made_up_ranges(first, last, seed):
    """Acquired ranges over [first, last + 3] (past the data too), with holes
    and varied delivery counts, from a fixed seed."""
    import random

    rnd = random.Random(seed)
    out, at = [], first
    while at <= last + 3:
        length = rnd.randint(1, 6)
        out.append((at, at + length - 1, rnd.randint(1, 5)))
        at += length + rnd.randint(0, 3)
    return out


@pytest.mark.parametrize("capture", MANIFEST["captures"], ids=[c["file"] for c in MANIFEST["captures"]])
def test_captured_broker_bytes_with_made_up_ranges(capture, backend):
    from fastkc.protocol import codec

    with open(os.path.join(CORPUS, capture["file"]), "rb") as fh:
        raw = fh.read()
    version = capture["api_version"]
    correlation_id, body = codec.decode_response("Fetch", version, raw)
    response = codec.to_fetch_response(correlation_id, body, version)
    for topic in response.topics:
        name = topic.topic if version < 13 else TOPIC_BY_ID[bytes(topic.topic_id)]
        for part in topic.partitions:
            params = capture["partitions"][name][str(part.partition)]
            first, through = params["fetch_offset"], params["complete_through"]
            acquired = _made_up_ranges(first, through, seed=part.partition * 1000 + first)
            counts = {o: c for a, b, c in acquired for o in range(a, b + 1)}
            got = R.decode_share(bytes(part.records or b""), topic=name, partition=part.partition,
                                 acquired=acquired)
            want = [r for r in MANIFEST["topics"][name]["records"]
                    if r["partition"] == part.partition and r["offset"] <= through and r["offset"] in counts]
            assert [(r.offset, r.value, r.delivery_count) for r in got.records] == [
                (r["offset"], None if r["value"] is None else base64.b64decode(r["value"]), counts[r["offset"]])
                for r in want], (capture["file"], name, part.partition)
            handed = {r.offset for r in got.records}
            gap_offsets = [o for a, b in got.gaps for o in range(a, b + 1)]
            released = [o for a, b in got.released for o in range(a, b + 1)]
            # every acquired offset, once; what lies in a cut tail (past `through`) is released
            assert sorted(gap_offsets + released + sorted(handed)) == sorted(counts)
            assert all(o > through for o in released)
            arrow, arrow_gaps, arrow_released = R.decode_share_arrow(bytes(part.records or b""), topic=name,
                                                                     partition=part.partition, acquired=acquired)
            assert arrow.column("offset").to_pylist() == [r.offset for r in got.records]
            assert arrow.column("delivery_count").to_pylist() == [r.delivery_count for r in got.records]
            assert (arrow_gaps, arrow_released) == (got.gaps, got.released)


# --- differential: the compiled core against the twin ---------------------------------------------------
@st.composite
def acquired_ranges(draw, start, end):
    """Sorted, disjoint ranges around [start, end]: starting and ending
    anywhere (mid-batch, between batches, past the data), or none."""
    out = []
    at = max(start - draw(st.integers(0, 3)), 0)
    for _ in range(draw(st.integers(0, 6))):
        at += draw(st.integers(0, 4))
        length = draw(st.integers(1, 8))
        out.append((at, at + length - 1, draw(st.integers(1, (1 << 15) - 1))))
        at += length
    return out


def share_outcome(module, blob, arrow=False, **kw):
    """("ok", records, gaps, released) or ("error", class, offset, next_offset, records, share)."""
    with using_backend(module):
        try:
            if arrow:
                records, gaps, released = R.decode_share_arrow(blob, **kw)
            else:
                records, gaps, released = R.decode_share(blob, **kw)
        except CorruptRecordError as exc:
            return ("error", type(exc), exc.offset, exc.next_offset, exc.topic, exc.partition,
                    comparable(exc.records), exc.share)
    return ("ok", comparable(records), gaps, released)


def assert_share_agrees(compiled, twin, blob, **kw):
    expected = share_outcome(twin, blob, **kw)
    assert share_outcome(compiled, blob, **kw) == expected
    arrow_kw = {k: v for k, v in kw.items() if k not in ("key_deserializer", "value_deserializer")}
    for zero_copy in (False, True):
        assert share_outcome(compiled, blob, arrow=True, zero_copy=zero_copy, **arrow_kw) == share_outcome(
            twin, blob, arrow=True, zero_copy=zero_copy, **arrow_kw)
    return expected


@property_settings(fast_examples=80, slow_examples=3000)
@given(data=st.data())
def test_generated_blobs_and_ranges_agree(both, data):
    compiled, twin = both
    blob, start, end = data.draw(blobs())
    blob = damaged(data, blob)
    kw = dict(
        topic=data.draw(st.sampled_from(["t", "topic-\u00e9"])),
        partition=data.draw(st.integers(0, 5)),
        acquired=data.draw(acquired_ranges(start, end)),
        check_crcs=data.draw(st.booleans()),
        max_decompressed_bytes=data.draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 64, 300])),
    )
    outcome = assert_share_agrees(compiled, twin, blob, **kw)
    # the walk is decode()'s: the same typed error at the same batch, or the
    # same silent stop at a cut tail (the filter only chooses records)
    with using_backend(compiled):
        try:
            R.decode_partition(blob, topic=kw["topic"], partition=kw["partition"], check_crcs=kw["check_crcs"],
                               max_decompressed_bytes=kw["max_decompressed_bytes"])
            plain = ("ok",)
        except CorruptRecordError as exc:
            plain = ("error", type(exc), exc.offset)
    if plain[0] == "error":
        assert outcome[:3] == plain
    else:
        assert outcome[0] == "ok"
    if outcome[0] == "ok":
        handed = [r[3] for r in outcome[1]]
        assert handed == sorted(set(handed))  # increasing, each offset once
        acquired = {o for a, b, _ in kw["acquired"] for o in range(a, b + 1)}
        gap_offsets = {o for a, b in outcome[2] for o in range(a, b + 1)}
        released = {o for a, b in outcome[3] for o in range(a, b + 1)}
        # every acquired offset once: handed out, a gap, or released
        assert set(handed) | gap_offsets | released == acquired
        assert len(handed) + len(gap_offsets) + len(released) == len(acquired)


@property_settings(fast_examples=40, slow_examples=1000)
@given(data=st.data())
def test_flipped_bytes_and_ranges_agree(both, data):
    compiled, twin = both
    blob, start, end = data.draw(blobs(max_batches=3))
    if not blob:
        return
    assert_share_agrees(compiled, twin, flipped(data, blob), topic="t", partition=0,
                        acquired=data.draw(acquired_ranges(start, end)),
                        check_crcs=data.draw(st.sampled_from([False, False, True])))

