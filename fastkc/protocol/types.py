"""Primitive Kafka wire types: a bounds-checked reader and an append-only writer.

Contract of `Reader`: every read checks that the bytes it needs are there
before touching them (`need > end - pos`, the same idiom as the C cursor) and
raises `Malformed` with the byte position and what was being read; on failure
the position does not move. Varints are strict: at most 5 bytes for 32-bit
values and 10 for 64-bit ones, an over-long or overflowing encoding is an
error. The codec turns `Malformed` into `fastkc.errors.ProtocolParseError`
naming the API and version (the reader does not know them).

Lengths and counts read from the wire are untrusted: callers compare them
with `remaining()` before allocating anything sized by them.
"""
import builtins
import struct
from typing import Any, NoReturn

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = bytes(16)

# The primitive type names of the schema language, with their fixed wire size
# (None: variable). Array counts are checked against the smallest size an
# element can have, so the table doubles as the minimum element size.
FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
    "string": None,
    "bytes": None,
    "records": None,
}
PRIMITIVES = frozenset(FIXED_SIZES)


class Malformed(Exception):
    """Raised by Reader; carries the absolute byte position and a reason."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(position, reason)
        self.position = position
        self.reason = reason


class Reader:
    """A cursor over `data[pos:end]`. `data` may be bytes or a memoryview;
    slices handed out (`bytes`, `records`) are copied to `bytes` so the
    decoded message never pins the caller's buffer."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise Malformed(
                self.pos,
                "{0}: need {1} bytes, {2} left".format(what, n, self.end - self.pos),
            )

    def fail(self, reason: str, position: int | None = None) -> NoReturn:
        raise Malformed(self.pos if position is None else position, reason)

    # --- fixed-size integers -------------------------------------------------
    def _fixed(self, st: struct.Struct, what: str) -> Any:
        self._need(st.size, what)
        (value,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return value

    def int8(self, what: str = "int8") -> int:
        value: int = self._fixed(_I8, what)
        return value

    def int16(self, what: str = "int16") -> int:
        value: int = self._fixed(_I16, what)
        return value

    def uint16(self, what: str = "uint16") -> int:
        value: int = self._fixed(_U16, what)
        return value

    def int32(self, what: str = "int32") -> int:
        value: int = self._fixed(_I32, what)
        return value

    def uint32(self, what: str = "uint32") -> int:
        value: int = self._fixed(_U32, what)
        return value

    def int64(self, what: str = "int64") -> int:
        value: int = self._fixed(_I64, what)
        return value

    def float64(self, what: str = "float64") -> float:
        value: float = self._fixed(_F64, what)
        return value

    def bool(self, what: str = "bool") -> builtins.bool:
        self._need(1, what)
        byte = self.data[self.pos]
        # Kafka's readers treat any non-zero byte as true; we do the same so a
        # real broker's message is never rejected over it.
        self.pos += 1
        return byte != 0

    def uuid(self, what: str = "uuid") -> bytes:
        return self.raw(16, what)

    def raw(self, n: int, what: str = "bytes") -> bytes:
        self._need(n, what)
        start = self.pos
        self.pos = start + n
        return bytes(self.data[start:self.pos])

    # --- varints ---------------------------------------------------------------
    def _uvarint(self, max_bytes: int, bits: int, what: str) -> int:
        start = self.pos
        value = 0
        shift = 0
        for i in range(max_bytes):
            if self.pos + i >= self.end:
                raise Malformed(start, "{0}: varint truncated".format(what))
            byte = self.data[self.pos + i]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >> bits:
                    raise Malformed(start, "{0}: varint overflows {1} bits".format(what, bits))
                self.pos += i + 1
                return value
            shift += 7
        raise Malformed(start, "{0}: varint longer than {1} bytes".format(what, max_bytes))

    def uvarint(self, what: str = "unsigned varint") -> int:
        return self._uvarint(5, 32, what)

    def uvarlong(self, what: str = "unsigned varlong") -> int:
        return self._uvarint(10, 64, what)

    def varint(self, what: str = "varint") -> int:
        z = self._uvarint(5, 32, what)
        return (z >> 1) ^ -(z & 1)

    def varlong(self, what: str = "varlong") -> int:
        z = self._uvarint(10, 64, what)
        return (z >> 1) ^ -(z & 1)

    # --- lengths ---------------------------------------------------------------
    def length(self, compact: builtins.bool, wide: builtins.bool, what: str) -> int:
        """A length prefix: compact = unsigned varint of (n + 1), 0 meaning
        null; otherwise int16 (strings) or int32 (`wide`: bytes, arrays), -1
        meaning null. Returns -1 for null. Any other negative is an error."""
        start = self.pos
        if compact:
            n = self.uvarint(what + " length") - 1
        else:
            n = self.int32(what + " length") if wide else self.int16(what + " length")
        if n < -1:
            self.pos = start
            self.fail("{0}: negative length {1}".format(what, n))
        return n

    def string_of(self, n: int, what: str) -> str:
        start = self.pos
        raw = self.raw(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.pos = start
            self.fail("{0}: invalid UTF-8 ({1})".format(what, exc.reason), start + exc.start)


class Writer:
    """Append-only output buffer. Values out of range for their wire type
    raise ValueError naming the field (the codec adds the message)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def _fixed(self, st: struct.Struct, value: object, what: str) -> None:
        try:
            self.buf += st.pack(value)
        except (struct.error, TypeError) as exc:
            raise ValueError("{0}: {1!r} does not fit ({2})".format(what, value, exc)) from None

    def int8(self, v: int, what: str = "int8") -> None:
        self._fixed(_I8, v, what)

    def int16(self, v: int, what: str = "int16") -> None:
        self._fixed(_I16, v, what)

    def uint16(self, v: int, what: str = "uint16") -> None:
        self._fixed(_U16, v, what)

    def int32(self, v: int, what: str = "int32") -> None:
        self._fixed(_I32, v, what)

    def uint32(self, v: int, what: str = "uint32") -> None:
        self._fixed(_U32, v, what)

    def int64(self, v: int, what: str = "int64") -> None:
        self._fixed(_I64, v, what)

    def float64(self, v: float, what: str = "float64") -> None:
        self._fixed(_F64, v, what)

    def bool(self, v: builtins.bool, what: str = "bool") -> None:
        if not isinstance(v, bool):
            raise ValueError("{0}: expected bool, got {1!r}".format(what, v))
        self.buf.append(1 if v else 0)

    def uuid(self, v: bytes | bytearray, what: str = "uuid") -> None:
        if not isinstance(v, (bytes, bytearray)) or len(v) != 16:
            raise ValueError("{0}: expected 16 bytes, got {1!r}".format(what, v))
        self.buf += v

    def raw(self, v: bytes | bytearray | memoryview) -> None:
        self.buf += v

    def uvarint(self, v: int, what: str = "unsigned varint", bits: int = 32) -> None:
        if not isinstance(v, int) or v < 0 or v >> bits:
            raise ValueError("{0}: {1!r} is not an unsigned {2}-bit value".format(what, v, bits))
        while v > 0x7F:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def varint(self, v: int, what: str = "varint") -> None:
        if not -(1 << 31) <= v < (1 << 31):
            raise ValueError("{0}: {1!r} does not fit in 32 bits".format(what, v))
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF, what)

    def varlong(self, v: int, what: str = "varlong") -> None:
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError("{0}: {1!r} does not fit in 64 bits".format(what, v))
        self.uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF, what, bits=64)

    def length(self, n: int, compact: builtins.bool, wide: builtins.bool, what: str) -> None:
        """Write a length prefix; n == -1 writes null."""
        if compact:
            self.uvarint(n + 1, what + " length")
        elif wide:
            self.int32(n, what + " length")
        else:
            self.int16(n, what + " length")
