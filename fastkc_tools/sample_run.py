"""The main job: load a sample dataset into the local broker and consume it
with fastkc, reporting throughput.

    fastkc demo [--records 2000000] [--record-size 100] [--partitions 8] [--compression lz4]

The broker is the project's own (fastkc_tools.broker); the data is written by
Kafka's own Java producer (ProducerPerformance), so fastkc reads bytes it did
not write. Consumption is fastkc.KafkaConsumer's: all partitions assigned,
seek_to_beginning, poll() until the end offsets.
"""
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastkc.errors import for_code
from fastkc.net.blocking import BlockingConnection

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
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def megabytes_per_second(self) -> float:
        return self.wire_bytes / self.seconds / 1e6 if self.seconds else 0.0


def split_bootstrap(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return host, int(port)


def topic_layout(conn: BlockingConnection, topic: str) -> tuple[Any, dict[int, int]]:
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


def create_topic(conn: BlockingConnection, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
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


def consume_all(bootstrap: str, topic: str, *, progress: Callable[[int], object] | None = None,
                isolation_level: str = "read_uncommitted") -> ConsumeResult:
    """Read every partition of `topic` from its beginning to its current end
    with fastkc.KafkaConsumer (assign all partitions, seek_to_beginning, poll
    until the end offsets), kafka-python's defaults otherwise.

    Returns ConsumeResult. `progress(records_so_far)` is called after each poll.
    """
    from fastkc.consumer import KafkaConsumer
    from fastkc.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False)
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise ValueError("topic {0!r} does not exist".format(topic))
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        consumer.seek_to_beginning()
        starts = {tp: consumer.position(tp) for tp in tps}
        total = sum(max(0, ends[tp] - starts[tp]) for tp in tps)
        n_records = 0
        started = time.perf_counter()
        # Records counted are records delivered; with compaction or control
        # batches fewer records than offsets exist, so also stop at the end
        # positions.
        unfinished = [tp for tp in tps if starts[tp] < ends[tp]]
        while unfinished:
            polled = consumer.poll(timeout_ms=1000)
            for records in polled.values():
                n_records += len(records)
            if n_records >= total or not polled:
                unfinished = [tp for tp in unfinished if consumer.position(tp) < ends[tp]]
            if progress is not None:
                progress(n_records)
        seconds = time.perf_counter() - started
        metrics = consumer.metrics()
        if metrics is None:  # the caller turned metrics_enabled off
            raise ValueError("the sample run reads fetch-bytes-total: metrics_enabled must stay on")
        wire_bytes = metrics["consumer-fetch-manager-metrics"]["fetch-bytes-total"]
        return ConsumeResult(n_records, wire_bytes, seconds)
    finally:
        consumer.close()


def ensure_sample(bootstrap: str, topic: str, *, records: int, record_size: int, partitions: int, compression: str,
                  log: Callable[[str], object] = print) -> None:
    """Create and fill the sample topic unless it already holds the dataset."""
    from fastkc_tools.broker.tools import producer_performance

    host, port = split_bootstrap(bootstrap)
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


def run(*, records: int = 2_000_000, record_size: int = 100, partitions: int = 8, compression: str = "lz4",
        bootstrap: str | None = None) -> ConsumeResult:
    from fastkc_tools import broker

    log = print
    if bootstrap is None:
        st = broker.status()
        info = st.info if st.running and st.info is not None else broker.start(log=lambda m: log("fastkc: " + m))
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


def _consume_with_progress(bootstrap: str, topic: str, total: int) -> ConsumeResult:
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    except ImportError:  # rich is a dev extra; without it, a plain line per second
        last = [0.0]

        def plain(n: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 1.0:
                last[0] = now
                print("  {0:,} / {1:,} records".format(n, total), file=sys.stderr)

        return consume_all(bootstrap, topic, progress=plain)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=False) as bar:
        task = bar.add_task("consuming", total=total)
        return consume_all(bootstrap, topic, progress=lambda n: bar.update(task, completed=n))
