"""ArrowStream's idle rule without a broker: until=None with timeout_ms ends
the stream (no rows, no error) when a group never assigns anything in time.
The consumer is a stand-in holding only what the stream touches before the
first assignment."""
import time

import pytest

pa = pytest.importorskip("pyarrow")

from fastkc.arrow_stream import ArrowStream  # noqa: E402


class _Client:
    def raise_fatal(self):
        pass


class _Fetcher:
    states = {}  # nothing assigned: no partition state


class _NeverAssigned:
    """A subscribed consumer whose group hands out no partitions."""

    def __init__(self):
        self.config = {"arrow_zero_copy": False}
        self._assignment = set()
        self._subscribed_topics = {"t"}
        self._coordinator = None
        self._client = _Client()
        self._fetcher = _Fetcher()
        self._arrow_stream = None
        self.polls = 0

    def _check_open(self):
        pass

    def _maybe_raise_wakeup(self):
        pass

    def _poll_once(self, timeout_s):
        self.polls += 1
        time.sleep(min(timeout_s, 0.01))


def test_until_none_ends_when_nothing_is_assigned_in_time():
    consumer = _NeverAssigned()
    stream = ArrowStream(consumer, until=None, timeout_ms=50)
    started = time.monotonic()
    table = stream.reader().read_all()
    assert table.num_rows == 0 and stream.error is None
    assert consumer.polls >= 1  # it did wait for the group, then gave up
    assert time.monotonic() - started < 5
    assert consumer._arrow_stream is None  # the consumer is given back


def test_until_end_without_an_assignment_is_a_timeout():
    consumer = _NeverAssigned()
    stream = ArrowStream(consumer, until="end", timeout_ms=50)
    from fastkc.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError, match="no progress within 50 ms"):
        stream.reader().read_all()
    assert isinstance(stream.error, KafkaTimeoutError)
