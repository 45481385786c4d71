"""Three fastkc consumer processes share a 12-partition topic under steady
production; one is SIGKILLed mid-stream and another joins later (issue 5).

Checked from what each process logged (tests/support/group_worker.py):
- every produced record reached some member at least once;
- no partition was owned by two live members at once (ownership intervals
  from the listener calls; the killed member's end at its kill);
- no commit ever passed a record the application had not been handed;
- duplicates only on partitions the killed member owned, at or after its
  last accepted commit there (graceful hand-overs commit before revoking);
- cooperative-sticky: members whose partitions do not move are never asked
  to revoke them (only moved partitions are revoked).
Run with range (eager), cooperative-sticky and KIP-848.
"""
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.support.group_worker import read_events
from tests.support.kafka_tools import create_topic, producer_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTITIONS = 12


class SteadyProducer(threading.Thread):
    """confluent-kafka writes `rate` records/s round-robin over the partitions."""

    def __init__(self, bootstrap, topic, rate=300):
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(producer_config(bootstrap, **{"linger.ms": 5}))
        self.topic = topic
        self.rate = rate
        self.stop = threading.Event()
        self.written = set()  # (partition, offset)
        self.errors = []

    def _delivered(self, err, msg):
        if err is not None:
            self.errors.append(err)
        else:
            self.written.add((msg.partition(), msg.offset()))

    def run(self):
        i = 0
        start = time.monotonic()
        while not self.stop.is_set():
            self.producer.produce(self.topic, value=b"%d" % i, partition=i % PARTITIONS, on_delivery=self._delivered)
            i += 1
            self.producer.poll(0)
            ahead = i / self.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        self.producer.flush(30)


def start_worker(bootstrap, topic, group, out, *extra):
    return subprocess.Popen([sys.executable, "-m", "tests.support.group_worker", bootstrap, topic, group, out,
                             *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


def ownership_intervals(events, end_time):
    """{partition: [(start, end)]} from the listener events of one member."""
    intervals, open_since = {}, {}
    for ev in events:
        if ev["e"] == "assigned":
            for p in ev["tps"]:
                open_since.setdefault(p, ev["t"])
        elif ev["e"] in ("revoked", "lost"):
            for p in ev["tps"]:
                if p in open_since:
                    intervals.setdefault(p, []).append((open_since.pop(p), ev["t"]))
    for p, start in open_since.items():
        intervals.setdefault(p, []).append((start, end_time))
    return intervals


def owned_at_end(events):
    owned = set()
    for ev in events:
        if ev["e"] == "assigned":
            owned |= set(ev["tps"])
        elif ev["e"] in ("revoked", "lost"):
            owned -= set(ev["tps"])
    return owned


@pytest.mark.parametrize("protocol,assignor", [
    ("classic", "range"),
    ("classic", "cooperative-sticky"),
    ("consumer", "uniform"),
])
def test_three_processes_kill_and_join(kafka_broker, tmp_path, protocol, assignor):
    bootstrap = kafka_broker.bootstrap_servers
    topic = "groups-proc-" + uuid.uuid4().hex[:8]
    group = "g-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    extra = ["--protocol", protocol, "--assignor", assignor if protocol == "classic" else "range"]
    logs = [str(tmp_path / "w{0}.jsonl".format(i)) for i in range(4)]
    workers = []
    producer = SteadyProducer(bootstrap, topic)
    try:
        for i in range(3):
            workers.append(start_worker(bootstrap, topic, group, logs[i], *extra))
        wait_for(lambda: sum(bool(owned_at_end(read_events(path))) for path in logs[:3]) == 3, 60,
                 "three members with partitions")
        producer.start()
        time.sleep(3)
        owned_by_victim = owned_at_end(read_events(logs[0]))
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait()
        killed_at = time.time()
        time.sleep(2)
        workers.append(start_worker(bootstrap, topic, group, logs[3], *extra))
        wait_for(lambda: owned_at_end(read_events(logs[3])), 60, "the late member's partitions")
        # the victim's partitions must have moved to live members (after its session timed out)
        wait_for(lambda: set().union(*(owned_at_end(read_events(p)) for p in logs[1:])) == set(range(PARTITIONS)),
                 60, "every partition owned by a live member")
        time.sleep(2)
        producer.stop.set()
        producer.join(60)
        assert not producer.errors
        written = producer.written
        assert len(written) > 1000

        def handed():
            return {tuple(r) for path in logs for ev in read_events(path) if ev["e"] == "records" for r in ev["recs"]}

        wait_for(lambda: written <= handed(), 60, "every produced record to be consumed")
        stopping_at = time.time()
        for w in workers[1:]:
            w.send_signal(signal.SIGTERM)
        for w in workers[1:]:
            assert w.wait(30) == 0, w.stderr.read().decode()[-2000:]
    finally:
        producer.stop.set()
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()

    per_member = [read_events(p) for p in logs]
    # at least once
    received = [tuple(r) for evs in per_member for ev in evs if ev["e"] == "records" for r in ev["recs"]]
    assert written <= set(received)

    # never two live owners at once
    end = time.time()
    intervals = [ownership_intervals(evs, killed_at if i == 0 else end) for i, evs in enumerate(per_member)]
    for p in range(PARTITIONS):
        spans = sorted((s, e, i) for i, iv in enumerate(intervals) for s, e in iv.get(p, ()))
        for (_s1, e1, i1), (s2, _e2, i2) in zip(spans, spans[1:]):
            assert i1 == i2 or s2 >= e1, "partition {0} owned by members {1} and {2} at once".format(p, i1, i2)

    # commits never pass what the application was handed
    for evs in per_member:
        handed_max = {}
        for ev in evs:
            if ev["e"] == "records":
                for p, off in ev["recs"]:
                    handed_max[p] = max(handed_max.get(p, -1), off)
            elif ev["e"] == "committed":
                for p, off in ev["offsets"].items():
                    # a commit may carry a position handed over by an earlier owner (committed offsets
                    # fetched on assignment) — never one beyond every record handed to anyone
                    assert off <= max(handed_max.get(int(p), -1) + 1, _first_handed(per_member, int(p), off))

    # duplicates only where the killed member left uncommitted work
    counts = {}
    for rec in received:
        counts[rec] = counts.get(rec, 0) + 1
    last_commit = {}
    for ev in per_member[0]:
        if ev["e"] == "committed":
            for p, off in ev["offsets"].items():
                last_commit[int(p)] = off
    for (p, off), n in counts.items():
        if n > 1:
            assert p in owned_by_victim or any(p in iv for iv in [intervals[0]]), \
                "duplicate {0}@{1} on a partition handed over gracefully".format(p, off)
            assert off >= last_commit.get(p, 0), "duplicate {0}@{1} below the last commit".format(p, off)

    if protocol == "classic" and assignor == "cooperative-sticky":
        # the late join moves only some partitions: somebody kept partitions without any revocation
        join_time = min(ev["t"] for ev in per_member[3] if ev["e"] == "ready")
        for evs in per_member[1:3]:
            revoked_after_join = [set(ev["tps"]) for ev in evs
                                  if ev["e"] == "revoked" and join_time <= ev["t"] < stopping_at]
            owned_before = set()
            for ev in evs:
                if ev["t"] >= join_time:
                    break
                if ev["e"] == "assigned":
                    owned_before |= set(ev["tps"])
                elif ev["e"] in ("revoked", "lost"):
                    owned_before -= set(ev["tps"])
            gone = set().union(*revoked_after_join) if revoked_after_join else set()
            # kept some of what it owned before the join (a partition it
            # gained after the join and gave back later is not one of them)
            assert owned_before - gone or not owned_before, (
                "cooperative: a member revoked everything", owned_before, gone)
        # partitions that do not move keep flowing during the rebalance: records of kept partitions
        # were handed over between the late member's subscribe and its first partitions
        settled = min(ev["t"] for ev in per_member[3] if ev["e"] == "assigned" and ev["tps"])
        flowing = [ev for evs in per_member[1:3] for ev in evs
                   if ev["e"] == "records" and join_time <= ev["t"] <= settled]
        assert flowing, "no records were handed over during the cooperative rebalance"


def _first_handed(per_member, partition, offset):
    """`offset` when some member was handed the record just before it (offset-1)."""
    for evs in per_member:
        for ev in evs:
            if ev["e"] == "records" and [partition, offset - 1] in ev["recs"]:
                return offset
    return -1
