"""JSONDeserializer: confluent-kafka's JSONDeserializer, in batches.

    from fastkc.schema_registry import JSONDeserializer
    deserializer = JSONDeserializer(schema_str, schema_registry_client=client)
    deserializer(value, SerializationContext(topic, MessageField.VALUE))   # one value
    KafkaConsumer(..., value_deserializer=deserializer)                    # batches

Same constructor and conf keys as confluent-kafka 2.16's, and the same
values: each payload's JSON value (`from_dict(value, ctx)` applied last),
validated (conf `validate`, on by default) against the reader schema: the
subject's latest with `use.latest.version`, else `schema_str`, else the
writer schema the frame names. With a registry client the writer schema is
read (as confluent-kafka does, so an unknown id is an error), once per id
per batch.

A batch is parsed in one pass per run of values sharing a frame
(fastkc/schema_registry/json_schema.py: orjson, json.loads where they
differ); poll_arrow() gets typed columns of the schema's Arrow mapping
(docs/guide/schema-registry-json.md). The framing, batch plans and typed
errors are the shared base's (registry_deserializer.py).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastkc.schema_registry.errors import JsonSchemaError
from fastkc.schema_registry.framing import Frame
from fastkc.schema_registry.json_schema import JsonSchemaCodec
from fastkc.schema_registry.registry_deserializer import Codec, FromDict, Reader, RegistryDeserializer
from fastkc.schema_registry.serialization import DeserializerConfigurationError

if TYPE_CHECKING:
    from fastkc.schema_registry.client import ResolvedSchema, Schema, SchemaRegistryClient

__all__ = ["JSONDeserializer"]

# A schema's references are followed at most this deep, and this many in all.
_MAX_REFERENCE_DEPTH = 32
_MAX_REFERENCES = 1000


class JsonCodec:
    """A JsonSchemaCodec as the deserializers' Codec: runs of one frame read
    in place past it, Arrow columns read past their prefix."""

    def __init__(self, codec: JsonSchemaCodec) -> None:
        self._codec = codec

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        return self._codec.decode_many(payloads)

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        cut = len(prefix)
        run = []
        for i in range(start, len(values)):
            value = values[i]
            if type(value) is not bytes or not value.startswith(prefix):
                break
            run.append(memoryview(value)[cut:])  # parsed in place, not copied
        return self._codec.decode_many(run) if run else []

    def decode_arrow_column(self, column: Any, skip: int) -> Any:
        return self._codec.decode_arrow_column(column, skip)


class JSONDeserializer(RegistryDeserializer):
    """JSON values with Confluent Schema Registry framing → their JSON values
    (or `from_dict`'s objects), as confluent-kafka's JSONDeserializer gives.

    Args:
      schema_str: the reader schema (JSON Schema text, or a Schema with
        references, which then needs schema_registry_client); None reads
        with the writer schema (schema_registry_client needed)
      from_dict: Callable(dict, SerializationContext) -> object
      schema_registry_client: a fastkc.schema_registry.SchemaRegistryClient
      conf: confluent-kafka's keys (`use.latest.version`,
        `use.latest.with.metadata`, `subject.name.strategy`,
        `subject.name.strategy.type`, `subject.name.strategy.conf`,
        `schema.id.deserializer`, `validate`); others are refused
    """

    SCHEMA_TYPE = "JSON"
    EXTRA_CONF = {"validate": True}
    SCHEMA_ERRORS = (JsonSchemaError,)

    def __init__(self, schema_str: str | Schema | None, from_dict: FromDict | None = None,
                 schema_registry_client: SchemaRegistryClient | None = None,
                 conf: Mapping[str, Any] | None = None, rule_conf: Mapping[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        if schema_str is None and schema_registry_client is None:
            raise DeserializerConfigurationError(
                'schema_registry_client must be provided if "schema_str" is not provided')
        if schema_str is not None and not isinstance(schema_str, str) and not hasattr(schema_str, "schema_str"):
            raise TypeError("You must pass either str or Schema")
        if getattr(schema_str, "references", None) and schema_registry_client is None:
            raise DeserializerConfigurationError(
                'schema_registry_client must be provided if "schema_str" is a Schema instance with references')
        super().__init__(schema_registry_client, from_dict, conf, registry_required=False)
        self._validate = self._extra_conf["validate"]
        if not isinstance(self._validate, bool):
            raise DeserializerConfigurationError("validate must be a boolean value")
        if rule_conf or rule_registry is not None:
            raise DeserializerConfigurationError("data-contract rules (rule_conf, rule_registry) are not supported")
        if schema_str is not None:
            try:
                self._reader = self._reader_from(schema_str)
            except JsonSchemaError as exc:
                raise DeserializerConfigurationError("schema_str: {0}".format(exc)) from exc

    # --- the format's hooks ---------------------------------------------------------------------

    def _needs_writer(self) -> bool:
        # confluent-kafka reads the writer schema whenever it has a registry
        return self._registry is not None

    def _parse_writer(self, key: int | str, resolved: ResolvedSchema) -> Any:
        return (_load(resolved.schema.schema_str, "the writer schema"),
                {name: _load(s.schema_str, "referenced schema {0!r}".format(name))
                 for name, s in resolved.referenced.items()})

    def _make_codec(self, writer: Any, frame: Frame, reader: Reader | None, arrow: bool) -> Codec:
        schema, references = reader.schema if reader is not None else writer
        return JsonCodec(JsonSchemaCodec(schema, references, validate=self._validate))

    def _reader_from(self, schema: str | Schema) -> Reader:
        if isinstance(schema, str):
            return Reader((_load(schema, "the reader schema"), {}), schema)
        return Reader((_load(schema.schema_str, "the reader schema"), self._references_of(schema)), schema.schema_str)

    def _record_name(self, writer: Any) -> str | None:
        schema = writer[0] if writer is not None else None
        title = schema.get("title") if isinstance(schema, dict) else None
        return title if isinstance(title, str) else None

    def _references_of(self, schema: Schema) -> dict[str, Any]:
        """A reader schema's references (by name), fetched by subject and version, transitively."""
        registry = self._registry
        assert registry is not None
        found: dict[str, Any] = {}

        def add(refs: Sequence[Any], depth: int) -> None:
            for ref in refs:
                if ref.name in found:
                    continue
                if depth > _MAX_REFERENCE_DEPTH or len(found) >= _MAX_REFERENCES:
                    raise JsonSchemaError("the reader schema references more than {0} schemas or nests past {1}"
                                          .format(_MAX_REFERENCES, _MAX_REFERENCE_DEPTH))
                imported = registry.get_version(ref.subject, ref.version).schema
                found[ref.name] = _load(imported.schema_str, "referenced schema {0!r}".format(ref.name))
                add(imported.references, depth + 1)

        add(schema.references, 1)
        return found


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise JsonSchemaError("{0} is not JSON: {1}".format(what, exc)) from None
