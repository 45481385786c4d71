"""Typed errors of the Schema Registry client and of the wire framing.

Each registry error names the registry URL it came from and the schema id,
GUID or subject it was about; each framing error names the record (topic,
partition, offset) and the schema id when the frame got that far. They live
here until the lead re-homes them under fastkc.errors; all are KafkaErrors.
"""
from fastkc.errors import KafkaConfigurationError, KafkaError
from fastkc.schema_registry.payload_errors import PayloadReadError


class SchemaRegistryConfigurationError(KafkaConfigurationError, ValueError):
    """A SchemaRegistryClient setting is unknown or invalid (confluent-kafka raises
    ValueError for the same settings, so `except ValueError` keeps working)."""


class SchemaRegistryError(KafkaError):
    """The registry answered with an error, or could not be asked.

    Attributes:
      url: the registry request (or, for UnreachableError, the base URLs tried)
      http_status_code: the HTTP status, -1 when there was no answer
      error_code: the registry's error_code (40403, ...), -1 when absent
      error_message: the registry's message, or what went wrong
    """

    UNKNOWN = -1

    def __init__(self, error_message: str, url: str = "", http_status_code: int = -1,
                 error_code: int = -1) -> None:
        self.error_message = error_message
        self.url = url
        self.http_status_code = http_status_code
        self.error_code = error_code
        super().__init__("{0} (url={1}, HTTP status {2}, registry code {3})".format(
            error_message, url, http_status_code, error_code))

    def __reduce__(self) -> tuple[type["SchemaRegistryError"], tuple[str, str, int, int]]:
        return (self.__class__, (self.error_message, self.url, self.http_status_code, self.error_code))


class SchemaNotFoundError(SchemaRegistryError):
    """No schema with this id or GUID (registry code 40403)."""


class SubjectNotFoundError(SchemaRegistryError):
    """No such subject (registry code 40401)."""


class VersionNotFoundError(SchemaRegistryError):
    """The subject has no such version (registry code 40402)."""


class SchemaRegistryUnauthorizedError(SchemaRegistryError):
    """HTTP 401 or 403: the credentials are missing, wrong, or not allowed this."""


class SchemaRegistryUnreachableError(SchemaRegistryError):
    """No registry URL answered within the retries and the deadline (connection
    refused, timeouts, or retriable statuses such as 503 to the end)."""

    retriable = True


class MalformedSchemaResponseError(SchemaRegistryError):
    """The registry's answer is not the JSON shape its API promises (not JSON,
    a missing or mistyped field, a reference cycle or a reference chain deeper
    than the bound)."""


class RecordSchemaError(KafkaError):
    """A failure about one record's key or value, naming the record.

    Attributes:
      reason: what was wrong
      topic, partition, offset: the record, when the caller passed them ("" / -1 otherwise)
      schema_id: the schema id (int) or GUID (str) when the frame got that far, else None
    """

    def __init__(self, reason: str = "", topic: str = "", partition: int = -1, offset: int = -1,
                 schema_id: int | str | None = None) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.schema_id = schema_id
        super().__init__("{0} (topic={1!r}, partition={2}, offset={3}, schema id={4})".format(
            reason, topic, partition, offset, schema_id))

    def __reduce__(self) -> tuple[type["RecordSchemaError"], tuple[str, str, int, int, int | str | None]]:
        return (self.__class__, (self.reason, self.topic, self.partition, self.offset, self.schema_id))


class SchemaFramingError(RecordSchemaError):
    """A key or value that is not a well-formed Schema Registry frame (the
    reason names the byte position)."""


class NotFramedError(SchemaFramingError):
    """The bytes do not start with a known magic byte (0: schema id, 1: GUID)."""


class TruncatedFrameError(SchemaFramingError):
    """The bytes end inside the frame (magic, id, GUID or message indexes)."""


class InvalidMessageIndexError(SchemaFramingError):
    """Protobuf's message-index array is malformed: an over-long varint, a
    negative count or index, or a count larger than the bytes that follow."""


class JsonSchemaError(KafkaError):
    """A JSON Schema the codec cannot use: not JSON, not valid under its
    draft's metaschema, or a `$ref` that names neither a place in the schema
    nor one of the given references (the codec never fetches a URI)."""


class JsonPayloadError(PayloadReadError):
    """A JSON payload that could not be turned into a value or a row.

    Attributes:
      index: which payload of the decoded list (0 for a single one)
      reason: what was wrong (also `problem`; `what` is "JSON", `offset` -1:
        the parsers do not say at which byte)

    The caller that knows the record (topic, partition, offset, schema id)
    wraps it in a DeserializationError with this as its __cause__.
    """

    def __init__(self, index: int, reason: str) -> None:
        self.reason = reason
        super().__init__(index, -1, "JSON", reason)

    def __reduce__(self) -> tuple[type["JsonPayloadError"], tuple[int, str]]:
        return (self.__class__, (self.index, self.reason))


class JsonDecodeError(JsonPayloadError, ValueError):
    """The payload is not one JSON text in UTF-8 (invalid UTF-8, invalid or
    truncated JSON, nested past the parser's depth, a number past Python's
    digit limit). Also a ValueError, as json's and orjson's errors are."""


class JsonValidationError(JsonPayloadError):
    """The payload is JSON but does not validate against the schema
    (jsonschema's message, as confluent-kafka's SerializationError carries;
    `path` is where in the value, e.g. "$.items[2].id")."""

    def __init__(self, index: int, reason: str, path: str = "$") -> None:
        self.path = path
        super().__init__(index, reason)

    def __reduce__(self) -> tuple[type["JsonPayloadError"], tuple[int, str, str]]:  # type: ignore[override]
        return (self.__class__, (self.index, self.reason, self.path))


class JsonArrowTypeError(JsonPayloadError):
    """The payload is JSON but a value in it does not fit the Arrow type the
    schema maps to (a string where an integer is declared, an integer past
    int64, an enum value not among the symbols): raised instead of a wrong
    or null value; `path` is where in the value."""

    def __init__(self, index: int, reason: str, path: str = "$") -> None:
        self.path = path
        super().__init__(index, reason)

    def __reduce__(self) -> tuple[type["JsonPayloadError"], tuple[int, str, str]]:  # type: ignore[override]
        return (self.__class__, (self.index, self.reason, self.path))
