"""Schema Registry support: the client, the wire framing, their errors, the
compiled Avro decoder (`fastkc.schema_registry.avro.AvroDecoder`) and
confluent-kafka's AvroDeserializer over it.

    from fastkc.schema_registry import SchemaRegistryClient
    client = SchemaRegistryClient({"url": "http://registry:8081"})
    client.get_schema(42)              # Schema(schema_str, schema_type, references)

Needs the `schema-registry` extra (httpx2) for the client; the framing
functions need nothing.
"""
from typing import TYPE_CHECKING

from fastkc.schema_registry.avro_deserializer import AvroDeserializer
from fastkc.schema_registry.errors import (
    InvalidMessageIndexError,
    MalformedSchemaResponseError,
    NotFramedError,
    SchemaFramingError,
    SchemaNotFoundError,
    SchemaRegistryConfigurationError,
    SchemaRegistryError,
    SchemaRegistryUnauthorizedError,
    SchemaRegistryUnreachableError,
    SubjectNotFoundError,
    TruncatedFrameError,
    VersionNotFoundError,
)
from fastkc.schema_registry.framing import (
    KEY_SCHEMA_ID_HEADER,
    VALUE_SCHEMA_ID_HEADER,
    Frame,
    encode_message_indexes,
    frame_guid,
    frame_schema_id,
    schema_id_header,
    split_record,
    split_value,
)
from fastkc.schema_registry.serialization import (
    DeserializationError,
    DeserializerConfigurationError,
    MessageField,
    PayloadDecodeError,
    SerializationContext,
    UnreachableWriterSchemaError,
    ValueFramingError,
    WriterSchemaError,
    WrongSchemaTypeError,
)

if TYPE_CHECKING:
    from fastkc.schema_registry.client import (
        RegisteredSchema,
        ResolvedSchema,
        Schema,
        SchemaReference,
        SchemaRegistryClient,
    )
    from fastkc.schema_registry.json_deserializer import JSONDeserializer
    from fastkc.schema_registry.protobuf_deserializer import ProtobufDeserializer, ProtobufMessageError

__all__ = [
    "SchemaRegistryClient",
    "Schema",
    "SchemaReference",
    "RegisteredSchema",
    "ResolvedSchema",
    "Frame",
    "split_value",
    "split_record",
    "schema_id_header",
    "frame_schema_id",
    "frame_guid",
    "encode_message_indexes",
    "KEY_SCHEMA_ID_HEADER",
    "VALUE_SCHEMA_ID_HEADER",
    "SchemaRegistryError",
    "SchemaRegistryConfigurationError",
    "SchemaNotFoundError",
    "SubjectNotFoundError",
    "VersionNotFoundError",
    "SchemaRegistryUnauthorizedError",
    "SchemaRegistryUnreachableError",
    "MalformedSchemaResponseError",
    "SchemaFramingError",
    "NotFramedError",
    "TruncatedFrameError",
    "InvalidMessageIndexError",
    "AvroDeserializer",
    "ProtobufDeserializer",
    "ProtobufMessageError",
    "JSONDeserializer",
    "SerializationContext",
    "MessageField",
    "DeserializationError",
    "DeserializerConfigurationError",
    "ValueFramingError",
    "WriterSchemaError",
    "UnreachableWriterSchemaError",
    "WrongSchemaTypeError",
    "PayloadDecodeError",
]

# The Protobuf and JSON deserializers need the protobuf runtime, orjson and
# jsonschema (the schema-registry extra): imported on first use.
_LAZY_MODULES = {"ProtobufDeserializer": "protobuf_deserializer", "ProtobufMessageError": "protobuf_deserializer",
                 "JSONDeserializer": "json_deserializer"}

_CLIENT_NAMES = frozenset({"SchemaRegistryClient", "Schema", "SchemaReference", "RegisteredSchema",
                           "ResolvedSchema"})


def __getattr__(name: str) -> object:
    # The client needs httpx2 (the schema-registry extra); the framing does
    # not, so the client module is imported only when one of its names is.
    if name in _CLIENT_NAMES:
        from fastkc.schema_registry import client

        return getattr(client, name)
    if name in _LAZY_MODULES:
        import importlib

        return getattr(importlib.import_module("fastkc.schema_registry." + _LAZY_MODULES[name]), name)
    raise AttributeError("module 'fastkc.schema_registry' has no attribute {0!r}".format(name))
