"""The asyncio group driver over its real transport (AioGroupTransport's own
AioConnections) against the fake broker of tests/support/fake_broker.py: join as the
group's only member, commit / committed, leave on stop; a coordinator that
resets the connection or goes silent is looked up again, within the
configured times, and the driver goes on."""
import asyncio
import time

import pytest

from fastkc.aio.group_driver import AioGroupDriver
from fastkc.config import consumer_config
from fastkc.errors import KafkaTimeoutError
from fastkc.structs import OffsetAndMetadata, TopicPartition
from tests.support.fake_broker import FakeBroker, reset, silence
from tests.support.held_partitions import HeldPartitions


class App(HeldPartitions):
    def __init__(self):
        super().__init__()
        self.assigned = []
        self.revoked = []

    def positions(self, partitions):
        return {tp: OffsetAndMetadata(100 + tp.partition, "", -1) for tp in partitions}

    def assign_from_group(self, partitions):
        self.assigned = sorted(partitions)

    def revoke_from_group(self, partitions):
        self.revoked.extend(partitions)

    def topics_matching(self, pattern):
        return set()

    def request_metadata_for(self, topics):
        pass


def _driver(broker, **settings):
    config = dict(bootstrap_servers=broker.bootstrap, group_id="g", enable_auto_commit=False,
                  request_timeout_ms=1000, retry_backoff_ms=50, heartbeat_interval_ms=100)
    config.update(settings)
    app = App()
    return AioGroupDriver(consumer_config(config), app), app


def test_join_commit_committed_and_leave_over_real_connections():
    async def scenario(broker):
        driver, app = _driver(broker)
        await driver.start()
        driver.subscribe(topics=["t"])
        assert await driver.wait_assignment(5)
        assert app.assigned == [TopicPartition("t", 0), TopicPartition("t", 1)]
        assert app.starts == {TopicPartition("t", 0): None, TopicPartition("t", 1): None}
        await driver.commit()
        assert broker.committed[("g", "t", 0)] == 100 and broker.committed[("g", "t", 1)] == 101
        assert (await driver.committed(TopicPartition("t", 1))).offset == 101
        await asyncio.sleep(0.35)  # heartbeats go out while the application does nothing
        heartbeats = broker.count("Heartbeat")
        assert heartbeats >= 2
        await driver.stop()
        assert broker.count("LeaveGroup") == 1

    with FakeBroker(topics={"t": 2}) as broker:
        asyncio.run(asyncio.wait_for(scenario(broker), 20))
        assert broker.errors == []


def test_a_coordinator_that_resets_or_goes_silent_is_found_again():
    async def scenario(broker):
        driver, app = _driver(broker)
        await driver.start()
        driver.subscribe(topics=["t"])
        assert await driver.wait_assignment(5)
        finds = broker.count("FindCoordinator")
        broker.script("OffsetCommit", reset(), times=1)
        await driver.commit({TopicPartition("t", 0): 7})  # retried after the coordinator is found again
        assert broker.committed[("g", "t", 0)] == 7
        assert broker.count("FindCoordinator") > finds
        broker.script("OffsetFetch", silence(), times=1)
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError):  # the operation's time (request_timeout_ms) is up
            await driver.committed(TopicPartition("t", 0))
        assert 0.9 < time.monotonic() - started < 3.0
        assert (await driver.committed(TopicPartition("t", 0))).offset == 7  # the driver goes on
        await driver.stop(autocommit=False)

    with FakeBroker(topics={"t": 1}) as broker:
        asyncio.run(asyncio.wait_for(scenario(broker), 30))
        assert broker.errors == []
