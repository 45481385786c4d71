"""wakeup() ends a commit() / committed() that waits on the group
coordinator's answer (the group's own client, under its lock), as Java's
KafkaConsumer.wakeup() does, and the consumer goes on afterwards. The fake
broker finds itself as coordinator and then holds its answer to the request
under test for 3 s, so without wakeup() each call would wait that long.
The interrupted request stays in flight (as in Java, the call's outcome is
unknown to the caller): its late answer must not confuse the next call on
the same connection."""
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.structs import OffsetAndMetadata
from tests.support.fake_broker import FakeBroker, delay
from tests.support.wakeup import assert_wakeup_ends, call_in_thread

TP = TopicPartition("t", 0)
CALLS = {
    "OffsetCommit": lambda c, ms: c.commit({TP: OffsetAndMetadata(3, "", -1)}, timeout_ms=ms),
    "OffsetFetch": lambda c, ms: c.committed(TP, timeout_ms=ms),
}


@pytest.mark.parametrize("api", sorted(CALLS))
def test_wakeup_ends_a_call_waiting_on_the_coordinator(api):
    call = CALLS[api]
    with FakeBroker(topics={"t": 1}, records=5) as broker:
        broker.script(api, delay(3000), times=1)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="g-wakeup",
                                 request_timeout_ms=30000)
        try:
            thread, outcome = call_in_thread(lambda: call(consumer, 30000))
            deadline = time.monotonic() + 10
            while broker.count(api) == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert broker.count(api) == 1, outcome  # sent, its answer held back
            time.sleep(0.2)
            assert_wakeup_ends(consumer, thread, outcome)
            # the wakeup is spent and the group's client still works: the held
            # answer arrives first, then the next call's own
            if api == "OffsetCommit":
                call(consumer, 5000)
                assert consumer.committed(TP, timeout_ms=5000) == 3
            else:
                assert call(consumer, 5000) is None
        finally:
            consumer.close()
        assert not broker.errors
