"""What the property tests of the record decoders share: hypothesis
strategies for record-batch blobs (tests/support/batchgen.py: every codec,
legacy magic 0/1, control batches, committed and aborted transactions, random
offsets, timestamps, leader epochs and headers), ways to damage them, and the
outcome of one backend (the compiled core or the twin) on a blob, in a form
that compares with ==. Used by test_differential, test_record_stream,
test_prepared_steps and test_share_decode."""
from hypothesis import strategies as st

from fastkc import records as R
from fastkc.errors import CorruptRecordError
from tests.support import batchgen as g
from tests.support import using_backend

TS = 1_700_000_000_000
PIDS = [1, 2, 3]


# --- strategies --------------------------------------------------------------------------------------
headers_st = st.lists(
    st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8))), max_size=3
)
blob_st = st.one_of(st.none(), st.binary(max_size=24))


@st.composite
def v2_batch(draw, base_offset):
    """One magic-2 batch at base_offset; returns (bytes, offsets it spans)."""
    kind = draw(st.sampled_from(["data", "data", "data", "txn", "control"]))
    pid = draw(st.sampled_from(PIDS))
    codec = draw(st.sampled_from(g.CODECS_V2))
    common = dict(
        base_offset=base_offset,
        leader_epoch=draw(st.integers(-1, 1 << 20)),
        base_timestamp=draw(st.one_of(st.just(TS), st.integers(-1, 1 << 45))),
        codec=codec,
        log_append_time=draw(st.booleans()),
        snappy_framing=draw(st.sampled_from(["xerial", "raw"])),
    )
    if kind == "control":
        blob = g.control_batch(
            draw(st.sampled_from([g.CONTROL_ABORT, g.CONTROL_COMMIT])), producer_id=pid, **common
        )
        return blob, 1
    records = []
    delta = 0
    for _ in range(draw(st.integers(0, 5))):
        delta += draw(st.integers(0, 2))
        records.append(
            g.Record(
                key=draw(blob_st),
                value=draw(blob_st),
                headers=draw(headers_st),
                offset_delta=delta,
                timestamp_delta=draw(st.integers(-5000, 5000)),
            )
        )
        delta += 1
    extra = dict(last_offset_delta=max(delta - 1, 0) + draw(st.integers(0, 2)))
    if kind == "txn":
        extra.update(transactional=True, producer_id=pid, producer_epoch=0, base_sequence=0)
    elif draw(st.booleans()):
        extra.update(producer_id=pid, producer_epoch=0, base_sequence=0)  # idempotent only
    return g.record_batch(records, **common, **extra), extra["last_offset_delta"] + 1


@st.composite
def legacy_entry(draw, offset):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from(g.CODECS_LEGACY))
    if codec == g.NONE:
        blob = g.legacy_message(
            magic, offset, draw(blob_st), draw(blob_st),
            timestamp=draw(st.integers(-1, 1 << 45)), log_append_time=draw(st.booleans()),
        )
        return blob, 1
    inner = draw(st.lists(st.tuples(blob_st, blob_st, st.integers(-1, 1 << 45)), min_size=1, max_size=4))
    blob = g.legacy_wrapper(
        magic, offset + len(inner) - 1, inner, codec=codec, timestamp=TS,
        log_append_time=draw(st.booleans()), snappy_framing=draw(st.sampled_from(["xerial", "raw"])),
    )
    return blob, len(inner)


@st.composite
def blobs(draw, max_batches=5):
    offset = draw(st.one_of(st.integers(0, 100), st.integers(0, 1 << 50)))
    start = offset
    parts = []
    for _ in range(draw(st.integers(0, max_batches))):
        if draw(st.integers(0, 4)) == 0:
            blob, span = draw(legacy_entry(offset))
        else:
            blob, span = draw(v2_batch(offset))
        parts.append(blob)
        offset += span + draw(st.integers(0, 2))
    return b"".join(parts), start, offset


def flipped(data, blob):
    """`blob` (not empty) with 1-4 random bytes XORed with random masks."""
    corrupt = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(blob) - 1))
        corrupt[pos] ^= data.draw(st.integers(1, 255))
    return bytes(corrupt)


def damaged(data, blob):
    """`blob` as a broker or the network may hand it over: half the time cut
    at any byte, a quarter of the rest with one byte flipped (hostile tails
    and corruption for the stream property tests)."""
    if data.draw(st.booleans()):
        blob = blob[:data.draw(st.integers(0, len(blob)))]
    if blob and data.draw(st.integers(0, 3)) == 0:
        corrupt = bytearray(blob)
        corrupt[data.draw(st.integers(0, len(blob) - 1))] ^= data.draw(st.integers(1, 255))
        blob = bytes(corrupt)
    return blob


# --- comparing outcomes -----------------------------------------------------------------------------
def outcome(module, blob, arrow=False, **kw):
    """What one backend makes of blob: ("ok", records, next_offset) or
    ("error", class, offset, next_offset, records). Anything that is not a
    CorruptRecordError propagates and fails the test (a crash)."""
    fn = R.decode_partition_arrow if arrow else R.decode_partition
    if arrow:
        kw = {k: v for k, v in kw.items() if k not in ("key_deserializer", "value_deserializer")}
    with using_backend(module):
        try:
            out = fn(blob, **kw)
        except CorruptRecordError as exc:
            return ("error", type(exc), exc.offset, exc.next_offset, exc.topic, exc.partition, comparable(exc.records))
    return ("ok", comparable(out.records), out.next_offset)


def comparable(records):
    """Records (a list of tuples) or an Arrow batch (schema and columns) in a
    form that compares with ==."""
    if isinstance(records, list):
        return [tuple(r) for r in records]
    # a pyarrow.RecordBatch: its schema and every column's values (int64 view
    # of the timestamps, so out-of-range dates cannot break the comparison)
    import pyarrow as pa

    cols = []
    for name in records.schema.names:
        col = records.column(name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        cols.append((name, col.to_pylist()))
    return (str(records.schema), tuple(cols))


def numbered_values(base, n):
    """b"v<offset>" for n offsets from base."""
    return [b"v%d" % (base + i) for i in range(n)]


def transactional_blob(codec):
    """Committed and aborted transactions interleaved with plain batches:
    the abort marker of producer 2 sits between its aborted batches and
    later ones that must be kept."""
    parts = [g.record_batch(g.records_from_values(numbered_values(0, 3)), base_offset=0, codec=codec)]
    parts.append(g.record_batch(g.records_from_values(numbered_values(3, 4)), base_offset=3, codec=codec,
                                transactional=True, producer_id=2, producer_epoch=0))
    parts.append(g.record_batch(g.records_from_values(numbered_values(7, 2)), base_offset=7, codec=codec,
                                transactional=True, producer_id=1, producer_epoch=0))
    parts.append(g.control_batch(g.CONTROL_ABORT, base_offset=9, producer_id=2))
    parts.append(g.control_batch(g.CONTROL_COMMIT, base_offset=10, producer_id=1))
    parts.append(g.record_batch(g.records_from_values(numbered_values(11, 5)), base_offset=11, codec=codec,
                                transactional=True, producer_id=2, producer_epoch=0))
    parts.append(g.control_batch(g.CONTROL_COMMIT, base_offset=16, producer_id=2))
    parts.append(g.record_batch(g.records_from_values(numbered_values(17, 9)), base_offset=17, codec=codec))
    return b"".join(parts)


