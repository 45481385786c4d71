"""The Avro decoder's typed errors.

Kept apart from the registry client's errors (another module) so each part
can grow without the other; both derive from fastkc.errors.KafkaError so a
consumer's `except KafkaError` still catches them.
"""
from __future__ import annotations

from fastkc.errors import KafkaError
from fastkc.schema_registry.payload_errors import PayloadReadError


class AvroSchemaError(KafkaError):
    """A schema that cannot be used: not valid Avro, past the parser's bounds
    (too deep, too many types, too long), or a reader schema that cannot
    resolve the writer schema (Avro's "Schema Resolution" rules)."""


class AvroDecodeError(PayloadReadError):
    """A payload that does not decode under its Avro schema (or does not
    resolve to the reader schema); `index`, `offset`, `what` and `problem`
    as PayloadReadError says."""


class AvroArrowUnsupportedError(AvroSchemaError):
    """A reader schema with a type that has no Arrow mapping (a recursive
    record, a union of more than 127 branches, a decimal of more than 76
    digits): raised when the Arrow plan is compiled, before any payload is
    decoded (docs/guide/schema-registry-arrow.md lists the mapping)."""


class AvroArrowCapacityError(AvroDecodeError):
    """Payload `index` would take an Arrow column past its int32 offsets
    (2^31 - 1 values or bytes): nothing is returned; decode the payloads
    before it and the rest in separate calls."""
