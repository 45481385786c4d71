"""kafka-python 3's surface on the real broker: config["api_version"] after
construction and bootstrap(timeout_ms, refresh), both clients side by side;
fastkc's wakeup() (Java's; kafka-python 3.0.12 has none) interrupting a poll
blocked on a real fetch."""
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from tests.support.kafka_tools import Message, produce
from tests.support.wakeup import assert_wakeup_ends, call_in_thread


def test_api_version_is_the_brokers_release_as_kafka_python_reports_it(kafka_broker):
    kafka = pytest.importorskip("kafka")
    theirs = kafka.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        expected = theirs.config["api_version"]
    finally:
        theirs.close()
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers) as ours:
        assert isinstance(ours.config["api_version"], tuple)
        assert ours.config["api_version"] == expected


def test_bootstrap_and_refresh(open_consumer, make_topic):
    topic = make_topic(partitions=2)
    consumer = open_consumer()
    consumer.bootstrap(timeout_ms=10000)
    consumer.bootstrap(timeout_ms=10000, refresh=True)
    assert topic in consumer.topics()
    assert consumer.partitions_for_topic(topic) == {0, 1}


def test_wakeup_interrupts_a_poll_waiting_on_the_broker(kafka_broker, make_topic):
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    with KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, fetch_max_wait_ms=10000) as consumer:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        assert consumer.poll(timeout_ms=1000) == {}  # position resolved; fetches long-poll the broker
        thread, outcome = call_in_thread(lambda: consumer.poll(timeout_ms=30000))
        time.sleep(0.5)
        assert_wakeup_ends(consumer, thread, outcome)
        # the consumer goes on: records written now arrive at the next polls
        produce(kafka_broker.bootstrap_servers, topic, [Message(key=b"k", value=b"v%d" % i) for i in range(5)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                got.extend(r.value for r in records)
        assert got == [b"v%d" % i for i in range(5)]
