"""The C lz4 path (fkc_lz4.c: liblz4 through dlopen, no GIL) against the
Python codec host (python-lz4) it stands in for: on valid frames of every
shape (content size stored or not, block and content checksums, linked
blocks, many blocks, empty) and on broken ones (cut at every byte, trailing
bytes, flipped bytes, a declared size past the cap, output past the cap,
magic-0 producers' KAFKA-3160 header), a batch decodes to the same records
or the same typed error through both. The twin (python-lz4 too) is held to
the C core by the differential tests; this holds the two C-core paths to
each other."""
import os

import lz4.frame
import pytest

from fastkc import records as R
from fastkc._core import _records
from fastkc.errors import CorruptRecordError
from fastkc.structs import ConsumerRecord
from tests.support import batchgen as bg
from tests.support.batchgen import raw_batch

VALUE = ConsumerRecord._fields.index("value")


pytestmark = pytest.mark.skipif(not _records.lz4_implementation().startswith("liblz4"),
                                reason="liblz4.so.1 is not on this system: only the Python host runs")


def _payload(values):
    return b"".join(bg.encode_record(r) for r in bg.records_from_values(values))


VALUES = [b"value-%d-" % i + os.urandom(20) * (i % 5) for i in range(300)]
RAW = _payload(VALUES)


def outcome(batch, cap=R.DEFAULT_MAX_DECOMPRESSED_BYTES, force_host=False):
    _records.force_lz4_host(force_host)
    try:
        out = R.decode_partition(batch, topic="t", partition=0, max_decompressed_bytes=cap,
                                 max_batch_records=1 << 20)
        return ("ok", [tuple(r) for r in out.records], out.next_offset)
    except CorruptRecordError as exc:
        return ("error", type(exc).__name__, exc.offset, exc.next_offset, [tuple(r) for r in exc.records])
    finally:
        _records.force_lz4_host(False)


_ALL_VALUES = len(VALUES)


def same(payload, count=_ALL_VALUES, cap=R.DEFAULT_MAX_DECOMPRESSED_BYTES):
    batch = raw_batch(0, bg.LZ4, payload, count, count - 1)
    native = outcome(batch, cap)
    assert native == outcome(batch, cap, force_host=True)
    return native


FRAMES = {
    "size stored": lz4.frame.compress(RAW, store_size=True),
    "no size (Java's producer)": lz4.frame.compress(RAW, store_size=False),
    "block checksums": lz4.frame.compress(RAW, block_checksum=True),
    "content checksum": lz4.frame.compress(RAW, content_checksum=True, store_size=False),
    "linked blocks, 64 KiB": lz4.frame.compress(RAW * 1, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB),
}


@pytest.mark.parametrize("name", list(FRAMES))
def test_valid_frames_decode_the_same(name):
    got = same(FRAMES[name])
    assert got[0] == "ok" and [r[VALUE] for r in got[1]] == VALUES


def test_a_frame_of_many_blocks_and_one_past_the_first_guess():
    values = [os.urandom(900) for _ in range(600)]  # ~540 KB: several 64 KiB blocks, x2 growth of the buffer
    frame = lz4.frame.compress(_payload(values), store_size=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    got = same(frame, count=600)
    assert got[0] == "ok" and [r[VALUE] for r in got[1]] == values


def test_cut_frames_trailing_bytes_and_flips():
    small = _payload(VALUES[:20])
    frame = lz4.frame.compress(small, store_size=False, content_checksum=True)
    kinds = set()
    for cut in range(len(frame)):
        kinds.add(same(frame[:cut], count=20)[0])
    assert kinds == {"error"}
    assert same(frame + b"\x00", count=20)[:2] == ("error", "RecordDecompressionError")
    assert same(frame + frame, count=20)[:2] == ("error", "RecordDecompressionError")
    for pos in range(0, len(frame), 3):
        broken = bytearray(frame)
        broken[pos] ^= 0x5A
        same(bytes(broken), count=20)


def test_the_cap_holds_on_declared_and_on_produced_sizes():
    sized = lz4.frame.compress(RAW, store_size=True)
    unsized = lz4.frame.compress(RAW, store_size=False)
    for frame in (sized, unsized):
        assert same(frame, cap=len(RAW))[0] == "ok"  # exactly the cap is fine
        assert same(frame, cap=len(RAW) - 1)[:2] == ("error", "DecompressedSizeLimitError")
        assert same(frame, cap=100)[:2] == ("error", "DecompressedSizeLimitError")


def test_an_empty_frame_and_a_zero_byte_cap():
    assert same(lz4.frame.compress(b""), count=1)[0] == "error"  # a batch claiming a record it has not
    assert same(lz4.frame.compress(b"x" * 10), count=1, cap=0)[:2] == ("error", "DecompressedSizeLimitError")


def test_magic0_producers_header_fix_goes_through_the_native_path():
    # KAFKA-3160: the header checksum over the wrong bytes; fkc_codec.c fixes
    # a copy, then hands it to the same primitive
    inner = [(None, b"in%d" % i, 1_700_000_000_000) for i in range(1, 6)]
    blob = bg.legacy_wrapper(0, 5, inner, codec=bg.LZ4)
    native = R.decode_partition(blob, topic="t", partition=0)
    _records.force_lz4_host(True)
    try:
        host = R.decode_partition(blob, topic="t", partition=0)
    finally:
        _records.force_lz4_host(False)
    assert [tuple(r) for r in native.records] == [tuple(r) for r in host.records]
    assert [r.value for r in native.records] == [b"in%d" % i for i in range(1, 6)]


def test_the_implementation_is_reported():
    assert _records.lz4_implementation().startswith("liblz4 1.")
    _records.force_lz4_host(True)
    try:
        assert _records.lz4_implementation() == "python-lz4"
    finally:
        _records.force_lz4_host(False)


def test_one_thread_decoding_every_kind_after_every_other():
    # the C path keeps one liblz4 context per thread: whatever a frame leaves
    # behind (done, failed, given up after its header) must not change how
    # the next one decodes
    small = _payload(VALUES[:20])
    kinds = [(lz4.frame.compress(small, store_size=True), None), (lz4.frame.compress(small, store_size=False), None),
             (lz4.frame.compress(small, store_size=True), 10), (lz4.frame.compress(small, store_size=False), 10),
             (lz4.frame.compress(small, content_checksum=True)[:-3], None),
             (lz4.frame.compress(small, block_checksum=True, store_size=True) + b"x", None)]
    for first, cap1 in kinds:
        for second, cap2 in kinds:
            for frame, cap in ((first, cap1), (second, cap2)):
                same(frame, count=20, cap=cap or R.DEFAULT_MAX_DECOMPRESSED_BYTES)
