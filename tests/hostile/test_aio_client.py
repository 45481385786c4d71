"""fastkc.aio's client and fetch driver against the fake broker
(tests/support/fake_broker.py): records read exactly once, a broker that goes away,
hostile answers -> typed errors (never a hang, never a crash), cancellation
mid-request leaves the consumer usable and loses nothing."""
import asyncio

import pytest

from fastkc import errors
from fastkc.aio import AIOKafkaConsumer, ConsumerStoppedError, TopicPartition
from tests.support.fake_broker import FakeBroker, delay, garbage, reset, silence

TP = TopicPartition("t", 0)
FAST = dict(request_timeout_ms=1500, fetch_max_wait_ms=50, retry_backoff_ms=50,
            enable_auto_commit=False, auto_offset_reset="earliest")


def _run(coro, timeout=30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _drain(consumer, count, timeout=10.0):
    got = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(got) < count and loop.time() < deadline:
        batch = await consumer.getmany(timeout_ms=200)
        got.extend(r for records in batch.values() for r in records)
    return got


def test_reads_every_record_once():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
            await consumer.start()
            try:
                consumer.assign([TP])
                got = await _drain(consumer, 10)
                more = await consumer.getmany(timeout_ms=200)
                return got, more, await consumer.position(TP)
            finally:
                await consumer.stop()

        got, more, position = _run(scenario())
        assert [(r.offset, r.value) for r in got] == [(i, b"v%d" % i) for i in range(10)]
        assert more == {} and position == 10
        assert broker.errors == []


def test_a_reset_connection_is_reconnected_and_nothing_is_lost():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", reset(), times=2)

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
            await consumer.start()
            try:
                consumer.assign([TP])
                return await _drain(consumer, 10)
            finally:
                await consumer.stop()

        got = _run(scenario())
        assert [r.offset for r in got] == list(range(10))
        assert broker.connections >= 3  # the bootstrap's and two more after the resets


def test_a_broker_gone_for_good_means_empty_gets_then_a_clean_stop():
    broker = FakeBroker(topics={"t": 1}, records=3)

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
        await consumer.start()
        consumer.assign([TP])
        first = await _drain(consumer, 3)
        broker.close()
        later = [await consumer.getmany(timeout_ms=300) for _ in range(3)]
        await consumer.stop()
        with pytest.raises(ConsumerStoppedError):
            await consumer.getmany(timeout_ms=100)
        return first, later

    first, later = _run(scenario())
    assert [r.offset for r in first] == [0, 1, 2]
    assert later == [{}, {}, {}]


def test_garbage_fetch_answers_end_in_a_typed_error():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        broker.script("Fetch", garbage())

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
            await consumer.start()
            try:
                consumer.assign([TP])
                for _ in range(100):
                    await consumer.getmany(timeout_ms=100)
            finally:
                await consumer.stop()

        with pytest.raises(errors.ProtocolParseError):
            _run(scenario())
        assert broker.count("Fetch") >= 3  # the client's tolerance (MAX_PARSE_FAILURES), then the error


def test_a_silent_bootstrap_server_is_a_typed_error_in_time():
    with FakeBroker(topics={"t": 1}) as broker:
        broker.script("Metadata", silence())

        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **dict(FAST, request_timeout_ms=300,
                                                                                   fetch_max_wait_ms=100))
            consumer._config["bootstrap_timeout_ms"] = 1000
            await consumer.start()

        with pytest.raises(errors.NoBrokersAvailable):
            _run(scenario(), timeout=10)


def test_cancelled_lookup_and_get_mid_request_leave_the_consumer_usable():
    with FakeBroker(topics={"t": 1}, records=10) as broker:
        async def scenario():
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
            await consumer.start()
            try:
                broker.script("ListOffsets", delay(400), times=1)
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(consumer.end_offsets([TP]), 0.1)  # cancelled while on the wire
                end = await consumer.end_offsets([TP])
                consumer.assign([TP])
                broker.script("Fetch", delay(300), times=2)
                cancelled = 0
                for _ in range(5):
                    try:
                        await asyncio.wait_for(consumer.getmany(timeout_ms=5000), 0.05)
                    except TimeoutError:
                        cancelled += 1
                got = await _drain(consumer, 10)
                return end, cancelled, got
            finally:
                await consumer.stop()

        end, cancelled, got = _run(scenario())
        assert end == {TP: 10}
        assert cancelled >= 1
        assert [r.offset for r in got] == list(range(10))
