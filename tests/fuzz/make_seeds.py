"""Write the fuzz seed corpora under tests/fuzz/corpus/<target>/.

    python tests/fuzz/make_seeds.py

Seeds are a few small, VALID inputs per target, so the fuzzer starts from the
interesting parts of the format instead of rediscovering its framing. They are
built with independent encoders (kafka-python's protocol classes and record
builders), not with fastkc's own code, plus a few real broker responses from
tests/corpus/fetch (and their uncompressed partitions' record blobs, which
include transactional control batches). Deterministic: rerunning the script
rewrites identical files.

Input formats (must match the harnesses):
  fetch/    byte 0 = version - 4, then the Fetch response payload (header
            included)
  records/  bytes 0-2 = options (flags, fetch_offset, stop_offset; see
            fuzz_records.c), then a records blob
"""
import hashlib
import os
import struct
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # fastkc.protocol decodes the captured responses


def _write(target, payload):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha1(payload).hexdigest()[:16]
    with open(os.path.join(directory, name), "wb") as f:
        f.write(payload)


# --- record blobs (kafka-python's builders) ---------------------------------


def _batch_v2(base_offset=0, n=3, codec=0, transactional=False, producer_id=-1, headers=True):
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    for i in range(n):
        builder.append(
            i,
            timestamp=1_700_000_000_000 + i,
            key=None if i == 1 else b"k%d" % i,
            value=b"value-%d" % i,
            headers=[("h", b"v"), ("n", None)] if headers and i == 0 else [],
        )
    blob = bytearray(builder.build())
    struct.pack_into(">q", blob, 0, base_offset)
    return bytes(blob)


def _legacy(magic, n=2, codec=0):
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(n):
        builder.append(i, timestamp=1_700_000_000_000 + i if magic else None, key=b"k", value=b"v%d" % i)
    return bytes(builder.build())


def _relabel_codec(batch, codec):
    """An uncompressed v2 batch relabelled as `codec`, CRC fixed.

    The records harness's codec host passes payloads through unchanged, so
    this is a 'compressed' batch whose payload the fuzzer can still mutate
    record by record (real compressed bytes would hide the records from it).
    """
    import crc32c

    blob = bytearray(batch)
    attrs = struct.unpack_from(">h", blob, 21)[0]
    struct.pack_into(">h", blob, 21, (attrs & ~0x07) | codec)
    struct.pack_into(">I", blob, 17, crc32c.crc32c(bytes(blob[21:])))
    return bytes(blob)


def _rewrap(batch, codec, wrap):
    """A v2 batch whose records section is replaced by wrap(records), with
    the codec bits, BatchLength and CRC fixed to match."""
    import crc32c

    header, records = bytearray(batch[:61]), batch[61:]
    blob = header + wrap(records)
    struct.pack_into(">i", blob, 8, len(blob) - 12)
    attrs = struct.unpack_from(">h", blob, 21)[0]
    struct.pack_into(">h", blob, 21, (attrs & ~0x07) | codec)
    struct.pack_into(">I", blob, 17, crc32c.crc32c(bytes(blob[21:])))
    return bytes(blob)


def _uvarint(n):
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _snappy_raw_shape(records):
    # the pass-through host drops a raw block's length varint
    return _uvarint(len(records)) + records


def _xerial_shape(records):
    chunk = _snappy_raw_shape(records)
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(chunk)) + chunk


def _legacy_wrapper(magic, codec, inner):
    """A legacy wrapper message whose value is `inner` as-is (the pass-through
    host's view of a compressed message set), CRC fixed."""
    import zlib

    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(1, timestamp=1_700_000_000_000 if magic else None, key=None, value=inner)
    blob = bytearray(builder.build())
    blob[17] = (blob[17] & ~0x07) | codec
    struct.pack_into(">I", blob, 12, zlib.crc32(bytes(blob[16:])) & 0xFFFFFFFF)
    return bytes(blob)


def record_blobs():
    plain = _batch_v2()
    return [
        plain,
        plain + _batch_v2(base_offset=3, n=2, headers=False),
        plain[:-5],  # a trailing partial batch (normal at the end of a fetch)
        _relabel_codec(_batch_v2(n=4), 3),
        _relabel_codec(_batch_v2(n=2), 4),
        _batch_v2(n=2, transactional=True, producer_id=7),
        _legacy(0),
        _legacy(1),
        _rewrap(_batch_v2(n=3), 2, _snappy_raw_shape),
        _rewrap(_batch_v2(n=3), 2, _xerial_shape),
        # magic 0 + lz4 takes the KAFKA-3160 header fix path: a frame header
        # (magic, FLG, BD, HC) in front of the inner message set
        _legacy_wrapper(0, 3, b"\x04\x22\x4d\x18\x60\x40\x00" + _legacy(0)),
        _legacy_wrapper(1, 1, _legacy(1)),
    ]


# --- Fetch responses (kafka-python's protocol classes) ----------------------


def fetch_response(version, records, *, aborted, tags, correlation_id=7):
    from kafka.protocol.consumer.fetch import FetchResponse as R

    T = R.FetchableTopicResponse
    P = T.PartitionData
    extra = {}
    if tags and version >= 12:
        extra = dict(
            diverging_epoch=P.EpochEndOffset(epoch=3, end_offset=100),
            current_leader=P.LeaderIdAndEpoch(leader_id=2, leader_epoch=5),
            snapshot_id=P.SnapshotId(end_offset=50, epoch=4),
        )
    partitions = [
        P(
            partition_index=i,
            error_code=0,
            high_watermark=10,
            last_stable_offset=9,
            log_start_offset=0,
            aborted_transactions=(
                [P.AbortedTransaction(producer_id=7, first_offset=0)] if aborted else None
            ),
            preferred_read_replica=-1,
            records=records if i == 0 else None,
            **(extra if i == 0 else {}),
        )
        for i in range(2)
    ]
    if version >= 13:
        topic = T(topic_id=uuid.UUID(int=0x1234), partitions=partitions)
    else:
        topic = T(topic="topic-a", partitions=partitions)
    top = {}
    if tags and version >= 16:
        top = dict(node_endpoints=[R.NodeEndpoint(node_id=1, host="broker1", port=9092, rack="r1")])
    response = R[version](throttle_time_ms=0, error_code=0, session_id=5, responses=[topic], **top)
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True))


# --- real broker bytes (tests/corpus/fetch, captured from Kafka) ------------
REAL = os.path.join(os.path.dirname(HERE), "corpus", "fetch")
# small captures, one per header/body shape (classic, flexible, topic ids)
REAL_FETCH = [
    "fetch-v04-committed-full.bin",
    "fetch-v07-committed-cut.bin",
    "fetch-v12-committed-mid.bin",
    "fetch-v13-committed-cut.bin",
    "fetch-v18-uncommitted-mid.bin",
]


def real_fetch_seeds():
    import json

    manifest_path = os.path.join(REAL, "manifest.json")
    if not os.path.exists(manifest_path):
        return [], []
    with open(manifest_path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    by_file = {c["file"]: c for c in manifest["captures"]}
    uncompressed_ids = {
        bytes.fromhex(info["topic_id"]) for info in manifest["topics"].values() if info["codec"] == "none"
    }
    fetch, blobs = [], []
    for name in REAL_FETCH:
        with open(os.path.join(REAL, name), "rb") as fh:
            raw = fh.read()
        version = by_file[name]["api_version"]
        fetch.append(bytes([version - 4]) + raw)
        if version >= 13:
            # uncompressed partitions (transactional ones carry control
            # batches) seed the records target; compressed bytes would only
            # fail the pass-through host's framing
            from fastkc.protocol import codec

            _, body = codec.decode_response("Fetch", version, raw)
            for topic in body["responses"]:
                if topic["topic_id"] in uncompressed_ids:
                    blobs.extend(p["records"] for p in topic["partitions"] if p["records"])
    return fetch, blobs


def main():
    for target in ("fetch", "records"):
        directory = os.path.join(CORPUS, target)
        if os.path.isdir(directory):
            for name in os.listdir(directory):
                os.unlink(os.path.join(directory, name))
    blobs = record_blobs()
    # 3 option bytes (see fuzz_records.c): flags, fetch_offset, stop_offset.
    # flags 0x00: CRC checks off (the fuzzer cannot forge CRC32C); 0x01 on;
    # 0x02 read_committed; 0x10 a 64-byte decompression cap.
    for blob in blobs:
        _write("records", b"\x00\x00\x00" + blob)
    _write("records", b"\x01\x00\x00" + blobs[0])
    _write("records", b"\x02\x00\x00" + blobs[5])
    _write("records", b"\x10\x01\x03" + blobs[3])
    # the resumable decoder's options: 0x40 a record budget of 3 per batch,
    # 0x80 a 1-byte hold bound (a step ends after each compressed batch),
    # with Arrow limits (0x04); the step size follows the input size (% 4),
    # so each blob is written with 0-3 bytes of padding after a cut tail
    for i, blob in enumerate(blobs):
        flags = (0x40, 0x80, 0xC4, 0x86)[i % 4]
        _write("records", bytes([flags, 0, 0]) + blob + b"\x00" * (i % 4))
    real_fetch, real_blobs = real_fetch_seeds()
    for payload in real_fetch:
        _write("fetch", payload)
    for blob in real_blobs:
        _write("records", b"\x00\x00\x00" + blob)
        _write("records", b"\x02\x00\x00" + blob)  # read_committed
    for version in range(4, 19):
        for aborted, tags in ((False, False), (True, True)):
            payload = fetch_response(version, blobs[0], aborted=aborted, tags=tags)
            _write("fetch", bytes([version - 4]) + payload)
    total = sum(
        os.path.getsize(os.path.join(CORPUS, t, n))
        for t in os.listdir(CORPUS) for n in os.listdir(os.path.join(CORPUS, t))
    )
    print("wrote seeds to {0} ({1} bytes)".format(CORPUS, total), file=sys.stderr)


if __name__ == "__main__":
    main()
