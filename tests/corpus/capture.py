"""Capture real Fetch responses from a real Kafka broker into tests/corpus/fetch/.

    python tests/corpus/capture.py                 # starts its own broker, then stops it
    python tests/corpus/capture.py --bootstrap 127.0.0.1:9092

What it does:
1. writes data with an INDEPENDENT producer (confluent-kafka / librdkafka):
   one topic per compression codec (keys, null keys, null and empty values,
   headers incl. null-valued and duplicate ones, chosen create timestamps,
   several batches), two transactional topics (committed and aborted
   transactions interleaved with plain writes, two partitions) and a
   LogAppendTime topic;
2. sends Fetch requests at several versions with fastkc.protocol's
   BlockingConnection (read_uncommitted and read_committed, from offset 0, from
   the middle of a batch, and with a partition byte limit small enough that
   the broker cuts batches short) and saves each raw response payload
   (after the size prefix, response header included) as a .bin file;
3. writes manifest.json: what the producer wrote (with offsets and the
   transaction outcome), each topic's id, and each capture's request
   parameters with, per partition, the last offset covered by a complete
   batch (found by walking the batch frames, see _complete_through).

tests/unit/test_corpus.py then checks, without a broker, that parsing and
decoding each response yields exactly the produced records.
"""
import argparse
import base64
import json
import os
import shutil
import struct
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from fastkc.net.blocking import BlockingConnection  # noqa: E402
from fastkc.protocol import codec  # noqa: E402
from tests.support.kafka_tools import (  # noqa: E402
    CODECS,
    Message,
    TransactionalWriter,
    create_topic,
    produce,
)

OUT_DIR = os.path.join(_HERE, "fetch")
MANIFEST = os.path.join(OUT_DIR, "manifest.json")

FULL_VERSIONS = (4, 11, 12, 13, 17, 18)
MID_VERSIONS = (12, 18)
CUT_VERSIONS = (7, 13)
# Small enough that most partitions' responses end inside a batch.
CUT_PARTITION_MAX_BYTES = 700
# Chosen create timestamps start an hour before the capture. Not further back:
# transaction markers carry the broker's clock, and a batch stamped more than
# segment.ms (7 days) after the segment's first timestamp rolls a new log
# segment; a Fetch reads one segment per partition, so the response would
# stop at the roll instead of covering the whole log.
BASE_TS = (int(time.time()) - 3600) * 1000


def _mixed(n, *, partition, tag, start=0):
    out = []
    for j in range(start, start + n):
        key = None if j % 5 == 0 else b"key-%d" % j
        if j % 7 == 3:
            value = None
        elif j % 11 == 4:
            value = b""
        else:
            value = tag + b"|" + (b"payload-%d " % j) * (1 + j % 6)
        headers = ()
        if j % 3 == 1:
            headers = (("trace", b"t-%d" % j), ("empty", b""), ("nullv", None), ("trace", b"again"))
        out.append(Message(key=key, value=value, headers=headers, timestamp=BASE_TS + j * 250,
                           partition=partition))
    return out


def produce_everything(bootstrap, suffix):
    """Create the topics, write the data, return {topic: info} with the written records."""
    topics = {}

    for c in CODECS:
        name = "corpus-{0}-{1}".format(c, suffix)
        create_topic(bootstrap, name)
        written = []
        # Separate produce() calls (each flushed) make separate batches.
        for burst, n in enumerate((8, 12, 10)):
            written += produce(bootstrap, name, _mixed(n, partition=0, tag=c.encode() + b"%d" % burst,
                                                       start=len(written)), compression=c)
        topics[name] = {"codec": c, "partitions": 1, "configs": {}, "written": written, "aborted": []}

    for c in ("none", "zstd"):
        name = "corpus-txn-{0}-{1}".format(c, suffix)
        create_topic(bootstrap, name, partitions=2)
        written = produce(bootstrap, name, _mixed(6, partition=0, tag=b"plain"), compression=c)
        aborted = []
        with TransactionalWriter(bootstrap, compression=c) as tx:
            written += tx.write(name, _mixed(9, partition=0, tag=b"commit-1")
                                + _mixed(4, partition=1, tag=b"commit-1"), commit=True)
            dropped = tx.write(name, _mixed(7, partition=0, tag=b"abort-1")
                               + _mixed(5, partition=1, tag=b"abort-1"), commit=False)
            written += dropped
            aborted += _first_offsets(dropped)
            written += tx.write(name, _mixed(5, partition=0, tag=b"commit-2"), commit=True)
            dropped = tx.write(name, _mixed(3, partition=1, tag=b"abort-2"), commit=False)
            written += dropped
            aborted += _first_offsets(dropped)
        written += produce(bootstrap, name, _mixed(4, partition=1, tag=b"plain-late"), compression=c)
        topics[name] = {"codec": c, "partitions": 2, "configs": {}, "written": written, "aborted": aborted}

    name = "corpus-logappend-{0}".format(suffix)
    configs = {"message.timestamp.type": "LogAppendTime"}
    create_topic(bootstrap, name, configs=configs)
    written = produce(bootstrap, name, _mixed(10, partition=0, tag=b"lat"), compression="lz4")
    written += produce(bootstrap, name, _mixed(6, partition=0, tag=b"lat2", start=10), compression="lz4")
    topics[name] = {"codec": "lz4", "partitions": 1, "configs": configs, "written": written, "aborted": []}
    return topics


def _first_offsets(records):
    """Per partition, the first offset of one aborted transaction."""
    first = {}
    for r in records:
        first[r.partition] = min(first.get(r.partition, r.offset), r.offset)
    return sorted(first.items())


def _complete_through(records):
    """Last offset of the last complete record batch in a partition's records
    blob (-1 if none). Only the frame is read — baseOffset (int64 at 0),
    batchLength (int32 at 8), lastOffsetDelta (int32 at 23) — so this stays
    independent of the decoder under test."""
    data = bytes(records or b"")
    pos, last = 0, -1
    while len(data) - pos >= 12:
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + batch_length
        if batch_length < 0 or end > len(data):
            break
        if data[pos + 16] != 2:
            raise SystemExit("unexpected magic {0} from a Kafka 4 broker".format(data[pos + 16]))
        (last_offset_delta,) = struct.unpack_from(">i", data, pos + 23)
        last = base_offset + last_offset_delta
        pos = end
    return last


def _fetch_body(topics, ids, version, isolation_level, fetch_offsets, partition_max_bytes):
    body_topics = []
    for name, info in topics.items():
        entry = {"topic": name} if version < 13 else {"topic_id": ids[name]}
        entry["partitions"] = [
            {"partition": p, "fetch_offset": fetch_offsets(name, p), "partition_max_bytes": partition_max_bytes}
            for p in range(info["partitions"])
        ]
        body_topics.append(entry)
    return {"max_wait_ms": 200, "min_bytes": 1, "max_bytes": 64 << 20,
            "isolation_level": isolation_level, "topics": body_topics}


def _wait_stable(conn, topics, ids, timeout=30.0):
    """Wait until a read_committed fetch from 0 returns every partition whole.

    Transaction markers are written after commit/abort returns, so the last
    stable offset lags for a moment.
    """
    deadline = time.monotonic() + timeout
    while True:
        raw = conn.request_raw("Fetch", _fetch_body(topics, ids, 12, 1, lambda n, p: 0, 1 << 20), version=12)
        cid, body = codec.decode_response("Fetch", 12, raw)
        lagging = [(t["topic"], p["partition_index"]) for t in body["responses"] for p in t["partitions"]
                   if p["last_stable_offset"] != p["high_watermark"]
                   or _complete_through(p["records"]) != p["high_watermark"] - 1]
        if not lagging:
            return
        if time.monotonic() > deadline:
            raise SystemExit("fetches never covered the whole log: {0}".format(lagging))
        time.sleep(0.3)


def _b64(value):
    return None if value is None else base64.b64encode(value).decode("ascii")


def capture(bootstrap, kafka_version):
    suffix = "%x" % int(time.time())
    topics = produce_everything(bootstrap, suffix)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    captures = []
    with BlockingConnection(host, int(port), client_id="fastkc-corpus-capture", timeout=30) as conn:
        md = conn.request("Metadata", {"topics": [{"name": n} for n in topics]})
        ids = {t["name"]: t["topic_id"] for t in md["topics"]}
        _wait_stable(conn, topics, ids)

        def mid_offset(name, partition):
            # Inside a batch, past its first record: the decoder must drop the
            # records before the fetch offset that the broker still sends.
            offsets = sorted(r.offset for r in topics[name]["written"] if r.partition == partition)
            return offsets[len(offsets) // 3] + 1

        plan = []
        for v in FULL_VERSIONS:
            for iso in (0, 1):
                plan.append(("full", v, iso, lambda n, p: 0, 1 << 20))
        for v in MID_VERSIONS:
            for iso in (0, 1):
                plan.append(("mid", v, iso, mid_offset, 1 << 20))
        for v in CUT_VERSIONS:
            plan.append(("cut", v, 1, lambda n, p: 0, CUT_PARTITION_MAX_BYTES))
        for variant, v, iso, offsets, pmax in plan:
            body = _fetch_body(topics, ids, v, iso, offsets, pmax)
            raw = conn.request_raw("Fetch", body, version=v)
            fname = "fetch-v{0:02d}-{1}-{2}.bin".format(v, "committed" if iso else "uncommitted", variant)
            with open(os.path.join(OUT_DIR, fname), "wb") as fh:
                fh.write(raw)
            cid, decoded = codec.decode_response("Fetch", v, raw)
            parts = {}
            for t in decoded["responses"]:
                name = t["topic"] if v < 13 else next(n for n, i in ids.items() if i == t["topic_id"])
                for p in t["partitions"]:
                    if p["error_code"] != 0:
                        raise SystemExit("{0} {1}: error {2}".format(fname, name, p["error_code"]))
                    complete = _complete_through(p["records"])
                    if variant != "cut" and complete != p["high_watermark"] - 1:
                        raise SystemExit("{0} {1}: the response stops at {2}, high watermark {3}".format(
                            fname, name, complete, p["high_watermark"]))
                    parts.setdefault(name, {})[str(p["partition_index"])] = {
                        "fetch_offset": offsets(name, p["partition_index"]),
                        "partition_max_bytes": pmax,
                        "complete_through": complete,
                    }
            captures.append({"file": fname, "variant": variant, "api_version": v, "isolation_level": iso,
                             "correlation_id": cid, "partitions": parts})

    manifest = {
        "about": "Fetch responses captured from Apache Kafka {0} by tests/corpus/capture.py; "
                 "records written by confluent-kafka (librdkafka). Bytes are base64.".format(kafka_version),
        "kafka_version": kafka_version,
        "topics": {
            name: {
                "topic_id": ids[name].hex(),
                "codec": info["codec"],
                "partitions": info["partitions"],
                "configs": info["configs"],
                "aborted_transactions": [[p, first] for p, first in info["aborted"]],
                "records": [
                    {"partition": r.partition, "offset": r.offset, "key": _b64(r.key), "value": _b64(r.value),
                     "headers": [[k, _b64(v)] for k, v in r.headers], "timestamp": r.timestamp,
                     "timestamp_type": r.timestamp_type, "transaction": r.transaction}
                    for r in sorted(info["written"], key=lambda r: (r.partition, r.offset))
                ],
            }
            for name, info in topics.items()
        },
        "captures": captures,
    }
    with open(MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT_DIR, f)) for f in os.listdir(OUT_DIR))
    print("captured {0} responses, {1} bytes in {2}".format(len(captures), total, OUT_DIR))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="use this running broker (default: start a fresh one)")
    args = parser.parse_args(argv)
    if args.bootstrap:
        capture(args.bootstrap, "unknown")
        return
    from fastkc_tools import broker

    data_dir = tempfile.mkdtemp(prefix="fastkc-corpus-")
    info = broker.start(name="corpus", data_dir=data_dir)
    try:
        capture(info.bootstrap_servers, info.kafka_version)
    finally:
        broker.stop(data_dir=data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
