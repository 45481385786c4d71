"""Issue 4: consumption across broker faults — a single broker stopped and
started again on the same data dir while a consumer is mid-topic, and the
leader of a replicated partition stopped in the three-node cluster (its
leadership moves to a follower). In both, every record written before and
after comes back exactly once, in order per partition."""
import os
import time

import pytest

from tests.support.consumers import assert_records_match, mixed_messages, poll_records
from tests.support.kafka_tools import create_topic, produce, start_node, stop_node, unique_name, visible

# This module's fixtures start brokers of their own: `-m "not broker"` skips it
# like the tests on the session broker.
pytestmark = pytest.mark.broker

PARTITIONS = 2


@pytest.fixture(scope="module")
def restartable_broker(tmp_path_factory):
    """A broker of its own (restarting the session broker would disturb
    other modules' tests), stopped at the end of the module."""
    from fastkc_tools import broker

    data_dir = str(tmp_path_factory.mktemp("consumer-restart"))
    info = broker.start(name="consumer-restart", data_dir=data_dir,
                        kafka_version=os.environ.get("FASTKC_KAFKA_VERSION") or None, die_with_parent=True)
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)


def _consume_some(consumer, at_least, timeout=30.0):
    """Poll in small steps until at least `at_least` records came; returns
    them grouped as {partition: [records]}."""
    got = {}
    deadline = time.monotonic() + timeout
    while sum(map(len, got.values())) < at_least:
        assert time.monotonic() < deadline, "consumer stalled before the fault"
        for tp, records in consumer.poll(timeout_ms=200, max_records=20).items():
            got.setdefault(tp.partition, []).extend(records)
    return got


def _merge(first, second_list):
    merged = {p: list(rs) for p, rs in first.items()}
    for record in second_list:
        merged.setdefault(record.partition, []).append(record)
    return [r for p in sorted(merged) for r in merged[p]]


def test_broker_restart_during_consumption_loses_and_repeats_nothing(
        flavour, consumer_factory, restartable_broker):
    bootstrap = restartable_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer-restart"), partitions=PARTITIONS)
    before = produce(bootstrap, topic, mixed_messages(200, PARTITIONS, tag="before-"))
    tps = [flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = consumer_factory(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                reconnect_backoff_max_ms=1000)
    consumer.assign(tps)
    consumer.seek_to_beginning()
    early = _consume_some(consumer, 60)
    # A second consumer, with a fetch on the wire, to be closed while the
    # broker is down.
    closing = consumer_factory(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    closing.assign(tps)
    closing.seek_to_end()
    assert closing.poll(timeout_ms=300) == {}

    node = restartable_broker.nodes[0]
    old_pid = node.pid
    stop_node(restartable_broker, node.node_id)
    # While the broker is down poll returns what was already fetched, or
    # nothing; it raises nothing and does not hang.
    during = []
    down_until = time.monotonic() + 3.0
    while time.monotonic() < down_until:
        began = time.monotonic()
        for records in consumer.poll(timeout_ms=300).values():
            during.extend(records)
        assert time.monotonic() - began < 10.0, "poll hung while the broker was down"
    began = time.monotonic()
    closing.close()
    assert time.monotonic() - began < 15.0, "close() hung while the broker was down"
    start_node(restartable_broker, node.node_id)
    assert node.pid != old_pid  # a new process on the same data dir and port

    after = produce(bootstrap, topic, mixed_messages(100, PARTITIONS, tag="after-"))
    expected = visible(before + after)
    seen = sum(map(len, early.values())) + len(during)
    rest = poll_records(consumer, len(expected) - seen, timeout=90.0, settle_ms=1000)
    # Records delivered during the outage keep their delivery order per partition.
    assert_records_match(_merge(early, during + rest), expected)
    for tp in tps:
        assert consumer.position(tp) == max(w.offset for w in expected if w.partition == tp.partition) + 1


def _leader_of(bootstrap, topic, partition):
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=30)
    # A topic just created may not be in this broker's metadata yet: no leader.
    found = md.topics.get(topic)
    if found is None or found.error is not None or partition not in found.partitions:
        return -1
    return found.partitions[partition].leader


def test_leader_moved_in_the_cluster_consumption_continues(flavour, consumer_factory, kafka_cluster):
    bootstrap = kafka_cluster.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer-leader-move"), partitions=PARTITIONS,
                         replication_factor=3)
    before = produce(bootstrap, topic, mixed_messages(200, PARTITIONS, tag="before-"))
    tps = [flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = consumer_factory(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                reconnect_backoff_max_ms=1000, metadata_max_age_ms=5000)
    consumer.assign(tps)
    consumer.seek_to_beginning()
    early = _consume_some(consumer, 60)

    old_leader = _leader_of(bootstrap, topic, 0)
    stop_node(kafka_cluster, old_leader)
    try:
        survivors = ",".join("127.0.0.1:{0}".format(n.ports["PLAINTEXT"])
                             for n in kafka_cluster.nodes if n.node_id != old_leader)
        deadline = time.monotonic() + 60
        while _leader_of(survivors, topic, 0) in (old_leader, -1):
            assert time.monotonic() < deadline, "no new leader elected within 60s"
            time.sleep(0.5)
        after = produce(survivors, topic, mixed_messages(100, PARTITIONS, tag="after-"))
        expected = visible(before + after)
        seen = sum(map(len, early.values()))
        rest = poll_records(consumer, len(expected) - seen, timeout=90.0, settle_ms=1000)
        assert_records_match(_merge(early, rest), expected)
    finally:
        # The cluster is shared by the session: bring the node back.
        start_node(kafka_cluster, old_leader, timeout=120.0)


def _reassign(cluster, topic, replicas_by_partition, tmp_path):
    """Reorder replicas with Kafka's ReassignPartitionsCommand (the Admin
    API's AlterPartitionReassignments; confluent-kafka's AdminClient has no
    binding for it), then a preferred-leader election makes each list's
    first broker the leader. The old leader stays up."""
    import contextlib
    import json
    import subprocess

    from confluent_kafka import ElectionType, KafkaException
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    from fastkc_tools.broker import TOOL_JVM_FLAGS, find_java, resolve_kafka

    plan = tmp_path / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": replicas} for p, replicas in replicas_by_partition.items()]}))
    install = resolve_kafka(cluster.kafka_version)
    proc = subprocess.run(
        [find_java()] + TOOL_JVM_FLAGS + ["-cp", install.classpath,
                                          "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                                          "--bootstrap-server", cluster.bootstrap_servers,
                                          "--reassignment-json-file", str(plan), "--execute"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    wanted = {p: replicas[0] for p, replicas in replicas_by_partition.items()}
    deadline = time.monotonic() + 60
    while True:
        # The reorder completes at once (same replica set); the election may
        # answer "not yet" until the new preferred replica is in sync.
        future = admin.elect_leaders(ElectionType.PREFERRED,
                                     [CkTopicPartition(topic, p) for p in replicas_by_partition])
        with contextlib.suppress(KafkaException):
            future.result(30)
        if all(_leader_of(cluster.bootstrap_servers, topic, p) == leader for p, leader in wanted.items()):
            return
        assert time.monotonic() < deadline, "leaders did not move to {0} within 60s".format(wanted)
        time.sleep(0.5)


def test_leader_moved_by_reassignment_consumption_continues(flavour, consumer_factory, kafka_cluster, tmp_path):
    # The old leader stays alive: the consumer learns of the move from its
    # fetch answer (NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH), not from a
    # dropped connection.
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("consumer-reassign")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new_topic = NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=[[1, 2, 3], [2, 3, 1]])
    admin.create_topics([new_topic])[topic].result(30)
    deadline = time.monotonic() + 30
    while [_leader_of(bootstrap, topic, p) for p in range(PARTITIONS)] != [1, 2]:
        assert time.monotonic() < deadline, "new topic has no leaders"
        time.sleep(0.2)
    before = produce(bootstrap, topic, mixed_messages(200, PARTITIONS, tag="before-"))
    tps = [flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = consumer_factory(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    consumer.assign(tps)
    consumer.seek_to_beginning()
    early = _consume_some(consumer, 60)

    _reassign(kafka_cluster, topic, {0: [2, 3, 1], 1: [3, 1, 2]}, tmp_path)
    after = produce(bootstrap, topic, mixed_messages(100, PARTITIONS, tag="after-"))
    expected = visible(before + after)
    rest = poll_records(consumer, len(expected) - sum(map(len, early.values())), timeout=90.0, settle_ms=1000)
    assert_records_match(_merge(early, rest), expected)
    # The last record of each partition was written under the new leader:
    # it carries the new, higher leader epoch.
    last_epoch = {}
    for record in rest:
        last_epoch[record.partition] = record.leader_epoch
    assert sorted(last_epoch) == list(range(PARTITIONS))
    assert all(epoch >= 1 for epoch in last_epoch.values()), last_epoch
