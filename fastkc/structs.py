"""The value types of kafka-python's public API, field for field.

ConsumerRecord's field order is kafka-python 3.x's (leader_epoch third);
code that unpacks records by position depends on it. The compiled core builds
ConsumerRecord instances directly (it allocates the namedtuple type and fills
its slots), so this class must stay a plain namedtuple: no __slots__ tricks,
no extra fields. typing.NamedTuple builds exactly that class (it calls
collections.namedtuple) and adds the fields' types.
"""
# the module, not its names: this module's public names are kafka.structs'
# (tests/unit/test_kafka_python_parity.py)
import typing
from collections import namedtuple


class ConsumerRecord(typing.NamedTuple):
    topic: str
    partition: int
    leader_epoch: int  # -1 when the batch carries none (legacy message sets)
    offset: int
    timestamp: int | None  # None for magic 0 messages, as kafka-python yields
    timestamp_type: int | None  # 0 CreateTime, 1 LogAppendTime; None for magic 0
    key: typing.Any  # bytes or None, or what key_deserializer made of them
    value: typing.Any  # bytes or None, or what value_deserializer made of them
    headers: list[tuple[str, bytes | None]]
    checksum: int | None  # a legacy message's own CRC; None in record batches v2 (kafka-python's too)
    serialized_key_size: int  # -1 for a null key
    serialized_value_size: int  # -1 for a null value
    serialized_header_size: int  # -1 without headers


class ShareRecord(typing.NamedTuple):
    """A record a share group (KIP-932) handed this consumer: ConsumerRecord's
    fields in its order, then how many times the broker has delivered it
    (the acquired range's DeliveryCount, >= 1)."""

    topic: str
    partition: int
    leader_epoch: int
    offset: int
    timestamp: int | None
    timestamp_type: int | None
    key: typing.Any
    value: typing.Any
    headers: list[tuple[str, bytes | None]]
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int
    delivery_count: int


class ShareDecoded(typing.NamedTuple):
    """One partition of a ShareFetch answer, decoded (fastkc.records.decode_share):
    the records inside the acquired ranges, and the acquired offsets that have
    no record to hand out (compacted away, control records, past the last
    complete batch), as (first, last inclusive) ranges in offset order. The
    consumer acknowledges the gaps as GAP (AcknowledgeType 0, Java's
    Acknowledgements.addGap) so none stays acquired until its lock expires,
    and the released ones as RELEASE."""

    records: typing.Any  # list[ShareRecord], or a pyarrow.RecordBatch from decode_share_arrow
    gaps: list[tuple[int, int]]
    # Acquired offsets inside a cut trailing batch (from its base offset on):
    # records may be there that these bytes do not hold, so they are
    # RELEASEd (delivered again), never GAPped (a GAP archives the offset).
    # A broker acquires whole batches only; only a faulty one fills this.
    released: list[tuple[int, int]] = []


class ShareFailure(typing.NamedTuple):
    """What a share decode that hit a corrupt batch leaves unresolved, beside
    the error's `records` (handed out before the batch), by the Java client's
    ShareCompletedFetch rules: `gaps` (acquired, below the bad batch, no
    record: acknowledge GAP), `rejected` (acquired inside the bad batch's
    offsets, BaseOffset..BaseOffset+LastOffsetDelta as its header says:
    acknowledge REJECT, as Java's rejectRecordBatch does, so a poison batch is
    not redelivered forever), `released` (acquired past the bad batch: the
    decode stopped there, so acknowledge RELEASE and the broker delivers them
    again; Java decodes on past the batch, which a stopped decoder cannot)."""

    gaps: list[tuple[int, int]]
    rejected: list[tuple[int, int]]
    released: list[tuple[int, int]]


class TopicPartition(typing.NamedTuple):
    topic: str
    partition: int


class OffsetAndMetadata(typing.NamedTuple):
    # kafka-python's defaults, offset None included (an "unset" placeholder)
    offset: int | None = None
    metadata: str = ""
    leader_epoch: int = -1


class TopicPartitionReplica(typing.NamedTuple):
    topic: str
    partition: int
    broker_id: int


class ConsumerGroupMetadata(typing.NamedTuple):
    """kafka-python 3's group snapshot (KafkaConsumer.group_metadata()); state holds MemberState's strings."""

    group_id: str | None = None
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    state: str = "<unjoined>"


class MemberState:
    """kafka-python's group member states (ConsumerGroupMetadata.state)."""
    UNJOINED = "<unjoined>"  # not part of a group
    REBALANCING = "<rebalancing>"  # joining
    STABLE = "<stable>"  # joined, heartbeating


if typing.TYPE_CHECKING:
    class OffsetAndTimestamp(typing.NamedTuple):
        offset: int
        timestamp: int
        leader_epoch: int = -1
else:
    # kafka-python's leader_epoch default is a __new__ default, not a field
    # default (_field_defaults stays empty), and the parity test holds us to it
    OffsetAndTimestamp = namedtuple("OffsetAndTimestamp", ["offset", "timestamp", "leader_epoch"])
    OffsetAndTimestamp.__new__.__defaults__ = (-1,)


class DecodedPartition(typing.NamedTuple):
    """What one decode of a partition's records blob yields beyond the records:
    `next_offset` is the offset to fetch next (one past the last complete batch
    seen, control and aborted batches included), so a consumer advances even
    when every record in the blob was filtered out."""

    records: typing.Any  # list[ConsumerRecord], or a pyarrow.RecordBatch from the Arrow decoders
    next_offset: int


class ScanInfo(typing.NamedTuple):
    """The framing of a records blob, read from entry headers only (scan_blob):
    bytes and count of the complete entries, one past their last offset (None
    when there is none), the leader epoch of the last complete entry (-1 for
    legacy), and what follows them: "none", "cut" (a partial entry: the broker
    cut at its byte limit) or "malformed" (a header no batch can have), with
    that entry's base offset and declared size (-1 when unreadable) and why."""

    complete_bytes: int
    entries: int
    next_offset: int | None
    leader_epoch: int
    tail: str
    tail_offset: int
    tail_size: int
    reason: str


# --- Fetch response, as parsed by the compiled core (fastkc/_core/fetch.py)
# and by the generic protocol codec (its oracle). Fields absent from the
# response version in hand take the defaults below, so consumer logic never
# branches on the version.
class FetchPartitionResponse(typing.NamedTuple):
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int  # -1 when unknown
    log_start_offset: int  # v5+; -1 before
    diverging_epoch: tuple[int, int] | None  # v12+ tagged 0: (epoch, end_offset) or None
    current_leader: tuple[int, int] | None  # v12+ tagged 1: (leader_id, leader_epoch) or None
    snapshot_id: tuple[int, int] | None  # v12+ tagged 2: (end_offset, epoch) or None
    aborted_transactions: list[tuple[int, int]] | None  # (producer_id, first_offset); None when null
    preferred_read_replica: int  # v11+; -1 before
    records: memoryview | None  # into the response buffer (no copy), or None


class FetchTopicResponse(typing.NamedTuple):
    topic: str | None  # str for v4-v12; None from v13 (topic ids)
    topic_id: bytes | None  # 16 bytes from v13; None before
    partitions: list[FetchPartitionResponse]


class FetchResponse(typing.NamedTuple):
    correlation_id: int
    throttle_time_ms: int  # 0 before v1
    error_code: int  # top-level, v7+ (fetch sessions); 0 before
    session_id: int  # v7+; 0 before
    topics: list[FetchTopicResponse]
    node_endpoints: list[tuple[int, str, int, str | None]]  # v16+ tagged field 0: (node_id, host, port, rack)
