"""fastkc.records.decode against kafka-python 3.0.12's own consumer path.

The oracle route: kafka-python's Fetcher builds one
`Fetcher.PartitionRecords(fetch_offset, tp, MemoryRecords(bytes), ...)` per
completed fetch and its `take()` drains `_unpack_records` (CRC checks,
read_committed filtering, control batches, deserializers, ConsumerRecord
construction) behind `itertools.dropwhile` (fetch_offset skipping). We
instantiate exactly that class with the same arguments the Fetcher passes —
plain-callable deserializers wrapped in kafka.serializer.DeserializeWrapper as
Fetcher.__init__ does, aborted transactions as objects with .producer_id and
.first_offset as the FetchResponse gives them — and call take(). Only the
network half of the Fetcher is skipped. `next_fetch_offset` after draining is
compared with fastkc's next_offset, and decode_partition_arrow's columns with
the same records (timestamps as ms*1000, timestampType -1 where kafka-python
says None, headers null where there are none).

The input bytes come from encoders independent of fastkc: kafka-python's
DefaultRecordBatchBuilder / LegacyRecordBatchBuilder / MemoryRecordsBuilder,
aiokafka's (Cython) builders, and tests/support/batchgen for what producers
never write (control batches, LogAppendTime, aborted transactions).

Known, deliberate differences (not exercised here, covered by test_twin.py):
  - legacy records get leader_epoch -1 (Java); kafka-python carries over the
    epoch of an earlier magic-2 batch in the same blob, so no vector puts a
    magic-2 batch before a legacy one;
  - next_offset never moves below fetch_offset (kafka-python's can);
  - malformed input: kafka-python is looser (trailing bytes, odd negative
    lengths) or raises untyped errors; fastkc follows Java and is strict.

Each comparison runs for the active backend (whatever fastkc.backend chose)
and explicitly for the twin and the compiled core.
"""
import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc import _backend
from fastkc import records as R
from tests.support import batchgen as g
from tests.support import property_settings, using_backend

kafka_fetcher = pytest.importorskip("kafka.consumer.fetcher")
from kafka.protocol.consumer import IsolationLevel  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KpDefaultBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder  # noqa: E402
from kafka.serializer import Deserializer, DeserializeWrapper  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

AbortedTxn = collections.namedtuple("AbortedTxn", ["producer_id", "first_offset"])
TS = 1_700_000_000_000


def kafka_python_decode(blob, *, topic="", partition=-1, fetch_offset=0, check_crcs=True,
                        isolation_level="read_uncommitted", aborted_transactions=(),
                        key_deserializer=None, value_deserializer=None):
    def wrap(d):
        if d is None or isinstance(d, Deserializer):
            return d
        return DeserializeWrapper(d)

    pr = kafka_fetcher.Fetcher.PartitionRecords(
        fetch_offset,
        TopicPartition(topic, partition),
        MemoryRecords(bytes(blob)),
        key_deserializer=wrap(key_deserializer),
        value_deserializer=wrap(value_deserializer),
        check_crcs=check_crcs,
        isolation_level=IsolationLevel.build_from(isolation_level),
        aborted_transactions=[AbortedTxn(p, f) for p, f in aborted_transactions],
    )
    records = pr.take()
    assert not pr  # drained: everything came out in one take, no deferred error
    return records, pr.next_fetch_offset


@pytest.fixture(params=["active", "python", "c"])
def decode_backend(request):
    if request.param == "active":
        module = _backend.impl
    elif request.param == "python":
        module = request.getfixturevalue("twin_backend")
    else:
        module = request.getfixturevalue("compiled_backend")
    with using_backend(module):
        yield module


def assert_same(blob, **kw):
    expected, kp_next = kafka_python_decode(blob, **kw)
    out = R.decode_partition(blob, **kw)
    deserialized = kw.get("key_deserializer") or kw.get("value_deserializer")
    assert [tuple(r) for r in out.records] == [tuple(r) for r in expected]
    assert out.next_offset == max(kw.get("fetch_offset", 0), kp_next)
    # decode() is decode_partition().records
    assert R.decode(blob, **kw) == out.records
    if not deserialized:  # Arrow carries the raw bytes
        assert_arrow_same(blob, expected, kp_next, **kw)
    return out


def assert_arrow_same(blob, expected, kp_next, **kw):
    """decode_partition_arrow holds kafka-python's records, column by column."""
    import pyarrow as pa

    out = R.decode_partition_arrow(blob, **kw)
    rb = out.records
    assert rb.schema.equals(R.arrow_schema())
    assert out.next_offset == max(kw.get("fetch_offset", 0), kp_next)
    got = {name: rb.column(name) for name in rb.schema.names}
    got["timestamp"] = got["timestamp"].cast(pa.int64())
    got = {name: col.to_pylist() for name, col in got.items()}
    assert got == {
        "key": [r.key for r in expected],
        "value": [r.value for r in expected],
        "topic": [r.topic for r in expected],
        "partition": [r.partition for r in expected],
        "offset": [r.offset for r in expected],
        "timestamp": [None if r.timestamp is None else r.timestamp * 1000 for r in expected],
        "timestampType": [-1 if r.timestamp_type is None else r.timestamp_type for r in expected],
        "headers": [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in expected],
    }


# --- vectors from kafka-python's builders ----------------------------------------------------
def kp_v2_batch(codec, base_offset, n, *, headers=True, ts=TS, value_size=20):
    b = KpDefaultBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                         producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(n):
        key = None if i % 3 == 1 else b"key-%d" % i
        value = None if i % 5 == 4 else bytes([65 + i % 26]) * (value_size + i)
        hdrs = [("h%d" % i, b"x" * i), ("null", None), ("caf\u00e9", b"")] if headers and i % 2 == 0 else []
        b.append(i, timestamp=ts + i * 7, key=key, value=value, headers=hdrs)
    blob = bytes(b.build())
    # the broker assigns the base offset; it sits outside the CRC
    return g.patch(blob, 0, ">q", base_offset)


V2_CODECS = [0, 1, 2, 3, 4]
LEGACY_CODECS = [0, 1, 2, 3]


@pytest.mark.parametrize("codec", V2_CODECS)
def test_kafka_python_v2_builder_each_codec(decode_backend, codec):
    out = assert_same(kp_v2_batch(codec, 1000, 25), topic="orders", partition=7)
    assert len(out.records) == 25


def test_several_v2_batches_and_fetch_offset_mid_batch(decode_backend):
    blob = b"".join(kp_v2_batch(codec, 100 * (i + 1), 10) for i, codec in enumerate(V2_CODECS))
    for fetch_offset in (0, 100, 105, 109, 110, 250, 304, 509, 510):
        out = assert_same(blob, fetch_offset=fetch_offset)
        assert all(r.offset >= fetch_offset for r in out.records)
    # and with the last batch cut off
    assert_same(blob[:-9], fetch_offset=203)


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_legacy_builder(decode_backend, magic, codec):
    b = KpLegacyBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i in range(6):
        b.append(i, timestamp=TS + i, key=None if i == 2 else b"k%d" % i,
                 value=None if i == 3 else b"value-%d" % i)
    blob = bytes(b.build())
    out = assert_same(blob, topic="legacy", partition=1)
    assert len(out.records) == 6
    assert_same(blob, fetch_offset=3)


def test_memory_records_builder_mixed_blob(decode_backend):
    # legacy first (the order a log upgraded from 0.10 to 0.11 has), then v2
    parts = []
    offset = 0
    for magic, codec in [(0, 0), (0, 1), (1, 3), (1, 2), (2, 0), (2, 4), (2, 2)]:
        mb = MemoryRecordsBuilder(magic, codec, batch_size=1 << 30, offset=offset)
        for i in range(4):
            mb.append(timestamp=TS + offset + i, key=b"k", value=b"v%d" % (offset + i),
                      headers=[("n", b"%d" % i)] if magic == 2 else None)
        mb.close()
        parts.append(bytes(mb.buffer()))
        offset += 4
    blob = b"".join(parts)
    out = assert_same(blob, topic="mix")
    assert [r.offset for r in out.records] == list(range(offset))
    assert_same(blob, fetch_offset=6)


def test_deserializers_match(decode_backend):
    class Upper(Deserializer):
        def deserialize(self, topic, headers, data):
            return None if data is None else (topic, len(headers), data.upper())

    blob = kp_v2_batch(1, 0, 12)
    assert_same(blob, key_deserializer=lambda d: None if d is None else d.decode(),
                value_deserializer=Upper())


def test_check_crcs_false_matches(decode_backend):
    assert_same(kp_v2_batch(3, 0, 5), check_crcs=False)


# --- vectors from aiokafka's builders -------------------------------------------------------------
@pytest.mark.parametrize("codec", V2_CODECS)
def test_aiokafka_v2_builder(decode_backend, codec):
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(30):
        b.append(i, timestamp=TS + i, key=b"a%d" % i if i % 4 else None, value=b"b" * i,
                 headers=[("k", b"v"), ("z", None)] if i % 3 == 0 else [])
    blob = g.patch(bytes(b.build()), 0, ">q", 5000)
    assert len(assert_same(blob).records) == 30
    assert_same(blob, fetch_offset=5017)


# aiokafka refuses to write LZ4 under magic 0 (the KAFKA-3160 frames)
@pytest.mark.parametrize("magic,codec", [(m, c) for m in (0, 1) for c in LEGACY_CODECS if (m, c) != (0, 3)])
def test_aiokafka_legacy_builder(decode_backend, magic, codec):
    from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

    b = LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for i in range(5):
        b.append(i, TS + i, b"k%d" % i if i != 1 else None, b"v" * (i + 1), None)
    blob = bytes(b.build())
    # aiokafka leaves a compressed magic-1 wrapper at offset 0 with inner
    # offsets 0..4, so wrapper − last inner < 0: the "use inner offsets as
    # they are" rule kafka-python and Java both have is exercised here
    assert len(assert_same(blob).records) == 5


# --- vectors only a broker writes (batchgen) ----------------------------------------------------------
def txn_blob():
    def data(base, pid, n=2, codec=g.NONE):
        return g.record_batch(
            g.records_from_values([b"p%d-%d" % (pid, base + i) for i in range(n)], headers=[("h", b"1")]),
            base_offset=base, transactional=True, producer_id=pid, producer_epoch=1, base_sequence=0,
            codec=codec, leader_epoch=3,
        )

    return b"".join([
        data(0, 1), data(2, 2, codec=g.LZ4),
        g.control_batch(g.CONTROL_ABORT, base_offset=4, producer_id=1),
        data(5, 2, n=3, codec=g.ZSTD),
        g.control_batch(g.CONTROL_COMMIT, base_offset=8, producer_id=2),
        g.record_batch(g.records_from_values([b"plain"]), base_offset=9, log_append_time=True,
                       base_timestamp=TS, max_timestamp=TS + 77, leader_epoch=4),
        data(10, 1), g.control_batch(g.CONTROL_COMMIT, base_offset=12, producer_id=1),
    ])


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("aborted", [(), ((1, 0),), ((2, 2),), ((1, 0), (2, 5))])
def test_transactions_and_control_batches(decode_backend, isolation_level, aborted):
    blob = txn_blob()
    for fetch_offset in (0, 3, 9):
        assert_same(blob, isolation_level=isolation_level, aborted_transactions=aborted,
                    fetch_offset=fetch_offset)


record_strategy = st.builds(
    dict,
    key=st.one_of(st.none(), st.binary(max_size=12)),
    value=st.one_of(st.none(), st.binary(max_size=40)),
    headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=6))), max_size=3),
    ts_delta=st.integers(-1000, 1000),
    gap=st.integers(0, 3),
)


@st.composite
def valid_blobs(draw):
    """A random run of valid batches (legacy first, then magic 2)."""
    parts = []
    offset = draw(st.integers(0, 1 << 40))
    for _ in range(draw(st.integers(0, 2))):  # legacy entries
        magic = draw(st.sampled_from([0, 1]))
        codec = draw(st.sampled_from(LEGACY_CODECS))
        msgs = draw(st.lists(record_strategy, min_size=1, max_size=4))
        if codec == g.NONE:
            for m in msgs:
                parts.append(g.legacy_message(magic, offset, m["key"], m["value"], timestamp=TS + m["ts_delta"]))
                offset += 1
        else:
            offset += len(msgs)
            parts.append(g.legacy_wrapper(magic, offset - 1, [(m["key"], m["value"], TS + m["ts_delta"]) for m in msgs],
                                          codec=codec, timestamp=TS,
                                          log_append_time=draw(st.booleans()) and magic == 1))
    for _ in range(draw(st.integers(0, 4))):  # magic 2 batches
        recs = draw(st.lists(record_strategy, max_size=6))
        records, delta = [], 0
        for m in recs:
            delta += m["gap"]
            records.append(g.Record(key=m["key"], value=m["value"], headers=m["headers"],
                                    offset_delta=delta, timestamp_delta=m["ts_delta"]))
            delta += 1
        codec = draw(st.sampled_from(V2_CODECS))
        if not records and codec == g.SNAPPY:
            # kafka-python only recognises xerial framing when more than the
            # 16-byte header is present, so it fails on an empty xerial
            # stream (Java and fastkc decode it to nothing)
            codec = g.NONE
        parts.append(g.record_batch(records, base_offset=offset, codec=codec,
                                    leader_epoch=draw(st.integers(-1, 50)),
                                    log_append_time=draw(st.booleans()),
                                    last_offset_delta=max(delta - 1, 0) + draw(st.integers(0, 2))))
        offset += max(delta, 1) + 2
    blob = b"".join(parts)
    cut = draw(st.one_of(st.just(len(blob)), st.integers(0, len(blob))))
    return blob[:cut]


@property_settings(fast_examples=40, slow_examples=1000)
@given(blob=valid_blobs(), fetch_frac=st.floats(0, 1))
def test_random_valid_blobs_match_kafka_python(blob, fetch_frac, request_backends):
    expected, kp_next = kafka_python_decode(blob)
    offsets = [r.offset for r in expected]
    fetch_offset = offsets[int(fetch_frac * (len(offsets) - 1))] if offsets else 0
    for module in request_backends:
        with using_backend(module):
            assert_same(blob)
            assert_same(blob, fetch_offset=fetch_offset)


@pytest.fixture(params=["python", "c"], scope="module")
def request_backends(request):
    # a hypothesis test may not use a function-scoped fixture that changes
    # state per example, so hand it the module to swap in itself
    if request.param == "python":
        return [request.getfixturevalue("twin_backend")]
    return [request.getfixturevalue("compiled_backend")]


def test_bad_crc_is_decoded_when_checks_are_off(decode_backend):
    # legacy first: after a v2 batch kafka-python would tag it with that epoch
    blob = g.legacy_bad_crc(_legacy_one(1, b"k", b"v")) + g.bad_crc(kp_v2_batch(4, 10, 6))
    out = assert_same(blob, check_crcs=False)
    assert len(out.records) == 7


def _legacy_one(magic, key, value):
    b = KpLegacyBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    b.append(0, timestamp=TS, key=key, value=value)
    return g.patch(bytes(b.build()), 0, ">q", 3)
