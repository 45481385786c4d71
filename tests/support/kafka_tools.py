"""Write to and read from the real broker with INDEPENDENT clients.

fastkc's decoder is judged against data that fastkc did not write: records go
in through confluent-kafka's Producer (librdkafka) or Kafka's own Java
ProducerPerformance, and every helper returns exactly what was written
(topic, partition, offset, key, value, headers, timestamp, transaction
outcome) so a test can compare field for field.

Timestamp types use kafka-python's numbering (0 CreateTime, 1 LogAppendTime),
the one fastkc's ConsumerRecord carries.
"""
import re
import subprocess
import time
import uuid
from dataclasses import dataclass, replace

# The bulk-data runner lives in the package: the main job loads its sample with it too.
from fastkc_tools.broker.tools import PerfRun, producer_performance  # noqa: F401

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

CREATE_TIME = 0
LOG_APPEND_TIME = 1

# confluent-kafka's timestamp type constants → kafka-python's numbering.
_TS_TYPE_FROM_CONFLUENT = {1: CREATE_TIME, 2: LOG_APPEND_TIME}


@dataclass(frozen=True)
class Message:
    """What to write. timestamp (ms) None lets the producer stamp it;
    partition None lets the partitioner choose."""

    key: bytes = None
    value: bytes = None
    headers: tuple = ()  # ((str, bytes | None), ...), order and duplicates kept
    timestamp: int = None
    partition: int = None


@dataclass(frozen=True)
class WrittenRecord:
    """One record as the broker acknowledged it (or, for ConsumedRecord
    comparisons, as a consumer read it back)."""

    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: tuple  # ((str, bytes | None), ...)
    timestamp: int  # ms; for LogAppendTime topics the broker's append time
    timestamp_type: int  # CREATE_TIME / LOG_APPEND_TIME
    # None outside transactions, else "committed" / "aborted"
    transaction: str = None

    def comparable(self):
        """The fields a consumer sees (the transaction outcome is not on the wire)."""
        return (self.topic, self.partition, self.offset, self.key, self.value,
                self.headers, self.timestamp, self.timestamp_type)


def unique_name(prefix="fastkc"):
    return "{0}-{1}".format(re.sub(r"[^A-Za-z0-9._-]", "-", prefix)[:120], uuid.uuid4().hex[:10])


# --- topics --------------------------------------------------------------------

def create_topic(bootstrap, name, *, partitions=1, replication_factor=1, configs=None, timeout=30.0):
    """Create a topic and wait until every partition has a leader.

    Uses confluent-kafka's AdminClient (a CreateTopics request, no JVM start).
    Without confluent-kafka it falls back to Kafka's TopicCommand from the
    resolved jars, which costs a JVM start (1-2 s) per topic.
    """
    configs = {k: str(v) for k, v in (configs or {}).items()}
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError:
        _create_topic_with_topic_command(bootstrap, name, partitions, replication_factor, configs)
    else:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs)],
            operation_timeout=timeout,
        )
        futures[name].result(timeout)
    _wait_for_leaders(bootstrap, name, partitions, timeout)
    return name


def _create_topic_with_topic_command(bootstrap, name, partitions, replication_factor, configs):
    from fastkc_tools.broker import TOOL_JVM_FLAGS, find_java, resolve_kafka

    install = resolve_kafka()
    cmd = [find_java()] + TOOL_JVM_FLAGS + [
        "-cp", install.classpath, "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server", bootstrap, "--create", "--topic", name,
        "--partitions", str(partitions), "--replication-factor", str(replication_factor),
    ]
    for key, value in configs.items():
        cmd += ["--config", "{0}={1}".format(key, value)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError("TopicCommand failed: " + (proc.stdout + proc.stderr)[-2000:])


def _wait_for_leaders(bootstrap, name, partitions, timeout):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic=name, timeout=timeout)
        topic = md.topics.get(name)
        if (topic is not None and topic.error is None and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values())):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("topic {0} has no leader for every partition after {1}s".format(name, timeout))
        time.sleep(0.1)


# --- confluent-kafka producer -----------------------------------------------------

def producer_config(bootstrap, *, compression="none", **overrides):
    if compression not in CODECS:
        raise ValueError("compression must be one of {0}".format(CODECS))
    config = {
        "bootstrap.servers": bootstrap,
        "compression.type": compression,
        # Records written by one produce() burst land in few batches, so the
        # compressed batches hold many records (what a decoder must handle).
        "linger.ms": 50,
        "acks": "all",
    }
    config.update(overrides)
    return config


def _normalise_headers(headers):
    return tuple((k, v) for k, v in (headers or ()))


def _produce_batch(producer, topic, messages, transaction=None, flush_timeout=30.0):
    """Produce `messages`, flush, and return WrittenRecords in send order."""
    results = [None] * len(messages)
    errors = []

    def on_delivery(index):
        # confluent-kafka's delivery reports carry no headers, so the headers
        # recorded are the ones sent (librdkafka writes them unchanged).
        sent_headers = _normalise_headers(messages[index].headers)

        def callback(err, msg):
            if err is not None:
                errors.append((index, err))
                return
            ts_type, ts = msg.timestamp()
            results[index] = WrittenRecord(
                topic=msg.topic(),
                partition=msg.partition(),
                offset=msg.offset(),
                key=msg.key(),
                value=msg.value(),
                headers=sent_headers,
                timestamp=ts,
                timestamp_type=_TS_TYPE_FROM_CONFLUENT[ts_type],
                transaction=transaction,
            )
        return callback

    for index, message in enumerate(messages):
        kwargs = {"key": message.key, "value": message.value, "on_delivery": on_delivery(index)}
        if message.headers:
            kwargs["headers"] = list(message.headers)
        if message.timestamp is not None:
            kwargs["timestamp"] = message.timestamp
        if message.partition is not None:
            kwargs["partition"] = message.partition
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                # Local queue full: let deliveries drain, then retry this one.
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(flush_timeout)
    if remaining:
        raise TimeoutError("{0} message(s) still undelivered after {1}s".format(remaining, flush_timeout))
    if errors:
        raise RuntimeError("delivery failed: {0}".format(errors[:5]))
    return results


def produce(bootstrap, topic, messages, *, compression="none", config=None, flush_timeout=30.0):
    """Write `messages` (Message instances) with confluent-kafka's Producer and
    return the WrittenRecords, in send order, with the offsets the broker gave."""
    from confluent_kafka import Producer

    producer = Producer(producer_config(bootstrap, compression=compression, **(config or {})))
    return _produce_batch(producer, topic, list(messages), flush_timeout=flush_timeout)


class TransactionalWriter:
    """A transactional confluent-kafka Producer (one transactional.id) that
    writes whole transactions and commits or aborts each.

        with TransactionalWriter(bootstrap) as tx:
            kept = tx.write(topic, msgs, commit=True)
            dropped = tx.write(topic, msgs2, commit=False)

    Messages are flushed before the commit/abort, so aborted records too come
    back with the offsets they occupy in the log.
    """

    def __init__(self, bootstrap, *, transactional_id=None, compression="none", config=None, timeout=30.0):
        from confluent_kafka import Producer

        self.transactional_id = transactional_id or unique_name("fastkc-tx")
        self.timeout = timeout
        self.producer = Producer(producer_config(
            bootstrap, compression=compression, **{"transactional.id": self.transactional_id,
                                                   **(config or {})}))
        self.producer.init_transactions(timeout)

    def write(self, topic, messages, *, commit=True):
        self.producer.begin_transaction()
        written = _produce_batch(self.producer, topic, list(messages),
                                 transaction="committed" if commit else "aborted",
                                 flush_timeout=self.timeout)
        if commit:
            self.producer.commit_transaction(self.timeout)
        else:
            self.producer.abort_transaction(self.timeout)
        return written

    def close(self):
        self.producer.flush(self.timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- confluent-kafka consumer -------------------------------------------------------

def consume_all(bootstrap, topic, *, isolation_level="read_uncommitted", timeout=30.0):
    """Read every partition of `topic` from the beginning to its end (the
    high watermark, or the last stable offset with read_committed) and return
    WrittenRecords sorted by (partition, offset). `transaction` is left None:
    the consumer cannot see it."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": unique_name("fastkc-reader"),
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation_level,
        "auto.offset.reset": "earliest",
    })
    try:
        md = consumer.list_topics(topic, timeout=timeout)
        partitions = sorted(md.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        at_end = set()
        records = []
        deadline = time.monotonic() + timeout
        # _PARTITION_EOF fires when a partition's fetch position reaches its end,
        # control records and (read_committed) aborted records included.
        while len(at_end) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError("did not reach the end of {0} within {1}s (at end: {2})".format(
                    topic, timeout, sorted(at_end)))
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                raise RuntimeError("consumer error: {0}".format(msg.error()))
            at_end.discard(msg.partition())
            ts_type, ts = msg.timestamp()
            records.append(WrittenRecord(
                topic=msg.topic(), partition=msg.partition(), offset=msg.offset(),
                key=msg.key(), value=msg.value(), headers=_normalise_headers(msg.headers()),
                timestamp=ts, timestamp_type=_TS_TYPE_FROM_CONFLUENT[ts_type],
            ))
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def visible(written, isolation_level="read_uncommitted"):
    """What a consumer should see of `written`: everything with
    read_uncommitted; with read_committed, aborted transactions dropped.
    Sorted like consume_all()'s result, transaction outcome cleared."""
    kept = [r for r in written
            if not (isolation_level == "read_committed" and r.transaction == "aborted")]
    return sorted((replace(r, transaction=None) for r in kept), key=lambda r: (r.partition, r.offset))


# --- Kafka's own ProducerPerformance (bulk data): fastkc_tools.broker.tools ---------------

def monotonic_values(num_records):
    """The values a --payload-monotonic run writes, in offset order."""
    return [str(i).encode("ascii") for i in range(num_records)]



def stop_node(info, node_id, *, timeout=30.0):
    """Stop one node of a fixture-started broker (fastkc_tools.broker's stop_node);
    start_node starts it again on the same data dir and ports."""
    from fastkc_tools import broker

    broker.stop_node(info, node_id, timeout=timeout)


def start_node(info, node_id, *, timeout=90.0):
    from fastkc_tools import broker

    # die_with_parent: a node restarted by a test ends with the test session
    broker.start_node(info, node_id, timeout=timeout, die_with_parent=True)


def leader_of(bootstrap, topic, partition):
    """The node id leading `partition` of `topic` (confluent-kafka's AdminClient)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    return md.topics[topic].partitions[partition].leader


def coordinator_of(bootstrap, group_id, timeout=30.0):
    """The node id coordinating `group_id`, retried while the group forms."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        try:
            desc = admin.describe_consumer_groups([group_id])[group_id].result(10)
            return desc.coordinator.id
        except Exception:  # noqa: BLE001 - retried while the group forms
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
