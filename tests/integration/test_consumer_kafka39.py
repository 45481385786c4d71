"""Issue 4 against the Kafka 3.9 line (older protocol versions: Fetch and
ListOffsets below 4.x's floor are still served, magic 2 batches only from
our producers): a subset of the suite — record contents with several codecs,
seek / offsets APIs, read_committed with an aborted transaction."""
import time

import pytest

from tests.support.consumers import assert_records_match, mixed_messages, poll_records, read_all
from tests.support.kafka_tools import TransactionalWriter, create_topic, produce, unique_name, visible

# This module's fixtures start brokers of their own: `-m "not broker"` skips it
# like the tests on the session broker.
pytestmark = pytest.mark.broker

PARTITIONS = 2


@pytest.fixture
def kafka39(kafka39_broker):
    return kafka39_broker


@pytest.fixture
def consumer39(consumer_factory, kafka39):
    def make(**configs):
        return consumer_factory(bootstrap_servers=kafka39.bootstrap_servers, **configs)
    return make


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gzip", "snappy"])
def test_records_of_each_codec_on_kafka_3_9(flavour, consumer39, kafka39, codec):
    bootstrap = kafka39.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer39-" + codec), partitions=PARTITIONS)
    base = int(time.time() * 1000) - 60_000
    written = visible(produce(bootstrap, topic, mixed_messages(90, PARTITIONS, base_timestamp=base, tag=codec),
                              compression=codec))
    consumer = consumer39()
    tps = [flavour.TopicPartition(topic, p) for p in range(PARTITIONS)]
    assert_records_match(read_all(consumer, tps, len(written)), written)


def test_offsets_and_seek_on_kafka_3_9(flavour, consumer39, kafka39):
    bootstrap = kafka39.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer39-offsets"), partitions=1)
    base = int(time.time() * 1000) - 60_000
    produce(bootstrap, topic, mixed_messages(30, 1, base_timestamp=base))
    tp = flavour.TopicPartition(topic, 0)
    consumer = consumer39()
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 30}
    found = consumer.offsets_for_times({tp: base + 12})
    assert (found[tp].offset, found[tp].timestamp) == (12, base + 12)
    assert consumer.offsets_for_times({tp: base + 1000}) == {tp: None}
    consumer.assign([tp])
    consumer.seek(tp, 25)
    assert [r.offset for r in poll_records(consumer, 5)] == [25, 26, 27, 28, 29]
    assert consumer.position(tp) == 30
    assert consumer.highwater(tp) == 30


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
def test_transactions_on_kafka_3_9(flavour, consumer39, kafka39, isolation_level):
    bootstrap = kafka39.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("consumer39-tx"), partitions=1)
    with TransactionalWriter(bootstrap) as tx:
        written = tx.write(topic, mixed_messages(10, 1, tag="c-"), commit=True)
        written += tx.write(topic, mixed_messages(10, 1, tag="a-"), commit=False)
        written += tx.write(topic, mixed_messages(5, 1, tag="c2-"), commit=True)
    expected = visible(written, isolation_level)
    tp = flavour.TopicPartition(topic, 0)
    consumer = consumer39(isolation_level=isolation_level)
    assert_records_match(read_all(consumer, [tp], len(expected), settle_ms=1000), expected)
    # Three control batches: the position ends past the last commit marker.
    assert consumer.position(tp) == max(w.offset for w in written) + 2
