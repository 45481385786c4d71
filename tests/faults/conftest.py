"""Fixtures of the fault campaign (tests/faults/).

- toxiproxy: a toxiproxy-server on a free 127.0.0.1 port for the session.
  Missing binary → the fault tests skip with the reason, unless
  FASTKC_REQUIRE_FAULTS=1 (scripts/test.sh sets it), which fails them.
- proxied_cluster: ONE three-node cluster for the whole fault suite, started
  with broker.start(proxied=True): each node advertises its proxy's port on
  the PROXIED listener, and a toxiproxy proxy per node forwards to it.
  `.bootstrap` goes through the proxies (the consumer under test), `.direct`
  does not (the independent producer, admin calls).
- Tests taking 20 s or more are also marked `slow`: `-m "faults and not
  slow"` runs the quick half (toxics, failover, member kills).
- After every test the toxics are removed, proxies enabled, and any node a
  test left down is started again, so scenarios do not leak into each other.
"""
import contextlib
import os

import pytest

from fastkc_tools import broker
from tests.support.faults.cluster import ProxiedCluster
from tests.support.faults.toxiproxy import ToxiproxyError, ToxiproxyServer, find_server

pytestmark = pytest.mark.faults


def _unavailable(reason):
    if os.environ.get("FASTKC_REQUIRE_FAULTS") == "1":
        pytest.fail("FASTKC_REQUIRE_FAULTS=1 but " + reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def toxiproxy(tmp_path_factory):
    if find_server() is None:
        _unavailable("toxiproxy-server not installed (scripts/setup.sh installs it with Go)")
    log = str(tmp_path_factory.mktemp("toxiproxy") / "toxiproxy.log")
    try:
        server = ToxiproxyServer.start(log)
    except ToxiproxyError as exc:
        _unavailable(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def proxied_cluster(toxiproxy, tmp_path_factory):
    data_dir = str(tmp_path_factory.mktemp("faults-cluster"))
    info = broker.start(name="faults", data_dir=data_dir, nodes=3, proxied=True, die_with_parent=True,
                        kafka_version=os.environ.get("FASTKC_KAFKA_VERSION") or None)
    try:
        proxies = {}
        for node in info.nodes:
            listen, upstream = node.proxy_route()
            proxies[node.node_id] = toxiproxy.client.create(
                "kafka-{0}".format(node.node_id), listen=listen, upstream=upstream)
        yield ProxiedCluster(info=info, proxies=proxies, toxiproxy=toxiproxy)
    finally:
        with contextlib.suppress(Exception):
            toxiproxy.client.reset()
        broker.stop(data_dir=data_dir)


@pytest.fixture
def cluster(proxied_cluster):
    """The shared proxied cluster, healed after the test."""
    proxied_cluster.heal()
    yield proxied_cluster
    proxied_cluster.heal()
