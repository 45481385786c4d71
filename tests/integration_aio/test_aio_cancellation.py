"""Cancellation: a getone()/getmany() cancelled by asyncio.wait_for (or
task.cancel()) leaves the consumer usable and loses nothing: every record
still comes out exactly once, in order."""
import asyncio
import time

from tests.support.aio_tools import drain
from tests.support.kafka_tools import Message, produce, unique_name


def _paced_produce(bootstrap, topic, count, chunk=10, pause=0.03):
    from confluent_kafka import Producer

    from tests.support.kafka_tools import producer_config

    producer = Producer(producer_config(bootstrap, **{"linger.ms": 1}))
    for start in range(0, count, chunk):
        for i in range(start, min(start + chunk, count)):
            producer.produce(topic, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        time.sleep(pause)


def test_cancelled_gets_lose_nothing(aio, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    count = 300

    async def scenario(consumers):
        tp = consumers.tp(topic, 0)
        consumer = await consumers.started(auto_offset_reset="earliest")
        consumer.assign([tp])
        # nothing to read yet: both calls are waiting when they are cancelled
        for call in (consumer.getmany(timeout_ms=10_000), consumer.getone()):
            try:
                await asyncio.wait_for(call, 0.3)
            except TimeoutError:
                pass
            else:
                raise AssertionError("a get on an empty topic returned")
        # written in small paced chunks, so the gets often wait (and are cancelled) mid-stream
        writing = asyncio.create_task(asyncio.to_thread(_paced_produce, bootstrap, topic, count))
        got, cancelled = [], 0
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            try:
                if len(got) % 2:
                    got.append(await asyncio.wait_for(consumer.getone(), 0.002))
                else:
                    batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000, max_records=7), 0.003)
                    got.extend(r for records in batch.values() for r in records)
            except TimeoutError:
                cancelled += 1
        await writing
        # a task cancelled outright, then the consumer read to the end
        task = asyncio.create_task(consumer.getone())
        await asyncio.sleep(0.05)
        task.cancel()
        extra = await consumer.getmany(timeout_ms=1000)
        return got, cancelled, extra, await consumer.position(tp)

    got, cancelled, extra, position = aio(scenario, timeout=90)
    assert cancelled >= 10, "the calls were hardly ever cancelled ({0})".format(cancelled)
    assert [(r.offset, r.value) for r in got] == [(i, b"%d" % i) for i in range(count)]
    assert extra == {} and position == count


def test_a_cancelled_getmany_leaves_a_group_member_usable(aio, bootstrap, make_topic):
    topic = make_topic(partitions=2)

    async def scenario(consumers):
        consumer = consumers.new(group_id=unique_name("g"), auto_offset_reset="earliest", enable_auto_commit=False,
                                 session_timeout_ms=6000, heartbeat_interval_ms=300)
        consumer.subscribe([topic])
        await consumer.start()
        for _ in range(5):
            try:
                await asyncio.wait_for(consumer.getmany(timeout_ms=5000), 0.2)
            except TimeoutError:
                pass
        produce(bootstrap, topic, [Message(value=b"x%d" % i, partition=i % 2) for i in range(10)])
        records = await drain(consumer, 10)
        await consumer.commit()
        tps = sorted(consumer.assignment())
        return records, [await consumer.committed(tp) for tp in tps]

    records, committed = aio(scenario)
    assert sorted((r.partition, r.value) for r in records) == sorted((i % 2, b"x%d" % i) for i in range(10))
    assert committed == [5, 5]
