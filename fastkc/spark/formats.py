"""`valueFormat` / `keyFormat`: Schema Registry data (Avro, Protobuf, JSON
Schema) as typed Spark columns.

    spark.read.format("fastkc")
        .option("kafka.bootstrap.servers", ...).option("subscribe", "events")
        .option("valueFormat", "avro")          # or "protobuf", "json"
        .option("schema.registry.url", "http://registry:8081")
        .load()                       # value: a struct column, not binary

Options (names as Spark matches them, case-insensitive):
- `valueFormat`, `keyFormat`: `binary` (the default: Spark's Kafka source
  schema), `avro`, `protobuf` or `json`.
- `schema.registry.<key>`: the registry client's configuration, confluent-
  kafka's keys after the prefix (`url`, `basic.auth.user.info`,
  `basic.auth.credentials.source`, `ssl.ca.location`, ...).
- `valueSchema`, `keySchema`: the reader schema (Avro JSON, or a JSON
  Schema). Without one the reader schema is the latest version of
  `valueSubject` / `keySubject` (default `<topic>-value` / `<topic>-key`, for
  one subscribed topic), read once at planning (a Protobuf reader always is).
- `valueMessage`, `keyMessage` (Protobuf): the message's full name in that
  schema; by default its first message.

The column's Spark type is fixed when the query is planned, so every row is
decoded with that one reader schema, whatever schema it was written with
(Avro's resolution: promotions, defaults, added and removed fields;
Protobuf's: the reader message reads the bytes, unknown fields dropped;
JSON: the values are validated against it and mapped to its type). The
Arrow types the decoder gives (docs/guide/schema-registry-arrow.md) are
mapped to what Spark's columns hold (`spark_arrow_type`): enums become
strings, time-of-day its integer, timestamps microseconds, fixed binary,
unsigned 32-bit integers long, unsigned 64-bit decimal(20, 0), durations
day-time intervals (microseconds), and an Avro union of several types (a
dense union: Spark's Arrow has no unions) spark-avro's struct of `member0`,
`member1`, ... (the branches besides null, in order, each nullable, the one
the row took set; the struct null where the row took null).
A type Spark cannot hold (a decimal of more than 38 digits) is an error at
planning.
"""
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FORMATS = ("binary", "avro", "protobuf", "json")
_REGISTRY_PREFIX = "schema.registry."
_SPARK_MAX_DECIMAL_PRECISION = 38


class SparkFormatError(ValueError):
    """A valueFormat / keyFormat option that cannot be honoured."""


@dataclass(frozen=True)
class FieldFormat:
    """How one of key and value is read: its format and reader schema (Avro
    JSON with references inlined; a JSON Schema; a Protobuf file in the
    serialized form, base64), the schemas it references, and (Protobuf) the
    message read."""

    field: str  # "key" | "value"
    reader_schema: str
    format: str = "avro"
    # (reference name, subject, version, schema text), dependencies first
    references: tuple[tuple[str, str, int, str], ...] = ()
    message: str = ""

    def json_codec(self) -> Any:
        from fastkc.schema_registry.json_schema import JsonSchemaCodec

        return JsonSchemaCodec(self.reader_schema, {name: text for name, _, _, text in self.references})

    def protobuf_message(self) -> Any:
        """The reader message's descriptor, built from the files carried here."""
        from fastkc.schema_registry.protobuf_descriptors import decode_serialized, pool_with

        file = pool_with(decode_serialized(self.reader_schema, "the reader schema"),
                         {name: decode_serialized(text, "imported file {0!r}".format(name))
                          for name, _, _, text in self.references})
        return file.pool.FindMessageTypeByName(self.message)


@dataclass(frozen=True)
class RecordFormats:
    """The registry client's configuration and the fields read as Avro
    (picklable: it travels to the executors with ReadSettings)."""

    registry: tuple[tuple[str, str], ...]
    fields: tuple[FieldFormat, ...]

    def reader_schema(self, field: str) -> str | None:
        return next((f.reader_schema for f in self.fields if f.field == field), None)

    def field_format(self, field: str) -> FieldFormat | None:
        return next((f for f in self.fields if f.field == field), None)

    def deserializers(self) -> tuple[Any, Any, Any]:
        """(registry client, key deserializer, value deserializer): what an
        executor's consumer decodes with (None for a binary field); the
        caller closes the client."""
        from fastkc.schema_registry import SchemaRegistryClient

        client = SchemaRegistryClient(dict(self.registry))
        made = {f.field: _deserializer(f, client) for f in self.fields}
        return client, made.get("key"), made.get("value")

    def arrow_type(self, field: str) -> Any:
        """The Spark-ready Arrow type of a field read as Avro, Protobuf or JSON (None: binary)."""
        found = self.field_format(field)
        return None if found is None else _field_arrow_type(found)


# per process: planning asks for each field's type several times, and every
# partition a Python worker reads asks again (workers are reused across
# tasks); a Protobuf type builds a descriptor pool, a JSON one compiles the
# schema's validators
@functools.lru_cache(maxsize=32)
def _field_arrow_type(found: FieldFormat) -> Any:
    if found.format == "json":
        return spark_arrow_type(found.json_codec().arrow_type)
    if found.format == "protobuf":
        from fastkc.schema_registry.protobuf import ProtobufDecoder

        return spark_arrow_type(ProtobufDecoder(found.protobuf_message()).decode_arrow([]).type)
    return spark_arrow_type(avro_arrow_type(found.reader_schema))


def _deserializer(found: FieldFormat, client: Any) -> Any:
    """The deserializer that reads every row as `found`'s reader schema."""
    from fastkc.schema_registry import AvroDeserializer, JSONDeserializer, ProtobufDeserializer
    from fastkc.schema_registry.client import Schema, SchemaReference

    if found.format == "json":
        references = tuple(SchemaReference(name, subject, version) for name, subject, version, _ in found.references)
        return JSONDeserializer(Schema(found.reader_schema, "JSON", references), schema_registry_client=client)
    if found.format == "protobuf":
        from google.protobuf.message_factory import GetMessageClass

        # the reader message's class: every row is read by it, whatever file wrote it
        return ProtobufDeserializer(GetMessageClass(found.protobuf_message()), {"use.deprecated.format": False},
                                    client)
    return AvroDeserializer(client, found.reader_schema)


def avro_arrow_type(schema_json: str) -> Any:
    """The Arrow type fastkc's decoder gives for values read as `schema_json`."""
    from fastkc.schema_registry.avro import AvroDecoder
    from fastkc.schema_registry.avro_errors import AvroSchemaError

    try:
        return AvroDecoder(json.loads(schema_json)).decode_arrow([]).type
    except (AvroSchemaError, ValueError) as exc:
        raise SparkFormatError("the Avro reader schema cannot be a Spark column: {0}".format(exc)) from exc


def _union_with_null(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_union(t) and any(pa.types.is_null(f.type) for f in t))


def _spark_nullable(field: Any) -> bool:
    """A field's Spark nullability: a union with a null branch is a nullable
    struct there (spark-avro's), though Arrow's unions are never null."""
    return bool(field.nullable or _union_with_null(field.type))


def spark_arrow_type(t: Any) -> Any:
    """`t` (a decoder's Arrow type) as the Arrow type of a Spark column."""
    import pyarrow as pa

    if pa.types.is_union(t):  # spark-avro's shape for a union of several types
        members = [f for f in t if not pa.types.is_null(f.type)]
        return pa.struct([pa.field(f"member{i}", spark_arrow_type(f.type), True) for i, f in enumerate(members)])
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), _spark_nullable(f)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field("value", spark_arrow_type(t.item_type), _spark_nullable(t.item_field)))
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", spark_arrow_type(t.value_type), _spark_nullable(t.value_field)))
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)  # an enum: its symbol, as Spark's from_avro gives it
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_time32(t):
        return pa.int32()  # time-millis: milliseconds of the day, as from_avro gives them
    if pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)  # Spark's timestamps are microseconds
    if pa.types.is_duration(t):
        return pa.duration("us")  # a day-time interval, microseconds
    if pa.types.is_uint32(t):
        return pa.int64()  # Spark has no unsigned integers
    if pa.types.is_uint64(t):
        return pa.decimal128(20, 0)
    if pa.types.is_decimal(t) and t.precision > _SPARK_MAX_DECIMAL_PRECISION:
        raise SparkFormatError("decimal({0}, {1}) has more digits than a Spark decimal holds ({2})".format(
            t.precision, t.scale, _SPARK_MAX_DECIMAL_PRECISION))
    if pa.types.is_decimal(t):
        return pa.decimal128(t.precision, t.scale)
    return t


def to_spark_column(column: Any, target: Any) -> Any:
    """A decoded column cast to its Spark-ready type (timestamps in
    nanoseconds are truncated to microseconds, as Spark truncates them).
    A column with a dense union in it is rebuilt around each union, which
    becomes spark-avro's member struct (Arrow casts no union)."""
    import pyarrow.compute as pc

    if column.type == target:
        return column
    if _has_union(column.type):
        return _rebuilt(column, target)
    return pc.cast(column, target, safe=False)


def _has_union(t: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_union(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_union(f.type) for f in t)
    if pa.types.is_list(t):
        return _has_union(t.value_type)
    return bool(pa.types.is_map(t) and _has_union(t.item_type))


def _rebuilt(column: Any, target: Any) -> Any:
    """`column` as `target` (spark_arrow_type of its type), nested arrays
    rebuilt and the leaves cast: a cast of a nested array would refuse the
    nulls that a union's member struct has in its non-nullable children,
    under rows that took another branch (never read)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if not _has_union(t):
        return column if t == target else pc.cast(column, target, safe=False)
    mask = column.is_null() if column.null_count else None
    if pa.types.is_union(t):
        # from the buffers: pyarrow's type_codes and offsets leave out a slice's offset
        buffers, n, at = column.buffers(), len(column), column.offset
        codes = pa.Array.from_buffers(pa.int8(), n, [None, buffers[1]], offset=at)
        offsets = pa.Array.from_buffers(pa.int32(), n, [None, buffers[2]], offset=at)
        members: list[Any] = []
        null_rows = None
        for i, f in enumerate(t):
            code = pa.scalar(t.type_codes[i], pa.int8())
            if pa.types.is_null(f.type):
                null_rows = pc.equal(codes, code)
                continue
            child = _rebuilt(column.field(i), target.field(len(members)).type)
            # the rows that took this branch: their value in the child; the others null
            members.append(child.take(pc.if_else(pc.equal(codes, code), offsets, pa.scalar(None, pa.int32()))))
        return pa.StructArray.from_arrays(members, fields=list(target), mask=null_rows)
    if pa.types.is_struct(t):
        children = [_rebuilt(column.field(i), target.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(column.offsets, _rebuilt(column.values, target.value_type), type=target,
                                        mask=mask)
    return pa.MapArray.from_arrays(column.offsets, _rebuilt(column.keys, target.key_type),
                                   _rebuilt(column.items, target.item_type), type=target, mask=mask)


def parse_formats(params: Mapping[str, str], topics: tuple[str, ...],
                  registry_client: Any = None) -> RecordFormats | None:
    """RecordFormats from the (lower-cased) source options, the reader schemas
    resolved (a subject's latest version read from the registry); None when
    both key and value stay binary."""
    wanted = {}
    for field in ("key", "value"):
        name = params.get(field + "format", "binary").strip().lower()
        if name not in FORMATS:
            raise SparkFormatError("{0}Format must be one of {1}, not {2!r}".format(field, ", ".join(FORMATS), name))
        if name != "binary":
            wanted[field] = name
    if not wanted:
        return None
    registry = tuple(sorted((k[len(_REGISTRY_PREFIX):], v) for k, v in params.items()
                            if k.startswith(_REGISTRY_PREFIX)))
    if "url" not in dict(registry):
        raise SparkFormatError("{0} needs the option schema.registry.url".format(
            " and ".join("{0}Format={1}".format(f, n) for f, n in sorted(wanted.items()))))
    fields = []
    for field, name in wanted.items():
        if name == "avro":
            given = params.get(field + "schema")
            schema = given if given is not None else _latest(params, field, topics, dict(registry), registry_client)
            try:
                json.loads(schema)
            except ValueError as exc:
                raise SparkFormatError("{0}Schema is not JSON: {1}".format(field, exc)) from exc
            fields.append(FieldFormat(field, schema))
        else:
            fields.append(_registry_format(params, field, name, topics, dict(registry), registry_client))
    formats = RecordFormats(registry, tuple(fields))
    for f in fields:
        formats.arrow_type(f.field)  # a reader type Spark cannot hold fails here, at planning
    return formats


def _subject(params: Mapping[str, str], field: str, name: str, topics: tuple[str, ...]) -> str:
    subject = params.get(field + "subject")
    if subject is None:
        if len(topics) != 1:
            raise SparkFormatError(
                "{0}Format={1} without {0}Schema reads the subject's latest schema: name it with {0}Subject "
                "(the default, <topic>-{0}, needs exactly one topic in subscribe)".format(field, name))
        subject = "{0}-{1}".format(topics[0], field)
    return subject


def _registry_format(params: Mapping[str, str], field: str, name: str, topics: tuple[str, ...],
                     registry: dict[str, str], registry_client: Any) -> FieldFormat:
    """A Protobuf or JSON field's reader: the given JSON Schema, else the
    subject's latest schema, with every schema it references (fetched by
    subject and version; Protobuf files in the serialized form)."""
    from fastkc.schema_registry import SchemaRegistryClient, SchemaRegistryError
    from fastkc.schema_registry.errors import JsonSchemaError
    from fastkc.schema_registry.protobuf_errors import ProtobufSchemaError

    fmt = "serialized" if name == "protobuf" else None
    client = registry_client or SchemaRegistryClient(registry)
    try:
        given = params.get(field + "schema") if name == "json" else None
        references: list[tuple[str, str, int, str]] = []
        if given is not None:
            schema_text = given
        else:
            subject = _subject(params, field, name, topics)
            latest = client.get_latest_version(subject, fmt=fmt).schema
            if (latest.schema_type or "AVRO").upper() != name.upper():
                raise SparkFormatError("subject {0!r} holds a {1} schema, not {2}".format(
                    subject, latest.schema_type, name))
            schema_text = latest.schema_str
            pending = list(reversed(latest.references))
            seen: set[str] = set()
            while pending:  # depth first, a dependency before what imports it
                ref = pending.pop()
                if ref.name in seen:
                    continue
                seen.add(ref.name)
                imported = client.get_version(ref.subject, ref.version, fmt=fmt).schema
                references.insert(0, (ref.name, ref.subject, ref.version, imported.schema_str))
                pending.extend(reversed(imported.references))
        message = params.get(field + "message", "")
        found = FieldFormat(field, schema_text, name, tuple(references), message)
        if name == "protobuf":
            from fastkc.schema_registry.protobuf_descriptors import decode_serialized

            if not message:
                root = decode_serialized(schema_text, "the latest schema")
                if not root.message_type:
                    raise SparkFormatError("the latest schema of {0} has no message".format(field))
                prefix = root.package + "." if root.package else ""
                found = FieldFormat(field, schema_text, name, tuple(references), prefix + root.message_type[0].name)
            found.protobuf_message()  # the files build and name the message, here at planning
        else:
            found.json_codec()
        return found
    except KeyError as exc:
        raise SparkFormatError("{0}Message names no message of the schema: {1}".format(field, exc)) from exc
    except (SchemaRegistryError, ProtobufSchemaError, JsonSchemaError) as exc:
        raise SparkFormatError("the {0} reader schema of {1}: {2}".format(name, field, exc)) from exc
    finally:
        if registry_client is None:
            client.close()


def _latest(params: Mapping[str, str], field: str, topics: tuple[str, ...], registry: dict[str, str],
            registry_client: Any) -> str:
    """The latest registered schema of the field's subject (Avro JSON, references inlined)."""
    from fastkc.schema_registry import SchemaRegistryClient, SchemaRegistryError
    from fastkc.schema_registry.avro_deserializer import reader_schema_json
    from fastkc.schema_registry.avro_errors import AvroSchemaError

    subject = _subject(params, field, "avro", topics)
    client = registry_client or SchemaRegistryClient(registry)
    try:
        latest = client.get_latest_version(subject)
        if (latest.schema.schema_type or "AVRO").upper() != "AVRO":
            raise SparkFormatError("subject {0!r} holds a {1} schema, not Avro".format(
                subject, latest.schema.schema_type))
        return json.dumps(reader_schema_json(client, latest.schema))
    except (SchemaRegistryError, AvroSchemaError) as exc:
        raise SparkFormatError("the latest schema of subject {0!r}: {1}".format(subject, exc)) from exc
    finally:
        if registry_client is None:
            client.close()
