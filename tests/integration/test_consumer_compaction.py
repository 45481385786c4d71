"""Issue 4: a compacted topic — offsets with gaps (between and inside record
batches, where the log cleaner dropped superseded records). The consumer
returns exactly the records the log still holds, in order, and its position
steps over the gaps to the end. The topic is tests/integration/conftest.py's
compacted_topic (shared with `fastkc consume`'s test)."""

from tests.support.consumers import assert_records_match, poll_records, read_all


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
