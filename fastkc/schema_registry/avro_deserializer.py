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

The framing, the registry, the batch plans and the errors are the shared
base's (registry_deserializer.py); this module says how Avro schemas become
decoders: references inlined (Avro has no import), a writer of type `bytes`
handed back unread (as confluent-kafka does).

Not supported (refused when configured, never silently ignored):
`return_record_name=True`, data-contract rules (`rule_conf`,
`rule_registry`), a custom `schema.id.deserializer`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastkc.schema_registry import avro_schema
from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_errors import AvroSchemaError
from fastkc.schema_registry.framing import Frame
from fastkc.schema_registry.registry_deserializer import (
    Codec,
    FromDict,
    RawPayloadCodec,
    Reader,
    RegistryDeserializer,
    resolve_writer,
)
from fastkc.schema_registry.serialization import DeserializerConfigurationError, WriterSchemaError

if TYPE_CHECKING:
    from fastkc.schema_registry.client import ResolvedSchema, Schema, SchemaRegistryClient

__all__ = ["AvroDeserializer"]

# A reader schema's references are followed at most this many schemas deep in total.
_MAX_READER_REFERENCES = 1000


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
    resolved = resolve_writer(registry, key, "AVRO", topic, partition, offset)
    try:
        return _writer_json(resolved)
    except AvroSchemaError as exc:
        raise WriterSchemaError(str(exc), topic, partition, offset, key) from exc


def _writer_json(resolved: ResolvedSchema) -> Any:
    return inline_references(_load(resolved.schema.schema_str, "the writer schema"),
                             [_load(s.schema_str, "referenced schema {0!r}".format(name))
                              for name, s in resolved.referenced.items()])


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


class AvroDeserializer(RegistryDeserializer):
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

    SCHEMA_TYPE = "AVRO"
    SCHEMA_ERRORS = (AvroSchemaError,)

    def __init__(self, schema_registry_client: SchemaRegistryClient, schema_str: str | Schema | Any | None = None,
                 from_dict: FromDict | None = None, return_record_name: bool = False,
                 conf: Mapping[str, Any] | None = None, rule_conf: Mapping[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        super().__init__(schema_registry_client, from_dict, conf)
        if not isinstance(return_record_name, bool):
            raise DeserializerConfigurationError("return_record_name must be a boolean value")
        if return_record_name:
            raise DeserializerConfigurationError("return_record_name=True is not supported by fastkc's decoder")
        if rule_conf or rule_registry is not None:
            raise DeserializerConfigurationError("data-contract rules (rule_conf, rule_registry) are not supported")
        if schema_str is not None:
            if not isinstance(schema_str, str) and not hasattr(schema_str, "schema_str"):
                raise TypeError("You must pass either schema string or schema object")
            try:
                self._reader = self._reader_from(schema_str)
            except AvroSchemaError as exc:
                raise DeserializerConfigurationError("schema_str: {0}".format(exc)) from exc

    # --- the format's hooks ---------------------------------------------------------------------

    def _parse_writer(self, key: int | str, resolved: ResolvedSchema) -> Any:
        return _writer_json(resolved)

    def _make_codec(self, writer: Any, frame: Frame, reader: Reader | None, arrow: bool) -> Codec:
        if _is_raw_bytes(writer):
            return RawPayloadCodec()
        return AvroDecoder(writer, reader.schema if reader is not None else None)

    def _reader_from(self, schema: str | Schema) -> Reader:
        """A reader schema from text or from a Schema (its references fetched by subject and version)."""
        loaded = reader_schema_json(self._registry, schema)
        return Reader(loaded, json.dumps(loaded, sort_keys=True))

    def _record_name(self, writer: Any) -> str | None:
        if isinstance(writer, dict) and isinstance(writer.get("name"), str):
            return _defined_name(writer, "")[0]
        return None
