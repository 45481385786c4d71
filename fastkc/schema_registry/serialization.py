"""What a deserializer is told about a value, and its typed errors.

`SerializationContext(topic, field, headers)` and `MessageField` have
confluent-kafka's names and shapes (confluent_kafka.serialization), so a
deserializer here accepts either module's object: it reads only `.topic`,
`.field` and `.headers`.

`DeserializationError` and its subclasses name the record a value came from
(topic, partition, offset; "" / -1 when the caller did not know them) and the
schema id (int) or GUID (str) when the frame got that far. The error that
caused it (a framing, registry or Avro decoding error) is its __cause__.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Protocol

from fastkc.errors import KafkaConfigurationError
from fastkc.schema_registry.errors import RecordSchemaError

# A record's headers as either client spells them: kafka-python / fastkc's list
# of (name, value) pairs, or confluent-kafka's list or dict.
Headers = Iterable[tuple[str, bytes | None]] | Mapping[str, bytes | None]


class MessageField(StrEnum):
    """Which part of a record a value is (confluent-kafka's MessageField;
    both compare equal to, and str() to, "key" / "value")."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"


class SerializationContext:
    """The record a value belongs to (confluent-kafka's SerializationContext)."""

    __slots__ = ("topic", "field", "headers")

    def __init__(self, topic: str, field: MessageField | str, headers: Headers | None = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers

    def __repr__(self) -> str:
        return "SerializationContext({0!r}, {1!r}, {2!r})".format(self.topic, self.field, self.headers)


class ContextLike(Protocol):
    """What a deserializer reads from a context: fastkc's or confluent-kafka's."""

    topic: str
    field: Any
    headers: Any


class DeserializerConfigurationError(KafkaConfigurationError, ValueError):
    """A deserializer setting is unknown or invalid (confluent-kafka raises
    ValueError for the same settings, so `except ValueError` keeps working)."""


class DeserializationError(RecordSchemaError):
    """A key or value that could not be turned into an object; `reason`,
    `topic`, `partition`, `offset` and `schema_id` name what and where (the
    schema id is None when the frame did not name one)."""


class ValueFramingError(DeserializationError):
    """The bytes (or the schema-id header) are not Schema Registry framing."""


class WriterSchemaError(DeserializationError):
    """The registry could not give the writer schema (unknown id, unauthorized,
    unreachable, a malformed answer), or it is not a valid schema."""


class UnreachableWriterSchemaError(WriterSchemaError):
    """The registry did not answer: retrying the same record may succeed."""

    retriable = True


class WrongSchemaTypeError(DeserializationError):
    """The frame names a schema of another type (a Protobuf or JSON Schema id
    given to the Avro deserializer)."""


class PayloadDecodeError(DeserializationError):
    """The payload does not decode under its writer schema (or does not
    resolve to the reader schema)."""
