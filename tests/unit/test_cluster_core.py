"""The I/O-free cluster core (fastkc.cluster) with canned inputs and a canned
clock: metadata parsing, refresh rules, least-loaded node, the parse-failure
rule, idle connections, fatal errors, and leaders reconnected at once when a
Metadata answer names them again (issue 23, item 3)."""
import logging

import pytest

from fastkc import errors
from fastkc.cluster import (
    MAX_PARSE_FAILURES,
    ClusterCore,
    ClusterMetadata,
    PartitionMetadata,
    address_problem,
    host_problem,
)
from fastkc.cluster.core import LEADER_RETRY_INTERVAL_S
from fastkc.net.aio import DEFAULTS
from fastkc.net.core import ConnectionCore
from fastkc.structs import TopicPartition

TOPIC_ID = bytes(range(16))


def _core(**overrides):
    settings = dict(metadata_max_age_ms=300_000, retry_backoff_ms=100, connections_max_idle_ms=540_000,
                    allow_auto_create_topics=True)
    settings.update(overrides)
    return ClusterCore(**settings)


def _answer(leaders=None, brokers=(1, 2, 3), topic="t", topic_id=TOPIC_ID, error_code=0):
    """A decoded Metadata answer: `brokers` at 127.0.0.1:9091.., partition p of `topic` led by leaders[p]."""
    leaders = {0: 1, 1: 2} if leaders is None else leaders
    return {
        "brokers": [{"node_id": n, "host": "127.0.0.1", "port": 9090 + n, "rack": "r{0}".format(n)} for n in brokers],
        "cluster_id": "c1", "controller_id": brokers[0] if brokers else -1,
        "topics": [{"error_code": error_code, "name": topic, "topic_id": topic_id, "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": p, "leader_id": leader, "leader_epoch": 7,
                                    "replica_nodes": [leader, 3], "isr_nodes": [leader], "offline_replicas": []}
                                   for p, leader in leaders.items()]}],
    }


class FakeLink:
    """A connection as the policy sees it (fastkc.cluster.Link), with what it was told."""

    def __init__(self, host="127.0.0.1", port=9091, *, state="ready", in_flight=0, backoff=0.0, idle=0.0):
        self.host, self.port = host, port
        self.state = state
        self.in_flight = in_flight
        self.backoff = backoff
        self.idle = idle
        self.last_error = None
        self.failed = []  # (error, backoff_failures)
        self.retried = []  # the `when` of each early attempt granted

    ready = property(lambda self: self.state == "ready")
    established = property(lambda self: self.state == "ready")
    connecting = property(lambda self: self.state == "connecting")

    def in_flight_count(self):
        return self.in_flight

    def backoff_remaining(self, now):
        return self.backoff

    def idle_for(self, now):
        return self.idle

    def fail(self, error, now, backoff_failures=0):
        self.failed.append((error, backoff_failures))
        self.state = "disconnected"
        self.last_error = error

    def retry_at(self, when):
        self.retried.append(when)


# --- metadata parsing ------------------------------------------------------------------------------
def test_a_metadata_answer_becomes_typed_metadata():
    cluster = ClusterMetadata()
    cluster.update(_answer(), all_topics=False)
    assert sorted(cluster.brokers) == [1, 2, 3]
    assert cluster.brokers[2].host == "127.0.0.1" and cluster.brokers[2].port == 9092
    assert cluster.brokers[2].rack == "r2"
    assert cluster.cluster_id == "c1" and cluster.controller_id == 1
    assert cluster.partition(TopicPartition("t", 1)) == PartitionMetadata(1, 2, 7, (2, 3), (2,), 0)
    assert cluster.leader_for(TopicPartition("t", 0)) == 1
    assert cluster.leader_for(TopicPartition("t", 9)) is None
    assert cluster.topics["t"].topic_id == TOPIC_ID
    assert cluster.topic_names_by_id == {TOPIC_ID: "t"}
    assert cluster.leaders_of(["t", "absent"]) == {1, 2}


def test_a_null_topic_id_is_none_and_answers_merge_unless_all_topics():
    cluster = ClusterMetadata()
    cluster.update(_answer(topic="a"), all_topics=False)
    cluster.update(_answer(topic="b", topic_id=bytes(16)), all_topics=False)
    assert set(cluster.topics) == {"a", "b"}
    assert cluster.topics["b"].topic_id is None
    assert cluster.topic_names_by_id == {TOPIC_ID: "a"}
    cluster.update(_answer(topic="b"), all_topics=True)
    assert set(cluster.topics) == {"b"} and cluster.all_topics_known


@pytest.mark.parametrize("host, port, node_id", [
    ("", 9092, 4), ("h", 0, 4), ("h", 70000, 4), ("h", 9092, -1),
    ("a" * 64, 9092, 4), ("a..b", 9092, 4), (".a", 9092, 4), ("a" * 254, 9092, 4),
])
def test_a_broker_at_an_unusable_address_is_dropped_with_a_warning(caplog, host, port, node_id):
    answer = _answer(leaders={0: 1})
    answer["brokers"].append({"node_id": node_id, "host": host, "port": port, "rack": None})
    cluster = ClusterMetadata()
    with caplog.at_level(logging.WARNING, logger="fastkc.cluster.metadata"):
        cluster.update(answer, all_topics=False)
    assert sorted(cluster.brokers) == [1, 2, 3]
    assert any("ignoring broker {0}".format(node_id) in r.getMessage() for r in caplog.records)


def test_host_names_follow_dns_limits():
    assert host_problem("broker-1.example.com") is None
    assert host_problem("broker-1.example.com.") is None  # the root's dot
    assert host_problem("::1") is None and host_problem("fe80::1%eth0") is None and host_problem("10.0.0.1") is None
    assert host_problem("a" * 63 + ".b") is None
    assert "64 bytes" in host_problem("a" * 64 + ".b")
    longest = ".".join(["a" * 63] * 4)  # 255 bytes
    assert host_problem(longest[:253]) is None
    assert host_problem(longest[:253] + ".") is None
    assert "254 bytes" in host_problem(longest[:254])
    for empty in ("a..b", ".a", "a.."):
        assert host_problem(empty) is not None, empty
    assert host_problem("") is not None and host_problem(None) is not None and host_problem("a\0b") is not None
    assert host_problem("bücher.example") is None  # IDNA: xn--bcher-kva
    assert host_problem("my_broker-1") is None
    for odd in ("bad host", "a/b", "a:b", "h@st"):
        assert host_problem(odd) == "a character no host name has", odd


def test_a_bootstrap_host_is_held_to_the_same_rule():
    from fastkc.config import parse_host_port
    from fastkc.errors import KafkaConfigurationError

    assert parse_host_port("broker-1:9093") == ("broker-1", 9093)
    assert parse_host_port("[::1]:9093") == ("::1", 9093)
    for bad, why in (("bad host:9092", "a character no host name has"), ("a..b:9092", "an empty label"),
                     ("a" * 64 + ".b", "64 bytes")):
        with pytest.raises(KafkaConfigurationError, match=why):
            parse_host_port(bad)
    assert address_problem("h", True) is not None  # a bool is no port
    assert address_problem("h", 65535) is None


# --- refresh rules --------------------------------------------------------------------------------
def test_the_first_refresh_is_due_at_once_then_by_age():
    core = _core(metadata_max_age_ms=5000)
    assert core.refresh_due_in(0.0) == 0.0 and core.refresh_wanted(0.0)
    core.add_topics(["t"])
    request = core.begin_refresh()
    assert request.body == {"topics": [{"name": "t"}], "allow_auto_topic_creation": True}
    assert not request.all_topics
    assert core.refresh_in_flight and core.refresh_due_in(0.0) == float("inf")  # one at a time
    core.refresh_answered(_answer(), 10.0, {})
    assert not core.refresh_in_flight
    assert core.cluster.last_refresh == 10.0
    assert core.refresh_due_in(11.0) == pytest.approx(4.0)
    assert not core.refresh_wanted(11.0) and core.refresh_wanted(15.0)
    assert core.refresh_due_in(16.0) == 0.0


def test_requested_refreshes_start_at_once_and_failed_ones_back_off():
    core = _core(retry_backoff_ms=100)
    core.begin_refresh()
    core.refresh_answered(_answer(), 0.0, {})
    core.request_update(all_topics=True)
    assert core.update_requested and core.refresh_due_in(1.0) == 0.0
    request = core.begin_refresh()
    assert request.all_topics and request.body["topics"] is None
    assert not core.update_requested
    core.refresh_failed(errors.KafkaConnectionError("lost"), 1.0)
    # asked again, for all topics still, after retry_backoff_ms
    assert core.update_requested
    assert core.refresh_due_in(1.05) == pytest.approx(0.05)
    assert core.refresh_due_in(1.1) == 0.0
    assert core.begin_refresh().all_topics
    core.raise_fatal()  # a connection error is retried, never kept for the application


def test_an_incomplete_answer_is_asked_again_after_the_backoff():
    core = _core(retry_backoff_ms=100)
    core.set_topics(["t"])
    core.begin_refresh()
    core.refresh_answered(_answer(leaders={0: -1}), 2.0, {})  # an election in progress
    assert core.update_requested
    assert core.refresh_due_in(2.0) == pytest.approx(0.1)
    core.begin_refresh()
    core.refresh_answered(_answer(error_code=5), 2.1, {})  # LEADER_NOT_AVAILABLE on the topic
    assert core.refresh_due_in(2.1) == pytest.approx(0.1)
    core.begin_refresh()
    core.refresh_answered(_answer(), 2.2, {})
    assert not core.update_requested


def test_topics_kept_and_pattern_subscriptions():
    core = _core()
    assert core.add_topics(["a", "b"]) and not core.add_topics(["a"])
    assert not core.set_topics(["a"]) and core.topics == {"a"}
    core.begin_refresh()
    core.refresh_failed(errors.KafkaConnectionError("x"), 0.0)
    assert core.set_topics(["a", "c"])
    core.subscribe_all_topics = True
    assert core.begin_refresh().body["topics"] is None


def test_a_refresh_that_cannot_be_parsed_past_the_limit_reaches_the_application_once():
    core = _core()
    core.begin_refresh()
    error = errors.ProtocolParseError("garbage")
    core.refresh_failed(error, 0.0)
    with pytest.raises(errors.ProtocolParseError):
        core.raise_fatal()
    core.raise_fatal()  # raised once


# --- connections ------------------------------------------------------------------------------------
def test_least_loaded_node():
    core = _core()
    core.cluster.update(_answer(), all_topics=False)
    links = {1: FakeLink(in_flight=3), 2: FakeLink(in_flight=1), 3: FakeLink(state="connecting")}
    assert core.least_loaded_node(links, 0.0) == 2
    # none ready: a known broker without a connection, or one not backing off
    links = {1: FakeLink(state="disconnected", backoff=2.0), 2: FakeLink(state="disconnected", backoff=0.0)}
    assert core.least_loaded_node(links, 0.0) == 2
    links = {1: FakeLink(state="disconnected", backoff=2.0), 2: FakeLink(state="disconnected", backoff=1.0)}
    assert core.least_loaded_node(links, 0.0) == 3  # no connection yet: nothing to wait for
    links[3] = FakeLink(state="disconnected", backoff=1.0)
    assert core.least_loaded_node(links, 0.0) == 1  # every one backing off: any known one
    assert _core().least_loaded_node({}, 0.0) is None


def test_idle_connections_past_the_limit():
    core = _core(connections_max_idle_ms=1000)
    links = {1: FakeLink(idle=1.5), 2: FakeLink(idle=0.5), 3: FakeLink(state="connecting", idle=9.0)}
    assert core.idle_nodes(links, 0.0) == [1]
    assert core.idle_check_period == 0.5
    assert _core(connections_max_idle_ms=540_000).idle_check_period == 30.0


def test_parse_failures_are_counted_per_broker_and_api_then_raised():
    core = _core()
    link = FakeLink()
    exc = errors.ProtocolParseError("bad body")
    for count in range(1, MAX_PARSE_FAILURES):
        link.state = "ready"
        error = core.parse_failed(link, "ListOffsets", exc, 0.0)
        assert isinstance(error, errors.KafkaConnectionError) and error.retriable
        assert error.__cause__ is exc
        assert link.failed[-1] == (error, count)  # the backoff's exponent is the count
    assert core.parse_failures("127.0.0.1", 9091, "ListOffsets") == MAX_PARSE_FAILURES - 1
    assert core.parse_failures("127.0.0.1", 9091, "Fetch") == 0
    link.state = "ready"
    assert core.parse_failed(link, "ListOffsets", exc, 0.0) is exc
    # a good answer clears the count
    core.parse_ok(link, "ListOffsets")
    link.state = "ready"
    assert isinstance(core.parse_failed(link, "ListOffsets", exc, 0.0), errors.KafkaConnectionError)


def test_a_handshake_answer_that_cannot_be_parsed_is_the_attempts_error():
    core = _core()
    exc = errors.ProtocolParseError("bad ApiVersions")
    link = FakeLink(state="connecting")
    error = core.parse_failed(link, "ApiVersions", exc, 0.0)
    assert link.last_error is error and isinstance(error, errors.KafkaConnectionError)
    # a re-authentication's answer on an established connection too
    link = FakeLink(state="ready")
    error = core.parse_failed(link, "SaslHandshake", exc, 0.0)
    assert link.last_error is error
    # a caller's answer: the caller gets the error; the connection keeps what it failed with
    link = FakeLink(state="ready")
    error = core.parse_failed(link, "Fetch", exc, 0.0)
    assert link.failed == [(error, 1)]
    # an already closed connection is not failed again, but the answer still counts
    link = FakeLink(port=9099, state="disconnected")
    core.parse_failed(link, "Fetch", exc, 0.0)
    assert link.failed == [] and core.parse_failures("127.0.0.1", 9099, "Fetch") == 1


def test_fatal_connection_errors_are_kept_for_the_application():
    core = _core()
    core.connection_failed(errors.KafkaConnectionError("refused"))
    core.connection_failed(None)
    core.raise_fatal()
    core.connection_failed(errors.SaslAuthenticationFailedError("refused"), reauth_failed=True)
    core.raise_fatal()  # a refused re-authentication reconnects first
    core.connection_failed(errors.SaslAuthenticationFailedError("refused"))
    with pytest.raises(errors.SaslAuthenticationFailedError):
        core.raise_fatal()
    core.raise_fatal()


# --- leaders back: reconnect at once (issue 23, item 3) ------------------------------------------------
def _refused_many_times(core_conn, start, times):
    """Fail `times` connection attempts, each at the moment the backoff allows; returns the clock."""
    now = start
    for _ in range(times):
        now += core_conn.backoff_remaining(now)
        core_conn.start_connecting(now)
        core_conn.transport_lost(errors.KafkaConnectionError("refused"), now)
    return now


def _connection(port):
    return ConnectionCore("127.0.0.1", port, dict(DEFAULTS, security_protocol="PLAINTEXT"))


def _named_leader(core, link, now):
    """A Metadata answer at `now` naming node 1 (at `link`) leader of t/0."""
    core.begin_refresh()
    core.refresh_answered(_answer(leaders={0: 1}), now, {1: link})


def _refused_once(link, now):
    link.start_connecting(now)
    link.transport_lost(errors.KafkaConnectionError("refused"), now)


def test_a_leader_named_again_connects_at_once_then_backs_off_as_before():
    core = _core()
    core.set_topics(["t"])
    down = _connection(9091)
    now = _refused_many_times(down, 0.0, 10)  # kafka-python's defaults: 50 ms doubling to 30 s
    assert down.backoff_remaining(now) > 10.0
    failures = down.failures
    _named_leader(core, down, now)
    assert down.backoff_remaining(now) == 0.0  # one attempt at once
    assert down.failures == failures  # the count kept
    # that attempt is refused too: the backoff is as long as it was going to be ...
    _refused_once(down, now)
    assert down.failures == failures + 1
    assert down.backoff_remaining(now) > 10.0
    # ... but the answer its refusal asks for lets the next attempt come one interval after the last
    soon = now + 0.01
    _named_leader(core, down, soon)
    assert down.backoff_remaining(soon) == pytest.approx(LEADER_RETRY_INTERVAL_S - 0.01)
    # more answers within the interval change nothing: one early attempt per interval, whatever the refresh rate
    _named_leader(core, down, soon + 0.5)
    assert down.backoff_remaining(soon + 0.5) == pytest.approx(LEADER_RETRY_INTERVAL_S - 0.51)
    # refused again at its moment: the next one, an interval later
    then = now + LEADER_RETRY_INTERVAL_S
    _refused_once(down, then)
    _named_leader(core, down, then + 0.01)
    assert down.backoff_remaining(then + 0.01) == pytest.approx(LEADER_RETRY_INTERVAL_S - 0.01)
    # long after the last early attempt (the broker led nothing wanted meanwhile): at once again
    later = then + 60.0
    _refused_once(down, later)
    _named_leader(core, down, later)
    assert down.backoff_remaining(later) == 0.0


def test_a_shorter_backoff_of_its_own_rules():
    core = _core()
    core.set_topics(["t"])
    link = FakeLink(state="disconnected", backoff=0.2)
    _named_leader(core, link, 0.0)  # the first time: at once
    assert link.retried == [0.0]
    link.backoff = 0.4
    _named_leader(core, link, 0.1)  # the next early attempt would be at 1.0: its own at 0.5 comes first
    assert link.retried == [0.0]


def test_only_leaders_of_wanted_partitions_that_are_backing_off_are_touched():
    core = _core()
    core.set_topics(["t"])
    follower, other_topic, connected = _connection(9092), _connection(9093), FakeLink(port=9091)
    now = _refused_many_times(follower, 0.0, 8)
    _refused_many_times(other_topic, 0.0, 8)
    core.begin_refresh()
    # node 1 leads t (and is connected); 2 only follows; 3 leads a topic nobody wants
    answer = _answer(leaders={0: 1})
    answer["topics"].append(_answer(leaders={0: 3}, topic="u")["topics"][0])
    core.refresh_answered(answer, now, {1: connected, 2: follower, 3: other_topic})
    assert connected.retried == []
    assert follower.backoff_remaining(now) > 1.0 and other_topic.backoff_remaining(now) > 1.0
    # a pattern subscription wants every topic
    core.subscribe_all_topics = True
    core.begin_refresh()
    core.refresh_answered(answer, now, {1: connected, 2: follower, 3: other_topic})
    assert other_topic.backoff_remaining(now) == 0.0 and follower.backoff_remaining(now) > 0


def test_a_leader_not_in_the_broker_list_is_not_touched():
    core = _core()
    core.set_topics(["t"])
    gone = FakeLink(state="disconnected", backoff=5.0)
    core.begin_refresh()
    core.refresh_answered(_answer(leaders={0: 4}), 0.0, {4: gone})  # node 4 led it, but is not listed
    assert gone.retried == []


def test_a_wanted_leader_that_refuses_at_once_is_tried_about_once_a_second():
    # A refused connect on a local host fails inside the attempt, before any
    # Metadata answer could follow it: the driver's ready() asks the core.
    core = _core()
    core.set_topics(["t"])
    down = _connection(9091)
    _named_leader(core, FakeLink(), 0.0)  # node 1 leads t/0 (connected then)
    now = _refused_many_times(down, 0.0, 10)
    attempts = []
    t = now
    while t < now + 5.0:  # a driver polling every 50 ms, attempting whenever allowed
        core.connection_wanted(1, down, t)
        if down.backoff_remaining(t) == 0:
            attempts.append(t)
            _refused_once(down, t)
        t += 0.05
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert attempts[0] == now and len(attempts) in (5, 6), attempts
    assert all(abs(g - LEADER_RETRY_INTERVAL_S) <= 0.05 + 1e-9 for g in gaps), gaps  # the driver's 50 ms tick
    # a broker that leads nothing wanted keeps its backoff
    other = _connection(9092)
    later = _refused_many_times(other, 0.0, 10)
    core.connection_wanted(2, other, later)
    assert other.backoff_remaining(later) > 10.0
