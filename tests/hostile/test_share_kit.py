"""KafkaShareConsumer against the fake broker: canned share-group answers,
then hostile bytes and silence on ShareFetch — a typed error or a bounded
wait, never a hang or a silent loop."""
import time

import pytest

from fastkc import KafkaShareConsumer, errors
from tests.support.batchgen import Record, record_batch
from tests.support.fake_broker import FakeBroker, garbage, silence, truncated


class ShareFakeBroker(FakeBroker):
    """FakeBroker plus a one-member share group: every partition assigned,
    each partition's `records` records acquired once (delivery count 1),
    acknowledgements recorded in `acks` as they come."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.acks = []  # (api, epoch, topic_id, partition, batches)
        self.heartbeats = []  # (member_id, member_epoch) as they came
        self._handed = set()

    def _on_ShareGroupHeartbeat(self, header, body):
        self.heartbeats.append((body["member_id"], body["member_epoch"]))
        leaving = body["member_epoch"] == -1
        assignment = None if leaving else {"topic_partitions": [
            {"topic_id": self.topic_ids[name], "partitions": list(range(count))}
            for name, count in self.topics.items()]}
        return {"error_code": 0, "error_message": None, "member_id": body["member_id"],
                "member_epoch": -1 if leaving else 1, "heartbeat_interval_ms": 1000, "assignment": assignment}

    def _record_acks(self, api, body):
        for topic in body["topics"]:
            for part in topic["partitions"]:
                if part["acknowledgement_batches"]:
                    self.acks.append((api, body["share_session_epoch"], topic["topic_id"],
                                      part["partition_index"], part["acknowledgement_batches"]))

    def _on_ShareFetch(self, header, body):
        self._record_acks("ShareFetch", body)
        responses = []
        for name, count in self.topics.items():
            parts = []
            for partition in range(count):
                if (name, partition) in self._handed:
                    continue
                self._handed.add((name, partition))
                recs = [Record(value=b"v%d" % i, offset_delta=i, timestamp_delta=i) for i in range(self.records)]
                parts.append({"partition_index": partition, "error_code": 0, "acknowledge_error_code": 0,
                              "current_leader": {"leader_id": 1, "leader_epoch": 0},
                              "records": record_batch(recs, base_offset=0),
                              "acquired_records": [{"first_offset": 0, "last_offset": self.records - 1,
                                                    "delivery_count": 1}]})
            if parts:
                responses.append({"topic_id": self.topic_ids[name], "partitions": parts})
        if not responses:
            self._stop.wait(min(body["max_wait_ms"], 200) / 1000.0)
        return {"error_code": 0, "acquisition_lock_timeout_ms": 30000, "responses": responses}

    def _on_ShareAcknowledge(self, header, body):
        self._record_acks("ShareAcknowledge", body)
        return {"error_code": 0, "acquisition_lock_timeout_ms": 30000, "responses": [
            {"topic_id": t["topic_id"], "partitions": [{"partition_index": p["partition_index"], "error_code": 0}
                                                       for p in t["partitions"]]} for t in body["topics"]]}


def share_consumer(broker, **configs):
    configs.setdefault("request_timeout_ms", 1000)
    configs.setdefault("fetch_max_wait_ms", 100)
    return KafkaShareConsumer("t", bootstrap_servers=broker.bootstrap, group_id="g", **configs)


def poll_until(share, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = share.poll(timeout_ms=200)
        if records:
            return records
    return {}


def polls_raise_parse_error(broker, stage, action, bound=10.0):
    """Script `stage` with `action`, poll a new consumer: ProtocolParseError
    within `bound` seconds (the client's parse-failure limit, then the
    application). Returns the consumer, still to close."""
    broker.script(stage, action)
    share = share_consumer(broker, reconnect_backoff_ms=10, reconnect_backoff_max_ms=50)
    started = time.monotonic()
    with pytest.raises(errors.ProtocolParseError):
        while time.monotonic() - started < bound:
            share.poll(timeout_ms=200)
    assert time.monotonic() - started < bound
    return share


def test_the_canned_group_reads_and_acknowledges_on_close():
    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        share = share_consumer(broker)
        records = poll_until(share)
        assert [r.value for r in records[next(iter(records))]] == [b"v0", b"v1", b"v2"]
        share.close(timeout_ms=3000)
        assert ("ShareAcknowledge", -1) in [(api, epoch) for api, epoch, *_ in broker.acks]
        [(_, _, _, partition, batches)] = [a for a in broker.acks if a[1] == -1]
        assert partition == 0 and batches == [{"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}]
        assert broker.errors == []


@pytest.mark.parametrize("action", [garbage(), truncated()], ids=["garbage", "truncated"])
def test_a_broker_answering_share_fetch_with_garbage_gives_a_typed_error_in_bounded_time(action):
    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        share = polls_raise_parse_error(broker, "ShareFetch", action)
        assert broker.count("ShareFetch") >= 3  # the client's parse-failure policy: a bounded number of tries
        share.close(timeout_ms=1000)
        share.close(timeout_ms=1000)


def test_a_silent_broker_costs_bounded_waits():
    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        # requests time out after 3 s: commit_sync's own 500 ms bound is what ends its wait
        share = share_consumer(broker, request_timeout_ms=3000)
        assert poll_until(share)
        broker.script("ShareFetch", silence())
        broker.script("ShareAcknowledge", silence())
        for _ in range(3):
            started = time.monotonic()
            assert share.poll(timeout_ms=300) == {}
            assert time.monotonic() - started < 1.5
        started = time.monotonic()
        results = share.commit_sync(timeout_ms=500)
        assert time.monotonic() - started < 2.0
        assert results and all(isinstance(e, errors.KafkaTimeoutError) for e in results.values())
        started = time.monotonic()
        share.close(timeout_ms=1500)
        assert time.monotonic() - started < 3.0


def test_wakeup_interrupts_a_waiting_poll_once():
    import threading

    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        share = share_consumer(broker)
        assert poll_until(share)
        timer = threading.Timer(0.3, share.wakeup)
        timer.start()
        started = time.monotonic()
        with pytest.raises(errors.WakeupException):
            share.poll(timeout_ms=5000)
        assert time.monotonic() - started < 2.0
        assert share.poll(timeout_ms=100) == {}  # once
        timer.join()
        share.close(timeout_ms=1000)


def test_unsubscribe_accepts_what_was_delivered_and_leaves():
    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        share = share_consumer(broker)
        assert poll_until(share)
        share.unsubscribe()
        assert share.subscription() == set() and share.assignment() == set()
        assert broker.heartbeats[0][1] == 0 and broker.heartbeats[-1][1] == -1  # joined with 0, left with -1
        assert len({member for member, _ in broker.heartbeats}) == 1  # one client-made id throughout
        assert [(api, batches) for api, _, _, _, batches in broker.acks] == [
            ("ShareAcknowledge", [{"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}])]
        with pytest.raises(errors.IllegalStateError, match="not subscribed"):
            share.poll()
        share.close(timeout_ms=1000)


def test_a_coordinator_answering_heartbeats_with_garbage_gives_a_typed_error_in_bounded_time():
    with ShareFakeBroker(topics={"t": 1}, records=3) as broker:
        share = polls_raise_parse_error(broker, "ShareGroupHeartbeat", garbage())
        assert broker.count("ShareFetch") == 0  # never a member: nothing fetched
        share.close(timeout_ms=1000)
