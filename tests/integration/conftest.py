"""Fixtures of the issue-4 consumer suite (tests/integration/test_consumer_*.py).

- flavour: parametrizes a test over the consumer implementations
  (tests/support/consumers.py): kafka-python's KafkaConsumer, the reference,
  and fastkc's.
- open_consumer(*topics, bootstrap_servers=..., **configs): a consumer of
  the flavour under test on kafka_broker, closed at teardown.
- reference_deviates(reason): marks the kafka-python case of the running
  test xfail(strict=True) where kafka-python departs from the Java client.
- fastkc_bug(reason): marks the fastkc case xfail(strict=True) for a known
  fastkc failure (never to make a wrong test pass: the reference must pass).
- fastkc_flavour / fastkc_consumer(**configs): fastkc's own flavour and a
  consumer of it on kafka_broker (auto-commit off unless given), closed at
  teardown, for the tests of what only fastkc has (poll_arrow, arrow_stream).
- compacted_topic: (topic, records the log holds, log end offset) of one
  compacted topic with gaps, written once per session.
- consumer_factory(**configs): the same for brokers other than kafka_broker
  (bootstrap_servers given by the test).
"""
import contextlib
import time

import pytest

from tests.support.consumers import FASTKC, FLAVOUR_NAMES, load_flavour
from tests.support.kafka_tools import Message, consume_all, create_topic, produce, unique_name


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


# --- broker restart: fastkc_tools.broker.stop_node / start_node ----------------------


KEYS = 40
ROUNDS = 4


@pytest.fixture(scope="session")
def compacted_topic(kafka_broker):
    """(topic, records the log holds after compaction, log end offset).

    Round 0 writes every key; later rounds rewrite only the even keys, so the
    odd keys' first records survive between removed ones (a gap at every
    other offset). segment.ms=100 rolls a segment per produce burst; unique
    "roll-N" keys then make the cleaner's job finite: once each key holds
    only its last record, nothing more can be removed and the log is stable.
    The wait is bounded by the broker's cleaner backoff (15 s by default);
    one topic for the session: the consumer's and the CLI's tests only read it.
    """
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer-compacted"), partitions=1, configs={
        "cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.001,
        "min.compaction.lag.ms": 0})
    last_value = {}
    for round_number in range(ROUNDS):
        keys = range(KEYS) if round_number == 0 else range(0, KEYS, 2)
        messages = [Message(key=b"key-%d" % k, value=b"round-%d-key-%d" % (round_number, k), partition=0)
                    for k in keys]
        for message in messages:
            last_value[message.key] = message.value
        produce(bootstrap, topic, messages, compression="lz4")
        time.sleep(0.15)  # past segment.ms: the next write starts a new segment
    deadline = time.monotonic() + 90
    roll = 0
    while True:
        roll += 1
        produce(bootstrap, topic, [Message(key=b"roll-%d" % roll, value=b"r", partition=0)])
        held = consume_all(bootstrap, topic)
        data = {r.key: r.value for r in held if not r.key.startswith(b"roll-")}
        if data == last_value and len(held) == len(last_value) + roll:
            break
        assert time.monotonic() < deadline, "the log cleaner did not compact {0} within 90s".format(topic)
        time.sleep(1.0)
    return topic, held, held[-1].offset + 1
