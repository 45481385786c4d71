"""Schema Registry wire framing: which schema a key or value was written with.

Two forms, as confluent-kafka's serializers write them:

- prefix form: the value starts with magic 0x00 and the schema id (4 bytes,
  big-endian, unsigned); the payload follows.
- header form (confluent-kafka >= 2.10.1): the record header
  `__value_schema_id` (or `__key_schema_id`) holds magic 0x01 and a 16-byte
  GUID; the value is the bare payload.

For Protobuf, the message-index array follows the id or GUID (in the value or
in the header): a count, then that many indexes, each a zigzag varint; the
count 0 alone means [0] (the first message of the file), the common case.

This is the pure-Python reference; the batch decoders do the same in C.
Every failure is a SchemaFramingError subclass naming the record.
"""
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastkc.schema_registry.errors import (
    InvalidMessageIndexError,
    NotFramedError,
    SchemaFramingError,
    TruncatedFrameError,
)

MAGIC_SCHEMA_ID = 0
MAGIC_GUID = 1
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"

# A zigzag varint of a 64-bit value takes at most 10 bytes.
_MAX_VARINT_BYTES = 10


@dataclass(frozen=True, slots=True)
class Frame:
    """A key or value split into the schema it names and its payload.

    Exactly one of schema_id (prefix form, or a header carrying magic 0) and
    guid is set. message_indexes is None unless Protobuf framing was asked for.
    payload_offset is where the payload starts in the value (0 when the
    schema came from a header), so a batch decoder can skip the copy.
    """

    schema_id: int | None
    guid: uuid.UUID | None
    message_indexes: tuple[int, ...] | None
    payload: bytes
    payload_offset: int

    @property
    def schema_key(self) -> int | str:
        """The id, or the GUID's text: what the registry is asked for."""
        return self.schema_id if self.schema_id is not None else str(self.guid)


@dataclass(frozen=True, slots=True)
class _Where:
    topic: str
    partition: int
    offset: int


def _read_zigzag(data: bytes | memoryview, pos: int, where: _Where, schema: int | str | None) -> tuple[int, int]:
    """(value, next position) of the zigzag varint at `pos`."""
    raw = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise TruncatedFrameError(
                "the message-index varint at byte {0} is cut short".format(pos),
                where.topic, where.partition, where.offset, schema)
        byte = data[pos + i]
        raw |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            # The 10th byte may only carry the 64th bit.
            if i == _MAX_VARINT_BYTES - 1 and byte > 1:
                break
            return (raw >> 1) ^ -(raw & 1), pos + i + 1
    raise InvalidMessageIndexError(
        "the message-index varint at byte {0} is longer than 64 bits".format(pos),
        where.topic, where.partition, where.offset, schema)


def _read_message_indexes(data: bytes | memoryview, pos: int, where: _Where,
                          schema: int | str) -> tuple[tuple[int, ...], int]:
    count, pos = _read_zigzag(data, pos, where, schema)
    if count == 0:
        return (0,), pos
    if count < 0:
        raise InvalidMessageIndexError(
            "negative message-index count {0} at byte {1}".format(count, pos),
            where.topic, where.partition, where.offset, schema)
    # Each index takes at least one byte, so the bytes end before a larger
    # count's indexes would; refusing it here also bounds a hostile count's work.
    if count > len(data) - pos:
        raise TruncatedFrameError(
            "message-index count {0} at byte {1}, but only {2} bytes follow".format(count, pos, len(data) - pos),
            where.topic, where.partition, where.offset, schema)
    indexes = []
    for _ in range(count):
        index, next_pos = _read_zigzag(data, pos, where, schema)
        if index < 0:
            raise InvalidMessageIndexError(
                "negative message index {0} at byte {1}".format(index, pos),
                where.topic, where.partition, where.offset, schema)
        indexes.append(index)
        pos = next_pos
    return tuple(indexes), pos


def _read_schema_ref(data: bytes | memoryview, protobuf: bool,
                     where: _Where) -> tuple[int | None, uuid.UUID | None, tuple[int, ...] | None, int]:
    """(schema id, GUID, message indexes, bytes used) of the frame at the start of `data`."""
    if len(data) == 0:
        raise TruncatedFrameError("empty: no magic byte", where.topic, where.partition, where.offset)
    magic = data[0]
    schema_id: int | None = None
    guid: uuid.UUID | None = None
    if magic == MAGIC_SCHEMA_ID:
        if len(data) < 5:
            raise TruncatedFrameError(
                "{0} bytes: the 4-byte schema id after magic 0 is cut short".format(len(data)),
                where.topic, where.partition, where.offset)
        schema_id = int.from_bytes(data[1:5], "big")
        named: int | str = schema_id
        pos = 5
    elif magic == MAGIC_GUID:
        if len(data) < 17:
            raise TruncatedFrameError(
                "{0} bytes: the 16-byte GUID after magic 1 is cut short".format(len(data)),
                where.topic, where.partition, where.offset)
        guid = uuid.UUID(bytes=bytes(data[1:17]))
        named = str(guid)
        pos = 17
    else:
        raise NotFramedError(
            "unknown magic byte {0:#04x} (0: schema id, 1: GUID): not Schema Registry framing".format(magic),
            where.topic, where.partition, where.offset)
    indexes = None
    if protobuf:
        indexes, pos = _read_message_indexes(data, pos, where, named)
    return schema_id, guid, indexes, pos


def split_value(value: bytes | None, *, protobuf: bool = False, topic: str = "", partition: int = -1,
                offset: int = -1) -> Frame:
    """The prefix form: `value` = magic + id or GUID (+ message indexes) + payload."""
    where = _Where(topic, partition, offset)
    if value is None:
        raise NotFramedError("a null value has no schema frame", topic, partition, offset)
    schema_id, guid, indexes, used = _read_schema_ref(value, protobuf, where)
    return Frame(schema_id, guid, indexes, bytes(value[used:]), used)


def schema_id_header(headers: Iterable[tuple[str, bytes | None]] | None, *, is_key: bool = False) -> bytes | None:
    """The `__key_schema_id` / `__value_schema_id` header's value, or None. The
    first one counts (confluent-kafka's deserializer reads the first too)."""
    if not headers:
        return None
    wanted = KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER
    for name, header_value in headers:
        if name == wanted:
            return header_value
    return None


def split_record(value: bytes | None, headers: Iterable[tuple[str, bytes | None]] | None = None, *,
                 is_key: bool = False, protobuf: bool = False, topic: str = "", partition: int = -1,
                 offset: int = -1) -> Frame:
    """A record's key or value, framed in either form: the schema-id header when
    present (then `value` is the bare payload), else the prefix in `value`.
    This is the order confluent-kafka's dual deserializer uses."""
    header = schema_id_header(headers, is_key=is_key)
    if header is None:
        return split_value(value, protobuf=protobuf, topic=topic, partition=partition, offset=offset)
    where = _Where(topic, partition, offset)
    schema_id, guid, indexes, used = _read_schema_ref(header, protobuf, where)
    if used != len(header):
        raise SchemaFramingError(
            "the {0} header has {1} bytes after its frame".format(
                KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER, len(header) - used),
            topic, partition, offset, schema_id if guid is None else str(guid))
    if value is None:
        raise NotFramedError("a null payload under a schema-id header", topic, partition, offset,
                             schema_id if guid is None else str(guid))
    return Frame(schema_id, guid, indexes, bytes(value), 0)


def _zigzag_varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    out = bytearray()
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """Protobuf's message-index array as confluent-kafka writes it ([0] → b'\\x00')."""
    if list(indexes) == [0]:
        return b"\x00"
    return _zigzag_varint(len(indexes)) + b"".join(_zigzag_varint(i) for i in indexes)


def frame_schema_id(schema_id: int, message_indexes: Sequence[int] | None = None) -> bytes:
    """The prefix form's frame for `schema_id` (put the payload after it)."""
    head = bytes([MAGIC_SCHEMA_ID]) + schema_id.to_bytes(4, "big")
    return head + (encode_message_indexes(message_indexes) if message_indexes is not None else b"")


def frame_guid(guid: uuid.UUID | str, message_indexes: Sequence[int] | None = None) -> bytes:
    """The header form's header value for `guid`."""
    raw = guid.bytes if isinstance(guid, uuid.UUID) else uuid.UUID(guid).bytes
    head = bytes([MAGIC_GUID]) + raw
    return head + (encode_message_indexes(message_indexes) if message_indexes is not None else b"")
