"""The value types of kafka-python's public API, field for field.

ConsumerRecord's field order is kafka-python 3.x's (leader_epoch third);
code that unpacks records by position depends on it. The compiled core builds
ConsumerRecord instances directly (it allocates the namedtuple type and fills
its slots), so this class must stay a plain namedtuple: no __slots__ tricks,
no extra fields.
"""
from collections import namedtuple

ConsumerRecord = namedtuple(
    "ConsumerRecord",
    [
        "topic",
        "partition",
        "leader_epoch",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "checksum",
        "serialized_key_size",
        "serialized_value_size",
        "serialized_header_size",
    ],
)

TopicPartition = namedtuple("TopicPartition", ["topic", "partition"])

OffsetAndMetadata = namedtuple("OffsetAndMetadata", ["offset", "metadata", "leader_epoch"],
                               defaults=[None, "", -1])

TopicPartitionReplica = namedtuple("TopicPartitionReplica", ["topic", "partition", "broker_id"])

#: kafka-python 3's group snapshot (KafkaConsumer.group_metadata()); state holds MemberState's strings
ConsumerGroupMetadata = namedtuple("ConsumerGroupMetadata",
                                   ["group_id", "generation_id", "member_id", "group_instance_id", "state"],
                                   defaults=[None, -1, "", None, "<unjoined>"])


class MemberState:
    """kafka-python's group member states (ConsumerGroupMetadata.state)."""
    UNJOINED = "<unjoined>"  # not part of a group
    REBALANCING = "<rebalancing>"  # joining
    STABLE = "<stable>"  # joined, heartbeating

OffsetAndTimestamp = namedtuple("OffsetAndTimestamp", ["offset", "timestamp", "leader_epoch"])
OffsetAndTimestamp.__new__.__defaults__ = (-1,)

# What one decode of a partition's records blob yields beyond the records:
# `next_offset` is the offset to fetch next (one past the last complete batch
# seen, control and aborted batches included), so a consumer advances even
# when every record in the blob was filtered out.
DecodedPartition = namedtuple("DecodedPartition", ["records", "next_offset"])

# The framing of a records blob, read from entry headers only (scan_blob):
# bytes and count of the complete entries, one past their last offset (None
# when there is none), the leader epoch of the last complete entry (-1 for
# legacy), and what follows them: "none", "cut" (a partial entry: the broker
# cut at its byte limit) or "malformed" (a header no batch can have), with
# that entry's base offset and declared size (-1 when unreadable) and why.
ScanInfo = namedtuple("ScanInfo", ["complete_bytes", "entries", "next_offset", "leader_epoch", "tail",
                                   "tail_offset", "tail_size", "reason"])

# --- Fetch response, as parsed by the compiled core (fastkc/_core/fetch.py)
# and by the generic protocol codec (its oracle). Fields absent from the
# response version in hand take the defaults below, so consumer logic never
# branches on the version.
FetchResponse = namedtuple(
    "FetchResponse",
    [
        "correlation_id",
        "throttle_time_ms",  # 0 before v1
        "error_code",  # top-level, v7+ (fetch sessions); 0 before
        "session_id",  # v7+; 0 before
        "topics",  # list[FetchTopicResponse]
        "node_endpoints",  # v16+ tagged field 0: list[(node_id, host, port, rack)]
    ],
)

FetchTopicResponse = namedtuple(
    "FetchTopicResponse",
    [
        "topic",  # str for v4-v12; None from v13 (topic ids)
        "topic_id",  # 16 bytes from v13; None before
        "partitions",  # list[FetchPartitionResponse]
    ],
)

FetchPartitionResponse = namedtuple(
    "FetchPartitionResponse",
    [
        "partition",
        "error_code",
        "high_watermark",
        "last_stable_offset",  # -1 when unknown
        "log_start_offset",  # v5+; -1 before
        "diverging_epoch",  # v12+ tagged 0: (epoch, end_offset) or None
        "current_leader",  # v12+ tagged 1: (leader_id, leader_epoch) or None
        "snapshot_id",  # v12+ tagged 2: (end_offset, epoch) or None
        "aborted_transactions",  # list[(producer_id, first_offset)] or None (null)
        "preferred_read_replica",  # v11+; -1 before
        "records",  # memoryview into the response buffer (no copy), or None
    ],
)
