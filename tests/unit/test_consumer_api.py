"""KafkaConsumer's API rules that need no real broker: a scripted peer
(answering ApiVersions and Metadata from a thread) bootstraps it; the
checks are the consumer's own refusals and bookkeeping."""
import threading
import time

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.structs import TopicPartition
from tests.support.fake_broker import ScriptedPeer
from tests.support.fake_broker import cluster_handler as _cluster_handler

TP = TopicPartition("t", 0)
OTHER = TopicPartition("t", 9)


@pytest.fixture
def consumer():
    box = [0]
    peer = ScriptedPeer(_cluster_handler(box))
    box[0] = peer.port
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                peer.service()
            except OSError:
                return
            time.sleep(0.002)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:{0}".format(peer.port), bootstrap_timeout_ms=3000)
    yield c
    c.close()
    stop.set()
    thread.join()
    peer.close()


def test_unknown_config_key():
    with pytest.raises(errors.KafkaConfigurationError):
        KafkaConsumer(bootstrap_servers="127.0.0.1:1", no_such_key=1)


def test_bootstrap_connected_and_close(consumer):
    assert consumer.bootstrap_connected()
    consumer.close()
    consumer.close()  # idempotent
    assert not consumer.bootstrap_connected()
    with pytest.raises(errors.IllegalStateError):
        consumer.poll()


def test_context_manager_closes(consumer):
    with consumer as c:
        assert c is consumer
    with pytest.raises(errors.IllegalStateError):
        consumer.assign([TP])


def test_group_operations_need_a_group_id(consumer):
    with pytest.raises(errors.IllegalStateError, match="group_id"):
        consumer.commit()
    with pytest.raises(errors.IllegalStateError):
        consumer.committed(TP)
    assert consumer.subscription() is None


def test_subscribe_without_group_assigns_every_partition(consumer):
    consumer.subscribe(["t"])
    assert consumer.subscription() == {"t"}
    deadline = time.monotonic() + 3
    while consumer.assignment() != {TP}:
        assert time.monotonic() < deadline, "the subscription was never assigned"
        consumer._client.poll(0.05)
    with pytest.raises(errors.IllegalStateError):
        consumer.assign([TP])
    consumer.unsubscribe()
    assert consumer.subscription() is None and consumer.assignment() == set()


def test_pattern_subscription_follows_all_topics(consumer):
    consumer.subscribe(pattern="^t$")
    deadline = time.monotonic() + 3
    while consumer.assignment() != {TP}:
        assert time.monotonic() < deadline, "the pattern never matched"
        consumer._client.poll(0.05)
    assert consumer.subscription() == {"t"}


def test_subscribe_argument_rules(consumer):
    with pytest.raises(ValueError):
        consumer.subscribe()
    with pytest.raises(errors.IllegalStateError):
        consumer.subscribe(["t"], pattern="t")
    consumer.assign([TP])
    with pytest.raises(errors.IllegalStateError):
        consumer.subscribe(["t"])


def test_poll_without_assignment_is_refused(consumer):
    with pytest.raises(errors.IllegalStateError):
        consumer.poll(timeout_ms=0)


def test_assignment_bookkeeping(consumer):
    consumer.assign([TP, TopicPartition("t", 1), TP])
    assert consumer.assignment() == {TP, TopicPartition("t", 1)}
    consumer.assign([TopicPartition("t", 1)])
    assert consumer.assignment() == {TopicPartition("t", 1)}
    consumer.unsubscribe()
    assert consumer.assignment() == set()
    with pytest.raises(TypeError):
        consumer.assign(["t"])


def test_unassigned_partitions_are_refused(consumer):
    consumer.assign([TP])
    for call in (lambda: consumer.seek(OTHER, 0), lambda: consumer.position(OTHER),
                 lambda: consumer.highwater(OTHER), lambda: consumer.pause(OTHER),
                 lambda: consumer.resume(OTHER), lambda: consumer.seek_to_beginning(OTHER),
                 lambda: consumer.seek_to_end(OTHER)):
        with pytest.raises(errors.IllegalStateError):
            call()


def test_seek_sets_the_position_without_a_round_trip(consumer):
    consumer.assign([TP])
    with pytest.raises(ValueError):
        consumer.seek(TP, -1)
    consumer.seek(TP, 42)
    assert consumer.position(TP, timeout_ms=0) == 42
    assert consumer.highwater(TP) is None


def test_pause_resume_paused(consumer):
    consumer.assign([TP, TopicPartition("t", 1)])
    consumer.pause(TP)
    assert consumer.paused() == {TP}
    consumer.resume(TP)
    assert consumer.paused() == set()


def test_seek_to_end_leaves_the_position_pending(consumer):
    consumer.assign([TP])
    consumer.seek(TP, 5)
    consumer.seek_to_end()
    # the scripted peer never answers ListOffsets: the position stays unknown
    with pytest.raises(errors.KafkaTimeoutError):
        consumer.position(TP, timeout_ms=200)


def test_poll_argument_checks(consumer):
    consumer.assign([TP])
    with pytest.raises(ValueError):
        consumer.poll(max_records=0)
    with pytest.raises(ValueError):
        consumer.poll_arrow(max_records=-3)


def test_offsets_for_times_checks_timestamps(consumer):
    with pytest.raises(ValueError):
        consumer.offsets_for_times({TP: -5})
    assert consumer.offsets_for_times({}) == {}


def test_partitions_for_topic_and_metrics(consumer):
    assert consumer.partitions_for_topic("t") == {0}
    metrics = consumer.metrics()
    assert set(metrics) == {"consumer-fetch-manager-metrics", "consumer-coordinator-metrics", "consumer-metrics"}
    assert metrics["consumer-fetch-manager-metrics"]["records-consumed-total"] == 0
    assert metrics["consumer-coordinator-metrics"]["assigned-partitions"] == 0
    assert metrics["consumer-metrics"] == {"successful-reauthentication-total": 0,
                                           "failed-reauthentication-total": 0, "connection-lost-total": 0}
