"""Issue 4: a compacted topic — offsets with gaps (between and inside record
batches, where the log cleaner dropped superseded records). The consumer
returns exactly the records the log still holds, in order, and its position
steps over the gaps to the end."""
import time

import pytest

from tests.support.consumers import assert_records_match, poll_records, read_all
from tests.support.kafka_tools import Message, consume_all, create_topic, produce, unique_name

KEYS = 40
ROUNDS = 4


@pytest.fixture(scope="module")
def compacted_topic(kafka_broker):
    """(topic, records the log holds after compaction, log end offset).

    Round 0 writes every key; later rounds rewrite only the even keys, so the
    odd keys' first records survive between removed ones (a gap at every
    other offset). segment.ms=100 rolls a segment per produce burst; unique
    "roll-N" keys then make the cleaner's job finite: once each key holds
    only its last record, nothing more can be removed and the log is stable.
    The wait is bounded by the broker's cleaner backoff (15 s by default).
    """
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer-compacted"), partitions=1, configs={
        "cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.001,
        "min.compaction.lag.ms": 0})
    last_value = {}
    for round_number in range(ROUNDS):
        keys = range(KEYS) if round_number == 0 else range(0, KEYS, 2)
        messages = [Message(key=b"key-%d" % k, value=b"round-%d-key-%d" % (round_number, k), partition=0)
                    for k in keys]
        for message in messages:
            last_value[message.key] = message.value
        produce(bootstrap, topic, messages, compression="lz4")
        time.sleep(0.15)  # past segment.ms: the next write starts a new segment
    deadline = time.monotonic() + 90
    roll = 0
    while True:
        roll += 1
        produce(bootstrap, topic, [Message(key=b"roll-%d" % roll, value=b"r", partition=0)])
        held = consume_all(bootstrap, topic)
        data = {r.key: r.value for r in held if not r.key.startswith(b"roll-")}
        if data == last_value and len(held) == len(last_value) + roll:
            break
        assert time.monotonic() < deadline, "the log cleaner did not compact {0} within 90s".format(topic)
        time.sleep(1.0)
    return topic, held, held[-1].offset + 1


def test_compacted_topic_gaps(flavour, open_consumer, compacted_topic):
    topic, held, log_end = compacted_topic
    offsets = [r.offset for r in held]
    # The fixture really produced gaps: fewer records than offsets.
    assert len(offsets) < log_end and offsets[0] >= 0
    tp = flavour.TopicPartition(topic, 0)
    consumer = open_consumer()
    consumed = read_all(consumer, [tp], len(held), settle_ms=700)
    assert_records_match(consumed, held)
    assert consumer.position(tp) == log_end


def test_seek_into_a_gap_starts_at_the_next_record(flavour, open_consumer, compacted_topic):
    topic, held, log_end = compacted_topic
    offsets = [r.offset for r in held]
    # A removed offset with a held record after it.
    gap = next(o + 1 for o, nxt in zip(offsets, offsets[1:]) if nxt > o + 1)
    expected = [r for r in held if r.offset > gap]
    tp = flavour.TopicPartition(topic, 0)
    consumer = open_consumer()
    consumer.assign([tp])
    consumer.seek(tp, gap)
    assert_records_match(poll_records(consumer, len(expected), settle_ms=700), expected)
    assert consumer.position(tp) == log_end
