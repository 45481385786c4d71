"""Public decoding entry points: a partition's records blob → records.

These are stable: the consumer, the Spark source and the benchmarks call them.
Both backends (compiled core and pure-Python twin) implement the same
contract; `fastkc.backend` says which one is in use.
"""
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from fastkc import _backend
from fastkc.arrow_schema import arrow_schema, share_arrow_schema
from fastkc.deserializers import call_form
from fastkc.share_ranges import checked_acquired
from fastkc.structs import ConsumerRecord, DecodedPartition, ScanInfo, ShareDecoded, ShareRecord

if TYPE_CHECKING:
    from fastkc._backend import ArrowBuilder, RecordStream

_Buffer = bytes | bytearray | memoryview
# a kafka-python Deserializer (deserialize(topic, headers, data)) or a plain
# callable (fn(data)); what it returns is the user's
Deserializer = Any

__all__ = [
    "decode",
    "decode_arrow",
    "decode_partition",
    "decode_partition_arrow",
    "decode_share",
    "decode_share_arrow",
    "ConsumerRecord",
    "ShareDecoded",
    "ShareRecord",
    "DecodedPartition",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "arrow_builder",
    "arrow_schema",
    "batch_record_budget",
    "record_stream",
    "scan_blob",
    "share_arrow_schema",
]

# Per batch. Kafka's own limit on a batch is message.max.bytes (1 MiB by
# default, rarely above 100 MiB); a legitimate batch compresses well, but not
# past this. Above it, decompression stops and DecompressedSizeLimitError is
# raised, so a hostile or corrupt batch cannot exhaust memory.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

# A record descriptor is 80 bytes and the smallest v2 record 7: without a
# bound, a batch of empty records makes ~11x its decompressed size in
# descriptors (and far more in Python objects). One record per 64
# decompressed bytes the budget allows keeps descriptors <= 1.25x that budget
# while leaving room for batches of tiny records (a full 1 MiB batch of
# 7-byte records is ~150 k records; the default budget allows 4 M).
_BYTES_PER_BUDGETED_RECORD = 64


def batch_record_budget(max_decompressed_bytes: int) -> int:
    """The most records one batch may declare under a decompression budget."""
    return max(1, max_decompressed_bytes // _BYTES_PER_BUDGETED_RECORD)


_ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def _read_committed(isolation_level: str) -> bool:
    if isolation_level not in _ISOLATION_LEVELS:
        raise ValueError(
            "isolation_level must be 'read_uncommitted' or 'read_committed', not {0!r}".format(
                isolation_level
            )
        )
    return isolation_level == "read_committed"


def _aborted_list(aborted_transactions: Iterable[tuple[int, int]] | None) -> list[tuple[int, int]]:
    # Normalised to a list of (producer_id, first_offset) int pairs, sorted by
    # first_offset as the Java client's priority queue orders them.
    if not aborted_transactions:
        return []
    return sorted(((int(p), int(f)) for p, f in aborted_transactions), key=lambda t: t[1])


def _deserializer_spec(deserializer: Deserializer) -> tuple[Callable[..., Any], bool] | None:
    # kafka-python 3.x accepts a kafka.serializer.Deserializer (called as
    # deserialize(topic, headers, data)) or a plain callable (called as
    # fn(data), also for null data). The backends get (callable, full_form)
    # so the compiled core can call either shape without a Python shim.
    return call_form(deserializer)


def decode_partition(
    data: _Buffer,
    *,
    topic: str = "",
    partition: int = -1,
    fetch_offset: int = 0,
    stop_offset: int | None = None,
    check_crcs: bool = True,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = (),
    key_deserializer: Deserializer = None,
    value_deserializer: Deserializer = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_records: int | None = None,
) -> DecodedPartition:
    """Like decode(), but also returns the offset to fetch next.

    stop_offset: exclusive upper bound; records at or past it are dropped
    (used by range readers such as the Spark source). None means no bound.
    max_batch_records: a batch declaring more records raises
    RecordCountLimitError (None: batch_record_budget(max_decompressed_bytes)).
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
        _record_budget(max_batch_records, max_decompressed_bytes),
    )


def _record_budget(max_batch_records: int | None, max_decompressed_bytes: int) -> int:
    if max_batch_records is None:
        return batch_record_budget(max_decompressed_bytes)
    return max_batch_records


def decode_partition_arrow(
    data: _Buffer,
    *,
    topic: str = "",
    partition: int = -1,
    fetch_offset: int = 0,
    stop_offset: int | None = None,
    check_crcs: bool = True,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = (),
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_records: int | None = None,
    zero_copy: bool = False,
) -> DecodedPartition:
    """Like decode_arrow(), but also returns the offset to fetch next. Records
    that would pass one Arrow batch's int32 offsets raise ArrowCapacityError
    carrying the batch up to its next_offset (decode again from there)."""
    extra = {"zero_copy": True} if zero_copy else {}
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
        _record_budget(max_batch_records, max_decompressed_bytes),
        **extra,
    )


def scan_blob(data: _Buffer) -> ScanInfo:
    """The framing of a records blob, read from entry headers only, by the
    decoder's own framing rule: fastkc.structs.ScanInfo(complete_bytes,
    entries, next_offset, leader_epoch, tail, tail_offset, tail_size, reason).
    The fetch planner uses it to pipeline the next fetch before decoding."""
    return _backend.impl.scan_blob(data)


def check_blob(data: _Buffer, topic: str, partition: int, position: int) -> tuple[int, int]:
    """The benchmark ceiling's walk (fastkc_tools.bench_ceiling): the complete v2
    batches of a fetched blob, framed by the decoder's rule and CRC-32C
    checked, nothing decompressed or parsed. Returns (records at or past
    `position` as the batches declare them, control batches excluded; the
    next offset). Any tail or malformed entry raises InvalidRecordError, a
    CRC mismatch RecordCrcError (both CorruptRecordErrors naming the batch),
    a legacy entry ValueError (v2 only, never guessed)."""
    return _backend.impl.check_blob(data, topic, partition, position)


def record_stream(
    data: _Buffer,
    *,
    topic: str = "",
    partition: int = -1,
    fetch_offset: int = 0,
    stop_offset: int | None = None,
    check_crcs: bool = True,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = (),
    key_deserializer: Deserializer = None,
    value_deserializer: Deserializer = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_records: int | None = None,
    arrow: bool = False,
) -> "RecordStream":
    """The resumable decoder over one partition's blob (Java's CompletedFetch
    walk): .records(n) (or .arrow(n) with arrow=True) hands out the next at
    most n records, decompressing a batch only when it is reached;
    .next_offset is where to resume, .done whether anything is left,
    .leader_epoch the epoch of the batch last opened. Stepping through a blob
    gives exactly the records of one decode_partition() call; a bad batch
    raises its CorruptRecordError carrying the step's records before it."""
    return _backend.impl.RecordStream(
        data,
        topic,
        partition,
        fetch_offset,
        -1 if stop_offset is None else stop_offset,
        bool(check_crcs),
        _read_committed(isolation_level),
        _aborted_list(aborted_transactions),
        max_decompressed_bytes,
        _record_budget(max_batch_records, max_decompressed_bytes),
        bool(arrow),
        _deserializer_spec(key_deserializer),
        _deserializer_spec(value_deserializer),
    )


def decode(
    data: _Buffer,
    *,
    topic: str = "",
    partition: int = -1,
    fetch_offset: int = 0,
    check_crcs: bool = True,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = (),
    key_deserializer: Deserializer = None,
    value_deserializer: Deserializer = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[ConsumerRecord]:
    """Decode one partition's records blob into ConsumerRecord tuples.

    `data` is any bytes-like object holding zero or more record batches
    (magic 2) or legacy message sets (magic 0/1), as found in a Fetch
    response. A trailing partial batch is ignored. Records below
    `fetch_offset`, control records and (with read_committed) records of
    aborted transactions are not returned. Malformed bytes raise
    fastkc.errors.CorruptRecordError (or a subclass).
    """
    # DecodedPartition.records holds either form; decode_partition() gives the list
    records: list[ConsumerRecord] = decode_partition(
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
    return records


def decode_arrow(
    data: _Buffer,
    *,
    topic: str = "",
    partition: int = -1,
    fetch_offset: int = 0,
    check_crcs: bool = True,
    isolation_level: str = "read_uncommitted",
    aborted_transactions: Iterable[tuple[int, int]] | None = (),
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    zero_copy: bool = False,
) -> Any:
    """Decode one partition's records blob into a pyarrow.RecordBatch with
    the schema of Spark's Kafka source (see arrow_schema()).

    zero_copy=True: key and value are binary_view columns
    (arrow_schema(zero_copy=True)) whose values longer than 12 bytes point
    into `data` itself (into the decompressed buffer for a compressed
    batch) instead of a copy; the batch keeps `data` exported (alive, and a
    bytearray not resizable) until the batch and every array taken from it
    are gone."""
    return decode_partition_arrow(
        data,
        topic=topic,
        partition=partition,
        fetch_offset=fetch_offset,
        check_crcs=check_crcs,
        isolation_level=isolation_level,
        aborted_transactions=aborted_transactions,
        max_decompressed_bytes=max_decompressed_bytes,
        zero_copy=zero_copy,
    ).records


def arrow_builder(base: Sequence[int] | None = None, zero_copy: bool = False) -> "ArrowBuilder":
    """An ArrowBuilder of the backend in use: successive
    RecordStream.arrow(..., builder=b) steps (of any partitions) append to
    it, and b.finish() returns them as one pyarrow.RecordBatch. `base`: the
    totals (rows, key, value, header count, header key, header value bytes)
    of batches the result will be joined to; the int32 limits apply to the
    sum. zero_copy: key and value as binary_view pointing into the steps'
    input buffers (see decode_arrow)."""
    return _backend.impl.ArrowBuilder(base, zero_copy)


# Acquired ranges as a ShareFetch answer gives them: (FirstOffset,
# LastOffset inclusive, DeliveryCount) per range
AcquiredRanges = Iterable[Sequence[int]]


def decode_share(
    data: _Buffer,
    *,
    topic: str,
    partition: int,
    acquired: AcquiredRanges,
    check_crcs: bool = True,
    key_deserializer: Deserializer = None,
    value_deserializer: Deserializer = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_records: int | None = None,
) -> ShareDecoded:
    """Decode one partition of a ShareFetch answer (KIP-932 share groups):
    `data` is its Records (whole batches, which may start before and end
    after what was acquired), `acquired` its AcquiredRecords as
    (first_offset, last_offset inclusive, delivery_count) ranges.

    Returns ShareDecoded(records, gaps, released): a ShareRecord (ConsumerRecord's
    fields + delivery_count) for each data record whose offset is acquired,
    in offset order, each offset at most once; records outside every range
    are dropped before any Python object is made for them. `gaps`: the
    acquired offsets with no record to hand out (compacted away, control
    records, nothing there in the complete batches), as (first, last)
    ranges; the consumer acknowledges them as GAP (type 0), as the Java
    client's ShareCompletedFetch does, so none stays acquired silently.

    Aborted transactional data is not filtered here: a ShareFetch answer has
    no aborted transactions, and the broker itself never acquires aborted
    data for a read_committed share group.

    Bad ranges (first > last, negative, unsorted, overlapping, a
    delivery_count outside 1..32767) raise InvalidAcquiredRecordsError before
    anything is decoded. Bad bytes raise the CorruptRecordError subclass
    decode() raises (topic, partition, offset, and `records`: those before
    the bad batch) with `.share` a ShareFailure: what to acknowledge for the
    acquired offsets not handed out -- gaps (GAP), rejected (REJECT: inside
    the bad batch, as Java's rejectRecordBatch) and released (RELEASE: past
    it; the decode stops at the bad batch, Java would read on). A trailing
    partial batch ends the decode silently, as in decode(); the acquired
    offsets in it (from its base offset on) are `released`, not gaps: Java
    counts them as gaps, but they may hold records these bytes cut off, and
    a GAP archives an offset (a broker acquires whole batches only, so only
    a faulty one gets here).

    A deserializer's exception propagates as in decode(), with nothing
    handed out: a consumer that wants Java's rule (the record that fails to
    deserialize is released, the others delivered) decodes without
    deserializers and applies them record by record itself.
    """
    ranges = checked_acquired(acquired, topic, partition)
    decoded = _backend.impl.decode_share(
        data,
        topic,
        partition,
        ranges,
        bool(check_crcs),
        _deserializer_spec(key_deserializer),
        _deserializer_spec(value_deserializer),
        max_decompressed_bytes,
        _record_budget(max_batch_records, max_decompressed_bytes),
    )
    return _release_cut_tail(data, decoded)


def _release_cut_tail(data: _Buffer, decoded: ShareDecoded) -> ShareDecoded:
    """Move the gaps at or past a cut trailing batch to `released`: the
    bytes end inside that batch, so the offsets may hold records we could
    not read. Java counts them as gaps, and a GAP archives an offset; a
    broker acquires whole batches only, so only a faulty one gets here, and
    then nothing is lost (RELEASE: delivered again, up to the delivery limit)."""
    if not decoded.gaps:
        return decoded
    info = _backend.impl.scan_blob(data)
    if info.tail != "cut":
        return decoded
    # the cut entry's base offset when its header got that far, else one past the complete entries
    cut_at = info.tail_offset if info.tail_offset >= 0 else info.next_offset
    if cut_at is None:
        cut_at = -1  # nothing complete and the base offset unreadable: release every gap
    gaps, released = [], []
    for first, last in decoded.gaps:
        if last < cut_at:
            gaps.append((first, last))
        elif first >= cut_at:
            released.append((first, last))
        else:
            gaps.append((first, cut_at - 1))
            released.append((cut_at, last))
    return decoded._replace(gaps=gaps, released=released)


def decode_share_arrow(
    data: _Buffer,
    *,
    topic: str,
    partition: int,
    acquired: AcquiredRanges,
    check_crcs: bool = True,
    zero_copy: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_batch_records: int | None = None,
) -> ShareDecoded:
    """decode_share() into a pyarrow.RecordBatch of share_arrow_schema():
    decode_arrow()'s columns plus `delivery_count` (int16), filled in the same
    pass. Returns ShareDecoded(batch, gaps, released); errors as decode_share() (with `records` a
    RecordBatch). A result past one Arrow batch's int32 offsets raises
    ArrowCapacityError, its `.share.released` the acquired offsets from its
    next_offset on. zero_copy: see decode_arrow()."""
    ranges = checked_acquired(acquired, topic, partition)
    extra = {"zero_copy": True} if zero_copy else {}
    decoded = _backend.impl.decode_share_arrow(
        data,
        topic,
        partition,
        ranges,
        bool(check_crcs),
        max_decompressed_bytes,
        _record_budget(max_batch_records, max_decompressed_bytes),
        **extra,
    )
    return _release_cut_tail(data, decoded)
