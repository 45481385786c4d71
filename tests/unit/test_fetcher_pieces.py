"""poll() decodes a fetched blob in steps through the resumable decoder
(fastkc.records.record_stream): the records, positions and errors must be
exactly those of decoding the blob at once. The step size is made tiny here so
that small blobs take many steps."""
import pytest

from fastkc import errors
from fastkc.fetch import buffer as fetcher_module
from tests.support import batchgen as bg
from tests.support.scripted_fetch import TP0
from tests.support.scripted_fetch import answer_fetch as _answer_fetch
from tests.support.scripted_fetch import batch as _batch
from tests.support.scripted_fetch import positioned as _positioned


def _blob():
    # offsets 0..10 in five batches; 4..5 is a control (commit) batch
    return (_batch(0, [b"a", b"b"]) + _batch(2, [b"c", b"d"])
            + bg.control_batch(bg.CONTROL_COMMIT, base_offset=4, producer_id=7, leader_epoch=5)
            + _batch(5, [b"e", b"f", b"g"]) + _batch(8, [b"h", b"i", b"j"]))


@pytest.fixture
def decode_steps(monkeypatch):
    """Records how many records each decoder step was asked for and gave."""
    steps = []
    real = fetcher_module.fastkc_records.record_stream

    class Counting:
        def __init__(self, stream):
            self._stream = stream

        def records(self, n, held=None):
            out = self._stream.records(n, held)
            steps.append((n, len(out)))
            return out

        def __getattr__(self, name):
            return getattr(self._stream, name)

    monkeypatch.setattr(fetcher_module.fastkc_records, "record_stream",
                        lambda data, **kw: Counting(real(data, **kw)))
    return steps


def _drain(fetcher, max_records):
    polls = []
    while True:
        out = fetcher.fetched_records(max_records)
        if not out:
            return polls
        polls.append(([r.offset for r in out[TP0]], fetcher.state(TP0).position))


@pytest.mark.parametrize("max_records", [1, 2, 3, 500])
def test_steps_hand_out_what_one_decode_would(monkeypatch, decode_steps, max_records):
    results = {}
    for step in (2, 10 ** 9):
        monkeypatch.setattr(fetcher_module, "_STEP_RECORDS", step)
        decode_steps.clear()
        client, fetcher = _positioned({0: 1})
        fetcher.send_requests()
        _answer_fetch(client, client.take("Fetch"), {0: {"records": _blob()}})
        results[step] = _drain(fetcher, max_records)
        assert fetcher.state(TP0).position == 11
        assert fetcher.buffered_bytes() == 0
        # no step gives more than it was asked for, nor more than a poll takes
        assert all(got <= asked <= min(step, max_records) for asked, got in decode_steps)
        assert sum(got for _, got in decode_steps) == 9
    offsets = [o for polled, _ in results[2] for o in polled]
    assert offsets == [1, 2, 3, 5, 6, 7, 8, 9, 10]
    assert [o for polled, _ in results[10 ** 9] for o in polled] == offsets
    if max_records == 500:
        assert results[10 ** 9] == [(offsets, 11)]
    else:
        # positions move with what was handed out; never past it except over
        # the control batch, which has no records
        for polled, position in results[2]:
            assert polled[-1] + 1 <= position <= polled[-1] + 2


def test_a_corrupt_batch_in_a_later_step_raises_after_the_records_before_it(monkeypatch):
    monkeypatch.setattr(fetcher_module, "_STEP_RECORDS", 2)
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    blob = _batch(0, [b"a", b"b"]) + _batch(2, [b"c", b"d"]) + bg.bad_crc(_batch(4, [b"e"]))
    _answer_fetch(client, client.take("Fetch"), {0: {"records": blob}})
    assert [r.offset for r in fetcher.fetched_records(500)[TP0]] == [0, 1, 2, 3]
    assert fetcher.state(TP0).position == 4
    with pytest.raises(errors.CorruptRecordError):
        fetcher.raise_pending()
    assert fetcher.state(TP0).position == 4  # left at the bad batch
    assert fetcher.buffered_bytes() == 0


def test_aborted_transactions_are_honoured_across_steps(monkeypatch, decode_steps):
    # the abort marker is in an earlier step than the aborted data after it
    monkeypatch.setattr(fetcher_module, "_STEP_RECORDS", 1)
    client, fetcher = _positioned({0: 0}, isolation_level="read_committed")
    fetcher.send_requests()
    txn = bg.record_batch(bg.records_from_values([b"x"]), base_offset=2, leader_epoch=5, transactional=True,
                          producer_id=9, producer_epoch=0)
    abort = bg.control_batch(bg.CONTROL_ABORT, base_offset=3, producer_id=9, leader_epoch=5)
    txn2 = bg.record_batch(bg.records_from_values([b"y"]), base_offset=5, leader_epoch=5, transactional=True,
                           producer_id=9, producer_epoch=0)
    blob = _batch(0, [b"a", b"b"]) + txn + abort + _batch(4, [b"c"]) + txn2
    _answer_fetch(client, client.take("Fetch"), {0: {
        "records": blob, "aborted_transactions": [{"producer_id": 9, "first_offset": 2}]}})
    assert [r.value for r in fetcher.fetched_records(500)[TP0]] == [b"a", b"b", b"c", b"y"]
    assert len(decode_steps) == 4 and all(asked == 1 for asked, _ in decode_steps)
    assert fetcher.state(TP0).position == 6


@pytest.mark.parametrize("seed", range(20))
def test_random_blobs_step_sizes_and_poll_sizes_match_one_decode(monkeypatch, seed):
    import random

    rng = random.Random(seed)
    blob, offset, expected = b"", rng.randrange(0, 5), []
    start = offset
    for _ in range(rng.randrange(1, 12)):
        if rng.random() < 0.2:
            blob += bg.control_batch(bg.CONTROL_COMMIT, base_offset=offset, producer_id=3, leader_epoch=5)
            offset += 1
            continue
        values = [b"v%d" % (offset + i) for i in range(rng.randrange(1, 7))]
        blob += _batch(offset, values)
        expected.extend(range(offset, offset + len(values)))
        offset += len(values)
    position = rng.choice([start] + expected)
    expected = [o for o in expected if o >= position]
    max_records = rng.randrange(1, 9)
    monkeypatch.setattr(fetcher_module, "_STEP_RECORDS", rng.randrange(1, 10))
    client, fetcher = _positioned({0: position})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": blob}})
    polls = _drain(fetcher, max_records)
    assert [o for polled, _ in polls for o in polled] == expected
    assert all(len(polled) <= max_records for polled, _ in polls)
    assert fetcher.state(TP0).position == offset
    assert fetcher.buffered_bytes() == 0


def _arrow_offsets(batches):
    return [o for b in batches for o in b.column("offset").to_pylist()]


@pytest.mark.parametrize("step", [2, 10 ** 9])
def test_records_then_arrow_on_one_fetch_hand_out_each_record_once(monkeypatch, step):
    # poll() then poll_arrow() on the same buffered fetch: the Arrow side must
    # start at the position, not replay or skip what poll() handed out.
    monkeypatch.setattr(fetcher_module, "_STEP_RECORDS", step)
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _blob()}})
    first = [r.offset for r in fetcher.fetched_records(3)[TP0]]
    rest = _arrow_offsets(fetcher.fetched_arrow(500))
    assert first + rest == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]
    assert fetcher.state(TP0).position == 11


def test_arrow_then_records_on_one_fetch_hand_out_each_record_once():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _blob()}})
    first = _arrow_offsets(fetcher.fetched_arrow(3))
    rest = [r.offset for r in fetcher.fetched_records(500)[TP0]]
    assert first + rest == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]
    assert fetcher.state(TP0).position == 11
