"""Issue 4: the manual-assignment API against the real broker — assign,
seek / position / highwater, pause / resume, beginning / end offsets,
offsets_for_times, topics, iteration with consumer_timeout_ms, max_records
and max_poll_records, configuration errors, close and the context manager,
auto_offset_reset earliest / latest / none, and OFFSET_OUT_OF_RANGE after
DeleteRecords. Run over kafka-python's and fastkc's KafkaConsumer."""
import time

import pytest

from tests.support.consumers import poll_records, read_all
from tests.support.kafka_tools import Message, produce

# Partition 0 holds P0_COUNT records with CreateTime BASE + STEP * offset,
# partition 1 P1_COUNT records, partition 2 nothing.
P0_COUNT = 50
P1_COUNT = 30
STEP = 10


@pytest.fixture(scope="module")
def shared(kafka_broker):
    """A 3-partition topic written once for the read-only tests here."""
    from tests.support.kafka_tools import create_topic, unique_name

    topic = create_topic(kafka_broker.bootstrap_servers, unique_name("consumer-positions"), partitions=3)
    base = int(time.time() * 1000) - 600_000
    messages = [Message(key=b"p0-%d" % i, value=b"v%d" % i, timestamp=base + STEP * i, partition=0)
                for i in range(P0_COUNT)]
    messages += [Message(key=b"p1-%d" % i, value=b"w%d" % i, partition=1) for i in range(P1_COUNT)]
    written = produce(kafka_broker.bootstrap_servers, topic, messages)
    assert [w.offset for w in written[:P0_COUNT]] == list(range(P0_COUNT))
    return topic, base


def _tps(flavour, topic, *partitions):
    return [flavour.TopicPartition(topic, p) for p in partitions]


def test_assign_and_assignment(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1, tp2 = _tps(flavour, topic, 0, 1, 2)
    consumer = open_consumer()
    assert consumer.assignment() == set()
    consumer.assign([tp0, tp1])
    assert consumer.assignment() == {tp0, tp1}
    # A new assign replaces the old one, it does not add to it.
    consumer.assign([tp2])
    assert consumer.assignment() == {tp2}
    consumer.assign([])
    assert consumer.assignment() == set()


def test_seek_position_highwater(flavour, open_consumer, shared):
    topic, _ = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer(auto_offset_reset="earliest")
    consumer.assign([tp0])
    # No fetch yet: the high watermark is unknown.
    assert consumer.highwater(tp0) is None
    consumer.seek(tp0, 20)
    assert consumer.position(tp0) == 20
    consumed = poll_records(consumer, P0_COUNT - 20)
    assert [r.offset for r in consumed] == list(range(20, P0_COUNT))
    assert [r.value for r in consumed] == [b"v%d" % i for i in range(20, P0_COUNT)]
    assert consumer.position(tp0) == P0_COUNT
    assert consumer.highwater(tp0) == P0_COUNT

    consumer.seek_to_beginning(tp0)
    assert consumer.position(tp0) == 0
    first = poll_records(consumer, 1, settle_ms=0, max_records=1)
    assert [r.offset for r in first] == [0]
    assert consumer.position(tp0) == 1

    consumer.seek_to_end(tp0)
    assert consumer.position(tp0) == P0_COUNT
    assert consumer.poll(timeout_ms=500) == {}

    # seek backwards after reaching the end re-delivers from there.
    consumer.seek(tp0, P0_COUNT - 3)
    again = poll_records(consumer, 3)
    assert [r.offset for r in again] == [P0_COUNT - 3, P0_COUNT - 2, P0_COUNT - 1]


def test_seek_to_beginning_and_end_without_arguments_cover_the_assignment(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1, tp2 = _tps(flavour, topic, 0, 1, 2)
    consumer = open_consumer()
    consumer.assign([tp0, tp1, tp2])
    consumer.seek_to_end()
    assert [consumer.position(tp) for tp in (tp0, tp1, tp2)] == [P0_COUNT, P1_COUNT, 0]
    consumer.seek_to_beginning()
    assert [consumer.position(tp) for tp in (tp0, tp1, tp2)] == [0, 0, 0]


def test_paused_partition_yields_nothing_while_others_flow(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer()
    consumer.assign([tp0, tp1])
    consumer.seek_to_beginning()
    consumer.pause(tp0)
    assert consumer.paused() == {tp0}
    flowing = poll_records(consumer, P1_COUNT, settle_ms=1000)
    assert [(r.partition, r.offset) for r in flowing] == [(1, i) for i in range(P1_COUNT)]
    # Paused: still nothing from partition 0, its position untouched.
    assert consumer.poll(timeout_ms=500) == {}
    assert consumer.position(tp0) == 0

    consumer.resume(tp0)
    assert consumer.paused() == set()
    resumed = poll_records(consumer, P0_COUNT)
    assert [(r.partition, r.offset) for r in resumed] == [(0, i) for i in range(P0_COUNT)]


def test_beginning_and_end_offsets(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1, tp2 = _tps(flavour, topic, 0, 1, 2)
    consumer = open_consumer()
    # No assignment is needed to ask.
    assert consumer.beginning_offsets([tp0, tp1, tp2]) == {tp0: 0, tp1: 0, tp2: 0}
    assert consumer.end_offsets([tp0, tp1, tp2]) == {tp0: P0_COUNT, tp1: P1_COUNT, tp2: 0}


def test_offsets_for_times(flavour, open_consumer, shared):
    topic, base = shared
    tp0, tp2 = _tps(flavour, topic, 0, 2)
    consumer = open_consumer()
    found = consumer.offsets_for_times({tp0: base + STEP * 7})
    assert (found[tp0].offset, found[tp0].timestamp) == (7, base + STEP * 7)
    # Between two records: the first record at or after the time.
    found = consumer.offsets_for_times({tp0: base + STEP * 7 + 1})
    assert (found[tp0].offset, found[tp0].timestamp) == (8, base + STEP * 8)
    # Before every record: the first one.
    found = consumer.offsets_for_times({tp0: 0})
    assert (found[tp0].offset, found[tp0].timestamp) == (0, base)
    # After the last record, or on an empty partition: None.
    found = consumer.offsets_for_times({tp0: base + STEP * P0_COUNT + 1, tp2: base})
    assert found == {tp0: None, tp2: None}


def test_topics_and_partitions_for_topic(flavour, open_consumer, shared):
    topic, _ = shared
    consumer = open_consumer()
    topics = consumer.topics()
    assert topic in topics
    assert consumer.partitions_for_topic(topic) == {0, 1, 2}
    # An unknown topic has no partitions (kafka-python 3: an empty set).
    assert not consumer.partitions_for_topic("no-such-topic-" + topic)


def test_iteration_stops_after_consumer_timeout_ms(flavour, open_consumer, shared):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer(consumer_timeout_ms=1000)
    consumer.assign([tp1])
    consumer.seek_to_beginning(tp1)
    began = time.monotonic()
    records = list(consumer)
    elapsed = time.monotonic() - began
    assert [r.offset for r in records] == list(range(P1_COUNT))
    assert [r.key for r in records] == [b"p1-%d" % i for i in range(P1_COUNT)]
    # It stops about a second after the last record (generous bound: a
    # shared 2-core machine), and does not stop before the timeout.
    assert 1.0 <= elapsed < 20.0


def test_poll_max_records(flavour, open_consumer, shared):
    topic, _ = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer()
    consumer.assign([tp0])
    consumer.seek_to_beginning(tp0)
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < P0_COUNT and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=500, max_records=7)
        assert sum(len(v) for v in batch.values()) <= 7
        seen.extend(r.offset for recs in batch.values() for r in recs)
    # Nothing skipped between bounded polls (records held back are kept).
    assert seen == list(range(P0_COUNT))


def test_max_poll_records_config(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer(max_poll_records=5)
    consumer.assign([tp0, tp1])
    consumer.seek_to_beginning()
    seen = {0: [], 1: []}
    sizes = []
    deadline = time.monotonic() + 30
    while sum(map(len, seen.values())) < P0_COUNT + P1_COUNT and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=500)
        sizes.append(sum(len(v) for v in batch.values()))
        for tp, recs in batch.items():
            seen[tp.partition].extend(r.offset for r in recs)
    assert max(sizes) == 5
    assert seen == {0: list(range(P0_COUNT)), 1: list(range(P1_COUNT))}


def test_unknown_config_key_is_a_configuration_error(flavour, kafka_broker):
    with pytest.raises(flavour.error("KafkaConfigurationError")):
        flavour.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, no_such_setting=1)


@pytest.mark.parametrize("setting, value, reference_accepts", [
    ("isolation_level", "bogus", False),
    ("auto_offset_reset", "bogus", True),
    ("max_poll_records", 0, True),
    ("security_protocol", "BOGUS", True),
])
def test_invalid_config_value_is_a_configuration_error(flavour, reference_deviates, kafka_broker,
                                                       setting, value, reference_accepts):
    # The Java client validates every value when the consumer is built
    # (ConfigException); kafka-python checks only some of them.
    if reference_accepts:
        reference_deviates("accepts {0}={1!r} at construction; the Java client throws ConfigException".format(
            setting, value))
    with pytest.raises(flavour.error("KafkaConfigurationError")):
        consumer = flavour.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers,
                                         enable_auto_commit=False, **{setting: value})
        consumer.close()


def test_context_manager_closes(flavour, kafka_broker, shared):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    with flavour.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers,
                               enable_auto_commit=False) as consumer:
        consumed = read_all(consumer, [tp1], P1_COUNT)
        assert len(consumed) == P1_COUNT
    # Closed: using it again is an IllegalStateError, not a hang.
    with pytest.raises(flavour.error("IllegalStateError")):
        consumer.poll(timeout_ms=100)
    # close() twice is harmless.
    consumer.close()


# --- reset policies ---------------------------------------------------------------

def test_auto_offset_reset_earliest(flavour, open_consumer, shared):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer(auto_offset_reset="earliest")
    consumer.assign([tp1])
    consumed = poll_records(consumer, P1_COUNT)
    assert [r.offset for r in consumed] == list(range(P1_COUNT))


def test_auto_offset_reset_latest_sees_only_new_records(flavour, open_consumer, kafka_broker, make_topic):
    topic = make_topic(partitions=1)
    produce(kafka_broker.bootstrap_servers, topic, [Message(value=b"old-%d" % i, partition=0) for i in range(5)])
    (tp,) = _tps(flavour, topic, 0)
    consumer = open_consumer(auto_offset_reset="latest")
    consumer.assign([tp])
    # position() resolves the reset now, before the new records exist.
    assert consumer.position(tp) == 5
    produce(kafka_broker.bootstrap_servers, topic, [Message(value=b"new-%d" % i, partition=0) for i in range(3)])
    consumed = poll_records(consumer, 3)
    assert [(r.offset, r.value) for r in consumed] == [(5, b"new-0"), (6, b"new-1"), (7, b"new-2")]


def test_auto_offset_reset_none_raises_on_poll(flavour, open_consumer, shared):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer(auto_offset_reset="none")
    consumer.assign([tp1])
    with pytest.raises(flavour.error("NoOffsetForPartitionError")):
        consumer.poll(timeout_ms=2000)
    with pytest.raises(flavour.error("NoOffsetForPartitionError")):
        consumer.position(tp1)
    # A seek gives it a position: then it consumes normally.
    consumer.seek(tp1, P1_COUNT - 2)
    consumed = poll_records(consumer, 2)
    assert [r.offset for r in consumed] == [P1_COUNT - 2, P1_COUNT - 1]


@pytest.fixture
def truncated_topic(kafka_broker, make_topic):
    """A 1-partition topic of 20 records whose first 10 were deleted
    (DeleteRecords: the log start offset is 10)."""
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    topic = make_topic(partitions=1)
    produce(kafka_broker.bootstrap_servers, topic, [Message(value=b"r%d" % i, partition=0) for i in range(20)])
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    futures = admin.delete_records([CkTopicPartition(topic, 0, 10)])
    for future in futures.values():
        assert future.result(30).low_watermark == 10
    return topic


@pytest.mark.parametrize("policy", ["earliest", "latest"])
def test_out_of_range_after_delete_records_follows_the_policy(flavour, open_consumer, kafka_broker,
                                                               truncated_topic, policy):
    (tp,) = _tps(flavour, truncated_topic, 0)
    consumer = open_consumer(auto_offset_reset=policy)
    assert consumer.beginning_offsets([tp]) == {tp: 10}
    consumer.assign([tp])
    consumer.seek(tp, 3)  # deleted: the fetch answers OFFSET_OUT_OF_RANGE
    if policy == "earliest":
        consumed = poll_records(consumer, 10)
        assert [(r.offset, r.value) for r in consumed] == [(i, b"r%d" % i) for i in range(10, 20)]
    else:
        deadline = time.monotonic() + 30
        while consumer.position(tp) != 20:
            assert consumer.poll(timeout_ms=200) == {}
            assert time.monotonic() < deadline, "no reset to the end within 30s"
        produce(kafka_broker.bootstrap_servers, truncated_topic, [Message(value=b"after", partition=0)])
        consumed = poll_records(consumer, 1)
        assert [(r.offset, r.value) for r in consumed] == [(20, b"after")]


def test_out_of_range_with_policy_none_raises(flavour, open_consumer, truncated_topic):
    (tp,) = _tps(flavour, truncated_topic, 0)
    consumer = open_consumer(auto_offset_reset="none")
    consumer.assign([tp])
    consumer.seek(tp, 3)
    with pytest.raises(flavour.error("OffsetOutOfRangeError")):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert consumer.poll(timeout_ms=200) == {}


# --- buffered records and position changes -----------------------------------------
# A consumer may hold records it fetched but has not returned yet (kafka-python
# does; fastkc pipelines the next fetch). Pausing, seeking or reassigning must
# act on what poll returns next, as in the Java client.

def _poll_one(consumer, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = consumer.poll(timeout_ms=200, max_records=1)
        if got:
            ((tp, records),) = got.items()
            assert len(records) == 1
            return records[0]
    pytest.fail("no record within {0}s".format(timeout))


def test_pause_holds_back_records_already_fetched(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer()
    consumer.assign([tp0])
    consumer.seek_to_beginning(tp0)
    assert _poll_one(consumer).offset == 0
    consumer.pause(tp0)
    assert consumer.poll(timeout_ms=700) == {}
    assert consumer.position(tp0) == 1
    consumer.resume(tp0)
    rest = poll_records(consumer, P0_COUNT - 1)
    assert [r.offset for r in rest] == list(range(1, P0_COUNT))


def test_seek_discards_records_already_fetched(flavour, open_consumer, shared):
    topic, _ = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer()
    consumer.assign([tp0])
    consumer.seek_to_beginning(tp0)
    assert _poll_one(consumer).offset == 0
    consumer.seek(tp0, 40)
    after = poll_records(consumer, P0_COUNT - 40)
    assert [r.offset for r in after] == list(range(40, P0_COUNT))
    # And backwards.
    consumer.seek(tp0, 2)
    assert _poll_one(consumer).offset == 2


def test_reassign_drops_records_of_removed_partitions(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer()
    consumer.assign([tp0, tp1])
    consumer.seek_to_beginning()
    _poll_one(consumer)
    consumer.assign([tp1])
    consumer.seek_to_beginning(tp1)
    consumed = poll_records(consumer, P1_COUNT, settle_ms=700)
    assert [(r.partition, r.offset) for r in consumed] == [(1, i) for i in range(P1_COUNT)]
    assert consumer.assignment() == {tp1}


def test_bootstrap_connected_and_metrics(flavour, open_consumer, shared):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer()
    consumer.assign([tp1])
    consumer.seek_to_beginning(tp1)
    assert len(poll_records(consumer, P1_COUNT)) == P1_COUNT
    # kafka-python closes its bootstrap-only connection once metadata is in,
    # so the value itself differs by design; it must be a plain bool.
    assert isinstance(consumer.bootstrap_connected(), bool)
    metrics = consumer.metrics()
    # Names differ between implementations; the shape is kafka-python's:
    # {group: {metric name: value}}, not empty once records flowed.
    assert isinstance(metrics, dict) and metrics
    assert all(isinstance(group, dict) for group in metrics.values())


def test_offsets_for_times_carries_the_leader_epoch(flavour, open_consumer, shared):
    topic, base = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer()
    found = consumer.offsets_for_times({tp0: base})
    assert isinstance(found[tp0], flavour.OffsetAndTimestamp)
    # A fresh single-broker topic: the first leader's epoch, 0.
    assert found[tp0].leader_epoch == 0


# --- misuse and edge cases --------------------------------------------------------

def test_position_and_highwater_of_an_unassigned_partition_are_illegal_state(flavour, open_consumer, shared):
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer()
    consumer.assign([tp1])
    with pytest.raises(flavour.error("IllegalStateError")):
        consumer.position(tp0)
    with pytest.raises(flavour.error("IllegalStateError")):
        consumer.highwater(tp0)


@pytest.mark.parametrize("method", ["seek", "pause", "seek_to_beginning", "seek_to_end"])
def test_position_changes_on_an_unassigned_partition_are_illegal_state(flavour, reference_deviates,
                                                                      open_consumer, shared, method):
    reference_deviates("seek / seek_to_* raise ValueError and pause raises KeyError for an unassigned "
                       "partition; the Java client throws IllegalStateException")
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer()
    consumer.assign([tp1])
    args = (tp0, 5) if method == "seek" else (tp0,)
    with pytest.raises(flavour.error("IllegalStateError")):
        getattr(consumer, method)(*args)
    # The assignment is untouched by the refused call.
    assert consumer.assignment() == {tp1}
    assert consumer.paused() == set()


def test_poll_without_assignment_is_illegal_state(flavour, reference_deviates, open_consumer):
    reference_deviates("poll() with no assignment and no subscription returns {}; the Java client throws "
                       "IllegalStateException")
    consumer = open_consumer()
    with pytest.raises(flavour.error("IllegalStateError")):
        consumer.poll(timeout_ms=100)


def test_negative_offsets_and_times_are_value_errors(flavour, open_consumer, shared):
    # Java: IllegalArgumentException; kafka-python (and so a drop-in): ValueError.
    topic, _ = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer()
    consumer.assign([tp0])
    with pytest.raises(ValueError):
        consumer.seek(tp0, -1)
    with pytest.raises(ValueError):
        consumer.offsets_for_times({tp0: -5})


@pytest.mark.parametrize("policy", ["earliest", "latest"])
def test_seek_past_the_end_resets_by_the_policy(flavour, open_consumer, shared, policy):
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer(auto_offset_reset=policy)
    consumer.assign([tp1])
    consumer.seek(tp1, P1_COUNT + 1000)  # beyond the high watermark: OFFSET_OUT_OF_RANGE
    if policy == "earliest":
        consumed = poll_records(consumer, P1_COUNT)
        assert [r.offset for r in consumed] == list(range(P1_COUNT))
    else:
        deadline = time.monotonic() + 30
        while consumer.position(tp1) != P1_COUNT:
            assert consumer.poll(timeout_ms=200) == {}
            assert time.monotonic() < deadline, "no reset to the end within 30s"


@pytest.mark.parametrize("method", ["beginning_offsets", "end_offsets", "offsets_for_times"])
def test_offset_lookups_for_an_unknown_topic_time_out(flavour, open_consumer, shared, method):
    topic, _ = shared
    (missing,) = _tps(flavour, "no-such-topic-" + topic, 0)
    consumer = open_consumer()
    arg = {missing: 0} if method == "offsets_for_times" else [missing]
    began = time.monotonic()
    with pytest.raises(flavour.error("KafkaTimeoutError")):
        getattr(consumer, method)(arg, timeout_ms=1500)
    # It waits for the topic up to timeout_ms (the topic may be being
    # created), then gives up.
    assert 1.3 <= time.monotonic() - began < 1.5 + 10.0


# --- topics without a group ---------------------------------------------------------
# kafka-python lets KafkaConsumer(topic) / subscribe() run without group_id: it
# then assigns itself every partition and commits nothing. The Java client has
# no such mode (it requires group.id); it is kafka-python's, and a drop-in
# keeps it.

def test_topics_in_the_constructor_without_group_read_every_partition(flavour, kafka_broker, shared):
    topic, _ = shared
    consumer = flavour.KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap_servers,
                                     auto_offset_reset="earliest", consumer_timeout_ms=2000)
    try:
        records = list(consumer)
        assert consumer.subscription() == {topic}
        assert consumer.assignment() == set(_tps(flavour, topic, 0, 1, 2))
    finally:
        consumer.close()
    by_partition = {}
    for record in records:
        by_partition.setdefault(record.partition, []).append(record.offset)
    assert by_partition == {0: list(range(P0_COUNT)), 1: list(range(P1_COUNT))}


def test_subscribe_without_group(flavour, open_consumer, shared):
    topic, _ = shared
    consumer = open_consumer(auto_offset_reset="earliest")
    consumer.subscribe([topic])
    consumed = poll_records(consumer, P0_COUNT + P1_COUNT, settle_ms=700)
    assert [(r.partition, r.offset) for r in consumed] == (
        [(0, i) for i in range(P0_COUNT)] + [(1, i) for i in range(P1_COUNT)])
    assert consumer.assignment() == set(_tps(flavour, topic, 0, 1, 2))


def test_seek_during_iteration(flavour, open_consumer, shared):
    # The iterator honours a seek made between two records, as poll() does
    # (records it had fetched but not yielded are dropped).
    topic, _ = shared
    (tp0,) = _tps(flavour, topic, 0)
    consumer = open_consumer(consumer_timeout_ms=1500)
    consumer.assign([tp0])
    consumer.seek_to_beginning(tp0)
    offsets = []
    for record in consumer:
        offsets.append(record.offset)
        if record.offset == 4:
            consumer.seek(tp0, 40)
    assert offsets == [0, 1, 2, 3, 4] + list(range(40, P0_COUNT))


def test_pause_during_iteration(flavour, open_consumer, shared):
    # kafka-python's iterator re-checks each partition before every record
    # ("records may become stale during iteration -- we seek, pause or lose
    # assignment"): after pause(tp) no record of tp is yielded.
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer(consumer_timeout_ms=1500)
    consumer.assign([tp0, tp1])
    consumer.seek_to_beginning()
    seen = []
    for record in consumer:
        seen.append((record.partition, record.offset))
        if (record.partition, record.offset) == (0, 2):
            consumer.pause(tp0)
    after_pause = seen[seen.index((0, 2)) + 1:]
    assert [p for p, _ in after_pause if p == 0] == [], after_pause
    assert sorted(o for p, o in seen if p == 1) == list(range(P1_COUNT))
    assert consumer.position(tp0) == 3


def test_seek_during_iteration_keeps_other_partitions_whole(flavour, open_consumer, shared):
    # A seek on one partition mid-iteration restarts that partition from the
    # new offset and must not drop records of the others that poll() had
    # already taken but the loop had not yet yielded.
    topic, _ = shared
    tp0, tp1 = _tps(flavour, topic, 0, 1)
    consumer = open_consumer(consumer_timeout_ms=1500)
    consumer.assign([tp0, tp1])
    consumer.seek_to_beginning()
    seen = []
    sought = False
    for record in consumer:
        seen.append((record.partition, record.offset))
        if (record.partition, record.offset) == (0, 2) and not sought:
            sought = True
            consumer.seek(tp0, 0)
    p0 = [o for p, o in seen if p == 0]
    assert p0 == [0, 1, 2] + list(range(P0_COUNT))
    assert sorted(o for p, o in seen if p == 1) == list(range(P1_COUNT))


def test_poll_with_zero_timeout_never_blocks_and_still_makes_progress(flavour, open_consumer, shared):
    # poll(0) (the default timeout) returns at once with whatever is ready;
    # called in a loop it still drives connecting, resetting and fetching.
    topic, _ = shared
    (tp1,) = _tps(flavour, topic, 1)
    consumer = open_consumer(auto_offset_reset="earliest")
    consumer.assign([tp1])
    offsets = []
    slowest = 0.0
    deadline = time.monotonic() + 30
    while len(offsets) < P1_COUNT:
        assert time.monotonic() < deadline, "poll(0) made no progress: {0} records".format(len(offsets))
        began = time.monotonic()
        batch = consumer.poll()
        slowest = max(slowest, time.monotonic() - began)
        offsets.extend(r.offset for records in batch.values() for r in records)
        time.sleep(0.001)
    assert offsets == list(range(P1_COUNT))
    # Generous for a loaded 2-core machine; a blocking poll would take the
    # fetch wait (500 ms) or a connect.
    assert slowest < 0.4, "poll(0) blocked for {0:.3f}s".format(slowest)


@pytest.mark.parametrize("lookup", ["beginning_offsets", "end_offsets", "offsets_for_times"])
@pytest.mark.parametrize("missing", ["partition", "topic"])
def test_offset_lookups_on_missing_partitions_time_out(flavour, open_consumer, shared, lookup, missing):
    """A partition that does not exist (past the topic's count, or of a topic
    that does not exist) may yet appear (partitions added, topic created):
    kafka-python and the Java client keep refreshing metadata and raise
    KafkaTimeoutError when timeout_ms runs out — not an immediate error, and
    not a wait past the timeout."""
    topic, _ = shared
    tp = flavour.TopicPartition(topic, 7) if missing == "partition" else \
        flavour.TopicPartition(topic + "-absent", 0)
    consumer = open_consumer()
    call = getattr(consumer, lookup)
    argument = {tp: 0} if lookup == "offsets_for_times" else [tp]
    started = time.monotonic()
    with pytest.raises(flavour.errors.KafkaTimeoutError):
        call(argument, timeout_ms=1500)
    elapsed = time.monotonic() - started
    assert 1.2 <= elapsed < 6.0, elapsed
