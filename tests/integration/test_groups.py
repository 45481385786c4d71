"""Consumer groups against the real broker (issue 5): listener order and
contents, manual commits with metadata, resuming at committed offsets,
commit errors, poll timeouts, static membership, a mixed group with
confluent-kafka members, and a coordinator failover on the 3-node cluster."""
import time
import uuid

import pytest

from fastkc import KafkaConsumer
from fastkc.assignors import CooperativeStickyAssignor, RangePartitionAssignor
from fastkc.errors import CommitFailedError
from fastkc.structs import OffsetAndMetadata, TopicPartition
from tests.support.kafka_tools import Message, create_topic, produce


def group_name():
    return "g-" + uuid.uuid4().hex[:10]


def fill(bootstrap, topic, partitions, per_partition):
    return produce(bootstrap, topic, [Message(value=b"%d-%d" % (p, i), partition=p)
                                      for i in range(per_partition) for p in range(partitions)])


class Recorder:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def on_partitions_revoked(self, tps):
        self.log.append((self.name, "revoked", [tp.partition for tp in tps]))

    def on_partitions_assigned(self, tps):
        self.log.append((self.name, "assigned", [tp.partition for tp in tps]))

    def on_partitions_lost(self, tps):
        self.log.append((self.name, "lost", [tp.partition for tp in tps]))


def consumer(bootstrap, group, **configs):
    base = dict(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                session_timeout_ms=6000, heartbeat_interval_ms=300, fetch_max_wait_ms=100)
    base.update(configs)
    return KafkaConsumer(**base)


def poll_until(consumers, predicate, timeout=30.0):
    """Poll every consumer in turn (each process would poll on its own)."""
    got = {id(c): [] for c in consumers}
    deadline = time.monotonic() + timeout
    while not predicate(got):
        assert time.monotonic() < deadline, "condition not reached"
        for c in consumers:
            for records in c.poll(50).values():
                got[id(c)].extend(records)
    return got


def assignment_of(c):
    return sorted(tp.partition for tp in c.assignment())


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_commit_with_metadata_reads_back_and_restart_resumes(kafka_broker, protocol):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-commit-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=2)
    fill(bootstrap, topic, 2, 10)
    group = group_name()
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c = consumer(bootstrap, group, enable_auto_commit=False, group_protocol=protocol)
    try:
        c.subscribe([topic])
        poll_until([c], lambda got: len(got[id(c)]) >= 20)
        assert c.committed(tp0) is None
        c.commit({tp0: OffsetAndMetadata(4, "checkpoint-a", -1)})
        assert c.committed(tp0) == 4
        assert c.committed(tp0, metadata=True).metadata == "checkpoint-a"
        done = []
        c.commit_async({tp1: OffsetAndMetadata(6, "async", -1)}, callback=lambda offsets, err: done.append(err))
        deadline = time.monotonic() + 10
        while not done:
            assert time.monotonic() < deadline
            c.poll(50)
        assert done == [None]
        assert c.committed(tp1, metadata=True) == OffsetAndMetadata(6, "async", c.committed(tp1, True).leader_epoch)
        metadata = c.group_metadata()
        assert metadata.group_id == group and metadata.member_id and metadata.generation_id > 0
    finally:
        c.close(autocommit=False)
    # a restart under the same group resumes at the committed offsets
    c = consumer(bootstrap, group, enable_auto_commit=False, group_protocol=protocol)
    try:
        c.subscribe([topic])
        got = poll_until([c], lambda got: len(got[id(c)]) >= 10)[id(c)]
        firsts = {}
        for r in got:
            firsts.setdefault(r.partition, r.offset)
        assert firsts == {0: 4, 1: 6}
        assert len(got) == 10
    finally:
        c.close(autocommit=False)


def test_commit_defaults_to_positions_with_leader_epoch_and_close_commits(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-pos-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=1)
    fill(bootstrap, topic, 1, 7)
    group = group_name()
    tp = TopicPartition(topic, 0)
    c = consumer(bootstrap, group, enable_auto_commit=False)
    c.subscribe([topic])
    poll_until([c], lambda got: len(got[id(c)]) >= 7)
    c.commit()
    entry = c.committed(tp, metadata=True)
    assert entry.offset == 7 and entry.leader_epoch >= 0
    c.close()
    # auto commit: close commits what was handed over
    fill(bootstrap, topic, 1, 3)
    c = consumer(bootstrap, group, enable_auto_commit=True, auto_commit_interval_ms=60000)
    c.subscribe([topic])
    poll_until([c], lambda got: len(got[id(c)]) >= 3)
    c.close()
    c = consumer(bootstrap, group, enable_auto_commit=False)
    try:
        assert c.committed(tp) == 10
    finally:
        c.close()


@pytest.mark.parametrize("assignor", [RangePartitionAssignor, CooperativeStickyAssignor])
def test_listener_order_and_contents(kafka_broker, assignor):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-listen-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=4)
    fill(bootstrap, topic, 4, 5)
    group = group_name()
    log = []
    a = consumer(bootstrap, group, partition_assignment_strategy=[assignor])
    b = consumer(bootstrap, group, partition_assignment_strategy=[assignor])
    try:
        a.subscribe([topic], listener=Recorder("a", log))
        poll_until([a], lambda got: len(a.assignment()) == 4)
        assert log == [("a", "assigned", [0, 1, 2, 3])]
        b.subscribe([topic], listener=Recorder("b", log))
        poll_until([a, b], lambda got: len(a.assignment()) == 2 and len(b.assignment()) == 2)
        a_events = [e[1:] for e in log if e[0] == "a"]
        b_events = [e[1:] for e in log if e[0] == "b"]
        moved = sorted(set(range(4)) - set(assignment_of(a)))
        assert moved == assignment_of(b)
        if assignor is RangePartitionAssignor:
            # eager: everything is revoked before the rejoin, then the new share assigned
            assert a_events == [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3]),
                                ("assigned", assignment_of(a))]
            assert b_events == [("assigned", assignment_of(b))]
        else:
            # cooperative: only the moved partitions are revoked; nothing new is added to a
            # (Java calls on_partitions_assigned after every rebalance, with nothing new in the second)
            assert a_events[:3] == [("assigned", [0, 1, 2, 3]), ("revoked", moved), ("assigned", [])]
            assert all(e == ("assigned", []) for e in a_events[3:])
            assert b_events[-1] == ("assigned", assignment_of(b)) and all(
                e == ("assigned", []) for e in b_events[:-1])
        # a revocation happens before the new owner gets the partition
        revoked_at = next(i for i, e in enumerate(log) if e[0] == "a" and e[1] == "revoked")
        assigned_b_at = max(i for i, e in enumerate(log) if e[0] == "b" and e[2])
        assert revoked_at < assigned_b_at
        b.close()
        poll_until([a], lambda got: len(a.assignment()) == 4)
        assert log[-1][0] == "a" and log[-1][1] == "assigned"
        assert ("b", "revoked", assignment_of_list(log, "b")) in log
    finally:
        a.close()
        b.close()


def assignment_of_list(log, name):
    return [e for e in log if e[0] == name and e[1] == "assigned" and e[2]][-1][2]


def test_commit_after_being_fenced_raises_commit_failed(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-fenced-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=2)
    fill(bootstrap, topic, 2, 3)
    log = []
    # max_poll_interval_ms: the member whose application stops polling leaves
    c = consumer(bootstrap, group_name(), enable_auto_commit=False, max_poll_interval_ms=1500,
                 session_timeout_ms=6000)
    try:
        c.subscribe([topic], listener=Recorder("c", log))
        poll_until([c], lambda got: len(got[id(c)]) >= 6)
        generation = c.group_metadata().generation_id
        time.sleep(3.0)  # the application "hangs"; the group thread leaves
        assert c.group_metadata().member_id == "" and c.group_metadata().generation_id == -1
        with pytest.raises(CommitFailedError):
            c.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
        # the next poll hands the partitions to on_partitions_lost and rejoins
        poll_until([c], lambda got: c.group_metadata().generation_id > generation and len(c.assignment()) == 2)
        assert ("c", "lost", [0, 1]) in log
        assert log[-1] == ("c", "assigned", [0, 1])
    finally:
        c.close()


def test_static_member_rejoins_without_rebalance(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-static-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=2)
    group = group_name()
    a = consumer(bootstrap, group, group_instance_id="instance-a", session_timeout_ms=10000)
    b = consumer(bootstrap, group, group_instance_id="instance-b", session_timeout_ms=10000)
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        poll_until([a, b], lambda got: len(a.assignment()) == 1 and len(b.assignment()) == 1)
        gen = b.group_metadata().generation_id
        share = a.assignment()
        a.close()  # a static member does not leave: no rebalance
        a = consumer(bootstrap, group, group_instance_id="instance-a", session_timeout_ms=10000)
        a.subscribe([topic])
        poll_until([a, b], lambda got: len(a.assignment()) == 1)
        assert a.assignment() == share
        assert b.group_metadata().generation_id == gen
        assert len(b.assignment()) == 1
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_mixed_group_with_confluent_kafka(kafka_broker, strategy):
    from confluent_kafka import Consumer

    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-mixed-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=6)
    fill(bootstrap, topic, 6, 5)
    group = group_name()
    assignor = RangePartitionAssignor if strategy == "range" else CooperativeStickyAssignor
    ours = consumer(bootstrap, group, partition_assignment_strategy=[assignor], enable_auto_commit=False)
    theirs = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                       "partition.assignment.strategy": strategy, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 300, "enable.auto.commit": False})
    their_assignment = set()
    cooperative = strategy == "cooperative-sticky"

    def on_assign(c, tps):
        their_assignment.update(tp.partition for tp in tps)
        c.incremental_assign(tps) if cooperative else c.assign(tps)

    def on_revoke(c, tps):
        their_assignment.difference_update(tp.partition for tp in tps)
        c.incremental_unassign(tps) if cooperative else c.unassign()

    try:
        ours.subscribe([topic])
        poll_until([ours], lambda got: len(ours.assignment()) == 6)
        theirs.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        deadline = time.monotonic() + 30
        while not (len(ours.assignment()) == 3 and len(their_assignment) == 3):
            assert time.monotonic() < deadline, (ours.assignment(), their_assignment)
            ours.poll(20)
            theirs.poll(0.02)
        assert {tp.partition for tp in ours.assignment()}.isdisjoint(their_assignment)
        # hand-over back to us: confluent leaves, fastkc takes everything
        theirs.close()
        theirs = None
        poll_until([ours], lambda got: len(ours.assignment()) == 6)
    finally:
        ours.close()
        if theirs is not None:
            theirs.close()


def test_coordinator_failover_is_survived(kafka_cluster, request):
    from tests.support.kafka_tools import start_node, stop_node

    bootstrap = kafka_cluster.bootstrap_servers
    topic = "grp-failover-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=3, replication_factor=3)
    fill(bootstrap, topic, 3, 5)
    group = group_name()
    c = consumer(bootstrap, group, enable_auto_commit=False, request_timeout_ms=10000)
    stopped = None
    try:
        c.subscribe([topic])
        poll_until([c], lambda got: len(got[id(c)]) >= 15)
        c.commit()
        coordinator = c._coordinator.transport.coordinator_id
        stop_node(kafka_cluster, coordinator)
        stopped = coordinator
        fill(bootstrap, topic, 3, 5)
        got = poll_until([c], lambda got: len(got[id(c)]) >= 15, timeout=60)
        c.commit()
        assert c._coordinator.transport.coordinator_id not in (None, coordinator)
        assert sum(c.committed(TopicPartition(topic, p)) for p in range(3)) == 30
        assert len(got[id(c)]) == 15
    finally:
        c.close()
        if stopped is not None:
            start_node(kafka_cluster, stopped)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_pattern_subscription_follows_new_topics(kafka_broker, protocol):
    bootstrap = kafka_broker.bootstrap_servers
    prefix = "grp-pat-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, prefix + "-a", partitions=2)
    create_topic(bootstrap, "other-" + uuid.uuid4().hex[:8], partitions=1)
    c = consumer(bootstrap, group_name(), group_protocol=protocol, metadata_max_age_ms=500)
    try:
        c.subscribe(pattern=prefix + "-.*")
        poll_until([c], lambda got: {tp.topic for tp in c.assignment()} == {prefix + "-a"})
        assert len(c.assignment()) == 2
        create_topic(bootstrap, prefix + "-b", partitions=3)
        fill(bootstrap, prefix + "-b", 3, 2)
        got = poll_until([c], lambda got: len(c.assignment()) == 5 and len(got[id(c)]) >= 6)[id(c)]
        assert {r.topic for r in got} == {prefix + "-b"}
        assert c.subscription() == {prefix + "-a", prefix + "-b"}
    finally:
        c.close()


def test_assign_with_group_id_starts_at_committed_offsets_and_close_commits(kafka_broker):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "grp-assign-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=2)
    fill(bootstrap, topic, 2, 10)
    group = group_name()
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c = consumer(bootstrap, group, enable_auto_commit=False)
    c.assign([tp0, tp1])
    c.commit({tp0: OffsetAndMetadata(3, "", -1)})
    c.close()
    c = consumer(bootstrap, group, enable_auto_commit=True, auto_commit_interval_ms=60000)
    try:
        c.assign([tp0, tp1])
        got = poll_until([c], lambda got: len(got[id(c)]) >= 17)[id(c)]
        assert min(r.offset for r in got if r.partition == 0) == 3  # committed offset
        assert min(r.offset for r in got if r.partition == 1) == 0  # none committed: earliest
    finally:
        c.close()  # auto commit on close, without any group membership
    c = consumer(bootstrap, group, enable_auto_commit=False)
    try:
        assert (c.committed(tp0), c.committed(tp1)) == (10, 10)
    finally:
        c.close()
