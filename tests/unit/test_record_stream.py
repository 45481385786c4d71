"""The resumable decoder (fastkc.records.record_stream) against one whole
decode, and the compiled stream against the twin's, step by step.

For every blob the differential tests draw (every codec, legacy magic 0/1
with compressed wrappers, control batches, read_committed with aborted
transactions, cut tails, flipped bytes) and step sizes k = 1, 7, 1024:
the records of all steps, in order, are exactly those of decode_partition
(and, for a bad batch, the records before it plus the same typed error);
the final next_offset is the same; the C and twin streams give the same
records and next_offset at every step, also with the decompressed-bytes hold
bound that ends steps early. Arrow steps join to the whole Arrow decode, and
a step ends before Arrow's int32 offsets would pass (exercised through the
`base` totals a caller's earlier batches add). The streams' running count of
decompressed bytes (what a poll is charged) agrees between the two at every
step and with the payloads batchgen compressed."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc import records as R
from fastkc.errors import CorruptRecordError, RecordCountLimitError, RecordCrcError
from tests.support import batchgen as g
from tests.support import property_settings, using_backend
from tests.support.differential import PIDS, blobs, comparable, damaged, numbered_values, outcome, transactional_blob

INT32_MAX = (1 << 31) - 1


def _stream_kw(kw):
    return {k: v for k, v in kw.items() if k not in ("arrow",)}


def run_steps(module, blob, k, held=None, arrow=False, **kw):
    """[(step records, next_offset)], then ("error", class, offset, records) or ("done", next_offset)."""
    with using_backend(module):
        stream = R.record_stream(blob, arrow=arrow, **kw)
    steps = []
    for _ in range(len(blob) + 5):
        if stream.done:
            return steps, ("done", stream.next_offset)
        try:
            got = stream.arrow(k, held) if arrow else stream.records(k, held)
        except CorruptRecordError as exc:
            steps.append((comparable(exc.records), exc.next_offset))
            # sticky: asking again raises the same error, with no records
            with pytest.raises(type(exc)):
                stream.arrow(k, held) if arrow else stream.records(k, held)
            assert stream.done
            return steps, ("error", type(exc), exc.offset, exc.next_offset, exc.topic, exc.partition)
        n = got.num_rows if arrow else len(got)
        assert n <= k
        steps.append((comparable(got), stream.next_offset))
        assert n or stream.done, "a step that hands out nothing must be the end"
    raise AssertionError("the stream never finished")


def joined(steps, arrow):
    if not arrow:
        return [r for records, _ in steps for r in records]
    rows = []
    for (_schema, cols), _ in steps:
        names = [name for name, _ in cols]
        values = [v for _, v in cols]
        rows.extend(zip(*values))
    return names, rows if steps else []


def whole_as_rows(whole_records, arrow):
    if not arrow:
        return whole_records
    _schema, cols = whole_records
    return [name for name, _ in cols], list(zip(*[v for _, v in cols]))


def check_against_whole(module, blob, k, arrow=False, held=None, **kw):
    steps, end = run_steps(module, blob, k, held=held, arrow=arrow, **kw)
    whole = outcome(module, blob, arrow=arrow, **kw)
    if whole[0] == "ok":
        assert end == ("done", whole[2])
        got = joined(steps, arrow)
        expected = whole_as_rows(whole[1], arrow)
        if arrow:
            assert got[1] == expected[1]
        else:
            assert got == expected
    else:
        _, cls, offset, next_offset, topic, partition, records = whole
        assert end == ("error", cls, offset, next_offset, topic, partition)
        got = joined(steps, arrow)
        expected = whole_as_rows(records, arrow)
        if arrow:
            assert got[1] == expected[1]
        else:
            assert got == expected
    return steps, end


@property_settings(fast_examples=60, slow_examples=2000)
@given(data=st.data())
def test_steps_join_to_one_decode_and_c_agrees_with_twin(both, data):
    compiled, twin = both
    blob, start, end = data.draw(blobs())
    blob = damaged(data, blob)
    kw = dict(
        topic="t",
        partition=3,
        fetch_offset=data.draw(st.integers(max(start - 1, 0), end + 1)),
        check_crcs=data.draw(st.booleans()),
        isolation_level=data.draw(st.sampled_from(["read_uncommitted", "read_committed"])),
        aborted_transactions=data.draw(st.lists(st.tuples(st.sampled_from(PIDS), st.integers(start, end + 1)),
                                                max_size=3)),
        max_decompressed_bytes=data.draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 300])),
        max_batch_records=data.draw(st.sampled_from([None, 2])),
    )
    held = data.draw(st.sampled_from([None, 0, 1, 200]))
    arrow = data.draw(st.booleans())
    for k in (1, 7, 1024):
        ours = check_against_whole(compiled, blob, k, arrow=arrow, held=held, **kw)
        assert run_steps(twin, blob, k, held=held, arrow=arrow, **kw) == ours
        counted = stepped(compiled, blob, k, held, arrow, **kw)
        assert stepped(twin, blob, k, held, arrow, **_stream_kw(kw)) == counted
        assert [c for _, _, c in counted] == sorted(c for _, _, c in counted)  # a running count


CODECS = [g.NONE, g.GZIP, g.SNAPPY, g.LZ4, g.ZSTD]


@pytest.mark.parametrize("codec", CODECS, ids=["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("k", [1, 7, 1024])
def test_every_codec_read_committed_and_cut_tails(both, codec, k):
    compiled, twin = both
    blob = transactional_blob(codec)
    kw = dict(topic="t", partition=0, isolation_level="read_committed", aborted_transactions=[(2, 3)])
    for module in both:
        steps, end = check_against_whole(module, blob, k, **kw)
        offsets = [r[3] for r in joined(steps, False)]
        assert offsets == list(range(0, 3)) + list(range(7, 9)) + list(range(11, 16)) + list(range(17, 26))
        assert end == ("done", 26)
        assert run_steps(twin, blob, k, **kw) == run_steps(compiled, blob, k, **kw)
        # a cut tail anywhere in the last batch: same records as the whole decode of the cut blob
        last = len(g.record_batch(g.records_from_values(numbered_values(17, 9)), base_offset=17, codec=codec))
        for cut in (1, 16, 40, last - 1):
            check_against_whole(module, blob[:len(blob) - cut], k, **kw)
            check_against_whole(module, blob[:len(blob) - cut], k, arrow=True, **kw)


@pytest.mark.parametrize("k", [1, 7, 1024])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets(both, magic, k):
    compiled, twin = both
    blob = g.legacy_message(magic, 0, b"k", b"a")
    inner = [(None, b"in%d" % i, 1_700_000_000_000) for i in range(1, 6)]
    blob += g.legacy_wrapper(magic, 5, inner, codec=g.GZIP)
    blob += g.legacy_message(magic, 6, None, b"b")
    for module in both:
        steps, end = check_against_whole(module, blob, k)
        assert [r[3] for r in joined(steps, False)] == list(range(7))
        check_against_whole(module, blob, k, arrow=True)
    assert run_steps(twin, blob, k) == run_steps(compiled, blob, k)


def test_a_step_never_decompresses_past_the_hold_bound(both):
    # three compressed batches of 5 records: with a hold bound of 1 byte a
    # step ends after the first batch it finished, whatever k asks
    blob = b"".join(g.record_batch(g.records_from_values(numbered_values(5 * i, 5)), base_offset=5 * i, codec=g.ZSTD)
                    for i in range(3))
    for module in both:
        steps, end = run_steps(module, blob, 1024, held=1)
        assert [len(records) for records, _ in steps] == [5, 5, 5]
        assert [next_offset for _, next_offset in steps] == [5, 10, 15]
        steps, end = run_steps(module, blob, 1024)
        assert [len(records) for records, _ in steps] == [15]
    # the buffers a step holds: the batches it finished (released by the next step)
    held = []
    for module in both:
        with using_backend(module):
            stream = R.record_stream(blob)
        sizes = []
        while not stream.done:
            stream.records(7)
            sizes.append(stream.held_bytes)
        held.append(sizes)
    assert held[0] == held[1] and all(size > 0 for size in held[0])


def test_record_budget_is_per_batch_and_typed(both):
    blob = g.record_batch(g.records_from_values(numbered_values(0, 3))) + \
        g.record_batch(g.records_from_values(numbered_values(3, 5)), base_offset=3, codec=g.LZ4)
    for module in both:
        steps, end = run_steps(module, blob, 2, max_batch_records=4, topic="t", partition=1)
        assert end == ("error", RecordCountLimitError, 3, 3, "t", 1)
        assert [r[3] for r in joined(steps, False)] == [0, 1, 2]


def test_arrow_steps_stop_before_int32_offsets_overflow(both):
    # 10 records with 5-byte keys; the caller's earlier batches already hold
    # INT32_MAX - 12 key bytes: two more keys fit, the third would overflow
    records = [g.Record(key=b"kkkkk", value=b"v", offset_delta=i) for i in range(10)]
    blob = g.record_batch(records)
    results = []
    for module in both:
        with using_backend(module):
            stream = R.record_stream(blob, topic="t", partition=0, arrow=True)
        first = stream.arrow(1024, None, (0, INT32_MAX - 12, 0, 0, 0, 0))
        assert first.num_rows == 2 and not stream.done and stream.next_offset == 2
        assert stream.arrow(1024, None, (0, INT32_MAX - 12 + 10, 0, 0, 0, 0)).num_rows == 0  # full
        rest = stream.arrow(1024)  # a new Arrow batch: no base
        assert rest.num_rows == 8 and stream.done and stream.next_offset == 10
        assert stream.last_totals == (8, 40, 8, 0, 0, 0)
        results.append((first.column("offset").to_pylist(), rest.column("offset").to_pylist()))
    assert results[0] == results[1] == ([0, 1], list(range(2, 10)))


# --- one Arrow batch across partitions: RecordStream.arrow(..., builder=b) ---------------


def run_builder(module, parts, k, held=None, zero_copy=False, counts=None):
    """Every part's stream stepped k records at a time into one builder.
    Returns (per-step log, the finished batch as rows); with a `counts` list,
    each stream's decompressed_bytes after each of its steps is appended."""
    with using_backend(module):
        builder = R.arrow_builder(zero_copy=zero_copy)
        streams = [R.record_stream(blob, arrow=True, **kw) for blob, kw in parts]
    log = []
    for stream in streams:
        for _ in range(10_000):
            if stream.done:
                log.append(("done", stream.next_offset))
                break
            try:
                n = stream.arrow(k, held, None, builder)
            except CorruptRecordError as exc:
                assert not exc.records  # the step's good records stay in the builder
                log.append(("error", type(exc), exc.offset, exc.next_offset, stream.last_totals[0]))
                break
            assert n <= k and (n or stream.done)
            log.append((n, stream.next_offset))
            if counts is not None:
                counts.append(stream.decompressed_bytes)
        else:
            raise AssertionError("the stream never finished")
    rows = builder.num_rows
    batch = builder.finish()
    assert batch.num_rows == rows and builder.num_rows == 0  # finish() empties it
    batch.validate(full=True)
    return log, joined([(comparable(batch), None)], True)


def separate_rows(module, parts, k, held=None):
    """The same parts stepped alone (one batch per step), rows joined."""
    rows = []
    for blob, kw in parts:
        steps, _end = run_steps(module, blob, k, held=held, arrow=True, **kw)
        names, got = joined(steps, True) if steps else (None, [])
        rows.extend(got)
    return rows


@property_settings(fast_examples=15, slow_examples=1000)
@given(data=st.data())
def test_builder_steps_across_partitions_equal_separate_steps_and_twin(both, data):
    compiled = both[0]
    parts = []
    for topic, partition in (("t", 3), ("topic-two", 11), ("t", 4)):
        blob, start, end = data.draw(blobs())
        blob = damaged(data, blob)
        parts.append((blob, dict(
            topic=topic,
            partition=partition,
            fetch_offset=data.draw(st.integers(max(start - 1, 0), end + 1)),
            isolation_level=data.draw(st.sampled_from(["read_uncommitted", "read_committed"])),
            aborted_transactions=data.draw(st.lists(st.tuples(st.sampled_from(PIDS), st.integers(start, end + 1)),
                                                    max_size=3)),
            max_decompressed_bytes=data.draw(st.sampled_from([R.DEFAULT_MAX_DECOMPRESSED_BYTES, 300])),
        )))
    held = data.draw(st.sampled_from([None, 0, 200]))
    for k in (1, 7, 1024):
        # both backends, copying and zero-copy builders (binary_view key and
        # value): the same steps, values and decompressed_bytes after each step
        runs, counted = {}, {}
        for module in both:
            for zero_copy in (False, True):
                how = (module.__name__, zero_copy)
                counted[how] = []
                runs[how] = run_builder(module, parts, k, held, zero_copy, counted[how])
        first = (compiled.__name__, False)
        assert runs[first][1][1] == separate_rows(compiled, parts, k, held)
        for how in runs:
            assert (runs[how], counted[how]) == (runs[first], counted[first]), how


def test_arrow_steps_count_the_batches_parsed_straight_into_their_columns(both):
    # A compressed v2 batch the step can take whole is parsed straight into
    # the columns and its decompressed buffer released at once (held_bytes
    # no longer counts it); a legacy wrapper's buffer goes the descriptor way
    # and is held. Either way the columns now hold the batch's decompressed
    # bytes, so both end the step at max_held_bytes -- else one Arrow step of
    # a fetch of many compressed batches decoded the whole fetch into its
    # columns. (The twin once weighed the two differently from the C step,
    # found by the property test above.)
    values = [b"v" * 60 + bytes([i]) for i in range(7)]
    direct = g.record_batch(g.records_from_values(values), base_offset=0, codec=g.GZIP)
    wrapper = g.legacy_wrapper(1, 6, [(None, v, 1_700_000_000_000) for v in values], codec=g.GZIP)
    tail = g.record_batch(g.records_from_values([b"tail"]), base_offset=7)
    logs = []
    for module in both:
        held_after_first = []
        for first in (direct, wrapper):
            log, (_names, rows) = run_builder(module, [(first + tail, dict(topic="t", partition=0))], 1024, 200)
            assert log == [(7, 7), (1, 8), ("done", 8)]  # the 7 records' ~480 bytes end the step
            log, _ = run_builder(module, [(first + tail, dict(topic="t", partition=0))], 1024)
            assert log == [(8, 8), ("done", 8)]  # no bound: one step
            with using_backend(module):
                stream = R.record_stream(first + tail, topic="t", partition=0, arrow=True)
                assert stream.arrow(1024, 200, None, R.arrow_builder()) == 7
            held_after_first.append(stream.held_bytes)
            logs.append(rows)
        assert held_after_first[0] == 0 and held_after_first[1] > 0
    assert logs[:2] == logs[2:]


def test_builder_rolls_back_a_bad_batch_and_keeps_the_rest(both):
    # partition 1: good; partition 2: good batch, then a batch whose CRC is
    # wrong (a flipped value byte), then a good one never reached
    good1 = g.record_batch(g.records_from_values(numbered_values(0, 4)), base_offset=0)
    first = g.record_batch(g.records_from_values(numbered_values(10, 3)), base_offset=10)
    bad = bytearray(g.record_batch(g.records_from_values(numbered_values(13, 5)), base_offset=13))
    bad[-3] ^= 0x40
    after = g.record_batch(g.records_from_values(numbered_values(18, 2)), base_offset=18)
    parts = [(good1, dict(topic="a", partition=1)), (first + bytes(bad) + after, dict(topic="b", partition=2))]
    results = []
    for module in both:
        log, (names, rows) = run_builder(module, parts, 1024)
        assert log[0] == (4, 4) and log[1] == ("done", 4)
        assert log[2][0] == "error" and log[2][2:] == (13, 13, 3)  # offset, next_offset, rows kept this step
        col = {name: [row[i] for row in rows] for i, name in enumerate(names)}
        assert col["offset"] == [0, 1, 2, 3, 10, 11, 12]
        assert col["topic"] == ["a"] * 4 + ["b"] * 3 and col["partition"] == [1] * 4 + [2] * 3
        assert col["value"] == numbered_values(0, 4) + numbered_values(10, 3)
        results.append((log, rows))
    assert results[0] == results[1]


def test_builder_steps_stop_before_int32_offsets_overflow(both):
    # as test_arrow_steps_stop_before_int32_offsets_overflow, with the
    # caller's earlier key bytes given to the builder and what the builder
    # already holds counted too
    records = [g.Record(key=b"kkkkk", value=b"v", offset_delta=i) for i in range(10)]
    blob = g.record_batch(records)
    results = []
    for module in both:
        with using_backend(module):
            builder = R.arrow_builder((0, INT32_MAX - 12, 0, 0, 0, 0))
            stream = R.record_stream(blob, topic="t", partition=0, arrow=True)
        assert stream.arrow(1, None, None, builder) == 1  # 5 key bytes held by the builder now
        assert stream.arrow(1024, None, None, builder) == 1  # one more fits, the next would pass
        assert not stream.done and stream.next_offset == 2
        assert stream.arrow(1024, None, None, builder) == 0  # full
        first = builder.finish()
        with using_backend(module):
            fresh = R.arrow_builder()
        assert stream.arrow(1024, None, None, fresh) == 8 and stream.done and stream.next_offset == 10
        assert stream.last_totals == (8, 40, 8, 0, 0, 0)
        results.append((first.column("offset").to_pylist(), fresh.finish().column("offset").to_pylist()))
    assert results[0] == results[1] == ([0, 1], list(range(2, 10)))


# --- decompressed_bytes: what the record buffer charges a take (tests/unit/test_take_budget.py) ----
def stepped(module, blob, k, held, arrow, **kw):
    """[(records handed out, next_offset, decompressed_bytes)] per step, to the end or the error."""
    with using_backend(module):
        stream = R.record_stream(blob, arrow=arrow, **kw)
    log = []
    for _ in range(len(blob) + 5):
        if stream.done:
            return log
        try:
            got = stream.arrow(k, held) if arrow else stream.records(k, held)
            n = got.num_rows if arrow else len(got)
        except CorruptRecordError as exc:
            n = exc.records.num_rows if arrow and exc.records is not None else len(exc.records or ())
        log.append((n, stream.next_offset, stream.decompressed_bytes))
    raise AssertionError("the stream never finished")


def _payload(values):
    """The bytes batchgen compresses for a batch of `values` (its records, encoded)."""
    return b"".join(g.encode_record(r) for r in g.records_from_values(values))


def test_decompressed_bytes_count_each_opened_batch_once(both):
    # one batch per codec, then a legacy gzip wrapper: the count grows by
    # each compressed batch's payload as the step that opens it runs, by
    # nothing for an uncompressed one, and never again for the same batch
    batches, expected, offset = [], [], 0
    for codec in CODECS:
        values = numbered_values(offset, 4)
        batches.append(g.record_batch(g.records_from_values(values), base_offset=offset, codec=codec))
        expected.append(0 if codec == g.NONE else len(_payload(values)))
        offset += 4
    inner = [(None, b"in%d" % i, 1_700_000_000_000) for i in range(3)]
    inner_set = b"".join(g.legacy_message(1, i, None, v, timestamp=t) for i, (_, v, t) in enumerate(inner))
    batches.append(g.legacy_wrapper(1, offset + 2, inner, codec=g.GZIP, inner_set=inner_set))
    expected.append(len(inner_set))
    blob = b"".join(batches)
    running = [sum(expected[:i + 1]) for i in range(len(expected))]
    for module in both:
        for arrow in (False, True):
            # steps of 4 records: one batch each (the wrapper's 3 are the 6th step)
            log = stepped(module, blob, 4, None, arrow, topic="t", partition=0)
            assert [c for _, _, c in log] == running
            # steps of 3: a batch opened by one step is not counted again by the next
            log = stepped(module, blob, 3, None, arrow, topic="t", partition=0)
            assert set(c for _, _, c in log) <= set(running) and log[-1][2] == running[-1]
            # one step of everything
            assert stepped(module, blob, 1024, None, arrow, topic="t", partition=0) == [(23, 23, running[-1])]


def test_a_prepared_step_is_counted_from_its_first_hand_out(compiled_backend):
    blob = b"".join(g.record_batch(g.records_from_values(numbered_values(5 * i, 5)), base_offset=5 * i,
                                   codec=g.ZSTD) for i in range(3))
    whole = len(_payload(numbered_values(0, 5))) + len(_payload(numbered_values(5, 5))) + \
        len(_payload(numbered_values(10, 5)))
    with using_backend(compiled_backend):
        stream = R.record_stream(blob)
    assert stream.prepare(1024)
    assert stream.decompressed_bytes == 0  # as of the last hand-out: nothing handed out yet
    assert [r.offset for r in stream.records(2)] == [0, 1]
    assert stream.decompressed_bytes == whole  # the whole prepared step, charged by its first piece
    assert [r.offset for r in stream.records(1024)] == list(range(2, 15))
    assert stream.decompressed_bytes == whole


@pytest.mark.parametrize("zero_copy", [False, True], ids=["copying", "zero_copy"])
def test_a_batch_parsed_straight_into_columns_counts_whoever_keeps_its_buffer(both, zero_copy):
    # A zero-copy builder takes a direct batch's decompressed buffer over
    # while the batch is parsed (its binary_view values point into it); the
    # stream decompressed the batch all the same. The C stream once counted
    # only the buffer it still owned once the batch was parsed, so under
    # zero-copy such a batch was charged neither to decompressed_bytes nor
    # to max_held_bytes, and the step ran on past where the twin ended it.
    values = [b"v" * 60 + bytes([i]) for i in range(7)]
    blob = g.record_batch(g.records_from_values(values), base_offset=0, codec=g.GZIP) + \
        g.record_batch(g.records_from_values([b"tail"]), base_offset=7)
    for module in both:
        log, _ = run_builder(module, [(blob, dict(topic="t", partition=0))], 1024, 200, zero_copy=zero_copy)
        assert log == [(7, 7), (1, 8), ("done", 8)]  # the 7 records' ~480 bytes end the step
        with using_backend(module):
            stream = R.record_stream(blob, topic="t", partition=0, arrow=True)
            builder = R.arrow_builder(zero_copy=zero_copy)
        assert stream.arrow(1024, 200, None, builder) == 7
        assert stream.decompressed_bytes == len(_payload(values))
        assert stream.held_bytes == 0  # the buffer is the columns' (copied, or viewed), not held


# The input with which the property test above failed when run after the
# rest of the unit suite (Hypothesis mixes constants from every imported
# local module into its draws, so its derandomized examples change with
# what was imported first), as it drew it: a batch with a flipped byte; a
# legacy message, empty batches and a control batch; a zstd batch of 3
# records, a legacy gzip wrapper of 4, a control batch. With
# max_held_bytes=200 the zstd batch (parsed straight into the columns) and
# the wrapper (held) end the step before the control batch -- but a
# zero-copy C builder, which takes the zstd buffer over while the batch is
# parsed, did not count it and its step ran on.
FOUND_AFTER_THE_SUITE = [
    (bytes.fromhex(
        "0000000000000000000000310000000002739c1b940000000000000100018bcfe568000000018bcfe56800ffffffffff"
        "ffffffffffffffffff000000000000000000000001000000310000000002739c1b940000000000000000018bcfe56800"
        "0000018bcfe56800ffffffffffffffffffffffffffff000000000000000000000002000000310000000002739c1b9400"
        "00000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff00000000"),
     dict(topic="t", partition=3)),
    (bytes.fromhex(
        "00000000000000000000000ea7ec68030000ffffffffffffffff0000000000000001000000310000000002739c1b9400"
        "00000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff00000000000000000000000200"
        "0000420000000002dba1f4440030000000000000018bcfe568000000018bcfe5680000000000000000010000ffffffff"
        "000000012000000008000000000c000000000000000000000000000003000000310000000002739c1b94000000000000"
        "0000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000000000000000000004000000310000"
        "000002739c1b940000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff00000000"),
     dict(topic="topic-two", partition=11)),
    (bytes.fromhex(
        "00000000000000000000007c000000000254271e0c0004000000020000018bcfe568000000018bcfe56800ffffffffff"
        "ffffffffffffffffff0000000328b52ffd20421102003e00000001010608e6848d51010a32c38cc2a80114c3a941c2a1"
        "1df0acb28c01340000020101040ac3b3c2bc390116c38dc386c383c39044c39c010c0000040101000000000000000006"
        "0000004347859cc701010000018bcfe56800ffffffff0000002d1f8b080000000000000363608003b133fa953719e1dc"
        "ff5000e5321254c1445005336e1500a9d98cac880000000000000000000007000000420000000002dba1f44400300000"
        "00000000018bcfe568000000018bcfe5680000000000000000010000ffffffff000000012000000008000000000c0000"
        "0000000000"),
     dict(topic="t", partition=4)),
]


@pytest.mark.parametrize("k", [1, 7, 1024])
def test_builder_steps_on_the_input_found_after_the_suite(both, k):
    bad_batch = ("error", RecordCrcError, 0, 0, 0)
    if k == 1:
        expected = [bad_batch, (1, 1), (0, 5), ("done", 5)] + [(1, i) for i in range(1, 8)] + [(0, 8), ("done", 8)]
    else:
        expected = [bad_batch, (1, 5), ("done", 5), (7, 7), (0, 8), ("done", 8)]
    runs = []
    for module in both:
        for zero_copy in (False, True):
            counts = []
            log, rows = run_builder(module, FOUND_AFTER_THE_SUITE, k, 200, zero_copy, counts)
            assert log == expected, (module.__name__, zero_copy)
            runs.append((rows, counts))
    assert all(run == runs[0] for run in runs)
