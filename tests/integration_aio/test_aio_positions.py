"""seek, seek_to_beginning/end, position, highwater, last_poll_timestamp,
beginning_offsets, end_offsets, offsets_for_times, pause/resume/paused,
topics, partitions_for_topic."""
import time

import pytest

from tests.support.aio_tools import drain
from tests.support.kafka_tools import Message, produce


def _values(records):
    return [(r.partition, r.offset, r.value) for r in records]


def _write(bootstrap, topic, count, partition=0, start=0, base_timestamp=None):
    return produce(bootstrap, topic, [
        Message(value=b"v%d" % (start + i), partition=partition,
                timestamp=None if base_timestamp is None else base_timestamp + i)
        for i in range(count)])


def test_seek_and_position(aio, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    _write(bootstrap, topic, 20)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp = consumers.tp(topic, 0)
        consumer.assign([tp])
        assert await consumer.position(tp) == 0
        consumer.seek(tp, 12)
        assert await consumer.position(tp) == 12
        at_12 = await consumer.getone()
        assert await consumer.position(tp) == 13
        await consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0
        from_start = await drain(consumer, 20)
        assert await consumer.position(tp) == 20
        consumer.seek(tp, 3)
        again = await consumer.getone()
        assert await consumer.seek_to_end(tp) in (True, None)  # aiokafka answers True (done in time)
        assert await consumer.position(tp) == 20
        _write(bootstrap, topic, 2, start=20)
        after_end = await drain(consumer, 2)
        return at_12, from_start, again, after_end

    at_12, from_start, again, after_end = aio(scenario)
    assert (at_12.offset, at_12.value) == (12, b"v12")
    assert _values(from_start) == [(0, i, b"v%d" % i) for i in range(20)]
    assert (again.offset, again.value) == (3, b"v3")
    assert _values(after_end) == [(0, 20, b"v20"), (0, 21, b"v21")]


def test_seek_refuses_negative_offsets(aio, make_topic):
    topic = make_topic(partitions=1)

    async def scenario(consumers):
        consumer = await consumers.started()
        tp = consumers.tp(topic, 0)
        consumer.assign([tp])
        with pytest.raises(ValueError):
            consumer.seek(tp, -1)

    aio(scenario)


def test_seek_to_without_partitions_means_every_assigned_one(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)
    _write(bootstrap, topic, 5, partition=0)
    _write(bootstrap, topic, 3, partition=1)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp0, tp1 = consumers.tp(topic, 0), consumers.tp(topic, 1)
        consumer.assign([tp0, tp1])
        await consumer.seek_to_end()
        ends = (await consumer.position(tp0), await consumer.position(tp1))
        await consumer.seek_to_beginning()
        starts = (await consumer.position(tp0), await consumer.position(tp1))
        return ends, starts

    assert aio(scenario) == ((5, 3), (0, 0))


def test_highwater_and_last_poll_timestamp(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)
    _write(bootstrap, topic, 7, partition=0)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest")
        tp0, tp1 = consumers.tp(topic, 0), consumers.tp(topic, 1)
        consumer.assign([tp0, tp1])
        before = time.time() * 1000
        await drain(consumer, 7)
        after = time.time() * 1000
        return (consumer.highwater(tp0), consumer.highwater(tp1),
                consumer.last_poll_timestamp(tp0), consumer.last_poll_timestamp(tp1), before, after)

    high0, high1, polled0, polled1, before, after = aio(scenario)
    assert (high0, high1) == (7, 0)
    # the time (ms) of the partition's last fetch response, from this run
    for polled in (polled0, polled1):
        assert before - 1000 <= polled <= after + 1000, (before, polled, after)


def test_unassigned_partition_is_an_illegal_state(aio, make_topic, flavour, reference_deviates):
    reference_deviates("highwater/last_stable_offset/last_poll_timestamp of an unassigned partition are "
                       "`assert`s (AssertionError, gone under python -O); the Java client throws "
                       "IllegalStateException, as aiokafka's own position() does")
    topic = make_topic(partitions=2)

    async def scenario(consumers):
        consumer = await consumers.started()
        consumer.assign([consumers.tp(topic, 0)])
        other = consumers.tp(topic, 1)
        with pytest.raises(flavour.errors.IllegalStateError):
            await consumer.position(other)
        for call in (consumer.highwater, consumer.last_stable_offset, consumer.last_poll_timestamp):
            with pytest.raises(flavour.errors.IllegalStateError):
                call(other)

    aio(scenario)


def test_offsets_lookups(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)
    base = int(time.time() * 1000) - 60_000
    _write(bootstrap, topic, 10, partition=0, base_timestamp=base)
    _write(bootstrap, topic, 4, partition=1, base_timestamp=base + 100)

    async def scenario(consumers):
        # no assignment needed for lookups
        consumer = await consumers.started()
        tp0, tp1 = consumers.tp(topic, 0), consumers.tp(topic, 1)
        beginning = await consumer.beginning_offsets([tp0, tp1])
        end = await consumer.end_offsets([tp0, tp1])
        by_time = await consumer.offsets_for_times({tp0: base + 7, tp1: base + 50})
        late = await consumer.offsets_for_times({tp0: base + 10_000})
        with pytest.raises(ValueError):
            await consumer.offsets_for_times({tp0: -5})
        return beginning, end, by_time, late, tp0, tp1

    beginning, end, by_time, late, tp0, tp1 = aio(scenario)
    assert beginning == {tp0: 0, tp1: 0}
    assert end == {tp0: 10, tp1: 4}
    assert {tp: tuple(v) for tp, v in by_time.items()} == {tp0: (7, base + 7), tp1: (0, base + 100)}
    assert late == {tp0: None}


def test_pause_resume_paused(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)
    _write(bootstrap, topic, 30, partition=0)
    _write(bootstrap, topic, 30, partition=1)

    async def scenario(consumers):
        consumer = await consumers.started(auto_offset_reset="earliest", max_partition_fetch_bytes=1024)
        tp0, tp1 = consumers.tp(topic, 0), consumers.tp(topic, 1)
        consumer.assign([tp0, tp1])
        first = await consumer.getone(tp0)
        consumer.pause(tp0)
        assert consumer.paused() == {tp0}
        # records of tp0 already fetched must not come out while it is paused
        while_paused = await drain(consumer, 30, settle_ms=1000)
        position_paused = await consumer.position(tp0)
        consumer.resume(tp0)
        assert consumer.paused() == set()
        rest = await drain(consumer, 29)
        return first, while_paused, position_paused, rest

    first, while_paused, position_paused, rest = aio(scenario)
    assert (first.partition, first.offset) == (0, 0)
    assert _values(while_paused) == [(1, i, b"v%d" % i) for i in range(30)]
    assert position_paused == 1
    assert _values(rest) == [(0, i, b"v%d" % i) for i in range(1, 30)]


def test_topics_and_partitions_for_topic(aio, make_topic):
    topic = make_topic(partitions=3)
    other = make_topic(partitions=1)

    async def scenario(consumers):
        consumer = await consumers.started(topic, auto_offset_reset="earliest")
        topics = await consumer.topics()
        return topics, consumer.partitions_for_topic(topic), consumer.subscription()

    topics, partitions, subscription = aio(scenario)
    assert {topic, other} <= set(topics)
    assert partitions == {0, 1, 2}
    assert subscription == {topic}
