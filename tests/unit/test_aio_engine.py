"""AioConsumerEngine's own rules, without a broker (the engine connects only
when started): stopping, the assignment and the metadata it follows, partition
states and the positions a commit sends, the committed-offset hold."""
import asyncio

import pytest

from fastkc.aio.config import resolve
from fastkc.aio.errors import ConsumerStoppedError, IllegalStateError
from fastkc.aio.structs import OffsetAndMetadata, TopicPartition
from fastkc.engine.aio_engine import AioConsumerEngine

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _with_engine(body):
    """`await body(engine)` on a fresh engine in a fresh loop; the engine is closed after."""
    async def run():
        resolved = resolve(bootstrap_servers="127.0.0.1:1")
        engine = AioConsumerEngine(resolved.core, period_ms=100, decode_threads=0)
        try:
            await body(engine)
        finally:
            await engine.close()  # never started: no fetch task to stop, connections closed

    asyncio.run(run())


def test_a_stopped_engine_refuses_calls():
    async def scenario(engine):
        engine.check_running()
        assert not engine.started and not engine.closed
        engine.mark_stopped()
        assert engine.closed
        with pytest.raises(ConsumerStoppedError):
            engine.check_running()
        with pytest.raises(ConsumerStoppedError):
            await engine.take_records((), 10, 0)

    _with_engine(scenario)


def test_waiting_before_start_is_an_illegal_state():
    async def scenario(engine):
        with pytest.raises(IllegalStateError, match="not started"):
            await engine.wait_data(0.01)

    _with_engine(scenario)


def test_the_assignment_drops_duplicates_and_names_the_metadata_to_follow():
    async def scenario(engine):
        engine.set_assignment([A0, A1, A0, B0], {"c"})
        assert engine.assignment() == [A0, A1, B0]
        assert list(engine.partitions()) == [A0, A1, B0]
        assert engine.client.policy.topics == {"a", "b", "c"}
        # a pattern subscription follows every topic: the named set is left alone
        engine.set_assignment([B0], None)
        assert engine.assignment() == [B0] and engine.client.policy.topics == {"a", "b", "c"}
        engine.set_assignment([], set())
        assert engine.assignment() == [] and engine.client.policy.topics == set()

    _with_engine(scenario)


def test_states_and_the_positions_a_commit_sends():
    async def scenario(engine):
        engine.set_assignment([A0, A1], set())
        with pytest.raises(IllegalStateError, match="No current assignment"):
            engine.state(B0)
        assert engine.positions() == {}  # no position known yet: nothing to commit
        engine.seek(A1, 42)
        assert engine.state(A1).position == 42
        assert engine.positions() == {A1: OffsetAndMetadata(42, "")}
        assert engine.positions([A0, B0]) == {}
        engine.pause(A0)
        assert engine.state(A0).paused
        engine.resume(A0)
        assert not engine.state(A0).paused

    _with_engine(scenario)


def test_a_partition_held_for_its_committed_offset():
    async def scenario(engine):
        engine.set_assignment([A0], set())
        engine.hold_for_committed(A0)
        assert engine.is_held(A0)
        engine.hold_for_committed(A0, held=False)
        assert not engine.is_held(A0)

    _with_engine(scenario)
