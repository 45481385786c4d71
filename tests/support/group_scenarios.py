"""Driver-neutral scenarios for the group state machines (fastkc/group/*_machine.py).

A scenario is a list of steps: what the machines must ask for and what the
broker answers (`Send`), time passing (`Tick`), what the application does or
must be told (`Events`, `Act`), and checks (`Check`, `Quiet`, `Raises`). No
sockets: `run(scenario, setup)` plays one against the machines directly;
an asyncio driver can play the same lists through its own loop (answer each
`Send` from the list instead of the broker).

`Machines` is one member's machine tree: the shared CoordinatorMachine, the
membership machine (classic or KIP-848) and the CommitMachine.
"""
import collections
import dataclasses
import typing
import uuid

from fastkc.assignors import CooperativeStickyAssignor
from fastkc.cluster.metadata import ClusterMetadata, PartitionMetadata, TopicMetadata
from fastkc.config import consumer_config
from fastkc.group.classic_machine import ClassicMachine
from fastkc.group.commit_machine import CommitMachine
from fastkc.group.consumer_machine import ConsumerMachine
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
    group_by_topic,
)
from fastkc.structs import TopicPartition

TOPIC = "t"
TOPIC_ID = uuid.UUID(int=7).bytes
TPS = [TopicPartition(TOPIC, p) for p in range(4)]
GROUP = "g"

# error codes
NONE, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 14, 15, 16
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
GROUP_AUTHORIZATION_FAILED, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 30, 79, 82
FENCED_MEMBER_EPOCH = 110


# --- steps -------------------------------------------------------------------------------------
@dataclasses.dataclass
class Send:
    """The machines ask for `api` (to `target`, when given); `check(body)`
    must hold; `answer` (a response dict, a cluster view for Metadata, or
    an exception: the request failed) goes back."""
    api: str
    answer: typing.Any
    check: typing.Callable = None
    target: str = None


@dataclasses.dataclass
class Tick:
    seconds: float


@dataclasses.dataclass
class Quiet:
    """Nothing is asked for now."""


@dataclasses.dataclass
class Events:
    """The application takes the member's events (their type names, in
    order) and acknowledges them; `check(events)` must hold."""
    names: list
    check: typing.Callable = None


@dataclasses.dataclass
class Act:
    """The application (or the driver) calls into the machines: fn(machines, now)."""
    fn: typing.Callable


@dataclasses.dataclass
class Check:
    fn: typing.Callable
    what: str = ""


@dataclasses.dataclass
class Raises:
    """The answer to the next `api` request makes on_response raise `error`."""
    api: str
    answer: typing.Any
    error: type


# --- the machine tree --------------------------------------------------------------------------
class Machines:
    def __init__(self, protocol="classic", now=1000.0, **settings):
        config = dict(group_id=GROUP, group_protocol=protocol, enable_auto_commit=False, retry_backoff_ms=100,
                      heartbeat_interval_ms=3000, session_timeout_ms=45000, max_poll_interval_ms=300000)
        config.update(settings)
        self.config = consumer_config(config)
        self.now = now
        self.coordinator = CoordinatorMachine(GROUP, self.config["retry_backoff_ms"],
                                              self.config["request_timeout_ms"])
        if protocol == "consumer":
            self.member = ConsumerMachine(self.config, self.coordinator, now, member_id="m-848")
        else:
            self.member = ClassicMachine(self.config, self.coordinator, now)
        self.commits = CommitMachine(GROUP, self.config["group_instance_id"], self.coordinator, self.member,
                                     self.config["retry_backoff_ms"], self.config["request_timeout_ms"])
        self.outstanding = collections.deque()  # (machine, request) asked for, not yet answered
        self.sent = []  # every request asked for

    def collect(self):
        for machine in (self.member, self.commits):
            for request in machine.next_requests(self.now):
                self.outstanding.append((machine, request))
                self.sent.append(request)

    def bodies(self, api):
        return [r.body for r in self.sent if r.api == api]


def run(scenario, machines):
    """Play `scenario` against `machines`; an AssertionError names the step."""
    for index, step in enumerate(scenario):
        where = "step {0} ({1!r})".format(index, step)
        if isinstance(step, Tick):
            machines.now += step.seconds
        elif isinstance(step, (Send, Raises)):
            if not machines.outstanding:
                machines.collect()
            assert machines.outstanding, where + ": nothing was asked for"
            machine, request = machines.outstanding.popleft()
            assert request.api == step.api, "{0}: asked for {1} {2}".format(where, request.api, request.body)
            if isinstance(step, Send):
                if step.target is not None:
                    assert request.target == step.target, where
                if step.check is not None:
                    assert step.check(request.body), "{0}: body {1}".format(where, request.body)
                machine.on_response(request.token, step.answer, machines.now)
            else:
                try:
                    machine.on_response(request.token, step.answer, machines.now)
                except step.error:
                    pass
                else:
                    raise AssertionError(where + ": nothing raised")
        elif isinstance(step, Quiet):
            machines.collect()
            assert not machines.outstanding, "{0}: asked for {1}".format(
                where, [r.api for _, r in machines.outstanding])
        elif isinstance(step, Events):
            events = machines.member.take_events()
            assert [type(e).__name__ for e in events] == step.names, "{0}: events {1}".format(where, events)
            if step.check is not None:
                assert step.check(events), "{0}: events {1}".format(where, events)
            machines.member.app_done(events)
        elif isinstance(step, Act):
            step.fn(machines, machines.now)
        elif isinstance(step, Check):
            assert step.fn(machines), "{0}: {1}".format(where, step.what)
        else:
            raise TypeError(step)


# --- canned answers ------------------------------------------------------------------------------
def find_coordinator(error=NONE, node_id=1):
    return {"throttle_time_ms": 0, "coordinators": [
        {"key": GROUP, "node_id": node_id, "host": "localhost", "port": 9092, "error_code": error,
         "error_message": None}]}


def join(member_id, generation=1, leader=None, members=(), error=NONE, protocol="range"):
    return {"throttle_time_ms": 0, "error_code": error, "generation_id": generation, "protocol_type": "consumer",
            "protocol_name": protocol, "leader": leader if leader is not None else member_id,
            "skip_assignment": False, "member_id": member_id,
            "members": [{"member_id": m, "group_instance_id": None, "metadata": meta} for m, meta in members]}


def sync(partitions, error=NONE):
    return {"throttle_time_ms": 0, "error_code": error, "protocol_type": "consumer", "protocol_name": "range",
            "assignment": encode_assignment(Assignment(3, group_by_topic(partitions, sort=False))) if not error
            else b""}


def heartbeat(error=NONE):
    return {"throttle_time_ms": 0, "error_code": error}


def leave(error=NONE):
    return {"throttle_time_ms": 0, "error_code": error, "members": []}


def commit(partitions, error=NONE):
    return {"throttle_time_ms": 0, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": p, "error_code": error} for p in partitions]}]}


def offset_fetch(offsets):
    return {"throttle_time_ms": 0, "error_code": 0, "groups": [], "topics": [
        {"name": TOPIC, "partitions": [
            {"partition_index": p, "committed_offset": off, "committed_leader_epoch": 3, "metadata": "m",
             "error_code": 0} for p, off in offsets.items()]}]}


def heartbeat_848(epoch, partitions=None, member_id="m-848", error=NONE, interval_ms=500):
    assignment = None
    if partitions is not None:
        assignment = {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": sorted(partitions)}]}
    return {"throttle_time_ms": 0, "error_code": error, "error_message": None, "member_id": member_id,
            "member_epoch": epoch, "heartbeat_interval_ms": interval_ms, "assignment": assignment}


def cluster(partitions=4):
    view = ClusterMetadata()
    view.topics[TOPIC] = TopicMetadata(TOPIC, TOPIC_ID, False, {
        p: PartitionMetadata(p, 0, 0, (0,), (0,), 0) for p in range(partitions)}, 0)
    view.topic_names_by_id = {TOPIC_ID: TOPIC}
    return view


def subscription(topics=(TOPIC,), owned=()):
    return encode_subscription(Subscription(3, list(topics), None, group_by_topic(list(owned), sort=True), -1))


def subscribe(topics=(TOPIC,)):
    return Act(lambda m, now: m.member.set_subscription(list(topics)))


def own(partitions):
    """The application now holds `partitions` (the driver keeps `owned` current)."""
    def fn(m, now):
        m.member.owned = list(partitions)
    return Act(fn)


def state(expected):
    return Check(lambda m: m.member.state is expected, "state {0}".format(expected.name))


# --- the classic member: join -> sync -> stable ---------------------------------------------------
def classic_join_as_leader(partitions=TPS):
    """FindCoordinator, KIP-394's MEMBER_ID_REQUIRED, join as leader of one,
    the leader's metadata, SyncGroup, the application applies it."""
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator(), lambda b: b["key"] == GROUP, target="any"),
        Send("JoinGroup", join("m-1", error=MEMBER_ID_REQUIRED, generation=-1, leader=""),
             lambda b: b["member_id"] == "", target="coordinator"),
        Send("JoinGroup", join("m-1", members=[("m-1", subscription())]), lambda b: b["member_id"] == "m-1"),
        Send("Metadata", cluster(), lambda b: b["topics"] == [TOPIC], target="any"),
        Send("SyncGroup", sync(list(partitions)),
             lambda b: b["generation_id"] == 1 and [a["member_id"] for a in b["assignments"]] == ["m-1"]),
        Check(lambda m: m.member.state.name == "STABLE", "stable"),
        Events(["AssignmentReceived"], lambda ev: ev[0].assignment.partitions() == list(partitions)),
        own(partitions),
        Quiet(),
    ]


def _heartbeat_due():
    return Tick(3.0)


def _is(name):
    return lambda m: m.member.state.name == name


def _join_body_owned(body):
    from fastkc.protocol.consumer_protocol import decode_subscription

    return decode_subscription(body["protocols"][0]["metadata"]).owned_topic_partitions()


SCENARIOS = {}


def scenario(protocol="classic", **settings):
    """Register a scenario builder: SCENARIOS[name] = (protocol, settings, steps)."""
    def register(fn):
        SCENARIOS[fn.__name__] = (protocol, settings, fn)
        return fn
    return register


@scenario()
def classic_stable_heartbeats():
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(), lambda b: b["generation_id"] == 1 and b["member_id"] == "m-1"),
        Quiet(),
        _heartbeat_due(),
        Send("Heartbeat", heartbeat()),
        Check(_is("STABLE")),
    ]


def _no_topic():
    """A Metadata answer without the subscribed topic (a broker just
    restarted answers so until its metadata cache catches up)."""
    view = ClusterMetadata()
    view.topics[TOPIC] = TopicMetadata(TOPIC, TOPIC_ID, False, {}, 3)  # UNKNOWN_TOPIC_OR_PARTITION
    return view


@scenario()
def classic_leader_without_topic_metadata_rejoins_when_it_appears():
    """The leader assigned from metadata lacking the topic (nothing to
    assign); once the consumer's metadata shows its partitions, the leader
    rejoins and assigns them (Java's metadata snapshot: a topic appearing
    is a change)."""
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", members=[("m-1", subscription())])),
        Send("Metadata", _no_topic()),
        Send("SyncGroup", sync([]), lambda b: b["assignments"][0]["member_id"] == "m-1"),
        Events(["AssignmentReceived"], lambda ev: ev[0].assignment.partitions() == []),
        Quiet(),
        Check(lambda m: m.member.metadata_changed({}) is False, "no metadata for the topic yet: no change"),
        Check(lambda m: m.member.metadata_changed({TOPIC: 4}) is True, "its partitions appeared: a change"),
        Send("JoinGroup", join("m-1", generation=2, members=[("m-1", subscription())]),
             lambda b: b["member_id"] == "m-1"),
        Send("Metadata", cluster()),
        Send("SyncGroup", sync(TPS), lambda b: b["generation_id"] == 2),
        Events(["AssignmentReceived"], lambda ev: ev[0].assignment.partitions() == TPS),
    ]


@scenario()
def classic_leader_rejoins_when_partitions_are_added():
    return classic_join_as_leader() + [
        Check(lambda m: m.member.metadata_changed({TOPIC: 4, "other": 9}) is False, "same count: no change"),
        Check(lambda m: m.member.metadata_changed({TOPIC: 6}) is True, "4 -> 6 partitions"),
        Quiet(),  # eager and owning: the application revokes first
        Quiet(),
        Events(["RevokeBeforeRejoin"], lambda ev: ev[0].partitions == TPS),
        own([]),
        Send("JoinGroup", join("m-1", generation=2, members=[("m-1", subscription())])),
    ]


@scenario()
def classic_follower_sends_no_assignment():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-2", leader="m-1")),
        Send("SyncGroup", sync(TPS[2:]), lambda b: b["assignments"] == []),
        Events(["AssignmentReceived"], lambda ev: ev[0].assignment.partitions() == TPS[2:]),
    ]


@scenario()
def classic_eager_rebalance_in_progress_revokes_before_rejoining():
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(REBALANCE_IN_PROGRESS)),
        Check(_is("UNJOINED")),
        Quiet(),  # eager and owning: the application revokes first
        Check(_is("PREPARING")),
        Quiet(),
        Events(["RevokeBeforeRejoin"], lambda ev: ev[0].partitions == TPS),
        own([]),
        Send("JoinGroup", join("m-1", generation=2, members=[("m-1", subscription())]),
             lambda b: _join_body_owned(b) == []),
        Send("Metadata", cluster()),
        Send("SyncGroup", sync(TPS), lambda b: b["generation_id"] == 2),
        Events(["AssignmentReceived"]),
    ]


@scenario(partition_assignment_strategy=[CooperativeStickyAssignor])
def classic_cooperative_keeps_partitions_during_the_rebalance():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", leader="m-0", protocol="cooperative-sticky")),
        Send("SyncGroup", sync(TPS)),
        Events(["AssignmentReceived"]),
        own(TPS),
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(REBALANCE_IN_PROGRESS)),
        # cooperative: no revocation before the join; owned partitions are reported
        Send("JoinGroup", join("m-1", generation=2, leader="m-0", protocol="cooperative-sticky"),
             lambda b: _join_body_owned(b) == TPS),
        Send("SyncGroup", sync(TPS[:2])),
        Events(["AssignmentReceived"]),
        own(TPS[:2]),
        # KIP-429: what was revoked goes to its new owner in a second round
        Act(lambda m, now: m.member.assignment_applied(True)),
        Send("JoinGroup", join("m-1", generation=3, leader="m-0", protocol="cooperative-sticky"),
             lambda b: _join_body_owned(b) == TPS[:2]),
    ]


def _fenced_by(error, keeps_member_id):
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(error)),
        Check(lambda m: m.member.generation == -1 and (m.member.member_id == "m-1") == keeps_member_id),
        Quiet(),  # fenced: the application hands its partitions to on_partitions_lost first
        Events(["PartitionsLost"], lambda ev: ev[0].partitions == TPS),
        own([]),
        Send("JoinGroup", join("m-9", generation=5, members=[("m-9", subscription())]),
             lambda b: b["member_id"] == ("m-1" if keeps_member_id else "")),
    ]


@scenario()
def classic_heartbeat_unknown_member_id_fences_and_rejoins_fresh():
    return _fenced_by(UNKNOWN_MEMBER_ID, keeps_member_id=False)


@scenario()
def classic_heartbeat_illegal_generation_fences_and_keeps_the_member_id():
    return _fenced_by(ILLEGAL_GENERATION, keeps_member_id=True)


@scenario()
def classic_heartbeat_fenced_instance_id_is_fatal():
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Raises("Heartbeat", heartbeat(FENCED_INSTANCE_ID), Exception),
    ]


@scenario()
def classic_heartbeat_not_coordinator_finds_it_again():
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(NOT_COORDINATOR)),
        Check(lambda m: not m.coordinator.known and m.member.state.name == "STABLE", "membership survives"),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator(node_id=2)),
        Send("Heartbeat", heartbeat(), target="coordinator"),
        Check(lambda m: m.coordinator.coordinator.node_id == 2, "the new coordinator"),
    ]


@scenario()
def classic_join_coordinator_load_in_progress_backs_off():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("", error=COORDINATOR_LOAD_IN_PROGRESS, generation=-1, leader="")),
        Quiet(),  # not at once: after retry_backoff_ms
        Tick(0.05),
        Quiet(),
        Tick(0.06),
        # the old coordinator answered so: it is looked up again first
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", leader="m-0")),
        Check(_is("SYNCING")),
    ]


@scenario()
def classic_coordinator_not_available_backs_off_then_finds_it():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator(COORDINATOR_NOT_AVAILABLE)),
        Quiet(),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", leader="m-0")),
    ]


@scenario()
def classic_member_id_required_rejoins_at_once_only_once():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", error=MEMBER_ID_REQUIRED, generation=-1, leader="")),
        Send("JoinGroup", join("m-1", error=MEMBER_ID_REQUIRED, generation=-1, leader="")),
        Quiet(),  # the second in a row waits retry_backoff_ms
        Tick(0.1),
        Send("JoinGroup", join("m-1", leader="m-0"), lambda b: b["member_id"] == "m-1"),
    ]


@scenario(max_poll_interval_ms=5000)
def classic_poll_interval_expiry_leaves_and_waits_for_the_application():
    return classic_join_as_leader() + [
        Act(lambda m, now: m.member.app_polled(now)),
        Tick(3.0),
        Send("Heartbeat", heartbeat()),
        Tick(2.5),  # 5.5 s since the last poll
        Send("LeaveGroup", leave(), lambda b: b["members"][0]["member_id"] == "m-1"),
        Check(lambda m: m.member.state.name == "UNJOINED" and m.member.member_id == "", "left"),
        Tick(10),
        Quiet(),  # no rejoin until the application polls
        Act(lambda m, now: m.member.app_polled(now)),
        Events(["PartitionsLost"], lambda ev: ev[0].partitions == TPS),
        own([]),
        Send("JoinGroup", join("m-2", leader="m-0"), lambda b: b["member_id"] == ""),
    ]


@scenario(max_poll_interval_ms=5000)
def commit_after_leaving_on_poll_timeout_fails():
    from fastkc.errors import CommitFailedError

    return classic_join_as_leader() + [
        Act(lambda m, now: m.member.app_polled(now)),
        Tick(5.5),
        Send("LeaveGroup", leave()),
        _commit(),
        Quiet(),
        _op_error(CommitFailedError),
    ]


@scenario(group_instance_id="instance-1")
def classic_static_member_does_not_leave():
    return classic_join_as_leader() + [
        Check(lambda m: all(b["group_instance_id"] == "instance-1" for b in m.bodies("JoinGroup"))),
        Act(lambda m, now: m.member.leave("closing", now)),
        Quiet(),
        Check(lambda m: m.member.member_id == "m-1" and m.member.generation == -1, "keeps its id"),
    ]


@scenario()
def classic_sync_rebalance_in_progress_rejoins_after_backoff():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("JoinGroup", join("m-1", leader="m-0")),
        Send("SyncGroup", sync([], error=REBALANCE_IN_PROGRESS)),
        Check(_is("UNJOINED")),
        Quiet(),
        Tick(0.1),
        Send("JoinGroup", join("m-1", generation=2, leader="m-0"), lambda b: b["member_id"] == "m-1"),
    ]


@scenario()
def classic_join_authorization_failure_is_fatal():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Raises("JoinGroup", join("", error=GROUP_AUTHORIZATION_FAILED, generation=-1, leader=""), Exception),
        Check(_is("UNJOINED")),
    ]


# --- commits ---------------------------------------------------------------------------------------
def _commit(offsets=None, deadline=5.0, retry=True, asynchronous=False, name="op"):
    from fastkc.structs import OffsetAndMetadata

    offsets = offsets or {TPS[0]: OffsetAndMetadata(3, "meta", 2)}

    def fn(m, now):
        setattr(m, name, m.commits.commit(offsets, now, deadline=now + deadline, retry=retry,
                                          asynchronous=asynchronous))
    return Act(fn)


def _op_error(error_type, name="op"):
    def fn(m):
        op = getattr(m, name)
        return op.done and (op.error is None if error_type is None else isinstance(op.error, error_type))
    return Check(fn, "the operation ended with {0}".format(error_type))


@scenario()
def commit_rules_follow_the_java_client():
    from fastkc.errors import CommitFailedError, KafkaTimeoutError, RebalanceInProgressError

    return classic_join_as_leader() + [
        _commit(),
        Send("OffsetCommit", commit([0], REBALANCE_IN_PROGRESS),
             lambda b: b["generation_id_or_member_epoch"] == 1 and b["member_id"] == "m-1"
             and b["topics"][0]["partitions"][0]["committed_metadata"] == "meta"
             and b["topics"][0]["partitions"][0]["committed_leader_epoch"] == 2),
        _op_error(RebalanceInProgressError),
        Check(_is("UNJOINED"), "the member rejoins"),
        Act(lambda m, now: setattr(m.member, "state", type(m.member.state).STABLE)),  # as if it had
        # NOT_COORDINATOR: the coordinator is looked up again and the commit retried after the backoff
        _commit(),
        Send("OffsetCommit", commit([0], NOT_COORDINATOR)),
        Check(lambda m: not m.op.done and not m.coordinator.known),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator()),
        Send("OffsetCommit", commit([0])),
        _op_error(None),
        # ILLEGAL_GENERATION: CommitFailedError, the member is fenced
        _commit(),
        Send("OffsetCommit", commit([0], ILLEGAL_GENERATION)),
        _op_error(CommitFailedError),
        Check(lambda m: m.member.generation == -1 and m.member.lost_pending, "fenced"),
        # no generation any more: refused before anything is sent (the
        # member prepares its rejoin: Java's "rebalance in progress")
        _commit(),
        Quiet(),
        _op_error(RebalanceInProgressError),
        Events(["PartitionsLost"]),
        own([]),
        Act(lambda m, now: m.member.set_subscription(None)),  # unsubscribed: no generation, no rebalance
        _commit(),
        Send("OffsetCommit", commit([0]), lambda b: b["generation_id_or_member_epoch"] == -1),
        _op_error(None),
        # a commit that keeps meeting a moving coordinator ends at its deadline
        Act(lambda m, now: setattr(m.member, "generation", 7)),
        _commit(deadline=0.25),
        Send("OffsetCommit", commit([0], NOT_COORDINATOR)),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator()),
        Send("OffsetCommit", commit([0], NOT_COORDINATOR)),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator()),
        Tick(0.1),
        Quiet(),  # past the deadline: not sent again
        _op_error(KafkaTimeoutError),
    ]


def _one_commit_event():
    return Check(lambda m: [e.op for e in m.commits.take_events()] == [m.op], "one CommitCompleted")


@scenario()
def commit_async_meets_a_moved_coordinator_and_is_sent_to_the_next():
    from fastkc.errors import UnknownTopicOrPartitionError

    return classic_join_as_leader() + [
        _commit(retry=False, asynchronous=True),
        Send("OffsetCommit", commit([0], NOT_COORDINATOR)),
        Check(lambda m: not m.op.done and not m.coordinator.known, "kept for the coordinator found next"),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator(COORDINATOR_NOT_AVAILABLE)),
        Quiet(),  # the lookup backs off
        Tick(0.1),
        Send("FindCoordinator", find_coordinator(node_id=2)),
        Send("OffsetCommit", commit([0]), target="coordinator"),
        _op_error(None),
        _one_commit_event(),
        # any other error ends it at once (its callback is told): sent once
        _commit(retry=False, asynchronous=True),
        Send("OffsetCommit", commit([0], 3)),  # UNKNOWN_TOPIC_OR_PARTITION
        _op_error(UnknownTopicOrPartitionError),
        _one_commit_event(),
    ]


@scenario()
def a_commit_waiting_for_the_coordinator_takes_newer_offsets():
    from fastkc.structs import OffsetAndMetadata

    def refresh(to, expect):
        def fn(m, now):
            assert m.commits.refresh(m.op, {TPS[0]: OffsetAndMetadata(to, "", -1)}, now + 5.0) is expect
        return Act(fn)

    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(NOT_COORDINATOR)),
        _commit(retry=False, asynchronous=True, deadline=1.0),
        Send("FindCoordinator", find_coordinator(COORDINATOR_NOT_AVAILABLE)),
        Tick(0.9),
        refresh(9, True),  # the auto commit's next interval, still no coordinator: a new deadline
        Tick(0.9),  # past the first deadline, not the refreshed one
        Send("FindCoordinator", find_coordinator()),
        Send("Heartbeat", heartbeat()),
        refresh(12, False),  # the commit is on the wire too: not changed
        Send("OffsetCommit", commit([0]), lambda b: b["topics"][0]["partitions"][0]["committed_offset"] == 9),
        _op_error(None),
    ]


def _coordinator_outage(seconds):
    """FindCoordinator answered COORDINATOR_NOT_AVAILABLE once a second:
    the member stays STABLE and hands the application nothing to do."""
    steps = []
    for _ in range(seconds):
        steps += [Tick(1.0), Send("FindCoordinator", find_coordinator(COORDINATOR_NOT_AVAILABLE)),
                  Events([]), Check(_is("STABLE"), "still a member")]
    return steps


@scenario(session_timeout_ms=10000)
def classic_membership_survives_a_long_coordinator_outage():
    """FindCoordinator fails for 12 s, past the session timeout (10 s): the
    member keeps its assignment the whole time (no event: the application
    goes on fetching), as Java's does; the coordinator it finds again says
    whether the session survived."""
    return classic_join_as_leader() + [
        _heartbeat_due(),
        Send("Heartbeat", heartbeat(NOT_COORDINATOR)),
        Events([]),
    ] + _coordinator_outage(12) + [
        Tick(1.0),
        Send("FindCoordinator", find_coordinator(node_id=2)),
        Send("Heartbeat", heartbeat(UNKNOWN_MEMBER_ID), target="coordinator"),
        Events(["PartitionsLost"]),  # the session ended on the broker: lost, then a rejoin
    ]


@scenario(group_instance_id="i-1")
def commit_fenced_instance_id_is_fatal_for_the_member():
    from fastkc.errors import FencedInstanceIdError

    return classic_join_as_leader() + [
        _commit(),
        Send("OffsetCommit", commit([0], FENCED_INSTANCE_ID)),
        _op_error(FencedInstanceIdError),
        Check(lambda m: isinstance(m.member.fatal_error, FencedInstanceIdError), "raised from the next poll"),
    ]


@scenario()
def offset_fetch_reads_committed_offsets():
    def fetch(m, now):
        m.op = m.commits.fetch(TPS[:3], now, deadline=now + 5)

    return [
        Act(fetch),
        Send("FindCoordinator", find_coordinator()),
        Send("OffsetFetch", offset_fetch({0: 5, 2: 9}),
             lambda b: b["require_stable"] and b["topics"] == [{"name": TOPIC, "partition_indexes": [0, 1, 2]}]),
        Check(lambda m: {tp.partition: (v.offset if v else None) for tp, v in m.op.result.items()}
              == {0: 5, 1: None, 2: 9}),
    ]


# --- KIP-848 -----------------------------------------------------------------------------------------
def kip848_join(partitions=(0, 1, 2, 3)):
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("ConsumerGroupHeartbeat", heartbeat_848(1, list(partitions)),
             lambda b: b["member_epoch"] == 0 and b["member_id"] == "m-848" and b["subscribed_topic_names"] == [TOPIC]
             and b["topic_partitions"] == []),
        # the target names topics by id: the machine learns the names first
        Send("Metadata", cluster(), lambda b: b["topics"] == [TOPIC]),
        Check(_is("RECONCILING")),
        Events(["Reconcile"], lambda ev: ev[0].target == {TPS[p] for p in partitions}),
        own([TPS[p] for p in partitions]),
        Check(_is("ACKNOWLEDGING")),
        # acknowledged at once, by topic id
        Send("ConsumerGroupHeartbeat", heartbeat_848(1),
             lambda b: b["member_epoch"] == 1
             and b["topic_partitions"] == [{"topic_id": TOPIC_ID, "partitions": sorted(partitions)}]),
        Check(_is("STABLE")),
    ]


@scenario(protocol="consumer", group_remote_assignor="uniform")
def kip848_reconciles_revoke_before_assign_and_rejoins_with_epoch_zero_when_fenced():
    return kip848_join() + [
        Tick(0.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(2, [0, 1]), lambda b: b["server_assignor"] == "uniform"),
        Check(_is("RECONCILING")),
        Check(lambda m: m.member.commit_identity() == (2, "m-848"), "commits carry the new epoch"),
        Events(["Reconcile"], lambda ev: ev[0].target == set(TPS[:2])),
        own(TPS[:2]),
        Send("ConsumerGroupHeartbeat", heartbeat_848(2),
             lambda b: b["topic_partitions"] == [{"topic_id": TOPIC_ID, "partitions": [0, 1]}]),
        Tick(0.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(0, error=FENCED_MEMBER_EPOCH)),
        Check(lambda m: m.member.state.name == "FENCED" and m.member.member_epoch == 0),
        Quiet(),  # the application drops its partitions as lost first
        Events(["PartitionsLost"], lambda ev: ev[0].partitions == TPS[:2]),
        own([]),
        Check(_is("JOINING")),
        Send("ConsumerGroupHeartbeat", heartbeat_848(3, []),
             lambda b: b["member_epoch"] == 0 and b["member_id"] == "m-848" and b["topic_partitions"] == []),
        Check(_is("STABLE")),
    ]


@scenario(protocol="consumer")
def kip848_unknown_member_id_fences():
    return kip848_join() + [
        Tick(0.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(0, error=UNKNOWN_MEMBER_ID)),
        Events(["PartitionsLost"]),
        own([]),
        Send("ConsumerGroupHeartbeat", heartbeat_848(4, []), lambda b: b["member_epoch"] == 0),
    ]


@scenario(protocol="consumer")
def kip848_coordinator_moves_and_the_heartbeat_follows():
    return kip848_join() + [
        Tick(0.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(0, error=NOT_COORDINATOR)),
        Check(lambda m: not m.coordinator.known and m.member.member_epoch == 1, "the epoch survives"),
        Tick(0.1),
        Send("FindCoordinator", find_coordinator(node_id=3)),
        Send("ConsumerGroupHeartbeat", heartbeat_848(1), lambda b: b["member_epoch"] == 1),
    ]


@scenario(protocol="consumer")
def kip848_membership_survives_a_long_coordinator_outage():
    return kip848_join() + [
        Tick(0.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(0, error=NOT_COORDINATOR)),
        Events([]),
    ] + _coordinator_outage(12) + [
        Tick(1.0),
        Send("FindCoordinator", find_coordinator(node_id=2)),
        Send("ConsumerGroupHeartbeat", heartbeat_848(1), lambda b: b["member_epoch"] == 1, target="coordinator"),
        Check(_is("STABLE")),
        Events([]),
    ]


@scenario(protocol="consumer", group_instance_id="i-1")
def kip848_static_member_leaves_with_epoch_minus_two():
    return [
        subscribe(),
        Send("FindCoordinator", find_coordinator()),
        Send("ConsumerGroupHeartbeat", heartbeat_848(1, []), lambda b: b["instance_id"] == "i-1"),
        Check(_is("STABLE")),  # nothing to reconcile
        Events([]),
        Act(lambda m, now: m.member.leave("closing", now)),
        Send("ConsumerGroupHeartbeat", heartbeat_848(-2), lambda b: b["member_epoch"] == -2),
        Check(_is("UNSUBSCRIBED")),
    ]


@scenario(protocol="consumer", max_poll_interval_ms=5000)
def kip848_poll_interval_expiry_leaves_then_loses_the_partitions():
    return kip848_join() + [
        Act(lambda m, now: m.member.app_polled(now)),
        Tick(5.5),
        Send("ConsumerGroupHeartbeat", heartbeat_848(-1), lambda b: b["member_epoch"] == -1),
        Check(_is("FENCED")),
        Quiet(),
        Act(lambda m, now: m.member.app_polled(now)),
        Events(["PartitionsLost"], lambda ev: ev[0].partitions == TPS),
        own([]),
        Send("ConsumerGroupHeartbeat", heartbeat_848(5, []), lambda b: b["member_epoch"] == 0),
    ]


@scenario(protocol="consumer")
def kip848_leaving_is_not_blocked_by_a_topic_id_never_learned():
    return kip848_join() + [
        own(TPS + [TopicPartition("x", 0)]),  # "x": no metadata ever named its id
        Act(lambda m, now: m.member.leave("closing", now)),
        Send("ConsumerGroupHeartbeat", heartbeat_848(-1),
             lambda b: b["member_epoch"] == -1
             and b["topic_partitions"] == [{"topic_id": TOPIC_ID, "partitions": [0, 1, 2, 3]}]),
        Check(_is("UNSUBSCRIBED")),
    ]
