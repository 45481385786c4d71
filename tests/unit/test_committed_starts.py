"""group/committed_starts.py against a real FetchMachine: partitions are held
(no fetch, no auto_offset_reset) until their committed offsets are read; a
failed read keeps them held and backs off; partitions unassigned or sought
meanwhile are dropped."""
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.errors import KafkaTimeoutError
from fastkc.fetch.machine import FetchMachine
from fastkc.fetch.state import FetchState
from fastkc.group.committed_starts import CommittedStarts
from fastkc.structs import OffsetAndMetadata, TopicPartition

TPS = [TopicPartition("t", p) for p in range(3)]


def machine():
    fetch = FetchMachine(consumer_config(dict(group_id="g")), ClusterMetadata())
    fetch.assign(TPS)
    return fetch


def test_held_until_read_then_committed_or_reset():
    fetch, starts = machine(), CommittedStarts(retry_backoff_ms=100)
    starts.hold(fetch, TPS)
    assert all(fetch.is_held(tp) for tp in TPS)
    assert starts.due(fetch, 10.0) == TPS
    starts.failed(10.0, KafkaTimeoutError("coordinator gone"))
    assert starts.due(fetch, 10.05) == [] and starts.pending
    assert all(fetch.states[tp].fetch_state is FetchState.INITIALIZING and fetch.is_held(tp) for tp in TPS)
    assert starts.due(fetch, 10.1) == TPS
    starts.settle(fetch, {TPS[0]: OffsetAndMetadata(1002, "", 4), TPS[1]: None, TPS[2]: OffsetAndMetadata(-1, "", -1)})
    assert not starts.pending and starts.due(fetch, 11.0) == []
    assert fetch.states[TPS[0]].position == 1002 and not fetch.is_held(TPS[0])
    # nothing committed: auto_offset_reset decides from here
    assert not fetch.is_held(TPS[1]) and not fetch.is_held(TPS[2])
    assert fetch.states[TPS[1]].fetch_state is FetchState.INITIALIZING


def test_unassigned_or_sought_while_held_are_dropped_and_not_overridden():
    fetch, starts = machine(), CommittedStarts(retry_backoff_ms=100)
    starts.hold(fetch, TPS)
    fetch.seek(TPS[0], 7)  # the application's seek wins
    fetch.assign(TPS[:2])  # TPS[2] unassigned
    assert starts.due(fetch, 0.0) == [TPS[1]]
    starts.settle(fetch, {TPS[0]: OffsetAndMetadata(50, "", -1), TPS[1]: OffsetAndMetadata(60, "", -1)})
    assert fetch.states[TPS[0]].position == 7 and fetch.states[TPS[1]].position == 60


def test_a_partition_with_a_position_is_not_held():
    fetch, starts = machine(), CommittedStarts(retry_backoff_ms=100)
    fetch.seek(TPS[0], 3)
    starts.hold(fetch, TPS[:1])
    assert not starts.pending and not fetch.is_held(TPS[0])
