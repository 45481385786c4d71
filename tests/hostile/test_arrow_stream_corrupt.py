"""A corrupt record batch in the middle of KafkaConsumer.arrow_stream()
(tests/support/fake_broker.py's FakeBroker serving good batch, bad-CRC batch, good
batch): the typed CorruptRecordError reaches the caller of every reader —
as itself through stream.reader(), named in the message of the error
pyarrow's C-stream import, polars and duckdb raise — the rows before it are
handed out, the position stops at the bad batch, and after seek() past it
poll() delivers the rest: nothing skipped silently, nothing twice."""

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg
from tests.support import require_optional
from tests.support.fake_broker import FakeBroker, serve_log

pa = pytest.importorskip("pyarrow")

TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
BAD = 5  # the offset of the one-record batch with a wrong CRC
LAST = 10
BATCHES = [  # (base offset, bytes)
    (0, bg.record_batch(bg.records_from_values([b"v%d" % i for i in range(BAD)]), base_offset=0)),
    (BAD, bg.bad_crc(bg.record_batch(bg.records_from_values([b"v%d" % BAD]), base_offset=BAD))),
    (BAD + 1, bg.record_batch(bg.records_from_values([b"v%d" % i for i in range(BAD + 1, LAST + 1)]),
                              base_offset=BAD + 1)),
]


@pytest.fixture
def consumer():
    with FakeBroker(topics={TOPIC: 1}, records=LAST + 1) as broker:
        broker.script("Fetch", serve_log(BATCHES))
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=2000,
                                 enable_auto_commit=False, auto_offset_reset="earliest")
        consumer.assign([TP])
        try:
            yield consumer
        finally:
            consumer.close()
        assert broker.errors == []


def _after_the_bad_batch(consumer):
    """poll() from past the bad batch: the rest, each record once."""
    consumer.seek(TP, BAD + 1)
    got = []
    for _ in range(50):
        got.extend(r.offset for r in consumer.poll(timeout_ms=100).get(TP, []))
        if got and got[-1] == LAST:
            break
    return got


def test_reader_reraises_the_typed_error_after_the_rows_before_it(consumer):
    stream = consumer.arrow_stream(timeout_ms=10_000)
    reader = stream.reader()
    first = reader.read_next_batch()
    assert first.column("offset").to_pylist() == list(range(BAD))
    with pytest.raises(errors.CorruptRecordError) as info:
        reader.read_next_batch()
    assert (info.value.topic, info.value.partition, info.value.offset) == (TOPIC, 0, BAD)
    assert stream.error is info.value and not stream.live
    assert consumer.position(TP) == BAD
    assert _after_the_bad_batch(consumer) == list(range(BAD + 1, LAST + 1))




def _read_with(name, stream):
    if name == "pyarrow.from_stream":
        return pa.RecordBatchReader.from_stream(stream).read_all()
    if name == "polars":
        return require_optional("polars", "FASTKC_REQUIRE_POLARS").DataFrame(stream)
    duckdb = require_optional("duckdb", "FASTKC_REQUIRE_DUCKDB")
    return duckdb.sql('select "offset" from stream').fetchall()


# what each reader raises for an error of the stream it reads (the class is
# the reader's; the message carries the fastkc class and message)
_READER_ERRORS = {
    "pyarrow.from_stream": "pyarrow.lib.ArrowInvalid",
    "polars": "polars.exceptions.ComputeError",
    "duckdb": "_duckdb.InvalidInputException",
}


@pytest.mark.parametrize("name", sorted(_READER_ERRORS))
def test_c_stream_readers_raise_an_error_naming_the_fastkc_error(consumer, name):
    stream = consumer.arrow_stream(timeout_ms=10_000)
    with pytest.raises(Exception) as info:
        _read_with(name, stream)
    exc = info.value
    assert "{0}.{1}".format(type(exc).__module__, type(exc).__qualname__) == _READER_ERRORS[name]
    assert isinstance(stream.error, errors.CorruptRecordError)
    # RecordCrcError (a CorruptRecordError), with its topic, partition and offset
    assert "RecordCrcError" in str(exc) and "offset={0}".format(BAD) in str(exc), str(exc)
    # the reader failed as a whole: the rows it pulled before the error were
    # consumed; start_positions says where to go back to
    assert stream.start_positions == {TP: 0}
    assert consumer.position(TP) == BAD
    consumer.seek(TP, stream.start_positions[TP])
    again = consumer.arrow_stream(timeout_ms=10_000).reader()
    assert again.read_next_batch().column("offset").to_pylist() == list(range(BAD))
    with pytest.raises(errors.CorruptRecordError):
        again.read_next_batch()
    assert _after_the_bad_batch(consumer) == list(range(BAD + 1, LAST + 1))


# --- the stream's own rules, on the same fake broker (rows 0..4 are good) -----------------
def test_bad_arguments_are_refused(consumer):
    for kwargs in ({"until": "later"}, {"max_records": 0}, {"batch_records": True}, {"timeout_ms": -1}):
        with pytest.raises(ValueError):
            consumer.arrow_stream(**kwargs)
    consumer.unsubscribe()
    with pytest.raises(errors.IllegalStateError, match="No partitions assigned"):
        consumer.arrow_stream()


def test_close_gives_the_consumer_back_mid_read(consumer):
    stream = consumer.arrow_stream(batch_records=2)
    made_before = consumer.arrow_stream()  # made, not read: nothing held yet
    reader = stream.reader()
    assert reader.read_next_batch().column("offset").to_pylist() == [0, 1]
    with pytest.raises(errors.IllegalStateError, match="being read"):
        consumer.arrow_stream()
    with pytest.raises(errors.IllegalStateError, match="another arrow_stream"):
        made_before.reader().read_next_batch()
    with pytest.raises(errors.IllegalStateError):
        consumer.poll_arrow()
    stream.close()
    assert consumer.position(TP) == 2
    with pytest.raises(errors.IllegalStateError, match="closed"):
        reader.read_next_batch()
    assert consumer.poll_arrow(timeout_ms=5000, max_records=3).column("offset").to_pylist() == [2, 3, 4]


def test_a_pull_on_another_thread_holds_the_consumer_until_the_stream_ends(consumer):
    import threading

    stream = consumer.arrow_stream(until=None, max_records=3, batch_records=1, timeout_ms=5000)
    reader = stream.reader()
    pulled = []
    puller = threading.Thread(target=lambda: pulled.append(reader.read_next_batch()))
    puller.start()
    puller.join(10)
    assert pulled[0].column("offset").to_pylist() == [0]
    with pytest.raises(errors.IllegalStateError, match="arrow_stream"):
        consumer.poll(timeout_ms=0)
    with pytest.raises(errors.IllegalStateError):
        next(iter(consumer))
    assert reader.read_all().column("offset").to_pylist() == [1, 2]  # max_records reached: the end
    assert not stream.live
    assert consumer.poll_arrow(timeout_ms=5000, max_records=2).column("offset").to_pylist() == [3, 4]
