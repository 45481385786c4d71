"""KafkaShareConsumer against the real broker (Kafka 4.3.1, share groups on
in the harness); the data comes from confluent-kafka's Producer.

A share group starts at the latest offset unless its group config
share.auto.offset.reset says otherwise: every test sets it to earliest
(IncrementalAlterConfigs on the GROUP resource, through confluent-kafka's
AdminClient) before its first consumer joins."""
import time
import uuid

import pytest

from fastkc import AcknowledgeType, KafkaShareConsumer, TopicPartition, errors
from tests.support.kafka_tools import Message, produce
from tests.support.share import set_group_configs


def share_group(bootstrap, **group_configs):
    """A new share group id whose configs are set (earliest start by default)."""
    group = "share-" + uuid.uuid4().hex[:12]
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **group_configs})
    return group


def write(bootstrap, topic, count, partition=None):
    return produce(bootstrap, topic, [Message(key=b"k%d" % i, value=b"v%d" % i, partition=partition)
                                      for i in range(count)])


def consumer(bootstrap, group, topic, **configs):
    configs.setdefault("request_timeout_ms", 10000)
    configs.setdefault("fetch_max_wait_ms", 200)
    return KafkaShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **configs)


def drain(share, want, timeout=30.0, ack=None):
    """Poll until `want` records came (or timeout): [(record), ...]."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in share.poll(timeout_ms=500).values():
            for record in records:
                got.append(record)
                if ack is not None:
                    share.acknowledge(record, ack(record))
    return got


def first_batch(share, timeout=30.0):
    """poll_arrow() until a batch with rows comes (or timeout: the last, empty one)."""
    deadline = time.monotonic() + timeout
    batch = share.poll_arrow(timeout_ms=500)
    while not batch.num_rows and time.monotonic() < deadline:
        batch = share.poll_arrow(timeout_ms=500)
    return batch


def test_one_consumer_reads_every_record_once_implicitly(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=2)
    written = write(bootstrap, topic, 40)
    group = share_group(bootstrap)
    with consumer(bootstrap, group, topic) as share:
        got = drain(share, 40)
        assert share.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert share.acquisition_lock_timeout_ms() and share.acquisition_lock_timeout_ms() > 0
        # nothing more, ever: the implicit ACCEPTs settled them
        assert drain(share, 1, timeout=2.0) == []
        results = share.commit_sync(timeout_ms=10000)
    assert sorted((r.partition, r.offset, r.value) for r in got) == sorted(
        (w.partition, w.offset, w.value) for w in written)
    assert {r.delivery_count for r in got} == {1}
    assert all(error is None for error in results.values())
    # a second consumer of the group later finds nothing: all were accepted
    with consumer(bootstrap, group, topic) as again:
        assert drain(again, 1, timeout=3.0) == []


def test_explicit_accept_release_reject(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 30)
    group = share_group(bootstrap)
    kinds = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.RELEASE, 2: AcknowledgeType.REJECT}
    seen = []
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        first = drain(share, 30, ack=lambda r: kinds[r.offset % 3])
        results = share.commit_sync(timeout_ms=10000)
        assert results == {TopicPartition(topic, 0): None}
        # the released ten come back, to this member, delivered a second time
        again = drain(share, 10, ack=lambda r: AcknowledgeType.ACCEPT)
        seen = first + again
        assert drain(share, 1, timeout=2.0, ack=lambda r: AcknowledgeType.ACCEPT) == []
    assert len(first) == 30 and {r.delivery_count for r in first} == {1}
    assert sorted(r.offset for r in again) == [o for o in range(30) if o % 3 == 1]
    assert {r.delivery_count for r in again} == {2}
    assert not any(r.offset % 3 == 2 for r in again)  # rejected: never again
    assert len(seen) == 40


def test_explicit_mode_rules_and_bad_acknowledgements(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 5)
    group = share_group(bootstrap)
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit", max_poll_records=5) as share:
        got = drain(share, 5)
        assert len(got) == 5
        with pytest.raises(errors.IllegalStateError, match="not acknowledged"):
            share.poll(timeout_ms=0)
        share.acknowledge(got[0])
        with pytest.raises(errors.IllegalStateError, match="acknowledged already"):
            share.acknowledge(got[0], AcknowledgeType.REJECT)
        stranger = got[1]._replace(offset=999)
        with pytest.raises(errors.IllegalStateError, match="not delivered"):
            share.acknowledge(stranger)
        with pytest.raises(errors.IllegalArgumentError):
            share.acknowledge(got[1], 7)
        for record in got[1:]:
            share.acknowledge(record)
        assert share.commit_sync(timeout_ms=10000) == {TopicPartition(topic, 0): None}
        assert share.poll(timeout_ms=500) == {}
    with pytest.raises(errors.IllegalStateError, match="closed"):
        share.acknowledge(got[0])
    with pytest.raises(errors.IllegalStateError, match="closed"):
        share.poll()


def test_implicit_mode_refuses_acknowledge(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 2)
    with consumer(bootstrap, share_group(bootstrap), topic) as share:
        got = drain(share, 2)
        with pytest.raises(errors.IllegalStateError, match="explicit"):
            share.acknowledge(got[0])


def test_close_releases_what_was_not_acknowledged(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 20)
    group = share_group(bootstrap)
    first = consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit", max_poll_records=20)
    got = drain(first, 20)
    for record in got[:5]:
        first.acknowledge(record)
    started = time.monotonic()
    first.close(timeout_ms=10000)
    assert time.monotonic() - started < 10
    # the 15 not acknowledged come to a second member at once (long before a 30 s lock could expire)
    with consumer(bootstrap, group, topic) as second:
        later = drain(second, 15, timeout=15.0)
    assert sorted(r.offset for r in later) == list(range(5, 20))
    assert {r.delivery_count for r in later} == {2}


def test_poll_arrow_and_acknowledge_batch(kafka_broker, make_topic):
    import pyarrow as pa

    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    written = write(bootstrap, topic, 12)
    group = share_group(bootstrap)
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        batch = first_batch(share)
        assert batch.num_rows == 12
        assert batch.column("value").to_pylist() == [w.value for w in written]
        assert batch.column("delivery_count").to_pylist() == [1] * 12
        types = pa.array([int(AcknowledgeType.RELEASE) if o < 4 else int(AcknowledgeType.ACCEPT)
                          for o in batch.column("offset").to_pylist()], pa.int8())
        with pytest.raises(errors.IllegalArgumentError):
            share.acknowledge_batch(batch, [AcknowledgeType.ACCEPT])  # one type for twelve rows
        share.acknowledge_batch(batch, types)
        with pytest.raises(errors.IllegalStateError):
            share.acknowledge_batch(batch, AcknowledgeType.ACCEPT)  # all acknowledged already
        assert share.commit_sync(timeout_ms=10000) == {TopicPartition(topic, 0): None}
        again = first_batch(share)
        assert again.column("offset").to_pylist() == [0, 1, 2, 3]
        assert again.column("delivery_count").to_pylist() == [2] * 4
        share.acknowledge_batch(again, AcknowledgeType.ACCEPT)
        empty = share.poll_arrow(timeout_ms=300)
        assert empty.num_rows == 0 and "delivery_count" in empty.schema.names


def test_commit_async_callback_and_acknowledgement_callback(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 6)
    heard, committed = [], []
    with consumer(bootstrap, share_group(bootstrap), topic, share_acknowledgement_mode="explicit") as share:
        share.set_acknowledgement_commit_callback(lambda offsets, error: heard.append((offsets, error)))
        got = drain(share, 6, ack=lambda r: AcknowledgeType.ACCEPT)
        share.commit_async(committed.append)
        deadline = time.monotonic() + 10
        while not committed and time.monotonic() < deadline:
            share.poll(timeout_ms=200)
    assert len(got) == 6
    assert committed == [{TopicPartition(topic, 0): None}]
    offsets = set()
    for by_partition, error in heard:
        assert error is None
        offsets |= by_partition[TopicPartition(topic, 0)]
    assert offsets == set(range(6))


def test_renew_extends_the_lock_where_the_broker_speaks_kip_1222(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 1)
    group = share_group(bootstrap, **{"share.record.lock.duration.ms": 2000})
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        [record] = drain(share, 1)
        assert share.acquisition_lock_timeout_ms() == 2000
        for _ in range(3):  # 3 s past a 2 s lock, renewed every second
            time.sleep(1.0)
            share.acknowledge(record, AcknowledgeType.RENEW)
            assert share.commit_sync(timeout_ms=5000) == {TopicPartition(topic, 0): None}
        share.acknowledge(record, AcknowledgeType.ACCEPT)
        assert share.commit_sync(timeout_ms=5000) == {TopicPartition(topic, 0): None}


def test_three_members_share_one_partition_without_duplicates(kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    # thirty batches of ten: a broker acquires whole batches (max_records is rounded up to a batch boundary)
    written = [w for _ in range(30) for w in write(bootstrap, topic, 10)]
    group = share_group(bootstrap)
    members = [consumer(bootstrap, group, topic, max_poll_records=20) for _ in range(3)]
    got = {index: [] for index in range(3)}
    try:
        deadline = time.monotonic() + 45
        while sum(len(v) for v in got.values()) < 300 and time.monotonic() < deadline:
            for index, member in enumerate(members):
                for records in member.poll(timeout_ms=100).values():
                    got[index].extend(records)
        assignments = [member.assignment() for member in members]
    finally:
        for member in members:
            member.close(timeout_ms=5000)
    offsets = [r.offset for records in got.values() for r in records]
    assert sorted(offsets) == [w.offset for w in written]  # each record once, none lost
    assert assignments == [{TopicPartition(topic, 0)}] * 3  # one partition, shared by all
    assert sum(1 for records in got.values() if records) >= 2  # the work was shared


def test_a_busy_application_stays_in_the_group(kafka_broker, make_topic):
    """The member heartbeats from its thread: through 12 s without a call
    (the harness's share session timeout is 10 s) the broker keeps answering
    its heartbeats, never fences it, and the late acknowledgements succeed
    (a 20 s lock)."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 5)
    group = share_group(bootstrap, **{"share.record.lock.duration.ms": 20000})
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        got = drain(share, 5)
        before = share._heartbeat.heartbeats_answered
        time.sleep(12)
        assert share._heartbeat.heartbeats_answered - before >= 5  # the broker's 1 s interval, while we slept
        for record in got:
            share.acknowledge(record)
        assert share.commit_sync(timeout_ms=10000) == {TopicPartition(topic, 0): None}
        assert share._member.fenced_count == 0
    assert len(got) == 5


def test_a_fenced_member_rejoins_with_its_id_and_its_acknowledgements_are_answered(kafka_broker, make_topic):
    """The member's thread stalls past the session timeout (the test holds its
    lock 13 s): the broker drops the member, the next heartbeat is answered
    UNKNOWN_MEMBER_ID, the member joins again (epoch 0, same id). Records
    delivered before stay acknowledgeable: Kafka 4.3.1 still holds them for
    this member id within their lock, and accepts the acknowledgements."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 5)
    group = share_group(bootstrap, **{"share.record.lock.duration.ms": 30000})
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        got = drain(share, 5)
        member_id = share._member.member_id
        with share._heartbeat.lock:
            time.sleep(13)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (share._member.fenced_count and share._member.member_epoch > 0):
            time.sleep(0.05)
        assert share._member.fenced_count == 1 and share._member.member_epoch > 0
        assert share._member.member_id == member_id
        for record in got:
            share.acknowledge(record)
        assert share.commit_sync(timeout_ms=10000) == {TopicPartition(topic, 0): None}
        assert drain(share, 1, timeout=3.0) == []  # settled: nothing comes back


def test_renew_refused_by_the_group_config_is_a_typed_result_and_the_record_stays_held(kafka_broker, make_topic):
    """Two signals say RENEW is not available: a leader below ShareAcknowledge
    v2 (acknowledge() raises UnsupportedVersionError, unit-tested), and the
    group config share.renew.acknowledge.enable=false, which Kafka 4.3.1
    answers per partition with INVALID_RECORD_STATE ("Renewing acquisition
    locks is not enabled for the group"); the record can still be settled."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    write(bootstrap, topic, 1)
    group = share_group(bootstrap, **{"share.renew.acknowledge.enable": "false"})
    with consumer(bootstrap, group, topic, share_acknowledgement_mode="explicit") as share:
        [record] = drain(share, 1)
        share.acknowledge(record, AcknowledgeType.RENEW)
        [(partition, error)] = share.commit_sync(timeout_ms=5000).items()
        assert partition == TopicPartition(topic, 0)
        assert isinstance(error, errors.InvalidRecordStateError) and "not enabled" in str(error)
        share.acknowledge(record, AcknowledgeType.ACCEPT)
        assert share.commit_sync(timeout_ms=5000) == {TopicPartition(topic, 0): None}


@pytest.mark.parametrize("mode", ["batch_optimized", "record_limit"])
def test_acquire_mode(kafka_broker, make_topic, mode):
    """One producer batch of 100 records, max_poll_records=10: batch_optimized
    acquires the whole batch (the rest waits in the buffer, its lock
    running); record_limit (KIP-1206) acquires ten at a time."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=1)
    written = write(bootstrap, topic, 100)
    group = share_group(bootstrap)
    with consumer(bootstrap, group, topic, max_poll_records=10, share_acquire_mode=mode) as share:
        first = drain(share, 1)
        held = sum(len(c.acquired_offsets()) for c in share._fetch.buffer)
        rest = drain(share, 100 - len(first))
    assert len(first) == 10
    assert held == (90 if mode == "batch_optimized" else 0)
    assert sorted(r.offset for r in first + rest) == [w.offset for w in written]


@pytest.mark.parametrize("listener,mechanism", [("SSL", None), ("SASL_SSL", "SCRAM-SHA-512")])
def test_share_consumer_over_tls_and_sasl(secure_broker, listener, mechanism):
    """The security settings are KafkaConsumer's: mutual TLS, and SCRAM over
    TLS, every record delivered once and ACCEPTed (a second member finds
    nothing)."""
    from tests.support.kafka_tools import create_topic, unique_name

    bootstrap = secure_broker.bootstrap_servers  # the harness's PLAINTEXT listener, for set-up
    topic = unique_name("share-tls")
    create_topic(bootstrap, topic, partitions=2)
    written = write(bootstrap, topic, 30)
    group = share_group(bootstrap)
    tls = secure_broker.tls
    configs = dict(security_protocol=listener, ssl_cafile=tls["ca"])
    if mechanism is None:
        configs.update(ssl_certfile=tls["client_cert"], ssl_keyfile=tls["client_key"])
    else:
        configs.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    with consumer(secure_broker.listeners[listener], group, topic, **configs) as share:
        got = drain(share, len(written))
        results = share.commit_sync(timeout_ms=10000)
    assert sorted((r.partition, r.offset, r.value) for r in got) == sorted(
        (w.partition, w.offset, w.value) for w in written)
    assert all(error is None for error in results.values())
    with consumer(secure_broker.listeners[listener], group, topic, **configs) as again:
        assert drain(again, 1, timeout=3.0) == []
