"""The asyncio group driver (fastkc.aio.group_driver) on the real broker,
with no consumer class: two drivers in one event loop over their own
connections. Join; the group rebalances when the second joins (revoked
before assigned, both listeners awaited); commit / committed; a leave on
stop hands the whole topic to the other at once (well before the session
timeout); the same with KIP-848's consumer protocol."""
import asyncio
import uuid

import pytest

from fastkc.aio.abc import ConsumerRebalanceListener
from fastkc.aio.group_driver import AioGroupDriver
from fastkc.config import consumer_config
from fastkc.structs import OffsetAndMetadata, TopicPartition
from tests.support.held_partitions import HeldPartitions

PARTITIONS = 4
# long enough that only a LeaveGroup (not the session timeout) can move partitions in time
SESSION_TIMEOUT_MS = 45000


class App(HeldPartitions):
    def __init__(self):
        super().__init__()
        self.assigned = set()

    def positions(self, partitions):
        return {tp: OffsetAndMetadata(10 + tp.partition, "", -1) for tp in partitions}

    def assign_from_group(self, partitions):
        self.assigned = set(partitions)

    def revoke_from_group(self, partitions):
        self.assigned -= set(partitions)

    def topics_matching(self, pattern):
        return set()

    def request_metadata_for(self, topics):
        pass


class Listener(ConsumerRebalanceListener):
    def __init__(self, log, name):
        self.log, self.name = log, name

    async def on_partitions_revoked(self, revoked):
        await asyncio.sleep(0.01)
        self.log.append((self.name, "revoked", len(revoked)))

    async def on_partitions_assigned(self, assigned):
        await asyncio.sleep(0.01)
        self.log.append((self.name, "assigned", len(assigned)))


def _driver(bootstrap, group, protocol):
    config = dict(bootstrap_servers=bootstrap, group_id=group, group_protocol=protocol, enable_auto_commit=False,
                  heartbeat_interval_ms=500, request_timeout_ms=20000)
    if protocol == "classic":
        config["session_timeout_ms"] = SESSION_TIMEOUT_MS
    app = App()
    return AioGroupDriver(consumer_config(config), app), app


async def _poll_until(drivers, predicate, timeout):
    """Both applications poll (as getmany would) until predicate() holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "not reached within {0} s".format(timeout)
        for driver in drivers:
            await driver.on_app_poll()
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_drivers_rebalance_commit_and_leave(make_topic, kafka_broker, protocol):
    topic = make_topic(partitions=PARTITIONS)
    group = "aio-group-{0}".format(uuid.uuid4().hex[:8])
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}

    async def scenario():
        log = []
        first, app1 = _driver(kafka_broker.bootstrap_servers, group, protocol)
        second, app2 = _driver(kafka_broker.bootstrap_servers, group, protocol)
        await first.start()
        first.subscribe(topics=[topic], listener=Listener(log, "first"))
        assert await first.wait_assignment(30)
        await _poll_until([first], lambda: first.assignment() == everything, 30)
        assert app1.assigned == everything

        await first.commit()
        tp = TopicPartition(topic, 2)
        assert (await first.committed(tp)).offset == 12

        await second.start()
        second.subscribe(topics=[topic], listener=Listener(log, "second"))
        await _poll_until([first, second], lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2
                          and not first.assignment() & second.assignment(), 60)
        first_events = [entry for entry in log if entry[0] == "first"]
        if protocol == "classic":  # eager (range): everything revoked before the new assignment
            assert first_events[1:] == [("first", "revoked", 4), ("first", "assigned", 2)]
        else:  # KIP-848: two partitions move, revoked before assigned
            assert first_events[1:3] == [("first", "revoked", 2), ("first", "assigned", 2)]
        assert (await second.committed(tp)).offset == 12  # committed offsets are the group's

        loop = asyncio.get_running_loop()
        await first.stop()
        left_at = loop.time()
        await _poll_until([second], lambda: second.assignment() == everything, 30)
        # a LeaveGroup / epoch -1 moved them: no session timeout was waited for
        assert loop.time() - left_at < SESSION_TIMEOUT_MS / 1000.0 / 2
        assert app2.assigned == everything
        await second.stop()

    asyncio.run(asyncio.wait_for(scenario(), 150))
