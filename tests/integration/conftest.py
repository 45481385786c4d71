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
- fastkc_flavour / fastkc_consumer(**configs): fastkc's own flavour and a
  consumer of it on kafka_broker (auto-commit off unless given), closed at
  teardown, for the tests of what only fastkc has (poll_arrow, arrow_stream).
- consumer_factory(**configs): the same for brokers other than kafka_broker
  (bootstrap_servers given by the test).
- stop_node(info, node_id) / start_node(info, node_id): stop one node of a
  fixture-started broker and start it again on the same data dir and ports
  (fastkc.broker's own stop_node / start_node).
"""
import contextlib

import pytest

from fastkc import broker
from tests.support.consumers import FASTKC, FLAVOUR_NAMES, load_flavour


@pytest.fixture(params=FLAVOUR_NAMES)
def flavour(request):
    return load_flavour(request.param)


@pytest.fixture
def fastkc_flavour():
    return load_flavour(FASTKC)


@pytest.fixture
def fastkc_consumer(fastkc_flavour, kafka_broker):
    opened = []

    def make(**configs):
        configs.setdefault("bootstrap_servers", kafka_broker.bootstrap_servers)
        configs.setdefault("enable_auto_commit", False)
        consumer = fastkc_flavour.KafkaConsumer(**configs)
        opened.append(consumer)
        return consumer

    yield make
    for consumer in opened:
        consumer.close()


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


# --- broker restart: fastkc.broker.stop_node / start_node ----------------------

def stop_node(info, node_id, *, timeout=30.0):
    broker.stop_node(info, node_id, timeout=timeout)


def start_node(info, node_id, *, timeout=90.0):
    # die_with_parent: a node restarted by a test ends with the test session
    broker.start_node(info, node_id, timeout=timeout, die_with_parent=True)
