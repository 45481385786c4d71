"""The asyncio group driver (fastkc/aio/group_driver.py) on canned answers:
every driver-neutral scenario of tests/support/group_scenarios.py played
through the driver's own task (a scripted transport answers each request the
scenario expects, a fake clock stands for time), then what only a driver
does: events applied in on_app_poll with async listeners, commits inside a
callback, auto commit, cancellation, leaving on stop."""
import asyncio
import collections
import logging

import pytest

from fastkc.aio.abc import ConsumerRebalanceListener
from fastkc.aio.group_driver import AioGroupDriver
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.errors import CommitFailedError, IllegalStateError, KafkaError, RebalanceInProgressError
from fastkc.structs import OffsetAndMetadata
from tests.support import group_scenarios as gs
from tests.support.held_partitions import HeldPartitions

_SETTLE_ROUNDS = 30
_ANSWER_WAIT_S = 2.0


class ScriptedTransport:
    """The transport's three calls, each parked until the test answers it."""

    def __init__(self):
        self.asked = asyncio.Queue()
        self.cluster = ClusterMetadata()
        self.lost = 0
        self.closed = False

    async def _ask(self, target, api, body):
        answer = asyncio.get_running_loop().create_future()
        self.asked.put_nowait((target, api, body, answer))
        result = await answer
        if isinstance(result, BaseException):
            raise result
        return result

    async def call(self, coordinator, api, body, timeout_ms):
        return await self._ask("coordinator", api, body)

    async def request_any(self, api, body, timeout_ms):
        return await self._ask("any", api, body)

    async def metadata(self, topics, timeout_ms):
        view = await self._ask("any", "Metadata", {"topics": topics})
        self.cluster = view
        return view

    def coordinator_version(self, api_name):
        return 1

    async def coordinator_lost(self):
        self.lost += 1

    async def close(self):
        self.closed = True


class DriverMachines:
    """group_scenarios.Machines' face over a running driver (what Act/Check
    steps touch)."""

    def __init__(self, driver, clock):
        self.driver = driver
        self._clock = clock
        self.member = driver.machine
        self.commits = driver.commits
        self.coordinator = driver.coordinator
        self.config = driver.config
        self.sent = []

    @property
    def now(self):
        return self._clock.now

    def bodies(self, api):
        return [body for sent_api, body in self.sent if sent_api == api]


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


async def settle():
    for _ in range(_SETTLE_ROUNDS):
        await asyncio.sleep(0)


def make_config(protocol="classic", **settings):
    config = dict(group_id=gs.GROUP, group_protocol=protocol, enable_auto_commit=False, retry_backoff_ms=100,
                  heartbeat_interval_ms=3000, session_timeout_ms=45000, max_poll_interval_ms=300000)
    config.update(settings)
    return consumer_config(config)


class RecordingApp(HeldPartitions):
    """The app side of the driver interface, recording what it is told."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.position_of = {}
        self.assigned = []

    def positions(self, partitions):
        return {tp: OffsetAndMetadata(self.position_of[tp], "", -1) for tp in partitions if tp in self.position_of}

    def assign_from_group(self, partitions):
        self.assigned = list(partitions)
        self.calls.append(("assign", sorted(p.partition for p in partitions)))

    def revoke_from_group(self, partitions):
        self.calls.append(("revoke", sorted(p.partition for p in partitions)))

    def started(self, tp, offset):
        self.calls.append(("start", tp.partition, offset))

    def topics_matching(self, pattern):
        return {gs.TOPIC} if pattern.match(gs.TOPIC) else set()

    def request_metadata_for(self, topics):
        self.calls.append(("metadata", topics))


async def start_driver(protocol="classic", app=None, **settings):
    clock = FakeClock()
    transport = ScriptedTransport()
    driver = AioGroupDriver(make_config(protocol, **settings), app or RecordingApp(), transport=transport,
                            clock=clock)
    if protocol == "consumer":
        driver.machine.member_id = "m-848"  # the scenarios' id (the machine makes one otherwise)
    await driver.start()
    return driver, transport, clock


async def next_request(driver, transport):
    driver._kick()
    return await asyncio.wait_for(transport.asked.get(), _ANSWER_WAIT_S)


class StepGate:
    """Lets the driver's task take one step (ask the machines for requests)
    only when the scenario needs requests, as group_scenarios.run collects
    them only then: a live driver would otherwise move past the states a
    scenario checks between steps."""

    def __init__(self, driver):
        self.driver = driver
        self.open = False
        self._step = driver._step
        driver._step = self

    def __call__(self):
        if not self.open:
            return 1.0
        self.open = False
        return self._step()

    async def step(self):
        self.open = True
        self.driver._kick()
        await settle()


async def play(scenario, protocol, settings):
    """group_scenarios.run's steps, through the driver's task."""
    driver, transport, clock = await start_driver(protocol, **settings)
    machines = DriverMachines(driver, clock)
    gate = StepGate(driver)
    try:
        for index, step in enumerate(scenario):
            where = "step {0} ({1!r})".format(index, step)
            if isinstance(step, gs.Tick):
                clock.now += step.seconds
            elif isinstance(step, (gs.Send, gs.Raises)):
                if transport.asked.empty():
                    await gate.step()
                try:
                    target, api, body, answer = await next_request(driver, transport)
                except TimeoutError:
                    raise AssertionError(where + ": nothing was asked for") from None
                machines.sent.append((api, body))
                assert api == step.api, "{0}: asked for {1} {2}".format(where, api, body)
                if isinstance(step, gs.Send):
                    if step.target is not None:
                        assert target == step.target, where
                    if step.check is not None:
                        assert step.check(body), "{0}: body {1}".format(where, body)
                answer.set_result(step.answer)
                await settle()
                if isinstance(step, gs.Raises):
                    error = driver._error or driver.machine.fatal_error
                    assert isinstance(error, step.error), "{0}: nothing raised ({1!r})".format(where, error)
                    driver._error = driver.machine.fatal_error = None
            elif isinstance(step, gs.Quiet):
                await gate.step()
                assert transport.asked.empty(), "{0}: asked for {1}".format(
                    where, [item[1] for item in transport.asked._queue])
            elif isinstance(step, gs.Events):
                events = driver.machine.take_events()
                assert [type(e).__name__ for e in events] == step.names, "{0}: events {1}".format(where, events)
                if step.check is not None:
                    assert step.check(events), "{0}: events {1}".format(where, events)
                driver.machine.app_done(events)
            elif isinstance(step, gs.Act):
                step.fn(machines, clock.now)
            elif isinstance(step, gs.Check):
                assert step.fn(machines), "{0}: {1}".format(where, step.what)
            else:
                raise TypeError(step)
    finally:
        driver._closed = True
        driver._kick()
        for task in list(driver._inflight):  # requests the scenario left unanswered
            task.cancel()
        await asyncio.gather(driver._task, *driver._inflight, return_exceptions=True)


@pytest.mark.parametrize("name", sorted(gs.SCENARIOS))
def test_scenario_through_the_asyncio_driver(name):
    protocol, settings, build = gs.SCENARIOS[name]
    asyncio.run(play(build(), protocol, settings))


def test_a_wrong_expectation_fails_through_the_driver_too():
    steps = [gs.subscribe(), gs.Send("JoinGroup", gs.join("m-1"))]
    with pytest.raises(AssertionError, match="asked for FindCoordinator"):
        asyncio.run(play(steps, "classic", {}))


# --- what the driver itself does ---------------------------------------------------------------------
class Broker:
    """Answers the driver's requests from a table, in a task of its own."""

    def __init__(self, transport, answers):
        self.transport = transport
        self.answers = answers  # api -> answer, or a list of answers used in turn
        self.seen = []
        self.hold = set()  # apis left unanswered
        self.task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self):
        while True:
            target, api, body, answer = await self.transport.asked.get()
            self.seen.append((api, body))
            if api in self.hold:
                continue
            entry = self.answers[api]
            if isinstance(entry, list):
                entry = entry.pop(0) if len(entry) > 1 else entry[0]
            answer.set_result(entry(body) if callable(entry) else entry)

    def apis(self):
        return [api for api, _ in self.seen]


def classic_answers(**overrides):
    answers = {
        "FindCoordinator": gs.find_coordinator(),
        "JoinGroup": [gs.join("m-1", error=gs.MEMBER_ID_REQUIRED, generation=-1, leader=""),
                      gs.join("m-1", members=[("m-1", gs.subscription())])],
        "Metadata": gs.cluster(),
        "SyncGroup": gs.sync(gs.TPS),
        "Heartbeat": gs.heartbeat(),
        "LeaveGroup": gs.leave(),
        "OffsetCommit": lambda body: gs.commit([p["partition_index"] for p in body["topics"][0]["partitions"]]),
        "OffsetFetch": gs.offset_fetch({0: 5, 1: 7}),
    }
    answers.update(overrides)
    return answers


class AsyncListener(ConsumerRebalanceListener):
    def __init__(self, driver=None, commit_on_revoke=False):
        self.calls = []
        self.driver = driver
        self.commit_on_revoke = commit_on_revoke

    async def on_partitions_revoked(self, revoked):
        await asyncio.sleep(0)
        self.calls.append(("revoked", [tp.partition for tp in revoked]))
        if self.commit_on_revoke and revoked:
            await self.driver.commit({tp: 42 for tp in revoked})

    async def on_partitions_assigned(self, assigned):
        await asyncio.sleep(0)
        self.calls.append(("assigned", [tp.partition for tp in assigned]))


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_assignment_is_applied_in_on_app_poll_with_committed_offsets_before_the_async_listener():
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app)
        broker = Broker(transport, classic_answers())
        listener = AsyncListener()
        driver.subscribe(topics=[gs.TOPIC], listener=listener)
        assert app.calls == [("metadata", {gs.TOPIC})]
        assert await driver.wait_assignment(5)
        assert driver.assignment() == set(gs.TPS)
        assert app.calls[1:] == [("assign", [0, 1, 2, 3]), ("start", 0, 5), ("start", 1, 7), ("start", 2, None),
                                 ("start", 3, None)]
        assert listener.calls == [("assigned", [0, 1, 2, 3])]
        assert driver.group_metadata().generation_id == 1
        await driver.stop(autocommit=False)
        assert broker.apis()[-1] == "LeaveGroup" and transport.closed
        broker.task.cancel()

    run(scenario())


def test_eager_rebalance_revokes_first_and_a_commit_inside_the_callback_works():
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app)
        answers = classic_answers(Heartbeat=[gs.heartbeat(gs.REBALANCE_IN_PROGRESS), gs.heartbeat()])
        broker = Broker(transport, answers)
        listener = AsyncListener(driver, commit_on_revoke=True)
        driver.subscribe(topics=[gs.TOPIC], listener=listener)
        assert await driver.wait_assignment(5)
        answers["JoinGroup"] = [gs.join("m-1", generation=2, members=[("m-1", gs.subscription())])]
        answers["SyncGroup"] = gs.sync(gs.TPS[:2])
        clock.now += 3.0  # the heartbeat is due: REBALANCE_IN_PROGRESS
        for _ in range(50):
            await driver.on_app_poll()
            if ("assigned", [0, 1]) in listener.calls:
                break
            await asyncio.sleep(0.01)
        assert listener.calls == [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3]), ("assigned", [0, 1])]
        commits = [body for api, body in broker.seen if api == "OffsetCommit"]
        assert [p["committed_offset"] for p in commits[0]["topics"][0]["partitions"]] == [42, 42, 42, 42]
        assert commits[0]["generation_id_or_member_epoch"] == 1  # before the rejoin: the old generation
        assert ("revoke", [0, 1, 2, 3]) in app.calls
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_auto_commit_is_a_timer_of_the_task_and_stop_commits():
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app, enable_auto_commit=True,
                                                      auto_commit_interval_ms=1000)
        broker = Broker(transport, classic_answers())
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        app.position_of = {gs.TPS[0]: 11}
        assert "OffsetCommit" not in broker.apis()
        clock.now += 1.5
        driver._kick()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if "OffsetCommit" in broker.apis():
                break
        commits = [body for api, body in broker.seen if api == "OffsetCommit"]
        assert commits and commits[0]["topics"][0]["partitions"][0]["committed_offset"] == 11
        driver._kick()
        await settle()
        assert not driver.commits.busy and driver.commits.take_events() == []  # settled events are not kept
        app.position_of = {gs.TPS[0]: 12}
        await driver.stop()
        commits = [body for api, body in broker.seen if api == "OffsetCommit"]
        assert commits[-1]["topics"][0]["partitions"][0]["committed_offset"] == 12
        assert broker.apis()[-1] == "LeaveGroup"
        broker.task.cancel()

    run(scenario())


def test_cancelling_an_awaited_commit_leaves_the_driver_usable():
    async def scenario():
        driver, transport, clock = await start_driver()
        broker = Broker(transport, classic_answers())
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        broker.hold.add("OffsetCommit")
        commit = asyncio.ensure_future(driver.commit({gs.TPS[0]: 3}))
        for _ in range(50):
            await asyncio.sleep(0.01)
            if "OffsetCommit" in broker.apis():
                break
        commit.cancel()
        with pytest.raises(asyncio.CancelledError):
            await commit
        assert not driver.commits.busy
        assert (await driver.committed(gs.TPS[0])).offset == 5
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_commit_errors_are_aiokafkas_and_fatal_errors_reach_on_app_poll():
    async def scenario():
        driver, transport, clock = await start_driver()
        broker = Broker(transport, classic_answers(
            OffsetCommit=[gs.commit([0], gs.ILLEGAL_GENERATION), gs.commit([0])]))
        with pytest.raises(IllegalStateError):  # not started
            await AioGroupDriver(make_config(), RecordingApp(), transport=transport).commit({gs.TPS[0]: 1})
        listener = AsyncListener()
        driver.subscribe(topics=[gs.TOPIC], listener=listener)
        assert await driver.wait_assignment(5)
        with pytest.raises(CommitFailedError):
            await driver.commit({gs.TPS[0]: 1})
        # fenced: the next poll hands the partitions over as lost; aiokafka's
        # listener has no on_partitions_lost, so it hears of a revocation
        await driver.on_app_poll()
        assert driver.assignment() == set()
        assert listener.calls == [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3])]
        with pytest.raises(RebalanceInProgressError):
            await driver.commit({gs.TPS[0]: 1})
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_a_failed_committed_offset_read_keeps_the_partitions_held_and_reads_again():
    """A read of the committed offsets that fails (the coordinator's node
    gone) must not let auto_offset_reset start the partitions: they stay
    held, and the driver reads again after retry_backoff_ms."""
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app, request_timeout_ms=1000, retry_backoff_ms=100)
        failing = [True]

        def offset_fetch(body):
            if failing[0]:
                return dict(gs.offset_fetch({}), error_code=gs.NOT_COORDINATOR)
            return gs.offset_fetch({0: 5, 1: 7})

        async def tick():  # the fake clock runs: backoffs end, the read's deadline passes
            while True:
                await asyncio.sleep(0.005)
                clock.now += 0.05
                driver._kick()

        Broker(transport, classic_answers(OffsetFetch=offset_fetch))
        ticker = asyncio.get_running_loop().create_task(tick())
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        assert app.held == set(gs.TPS) and not [c for c in app.calls if c[0] == "start"]
        failing[0] = False
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not app.held:
                break
        ticker.cancel()
        assert [c for c in app.calls if c[0] == "start"] == [
            ("start", 0, 5), ("start", 1, 7), ("start", 2, None), ("start", 3, None)]
        await driver.stop(autocommit=False)
    run(scenario())


def test_kip848_reconcile_through_on_app_poll_and_leave_with_epoch_minus_one():
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver("consumer", app=app)
        answers = {
            "FindCoordinator": gs.find_coordinator(),
            "ConsumerGroupHeartbeat": lambda body: gs.heartbeat_848(
                -1 if body["member_epoch"] == -1 else 1, [0, 1] if body["member_epoch"] == 0 else None),
            "Metadata": gs.cluster(),
            "OffsetFetch": gs.offset_fetch({0: 5}),
        }
        broker = Broker(transport, answers)
        listener = AsyncListener()
        driver.subscribe(topics=[gs.TOPIC], listener=listener)
        assert await driver.wait_assignment(5)
        assert listener.calls == [("assigned", [0, 1])]
        assert app.calls[-2:] == [("start", 0, 5), ("start", 1, None)]
        for _ in range(50):  # the acknowledging heartbeat
            await asyncio.sleep(0.01)
            if driver.machine.state.name == "STABLE":
                break
        assert driver.machine.state.name == "STABLE"
        assert driver.group_metadata().generation_id == 1
        await driver.stop(autocommit=False)
        last = [body for api, body in broker.seen if api == "ConsumerGroupHeartbeat"][-1]
        assert last["member_epoch"] == -1
        broker.task.cancel()

    run(scenario())


def test_a_static_member_does_not_leave_on_stop():
    async def scenario():
        driver, transport, clock = await start_driver(group_instance_id="i-1")
        broker = Broker(transport, classic_answers())
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        await driver.stop(autocommit=False)
        assert "LeaveGroup" not in broker.apis()
        broker.task.cancel()

    run(scenario())


def test_a_fatal_join_error_is_raised_from_on_app_poll():
    async def scenario():
        driver, transport, clock = await start_driver()
        broker = Broker(transport, classic_answers(JoinGroup=gs.join(
            "", error=gs.GROUP_AUTHORIZATION_FAILED, generation=-1, leader="")))
        driver.subscribe(topics=[gs.TOPIC])
        for _ in range(50):
            await asyncio.sleep(0.01)
            if "JoinGroup" in broker.apis():
                break
        await settle()
        with pytest.raises(KafkaError) as raised:
            await driver.on_app_poll()
        assert raised.value.errno == 30
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_max_poll_interval_leaves_while_the_app_does_not_poll():
    async def scenario():
        driver, transport, clock = await start_driver(max_poll_interval_ms=5000)
        broker = Broker(transport, classic_answers())
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        await driver.on_app_poll()
        clock.now += 5.5
        driver._kick()
        for _ in range(50):
            await asyncio.sleep(0.01)
            if "LeaveGroup" in broker.apis():
                break
        assert "LeaveGroup" in broker.apis()
        assert collections.Counter(broker.apis())["JoinGroup"] == 2
        await driver.on_app_poll()  # lost, then a fresh join
        assert driver.assignment() == set()
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_the_classic_leader_rejoins_when_a_partition_count_changes():
    """The consumer's metadata listener tells the driver the partition
    counts (metadata_changed); a count that differs from what the leader
    assigned from makes it rejoin. The driver reads no metadata of its own
    for this."""
    async def scenario():
        driver, transport, clock = await start_driver()
        answers = classic_answers(Metadata=[gs.cluster(4)])
        broker = Broker(transport, answers)
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        assert collections.Counter(broker.apis())["JoinGroup"] == 2
        metadata_reads = collections.Counter(broker.apis())["Metadata"]
        driver.metadata_changed({gs.TOPIC: 4})  # unchanged: nothing happens
        answers["JoinGroup"] = [gs.join("m-1", generation=2, members=[("m-1", gs.subscription())])]
        answers["Metadata"] = [gs.cluster(6)]
        driver.metadata_changed({gs.TOPIC: 6})
        for _ in range(100):
            await driver.on_app_poll()  # eager: the application revokes before the rejoin
            await asyncio.sleep(0.01)
            if collections.Counter(broker.apis())["JoinGroup"] == 3:
                break
        assert collections.Counter(broker.apis())["JoinGroup"] == 3, broker.apis()
        # the one further Metadata read is the rejoining leader's own, for its assignment
        assert collections.Counter(broker.apis())["Metadata"] == metadata_reads + 1
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_a_leader_that_assigned_without_the_topics_metadata_asks_for_metadata_until_it_shows():
    """The leader's Metadata answer lacked the topic (a broker just
    restarted answers so): nothing was assigned. The driver asks the
    consumer for metadata at once, and again after each answer that still
    lacks the topic (the client paces them by retry_backoff_ms), and
    rejoins once the topic's partitions show
    (ClassicMachine.leader_snapshot_incomplete), not metadata_max_age_ms
    later."""
    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app, metadata_max_age_ms=300000, retry_backoff_ms=100)
        without = gs.ClusterMetadata()
        without.topics[gs.TOPIC] = gs.TopicMetadata(gs.TOPIC, gs.TOPIC_ID, False, {}, 3)
        answers = classic_answers(Metadata=[without], SyncGroup=[gs.sync([])])
        broker = Broker(transport, answers)
        driver.subscribe(topics=[gs.TOPIC])
        for _ in range(200):
            await driver.on_app_poll()
            await asyncio.sleep(0.01)
            if "SyncGroup" in broker.apis() and driver.machine.state.name == "STABLE":
                break
        await driver.on_app_poll()  # the (empty) assignment applied and acknowledged
        assert driver.machine.state.name == "STABLE" and driver.assignment() == set(), broker.apis()
        asked = [c for c in app.calls if c[0] == "metadata"]
        assert asked == [("metadata", {gs.TOPIC}), ("metadata", {gs.TOPIC})]  # subscribe, then the empty assignment
        driver.metadata_changed({})  # the consumer's answer still lacks the topic: ask again
        assert [c for c in app.calls if c[0] == "metadata"] == asked + [("metadata", {gs.TOPIC})]
        answers["Metadata"] = [gs.cluster(4)]
        answers["JoinGroup"] = [gs.join("m-1", generation=2, members=[("m-1", gs.subscription())])]
        answers["SyncGroup"] = [gs.sync(gs.TPS)]
        driver.metadata_changed({gs.TOPIC: 4})
        for _ in range(100):
            await driver.on_app_poll()
            await asyncio.sleep(0.01)
            if driver.assignment() == set(gs.TPS):
                break
        assert driver.assignment() == set(gs.TPS), broker.apis()
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_a_pattern_subscription_follows_the_apps_matches():
    import re

    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app)
        broker = Broker(transport, classic_answers())
        driver.subscribe(pattern="^t$")
        assert app.calls == [("metadata", None)]
        assert driver.subscription() == {gs.TOPIC}
        assert await driver.wait_assignment(5)
        app.topics_matching = lambda pattern: {gs.TOPIC, "u"} if pattern == re.compile("^t$") else set()
        clock.now += 2.0
        await driver.on_app_poll()
        assert driver.subscription() == {gs.TOPIC, "u"}
        driver.unsubscribe()
        assert driver.subscription() == set() and driver.assignment() == set()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if "LeaveGroup" in broker.apis():
                break
        assert "LeaveGroup" in broker.apis()
        await driver.stop(autocommit=False)
        broker.task.cancel()

    run(scenario())


def test_stop_during_a_held_join_leaves_over_a_fresh_coordinator_connection():
    async def scenario():
        driver, transport, clock = await start_driver()
        answers = classic_answers()
        broker = Broker(transport, answers)
        driver.subscribe(topics=[gs.TOPIC])
        assert await driver.wait_assignment(5)
        lost = transport.lost
        broker.hold.add("Heartbeat")  # stands for a request the coordinator holds open
        clock.now += 3.0
        driver._kick()
        for _ in range(50):
            await asyncio.sleep(0.01)
            if "Heartbeat" in broker.apis():
                break
        await driver.stop(autocommit=False)
        assert broker.apis()[-1] == "LeaveGroup"
        assert transport.lost == lost + 1
        broker.task.cancel()

    run(scenario())


def test_a_raising_listener_is_logged_and_the_hand_over_goes_on(caplog):
    # aiokafka's rule (reconciler.ListenerErrors): nothing reaches on_app_poll
    class Raising(AsyncListener):
        async def on_partitions_assigned(self, assigned):
            await super().on_partitions_assigned(assigned)
            raise ValueError("listener bug")

    async def scenario():
        app = RecordingApp()
        driver, transport, clock = await start_driver(app=app)
        broker = Broker(transport, classic_answers())
        listener = Raising()
        driver.subscribe(topics=[gs.TOPIC], listener=listener)
        assert await driver.wait_assignment(5)
        await driver.on_app_poll()  # nothing raised
        assert listener.calls == [("assigned", [0, 1, 2, 3])] and driver.assignment() == set(gs.TPS)
        assert driver.machine.state.name == "STABLE"  # the assignment was acknowledged
        await driver.stop(autocommit=False)
        broker.task.cancel()

    with caplog.at_level(logging.ERROR):
        run(scenario())
    assert "on_partitions_assigned raised ValueError('listener bug')" in caplog.text
