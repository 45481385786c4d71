"""fastkc.aio's decode thread (decode_threads=1, the default): a step's
phase 1 -- CRC check, decompression, parsing -- runs on the consumer's
"fastkc-aio-decode" thread, never on the event loop, and the records come out
exactly as with decode_threads=0 (everything on the loop): every record once,
in order; a corrupt batch in the middle delivers the records before it, then
the typed CorruptRecordError, the position stops at the bad batch, and a
seek past it delivers the rest. Served by tests/support/fake_broker.py's FakeBroker
from crafted batches (tests/support/batchgen.py)."""
import asyncio
import threading

import pytest

import fastkc
from fastkc import errors
from fastkc.aio import AIOKafkaConsumer, TopicPartition
from fastkc.fetch.completed import PrepareArrowStep, PrepareRecordsStep
from tests.support import batchgen as bg
from tests.support.aio_tools import drain
from tests.support.fake_broker import FakeBroker, answer, serve_log

TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
FAST = dict(request_timeout_ms=3000, fetch_max_wait_ms=50, retry_backoff_ms=50,
            enable_auto_commit=False, auto_offset_reset="earliest")

pytestmark = pytest.mark.skipif(fastkc.backend != "c", reason="only the compiled core's streams prepare off-thread")


def _gzip_batches(count, per_batch):
    """Compressible 1 KiB values in gzip batches (the slowest codec to
    decompress): the kind of step that held the loop before."""
    batches = []
    for base in range(0, count, per_batch):
        values = [(b"record %08d " % i) * 78 for i in range(base, min(count, base + per_batch))]
        batches.append((base, bg.record_batch(bg.records_from_values(values), base_offset=base, codec=bg.GZIP)))
    return batches


class _Watch:
    """Which threads ran the decode-ahead jobs of one kind (`kind`: records
    or Arrow steps) the consumer's fetch driver submitted to its executor."""

    def __init__(self, consumer, kind=PrepareRecordsStep):
        self.threads = []
        executor = consumer._engine.fetcher.decode_executor
        submit = executor.submit

        class Watched:
            def __init__(self, job):
                self.job, self.key = job, job.key

            def run(watched):
                self.threads.append(threading.current_thread().name)
                return watched.job.run()

        def watched_submit(job):
            return submit(Watched(job) if isinstance(job, kind) else job)

        executor.submit = watched_submit


@pytest.mark.parametrize("decode_threads", [1, 0])
def test_large_compressed_batches_are_decoded_off_the_loop(decode_threads):
    count = 12_000
    batches = _gzip_batches(count, per_batch=3_000)  # ~3 MB decompressed per batch
    with FakeBroker(topics={TOPIC: 1}, records=count) as broker:
        broker.script("Fetch", serve_log(batches))

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, decode_threads=decode_threads,
                                        max_partition_fetch_bytes=16 * 1024 * 1024, **FAST)
            watch = _Watch(consumer)
            await consumer.start()
            try:
                consumer.assign([TP])
                got = await drain(consumer, count, timeout=20, settle_ms=0)
                steps = dict(consumer._engine.fetcher.machine.decode_steps)
                return got, watch.threads, steps, await consumer.position(TP)
            finally:
                await consumer.stop()

        got, threads, steps, position = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert [r.offset for r in got] == list(range(count))
    assert got[4321].value == b"record 00004321 " * 78
    assert position == count
    if decode_threads:
        assert threads and set(threads) == {"fastkc-aio-decode_0"}, threads
        # every step handed out on the loop came from a prepared one: none decoded there
        assert steps["prepared"] >= count // 4096 and steps["inline"] == 0, steps
    else:
        assert threads == [] and steps == {"prepared": 0, "waited": 0, "inline": 0}


@pytest.mark.timeout(90)  # the spin it guards against never yields to asyncio's own timeouts
@pytest.mark.parametrize("codec", [bg.GZIP, bg.ZSTD, bg.LZ4, bg.NONE])
def test_many_small_batches_over_several_partitions_every_record_once(codec):
    """Steps the size of a take: a take uses a prepared step up and names the
    same fetch for the next one, many times over (a finished preparation
    must never stand for the next one: that spun for ever once). Fetches of
    gzip or zstd batches are prepared on the decode thread; lz4 and
    uncompressed ones, whose phase 1 costs less than the hand-off, are
    decoded on the loop (fastkc.fetch.completed.worth_preparing)."""
    count, partitions = 40 * 512, 3
    batches = [(base, bg.record_batch(bg.records_from_values([b"%d" % i for i in range(base, base + 512)]),
                                      base_offset=base, codec=codec)) for base in range(0, count, 512)]
    with FakeBroker(topics={TOPIC: partitions}, records=count) as broker:
        broker.script("Fetch", serve_log(batches))

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, max_partition_fetch_bytes=256 * 1024,
                                        **FAST)
            watch = _Watch(consumer)
            await consumer.start()
            try:
                tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
                consumer.assign(tps)
                got = await drain(consumer, count * partitions, timeout=20, settle_ms=0)
                return got, dict(consumer._engine.fetcher.machine.decode_steps), watch.threads
            finally:
                await consumer.stop()

        got, steps, threads = asyncio.run(asyncio.wait_for(scenario(), 60))
    for p in range(partitions):
        mine = [r for r in got if r.partition == p]
        assert [r.offset for r in mine] == list(range(count)), p
        assert all(r.value == b"%d" % r.offset for r in mine)
    if codec in (bg.GZIP, bg.ZSTD):
        assert steps["inline"] == 0 and steps["prepared"] > 0, steps
        assert set(threads) == {"fastkc-aio-decode_0"}
    else:
        assert steps["prepared"] == 0 and steps["inline"] > 0 and threads == [], steps


BAD = 5  # the offset of the one-record batch with a wrong CRC
LAST = 10
CORRUPT_LOG = [
    (0, bg.record_batch(bg.records_from_values([b"v%d" % i for i in range(BAD)]), base_offset=0, codec=bg.GZIP)),
    (BAD, bg.bad_crc(bg.record_batch(bg.records_from_values([b"v%d" % BAD]), base_offset=BAD))),
    (BAD + 1, bg.record_batch(bg.records_from_values([b"v%d" % i for i in range(BAD + 1, LAST + 1)]),
                              base_offset=BAD + 1, codec=bg.GZIP)),
]


@pytest.mark.parametrize("form", ["records", "arrow"])
@pytest.mark.parametrize("decode_threads", [1, 0])
def test_a_corrupt_batch_mid_stream_is_a_typed_error_after_the_records_before_it(decode_threads, form):
    with FakeBroker(topics={TOPIC: 1}, records=LAST + 1) as broker:
        broker.script("Fetch", serve_log(CORRUPT_LOG))

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, decode_threads=decode_threads, **FAST)
            await consumer.start()
            try:
                consumer.assign([TP])
                before, error = [], None
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 15
                while error is None and loop.time() < deadline:
                    try:
                        if form == "arrow":
                            arrow = await consumer.getmany_arrow(timeout_ms=200)
                            before.extend(arrow.column("offset").to_pylist())
                        else:
                            batch = await consumer.getmany(timeout_ms=200)
                            before.extend(r.offset for records in batch.values() for r in records)
                    except errors.CorruptRecordError as exc:
                        error = exc
                at_error = await consumer.position(TP)
                consumer.seek(TP, BAD + 1)
                after = await drain(consumer, LAST - BAD, timeout=20, settle_ms=0)
                return before, error, at_error, after, await consumer.position(TP)
            finally:
                await consumer.stop()

        before, error, at_error, after, end = asyncio.run(asyncio.wait_for(scenario(), 60))
        assert broker.errors == []
    assert before == list(range(BAD))
    assert isinstance(error, errors.CorruptRecordError) and error.offset == BAD
    assert at_error == BAD
    assert [(r.offset, r.value) for r in after] == [(i, b"v%d" % i) for i in range(BAD + 1, LAST + 1)]
    assert end == LAST + 1


async def _drain_arrow(consumer, count, limits, timeout=20.0):
    """getmany_arrow() until `count` rows, max_records taken in turn from `limits`."""
    rows = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    calls = 0
    while len(rows) < count and loop.time() < deadline:
        batch = await consumer.getmany_arrow(timeout_ms=200, max_records=limits[calls % len(limits)])
        calls += 1
        assert batch.num_rows <= limits[(calls - 1) % len(limits)]
        rows.extend(zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist(),
                        batch.column("value").to_pylist()))
    return rows


@pytest.mark.timeout(90)
@pytest.mark.parametrize("decode_threads", [1, 0])
def test_getmany_arrow_decodes_heavy_fetches_off_the_loop(decode_threads):
    """Two partitions, one of gzip batches (heavy: decoded on the decode
    thread into a builder of its own, joined to the other's rows) and one of
    lz4 batches (decoded on the loop); changing max_records between calls
    hands a prepared step out in slices. Every row once, in order, with the
    positions at the end."""
    count = 6 * 1000
    heavy = [(base, bg.record_batch(bg.records_from_values([(b"g%07d " % i) * 40 for i in range(base, base + 1000)]),
                                    base_offset=base, codec=bg.GZIP)) for base in range(0, count, 1000)]
    light = [(base, bg.record_batch(bg.records_from_values([(b"g%07d " % i) * 40 for i in range(base, base + 1000)]),
                                    base_offset=base, codec=bg.LZ4)) for base in range(0, count, 1000)]

    def serve(header, body, default):
        for topic in default["responses"]:
            for part in topic["partitions"]:
                wanted = {p["partition"]: p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}
                log = heavy if part["partition_index"] == 1 else light
                offset = wanted.get(part["partition_index"], 0)
                held = [i for i, (base, _) in enumerate(log) if base <= offset]
                part["records"] = b"".join(blob for _, blob in log[held[-1]:]) if held else b""
        return default

    with FakeBroker(topics={TOPIC: 2}, records=count) as broker:
        broker.script("Fetch", answer(serve))

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, decode_threads=decode_threads,
                                        max_partition_fetch_bytes=4 * 1024 * 1024, **FAST)
            watch = _Watch(consumer, PrepareArrowStep)
            await consumer.start()
            try:
                tps = [TopicPartition(TOPIC, p) for p in range(2)]
                consumer.assign(tps)
                rows = await _drain_arrow(consumer, 2 * count, limits=[5000, 700, 10_000, 333])
                return rows, watch.threads, [await consumer.position(tp) for tp in tps]
            finally:
                await consumer.stop()

        rows, threads, positions = asyncio.run(asyncio.wait_for(scenario(), 60))
        assert broker.errors == []
    for p in range(2):
        mine = [(o, v) for part, o, v in rows if part == p]
        assert [o for o, _ in mine] == list(range(count)), p
        assert all(v == (b"g%07d " % o) * 40 for o, v in mine)
    assert positions == [count, count]
    if decode_threads:
        assert threads and set(threads) == {"fastkc-aio-decode_0"}
    else:
        assert threads == []
