"""Fixtures of the issue-4 consumer suite (tests/integration/test_consumer_*.py).

- flavour: parametrizes a test over the consumer implementations
  (tests/support/consumers.py): kafka-python's KafkaConsumer, the reference,
  and fastkc's (skipped while it does not exist, unless FASTKC_REQUIRE_CONSUMER=1).
- open_consumer(*topics, bootstrap_servers=..., **configs): a consumer of
  the flavour under test on kafka_broker, closed at teardown.
- reference_deviates(reason): marks the kafka-python case of the running
  test xfail(strict=True) where kafka-python departs from the Java client.
- fastkc_bug(reason): marks the fastkc case xfail(strict=True) for a known
  fastkc failure (never to make a wrong test pass: the reference must pass).
- consumer_factory(**configs): the same for brokers other than kafka_broker
  (bootstrap_servers given by the test).
- stop_node(info, node_id) / start_node(info, node_id): stop one node of a
  fixture-started broker and start it again on the same data dir and ports
  (fastkc.broker has no restart; start_node uses its internals).
"""
import contextlib
import os
import signal
import time

import pytest

from tests.support.consumers import FLAVOUR_NAMES, load_flavour


@pytest.fixture(params=FLAVOUR_NAMES)
def flavour(request):
    return load_flavour(request.param)


@pytest.fixture
def reference_deviates(request, flavour):
    """reference_deviates("why") marks this test xfail(strict=True) when it
    runs on kafka-python: the test asserts the Java client's behaviour, which
    kafka-python does not have; strict so the mark goes once it is fixed."""

    def mark(reason):
        if flavour.is_reference:
            request.applymarker(pytest.mark.xfail(strict=True, reason="kafka-python deviates: " + reason))

    return mark


@pytest.fixture
def fastkc_bug(request, flavour):
    """fastkc_bug("what") marks this test xfail(strict=True) when it runs on
    fastkc: a known fastkc failure, kept visible without failing main; strict
    so the fix turns it into an XPASS failure and the mark is removed."""

    def mark(reason):
        if flavour.name == "fastkc":
            request.applymarker(pytest.mark.xfail(strict=True, reason="fastkc bug: " + reason))

    return mark


def _consumer_factory(flavour, default_bootstrap):
    opened = []

    def make(*topics, **configs):
        configs.setdefault("bootstrap_servers", default_bootstrap)
        # No group: issue 4 covers manually assigned partitions only.
        configs.setdefault("enable_auto_commit", False)
        consumer = flavour.KafkaConsumer(*topics, **configs)
        opened.append(consumer)
        return consumer

    return make, opened


@pytest.fixture
def open_consumer(flavour, kafka_broker):
    make, opened = _consumer_factory(flavour, kafka_broker.bootstrap_servers)
    yield make
    for consumer in opened:
        with contextlib.suppress(Exception):
            consumer.close()


@pytest.fixture
def consumer_factory(flavour):
    """open_consumer for brokers other than kafka_broker: bootstrap_servers
    must be given."""
    make, opened = _consumer_factory(flavour, None)
    yield make
    for consumer in opened:
        with contextlib.suppress(Exception):
            consumer.close()


# --- broker restart -------------------------------------------------------------

def _wait_exit(pid, timeout):
    from fastkc.broker import harness

    deadline = time.monotonic() + timeout
    child = harness._children.get(pid)
    while time.monotonic() < deadline:
        if child is not None:
            if child.poll() is not None:
                harness._children.pop(pid, None)
                return True
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.1)
    return False


def stop_node(info, node_id, *, timeout=30.0):
    """SIGTERM one node (Kafka's controlled shutdown) and wait for it to exit."""
    node = next(n for n in info.nodes if n.node_id == node_id)
    with contextlib.suppress(ProcessLookupError):
        os.kill(node.pid, signal.SIGTERM)
    if not _wait_exit(node.pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid, signal.SIGKILL)
        assert _wait_exit(node.pid, 15.0), "node {0} (pid {1}) did not exit".format(node_id, node.pid)


def start_node(info, node_id, *, timeout=90.0):
    """Start a stopped node again from its existing data dir, properties and
    ports (no reformat), record its new pid in `info` and the state file (so
    the fixture's broker.stop ends it), and wait until it answers Metadata
    listing every node.

    fastkc.broker has no restart: this reuses harness._launch (the same
    command line start() uses) with the node's plan rebuilt from BrokerInfo.
    """
    from fastkc.broker import harness, probe
    from fastkc.broker.config import NodePlan
    from fastkc.broker.resolve import find_java, resolve_kafka

    node = next(n for n in info.nodes if n.node_id == node_id)
    install = resolve_kafka(info.kafka_version)
    java = find_java(min_major=17 if install.major >= 4 else 11)
    plan = NodePlan(node_id=node.node_id, dir=node.dir, ports=dict(node.ports))
    heap = harness._SINGLE_NODE_HEAP if len(info.nodes) == 1 else harness._CLUSTER_NODE_HEAP
    proc = harness._launch(java, install, plan, heap, die_with_parent=True)
    node.pid = proc.pid
    harness._write_state(info)
    expected = (info.cluster_id, [n.node_id for n in info.nodes])
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("node {0} exited on restart (code {1}):\n{2}".format(
                node_id, proc.returncode, harness._node_log_tail(plan)))
        try:
            if probe.cluster_view("127.0.0.1", node.ports["PLAINTEXT"], timeout=3.0) == expected:
                return
        except Exception as exc:  # refused / reset while it comes up
            last = exc
        time.sleep(0.25)
    raise TimeoutError("node {0} did not answer after restart (last: {1})".format(node_id, last))
