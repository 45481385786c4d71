"""Host names from the wire that DNS cannot carry (issue 23, item 4).

A Metadata answer that advertises a broker at a host name longer than 253
bytes, with a label longer than 63 bytes or with an empty label is handled as
the port-70000 case is (tests/hostile/test_stages.py): the broker is left out
with a warning, its partitions look leaderless, and a call that needs it ends
in a typed error in time — never the resolver's bare UnicodeError. A
connection handed such an address (whoever passed it on) fails with a typed
KafkaConnectionError.
"""
import asyncio
import logging
import time

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.aio import AIOKafkaConsumer
from fastkc.config import consumer_config
from fastkc.conn import BrokerConnection
from fastkc.net.aio import AioConnection
from fastkc.structs import TopicPartition
from tests.hostile import kit

TP = TopicPartition("t", 0)
BAD_NODE = 2
BAD_HOSTS = {
    "name over 253 bytes": ".".join(["h" * 60] * 5),  # 304 bytes, every label legal
    "label over 63 bytes": "a" * 64 + ".example.com",
    "empty label": "a..b",
    "leading dot": ".a.example.com",
}
FAST = dict(request_timeout_ms=300, fetch_max_wait_ms=100, retry_backoff_ms=20, enable_auto_commit=False)
BOUND_S = 1.0 + 1.0  # the call's timeout, plus scheduling slack on a shared machine


def _advertising(host):
    """Metadata answers naming a second broker at `host` as the partitions' leader."""
    def rewrite(header, body, default):
        default["brokers"].append({"node_id": BAD_NODE, "host": host, "port": 9092, "rack": None})
        for topic in default["topics"]:
            for partition in topic["partitions"]:
                partition.update(leader_id=BAD_NODE, replica_nodes=[BAD_NODE], isr_nodes=[BAD_NODE])
        return default
    return kit.answer(rewrite)


@pytest.fixture
def broker():
    b = kit.FakeBroker(topics={"t": 1}, records=5, sasl=None)
    yield b
    b.close()
    assert not b.errors, "the fake broker failed while serving: {0!r}".format(b.errors)


def _dropped_with_a_warning(caplog, host):
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    return any("ignoring broker {0}".format(BAD_NODE) in w and host[:40] in w for w in warnings)


@pytest.mark.parametrize("host", BAD_HOSTS.values(), ids=BAD_HOSTS.keys())
def test_kafka_consumer_drops_the_broker_and_raises_a_typed_error(broker, caplog, host):
    broker.script("Metadata", _advertising(host))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, bootstrap_timeout_ms=800, reconnect_backoff_ms=20,
                             reconnect_backoff_max_ms=200, **FAST)
    try:
        began = time.monotonic()
        with caplog.at_level(logging.WARNING), pytest.raises(errors.KafkaError):
            consumer.end_offsets([TP], timeout_ms=1000)
        assert time.monotonic() - began < BOUND_S
        assert _dropped_with_a_warning(caplog, host)
        # the rest of the cluster still serves
        assert consumer.topics() == {"t"}
    finally:
        consumer.close()


@pytest.mark.parametrize("host", BAD_HOSTS.values(), ids=BAD_HOSTS.keys())
def test_aio_consumer_drops_the_broker_and_raises_a_typed_error(broker, caplog, host):
    broker.script("Metadata", _advertising(host))

    async def scenario():
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, **FAST)
        await consumer.start()
        try:
            began = time.monotonic()
            with pytest.raises(errors.KafkaError):
                await consumer.end_offsets([TP])
            return time.monotonic() - began
        finally:
            await consumer.stop()

    with caplog.at_level(logging.WARNING):
        elapsed = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert elapsed < 0.3 * 2 + BOUND_S  # request_timeout_ms bounds the aio look-up
    assert _dropped_with_a_warning(caplog, host)


@pytest.mark.parametrize("host", BAD_HOSTS.values(), ids=BAD_HOSTS.keys())
def test_a_connection_given_such_a_host_fails_typed(host):
    # whoever passed the address on (a FindCoordinator answer, a caller)
    conn = BrokerConnection(host, 9092, consumer_config({"bootstrap_servers": "127.0.0.1:9"}))
    assert conn.connect() is False
    assert isinstance(conn.last_error, errors.KafkaConnectionError)
    assert conn.backoff_remaining() > 0

    async def aio_connect():
        with pytest.raises(errors.KafkaConnectionError):
            await AioConnection(host, 9092).connect()

    asyncio.run(aio_connect())
