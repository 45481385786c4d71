"""RecordStream.prepare() (the decode worker's half of a step) against plain
steps: a stream whose next step is prepared ahead of time -- on this thread
or on another one, racing the hand-out -- must hand out exactly what a
stream stepped on demand hands out, at the level the fetcher sees: per
"poll" (records asked for until k or done), the same records, next_offset,
done, and the same typed error on the same poll, for every blob the
differential tests draw (every codec, legacy sets, control batches,
read_committed, cut tails, flipped bytes), step and prepare sizes, and
hold bounds. Pieces of a prepared step that end at a batch boundary use the
C marks (fkc_stream_marks); these tests are what would catch a wrong one."""
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc import records as R
from fastkc.errors import CorruptRecordError
from tests.support import batchgen as g
from tests.support import property_settings, using_backend
from tests.support.differential import PIDS, blobs, comparable, damaged, transactional_blob


def polls(compiled, blob, k, held=None, prepare=None, threaded=False, **kw):
    """[(records, next_offset, done)] per poll of k, ending with an error tuple or ("done", next_offset)."""
    with using_backend(compiled):
        stream = R.record_stream(blob, **kw)
    out = []
    for _ in range(len(blob) + 5):
        if stream.done:
            return out, ("done", stream.next_offset)
        worker = None
        if prepare is not None:
            if threaded:
                worker = threading.Thread(target=stream.prepare, args=(prepare, held))
                worker.start()
            else:
                stream.prepare(prepare, held)
        got = []
        try:
            while len(got) < k and not stream.done:
                chunk = stream.records(k - len(got), held)
                assert len(chunk) <= k - len(got)
                got.extend(comparable(chunk))
                if not chunk:
                    break
        except CorruptRecordError as exc:
            got.extend(comparable(exc.records))
            out.append((got, "error", type(exc), exc.offset, exc.next_offset, exc.reason))
            with pytest.raises(type(exc)):
                stream.records(k, held)
            return out, ("error",)
        finally:
            if worker is not None:
                worker.join(10)
                assert not worker.is_alive()
        out.append((got, stream.next_offset, stream.done))
    raise AssertionError("the stream never finished")


@property_settings(fast_examples=60, slow_examples=2000)
@given(data=st.data())
def test_prepared_steps_hand_out_what_plain_steps_do(compiled_backend, data):
    blob, start, end = data.draw(blobs())
    blob = damaged(data, blob)
    kw = dict(
        topic="t",
        partition=1,
        fetch_offset=data.draw(st.integers(max(start - 1, 0), end + 1)),
        stop_offset=data.draw(st.one_of(st.none(), st.integers(start, end + 1))),
        check_crcs=data.draw(st.booleans()),
        isolation_level=data.draw(st.sampled_from(["read_uncommitted", "read_committed"])),
        aborted_transactions=data.draw(st.lists(st.tuples(st.sampled_from(PIDS), st.integers(start, end + 1)),
                                                max_size=3)),
        max_decompressed_bytes=data.draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 300])),
    )
    held = data.draw(st.sampled_from([None, 0, 1, 200]))
    k = data.draw(st.sampled_from([1, 2, 3, 7, 1024]))
    prepare = data.draw(st.sampled_from([1, 2, 5, 64, 1 << 20]))
    plain = polls(compiled_backend, blob, k, held, **kw)
    assert polls(compiled_backend, blob, k, held, prepare=prepare, **kw) == plain
    assert polls(compiled_backend, blob, k, held, prepare=prepare, threaded=True, **kw) == plain


CODECS = [g.NONE, g.GZIP, g.SNAPPY, g.LZ4, g.ZSTD]


@pytest.mark.parametrize("codec", CODECS, ids=["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 9, 500])
def test_transactions_control_batches_and_cut_tails(compiled_backend, codec, k):
    # control batches and aborted batches between kept ones: a piece ending
    # at a batch boundary must not report the offsets of batches after it
    blob = transactional_blob(codec)
    kw = dict(topic="t", partition=0, isolation_level="read_committed", aborted_transactions=[(2, 3)])
    for cut in (0, 1, 40):
        b = blob[:len(blob) - cut]
        plain = polls(compiled_backend, b, k, **kw)
        for prepare in (1, 4, 8, 1 << 20):
            assert polls(compiled_backend, b, k, prepare=prepare, **kw) == plain, (cut, prepare)


@pytest.mark.parametrize("k", [2, 3, 5, 100])
def test_a_bad_batch_mid_stream_after_a_prepared_step(compiled_backend, k):
    good = [g.record_batch(g.records_from_values([b"v%d" % (5 * i + j) for j in range(5)]), base_offset=5 * i,
                           codec=g.LZ4) for i in range(3)]
    blob = b"".join(good) + g.bad_crc(g.record_batch(g.records_from_values([b"x"]), base_offset=15)) + good[0]
    plain = polls(compiled_backend, blob, k)
    assert plain[1] == ("error",)
    delivered = [r for poll in plain[0] for r in poll[0]]
    assert [r[3] for r in delivered] == list(range(15))  # every record before the bad batch, then the error
    for prepare in (1, 3, 5, 15, 1 << 20):
        assert polls(compiled_backend, blob, k, prepare=prepare) == plain
        assert polls(compiled_backend, blob, k, prepare=prepare, threaded=True) == plain


def test_prepare_keeps_one_step_and_reports_pending(compiled_backend):
    blob = b"".join(g.record_batch(g.records_from_values([b"v"] * 4), base_offset=4 * i, codec=g.ZSTD)
                    for i in range(4))
    with using_backend(compiled_backend):
        stream = R.record_stream(blob)
    assert not stream.pending and stream.prepared == 0
    assert stream.prepare(6) is True
    assert stream.pending and stream.prepared == 6
    assert stream.prepare(6) is False  # one prepared step at a time
    assert stream.next_offset == 0 and not stream.done  # nothing handed out yet
    assert [r.offset for r in stream.records(4)] == [0, 1, 2, 3]
    assert stream.next_offset == 4 and stream.prepared == 2
    assert [r.offset for r in stream.records(2)] == [4, 5]
    assert stream.next_offset == 6 and not stream.pending
    assert stream.prepare(3) is True
    # asking past the prepared step goes on decoding, as one plain step would
    assert [r.offset for r in stream.records(100)] == list(range(6, 16))
    assert stream.done and stream.next_offset == 16
    assert stream.prepare(100) is False
    with pytest.raises(ValueError):
        stream.prepare(0)
    with using_backend(compiled_backend):
        arrow = R.record_stream(blob, arrow=True)
    with pytest.raises(ValueError):
        arrow.prepare(10)


def test_a_codec_failure_raised_in_the_worker_thread_reaches_the_caller(compiled_backend, monkeypatch):
    # A codec host exception that is not a codec's complaint (MemoryError)
    # is kept by the step prepared on the worker and raised to the thread
    # that takes the step, as it is today on the polling thread.
    from fastkc._core import _records

    def boom(src, cap):
        raise MemoryError("boom")

    blob = g.record_batch(g.records_from_values([b"a", b"b"]), codec=g.GZIP)
    monkeypatch.setattr(_records, "_gzip_decompress", boom)
    with using_backend(compiled_backend):
        stream = R.record_stream(blob)
    worker = threading.Thread(target=stream.prepare, args=(100,))
    worker.start()
    worker.join(10)
    with pytest.raises(MemoryError, match="boom"):
        stream.records(10)
