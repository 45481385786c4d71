"""Differential tests: the compiled core against the pure-Python twin.

Hypothesis draws blobs from tests/support/batchgen (every codec, legacy
magic 0/1, control batches, committed and aborted transactions, random
offsets, timestamps, leader epochs and headers) and options (fetch_offset,
stop_offset, isolation level, aborted transactions, check_crcs, a small
decompression cap). Both backends, called through fastkc.records, must agree
on everything: the records, the Arrow batch, next_offset, or — for bad
bytes — the error class, its offset, next_offset and the records it carries.
Every prefix of a valid blob and random byte flips must give the same
outcome on both, and must never crash (only CorruptRecordError subclasses
may escape).

FASTKC_SLOW=1 runs many more examples.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc import records as R
from tests.support import batchgen as g
from tests.support import property_settings, using_backend
from tests.support.differential import PIDS, blobs, flipped, outcome


@st.composite
def options(draw, start, end):
    stop = draw(st.one_of(st.none(), st.integers(start, end + 1)))
    return dict(
        topic=draw(st.sampled_from(["t", "topic-\u00e9"])),
        partition=draw(st.integers(0, 5)),
        fetch_offset=draw(st.integers(max(start - 2, 0), end + 1)),
        stop_offset=stop,
        check_crcs=draw(st.booleans()),
        isolation_level=draw(st.sampled_from(["read_uncommitted", "read_committed"])),
        aborted_transactions=draw(
            st.lists(st.tuples(st.sampled_from(PIDS), st.integers(start, end + 1)), max_size=3)
        ),
        max_decompressed_bytes=draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 64, 300])),
    )


def assert_backends_agree(compiled, twin, blob, arrow=True, **kw):
    expected = outcome(twin, blob, **kw)
    assert outcome(compiled, blob, **kw) == expected
    if arrow:
        copied = outcome(compiled, blob, arrow=True, **kw)
        assert copied == outcome(twin, blob, arrow=True, **kw)
        # zero-copy: binary_view key/value (views into blob), the same values
        viewed = outcome(compiled, blob, arrow=True, zero_copy=True, **kw)
        assert viewed == outcome(twin, blob, arrow=True, zero_copy=True, **kw)
        assert _values_only(viewed) == _values_only(copied)
    return expected


def _values_only(result):
    """An Arrow outcome without its schema (zero-copy differs only there)."""
    if result[0] == "ok":
        return ("ok", result[1][1], result[2])
    return result[:-1] + (result[-1][1] if isinstance(result[-1], tuple) else result[-1],)


# --- tests --------------------------------------------------------------------------------------------
@property_settings(fast_examples=80, slow_examples=3000)
@given(data=st.data())
def test_generated_blobs_agree(both, data):
    compiled, twin = both
    blob, start, end = data.draw(blobs())
    kw = data.draw(options(start, end))
    assert_backends_agree(compiled, twin, blob, **kw)
    # the same bytes as a memoryview slice of a bigger buffer
    padded = bytearray(b"\xaa" * 3 + blob + b"\xbb" * 3)
    assert outcome(compiled, memoryview(padded)[3 : 3 + len(blob)], **kw) == outcome(twin, blob, **kw)


@property_settings(fast_examples=8, slow_examples=200)
@given(data=st.data())
def test_every_prefix_agrees(both, data):
    compiled, twin = both
    blob, start, _end = data.draw(blobs(max_batches=3))
    check_crcs = data.draw(st.booleans())
    for cut in range(len(blob) + 1):
        assert_backends_agree(
            compiled, twin, blob[:cut], arrow=(cut % 11 == 0), fetch_offset=start, check_crcs=check_crcs
        )


@property_settings(fast_examples=60, slow_examples=3000)
@given(data=st.data())
def test_random_flips_agree(both, data):
    compiled, twin = both
    blob, start, end = data.draw(blobs(max_batches=3))
    if not blob:
        return
    corrupt = flipped(data, blob)
    kw = dict(
        fetch_offset=start,
        # mostly without CRCs, so the flips reach the parsers and codecs
        check_crcs=data.draw(st.sampled_from([False, False, True])),
        isolation_level=data.draw(st.sampled_from(["read_uncommitted", "read_committed"])),
        aborted_transactions=[(1, start)],
        max_decompressed_bytes=data.draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 500])),
    )
    assert_backends_agree(compiled, twin, corrupt, **kw)


@property_settings(fast_examples=40, slow_examples=1000)
@given(data=st.data())
def test_structural_corruptions_agree(both, data):
    """Targeted corruptions with CRCs fixed up, so they reach the parser:
    a patched size, a batch shortened inside itself, a patched count,
    LastOffsetDelta, attributes or payload byte."""
    compiled, twin = both
    blob, start, _end = data.draw(blobs(max_batches=1))
    if len(blob) < g.V2_HEADER_SIZE or blob[16] != 2:
        return
    field = data.draw(st.sampled_from(["size", "shrink", "count", "lod", "payload", "attributes"]))
    if field == "size":
        bad = g.patch(blob, 8, ">i", data.draw(st.integers(-(1 << 31), len(blob))))
    elif field == "shrink":
        # the batch cut short INSIDE itself, BatchLength and CRC made to agree:
        # a truncated (compressed) payload that must be reported, not skipped
        first_len = 12 + int.from_bytes(blob[8:12], "big")
        new_len = data.draw(st.integers(g.V2_HEADER_SIZE, first_len))
        bad = g.fix_crc(g.patch(blob[:new_len], 8, ">i", new_len - 12))
    elif field == "count":
        bad = g.fix_crc(g.patch(blob, g.V2_COUNT_POS, ">i", data.draw(st.integers(-(1 << 31), (1 << 31) - 1))))
    elif field == "lod":
        bad = g.fix_crc(g.patch(blob, 23, ">i", data.draw(st.integers(-(1 << 31), (1 << 31) - 1))))
    elif field == "attributes":
        bad = g.fix_crc(g.patch(blob, g.V2_ATTRIBUTES_POS, ">h", data.draw(st.integers(-(1 << 15), (1 << 15) - 1))))
    else:
        if len(blob) == g.V2_HEADER_SIZE:
            return
        pos = data.draw(st.integers(g.V2_HEADER_SIZE, len(blob) - 1))
        bad = g.fix_crc(g.flip(blob, pos, data.draw(st.integers(1, 255))))
    for rc in ("read_uncommitted", "read_committed"):
        assert_backends_agree(compiled, twin, bad, fetch_offset=start, isolation_level=rc,
                              aborted_transactions=[(p, start) for p in PIDS])


def test_deserializers_agree(both):
    compiled, twin = both
    blob = g.record_batch(
        [g.Record(key=b"k", value=b"v", headers=[("h", b"1")]), g.Record(key=None, value=None, offset_delta=1)],
        codec=g.LZ4,
    )

    class Full:
        def deserialize(self, topic, headers, data):
            return (topic, tuple(headers), data)

    kw = dict(topic="x", key_deserializer=lambda d: ("plain", d), value_deserializer=Full())
    expected = outcome(twin, blob, **kw)
    assert expected[0] == "ok" and len(expected[1]) == 2
    assert outcome(compiled, blob, **kw) == expected


def test_deserializer_error_before_a_corrupt_batch_agrees(both):
    """A deserializer that fails on an early record, with a corrupt batch
    later in the blob: both backends raise the deserializer's exception (the
    records before the corruption are built, so it runs)."""
    compiled, twin = both

    class Refused(Exception):
        pass

    def picky(data):
        if data == b"bad":
            raise Refused(data)
        return data

    blob = g.record_batch(g.records_from_values([b"ok", b"bad"])) + g.bad_crc(
        g.record_batch(g.records_from_values([b"x"]), base_offset=2)
    )
    for module in (twin, compiled):
        with using_backend(module):
            with pytest.raises(Refused):
                R.decode(blob, value_deserializer=picky)
