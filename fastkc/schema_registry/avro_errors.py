"""The Avro decoder's typed errors.

Kept apart from the registry client's errors (another module) so each part
can grow without the other; both derive from fastkc.errors.KafkaError so a
consumer's `except KafkaError` still catches them.
"""
from __future__ import annotations

from fastkc.errors import KafkaError


class AvroSchemaError(KafkaError):
    """A schema that cannot be used: not valid Avro, past the parser's bounds
    (too deep, too many types, too long), or a reader schema that cannot
    resolve the writer schema (Avro's "Schema Resolution" rules)."""


class AvroDecodeError(KafkaError):
    """A payload that does not decode under its schema.

    Attributes:
        index: which payload of the decoded list (0 for a single one)
        offset: the byte inside that payload where reading failed
        what: what was being read ("string length", "union branch", ...)
        problem: why ("truncated", "index out of range", ...)

    The record's topic, partition, offset and schema id are added by the
    caller that knows them (`context`).
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


class AvroArrowUnsupportedError(AvroSchemaError):
    """A reader schema with a type that has no Arrow mapping yet (a union of
    several non-null types, a recursive record, a decimal of more than 76
    digits): raised when the Arrow plan is compiled, before any payload is
    decoded (docs/guide/schema-registry-arrow.md lists the mapping)."""


class AvroArrowCapacityError(AvroDecodeError):
    """Payload `index` would take an Arrow column past its int32 offsets
    (2^31 - 1 values or bytes): nothing is returned; decode the payloads
    before it and the rest in separate calls."""
