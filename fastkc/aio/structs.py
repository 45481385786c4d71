"""aiokafka 0.14's structs (`aiokafka.structs`), for code that imports them
from the consumer's package, and the conversions the asyncio driver needs.

TopicPartition is fastkc's (the same namedtuple fields as aiokafka's, so
equal and equally hashed: a dict keyed by either finds the other).

The others differ from fastkc's kafka-python-shaped ones and are defined
here with aiokafka's fields, because code unpacks them:
`offset, metadata = om` fails on kafka-python's three-field
OffsetAndMetadata (offset, metadata, leader_epoch), `offset, ts = ot` on its
three-field OffsetAndTimestamp.

ConsumerRecord is aiokafka's: a mutable dataclass (not a tuple) with
    topic, partition, offset, timestamp, timestamp_type, key, value,
    checksum, serialized_key_size, serialized_value_size, headers
where fastkc's compiled decoder builds kafka-python's namedtuple
    topic, partition, leader_epoch, offset, timestamp, timestamp_type, key,
    value, headers, checksum, serialized_key_size, serialized_value_size,
    serialized_header_size.
So aiokafka's record has no leader_epoch and no serialized_header_size, its
fields come in another order (positional construction and
dataclasses.astuple differ), it cannot be indexed or unpacked, it is not
hashable (eq without frozen), its attributes can be assigned, and its
headers are a tuple of (str, bytes) tuples. from_fastkc_record() is the
conversion in Python; the driver's fast path is for the decoder to build
this layout directly.
"""
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeGuard, TypeVar

from fastkc import structs
from fastkc.structs import TopicPartition

__all__ = [
    "BrokerMetadata",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionMetadata",
    "RecordMetadata",
    "TopicPartition",
    "from_fastkc_record",
    "normalize_commit_offsets",
]


class BrokerMetadata(NamedTuple):
    nodeId: int | str
    host: str
    port: int
    rack: str | None


class PartitionMetadata(NamedTuple):
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: Exception | None


class OffsetAndMetadata(NamedTuple):
    """What commit() takes per partition (aiokafka's two fields)."""

    offset: int
    metadata: str


class RecordMetadata(NamedTuple):
    """aiokafka's producer result; kept so imports of it work."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None


KT = TypeVar("KT")
VT = TypeVar("VT")


@dataclass
class ConsumerRecord(Generic[KT, VT]):
    topic: str
    partition: int
    offset: int
    # None for a magic-0 message (no timestamp): aiokafka annotates int,
    # fastkc's decoder gives None there as kafka-python does
    timestamp: int | None
    timestamp_type: int | None
    key: KT | None
    value: VT | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes | None]]  # a header's value may be null


class OffsetAndTimestamp(NamedTuple):
    """What offsets_for_times() returns per partition (aiokafka's two fields)."""

    offset: int
    timestamp: int | None


def from_fastkc_record(record: structs.ConsumerRecord) -> ConsumerRecord[Any, Any]:
    """aiokafka's ConsumerRecord for one record of fastkc's decoder
    (fastkc.structs.ConsumerRecord): leader_epoch and serialized_header_size
    are dropped, the headers become a tuple of tuples."""
    return ConsumerRecord(
        record.topic, record.partition, record.offset, record.timestamp, record.timestamp_type,
        record.key, record.value, record.checksum, record.serialized_key_size, record.serialized_value_size,
        tuple((name, value) for name, value in record.headers),
    )


def is_topic_partition(tp: object) -> TypeGuard[TopicPartition]:
    # fastkc's TopicPartition, or another library's namedtuple of the same
    # shape (aiokafka's, kafka-python's) while code migrates
    return isinstance(tp, tuple) and getattr(tp, "_fields", None) == ("topic", "partition")


def normalize_commit_offsets(offsets: Mapping[TopicPartition, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    """commit(offsets)'s argument as {TopicPartition: OffsetAndMetadata}.

    Takes what aiokafka's commit() takes (a non-empty dict of TopicPartition
    to an offset, an (offset, metadata) pair or an OffsetAndMetadata), with
    aiokafka's error types: ValueError for a bad shape, TypeError for a key
    that is not a TopicPartition or metadata that is not a str. Stricter than
    aiokafka where it would send nonsense to the broker: an offset must be an
    int >= 0 (aiokafka lets True, -5 or "7" through to the OffsetCommit)."""
    if not offsets or not isinstance(offsets, dict):
        raise ValueError(offsets)
    normalized: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, given in offsets.items():
        if not is_topic_partition(tp):
            raise TypeError("Key should be TopicPartition instance")
        if isinstance(given, int) and not isinstance(given, bool):
            offset, metadata = given, ""
        elif isinstance(given, tuple) and hasattr(given, "offset") and hasattr(given, "metadata"):
            # an OffsetAndMetadata, ours or kafka-python's three-field one
            offset, metadata = given.offset, given.metadata
        else:
            try:
                offset, metadata = given
            except (TypeError, ValueError) as exc:
                raise ValueError(offsets) from exc
        if not isinstance(metadata, str):
            raise TypeError("Metadata should be a string")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("offset for {0} must be an int >= 0, not {1!r}".format(tuple(tp), offset))
        normalized[TopicPartition(tp.topic, tp.partition)] = OffsetAndMetadata(offset, metadata)
    return normalized
