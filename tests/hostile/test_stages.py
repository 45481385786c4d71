"""Issue 9: a hostile broker at every stage of a consumer's life.

Each scenario scripts one stage of tests/support/fake_broker.py's FakeBroker with one
misbehaviour (silence, drip, huge frame, reset, close, garbage) and calls the
public method that reaches that stage. The contract (the Java client's):
the call returns or raises a `fastkc.errors` type within its configured
bound — never a hang, a hot loop or an untyped exception; after close() no
thread or file descriptor is left; a huge announced frame costs no memory.

Timeouts are small (request_timeout_ms 300, bootstrap_timeout_ms 800) so
the whole suite runs in about a minute.
"""
import resource
import threading
import time

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.structs import OffsetAndMetadata, TopicPartition
from tests.support import fake_broker as kit

REQUEST_TIMEOUT_MS = 300
BOOTSTRAP_TIMEOUT_MS = 800
POLL_SECONDS = 0.8  # how long the poll-driven stages are polled
# Fetch garbage is raised after MAX_PARSE_FAILURES (3) answers, each on a new
# connection after a growing backoff: 0.8 s held only two on a loaded CI machine
FETCH_POLL_SECONDS = 2.0
SLACK = 1.0  # seconds: scheduling on a shared 2-core machine
HUGE_FRAME_RSS_BOUND = 64 << 20  # a 90 MB announced frame may cost at most this much

BASE = dict(request_timeout_ms=REQUEST_TIMEOUT_MS, bootstrap_timeout_ms=BOOTSTRAP_TIMEOUT_MS,
            fetch_max_wait_ms=100, reconnect_backoff_ms=20, reconnect_backoff_max_ms=200, retry_backoff_ms=20,
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
            heartbeat_interval_ms=100, max_poll_interval_ms=60000)

#: under the default receive_message_max_bytes (so nothing rejects it by size
#: alone once READY), far above what the memory bound allows to be allocated
HUGE = 90_000_000
ACTIONS = {
    "silence": kit.silence,
    "drip": lambda: kit.drip(40),
    "huge_frame": lambda: kit.huge_frame(HUGE),
    "reset": kit.reset,
    "close": kit.close,
    "garbage": kit.garbage,
}
TP = TopicPartition("t", 0)


def _peak_rss_reset():
    """Reset the kernel's peak-RSS mark (Linux ≥ 4.0); returns the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status("VmRSS")


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture
def broker():
    """A fake broker; afterwards, checks nothing of the client's is left."""
    threads_before = {t.ident for t in kit.client_threads()}
    fds_before = kit.open_fds()
    b = kit.FakeBroker(topics={"t": 1}, records=5, sasl=None)
    yield b
    b.close()
    assert not b.errors, "the fake broker failed while serving: {0!r}".format(b.errors)
    assert kit.wait_for(lambda: {t.ident for t in kit.client_threads()} <= threads_before), \
        "threads left over: {0}".format([t.name for t in kit.client_threads() if t.ident not in threads_before])
    assert kit.wait_for(lambda: kit.open_fds() <= fds_before), \
        "file descriptors left over: {0}".format(sorted(kit.open_fds() - fds_before))


def _consumer(broker, **configs):
    settings = dict(BASE, bootstrap_servers=broker.bootstrap)
    settings.update(configs)
    return KafkaConsumer(**settings)


def _timed(fn):
    """(result or raised exception, elapsed seconds); only KafkaError is caught."""
    began = time.monotonic()
    try:
        result = fn()
    except errors.KafkaError as exc:
        result = exc
    return result, time.monotonic() - began


# --- stages before the consumer exists: the constructor -------------------------------------------
CONSTRUCT_STAGES = ["connect", "ApiVersions", "SaslHandshake", "SaslAuthenticate", "Metadata"]


def _sasl_for(stage):
    if stage.startswith("Sasl"):
        return dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                    sasl_plain_password="secret")
    return {}


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("stage", CONSTRUCT_STAGES)
def test_construct_against_a_hostile_broker_fails_typed_in_time(broker, stage, action):
    broker.sasl = ("alice", "secret") if stage.startswith("Sasl") else None
    broker.script(stage, ACTIONS[action]())
    rss = _peak_rss_reset()
    result, elapsed = _timed(lambda: _consumer(broker, **_sasl_for(stage)))
    if isinstance(result, KafkaConsumer):
        result.close()
    assert isinstance(result, errors.KafkaError), "constructed against a broker that never answers {0}".format(stage)
    assert elapsed < BOOTSTRAP_TIMEOUT_MS / 1000.0 + SLACK, (elapsed, result)
    if action == "huge_frame":
        assert _status("VmHWM") - rss < HUGE_FRAME_RSS_BOUND
    if action == "garbage" and stage != "connect":
        # a parse failure is retried a bounded number of times, then raised as such
        assert isinstance(result, errors.KafkaProtocolError) or "parse" in str(result).lower(), result


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("stage", CONSTRUCT_STAGES)
def test_construct_recovers_from_one_hostile_attempt(broker, stage, action):
    # Each phase has its own timeout: one bad attempt costs about
    # request_timeout_ms and a backoff, then the next attempt connects.
    broker.sasl = ("alice", "secret") if stage.startswith("Sasl") else None
    broker.script(stage, ACTIONS[action](), times=1)
    consumer, elapsed = _timed(lambda: _consumer(broker, **_sasl_for(stage)))
    assert isinstance(consumer, KafkaConsumer), consumer
    assert elapsed < REQUEST_TIMEOUT_MS / 1000.0 + SLACK
    consumer.close()


def test_bootstrap_moves_on_to_the_next_server_when_one_is_silent(broker):
    with kit.FakeBroker() as silent:
        silent.script("connect", kit.silence())
        servers = [silent.bootstrap, broker.bootstrap]
        consumer, elapsed = _timed(lambda: KafkaConsumer(**dict(BASE, bootstrap_servers=servers)))
        assert isinstance(consumer, KafkaConsumer), consumer
        assert elapsed < REQUEST_TIMEOUT_MS / 1000.0 + SLACK
        consumer.close()


def test_bootstrap_backs_off_between_rounds_of_failing_servers(broker):
    # Both servers close every connection at once: the attempts alternate,
    # each server backing off (doubling from reconnect_backoff_ms to
    # reconnect_backoff_max_ms, jittered) instead of reconnecting in a loop.
    with kit.FakeBroker() as other:
        for b in (broker, other):
            b.script("connect", kit.close())
        result, elapsed = _timed(lambda: KafkaConsumer(**dict(
            BASE, bootstrap_servers=[broker.bootstrap, other.bootstrap], reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=400)))
        assert isinstance(result, errors.NoBrokersAvailable), result
        # 0.8 s: attempts at about 0, 50, 150, 350, 750 ms (+-20 %) per server
        for b in (broker, other):
            assert 3 <= b.connections <= 7, (b.connections, other.connections)


# --- stages after construction -------------------------------------------------------------------
def _subscribed_poll(consumer, arm):
    arm()
    consumer.subscribe(["t"])
    return _poll_for(consumer, POLL_SECONDS)


def _poll_for(consumer, seconds):
    """Poll for `seconds`; every poll must come back within its timeout. Returns
    the first KafkaError raised, else the records seen."""
    end = time.monotonic() + seconds
    seen = []
    while time.monotonic() < end:
        began = time.monotonic()
        try:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(records)
        except errors.KafkaError as exc:
            return exc
        assert time.monotonic() - began < 0.2 + SLACK
    return seen


def _heartbeat(consumer, arm):
    # hostile only once the member is stable
    consumer.subscribe(["t"])
    assert kit.wait_for(lambda: bool(consumer.poll(timeout_ms=50) is not None and consumer.assignment()), 5)
    arm()
    return _poll_for(consumer, 1.0)


def _leave(consumer, arm):
    # close(): the final commit and LeaveGroup against a hostile coordinator
    consumer.subscribe(["t"])
    assert kit.wait_for(lambda: bool(consumer.poll(timeout_ms=50) is not None and consumer.assignment()), 5)
    arm()
    began = time.monotonic()
    consumer.close()
    assert time.monotonic() - began < 3 * REQUEST_TIMEOUT_MS / 1000.0 + SLACK


def _offset_fetch(consumer, arm):
    consumer.assign([TP])
    arm()
    return consumer.committed(TP, timeout_ms=1000)


def _list_offsets(consumer, arm):
    consumer.assign([TP])
    arm()
    return consumer.end_offsets([TP], timeout_ms=1000)


def _position(consumer, arm):
    consumer.assign([TP])
    arm()
    return consumer.position(TP, timeout_ms=1000)


def _fetch(consumer, arm):
    consumer.assign([TP])
    arm()
    return _poll_for(consumer, FETCH_POLL_SECONDS)


def _metadata(consumer, arm):
    # a refresh after construction; the application retries a timeout, as it would
    consumer.assign([TP])
    arm()
    end = time.monotonic() + 1.5
    while True:
        try:
            return consumer.topics()
        except errors.KafkaTimeoutError:
            if time.monotonic() > end:
                raise


def _commit(consumer, arm):
    consumer.assign([TP])
    arm()
    return consumer.commit({TP: OffsetAndMetadata(1, "", -1)}, timeout_ms=1000)


# stage -> (API scripted, the public call, its bound in seconds)
LATER_STAGES = {
    "FindCoordinator": ("FindCoordinator", _subscribed_poll, POLL_SECONDS),
    "JoinGroup": ("JoinGroup", _subscribed_poll, POLL_SECONDS),
    "SyncGroup": ("SyncGroup", _subscribed_poll, POLL_SECONDS),
    "Heartbeat": ("Heartbeat", _heartbeat, 6.0),
    "LeaveGroup": ("LeaveGroup", _leave, 6.0),
    "OffsetFetch": ("OffsetFetch", _offset_fetch, 1.0),
    "ListOffsets": ("ListOffsets", _list_offsets, 1.0),
    "position": ("ListOffsets", _position, 1.0),
    "Fetch": ("Fetch", _fetch, FETCH_POLL_SECONDS),
    "Metadata": ("Metadata", _metadata, 1.5 + REQUEST_TIMEOUT_MS / 1000.0),
    "OffsetCommit": ("OffsetCommit", _commit, 1.0),
}
# calls whose answer is data: a hostile broker must make them raise, not return
MUST_RAISE = {"OffsetFetch", "ListOffsets", "position", "OffsetCommit", "Metadata"}
# where garbage must come out as the parse error itself (after the bounded retries)
PARSE_ERROR_RAISED = MUST_RAISE | {"Fetch", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat"}


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("stage", sorted(LATER_STAGES))
def test_public_call_against_a_hostile_stage(broker, stage, action):
    api, call, bound = LATER_STAGES[stage]
    consumer = _consumer(broker, group_id="g")
    try:
        rss = _peak_rss_reset()
        cpu = _cpu()
        result, elapsed = _timed(lambda: call(consumer, lambda: broker.script(api, ACTIONS[action]())))
        cpu = _cpu() - cpu
        assert elapsed < bound + SLACK, (elapsed, result)
        # no hot loop: waiting on a hostile broker sleeps in select()
        assert cpu < 0.5 * elapsed + 0.2, (cpu, elapsed)
        if stage in MUST_RAISE:
            assert isinstance(result, errors.KafkaError), result
        if action == "garbage" and stage in PARSE_ERROR_RAISED:
            assert isinstance(result, errors.KafkaProtocolError), result
        if action == "huge_frame":
            assert _status("VmHWM") - rss < HUGE_FRAME_RSS_BOUND
    finally:
        began = time.monotonic()
        consumer.close(timeout_ms=500)
        assert time.monotonic() - began < 2.0 + SLACK
    assert not any(t.name.startswith("fastkc") for t in threading.enumerate())


@pytest.mark.parametrize("action", ["truncated", "wrong_correlation"])
@pytest.mark.parametrize("stage", ["Fetch", "ListOffsets", "OffsetCommit"])
def test_broken_answers_are_typed_errors_in_time(broker, stage, action):
    api, call, bound = LATER_STAGES[stage]
    consumer = _consumer(broker, group_id="g")
    try:
        act = kit.truncated() if action == "truncated" else kit.wrong_correlation()
        result, elapsed = _timed(lambda: call(consumer, lambda: broker.script(api, act)))
        assert elapsed < bound + SLACK, (elapsed, result)
        if stage in MUST_RAISE:
            assert isinstance(result, errors.KafkaError), result
        if action == "truncated":  # the parse error itself, after the bounded retries
            assert isinstance(result, errors.ProtocolParseError), result
    finally:
        consumer.close(timeout_ms=500)


# --- addresses from the wire ---------------------------------------------------------------------
BAD_ADDRESSES = [("127.0.0.1", 0), ("127.0.0.1", 70000), ("", 9092), ("127.0.0.1", -1), ("bad host", 9092)]


def _advertise(host, port, node_id=2):
    def rewrite(header, body, default):
        for entry in default.get("brokers", []) + default.get("coordinators", []):
            entry.update(host=host, port=port, node_id=node_id)
        if "node_id" in default:
            default.update(host=host, port=port, node_id=node_id)
        for topic in default.get("topics", []):
            for partition in topic["partitions"]:
                partition.update(leader_id=node_id, replica_nodes=[node_id], isr_nodes=[node_id])
        return default
    return kit.answer(rewrite)


@pytest.mark.parametrize("host, port", BAD_ADDRESSES)
@pytest.mark.parametrize("stage", ["Metadata", "FindCoordinator"])
def test_unusable_advertised_addresses_are_typed_errors_never_crashes(broker, stage, host, port):
    # Metadata: the broker list after bootstrap names node 2 at a bad address
    # (dropped with a warning, so the partition has no reachable leader);
    # FindCoordinator: the coordinator is at a bad address (not known yet).
    consumer = _consumer(broker, group_id="g")
    try:
        consumer.assign([TP])
        broker.script(stage, _advertise(host, port), skip=0)
        if stage == "Metadata":
            consumer._client.request_metadata_update()
            call = lambda: consumer.end_offsets([TP], timeout_ms=1000)  # noqa: E731
        else:
            call = lambda: consumer.committed(TP, timeout_ms=1000)  # noqa: E731
        result, elapsed = _timed(call)
        assert isinstance(result, errors.KafkaError), result
        assert elapsed < 1.0 + SLACK
    finally:
        consumer.close(timeout_ms=500)


# --- the parse-failure policy ----------------------------------------------------------------------
def test_parse_failures_are_retried_with_backoff_then_raised(broker):
    from fastkc.client import MAX_PARSE_FAILURES

    consumer = _consumer(broker, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000)
    try:
        consumer.assign([TP])
        # fewer than the limit: retried on a new connection, the call succeeds
        broker.script("ListOffsets", kit.garbage(), times=MAX_PARSE_FAILURES - 1)
        assert consumer.end_offsets([TP], timeout_ms=3000) == {TP: 5}
        assert broker.count("ListOffsets") == MAX_PARSE_FAILURES
        # the good answer cleared the count: the limit applies afresh
        before = broker.count("ListOffsets")
        connections = broker.connections
        broker.script("ListOffsets", kit.garbage())
        began = time.monotonic()
        with pytest.raises(errors.ProtocolParseError):
            consumer.end_offsets([TP], timeout_ms=3000)
        elapsed = time.monotonic() - began
        assert broker.count("ListOffsets") - before == MAX_PARSE_FAILURES
        assert broker.connections - connections == MAX_PARSE_FAILURES - 1  # each failure closed its connection
        # the reconnects backed off: 50 ms then 100 ms, jittered
        assert elapsed > 0.8 * (0.05 + 0.1)
    finally:
        consumer.close()


# --- answers that leave the asked partitions out --------------------------------------------------
def _without_partitions(header, body, default):
    for key in ("responses", "topics"):
        if key in default:
            default[key] = []
    return default


@pytest.mark.parametrize("stage", ["Fetch", "ListOffsets", "position"])
def test_answers_leaving_partitions_out_are_asked_again_after_a_backoff(broker, stage):
    # An instant answer without the partition must not make a request loop:
    # the partition is asked for again after retry_backoff_ms.
    api, call, bound = LATER_STAGES[stage]
    consumer = _consumer(broker, retry_backoff_ms=100)
    try:
        before = broker.count(api)
        cpu = _cpu()
        result, elapsed = _timed(lambda: call(consumer, lambda: broker.script(api, kit.answer(_without_partitions))))
        cpu = _cpu() - cpu
        assert elapsed < bound + SLACK, (elapsed, result)
        if stage != "Fetch":
            assert isinstance(result, errors.KafkaTimeoutError), result
        asked = broker.count(api) - before
        assert asked <= elapsed / 0.1 + 3, asked
        assert cpu < 0.5 * elapsed + 0.2, (cpu, elapsed)
    finally:
        consumer.close(timeout_ms=500)


# --- error codes answered at once, forever ----------------------------------------------------------
def _error_code(code):
    def rewrite(header, body, default):
        default["error_code"] = code
        for entry in default.get("coordinators", []):
            entry["error_code"] = code
        return default
    return kit.answer(rewrite)


@pytest.mark.parametrize("api, code", [
    ("FindCoordinator", 15), ("JoinGroup", 79), ("JoinGroup", 27), ("JoinGroup", 25), ("JoinGroup", 16),
    ("SyncGroup", 27), ("SyncGroup", 25), ("Heartbeat", 27),
], ids=lambda v: str(v))
def test_group_errors_answered_at_once_are_retried_after_a_backoff(broker, api, code):
    consumer = _consumer(broker, group_id="g", retry_backoff_ms=100)
    try:
        consumer.subscribe(["t"])
        if api == "Heartbeat":
            assert kit.wait_for(lambda: bool(consumer.poll(timeout_ms=50) is not None and consumer.assignment()), 5)
        broker.script(api, _error_code(code))
        _poll_for(consumer, 0.3)  # warm-up: the first rebalance's one-off costs are not a loop
        before, cpu = broker.count(api), _cpu()
        result, elapsed = _timed(lambda: _poll_for(consumer, POLL_SECONDS))
        cpu = _cpu() - cpu
        assert not isinstance(result, Exception) or isinstance(result, errors.KafkaError), result
        asked = broker.count(api) - before
        # a rejoin at once is allowed once in a row (KIP-394), then the backoff
        assert asked <= 2 * (elapsed / 0.1) + 4, asked
        assert cpu < 0.5 * elapsed + 0.2, (cpu, elapsed)
    finally:
        consumer.close(timeout_ms=500)


def test_a_join_group_held_longer_than_request_timeout_is_waited_for(broker):
    # The coordinator holds a JoinGroup until the group rebalanced (up to the
    # rebalance timeout): like the Java client, the member waits for it
    # instead of cutting the connection at request_timeout_ms and rejoining.
    consumer = _consumer(broker, group_id="g", max_poll_interval_ms=5000)
    try:
        broker.script("JoinGroup", kit.delay(3 * REQUEST_TIMEOUT_MS), times=1)
        consumer.subscribe(["t"])
        assert kit.wait_for(lambda: bool(consumer.poll(timeout_ms=50) is not None and consumer.assignment()), 5)
        assert broker.count("JoinGroup") == 1
    finally:
        consumer.close()
