"""The fetch buffer's Arrow takes with a Schema Registry deserializer
(RecordBuffer.fetched_arrow): a take ends where the value type changes or a
row fails, the rows after it are given back (their partition fetched again
from the first of them), and a take that starts at a bad row raises with
the position left on it, so seek() past it goes on. Against scripted Fetch
answers (tests/support/scripted_fetch.py); the payloads are fastavro's."""
import pytest

from fastkc.schema_registry import AvroDeserializer, PayloadDecodeError, frame_schema_id
from tests.support.fake_registry import V1, V2, event_registry, framed_value
from tests.support.scripted_fetch import TP0, TP1, answer_fetch, batch, fetch_offsets, positioned

pa = pytest.importorskip("pyarrow")


@pytest.fixture
def fetcher_on():
    made = []

    def make(offsets, **configs):
        client, fetcher = positioned(offsets, **configs)
        made.append(fetcher)
        return client, fetcher

    yield make
    for fetcher in made:
        fetcher.close_worker()


def _answer(client, partitions):
    fetcher_request = client.take("Fetch")
    answer_fetch(client, fetcher_request, {p: {"records": blob} for p, blob in partitions.items()})
    return fetch_offsets(fetcher_request)


def test_a_schema_change_ends_the_take_and_the_rest_is_fetched_again(fetcher_on):
    client, fetcher = fetcher_on({0: 0})
    avro = AvroDeserializer(event_registry())
    fetcher.send_requests()
    values = [framed_value(1, V1, {"id": i, "tag": None}) for i in range(3)] + \
             [framed_value(2, V2, {"id": i, "tag": None, "score": 1.0}) for i in range(3, 5)]
    _answer(client, {0: batch(0, values)})
    [first] = fetcher.fetched_arrow(100, None, None, avro)
    assert first.column("offset").to_pylist() == [0, 1, 2]
    assert first.column("value").to_pylist() == [{"id": i, "tag": None} for i in range(3)]
    # the V2 rows went back: the position is the first of them, nothing is buffered
    assert fetcher.state(TP0).position == 3 and not fetcher.has_buffered()
    assert fetcher.metrics["records-consumed-total"] == 3
    fetcher.send_requests()
    assert _answer(client, {0: batch(3, values[3:])}) == {0: 3}
    [second] = fetcher.fetched_arrow(100, None, None, avro)
    assert second.column("offset").to_pylist() == [3, 4]
    assert second.schema.field("value").type.num_fields == 3
    assert fetcher.state(TP0).position == 5


def test_a_bad_row_is_raised_by_the_take_that_starts_at_it_and_seek_goes_past(fetcher_on):
    client, fetcher = fetcher_on({0: 0, 1: 0})
    avro = AvroDeserializer(event_registry())
    good = [framed_value(1, V1, {"id": i, "tag": "g"}) for i in range(4)]
    corrupt = frame_schema_id(1) + b"\x02\x07"
    fetcher.send_requests()
    _answer(client, {0: batch(0, good[:2] + [corrupt] + good[2:]), 1: batch(0, good[:1])})
    [first] = fetcher.fetched_arrow(100, None, None, avro)
    taken = list(zip(first.column("partition").to_pylist(), first.column("offset").to_pylist()))
    # partition 0's rows before the bad one; partition 1's row, after it in the take, went back too
    assert taken[:2] == [(0, 0), (0, 1)] and (0, 2) not in taken
    assert fetcher.state(TP0).position == 2
    position_1 = fetcher.state(TP1).position
    assert position_1 == (1 if (1, 0) in taken else 0)
    fetcher.send_requests()
    _answer(client, {0: batch(2, [corrupt] + good[2:])})
    with pytest.raises(PayloadDecodeError) as info:
        fetcher.fetched_arrow(100, [TP0], None, avro)
    assert (info.value.partition, info.value.offset) == (0, 2)
    assert fetcher.state(TP0).position == 2  # nothing after it handed out
    fetcher.seek(TP0, 3)
    fetcher.send_requests()
    _answer(client, {0: batch(3, good[2:])})
    [after] = fetcher.fetched_arrow(100, [TP0], None, avro)
    assert after.column("offset").to_pylist() == [3, 4]
    assert after.column("value").to_pylist() == [{"id": 2, "tag": "g"}, {"id": 3, "tag": "g"}]


def test_without_an_arrow_deserializer_the_take_is_raw(fetcher_on):
    client, fetcher = fetcher_on({0: 0})
    fetcher.send_requests()
    values = [framed_value(1, V1, {"id": 1, "tag": None}), framed_value(2, V2, {"id": 2, "tag": None, "score": 0.0})]
    _answer(client, {0: batch(0, values)})
    [raw] = fetcher.fetched_arrow(100, None, None, lambda b: b)
    assert raw.column("value").to_pylist() == values and fetcher.state(TP0).position == 2


def test_a_zero_copy_take_decodes_its_binary_view_values(fetcher_on):
    """arrow_zero_copy=True: the take's key and value columns are
    binary_view, which pyarrow's binary_slice has no kernel for; the
    deserializer reads them as binary (they raised ArrowNotImplementedError)."""
    client, fetcher = fetcher_on({0: 0}, arrow_zero_copy=True)
    avro = AvroDeserializer(event_registry())
    fetcher.send_requests()
    data = [{"id": i, "tag": "a tag longer than a view's twelve inline bytes" if i % 2 else None} for i in range(4)]
    _answer(client, {0: batch(0, [framed_value(1, V1, d) for d in data])})
    [take] = fetcher.fetched_arrow(100, None, None, avro)
    assert take.column("offset").to_pylist() == [0, 1, 2, 3]
    assert take.column("value").to_pylist() == data
    assert fetcher.state(TP0).position == 4
