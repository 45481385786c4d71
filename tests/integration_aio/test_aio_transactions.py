"""Transactions written by confluent-kafka's transactional producer, read
with isolation_level read_committed (aborted records skipped, reads stop at
the last stable offset) and read_uncommitted (everything)."""
from tests.support.aio_tools import assert_aio_records_match, drain, sorted_written
from tests.support.kafka_tools import Message, TransactionalWriter, _produce_batch, visible


def _messages(tag, count):
    return [Message(key=b"%s-%d" % (tag, i), value=b"value-%s-%d" % (tag, i), headers=(("tx", tag),))
            for i in range(count)]


def test_aborted_records_are_skipped_under_read_committed(aio, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    with TransactionalWriter(bootstrap) as writer:
        written = (writer.write(topic, _messages(b"a", 5), commit=True)
                   + writer.write(topic, _messages(b"b", 5), commit=False)
                   + writer.write(topic, _messages(b"c", 5), commit=True))

    async def scenario(consumers):
        tp = consumers.tp(topic, 0)
        committed_reader = await consumers.started(auto_offset_reset="earliest", isolation_level="read_committed")
        committed_reader.assign([tp])
        committed = await drain(committed_reader, 10, settle_ms=1000)
        uncommitted_reader = await consumers.started(auto_offset_reset="earliest")
        uncommitted_reader.assign([tp])
        uncommitted = await drain(uncommitted_reader, 15, settle_ms=1000)
        end = (await committed_reader.end_offsets([tp]))[tp]
        return (committed, uncommitted, committed_reader.highwater(tp), committed_reader.last_stable_offset(tp),
                await committed_reader.position(tp), end)

    committed, uncommitted, highwater, lso, position, end = aio(scenario)
    assert_aio_records_match(committed, visible(written, "read_committed"))
    assert_aio_records_match(uncommitted, visible(written))
    # three transactions, three markers: 18 offsets, none open
    assert (highwater, lso, position, end) == (18, 18, 18, 18)


def test_an_open_transaction_stops_read_committed_at_the_lso(aio, bootstrap, make_topic):
    topic = make_topic(partitions=1)
    writer = TransactionalWriter(bootstrap)
    try:
        before = writer.write(topic, _messages(b"before", 4), commit=True)  # offsets 0-3, marker 4
        writer.producer.begin_transaction()
        pending = _produce_batch(writer.producer, topic, _messages(b"open", 3), transaction="committed")
        first_open = min(w.offset for w in pending)

        async def scenario(consumers):
            tp = consumers.tp(topic, 0)
            consumer = await consumers.started(auto_offset_reset="earliest", isolation_level="read_committed")
            consumer.assign([tp])
            stable = await drain(consumer, 4, settle_ms=1500)
            state = (consumer.last_stable_offset(tp), consumer.highwater(tp), await consumer.position(tp),
                     (await consumer.end_offsets([tp]))[tp])
            await consumer.seek_to_end(tp)
            at_end = await consumer.position(tp)
            await consumer.seek_to_beginning(tp)
            writer.producer.commit_transaction(30)
            everything = await drain(consumer, 7, settle_ms=500)
            return stable, state, at_end, everything

        stable, state, at_end, everything = aio(scenario)
    finally:
        writer.close()
    assert first_open == 5
    assert_aio_records_match(stable, sorted_written(before))
    lso, highwater, position, end = state
    assert (lso, highwater, position, end) == (first_open, first_open + 3, first_open, first_open)
    assert at_end == first_open  # seek_to_end under read_committed goes to the LSO
    assert_aio_records_match(everything, sorted_written(before + pending))
