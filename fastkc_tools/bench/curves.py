"""Curves: how each client's steady-state rate grows or falls as the work per
record changes, one dataset per point, the driver's runners and clock.

    fastkc bench --curve value-size|partitions|codecs|headers|all
        [--max-records 2000000] [--max-value-bytes 400000000] [--repeat 3]
        [--clients ...] [--points 10,1024] [--bootstrap HOST:PORT] [--json DIR/any.json]

- value-size: 10 B, 100 B, 1 KiB, 10 KiB, 100 KiB values (8 partitions, lz4)
- partitions: 1, 4, 16, 64 (100 B values, lz4)
- codecs: none, gzip, snappy, lz4, zstd (100 B values, 8 partitions)
- headers: 0, 1, 3, 10 headers per record (100 B values, 8 partitions, lz4)

Every point's dataset is bounded, min(--max-records, --max-value-bytes ÷
value size) records, so a curve runs in minutes. The value-size, partitions
and codecs topics are written by Kafka's ProducerPerformance (as the
headline's); it writes no headers, so the headers topics (the 0-header one
included, so the points differ only in their headers) are written by
confluent-kafka's producer, an independent producer too (librdkafka).

At each point the clients take turns for --repeat rounds (driver.run_rounds)
after one untimed warm-up read. Per curve, under the results folder:
curve-<name>.json (every run), curve-<name>.md (records/s with the spread,
MB/s of values, time to first record, peak RSS; the load average) and
curve-<name>.png (records/s and MB/s against the varied parameter, one line
per client, log x where the parameter is a number).
"""
import argparse
import datetime
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fastkc_tools.bench import driver
from fastkc_tools.bench.driver import Log, Summary

# a curve's x value: a number (value size, partitions, headers) or a codec name
X = int | str
# one measured point as the JSON document holds it
PointResult = dict[str, Any]

# What each curve runs unless --clients says otherwise: fastkc's two APIs,
# their ceiling and the two fastest other clients; kafka-python and aiokafka
# would take minutes per point and are on the headline only.
CURVE_CLIENTS = ("fastkc-records", "fastkc-arrow", "ceiling", "confluent-kafka-tuned", "java-steady")


@dataclass(frozen=True)
class Point:
    value_size: int
    partitions: int
    compression: str
    headers: int  # headers per record; None-free: 0 means none
    producer: str  # "ProducerPerformance" or "confluent-kafka"


@dataclass(frozen=True)
class Curve:
    name: str
    axis: str  # the x axis' label
    values: tuple[X, ...]
    numeric: bool  # a number line (log x) rather than categories
    title: str  # what stays fixed

    def point(self, x: X) -> Point:
        if self.name == "value-size":
            return Point(int(x), 8, "lz4", 0, "ProducerPerformance")
        if self.name == "partitions":
            return Point(100, int(x), "lz4", 0, "ProducerPerformance")
        if self.name == "codecs":
            return Point(100, 8, str(x), 0, "ProducerPerformance")
        return Point(100, 8, "lz4", int(x), "confluent-kafka")

    def label(self, x: X) -> str:
        if self.name == "value-size":
            return size_label(int(x))
        return str(x)


CURVES = {
    "value-size": Curve("value-size", "value size (bytes)", (10, 100, 1024, 10240, 102400), True,
                        "8 partitions, lz4, no headers"),
    "partitions": Curve("partitions", "partitions", (1, 4, 16, 64), True, "100 B values, lz4, no headers"),
    "codecs": Curve("codecs", "compression", ("none", "gzip", "snappy", "lz4", "zstd"), False,
                    "100 B values, 8 partitions, no headers"),
    "headers": Curve("headers", "headers per record", (0, 1, 3, 10), False,
                     "100 B values, 8 partitions, lz4, written by confluent-kafka"),
}


def size_label(n: int) -> str:
    if n >= 1024 and n % 1024 == 0:
        return "{0} KiB".format(n // 1024)
    return "{0} B".format(n)


def point_records(point: Point, max_records: int, max_value_bytes: int) -> int:
    return max(1, min(max_records, max_value_bytes // point.value_size))


def topic_name(point: Point, records: int) -> str:
    if point.producer == "ProducerPerformance":
        # the headline's naming: a point equal to the headline's dataset reads the same topic
        return "fastkc-sample-{0}x{1}-{2}-{3}p".format(records, point.value_size, point.compression,
                                                        point.partitions)
    return "fastkc-bench-h{0}-{1}x{2}-{3}-{4}p".format(point.headers, records, point.value_size,
                                                        point.compression, point.partitions)


def header_list(count: int) -> list[tuple[str, bytes]]:
    """`count` headers of the kind applications attach (ids, types), 10–16 byte values."""
    return [("h{0}-trace-id".format(i), "{0:016x}".format(0x5EED0000 + i).encode()) for i in range(count)]


def prepare_point(bootstrap: str, point: Point, records: int, log: Log) -> tuple[str, dict[int, int]]:
    """Create and fill the point's topic unless it holds the dataset; its end offsets."""
    topic = topic_name(point, records)
    if point.producer == "ProducerPerformance":
        from fastkc_tools import sample_run

        sample_run.ensure_sample(bootstrap, topic, records=records, record_size=point.value_size,
                                 partitions=point.partitions, compression=point.compression, log=log)
    else:
        produce_with_headers(bootstrap, topic, records, point, log)
    ends = driver.topic_ends(bootstrap, topic, point.partitions)
    if sum(ends.values()) != records:
        raise RuntimeError("topic {0} holds {1:,} records, not {2:,}: delete it or pick other bounds".format(
            topic, sum(ends.values()), records))
    return topic, ends


# byte → an A–Z letter (a slight bias towards A–V; the payloads stay as hard to compress as ProducerPerformance's)
_LETTERS = bytes(65 + b % 26 for b in range(256))


def produce_with_headers(bootstrap: str, topic: str, records: int, point: Point, log: Log) -> None:
    """Write the headers dataset with confluent-kafka's Producer: a fresh
    random A–Z payload per record, as ProducerPerformance writes them (one
    payload repeated would compress some twentyfold and turn the points into
    a different dataset from the other curves'), null keys, round-robin
    partitions, large lingering batches."""
    from confluent_kafka import Producer

    from fastkc.net.blocking import BlockingConnection
    from fastkc_tools import sample_run

    host, port = sample_run.split_bootstrap(bootstrap)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        topic_id, ends = sample_run.topic_layout(conn, topic)
        if topic_id is not None and sum(ends.values()) >= records:
            log("topic {0} already holds {1:,} records".format(topic, sum(ends.values())))
            return
        if topic_id is not None:
            raise RuntimeError("topic {0} holds {1:,} of {2:,} records (an interrupted load?): delete it".format(
                topic, sum(ends.values()), records))
        sample_run.create_topic(conn, topic, point.partitions)
    log("loading {0:,} records of {1} B with {2} header(s) ({3}, {4} partitions) with confluent-kafka…".format(
        records, point.value_size, point.headers, point.compression, point.partitions))
    errors: list[Any] = []
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "compression.type": point.compression,
        "linger.ms": 50,
        "batch.size": 262144,
        "acks": 1,
        "queue.buffering.max.messages": 500000,
        "delivery.report.only.error": True,
    })
    size = point.value_size
    # (confluent-kafka's annotation takes str or bytes values)
    headers: list[tuple[str, str | bytes | None]] | None = list(header_list(point.headers)) or None

    def on_error(err: Any, msg: Any) -> None:
        errors.append(err)

    produce = producer.produce
    for i in range(records):
        while True:
            try:
                produce(topic, value=os.urandom(size).translate(_LETTERS), headers=headers,
                        partition=i % point.partitions, on_delivery=on_error)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 20000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left or errors:
        raise RuntimeError("confluent-kafka producer: {0} undelivered, errors {1}".format(left, errors[:3]))


def run_curve(curve: Curve, args: argparse.Namespace, bootstrap: str, kafka_version: str | None,
              names: Sequence[str], folder: str, log: Log) -> list[str]:
    xs = curve.values
    if args.points:
        wanted = [p.strip() for p in args.points.split(",") if p.strip()]
        xs = tuple(x for x in curve.values if str(x) in wanted)
        if not xs:
            raise SystemExit("--points {0} names none of {1}'s values {2}".format(args.points, curve.name,
                                                                                   curve.values))
    points: list[PointResult] = []
    for x in xs:
        point = curve.point(x)
        records = point_records(point, args.max_records, args.max_value_bytes)
        log("{0} = {1}: {2:,} records".format(curve.name, curve.label(x), records))
        topic, ends = prepare_point(bootstrap, point, records, log)
        if args.warmup:
            driver.warm_up(bootstrap, topic, log)
        runs = driver.run_rounds(names, bootstrap, topic, ends, args.repeat, args.timeout, kafka_version, log,
                                 value_size=point.value_size)
        summaries = {name: driver.summarise(name, runs[name], point.value_size) for name in names}
        points.append({"x": x, "label": curve.label(x), "dataset": dict(asdict(point), records=records,
                                                                         topic=topic),
                       "load_average": driver.load_average(), "clients": summaries})
    meta: dict[str, Any] = {
        "curve": curve.name,
        "axis": curve.axis,
        "fixed": curve.title,
        "max_records": args.max_records,
        "max_value_bytes": args.max_value_bytes,
        "repeat": args.repeat,
        "clients": names,
        "kafka_version": kafka_version or "?",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": driver.git_commit(),
        "python": sys.version.split()[0],
        "machine": driver.machine_line(),
    }
    table = curve_table(curve, points, names, meta)
    print(table)
    print()
    base = os.path.join(folder, "curve-" + curve.name)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "points": points, "table_markdown": table}, f, indent=2)
        f.write("\n")
    with open(base + ".md", "w") as f:
        f.write(table + "\n")
    draw_curve(curve, points, names, meta, base + ".png")
    log("wrote {0}.json, .md and .png".format(base))
    return [name for p in points for name, s in p["clients"].items() if s["status"] != "ok"]


def _cell(summary: Summary, what: str) -> str:
    if summary["status"] != "ok":
        return "FAILED"
    if what == "rate":
        return "{0} ({1}–{2}){3}".format(human(summary["records_per_second"]), human(summary["records_per_second_min"]),
                                         human(summary["records_per_second_max"]),
                                         driver.CLOCK_MARK[summary["clock"]])
    if what == "mb":
        return "{0:,.1f}".format(summary["value_megabytes_per_second"])
    if what == "ttfr":
        return driver.fmt_ms(summary["time_to_first_record_seconds"])
    return "{0:.0f}".format(summary["peak_rss_bytes"] / 2**20)


def human(rate: float) -> str:
    if rate >= 1e6:
        return "{0:.2f} M".format(rate / 1e6)
    if rate >= 1e3:
        return "{0:.1f} k".format(rate / 1e3)
    return "{0:.0f}".format(rate)


def curve_table(curve: Curve, points: Sequence[PointResult], names: Sequence[str], meta: Mapping[str, Any]) -> str:
    head = "| {0} | records | ".format(curve.axis) + " | ".join(driver.LABELS[n] for n in names) + " |"
    rule = "|---|---|" + "---|" * len(names)
    lines = [
        "Curve {curve}: {axis} varied; {fixed}. Records per point: min({max_records:,}, {max_value_bytes:,} B ÷ "
        "value size); {repeat} interleaved round(s) per point, Kafka {kafka_version}.".format(**meta),
        "",
    ]
    for title, what in (("records/s at steady state (first record → last), median (slowest–fastest)", "rate"),
                        ("MB/s of values at steady state (median)", "mb"),
                        ("time to first record (first poll → first record), median", "ttfr"),
                        ("peak RSS, MiB (largest run)", "rss")):
        lines += ["**{0}**".format(title), "", head, rule]
        for p in points:
            lines.append("| {0} | {1:,} | ".format(p["label"], p["dataset"]["records"])
                         + " | ".join(_cell(p["clients"][n], what) for n in names) + " |")
        lines.append("")
    if any(p["clients"][n].get("clock") == "one-delivery" for p in points for n in names):
        lines += ["‡ every record came in one delivery, so first poll → last record.", ""]
    if "fastkc-arrow" in names and "ceiling" in names:
        lines.append("poll_arrow() ÷ ceiling per point: " + ", ".join(
            "{0} {1}".format(p["label"], driver.fmt_ratio(driver.ratio(p["clients"], "fastkc-arrow", "ceiling")))
            for p in points))
        lines.append("")
    lines.append("Load average (1, 5, 15 min) at each point's end: " + "; ".join(
        "{0}: {1}".format(p["label"], p["load_average"]) for p in points) + ". Machine: {machine}.".format(**meta))
    return "\n".join(lines)


def draw_curve(curve: Curve, points: Sequence[PointResult], names: Sequence[str], meta: Mapping[str, Any],
               path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    positions = [p["x"] for p in points] if curve.numeric else list(range(len(points)))
    for name in names:
        xs: list[Any] = []
        ys: list[float] = []
        mbs: list[float] = []
        lows: list[float] = []
        highs: list[float] = []
        for pos, p in zip(positions, points):
            s = p["clients"][name]
            if s["status"] != "ok":
                continue
            xs.append(pos)
            ys.append(s["records_per_second"])
            lows.append(s["records_per_second"] - s["records_per_second_min"])
            highs.append(s["records_per_second_max"] - s["records_per_second"])
            mbs.append(s["value_megabytes_per_second"])
        if not xs:
            continue
        style = "--" if name == "ceiling" else "-"
        axes[0].errorbar(xs, ys, yerr=[lows, highs], fmt="o" + style, capsize=3, label=driver.LABELS[name])
        axes[1].plot(xs, mbs, "o" + style, label=driver.LABELS[name])
    for ax, ylabel in zip(axes, ("records/s at steady state (median; bars: slowest–fastest)",
                                 "MB/s of values at steady state (median)")):
        ax.set_ylabel(ylabel)
        ax.set_xlabel(curve.axis)
        if curve.numeric:
            ax.set_xscale("log")
            ax.set_xticks(positions)
            ax.set_xticklabels([p["label"] for p in points])
            ax.minorticks_off()
        else:
            ax.set_xticks(positions)
            ax.set_xticklabels([p["label"] for p in points])
        if curve.name == "value-size":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("{0}: {1}; Kafka {2}; {3}".format(curve.name, curve.title, meta["kafka_version"],
                                                    "load average " + driver.load_average()), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    if args.repeat < 1 or args.max_records < 1 or args.max_value_bytes < 1:
        raise SystemExit("--repeat, --max-records and --max-value-bytes must be positive")
    names = driver.client_names(args.clients, CURVE_CLIENTS)
    chosen = list(CURVES) if args.curve == "all" else [args.curve]
    if args.points and len(chosen) > 1:
        raise SystemExit("--points picks values of one curve, not of --curve all")
    folder = os.path.dirname(os.path.abspath(args.json)) if args.json else driver.RESULTS
    os.makedirs(folder, exist_ok=True)
    bootstrap, kafka_version = driver.broker_for(args, log)
    failed: list[str] = []
    for name in chosen:
        failed += run_curve(CURVES[name], args, bootstrap, kafka_version, names, folder, log)
    if failed:
        log("FAILED: " + ", ".join(sorted(set(failed))))
        return 1
    return 0
