"""Schema Registry values (Avro, Protobuf, JSON Schema), consumed side by side
on one topic (issue 24's speed targets), every way at steady state (first
record to last; the time to the first record apart):
- confluent-kafka's Consumer + its deserializer of the format per message
  (the reference; fetch.queue.backoff.ms lowered as in fastkc_tools.bench's "tuned"
  row);
- fastkc poll(), raw bytes (the records ceiling);
- fastkc poll() + fastkc's deserializer of the format: one batch call per
  partition's step (fastkc/deserializers.py);
- fastkc poll() + the format's usual Python decoder per value (fastavro's
  schemaless_reader, the protobuf runtime's FromString, json.loads; the frame
  cut, the schema known: what a hand-rolled consumer does);
- fastkc poll_arrow(), raw bytes (the Arrow ceiling), ARROW_TAKE records a take;
- fastkc poll_arrow() + fastkc's deserializer: typed Arrow columns (where the
  format has them).

Equal work: inside the timed window every way touches every record's key
and value: the decoded ways sum each value's `sequence` (a dict's item, a
message's attribute, or the Arrow column's field summed in C), the raw ways
sum the value lengths; the sums are checked after the window.

The values are benchmarks/registry_events.py's ~15-field page events,
written by confluent-kafka's serializer of the format against a real Schema
Registry (Apicurio, started here unless --registry names one), lz4, 8
partitions. Rounds interleaved (the order rotates), medians and spread
printed beside the load average; a figure for the report, asserted nowhere.

    python3 benchmarks/registry_poll.py --format avro|protobuf|json --bootstrap HOST:PORT [--registry URL]
        [--records N] [--rounds R]
"""
import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # this checkout's fastkc, not an installed one

from benchmarks.avro_decode import EVENT, QUICK, event_value  # noqa: E402
from fastkc_tools.bench.common import Clock  # noqa: E402

PARTITIONS = 8
TIMEOUT_S = 600
# records per poll_arrow() take (raw and decoded alike): uncapped, a take is
# everything buffered, and a run of a few hundred MB is one take with no
# steady state to measure
ARROW_TAKE = 20_000
REFERENCE = "confluent-kafka + its deserializer"


@dataclass
class Format:
    """What a format's ways need: confluent-kafka's serializer and
    deserializer (on its own registry client), the i-th value, the usual
    per-value decoder (given the frame's length), fastkc's deserializers,
    and how a decoded value's `sequence` is read."""

    name: str
    serializer: Callable[[Any], Any]            # confluent registry client -> serializer
    value: Callable[[int], Any]
    confluent_deserializer: Callable[[Any], Any]  # confluent registry client -> deserializer
    per_value: Callable[[], Callable[[bytes], Any]]
    sequence: Callable[[Any], int]              # of confluent's and the per-value decoder's values
    # way name -> (fastkc registry client -> deserializer, its values' sequence, has Arrow columns)
    ours: dict[str, tuple[Callable[[Any], Any], Callable[[Any], int], bool]]


def _item(value):
    return value["sequence"]


def _attribute(value):
    return value.sequence


def _implicit_item(value):
    # MessageToDict's shape: a proto3 scalar at its default (sequence 0) is absent
    return value.get("sequence", 0)


def _avro_format():
    from confluent_kafka.schema_registry.avro import AvroDeserializer as TheirAvro
    from confluent_kafka.schema_registry.avro import AvroSerializer

    from fastkc.schema_registry import AvroDeserializer

    def per_value():
        import fastavro

        parsed = fastavro.parse_schema(EVENT)
        return lambda data: fastavro.schemaless_reader(io.BytesIO(memoryview(data)[5:]), parsed)

    return Format("avro", lambda client: AvroSerializer(client, json.dumps(EVENT)), event_value,
                  lambda client: TheirAvro(client), per_value, _item,
                  {"AvroDeserializer": (lambda client: AvroDeserializer(client), _item, True)})


def _protobuf_format():
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as TheirProtobuf
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    from benchmarks.registry_events import PageEvent, protobuf_event
    from fastkc.schema_registry import ProtobufDeserializer

    conf = {"use.deprecated.format": False}

    def per_value():
        parse = PageEvent.FromString
        # magic, id, then the message indexes [1] (count 1, index 1: PageEvent is the file's second message)
        return lambda data: parse(memoryview(data)[7:])

    return Format("protobuf", lambda client: ProtobufSerializer(PageEvent, client, conf), protobuf_event,
                  lambda client: TheirProtobuf(PageEvent, conf), per_value, _attribute,
                  {"ProtobufDeserializer(PageEvent)": (lambda client: ProtobufDeserializer(PageEvent, conf, client),
                                                       _attribute, True),
                   "ProtobufDeserializer(None), dicts": (lambda client: ProtobufDeserializer(None, conf, client),
                                                         _implicit_item, False)})


def _json_format():
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as TheirJson
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    from benchmarks.registry_events import JSON_SCHEMA, json_event
    from fastkc.schema_registry import JSONDeserializer

    text = json.dumps(JSON_SCHEMA)

    def per_value():
        return lambda data: json.loads(data[5:])

    return Format("json", lambda client: JSONSerializer(text, client), json_event, lambda client: TheirJson(text),
                  per_value, _item,
                  {"JSONDeserializer": (lambda client: JSONDeserializer(text), _item, True),
                   "JSONDeserializer, validate off": (lambda client: JSONDeserializer(text, conf={"validate": False}),
                                                      _item, True)})


FORMATS = {"avro": _avro_format, "protobuf": _protobuf_format, "json": _json_format}


def write_topic(bootstrap, registry_url, records, fmt, topic=None):
    """A new topic (`topic`, else a fresh name) holding `records` events (the
    format's serializer's bytes, lz4); its name."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = topic or "bench-{0}-poll-{1}".format(fmt.name, uuid.uuid4().hex[:10])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    serializer = fmt.serializer(SchemaRegistryClient({"url": registry_url}))
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 20,
                         "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        producer.produce(topic, serializer(fmt.value(i), context), partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60):
        sys.exit("registry_poll: the producer did not deliver every record")
    return topic


def _fastkc_consumer(bootstrap, topic, value_deserializer):
    from fastkc import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, value_deserializer=value_deserializer,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_bytes=50 << 20, max_partition_fetch_bytes=8 << 20)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    return consumer


def _timed_take(bootstrap, topic, records, value_deserializer, take):
    """Takes until `records` came, each `take(consumer)` returning (records,
    their checksum) with every key and value touched: (clock, records, checksum)."""
    consumer = _fastkc_consumer(bootstrap, topic, value_deserializer)
    clock, got, checksum = Clock(TIMEOUT_S), 0, 0
    try:
        clock.start()
        while got < records:
            clock.check_deadline(got, records)
            n, touched = take(consumer)
            if n:
                got += n
                checksum += touched
                clock.saw_records(n)
    finally:
        consumer.close()
    return clock, got, checksum


def fastkc_poll(bootstrap, topic, records, value_deserializer, sequence):
    """poll() until `records` came; `sequence` reads a decoded value's
    sequence (None: the values are raw bytes)."""
    def take(consumer):
        n = touched = 0
        for batch in consumer.poll(timeout_ms=1000).values():
            for record in batch:
                record.key  # noqa: B018  (touched: no key on this topic)
                touched += sequence(record.value) if sequence else len(record.value)
            n += len(batch)
        return n, touched

    return _timed_take(bootstrap, topic, records, value_deserializer, take)


def fastkc_poll_arrow(bootstrap, topic, records, value_deserializer, decoded):
    """poll_arrow() until `records` came; `decoded`: the value column is typed."""
    import pyarrow.compute as pc

    def take(consumer):
        batch = consumer.poll_arrow(timeout_ms=1000, max_records=ARROW_TAKE)
        if not batch.num_rows:
            return 0, 0
        values = batch.column("value")
        pc.sum(pc.binary_length(batch.column("key")))  # touched: no key on this topic
        touched = pc.sum(values.field("sequence") if decoded else pc.binary_length(values)).as_py()
        return batch.num_rows, touched or 0

    return _timed_take(bootstrap, topic, records, value_deserializer, take)


def confluent_way(bootstrap, topic, records, registry_url, fmt):
    """confluent-kafka's Consumer + the format's deserializer per message: (clock, records, checksum)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserializer = fmt.confluent_deserializer(SchemaRegistryClient({"url": registry_url}))
    sequence = fmt.sequence
    context = SerializationContext(topic, MessageField.VALUE)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-sr-" + uuid.uuid4().hex[:6],
                         "enable.auto.commit": False, "check.crcs": True, "isolation.level": "read_uncommitted",
                         "fetch.queue.backoff.ms": 10})
    clock, got, checksum = Clock(TIMEOUT_S), 0, 0
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        clock.start()
        while got < records:
            clock.check_deadline(got, records)
            messages = consumer.consume(num_messages=500, timeout=1.0)
            for message in messages:
                if message.error() is not None:
                    raise KafkaException(message.error())
                message.key()
                checksum += sequence(deserializer(message.value(), context))
            if messages:
                got += len(messages)
                clock.saw_records(len(messages))
    finally:
        consumer.close()
    return clock, got, checksum


def print_figures(title, clocks, records):
    """Per way: the median steady rate, its spread (min–max), its ratio to the
    reference's, and the median time to the first record."""
    print(f"{title}, load {os.getloadavg()[0]:.2f}{' (QUICK)' if QUICK else ''}")

    def rate(clock):
        steady = clock.steady_seconds
        return (records - clock.first_delivery_records) / steady if steady > 0 else float("nan")

    base = statistics.median(rate(c) for c in clocks[REFERENCE])
    print(f"  {'way':48s} {'M rec/s':>8s} {'spread':>15s} {'x ref':>7s} {'first rec':>10s}")
    for name, runs in clocks.items():
        rates = [rate(c) for c in runs]
        first = statistics.median(c.time_to_first_record or 0.0 for c in runs)
        print(f"  {name:48s} {statistics.median(rates) / 1e6:8.3f} {min(rates) / 1e6:7.3f}–{max(rates) / 1e6:<7.3f}"
              f" {statistics.median(rates) / base:7.1f} {first * 1000:8.0f}ms")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", choices=sorted(FORMATS), default="avro")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--registry", help="a running registry's URL (else Apicurio is started here)")
    parser.add_argument("--records", type=int, default=5000 if QUICK else 2_000_000)
    parser.add_argument("--rounds", type=int, default=1 if QUICK else 3)
    args = parser.parse_args(argv)

    from fastkc.schema_registry import SchemaRegistryClient
    from fastkc_tools.broker import registry as apicurio

    fmt = FORMATS[args.format]()
    started = None
    url = args.registry
    if url is None:
        started = apicurio.start(tempfile.mkdtemp(prefix="registry-poll-"), die_with_parent=True)
        url = started.url
    try:
        topic = write_topic(args.bootstrap, url, args.records, fmt)
        client = SchemaRegistryClient({"url": url})
        n, bootstrap = args.records, args.bootstrap
        ways = {
            REFERENCE: lambda: confluent_way(bootstrap, topic, n, url, fmt),
            "fastkc poll(), raw bytes": lambda: fastkc_poll(bootstrap, topic, n, None, None),
            "fastkc poll() + per-value " + fmt.name: lambda: fastkc_poll(bootstrap, topic, n, fmt.per_value(),
                                                                          fmt.sequence),
        }
        made = {name: (make(client), sequence, arrow) for name, (make, sequence, arrow) in fmt.ours.items()}
        for name, (ours, sequence, _) in made.items():
            ways["fastkc poll() + " + name] = lambda ours=ours, sequence=sequence: fastkc_poll(
                bootstrap, topic, n, ours, sequence)
        if any(arrow for _, _, arrow in made.values()):
            ways["fastkc poll_arrow(), raw bytes"] = lambda: fastkc_poll_arrow(bootstrap, topic, n, None, False)
        for name, (ours, _, arrow) in made.items():
            if arrow:
                ways["fastkc poll_arrow() + " + name] = lambda ours=ours: fastkc_poll_arrow(bootstrap, topic, n,
                                                                                           ours, True)
        clocks = {name: [] for name in ways}
        sums = {}
        names = list(ways)
        for round_number in range(args.rounds):
            order = names[round_number % len(names):] + names[:round_number % len(names)]  # rotated
            for name in order:
                clock, got, checksum = ways[name]()
                if got != n:
                    sys.exit("registry_poll: {0}: {1} of {2} records".format(name, got, n))
                clocks[name].append(clock)
                sums.setdefault("raw" if "raw" in name else "decoded", set()).add(checksum)
        if sums["decoded"] != {n * (n - 1) // 2} or len(sums["raw"]) != 1:
            sys.exit("registry_poll: the ways disagree on what they read: {0}".format(sums))
        client.close()
    finally:
        if started is not None:
            apicurio.stop(started)
    print_figures(f"{n:,} {fmt.name} records, {PARTITIONS} partitions, lz4, {args.rounds} round(s)", clocks, n)


if __name__ == "__main__":
    main()
