"""Batch deserializers: what they are, and the one place records get them.

A key or value deserializer is one of three things (kafka-python's two, and
one of fastkc's):
- a plain callable, fn(data);
- a kafka-python `Deserializer`, deserialize(topic, headers, data);
- a **batch deserializer**: an object with `deserialize_many(values, topic,
  partition, offsets, headers_list, field)` (the `BatchDeserializer`
  protocol), such as fastkc.schema_registry.AvroDeserializer. Any decoder
  that implements that one method is recognised, whatever else it is.

The first two are called by the compiled record builder, once per record.
A batch deserializer is not: the records are built with that field's raw
bytes (so serialized_key_size / serialized_value_size are the raw sizes, as
kafka-python reports them), then `RecordDeserializers.deserialize()` replaces
the field of a partition's records with the result of one deserialize_many
call. Every front-end's record path goes through it: the fetch buffer
(KafkaConsumer.poll() and iteration, fastkc.aio's getmany / getone) and the
share consumer's poll.

Errors: a failing batch names the record it failed at through the error's
`offset` (fastkc.schema_registry's DeserializationError does). Then
`deserialize()` gives the records before it, deserialized, and the error
(the fetch buffer delivers those and moves the position to the bad record,
as Java's RecordDeserializationException leaves it, so the application can
seek past it). An error that names no record of the batch counts as failing
at its first record.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from fastkc import _backend
from fastkc.structs import ConsumerRecord

# A record's headers as fastkc builds them: (name, value) pairs
Headers = list[tuple[str, bytes | None]]

# the fields' positions in ConsumerRecord, and in ShareRecord (which only
# appends delivery_count)
_OFFSET = ConsumerRecord._fields.index("offset")
_KEY = ConsumerRecord._fields.index("key")
_VALUE = ConsumerRecord._fields.index("value")
_HEADERS = ConsumerRecord._fields.index("headers")

_Record = TypeVar("_Record", bound=tuple[Any, ...])


class BatchDeserializer(Protocol):
    """What fastkc recognises as a batch deserializer (Avro today; Protobuf
    and JSON Schema deserializers plug in by implementing the same method).

    `values[i]` is the raw key or value of the record at `offsets[i]` (None
    for a null one), `headers_list[i]` its headers; `field` is "key" or
    "value" (fastkc.schema_registry.MessageField's members compare equal to
    these). Returns one object per value, in order. A failure should be an
    exception whose `offset` attribute names the record it failed at."""

    def deserialize_many(self, values: Sequence[bytes | None], topic: str, partition: int,
                         offsets: Sequence[int], headers_list: Sequence[Headers | None] | None = None,
                         field: Any = "value") -> list[Any]:
        ...


def call_form(deserializer: Any) -> tuple[Callable[..., Any], bool] | None:
    """How a per-record deserializer is called: (function, full) where full
    means deserialize(topic, headers, data) (kafka-python 3's Deserializer),
    else fn(data) (also for null data); None for no deserializer."""
    if deserializer is None:
        return None
    method = getattr(deserializer, "deserialize", None)
    if method is not None and callable(method):
        return (method, True)
    if callable(deserializer):
        return (deserializer, False)
    raise TypeError("a deserializer must be callable or have a deserialize() method")


def is_batch_deserializer(deserializer: object) -> bool:
    """True for an object with a callable deserialize_many (the one test)."""
    return callable(getattr(deserializer, "deserialize_many", None))


def per_record(deserializer: Any) -> Any:
    """What the record builder calls per record for a field: the deserializer
    itself, or None (raw bytes) for a batch deserializer."""
    return None if is_batch_deserializer(deserializer) else deserializer


class DeserializedRecords(NamedTuple):
    """A partition's records after their batch deserializers.

    records: the records before the failing one (all of them when error is
    None), their keys and values deserialized
    error: what the deserializer raised, or None
    failed_at: the offset of the record it failed at (None without an error)"""

    records: list[Any]
    error: BaseException | None
    failed_at: int | None


class RecordDeserializers:
    """A consumer's key and value deserializers, split into what the record
    builder calls per record and what runs once per partition's records."""

    __slots__ = ("key_per_record", "value_per_record", "_key_batch", "_value_batch")

    def __init__(self, key_deserializer: Any, value_deserializer: Any) -> None:
        self.key_per_record = per_record(key_deserializer)
        self.value_per_record = per_record(value_deserializer)
        self._key_batch: BatchDeserializer | None = key_deserializer if self.key_per_record is None \
            and key_deserializer is not None else None
        self._value_batch: BatchDeserializer | None = value_deserializer if self.value_per_record is None \
            and value_deserializer is not None else None

    def replayed(self, raw: list[_Record], topic: str, partition: int) -> DeserializedRecords:
        """After the record builder's per-record call raised (it does not say
        at which record): the same step's records built raw, each field
        deserialized again from Python, record by record for the per-record
        deserializers, to find the record the error belongs to. The records
        before it and the error, as deserialize() gives them; no error when
        the calls all passed this time."""
        key = _replay(self.key_per_record) if self.key_per_record is not None else self._key_batch
        value = _replay(self.value_per_record) if self.value_per_record is not None else self._value_batch
        return RecordDeserializers(key, value).deserialize(raw, topic, partition)

    @property
    def batched(self) -> bool:
        """True when a field is left to a batch deserializer."""
        return self._key_batch is not None or self._value_batch is not None

    def deserialize(self, records: list[_Record], topic: str, partition: int) -> DeserializedRecords:
        """One partition's records (in offset order, as built) with their
        batch-deserialized fields replaced: one deserialize_many call per
        field. On a failure, the records before the one it names, each
        deserialized (that prefix decoded again), and the error."""
        if not records or not self.batched:
            return DeserializedRecords(records, None, None)
        try:
            return DeserializedRecords(self.replaced(records, topic, partition), None, None)
        except Exception as exc:  # the deserializer's own error, handed to the application unchanged
            error = exc.error if isinstance(exc, _FailedAt) else exc
            bad = _failed_index(exc, records)
            before = self.deserialize(records[:bad], topic, partition) if bad else DeserializedRecords([], None, None)
            if before.error is not None:  # the prefix failed on its own (a registry gone meanwhile)
                return before
            return DeserializedRecords(before.records, error, records[bad][_OFFSET])

    def replaced(self, records: list[_Record], topic: str, partition: int) -> list[_Record]:
        """`records` with their batch-deserialized fields replaced; the
        deserializer's error propagates as it is."""
        if not records or not self.batched:
            return records
        offsets = [record[_OFFSET] for record in records]
        headers = [record[_HEADERS] for record in records]
        fields: list[tuple[int, Sequence[Any]]] = []
        for index, name, batch in ((_KEY, "key", self._key_batch), (_VALUE, "value", self._value_batch)):
            if batch is not None:
                raw = [record[index] for record in records]
                done = batch.deserialize_many(raw, topic, partition, offsets, headers, name)
                if len(done) != len(raw):
                    raise TypeError("{0}.deserialize_many returned {1} {2}s for {3}".format(
                        type(batch).__name__, len(done), name, len(raw)))
                fields.append((index, done))
        return _backend.impl.replace_fields(records, fields)


def _failed_index(exc: BaseException, records: Sequence[tuple[Any, ...]]) -> int:
    """The position in `records` of the record the error names (its
    `offset`), 0 when it names none of them."""
    offset = getattr(exc, "offset", None)
    if isinstance(offset, int) and not isinstance(offset, bool):
        for i, record in enumerate(records):
            if record[_OFFSET] == offset:
                return i
    return 0


class _FailedAt(Exception):
    """A per-record deserializer's `error`, raised at the record at `offset`
    (replayed() only; the application gets `error` itself)."""

    def __init__(self, offset: int, error: Exception) -> None:
        super().__init__(offset, error)
        self.offset = offset
        self.error = error


class _PerRecordReplay:
    """A per-record deserializer as a batch one, called from Python record by
    record, in the record builder's order (replayed())."""

    def __init__(self, function: Callable[..., Any], full: bool) -> None:
        self._function = function
        self._full = full

    def deserialize_many(self, values: Sequence[bytes | None], topic: str, partition: int,
                         offsets: Sequence[int], headers_list: Sequence[Headers | None] | None = None,
                         field: Any = "value") -> list[Any]:
        function = self._function
        out = []
        for i, value in enumerate(values):
            try:
                if self._full:
                    out.append(function(topic, headers_list[i] if headers_list is not None else None, value))
                else:
                    out.append(function(value))
            except Exception as exc:
                raise _FailedAt(offsets[i], exc) from exc
        return out


def _replay(deserializer: Any) -> _PerRecordReplay:
    form = call_form(deserializer)
    assert form is not None
    return _PerRecordReplay(*form)


# --- the Arrow path ----------------------------------------------------------------------------

class ArrowDeserializer(Protocol):
    """What poll_arrow() (and getmany_arrow(), arrow_stream()) recognises as
    a key or value deserializer that gives typed Arrow columns:
    fastkc.schema_registry.AvroDeserializer.deserialize_arrow's contract.

    `values` is one partition's raw column (a pyarrow binary array, nulls
    allowed), `offsets[i]` row i's offset, `headers_list[i]` its headers
    (None when no row has any). Returns a pyarrow.Array of the longest
    leading run of rows that share one Arrow type (shorter where the type
    would change or the next row fails: a call from that row raises the
    typed error naming its offset); raises only for row 0.

    A deserializer whose `arrow_across_partitions` is true also takes a
    column spanning several partitions of one topic whose first non-null
    row is `partition`'s (its only row that can raise): a take is decoded
    in one call instead of one per partition."""

    def deserialize_arrow(self, values: Any, topic: str, partition: int, offsets: Sequence[int],
                          headers_list: Sequence[Headers | None] | None = None, field: Any = "value") -> Any:
        ...


def is_arrow_deserializer(deserializer: object) -> bool:
    """True for an object with a callable deserialize_arrow."""
    return callable(getattr(deserializer, "deserialize_arrow", None))


class PartitionRows(NamedTuple):
    """The rows [start, end) of an Arrow take, all of one partition."""

    start: int
    end: int
    topic: str
    partition: int


def partition_rows(batch: Any, start: int = 0) -> list[PartitionRows]:
    """The runs of one partition in an Arrow take from row `start` on (a
    take appends each partition's rows together, in offset order)."""
    import pyarrow.compute as pc

    rest = batch.slice(start)
    if rest.num_rows == 0:
        return []
    topics = rest.column("topic")
    partitions = rest.column("partition")
    ends = set()
    for column in (topics, partitions):
        ends.update(pc.run_end_encode(column).run_ends.to_pylist())
    runs = []
    begin = 0
    for end in sorted(ends):
        runs.append(PartitionRows(start + begin, start + end, topics[begin].as_py(), partitions[begin].as_py()))
        begin = end
    return runs


class HeaderColumn(Sequence[Headers | None]):
    """An Arrow take's headers column as the deserializers take it (per row
    a list of (name, value) pairs, or None), converted to Python only for
    the rows asked for. Production topics often carry headers (tracing,
    lineage) on values framed by their 5-byte prefix: a deserializer then
    looks at row 0's headers and asks `any_named()` whether a run has the
    schema-id header at all, and never pays a Python list per row."""

    __slots__ = ("_column",)

    def __init__(self, column: Any) -> None:
        self._column = column  # list<struct<key: string, value: binary>>

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        headers = self._column[row].as_py()
        return None if headers is None else [(h["key"], h["value"]) for h in headers]

    def any_named(self, name: str, rows: Sequence[int]) -> bool:
        """Whether any of `rows` has a header called `name` (one pass in C)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        taken = self._column.take(pa.array(rows, pa.int64()))
        keys = pc.list_flatten(taken).field("key")
        return bool(len(keys)) and bool(pc.any(pc.equal(keys, name)).as_py())


def _headers_of(column: Any) -> HeaderColumn | None:
    """A headers column as the deserializers take it; None when no row has
    a header (the common case, found without a Python object per row)."""
    import pyarrow.compute as pc

    if column.null_count == len(column) or not pc.sum(pc.list_value_length(column)).as_py():
        return None
    return HeaderColumn(column)


class ArrowDeserializers:
    """A consumer's key and value deserializers as the Arrow path uses them:
    those with deserialize_arrow turn their column of a take into typed
    Arrow columns; any other deserializer leaves the column raw (the Arrow
    path never calls per-record deserializers)."""

    __slots__ = ("_fields",)

    def __init__(self, key_deserializer: Any, value_deserializer: Any) -> None:
        self._fields: list[tuple[str, ArrowDeserializer]] = [
            (name, d) for name, d in (("key", key_deserializer), ("value", value_deserializer))
            if is_arrow_deserializer(d)]

    def __bool__(self) -> bool:
        return bool(self._fields)

    def deserialize(self, batch: Any) -> Any:
        """The leading rows of an Arrow take whose key and value columns each
        decode into one type, those columns decoded: fewer rows than `batch`
        where a column's type would change or a row fails (the caller gives
        the rest back: a take starting there begins the new type, or raises
        the error). Raises when row 0 fails."""
        import pyarrow as pa

        runs = partition_rows(batch)
        cut = batch.num_rows
        decoded: dict[str, Any] = {}
        for name, deserializer in self._fields:
            pieces: list[Any] = []
            column, offsets, headers = batch.column(name), batch.column("offset"), batch.column("headers")
            whole = self._whole_take(deserializer, column, runs, cut, offsets, headers, name)
            if whole is not None:
                decoded[name] = [whole]
                cut = min(cut, len(whole))  # a failing row, or another type, from there on
                continue
            for run in runs:
                if run.start >= cut:
                    break
                length = run.end - run.start
                try:
                    piece = deserializer.deserialize_arrow(
                        column.slice(run.start, length), run.topic, run.partition,
                        offsets.slice(run.start, length), _headers_of(headers.slice(run.start, length)), name)
                except Exception:
                    if run.start == 0:
                        raise
                    cut = run.start  # a take from here raises it
                    break
                if not pa.types.is_null(piece.type):
                    known = next((p.type for p in pieces if not pa.types.is_null(p.type)), None)
                    if known is not None and piece.type != known:
                        cut = run.start  # another type: the next take starts with it
                        break
                pieces.append(piece)
                if len(piece) < length:
                    cut = min(cut, run.start + len(piece))
                    break
            decoded[name] = pieces
        out = batch.slice(0, cut)
        for name, pieces in decoded.items():
            typed = next((p.type for p in pieces if not pa.types.is_null(p.type)), pa.null())
            if len(pieces) == 1 and pieces[0].type == typed:
                column = pieces[0]  # no copy
            elif pieces:
                column = pa.concat_arrays([p if p.type == typed else pa.nulls(len(p), typed) for p in pieces])
            else:
                column = pa.nulls(0, typed)
            index = out.schema.get_field_index(name)
            out = out.set_column(index, pa.field(name, typed), column.slice(0, cut))
        return out

    @staticmethod
    def _whole_take(deserializer: Any, column: Any, runs: list[PartitionRows], cut: int, offsets: Any,
                    headers: Any, name: str) -> Any:
        """The whole column decoded in one call, when the deserializer takes
        a column spanning partitions (`arrow_across_partitions`) and the take
        holds several partitions of one topic, the first with a row that is
        not null (the one row that can raise is then the first partition's,
        which the call names); else None. What it returns or raises is what the
        partition-by-partition calls would have come to (the leading rows of
        one type; the first row's error). One call instead of
        one a partition: with 8 partitions in a take, the Python around each
        call cost about 0.15 µs a record, next to the C decoder's own 0.5 µs
        for the Avro benchmark event."""
        if (not getattr(deserializer, "arrow_across_partitions", False) or len(runs) < 2 or runs[0].start != 0
                or cut != len(column) or any(run.topic != runs[0].topic for run in runs)):
            return None
        if column.slice(0, runs[0].end).null_count == runs[0].end:
            # the first partition's rows are all null: the call would raise for
            # the next partition's first row (naming the first partition)
            # where the per-partition calls deliver the null rows first and
            # raise from the next take
            return None
        return deserializer.deserialize_arrow(column, runs[0].topic, runs[0].partition, offsets,
                                              _headers_of(headers), name)
