"""The share group machines with canned answers and no sockets: the member
(ShareGroupHeartbeat), the share sessions, the acknowledgement ledger and
the fetch machine (ShareFetch / ShareAcknowledge requests, answers ->
records, acknowledgements and errors)."""
import collections
import uuid

import pytest

from fastkc import errors
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.group.machine import DUE_NOW
from fastkc.request import ANY_NODE, COORDINATOR
from fastkc.schema_registry import AvroDeserializer, ValueFramingError
from fastkc.share.acknowledgements import GAP, AckBatch, AcknowledgeType, PartitionAcks, from_batches, to_batches
from fastkc.share.consumer import _grouped, share_config
from fastkc.share.fetch_machine import FETCH_AHEAD_LOCK_FRACTION, ShareFetchMachine
from fastkc.share.member_machine import ShareMemberMachine, ShareMemberState
from fastkc.share.session import ShareSession
from fastkc.structs import TopicPartition
from tests.support.fake_registry import V1, V2, event_registry, framed_value

A, R, J, N = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.RENEW
TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_DNS, "t").bytes
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
NODE = 1
Rec = collections.namedtuple("Rec", "topic partition offset delivery_count value")
Decoded = collections.namedtuple("Decoded", "records gaps released", defaults=((),))


# --- the acknowledgement ledger and its wire form -------------------------------------------------
def test_runs_of_one_type_carry_it_once_and_mixed_runs_one_per_offset():
    assert to_batches({5: 1, 6: 1, 7: 1}) == [AckBatch(5, 7, [1])]
    assert to_batches({5: 1, 6: 2, 7: 1, 9: 3}) == [AckBatch(5, 7, [1, 2, 1]), AckBatch(9, 9, [3])]
    assert to_batches({}) == []
    wire = [b._asdict() for b in to_batches({1: 0, 2: 1, 3: 1, 10: 2})]
    assert from_batches(wire) == {1: 0, 2: 1, 3: 1, 10: 2}


def test_many_at_once_checks_every_offset_before_settling_any():
    acks = PartitionAcks()
    acks.deliver_many([5, 6, 7, 8], [1, 1, 2, 1])
    assert acks.check_many([5, 6]) and not acks.check_many([5, 5]) and not acks.check_many([5, 9])
    acks.acknowledge_many([6, 7], N)  # RENEW: still delivered, pending as RENEW
    assert acks.has_renew() and set(acks.delivered) == {5, 6, 7, 8}
    acks.acknowledge_many([5, 7], A)
    assert acks.delivered == {6: 1, 8: 1} and acks.pending == {5: 1, 6: 4, 7: 1}
    assert acks.has_renew()  # 6 is still RENEW
    acks.acknowledge_many([6, 8], R)  # the whole delivery: cleared at once
    assert acks.delivered == {} and not acks.has_renew()
    assert acks.take() == {5: 1, 6: 2, 7: 1, 8: 2}
    acks.answered({5: 1, 6: 2})
    assert acks.sent == {7: 1, 8: 2}
    acks.answered({7: 1, 8: 2})
    assert acks.idle


def test_batch_rows_are_grouped_per_partition_with_one_type_or_left_to_the_row_path():
    import pyarrow as pa

    batch = pa.RecordBatch.from_pydict({
        "topic": pa.array(["t", "u", "t", "t"]), "partition": pa.array([0, 0, 1, 0], pa.int32()),
        "offset": pa.array([4, 9, 2, 5], pa.int64())})
    by_partition, kind = _grouped(batch, A)
    assert kind is A and by_partition == {TP0: [4, 5], TopicPartition("u", 0): [9], TP1: [2]}
    assert _grouped(batch, pa.array([3, 3, 3, 3], pa.int8()))[1] is J  # per-row types, all one
    assert _grouped(batch, [1, 2, 1, 1]) is None  # they differ: row by row
    assert _grouped(batch, [1, 1]) is None  # the row path words the count mismatch
    with pytest.raises(errors.IllegalArgumentError):
        _grouped(batch, 7)
    records = [Rec("t", 0, 4, 1, b""), Rec("t", 1, 2, 1, b""), Rec("t", 0, 5, 1, b"")]
    assert _grouped(records, R) == ({TP0: [4, 5], TP1: [2]}, R)
    assert _grouped({TP0: records[::2], TP1: records[1:2]}, R) == ({TP0: [4, 5], TP1: [2]}, R)


def test_a_record_is_acknowledged_once_and_only_when_delivered():
    acks = PartitionAcks()
    acks.deliver(5, 1)
    with pytest.raises(errors.IllegalStateError, match="not delivered"):
        acks.acknowledge(6, A, "record t-0@6")
    acks.acknowledge(5, R, "record t-0@5")
    with pytest.raises(errors.IllegalStateError, match="acknowledged already"):
        acks.acknowledge(5, A, "record t-0@5")
    assert acks.pending == {5: int(R)}  # the failed second call changed nothing
    acks.take()
    with pytest.raises(errors.IllegalStateError, match="acknowledged already"):
        acks.acknowledge(5, A, "record t-0@5")  # sent, not answered yet


def test_renew_keeps_the_record_delivered_and_a_final_type_replaces_it():
    acks = PartitionAcks()
    acks.deliver(3, 2)
    acks.acknowledge(3, N, "r")
    assert acks.delivered == {3: 2} and acks.pending == {3: int(N)}
    acks.acknowledge(3, A, "r")
    assert acks.delivered == {} and acks.pending == {3: int(A)}


def test_acknowledge_all_settles_every_delivered_record():
    acks = PartitionAcks()
    for offset in (1, 2, 4):
        acks.deliver(offset, 1)
    assert acks.acknowledge_all(A) == 3
    assert acks.pending == {1: 1, 2: 1, 4: 1} and not acks.delivered


# --- the share session ------------------------------------------------------------------------------
def test_session_epochs_partitions_and_resets():
    s = ShareSession(NODE)
    p0, p1 = (TOPIC_ID, 0), (TOPIC_ID, 1)
    assert s.build_fetch([p0, p1]) == (0, [p0, p1], [])
    assert not s.is_open
    assert s.answered(0) and s.epoch == 1 and s.is_open
    assert s.build_fetch([p0, p1]) == (1, [], [])  # nothing changed: nothing named
    s.answered(0)
    assert s.build_fetch([p1]) == (2, [], [p0])  # p0 forgotten
    s.answered(errors.UnknownError.errno)  # any other top-level error still moves the epoch on
    assert s.epoch == 3
    assert not s.answered(errors.InvalidShareSessionEpochError.errno)
    assert s.epoch == 0 and s.partitions == {}
    s.answered(0)
    assert not s.answered(errors.ShareSessionNotFoundError.errno) and s.epoch == 0
    s.answered(0)
    assert s.close_epoch() == -1 and not s.is_open


# --- the member ---------------------------------------------------------------------------------------
class Cluster:
    def __init__(self, names):
        self.topic_names_by_id = names


def joined_member(now=0.0, assignment=((TOPIC_ID, [0, 1]),), learn=True):
    coordinator = CoordinatorMachine("g", 100, 30000)
    member = ShareMemberMachine("g", coordinator, heartbeat_interval_ms=5000)
    if learn:
        member.learn_topics({TOPIC_ID: "t"})
    member.set_subscription(["t"])
    [find] = member.next_requests(now)
    assert find.api == "FindCoordinator" and find.target == ANY_NODE
    member.on_response(find.token, {"error_code": 0, "node_id": NODE, "host": "h", "port": 9092}, now)
    [hb] = member.next_requests(now)
    assert hb.api == "ShareGroupHeartbeat" and hb.target == COORDINATOR
    member.on_response(hb.token, heartbeat_answer(1, assignment), now)
    return member, hb


def heartbeat_answer(epoch, assignment=None, error_code=0, interval=1000):
    body = {"error_code": error_code, "error_message": None, "member_id": None, "member_epoch": epoch,
            "heartbeat_interval_ms": interval, "assignment": None}
    if assignment is not None:
        body["assignment"] = {"topic_partitions": [{"topic_id": t, "partitions": list(p)} for t, p in assignment]}
    return body


def test_member_joins_with_its_own_uuid_and_epoch_0_then_stable_with_the_assignment():
    member, hb = joined_member()
    assert str(uuid.UUID(hb.body["member_id"])) == hb.body["member_id"]  # KIP-1082: the client's id
    assert hb.body["member_epoch"] == 0 and hb.body["subscribed_topic_names"] == ["t"]
    assert member.state is ShareMemberState.STABLE and member.member_epoch == 1
    assert member.assignment == {TP0, TP1}
    assert member.next_deadline() == pytest.approx(1.0)  # the broker's interval
    assert member.next_requests(0.5) == []
    [hb2] = member.next_requests(1.0)
    assert hb2.body["member_epoch"] == 1 and hb2.body["member_id"] == hb.body["member_id"]


def test_an_assignment_of_unknown_topic_ids_waits_for_metadata():
    member, _ = joined_member(learn=False)
    assert member.state is ShareMemberState.RECONCILING and member.assignment == frozenset()
    assert member.next_deadline() == DUE_NOW
    [meta] = member.next_requests(0.0)
    assert meta.api == "Metadata"
    member.on_response(meta.token, Cluster({TOPIC_ID: "t"}), 0.0)
    assert member.state is ShareMemberState.STABLE and member.assignment == {TP0, TP1}


@pytest.mark.parametrize("error", [errors.FencedMemberEpochError, errors.UnknownMemberIdError])
def test_fencing_drops_the_assignment_and_rejoins_with_epoch_0_and_the_same_id(error):
    member, hb = joined_member()
    version = member.assignment_version
    [hb2] = member.next_requests(1.0)
    member.on_response(hb2.token, heartbeat_answer(-1, error_code=error.errno), 1.0)
    assert member.state is ShareMemberState.FENCED and member.assignment == frozenset()
    assert member.assignment_version == version + 1 and member.fenced_count == 1
    [rejoin] = member.next_requests(1.0)
    assert rejoin.body["member_epoch"] == 0 and rejoin.body["member_id"] == hb.body["member_id"]
    assert member.state is ShareMemberState.JOINING
    member.on_response(rejoin.token, heartbeat_answer(3, ((TOPIC_ID, [1]),)), 1.1)
    assert member.state is ShareMemberState.STABLE and member.assignment == {TP1}


def test_leaving_sends_epoch_minus_1_and_ends_unsubscribed():
    member, _ = joined_member()
    member.set_subscription(None)
    member.leave()
    assert member.state is ShareMemberState.LEAVING
    [leave] = member.next_requests(0.1)
    assert leave.body["member_epoch"] == -1
    member.on_response(leave.token, heartbeat_answer(-1), 0.2)
    assert member.state is ShareMemberState.UNSUBSCRIBED and member.assignment == frozenset()


def test_coordinator_errors_look_it_up_again_and_fatal_errors_raise():
    member, _ = joined_member()
    [hb] = member.next_requests(1.0)
    member.on_response(hb.token, heartbeat_answer(-1, error_code=errors.NotCoordinatorError.errno), 1.0)
    assert not member.coordinator.known and member.state is ShareMemberState.STABLE
    [find] = member.next_requests(1.2)
    assert find.api == "FindCoordinator"
    member.on_response(find.token, {"error_code": 0, "node_id": NODE, "host": "h", "port": 9092}, 1.2)
    [hb] = member.next_requests(1.2)
    with pytest.raises(errors.GroupAuthorizationFailedError):
        member.on_response(hb.token, heartbeat_answer(-1, error_code=errors.GroupAuthorizationFailedError.errno),
                           1.3)
    [hb] = member.next_requests(1.5)  # retriable: backs off and asks again
    member.on_response(hb.token, heartbeat_answer(-1, error_code=errors.CoordinatorLoadInProgressError.errno), 1.5)
    assert member.next_requests(1.55) == []


def test_illegal_transitions_are_refused():
    member, _ = joined_member()
    with pytest.raises(errors.IllegalStateError):
        member._set_state(ShareMemberState.JOINING)


# --- the fetch machine ------------------------------------------------------------------------------------
def fake_decode(data, *, topic, partition, acquired, **kwargs):
    """data: the offsets with a record (b"" = every acquired offset)."""
    have = set(int(x) for x in data.decode().split(",")) if data else None
    records, gaps = [], []
    for first, last, count in acquired:
        for offset in range(first, last + 1):
            if have is None or offset in have:
                records.append(Rec(topic, partition, offset, count, b"v%d" % offset))
            else:
                gaps.append((offset, offset))
    return Decoded(records, gaps)


def fake_decode_arrow(data, **kwargs):
    import pyarrow as pa

    decoded = fake_decode(data, **kwargs)
    rows = decoded.records
    batch = pa.RecordBatch.from_pydict({
        "topic": pa.array([r.topic for r in rows], pa.string()),
        "partition": pa.array([r.partition for r in rows], pa.int32()),
        "offset": pa.array([r.offset for r in rows], pa.int64()),
        "delivery_count": pa.array([r.delivery_count for r in rows], pa.int16())})
    return Decoded(batch, decoded.gaps)


def broken_decode(data, **kwargs):
    raise errors.CorruptRecordError("bad crc")


CONFIG = share_config({"group_id": "g", "max_poll_records": 100})


def fetch_machine(assignment=(TP0, TP1), decode=fake_decode, version=2):
    machine = ShareFetchMachine(CONFIG, "g", "member-1", decode=decode, decode_arrow=fake_decode_arrow)
    machine.set_routes({"t": TOPIC_ID}, {TP0: NODE, TP1: NODE})
    machine.versions[NODE] = version
    machine.set_assignment(assignment)
    return machine


def part(index, acquired=(), data=b"", error_code=0, ack_error_code=0):
    return {"partition_index": index, "error_code": error_code, "error_message": None,
            "acknowledge_error_code": ack_error_code, "acknowledge_error_message": None,
            "current_leader": {"leader_id": NODE, "leader_epoch": 0}, "records": data,
            "acquired_records": [{"first_offset": f, "last_offset": last, "delivery_count": c}
                                 for f, last, c in acquired]}


def fetch_answer(*parts, error_code=0, lock_ms=30000):
    return {"error_code": error_code, "error_message": None, "acquisition_lock_timeout_ms": lock_ms,
            "responses": [{"topic_id": TOPIC_ID, "partitions": list(parts)}] if parts else [],
            "node_endpoints": []}


def ack_answer(*parts, error_code=0):
    return {"error_code": error_code, "error_message": None, "acquisition_lock_timeout_ms": 30000,
            "responses": [{"topic_id": TOPIC_ID, "partitions": [
                {"partition_index": i, "error_code": code, "error_message": None,
                 "current_leader": {"leader_id": NODE, "leader_epoch": 0}} for i, code in parts]}],
            "node_endpoints": []}


def acks_in(body):
    return {(t["topic_id"], p["partition_index"]): from_batches(p["acknowledgement_batches"])
            for t in body["topics"] for p in p_list(t) if p["acknowledgement_batches"]}


def p_list(topic):
    return topic["partitions"]


def first_fetch(machine, *parts):
    [req] = machine.next_requests(0.0, fetch=True)
    assert req.api == "ShareFetch" and req.target == NODE
    machine.on_response(req.token, fetch_answer(*parts), 0.0)
    return req


def accepted_then_fetch(acquired):
    """A machine whose first fetch acquired `acquired` on TP0, handed out and
    ACCEPTed, and the ShareFetch that carries those acknowledgements."""
    machine = fetch_machine()
    first_fetch(machine, part(0, acquired))
    machine.hand_out(100)
    machine.acknowledge_delivered(A)
    [req] = machine.next_requests(1.0, fetch=True)
    return machine, req


def test_first_share_fetch_opens_the_session_with_every_partition_and_no_acks():
    machine = fetch_machine()
    req = first_fetch(machine, part(0, [(0, 2, 1)]))
    body = req.body
    assert body["share_session_epoch"] == 0 and body["member_id"] == "member-1" and body["group_id"] == "g"
    assert [(t["topic_id"], [p["partition_index"] for p in t["partitions"]]) for t in body["topics"]] == [
        (TOPIC_ID, [0, 1])]
    assert acks_in(body) == {} and body["max_records"] == 100 and body["forgotten_topics_data"] == []
    assert machine.acquisition_lock_timeout_ms == 30000
    out = machine.hand_out(100)
    assert [r.offset for r in out[TP0]] == [0, 1, 2] and [r.delivery_count for r in out[TP0]] == [1, 1, 1]
    assert machine.unacknowledged() == 3


def test_implicit_acks_ride_the_next_share_fetch_and_their_answer_is_a_result():
    machine, req = accepted_then_fetch([(0, 2, 1)])
    assert req.api == "ShareFetch" and req.body["share_session_epoch"] == 1
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 1, 1: 1, 2: 1}}
    assert req.body["topics"][0]["partitions"] == [{"partition_index": 0, "acknowledgement_batches": [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}]}]
    assert machine.acks_outstanding()
    machine.on_response(req.token, fetch_answer(part(0, ack_error_code=errors.InvalidRecordStateError.errno)), 1.1)
    [result] = machine.take_results()
    assert result.partition == TP0 and result.offsets == {0, 1, 2}
    assert isinstance(result.error, errors.InvalidRecordStateError)
    assert not machine.acks_outstanding()


def test_one_request_in_flight_per_leader():
    machine = fetch_machine()
    [req] = machine.next_requests(0.0, fetch=True)
    assert machine.next_requests(0.1, fetch=True) == []
    machine.on_response(req.token, fetch_answer(), 0.2)
    assert len(machine.next_requests(0.3, fetch=True)) == 1


def test_while_polling_acks_wait_for_the_next_fetch_and_a_commit_sends_them_at_once():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 9, 1)]))
    machine.hand_out(4)
    machine.acknowledge(TP0, 0, A)
    machine.acknowledge(TP0, 1, R)
    machine.acknowledge(TP0, 3, J)
    # six records stay buffered, past the time records are fetched ahead of (a quarter of the lock):
    # no fetch to that leader, and the acknowledgements wait for the ShareFetch after the buffer
    late = 30 * FETCH_AHEAD_LOCK_FRACTION + 1.0
    assert machine.next_requests(late, fetch=True) == []
    [req] = machine.next_requests(late, fetch=False)  # a commit
    assert req.api == "ShareAcknowledge" and req.body["share_session_epoch"] == 1
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 1, 1: 2, 3: 3}}
    machine.on_response(req.token, ack_answer((0, 0)), 1.1)
    [result] = machine.take_results()
    assert result.error is None and result.offsets == {0, 1, 3}
    assert machine.sessions[NODE].epoch == 2


def test_gaps_are_acknowledged_as_gap():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 4, 1)], data=b"0,2,4"))
    out = machine.hand_out(100)
    assert [r.offset for r in out[TP0]] == [0, 2, 4]
    [req] = machine.next_requests(1.0, fetch=True)  # buffer empty: a fetch carries the gaps
    assert acks_in(req.body) == {(TOPIC_ID, 0): {1: GAP, 3: GAP}}


def test_a_lost_session_fails_its_acks_and_the_next_fetch_opens_a_new_one():
    machine, req = accepted_then_fetch([(0, 1, 1)])
    machine.on_response(req.token, fetch_answer(error_code=errors.ShareSessionNotFoundError.errno), 1.0)
    [result] = machine.take_results()
    assert isinstance(result.error, errors.ShareSessionNotFoundError) and result.offsets == {0, 1}
    [req] = machine.next_requests(1.1, fetch=True)
    assert req.body["share_session_epoch"] == 0 and acks_in(req.body) == {}


def test_acks_pending_for_a_reset_session_fail_at_once():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 1, 1)]))
    machine.hand_out(100)
    assert machine.next_requests(1.0, fetch=False) == []  # nothing to send
    machine.sessions[NODE].reset()  # as a lost connection does
    machine.acknowledge(TP0, 0, A)
    assert machine.next_requests(1.1, fetch=False) == []
    [result] = machine.take_results()
    assert isinstance(result.error, errors.ShareSessionNotFoundError) and result.offsets == {0}


def test_a_connection_error_resets_the_session_and_fails_the_acks_it_carried():
    machine, req = accepted_then_fetch([(0, 1, 1)])
    machine.on_response(req.token, errors.KafkaConnectionError("reset by peer"), 1.0)
    [result] = machine.take_results()
    assert isinstance(result.error, errors.KafkaConnectionError)
    assert machine.sessions[NODE].epoch == 0 and machine.metadata_wanted


@pytest.mark.parametrize("code, effect", [
    (errors.NotLeaderForPartitionError.errno, "metadata"),
    (errors.TopicAuthorizationFailedError.errno, "fatal"),
    (errors.UnknownError.errno, "retry"),
])
def test_partition_errors_get_the_fetch_paths_reaction(code, effect):
    machine = fetch_machine()
    first_fetch(machine, part(0, error_code=code))
    assert machine.metadata_wanted == (effect == "metadata")
    if effect == "fatal":
        with pytest.raises(errors.TopicAuthorizationFailedError):
            machine.next_requests(1.0, fetch=True)
    else:
        assert len(machine.next_requests(1.0, fetch=True)) == 1


@pytest.mark.parametrize("code, fatal", [
    (errors.GroupAuthorizationFailedError.errno, True),
    (errors.InvalidRequestError.errno, True),
    (errors.ShareSessionNotFoundError.errno, False),
    (errors.NotLeaderForPartitionError.errno, False),
])
def test_top_level_errors(code, fatal):
    machine = fetch_machine()
    first_fetch(machine)
    [req] = machine.next_requests(1.0, fetch=True)
    machine.on_response(req.token, fetch_answer(error_code=code), 1.0)
    if fatal:
        with pytest.raises(errors.KafkaError):
            machine.next_requests(1.1, fetch=True)
    else:
        assert len(machine.next_requests(1.1, fetch=True)) == 1


def test_max_records_splits_a_fetch_and_the_rest_is_handed_out_later():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 4, 2)]), part(1, [(10, 11, 1)]))
    first = machine.hand_out(3)
    assert {tp: [r.offset for r in rs] for tp, rs in first.items()} == {TP0: [0, 1, 2]}
    second = machine.hand_out(3)
    assert {tp: [r.offset for r in rs] for tp, rs in second.items()} == {TP0: [3, 4], TP1: [10]}
    assert machine.buffered()


def test_a_remainder_asked_for_as_arrow_is_decoded_again_for_what_is_left():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 4, 2)]))
    machine.hand_out(2)
    [batch] = machine.hand_out_arrow(100)
    assert batch.column("offset").to_pylist() == [2, 3, 4]
    assert batch.column("delivery_count").to_pylist() == [2, 2, 2]
    assert machine.unacknowledged() == 5


# --- poll_arrow() with typed columns (an AvroDeserializer) ----------------------------------------
def typed_fetch_machine(values):
    """A machine whose value_deserializer gives typed Arrow columns; its
    fetches decode to rows whose value is values[offset] (framed Avro)."""
    import pyarrow as pa

    from fastkc.records import share_arrow_schema

    def decode_arrow(data, *, topic, partition, acquired, **kwargs):
        rows = [dict(key=None, value=values[offset], topic=topic, partition=partition, offset=offset, timestamp=None,
                     timestampType=0, headers=[], delivery_count=count)
                for first, last, count in acquired for offset in range(first, last + 1)]
        return Decoded(pa.RecordBatch.from_pylist(rows, schema=share_arrow_schema()), [])

    config = share_config({"group_id": "g", "max_poll_records": 100,
                           "value_deserializer": AvroDeserializer(event_registry())})
    machine = ShareFetchMachine(config, "g", "member-1", decode=fake_decode, decode_arrow=decode_arrow)
    machine.set_routes({"t": TOPIC_ID}, {TP0: NODE, TP1: NODE})
    machine.versions[NODE] = 2
    machine.set_assignment((TP0, TP1))
    return machine


def _v1(i):
    return framed_value(1, V1, {"id": i, "tag": None})


def _v2(i):
    return framed_value(2, V2, {"id": i, "tag": None, "score": 0.5})


def test_typed_arrow_batches_end_where_the_writer_type_changes_and_the_rest_waits():
    machine = typed_fetch_machine([_v1(0), _v1(1), _v2(2), _v2(3)])
    first_fetch(machine, part(0, [(0, 3, 1)]))
    [first] = machine.hand_out_arrow(100)
    assert first.column("value").to_pylist() == [{"id": 0, "tag": None}, {"id": 1, "tag": None}]
    assert machine.arrow_offsets == {TP0: [0, 1]} and machine.unacknowledged() == 2
    [second] = machine.hand_out_arrow(100)  # the rest was buffered, not delivered
    assert second.column("value").to_pylist() == [{"id": i, "tag": None, "score": 0.5} for i in (2, 3)]
    assert second.column("delivery_count").to_pylist() == [1, 1] and machine.unacknowledged() == 4
    assert not machine.buffered()


def test_typed_arrow_batches_of_one_call_share_one_schema_across_partitions():
    machine = typed_fetch_machine({0: _v1(0), 1: _v1(1), 10: _v2(10)})
    first_fetch(machine, part(0, [(0, 1, 1)]), part(1, [(10, 10, 1)]))
    batches = machine.hand_out_arrow(100)
    assert [b.column("offset").to_pylist() for b in batches] == [[0, 1]]
    [later] = machine.hand_out_arrow(100)
    assert later.column("offset").to_pylist() == [10] and later.column("partition").to_pylist() == [1]


def test_a_typed_row_that_fails_is_raised_after_the_rows_before_it_and_the_rest_released():
    machine = typed_fetch_machine([_v1(0), _v1(1), b"not framed", _v1(3)])
    first_fetch(machine, part(0, [(0, 3, 2)]))
    [first] = machine.hand_out_arrow(100)
    assert first.column("offset").to_pylist() == [0, 1]
    with pytest.raises(ValueFramingError) as info:
        machine.hand_out_arrow(100)
    assert (info.value.partition, info.value.offset) == (0, 2)
    assert not machine.buffered() and machine.unacknowledged() == 2  # 0 and 1, delivered
    [req] = machine.next_requests(1.0, fetch=True)
    assert acks_in(req.body)[(TOPIC_ID, 0)] == {2: int(AcknowledgeType.RELEASE), 3: int(AcknowledgeType.RELEASE)}


def test_a_batch_that_fails_to_decode_is_released_and_the_error_raised():
    machine = fetch_machine(decode=broken_decode)
    first_fetch(machine, part(0, [(0, 2, 1)]))
    with pytest.raises(errors.CorruptRecordError):
        machine.hand_out(100)
    assert not machine.buffered() and machine.unacknowledged() == 0
    [req] = machine.next_requests(1.0, fetch=True)
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 2, 1: 2, 2: 2}}


def test_fetching_ahead_is_bounded_by_one_fetch_worth_and_the_lock_duration():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 99, 1)]))  # max_poll_records (100) buffered: one fetch's worth
    [ahead] = machine.next_requests(0.1, fetch=True)
    assert ahead.api == "ShareFetch"  # the next records are fetched while these are handed out
    machine.on_response(ahead.token, fetch_answer(part(1, [(0, 0, 1)])), 0.2)
    assert machine.next_requests(0.3, fetch=True) == []  # 101 buffered: no more ahead
    machine.hand_out(100)
    machine.acknowledge_delivered(A)
    [req] = machine.next_requests(0.4, fetch=True)  # one left: the next fetch carries the acknowledgements
    assert acks_in(req.body) == {(TOPIC_ID, 0): {offset: 1 for offset in range(100)}}
    machine.on_response(req.token, fetch_answer(part(0, [(100, 100, 1)])), 0.5)
    # records buffered longer than a quarter of the lock (30 s here): nothing more is acquired ahead of them
    assert machine.next_requests(0.5 + 30 * FETCH_AHEAD_LOCK_FRACTION + 0.1, fetch=True) == []
    assert sum(len(records) for records in machine.hand_out(100).values()) == 2
    assert len(machine.next_requests(10.0, fetch=True)) == 1  # the buffer is empty: fetch again


def test_a_fetch_ahead_does_not_wait_and_an_empty_one_stops_fetching_ahead_until_the_buffer_drains():
    machine = fetch_machine()
    first = first_fetch(machine, part(0, [(0, 9, 1)]))
    assert first.body["max_wait_ms"] == CONFIG["fetch_max_wait_ms"]  # nothing buffered: the broker may wait
    [ahead] = machine.next_requests(0.1, fetch=True)
    assert ahead.body["max_wait_ms"] == 0  # records to work on: answer at once
    machine.on_response(ahead.token, fetch_answer(), 0.2)  # nothing acquired
    assert machine.next_requests(0.3, fetch=True) == []  # no busy loop of empty fetches while records wait
    machine.hand_out(100)
    [after] = machine.next_requests(0.4, fetch=True)
    assert after.body["max_wait_ms"] == CONFIG["fetch_max_wait_ms"]


def test_records_of_a_partition_no_longer_assigned_are_released():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 1, 1)]), part(1, [(5, 5, 1)]))
    machine.set_assignment([TP1])
    late = 30 * FETCH_AHEAD_LOCK_FRACTION + 1.0  # past fetching ahead
    assert machine.next_requests(late, fetch=True) == []  # TP1's record is still buffered: no fetch yet
    [req] = machine.next_requests(late, fetch=False)
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 2, 1: 2}}


def test_renew_needs_share_acknowledge_v2():
    machine = fetch_machine(version=1)
    first_fetch(machine, part(0, [(0, 0, 1)]))
    machine.hand_out(100)
    with pytest.raises(errors.UnsupportedVersionError, match="KIP-1222"):
        machine.acknowledge(TP0, 0, N)
    assert machine.unacknowledged() == 1


def test_renew_goes_in_a_share_acknowledge_marked_as_renewing():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 1, 1)]))
    machine.hand_out(100)
    machine.acknowledge(TP0, 0, N)
    machine.acknowledge(TP0, 1, A)
    [req] = machine.next_requests(1.0, fetch=True)
    assert req.api == "ShareAcknowledge" and req.body["is_renew_ack"] is True
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 4, 1: 1}}
    assert machine.unacknowledged() == 1  # the renewed record still waits for its final type


def test_close_releases_everything_unsettled_with_epoch_minus_1():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 3, 1)]), part(1, [(7, 7, 1)]))
    machine.hand_out(2)  # 0 and 1 delivered; 2, 3 and 7 still buffered
    machine.acknowledge(TP0, 0, A)
    machine.start_close()
    [req] = machine.next_requests(1.0, fetch=True)
    assert req.api == "ShareAcknowledge" and req.body["share_session_epoch"] == -1
    assert acks_in(req.body) == {(TOPIC_ID, 0): {0: 1, 1: 2, 2: 2, 3: 2}, (TOPIC_ID, 1): {7: 2}}
    assert not machine.close_done()
    machine.on_response(req.token, ack_answer((0, 0), (1, 0)), 1.1)
    assert machine.close_done()
    assert machine.next_requests(1.2, fetch=True) == []


def test_fencing_drops_buffered_records_but_keeps_delivered_ones_answerable():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 3, 1)]))
    machine.hand_out(2)
    machine.fenced()
    assert not machine.buffered() and machine.unacknowledged() == 2
    machine.acknowledge(TP0, 0, A)  # still possible; the broker's answer will say what became of it


def test_stale_answers_are_ignored():
    machine = fetch_machine()
    [req] = machine.next_requests(0.0, fetch=True)
    machine.on_response(req.token, fetch_answer(part(0, [(0, 0, 1)])), 0.1)
    machine.on_response(req.token, fetch_answer(part(0, [(5, 5, 1)])), 0.2)  # a duplicate: ignored
    assert [r.offset for r in machine.hand_out(100)[TP0]] == [0]


def test_share_config_refuses_unknown_and_group_only_keys_by_name():
    with pytest.raises(errors.KafkaConfigurationError, match="enable_auto_commit"):
        share_config({"group_id": "g", "enable_auto_commit": True})
    with pytest.raises(errors.KafkaConfigurationError, match="bogus"):
        share_config({"group_id": "g", "bogus": 1})
    with pytest.raises(errors.KafkaConfigurationError, match="group_id"):
        share_config({})
    with pytest.raises(errors.KafkaConfigurationError, match="share_acknowledgement_mode"):
        share_config({"group_id": "g", "share_acknowledgement_mode": "auto"})
    with pytest.raises(errors.KafkaConfigurationError, match="max_poll_records"):
        share_config({"group_id": "g", "max_poll_records": 0})
    assert share_config({"group_id": "g", "share_acknowledgement_mode": "explicit"})[
        "share_acknowledgement_mode"] == "explicit"


# --- the member's thread (heartbeat.py) over a fake transport ---------------------------------------------
class FakeTransport:
    def __init__(self, heartbeat_error=0):
        self.calls = []
        self.heartbeat_error = heartbeat_error
        self.closed = False

    def request_any(self, api, body, timeout_ms):
        self.calls.append(api)
        return {"error_code": 0, "node_id": NODE, "host": "h", "port": 9092}

    def metadata(self, topics, timeout_ms):
        return Cluster({TOPIC_ID: "t"})

    def use_coordinator(self, coordinator):
        pass

    def call(self, api, body, timeout_ms):
        self.calls.append((api, body["member_epoch"]))
        if self.heartbeat_error:
            return heartbeat_answer(-1, error_code=self.heartbeat_error)
        return heartbeat_answer(-1 if body["member_epoch"] == -1 else 1, ((TOPIC_ID, [0]),), interval=50)

    def abort(self):
        pass

    def close(self):
        self.closed = True


def wait_until(predicate, timeout=5.0):
    import time

    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_the_member_thread_joins_heartbeats_leaves_and_stops():
    from fastkc.share.heartbeat import ShareHeartbeat

    member = ShareMemberMachine("g", CoordinatorMachine("g", 100, 30000))
    changes = []
    transport = FakeTransport()
    heartbeat = ShareHeartbeat(member, dict(CONFIG), on_change=lambda: changes.append(1), transport=transport)
    heartbeat.start()
    with heartbeat.lock:
        member.set_subscription(["t"])
    heartbeat.kick()
    assert wait_until(lambda: member.assignment == {TP0})
    assert changes == [1]
    assert wait_until(lambda: heartbeat.heartbeats_answered >= 3)  # 50 ms interval, nobody calling
    with heartbeat.lock:
        member.leave()
    heartbeat.kick()
    assert wait_until(lambda: member.state is ShareMemberState.UNSUBSCRIBED)
    assert ("ShareGroupHeartbeat", -1) in transport.calls
    heartbeat.stop(2.0)
    assert not heartbeat._thread.is_alive() and transport.closed


def test_the_member_threads_fatal_error_reaches_the_application():
    from fastkc.share.heartbeat import ShareHeartbeat

    member = ShareMemberMachine("g", CoordinatorMachine("g", 100, 30000))
    heartbeat = ShareHeartbeat(member, dict(CONFIG), transport=FakeTransport(
        heartbeat_error=errors.GroupAuthorizationFailedError.errno))
    heartbeat.start()
    with heartbeat.lock:
        member.set_subscription(["t"])
    heartbeat.kick()
    try:
        assert wait_until(lambda: heartbeat._error is not None)
        with pytest.raises(errors.GroupAuthorizationFailedError):
            heartbeat.raise_error()
        heartbeat.raise_error()  # once
    finally:
        heartbeat.stop(2.0)


def test_acks_for_a_leader_this_member_no_longer_fetches_from_go_at_once():
    machine = fetch_machine()
    first_fetch(machine, part(0, [(0, 1, 1)]))
    machine.hand_out(100)
    machine.acknowledge_delivered(A)
    machine.set_assignment([])
    [req] = machine.next_requests(1.0, fetch=True)
    assert req.api == "ShareAcknowledge" and acks_in(req.body) == {(TOPIC_ID, 0): {0: 1, 1: 1}}


@pytest.mark.parametrize("module", ["member_machine", "session", "acknowledgements", "fetch_machine"])
def test_the_share_machines_import_nothing_that_does_io_or_keeps_time(module):
    import importlib

    from tests.support.imports import IO_AND_TIME, top_level_imports

    imported = top_level_imports(importlib.import_module("fastkc.share." + module).__file__)
    assert imported.isdisjoint(IO_AND_TIME), imported


@pytest.mark.parametrize("ranges", [
    [(5, 3, 1)],  # first > last
    [(0, 5, 1), (3, 8, 1)],  # overlapping
    [(0, 1, 0)],  # delivery count 0
    [(0, (1 << 62), 1)],  # more offsets than a consumer tracks
], ids=["reversed", "overlapping", "count-0", "huge"])
def test_impossible_acquired_ranges_are_a_typed_error_and_nothing_is_tracked(ranges):
    machine = fetch_machine()
    first_fetch(machine, part(0, ranges))
    assert not machine.buffered() and machine.unacknowledged() == 0 and not machine.acks_outstanding()
    with pytest.raises(errors.InvalidAcquiredRecordsError):
        machine.next_requests(1.0, fetch=True)
    assert len(machine.next_requests(1.0, fetch=True)) == 1  # raised once; fetching goes on


def test_record_limit_is_sent_as_acquire_mode_1_and_refused_by_name_on_a_v1_broker():
    config = share_config({"group_id": "g", "share_acquire_mode": "record_limit"})
    machine = ShareFetchMachine(config, "g", "m", decode=fake_decode)
    machine.set_routes({"t": TOPIC_ID}, {TP0: NODE})
    machine.set_assignment([TP0])
    machine.versions[NODE] = 2
    [req] = machine.next_requests(0.0, fetch=True)
    assert req.body["share_acquire_mode"] == 1
    assert fetch_machine().next_requests(0.0, fetch=True)[0].body["share_acquire_mode"] == 0
    old = ShareFetchMachine(config, "g", "m", decode=fake_decode)
    old.set_routes({"t": TOPIC_ID}, {TP0: NODE})
    old.set_assignment([TP0])
    old.versions[NODE] = 1
    with pytest.raises(errors.UnsupportedVersionError, match="KIP-1206"):
        old.next_requests(0.0, fetch=True)
    assert old.in_flight == {}  # nothing half-made
    with pytest.raises(errors.KafkaConfigurationError, match="share_acquire_mode"):
        share_config({"group_id": "g", "share_acquire_mode": "strict"})


def test_offsets_the_decoder_releases_are_acknowledged_as_release():
    def decode_with_cut_tail(data, *, topic, partition, acquired, **kwargs):
        return Decoded([Rec(topic, partition, 0, 1, b"v0")], [(1, 1)], [(2, 3)])

    machine = fetch_machine(decode=decode_with_cut_tail)
    first_fetch(machine, part(0, [(0, 3, 1)]))
    assert [r.offset for r in machine.hand_out(100)[TP0]] == [0]
    assert not machine.buffered()
    [req] = machine.next_requests(1.0, fetch=False)
    assert acks_in(req.body) == {(TOPIC_ID, 0): {1: GAP, 2: int(R), 3: int(R)}}
