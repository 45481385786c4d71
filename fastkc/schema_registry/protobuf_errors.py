"""The Protobuf decoder's typed errors.

Kept apart from the registry client's errors, as the Avro decoder's are; both
derive from fastkc.errors.KafkaError so a consumer's `except KafkaError`
still catches them.
"""
from __future__ import annotations

from fastkc.errors import KafkaError


class ProtobufSchemaError(KafkaError):
    """A message type the decoder cannot compile: a proto2 group field, or a
    program past the compiler's bounds (too many fields or messages)."""


class ProtobufDecodeError(KafkaError):
    """A payload that does not decode as its message type.

    Attributes:
        index: which payload of the decoded list (0 for a single one)
        offset: the byte inside that payload where reading failed
        what: what was being read ("tag", "string length", ...)
        problem: why ("truncated", "field number 0", ...)
    """

    def __init__(self, index: int, offset: int, what: str, problem: str, context: str = "") -> None:
        self.index = index
        self.offset = offset
        self.what = what
        self.problem = problem
        self.context = context
        where = f" ({context})" if context else ""
        super().__init__(f"payload {index}, byte {offset}: {what}: {problem}{where}")

    def key(self) -> tuple[int, int, str, str]:
        """(index, offset, what, problem): what two decoders must agree on."""
        return (self.index, self.offset, self.what, self.problem)


class ProtobufArrowUnsupportedError(ProtobufSchemaError):
    """A message type with a field that has no Arrow mapping (Struct, Value,
    ListValue, Any, FieldMask, or a message that contains itself): raised
    when the Arrow plan is compiled, before any payload is decoded
    (docs/guide/schema-registry-protobuf.md lists the mapping)."""


class ProtobufArrowCapacityError(ProtobufDecodeError):
    """Payload `index` would take an Arrow column past its int32 offsets
    (2^31 - 1 values or bytes): nothing is returned; decode the payloads
    before it and the rest in separate calls."""
