"""KafkaClient against a scripted peer: bootstrap (every server in turn),
the bootstrap connection adopted as its broker's, blocking requests, metadata
refreshes (by age and after a lost connection), and a poll that sleeps."""
import resource
import socket
import time

import pytest

from fastkc import errors
from fastkc.client import KafkaClient
from fastkc.config import consumer_config
from fastkc.structs import TopicPartition
from tests.support.fake_broker import ScriptedPeer
from tests.support.fake_broker import cluster_handler as _cluster_handler


def _run(client, peer, until, timeout=3.0, step=0.01):
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        peer.service()
        client.poll(step)


def _bootstrap(client, peer, timeout=3.0):
    # bootstrap() blocks in its own loop: the peer answers from a thread meanwhile
    import threading

    stop = threading.Event()

    def serve():
        while not stop.is_set():
            peer.service()
            time.sleep(0.002)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client.bootstrap(timeout_ms=timeout * 1000)
    finally:
        stop.set()
        thread.join()


@pytest.fixture
def peer():
    box = [0]
    p = ScriptedPeer(_cluster_handler(box))
    box[0] = p.port
    yield p
    p.close()


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _client(servers, **configs):
    configs["bootstrap_servers"] = servers
    return KafkaClient(consumer_config(configs))


def test_bootstrap_adopts_the_connection_for_its_broker(peer):
    client = _client("127.0.0.1:{0}".format(peer.port))
    _bootstrap(client, peer)
    assert client.bootstrapped
    assert set(client.cluster.brokers) == {1}
    assert client.is_connected(1)  # the bootstrap connection became node 1's
    assert [h["api_name"] for h, _ in peer.requests] == ["ApiVersions", "Metadata"]
    client.close()


def test_bootstrap_moves_on_past_a_dead_server(peer):
    client = _client("127.0.0.1:{0},127.0.0.1:{1}".format(_closed_port(), peer.port),
                     reconnect_backoff_ms=10)
    _bootstrap(client, peer)
    assert client.is_connected(1)
    client.close()


def test_blocking_request_and_metadata_for_topics(peer):
    client = _client("127.0.0.1:{0}".format(peer.port))
    _bootstrap(client, peer)
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=lambda: [peer.service() or time.sleep(0.002) for _ in iter(stop.is_set, True)],
                              daemon=True)
    thread.start()
    try:
        answer = client.request("Metadata", {"topics": [{"name": "x"}]}, 2000)
    finally:
        stop.set()
        thread.join()
    assert [t["name"] for t in answer["topics"]] == ["x"]
    client.add_topics(["t"])
    _run(client, peer, lambda: "t" in client.cluster.topics)
    assert client.cluster.leader_for(TopicPartition("t", 0)) == 1
    assert client.cluster.partition(TopicPartition("t", 0)).leader_epoch == 2
    client.close()


def test_metadata_is_refreshed_by_age(peer):
    client = _client("127.0.0.1:{0}".format(peer.port), metadata_max_age_ms=50)
    _bootstrap(client, peer)
    count = lambda: sum(1 for h, _ in peer.requests if h["api_name"] == "Metadata")  # noqa: E731
    _run(client, peer, lambda: count() >= 3, timeout=3.0)
    client.close()


def test_lost_connection_requests_metadata_and_tells_listeners(peer):
    client = _client("127.0.0.1:{0}".format(peer.port))
    _bootstrap(client, peer)
    lost = []
    client.on_disconnect.append(lost.append)
    client.cluster.last_refresh = time.monotonic()
    assert not client.metadata_due()
    peer.sock.close()
    peer.sock = None
    _run(client, peer, lambda: lost)
    assert lost == [1]
    assert client.metadata_due()
    client.close()


def test_idle_poll_sleeps(peer):
    client = _client("127.0.0.1:{0}".format(peer.port))
    _bootstrap(client, peer)
    client.cluster.last_refresh = time.monotonic()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    began = time.monotonic()
    client.poll(0.3)
    wall = time.monotonic() - began
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    assert wall >= 0.28
    assert cpu < 0.1  # a busy loop would burn ~wall
    client.close()


def test_closed_client_refuses_to_poll(peer):
    client = _client("127.0.0.1:{0}".format(peer.port))
    _bootstrap(client, peer)
    client.close()
    with pytest.raises(errors.IllegalStateError):
        client.poll(0)


def test_connection_closed_with_an_error_is_reported_and_reconnects(peer):
    client = _client("127.0.0.1:{0}".format(peer.port), reconnect_backoff_ms=10)
    _bootstrap(client, peer)
    lost = []
    client.on_disconnect.append(lost.append)
    # what a malformed response does: the connection is closed from inside a callback
    client.connection(1).close(errors.ProtocolParseError("bad body", "Metadata", 12, 3))
    client.poll(0)
    assert lost == [1]
    peer.sock.close()  # the peer accepts the next connection afresh
    peer.sock = None
    peer.framer = type(peer.framer)()
    _run(client, peer, lambda: client.ready(1))
    assert client.is_connected(1)
    client.close()


def test_bootstrap_keeps_retrying_until_the_broker_comes_up():
    import threading

    port = _closed_port()
    box = [port]
    started = []
    stop = threading.Event()

    def late_broker():
        time.sleep(0.4)  # several failed rounds first
        peer = ScriptedPeer(_cluster_handler(box), port=port)
        started.append(peer)
        while not stop.is_set():
            peer.service()
            time.sleep(0.002)

    thread = threading.Thread(target=late_broker, daemon=True)
    thread.start()
    client = _client("127.0.0.1:{0}".format(port), reconnect_backoff_ms=20, reconnect_backoff_max_ms=100)
    try:
        client.bootstrap(timeout_ms=4000)
        assert client.is_connected(1)
    finally:
        stop.set()
        thread.join()
        client.close()
        for peer in started:
            peer.close()
