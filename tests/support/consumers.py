"""The consumer classes the real-broker suite runs against, one test per class.

The issue-4 suite is written once against kafka-python 3.x's KafkaConsumer API
and run over two implementations:

- "kafka-python": kafka.KafkaConsumer, the reference. A test that fails here
  is a wrong test (or a kafka-python deviation from the Java client, which the
  test marks xfail(strict=True) for this flavour only).
- "fastkc": fastkc.KafkaConsumer.

A test receives a ConsumerFlavour and takes every name it needs from it (the
consumer class, the error module, TopicPartition), so an `except` clause
catches the error class of the implementation under test, never the other's.
"""
import time
import types
from dataclasses import dataclass

import pytest

KAFKA_PYTHON = "kafka-python"
FASTKC = "fastkc"
FLAVOUR_NAMES = (KAFKA_PYTHON, FASTKC)


@dataclass(frozen=True)
class ConsumerFlavour:
    name: str
    KafkaConsumer: type
    errors: types.ModuleType
    TopicPartition: type
    OffsetAndTimestamp: type

    @property
    def is_reference(self):
        return self.name == KAFKA_PYTHON

    def error(self, name):
        """The error class called `name` in this flavour's errors module.
        A flavour lacking it fails the test that needs it (a missing error
        class is a real incompatibility, not a reason to skip)."""
        try:
            return getattr(self.errors, name)
        except AttributeError:
            pytest.fail("{0}.errors has no {1} (kafka-python's error name)".format(
                self.errors.__name__.split(".")[0], name))

    def __str__(self):
        return self.name


def _kafka_python():
    import kafka
    import kafka.errors
    import kafka.structs

    return ConsumerFlavour(
        name=KAFKA_PYTHON,
        KafkaConsumer=kafka.KafkaConsumer,
        errors=kafka.errors,
        TopicPartition=kafka.structs.TopicPartition,
        OffsetAndTimestamp=kafka.structs.OffsetAndTimestamp,
    )


def _fastkc():
    import fastkc
    import fastkc.errors
    import fastkc.structs

    return ConsumerFlavour(
        name=FASTKC,
        KafkaConsumer=fastkc.KafkaConsumer,
        errors=fastkc.errors,
        TopicPartition=fastkc.structs.TopicPartition,
        OffsetAndTimestamp=fastkc.structs.OffsetAndTimestamp,
    )


def load_flavour(name):
    """The ConsumerFlavour called `name`."""
    if name == KAFKA_PYTHON:
        return _kafka_python()
    if name == FASTKC:
        return _fastkc()
    raise ValueError("unknown consumer flavour {0!r}; expected one of {1}".format(name, FLAVOUR_NAMES))


def expected_sizes(written):
    """serialized_key_size, serialized_value_size, serialized_header_size as
    kafka-python defines them: -1 for a null key/value; header size the sum
    of UTF-8 key lengths and value lengths (a null value counts 0), -1 with
    no headers."""
    key_size = len(written.key) if written.key is not None else -1
    value_size = len(written.value) if written.value is not None else -1
    if written.headers:
        header_size = sum(len(k.encode("utf-8")) + (len(v) if v is not None else 0)
                          for k, v in written.headers)
    else:
        header_size = -1
    return key_size, value_size, header_size


# --- shared data and checks -------------------------------------------------------

def mixed_messages(count, partitions, *, base_timestamp=None, tag=""):
    """`count` messages spread round-robin over `partitions` that exercise
    every record field: null keys (every 7th), null values (every 11th),
    empty (not null) keys and values, no headers / headers with a null value
    / duplicated, empty and non-ASCII header keys, binary header values, values of
    varying length, and (with base_timestamp) chosen CreateTime timestamps
    base_timestamp + i."""
    from tests.support.kafka_tools import Message

    header_sets = (
        (),
        (("trace", b"abc"), ("null-valued", None)),
        (("dup", b"first"), ("dup", b"second"), ("sch\u00fcssel-\u03bb", b""), ("binary", b"\x00\xff"),
         ("", b"empty-key"), ("", None)),
    )
    messages = []
    for i in range(count):
        key = None if i % 7 == 0 else "key-{0}{1}".format(tag, i).encode()
        value = None if i % 11 == 0 else ("value-{0}{1}-".format(tag, i) * (1 + i % 9)).encode()
        # Empty is not null: every 13th key and 17th value is b"" (length 0
        # on the wire, where null is length -1).
        if i % 13 == 5:
            key = b""
        if i % 17 == 3:
            value = b""
        messages.append(Message(
            key=key,
            value=value,
            headers=header_sets[i % 3],
            timestamp=None if base_timestamp is None else base_timestamp + i,
            partition=i % partitions,
        ))
    return messages


def assert_records_match(consumed, written, *, deserialized=None):
    """`consumed` (ConsumerRecords, partitions in order, each partition's
    records in delivery order) must be exactly `written` (WrittenRecords,
    sorted by partition then offset): every record once, in order, every
    field equal. `deserialized(written) -> (key, value)` gives the expected
    key/value when deserializers were configured."""
    got = [(r.topic, r.partition, r.offset) for r in consumed]
    want = [(w.topic, w.partition, w.offset) for w in written]
    assert got == want, "positions differ: first mismatch at index {0}".format(
        next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want))))
    for record, expect in zip(consumed, written):
        key, value = deserialized(expect) if deserialized else (expect.key, expect.value)
        assert record.key == key, record
        assert record.value == value, record
        assert [tuple(h) for h in record.headers] == [tuple(h) for h in expect.headers], record
        assert record.timestamp == expect.timestamp, record
        assert record.timestamp_type == expect.timestamp_type, record
        assert (record.serialized_key_size, record.serialized_value_size,
                record.serialized_header_size) == expected_sizes(expect), record
        assert record.leader_epoch is not None and record.leader_epoch >= 0, record


def read_all(consumer, topic_partitions, count, *, timeout=60.0, **poll_kwargs):
    """Assign `topic_partitions`, seek to the beginning and poll until `count`
    records arrived (and briefly after, to catch duplicates). Returns the
    records sorted by partition with each partition's delivery order kept."""
    consumer.assign(list(topic_partitions))
    consumer.seek_to_beginning(*topic_partitions)
    return poll_records(consumer, count, timeout=timeout, **poll_kwargs)


def poll_records(consumer, count, *, timeout=60.0, poll_ms=200, settle_ms=300, **poll_kwargs):
    """Poll until `count` records arrived, then once more for settle_ms (a
    record delivered twice shows up as a mismatch). Records come back
    grouped by partition, sorted by (topic, partition), delivery order kept."""
    got = {}
    total = 0
    deadline = time.monotonic() + timeout
    while total < count:
        if time.monotonic() > deadline:
            pytest.fail("only {0} of {1} records within {2}s".format(total, count, timeout))
        for tp, records in consumer.poll(timeout_ms=poll_ms, **poll_kwargs).items():
            got.setdefault(tp, []).extend(records)
            total += len(records)
    if settle_ms:
        for tp, records in consumer.poll(timeout_ms=settle_ms, **poll_kwargs).items():
            got.setdefault(tp, []).extend(records)
    out = []
    for tp in sorted(got, key=lambda t: (t.topic, t.partition)):
        for record in got[tp]:
            assert (record.topic, record.partition) == (tp.topic, tp.partition), (tp, record)
        out.extend(got[tp])
    return out
