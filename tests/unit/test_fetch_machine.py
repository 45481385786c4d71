"""The fetch state machine on canned exchanges (tests/support/fetch_scenarios.py),
run by three drivers: the machine driven directly through its I/O-free
interface (next_requests / on_response / on_metadata), the sync driver
(fastkc.fetch.Fetcher) over a scripted KafkaClient, and the asyncio driver
(fastkc.aio.fetch_driver.AioFetchDriver, its task running on a real event
loop) over the same scripted client. Every scenario must pass under all
three: the driver adds nothing to the protocol."""
import asyncio

import pytest

from fastkc.aio.fetch_driver import AioFetchDriver
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.errors import NoOffsetForPartitionError
from fastkc.fetch import Fetcher, FetchMachine
from tests.support import fetch_scenarios as fs
from tests.support.scripted_fetch import ScriptedClient

FETCH_VERSION = 12
_MADE = []


def _config(scenario):
    return consumer_config(dict({"bootstrap_servers": "h:1"}, **scenario.config))


class MachineRunner:
    """The machine with no driver at all: this test is its driver."""

    def __init__(self, scenario):
        self.now = 1000.0
        self.cluster = ClusterMetadata()
        self.cluster.update(fs.metadata(), all_topics=False)
        self.app = FetchMachine(_config(scenario), self.cluster)
        self.app.assign(list(scenario.assign))
        self.app.on_metadata(self.cluster)  # the leader epochs seen from here on
        _MADE.append(self)

    def version_for(self, api):  # the link: every broker ready, Fetch v12
        return FETCH_VERSION if api == "Fetch" else 0

    def pump(self):
        requests = self.app.next_requests(self.now, lambda node_id: self)
        self.app.metadata_wanted = False
        return [(r.node_id, r.api, r.body, r.version, r) for r in requests]

    def answer(self, request, payload_or_error):
        if request.raw and not isinstance(payload_or_error, BaseException):
            payload_or_error = (payload_or_error, request.version)
        assert self.app.on_response(request.token, payload_or_error, self.now) is None

    def advance(self, seconds):
        self.now += seconds

    def metadata(self, answer):
        self.cluster.update(answer, all_topics=False)
        self.app.on_metadata(self.cluster)

    def close_worker(self, timeout):
        assert self.app.take_decode_jobs() == []  # the machine alone makes none (decode_threads=0)
        return True


class SyncDriverRunner:
    """fastkc.fetch.Fetcher over a scripted client (what KafkaConsumer runs)."""

    def __init__(self, scenario):
        self.client = ScriptedClient()
        self.client.cluster.update(fs.metadata(), all_topics=False)
        self.app = Fetcher(self.client, _config(scenario))
        self.app.assign(list(scenario.assign))
        self.app._metadata_updated()
        _MADE.append(self.app)

    def pump(self):
        self.app.send_requests()
        sent, self.client.sent = self.client.sent, []
        return [(node_id, api, body, version, (callback, raw, version))
                for node_id, api, body, callback, raw, version in sent]

    def answer(self, handle, payload_or_error):
        callback, raw, version = handle
        if isinstance(payload_or_error, BaseException):
            callback(None, payload_or_error)
        elif raw:
            callback((payload_or_error, version), None)
        else:
            callback(payload_or_error, None)

    def advance(self, seconds):
        self.client.now += seconds

    def metadata(self, answer):
        self.client.cluster.update(answer, all_topics=False)
        self.app._metadata_updated()


class _AioScriptedClient(ScriptedClient):
    """ScriptedClient plus what the asyncio driver also listens to."""

    def __init__(self):
        super().__init__()
        self.on_change = []


class _AioApp:
    """The application side as AIOKafkaConsumer reaches it: the machine's
    methods, and the driver's raise_pending (it keeps next_requests' errors)."""

    def __init__(self, driver):
        self._driver = driver

    def __getattr__(self, name):
        if name == "raise_pending":
            return self._driver.raise_pending
        return getattr(self._driver.machine, name)


class AioDriverRunner:
    """AioFetchDriver's task on an event loop of its own over the scripted
    client: a pump wakes the task and lets the loop run until it has made
    its pass (what the task sends is what the pump returns)."""

    def __init__(self, scenario):
        self.client = _AioScriptedClient()
        self.client.cluster.update(fs.metadata(), all_topics=False)
        self.loop = asyncio.new_event_loop()
        self.driver = AioFetchDriver(self.client, _config(scenario), period_ms=60_000, clock=lambda: self.client.now)
        self.driver.machine.assign(list(scenario.assign))
        self.driver._metadata_updated()
        self.app = _AioApp(self.driver)
        self.loop.run_until_complete(self._start())
        _MADE.append(self)

    async def _start(self):
        self.driver.start()
        await asyncio.sleep(0)

    async def _pass(self):
        self.driver.wake()
        for _ in range(3):  # the task wakes, makes its pass, goes back to sleep
            await asyncio.sleep(0)

    def pump(self):
        self.loop.run_until_complete(self._pass())
        sent, self.client.sent = self.client.sent, []
        return [(node_id, api, body, version, (callback, raw, version))
                for node_id, api, body, callback, raw, version in sent]

    answer = SyncDriverRunner.answer

    def advance(self, seconds):
        self.client.now += seconds

    def metadata(self, answer):
        self.client.cluster.update(answer, all_topics=False)
        self.driver._metadata_updated()

    def close_worker(self, timeout):
        self.driver._closed = True
        self.driver._task.cancel()
        self.loop.run_until_complete(asyncio.gather(self.driver._task, return_exceptions=True))
        self.loop.close()
        return self.driver.decode_executor.close(timeout)


@pytest.fixture(autouse=True)
def _stop_workers():
    yield
    while _MADE:
        assert _MADE.pop().close_worker(10)


@pytest.mark.parametrize("runner", [MachineRunner, SyncDriverRunner, AioDriverRunner],
                         ids=["machine", "sync-driver", "aio-driver"])
@pytest.mark.parametrize("scenario", fs.SCENARIOS, ids=[s.name for s in fs.SCENARIOS])
def test_scenario(scenario, runner):
    fs.run(scenario, runner(scenario))


def test_the_machine_never_touches_io():
    """FetchMachine has no client: every request comes out of next_requests
    and nothing is sent when nobody pumps."""
    scenario = fs.Scenario("probe", [])
    runner = MachineRunner(scenario)
    runner.app.seek(fs.TP0, 0)
    assert not hasattr(runner.app, "client")
    [request] = runner.app.next_requests(runner.now, lambda node_id: runner)
    assert (request.node_id, request.api, request.raw, request.version) == (1, "Fetch", True, FETCH_VERSION)
    # a broker that cannot take a request now gets none
    runner.app.on_node_lost(1)
    assert runner.app.next_requests(runner.now, lambda node_id: None) == []
    # an unknown or repeated token changes nothing
    assert runner.app.on_response(10 ** 9, {}, runner.now) is None


def test_next_deadline_is_the_earliest_backoff():
    scenario = fs.Scenario("probe", [], config={"retry_backoff_ms": 250})
    runner = MachineRunner(scenario)
    assert runner.app.next_deadline() is None
    runner.app.seek(fs.TP0, 0)
    [request] = runner.app.next_requests(runner.now, lambda node_id: runner)
    runner.answer(request, OSError("reset by peer"))
    assert runner.app.next_deadline() == pytest.approx(runner.now + 0.25)
    assert runner.app.next_requests(runner.now, lambda node_id: runner) == []


def test_a_parse_failure_is_handed_to_the_driver():
    runner = MachineRunner(fs.Scenario("probe", []))
    runner.app.seek(fs.TP0, 0)
    [request] = runner.app.next_requests(runner.now, lambda node_id: runner)
    failure = runner.app.on_response(request.token, (b"\x00\x00", request.version), runner.now)
    assert type(failure).__name__ == "ProtocolParseError"
    runner.app.raise_pending()  # the machine alone does not decide it is fatal
    runner.app.fail_later(failure)
    with pytest.raises(type(failure)):
        runner.app.raise_pending()


def test_no_position_under_none_raises_from_next_requests():
    runner = MachineRunner(fs.Scenario("probe", [], config={"auto_offset_reset": "none"}))
    with pytest.raises(NoOffsetForPartitionError):
        runner.app.next_requests(runner.now, lambda node_id: runner)


def test_a_held_partition_waits_for_its_committed_offset():
    """hold_for_committed: no auto_offset_reset (not even 'none''s error)
    while the driver looks up the group's committed offset; a seek ends the
    hold (a Fetch from there), a release lets the reset policy run."""
    runner = MachineRunner(fs.Scenario("probe", [], config={"auto_offset_reset": "none"}, assign=(fs.TP0, fs.TP1)))
    machine = runner.app
    for tp in (fs.TP0, fs.TP1):
        machine.hold_for_committed(tp)
    assert runner.pump() == []
    machine.seek(fs.TP0, 7)
    sent = runner.pump()
    assert [(api, node) for node, api, _, _, _ in sent] == [("Fetch", 1)]
    assert not machine.state(fs.TP0).held and machine.state(fs.TP1).held
    machine.hold_for_committed(fs.TP1, False)
    with pytest.raises(NoOffsetForPartitionError):
        runner.pump()


def test_lookups_are_builders_and_parsers():
    runner = MachineRunner(fs.Scenario("probe", []))
    by_node, missing = runner.app.list_offsets_requests({fs.TP0: -2, fs.TP1: -1})
    assert missing == [] and by_node == {1: {fs.TP0: -2, fs.TP1: -1}}
    answer = fs.listed({0: 4})(None, 0)
    results, retry = runner.app.list_offsets_answer({fs.TP0: -2, fs.TP1: -1}, answer)
    assert results == {fs.TP0: (4, -1, fs.LEADER_EPOCH)} and retry  # TP1 left out: ask again
    from fastkc.errors import NotLeaderForPartitionError, TopicAuthorizationFailedError

    results, retry = runner.app.list_offsets_answer(
        {fs.TP0: -2}, fs.listed({0: -1}, error_code=NotLeaderForPartitionError.errno)(None, 0))
    assert results == {} and retry
    with pytest.raises(TopicAuthorizationFailedError):
        runner.app.list_offsets_answer({fs.TP0: -2},
                                       fs.listed({0: -1}, error_code=TopicAuthorizationFailedError.errno)(None, 0))


@pytest.mark.parametrize("code", range(1, 125))
def test_every_partition_error_in_a_fetch_gets_its_documented_reaction(code):
    """fastkc.fetch.codes documents the reactions; here each one's effect on
    the machine, for every code a Fetch answer may carry."""
    from fastkc import errors
    from fastkc.fetch import codes
    from fastkc.fetch.state import FetchState

    runner = MachineRunner(fs.Scenario("probe", [], config={"retry_backoff_ms": 100,
                                                            "auto_offset_reset": "earliest"}))
    machine = runner.app
    machine.seek(fs.TP0, 5)
    [request] = machine.next_requests(runner.now, lambda node_id: runner)
    machine.metadata_wanted = False
    runner.answer(request, fs.fetched({0: {"error_code": code}})(request.body, request.version))
    state = machine.state(fs.TP0)
    reaction = codes.reaction(code)
    if reaction == codes.RESET:
        assert state.fetch_state is FetchState.AWAIT_RESET and state.reset_strategy == "earliest"
        [reset] = machine.next_requests(runner.now, lambda node_id: runner)
        assert reset.api == "ListOffsets"
        return
    if reaction == codes.FAIL:
        with pytest.raises(errors.TopicAuthorizationFailedError):
            machine.raise_pending()
    else:
        machine.raise_pending()  # nothing to raise: retried
        assert state.next_retry == pytest.approx(runner.now + 0.1)
        assert machine.metadata_wanted == (reaction == codes.REFRESH_METADATA)
    assert state.fetch_state is FetchState.FETCHING and state.position == 5
    if reaction != codes.FAIL:
        assert machine.next_requests(runner.now, lambda node_id: runner) == []  # backed off
        runner.advance(0.2)
        [again] = machine.next_requests(runner.now, lambda node_id: runner)
        assert fs.fetch_offsets(again.body) == {0: 5}
