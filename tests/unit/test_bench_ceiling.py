"""fastkc_tools.bench_ceiling.check_blob (= fastkc.records.check_blob, C walk
fkc_check_blob with the twin as oracle): the benchmark ceiling's batch walk.

Its count and next offset must be what the decoder delivers for the same
blob and position (else the ceiling would read a different amount of work
than the clients it bounds), and a damaged batch must be a typed error, not
a miscount. Batches come from the test-only encoder (tests/support/batchgen).
"""
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkc import records as fastkc_records
from fastkc._core import records as _compiled
from fastkc._twin import records as twin
from fastkc.errors import CorruptRecordError, InvalidRecordError, RecordCrcError
from fastkc_tools.bench_ceiling import check_blob
from tests.support import batchgen as bg


def _batches(sizes, codec=bg.NONE, start=0, value=b"v" * 20):
    blob = b""
    offset = start
    for n in sizes:
        blob += bg.record_batch(bg.records_from_values([value] * n), base_offset=offset, codec=codec)
        offset += n
    return blob, offset


def test_counts_every_record_and_ends_past_the_last_batch():
    blob, end = _batches([3, 1, 5], codec=bg.LZ4, start=10)
    assert check_blob(blob, "t", 0, 10) == (9, end)
    assert end == 19


def test_a_batch_below_the_position_counts_only_its_offsets_from_the_position():
    blob, _ = _batches([4, 4])  # offsets 0-3, 4-7
    assert check_blob(blob, "t", 0, 2) == (6, 8)
    assert check_blob(blob, "t", 0, 4) == (4, 8)


def test_control_batches_count_no_records_but_move_the_position():
    blob, _ = _batches([2])
    blob += bg.control_batch(1, base_offset=2, producer_id=7)
    blob += bg.record_batch(bg.records_from_values([b"x"]), base_offset=3)
    assert check_blob(blob, "t", 0, 0) == (3, 4)


def test_a_bad_crc_names_the_batch():
    first, _ = _batches([2])
    second = bg.bad_crc(bg.record_batch(bg.records_from_values([b"a", b"b"]), base_offset=2))
    with pytest.raises(CorruptRecordError) as info:
        check_blob(first + second, "topic-a", 3, 0)
    assert info.value.offset == 2 and info.value.topic == "topic-a" and info.value.partition == 3
    assert "CRC-32C" in info.value.reason
    assert isinstance(info.value, RecordCrcError)


def test_a_flipped_record_byte_is_caught_by_the_crc():
    blob, _ = _batches([3], codec=bg.ZSTD)
    with pytest.raises(CorruptRecordError):
        check_blob(bg.flip(blob, len(blob) - 2), "t", 0, 0)


@pytest.mark.parametrize("cut", [1, 30, 60])
def test_a_short_or_overlong_batch_is_an_error_not_a_read_past_the_end(cut):
    blob, _ = _batches([2])
    with pytest.raises(CorruptRecordError):
        check_blob(blob[:cut], "t", 0, 0)
    too_long = bg.patch(blob, 8, ">i", struct.unpack_from(">i", blob, 8)[0] + 1)
    with pytest.raises(CorruptRecordError, match="does not fit"):
        check_blob(too_long, "t", 0, 0)


def test_legacy_message_sets_are_refused_not_guessed():
    entry = bg.legacy_message(1, 0, None, b"value")
    with pytest.raises(ValueError, match="v2 only"):
        check_blob(entry, "t", 0, 0)


def test_an_empty_blob_is_nothing():
    assert check_blob(b"", "t", 0, 5) == (0, 5)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=6),
       codec=st.sampled_from(bg.CODECS_V2), start=st.integers(min_value=0, max_value=1000),
       skip=st.integers(min_value=0, max_value=60), with_headers=st.booleans())
def test_agrees_with_the_decoder(sizes, codec, start, skip, with_headers):
    blob = b""
    offset = start
    for n in sizes:
        recs = bg.records_from_values([b"%d" % i for i in range(n)],
                                      headers=[("h", b"x")] if with_headers else ())
        blob += bg.record_batch(recs, base_offset=offset, codec=codec)
        offset += n
    position = start + min(skip, offset - start - 1)
    decoded, next_offset = fastkc_records.decode_partition(blob, fetch_offset=position)
    assert check_blob(blob, "t", 0, position) == (len(decoded), next_offset)


def test_a_negative_record_count_is_invalid_not_subtracted():
    blob, _ = _batches([2])
    liar = bg.fix_crc(bg.patch(blob, 57, ">i", -5))
    with pytest.raises(InvalidRecordError, match="RecordCount -5"):
        check_blob(liar, "t", 0, 0)


def test_a_malformed_header_is_invalid_and_named():
    blob, _ = _batches([2], start=7)
    with pytest.raises(InvalidRecordError, match="BatchLength") as info:
        check_blob(bg.patch(blob, 8, ">i", 20), "t", 0, 7)
    assert info.value.offset == 7


# --- the compiled walk against the twin ------------------------------------------------------


def _outcome(fn, blob, position):
    try:
        return ("ok",) + tuple(fn(blob, "t", 1, position))
    except CorruptRecordError as exc:
        return (type(exc).__name__, exc.reason, exc.offset, exc.topic, exc.partition)
    except ValueError as exc:
        return ("ValueError", str(exc))


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=0, max_size=5),
       codec=st.sampled_from(bg.CODECS_V2), start=st.integers(min_value=0, max_value=1 << 40),
       skip=st.integers(min_value=0, max_value=40), control=st.booleans(), legacy=st.booleans(),
       cut=st.integers(min_value=0, max_value=400), flips=st.lists(st.integers(min_value=0), max_size=3),
       patch_at=st.integers(min_value=0, max_value=70), patch_value=st.integers(min_value=-(1 << 31),
                                                                                 max_value=(1 << 31) - 1))
def test_compiled_walk_equals_the_twin(sizes, codec, start, skip, control, legacy, cut, flips, patch_at,
                                       patch_value):
    blob, offset = _batches(sizes, codec=codec, start=start)
    if control:
        blob += bg.control_batch(1, base_offset=offset, producer_id=3)
        offset += 1
    if legacy:
        blob += bg.legacy_message(1, offset, None, b"old")
    position = start + skip
    variants = [blob, blob[:max(0, len(blob) - cut)]]
    if blob:
        damaged = bytearray(blob)
        for f in flips:
            damaged[f % len(damaged)] ^= 0x5A
        variants.append(bytes(damaged))
        if patch_at + 4 <= len(blob):
            patched = bg.patch(blob, patch_at, ">i", patch_value)
            variants += [patched, bg.fix_crc(patched)]
    for variant in variants:
        assert _outcome(_compiled.check_blob, variant, position) == _outcome(twin.check_blob, variant, position)
