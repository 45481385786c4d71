"""A coordinator loss stalls no partition whose leader is alive (issue 23,
Java's behaviour: fetching goes on while the member looks for a new
coordinator; commits wait).

Three nodes, six single-replica partitions (two led by each node, so no
dead replica holds any other partition's high watermark back), one group
member with auto commit, a producer writing steadily to the partitions led
by the two nodes that stay up. The group coordinator's node is killed
(SIGKILL: its __consumer_offsets partitions have no leader until the
controller fences it) and started again afterwards. Every partition led by
a live node keeps handing out records: the longest pause between two
hand-outs of such a partition, from just before the kill to well after the
coordinator moved, stays far below the coordinator's absence."""
import threading
import time
import uuid

import pytest

from fastkc import KafkaConsumer, TopicPartition
from tests.support.kafka_tools import coordinator_of, create_topic, leader_of, start_node

pytestmark = pytest.mark.cluster

PARTITIONS = 6
WATCH_S = 15.0  # how long after the kill the hand-out is watched
MAX_STALL_S = 2.0


class Writer(threading.Thread):
    """confluent-kafka's Producer, ~100 records/s to each of `partitions`."""

    def __init__(self, bootstrap, topic, partitions):
        super().__init__(daemon=True, name="availability-writer")
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "log_level": 2})
        self.topic = topic
        self.partitions = partitions
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            for p in self.partitions:
                self.producer.produce(self.topic, b"x", partition=p)
            self.producer.poll(0)
            time.sleep(0.01)
        self.producer.flush(10)


def test_a_killed_coordinator_stalls_no_partition_led_by_a_live_node(kafka_cluster):
    from fastkc_tools import broker

    bootstrap = kafka_cluster.bootstrap_servers
    topic = "avail-" + uuid.uuid4().hex[:8]
    group = "avail-g-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=PARTITIONS, replication_factor=1)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=True, auto_commit_interval_ms=500, request_timeout_ms=5000,
                             reconnect_backoff_max_ms=1000, fetch_max_wait_ms=200, heartbeat_interval_ms=500)
    consumer.subscribe([topic])
    writer = None
    killed = None
    try:
        while len(consumer.assignment()) < PARTITIONS:
            consumer.poll(timeout_ms=100)
        coordinator = coordinator_of(bootstrap, group)
        leaders = {p: leader_of(bootstrap, topic, p) for p in range(PARTITIONS)}
        live = sorted(p for p, node in leaders.items() if node != coordinator)
        assert live, leaders
        writer = Writer(bootstrap, topic, live)
        writer.start()
        deliveries = {p: [] for p in live}  # partition -> monotonic times of the polls that handed it out
        began = time.monotonic()
        kill_at = began + 3.0
        end = kill_at + WATCH_S
        while time.monotonic() < end:
            if killed is None and time.monotonic() >= kill_at:
                broker.kill_node(kafka_cluster, coordinator)
                killed = coordinator
                kill_at = time.monotonic()
            batch = consumer.poll(timeout_ms=100)
            now = time.monotonic()
            for tp in batch:
                if tp.partition in deliveries:
                    deliveries[tp.partition].append(now)
        stalls = {}
        for p, times in deliveries.items():
            watched = [t for t in times if t >= kill_at - 1.0] + [end]
            stalls[p] = max(b - a for a, b in zip(watched, watched[1:]))
        print("coordinator node {0} killed; per-partition longest stall (s), live leaders: {1}".format(
            coordinator, {p: round(s, 2) for p, s in sorted(stalls.items())}))
        assert max(stalls.values()) < MAX_STALL_S, stalls
        # the group found its new coordinator and the auto commit lands there: at
        # least the positions of the watch's end, never past what was handed out
        moved = coordinator_of(bootstrap, group)
        assert moved != coordinator
        tps = [TopicPartition(topic, p) for p in live]
        wanted = {tp: consumer.position(tp) for tp in tps}
        deadline = time.monotonic() + 20
        committed = {}
        while time.monotonic() < deadline:
            consumer.poll(timeout_ms=100)
            committed = {tp: consumer.committed(tp) for tp in tps}
            assert all(c is None or c <= consumer.position(tp) for tp, c in committed.items()), committed
            if all(c is not None and c >= wanted[tp] for tp, c in committed.items()):
                break
        assert all(c is not None and c >= wanted[tp] for tp, c in committed.items()), (committed, wanted)
    finally:
        if writer is not None:
            writer.stop_event.set()
            writer.join(15)
        consumer.close(autocommit=False)
        if killed is not None:
            start_node(kafka_cluster, killed)

