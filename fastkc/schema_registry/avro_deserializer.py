"""AvroDeserializer: confluent-kafka's AvroDeserializer, decoded in C.

    from fastkc.schema_registry import AvroDeserializer, SchemaRegistryClient
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": url}))
    deserializer(value, SerializationContext(topic, MessageField.VALUE, headers))   # one value
    deserializer.deserialize_many(values, topic, partition, offsets, headers_list)  # a batch

Same constructor and conf keys as confluent-kafka 2.16's, and the same
values: the writer schema comes from the registry by the id (or GUID) the
value's frame names, with its references; with `schema_str` (or
`use.latest.version`) every value is resolved to that reader schema by Avro's
rules; `from_dict(obj, ctx)` is applied last. The decoding is a compiled
`AvroDecoder` per (writer schema, reader schema), kept in a bounded cache.

`deserialize_many` is the batch entry point for fastkc's consumer: values
are grouped by schema id, the ids not seen yet are fetched once together
(`client.prefetch`), each group is decoded in one C call, and the values come
back in record order. Every failure is a DeserializationError subclass
naming topic, partition, offset and schema id (serialization.py).

Not supported (refused when configured, never silently ignored):
`return_record_name=True`, data-contract rules (`rule_conf`,
`rule_registry`), a custom `schema.id.deserializer`.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastkc.deserializers import HeaderColumn
from fastkc.schema_registry import avro_schema
from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_errors import AvroDecodeError, AvroSchemaError
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
    from fastkc.schema_registry.client import Schema, SchemaRegistryClient

__all__ = ["AvroDeserializer"]

FromDict = Callable[[Any, Any], object]

# Decoders kept per deserializer: one per (writer schema, reader schema) seen.
_DECODER_CACHE_SIZE = 1000
# A reader schema's references are followed at most this many schemas deep in total.
_MAX_READER_REFERENCES = 1000

_STRATEGY_TYPES = ("TOPIC", "RECORD", "TOPIC_RECORD", "ASSOCIATED")
# confluent-kafka's own schema.id.deserializer functions, by name: the dual one
# (the header when present, else the prefix) is the default.
_SCHEMA_ID_DESERIALIZERS = {"dual_schema_id_deserializer": True, "prefix_schema_id_deserializer": False}

_DEFAULT_CONF: dict[str, Any] = {
    "use.latest.version": False,
    "use.latest.with.metadata": None,
    "subject.name.strategy.type": None,
    "subject.name.strategy.conf": None,
    "subject.name.strategy": None,
    "schema.id.deserializer": None,
}


@dataclass(frozen=True)
class _Reader:
    """A reader schema: its JSON (references inlined) and the text that keys the decoder cache."""

    schema: Any
    key: str


def _field_name(ctx: ContextLike) -> str:
    # confluent-kafka's MessageField and fastkc's both str() to "key" / "value".
    return str(ctx.field)


def _any_named(headers_list: Sequence[Headers | None], name: str, rows: Sequence[int]) -> bool:
    """Whether any of `rows` has a header called `name`: in one pass over
    an Arrow take's HeaderColumn, else row by row."""
    if isinstance(headers_list, HeaderColumn):
        return headers_list.any_named(name, rows)
    return any(key == name for row in rows for key, _ in _header_pairs(headers_list[row]) or ())


def _header_pairs(headers: Headers | None) -> list[tuple[str, bytes | None]] | None:
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else "{0}.{1}".format(namespace, name)


def _defined_name(node: Mapping[str, Any], enclosing: str) -> tuple[str, str]:
    """(full name, namespace its children inherit) of a named type's JSON."""
    name = node.get("name")
    if not isinstance(name, str):
        return "", enclosing
    namespace = node.get("namespace", enclosing)
    full = _full_name(name, namespace if isinstance(namespace, str) else enclosing)
    return full, full.rsplit(".", 1)[0] if "." in full else ""


def inline_references(root: Any, referenced: Sequence[Any]) -> Any:
    """`root` (loaded JSON) with each named type it takes from `referenced`
    (the referenced schemas' loaded JSON) written in at its first use, as one
    self-contained schema: Avro has no import, so this is how a schema with
    registry references becomes one the decoder can parse. Nesting past the
    parser's depth bound is left as is (the parser refuses it)."""
    named: dict[str, Any] = {}
    for schema in referenced:
        if isinstance(schema, dict):
            full, _ = _defined_name(schema, "")
            if full:
                named.setdefault(full, schema)
    if not named:
        return root
    defined: set[str] = set()

    def walk(node: Any, namespace: str, depth: int) -> Any:
        if depth > avro_schema.DEFAULT_MAX_DEPTH:
            return node
        if isinstance(node, str):
            if node in avro_schema.PRIMITIVES:
                return node
            candidates = (_full_name(node, namespace), node)
            if any(c in defined for c in candidates):
                return node
            for candidate in candidates:
                if candidate in named:
                    return walk(named[candidate], "", depth + 1)
            return node
        if isinstance(node, list):
            return [walk(branch, namespace, depth + 1) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            full, inner = _defined_name(node, namespace)
            defined.add(full)
            fields = node.get("fields")
            if kind in ("record", "error") and isinstance(fields, list):
                return dict(node, fields=[dict(f, type=walk(f.get("type"), inner, depth + 1))
                                          if isinstance(f, dict) else f for f in fields])
            return node
        if kind == "array":
            return dict(node, items=walk(node.get("items"), namespace, depth + 1))
        if kind == "map":
            return dict(node, values=walk(node.get("values"), namespace, depth + 1))
        if kind is not None and kind not in avro_schema.PRIMITIVES:
            return dict(node, type=walk(kind, namespace, depth + 1))
        return node

    return walk(root, "", 0)


def writer_schema_json(registry: SchemaRegistryClient, key: int | str, topic: str, partition: int,
                       offset: int) -> Any:
    """The JSON of the Avro writer schema a frame names (`key`: its id or
    GUID), references inlined. The errors are typed and name the record
    (topic, partition, offset) and the id: the registry unreachable, the id
    unknown or its schema malformed, a schema that is not Avro."""
    try:
        resolved = registry.resolve(key)
    except SchemaRegistryUnreachableError as exc:
        raise UnreachableWriterSchemaError(str(exc), topic, partition, offset, key) from exc
    except SchemaRegistryError as exc:
        raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc
    schema_type = resolved.schema.schema_type
    if schema_type != "AVRO":
        raise WrongSchemaTypeError("the frame names a {0} schema, not Avro".format(schema_type),
                                   topic, partition, offset, key)
    try:
        return inline_references(_load(resolved.schema.schema_str, "the writer schema"),
                                 [_load(s.schema_str, "referenced schema {0!r}".format(name))
                                  for name, s in resolved.referenced.items()])
    except AvroSchemaError as exc:
        raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc


def _is_raw_bytes(writer: Any) -> bool:
    # confluent-kafka returns the payload itself, unread, when the writer
    # schema is bytes (with or without a logical type): so does this.
    return writer == "bytes" or (isinstance(writer, dict) and writer.get("type") == "bytes")


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        # a bare primitive name ("string") is valid Avro but not JSON
        if text.strip() in avro_schema.PRIMITIVES:
            return text.strip()
        raise AvroSchemaError("{0} is not JSON: {1}".format(what, exc)) from None


def _offset(offsets: Sequence[Any], i: int) -> int:
    """offsets[i] of a list or of a pyarrow array."""
    value = offsets[i]
    return int(value.as_py() if hasattr(value, "as_py") else value)


def reader_schema_json(registry: Any, schema: Any) -> Any:
    """A reader schema's JSON: from Avro text, or from a registry Schema with
    its references fetched by subject and version (transitively, at most
    _MAX_READER_REFERENCES) and inlined."""
    if isinstance(schema, str):
        return _load(schema, "the reader schema")
    referenced: list[Any] = []
    pending = list(schema.references or ())
    seen: set[tuple[str, int]] = set()
    while pending:
        ref = pending.pop()
        if (ref.subject, ref.version) in seen:
            continue
        if len(seen) >= _MAX_READER_REFERENCES:
            raise AvroSchemaError("the reader schema references more than {0} schemas".format(
                _MAX_READER_REFERENCES))
        seen.add((ref.subject, ref.version))
        imported = registry.get_version(ref.subject, ref.version).schema
        referenced.append(_load(imported.schema_str, "referenced schema {0!r}".format(ref.name)))
        pending.extend(imported.references or ())
    return inline_references(_load(schema.schema_str, "the reader schema"), referenced)


class AvroDeserializer:
    """Avro values with Confluent Schema Registry framing → dicts (or
    `from_dict`'s objects), as confluent-kafka's AvroDeserializer gives.

    Args:
      schema_registry_client: a fastkc.schema_registry.SchemaRegistryClient
      schema_str: the reader schema (Avro JSON text, or a Schema with
        references); None reads each value in its writer's shape
      from_dict: Callable(dict, SerializationContext) -> object
      return_record_name: only False (the decoder gives fastavro's default shape)
      conf: confluent-kafka's keys (`use.latest.version`,
        `use.latest.with.metadata`, `subject.name.strategy`,
        `subject.name.strategy.type`, `subject.name.strategy.conf`,
        `schema.id.deserializer`); others are refused
    """

    def __init__(self, schema_registry_client: SchemaRegistryClient, schema_str: str | Schema | Any | None = None,
                 from_dict: FromDict | None = None, return_record_name: bool = False,
                 conf: Mapping[str, Any] | None = None, rule_conf: Mapping[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        if not (hasattr(schema_registry_client, "resolve") and hasattr(schema_registry_client, "prefetch")):
            raise DeserializerConfigurationError(
                "schema_registry_client must be a fastkc.schema_registry.SchemaRegistryClient "
                "(same configuration as confluent-kafka's), not {0}".format(type(schema_registry_client).__name__))
        self._registry = schema_registry_client
        settings = dict(_DEFAULT_CONF)
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
        if settings:
            raise DeserializerConfigurationError("Unrecognized properties: {0}".format(", ".join(settings)))
        if from_dict is not None and not callable(from_dict):
            raise DeserializerConfigurationError(
                "from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object")
        self._from_dict = from_dict
        if not isinstance(return_record_name, bool):
            raise DeserializerConfigurationError("return_record_name must be a boolean value")
        if return_record_name:
            raise DeserializerConfigurationError("return_record_name=True is not supported by fastkc's decoder")
        if rule_conf or rule_registry is not None:
            raise DeserializerConfigurationError("data-contract rules (rule_conf, rule_registry) are not supported")
        self._decoders: LruCache[tuple[int | str, str | None], AvroDecoder] = LruCache(_DECODER_CACHE_SIZE)
        self._writers: LruCache[int | str, Any] = LruCache(_DECODER_CACHE_SIZE)
        self._latest_readers: LruCache[Any, _Reader] = LruCache(_DECODER_CACHE_SIZE)
        self._reader: _Reader | None = None
        if schema_str is not None:
            if not isinstance(schema_str, str) and not hasattr(schema_str, "schema_str"):
                raise TypeError("You must pass either schema string or schema object")
            try:
                self._reader = self._reader_from(schema_str)
            except AvroSchemaError as exc:
                raise DeserializerConfigurationError("schema_str: {0}".format(exc)) from exc

    # --- confluent-kafka's surface -------------------------------------------------------------

    def __call__(self, data: bytes | None, ctx: ContextLike | None = None) -> Any:
        """One value (None → None), as confluent-kafka's AvroDeserializer."""
        if data is None:
            return None
        topic = ctx.topic if ctx is not None else ""
        headers = ctx.headers if ctx is not None else None
        is_key = ctx is not None and _field_name(ctx) == MessageField.KEY.value
        frame = self._split(data, headers, is_key, topic, -1, -1)
        writer = self._writer_schema(frame.schema_key, topic, -1, -1)
        if _is_raw_bytes(writer):
            value: Any = frame.payload
        else:
            decoder = self._decoder(frame.schema_key, writer, self._reader_for(ctx, writer), topic, -1, -1)
            try:
                value = decoder.decode_many([frame.payload])[0]
            except AvroDecodeError as exc:
                raise PayloadDecodeError(str(exc), topic, -1, -1, frame.schema_key) from exc
        return self._finish(value, ctx)

    # --- the batch entry point -----------------------------------------------------------------

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
        values sharing one 5-byte frame is cut and decoded in one C call
        (Decoder.decode_prefixed), with no Python step per value. The first
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
            if frame.schema_key not in asked and self._writers.get(frame.schema_key) is None:
                asked.update(self._prefetch_unseen(listed, i, is_key, topic, partition, offsets))
            writer = self._writer_schema(frame.schema_key, topic, partition, offsets[i])
            if _is_raw_bytes(writer):
                out[i] = frame.payload
                i += 1
                continue
            decoder = self._decoder(frame.schema_key, writer, self._reader_for(context, writer), topic, partition,
                                    offsets[i])
            try:
                run = decoder.decode_prefixed(listed, i, bytes(data[:frame.payload_offset]))
                if not run:  # a bytes-like value that is not bytes: on its own
                    run = decoder.decode_many([frame.payload])
            except AvroDecodeError as exc:
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
        schema: framed one by one, then decoded per writer schema."""
        is_key = field == MessageField.KEY
        out: list[Any] = [None] * len(values)
        groups: dict[int | str, list[tuple[int, Frame]]] = {}
        for i, data in enumerate(values):
            if data is None:
                continue
            frame = self._split(data, headers_list[i] if headers_list is not None else None, is_key, topic,
                                partition, offsets[i])
            groups.setdefault(frame.schema_key, []).append((i, frame))
        self._prefetch(groups, topic, partition, offsets)
        context = SerializationContext(topic, field)
        for key, members in groups.items():
            first_offset = offsets[members[0][0]]
            writer = self._writer_schema(key, topic, partition, first_offset)
            if _is_raw_bytes(writer):
                for i, frame in members:
                    out[i] = frame.payload
                continue
            decoder = self._decoder(key, writer, self._reader_for(context, writer), topic, partition, first_offset)
            try:
                decoded = decoder.decode_many([frame.payload for _, frame in members])
            except AvroDecodeError as exc:
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
        in C (fastkc/schema_registry/avro_arrow.py gives the mapping).

        Returns the longest leading run of rows that decodes into one Arrow
        type: shorter than `values` where the next row's writer schema maps
        to another type (no reader schema: two schemas never share a
        column), or where the next row cannot be decoded (a call starting
        at that row raises the typed error naming its offset). Raises only
        for row 0. `from_dict` does not apply (the rows stay columns)."""
        import pyarrow as pa
        import pyarrow.compute as pc

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
        frame = self._split(first, headers, is_key, topic, partition, _offset(offsets, at))
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
                                       is_key, topic, partition, _offset(offsets, row))
                except DeserializationError:
                    break
                if more.schema_key != frame.schema_key:
                    break
                run.append(more.payload)
            column = pa.array(run, pa.binary())
            skip = 0
        else:
            # the prefix form: the rows sharing row 0's 5 bytes, found in one pass in C
            prefix = pa.scalar(first[:frame.payload_offset], pa.binary())
            differs = pc.index(pc.equal(pc.binary_slice(present, 0, frame.payload_offset), prefix), False).as_py()
            column = present if differs < 0 else present.slice(0, differs)
            skip = frame.payload_offset
        writer = self._writer_schema(frame.schema_key, topic, partition, _offset(offsets, at))
        if _is_raw_bytes(writer):
            return pc.binary_slice(column, skip) if skip else column
        decoder = self._decoder(frame.schema_key, writer, self._reader_for(context, writer), topic, partition,
                                _offset(offsets, at))
        try:
            return decoder.decode_arrow_column(column, skip)
        except AvroDecodeError as exc:
            # the rows before the bad one (or the one past Arrow's int32 offsets), decoded again
            if exc.index > 0:
                return decoder.decode_arrow_column(column.slice(0, exc.index), skip)
            raise PayloadDecodeError(str(exc), topic, partition, _offset(offsets, at), frame.schema_key) from exc
        except AvroSchemaError as exc:  # a reader type with no Arrow mapping
            raise WriterSchemaError(str(exc), topic, partition, _offset(offsets, at), frame.schema_key) from exc

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
                return split_record(data, _header_pairs(headers), is_key=is_key, topic=topic,
                                    partition=partition, offset=offset)
            return split_value(data, topic=topic, partition=partition, offset=offset)
        except SchemaFramingError as exc:
            raise ValueFramingError(exc.reason, topic, partition, offset, exc.schema_id) from exc

    def _prefetch(self, groups: Mapping[int | str, list[tuple[int, Frame]]], topic: str, partition: int,
                  offsets: Sequence[int]) -> None:
        try:
            self._registry.prefetch(groups)
        except SchemaRegistryError:
            # prefetch raises the first failure without its id: asking per id
            # names the first record whose schema cannot be had (and a failure
            # that has passed meanwhile costs nothing more).
            for key, members in groups.items():
                self._writer_schema(key, topic, partition, offsets[members[0][0]])

    def _writer_schema(self, key: int | str, topic: str, partition: int, offset: int) -> Any:
        """The writer schema's JSON, references inlined."""
        cached = self._writers.get(key)
        if cached is not None:
            return cached
        writer = writer_schema_json(self._registry, key, topic, partition, offset)
        self._writers.put(key, writer)
        return writer

    def _decoder(self, key: int | str, writer: Any, reader: _Reader | None, topic: str, partition: int,
                 offset: int) -> AvroDecoder:
        cache_key = (key, reader.key if reader is not None else None)
        decoder = self._decoders.get(cache_key)
        if decoder is None:
            try:
                decoder = AvroDecoder(writer, reader.schema if reader is not None else None)
            except AvroSchemaError as exc:
                raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc
            self._decoders.put(cache_key, decoder)
        return decoder

    def _reader_from(self, schema: Any) -> _Reader:
        """A reader schema from text or from a Schema (its references fetched by subject and version)."""
        loaded = reader_schema_json(self._registry, schema)
        return _Reader(loaded, json.dumps(loaded, sort_keys=True))

    def _reader_for(self, ctx: ContextLike | None, writer: Any) -> _Reader | None:
        """The reader schema of a value: the subject's latest (with
        use.latest.*), else `schema_str`'s, else None (the writer's shape)."""
        if ctx is None or not (self._use_latest_version or self._latest_metadata is not None):
            return self._reader
        subject = self._strategy(ctx, None)
        if subject is None and isinstance(writer, dict) and isinstance(writer.get("name"), str):
            subject = self._strategy(ctx, _defined_name(writer, "")[0])
        if subject is None:
            return self._reader
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
        except (SchemaRegistryError, AvroSchemaError) as exc:
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
        return lambda ctx, record_name: "{0}-{1}".format(ctx.topic, _field_name(ctx))

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
