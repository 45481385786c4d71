"""Share groups (KIP-932) on a real Kafka 4.3.1 broker: the queue invariants,
counted Jepsen-style from what every member process was handed and what it
answered.

Members are separate processes (tests/support/share_worker.py), each writing
(partition, offset, delivery_count) of every record it was handed and every
acknowledgement it made to its own file; the data comes from confluent-kafka's
Producer; topics have fewer partitions than members. The broker
(`share_broker`) locks records for SHARE_RECORD_LOCK_MS and archives them
after SHARE_DELIVERY_COUNT_LIMIT deliveries.

- every record delivered and ACCEPTed exactly once in the normal case;
- RELEASE → redelivered with delivery_count + 1; REJECT → never redelivered;
- a lock that times out (a member holding records unacknowledged) → the
  records go to another member, after the lock duration;
- a member SIGKILLed → its acquired records go to the others;
- the delivery count limit reached → archived, never delivered again;
- and after every scenario a fresh member of the group is handed nothing:
  what was acknowledged reached the broker.

The same scenarios run for confluent-kafka's ShareConsumer (the reference,
Preview) side by side; bad input to fastkc's consumer (a record acknowledged
twice, another consumer's record, after close()) raises typed errors and
loses nothing.
"""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pytest

from fastkc import AcknowledgeType, KafkaShareConsumer, TopicPartition, errors
from tests.support.kafka_tools import Message, create_topic, produce, unique_name
from tests.support.share import (
    SHARE_DELIVERY_COUNT_LIMIT,
    SHARE_RECORD_LOCK_MS,
    SHARE_SESSION_TIMEOUT_MS,
    accept_ledger_problems,
    set_share_auto_offset_reset,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FASTKC, CONFLUENT = "fastkc", "confluent"


@pytest.fixture(params=[FASTKC, CONFLUENT])
def flavour(request):
    """Each scenario runs for fastkc and, side by side, for confluent-kafka's
    ShareConsumer (the reference: a scenario it fails is a wrong test)."""
    return request.param


@dataclass
class Member:
    """One worker process and the file it writes."""

    name: str
    proc: subprocess.Popen
    out: str

    def stderr(self):
        with open(self.out + ".err") as f:
            return f.read()[-3000:]

    def events(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]


@dataclass
class Scenario:
    """A topic, a share group set to start at the earliest offsets, and its member processes."""

    bootstrap: str
    flavour: str
    workdir: str
    partitions: int
    topic: str = ""
    group: str = ""
    written: list = field(default_factory=list)  # (partition, offset) as the producer got them acknowledged
    members: list = field(default_factory=list)

    def __post_init__(self):
        self.topic = create_topic(self.bootstrap, unique_name("share-" + self.flavour), partitions=self.partitions)
        self.group = unique_name("share-group-" + self.flavour)
        set_share_auto_offset_reset(self.bootstrap, self.group, "earliest")
        self.stop_file = os.path.join(self.workdir, self.group + ".stop")

    def produce(self, count):
        first = len(self.written)
        written = produce(self.bootstrap, self.topic, [
            Message(key=b"k%d" % i, value=b"v%d" % i, partition=i % self.partitions)
            for i in range(first, first + count)])
        self.written += [(w.partition, w.offset) for w in written]

    def start(self, behaviour, name=None, deadline=60.0):
        name = name or "{0}-{1}".format(behaviour, len(self.members))
        out = os.path.join(self.workdir, "{0}-{1}.jsonl".format(self.group, name))
        open(out, "w").close()
        # stderr to a file: a pipe nobody reads would block a chatty member
        with open(out + ".err", "w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.share_worker", "--flavour", self.flavour,
                 "--bootstrap", self.bootstrap, "--topic", self.topic, "--group", self.group,
                 "--behaviour", behaviour, "--out", out, "--stop", self.stop_file, "--deadline", str(deadline)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        member = Member(name, proc, out)
        self.members.append(member)
        return member

    def wait_for(self, condition, timeout, what):
        """Poll the members' files until condition(self) holds; fail after `timeout` s."""
        deadline = time.monotonic() + timeout
        while not condition(self):
            for member in self.members:
                if member.proc.poll() not in (None, 0, -signal.SIGKILL):
                    pytest.fail("member {0} exited {1}: {2}".format(
                        member.name, member.proc.returncode, member.stderr()))
            if time.monotonic() > deadline:
                pytest.fail("{0}: not within {1:.0f}s; deliveries {2}".format(what, timeout, self.deliveries()))
            time.sleep(0.1)

    def stop(self, timeout=30.0):
        """Ask every member to finish, and wait for each to close (or be gone)."""
        open(self.stop_file, "w").close()
        for member in self.members:
            try:
                member.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                member.proc.kill()
                member.proc.wait(10)
                pytest.fail("member {0} did not close within {1:.0f}s".format(member.name, timeout))
            if member.proc.returncode not in (0, -signal.SIGKILL):
                pytest.fail("member {0} exited {1}: {2}".format(
                    member.name, member.proc.returncode, member.stderr()))

    def kill(self, member):
        member.proc.send_signal(signal.SIGKILL)
        member.proc.wait(10)

    # --- the ledger ---------------------------------------------------------------------------
    def deliveries(self):
        """{(partition, offset): [(delivery_count, member name, time)]} in time order."""
        seen = defaultdict(list)
        for member in self.members:
            for event in member.events():
                if event["e"] == "got":
                    seen[(event["p"], event["o"])].append((event["dc"], member.name, event["t"]))
        return {key: sorted(value, key=lambda d: d[2]) for key, value in seen.items()}

    def acknowledgements(self):
        """{(partition, offset): Counter of acknowledgement types}, over every member."""
        acks = defaultdict(Counter)
        for member in self.members:
            for event in member.events():
                if event["e"] == "ack":
                    acks[(event["p"], event["o"])][event["type"]] += 1
        return acks

    def failed_commits(self):
        return [(m.name, e) for m in self.members for e in m.events() if e["e"] == "committed" and not e["ok"]]

    def start_holding(self, name):
        """A member that takes its first records and holds them unacknowledged;
        returns it and {(partition, offset): (delivery_count, time handed)}."""
        member = self.start("hold", name=name)
        self.wait_for(lambda s: any(e["e"] == "holding" for e in member.events()), 45,
                      "the first records of " + name)
        return member, {(e["p"], e["o"]): (e["dc"], e["t"]) for e in member.events() if e["e"] == "got"}

    def assert_each_accepted_once(self):
        """The offset sets and per-offset counts: each written record ACCEPTed once, nothing else acknowledged."""
        problems = accept_ledger_problems(self.written, self.acknowledgements())
        assert not problems, problems

    def nothing_left(self, seconds=4.0):
        """A fresh member of the group, after the others closed, is handed nothing."""
        checker = self.start("accept", name="checker", deadline=seconds + 10)
        self.wait_for(lambda s: any(e["e"] == "start" for e in checker.events()), 30, "the checker's start")
        time.sleep(seconds)
        self.stop()
        handed = [(e["p"], e["o"], e["dc"]) for e in checker.events() if e["e"] == "got"]
        assert handed == [], "records left in the group after the scenario: {0}".format(handed[:20])

    def cleanup(self):
        open(self.stop_file, "w").close()
        for member in self.members:
            if member.proc.poll() is None:
                member.proc.kill()
                member.proc.wait(10)


@pytest.fixture
def scenario(share_broker, tmp_path):
    made = []

    def make(flavour, partitions=2):
        s = Scenario(share_broker.bootstrap_servers, flavour, str(tmp_path), partitions)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


def _all_accepted(s):
    acks = s.acknowledgements()
    return all(acks.get(key, {}).get("ACCEPT") for key in s.written)


def _settled(s):
    """Every record answered with ACCEPT or REJECT (the mixed behaviour's final answers)."""
    acks = s.acknowledgements()
    return all(acks.get(key, {}).get("ACCEPT") or acks.get(key, {}).get("REJECT") for key in s.written)


# --- the normal case, RELEASE and REJECT (one run per flavour, several members) ---------------
def run_mixed(scenario, flavour):
    """Four members on two partitions answering by the mixed rule; records
    written before and while they run."""
    s = scenario(flavour, partitions=2)
    s.produce(200)
    for _ in range(4):
        s.start("mixed")
    s.wait_for(lambda s: len(s.deliveries()) >= 1, 45, "the first delivery")
    s.produce(200)
    s.wait_for(_settled, 60, "every record accepted or rejected")
    s.stop()
    s.nothing_left()
    return s


def check_mixed(s):
    deliveries, acks = s.deliveries(), s.acknowledgements()
    assert not s.failed_commits()
    assert set(deliveries) == set(s.written), "handed records that were never written, or missed some"
    assert set(acks) == set(s.written), "acknowledged records that were never written, or missed some"
    for key in s.written:
        _, offset = key
        counts = [dc for dc, _, _ in deliveries[key]]
        if offset % 4 == 1:
            # RELEASE → delivered again, its delivery count one higher; then ACCEPTed once
            assert counts == [1, 2], (key, deliveries[key])
            assert acks[key] == Counter({"RELEASE": 1, "ACCEPT": 1}), (key, acks[key])
        elif offset % 4 == 3:
            # REJECT → never delivered again
            assert counts == [1], (key, deliveries[key])
            assert acks[key] == Counter({"REJECT": 1}), (key, acks[key])
        else:
            # the normal case: delivered and ACCEPTed exactly once
            assert counts == [1], (key, deliveries[key])
            assert acks[key] == Counter({"ACCEPT": 1}), (key, acks[key])


@pytest.mark.timeout(150)
def test_accept_exactly_once_release_redelivers_reject_never(scenario, flavour):
    check_mixed(run_mixed(scenario, flavour))


# --- acquisition lock timeout ------------------------------------------------------------------
def run_lock_timeout(scenario, flavour):
    s = scenario(flavour, partitions=1)
    s.produce(50)
    holder, held = s.start_holding("holder")
    s.start("accept", name="taker")
    s.wait_for(_all_accepted, 45, "every record accepted by the taker")
    holder_still_open = holder.proc.poll() is None
    s.stop()
    s.nothing_left()
    return s, held, holder_still_open


@pytest.mark.timeout(120)
def test_a_lock_that_times_out_hands_the_records_to_another_member(scenario, flavour):
    s, held, holder_still_open = run_lock_timeout(scenario, flavour)
    _check_lock_timeout(s, held, holder_still_open)


def _check_lock_timeout(s, held, holder_still_open):
    assert held and holder_still_open
    deliveries = s.deliveries()
    for key, (dc, acquired_at) in held.items():
        again = [(d, who, t) for d, who, t in deliveries[key] if who == "taker"]
        assert again, (key, deliveries[key])
        d, _, t = again[0]
        assert d == dc + 1, (key, deliveries[key])
        # not before the lock ran out (the holder neither acknowledged nor left; the
        # broker acquired a little before the holder was handed the records, hence
        # the second of slack), and before the broker would have expired its session
        assert SHARE_RECORD_LOCK_MS / 1000 - 1.0 <= t - acquired_at < SHARE_SESSION_TIMEOUT_MS / 1000, (
            key, t - acquired_at)
    s.assert_each_accepted_once()


# --- a member SIGKILLed -------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_a_killed_members_records_go_to_the_others(scenario, flavour):
    s = scenario(flavour, partitions=1)
    s.produce(50)
    victim, held = s.start_holding("victim")
    s.kill(victim)
    for _ in range(2):
        s.start("accept")
    s.wait_for(_all_accepted, 45, "every record accepted by the survivors")
    s.stop()
    s.nothing_left()
    deliveries = s.deliveries()
    assert held
    for key, (dc, _) in held.items():
        later = [d for d, who, _ in deliveries[key] if who != "victim"]
        assert later == [dc + 1], (key, deliveries[key])
    s.assert_each_accepted_once()


# --- the delivery count limit -------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_the_delivery_count_limit_archives_the_record(scenario, flavour):
    s = scenario(flavour, partitions=1)
    s.produce(20)
    for _ in range(2):
        s.start("release")
    # Released every time: delivered 1, 2, ..., limit times, then archived.
    s.wait_for(lambda s: all(len(s.deliveries().get(key, ())) >= SHARE_DELIVERY_COUNT_LIMIT for key in s.written),
               45, "every record delivered up to the limit")
    time.sleep(1.0)  # room for a delivery past the limit, which must not come
    s.stop()
    s.nothing_left()
    deliveries = s.deliveries()
    for key in s.written:
        counts = [dc for dc, _, _ in deliveries[key]]
        assert counts == list(range(1, SHARE_DELIVERY_COUNT_LIMIT + 1)), (key, deliveries[key])


# --- bad input: typed errors, nothing lost ----------------------------------------------------------
def _poll_until(share, want, timeout=30.0):
    """Records handed by `share` until `want` came (or the timeout)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got += [record for records in share.poll(timeout_ms=300).values() for record in records]
    return got


@pytest.mark.timeout(90)
def test_bad_acknowledgements_raise_typed_errors_and_lose_nothing(share_broker, tmp_path):
    """A record acknowledged twice (before and after its commit), acknowledged
    by a consumer it was not delivered to, and acknowledged after close():
    IllegalStateError each time, and still every record ends ACCEPTed once —
    the first answer stands, and what the closed consumer held goes to the
    other member with its delivery count one higher."""
    bootstrap = share_broker.bootstrap_servers
    s = Scenario(bootstrap, FASTKC, str(tmp_path), partitions=1)
    s.produce(10)
    tp = TopicPartition(s.topic, 0)

    def member():
        return KafkaShareConsumer(s.topic, bootstrap_servers=bootstrap, group_id=s.group,
                                  share_acknowledgement_mode="explicit", request_timeout_ms=10000)

    accepted = Counter()
    first, second = member(), member()
    try:
        handed = _poll_until(first, 2)
        assert len(handed) >= 2 and all(r.delivery_count == 1 for r in handed)
        stranger, kept = handed[0], handed[-1]
        second.poll(timeout_ms=300)  # a member of the group too
        with pytest.raises(errors.IllegalStateError, match="not delivered"):
            second.acknowledge(stranger)
        with pytest.raises(errors.IllegalStateError, match="not delivered"):
            second.acknowledge_batch([stranger])
        first.acknowledge(stranger)  # still the first member's to settle
        with pytest.raises(errors.IllegalStateError, match="acknowledged already"):
            first.acknowledge(stranger, AcknowledgeType.REJECT)
        for record in handed[1:-1]:
            first.acknowledge(record)
        assert first.commit_sync(timeout_ms=10000) == {tp: None}
        accepted.update(r.offset for r in handed[:-1])
        with pytest.raises(errors.IllegalStateError):
            first.acknowledge(stranger)  # twice, after its commit
        first.close(timeout_ms=10000)
        with pytest.raises(errors.IllegalStateError, match="closed"):
            first.acknowledge(kept)
        # what the first member held unsettled (kept, and whatever it acquired but had not
        # handed out yet) comes to the second, one delivery later; nothing else comes again
        rest = _poll_until(second, 10 - len(accepted), timeout=30.0)
        for record in rest:
            second.acknowledge(record)
        assert second.commit_sync(timeout_ms=10000) == {tp: None}
        accepted.update(r.offset for r in rest)
        assert kept.offset in [r.offset for r in rest]
        assert all(r.delivery_count == 2 for r in rest), [(r.offset, r.delivery_count) for r in rest]
    finally:
        first.close(timeout_ms=5000)
        second.close(timeout_ms=5000)
    assert accepted == Counter(range(10)), accepted
    s.nothing_left(seconds=3.0)
    s.cleanup()


def test_the_accept_ledger_compares_offset_sets_and_counts():
    """No broker: the ledger the scenarios assert with catches what a count and a sum would not."""
    written = [(0, o) for o in range(4)]
    once = {key: Counter({"ACCEPT": 1}) for key in written}
    assert accept_ledger_problems(written, once) == []
    # {0, 2, 2, 2} for {0, 1, 2, 3}: four ACCEPTs whose offsets add up to 6, as 0+1+2+3 does
    same_sum = {(0, 0): Counter({"ACCEPT": 1}), (0, 2): Counter({"ACCEPT": 3})}
    problems = accept_ledger_problems(written, same_sum)
    assert any("never ACCEPTed: [(0, 1), (0, 3)]" in p for p in problems), problems
    assert any("(0, 2), {'ACCEPT': 3}" in p for p in problems), problems
    stray = {**once, (1, 0): Counter({"ACCEPT": 1})}
    assert accept_ledger_problems(written, stray) == ["acknowledged but never written: [(1, 0)]"]
    released = {**once, (0, 3): Counter({"ACCEPT": 1, "RELEASE": 1})}
    assert accept_ledger_problems(written, released) == [
        "not ACCEPTed exactly once (and nothing else): [((0, 3), {'ACCEPT': 1, 'RELEASE': 1})]"]
