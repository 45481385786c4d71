"""Helpers of the asyncio suite (tests/integration_aio/): run a scenario on a
fresh event loop with its consumers stopped at the end, read records with
getmany(), compare them with what an independent producer wrote.

The suite runs coroutines with asyncio.run inside ordinary pytest tests (no
pytest-asyncio): each scenario gets a loop of its own, as an application
does, and a hung scenario fails on its own timeout.
"""
import asyncio
import contextlib
import time

import pytest

from tests.support.consumers import expected_sizes

# aiokafka's defaults, except a shorter fetch wait (the suite's data is there
# already: waiting 500 ms for more only slows every empty fetch down)
SUITE_DEFAULTS = {"fetch_max_wait_ms": 100}


class ConsumerSet:
    """The consumers one scenario opens; all stopped when it ends."""

    def __init__(self, flavour, bootstrap):
        self.flavour = flavour
        self.bootstrap = bootstrap
        self.opened = []

    def new(self, *topics, **configs):
        """A consumer of the flavour under test (not started). Without a
        group_id auto-commit is off (aiokafka ignores it then anyway)."""
        configs.setdefault("bootstrap_servers", self.bootstrap)
        if configs.get("group_id") is None:
            configs.setdefault("enable_auto_commit", False)
        for key, value in SUITE_DEFAULTS.items():
            configs.setdefault(key, value)
        consumer = self.flavour.AIOKafkaConsumer(*topics, **configs)
        self.opened.append(consumer)
        return consumer

    async def started(self, *topics, **configs):
        consumer = self.new(*topics, **configs)
        await consumer.start()
        return consumer

    def tp(self, topic, partition):
        return self.flavour.TopicPartition(topic, partition)

    async def stop_all(self):
        for consumer in self.opened:
            with contextlib.suppress(Exception):
                await consumer.stop()


def run_scenario(flavour, bootstrap, scenario, timeout):
    """asyncio.run(scenario(consumers)) within `timeout` seconds; every
    consumer it opened is stopped afterwards, failed or not."""

    async def main():
        consumers = ConsumerSet(flavour, bootstrap)
        try:
            return await asyncio.wait_for(scenario(consumers), timeout)
        finally:
            await consumers.stop_all()

    return asyncio.run(main())


async def drain(consumer, count, *partitions, timeout=30.0, poll_ms=200, settle_ms=300, max_records=None):
    """getmany() until `count` records arrived, then once more for settle_ms
    (a record delivered twice shows up as a mismatch). Records come back
    grouped by partition, sorted by (topic, partition), delivery order kept;
    every batch's records are checked to belong to its key."""
    got = {}
    total = 0
    deadline = time.monotonic() + timeout
    while total < count:
        if time.monotonic() > deadline:
            pytest.fail("only {0} of {1} records within {2}s".format(total, count, timeout))
        batch = await consumer.getmany(*partitions, timeout_ms=poll_ms, max_records=max_records)
        for tp, records in batch.items():
            got.setdefault(tp, []).extend(records)
            total += len(records)
    if settle_ms:
        batch = await consumer.getmany(*partitions, timeout_ms=settle_ms, max_records=max_records)
        for tp, records in batch.items():
            got.setdefault(tp, []).extend(records)
    out = []
    for tp in sorted(got, key=lambda t: (t.topic, t.partition)):
        for record in got[tp]:
            assert (record.topic, record.partition) == (tp.topic, tp.partition), (tp, record)
        out.extend(got[tp])
    return out


def by_partition(records):
    """Records (any order) sorted by (topic, partition), each partition's
    order kept."""
    return sorted(records, key=lambda r: (r.topic, r.partition))


def assert_aio_records_match(consumed, written, *, deserialized=None):
    """`consumed` (aiokafka-shaped ConsumerRecords, sorted by partition, each
    partition in delivery order) must be exactly `written` (WrittenRecords
    sorted by partition then offset): every record once, in order, every
    field aiokafka's record has equal. `deserialized(written) -> (key, value)`
    when deserializers were configured."""
    got = [(r.topic, r.partition, r.offset) for r in consumed]
    want = [(w.topic, w.partition, w.offset) for w in written]
    assert got == want, "positions differ: first mismatch at index {0} of {1}/{2}".format(
        next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want))),
        len(got), len(want))
    for record, expect in zip(consumed, written):
        key, value = deserialized(expect) if deserialized else (expect.key, expect.value)
        assert record.key == key, record
        assert record.value == value, record
        assert [tuple(h) for h in record.headers] == [tuple(h) for h in expect.headers], record
        assert record.timestamp == expect.timestamp, record
        assert record.timestamp_type == expect.timestamp_type, record
        key_size, value_size, _ = expected_sizes(expect)
        assert (record.serialized_key_size, record.serialized_value_size) == (key_size, value_size), record
        # magic 2 has no per-record checksum; aiokafka reports None
        assert record.checksum is None, record


def sorted_written(written):
    return sorted(written, key=lambda w: (w.topic, w.partition, w.offset))
