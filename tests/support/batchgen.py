"""A TEST-ONLY encoder of Kafka record bytes, and helpers to corrupt them.

Why a third encoder when kafka-python and aiokafka have builders: neither can
write what a broker writes but a producer never does — LogAppendTime, control
batches (transaction markers), chosen leader epochs and offsets, legacy
compressed wrappers with relative offsets, magic-0 LZ4 with Kafka's broken
header checksum — nor deliberately broken bytes. This module writes all of
that from the wire spec (https://kafka.apache.org/documentation/#messageformat)
with no code shared with fastkc, so decoding its output is a real check.

Everything returns `bytes`. Checksums are computed with independent
libraries (the `crc32c` package, zlib.crc32) unless a test overrides them.

Layout reminders (byte positions inside one magic-2 batch):
  0 BaseOffset i64 | 8 BatchLength i32 | 12 PartitionLeaderEpoch i32 |
  16 Magic i8 | 17 CRC u32 | 21 Attributes i16 | 23 LastOffsetDelta i32 |
  27 BaseTimestamp i64 | 35 MaxTimestamp i64 | 43 ProducerId i64 |
  51 ProducerEpoch i16 | 53 BaseSequence i32 | 57 RecordCount i32 | 61 records
Legacy entry: 0 Offset i64 | 8 MessageSize i32 | 12 CRC u32 | 16 Magic i8 |
  17 Attributes i8 | (magic 1: 18 Timestamp i64) | Key i32+bytes | Value i32+bytes
"""
import struct
import zlib
from dataclasses import dataclass, field

import cramjam
import crc32c as _crc32c_pkg
import lz4.frame
import xxhash
import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODECS_V2 = (NONE, GZIP, SNAPPY, LZ4, ZSTD)
CODECS_LEGACY = (NONE, GZIP, SNAPPY, LZ4)  # zstd arrived with magic 2

V2_HEADER_SIZE = 61
V2_CRC_POS = 17
V2_ATTRIBUTES_POS = 21
V2_COUNT_POS = 57
LEGACY_CRC_POS = 12
XERIAL_MAGIC = b"\x82SNAPPY\x00"

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


# --- primitives ----------------------------------------------------------------
def zigzag(n):
    return (n << 1) ^ (n >> 63)


def uvarint(u):
    """Unsigned LEB128."""
    if u < 0:
        raise ValueError("uvarint of a negative number")
    out = bytearray()
    while True:
        byte = u & 0x7F
        u >>= 7
        if u:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint(n):
    """Zigzag varint as Kafka writes record fields (same encoding for varlong)."""
    return uvarint(zigzag(n))


def overlong_varint(n, total_bytes):
    """The varint of n padded with redundant 0x80 continuation bytes to
    `total_bytes` (≥ its natural size). 6+ bytes is invalid for an int32 field,
    11+ for an int64 field."""
    natural = bytearray(varint(n))
    if total_bytes < len(natural):
        raise ValueError("cannot shorten a varint")
    pad = total_bytes - len(natural)
    if pad == 0:
        return bytes(natural)
    natural[-1] |= 0x80
    return bytes(natural) + b"\x80" * (pad - 1) + b"\x00"


def crc32c(data):
    return _crc32c_pkg.crc32c(bytes(data))


# --- codecs (encode side) --------------------------------------------------------
def compress(codec, raw, *, snappy_framing="xerial", xerial_block=32 * 1024, lz4_old_kafka=False):
    """Compress `raw` as a Kafka producer would for `codec`.

    snappy_framing: "xerial" (the Java client's framing) or "raw" (one plain
    snappy block, as some non-Java producers write). lz4_old_kafka: write the
    frame with Kafka 0.8/0.9's wrong header checksum (KAFKA-3160), used by
    magic 0 message sets.
    """
    raw = bytes(raw)
    if codec == NONE:
        return raw
    if codec == GZIP:
        co = zlib.compressobj(6, zlib.DEFLATED, 31)
        return co.compress(raw) + co.flush()
    if codec == SNAPPY:
        if snappy_framing == "raw":
            return bytes(cramjam.snappy.compress_raw(raw))
        out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        for i in range(0, len(raw), xerial_block):
            block = bytes(cramjam.snappy.compress_raw(raw[i : i + xerial_block]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == LZ4:
        frame = lz4.frame.compress(raw, block_linked=False, store_size=not lz4_old_kafka)
        if lz4_old_kafka:
            frame = _break_lz4_header_checksum(frame)
        return frame
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(raw)
    raise ValueError("unknown codec {0}".format(codec))


def _break_lz4_header_checksum(frame):
    # Kafka 0.8/0.9 hashed the 4 magic bytes too when computing the frame
    # descriptor's header checksum (HC); reproduce that mistake.
    flg = frame[4]
    header_len = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    wrong_hc = (xxhash.xxh32(frame[0 : header_len - 1]).intdigest() >> 8) & 0xFF
    fixed = bytearray(frame)
    fixed[header_len - 1] = wrong_hc
    return bytes(fixed)


# --- magic 2 ----------------------------------------------------------------------
@dataclass
class Record:
    """One record inside a magic-2 batch. Deltas are relative to the batch."""

    key: bytes = None
    value: bytes = None
    headers: list = field(default_factory=list)  # [(str, bytes|None)]
    offset_delta: int = 0
    timestamp_delta: int = 0
    attributes: int = 0


def encode_record(rec):
    body = bytearray()
    body.append(rec.attributes & 0xFF)
    body += varint(rec.timestamp_delta)
    body += varint(rec.offset_delta)
    for blob in (rec.key, rec.value):
        if blob is None:
            body += varint(-1)
        else:
            body += varint(len(blob)) + bytes(blob)
    body += varint(len(rec.headers))
    for hkey, hval in rec.headers:
        hkey_b = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        body += varint(len(hkey_b)) + hkey_b
        if hval is None:
            body += varint(-1)
        else:
            body += varint(len(hval)) + bytes(hval)
    return varint(len(body)) + bytes(body)


def records_from_values(values, *, key=None, headers=()):
    """Convenience: one Record per value, offset deltas 0..n-1, timestamp deltas 0..n-1."""
    return [
        Record(key=key, value=v, headers=list(headers), offset_delta=i, timestamp_delta=i)
        for i, v in enumerate(values)
    ]


def record_batch(
    records,
    *,
    base_offset=0,
    leader_epoch=0,
    base_timestamp=1_700_000_000_000,
    max_timestamp=None,
    codec=NONE,
    log_append_time=False,
    transactional=False,
    control=False,
    producer_id=-1,
    producer_epoch=-1,
    base_sequence=-1,
    last_offset_delta=None,
    count=None,
    raw_records=None,
    extra_attributes=0,
    crc=None,
    magic=2,
    batch_length_delta=0,
    snappy_framing="xerial",
):
    """Encode one magic-2 record batch.

    Overrides exist to build valid-but-unusual and deliberately wrong batches:
    `raw_records` replaces the encoded records payload (before compression),
    `count` the RecordCount field, `last_offset_delta` the header field (else
    the max offset delta, or 0 when empty), `crc` the stored CRC (else a
    correct CRC32C), `batch_length_delta` is added to the true BatchLength.
    """
    records = list(records)
    if raw_records is None:
        payload = b"".join(encode_record(r) for r in records)
    else:
        payload = bytes(raw_records)
    if codec != NONE and codec in CODECS_V2:
        payload = compress(codec, payload, snappy_framing=snappy_framing)
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in records), default=0)
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    if count is None:
        count = len(records)
    attributes = (codec & 0x07) | extra_attributes
    if log_append_time:
        attributes |= 0x08
    if transactional:
        attributes |= 0x10
    if control:
        attributes |= 0x20
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        + payload
    )
    if crc is None:
        crc = crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc) + batch_length_delta
    return (
        struct.pack(">qiibI", base_offset, batch_length, leader_epoch, magic, crc & 0xFFFFFFFF)
        + after_crc
    )


def raw_batch(base_offset, codec, payload, count, last_offset_delta, leader_epoch=5):
    """A v2 batch around an already compressed payload (correct CRC): for
    payloads record_batch would not make (bombs, foreign compressors)."""
    after_crc = struct.pack(">hiqqqhii", codec, last_offset_delta, 1_700_000_000_000, 1_700_000_000_000, -1, -1,
                            -1, count) + payload
    return struct.pack(">qiibI", base_offset, 9 + len(after_crc), leader_epoch, 2, crc32c(after_crc)) + after_crc


def control_record(kind, version=0, coordinator_epoch=0):
    """The single record of a transaction marker batch: key = version i16 +
    type i16 (0 abort, 1 commit), value = version i16 + coordinator epoch i32."""
    return Record(
        key=struct.pack(">hh", version, kind),
        value=struct.pack(">hi", 0, coordinator_epoch),
    )


def control_batch(kind, *, base_offset, producer_id, producer_epoch=0, **kwargs):
    """A commit (kind=CONTROL_COMMIT) or abort (CONTROL_ABORT) marker batch as
    the transaction coordinator writes it: transactional + control, one record."""
    return record_batch(
        [control_record(kind)],
        base_offset=base_offset,
        transactional=True,
        control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        **kwargs,
    )


# --- legacy magic 0 / 1 --------------------------------------------------------------
def _bytes_field(blob):
    if blob is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(blob)) + bytes(blob)


def legacy_message(
    magic,
    offset,
    key,
    value,
    *,
    timestamp=1_700_000_000_000,
    codec=NONE,
    log_append_time=False,
    crc=None,
    extra_attributes=0,
    trailing=b"",
    size_delta=0,
):
    """One legacy message-set entry: Offset, MessageSize, then the message.
    `codec` only sets the attribute bits; use legacy_wrapper for real
    compressed sets. `trailing` appends bytes inside the message (invalid)."""
    attributes = (codec & 0x07) | extra_attributes
    if log_append_time:
        attributes |= 0x08
    body = struct.pack(">bb", magic, attributes)
    if magic >= 1:
        body += struct.pack(">q", timestamp)
    body += _bytes_field(key) + _bytes_field(value) + bytes(trailing)
    if crc is None:
        crc = zlib.crc32(body)
    message = struct.pack(">I", crc & 0xFFFFFFFF) + body
    return struct.pack(">qi", offset, len(message) + size_delta) + message


def legacy_wrapper(
    magic,
    wrapper_offset,
    inner,
    *,
    codec,
    timestamp=1_700_000_000_000,
    log_append_time=False,
    relative_offsets=None,
    crc=None,
    snappy_framing="xerial",
    inner_set=None,
):
    """A compressed legacy message whose value is an inner message set.

    inner: list of (key, value, timestamp). Inner offsets are written as the
    broker does: relative 0..n-1 for magic 1 (so wrapper_offset is the last
    inner absolute offset), absolute wrapper_offset-n+1.. for magic 0.
    `inner_set` replaces the encoded inner message set (before compression).
    """
    if relative_offsets is None:
        relative_offsets = magic >= 1
    n = len(inner)
    if inner_set is None:
        parts = []
        for i, (k, v, ts) in enumerate(inner):
            off = i if relative_offsets else wrapper_offset - (n - 1) + i
            parts.append(legacy_message(magic, off, k, v, timestamp=ts))
        inner_set = b"".join(parts)
    payload = compress(codec, inner_set, snappy_framing=snappy_framing, lz4_old_kafka=(magic == 0))
    return legacy_message(
        magic,
        wrapper_offset,
        None,
        payload,
        timestamp=timestamp,
        codec=codec,
        log_append_time=log_append_time,
        crc=crc,
    )


# --- corruption helpers ---------------------------------------------------------------
def flip(blob, pos, mask=0xFF):
    """XOR one byte."""
    out = bytearray(blob)
    out[pos] ^= mask
    return bytes(out)


def truncate(blob, length):
    return bytes(blob[:length])


def patch(blob, pos, fmt, value):
    """Overwrite a big-endian struct field at pos (e.g. patch(b, 8, '>i', 3))."""
    out = bytearray(blob)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def bad_crc(batch):
    """A magic-2 batch with its stored CRC off by one."""
    (stored,) = struct.unpack_from(">I", batch, V2_CRC_POS)
    return patch(batch, V2_CRC_POS, ">I", (stored + 1) & 0xFFFFFFFF)


def legacy_bad_crc(entry):
    (stored,) = struct.unpack_from(">I", entry, LEGACY_CRC_POS)
    return patch(entry, LEGACY_CRC_POS, ">I", (stored + 1) & 0xFFFFFFFF)


def fix_crc(batch):
    """Recompute the stored CRC of a (possibly structurally corrupted) magic-2
    batch, so the corruption reaches the record parser with CRCs on."""
    return patch(batch, V2_CRC_POS, ">I", crc32c(batch[V2_ATTRIBUTES_POS:]))


def legacy_fix_crc(entry):
    return patch(entry, LEGACY_CRC_POS, ">I", zlib.crc32(entry[16:]))
