"""An unclean leader election that truncates the log, on the real cluster,
so fastkc's KIP-320 truncation detection (OffsetForLeaderEpoch, the Fetch's
diverging epoch; fetcher `_check_divergence`) meets a real broker.

Topic: one partition, replicas [A, B] (A leads), unclean.leader.election.enable
=true, min.insync.replicas=1.
1. 50 records reach both replicas; B stops (controlled: it leaves the ISR);
   30 more reach A only (offsets 50..79).
2. Two fastkc consumers (through the proxies) read all 80: one with
   auto_offset_reset="earliest", one with "none".
3. A is SIGKILLed; B starts with its stale log and is elected leader
   uncleanly (Admin ElectLeaders UNCLEAN): its log ends at 50.
4. The "earliest" consumer must move its position to 50 (the new leader's
   end for its epoch), the "none" one must raise LogTruncationError from
   poll() (typed; nothing else).
5. 10 new records are written to B (offsets 50..59 again, new values): the
   first consumer reads exactly them; the second, after seeking to the
   truncation point, reads them too. A comes back and follows B.
Records 50..79 of A's log are lost by the broker: that is what an unclean
election means, not a client defect.
"""
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition, errors
from fastkc_tools import broker
from tests.support.faults.accounting import Ledger
from tests.support.faults.runner import CONSUMER_TIMEOUTS, record
from tests.support.kafka_tools import unique_name

pytestmark = [pytest.mark.faults, pytest.mark.cluster]


def _admin(bootstrap):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def _partition(bootstrap, topic):
    md = _admin(bootstrap).list_topics(topic=topic, timeout=10)
    return md.topics[topic].partitions[0]


def _produce(bootstrap, topic, values):
    from confluent_kafka import Producer

    acked = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 60000})
    for v in values:
        producer.produce(topic, value=v, partition=0,
                         on_delivery=lambda err, msg: acked.append((err, msg.offset())))
    producer.flush(60)
    assert len(acked) == len(values) and all(err is None for err, _ in acked), acked
    return [o for _, o in acked]


def _wait(predicate, timeout, what, step=None):
    deadline = time.monotonic() + timeout
    while True:
        if step:
            step()
        if predicate():
            return
        assert time.monotonic() < deadline, "timed out: " + what
        time.sleep(0.1)


@pytest.mark.slow
def test_unclean_election_truncation_is_detected(cluster):
    info = cluster.info
    a, b = 2, 3
    topic = unique_name("faults-unclean")
    from confluent_kafka.admin import NewTopic

    admin = _admin(cluster.direct)  # kept: a dropped AdminClient cancels its futures
    fut = admin.create_topics([NewTopic(
        topic, num_partitions=1, replica_assignment=[[a, b]],
        config={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})])
    fut[topic].result(30)
    _wait(lambda: _partition(cluster.direct, topic).leader == a, 30, "leader A")
    ledger = Ledger("unclean-election-truncation", expected_errors=(
        errors.LogTruncationError, errors.KafkaConnectionError, errors.KafkaTimeoutError,
        errors.NoBrokersAvailable))
    tp = TopicPartition(topic, 0)

    assert _produce(cluster.direct, topic, [b"old-%d" % i for i in range(50)]) == list(range(50))
    broker.stop_node(info, b)
    _wait(lambda: _partition(cluster.direct, topic).isrs == [a], 30, "ISR shrinks to [A]")
    assert _produce(cluster.direct, topic, [b"a-only-%d" % i for i in range(30)]) == list(range(50, 80))

    consumers = {}
    got = {"earliest": [], "none": []}
    raised = []
    for reset in ("earliest", "none"):
        c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset=reset,
                          enable_auto_commit=False, **CONSUMER_TIMEOUTS)
        c.assign([tp])
        c.seek(tp, 0)
        consumers[reset] = c

    def poll_all():
        for reset, c in consumers.items():
            try:
                batch = c.poll(timeout_ms=50)
            except Exception as exc:  # noqa: BLE001 - accounted
                ledger.error(exc)
                raised.append((reset, exc, time.monotonic()))
                continue
            for records in batch.values():
                got[reset].extend((r.offset, r.value, r.leader_epoch) for r in records)
                ledger.delivered({tp: records}, consumer=reset)

    try:
        _wait(lambda: all(len(v) >= 80 for v in got.values()), 30, "both read 80", step=poll_all)
        for reset, c in consumers.items():
            assert [o for o, _, _ in got[reset]] == list(range(80)), reset
            assert c.position(tp) == 80
        old_epoch = got["earliest"][-1][2]

        # A crashes; B, stale, comes back and is elected uncleanly.
        fault = ledger.fault("unclean election: A killed, stale B leads")
        broker.kill_node(info, a)
        broker.start_node(info, b, timeout=90.0, die_with_parent=True,
                          expect_nodes=[n.node_id for n in info.nodes if n.node_id != a])

        def elect():
            poll_all()
            from confluent_kafka import ElectionType
            from confluent_kafka import TopicPartition as CTP

            if _partition(cluster.direct, topic).leader != b:
                try:
                    admin.elect_leaders(ElectionType.UNCLEAN, [CTP(topic, 0)]).result(10)
                except Exception:  # noqa: BLE001 - retried until B leads
                    pass

        _wait(lambda: _partition(cluster.direct, topic).leader == b, 60, "B elected uncleanly", step=elect)
        elected = time.monotonic()
        ledger.healed(fault)

        # Detection: "earliest" moves to 50, "none" raises LogTruncationError.
        _wait(lambda: consumers["earliest"].position(tp) == 50 and any(r == "none" for r, _, _ in raised),
              60, "truncation detected by both", step=poll_all)
        detect_s = max(t for _, _, t in raised) - elected
        kinds = {(r, type(e).__name__) for r, e, _ in raised}
        assert ("none", "LogTruncationError") in kinds, kinds
        assert all(isinstance(e, errors.KafkaError) for _, e, _ in raised), raised
        assert not any(r == "earliest" and isinstance(e, errors.LogTruncationError) for r, e, _ in raised)
        trunc = next(e for r, e, _ in raised if isinstance(e, errors.LogTruncationError))
        assert "50" in str(trunc)
        # the "none" consumer keeps raising until the application seeks
        consumers["none"].seek(tp, 50)

        new = _produce(cluster.direct, topic, [b"new-%d" % i for i in range(10)])
        assert new == list(range(50, 60))
        n_before = {k: len(v) for k, v in got.items()}
        _wait(lambda: all(len(got[k]) >= n_before[k] + 10 for k in got), 30, "the new records", step=poll_all)
        for reset in got:
            after = got[reset][n_before[reset]:]
            assert [(o, v) for o, v, _ in after] == [(50 + i, b"new-%d" % i) for i in range(10)], reset
            assert all(e > old_epoch for _, _, e in after)

        # The old leader returns and follows the new one (its log is truncated).
        back = ledger.fault("old leader A returns")
        broker.start_node(info, a, timeout=90.0, die_with_parent=True)
        _wait(lambda: sorted(_partition(cluster.direct, topic).isrs) == sorted([a, b]), 60, "A back in ISR")
        ledger.healed(back)
        poll_all()
    finally:
        for c in consumers.values():
            c.close()
    # Two independent consumers read the same offsets, and 50..59 exist
    # twice (old and new log): duplicates are by design here; the
    # per-consumer gap check and the typing of errors still apply.
    report = ledger.report()
    assert not report.untyped_errors, report.untyped_errors
    assert not report.unexpected_errors, report.unexpected_errors
    assert not report.gaps, report.gaps
    d = {"scenario": report.scenario, "produced": 90, "delivered": report.deliveries,
         "lost_by_broker": 30, "detect_s": round(detect_s, 2), "errors": report.errors,
         "election_stall_s": report.worst_stall_s}
    record(d)
    print("\nunclean election:", d)
