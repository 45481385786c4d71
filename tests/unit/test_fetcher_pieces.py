"""poll() decodes a fetched blob a piece (whole batches) at a time: the
records, positions and errors must be exactly those of decoding the blob at
once. The piece size is made tiny here so that small blobs have many pieces."""
import pytest

from fastkc import errors
from fastkc import fetcher as fetcher_module
from fastkc.fetcher import _piece_end
from tests.support import batchgen as bg
from tests.unit.test_fetcher import TP0, _answer_fetch, _batch, _positioned


def _blob():
    # offsets 0..10 in five batches; 4..5 is a control (commit) batch
    return (_batch(0, [b"a", b"b"]) + _batch(2, [b"c", b"d"])
            + bg.control_batch(bg.CONTROL_COMMIT, base_offset=4, producer_id=7, leader_epoch=5)
            + _batch(5, [b"e", b"f", b"g"]) + _batch(8, [b"h", b"i", b"j"]))


@pytest.fixture
def decode_calls(monkeypatch):
    """Counts decoder calls and the byte length of what each was given."""
    calls = []
    real = fetcher_module.fastkc_records.decode_partition

    def counting_decode_partition(data, **kwargs):
        calls.append(len(data))
        return real(data, **kwargs)

    monkeypatch.setattr(fetcher_module.fastkc_records, "decode_partition", counting_decode_partition)
    return calls


def _drain(fetcher, max_records):
    polls = []
    while True:
        out = fetcher.fetched_records(max_records)
        if not out:
            return polls
        polls.append(([r.offset for r in out[TP0]], fetcher.state(TP0).position))


@pytest.mark.parametrize("max_records", [1, 2, 3, 500])
def test_pieces_hand_out_what_one_decode_would(monkeypatch, decode_calls, max_records):
    results = {}
    for piece in (2, 10 ** 9):
        monkeypatch.setattr(fetcher_module, "_PIECE_OFFSETS", piece)
        decode_calls.clear()
        client, fetcher = _positioned({0: 1})
        fetcher.send_requests()
        _answer_fetch(client, client.take("Fetch"), {0: {"records": _blob()}})
        results[piece] = _drain(fetcher, max_records)
        assert fetcher.state(TP0).position == 11
        assert fetcher.buffered_bytes() == 0
        assert len(decode_calls) == (1 if piece == 10 ** 9 else 4)  # 0-1 | 2-3 | 4 (control) + 5-7 | 8-10
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


def test_a_corrupt_batch_in_a_later_piece_raises_after_the_records_before_it(monkeypatch):
    monkeypatch.setattr(fetcher_module, "_PIECE_OFFSETS", 2)
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


def test_aborted_transactions_are_decoded_in_one_piece(monkeypatch, decode_calls):
    monkeypatch.setattr(fetcher_module, "_PIECE_OFFSETS", 1)
    client, fetcher = _positioned({0: 0}, isolation_level="read_committed")
    fetcher.send_requests()
    txn = bg.record_batch(bg.records_from_values([b"x"]), base_offset=2, leader_epoch=5, transactional=True,
                          producer_id=9, producer_epoch=0)
    abort = bg.control_batch(bg.CONTROL_ABORT, base_offset=3, producer_id=9, leader_epoch=5)
    blob = _batch(0, [b"a", b"b"]) + txn + abort + _batch(4, [b"c"])
    _answer_fetch(client, client.take("Fetch"), {0: {
        "records": blob, "aborted_transactions": [{"producer_id": 9, "first_offset": 2}]}})
    assert [r.value for r in fetcher.fetched_records(500)[TP0]] == [b"a", b"b", b"c"]
    assert decode_calls == [len(blob)]
    assert fetcher.state(TP0).position == 5


def test_piece_end_cuts_at_batch_boundaries():
    first, second, third = _batch(0, [b"a", b"b"]), _batch(2, [b"c"]), _batch(3, [b"d", b"e", b"f"])
    blob = first + second + third
    assert _piece_end(blob, 0, 1) == len(first)
    assert _piece_end(blob, 0, 2) == len(first)
    assert _piece_end(blob, 0, 3) == len(first) + len(second)
    assert _piece_end(blob, len(first), 1) == len(first) + len(second)
    assert _piece_end(blob, len(first) + len(second), 1) == len(blob)
    assert _piece_end(blob, 0, 10 ** 9) == len(blob)
    assert _piece_end(memoryview(blob), 0, 1) == len(first)


def test_piece_end_leaves_anything_but_whole_v2_batches_in_one_piece():
    legacy = bg.legacy_message(1, 0, b"k", b"v")
    assert _piece_end(legacy + _batch(1, [b"a"]), 0, 1) == len(legacy) + len(_batch(1, [b"a"]))
    good = _batch(0, [b"a"])
    bad_length = bytearray(_batch(1, [b"b"]))
    bad_length[8:12] = (5).to_bytes(4, "big")  # shorter than any v2 batch header
    assert _piece_end(good + bytes(bad_length) + good, len(good), 1) == len(good) * 2 + len(bad_length)
    cut = good + _batch(1, [b"b"])[:30]
    assert _piece_end(cut, 0, 1) == len(good)
    assert _piece_end(cut, len(good), 1) == len(cut)  # the cut tail: the rest, as it is
    assert _piece_end(good[:20], 0, 1) == 20


@pytest.mark.parametrize("seed", range(20))
def test_random_blobs_piece_sizes_and_poll_sizes_match_one_decode(monkeypatch, seed):
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
    monkeypatch.setattr(fetcher_module, "_PIECE_OFFSETS", rng.randrange(1, 10))
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


@pytest.mark.parametrize("piece", [2, 10 ** 9])
def test_records_then_arrow_on_one_fetch_hand_out_each_record_once(monkeypatch, piece):
    # poll() then poll_arrow() on the same buffered fetch: the Arrow side must
    # start at the position, not replay or skip what poll() handed out.
    monkeypatch.setattr(fetcher_module, "_PIECE_OFFSETS", piece)
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
