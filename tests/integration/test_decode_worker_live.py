"""The decode worker on a real broker: topics written by confluent-kafka's
producer (plain batches, then committed and aborted transactions, so control
batches sit between data batches) are read by fastkc with decode_threads=0
and =1, with small and large polls, under both isolation levels; every
record (all ConsumerRecord fields), in each partition's order, and the
final positions must be the same, and the records must be what the producer
wrote. (Which partitions one poll returns depends on when fetches arrive, so
polls are compared through invariants, not one by one.)"""
import time

import pytest

from fastkc import KafkaConsumer
from fastkc.structs import TopicPartition
from tests.support.kafka_tools import Message, TransactionalWriter, produce, visible

PARTITIONS = 3


def _messages(n, tag, partition):
    return [Message(key=None if i % 4 == 0 else b"k%d" % i, value=tag + b"-%d-" % i * (1 + i % 6),
                    headers=(("h", b"%d" % i),) if i % 3 == 0 else (), partition=partition)
            for i in range(n)]


def _read(bootstrap, topic, ends, decode_threads, max_records, isolation_level):
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, decode_threads=decode_threads,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             isolation_level=isolation_level, max_partition_fetch_bytes=16384)
    polls = []
    try:
        consumer.assign(tps)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = consumer.poll(timeout_ms=500, max_records=max_records)
            positions = {tp.partition: consumer.position(tp) for tp in tps}
            if got:
                polls.append(({tp.partition: [tuple(r) for r in recs] for tp, recs in got.items()}, positions))
            elif all(positions[p] >= ends[p] for p in positions):
                break
        assert consumer._fetcher.decode_ahead == bool(decode_threads)
        steps = dict(consumer._fetcher.decode_steps)
    finally:
        consumer.close()
    return polls, steps


def _per_partition(polls):
    out = {}
    for poll, _ in polls:
        for p, recs in poll.items():
            out.setdefault(p, []).extend(recs)
    return out


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_decode_threads_0_and_1_read_every_record_the_same(kafka_broker, make_topic, codec):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=PARTITIONS)
    written = []
    for p in range(PARTITIONS):
        written += produce(bootstrap, topic, _messages(1500, b"plain%d" % p, p), compression=codec,
                           config={"linger.ms": 5, "batch.size": 4096})
    with TransactionalWriter(bootstrap, compression=codec) as tx:
        for p in range(PARTITIONS):
            written += tx.write(topic, _messages(200, b"committed%d" % p, p), commit=True)
            written += tx.write(topic, _messages(150, b"aborted%d" % p, p), commit=False)
    for p in range(PARTITIONS):
        written += produce(bootstrap, topic, _messages(300, b"after%d" % p, p), compression=codec)
    ends = {p: max(r.offset for r in written if r.partition == p) + 1 for p in range(PARTITIONS)}
    for isolation_level in ("read_uncommitted", "read_committed"):
        expected_records = [r.comparable() for r in visible(written, isolation_level)]
        for max_records in (7, 500):
            plain, _ = _read(bootstrap, topic, ends, 0, max_records, isolation_level)
            threaded, steps = _read(bootstrap, topic, ends, 1, max_records, isolation_level)
            assert _per_partition(threaded) == _per_partition(plain), (isolation_level, max_records)
            assert threaded[-1][1] == plain[-1][1] == ends  # final positions
            for poll, positions in threaded:
                assert sum(len(recs) for recs in poll.values()) <= max_records
                for p, recs in poll.items():
                    assert positions[p] >= recs[-1][3] + 1
            # (topic, partition, offset, key, value, headers, timestamp, timestamp_type), as comparable() gives
            got = sorted((r[0], r[1], r[3], r[6], r[7], tuple(tuple(h) for h in r[8]), r[4], r[5])
                         for poll, _ in plain for recs in poll.values() for r in recs)
            want = sorted((t, p, o, k, v, tuple(tuple(h) for h in hs), ts, tt)
                          for t, p, o, k, v, hs, ts, tt in expected_records)
            assert got == want
            assert steps["prepared"] > 0  # the worker did take part
