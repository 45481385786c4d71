"""Write the fuzz seed corpora under tests/fuzz/corpus/<target>/.

    python tests/fuzz/make_seeds.py

Seeds are a few small, VALID inputs per target, so the fuzzer starts from the
interesting parts of the format instead of rediscovering its framing. They are
built with independent encoders (kafka-python's protocol classes and record
builders), not with fastkc's own code, and are deterministic: rerunning the
script rewrites identical files.

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
    for version in range(4, 19):
        for aborted, tags in ((False, False), (True, True)):
            payload = fetch_response(version, blobs[0], aborted=aborted, tags=tags)
            _write("fetch", bytes([version - 4]) + payload)
    total = sum(
        os.path.getsize(os.path.join(CORPUS, t, n)) for t in os.listdir(CORPUS) for n in os.listdir(os.path.join(CORPUS, t))
    )
    print("wrote seeds to {0} ({1} bytes)".format(CORPUS, total), file=sys.stderr)


if __name__ == "__main__":
    main()
