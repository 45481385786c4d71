"""The stream framer: size-prefixed Kafka frames reassembled from socket chunks.

This is the first of the two buffer layers (style.md, practice 1): bytes come
in chunks of any size; `feed()` returns every complete payload (the bytes
after the 4-byte size prefix: response header + body). The second layer (the
codec's Reader, the C cursor for Fetch) parses one payload in place.

A size that is negative or larger than `max_frame_size` means the stream is
not Kafka (or is desynchronised): it raises KafkaProtocolError and the framer
stays failed, since no later byte can be trusted.
"""
import struct

from fastkc.errors import KafkaProtocolError

_SIZE = struct.Struct(">i")

# Kafka's own default for socket.request.max.bytes is 100 MiB; responses can
# be larger (fetch.max.bytes may be raised), so allow up to 1 GiB by default.
DEFAULT_MAX_FRAME_SIZE = 1 << 30


def frame(payload: bytes) -> bytes:
    """Prefix one request or response payload with its size."""
    return _SIZE.pack(len(payload)) + payload


class Framer:
    __slots__ = ("_buf", "_max", "_failed")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._max = max_frame_size
        self._failed: KafkaProtocolError | None = None

    def buffered(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buf)

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[bytes]:
        """Add a chunk; return the list of payloads it completed (maybe empty)."""
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        buf += chunk
        frames = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self._max:
                self._failed = KafkaProtocolError(
                    "frame size {0} at stream byte {1} is outside 0..{2}".format(size, pos, self._max)
                )
                raise self._failed
            if size > end - pos - 4:
                break
            frames.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return frames
