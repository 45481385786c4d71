"""start/stop, async with, async for, getone/getmany (with partitions,
timeout_ms, max_records), assign/assignment, deserializers: every record
against what confluent-kafka's producer wrote."""
import asyncio
import time

import pytest

from tests.support.aio_tools import assert_aio_records_match, drain, run_scenario, sorted_written
from tests.support.consumers import mixed_messages
from tests.support.kafka_tools import CODECS, Message, produce


def _written(bootstrap, topic, count, partitions, **kw):
    base = int(time.time() * 1000) - 100_000
    return sorted_written(produce(bootstrap, topic, mixed_messages(count, partitions, base_timestamp=base, **kw)))


def test_getmany_reads_every_field_exactly(aio, bootstrap, make_topic):
    topic = make_topic(partitions=3)
    written = _written(bootstrap, topic, 90, 3)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tps = [consumers.tp(topic, p) for p in range(3)]
        consumer.assign(tps)
        assert consumer.assignment() == set(tps)
        return await drain(consumer, len(written))

    assert_aio_records_match(aio(scenario), written)


def test_max_records_bounds_each_getmany(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)
    written = _written(bootstrap, topic, 40, 2)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest", max_poll_records=9)
        consumer.assign([consumers.tp(topic, 0), consumers.tp(topic, 1)])
        sizes, got = [], {}
        deadline = time.monotonic() + 30
        while sum(sizes) < len(written) and time.monotonic() < deadline:
            # max_records overrides max_poll_records for one call
            batch = await consumer.getmany(timeout_ms=200, max_records=4 if len(sizes) % 2 else None)
            count = sum(len(v) for v in batch.values())
            if count:
                assert count <= (4 if len(sizes) % 2 else 9), (len(sizes), count)
                sizes.append(count)
                for tp, records in batch.items():
                    got.setdefault(tp, []).extend(records)
        return sizes, [r for tp in sorted(got) for r in got[tp]]

    sizes, records = aio(scenario)
    assert sum(sizes) == len(written) and len(sizes) >= len(written) // 9
    assert_aio_records_match(records, written)


def test_async_with_and_async_for(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=1)
    written = _written(bootstrap, topic, 25, 1)

    async def scenario(consumers):
        consumer = consumers.new(topic, auto_offset_reset="earliest")
        got = []
        async with consumer as entered:
            assert entered is consumer
            async for record in consumer:
                got.append(record)
                if len(got) == len(written):
                    break
        # stopped by __aexit__: every get* call now refuses, pending or new
        with pytest.raises(flavour.errors.ConsumerStoppedError):
            await consumer.getone()
        with pytest.raises(flavour.errors.ConsumerStoppedError):
            await consumer.getmany(timeout_ms=100)
        return got

    assert_aio_records_match(aio(scenario), written)


def test_stop_ends_a_pending_async_for_and_getone(aio, make_topic, flavour):
    topic = make_topic(partitions=1)

    async def scenario(consumers):
        consumer = await consumers.started(topic, auto_offset_reset="earliest")
        tp = consumers.tp(topic, 0)

        async def iterate():
            return [record async for record in consumer]

        iterating = asyncio.create_task(iterate())
        waiting = asyncio.create_task(consumer.getone(tp))
        await asyncio.sleep(1.0)  # both wait on an empty topic
        assert not iterating.done() and not waiting.done()
        await consumer.stop()
        assert await asyncio.wait_for(iterating, 10) == []  # the iteration just ends
        with pytest.raises(flavour.errors.ConsumerStoppedError):
            await asyncio.wait_for(waiting, 10)
        await consumer.stop()  # a second stop() is a no-op

    aio(scenario)


def test_getone_and_getmany_with_partitions(aio, bootstrap, make_topic):
    topic = make_topic(partitions=3)
    written = _written(bootstrap, topic, 60, 3)
    per_partition = {p: [w for w in written if w.partition == p] for p in range(3)}

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp0, tp1, tp2 = (consumers.tp(topic, p) for p in range(3))
        consumer.assign([tp0, tp1, tp2])
        # getone(tp1) takes from partition 1 only, in offset order
        ones = [await consumer.getone(tp1) for _ in range(5)]
        # getmany(tp0, tp2) never returns partition 1
        rest = await drain(consumer, len(per_partition[0]) + len(per_partition[2]), tp0, tp2)
        # what is left of partition 1, through getone() without partitions
        more = [await consumer.getone() for _ in range(len(per_partition[1]) - 5)]
        extra = await consumer.getmany(timeout_ms=300)
        return ones, rest, more, extra

    ones, rest, more, extra = aio(scenario)
    assert_aio_records_match(ones + more, per_partition[1])
    assert_aio_records_match(rest, per_partition[0] + per_partition[2])
    assert extra == {}


def test_assign_replaces_the_assignment(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=2)
    other = make_topic(partitions=1)
    produce(bootstrap, topic, [Message(value=b"p0", partition=0), Message(value=b"p1", partition=1)])
    produce(bootstrap, other, [Message(value=b"o0")])

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp0, tp1, o0 = consumers.tp(topic, 0), consumers.tp(topic, 1), consumers.tp(other, 0)
        consumer.assign([tp0, tp1])
        first = await drain(consumer, 2)
        consumer.assign([o0])  # not incremental: tp0/tp1 are gone
        assert consumer.assignment() == {o0}
        second = await drain(consumer, 1)
        consumer.assign([])
        assert consumer.assignment() == set()
        subscriber = consumers.new(group_id="g-" + topic)
        subscriber.subscribe([topic])
        with pytest.raises(flavour.errors.IllegalStateError):
            subscriber.assign([tp0])
        return first, second

    first, second = aio(scenario)
    assert [(r.partition, r.value) for r in first] == [(0, b"p0"), (1, b"p1")]
    assert [(r.topic, r.value) for r in second] == [(other, b"o0")]


def test_deserializers_see_every_key_and_value(aio, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    written = sorted_written(produce(bootstrap, topic, [
        Message(key=b"k", value=b"v"), Message(key=None, value=None), Message(key=b"", value=b"x")]))

    def deserialized(w):
        return (("K", w.key) if w.key is not None else ("K", None)), (w.value or b"").upper()

    async def scenario(consumers):
        # aiokafka calls a deserializer for every record, None included
        consumer = await consumers.started(
            topic, auto_offset_reset="earliest",
            key_deserializer=lambda raw: ("K", raw), value_deserializer=lambda raw: (raw or b"").upper())
        return await drain(consumer, len(written))

    assert_aio_records_match(aio(scenario), written, deserialized=deserialized)


def test_every_codec(aio, bootstrap, make_topic):
    base = int(time.time() * 1000) - 100_000
    written = {}
    for codec in CODECS:
        topic = make_topic(partitions=1, prefix="codec-" + codec)
        written[topic] = sorted_written(produce(bootstrap, topic, mixed_messages(40, 1, base_timestamp=base, tag=codec),
                                                compression=codec))

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        consumer.assign([consumers.tp(topic, 0) for topic in written])
        return await drain(consumer, sum(len(w) for w in written.values()))

    expected = sorted((w for ws in written.values() for w in ws), key=lambda w: (w.topic, w.partition, w.offset))
    assert_aio_records_match(aio(scenario), expected)


def test_getmany_arrow_matches_getmany(fastkc_aio_flavour, bootstrap, make_topic):
    """fastkc.aio only: getmany_arrow() takes getmany()'s arguments
    (*partitions, timeout_ms, max_records) and returns one pyarrow.RecordBatch
    in poll_arrow()'s schema (fastkc.records.arrow_schema()) holding the
    records getmany() would have returned."""
    pa = pytest.importorskip("pyarrow")
    from fastkc.records import arrow_schema

    topic = make_topic(partitions=2)
    written = _written(bootstrap, topic, 60, 2)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp0, tp1 = consumers.tp(topic, 0), consumers.tp(topic, 1)
        consumer.assign([tp0, tp1])
        batches, rows = [], 0
        deadline = time.monotonic() + 30
        while rows < len(written) and time.monotonic() < deadline:
            batch = await consumer.getmany_arrow(timeout_ms=200, max_records=25)
            assert isinstance(batch, pa.RecordBatch) and batch.num_rows <= 25
            batches.append(batch)
            rows += batch.num_rows
        only_tp1 = await consumer.getmany_arrow(tp1, timeout_ms=200)
        return batches, only_tp1

    batches, only_tp1 = run_scenario(fastkc_aio_flavour, bootstrap, scenario, 60)
    table = pa.Table.from_batches(batches)
    assert table.schema.equals(arrow_schema(), check_metadata=False)
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                     table.column("key").to_pylist(), table.column("value").to_pylist()))
    assert got == [(w.partition, w.offset, w.key, w.value) for w in written]
    assert only_tp1.num_rows == 0  # everything was read already
