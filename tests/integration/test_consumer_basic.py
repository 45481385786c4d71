"""fastkc.KafkaConsumer against the real broker: what fastkc adds beyond
kafka-python's API (poll_arrow), and what its fetch path promises
(pipelining, incremental fetch sessions, leader epochs on positions, TLS with
a client certificate). The kafka-python-compatible behaviour is H6's suite
(tests/integration/test_consumer_*.py), parametrized over both clients."""

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.records import arrow_schema
from tests.support.kafka_tools import Message, produce


def _messages(n, partitions):
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else b"k%d" % i
        value = None if i % 11 == 0 else b"value-%d" % i
        headers = (("h", b"x%d" % i), ("null", None)) if i % 3 == 0 else ()
        out.append(Message(key=key, value=value, headers=headers, partition=i % partitions))
    return out


@pytest.fixture(scope="module")
def filled_topic(kafka_broker):
    from tests.support.kafka_tools import create_topic, unique_name

    topic = unique_name("consumer-basic")
    create_topic(kafka_broker.bootstrap_servers, topic, partitions=3)
    written = produce(kafka_broker.bootstrap_servers, topic, _messages(900, 3), compression="lz4")
    return topic, written


def _consumer(kafka_broker, **configs):
    return KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, **configs)


def _assign_all(consumer, topic):
    tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    return tps


def test_poll_arrow_returns_every_record_once_in_order(kafka_broker, filled_topic):
    topic, written = filled_topic
    with _consumer(kafka_broker) as consumer:
        _assign_all(consumer, topic)
        batches = []
        total = 0
        while total < len(written):
            batch = consumer.poll_arrow(timeout_ms=5000, max_records=250)
            assert batch.schema == arrow_schema()
            assert batch.num_rows <= 250
            if batch.num_rows == 0:
                pytest.fail("no records within 5 s after {0} of {1}".format(total, len(written)))
            batches.append(batch)
            total += batch.num_rows
        assert total == len(written)
        assert consumer.poll_arrow(timeout_ms=200).num_rows == 0
    rows = [row for b in batches for row in b.to_pylist()]
    got = sorted((r["partition"], r["offset"], r["key"], r["value"], r["topic"],
                  tuple((h["key"], h["value"]) for h in r["headers"]) if r["headers"] is not None else ())
                 for r in rows)
    want = sorted((w.partition, w.offset, w.key, w.value, w.topic, tuple(w.headers)) for w in written)
    assert got == want
    # per partition, in offset order across batches
    for p in range(3):
        offsets = [r["offset"] for r in rows if r["partition"] == p]
        assert offsets == sorted(offsets)


def test_records_carry_leader_epochs_and_positions_follow(kafka_broker, filled_topic):
    topic, written = filled_topic
    with _consumer(kafka_broker) as consumer:
        tps = _assign_all(consumer, topic)
        seen = {}
        while sum(len(v) for v in seen.values()) < len(written):
            for tp, records in consumer.poll(timeout_ms=5000).items():
                seen.setdefault(tp, []).extend(records)
        for tp in tps:
            records = seen[tp]
            assert [r.offset for r in records] == list(range(len(records)))
            assert all(r.leader_epoch >= 0 for r in records)
            assert consumer.position(tp) == records[-1].offset + 1
            assert consumer._fetcher.state(tp).position_epoch == records[-1].leader_epoch
            assert consumer.highwater(tp) == len(records)


def test_next_fetch_is_in_flight_when_poll_returns(kafka_broker, filled_topic):
    topic, written = filled_topic
    with _consumer(kafka_broker, max_poll_records=50) as consumer:
        _assign_all(consumer, topic)
        records = {}
        while not records:
            records = consumer.poll(timeout_ms=5000)
        # pipelining: the application holds records while a Fetch is on the wire
        assert consumer._fetcher.planner.in_flight_nodes, "no fetch in flight after poll returned"


def test_incremental_fetch_session_is_established(kafka_broker, filled_topic):
    topic, _ = filled_topic
    with _consumer(kafka_broker) as consumer:
        tps = _assign_all(consumer, topic)
        for _ in range(6):
            consumer.poll(timeout_ms=300)
        sessions = consumer._fetcher.planner.sessions
        assert sessions and all(s.session_id != 0 and s.epoch >= 1 for s in sessions.values())
        assert set().union(*(s.partitions_in_session() for s in sessions.values())) == set(tps)

    with _consumer(kafka_broker, enable_incremental_fetch_sessions=False) as consumer:
        _assign_all(consumer, topic)
        for _ in range(3):
            consumer.poll(timeout_ms=300)
        assert all(s.session_id == 0 for s in consumer._fetcher.planner.sessions.values())


def test_deserializers_apply(kafka_broker, filled_topic):
    topic, written = filled_topic
    with _consumer(kafka_broker, key_deserializer=lambda b: None if b is None else b.decode(),
                   value_deserializer=lambda b: None if b is None else len(b)) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records = []
        while not records:
            records = consumer.poll(timeout_ms=5000).get(tp, [])
        first = [w for w in written if w.partition == 0][0]
        assert records[0].key == (None if first.key is None else first.key.decode())
        assert records[0].value == (None if first.value is None else len(first.value))


# --- TLS with a client certificate (the --security broker) ---------------------------------------



@pytest.mark.broker
@pytest.mark.parametrize("listener,mechanism", [("SSL", None), ("SASL_SSL", "SCRAM-SHA-512")])
def test_consume_over_tls(secure_broker, listener, mechanism):
    from tests.support.kafka_tools import create_topic, unique_name

    topic = unique_name("consumer-tls")
    create_topic(secure_broker.bootstrap_servers, topic, partitions=1)
    written = produce(secure_broker.bootstrap_servers, topic, _messages(50, 1))
    tls = secure_broker.tls
    configs = dict(bootstrap_servers=secure_broker.listeners[listener], security_protocol=listener,
                   ssl_cafile=tls["ca"])
    if mechanism is None:
        configs.update(ssl_certfile=tls["client_cert"], ssl_keyfile=tls["client_key"])
    else:
        configs.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    with KafkaConsumer(**configs) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        while len(got) < len(written):
            records = consumer.poll(timeout_ms=10000).get(tp)
            assert records, "nothing within 10 s over {0}".format(listener)
            got.extend(records)
    assert [(r.offset, r.key, r.value) for r in got] == [(w.offset, w.key, w.value) for w in written]


def test_topics_in_the_constructor_without_group_consume_every_partition(kafka_broker, filled_topic):
    # kafka-python's behaviour without group_id: all partitions assigned locally
    topic, written = filled_topic
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    try:
        got = list(consumer)
        assert consumer.subscription() == {topic}
        assert consumer.assignment() == {TopicPartition(topic, p) for p in range(3)}
    finally:
        consumer.close()
    assert sorted((r.partition, r.offset, r.value) for r in got) == \
        sorted((w.partition, w.offset, w.value) for w in written)
