"""ProtobufDeserializer: confluent-kafka's ProtobufDeserializer, in batches.

    from fastkc.schema_registry import ProtobufDeserializer
    deserializer = ProtobufDeserializer(Event, {"use.deprecated.format": False})
    deserializer(value, SerializationContext(topic, MessageField.VALUE))   # one value: an Event
    KafkaConsumer(..., value_deserializer=deserializer)                    # batches

Same constructor and conf keys as confluent-kafka 2.16's. Two shapes:

- `message_type` given (confluent-kafka's only form): each value becomes a
  message of that type, parsed by the protobuf runtime (upb, C) from the
  bytes after the frame, as confluent-kafka does. A batch is one loop over a
  run of values sharing one frame, with no framing step per value. Protobuf
  payloads are self-describing, so the registry is not asked for the writer
  schema (confluent-kafka asks only to run data-contract rules, which fastkc
  refuses).
- `message_type=None` (fastkc's extension): the writer schema comes from the
  registry (the frame's id and message indexes name the message) and each
  value becomes a dict, decoded in C (fastkc/schema_registry/protobuf.py
  says which dict: MessageToDict's shape with native values). With
  `use.latest.version` the subject's latest schema is the reader: the
  message of the writer's name in it (Protobuf's own evolution: unknown
  fields dropped, missing ones absent).

The framing (message indexes included), the batch plans and the typed
errors are the shared base's (registry_deserializer.py).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError

from fastkc import _backend
from fastkc.schema_registry.framing import Frame
from fastkc.schema_registry.payload_errors import PayloadReadError
from fastkc.schema_registry.protobuf_descriptors import (
    decode_serialized,
    is_serialized,
    message_at,
    pool_with,
)
from fastkc.schema_registry.protobuf_errors import ProtobufSchemaError
from fastkc.schema_registry.registry_deserializer import Codec, Reader, RegistryDeserializer
from fastkc.schema_registry.serialization import DeserializerConfigurationError

if TYPE_CHECKING:
    from fastkc.schema_registry.client import ResolvedSchema, Schema, SchemaReference, SchemaRegistryClient

__all__ = ["ProtobufDeserializer", "ProtobufMessageError"]

# The registry's name of the base64 FileDescriptorProto form.
_SERIALIZED = "serialized"
# A schema's imports are followed at most this deep, and this many in all.
_MAX_IMPORT_DEPTH = 32
_MAX_IMPORTS = 1000


class ProtobufMessageError(PayloadReadError):
    """The protobuf runtime could not parse a payload as the message type
    (it does not say at which byte: `offset` is -1)."""


class MessageTypeCodec:
    """Payloads → messages of one generated type, parsed by the protobuf runtime."""

    def __init__(self, message_type: Any) -> None:
        self._parse = message_type.FromString
        self._parse_prefixed = _backend.protobuf_parse_prefixed()
        self._name = message_type.DESCRIPTOR.full_name

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        parse = self._parse
        out = []
        for index, payload in enumerate(payloads):
            try:
                out.append(parse(payload))
            except DecodeError as exc:
                raise ProtobufMessageError(index, -1, self._name, str(exc)) from None
        return out

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        out: list[Any] = []
        try:
            self._parse_prefixed(self._parse, values, start, prefix, out)
        except DecodeError as exc:
            raise ProtobufMessageError(len(out), -1, self._name, str(exc)) from None
        return out

    def decode_arrow_column(self, column: Any, skip: int) -> Any:
        raise NotImplementedError("a message type's values are decoded to Arrow by its descriptor's codec")


class ProtobufDeserializer(RegistryDeserializer):
    """Protobuf values with Confluent Schema Registry framing → messages of
    `message_type` (or dicts when it is None), as confluent-kafka's
    ProtobufDeserializer gives.

    Args:
      message_type: a generated message class, or None (dicts, decoded from
        the registry's schema: schema_registry_client needed)
      conf: confluent-kafka's keys (`use.latest.version`,
        `use.latest.with.metadata`, `subject.name.strategy`,
        `subject.name.strategy.type`, `subject.name.strategy.conf`,
        `schema.id.deserializer`, `use.deprecated.format` (False only)); others
        are refused
      schema_registry_client: a fastkc.schema_registry.SchemaRegistryClient
    """

    SCHEMA_TYPE = "PROTOBUF"
    MESSAGE_INDEXES = True
    EXTRA_CONF = {"use.deprecated.format": False}
    SCHEMA_ERRORS = (ProtobufSchemaError,)
    SEPARATE_ARROW_CODEC = True

    def __init__(self, message_type: Any, conf: Mapping[str, Any] | None = None,
                 schema_registry_client: SchemaRegistryClient | None = None,
                 rule_conf: Mapping[str, Any] | None = None, rule_registry: Any = None) -> None:
        super().__init__(schema_registry_client, None, conf, registry_required=message_type is None)
        deprecated = self._extra_conf["use.deprecated.format"]
        if not isinstance(deprecated, bool):
            raise DeserializerConfigurationError("use.deprecated.format must be a boolean value")
        if deprecated:
            raise DeserializerConfigurationError("use.deprecated.format is no longer supported")
        if message_type is not None and not isinstance(getattr(message_type, "DESCRIPTOR", None), Descriptor):
            raise DeserializerConfigurationError(
                "message_type must be a generated protobuf message class, not {0!r}".format(message_type))
        if rule_conf or rule_registry is not None:
            raise DeserializerConfigurationError("data-contract rules (rule_conf, rule_registry) are not supported")
        self._message_type = message_type

    # --- the format's hooks ---------------------------------------------------------------------

    def _needs_writer(self) -> bool:
        return self._message_type is None

    def _parse_writer(self, key: int | str, resolved: ResolvedSchema) -> FileDescriptor:
        assert self._registry is not None
        schema = resolved.schema
        if not is_serialized(schema.schema_str):
            # .proto text: Confluent's registry gives the serialized form when asked
            schema = (self._registry.get_schema_by_guid(key, fmt=_SERIALIZED) if isinstance(key, str)
                      else self._registry.get_schema(key, fmt=_SERIALIZED))
        return self._file_of(schema, "the writer schema")

    def _make_codec(self, writer: Any, frame: Frame, reader: Reader | None, arrow: bool) -> Codec:
        if self._message_type is not None and not arrow:
            return MessageTypeCodec(self._message_type)
        message = self._message(writer, frame, reader)
        from fastkc.schema_registry.protobuf import ProtobufDecoder

        return ProtobufDecoder(message)

    def _message(self, writer: FileDescriptor | None, frame: Frame, reader: Reader | None) -> Descriptor:
        """The descriptor values are read by: message_type's, else the
        reader schema's message of the writer's name, else the writer's."""
        if self._message_type is not None:
            descriptor: Descriptor = self._message_type.DESCRIPTOR
            return descriptor
        assert writer is not None
        written = message_at(writer, frame.message_indexes or (0,))
        if reader is None:
            return written
        file: FileDescriptor = reader.schema
        for candidate in file.message_types_by_name.values():
            if candidate.full_name == written.full_name:
                return candidate
        return message_at(file, (0,))

    def _reader_from(self, schema: str | Schema) -> Reader:
        if isinstance(schema, str):
            raise ProtobufSchemaError("a Protobuf reader schema comes from the registry (use.latest.version)")
        return Reader(self._file_of(schema, "the reader schema"), schema.schema_str)

    def _file_of(self, schema: Schema, what: str) -> FileDescriptor:
        """A registry schema's file, built with every file it imports
        (fetched by subject and version, in the serialized form, transitively)."""
        registry = self._registry
        assert registry is not None
        referenced: dict[str, descriptor_pb2.FileDescriptorProto] = {}

        def add(refs: Sequence[SchemaReference], depth: int) -> None:
            for ref in refs:
                if ref.name in referenced:
                    continue
                if depth > _MAX_IMPORT_DEPTH or len(referenced) >= _MAX_IMPORTS:
                    raise ProtobufSchemaError("{0} imports more than {1} files or nests past {2}".format(
                        what, _MAX_IMPORTS, _MAX_IMPORT_DEPTH))
                imported = registry.get_version(ref.subject, ref.version, fmt=_SERIALIZED).schema
                add(imported.references, depth + 1)  # dependencies first
                referenced[ref.name] = decode_serialized(imported.schema_str, "imported file {0!r}".format(ref.name))

        add(schema.references, 1)
        return pool_with(decode_serialized(schema.schema_str, what), referenced)
