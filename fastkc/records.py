"""Public decoding entry points: a partition's records blob → records.

These are stable: the consumer, the Spark source and the benchmarks call them.
Both backends (compiled core and pure-Python twin) implement the same
contract; `fastkc.backend` says which one is in use.
"""
from fastkc import _backend
from fastkc.structs import ConsumerRecord, DecodedPartition

__all__ = [
    "decode",
    "decode_arrow",
    "decode_partition",
    "decode_partition_arrow",
    "ConsumerRecord",
    "DecodedPartition",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "arrow_schema",
]

# Per batch. Kafka's own limit on a batch is message.max.bytes (1 MiB by
# default, rarely above 100 MiB); a legitimate batch compresses well, but not
# past this. Above it, decompression stops and DecompressedSizeLimitError is
# raised, so a hostile or corrupt batch cannot exhaust memory.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

_ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def _read_committed(isolation_level):
    if isolation_level not in _ISOLATION_LEVELS:
        raise ValueError(
            "isolation_level must be 'read_uncommitted' or 'read_committed', not {0!r}".format(
                isolation_level
            )
        )
    return isolation_level == "read_committed"


def _aborted_list(aborted_transactions):
    # Normalised to a list of (producer_id, first_offset) int pairs, sorted by
    # first_offset as the Java client's priority queue orders them.
    if not aborted_transactions:
        return []
    return sorted(((int(p), int(f)) for p, f in aborted_transactions), key=lambda t: t[1])


def _deserializer_spec(deserializer):
    # kafka-python 3.x accepts a kafka.serializer.Deserializer (called as
    # deserialize(topic, headers, data)) or a plain callable (called as
    # fn(data), also for null data). The backends get (callable, full_form)
    # so the compiled core can call either shape without a Python shim.
    if deserializer is None:
        return None
    method = getattr(deserializer, "deserialize", None)
    if method is not None and callable(method):
        return (method, True)
    if callable(deserializer):
        return (deserializer, False)
    raise TypeError("a deserializer must be callable or have a deserialize() method")


def decode_partition(
    data,
    *,
    topic="",
    partition=-1,
    fetch_offset=0,
    stop_offset=None,
    check_crcs=True,
    isolation_level="read_uncommitted",
    aborted_transactions=(),
    key_deserializer=None,
    value_deserializer=None,
    max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES,
):
    """Like decode(), but also returns the offset to fetch next.

    stop_offset: exclusive upper bound; records at or past it are dropped
    (used by range readers such as the Spark source). None means no bound.
    """
    return _backend.impl.decode_partition(
        data,
        topic,
        partition,
        fetch_offset,
        -1 if stop_offset is None else stop_offset,
        bool(check_crcs),
        _read_committed(isolation_level),
        _aborted_list(aborted_transactions),
        _deserializer_spec(key_deserializer),
        _deserializer_spec(value_deserializer),
        max_decompressed_bytes,
    )


def decode_partition_arrow(
    data,
    *,
    topic="",
    partition=-1,
    fetch_offset=0,
    stop_offset=None,
    check_crcs=True,
    isolation_level="read_uncommitted",
    aborted_transactions=(),
    max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES,
):
    """Like decode_arrow(), but also returns the offset to fetch next."""
    return _backend.impl.decode_partition_arrow(
        data,
        topic,
        partition,
        fetch_offset,
        -1 if stop_offset is None else stop_offset,
        bool(check_crcs),
        _read_committed(isolation_level),
        _aborted_list(aborted_transactions),
        max_decompressed_bytes,
    )


def decode(
    data,
    *,
    topic="",
    partition=-1,
    fetch_offset=0,
    check_crcs=True,
    isolation_level="read_uncommitted",
    aborted_transactions=(),
    key_deserializer=None,
    value_deserializer=None,
    max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES,
):
    """Decode one partition's records blob into ConsumerRecord tuples.

    `data` is any bytes-like object holding zero or more record batches
    (magic 2) or legacy message sets (magic 0/1), as found in a Fetch
    response. A trailing partial batch is ignored. Records below
    `fetch_offset`, control records and (with read_committed) records of
    aborted transactions are not returned. Malformed bytes raise
    fastkc.errors.CorruptRecordError (or a subclass).
    """
    return decode_partition(
        data,
        topic=topic,
        partition=partition,
        fetch_offset=fetch_offset,
        check_crcs=check_crcs,
        isolation_level=isolation_level,
        aborted_transactions=aborted_transactions,
        key_deserializer=key_deserializer,
        value_deserializer=value_deserializer,
        max_decompressed_bytes=max_decompressed_bytes,
    ).records


def decode_arrow(
    data,
    *,
    topic="",
    partition=-1,
    fetch_offset=0,
    check_crcs=True,
    isolation_level="read_uncommitted",
    aborted_transactions=(),
    max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES,
):
    """Decode one partition's records blob into a pyarrow.RecordBatch with
    the schema of Spark's Kafka source (see arrow_schema())."""
    return decode_partition_arrow(
        data,
        topic=topic,
        partition=partition,
        fetch_offset=fetch_offset,
        check_crcs=check_crcs,
        isolation_level=isolation_level,
        aborted_transactions=aborted_transactions,
        max_decompressed_bytes=max_decompressed_bytes,
    ).records


def arrow_schema():
    """key binary, value binary, topic string, partition int32, offset int64,
    timestamp timestamp[us, UTC], timestampType int32,
    headers list<struct<key: string, value: binary>> — all nullable."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("key", pa.binary()),
            pa.field("value", pa.binary()),
            pa.field("topic", pa.string()),
            pa.field("partition", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("timestamp", pa.timestamp("us", tz="UTC")),
            pa.field("timestampType", pa.int32()),
            pa.field(
                "headers",
                pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])),
            ),
        ]
    )
