"""Nothing is committed or advanced past what the application was handed
(issue 9, class 0).

Each test lets a first group member handle a few records through one path
(iteration, poll(max_records), poll_arrow, pause or seek in between, a
rebalance callback), then close; a second member of the same group
(confluent-kafka's consumer, whatever the first was) must then receive every
record the first did not handle, and none that it did (the commit is exact,
so there is no duplicate either). kafka-python is the reference: its
iterator moves the position record by record.
"""
import importlib
import time
import uuid

import pytest

from tests.support.kafka_tools import Message, produce

PER_PARTITION = 40
PARTITIONS = 2


@pytest.fixture
def topic(kafka_broker, make_topic):
    name = make_topic(partitions=PARTITIONS)
    produce(kafka_broker.bootstrap_servers, name,
            [Message(value=b"%d-%d" % (p, i), partition=p) for i in range(PER_PARTITION) for p in range(PARTITIONS)])
    return name


def _member(flavour, kafka_broker, group, topic=None, **configs):
    base = dict(bootstrap_servers=kafka_broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest",
                session_timeout_ms=6000, heartbeat_interval_ms=300, fetch_max_wait_ms=100,
                consumer_timeout_ms=15000)
    base.update(configs)
    consumer = flavour.KafkaConsumer(**base)
    if topic is not None:
        # The new topic's partitions known first: kafka-python's group leader
        # otherwise can assign before its metadata has them ("No partition
        # metadata"), leaving the member with nothing past every deadline here
        # (two CI runs met it; a rejoin on a later metadata refresh did not come
        # within 30 s).
        deadline = time.monotonic() + 30
        while not consumer.partitions_for_topic(topic):
            assert time.monotonic() < deadline, "the topic's partitions never showed in the member's metadata"
            time.sleep(0.1)
        consumer.subscribe([topic])
    return consumer


def _group():
    return "handed-" + uuid.uuid4().hex[:10]


def _rest(kafka_broker, group, topic, expected_count, timeout=60.0):
    """What a second member of `group` receives: {partition: [offsets]}. The
    second member is confluent-kafka's consumer whatever the first was: it
    reads the group's committed offsets independently of the client under
    test (and of kafka-python's own group handling, which under a loaded CI
    machine once left its second member with nothing for 60 s)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 6000, "fetch.wait.max.ms": 100})
    got = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([topic])
        total = 0
        while total < expected_count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got[message.partition()].append(message.offset())
                total += 1
        # a little longer: a record delivered twice shows up
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got[message.partition()].append(message.offset())
    finally:
        consumer.close()
    return got


def _check_contiguous(handled, partitions=range(PARTITIONS)):
    """The first member skipped nothing: per partition it handled 0, 1, 2, ...
    in order (the topic is written once, from offset 0)."""
    for p in partitions:
        mine = [o for q, o in handled if q == p]
        assert mine == list(range(len(mine))), ("the first member skipped or repeated", p, mine)


def _check_exact(handled, rest):
    """`handled`: (partition, offset) the first member handled, in order;
    `rest`: what the second received. The first member skipped nothing;
    together exactly every record, each once, and the second starts where
    the first stopped."""
    _check_contiguous(handled)
    for p in range(PARTITIONS):
        mine = [o for q, o in handled if q == p]
        theirs = rest[p]
        start = (max(mine) + 1) if mine else 0
        assert theirs == list(range(start, PER_PARTITION)), (p, mine, theirs[:10])


def _iterate(consumer, count):
    handled = []
    for record in consumer:
        handled.append((record.partition, record.offset))
        if len(handled) == count:
            break
    return handled


def test_iteration_then_close_commits_what_was_handled(flavour, kafka_broker, topic):
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=True, auto_commit_interval_ms=60000)
    handled = _iterate(consumer, 7)
    # the position is the record after the last one handled, not the end of
    # what the iterator had polled
    last_p, last_o = handled[-1]
    assert consumer.position(flavour.TopicPartition(topic, last_p)) == last_o + 1
    consumer.close()
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_iteration_with_manual_commit_commits_what_was_handled(flavour, kafka_broker, topic):
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=False)
    handled = _iterate(consumer, 5)
    consumer.commit()
    consumer.close(autocommit=False)
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_poll_with_max_records_then_close(flavour, kafka_broker, topic):
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=True, auto_commit_interval_ms=60000)
    handled = []
    deadline = time.monotonic() + 30
    while len(handled) < 6:
        assert time.monotonic() < deadline
        for records in consumer.poll(timeout_ms=200, max_records=3).values():
            handled.extend((r.partition, r.offset) for r in records)
    assert len(handled) == 6
    consumer.close()
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_poll_arrow_with_max_records_then_close(flavour, kafka_broker, topic):
    if flavour.is_reference:
        pytest.skip("poll_arrow is fastkc's own")
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=True, auto_commit_interval_ms=60000)
    handled = []
    deadline = time.monotonic() + 30
    while len(handled) < 9:
        assert time.monotonic() < deadline
        batch = consumer.poll_arrow(timeout_ms=200, max_records=4)
        handled.extend(zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist()))
    consumer.close()
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_leaving_the_loop_then_poll_loses_nothing(flavour, kafka_broker, topic):
    # records the iterator had polled but not yielded come back from poll()
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=False, max_poll_records=50)
    handled = _iterate(consumer, 3)
    deadline = time.monotonic() + 30
    while len(handled) < 11:
        assert time.monotonic() < deadline
        for records in consumer.poll(timeout_ms=200, max_records=2).values():
            handled.extend((r.partition, r.offset) for r in records)
    _check_contiguous(handled)
    consumer.commit()
    consumer.close(autocommit=False)
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_pause_during_iteration_then_close(flavour, kafka_broker, topic):
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=True, auto_commit_interval_ms=60000,
                       consumer_timeout_ms=1500)
    handled = []
    paused = None
    for record in consumer:
        handled.append((record.partition, record.offset))
        if paused is None and len(handled) == 3:
            paused = flavour.TopicPartition(topic, record.partition)
            consumer.pause(paused)
            # the paused partition stays at the record after the last handled
            assert consumer.position(paused) == record.offset + 1
        if len(handled) >= 3 + 5 and len({p for p, _ in handled}) == PARTITIONS:
            break
    consumer.close()
    _check_exact(handled, _rest(kafka_broker, group, topic, PARTITIONS * PER_PARTITION - len(handled)))


def test_seek_back_during_iteration_then_close(flavour, kafka_broker, topic):
    # After a seek the sought offset is the position until a record of that
    # partition is handled again; the commit on close follows it exactly.
    group = _group()
    consumer = _member(flavour, kafka_broker, group, topic, enable_auto_commit=True, auto_commit_interval_ms=60000)
    expected = {p: 0 for p in range(PARTITIONS)}
    handled = []
    sought = None
    for record in consumer:
        handled.append((record.partition, record.offset))
        expected[record.partition] = record.offset + 1
        if sought is None and record.offset == 4:
            sought = record.partition
            consumer.seek(flavour.TopicPartition(topic, record.partition), 1)
            expected[record.partition] = 1
        if sought is not None and len(handled) >= 12:
            break
    consumer.close()
    # the first member skipped nothing: 0, 1, ... on each partition, and on the
    # sought one 0..4 then again from 1
    _check_contiguous(handled, [p for p in range(PARTITIONS) if p != sought])
    again = [o for p, o in handled if p == sought]
    assert again == list(range(5)) + list(range(1, len(again) - 4)), (sought, again)
    rest = _rest(kafka_broker, group, topic, sum(PER_PARTITION - e for e in expected.values()))
    for p in range(PARTITIONS):
        assert rest[p] == list(range(expected[p], PER_PARTITION)), (p, expected, rest[p][:10])


def test_commit_in_revocation_callback_commits_what_was_handled(flavour, kafka_broker, topic, reference_deviates):
    # The common pattern (Java's documented one): commitSync in
    # onPartitionsRevoked. A second member joins while the first is
    # iterating; everything the first did not handle reaches the second,
    # nothing twice.
    reference_deviates("a synchronous listener cannot commit (kafka-python 3 runs it on its IO thread: "
                       "'Cannot block on net.run() from the IO thread itself'); the Java client allows it")
    group = _group()
    first = _member(flavour, kafka_broker, group, enable_auto_commit=False, max_poll_records=4,
                    consumer_timeout_ms=500)
    revocations = []

    package = importlib.import_module(flavour.KafkaConsumer.__module__.split(".")[0])

    class CommitOnRevoke(package.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            revocations.append(sorted(tp.partition for tp in revoked))
            if revoked:
                first.commit()

        def on_partitions_assigned(self, assigned):
            pass

    first.subscribe([topic], listener=CommitOnRevoke())
    handled = _iterate(first, 6)
    second = _member(flavour, kafka_broker, group, topic, enable_auto_commit=False)
    got_second = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 40
    try:
        # both poll until each owns one partition and the first has handled
        # a few more of its own
        while time.monotonic() < deadline:
            for tp, records in second.poll(timeout_ms=100).items():
                got_second[tp.partition].extend(r.offset for r in records)
            for record in first:
                handled.append((record.partition, record.offset))
                break
            if len(first.assignment()) == 1 and len(second.assignment()) == 1 and any(got_second.values()):
                break
        assert len(first.assignment()) == 1 and len(second.assignment()) == 1, "the group did not settle"
        moved = next(iter(second.assignment())).partition
        kept = next(iter(first.assignment())).partition
        # the first member hands on no record of the moved partition after
        # revocation; what it handled of it, the second must not receive
        mine_moved = [o for p, o in handled if p == moved]
        while len(got_second[moved]) < PER_PARTITION - len(mine_moved) and time.monotonic() < deadline:
            for tp, records in second.poll(timeout_ms=100).items():
                got_second[tp.partition].extend(r.offset for r in records)
        for tp, records in second.poll(timeout_ms=300).items():
            got_second[tp.partition].extend(r.offset for r in records)
        _check_contiguous(handled)  # the first member skipped nothing, before or after the revocation
        start = (max(mine_moved) + 1) if mine_moved else 0
        assert got_second[moved] == list(range(start, PER_PARTITION)), (moved, mine_moved, got_second[moved][:10])
        assert got_second[kept] == []
        assert revocations and any(revocations)
    finally:
        second.close(autocommit=False)
        first.close(autocommit=False)
