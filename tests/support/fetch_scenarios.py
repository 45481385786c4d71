"""Driver-neutral fetch scenarios: canned exchanges between the fetch state
machine and a broker, written once and run by every driver.

A scenario is a list of steps:

- `Send(api, node=1, where=...)`: pumping the machine (one driver round)
  must put exactly one request of `api` to `node` on the wire (others may be
  sent too; they wait for their own Send step); `where(body)` asserts on its
  body. It becomes the current request.
- `Reply(build)` / `Reply(error=exc)`: the current request's answer.
  `build(body, version)` returns the decoded answer (a dict) for
  ListOffsets / OffsetForLeaderEpoch, or the encoded payload (bytes) for
  Fetch (the raw APIs): the Fetch parser of the backend in use reads it.
- `Quiet(api)`: a pump sends no request of `api`.
- `App(fn)`: `fn(app)` against the application side (assign, seek,
  fetched_records, raise_pending...), asserting what it must.
- `Clock(seconds)`: time passes.
- `Metadata(answer)`: new metadata arrives (a decoded Metadata answer).

A runner implements: `pump()` -> [(node_id, api, body, version, handle)]
(one driver round: everything the machine sends now), `answer(handle,
payload_or_error)`, `advance(seconds)`, `metadata(answer)`, and `app` (the object with the
application-side methods). `run(scenario, runner)` plays a scenario.
Runners here: the machine driven directly (tests/unit/test_fetch_machine.py)
and the sync driver over a scripted client; an asyncio driver adds its own.
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastkc import errors
from fastkc.protocol import codec
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg

TOPIC = "t"
TOPIC_ID = bytes(range(1, 17))
TP0 = TopicPartition(TOPIC, 0)
TP1 = TopicPartition(TOPIC, 1)
LEADER_EPOCH = 5


def metadata(partitions=(0, 1), leader_epoch=LEADER_EPOCH, leader=1):
    """A decoded Metadata answer for ClusterMetadata.update."""
    return {
        "brokers": [{"node_id": 1, "host": "h", "port": 1, "rack": None},
                    {"node_id": 2, "host": "h2", "port": 1, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [{
            "error_code": 0, "name": TOPIC, "topic_id": TOPIC_ID, "is_internal": False,
            "partitions": [{"error_code": 0, "partition_index": p, "leader_id": leader, "leader_epoch": leader_epoch,
                            "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []} for p in partitions],
        }],
    }


# --- steps ---------------------------------------------------------------------------------
@dataclass
class Send:
    api: str
    node: int = 1
    where: Callable[[dict], Any] | None = None


@dataclass
class Reply:
    build: Callable[[dict, int], Any] | None = None
    error: BaseException | None = None


@dataclass
class Quiet:
    api: str


@dataclass
class App:
    fn: Callable[[Any], Any]


@dataclass
class Clock:
    seconds: float


@dataclass
class Metadata:
    answer: dict


@dataclass
class Scenario:
    name: str
    steps: list
    config: dict = field(default_factory=dict)
    assign: tuple = (TP0,)


def run(scenario, runner):
    """Play `scenario` against `runner` (see the module docstring)."""
    waiting = []  # sent, not yet claimed by a Send step
    current = None
    for i, step in enumerate(scenario.steps):
        where = "{0} step {1} ({2})".format(scenario.name, i, type(step).__name__)
        if isinstance(step, Send):
            waiting.extend(runner.pump())
            match = [r for r in waiting if r[1] == step.api and r[0] == step.node]
            assert match, "{0}: no {1} to node {2}; on the wire: {3}".format(
                where, step.api, step.node, [(r[0], r[1]) for r in waiting])
            assert len(match) == 1, "{0}: {1} {2} requests to node {3}".format(where, len(match), step.api, step.node)
            current = match[0]
            waiting.remove(current)
            if step.where is not None:
                step.where(current[2])
        elif isinstance(step, Reply):
            assert current is not None, where + ": nothing to answer"
            if step.error is not None:
                runner.answer(current[4], step.error)
            else:
                runner.answer(current[4], step.build(current[2], current[3]))
            current = None
        elif isinstance(step, Quiet):
            sent = runner.pump()
            waiting.extend(sent)
            assert not [r for r in sent if r[1] == step.api], "{0}: a {1} was sent".format(where, step.api)
        elif isinstance(step, App):
            step.fn(runner.app)
        elif isinstance(step, Clock):
            runner.advance(step.seconds)
        elif isinstance(step, Metadata):
            runner.metadata(step.answer)
        else:  # pragma: no cover
            raise TypeError(step)


# --- answers -----------------------------------------------------------------------------
def batch(base_offset, values, leader_epoch=LEADER_EPOCH, **kwargs):
    return bg.record_batch(bg.records_from_values(values), base_offset=base_offset, leader_epoch=leader_epoch,
                           **kwargs)


def fetched(partitions, *, error_code=0, session_id=0):
    """A Fetch answer builder: partitions {partition: {field: value}} (records bytes etc.)."""
    def build(body, version):
        parts = []
        for p, fields in partitions.items():
            entry = {"partition_index": p, "error_code": 0, "high_watermark": 100, "last_stable_offset": 100,
                     "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                     "records": b""}
            entry.update(fields)
            parts.append(entry)
        response = {"throttle_time_ms": 0, "error_code": error_code, "session_id": session_id,
                    "responses": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": parts}] if parts else []}
        return codec.encode_response("Fetch", version, response, correlation_id=7)
    return build


def listed(offsets, error_code=0, leader_epoch=LEADER_EPOCH):
    def build(body, version):
        return {"throttle_time_ms": 0, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": p, "error_code": error_code, "timestamp": -1, "offset": o,
             "leader_epoch": leader_epoch} for p, o in offsets.items()]}]}
    return build


def epoch_ends(ends, error_code=0):
    """OffsetForLeaderEpoch answer: ends {partition: (leader_epoch, end_offset)}."""
    def build(body, version):
        return {"throttle_time_ms": 0, "topics": [{"topic": TOPIC, "partitions": [
            {"error_code": error_code, "partition": p, "leader_epoch": e, "end_offset": o}
            for p, (e, o) in ends.items()]}]}
    return build


# --- body checks ----------------------------------------------------------------------------
def fetch_offsets(body):
    return {p["partition"]: p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}


def fetching(offsets, session_id=None, epoch=None, forgotten=None):
    def check(body):
        assert fetch_offsets(body) == offsets, (fetch_offsets(body), offsets)
        if session_id is not None:
            assert body["session_id"] == session_id, body["session_id"]
        if epoch is not None:
            assert body["session_epoch"] == epoch, body["session_epoch"]
        if forgotten is not None:
            got = [p for t in body["forgotten_topics_data"] for p in t["partitions"]]
            assert got == forgotten, got
    return check


def offsets_of(app, tp=TP0):
    out = app.fetched_records(1000)
    return [r.offset for r in out.get(tp, [])]


def expect_records(offsets, tp=TP0):
    def check(app):
        assert offsets_of(app, tp) == offsets
    return check


def expect_position(position, tp=TP0):
    def check(app):
        assert app.state(tp).position == position, app.state(tp).position
    return check


def expect_raise(exc_type):
    def check(app):
        try:
            app.raise_pending()
        except exc_type:
            return
        raise AssertionError("{0} was not raised".format(exc_type.__name__))
    return check


def expect(condition, detail):
    assert condition, detail


def seek(offset, tp=TP0):
    return App(lambda app: app.seek(tp, offset))


# --- the scenarios -------------------------------------------------------------------------
SCENARIOS = []


def scenario(name, steps, **kwargs):
    SCENARIOS.append(Scenario(name, steps, **kwargs))


scenario("reset_earliest_then_fetch", [
    Send("ListOffsets", where=lambda body: [p["timestamp"] for t in body["topics"] for p in t["partitions"]] == [-2]),
    Quiet("Fetch"),  # no position yet
    Reply(listed({0: 3})),
    App(expect_position(3)),
    Send("Fetch", where=fetching({0: 3})),
    Reply(fetched({0: {"records": batch(3, [b"a", b"b"])}})),
    App(expect_records([3, 4])),
    App(expect_position(5)),
], config={"auto_offset_reset": "earliest"})

scenario("reset_answer_with_an_error_is_retried_after_the_backoff", [
    Send("ListOffsets"),
    Reply(listed({0: -1}, error_code=errors.NotLeaderForPartitionError.errno)),
    Quiet("ListOffsets"),
    Clock(0.2),
    Send("ListOffsets"),
    Reply(listed({0: 8})),
    App(expect_position(8)),
], config={"auto_offset_reset": "latest", "retry_backoff_ms": 100})

scenario("session_full_incremental_error_full", [
    seek(0),
    Send("Fetch", where=fetching({0: 0}, session_id=0, epoch=0)),
    Reply(fetched({0: {"records": batch(0, [b"a"])}}, session_id=77)),
    # pipelined: the next fetch goes before the application took the records
    Send("Fetch", where=fetching({0: 1}, session_id=77, epoch=1)),
    App(expect_records([0])),
    Reply(fetched({0: {"records": batch(1, [b"b"])}}, session_id=77)),
    App(expect_records([1])),
    # the partition's offset moved: the incremental fetch sends it again
    Send("Fetch", where=fetching({0: 2}, session_id=77, epoch=2)),
    Reply(fetched({}, error_code=errors.FetchSessionIdNotFoundError.errno)),
    Clock(0.2),
    Send("Fetch", where=fetching({0: 2}, session_id=0, epoch=0)),  # a new full session
    Reply(fetched({0: {"records": batch(2, [b"c"])}}, session_id=78)),
    App(expect_records([2])),
], config={"retry_backoff_ms": 100})

scenario("forgotten_partition_leaves_the_session", [
    seek(0), seek(0, TP1),
    Send("Fetch", where=fetching({0: 0, 1: 0}, epoch=0)),
    Reply(fetched({0: {}, 1: {}}, session_id=9)),
    App(lambda app: app.assign([TP0])),
    Send("Fetch", where=fetching({}, session_id=9, epoch=1, forgotten=[1])),
], assign=(TP0, TP1))

scenario("byte_cap_stops_fetching_until_drained", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"x" * 300] * 4)}})),
    Quiet("Fetch"),  # buffered past fetch_max_bytes
    App(lambda app: expect(app.buffered_bytes() >= 1000, app.buffered_bytes())),
    App(expect_records([0, 1, 2, 3])),
    Send("Fetch", where=fetching({0: 4})),
], config={"fetch_max_bytes": 1000})

scenario("stale_response_after_a_seek_is_dropped", [
    seek(0),
    Send("Fetch", where=fetching({0: 0})),
    seek(50),
    Reply(fetched({0: {"records": batch(0, [b"old"])}})),
    App(expect_records([])),
    App(expect_position(50)),
    Send("Fetch", where=fetching({0: 50})),
    Reply(fetched({0: {"records": batch(50, [b"new"])}})),
    App(expect_records([50])),
])

scenario("offset_out_of_range_resets", [
    seek(1000),
    Send("Fetch"),
    Reply(fetched({0: {"error_code": errors.OffsetOutOfRangeError.errno}})),
    Send("ListOffsets", where=lambda body: [p["timestamp"] for t in body["topics"]
                                            for p in t["partitions"]] == [-2]),
    Reply(listed({0: 10})),
    App(expect_position(10)),
    Send("Fetch", where=fetching({0: 10})),
], config={"auto_offset_reset": "earliest"})

scenario("offset_out_of_range_under_none_raises", [
    seek(1000),
    Send("Fetch"),
    Reply(fetched({0: {"error_code": errors.OffsetOutOfRangeError.errno}})),
    App(expect_raise(errors.OffsetOutOfRangeError)),
    App(expect_position(1000)),
], config={"auto_offset_reset": "none"})

scenario("topic_authorization_failed_raises", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"error_code": errors.TopicAuthorizationFailedError.errno}})),
    App(expect_raise(errors.TopicAuthorizationFailedError)),
])

scenario("not_leader_backs_off_then_fetches_again", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"error_code": errors.NotLeaderForPartitionError.errno}})),
    Quiet("Fetch"),
    Clock(0.2),
    Send("Fetch", where=fetching({0: 0})),
], config={"retry_backoff_ms": 100})

scenario("offset_not_available_backs_off_like_any_retriable_error", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"error_code": errors.OffsetNotAvailableError.errno}})),
    Quiet("Fetch"),
    Clock(0.2),
    Send("Fetch", where=fetching({0: 0})),
], config={"retry_backoff_ms": 100})

scenario("connection_error_resets_the_session", [
    seek(0),
    Send("Fetch", where=fetching({0: 0}, epoch=0)),
    Reply(fetched({0: {}}, session_id=5)),
    Send("Fetch", where=fetching({}, session_id=5, epoch=1)),  # nothing changed: nothing resent
    Reply(error=errors.KafkaConnectionError("gone")),
    Clock(0.2),
    Send("Fetch", where=fetching({0: 0}, session_id=0, epoch=0)),
], config={"retry_backoff_ms": 100})

scenario("diverging_epoch_truncates_the_position", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a", b"b", b"c"])}})),
    App(expect_records([0, 1, 2])),
    Send("Fetch", where=fetching({0: 3})),
    Reply(fetched({0: {"diverging_epoch": {"epoch": 4, "end_offset": 1}}})),
    App(expect_position(1)),
    Send("Fetch", where=fetching({0: 1})),
])

scenario("diverging_epoch_under_none_raises_log_truncation", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a", b"b", b"c"])}})),
    App(expect_records([0, 1, 2])),
    Send("Fetch"),
    Reply(fetched({0: {"diverging_epoch": {"epoch": 4, "end_offset": 1}}})),
    App(expect_raise(errors.LogTruncationError)),
    App(lambda app: expect(app.state(TP0).awaiting_validation, app.state(TP0).fetch_state)),
], config={"auto_offset_reset": "none"})


def _new_leader_epoch(epoch):
    return Metadata(metadata(leader_epoch=epoch))


scenario("leader_change_validates_then_fetches", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a", b"b"])}})),
    App(expect_records([0, 1])),
    Send("Fetch"),
    _new_leader_epoch(6),
    Reply(fetched({0: {"records": batch(2, [b"c"])}})),  # answers a position under validation: dropped
    Send("OffsetForLeaderEpoch", where=lambda body: [(p["leader_epoch"], p["current_leader_epoch"])
                                                     for t in body["topics"] for p in t["partitions"]] == [(5, 6)]),
    Quiet("Fetch"),  # AWAIT_VALIDATION: nothing fetched
    Reply(epoch_ends({0: (5, 2)})),  # the log for epoch 5 ends at the position: valid
    App(expect_position(2)),
    Send("Fetch", where=fetching({0: 2})),
])

scenario("leader_change_validation_finds_truncation", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a", b"b", b"c"])}})),
    App(expect_records([0, 1, 2])),
    Send("Fetch"),
    _new_leader_epoch(7),
    Reply(fetched({0: {}})),
    Send("OffsetForLeaderEpoch"),
    Reply(epoch_ends({0: (5, 1)})),
    App(expect_position(1)),
    Send("Fetch", where=fetching({0: 1})),
])

scenario("stale_validation_answer_after_a_seek_is_ignored", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a", b"b", b"c"])}})),
    App(expect_records([0, 1, 2])),
    Send("Fetch"),
    _new_leader_epoch(7),
    Reply(fetched({0: {}})),
    Send("OffsetForLeaderEpoch"),
    seek(40),
    Reply(epoch_ends({0: (5, 1)})),
    App(expect_position(40)),
])

scenario("corrupt_batch_after_good_ones_raises_after_them", [
    seek(0),
    Send("Fetch"),
    Reply(fetched({0: {"records": batch(0, [b"a"]) + bg.bad_crc(batch(1, [b"b"]))}})),
    App(expect_records([0])),
    App(expect_raise(errors.RecordCrcError)),
    App(expect_position(1)),  # before the bad batch: nothing skipped
    Quiet("Fetch"),  # refetched only after retry_backoff_ms
    Clock(0.2),
    Send("Fetch", where=fetching({0: 1})),
], config={"retry_backoff_ms": 100})

scenario("reset_answer_after_a_seek_is_ignored", [
    Send("ListOffsets"),
    seek(30),
    Reply(listed({0: 3})),
    App(expect_position(30)),
    Send("Fetch", where=fetching({0: 30})),
], config={"auto_offset_reset": "earliest"})

scenario("preferred_read_replica_is_fetched_from_until_it_errs", [
    seek(0),
    Send("Fetch", node=1),
    Reply(fetched({0: {"records": batch(0, [b"a"]), "preferred_read_replica": 2}})),
    Send("Fetch", node=2, where=fetching({0: 1})),  # KIP-392: the replica from now on
    Reply(fetched({0: {"error_code": errors.NotLeaderForPartitionError.errno}})),
    Clock(0.2),
    Send("Fetch", node=1, where=fetching({0: 1})),  # the replica forgotten: back to the leader
    App(expect_records([0])),
], config={"retry_backoff_ms": 100})
