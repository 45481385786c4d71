"""The group members' logic with canned coordinator responses (no broker):
a fake transport answers each request from a script and records what was
sent; the group thread's work is run step by step (run_step), the
application's side through on_app_poll, as KafkaConsumer.poll does."""
import collections
import threading
import time
import uuid

import pytest

from fastkc.assignors import CooperativeStickyAssignor, RangePartitionAssignor
from fastkc.cluster.metadata import ClusterMetadata, PartitionMetadata, TopicMetadata
from fastkc.config import consumer_config
from fastkc.errors import (
    CommitFailedError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RebalanceInProgressError,
)
from fastkc.group import make_group_member
from fastkc.group.classic import MemberState
from fastkc.group.coordinator_machine import CoordinatorUnknownError
from fastkc.group.kip848 import Member848State
from fastkc.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    group_by_topic,
)
from fastkc.structs import OffsetAndMetadata, TopicPartition
from tests.support.held_partitions import HeldPartitions

TOPIC = "t"
TOPIC_ID = uuid.UUID(int=7).bytes
TPS = [TopicPartition(TOPIC, p) for p in range(4)]

# error codes
NONE, NOT_COORDINATOR, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE = 0, 16, 22, 25, 27
MEMBER_ID_REQUIRED, FENCED_MEMBER_EPOCH = 79, 110


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class FakeTransport:
    """request_any (FindCoordinator) / use_coordinator / call / metadata /
    coordinator_lost, scripted."""

    def __init__(self, partitions=4):
        self.coordinator_id = None
        self.sent = []  # (api, body)
        self.script = collections.defaultdict(collections.deque)
        self.finds = 0
        self.find_errors = collections.deque()  # FindCoordinator error codes to answer first
        self.lost = 0
        cluster = ClusterMetadata()
        cluster.topics[TOPIC] = TopicMetadata(TOPIC, TOPIC_ID, False, {
            p: PartitionMetadata(p, 0, 0, (0,), (0,), 0) for p in range(partitions)}, 0)
        cluster.topic_names_by_id = {TOPIC_ID: TOPIC}
        self.client = type("C", (), {"cluster": cluster})()

    def answer(self, api, response):
        self.script[api].append(response)

    def request_any(self, api, body, timeout_ms):
        assert api == "FindCoordinator" and body["key"] == "g"
        self.finds += 1
        error = self.find_errors.popleft() if self.find_errors else 0
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": "g", "node_id": 1, "host": "localhost", "port": 9092, "error_code": error,
             "error_message": None}]}

    def use_coordinator(self, coordinator):
        self.coordinator_id = coordinator.node_id

    def coordinator_lost(self):
        self.lost += 1
        self.coordinator_id = None

    def call(self, api, body, timeout_ms):
        self.sent.append((api, body))
        assert self.script[api], "no canned answer for " + api
        return self.script[api].popleft()

    def metadata(self, topics, timeout_ms):
        return self.client.cluster

    def bodies(self, api):
        return [b for a, b in self.sent if a == api]

    def close(self):
        pass


class FakeApp(HeldPartitions):
    def __init__(self):
        super().__init__()
        self.assigned = []
        self.positions_ = {}
        self.seeks = []
        self.metadata_requests = 0

    def positions(self):
        return {tp: pos for tp, pos in self.positions_.items() if tp in self.assigned}

    def set_assignment(self, partitions):
        self.assigned = list(partitions)

    def hold_for_committed(self, tp, held=True):
        if tp not in self.positions_:  # a partition with a position is not held (FetchMachine's rule)
            super().hold_for_committed(tp, held)

    def seek(self, tp, offset, epoch):
        self.seeks.append((tp, offset, epoch))
        super().seek(tp, offset, epoch)

    def request_metadata_update(self):
        self.metadata_requests += 1


class Recorder:
    def __init__(self):
        self.calls = []

    def on_partitions_revoked(self, tps):
        self.calls.append(("revoked", [tp.partition for tp in tps]))

    def on_partitions_assigned(self, tps):
        self.calls.append(("assigned", [tp.partition for tp in tps]))

    def on_partitions_lost(self, tps):
        self.calls.append(("lost", [tp.partition for tp in tps]))


def make(assignors=(RangePartitionAssignor,), protocol="classic", **configs):
    settings = dict(group_id="g", partition_assignment_strategy=list(assignors), group_protocol=protocol,
                    enable_auto_commit=False)
    settings.update(configs)
    config = consumer_config(settings)
    transport, app, clock = FakeTransport(), FakeApp(), FakeClock()
    member = make_group_member(config, app, transport=transport, clock=clock, sleep=clock.sleep,
                               start_thread=False)
    listener = Recorder()
    member.subscribe([TOPIC], listener)
    return member, transport, app, clock, listener


def join_response(member_id, generation=1, leader=None, members=(), error=NONE, protocol="range"):
    return {"throttle_time_ms": 0, "error_code": error, "generation_id": generation, "protocol_type": "consumer",
            "protocol_name": protocol, "leader": leader if leader is not None else member_id,
            "skip_assignment": False, "member_id": member_id,
            "members": [{"member_id": m, "group_instance_id": None, "metadata": meta} for m, meta in members]}


def sync_response(partitions, error=NONE):
    return {"throttle_time_ms": 0, "error_code": error, "protocol_type": "consumer", "protocol_name": "range",
            "assignment": encode_assignment(Assignment(3, group_by_topic(partitions, sort=False))) if not error
            else b""}


def offset_fetch_response(offsets):
    return {"throttle_time_ms": 0, "error_code": 0, "groups": [], "topics": [
        {"name": TOPIC, "partitions": [
            {"partition_index": p, "committed_offset": off, "committed_leader_epoch": 3, "metadata": "m",
             "error_code": 0} for p, off in offsets.items()]}]}


def commit_response(partitions, error=NONE):
    return {"throttle_time_ms": 0, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": p, "error_code": error} for p in partitions]}]}


def subscription_bytes(topics=(TOPIC,), owned=()):
    return encode_subscription(Subscription(3, list(topics), None, group_by_topic(list(owned), sort=True), -1))


def joined(member, transport, app, partitions=TPS, committed=None):
    """Drive a member through MEMBER_ID_REQUIRED, join as leader of one, sync,
    and the application's poll."""
    transport.answer("JoinGroup", join_response("m-1", error=MEMBER_ID_REQUIRED, generation=-1, leader=""))
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(list(partitions)))
    transport.answer("OffsetFetch", offset_fetch_response(committed or {}))
    member.run_step()  # MEMBER_ID_REQUIRED
    member.run_step()  # join + sync
    member.on_app_poll()  # assigned: the committed offsets' read starts
    read_committed(member)


def read_committed(member):
    """What the group thread and the next poll do with a committed-offset
    read a poll started: the step sends the OffsetFetch, the poll applies
    its answer (poll itself never waits for it)."""
    member.run_step()
    member.on_app_poll()


def test_join_with_member_id_required_leader_assigns_and_committed_positions_are_used():
    member, transport, app, clock, listener = make()
    joined(member, transport, app, committed={0: 5, 2: 9})
    joins = transport.bodies("JoinGroup")
    assert [b["member_id"] for b in joins] == ["", "m-1"]  # KIP-394 handshake
    assert joins[0]["protocols"][0]["name"] == "range"
    assert decode_subscription(joins[0]["protocols"][0]["metadata"]).topics == [TOPIC]
    sync = transport.bodies("SyncGroup")[0]
    assert sync["generation_id"] == 1 and sync["member_id"] == "m-1"
    assert [a["member_id"] for a in sync["assignments"]] == ["m-1"]
    assert decode_assignment(sync["assignments"][0]["assignment"]).partitions() == TPS
    assert member.state is MemberState.STABLE
    assert app.assigned == TPS
    assert listener.calls == [("assigned", [0, 1, 2, 3])]
    # committed offsets become positions (with their leader epoch); the rest follow auto_offset_reset
    assert app.seeks == [(TPS[0], 5, 3), (TPS[2], 9, 3)]
    assert member.group_metadata().state == "<stable>" and member.group_metadata().generation_id == 1


def test_a_leader_that_assigned_without_the_topics_metadata_asks_for_metadata_until_it_shows():
    """The sync twin of the asyncio driver's test: the leader's Metadata
    lacked the topic, so nothing was assigned; the member asks the
    consumer's metadata again after acknowledging, and after each answer
    that still lacks the topic; the answer that has it makes it rejoin."""
    member, transport, app, clock, listener = make()
    cluster = transport.client.cluster
    full = cluster.topics[TOPIC]
    cluster.topics[TOPIC] = type(full)(TOPIC, TOPIC_ID, False, {}, 3)  # UNKNOWN_TOPIC_OR_PARTITION
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response([]))
    member.run_step()
    member.on_app_poll()
    assert member.state is MemberState.STABLE and app.assigned == [] and app.metadata_requests == 1
    member.metadata_changed({})  # still without the topic: asked again
    assert app.metadata_requests == 2
    cluster.topics[TOPIC] = full
    member.metadata_changed({TOPIC: 4})
    transport.answer("JoinGroup", join_response("m-1", generation=2, members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    member.on_app_poll()
    assert app.assigned == TPS and len(transport.bodies("JoinGroup")) == 2


def test_a_failed_committed_offset_read_keeps_the_partitions_held_and_is_retried():
    """The soak's early duplicates: a member that could not read the
    committed offsets (its coordinator's node killed) let auto_offset_reset
    start partition 1 at 0 though 1002 was committed. Java keeps such
    partitions without a position and reads again; so does fastkc."""
    member, transport, app, clock, listener = make(request_timeout_ms=1000, retry_backoff_ms=100)
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    not_coordinator = dict(offset_fetch_response({}), error_code=NOT_COORDINATOR)
    for _ in range(100):
        transport.answer("OffsetFetch", not_coordinator)
    member.run_step()
    member.on_app_poll()  # the read starts; poll does not wait for it
    assert app.assigned == TPS and listener.calls == [("assigned", [0, 1, 2, 3])]
    assert transport.bodies("OffsetFetch") == []
    started = clock.now
    while clock.now < started + 1.0:  # the group thread retries it until request_timeout_ms
        clock.now += member.run_step()
        member.on_app_poll()  # goes on meanwhile; nothing is released
        assert app.seeks == [] and app.starts == {} and app.held == set(TPS)
    member.run_step()  # at request_timeout_ms: the read ends
    member.on_app_poll()  # it failed: the partitions stay held
    tried = len(transport.bodies("OffsetFetch"))
    assert tried > 1  # retried inside request_timeout_ms
    assert app.seeks == [] and app.starts == {} and app.held == set(TPS)
    transport.script["OffsetFetch"].clear()
    member.on_app_poll()  # backing off: no read yet
    member.run_step()
    assert len(transport.bodies("OffsetFetch")) == tried
    clock.now += 0.1
    transport.answer("OffsetFetch", offset_fetch_response({1: 1002}))
    member.on_app_poll()
    read_committed(member)
    assert app.seeks == [(TPS[1], 1002, 3)]
    assert app.starts == {TPS[0]: None, TPS[1]: 1002, TPS[2]: None, TPS[3]: None} and app.held == set()
    member.on_app_poll()
    assert len(transport.bodies("OffsetFetch")) == tried + 1  # settled: not read again


def test_follower_sends_no_assignment():
    member, transport, app, clock, listener = make()
    transport.answer("JoinGroup", join_response("m-2", leader="m-1"))
    transport.answer("SyncGroup", sync_response(TPS[2:]))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    assert transport.bodies("SyncGroup")[0]["assignments"] == []
    member.on_app_poll()
    assert app.assigned == TPS[2:]


def test_leader_assigns_every_member_with_its_assignor():
    member, transport, app, clock, listener = make()
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes()),
                                                               ("m-2", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS[:2]))
    member.run_step()
    sync = transport.bodies("SyncGroup")[0]
    got = {a["member_id"]: decode_assignment(a["assignment"]).partitions() for a in sync["assignments"]}
    assert got == {"m-1": TPS[:2], "m-2": TPS[2:]}


def test_eager_rebalance_commits_then_revokes_before_rejoining():
    member, transport, app, clock, listener = make(enable_auto_commit=True)
    joined(member, transport, app)
    app.positions_ = {TPS[0]: (11, 4), TPS[1]: (12, 4)}
    transport.answer("Heartbeat", {"throttle_time_ms": 0, "error_code": REBALANCE})
    clock.now += 10
    member._last_poll = clock.now
    member.run_step()  # heartbeat -> rebalance needed
    assert member.state is MemberState.UNJOINED
    member.run_step()  # eager and owning partitions: wait for the application
    assert member.state is MemberState.PREPARING
    assert not transport.bodies("JoinGroup")[2:]
    transport.answer("OffsetCommit", commit_response([0, 1]))
    member._next_auto_commit = float("inf")
    member.on_app_poll()
    commit = transport.bodies("OffsetCommit")[-1]
    assert commit["generation_id_or_member_epoch"] == 1 and commit["member_id"] == "m-1"
    parts = {p["partition_index"]: (p["committed_offset"], p["committed_leader_epoch"])
             for p in commit["topics"][0]["partitions"]}
    assert parts == {0: (11, 4), 1: (12, 4)}
    assert listener.calls[-1] == ("revoked", [0, 1, 2, 3])
    assert app.assigned == []
    # now the thread rejoins, owning nothing
    transport.answer("JoinGroup", join_response("m-1", generation=2, members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    join = transport.bodies("JoinGroup")[-1]
    assert decode_subscription(join["protocols"][0]["metadata"]).owned_topic_partitions() == []
    member.on_app_poll()
    assert listener.calls[-1] == ("assigned", [0, 1, 2, 3])


def test_cooperative_revokes_only_moved_partitions_and_rejoins():
    member, transport, app, clock, listener = make(assignors=(CooperativeStickyAssignor,))
    assert member.rebalance_protocol.name == "COOPERATIVE"
    transport.answer("JoinGroup", join_response("m-1", protocol="cooperative-sticky",
                                                members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    member.on_app_poll()
    transport.answer("Heartbeat", {"throttle_time_ms": 0, "error_code": REBALANCE})
    member._next_heartbeat = 0
    member.run_step()
    assert member.state is MemberState.UNJOINED
    # cooperative: no revocation before the join; owned partitions are reported
    transport.answer("JoinGroup", join_response("m-1", generation=2, leader="m-2", protocol="cooperative-sticky"))
    transport.answer("SyncGroup", sync_response(TPS[:2]))
    member.run_step()
    join = transport.bodies("JoinGroup")[-1]
    owned = decode_subscription(join["protocols"][0]["metadata"]).owned_topic_partitions()
    assert owned == TPS
    assert app.assigned == TPS  # still fetching everything during the rebalance
    member.on_app_poll()
    assert listener.calls[-2:] == [("revoked", [2, 3]), ("assigned", [])]
    assert app.assigned == TPS[:2]
    assert member.state is MemberState.UNJOINED  # the second round hands 2, 3 over


def test_fenced_member_hands_partitions_to_on_partitions_lost_and_rejoins_fresh():
    member, transport, app, clock, listener = make()
    joined(member, transport, app)
    transport.answer("Heartbeat", {"throttle_time_ms": 0, "error_code": UNKNOWN_MEMBER_ID})
    member._next_heartbeat = 0
    member.run_step()
    assert member.member_id == "" and member.generation == -1
    member.on_app_poll()
    assert listener.calls[-1] == ("lost", [0, 1, 2, 3])
    assert app.assigned == []
    transport.answer("JoinGroup", join_response("m-9", generation=5, members=[("m-9", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    member.run_step()
    member.run_step()
    assert transport.bodies("JoinGroup")[-1]["member_id"] == ""


def test_coordinator_loss_on_heartbeat_finds_it_again():
    member, transport, app, clock, listener = make()
    joined(member, transport, app)
    finds = transport.finds
    transport.answer("Heartbeat", {"throttle_time_ms": 0, "error_code": NOT_COORDINATOR})
    member._next_heartbeat = 0
    member.run_step()
    assert transport.lost == 1 and member.state is MemberState.STABLE
    transport.answer("Heartbeat", {"throttle_time_ms": 0, "error_code": NONE})
    member._next_heartbeat = 0
    member.run_step()
    assert transport.finds == finds + 1


def test_commit_errors_follow_the_java_client():
    member, transport, app, clock, listener = make()
    joined(member, transport, app)
    offsets = {TPS[0]: OffsetAndMetadata(3, "meta", 2)}
    transport.answer("OffsetCommit", commit_response([0], REBALANCE))
    with pytest.raises(RebalanceInProgressError):
        member.commit_sync(offsets, 1000)
    body = transport.bodies("OffsetCommit")[-1]
    assert body["topics"][0]["partitions"][0]["committed_metadata"] == "meta"
    assert body["topics"][0]["partitions"][0]["committed_leader_epoch"] == 2
    # NOT_COORDINATOR is retried (after finding the coordinator again)
    member.machine.state = MemberState.STABLE  # as if the rebalance had completed (test shortcut)
    transport.answer("OffsetCommit", commit_response([0], NOT_COORDINATOR))
    transport.answer("OffsetCommit", commit_response([0]))
    member.commit_sync(offsets, 5000)
    assert transport.lost >= 1
    transport.answer("OffsetCommit", commit_response([0], ILLEGAL_GENERATION))
    with pytest.raises(CommitFailedError):
        member.commit_sync(offsets, 1000)
    # no generation any more: refused before anything is sent
    sent = len(transport.sent)
    with pytest.raises(CommitFailedError):
        member.commit_sync(offsets, 1000)
    assert len(transport.sent) == sent


def test_commit_sync_times_out_when_the_coordinator_keeps_moving():
    member, transport, app, clock, listener = make(retry_backoff_ms=1)
    joined(member, transport, app)
    for _ in range(50):
        transport.answer("OffsetCommit", commit_response([0], NOT_COORDINATOR))

    real_call = transport.call

    def advancing(api, body, timeout_ms):
        clock.now += 0.1
        return real_call(api, body, timeout_ms)

    transport.call = advancing
    with pytest.raises(KafkaTimeoutError):
        member.commit_sync({TPS[0]: OffsetAndMetadata(1, "", -1)}, 1000)


def test_commit_sync_bounds_the_coordinator_lookup_it_needs_by_its_own_timeout():
    # With every connection refused, a FindCoordinator made for a commit used
    # to carry the full request_timeout_ms: commit_sync(timeout_ms=3000) took
    # 6.5 s in the fault campaign's outage (tests/faults/test_outage.py).
    member, transport, app, clock, listener = make(request_timeout_ms=5000, retry_backoff_ms=100)
    joined(member, transport, app)
    transport.coordinator_lost()
    member.coordinator.lost()
    asked = []

    def refused(api, body, timeout_ms):
        asked.append(timeout_ms)
        clock.now += timeout_ms / 1000.0  # the lookup waits its whole timeout, then fails
        raise KafkaTimeoutError("FindCoordinator: no broker answered")

    transport.request_any = refused
    started = clock.now
    with pytest.raises(KafkaTimeoutError):
        member.commit_sync({TPS[0]: OffsetAndMetadata(1, "", -1)}, 3000)
    assert asked and max(asked) <= 3000
    assert clock.now - started <= 3.0 + 0.2  # the bound, plus at most one retry backoff's slack


def test_commit_async_callback_runs_in_poll():
    member, transport, app, clock, listener = make()
    joined(member, transport, app)
    done = []
    member.commit_async({TPS[1]: OffsetAndMetadata(8, "", -1)}, lambda offsets, err: done.append((offsets, err)))
    transport.answer("OffsetCommit", commit_response([1]))
    member._next_heartbeat = float("inf")
    member.run_step()  # the group thread sends it
    assert done == []  # callbacks only run on the application's thread
    member.on_app_poll()
    assert done == [({TPS[1]: OffsetAndMetadata(8, "", -1)}, None)]


def test_max_poll_interval_leaves_the_group_and_the_next_poll_reports_lost():
    member, transport, app, clock, listener = make(max_poll_interval_ms=5000)
    joined(member, transport, app)
    clock.now += 6
    transport.answer("LeaveGroup", {"throttle_time_ms": 0, "error_code": 0, "members": []})
    member.run_step()
    leave = transport.bodies("LeaveGroup")[0]
    assert leave["members"][0]["member_id"] == "m-1"
    assert member.member_id == "" and member.state is MemberState.UNJOINED
    assert member.run_step() > 0 and not transport.bodies("JoinGroup")[2:]  # no rejoin until the app polls
    member.on_app_poll()
    assert listener.calls[-1] == ("lost", [0, 1, 2, 3])


def test_static_member_sends_its_instance_id_and_does_not_leave():
    member, transport, app, clock, listener = make(group_instance_id="instance-1")
    joined(member, transport, app)
    assert all(b["group_instance_id"] == "instance-1" for b in transport.bodies("JoinGroup"))
    joins = len(transport.bodies("JoinGroup"))
    member.close(autocommit=False)
    assert transport.bodies("LeaveGroup") == []
    # nothing else either: a JoinGroup now would rebalance the group it keeps its place in
    assert len(transport.bodies("JoinGroup")) == joins and member.state is MemberState.CLOSED


def test_illegal_transitions_are_refused():
    member, transport, app, clock, listener = make()
    with pytest.raises(IllegalStateError):
        member.machine._set_state(MemberState.STABLE)


def heartbeat_848(epoch, partitions=None, member_id="m-848", error=NONE):
    assignment = None
    if partitions is not None:
        assignment = {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": sorted(partitions)}]}
    return {"throttle_time_ms": 0, "error_code": error, "error_message": None, "member_id": member_id,
            "member_epoch": epoch, "heartbeat_interval_ms": 500, "assignment": assignment}


def test_kip848_join_reconcile_revoke_before_assign_and_fencing():
    member, transport, app, clock, listener = make(protocol="consumer", group_remote_assignor="uniform")
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(1, [0, 1, 2, 3]))
    member.run_step()
    first = transport.bodies("ConsumerGroupHeartbeat")[0]
    assert first["member_epoch"] == 0 and first["subscribed_topic_names"] == [TOPIC]
    assert first["server_assignor"] == "uniform" and first["member_id"]
    assert member.state is Member848State.RECONCILING
    transport.answer("OffsetFetch", offset_fetch_response({1: 40}))
    member.on_app_poll()
    assert listener.calls == [("assigned", [0, 1, 2, 3])]
    assert member.state is Member848State.ACKNOWLEDGING
    # the acknowledgement reports what we own, by topic id; the same step
    # reads the committed offsets, which the next poll applies
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(1))
    read_committed(member)
    assert app.seeks == [(TPS[1], 40, 3)]
    ack = transport.bodies("ConsumerGroupHeartbeat")[-1]
    assert ack["member_epoch"] == 1 and ack["topic_partitions"] == [{"topic_id": TOPIC_ID, "partitions": [0, 1, 2, 3]}]
    # a new target without 2, 3: revoked (commit first) before anything else
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(2, [0, 1]))
    member._next_heartbeat = 0
    member.run_step()
    app.positions_ = {TPS[2]: (7, 1)}
    member._auto_commit = True
    transport.answer("OffsetCommit", commit_response([2]))
    member._next_auto_commit = float("inf")
    member.on_app_poll()
    assert listener.calls[-2:] == [("revoked", [2, 3]), ("assigned", [])]
    assert transport.bodies("OffsetCommit")[-1]["generation_id_or_member_epoch"] == 2
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(2))
    member.run_step()
    assert transport.bodies("ConsumerGroupHeartbeat")[-1]["topic_partitions"] == [
        {"topic_id": TOPIC_ID, "partitions": [0, 1]}]
    # fenced: lost, then rejoin with epoch 0 and the same member id
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(0, error=FENCED_MEMBER_EPOCH))
    member._next_heartbeat = 0
    member.run_step()
    assert member.state is Member848State.FENCED
    member.on_app_poll()
    assert listener.calls[-1] == ("lost", [0, 1])
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(3, []))
    member.run_step()
    rejoin = transport.bodies("ConsumerGroupHeartbeat")[-1]
    assert rejoin["member_epoch"] == 0 and rejoin["member_id"] == ack["member_id"]
    assert rejoin["topic_partitions"] == []


def test_kip848_static_member_leaves_with_epoch_minus_two():
    member, transport, app, clock, listener = make(protocol="consumer", group_instance_id="i-1")
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(1, []))
    member.run_step()
    transport.answer("ConsumerGroupHeartbeat", heartbeat_848(-2))
    member.close(autocommit=False)
    assert transport.bodies("ConsumerGroupHeartbeat")[-1]["member_epoch"] == -2


def test_subscription_change_during_a_join_rejoins_after_it():
    member, transport, app, clock, listener = make()
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes())]))
    real_call = transport.call

    def call(api, body, timeout_ms):
        if api == "JoinGroup":  # the subscription changes while the JoinGroup is on the wire
            member.update_subscription([TOPIC, "u"])
        return real_call(api, body, timeout_ms)

    transport.call = call
    transport.answer("SyncGroup", sync_response(TPS))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    assert member.state is MemberState.STABLE
    member.on_app_poll()  # the assignment is applied first
    member.run_step()
    # the rejoin the change asked for: eager and owning, the application revokes first
    assert member.state is MemberState.PREPARING
    assert (MemberState.STABLE, MemberState.UNJOINED) in member.machine.transitions
    transport.call = real_call
    transport.answer("JoinGroup", join_response("m-1", generation=2, leader="m-0"))
    transport.answer("SyncGroup", sync_response(TPS))
    member.run_step()  # eager and owning: the application revokes first
    member.on_app_poll()
    member.run_step()
    join = transport.bodies("JoinGroup")[-1]
    assert decode_subscription(join["protocols"][0]["metadata"]).topics == [TOPIC, "u"]


def test_close_commits_revokes_leaves_and_ends_closed():
    member, transport, app, clock, listener = make(enable_auto_commit=True)
    joined(member, transport, app)
    app.positions_ = {TPS[3]: (21, 0)}
    transport.answer("OffsetCommit", commit_response([3]))
    transport.answer("LeaveGroup", {"throttle_time_ms": 0, "error_code": 0, "members": []})
    member.close()
    assert transport.bodies("OffsetCommit")[-1]["topics"][0]["partitions"][0]["committed_offset"] == 21
    assert listener.calls[-1] == ("revoked", [0, 1, 2, 3])
    assert transport.bodies("LeaveGroup")[0]["members"][0]["member_id"] == "m-1"
    assert member.state is MemberState.CLOSED
    with pytest.raises(IllegalStateError):
        member.machine._set_state(MemberState.UNJOINED)


class HeldJoinTransport(FakeTransport):
    """A coordinator that holds the JoinGroup until the test releases it,
    and an abort() that does not end it (as when the wake-up is slow to
    take effect): close() cannot take the group client back."""

    def __init__(self):
        super().__init__()
        self.held = threading.Event()
        self.release = threading.Event()
        self.aborts = 0
        self.closes = []  # the thread that closed the client, per close()

    def call(self, api, body, timeout_ms):
        if api != "JoinGroup":
            return super().call(api, body, timeout_ms)
        self.sent.append((api, body))
        self.held.set()
        self.release.wait(30)
        raise KafkaConnectionError("the JoinGroup was ended")

    def abort(self):
        self.aborts += 1

    def close(self):
        self.closes.append(threading.current_thread().name)


def test_close_past_a_held_call_keeps_its_bound_and_the_thread_closes_the_client_after_the_call():
    config = consumer_config(dict(group_id="g", enable_auto_commit=False))
    transport = HeldJoinTransport()
    member = make_group_member(config, FakeApp(), transport=transport)  # its own thread, the real clock
    member.subscribe([TOPIC], Recorder())
    assert transport.held.wait(10)
    start = time.monotonic()
    member.close(timeout_ms=300)
    took = time.monotonic() - start
    # the bound (0.3 s), then 0.2 s for the aborted call to let go of the
    # client and 0.1 s for the thread to end; before, 1.0 and 0.5 s (1.8 s
    # in all). The rest is slack for a loaded machine.
    assert took < 1.5, took
    assert transport.aborts == 1 and transport.bodies("LeaveGroup") == []  # no client: no LeaveGroup
    assert transport.closes == []  # not under the call that still uses it
    transport.release.set()
    member._thread.join(10)
    assert not member._thread.is_alive()
    assert transport.closes == [member._thread.name]  # closed once, by the thread as it ended
    assert member.state is MemberState.CLOSED


def test_close_with_the_group_thread_idle_closes_the_client_itself():
    config = consumer_config(dict(group_id="g", enable_auto_commit=False))
    transport = HeldJoinTransport()
    member = make_group_member(config, FakeApp(), transport=transport)
    member.subscribe([TOPIC], Recorder())
    assert transport.held.wait(10)
    transport.release.set()  # the JoinGroup fails; the thread backs off, holding nothing
    time.sleep(0.05)
    member.close(timeout_ms=2000)
    assert transport.closes == [threading.current_thread().name]
    assert not member._thread.is_alive()


def test_a_raising_listener_does_not_stop_the_hand_over_and_its_error_reaches_poll():
    member, transport, app, clock, listener = make()

    class Boom(Recorder):
        def on_partitions_assigned(self, tps):
            super().on_partitions_assigned(tps)
            raise ValueError("listener bug")

    member._listener = Boom()
    transport.answer("JoinGroup", join_response("m-1", members=[("m-1", subscription_bytes())]))
    transport.answer("SyncGroup", sync_response(TPS))
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.run_step()
    with pytest.raises(ValueError, match="listener bug"):
        member.on_app_poll()
    assert app.assigned == TPS and member.assignment() == set(TPS)
    member.on_app_poll()  # raised once, not again


def test_manual_assignment_starts_at_committed_offsets_and_is_auto_committed():
    config = consumer_config(dict(group_id="g", enable_auto_commit=True, auto_commit_interval_ms=1000))
    transport, app, clock = FakeTransport(), FakeApp(), FakeClock()
    member = make_group_member(config, app, transport=transport, clock=clock, sleep=clock.sleep,
                               start_thread=False)
    app.set_assignment(TPS[:2])
    app.positions_ = {TPS[1]: (50, -1)}  # already positioned (e.g. seek): left alone
    member.manual_assignment(TPS[:2])
    transport.answer("OffsetFetch", offset_fetch_response({0: 12}))
    member.on_app_poll()
    read_committed(member)
    assert app.seeks == [(TPS[0], 12, 3)]
    assert transport.bodies("OffsetFetch")[0]["topics"] == [{"name": TOPIC, "partition_indexes": [0]}]
    clock.now += 2
    member.on_app_poll()  # auto commit is due: queued for the group thread
    transport.answer("OffsetCommit", commit_response([1]))
    member.run_step()
    body = transport.bodies("OffsetCommit")[0]
    assert body["generation_id_or_member_epoch"] == -1 and body["member_id"] == ""
    assert body["topics"][0]["partitions"][0]["committed_offset"] == 50


def test_a_fatal_find_coordinator_error_reaches_poll_and_a_retriable_one_backs_off():
    member, transport, app, clock, listener = make(retry_backoff_ms=100)
    transport.find_errors.extend([15, 30])  # COORDINATOR_NOT_AVAILABLE, then GROUP_AUTHORIZATION_FAILED
    assert member.run_step() == pytest.approx(0.1)  # retried after retry_backoff_ms
    assert transport.finds == 1 and transport.bodies("JoinGroup") == []
    clock.now += 0.1
    member.run_step()
    with pytest.raises(GroupAuthorizationFailedError):
        member.on_app_poll()
    member.on_app_poll()  # raised once


def test_an_async_commit_whose_coordinator_is_never_found_fails_its_callback():
    member, transport, app, clock, listener = make(retry_backoff_ms=100, request_timeout_ms=1000)
    joined(member, transport, app)
    transport.coordinator_lost()
    member.coordinator.lost()
    transport.find_errors.extend([15] * 20)
    done = []
    member.commit_async({TPS[0]: OffsetAndMetadata(1, "", -1)}, lambda offsets, err: done.append(err))
    member._next_heartbeat = float("inf")
    for _ in range(15):
        clock.now += member.run_step()
    member.on_app_poll()
    assert len(done) == 1 and isinstance(done[0], CoordinatorUnknownError)
    assert transport.bodies("OffsetCommit") == []


def test_kip848_target_with_a_topic_id_the_client_does_not_know_is_resolved_by_metadata():
    member, transport, app, clock, listener = make(protocol="consumer")
    other_id = uuid.UUID(int=9).bytes
    cluster = transport.client.cluster
    # the group client has not seen topic "u" yet: the Metadata answer names it
    refreshed = ClusterMetadata()
    refreshed.topics = dict(cluster.topics)
    refreshed.topics["u"] = TopicMetadata("u", other_id, False, {0: PartitionMetadata(0, 0, 0, (0,), (0,), 0)}, 0)
    refreshed.topic_names_by_id = {TOPIC_ID: TOPIC, other_id: "u"}
    asked = []

    def metadata(topics, timeout_ms):
        asked.append(topics)
        return refreshed

    transport.metadata = metadata
    member.update_subscription([TOPIC, "u"])
    answer = heartbeat_848(1, [0])
    answer["assignment"]["topic_partitions"].append({"topic_id": other_id, "partitions": [0]})
    transport.answer("ConsumerGroupHeartbeat", answer)
    member.run_step()
    assert asked == [[TOPIC, "u"]]
    assert member.state is Member848State.RECONCILING
    transport.answer("OffsetFetch", offset_fetch_response({}))
    member.on_app_poll()
    assert app.assigned == [TPS[0], TopicPartition("u", 0)]


def test_close_with_an_async_commit_queued_leaves_without_rejoining():
    member, transport, app, clock, listener = make()
    joined(member, transport, app)
    member.commit_async({TPS[0]: OffsetAndMetadata(4, "", -1)}, None)
    transport.answer("OffsetCommit", commit_response([0]))
    transport.answer("LeaveGroup", {"throttle_time_ms": 0, "error_code": 0, "members": []})
    member.close(autocommit=False)
    assert [api for api, _ in transport.sent[-2:]] == ["OffsetCommit", "LeaveGroup"]
    assert len(transport.bodies("JoinGroup")) == 2 and member.state is MemberState.CLOSED
