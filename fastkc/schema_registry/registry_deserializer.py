"""What confluent-kafka's Avro, Protobuf and JSON Schema deserializers share,
written once: `RegistryDeserializer`, the base of fastkc's three.

    deserializer(value, SerializationContext(topic, MessageField.VALUE, headers))   # one value
    deserializer.deserialize_many(values, topic, partition, offsets, headers_list)  # a batch (records)
    deserializer.deserialize_arrow(column, topic, partition, offsets, headers_list) # a batch (Arrow)

The base owns everything that is not the format: confluent-kafka's
configuration keys, the wire framing (the 5-byte prefix or the schema-id
header; Protobuf's message indexes), the writer schema from the registry (its
ids fetched once per batch, off the per-value path), the reader schema
(`use.latest.version`, the subject name strategies), `from_dict`, the typed
errors naming topic, partition, offset and schema id, and the batch plans:

- records: each run of values sharing one frame prefix is decoded in one
  C call (`Codec.decode_prefixed`), with no Python step per value; values
  framed by headers are grouped per schema and decoded a group per call;
- Arrow: the longest leading run of rows sharing one schema becomes one
  typed column (`Codec.decode_arrow_column`); nulls are put back in place.

A format subclass says how a registry schema becomes a `Codec` (the
compiled decoder of one writer schema, or of one (writer, reader) pair),
through the hooks at the bottom of the class. A Codec's failures are
`PayloadReadError`s carrying the index of the failing payload.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from fastkc.deserializers import HeaderColumn
from fastkc.schema_registry.cache import LruCache
from fastkc.schema_registry.errors import (
    SchemaFramingError,
    SchemaRegistryError,
    SchemaRegistryUnreachableError,
)
from fastkc.schema_registry.framing import (
    KEY_SCHEMA_ID_HEADER,
    VALUE_SCHEMA_ID_HEADER,
    Frame,
    split_record,
    split_value,
)
from fastkc.schema_registry.payload_errors import PayloadReadError
from fastkc.schema_registry.serialization import (
    ContextLike,
    DeserializationError,
    DeserializerConfigurationError,
    Headers,
    MessageField,
    PayloadDecodeError,
    SerializationContext,
    UnreachableWriterSchemaError,
    ValueFramingError,
    WriterSchemaError,
    WrongSchemaTypeError,
)

if TYPE_CHECKING:
    from fastkc.schema_registry.client import ResolvedSchema, Schema, SchemaRegistryClient

__all__ = ["Codec", "RegistryDeserializer", "Reader", "RawPayloadCodec"]

FromDict = Callable[[Any, Any], object]

# Codecs and parsed writer schemas kept per deserializer.
CODEC_CACHE_SIZE = 1000

_STRATEGY_TYPES = ("TOPIC", "RECORD", "TOPIC_RECORD", "ASSOCIATED")
# confluent-kafka's own schema.id.deserializer functions, by name: the dual one
# (the header when present, else the prefix) is the default.
_SCHEMA_ID_DESERIALIZERS = {"dual_schema_id_deserializer": True, "prefix_schema_id_deserializer": False}

# The keys every one of confluent-kafka's deserializers takes, and their defaults.
COMMON_CONF: dict[str, Any] = {
    "use.latest.version": False,
    "use.latest.with.metadata": None,
    "subject.name.strategy.type": None,
    "subject.name.strategy.conf": None,
    "subject.name.strategy": None,
    "schema.id.deserializer": None,
}


class Codec(Protocol):
    """The compiled decoder of one schema (or one writer, reader pair).
    Each method raises a PayloadReadError whose `index` is the failing
    payload's position in its input."""

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        """Each payload's value."""

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """The values of the run of `values[start:]` that start with `prefix`
        (ending before the first that does not, or is None), each read
        after the prefix; [] when values[start] is not `bytes`."""

    def decode_arrow_column(self, column: Any, skip: int) -> Any:
        """A pyarrow binary column (no nulls) as a typed pyarrow.Array, each
        row read from byte `skip`."""


class RawPayloadCodec:
    """The payloads themselves, unread: confluent-kafka returns the bytes of
    a value whose writer schema is Avro `bytes`, and so does fastkc."""

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        return [bytes(p) for p in payloads]

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        out: list[Any] = []
        cut = len(prefix)
        for i in range(start, len(values)):
            value = values[i]
            if type(value) is not bytes or not value.startswith(prefix):
                break
            out.append(value[cut:])
        return out

    def decode_arrow_column(self, column: Any, skip: int) -> Any:
        import pyarrow.compute as pc

        return pc.binary_slice(column, skip) if skip else column


@dataclass(frozen=True)
class Reader:
    """A reader schema in the subclass's parsed form, and the text that keys the codec cache."""

    schema: Any
    key: str


def field_name(ctx: ContextLike) -> str:
    # confluent-kafka's MessageField and fastkc's both str() to "key" / "value".
    return str(ctx.field)


def header_pairs(headers: Headers | None) -> list[tuple[str, bytes | None]] | None:
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


def _any_named(headers_list: Sequence[Headers | None], name: str, rows: Sequence[int]) -> bool:
    """Whether any of `rows` has a header called `name`: in one pass over
    an Arrow take's HeaderColumn, else row by row."""
    if isinstance(headers_list, HeaderColumn):
        return headers_list.any_named(name, rows)
    return any(key == name for row in rows for key, _ in header_pairs(headers_list[row]) or ())


def _int_at(values: Sequence[Any], i: int) -> int:
    """values[i] (an offset, a partition) of a list or of a pyarrow array."""
    value = values[i]
    return int(value.as_py() if hasattr(value, "as_py") else value)


def resolve_writer(registry: SchemaRegistryClient, key: int | str, schema_type: str, topic: str, partition: int,
                   offset: int) -> ResolvedSchema:
    """The schema a frame names (`key`: its id or GUID), with its references,
    checked to be of `schema_type`. The errors are typed and name the record
    and the id: the registry unreachable, the id unknown, another type."""
    try:
        resolved = registry.resolve(key)
    except SchemaRegistryUnreachableError as exc:
        raise UnreachableWriterSchemaError(str(exc), topic, partition, offset, key) from exc
    except SchemaRegistryError as exc:
        raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc
    if resolved.schema.schema_type != schema_type:
        raise WrongSchemaTypeError("the frame names a {0} schema, not {1}".format(
            resolved.schema.schema_type, _FORMAT_NAMES.get(schema_type, schema_type)), topic, partition, offset, key)
    return resolved


_FORMAT_NAMES = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}


class RegistryDeserializer:
    """The base of AvroDeserializer, ProtobufDeserializer and JSONDeserializer
    (see the module's docstring); not used on its own."""

    # The registry's name of the format ("AVRO", "PROTOBUF", "JSON").
    SCHEMA_TYPE: ClassVar[str] = ""
    # Whether frames carry Protobuf's message indexes after the schema id.
    MESSAGE_INDEXES: ClassVar[bool] = False
    # The subclass's own conf keys and their defaults (beyond COMMON_CONF).
    EXTRA_CONF: ClassVar[Mapping[str, Any]] = {}
    # What a codec raises when it cannot be built for a schema.
    SCHEMA_ERRORS: ClassVar[tuple[type[Exception], ...]] = ()
    # Whether the Arrow path takes a codec of its own (Protobuf with a
    # message_type: messages for records, the C decoder for Arrow).
    SEPARATE_ARROW_CODEC: ClassVar[bool] = False
    # deserialize_arrow() takes a column spanning several partitions of a
    # topic whose first non-null row is the named partition's (only that row
    # can raise): fastkc.deserializers decodes a whole Arrow take in one call.
    arrow_across_partitions: ClassVar[bool] = True

    def __init__(self, schema_registry_client: SchemaRegistryClient | None, from_dict: FromDict | None,
                 conf: Mapping[str, Any] | None, *, registry_required: bool = True) -> None:
        if schema_registry_client is not None or registry_required:
            if not (hasattr(schema_registry_client, "resolve") and hasattr(schema_registry_client, "prefetch")):
                raise DeserializerConfigurationError(
                    "schema_registry_client must be a fastkc.schema_registry.SchemaRegistryClient "
                    "(same configuration as confluent-kafka's), not {0}".format(type(schema_registry_client).__name__))
        self._registry = schema_registry_client
        settings = dict(COMMON_CONF)
        settings.update(self.EXTRA_CONF)
        settings.update(conf or {})
        self._use_latest_version = settings.pop("use.latest.version")
        if not isinstance(self._use_latest_version, bool):
            raise DeserializerConfigurationError("use.latest.version must be a boolean value")
        self._latest_metadata = settings.pop("use.latest.with.metadata")
        if self._latest_metadata is not None:
            if not isinstance(self._latest_metadata, dict):
                raise DeserializerConfigurationError("use.latest.with.metadata must be a dict value")
            if not hasattr(schema_registry_client, "get_latest_with_metadata"):
                raise DeserializerConfigurationError(
                    "use.latest.with.metadata needs a registry client with get_latest_with_metadata")
        self._strategy = self._subject_strategy(settings.pop("subject.name.strategy.type"),
                                                settings.pop("subject.name.strategy.conf"),
                                                settings.pop("subject.name.strategy"))
        self._read_headers = self._schema_id_source(settings.pop("schema.id.deserializer"))
        self._extra_conf = {key: settings.pop(key) for key in self.EXTRA_CONF}
        if settings:
            raise DeserializerConfigurationError("Unrecognized properties: {0}".format(", ".join(settings)))
        if from_dict is not None and not callable(from_dict):
            raise DeserializerConfigurationError(
                "from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object")
        self._from_dict = from_dict
        self._codecs: LruCache[tuple[Any, ...], Codec] = LruCache(CODEC_CACHE_SIZE)
        self._writers: LruCache[int | str, Any] = LruCache(CODEC_CACHE_SIZE)
        self._latest_readers: LruCache[Any, Reader] = LruCache(CODEC_CACHE_SIZE)
        self._reader: Reader | None = None

    # --- confluent-kafka's surface -------------------------------------------------------------

    def __call__(self, data: bytes | None, ctx: ContextLike | None = None) -> Any:
        """One value (None → None), as confluent-kafka's deserializer."""
        if data is None:
            return None
        topic = ctx.topic if ctx is not None else ""
        headers = ctx.headers if ctx is not None else None
        is_key = ctx is not None and field_name(ctx) == MessageField.KEY.value
        frame = self._split(data, headers, is_key, topic, -1, -1)
        codec = self._codec(frame, ctx, topic, -1, -1)
        try:
            value = codec.decode_many([frame.payload])[0]
        except PayloadReadError as exc:
            raise PayloadDecodeError(str(exc), topic, -1, -1, frame.schema_key) from exc
        return self._finish(value, ctx)

    # --- the batch entry point (records) -------------------------------------------------------

    def deserialize_many(self, values: Sequence[bytes | None], topic: str, partition: int, offsets: Sequence[int],
                         headers_list: Sequence[Headers | None] | None = None,
                         field: MessageField = MessageField.VALUE) -> list[Any]:
        """The values of one partition's records, in order (None stays None).

        `offsets[i]` (and `headers_list[i]`) belong to `values[i]`; `field`
        says whether these are keys or values (which schema-id header counts)."""
        if len(offsets) != len(values) or (headers_list is not None and len(headers_list) != len(values)):
            raise ValueError("values, offsets and headers_list must have the same length")
        if not self._read_headers or headers_list is None or not any(headers_list):
            out = self._many_prefixed(values, topic, partition, offsets, field)
        else:
            out = self._many_framed_each(values, topic, partition, offsets, headers_list, field)
        if self._from_dict is not None:
            for i, value in enumerate(out):
                if values[i] is not None:
                    out[i] = self._from_dict(value, SerializationContext(
                        topic, field, headers_list[i] if headers_list is not None else None))
        return out

    def _many_prefixed(self, values: Sequence[bytes | None], topic: str, partition: int, offsets: Sequence[int],
                       field: MessageField) -> list[Any]:
        """deserialize_many() when no schema-id header can count: each run of
        values sharing one frame prefix is cut and decoded in one C call
        (Codec.decode_prefixed), with no Python step per value. The first
        bad value in offset order is the one raised."""
        listed = values if type(values) is list else list(values)
        is_key = field == MessageField.KEY
        context = SerializationContext(topic, field)
        out: list[Any] = [None] * len(listed)
        asked: set[int | str] = set()  # the ids prefetched in this call
        i = 0
        while i < len(listed):
            data = listed[i]
            if data is None:
                i += 1
                continue
            frame = self._split(data, None, is_key, topic, partition, offsets[i])
            if self._needs_writer() and frame.schema_key not in asked and self._writers.get(frame.schema_key) is None:
                asked.update(self._prefetch_unseen(listed, i, is_key, topic, partition, offsets))
            codec = self._codec(frame, context, topic, partition, offsets[i])
            try:
                run = codec.decode_prefixed(listed, i, bytes(data[:frame.payload_offset]))
                if not run:  # a bytes-like value that is not bytes: on its own
                    run = codec.decode_many([frame.payload])
            except PayloadReadError as exc:
                raise PayloadDecodeError(str(exc), topic, partition, offsets[i + max(0, exc.index)],
                                         frame.schema_key) from exc
            out[i:i + len(run)] = run
            i += len(run)
        return out

    def _prefetch_unseen(self, values: list[Any], start: int, is_key: bool, topic: str, partition: int,
                         offsets: Sequence[int]) -> set[int | str]:
        """On a schema id not seen before: the ids of the rest of the batch
        (up to its first unframed value) fetched together, so the batch
        waits for the registry once, not once per new id. Returns them."""
        groups: dict[int | str, list[tuple[int, Frame]]] = {}
        for j in range(start, len(values)):
            if values[j] is None:
                continue
            try:
                frame = self._split(values[j], None, is_key, topic, partition, offsets[j])
            except ValueFramingError:
                break  # raised when the run reaches it
            if self._writers.get(frame.schema_key) is None:
                groups.setdefault(frame.schema_key, []).append((j, frame))
        self._prefetch(groups, topic, partition, offsets)
        return set(groups)

    def _many_framed_each(self, values: Sequence[bytes | None], topic: str, partition: int,
                          offsets: Sequence[int], headers_list: Sequence[Headers | None],
                          field: MessageField) -> list[Any]:
        """deserialize_many() when rows carry headers that may name their
        schema: framed one by one, then decoded per schema (and, for
        Protobuf, per message)."""
        is_key = field == MessageField.KEY
        out: list[Any] = [None] * len(values)
        groups: dict[tuple[int | str, tuple[int, ...] | None], list[tuple[int, Frame]]] = {}
        for i, data in enumerate(values):
            if data is None:
                continue
            frame = self._split(data, headers_list[i] if headers_list is not None else None, is_key, topic,
                                partition, offsets[i])
            groups.setdefault((frame.schema_key, frame.message_indexes), []).append((i, frame))
        if self._needs_writer():
            by_schema: dict[int | str, list[tuple[int, Frame]]] = {}
            for (key, _), members in groups.items():
                by_schema.setdefault(key, []).extend(members)
            self._prefetch(by_schema, topic, partition, offsets)
        context = SerializationContext(topic, field)
        for (key, _), members in groups.items():
            first_offset = offsets[members[0][0]]
            codec = self._codec(members[0][1], context, topic, partition, first_offset)
            try:
                decoded = codec.decode_many([frame.payload for _, frame in members])
            except PayloadReadError as exc:
                offset = offsets[members[exc.index][0]] if 0 <= exc.index < len(members) else first_offset
                raise PayloadDecodeError(str(exc), topic, partition, offset, key) from exc
            for (i, _), value in zip(members, decoded):
                out[i] = value
        return out

    # --- the Arrow entry point ------------------------------------------------------------------

    def deserialize_arrow(self, values: Any, topic: str, partition: int, offsets: Sequence[int],
                          headers_list: Sequence[Headers | None] | None = None,
                          field: MessageField = MessageField.VALUE) -> Any:
        """One partition's raw keys or values (a pyarrow binary column, nulls
        allowed; `offsets[i]` is row i's offset, `headers_list[i]` its
        headers, None when no row has any) as a typed pyarrow.Array, decoded
        in C (each format's guide gives the mapping).

        Returns the longest leading run of rows that decodes into one Arrow
        type: shorter than `values` where the next row's writer schema maps
        to another type (no reader schema: two schemas never share a
        column), or where the next row cannot be decoded (a call starting
        at that row raises the typed error naming its offset). Raises only
        for row 0. `from_dict` does not apply (the rows stay columns).

        Only the first row that is not null can raise, and `partition` and
        `offsets` serve only to name it: a column may span several of
        `topic`'s partitions when its first non-null row is `partition`'s
        (`arrow_across_partitions` says so to fastkc.deserializers)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_binary(values.type):
            # binary_view (a consumer with arrow_zero_copy=True) or
            # large_binary: the framing below and the codecs read binary's
            # offsets, and pyarrow has no binary_slice kernel for binary_view
            values = values.cast(pa.binary())
        rows = len(values)
        if values.null_count:
            valid = pc.is_valid(values)
            present = values.filter(valid)
            # present[i] is values[row_of[i]]
            row_of: Sequence[int] = pc.indices_nonzero(valid).to_pylist()
        else:
            valid, present, row_of = None, values, range(rows)
        context = SerializationContext(topic, field)
        pieces: list[Any] = []
        done = 0  # rows of `present` decoded
        while done < len(present):
            try:
                piece = self._arrow_run(present.slice(done), row_of[done:], topic, partition, offsets, headers_list,
                                        field, context)
            except DeserializationError:
                if done == 0:
                    raise
                break
            if pieces and piece.type != pieces[0].type:
                break
            pieces.append(piece)
            done += len(piece)
            if len(piece) == 0:
                break
        decoded = pa.concat_arrays(pieces) if len(pieces) > 1 else pieces[0] if pieces else pa.nulls(0)
        if valid is None:
            return decoded
        covered = rows if done == len(present) else row_of[done]
        # null rows back in place: row i takes decoded[count of valid rows before i], or null
        positions = pc.subtract(pc.cumulative_sum(valid.cast(pa.int64())), 1)
        indices = pc.if_else(valid, positions, pa.scalar(None, pa.int64())).slice(0, covered)
        return decoded.take(indices) if len(decoded) else pa.nulls(covered)

    def _arrow_run(self, present: Any, row_of: Sequence[int], topic: str, partition: int, offsets: Sequence[int],
                   headers_list: Sequence[Headers | None] | None, field: MessageField,
                   context: SerializationContext) -> Any:
        """The leading rows of `present` (no nulls; present[i] is the
        partition's row row_of[i]) written with row 0's schema, decoded;
        fewer when a row fails (its own call raises). Raises for row 0."""
        import pyarrow as pa
        import pyarrow.compute as pc

        is_key = field == MessageField.KEY
        at = row_of[0]
        first = present[0].as_py()
        headers = headers_list[at] if headers_list is not None else None
        frame = self._split(first, headers, is_key, topic, partition, _int_at(offsets, at))
        wanted = KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER
        header_framed = frame.payload_offset == 0 or (
            self._read_headers and headers_list is not None and _any_named(headers_list, wanted, row_of))
        if header_framed:
            # the header form: framed row by row, in Python
            run = [frame.payload]
            for i in range(1, len(present)):
                row = row_of[i]
                try:
                    more = self._split(present[i].as_py(), headers_list[row] if headers_list is not None else None,
                                       is_key, topic, partition, _int_at(offsets, row))
                except DeserializationError:
                    break
                if (more.schema_key, more.message_indexes) != (frame.schema_key, frame.message_indexes):
                    break
                run.append(more.payload)
            column = pa.array(run, pa.binary())
            skip = 0
        else:
            # the prefix form: the rows sharing row 0's frame bytes, found in one pass in C
            prefix = pa.scalar(first[:frame.payload_offset], pa.binary())
            differs = pc.index(pc.equal(pc.binary_slice(present, 0, frame.payload_offset), prefix), False).as_py()
            column = present if differs < 0 else present.slice(0, differs)
            skip = frame.payload_offset
        codec = self._codec(frame, context, topic, partition, _int_at(offsets, at), arrow=True)
        try:
            return codec.decode_arrow_column(column, skip)
        except PayloadReadError as exc:
            # the rows before the bad one (or the one past Arrow's int32 offsets), decoded again
            if exc.index > 0:
                return codec.decode_arrow_column(column.slice(0, exc.index), skip)
            raise PayloadDecodeError(str(exc), topic, partition, _int_at(offsets, at), frame.schema_key) from exc
        except self.SCHEMA_ERRORS as exc:  # a type with no Arrow mapping
            raise WriterSchemaError(str(exc), topic, partition, _int_at(offsets, at), frame.schema_key) from exc

    # --- internals ----------------------------------------------------------------------------

    def _finish(self, value: Any, ctx: ContextLike | None) -> Any:
        if self._from_dict is None:
            return value
        if ctx is None:
            # confluent-kafka's error for the same call
            raise TypeError("SerializationContext cannot be None")
        return self._from_dict(value, ctx)

    def _split(self, data: bytes, headers: Headers | None, is_key: bool, topic: str, partition: int,
               offset: int) -> Frame:
        try:
            if self._read_headers and headers:
                return split_record(data, header_pairs(headers), is_key=is_key, protobuf=self.MESSAGE_INDEXES,
                                    topic=topic, partition=partition, offset=offset)
            return split_value(data, protobuf=self.MESSAGE_INDEXES, topic=topic, partition=partition, offset=offset)
        except SchemaFramingError as exc:
            raise ValueFramingError(exc.reason, topic, partition, offset, exc.schema_id) from exc

    def _prefetch(self, groups: Mapping[int | str, list[tuple[int, Frame]]], topic: str, partition: int,
                  offsets: Sequence[int]) -> None:
        assert self._registry is not None
        try:
            self._registry.prefetch(groups)
        except SchemaRegistryError:
            # prefetch raises the first failure without its id: asking per id
            # names the first record whose schema cannot be had (and a failure
            # that has passed meanwhile costs nothing more).
            for key, members in groups.items():
                self._writer_schema(key, topic, partition, offsets[members[0][0]])

    def _writer_schema(self, key: int | str, topic: str, partition: int, offset: int) -> Any:
        """The writer schema a frame names, parsed by the subclass (cached)."""
        cached = self._writers.get(key)
        if cached is not None:
            return cached
        if self._registry is None:
            raise WriterSchemaError("no schema_registry_client to read the writer schema from", topic, partition,
                                    offset, key)
        resolved = resolve_writer(self._registry, key, self.SCHEMA_TYPE, topic, partition, offset)
        try:
            writer = self._parse_writer(key, resolved)
        except self.SCHEMA_ERRORS as exc:
            raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc
        self._writers.put(key, writer)
        return writer

    def _codec(self, frame: Frame, ctx: ContextLike | None, topic: str, partition: int, offset: int, *,
               arrow: bool = False) -> Codec:
        """The codec of a frame's values (cached per schema, message and reader)."""
        writer = self._writer_schema(frame.schema_key, topic, partition, offset) if self._needs_writer() else None
        reader = self._reader_for(ctx, writer)
        cache_key = (frame.schema_key, frame.message_indexes, reader.key if reader is not None else None,
                     arrow and self.SEPARATE_ARROW_CODEC)
        codec = self._codecs.get(cache_key)
        if codec is None:
            try:
                codec = self._make_codec(writer, frame, reader, arrow)
            except self.SCHEMA_ERRORS as exc:
                raise WriterSchemaError(str(exc), topic, partition, offset, frame.schema_key) from exc
            self._codecs.put(cache_key, codec)
        return codec

    def _reader_for(self, ctx: ContextLike | None, writer: Any) -> Reader | None:
        """The reader schema of a value: the subject's latest (with
        use.latest.*), else the one given, else None (the writer's shape)."""
        if ctx is None or self._registry is None or not (self._use_latest_version
                                                         or self._latest_metadata is not None):
            return self._reader
        subject = self._strategy(ctx, None)
        if subject is None:
            record_name = self._record_name(writer)
            if record_name:
                subject = self._strategy(ctx, record_name)
        if subject is None:
            return self._reader
        failures: tuple[type[Exception], ...] = (SchemaRegistryError, *self.SCHEMA_ERRORS)
        try:
            if self._latest_metadata is not None:
                latest = self._registry.get_latest_with_metadata(  # type: ignore[attr-defined]
                    subject, self._latest_metadata, deleted=True)
            else:
                latest = self._registry.get_latest_version(subject)
            reader = self._latest_readers.get(latest.schema)
            if reader is None:
                reader = self._reader_from(latest.schema)
                self._latest_readers.put(latest.schema, reader)
        except failures as exc:
            raise WriterSchemaError("the reader schema of subject {0!r}: {1}".format(subject, exc),
                                    ctx.topic) from exc
        return reader

    @staticmethod
    def _subject_strategy(kind: Any, strategy_conf: Any,
                          strategy: Any) -> Callable[[ContextLike, str | None], str | None]:
        """How a subject is named (used only with use.latest.*): a given
        callable first, else the named type; ASSOCIATED (confluent's default,
        which asks the registry's associations first) falls back to TOPIC."""
        if strategy_conf is not None and not isinstance(strategy_conf, dict):
            raise DeserializerConfigurationError("subject.name.strategy.conf must be a dict")
        if strategy is not None:
            if not callable(strategy):
                raise DeserializerConfigurationError("subject.name.strategy must be callable")
            try:
                takes_client = len(inspect.signature(strategy).parameters) >= 4
            except (TypeError, ValueError):
                takes_client = False
            if takes_client:
                # confluent-kafka's four-argument form: (ctx, record_name, client, conf)
                return lambda ctx, record_name: strategy(ctx, record_name, None, strategy_conf)
            return lambda ctx, record_name: strategy(ctx, record_name)
        name = "ASSOCIATED" if kind is None else str(getattr(kind, "name", kind)).upper()
        if name not in _STRATEGY_TYPES:
            raise DeserializerConfigurationError("subject.name.strategy.type must be one of {0}, not {1!r}".format(
                ", ".join(_STRATEGY_TYPES), kind))
        if name == "RECORD":
            return lambda ctx, record_name: record_name
        if name == "TOPIC_RECORD":
            return lambda ctx, record_name: (None if record_name is None
                                             else "{0}-{1}".format(ctx.topic, record_name))
        return lambda ctx, record_name: "{0}-{1}".format(ctx.topic, field_name(ctx))

    @staticmethod
    def _schema_id_source(deserializer: Any) -> bool:
        """Whether the schema-id headers are read (confluent's dual default) or only the prefix."""
        if deserializer is None:
            return True
        read_headers = _SCHEMA_ID_DESERIALIZERS.get(getattr(deserializer, "__name__", ""))
        if read_headers is None:
            raise DeserializerConfigurationError(
                "schema.id.deserializer: only confluent-kafka's dual_schema_id_deserializer and "
                "prefix_schema_id_deserializer are supported, not {0!r}".format(deserializer))
        return read_headers

    # --- the format's hooks ---------------------------------------------------------------------

    def _needs_writer(self) -> bool:
        """Whether decoding needs the writer schema from the registry (a
        Protobuf deserializer with a message_type does not)."""
        return True

    def _parse_writer(self, key: int | str, resolved: ResolvedSchema) -> Any:
        """The registry's writer schema (`key`: its id or GUID) (with its references) in the form the
        codec is built from; raises one of SCHEMA_ERRORS."""
        raise NotImplementedError

    def _make_codec(self, writer: Any, frame: Frame, reader: Reader | None, arrow: bool) -> Codec:
        """The codec of values framed by `frame`, written with `writer`
        (None when _needs_writer() is False), read as `reader`; `arrow`: the
        one decode_arrow_column is called on."""
        raise NotImplementedError

    def _reader_from(self, schema: str | Schema) -> Reader:
        """A reader schema from text or from a registry Schema."""
        raise NotImplementedError

    def _record_name(self, writer: Any) -> str | None:
        """The writer's record (or message) name, for the RECORD strategies."""
        return None
