"""Both clients (fastkc.client.KafkaClient, fastkc.aio.client.AioClient)
against the fake broker, where they hand the cluster core (fastkc.cluster)
their connections: the same verdict for an unparseable handshake answer (the
drift issue 22 found), a broker named leader again connecting at once
instead of after its grown reconnect backoff (issue 23, item 3), and host
names DNS cannot carry (issue 23, item 4).

Host names: a Metadata answer that advertises a broker at a host name longer
than 253 bytes, with a label longer than 63 bytes or with an empty label is
handled as the port-70000 case is (tests/hostile/test_stages.py): the broker
is left out with a warning, its partitions look leaderless, and a call that
needs it ends in a typed error in time — never the resolver's bare
UnicodeError. A connection handed such an address (whoever passed it on)
fails with a typed KafkaConnectionError.
"""
import asyncio
import logging
import time

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.aio import AIOKafkaConsumer
from fastkc.aio.client import AioClient
from fastkc.client import KafkaClient
from fastkc.cluster import MAX_PARSE_FAILURES
from fastkc.config import consumer_config
from fastkc.conn import BrokerConnection
from fastkc.net.aio import AioConnection
from fastkc.structs import TopicPartition
from tests.support import fake_broker as kit

TP = TopicPartition("t", 0)
SECOND = 2  # a second node id for the fake broker's own address (a second connection to it)
SETTINGS = dict(request_timeout_ms=1000, fetch_max_wait_ms=100, bootstrap_timeout_ms=3000, reconnect_backoff_ms=20,
                reconnect_backoff_max_ms=30000, retry_backoff_ms=20)


def _config(broker, **overrides):
    return consumer_config(dict(SETTINGS, bootstrap_servers=broker.bootstrap, **overrides))


@pytest.fixture
def broker():
    b = kit.FakeBroker(topics={"t": 1}, records=5, sasl=None)
    yield b
    b.close()
    assert not b.errors, "the fake broker failed while serving: {0!r}".format(b.errors)


# --- one verdict for an unparseable handshake answer ------------------------------------------------
def _bootstrap_sync(config):
    client = KafkaClient(config)
    try:
        client.bootstrap()
    finally:
        client.close()


def _bootstrap_aio(config):
    async def run():
        client = AioClient(config)
        try:
            await client.bootstrap()
        finally:
            await client.close()
    asyncio.run(asyncio.wait_for(run(), 30))


@pytest.mark.parametrize("api", ["ApiVersions", "Metadata"])  # a handshake answer, a caller's answer
@pytest.mark.parametrize("bootstrap", [_bootstrap_sync, _bootstrap_aio], ids=["sync", "aio"])
def test_unparseable_bootstrap_answers_are_retried_then_the_parse_error_is_raised(broker, bootstrap, api):
    broker.script(api, kit.truncated())
    with pytest.raises(errors.ProtocolParseError):
        bootstrap(_config(broker))
    # each garbage answer closed its connection; the limit's answer is raised
    assert broker.count(api) == MAX_PARSE_FAILURES


@pytest.mark.parametrize("api", ["ApiVersions", "Metadata"])
@pytest.mark.parametrize("bootstrap", [_bootstrap_sync, _bootstrap_aio], ids=["sync", "aio"])
def test_fewer_unparseable_bootstrap_answers_than_the_limit_are_survived(broker, bootstrap, api):
    broker.script(api, kit.truncated(), times=MAX_PARSE_FAILURES - 1)
    bootstrap(_config(broker))
    assert broker.count(api) == MAX_PARSE_FAILURES


# --- a leader named again connects at once ----------------------------------------------------------
def _second_node_leads(header, body, default):
    """The fake broker also advertised as node 2, which leads every partition."""
    first = default["brokers"][0]
    default["brokers"].append(dict(first, node_id=SECOND))
    for topic in default["topics"]:
        for partition in topic["partitions"]:
            partition.update(leader_id=SECOND, replica_nodes=[SECOND], isr_nodes=[SECOND])
    return default


def _grown_backoff(core):
    """The connection failed as a broker down for a while leaves it: 30 s to wait."""
    core.fail(errors.KafkaConnectionError("refused"), time.monotonic(), backoff_failures=12)
    assert core.backoff_remaining(time.monotonic()) > 20.0


def test_sync_client_reconnects_a_leader_named_again_at_once(broker):
    broker.script("Metadata", kit.answer(_second_node_leads))
    client = KafkaClient(_config(broker))
    try:
        client.bootstrap()
        client.add_topics(["t"])
        client.wait_for_metadata(3000)
        assert client.cluster.leader_for(TP) == SECOND
        deadline = time.monotonic() + 3
        while not client.ready(SECOND):
            assert time.monotonic() < deadline, "node 2 never became ready"
            client.poll(0.05)
        _grown_backoff(client.connection(SECOND).core)
        client.wait_for_metadata(3000)  # answered through node 1: node 2 leads t
        began = time.monotonic()
        while not client.ready(SECOND):
            assert time.monotonic() - began < 2.0, "node 2 waited out its backoff"
            client.poll(0.05)
    finally:
        client.close()


def test_aio_client_reconnects_a_leader_named_again_at_once(broker):
    broker.script("Metadata", kit.answer(_second_node_leads))

    async def scenario():
        client = AioClient(_config(broker))
        try:
            await client.bootstrap()
            client.add_topics(["t"])
            await client.wait_for_metadata(3000)
            assert client.cluster.leader_for(TP) == SECOND
            await client.request("ListOffsets", _list_offsets(), node_id=SECOND)  # node 2 connected
            conn = client.connection(SECOND)
            await conn.close()
            _grown_backoff(conn.core)
            assert not client.ready(SECOND)  # backing off: no attempt
            await client.wait_for_metadata(3000)
            began = time.monotonic()
            while not client.ready(SECOND):
                assert time.monotonic() - began < 2.0, "node 2 waited out its backoff"
                await asyncio.sleep(0.05)
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def _list_offsets():
    return {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}


# --- host names DNS cannot carry -------------------------------------------------------------
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
