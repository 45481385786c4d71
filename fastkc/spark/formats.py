"""`valueFormat` / `keyFormat`: Schema Registry Avro as typed Spark columns.

    spark.read.format("fastkc")
        .option("kafka.bootstrap.servers", ...).option("subscribe", "events")
        .option("valueFormat", "avro")
        .option("schema.registry.url", "http://registry:8081")
        .load()                       # value: a struct column, not binary

Options (names as Spark matches them, case-insensitive):
- `valueFormat`, `keyFormat`: `binary` (the default: Spark's Kafka source
  schema) or `avro`.
- `schema.registry.<key>`: the registry client's configuration, confluent-
  kafka's keys after the prefix (`url`, `basic.auth.user.info`,
  `basic.auth.credentials.source`, `ssl.ca.location`, ...).
- `valueSchema`, `keySchema`: the reader schema (Avro JSON). Without one the
  reader schema is the latest version of `valueSubject` / `keySubject`
  (default `<topic>-value` / `<topic>-key`, for one subscribed topic), read
  once at planning.

The column's Spark type is fixed when the query is planned, so every row is
decoded with that one reader schema, whatever schema it was written with
(Avro's resolution: promotions, defaults, added and removed fields). The
Arrow types the decoder gives (docs/guide/schema-registry-arrow.md) are
mapped to what Spark's columns hold (`spark_arrow_type`): enums become
strings, time-of-day its integer, timestamps microseconds, fixed binary.
A type Spark cannot hold (a decimal of more than 38 digits) is an error at
planning.
"""
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FORMATS = ("binary", "avro")
_REGISTRY_PREFIX = "schema.registry."
_SPARK_MAX_DECIMAL_PRECISION = 38


class SparkFormatError(ValueError):
    """A valueFormat / keyFormat option that cannot be honoured."""


@dataclass(frozen=True)
class FieldFormat:
    """How one of key and value is read: its reader schema (Avro JSON)."""

    field: str  # "key" | "value"
    reader_schema: str


@dataclass(frozen=True)
class RecordFormats:
    """The registry client's configuration and the fields read as Avro
    (picklable: it travels to the executors with ReadSettings)."""

    registry: tuple[tuple[str, str], ...]
    fields: tuple[FieldFormat, ...]

    def reader_schema(self, field: str) -> str | None:
        return next((f.reader_schema for f in self.fields if f.field == field), None)

    def deserializers(self) -> tuple[Any, Any, Any]:
        """(registry client, key deserializer, value deserializer): what an
        executor's consumer decodes with (None for a binary field); the
        caller closes the client."""
        from fastkc.schema_registry import AvroDeserializer, SchemaRegistryClient

        client = SchemaRegistryClient(dict(self.registry))
        made = {f.field: AvroDeserializer(client, f.reader_schema) for f in self.fields}
        return client, made.get("key"), made.get("value")

    def arrow_type(self, field: str) -> Any:
        """The Spark-ready Arrow type of a field read as Avro (None: binary)."""
        schema = self.reader_schema(field)
        return None if schema is None else spark_arrow_type(avro_arrow_type(schema))


def avro_arrow_type(schema_json: str) -> Any:
    """The Arrow type fastkc's decoder gives for values read as `schema_json`."""
    from fastkc.schema_registry.avro import AvroDecoder
    from fastkc.schema_registry.avro_errors import AvroSchemaError

    try:
        return AvroDecoder(json.loads(schema_json)).decode_arrow([]).type
    except (AvroSchemaError, ValueError) as exc:
        raise SparkFormatError("the Avro reader schema cannot be a Spark column: {0}".format(exc)) from exc


def spark_arrow_type(t: Any) -> Any:
    """`t` (a decoder's Arrow type) as the Arrow type of a Spark column."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field("value", spark_arrow_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", spark_arrow_type(t.value_type), t.value_field.nullable))
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
    if pa.types.is_decimal(t) and t.precision > _SPARK_MAX_DECIMAL_PRECISION:
        raise SparkFormatError("decimal({0}, {1}) has more digits than a Spark decimal holds ({2})".format(
            t.precision, t.scale, _SPARK_MAX_DECIMAL_PRECISION))
    if pa.types.is_decimal(t):
        return pa.decimal128(t.precision, t.scale)
    return t


def to_spark_column(column: Any, target: Any) -> Any:
    """A decoded column cast to its Spark-ready type (timestamps in
    nanoseconds are truncated to microseconds, as Spark truncates them)."""
    import pyarrow.compute as pc

    if column.type == target:
        return column
    return pc.cast(column, target, safe=False)


def parse_formats(params: Mapping[str, str], topics: tuple[str, ...],
                  registry_client: Any = None) -> RecordFormats | None:
    """RecordFormats from the (lower-cased) source options, the reader schemas
    resolved (a subject's latest version read from the registry); None when
    both key and value stay binary."""
    wanted = {}
    for field in ("key", "value"):
        name = params.get(field + "format", "binary").strip().lower()
        if name not in FORMATS:
            raise SparkFormatError("{0}Format must be one of {1}, not {2!r} (protobuf and json are not "
                                   "supported yet)".format(field, ", ".join(FORMATS), name))
        if name == "avro":
            wanted[field] = name
    if not wanted:
        return None
    registry = tuple(sorted((k[len(_REGISTRY_PREFIX):], v) for k, v in params.items()
                            if k.startswith(_REGISTRY_PREFIX)))
    if "url" not in dict(registry):
        raise SparkFormatError("{0}Format=avro needs the option schema.registry.url".format(
            " and ".join(sorted(wanted))))
    fields = []
    for field in wanted:
        given = params.get(field + "schema")
        if given is not None:
            schema = given
        else:
            schema = _latest(params, field, topics, dict(registry), registry_client)
        try:
            json.loads(schema)
        except ValueError as exc:
            raise SparkFormatError("{0}Schema is not JSON: {1}".format(field, exc)) from exc
        fields.append(FieldFormat(field, schema))
    formats = RecordFormats(registry, tuple(fields))
    for f in fields:
        formats.arrow_type(f.field)  # a reader type Spark cannot hold fails here, at planning
    return formats


def _latest(params: Mapping[str, str], field: str, topics: tuple[str, ...], registry: dict[str, str],
            registry_client: Any) -> str:
    """The latest registered schema of the field's subject (Avro JSON, references inlined)."""
    from fastkc.schema_registry import SchemaRegistryClient, SchemaRegistryError
    from fastkc.schema_registry.avro_deserializer import reader_schema_json
    from fastkc.schema_registry.avro_errors import AvroSchemaError

    subject = params.get(field + "subject")
    if subject is None:
        if len(topics) != 1:
            raise SparkFormatError(
                "{0}Format=avro without {0}Schema reads the subject's latest schema: name it with {0}Subject "
                "(the default, <topic>-{0}, needs exactly one topic in subscribe)".format(field))
        subject = "{0}-{1}".format(topics[0], field)
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
