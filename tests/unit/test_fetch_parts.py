"""The fetch machine's parts, each alone on canned answers
(tests/support/fetch_scenarios.py), with fakes standing in for the parts it
talks to -- so each part's interface is all it needs:

- FetchPlanner (fastkc/fetch/planner.py): Fetch bodies, one Fetch per broker
  in flight, sessions, answers -> the record buffer's `add` / `fetched`, a
  diverging epoch -> the offset requests' `check_divergence`, partition
  errors -> their reactions;
- OffsetRequests (offsets.py): resets by ListOffsets, KIP-320 validation,
  truncation, dropping the buffer through `drop`;
- RecordBuffer (buffer.py): the hand-out, positions, a corrupt batch's
  backoff counted from the caller's `now`, decode-ahead jobs;
- the decode executors (fastkc/decode_executor.py, the asyncio driver's
  LoopDecodeExecutor).
"""
import asyncio
import threading

import pytest

import fastkc
from fastkc import errors
from fastkc.aio.fetch_driver import LoopDecodeExecutor
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.decode_executor import InlineDecodeExecutor, ThreadDecodeExecutor
from fastkc.fetch.buffer import RecordBuffer
from fastkc.fetch.completed import CompletedFetch, PrepareArrowStep, PrepareRecordsStep
from fastkc.fetch.offsets import EARLIEST, OffsetRequests
from fastkc.fetch.partitions import FetchPartitions
from fastkc.fetch.planner import FetchPlanner
from fastkc.fetch.reactions import Reactions
from fastkc.fetch.requests import RequestLedger
from fastkc.fetch.state import FetchState
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg
from tests.support import fetch_scenarios as fs

NOW = 1000.0
FETCH_VERSION = 12
compiled_only = pytest.mark.skipif(fastkc.backend != "c", reason="only the compiled core's streams prepare")


def _config(**configs):
    return consumer_config(dict({"bootstrap_servers": "h:1", "retry_backoff_ms": 100}, **configs))


def _cluster(leader_epoch=fs.LEADER_EPOCH):
    cluster = ClusterMetadata()
    cluster.update(fs.metadata(leader_epoch=leader_epoch), all_topics=False)
    return cluster


class Link:
    """Every broker ready, speaking Fetch v12 and OffsetForLeaderEpoch."""

    def __call__(self, node_id):
        return self

    def version_for(self, api):
        return FETCH_VERSION if api == "Fetch" else 3


class FakeBuffer:
    """What the planner, the offset requests and the reactions ask of the record buffer."""

    def __init__(self, partitions):
        self.partitions = partitions
        self.added, self.dropped, self.fetched_calls = [], [], 0
        self.bytes = 0

    def add(self, state, completed):
        state.buffered.append(completed)
        self.bytes += completed.nbytes
        self.added.append(completed)

    def fetched(self):
        self.fetched_calls += 1

    def buffered_bytes(self):
        return self.bytes

    def drop(self, state):
        self.dropped.append(state.tp)
        state.buffered.clear()
        self.partitions.replan()
        if state.position is not None:
            state.fetch_offset = state.position


class FakeOffsets:
    def __init__(self):
        self.divergences = []

    def check_divergence(self, tp, epoch, end_offset):
        self.divergences.append((tp, epoch, end_offset))


def _positioned(partitions, offsets):
    for tp, offset in offsets.items():
        partitions.states[tp].seek(offset, fs.LEADER_EPOCH)


# --- the planner ---------------------------------------------------------------------------
class Planner:
    def __init__(self, offsets=None, **configs):
        self.config = _config(**configs)
        self.partitions = FetchPartitions()
        self.partitions.assign([fs.TP0, fs.TP1])
        self.requests = RequestLedger(self.config["request_timeout_ms"])
        self.buffer = FakeBuffer(self.partitions)
        self.offsets = FakeOffsets()
        self.metrics = {"fetch-total": 0, "fetch-bytes-total": 0}
        reactions = Reactions(self.config, self.partitions, self.buffer)
        self.planner = FetchPlanner(self.config, _cluster(), self.partitions, self.requests, reactions, self.buffer,
                                    self.offsets, self.metrics)
        _positioned(self.partitions, offsets or {fs.TP0: 0, fs.TP1: 10})

    def plan(self, now=NOW):
        self.planner.plan(now, Link())
        return self.requests.take_outbox()

    def answer(self, request, partitions, now=NOW, **kwargs):
        payload = fs.fetched(partitions, **kwargs)(request.body, request.version)
        return self.requests.answer(request.token, (payload, request.version), now)


def test_planner_one_fetch_per_broker_its_body_and_the_session():
    p = Planner()
    [request] = p.plan()
    assert (request.node_id, request.api, request.raw, request.version) == (1, "Fetch", True, FETCH_VERSION)
    assert fs.fetch_offsets(request.body) == {0: 0, 1: 10}
    assert request.body["session_epoch"] == 0 and p.metrics["fetch-total"] == 1
    assert p.plan() == []  # one Fetch per broker on the wire
    assert p.planner.in_flight_nodes == {1}
    p.answer(request, {0: {}, 1: {}}, session_id=77)
    session = p.planner.sessions[1]
    assert (session.session_id, session.epoch) == (77, 1)
    [again] = p.plan()
    assert again.body["session_id"] == 77 and again.body["session_epoch"] == 1
    p.planner.on_node_lost(1)
    assert p.planner.sessions[1].session_id == 0 and not p.planner.in_flight_nodes


def test_planner_hands_fetched_data_to_the_buffer_and_moves_fetch_offsets():
    p = Planner()
    [request] = p.plan()
    blob = fs.batch(0, [b"a", b"b", b"c"])
    assert p.answer(request, {0: {"records": blob, "high_watermark": 3}}) is None
    [completed] = p.buffer.added
    assert (completed.tp, completed.fetch_offset, completed.next_offset, completed.nbytes) == (fs.TP0, 0, 3, len(blob))
    state = p.partitions.states[fs.TP0]
    assert (state.fetch_offset, state.position, state.highwater) == (3, 0, 3)  # the position is the buffer's
    assert p.buffer.fetched_calls == 1 and p.metrics["fetch-bytes-total"] == len(blob)
    [next_fetch] = p.plan()  # pipelined: the next Fetch asks from the end of the buffered data
    assert fs.fetch_offsets(next_fetch.body)[0] == 3


def test_planner_passes_a_diverging_epoch_to_the_offset_requests():
    p = Planner()
    [request] = p.plan()
    p.answer(request, {0: {"diverging_epoch": {"epoch": 4, "end_offset": 0}}})
    assert p.offsets.divergences == [(fs.TP0, 4, 0)] and p.buffer.added == []


def test_planner_partition_errors_back_off_and_ask_for_metadata():
    p = Planner()
    [request] = p.plan()
    p.answer(request, {0: {"error_code": errors.NotLeaderForPartitionError.errno}})
    state = p.partitions.states[fs.TP0]
    assert state.next_retry == pytest.approx(NOW + 0.1) and p.partitions.metadata_wanted
    [retry] = p.plan(NOW + 0.2)
    assert 0 in fs.fetch_offsets(retry.body)


def test_planner_out_of_range_resets_through_the_buffer():
    p = Planner(auto_offset_reset="earliest")
    [request] = p.plan()
    p.answer(request, {0: {"error_code": errors.OffsetOutOfRangeError.errno}})
    state = p.partitions.states[fs.TP0]
    assert state.fetch_state is FetchState.AWAIT_RESET and state.reset_strategy == "earliest"
    assert p.buffer.dropped == [fs.TP0]


def test_planner_buffer_cap_and_failed_requests():
    p = Planner(fetch_max_bytes=1000)
    p.buffer.bytes = 1000
    assert p.plan() == []  # bounded memory: nothing until the buffer drains
    p.buffer.bytes = 0
    [request] = p.plan()
    assert p.requests.answer(request.token, ConnectionResetError("gone"), NOW) is None
    assert p.partitions.states[fs.TP0].next_retry == pytest.approx(NOW + 0.1)
    assert p.partitions.take_error() is None  # retriable: nothing for the application
    assert p.planner.close_session_requests(Link()) == []  # no session held


# --- the offset requests --------------------------------------------------------------------
class Offsets:
    def __init__(self, **configs):
        self.config = _config(**configs)
        self.partitions = FetchPartitions()
        self.partitions.assign([fs.TP0])
        self.requests = RequestLedger(self.config["request_timeout_ms"])
        self.buffer = FakeBuffer(self.partitions)
        self.metrics = {"offset-validations-total": 0}
        reactions = Reactions(self.config, self.partitions, self.buffer)
        self.cluster = _cluster()
        self.offsets = OffsetRequests(self.config, self.cluster, self.partitions, self.requests, reactions,
                                      self.buffer, self.metrics)
        self.offsets.on_metadata(self.cluster)  # the leader epochs seen from here on

    def plan(self, now=NOW):
        self.offsets.plan(now, Link())
        return self.requests.take_outbox()


def test_offsets_reset_by_list_offsets():
    o = Offsets(auto_offset_reset="earliest")
    [request] = o.plan()
    assert request.api == "ListOffsets" and request.node_id == 1
    assert request.body["topics"][0]["partitions"][0]["timestamp"] == EARLIEST
    assert o.plan() == []  # the reset is in flight
    o.requests.answer(request.token, fs.listed({0: 42})(request.body, 0), NOW)
    state = o.partitions.states[fs.TP0]
    assert state.fetch_state is FetchState.FETCHING and (state.position, state.position_epoch) == (42, 5)


def test_offsets_no_position_under_none_raises():
    o = Offsets(auto_offset_reset="none")
    with pytest.raises(errors.NoOffsetForPartitionError):
        o.plan()


def test_offsets_validate_after_a_leader_change_and_follow_truncation():
    o = Offsets()
    state = o.partitions.states[fs.TP0]
    state.seek(50, fs.LEADER_EPOCH)
    newer = _cluster(leader_epoch=fs.LEADER_EPOCH + 1)
    o.offsets.on_metadata(newer)
    assert state.fetch_state is FetchState.AWAIT_VALIDATION and o.buffer.dropped == [fs.TP0]
    [request] = o.plan()
    assert request.api == "OffsetForLeaderEpoch" and o.metrics["offset-validations-total"] == 1
    o.requests.answer(request.token, fs.epoch_ends({0: (fs.LEADER_EPOCH, 30)})(request.body, 0), NOW)
    assert state.fetch_state is FetchState.FETCHING and state.position == 30  # truncated: moved to the end


def test_offsets_truncation_under_none_is_an_error_for_the_application():
    o = Offsets(auto_offset_reset="none")
    state = o.partitions.states[fs.TP0]
    state.seek(50, fs.LEADER_EPOCH)
    o.offsets.check_divergence(fs.TP0, fs.LEADER_EPOCH, 30)
    assert isinstance(o.partitions.take_error(), errors.LogTruncationError)
    assert state.fetch_state is FetchState.AWAIT_VALIDATION and state.position == 50


def test_offsets_lookup_builders_need_no_other_part():
    o = Offsets()
    by_node, missing = o.offsets.list_offsets_requests({fs.TP0: -1, TopicPartition("other", 0): -1})
    assert by_node == {1: {fs.TP0: -1}} and missing == [TopicPartition("other", 0)]


# --- the record buffer ---------------------------------------------------------------------
class Buffer:
    def __init__(self, decode_ahead=False, **configs):
        self.config = _config(**configs)
        self.partitions = FetchPartitions()
        self.partitions.assign([fs.TP0])
        self.metrics = {"records-consumed-total": 0, "bytes-consumed-total": 0}
        self.buffer = RecordBuffer(self.config, self.partitions, self.metrics, decode_ahead=decode_ahead)
        self.state = self.partitions.states[fs.TP0]
        self.state.seek(0, fs.LEADER_EPOCH)

    def add(self, blob, start, next_offset, slow=0):
        completed = CompletedFetch(fs.TP0, start, blob, None, next_offset, fs.LEADER_EPOCH, len(blob))
        completed.slow_codec_bytes = slow
        self.buffer.add(self.state, completed)
        return completed


def _offsets(out):
    return [r.offset for r in out.get(fs.TP0, [])]


def test_buffer_hands_out_records_and_moves_the_position():
    b = Buffer()
    blob = fs.batch(0, [b"a", b"b"]) + fs.batch(2, [b"c", b"d", b"e"])
    b.add(blob, 0, 5)
    assert b.buffer.buffered_bytes() == len(blob) and b.buffer.has_buffered()
    assert _offsets(b.buffer.fetched_records(NOW, 3)) == [0, 1, 2] and b.state.position == 3
    assert _offsets(b.buffer.fetched_records(NOW, 100)) == [3, 4] and b.state.position == 5
    assert b.buffer.buffered_bytes() == 0 and b.metrics == {"records-consumed-total": 5,
                                                           "bytes-consumed-total": len(blob)}


def test_buffer_drops_a_fetch_that_is_not_at_the_position():
    b = Buffer()
    b.add(fs.batch(7, [b"x"]), 7, 8)
    assert b.buffer.fetched_records(NOW, 10) == {}
    assert not b.state.buffered and b.partitions.plan_stale


def test_buffer_corrupt_batch_backs_off_from_the_callers_now():
    b = Buffer()
    b.add(fs.batch(0, [b"a", b"b"]) + bg.bad_crc(fs.batch(2, [b"c"])), 0, 3)
    assert _offsets(b.buffer.fetched_records(NOW + 7, 10)) == [0, 1]
    with pytest.raises(errors.CorruptRecordError):
        raise b.partitions.take_error()
    assert b.state.position == 2 and b.state.next_retry == pytest.approx(NOW + 7 + 0.1)
    assert not b.state.buffered


@compiled_only
def test_buffer_decode_ahead_jobs_run_on_any_executor():
    b = Buffer(decode_ahead=True)
    b.add(fs.batch(0, [b"v%d" % i for i in range(40)]), 0, 40)
    b.buffer.fetched()
    [job] = b.buffer.take_decode_jobs()
    assert isinstance(job, PrepareRecordsStep) and job.key is b.state.buffered[0]
    assert b.buffer.take_decode_jobs() == []  # taken once
    InlineDecodeExecutor().submit(job)
    assert _offsets(b.buffer.fetched_records(NOW, 10)) == list(range(10))
    assert b.buffer.decode_steps["prepared"] == 1 and b.buffer.decode_steps["inline"] == 0
    b.buffer.discard_prepared(b.state)  # pause: the prepared step is not delivered later
    assert b.state.buffered[0].stream is None
    assert _offsets(b.buffer.fetched_records(NOW, 100)) == list(range(10, 40))


def test_buffer_without_decode_ahead_makes_no_jobs():
    b = Buffer()
    b.add(fs.batch(0, [b"a"]), 0, 1)
    b.buffer.fetched()
    b.buffer.fetched_records(NOW, 1)
    assert b.buffer.take_decode_jobs() == []


@compiled_only
def test_buffer_prepared_only_takes_name_the_heavy_fetch_and_its_job_prepares_it():
    b = Buffer()
    completed = b.add(fs.batch(0, [b"g%d" % i for i in range(30)], codec=bg.GZIP), 0, 30, slow=1)
    assert b.buffer.fetched_records(NOW, 10, prepared_only=True) == {}
    assert b.buffer.unprepared is completed
    job = b.buffer.prepare_job(completed, 10)
    assert job.run() is True
    assert _offsets(b.buffer.fetched_records(NOW, 10, prepared_only=True)) == list(range(10))
    # an Arrow step prepared by its job, handed out by the Arrow take
    assert b.buffer.fetched_arrow(NOW, 5, prepared_only=True) == [] and b.buffer.unprepared is completed
    arrow_job = b.buffer.prepare_job(completed, 5, arrow=True)
    assert isinstance(arrow_job, PrepareArrowStep) and arrow_job.run() is True
    [batch] = b.buffer.fetched_arrow(NOW, 5, prepared_only=True)
    assert batch.column("offset").to_pylist() == list(range(10, 15)) and b.state.position == 15


# --- the decode executors ------------------------------------------------------------------
class Job:
    def __init__(self, key, gate=None):
        self.key, self.gate, self.threads = key, gate, []

    def run(self):
        if self.gate is not None:
            self.gate.wait(10)
        self.threads.append(threading.current_thread().name)
        return True


def test_inline_executor_runs_at_once():
    job = Job(object())
    assert InlineDecodeExecutor().submit(job) is None
    assert job.threads == [threading.current_thread().name]


def test_thread_executor_runs_jobs_on_its_thread_a_key_queued_once():
    executor = ThreadDecodeExecutor("fastkc-decode-test")
    gate = threading.Event()
    key = object()
    first, second, same = Job(object(), gate), Job(key), Job(key)
    for job in (first, second, same):
        executor.submit(job)  # `same` finds `second` still queued behind `first`
    assert executor.started and executor.thread.name == "fastkc-decode-test"
    gate.set()
    assert executor.wait_idle(10)
    assert first.threads == second.threads == ["fastkc-decode-test"] and same.threads == []
    assert executor.prepared_steps == 2
    assert executor.close(10) and not executor.thread.is_alive()
    late = Job(object())
    executor.submit(late)  # a closed executor takes no jobs
    assert late.threads == []


def test_loop_executor_returns_a_future_run_on_its_thread():
    async def scenario():
        executor = LoopDecodeExecutor("fastkc-aio-decode-test")
        job = Job(object())
        assert await executor.submit(job) is True
        assert executor.close() is False  # a thread was started: it ends on its own
        return job.threads

    assert asyncio.run(scenario()) == ["fastkc-aio-decode-test_0"]
    assert LoopDecodeExecutor().close() is True  # never started
