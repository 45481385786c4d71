"""A coordinator outage stalls no partition (Java's consumer keeps fetching
while it looks for a new coordinator; commits wait, fetching does not).

The fake broker serves an endless log (a few records per Fetch, from the
fetch offset on) while, for OUTAGE_S, every group request it gets is refused
as a moving coordinator does: FindCoordinator answers
COORDINATOR_NOT_AVAILABLE, Heartbeat / OffsetCommit / OffsetFetch answer
NOT_COORDINATOR. Through the outage poll() keeps handing out records with
gaps far below the outage; the commits asked for meanwhile (auto commit or
commit_async) land after it, and no commit the broker accepted is ever past
what poll() had handed out. The same for fastkc.aio's getmany (auto
commit)."""
import asyncio
import threading
import time

import pytest

from fastkc import KafkaConsumer
from fastkc.aio import AIOKafkaConsumer
from fastkc.group.coordinator_machine import CoordinatorUnknownError
from fastkc.structs import TopicPartition
from tests.support.batchgen import Record, record_batch
from tests.support.fake_broker import FakeBroker, answer, silence

OUTAGE_S = 3.0
#: the longest pause poll() may show during the outage: a few poll rounds (on a
#: loaded machine), a third of the outage
MAX_GAP_S = 1.0
PER_FETCH = 5
NOT_COORDINATOR = 16
COORDINATOR_NOT_AVAILABLE = 15
TOPIC = "t"
SETTINGS = dict(auto_commit_interval_ms=200, request_timeout_ms=2000, retry_backoff_ms=50, heartbeat_interval_ms=100,
                session_timeout_ms=10000, auto_offset_reset="earliest")


class Outage:
    """The refusal window, opened by the test; `ended` is when it closed."""

    def __init__(self):
        self.until = 0.0
        self.lock = threading.Lock()

    def start(self, seconds):
        with self.lock:
            self.until = time.monotonic() + seconds

    @property
    def on(self):
        with self.lock:
            return time.monotonic() < self.until


def _endless_fetch(header, body, default):
    """PER_FETCH records from each partition's fetch offset on, a short
    pause per answer (a broker's wait for new data)."""
    wanted = {p["partition"]: p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}
    for topic in default["responses"]:
        for part in topic["partitions"]:
            offset = wanted.get(part["partition_index"], 0)
            records = [Record(value=b"v%d" % (offset + i), offset_delta=i, timestamp_delta=i)
                       for i in range(PER_FETCH)]
            part["records"] = record_batch(records, base_offset=offset)
            part["high_watermark"] = part["last_stable_offset"] = offset + PER_FETCH
    time.sleep(0.02)
    return default


def _refused_while(outage, code, shape, mode):
    """The default answer, or during the outage a refusal (mode "refused")
    or nothing at all: the connection stalls (mode "stalled")."""
    def act(link, request):
        if outage.on and mode == "stalled":
            link.stalled = True
            return
        default = request.default_body()
        body = shape(default, code) if outage.on else default
        answer(lambda header, body_, default_: body)(link, request)
    return act


def _refused(entries=None):
    """The answer's top-level error code, and each entry's of the list
    `entries` names (FindCoordinator's coordinators, OffsetFetch's groups)."""
    def shape(default, code):
        for entry in default.get(entries) or [] if entries else []:
            entry["error_code"] = code
        default["error_code"] = code
        return default
    return shape


def _commit_refused(default, code):
    for topic in default["topics"]:
        for part in topic["partitions"]:
            part["error_code"] = code
    return default


def _script_outage(broker, outage, mode):
    broker.script("Fetch", answer(_endless_fetch))
    broker.script("FindCoordinator", _refused_while(outage, COORDINATOR_NOT_AVAILABLE, _refused("coordinators"), mode))
    broker.script("Heartbeat", _refused_while(outage, NOT_COORDINATOR, _refused(), mode))
    broker.script("OffsetCommit", _refused_while(outage, NOT_COORDINATOR, _commit_refused, mode))
    broker.script("OffsetFetch", _refused_while(outage, NOT_COORDINATOR, _refused("groups"), mode))


class Flow:
    """What poll()/getmany handed out, checked against what the broker
    accepted as committed, and the longest pause in the hand-out while the
    outage lasts."""

    def __init__(self, broker, group):
        self.broker = broker
        self.group = group
        self.handed = {}  # partition -> one past the last offset handed out
        self.ahead = []  # (partition, committed, handed) the broker accepted past the hand-out
        self.last_records = None
        self.gap = 0.0

    def saw(self, batch):
        for tp, records in batch.items():
            self.handed[tp.partition] = records[-1].offset + 1
        for (group, _topic, partition), offset in list(self.broker.committed.items()):
            if group == self.group and offset > self.handed.get(partition, 0):
                self.ahead.append((partition, offset, self.handed.get(partition, 0)))
        if batch and self.last_records is not None:
            now = time.monotonic()
            self.gap = max(self.gap, now - self.last_records)
            self.last_records = now

    def outage_started(self):
        self.last_records = time.monotonic()

    def outage_ended(self):
        """The longest pause, the tail up to now included; what was handed out."""
        self.gap = max(self.gap, time.monotonic() - self.last_records)
        self.last_records = None
        assert self.gap < MAX_GAP_S, "nothing handed out for {0:.2f} s of a {1} s outage".format(self.gap, OUTAGE_S)
        return dict(self.handed)

    def committed_at_least(self, offsets):
        return all(self.broker.committed.get((self.group, TOPIC, p), -1) >= offset for p, offset in offsets.items())


@pytest.mark.parametrize("mode", ["refused", "stalled"])
@pytest.mark.parametrize("commits", ["auto", "commit_async"])
def test_poll_keeps_flowing_while_the_coordinator_is_lost(commits, mode):
    outage = Outage()
    failed = []  # asynchronous commits that ended with an error
    with FakeBroker(topics={TOPIC: 2}, records=0) as broker:
        _script_outage(broker, outage, mode)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="g-outage",
                                 enable_auto_commit=commits == "auto",
                                 default_offset_commit_callback=lambda offsets, error: error and failed.append(error),
                                 **SETTINGS)
        consumer.subscribe([TOPIC])
        flow = Flow(broker, "g-outage")

        def poll_round():
            flow.saw(consumer.poll(timeout_ms=50))
            if commits == "commit_async":
                consumer.commit_async(callback=lambda offsets, error: error and failed.append(error))

        try:
            deadline = time.monotonic() + 10
            while len(flow.handed) < 2 and time.monotonic() < deadline:
                poll_round()
            assert len(flow.handed) == 2, "no records from both partitions before the outage"
            outage.start(OUTAGE_S)
            flow.outage_started()
            while outage.on:
                poll_round()
            during = flow.outage_ended()
            # after the outage the commits land: at least what was handed out during it
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not flow.committed_at_least(during):
                poll_round()
            assert flow.committed_at_least(during), (broker.committed, during)
            assert flow.ahead == []
            if commits == "auto":
                # one auto commit waited through the outage with ever newer positions: none expired
                assert failed == []
            else:
                # a commit_async asked for during the outage may run out of time: typed, retriable
                assert all(isinstance(e, CoordinatorUnknownError) for e in failed), failed
        finally:
            consumer.close(autocommit=False)
        assert not broker.errors


@pytest.mark.parametrize("mode", ["refused", "stalled"])
def test_getmany_keeps_flowing_while_the_coordinator_is_lost(mode):
    outage = Outage()

    async def scenario(broker):
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, group_id="g-aio-outage",
                                    enable_auto_commit=True, **SETTINGS)
        await consumer.start()
        flow = Flow(broker, "g-aio-outage")
        try:
            deadline = time.monotonic() + 10
            while len(flow.handed) < 2 and time.monotonic() < deadline:
                flow.saw(await consumer.getmany(timeout_ms=50))
            assert len(flow.handed) == 2, "no records from both partitions before the outage"
            outage.start(OUTAGE_S)
            flow.outage_started()
            while outage.on:
                flow.saw(await consumer.getmany(timeout_ms=50))
            during = flow.outage_ended()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not flow.committed_at_least(during):
                flow.saw(await consumer.getmany(timeout_ms=50))
            assert flow.committed_at_least(during), (broker.committed, during)
            assert flow.ahead == []
        finally:
            await consumer.stop()

    with FakeBroker(topics={TOPIC: 2}, records=0) as broker:
        _script_outage(broker, outage, mode)
        asyncio.run(asyncio.wait_for(scenario(broker), 60))
        assert not broker.errors


#: the request timeout while the coordinator holds a committed-offset read
HELD_READ_TIMEOUT_MS = 4000
COMMITTED = {0: 7, 1: 11}


def _first_offsets_while_the_read_is_held(broker, group):
    """The broker holds the first OffsetFetch (no answer; the client's
    request times out and it asks again) and answers the next."""
    broker.script("Fetch", answer(_endless_fetch))
    for partition, offset in COMMITTED.items():
        broker.committed[(group, TOPIC, partition)] = offset
    broker.script("OffsetFetch", silence(), times=1)
    return dict(SETTINGS, request_timeout_ms=HELD_READ_TIMEOUT_MS, group_id=group, enable_auto_commit=False)


class FirstOffsets:
    """Each partition's first offset handed out, the longest poll, and when
    the first record came."""

    def __init__(self):
        self.began = time.monotonic()
        self.first = {}
        self.longest = 0.0
        self.first_record_s = None

    def saw(self, batch, polled_s):
        self.longest = max(self.longest, polled_s)
        for tp, records in batch.items():
            self.first.setdefault(tp.partition, records[0].offset)
            if self.first_record_s is None:
                self.first_record_s = time.monotonic() - self.began

    @property
    def running(self):
        return len(self.first) < len(COMMITTED) and time.monotonic() < self.began + 30

    def check(self, broker):
        assert self.first == COMMITTED  # nothing handed out before the committed offsets were read
        assert broker.count("OffsetFetch") >= 2  # the held read, then the one answered
        # the first records came after the held read's request timeout: it was held
        assert self.first_record_s >= HELD_READ_TIMEOUT_MS / 1000.0 * 0.9, self.first_record_s
        # and no poll waited for it
        assert self.longest < 0.2 + MAX_GAP_S, self.longest


@pytest.mark.parametrize("start", ["subscribe", "assign"])
def test_a_held_committed_offset_read_does_not_stretch_poll(start):
    """Java keeps its committed-offset request pending from poll to poll;
    poll(timeout_ms) never waits on it. The outage campaign saw a 5 s poll:
    the read a new assignment needed went to a coordinator behind a
    blackhole, and poll waited for its request timeout."""
    with FakeBroker(topics={TOPIC: 2}, records=0) as broker:
        settings = _first_offsets_while_the_read_is_held(broker, "g-held-" + start)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, **settings)
        try:
            if start == "subscribe":
                consumer.subscribe([TOPIC])
            else:
                consumer.assign([TopicPartition(TOPIC, p) for p in COMMITTED])
            seen = FirstOffsets()
            while seen.running:
                began = time.monotonic()
                batch = consumer.poll(timeout_ms=200)
                seen.saw(batch, time.monotonic() - began)
            seen.check(broker)
        finally:
            consumer.close(autocommit=False)
        assert not broker.errors


def test_a_held_committed_offset_read_does_not_stretch_getmany():
    async def scenario(broker, settings):
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, **settings)
        seen = FirstOffsets()
        await consumer.start()  # waits for the assignment, and the group's read of its offsets
        try:
            while seen.running:
                began = time.monotonic()
                batch = await consumer.getmany(timeout_ms=200)
                seen.saw(batch, time.monotonic() - began)
            seen.check(broker)
        finally:
            await consumer.stop()

    with FakeBroker(topics={TOPIC: 2}, records=0) as broker:
        settings = _first_offsets_while_the_read_is_held(broker, "g-held-aio")
        asyncio.run(asyncio.wait_for(scenario(broker, settings), 60))
        assert not broker.errors


#: close()'s bound in the test below, well under the request timeout
CLOSE_TIMEOUT_MS = 1500


@pytest.mark.parametrize("stalled", ["every group request", "LeaveGroup only"])
@pytest.mark.parametrize("autocommit", [True, False])
def test_close_keeps_its_timeout_while_the_coordinator_stalls(autocommit, stalled):
    """close(timeout_ms) is one bound for all its steps (Java's
    close(Duration)): the commit, the wait for the group thread's request in
    flight and the LeaveGroup share it. The fault campaign saw close(3000)
    take 7 s against blackholed brokers: each step had a bound of its own.
    Here the coordinator stalls (no answer, the connection held) every group
    request after records were handed out, so the group thread is inside a
    heartbeat when close() starts -- or only the LeaveGroup. request_timeout_ms
    is longer than the bound, so no request timing out can end close early."""
    group = "g-close-{0}-{1}".format(autocommit, stalled.split()[0])
    outage = Outage()
    with FakeBroker(topics={TOPIC: 2}, records=0) as broker:
        if stalled == "every group request":
            _script_outage(broker, outage, "stalled")
        else:
            broker.script("Fetch", answer(_endless_fetch))
        broker.script("LeaveGroup", _refused_while(outage, NOT_COORDINATOR, _refused(), "stalled"))
        settings = dict(SETTINGS, request_timeout_ms=4 * CLOSE_TIMEOUT_MS, auto_commit_interval_ms=60000)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=True,
                                 **settings)
        handed = 0
        try:
            consumer.subscribe([TOPIC])
            deadline = time.monotonic() + 10
            while handed < 20 and time.monotonic() < deadline:
                handed += sum(len(records) for records in consumer.poll(timeout_ms=50).values())
            assert handed >= 20, "no records before the stall"
            outage.start(60)
            time.sleep(0.3)  # a heartbeat goes out (and, stalling every request, is held)
            began = time.monotonic()
            consumer.close(autocommit=autocommit, timeout_ms=CLOSE_TIMEOUT_MS)
            took = time.monotonic() - began
        finally:
            consumer.close(autocommit=False)
        # the bound, plus the fetch sessions' close (at most 1 s, against a
        # broker whose Fetch still answers) and slack for a loaded machine
        assert took < CLOSE_TIMEOUT_MS / 1000.0 + 1.5, took
        if stalled == "LeaveGroup only" and autocommit:
            assert broker.committed  # the commit went through before the LeaveGroup stalled
        # no commit past the hand-out
        assert all(offset <= handed for (g, _t, _p), offset in broker.committed.items() if g == group)
        assert not broker.errors
