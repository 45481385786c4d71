"""ArrowStream's idle rule without a broker: until=None with timeout_ms ends
the stream (no rows, no error) when a group never assigns anything in time.
The consumer is a stand-in holding only what the stream touches before the
first assignment."""
import time

import pytest

pa = pytest.importorskip("pyarrow")

from fastkc.arrow_stream import ArrowStream  # noqa: E402


class _NeverAssigned:
    """The engine of a subscribed consumer whose group hands out no
    partitions (the part of ConsumerEngine's API the stream uses before an
    assignment)."""

    def __init__(self):
        self.config = {"arrow_zero_copy": False, "key_deserializer": None, "value_deserializer": None}
        self.stream = None
        self.polls = 0

    def check_open(self):
        pass

    def claim_stream(self, stream):
        assert self.stream is None
        self.stream = stream

    def release_stream(self, stream):
        if self.stream is stream:
            self.stream = None

    def assignment(self):
        return []

    def partitions(self):
        return {}

    def check_can_poll(self):
        pass  # subscribed: an assignment may still come

    def round_for_assignment(self, timeout_s):
        self.polls += 1
        time.sleep(min(timeout_s, 0.01))


def _stream(engine, **options):
    def never(*args):
        raise AssertionError("nothing is assigned: no pull")

    return ArrowStream(engine, pull=never, position=never, end_offsets=never, **options)


def test_until_none_ends_when_nothing_is_assigned_in_time():
    consumer = _NeverAssigned()
    stream = _stream(consumer, until=None, timeout_ms=50)
    started = time.monotonic()
    table = stream.reader().read_all()
    assert table.num_rows == 0 and stream.error is None
    assert consumer.polls >= 1  # it did wait for the group, then gave up
    assert time.monotonic() - started < 5
    assert consumer.stream is None  # the consumer is given back


def test_until_end_without_an_assignment_is_a_timeout():
    consumer = _NeverAssigned()
    stream = _stream(consumer, until="end", timeout_ms=50)
    from fastkc.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError, match="no progress within 50 ms"):
        stream.reader().read_all()
    assert isinstance(stream.error, KafkaTimeoutError)
