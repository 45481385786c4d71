"""Consumer groups through the asyncio API: subscribe by topics and by
pattern with a listener (async and sync callbacks), commit/committed/
seek_to_committed, stop() under auto-commit, and a member SIGKILLed while
the other takes over."""
import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.support.aio_tools import drain, run_scenario
from tests.support.group_worker import read_events
from tests.support.kafka_tools import Message, create_topic, produce, unique_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# short, so the suite stays fast; the broker harness allows down to 1 s
GROUP_TIMING = dict(session_timeout_ms=6000, heartbeat_interval_ms=300)


def _fill(bootstrap, topic, partitions, per_partition):
    produce(bootstrap, topic, [Message(value=b"%d-%d" % (p, i), partition=p)
                               for p in range(partitions) for i in range(per_partition)])


def _listener_class(flavour, events, name, consumer_box, *, use_async):
    """A listener logging (event, member, partitions, assignment seen inside the callback, time)."""

    def log(kind, partitions):
        consumer = consumer_box[0]
        events.append((kind, name, frozenset(partitions), frozenset(consumer.assignment()), time.monotonic()))

    if use_async:
        class Listener(flavour.ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                await asyncio.sleep(0)
                log("revoked", revoked)

            async def on_partitions_assigned(self, assigned):
                await asyncio.sleep(0)
                log("assigned", assigned)
    else:
        class Listener(flavour.ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                log("revoked", revoked)

            def on_partitions_assigned(self, assigned):
                log("assigned", assigned)
    return Listener()


async def _until(predicate, timeout, what, *consumers, collected=None):
    """Keep the consumers polling (as an application does) until predicate();
    what they return goes to collected[consumer] when a dict is given."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        for consumer in consumers:
            batch = await consumer.getmany(timeout_ms=50)
            if collected is not None:
                collected.setdefault(consumer, []).extend(r for records in batch.values() for r in records)
        await asyncio.sleep(0.05)


def test_subscribe_with_listener_group_of_one_then_two(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=4)
    _fill(bootstrap, topic, 4, 10)
    group = unique_name("g")
    events = []

    async def scenario(consumers):
        tps = {consumers.tp(topic, p) for p in range(4)}
        first_box, second_box = [], []
        first = consumers.new(group_id=group, auto_offset_reset="earliest", **GROUP_TIMING)
        first_box.append(first)
        first.subscribe([topic], listener=_listener_class(flavour, events, "first", first_box, use_async=True))
        await first.start()
        records = await drain(first, 40)
        assert first.assignment() == tps
        second = consumers.new(group_id=group, auto_offset_reset="earliest", **GROUP_TIMING)
        second_box.append(second)
        second.subscribe([topic], listener=_listener_class(flavour, events, "second", second_box, use_async=False))
        await second.start()
        await _until(lambda: first.assignment() and second.assignment()
                     and len(first.assignment()) + len(second.assignment()) == 4, 30, "the shared assignment",
                     first, second)

        def heard_last(name, consumer):
            said = [(kind, parts) for kind, who, parts, _, _ in events if who == name and parts]
            return bool(said) and said[-1] == ("assigned", frozenset(consumer.assignment()))

        # an async listener may still be on its way to logging the assignment it was given
        await _until(lambda: heard_last("first", first) and heard_last("second", second), 30,
                     "the listeners to hear the shared assignment", first, second)
        # what the listeners heard before stop() (which revokes too, as the Java client's close())
        return tps, records, first.assignment(), second.assignment(), list(events)

    tps, records, first_end, second_end, heard = aio(scenario)
    assert sorted((r.partition, r.offset, r.value) for r in records) == [
        (p, i, b"%d-%d" % (p, i)) for p in range(4) for i in range(10)]
    assert first_end | second_end == tps and not first_end & second_end
    calls = [e for e in heard if e[2]]  # aiokafka also reports an empty revocation for a new member
    first_calls = [(kind, set(parts)) for kind, name, parts, _, _ in calls if name == "first"]
    assert first_calls[:2] == [("assigned", tps), ("revoked", tps)]
    assert first_calls[-1] == ("assigned", set(first_end))
    second_calls = [(kind, set(parts)) for kind, name, parts, _, _ in calls if name == "second"]
    assert second_calls[-1] == ("assigned", set(second_end))
    # inside on_partitions_assigned the consumer's assignment is already the new one
    for kind, _, parts, seen, _ in calls:
        if kind == "assigned":
            assert seen == parts
    # every revocation of the rebalance comes before any assignment of it
    first_revoked = [t for kind, name, parts, _, t in calls if kind == "revoked" and parts == frozenset(tps)]
    new_assigned = [t for kind, name, parts, _, t in calls if kind == "assigned" and parts != frozenset(tps)]
    assert first_revoked and new_assigned and min(new_assigned) > first_revoked[0]


def test_subscribe_by_pattern(aio, bootstrap, make_topic, flavour):
    prefix = "pat-" + uuid.uuid4().hex[:8]
    topic_a = make_topic(partitions=2, prefix=prefix)
    topic_b = make_topic(partitions=1, prefix=prefix)
    make_topic(partitions=1, prefix="unrelated-" + prefix)
    produce(bootstrap, topic_a, [Message(value=b"a", partition=1)])
    events = []

    async def scenario(consumers):
        box = []
        consumer = consumers.new(group_id=unique_name("g"), auto_offset_reset="earliest", metadata_max_age_ms=1000,
                                 **GROUP_TIMING)
        box.append(consumer)
        consumer.subscribe(pattern="^" + prefix + "-.*",
                           listener=_listener_class(flavour, events, "only", box, use_async=False))
        await consumer.start()
        first = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        got = await drain(consumer, 1, settle_ms=0)
        # a matching topic created later joins the subscription
        topic_c = prefix + "-late-" + uuid.uuid4().hex[:6]
        create_topic(bootstrap, topic_c, partitions=1)
        await _until(lambda: consumers.tp(topic_c, 0) in consumer.assignment(), 30, "the new topic", consumer)
        produce(bootstrap, topic_c, [Message(value=b"c")])
        late = await drain(consumer, 1)
        return first, got, topic_c, late, consumer.subscription()

    first, got, topic_c, late, subscription = aio(scenario)
    assert first == {(topic_a, 0), (topic_a, 1), (topic_b, 0)}
    assert [(r.topic, r.partition, r.offset, r.value) for r in got] == [(topic_a, 1, 0, b"a")]
    assert [(r.topic, r.value) for r in late] == [(topic_c, b"c")]
    assert {topic_a, topic_b, topic_c} <= set(subscription)
    assigned = [set(parts) for kind, _, parts, _, _ in events if kind == "assigned" and parts]
    assert any((topic_c, 0) in {(tp.topic, tp.partition) for tp in parts} for parts in assigned)


def test_commit_committed_seek_to_committed(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=1)
    _fill(bootstrap, topic, 1, 30)
    group = unique_name("g")

    async def scenario(consumers):
        tp = consumers.tp(topic, 0)
        consumer = await consumers.started(group_id=group, enable_auto_commit=False, auto_offset_reset="earliest")
        consumer.assign([tp])
        assert await consumer.committed(tp) is None
        first = await drain(consumer, 10, max_records=10, settle_ms=0)
        assert await consumer.position(tp) == 10
        await consumer.commit()  # the consumed positions
        after_commit = await consumer.committed(tp)
        await consumer.commit({tp: 4})
        after_four = await consumer.committed(tp)
        await consumer.commit({tp: flavour.OffsetAndMetadata(6, "meta")})
        after_six = await consumer.committed(tp)
        consumer.seek(tp, 20)
        seek_result = await consumer.seek_to_committed(tp)
        position = await consumer.position(tp)
        record = await consumer.getone()
        # another member of the group starts at the committed offset, not at auto_offset_reset's
        other = await consumers.started(group_id=group, enable_auto_commit=False, auto_offset_reset="latest")
        other.assign([tp])
        other_position = await other.position(tp)
        # without a group there is nothing to commit to
        lone = await consumers.started(auto_offset_reset="earliest")
        lone.assign([tp])
        with pytest.raises(flavour.errors.IllegalOperation):
            await lone.commit()
        with pytest.raises(flavour.errors.IllegalOperation):
            await lone.committed(tp)
        return (len(first), after_commit, after_four, after_six, seek_result, position, record.offset,
                other_position, tp)

    (count, after_commit, after_four, after_six, seek_result, position, offset, other_position,
     tp) = aio(scenario)
    assert count == 10
    assert (after_commit, after_four, after_six) == (10, 4, 6)
    assert seek_result == {tp: 6}
    assert (position, offset, other_position) == (6, 6, 6)


def test_commit_of_a_partition_not_assigned(aio, bootstrap, make_topic, flavour, reference_deviates):
    reference_deviates("commit(offsets) refuses partitions not assigned to this consumer (IllegalStateError); "
                       "the Java client's commitSync(offsets) commits any partition for the group")
    topic = make_topic(partitions=2)
    group = unique_name("g")

    async def scenario(consumers):
        consumer = await consumers.started(group_id=group, enable_auto_commit=False)
        consumer.assign([consumers.tp(topic, 0)])
        other = consumers.tp(topic, 1)
        await consumer.commit({other: 3})
        return await consumer.committed(other)

    assert aio(scenario) == 3


def test_stop_commits_and_leaves_the_group(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=2)
    _fill(bootstrap, topic, 2, 20)
    group = unique_name("g")
    # a long session: a member that did not leave would keep its partition for 30 s
    timing = dict(session_timeout_ms=30000, heartbeat_interval_ms=500)

    async def scenario(consumers):
        leaving = consumers.new(group_id=group, auto_offset_reset="earliest", enable_auto_commit=True,
                                auto_commit_interval_ms=600_000, **timing)
        leaving.subscribe([topic])
        await leaving.start()
        staying = consumers.new(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **timing)
        staying.subscribe([topic])
        await staying.start()
        collected = {}
        await _until(lambda: len(leaving.assignment()) == 1 and len(staying.assignment()) == 1, 40,
                     "one partition each", leaving, staying, collected=collected)
        (mine,) = leaving.assignment()
        (theirs,) = staying.assignment()
        # what the leaving member read of its partition while the group formed, then the rest
        consumed = [r for r in collected.get(leaving, []) if r.partition == mine.partition]
        if len(consumed) < 20:
            consumed += await drain(leaving, 20 - len(consumed), settle_ms=0)
        assert await leaving.position(mine) == 20
        stopped_at = time.monotonic()
        await leaving.stop()  # commits (auto-commit) and sends LeaveGroup
        await _until(lambda: staying.assignment() == {mine, theirs}, 25, "the partitions of the stopped member",
                     staying)
        took = time.monotonic() - stopped_at
        committed = await staying.committed(mine)
        position = await staying.position(mine)
        # nothing of the stopped member's partition comes again
        extra = await staying.getmany(mine, timeout_ms=1000)
        return consumed, took, committed, position, extra

    consumed, took, committed, position, extra = aio(scenario, timeout=90)
    assert [r.offset for r in consumed] == list(range(20)) and len({r.partition for r in consumed}) == 1
    assert took < 10, "the other member got the partition only after {0:.1f}s (session timeout 30s)".format(took)
    assert (committed, position) == (20, 20)
    assert extra == {}


def test_stop_revokes_through_the_listener(aio, bootstrap, make_topic, flavour, reference_deviates):
    reference_deviates("stop() does not call on_partitions_revoked (its documentation says so); the Java "
                       "client's close() calls onPartitionsRevoked for the partitions it gives up")
    topic = make_topic(partitions=2)
    events = []

    async def scenario(consumers):
        box = []
        consumer = consumers.new(group_id=unique_name("g"), auto_offset_reset="earliest", **GROUP_TIMING)
        box.append(consumer)
        consumer.subscribe([topic], listener=_listener_class(flavour, events, "only", box, use_async=True))
        await consumer.start()
        await _until(lambda: len(consumer.assignment()) == 2, 30, "the assignment", consumer)
        await consumer.stop()
        return {consumers.tp(topic, 0), consumers.tp(topic, 1)}

    tps = aio(scenario)
    assert [(kind, set(parts)) for kind, _, parts, _, _ in events if parts] == [("assigned", tps), ("revoked", tps)]


def test_unsubscribe_then_assign(aio, bootstrap, make_topic, flavour):
    topic = make_topic(partitions=2)
    _fill(bootstrap, topic, 2, 3)

    async def scenario(consumers):
        # no commits: the records read while waiting must not move where assign() starts
        consumer = consumers.new(group_id=unique_name("g"), auto_offset_reset="earliest", enable_auto_commit=False,
                                 **GROUP_TIMING)
        consumer.subscribe([topic])
        await consumer.start()
        await _until(lambda: len(consumer.assignment()) == 2, 30, "the assignment", consumer)
        consumer.unsubscribe()
        after = (consumer.assignment(), consumer.subscription())
        tp1 = consumers.tp(topic, 1)
        consumer.assign([tp1])  # allowed again once unsubscribed
        records = await drain(consumer, 3)
        return after, records

    (assignment, subscription), records = aio(scenario)
    assert assignment == set() and not subscription
    assert [(r.partition, r.offset) for r in records] == [(1, 0), (1, 1), (1, 2)]


def test_kip848_group_fastkc_only(fastkc_aio_flavour, bootstrap, make_topic):
    """fastkc.aio only (aiokafka 0.14 speaks the classic protocol alone):
    group_protocol="consumer" (KIP-848) shares the partitions between two
    members through the listener, and their reads cover the topic once."""
    flavour = fastkc_aio_flavour
    topic = make_topic(partitions=4)
    _fill(bootstrap, topic, 4, 5)
    group = unique_name("g")
    events = []

    async def scenario(consumers):
        members, collected = [], {}
        for name in ("one", "two"):
            box = []
            member = consumers.new(group_id=group, group_protocol="consumer", auto_offset_reset="earliest",
                                   enable_auto_commit=False)
            box.append(member)
            member.subscribe([topic], listener=_listener_class(flavour, events, name, box, use_async=name == "one"))
            await member.start()
            members.append(member)
        await _until(lambda: all(len(m.assignment()) == 2 for m in members), 60, "two partitions each", *members,
                     collected=collected)
        records = [r for m in members for r in collected.get(m, [])]
        for member in members:
            records += await drain(member, 0, settle_ms=500)
        return [m.assignment() for m in members], records

    (first, second), records = run_scenario(flavour, bootstrap, scenario, 90)
    assert first | second == {flavour.TopicPartition(topic, p) for p in range(4)} and not first & second
    # a partition that moved from one member to the other (no commits) is read again from the
    # start, so the reads are compared as a set: nothing missing
    assert {(r.partition, r.offset) for r in records} == {(p, i) for p in range(4) for i in range(5)}


# --- a member killed ------------------------------------------------------------------

def _start_worker(flavour, bootstrap, topic, group, out):
    return subprocess.Popen([sys.executable, "-m", "tests.support.aio_group_worker", flavour.name, bootstrap, topic,
                             group, out, "--batch", "3", "--pause-ms", "60", "--session-timeout-ms", "3000"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


def _owned(events):
    owned = set()
    for ev in events:
        if ev["e"] == "assigned":
            owned = set(ev["tps"])
        elif ev["e"] == "revoked":
            owned -= set(ev["tps"])
    return owned


def _handed(events):
    return [tuple(r) for ev in events if ev["e"] == "records" for r in ev["recs"]]


def test_member_killed_the_other_takes_over(flavour, bootstrap, make_topic, tmp_path):
    """Two members in their own processes (tests/support/aio_group_worker.py),
    committing what they hand out; one is SIGKILLed mid-stream. The other
    gets its partitions after the session timeout and starts each at the
    killed member's last commit: nothing lost, nothing handed twice past it."""
    partitions, per_partition = 4, 60
    topic = make_topic(partitions=partitions)
    _fill(bootstrap, topic, partitions, per_partition)
    everything = {(p, i) for p in range(partitions) for i in range(per_partition)}
    group = unique_name("g")
    logs = [str(tmp_path / "victim.jsonl"), str(tmp_path / "survivor.jsonl")]
    workers = [_start_worker(flavour, bootstrap, topic, group, path) for path in logs]
    try:
        _wait(lambda: all(len(_owned(read_events(path))) == 2 for path in logs), 60, "two partitions each")
        victim_owned = _owned(read_events(logs[0]))
        _wait(lambda: sum(ev["e"] == "committed" for ev in read_events(logs[0])
                          if ev["t"] > max(e["t"] for e in read_events(logs[0]) if e["e"] == "assigned")) >= 3,
              30, "the victim's commits")
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait()
        killed_at = time.time()
        _wait(lambda: _owned(read_events(logs[1])) == set(range(partitions)), 60, "the survivor to own everything")
        _wait(lambda: everything <= set(_handed(read_events(logs[0])) + _handed(read_events(logs[1]))), 60,
              "every record handed out")
        workers[1].send_signal(signal.SIGTERM)
        assert workers[1].wait(30) == 0, workers[1].stderr.read().decode()[-2000:]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()

    victim, survivor = (read_events(path) for path in logs)
    assert victim[-1]["e"] != "closed"  # it really died mid-stream
    assert_no_loss_and_no_late_duplicates(victim, survivor, victim_owned, killed_at, everything, per_partition)


def assert_no_loss_and_no_late_duplicates(victim, survivor, victim_owned, killed_at, everything, per_partition):
    handed = _handed(victim) + _handed(survivor)
    assert set(handed) == everything
    # the group's last accepted commit per partition before the kill (by either member), and the
    # victim's last commit sent: the kill may land between the broker's answer and the log line
    last_commit, last_sent = {}, {}
    for ev in sorted(victim + survivor, key=lambda e: e["t"]):
        if ev["e"] == "committed" and ev["t"] <= killed_at:
            for p, offset in ev["offsets"].items():
                last_commit[int(p)] = offset
    for ev in victim:
        if ev["e"] == "committing":
            for p, offset in ev["offsets"].items():
                last_sent[int(p)] = offset
    taken_over = {}
    for ev in survivor:
        if ev["e"] == "records" and ev["t"] > killed_at:
            for p, offset in ev["recs"]:
                taken_over.setdefault(p, offset)
    for p in victim_owned:
        # the survivor resumes exactly at the last commit: below it would be a duplicate past
        # the commit, above it a loss
        resumed_at = {last_commit.get(p, 0), last_sent.get(p, 0)}
        if min(resumed_at) < per_partition:
            assert taken_over.get(p) in resumed_at, (p, taken_over.get(p), resumed_at)
    counts = {}
    for rec in handed:
        counts[rec] = counts.get(rec, 0) + 1
    for (p, offset), n in counts.items():
        if n > 1:
            # only what the victim handed out and had not committed yet
            assert p in victim_owned and offset >= last_commit.get(p, 0), (p, offset, n)
