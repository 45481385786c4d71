"""The main job: load a sample dataset into the local broker and consume it
with fastkc, reporting throughput.

    fastkc demo [--records 2000000] [--record-size 100] [--partitions 8] [--compression lz4]

The broker is the project's own (fastkc.broker); the data is written by
Kafka's own Java producer (ProducerPerformance), so fastkc reads bytes it did
not write. Until the KafkaConsumer lands, consumption is a plain fetch loop
over the same parts the consumer will use: the generic protocol codec for the
request, the compiled Fetch-response parser, and fastkc.records for decoding.
"""
import sys
import time
from dataclasses import dataclass

from fastkc import records as fastkc_records
from fastkc.errors import for_code
from fastkc.protocol.blocking import BlockingConnection

# kafka-python's defaults, so the figures compare with what its users get.
FETCH_MAX_WAIT_MS = 500
FETCH_MAX_BYTES = 52428800
PARTITION_MAX_BYTES = 1048576


@dataclass
class ConsumeResult:
    records: int
    wire_bytes: int  # record-batch bytes as fetched (compressed)
    seconds: float

    @property
    def records_per_second(self):
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def megabytes_per_second(self):
        return self.wire_bytes / self.seconds / 1e6 if self.seconds else 0.0


def _split(bootstrap):
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return host, int(port)


def topic_layout(conn, topic):
    """(topic_id, {partition: end_offset}) or (None, {}) when the topic is absent."""
    md = conn.request("Metadata", {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    (entry,) = md["topics"]
    if entry["error_code"] != 0:
        return None, {}
    partitions = sorted(p["partition_index"] for p in entry["partitions"])
    lo = conn.request(
        "ListOffsets",
        {
            "replica_id": -1,
            "topics": [{"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in partitions]}],
        },
    )
    ends = {p["partition_index"]: p["offset"] for t in lo["topics"] for p in t["partitions"]}
    return entry["topic_id"], ends


def create_topic(conn, topic, partitions, configs=None):
    body = {
        "topics": [
            {
                "name": topic,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeout_ms": 30000,
    }
    resp = conn.request("CreateTopics", body)
    code = resp["topics"][0]["error_code"]
    if code != 0:
        raise for_code(code)("CreateTopics {0}: {1}".format(topic, resp["topics"][0].get("error_message")))


def consume_all(bootstrap, topic, *, progress=None, isolation_level="read_uncommitted"):
    """Read every partition of `topic` from offset 0 to its current end.

    Returns ConsumeResult. `progress(records_so_far)` is called after each fetch.
    """
    host, port = _split(bootstrap)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        topic_id, ends = topic_layout(conn, topic)
        if topic_id is None:
            raise ValueError("topic {0!r} does not exist".format(topic))
        version = conn.pick_version("Fetch")
        positions = {p: 0 for p in ends}
        n_records = n_bytes = 0
        started = time.perf_counter()
        while any(positions[p] < ends[p] for p in ends):
            wanted = [p for p in ends if positions[p] < ends[p]]
            entry = {"topic": topic} if version < 13 else {"topic_id": topic_id}
            entry["partitions"] = [
                {"partition": p, "fetch_offset": positions[p], "partition_max_bytes": PARTITION_MAX_BYTES}
                for p in wanted
            ]
            body = {
                "max_wait_ms": FETCH_MAX_WAIT_MS,
                "min_bytes": 1,
                "max_bytes": FETCH_MAX_BYTES,
                "isolation_level": 1 if isolation_level == "read_committed" else 0,
                "topics": [entry],
                "forgotten_topics_data": [],
            }
            payload = conn.request_raw("Fetch", body, version=version)
            response = _parse_fetch(payload, version)
            for t in response.topics:
                for part in t.partitions:
                    if part.error_code != 0:
                        raise for_code(part.error_code)("Fetch {0}-{1}".format(topic, part.partition))
                    if part.records is None:
                        continue
                    decoded = fastkc_records.decode_partition(
                        part.records,
                        topic=topic,
                        partition=part.partition,
                        fetch_offset=positions[part.partition],
                        isolation_level=isolation_level,
                        aborted_transactions=part.aborted_transactions or (),
                    )
                    n_records += len(decoded.records)
                    n_bytes += len(part.records)
                    positions[part.partition] = max(positions[part.partition], decoded.next_offset)
            if progress is not None:
                progress(n_records)
        return ConsumeResult(n_records, n_bytes, time.perf_counter() - started)


def _parse_fetch(payload, version):
    import fastkc

    if fastkc.backend == "c":
        from fastkc._core.fetch import parse_fetch_response

        return parse_fetch_response(payload, version)
    from fastkc.protocol import codec

    _, decoded = codec.decode_response("Fetch", version, payload)
    return codec.to_fetch_response(decoded)


def ensure_sample(bootstrap, topic, *, records, record_size, partitions, compression, log=print):
    """Create and fill the sample topic unless it already holds the dataset."""
    from fastkc.broker.tools import producer_performance

    host, port = _split(bootstrap)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        topic_id, ends = topic_layout(conn, topic)
        if topic_id is not None and sum(ends.values()) >= records:
            log("sample topic {0} already holds {1:,} records".format(topic, sum(ends.values())))
            return
        if topic_id is None:
            create_topic(conn, topic, partitions)
    log("loading {0:,} records of {1} bytes ({2}, {3} partitions) with Kafka's ProducerPerformance…".format(
        records, record_size, compression, partitions))
    run = producer_performance(
        bootstrap, topic, records, record_size=record_size, compression=compression,
        # Large, lingering batches, as a throughput-minded producer sends them.
        extra_props={"batch.size": 262144, "linger.ms": 50, "acks": 1},
        timeout=900.0,
    )
    log("loaded: " + run.output)


def run(*, records=2_000_000, record_size=100, partitions=8, compression="lz4", bootstrap=None):
    from fastkc import broker

    log = print
    if bootstrap is None:
        st = broker.status()
        info = st.info if st.running else broker.start(log=lambda m: log("fastkc: " + m))
        bootstrap = info.bootstrap_servers
    log("broker: {0}".format(bootstrap))
    topic = "fastkc-sample-{0}x{1}-{2}-{3}p".format(records, record_size, compression, partitions)
    ensure_sample(bootstrap, topic, records=records, record_size=record_size,
                  partitions=partitions, compression=compression, log=log)

    import fastkc

    log("consuming {0} with fastkc (backend: {1})".format(topic, fastkc.backend))
    result = _consume_with_progress(bootstrap, topic, records)
    log("")
    log("fastkc consumed {0:,} records ({1:.1f} MB of record batches as fetched) in {2:.2f} s".format(
        result.records, result.wire_bytes / 1e6, result.seconds))
    log("  {0:,.0f} records/s   {1:.1f} MB/s fetched   {2:.1f} MB/s of values".format(
        result.records_per_second, result.megabytes_per_second,
        result.records_per_second * record_size / 1e6))
    log("(the broker keeps running for another run; `fastkc broker stop` stops it)")
    return result


def _consume_with_progress(bootstrap, topic, total):
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    except ImportError:  # rich is a dev extra; without it, a plain line per second
        last = [0.0]

        def plain(n):
            now = time.monotonic()
            if now - last[0] >= 1.0:
                last[0] = now
                print("  {0:,} / {1:,} records".format(n, total), file=sys.stderr)

        return consume_all(bootstrap, topic, progress=plain)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=False) as bar:
        task = bar.add_task("consuming", total=total)
        return consume_all(bootstrap, topic, progress=lambda n: bar.update(task, completed=n))
