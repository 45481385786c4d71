"""The pure-Python twin of the compiled record decoder: the same backend
contract as fastkc/_core/records.py (see fastkc/_backend.py), written to be
obviously right rather than fast. It is the oracle of the differential tests,
and the fallback when the extension cannot be imported.

Semantics (kafka-python 3.0.12's consumer path is the oracle for valid input;
where it is loose on malformed input we follow the Java client and are strict):

Framing of the blob (Java's ByteBufferLogInputStream order; _frame_entry,
shared by the decoder and scan_blob):
  - fewer than 17 bytes left (not enough to see the magic byte) → stop silently;
  - size field (BatchLength / MessageSize) < 14, the smallest legacy message
    → InvalidRecordError (a negative or tiny size is never a cut-off batch);
  - magic not 0, 1 or 2 → InvalidRecordError (even in a cut tail);
  - magic 2 with BatchLength < 49, or a LastOffsetDelta (when its bytes are
    there) that is negative or leaves no next offset in int64, and a legacy
    offset of INT64_MAX → InvalidRecordError;
  - fewer bytes left than the size says → a partial trailing batch: stop silently.
Magic 2 batch:
  - BatchLength < 49 (61-byte header) or RecordCount < 0 → InvalidRecordError;
  - CRC32C over Attributes..end when check_crcs, else RecordCrcError;
  - read_committed and ProducerId ≥ 0: aborted transactions whose first offset
    ≤ the batch's last offset join the aborted-producer set; a control batch
    whose first record's key says ABORT removes its producer; a transactional
    data batch of an aborted producer is skipped WITHOUT decoding its records
    (as Java, so its codec is never run);
  - every other batch, control batches included, is decoded in full with the
    strict record rules below; control records are never returned. (The
    marker key is read only when read_committed consults it; it must then be
    ≥ 4 bytes, else InvalidRecordError.)
  - codec 0-4, else UnsupportedCompressionError; the decompressed payload must
    hold exactly RecordCount records and nothing more.
  - record: length varint ≥ 0 and within the payload; every field read inside
    the record; consumed bytes == length. Varints: ≤ 5 bytes (int32) / ≤ 10
    (int64), no bits beyond the width, redundant 0x80 bytes allowed. Key /
    value / header-value length −1 is null, other negatives invalid; header
    count and header key length must be ≥ 0; header keys must be UTF-8.
  - offset = BaseOffset + OffsetDelta, timestamp = BaseTimestamp + delta
    (MaxTimestamp for every record under LogAppendTime); a result outside
    int64 → InvalidRecordError (the C core computes in int64).
Legacy entries (magic 0/1):
  - MessageSize ≥ 14 (magic 0) / 22 (magic 1); CRC32 over magic..end; key and
    value lengths as above; the value must end exactly at the message end.
  - a compressed wrapper (codec 1-3; others UnsupportedCompressionError) must
    have a non-null value, which decompresses to a complete inner message set
    (a cut-off inner entry is corruption, not a partial batch): inner entries
    have the wrapper's magic, no codec, their own CRC checked; an empty inner
    set is invalid (Java rejects it). Magic 1 inner offsets are relative
    (absolute = wrapper offset − last inner offset + inner offset, unless
    that base is negative, as kafka-python and Java do); magic 0's are
    absolute. Inner records take the wrapper's timestamp type, and the
    wrapper's timestamp under LogAppendTime. LZ4 under magic 0 carries the
    wrong header checksum (KAFKA-3160): it is recomputed before decoding.
  - leader_epoch is −1 (Java: legacy batches have no partition leader epoch;
    kafka-python leaks the previous v2 batch's epoch, an accident of state).
    Magic 0 records have timestamp None and timestamp_type None, as
    kafka-python yields; checksum is the message's own CRC.
  - LastOffsetDelta must be ≥ 0, RecordCount ≤ LastOffsetDelta + 1 (before
    decompressing), every OffsetDelta strictly above the previous one and
    ≤ LastOffsetDelta, else InvalidRecordError (control batches too).
  - RecordCount above max_batch_records (when > 0), or a legacy wrapper with
    more inner messages, → RecordCountLimitError (checked before
    decompressing a v2 batch).
Filtering and result:
  - records below the running position are skipped (fetch_offset, then one
    past each complete batch: Java's CompletedFetch rule, so a batch that
    repeats earlier offsets never hands them out twice), offset ≥ stop_offset
    (when ≥ 0) dropped; next_offset starts at fetch_offset and, after each
    complete batch, becomes max(next_offset, one past the batch's last
    offset) — never backwards, so a stale batch below the fetch position
    cannot rewind the consumer.
  - The resumable walk (RecordStream / _Stream) decodes a batch whole when it
    is reached and hands out at most n records per step; its steps join to
    exactly the one-shot result. Arrow steps end before an int32 offset
    would pass 2^31 - 1 (one-shot: ArrowCapacityError).
  - an error carries the records of the batches completed before the bad one
    (none of the bad batch: the caller resumes at its base offset) and
    next_offset = offset = the bad batch's base offset.
Codecs: zlib (gzip, concatenated members allowed), cramjam snappy (raw block,
or Kafka's xerial framing parsed here), lz4.frame, zstandard. A declared size
above the remaining budget (zstd frame content size, lz4 content size, snappy
block length) is rejected before decompressing; streaming stops at cap+1 bytes
→ DecompressedSizeLimitError. The cap is per batch (per legacy wrapper).
Arrow: timestamps are ms*1000 in int64 microseconds; a timestamp whose
microseconds overflow int64 → InvalidRecordError (decode_partition_arrow only).
Share decodes (decode_share*, KIP-932): the same walk from fetch offset 0 with
no transaction filter; of the records it keeps, those whose offset is in an
acquired range and above every record compared before are handed out (each
offset once) with the range's delivery count, before the Arrow timestamp
check; gaps = acquired offsets with no record; an error also carries
ShareFailure (fastkc/share_ranges.py) from the bad entry's base offset and
the last offset its header claims.
"""
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from fastkc.errors import (
    ArrowCapacityError,
    CorruptRecordError,
    DecompressedSizeLimitError,
    InvalidRecordError,
    RecordCountLimitError,
    RecordCrcError,
    RecordDecompressionError,
    UnsupportedCompressionError,
)
from fastkc.share_ranges import share_failure, share_gaps
from fastkc.structs import ConsumerRecord, DecodedPartition, ScanInfo, ShareDecoded, ShareRecord

__all__ = ["decode_partition", "decode_partition_arrow", "crc32c", "xxh32", "scan_blob", "check_blob", "RecordStream",
           "ArrowBuilder"]

#: what the decoder reads: any contiguous bytes-like object
_Buffer = bytes | bytearray | memoryview
#: what it indexes (bytes stay bytes, the rest become a byte memoryview)
_Bytes = bytes | memoryview
#: (deserializer, takes the whole record) or None for raw bytes (fastkc/_backend.py)
_Deserializer = tuple[Callable[..., Any], bool] | None
#: rows, key bytes, value bytes, header count, header key bytes, header value bytes (six
#: counts; the compiled core's stub says so in its type, the twin keeps a plain tuple)
_Totals = tuple[int, ...]
#: a record's headers: (key, value or None)
_Headers = list[tuple[str, bytes | None]]
#: a v2 record as parsed: (timestamp delta, offset delta, key, value, headers)
_ParsedRecord = tuple[int, int, bytes | None, bytes | None, _Headers]
#: a legacy message as parsed: (offset, crc, attributes, timestamp, key, value)
_Legacy = tuple[int, int, int, int | None, bytes | None, bytes | None]
# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# Java's HEADER_SIZE_UP_TO_MAGIC: BaseOffset + size + 4 bytes + magic.
_HEADER_UP_TO_MAGIC = 17
_LOG_OVERHEAD = 12
_MIN_ENTRY_SIZE = 14  # a magic-0 message: crc, magic, attributes, two lengths
_V2_HEADER = 61
_RECORD_MIN_SIZE = 7  # a v2 record: Length, Attributes and the five varints, a byte each (FKC_RECORD_MIN_SIZE)
_LEGACY_MIN_SIZE = {0: 14, 1: 22}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


class _Bad(Exception):
    """Internal: a problem found while decoding one batch. Turned into the
    public error (with records so far and next_offset) at the top level."""

    def __init__(self, error_class: type[CorruptRecordError], reason: str) -> None:
        super().__init__(reason)
        self.error_class = error_class
        self.reason = reason


def _invalid(reason: str) -> _Bad:
    return _Bad(InvalidRecordError, reason)


# --- checksums ------------------------------------------------------------------------
def _make_crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data: _Buffer, crc: int = 0) -> int:
    """CRC-32C (Castagnoli), bitwise-table reference implementation."""
    table = _CRC32C_TABLE
    c = crc ^ 0xFFFFFFFF
    for byte in bytes(data):
        c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32c_implementation() -> str:
    return "python"


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: _Buffer, seed: int = 0) -> int:
    """XXH32, only needed to repair magic-0 LZ4 header checksums."""
    data = bytes(data)
    n = len(data)
    p = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while p + 16 <= n:
            lanes = struct.unpack_from("<IIII", data, p)
            v1 = (_rotl32((v1 + lanes[0] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl32((v2 + lanes[1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl32((v3 + lanes[2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl32((v4 + lanes[3] * _P2) & _M32, 13) * _P1) & _M32
            p += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        (word,) = struct.unpack_from("<I", data, p)
        h = (_rotl32((h + word * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < n:
        h = (_rotl32((h + data[p] * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- a bounds-checked reader -------------------------------------------------------------
class _Reader:
    """Reads fields from buf[pos:end]. Every read checks the bytes are there,
    so a length can never take a read past `end`; errors name the field and
    the byte position (`base` maps positions inside a decompressed payload
    or sub-slice back to something a human can find)."""

    def __init__(self, buf: _Bytes, pos: int, end: int, where: str) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end
        self.where = where  # e.g. "batch at byte 123, decompressed payload"

    def _need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise _invalid(
                "{0}: {1} needs {2} bytes at position {3}, only {4} left".format(
                    self.where, what, n, self.pos, self.end - self.pos
                )
            )

    def fixed(self, fmt: str, size: int, what: str) -> Any:  # what struct unpacked (an int)
        self._need(size, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def take(self, n: int, what: str) -> bytes:
        self._need(n, what)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def uvarint(self, max_bytes: int, bits: int, what: str) -> int:
        value = 0
        for i in range(max_bytes):
            if self.pos + i >= self.end:
                raise _invalid(
                    "{0}: {1} varint cut off at position {2}".format(self.where, what, self.pos)
                )
            byte = self.buf[self.pos + i]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if value >> bits:
                    raise _invalid(
                        "{0}: {1} varint at position {2} overflows {3} bits".format(
                            self.where, what, self.pos, bits
                        )
                    )
                self.pos += i + 1
                return value
        raise _invalid(
            "{0}: {1} varint at position {2} is longer than {3} bytes".format(
                self.where, what, self.pos, max_bytes
            )
        )

    def varint(self, what: str) -> int:
        u = self.uvarint(5, 32, what)
        return (u >> 1) ^ -(u & 1)

    def varlong(self, what: str) -> int:
        u = self.uvarint(10, 64, what)
        return (u >> 1) ^ -(u & 1)

    def remaining(self) -> int:
        return self.end - self.pos


def _checked_i64(value: int, what: str, where: str) -> int:
    if value < INT64_MIN or value > INT64_MAX:
        raise _invalid("{0}: {1} {2} does not fit in int64".format(where, what, value))
    return value


# --- codecs ---------------------------------------------------------------------------------
def _size_limit(cap: int, what: str) -> _Bad:
    return _Bad(
        DecompressedSizeLimitError,
        "{0} decompresses to more than max_decompressed_bytes={1}".format(what, cap),
    )


def _codec_failed(what: str, exc: Exception) -> _Bad:
    return _Bad(RecordDecompressionError, "{0}: {1}".format(what, exc))


def _gunzip(data: _Buffer, cap: int, where: str) -> bytes:
    out = bytearray()
    rest = bytes(data)
    try:
        while True:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip container only, as Java
            # max_length cap+1-len(out) ≥ 1 here, so zlib never treats it as "unlimited".
            out += d.decompress(rest, cap + 1 - len(out))
            if len(out) > cap:
                raise _size_limit(cap, where)
            if not d.eof:
                raise _Bad(RecordDecompressionError, "{0}: gzip stream is cut off".format(where))
            rest = d.unused_data
            if not rest:  # RFC 1952 allows concatenated members; read them all
                return bytes(out)
    except zlib.error as exc:
        raise _codec_failed(where + ": gzip", exc) from None


def _snappy_raw_block(block: bytes, budget: int, cap: int, where: str) -> bytes:
    import cramjam

    # The block starts with its uncompressed length (uvarint ≤ 5 bytes, 32 bits):
    # check it against the budget before letting snappy allocate that much.
    declared = 0
    for i in range(5):
        if i >= len(block):
            raise _Bad(RecordDecompressionError, "{0}: snappy length cut off".format(where))
        declared |= (block[i] & 0x7F) << (7 * i)
        if not block[i] & 0x80:
            break
    else:
        raise _Bad(RecordDecompressionError, "{0}: snappy length varint too long".format(where))
    if declared > 0xFFFFFFFF:
        raise _Bad(RecordDecompressionError, "{0}: snappy length overflows 32 bits".format(where))
    if declared > budget:
        raise _size_limit(cap, where)
    try:
        return bytes(cramjam.snappy.decompress_raw(bytes(block)))
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise _codec_failed(where + ": snappy", exc) from None


def _unsnappy(data: _Buffer, cap: int, where: str) -> bytes:
    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw_block(data, cap, cap, where)
    # Kafka's Java client writes xerial (snappy-java) framing: 8-byte magic,
    # version i32, compat i32 (both ignored, some producers write them
    # little-endian), then [i32 BE length][raw snappy block] chunks.
    if len(data) < 16:
        raise _Bad(RecordDecompressionError, "{0}: xerial snappy header cut off".format(where))
    out = bytearray()
    pos = 16
    while pos < len(data):
        if len(data) - pos < 4:
            raise _Bad(RecordDecompressionError, "{0}: xerial chunk length cut off".format(where))
        (chunk_len,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if chunk_len < 0 or chunk_len > len(data) - pos:
            raise _Bad(
                RecordDecompressionError,
                "{0}: xerial chunk length {1} at {2} runs past the data".format(
                    where, chunk_len, pos - 4
                ),
            )
        out += _snappy_raw_block(data[pos : pos + chunk_len], cap - len(out), cap, where)
        pos += chunk_len
    return bytes(out)


def _fix_lz4_header_checksum(data: bytes, where: str) -> bytes:
    # KAFKA-3160: Kafka 0.8/0.9 hashed the magic number into the frame
    # descriptor's header checksum. Recompute it over the descriptor alone
    # (FLG..last descriptor byte) so a standard decoder accepts the frame.
    if len(data) < 7 or data[:4] != _LZ4_MAGIC:
        raise _Bad(RecordDecompressionError, "{0}: not an LZ4 frame".format(where))
    flg = data[4]
    header_len = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) < header_len:
        raise _Bad(RecordDecompressionError, "{0}: LZ4 frame header cut off".format(where))
    hc = (xxh32(data[4 : header_len - 1]) >> 8) & 0xFF
    return data[: header_len - 1] + bytes([hc]) + data[header_len:]


def _unlz4(data: _Buffer, cap: int, where: str, magic0: bool) -> bytes:
    import lz4.frame

    data = bytes(data)
    if magic0:
        data = _fix_lz4_header_checksum(data, where)
    try:
        info = lz4.frame.get_frame_info(data)
    except Exception as exc:
        raise _codec_failed(where + ": lz4", exc) from None
    if info.get("content_size", 0) > cap:  # 0 means "not stored"
        raise _size_limit(cap, where)
    d = lz4.frame.LZ4FrameDecompressor()
    try:
        out: bytes = d.decompress(data, max_length=cap + 1)
    except Exception as exc:
        raise _codec_failed(where + ": lz4", exc) from None
    if len(out) > cap:
        raise _size_limit(cap, where)
    if not d.eof:
        raise _Bad(RecordDecompressionError, "{0}: LZ4 frame is cut off".format(where))
    if d.unused_data:
        raise _Bad(RecordDecompressionError, "{0}: bytes after the LZ4 frame".format(where))
    return out


# zstd can expand a 4-byte RLE block to 128 KiB; feeding 128 input bytes at a
# time bounds the overshoot past the cap to a few MiB before we notice.
_ZSTD_FEED = 128


def _unzstd(data: _Buffer, cap: int, where: str) -> bytes:
    import zstandard

    data = bytes(data)
    out = bytearray()
    pos = 0
    try:
        while True:  # one decompressobj per frame; concatenated frames are allowed
            declared = zstandard.frame_content_size(data[pos:])  # -1: not stored
            if declared > cap - len(out):
                raise _size_limit(cap, where)
            d = zstandard.ZstdDecompressor().decompressobj()
            while not d.eof:
                if pos >= len(data):
                    raise _Bad(RecordDecompressionError, "{0}: zstd frame is cut off".format(where))
                chunk = data[pos : pos + _ZSTD_FEED]
                pos += len(chunk)
                out += d.decompress(chunk)
                if len(out) > cap:
                    raise _size_limit(cap, where)
            pos -= len(d.unused_data)
            if pos >= len(data):
                return bytes(out)
    except zstandard.ZstdError as exc:
        raise _codec_failed(where + ": zstd", exc) from None


def _decompress(codec: int, data: _Buffer, cap: int, where: str, magic0: bool = False) -> bytes:
    if codec == 1:
        return _gunzip(data, cap, where)
    if codec == 2:
        return _unsnappy(data, cap, where)
    if codec == 3:
        return _unlz4(data, cap, where, magic0)
    if codec == 4:  # callers reject zstd under magic 0/1 (it arrived with magic 2)
        return _unzstd(data, cap, where)
    raise _Bad(UnsupportedCompressionError, "{0}: unknown compression codec id {1}".format(where, codec))


# --- magic 2 ------------------------------------------------------------------------------------
class _Raw:
    """One decoded record before deserialization / Arrow conversion."""

    __slots__ = (
        "leader_epoch",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "checksum",
        "delivery_count",
    )

    def __init__(self, leader_epoch: int, offset: int, timestamp: int | None, timestamp_type: int | None,
                 key: bytes | None, value: bytes | None, headers: _Headers, checksum: int | None) -> None:
        self.leader_epoch = leader_epoch
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers
        self.checksum = checksum
        self.delivery_count = 0  # set by the share filter (_Stream._share_keep)


def _nullable_bytes_varint(r: _Reader, what: str) -> bytes | None:
    n = r.varint(what + " length")
    if n == -1:
        return None
    if n < 0:
        raise _invalid("{0}: {1} length {2} is negative".format(r.where, what, n))
    return r.take(n, what)


def _parse_v2_records(payload: _Bytes, count: int, where: str, last_offset_delta: int) -> list[_ParsedRecord]:
    """Parse exactly `count` records filling `payload` exactly. Returns a list
    of (timestamp_delta, offset_delta, key, value, headers). Offset deltas
    must strictly increase and stay within [0, LastOffsetDelta]."""
    r = _Reader(payload, 0, len(payload), where)
    out: list[_ParsedRecord] = []
    prev_delta = -1
    for index in range(count):
        if r.remaining() == 0:
            raise _invalid(
                "{0}: payload ends after {1} of {2} records".format(where, index, count)
            )
        length = r.varint("record length")
        if length < 0 or length > r.remaining():
            raise _invalid(
                "{0}: record {1} length {2} at position {3} runs past the payload".format(
                    where, index, length, r.pos
                )
            )
        rec = _Reader(payload, r.pos, r.pos + length, "{0}, record {1}".format(where, index))
        rec.fixed(">b", 1, "attributes")
        ts_delta = rec.varlong("timestamp delta")
        off_delta = rec.varint("offset delta")
        key = _nullable_bytes_varint(rec, "key")
        value = _nullable_bytes_varint(rec, "value")
        header_count = rec.varint("header count")
        if header_count < 0:
            raise _invalid("{0}: negative header count {1}".format(rec.where, header_count))
        headers: _Headers = []
        for _ in range(header_count):
            hkey_len = rec.varint("header key length")
            if hkey_len < 0:
                raise _invalid("{0}: negative header key length {1}".format(rec.where, hkey_len))
            hkey_bytes = rec.take(hkey_len, "header key")
            try:
                hkey = hkey_bytes.decode("utf-8")
            except UnicodeDecodeError:
                raise _invalid("{0}: header key is not UTF-8".format(rec.where)) from None
            headers.append((hkey, _nullable_bytes_varint(rec, "header value")))
        if rec.pos != rec.end:
            raise _invalid(
                "{0}: record length says {1} bytes but its fields took {2}".format(
                    rec.where, length, rec.pos - (rec.end - length)
                )
            )
        r.pos = rec.end
        if off_delta <= prev_delta or off_delta > last_offset_delta:
            raise _invalid(
                "{0}: record {1} has OffsetDelta {2} (previous {3}, LastOffsetDelta {4})".format(
                    where, index, off_delta, prev_delta, last_offset_delta
                )
            )
        prev_delta = off_delta
        out.append((ts_delta, off_delta, key, value, headers))
    if r.remaining():
        raise _invalid(
            "{0}: {1} bytes left after the {2} records".format(where, r.remaining(), count)
        )
    return out


class _State:
    def __init__(self, read_committed: bool, aborted_transactions: Sequence[tuple[int, int]]) -> None:
        self.read_committed = read_committed
        self.aborted_queue = list(aborted_transactions)  # sorted by first_offset
        self.aborted_pids: set[int] = set()


def _decode_v2_batch(buf: _Bytes, pos: int, end: int, base_offset: int, check_crcs: bool, state: _State, cap: int,
                     max_records: int) -> tuple[list[_Raw], int, int, int, tuple[int, int] | None]:
    """Returns (records, batch_next, leader_epoch, decompressed_len or 0,
    (RecordCount, payload bytes) of a data batch or None)."""
    where = "batch at byte {0}".format(pos)
    length = end - pos - _LOG_OVERHEAD
    if length < _V2_HEADER - _LOG_OVERHEAD:
        raise _invalid("{0}: BatchLength {1} is below the 49-byte minimum".format(where, length))
    (leader_epoch, _magic, stored_crc, attributes, last_offset_delta, base_timestamp,
     max_timestamp, producer_id, _producer_epoch, _base_sequence, count) = struct.unpack_from(
        ">ibIhiqqqhii", buf, pos + 12
    )
    if count < 0:
        raise _invalid("{0}: negative record count {1}".format(where, count))
    if check_crcs:
        computed = crc32c(buf[pos + 21 : end])
        if computed != stored_crc:
            raise _Bad(
                RecordCrcError,
                "{0}: CRC32C mismatch (stored 0x{1:08x}, computed 0x{2:08x})".format(
                    where, stored_crc, computed
                ),
            )
    if last_offset_delta < 0:
        raise _invalid("{0}: LastOffsetDelta {1} is impossible".format(where, last_offset_delta))
    last_offset = _checked_i64(base_offset + last_offset_delta, "last offset", where)
    batch_next = _checked_i64(last_offset + 1, "next offset", where)
    if count > last_offset_delta + 1:
        raise _invalid("{0}: RecordCount {1} exceeds the offsets LastOffsetDelta {2} spans".format(
            where, count, last_offset_delta))
    codec = attributes & 0x07
    timestamp_type = (attributes >> 3) & 1
    transactional = bool(attributes & 0x10)
    control = bool(attributes & 0x20)

    consult_txn = state.read_committed and producer_id >= 0
    if consult_txn:
        while state.aborted_queue and state.aborted_queue[0][1] <= last_offset:
            state.aborted_pids.add(state.aborted_queue.pop(0)[0])
        if not control and transactional and producer_id in state.aborted_pids:
            return [], batch_next, leader_epoch, 0, None  # aborted: skipped undecoded, as Java does

    if codec > 4:
        raise _Bad(UnsupportedCompressionError, "{0}: unknown compression codec id {1}".format(where, codec))
    if max_records and count > max_records:
        raise _Bad(RecordCountLimitError, "{0}: RecordCount {1} exceeds the budget of {2} records per batch".format(
            where, count, max_records))
    payload: _Bytes = buf[pos + _V2_HEADER : end]
    blob_len = 0
    if codec != 0:
        payload = _decompress(codec, payload, cap, where)
        blob_len = len(payload)
        parsed = _parse_v2_records(payload, count, where + ", decompressed payload", last_offset_delta)
    else:
        parsed = _parse_v2_records(payload, count, where, last_offset_delta)

    if control:
        if consult_txn and parsed:
            marker_key = parsed[0][2]
            if marker_key is None or len(marker_key) < 4:
                raise _invalid("{0}: control record key is shorter than 4 bytes".format(where))
            (_version, marker_type) = struct.unpack_from(">hh", marker_key, 0)
            if marker_type == 0:  # ABORT ends the producer's aborted transaction
                state.aborted_pids.discard(producer_id)
        return [], batch_next, leader_epoch, blob_len, None

    records: list[_Raw] = []
    for ts_delta, off_delta, key, value, headers in parsed:
        offset = _checked_i64(base_offset + off_delta, "record offset", where)
        if timestamp_type == 1:
            timestamp = max_timestamp
        else:
            timestamp = _checked_i64(base_timestamp + ts_delta, "record timestamp", where)
        records.append(_Raw(leader_epoch, offset, timestamp, timestamp_type, key, value, headers, None))
    # (RecordCount, payload bytes): what the C Arrow step weighs to parse the
    # batch straight into its columns (see _Stream._direct)
    return records, batch_next, leader_epoch, blob_len, (count, len(payload))


# --- legacy magic 0 / 1 ------------------------------------------------------------------------
def _parse_legacy_message(buf: _Bytes, pos: int, end: int, magic: int, check_crcs: bool, where: str) -> _Legacy:
    """One message in buf[pos:end] (end = pos + 12 + MessageSize), already
    known to be at least the minimum size. Returns (offset, crc, attributes,
    timestamp, key, value)."""
    r = _Reader(buf, pos, end, where)
    offset = r.fixed(">q", 8, "offset")
    r.fixed(">i", 4, "message size")
    stored_crc = r.fixed(">I", 4, "crc")
    if check_crcs:
        computed = zlib.crc32(bytes(buf[pos + 16 : end]))
        if computed != stored_crc:
            raise _Bad(
                RecordCrcError,
                "{0}: CRC32 mismatch (stored 0x{1:08x}, computed 0x{2:08x})".format(
                    where, stored_crc, computed
                ),
            )
    r.fixed(">b", 1, "magic")
    attributes = r.fixed(">B", 1, "attributes")
    timestamp = r.fixed(">q", 8, "timestamp") if magic == 1 else None
    fields: list[bytes | None] = []
    for what in ("key", "value"):
        n = r.fixed(">i", 4, what + " length")
        if n == -1:
            fields.append(None)
        elif n < 0:
            raise _invalid("{0}: {1} length {2} is negative".format(where, what, n))
        else:
            fields.append(r.take(n, what))
    if r.pos != end:
        raise _invalid("{0}: {1} bytes after the value".format(where, end - r.pos))
    return offset, stored_crc, attributes, timestamp, fields[0], fields[1]


def _decode_legacy_entry(buf: _Bytes, pos: int, end: int, magic: int, check_crcs: bool, cap: int,
                         max_records: int) -> tuple[list[_Raw], int, int, int]:
    """Returns (records, next_offset, -1, decompressed_len or 0)."""
    where = "message at byte {0}".format(pos)
    size = end - pos - _LOG_OVERHEAD
    if size < _LEGACY_MIN_SIZE[magic]:
        raise _invalid(
            "{0}: MessageSize {1} is below the magic-{2} minimum {3}".format(
                where, size, magic, _LEGACY_MIN_SIZE[magic]
            )
        )
    offset, crc, attributes, timestamp, key, value = _parse_legacy_message(
        buf, pos, end, magic, check_crcs, where
    )
    codec = attributes & 0x07
    timestamp_type = ((attributes >> 3) & 1) if magic == 1 else None
    if codec == 0:
        rec = _Raw(-1, offset, timestamp, timestamp_type, key, value, [], crc)
        return [rec], _checked_i64(offset + 1, "next offset", where), -1, 0
    if codec > 3:
        raise _Bad(UnsupportedCompressionError, "{0}: unknown compression codec id {1}".format(where, codec))
    if value is None:
        raise _invalid("{0}: compressed wrapper has a null value".format(where))
    inner = _decompress(codec, value, cap, where, magic0=(magic == 0))

    inner_where = where + ", inner set"
    entries: list[_Legacy] = []
    p = 0
    while p < len(inner):
        at = "{0} at byte {1}".format(inner_where, p)
        if len(inner) - p < _LOG_OVERHEAD:
            raise _invalid("{0}: inner entry header cut off".format(at))
        (inner_size,) = struct.unpack_from(">i", inner, p + 8)
        if inner_size < _LEGACY_MIN_SIZE[magic] or inner_size > len(inner) - p - _LOG_OVERHEAD:
            raise _invalid("{0}: inner MessageSize {1} is impossible".format(at, inner_size))
        inner_magic = inner[p + 16]
        if inner_magic != magic:
            raise _invalid("{0}: inner magic {1} inside a magic-{2} wrapper".format(at, inner_magic, magic))
        inner_end = p + _LOG_OVERHEAD + inner_size
        parsed = _parse_legacy_message(inner, p, inner_end, magic, check_crcs, at)
        if parsed[2] & 0x07:
            raise _invalid("{0}: inner message is compressed again".format(at))
        if max_records and len(entries) >= max_records:
            raise _Bad(RecordCountLimitError, "{0}: the compressed wrapper holds more than the budget of {1} "
                       "records".format(where, max_records))
        entries.append(parsed)
        p = inner_end
    if not entries:
        raise _invalid("{0}: compressed wrapper holds no messages".format(where))

    if magic == 1:
        absolute_base = offset - entries[-1][0]
    else:
        absolute_base = -1
    records: list[_Raw] = []
    for inner_offset, inner_crc, _attrs, inner_ts, inner_key, inner_value in entries:
        abs_offset = inner_offset + absolute_base if absolute_base >= 0 else inner_offset
        abs_offset = _checked_i64(abs_offset, "inner offset", where)
        ts = timestamp if timestamp_type == 1 else inner_ts
        records.append(_Raw(-1, abs_offset, ts, timestamp_type, inner_key, inner_value, [], inner_crc))
    return records, _checked_i64(records[-1].offset + 1, "next offset", where), -1, len(inner)


# --- framing ------------------------------------------------------------------------------------
_INT32_MAX = (1 << 31) - 1


def _frame_entry(buf: _Bytes, pos: int, n: int) -> tuple[str, int, str]:
    """The one framing rule (scan and decoder alike), Java's order: fewer
    than 17 bytes → cut; size < 14 or an unknown magic → malformed even in a
    cut tail; a v2 BatchLength < 49, or a LastOffsetDelta that is negative or
    leaves no next offset → malformed; a size past the end → cut. Returns
    (kind, entry_len, reason), kind one of end/complete/cut/malformed."""
    avail = n - pos
    if avail == 0:
        return "end", 0, ""
    if avail < _HEADER_UP_TO_MAGIC:
        return "cut", 0, ""
    base_offset, size = struct.unpack_from(">qi", buf, pos)
    magic = struct.unpack_from(">b", buf, pos + 16)[0]
    if size < _MIN_ENTRY_SIZE:
        return "malformed", 0, "size field {0} is below the 14-byte minimum".format(size)
    if magic < 0 or magic > 2:
        return "malformed", 0, "unknown magic {0}".format(magic)
    if magic == 2:
        if size < _V2_HEADER - _LOG_OVERHEAD:
            return "malformed", 0, "BatchLength {0} is below the 49-byte minimum".format(size)
        if avail >= 27:
            (last_delta,) = struct.unpack_from(">i", buf, pos + 23)
            if last_delta < 0 or base_offset + last_delta >= INT64_MAX:
                return "malformed", 0, "LastOffsetDelta {0} is impossible".format(last_delta)
    elif base_offset == INT64_MAX:
        return "malformed", 0, "message offset {0} leaves no next offset".format(base_offset)
    if size > avail - _LOG_OVERHEAD:
        return "cut", 0, ""
    return "complete", _LOG_OVERHEAD + size, ""


def _as_buffer(data: _Buffer) -> _Bytes:
    return memoryview(data).cast("B") if not isinstance(data, bytes) else data


def scan_blob(data: _Buffer) -> ScanInfo:
    """The framing of a blob from entry headers only (see ScanInfo)."""
    buf = _as_buffer(data)
    n = len(buf)
    pos = 0
    entries = 0
    next_offset: int | None = None
    epoch = -1
    slow = 0  # bytes of complete entries compressed with gzip, snappy or zstd
    while True:
        kind, entry_len, reason = _frame_entry(buf, pos, n)
        if kind == "end":
            return ScanInfo(pos, entries, next_offset, epoch, "none", -1, -1, "", slow)
        if kind != "complete":
            avail = n - pos
            tail_offset = struct.unpack_from(">q", buf, pos)[0] if avail >= 8 else -1
            tail_size = struct.unpack_from(">i", buf, pos + 8)[0] + _LOG_OVERHEAD if avail >= 12 else -1
            return ScanInfo(pos, entries, next_offset, epoch, kind, tail_offset, tail_size, reason, slow)
        base_offset = struct.unpack_from(">q", buf, pos)[0]
        if buf[pos + 16] == 2:
            (epoch,) = struct.unpack_from(">i", buf, pos + 12)
            nxt = base_offset + struct.unpack_from(">i", buf, pos + 23)[0] + 1
            codec = buf[pos + 22] & 0x07  # Attributes, int16 at 21
        else:
            epoch = -1
            nxt = base_offset + 1
            codec = buf[pos + 17] & 0x07  # Attributes, int8 at 17
        if codec in (1, 2, 4):  # gzip, snappy, zstd
            slow += entry_len
        next_offset = nxt if next_offset is None else max(next_offset, nxt)
        entries += 1
        pos += entry_len


def replace_fields(records: list[Any], fields: list[tuple[int, Sequence[Any]]]) -> list[Any]:
    """The twin of the compiled rebuild: `records` with slot `index` of
    record i holding values[i], for each (index, values) of `fields`."""
    if len(fields) > 2:
        raise ValueError("replace_fields: at most two fields, not {0}".format(len(fields)))
    if not records:
        return []
    kind = type(records[0])
    if not isinstance(records[0], tuple):
        raise TypeError("replace_fields: records are tuples, not {0}".format(kind.__name__))
    width = len(records[0])
    for index, values in fields:
        if len(values) != len(records):
            raise ValueError("replace_fields: {0} values for {1} records".format(len(values), len(records)))
        if not 0 <= index < width:
            raise IndexError("replace_fields: no field {0} in a record of {1}".format(index, width))
    out = []
    for i, record in enumerate(records):
        if type(record) is not kind or len(record) != width:
            raise TypeError("replace_fields: record {0} is not a {1} of {2} fields".format(i, kind.__name__, width))
        slots = list(record)
        for index, values in fields:
            slots[index] = values[i]
        out.append(tuple.__new__(kind, slots))
    return out


def check_blob(data: _Buffer, topic: str, partition: int, position: int) -> tuple[int, int]:
    """The benchmark ceiling's walk (the twin of fkc_check_blob): the
    complete v2 batches framed by _frame_entry, each CRC-32C checked, records
    at or past `position` counted from RecordCount (control batches excluded;
    a batch starting below the running position counts its offsets from
    there). Any tail, a malformed entry or a negative RecordCount is
    InvalidRecordError, a CRC mismatch RecordCrcError, a legacy entry
    ValueError (the ceiling reads v2 only). Returns (records, next_offset)."""
    buf = _as_buffer(data)
    n = len(buf)
    pos = 0
    records = 0
    next_offset = position
    while True:
        kind, entry_len, reason = _frame_entry(buf, pos, n)
        if kind == "end":
            return records, next_offset
        avail = n - pos
        base = struct.unpack_from(">q", buf, pos)[0] if avail >= 8 else -1
        if kind == "malformed":
            raise InvalidRecordError(reason, topic, partition, base)
        if avail >= _HEADER_UP_TO_MAGIC and buf[pos + 16] != 2:
            raise ValueError("the ceiling reads record batch v2 only; magic {0} (offset {1})".format(
                struct.unpack_from(">b", buf, pos + 16)[0], base))
        if kind == "cut":
            if avail >= _LOG_OVERHEAD:
                reason = "batch length {0} at byte {1} does not fit the {2} bytes left".format(
                    struct.unpack_from(">i", buf, pos + 8)[0], pos, avail)
            else:
                reason = "{0} bytes left at byte {1}, less than an entry header".format(avail, pos)
            raise InvalidRecordError(reason, topic, partition, base)
        (stored,) = struct.unpack_from(">I", buf, pos + 17)
        computed = crc32c(buf[pos + 21:pos + entry_len])
        if stored != computed:
            raise RecordCrcError("CRC-32C mismatch: stored 0x{0:08x}, computed 0x{1:08x}".format(stored, computed),
                                 topic, partition, base)
        (count,) = struct.unpack_from(">i", buf, pos + 57)
        if count < 0:
            raise InvalidRecordError("RecordCount {0} is negative".format(count), topic, partition, base)
        attributes, last_delta = struct.unpack_from(">hi", buf, pos + 21)
        last = base + last_delta
        if not attributes & 0x20 and last >= next_offset:
            records += count if base >= next_offset else min(count, last + 1 - next_offset)
        next_offset = max(next_offset, last + 1)
        pos += entry_len


# --- the resumable walk -------------------------------------------------------------------------
def _arrow_sizes(r: _Raw) -> tuple[int, int, int, int, int]:
    hk = sum(len(k.encode("utf-8")) for k, _ in r.headers)
    hv = sum(len(v) for _, v in r.headers if v)
    return (len(r.key) if r.key else 0, len(r.value) if r.value else 0, len(r.headers), hk, hv)


class _Stream:
    """The twin of fkc_stream: walks the blob a batch at a time; a batch is
    decoded whole when reached (a bad one yields none of its records) and its
    records are handed out at most max_records per step. `held` mirrors the
    C decoder's decompressed buffers of batches finished in a step, so steps
    end at the same records (see fkc_stream_step)."""

    def __init__(self, data: _Buffer, fetch_offset: int, stop_offset: int, check_crcs: bool, read_committed: bool,
                 aborted: Sequence[tuple[int, int]], cap: int, max_records: int,
                 arrow_topic_len: int | None = None, acquired: Sequence[tuple[int, int, int]] | None = None) -> None:
        self.buf = _as_buffer(data)
        self.n = len(self.buf)
        self.pos = 0
        self.stop_offset = stop_offset
        self.check_crcs = check_crcs
        self.state = _State(read_committed, aborted)
        self.cap = cap
        self.max_records = max_records
        self.arrow_topic_len = arrow_topic_len  # None: no Arrow limits
        self.next_offset = fetch_offset
        self.batch: list[_Raw] = []
        self.index = 0
        self.floor = fetch_offset
        self.blob_len = 0
        self.leader_epoch = -1
        self.done = False
        self.failure: _Failed | None = None  # sticky
        self.arrow_base: _Totals = (0, 0, 0, 0, 0, 0)
        self.last_totals: _Totals = (0, 0, 0, 0, 0, 0)
        self.held = 0  # decompressed bytes of batches finished in the last step
        # decompressed bytes of every batch opened, all steps together (fkc_stream_decompressed_bytes)
        self.decompressed = 0
        # (RecordCount, payload bytes) of the v2 data batch last opened
        self.opened_sizes: tuple[int, int] | None = None
        # the share filter (fkc_share_keep): sorted acquired ranges, the
        # cursor over them, and one past the last record compared to them
        self.acquired = acquired
        self.share_index = 0
        self.share_floor = INT64_MIN

    def _open_next(self) -> None:
        kind, entry_len, reason = _frame_entry(self.buf, self.pos, self.n)
        if kind in ("end", "cut"):
            self.done = True
            return
        pos = self.pos
        base_offset = struct.unpack_from(">q", self.buf, pos)[0]
        batch_last = _entry_last_offset(self.buf, pos, self.n, base_offset)
        self.batch, self.index, self.floor, self.blob_len = [], 0, self.next_offset, 0
        try:
            if kind == "malformed":
                raise _invalid("batch at byte {0}: {1}".format(pos, reason))
            end = pos + entry_len
            magic = self.buf[pos + 16]
            sizes: tuple[int, int] | None = None
            if magic == 2:
                records, batch_next, epoch, blob_len, sizes = _decode_v2_batch(
                    self.buf, pos, end, base_offset, self.check_crcs, self.state, self.cap, self.max_records)
            else:
                records, batch_next, epoch, blob_len = _decode_legacy_entry(
                    self.buf, pos, end, magic, self.check_crcs, self.cap, self.max_records)
            self.leader_epoch = epoch
            floor = self.next_offset
            kept = [r for r in records
                    if r.offset >= floor and (self.stop_offset < 0 or r.offset < self.stop_offset)]
            if self.acquired is not None:
                kept = self._share_keep(kept)
            if self.arrow_topic_len is not None:
                _arrow_micros(kept)
        except _Bad as bad:
            self.batch = []
            self.done = True
            self.failure = _Failed(bad.error_class, bad.reason, base_offset, batch_last)
            return
        self.next_offset = max(self.next_offset, batch_next)
        self.pos = end
        self.batch = kept
        self.blob_len = blob_len
        self.decompressed += blob_len
        self.opened_sizes = sizes

    def _share_keep(self, records: Sequence[_Raw]) -> list[_Raw]:
        """Java's ShareCompletedFetch rule, over ranges: a record is handed
        out when its offset is acquired and past every record compared
        before it (so an offset is never handed out twice), with its range's
        delivery count; the cursor over the ranges only moves forward."""
        acquired = self.acquired
        assert acquired is not None  # called only by a share stream
        out = []
        for r in records:
            if r.offset < self.share_floor:
                continue
            self.share_floor = r.offset + 1
            while self.share_index < len(acquired) and acquired[self.share_index][1] < r.offset:
                self.share_index += 1
            if self.share_index == len(acquired) or r.offset < acquired[self.share_index][0]:
                continue
            r.delivery_count = acquired[self.share_index][2]
            out.append(r)
        return out

    def _direct(self, taken: int, max_records: float, totals: Sequence[int]) -> bool:
        """Whether the C Arrow step parses the batch just opened straight
        into its columns (fkc_open_next's sink choice): a v2 data batch whose
        RecordCount the step can still take and whose payload, counted
        against every column, keeps the builder within int32 offsets. Its
        decompressed buffer is then released at once, not held (held_bytes),
        though its bytes still count against max_held_bytes: the columns
        hold their copy."""
        if self.opened_sizes is None:
            return False
        count, payload = self.opened_sizes
        base = self.arrow_base
        rows = base[0] + taken + count
        keys, values, headers, hkeys, hvalues = (b + t for b, t in zip(base[1:], totals))
        return (count <= max_records - taken and count <= payload // _RECORD_MIN_SIZE and rows <= _INT32_MAX
                and keys + payload <= _INT32_MAX and values + payload <= _INT32_MAX
                and headers + payload // 2 <= _INT32_MAX and hkeys + payload <= _INT32_MAX
                and hvalues + payload <= _INT32_MAX
                and (not self.arrow_topic_len or rows <= _INT32_MAX // self.arrow_topic_len))

    def _resume_offset(self) -> int:
        if self.failure is None and self.index < len(self.batch):
            return self.batch[self.index - 1].offset + 1 if self.index else self.floor
        return self.next_offset

    def step(self, max_records: float, max_held_bytes: int | None = None) -> tuple[list[_Raw], int, "_Failed | None"]:
        """(raws, next_offset, failure or None); max_records may be float("inf")."""
        out: list[_Raw] = []
        held = 0
        # decompressed bytes of the batches parsed straight into the columns
        # (Arrow): released at once, yet counted against max_held_bytes
        direct = 0
        totals = [0, 0, 0, 0, 0]
        base = self.arrow_base
        limit = _INT32_MAX
        while self.failure is None and len(out) < max_records:
            if self.index < len(self.batch):
                n = int(min(len(self.batch) - self.index, max_records - len(out)))  # the first is finite
                window = self.batch[self.index:self.index + n]
                if self.arrow_topic_len is not None:
                    fit = 0
                    for r in window:
                        sizes = _arrow_sizes(r)
                        new = [t + x for t, x in zip(totals, sizes)]
                        count = len(out) + fit + 1 + base[0]
                        if count > limit or any(t + b > limit for t, b in zip(new, base[1:])) or (
                                self.arrow_topic_len and count > limit // self.arrow_topic_len):
                            break
                        totals = new
                        fit += 1
                    window = window[:fit]
                    if not window:
                        break
                out.extend(window)
                self.index += len(window)
                if self.index == len(self.batch):
                    held += self.blob_len
                    self.batch, self.index, self.floor, self.blob_len = [], 0, self.next_offset, 0
                elif self.arrow_topic_len is not None and len(out) < max_records:
                    break
                continue
            if self.done:
                break
            if out and max_held_bytes is not None and held + direct >= max_held_bytes:
                break
            self.opened_sizes = None
            self._open_next()
            if self.arrow_topic_len is not None and self._direct(len(out), max_records, totals):
                if self.batch:  # the C step counts a direct batch only when it appended rows
                    direct += self.blob_len
                self.blob_len = 0  # parsed straight into the columns: its buffer is not held
        if self.failure is None and not self.done and self.index >= len(self.batch):
            if _frame_entry(self.buf, self.pos, self.n)[0] in ("end", "cut"):
                self.done = True
        self.last_totals = ((len(out),) + tuple(totals) if self.arrow_topic_len is not None
                            else (len(out), 0, 0, 0, 0, 0))
        self.held = held
        if self.failure is not None:
            return out, self.failure.base_offset, self.failure
        return out, self._resume_offset(), None

    def finished(self) -> bool:
        return self.failure is not None or (self.done and self.index >= len(self.batch))


class _Failed(Exception):
    def __init__(self, error_class: type[CorruptRecordError], reason: str, base_offset: int, batch_last: int) -> None:
        super().__init__(reason)
        self.error_class = error_class
        self.reason = reason
        self.base_offset = base_offset
        self.batch_last = batch_last  # the entry's last offset as its header says (share decodes reject up to it)


def _entry_last_offset(buf: bytes | memoryview, pos: int, n: int, base_offset: int) -> int:
    """The last offset an entry's header claims (fkc_entry_last_offset): a v2
    batch's BaseOffset + LastOffsetDelta when readable and sane, else the
    base offset (a legacy entry's offset is its last message's)."""
    if n - pos >= 27 and buf[pos + 16] == 2:
        delta: int = struct.unpack_from(">i", buf, pos + 23)[0]
        if delta >= 0 and base_offset + delta <= INT64_MAX:
            return base_offset + delta
    return base_offset


def _deserialize(spec: _Deserializer, topic: str, headers: _Headers, data: bytes | None) -> Any:
    if spec is None:
        return data
    fn, full_form = spec
    if full_form:
        return fn(topic, headers, data)
    return fn(data)


def _header_size(headers: _Headers) -> int:
    if not headers:
        return -1
    return sum(len(k.encode("utf-8")) + (len(v) if v is not None else 0) for k, v in headers)


def _build_records(raws: Sequence[_Raw], topic: str, partition: int, key_deserializer: _Deserializer,
                   value_deserializer: _Deserializer, share: bool = False) -> list[Any]:
    out = []
    # Deserialize in record order, key before value (kafka-python's order).
    for r in raws:
        key = _deserialize(key_deserializer, topic, r.headers, r.key)
        value = _deserialize(value_deserializer, topic, r.headers, r.value)
        fields = (
            topic,
            partition,
            r.leader_epoch,
            r.offset,
            r.timestamp,
            r.timestamp_type,
            key,
            value,
            r.headers,
            r.checksum,
            len(r.key) if r.key is not None else -1,
            len(r.value) if r.value is not None else -1,
            _header_size(r.headers),
        )
        out.append(ShareRecord(*fields, r.delivery_count) if share else ConsumerRecord(*fields))
    return out


def decode_partition(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]],
    key_deserializer: _Deserializer,
    value_deserializer: _Deserializer,
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
) -> DecodedPartition:
    stream = _Stream(data, fetch_offset, stop_offset, check_crcs, read_committed, aborted_transactions,
                     max_decompressed_bytes, max_batch_records)
    raws, next_offset, failure = stream.step(float("inf"))
    out = _build_records(raws, topic, partition, key_deserializer, value_deserializer)
    if failure is not None:
        raise failure.error_class(
            failure.reason, topic, partition, failure.base_offset, out, failure.base_offset
        ) from None
    return DecodedPartition(out, next_offset)


def _arrow_micros(raws: Sequence[_Raw]) -> list[int | None]:
    micros: list[int | None] = []
    for r in raws:
        if r.timestamp is None:
            micros.append(None)
            continue
        us = r.timestamp * 1000
        if us < INT64_MIN or us > INT64_MAX:
            raise _invalid(
                "record at offset {0}: timestamp {1} ms overflows int64 microseconds".format(
                    r.offset, r.timestamp
                )
            )
        micros.append(us)
    return micros


def _arrow_batch(raws: Sequence[_Raw], topic: str, partition: int, share: bool = False) -> _RecordBatch:
    import pyarrow as pa

    from fastkc.arrow_schema import arrow_schema, share_arrow_schema

    schema = share_arrow_schema() if share else arrow_schema()
    micros = _arrow_micros(raws)
    columns = [
        [r.key for r in raws],
        [r.value for r in raws],
        [topic] * len(raws),
        [partition] * len(raws),
        [r.offset for r in raws],
        micros,
        [r.timestamp_type if r.timestamp_type is not None else -1 for r in raws],
        [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in raws],
    ]
    if share:
        columns.append([r.delivery_count for r in raws])
    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_partition_arrow(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]],
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
    zero_copy: bool = False,
) -> DecodedPartition:
    stream = _Stream(data, fetch_offset, stop_offset, check_crcs, read_committed, aborted_transactions,
                     max_decompressed_bytes, max_batch_records, arrow_topic_len=len(topic.encode("utf-8")))
    raws, next_offset, failure = stream.step(float("inf"))
    batch = _arrow_batch(raws, topic, partition)
    if zero_copy:
        batch = _as_views(batch)
    if failure is not None:
        raise failure.error_class(
            failure.reason, topic, partition, failure.base_offset, batch, failure.base_offset,
        ) from None
    if not stream.finished():  # only Arrow's int32 offsets stop a one-step decode early
        raise ArrowCapacityError(
            "the records from offset {0} on do not fit one Arrow batch's int32 offsets".format(next_offset),
            topic, partition, next_offset, batch, next_offset)
    return DecodedPartition(batch, next_offset)


def _as_views(batch: _RecordBatch, share: bool = False) -> _RecordBatch:
    """The zero-copy schema's form of a batch: key and value as binary_view
    (the twin copies; only the layout differs, never a value)."""
    import pyarrow as pa

    from fastkc.arrow_schema import arrow_schema, share_arrow_schema

    columns = list(batch.columns)
    columns[0] = columns[0].cast(pa.binary_view())
    columns[1] = columns[1].cast(pa.binary_view())
    schema = share_arrow_schema(zero_copy=True) if share else arrow_schema(zero_copy=True)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _clamped_totals(base: Sequence[int] | None) -> _Totals:
    """Totals a step starts from, each clamped to int32 (zeros without a base)."""
    return tuple(min(int(b), _INT32_MAX) for b in base) if base is not None else (0,) * 6


def _sum_totals(a: Sequence[int], b: Sequence[int]) -> _Totals:
    return tuple(x + y for x, y in zip(a, b))


class ArrowBuilder:
    """The twin of fastkc._core.records.ArrowBuilder: the steps' batches,
    joined by finish() into one RecordBatch."""

    def __init__(self, base: Sequence[int] | None = None, zero_copy: bool = False) -> None:
        self._zero_copy = bool(zero_copy)
        self._batches: list[_RecordBatch] = []
        self._totals: _Totals = (0,) * 6
        self._base = _clamped_totals(base)

    def _add(self, batch: _RecordBatch, totals: _Totals) -> None:
        if batch.num_rows:
            self._batches.append(batch)
        self._totals = _sum_totals(self._totals, totals)

    @property
    def num_rows(self) -> int:
        return self._totals[0]

    @property
    def totals(self) -> _Totals:
        return self._totals

    @property
    def last_offset(self) -> int | None:
        offset: int | None = self._batches[-1].column("offset")[-1].as_py() if self._batches else None
        return offset

    def finish(self) -> _RecordBatch:
        import pyarrow as pa

        from fastkc.arrow_schema import arrow_schema

        batches, self._batches, self._totals = self._batches, [], (0,) * 6
        if not batches:
            joined = pa.RecordBatch.from_pylist([], schema=arrow_schema())
        elif len(batches) == 1:
            joined = batches[0]
        else:
            joined = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
        return _as_views(joined) if self._zero_copy else joined


class RecordStream:
    """The twin of fastkc._core.records.RecordStream (see fastkc/_backend.py)."""

    def __init__(self, data: _Buffer, topic: str, partition: int, fetch_offset: int, stop_offset: int,
                 check_crcs: bool, read_committed: bool, aborted_transactions: Sequence[tuple[int, int]],
                 max_decompressed_bytes: int, max_batch_records: int, arrow: bool = False,
                 key_deserializer: _Deserializer = None, value_deserializer: _Deserializer = None) -> None:
        if max_decompressed_bytes is None or max_decompressed_bytes < 0:
            raise ValueError("max_decompressed_bytes must be a non-negative int")
        if max_batch_records is None or max_batch_records < 0:
            raise ValueError("max_batch_records must be a non-negative int (0: no bound)")
        self._stream = _Stream(data, fetch_offset, stop_offset, check_crcs, read_committed,
                               list(aborted_transactions) if read_committed else [], max_decompressed_bytes,
                               max_batch_records, arrow_topic_len=len(topic.encode("utf-8")) if arrow else None)
        self._topic = topic
        self._partition = partition
        self._arrow = arrow
        self._key = key_deserializer
        self._value = value_deserializer
        self._next_offset = fetch_offset
        # (error class, reason, offset, next_offset) of the failure a step raised: raised again
        self._error: tuple[type[CorruptRecordError], str, int, int] | None = None

    def _step(self, max_records: int, max_held_bytes: int | None) -> tuple[list[_Raw], "_Failed | None"]:
        if max_records < 1:
            raise ValueError("max_records must be >= 1")
        if self._error is not None:
            cls, reason, offset, next_offset = self._error
            raise cls(reason, self._topic, self._partition, offset, None, next_offset)
        raws, self._next_offset, failure = self._stream.step(
            max_records, None if max_held_bytes is None or max_held_bytes < 0 else max_held_bytes)
        return raws, failure

    def _fail(self, failure: _Failed, built: Any) -> NoReturn:  # built: the records or batch before it
        self._error = (failure.error_class, failure.reason, failure.base_offset, failure.base_offset)
        raise failure.error_class(failure.reason, self._topic, self._partition, failure.base_offset, built,
                                  failure.base_offset)

    def records(self, max_records: int, max_held_bytes: int | None = None) -> list[ConsumerRecord]:
        if self._arrow:
            raise ValueError("this stream decodes to Arrow")
        raws, failure = self._step(max_records, max_held_bytes)
        out = _build_records(raws, self._topic, self._partition, self._key, self._value)
        if failure is not None:
            self._fail(failure, out)
        return out

    def arrow(self, max_records: int, max_held_bytes: int | None = None, base: Sequence[int] | None = None,
              builder: ArrowBuilder | None = None) -> Any:  # a RecordBatch; with `builder`, the rows appended
        if not self._arrow:
            raise ValueError("this stream decodes to records")
        if builder is not None:
            if not isinstance(builder, ArrowBuilder):
                raise TypeError("builder must be an ArrowBuilder of this backend")
            # what the builder holds (and its base) counts against the limits
            base = _sum_totals(builder._base, builder.totals)
        self._stream.arrow_base = _clamped_totals(base)
        raws, failure = self._step(max_records, max_held_bytes)
        batch = _arrow_batch(raws, self._topic, self._partition)
        if builder is not None:
            builder._add(batch, self._stream.last_totals)
            if failure is not None:
                self._fail(failure, None)
            return batch.num_rows
        if failure is not None:
            self._fail(failure, batch)
        return batch

    @property
    def next_offset(self) -> int:
        return self._next_offset

    @property
    def done(self) -> bool:
        return self._error is not None or self._stream.finished()

    @property
    def leader_epoch(self) -> int:
        return self._stream.leader_epoch

    @property
    def last_totals(self) -> _Totals:
        return self._stream.last_totals

    @property
    def held_bytes(self) -> int:
        s = self._stream
        return s.held + (s.blob_len if s.index < len(s.batch) else 0)

    @property
    def decompressed_bytes(self) -> int:
        return self._stream.decompressed


# --- share groups (KIP-932) --------------------------------------------------------------------
def _share_stream(data: _Buffer, topic: str, acquired: Sequence[tuple[int, int, int]], check_crcs: bool,
                  max_decompressed_bytes: int, max_batch_records: int, arrow: bool) -> _Stream:
    # no position (fetch offset 0: every acquired offset is >= 0) and no
    # transaction filter: the broker never acquires aborted data for a
    # read_committed share group (SharePartition archives it), and a
    # ShareFetch answer carries no aborted transactions
    return _Stream(data, 0, -1, check_crcs, False, [], max_decompressed_bytes, max_batch_records,
                   arrow_topic_len=len(topic.encode("utf-8")) if arrow else None, acquired=acquired)


def _share_error(failure: _Failed, topic: str, partition: int, records: Any,
                 acquired: Sequence[tuple[int, int, int]], delivered: Sequence[int]) -> CorruptRecordError:
    error = failure.error_class(failure.reason, topic, partition, failure.base_offset, records, failure.base_offset)
    error.share = share_failure(acquired, delivered, failure.base_offset, failure.batch_last)
    return error


def decode_share(data: _Buffer, topic: str, partition: int, acquired: Sequence[tuple[int, int, int]],
                 check_crcs: bool, key_deserializer: _Deserializer, value_deserializer: _Deserializer,
                 max_decompressed_bytes: int, max_batch_records: int = 0) -> ShareDecoded:
    """Backend contract: see fastkc/_backend.py. ShareDecoded(list of ShareRecord, gaps)."""
    stream = _share_stream(data, topic, acquired, check_crcs, max_decompressed_bytes, max_batch_records, False)
    raws, _next_offset, failure = stream.step(float("inf"))
    out = _build_records(raws, topic, partition, key_deserializer, value_deserializer, share=True)
    delivered = [r.offset for r in raws]
    if failure is not None:
        raise _share_error(failure, topic, partition, out, acquired, delivered) from None
    return ShareDecoded(out, share_gaps(acquired, delivered))


def decode_share_arrow(data: _Buffer, topic: str, partition: int, acquired: Sequence[tuple[int, int, int]],
                       check_crcs: bool, max_decompressed_bytes: int, max_batch_records: int = 0,
                       zero_copy: bool = False) -> ShareDecoded:
    """Backend contract: see fastkc/_backend.py. ShareDecoded(pyarrow.RecordBatch with delivery_count, gaps)."""
    stream = _share_stream(data, topic, acquired, check_crcs, max_decompressed_bytes, max_batch_records, True)
    raws, next_offset, failure = stream.step(float("inf"))
    batch = _arrow_batch(raws, topic, partition, share=True)
    if zero_copy:
        batch = _as_views(batch, share=True)
    delivered = [r.offset for r in raws]
    if failure is not None:
        raise _share_error(failure, topic, partition, batch, acquired, delivered) from None
    if not stream.finished():  # only Arrow's int32 offsets stop a one-step decode early
        error = ArrowCapacityError(
            "the records from offset {0} on do not fit one Arrow batch's int32 offsets".format(next_offset),
            topic, partition, next_offset, batch, next_offset)
        error.share = share_failure(acquired, delivered, next_offset, next_offset - 1)
        raise error
    return ShareDecoded(batch, share_gaps(acquired, delivered))
