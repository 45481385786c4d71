"""The Protobuf decoder's typed errors.

Kept apart from the registry client's errors, as the Avro decoder's are; both
derive from fastkc.errors.KafkaError so a consumer's `except KafkaError`
still catches them.
"""
from __future__ import annotations

from fastkc.errors import KafkaError
from fastkc.schema_registry.payload_errors import PayloadReadError


class ProtobufSchemaError(KafkaError):
    """A Protobuf schema fastkc cannot use: a message type the decoder cannot
    compile (a proto2 group field, a program past the compiler's bounds), a
    registry schema that is not the serialized form, files that do not build
    (a missing import, a name defined twice), or message indexes that name
    no message."""


class ProtobufDecodeError(PayloadReadError):
    """A payload that does not decode as its message type; `index`,
    `offset`, `what` ("tag", "string length", ...) and `problem`
    ("truncated", "field number 0", ...) as PayloadReadError says."""


class ProtobufArrowUnsupportedError(ProtobufSchemaError):
    """A message type with a field that has no Arrow mapping (Struct, Value,
    ListValue, Any, FieldMask, or a message that contains itself): raised
    when the Arrow plan is compiled, before any payload is decoded
    (docs/guide/schema-registry-protobuf.md lists the mapping)."""


class ProtobufArrowCapacityError(ProtobufDecodeError):
    """Payload `index` would take an Arrow column past its int32 offsets
    (2^31 - 1 values or bytes): nothing is returned; decode the payloads
    before it and the rest in separate calls."""
