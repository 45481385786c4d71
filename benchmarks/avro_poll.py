"""KafkaConsumer.poll() records/s on Avro values, four ways, one topic:
- raw bytes (no deserializer: the ceiling);
- fastkc.schema_registry.AvroDeserializer as value_deserializer: fastkc
  recognises the batch deserializer and decodes each partition's step in one
  call (fastkc/deserializers.py);
- the same deserializer behind a plain callable (`lambda v: d(v)`): called
  once per record, as before the batch path;
- fastavro's schemaless_reader per value behind a plain callable (the
  5-byte frame cut, the writer schema known: what a hand-rolled consumer does).

The values are benchmarks/avro_decode.py's ~15-field events, written by
confluent-kafka's AvroSerializer against a real Schema Registry (Apicurio,
started here unless --registry names one) to a topic on --bootstrap. Rounds
interleaved, medians printed beside the load average; a figure for the
report, asserted nowhere (each way's values are checked equal once).

    python3 benchmarks/avro_poll.py --bootstrap HOST:PORT [--registry URL] [--records N] [--rounds R]
"""
import argparse
import io
import json
import os
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # this checkout's fastkc, not an installed one

from benchmarks.avro_decode import EVENT, QUICK, event_value, print_medians  # noqa: E402

PARTITIONS = 4


def write_topic(bootstrap, registry_url, records):
    """A new topic holding `records` events (AvroSerializer's bytes, lz4); its name."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = "bench-avro-poll-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(EVENT))
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 20,
                         "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        producer.produce(topic, serializer(event_value(i), context), partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60):
        sys.exit("avro_poll: the producer did not deliver every record")
    return topic


def poll_all(bootstrap, topic, records, value_deserializer):
    """Seconds to poll() `records` records from the start, and the value of
    partition 0's first record."""
    from fastkc import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=value_deserializer,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_bytes=50 << 20, max_partition_fetch_bytes=8 << 20)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got, first = 0, None
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        while got < records and time.monotonic() < deadline:
            for tp, batch in consumer.poll(timeout_ms=1000).items():
                got += len(batch)
                if tp.partition == 0 and batch[0].offset == 0:
                    first = batch[0].value
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    if got != records:
        sys.exit("avro_poll: {0} of {1} records came".format(got, records))
    return elapsed, first


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--registry", help="a running registry's URL (else Apicurio is started here)")
    parser.add_argument("--records", type=int, default=5000 if QUICK else 200_000)
    parser.add_argument("--rounds", type=int, default=1 if QUICK else 3)
    args = parser.parse_args(argv)

    import fastavro

    from fastkc.broker import registry as apicurio
    from fastkc.schema_registry import AvroDeserializer, SchemaRegistryClient

    started = None
    url = args.registry
    if url is None:
        started = apicurio.start(tempfile.mkdtemp(prefix="avro-poll-registry-"), die_with_parent=True)
        url = started.url
    try:
        topic = write_topic(args.bootstrap, url, args.records)
        client = SchemaRegistryClient({"url": url})
        batch = AvroDeserializer(client)
        per_value = AvroDeserializer(client)
        parsed = fastavro.parse_schema(EVENT)

        def fastavro_value(data):
            return fastavro.schemaless_reader(io.BytesIO(memoryview(data)[5:]), parsed)

        ways = {
            "raw bytes (no deserializer)": None,
            "AvroDeserializer, batch path": batch,
            "AvroDeserializer, called per record": lambda data: per_value(data),
            "fastavro schemaless_reader per record": fastavro_value,
        }
        times = {name: [] for name in ways}
        firsts = {}
        for _ in range(args.rounds):
            for name, deserializer in ways.items():
                elapsed, firsts[name] = poll_all(args.bootstrap, topic, args.records, deserializer)
                times[name].append(elapsed)
        decoded = [value for name, value in firsts.items() if ways[name] is not None]
        if decoded[0] is None or any(value != decoded[0] for value in decoded):
            sys.exit("avro_poll: the ways disagree on a value")
        client.close()
    finally:
        if started is not None:
            apicurio.stop(started)
    print_medians(f"poll(): {args.records} Avro records, {PARTITIONS} partitions, lz4, {args.rounds} round(s)", times,
                  "AvroDeserializer, called per record", args.records, "records")


if __name__ == "__main__":
    main()
