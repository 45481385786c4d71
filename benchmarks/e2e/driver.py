"""End-to-end consumer throughput: one topic, every client, one run.

    python -m benchmarks.e2e.driver [--records 2000000] [--record-size 100] [--partitions 8]
        [--compression lz4] [--repeat 1] [--clients fastkc-records,fastkc-arrow,...]
        [--bootstrap HOST:PORT] [--json PATH] [--png PATH]
    fastkc bench [same options]

The topic is prepared once (created and written by Kafka's own Java
ProducerPerformance through fastkc.sample_run.ensure_sample, so the demo and
the benchmark share it) and then read from its beginning to its end offsets by
each client in its own process (benchmarks/e2e/run_*.py). With --repeat N the
clients take turns N times and each figure is the median of its N runs.

Prints a Markdown table (records/s, MB/s of values, wall time, peak RSS and
the ratio of fastkc to each anchor), then writes the JSON and a PNG chart
(default: benchmarks/results/e2e.json and e2e.png; the table alone goes to
e2e.md beside the JSON). Any client that reads a different number of records
than the topic holds, or fails, is reported as FAILED and the driver exits
with status 1 after writing what it has.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benchmarks", "results")

# name → (runner module, mode); the order is the table's.
CLIENTS = {
    "fastkc-records": ("benchmarks.e2e.run_fastkc", "records"),
    "fastkc-records-threaded": ("benchmarks.e2e.run_fastkc", "records-threaded"),
    "fastkc-arrow": ("benchmarks.e2e.run_fastkc", "arrow"),
    "kafka-python": ("benchmarks.e2e.run_kafka_python", None),
    "aiokafka": ("benchmarks.e2e.run_aiokafka", None),
    "confluent-kafka": ("benchmarks.e2e.run_confluent", "default"),
    "confluent-kafka-tuned": ("benchmarks.e2e.run_confluent", "tuned"),
    "java": ("benchmarks.e2e.run_java", None),
}
LABELS = {
    "fastkc-records": "fastkc poll() → records",
    "fastkc-records-threaded": "fastkc poll() → records, decode worker (decode_threads=1)",
    "fastkc-arrow": "fastkc poll_arrow() → Arrow",
    "kafka-python": "kafka-python 3.x",
    "aiokafka": "aiokafka",
    "confluent-kafka": "confluent-kafka consume(500)",
    "confluent-kafka-tuned": "confluent-kafka consume(500), fetch.queue.backoff.ms=10",
    "java": "Java ConsumerPerformance",
}

# (numerator, denominator, at least) — reported, never asserted.
TARGETS = [
    ("fastkc-records", "confluent-kafka", 2.0),
    # The same target against librdkafka without its 1 s fetch back-off (run_confluent.py says why).
    ("fastkc-records", "confluent-kafka-tuned", 2.0),
    ("fastkc-records", "kafka-python", 10.0),
    ("fastkc-arrow", "java", 1.0),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser):
    """The options, shared with `fastkc bench`."""
    parser.add_argument("--records", type=int, default=2_000_000, help="records in the topic (default 2000000)")
    parser.add_argument("--record-size", type=int, default=100, help="value bytes per record (default 100)")
    parser.add_argument("--partitions", type=int, default=8, help="partitions (default 8)")
    parser.add_argument("--compression", default="lz4", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    parser.add_argument("--repeat", type=int, default=1, help="runs per client; figures are medians (default 1)")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help="comma-separated subset of: " + ", ".join(CLIENTS))
    parser.add_argument("--bootstrap", default=None,
                        help="use this broker instead of the local one (started if it is not running)")
    parser.add_argument("--topic", default=None, help="topic name (default derived from the dataset's shape)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per client run")
    parser.add_argument("--json", default=os.path.join(RESULTS, "e2e.json"), help="where to write the results")
    parser.add_argument("--png", default=os.path.join(RESULTS, "e2e.png"), help="where to draw the chart")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="skip the untimed read of the topic before the first client")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def log_to_stderr(message):
    print(message, file=sys.stderr, flush=True)


def local_bootstrap(log):
    """The local broker's address, starting it first if needed (as the demo does)."""
    from fastkc import broker

    st = broker.status()
    info = st.info if st.running else broker.start(log=lambda m: log("fastkc: " + m))
    return info.bootstrap_servers, info.kafka_version


def prepare_topic(bootstrap, topic, args, log):
    """Create and fill the topic unless it holds the dataset; return its end offsets."""
    from fastkc import sample_run
    from fastkc.protocol.blocking import BlockingConnection

    sample_run.ensure_sample(bootstrap, topic, records=args.records, record_size=args.record_size,
                             partitions=args.partitions, compression=args.compression, log=log)
    host, port = sample_run._split(bootstrap)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        topic_id, ends = sample_run.topic_layout(conn, topic)
    if topic_id is None:
        raise RuntimeError("topic {0} vanished after loading".format(topic))
    if sorted(ends) != list(range(args.partitions)):
        raise RuntimeError("topic {0} has partitions {1}, not {2}: pick another --topic".format(
            topic, sorted(ends), args.partitions))
    return ends


def run_client(name, bootstrap, topic, ends, timeout, kafka_version=None):
    """One run of one client in its own process → its result dict (or an error dict)."""
    module, mode = CLIENTS[name]
    cmd = [sys.executable, "-m", module, "--bootstrap", bootstrap, "--topic", topic,
           "--partitions", str(len(ends)), "--expected", str(sum(ends.values())),
           "--ends", ",".join("{0}={1}".format(p, ends[p]) for p in sorted(ends)),
           "--timeout", str(timeout)]
    if mode:
        cmd += ["--mode", mode]
    if name == "java" and kafka_version:
        cmd += ["--kafka-version", kafka_version]
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # The neighbours' load, so a noisy figure can be told from a slow client.
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        # The runner's own deadline fires first; this one only catches a wedged process.
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return {"client": name, "error": "runner did not exit within {0:.0f}s".format(timeout + 120)}
    if proc.returncode != 0:
        return {"client": name, "error": "exit {0}: {1}".format(proc.returncode, proc.stderr.strip()[-2000:])}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"client": name, "error": "no result line in its output:\n" + proc.stdout[-2000:]}
    result["process_seconds"] = time.perf_counter() - started
    result["load_average_1m_before"] = load_before
    return result


def summarise(name, runs, record_size):
    ok = [r for r in runs if "error" not in r]
    summary = {"client": name, "label": LABELS[name], "runs": runs}
    if len(ok) != len(runs):
        summary["status"] = "failed"
        summary["reason"] = next(r["error"] for r in runs if "error" in r)
        return summary
    seconds = statistics.median(r["seconds"] for r in ok)
    records = ok[0]["records"]
    summary.update({
        "status": "ok",
        "records": records,
        "seconds": seconds,
        "records_per_second": records / seconds,
        # Values only: ProducerPerformance writes null keys and no headers.
        "value_megabytes_per_second": records * record_size / seconds / 1e6,
        "peak_rss_bytes": max(r["peak_rss_bytes"] for r in ok),
        "cpu_seconds": (statistics.median(r["cpu_seconds"] for r in ok)
                        if all(r.get("cpu_seconds") is not None for r in ok) else None),
        "api": ok[0].get("api"),
        "version": ok[0].get("version"),
    })
    return summary


def ratio(summaries, numerator, denominator):
    a, b = summaries.get(numerator), summaries.get(denominator)
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return None
    return a["records_per_second"] / b["records_per_second"]


def markdown_table(summaries, meta):
    lines = [
        "End-to-end consumption of {records:,} records × {record_size} B ({compression}, {partitions} partitions, "
        "Kafka {kafka_version}), median of {repeat} run(s); first poll → last record.".format(**meta),
        "",
        "| client | records/s | MB/s (values) | seconds | CPU seconds | peak RSS MiB "
        "| fastkc records ÷ it | fastkc Arrow ÷ it |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summaries.items():
        label = s["label"]
        if s["status"] != "ok":
            lines.append("| {0} | {1} | | | | | | |".format(label, s["status"].upper()))
            continue
        lines.append("| {0} | {1:,.0f} | {2:.1f} | {3:.2f} | {4} | {5:.0f} | {6} | {7} |".format(
            label, s["records_per_second"], s["value_megabytes_per_second"], s["seconds"],
            "—" if s["cpu_seconds"] is None else "{0:.2f}".format(s["cpu_seconds"]),
            s["peak_rss_bytes"] / 2**20,
            fmt_ratio(ratio(summaries, "fastkc-records", name)),
            fmt_ratio(ratio(summaries, "fastkc-arrow", name))))
    lines.append("")
    lines.append("CPU seconds: the client process's CPU (all its threads) over the same window; not reported "
                 "by ConsumerPerformance. Machine: {machine}.".format(**meta))
    for numerator, denominator, at_least in TARGETS:
        r = ratio(summaries, numerator, denominator)
        verdict = "not measured" if r is None else ("met" if r >= at_least else "NOT met")
        lines.append("- target {0} ≥ {1:g}× {2}: {3} ({4})".format(
            LABELS[numerator], at_least, LABELS[denominator], fmt_ratio(r), verdict))
    return "\n".join(lines)


def fmt_ratio(r):
    return "—" if r is None else "{0:.2f}×".format(r)


def draw_chart(summaries, meta, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [s for s in summaries.values() if s["status"] == "ok"][::-1]  # barh draws bottom-up
    fig, ax = plt.subplots(figsize=(10, 0.6 * max(len(measured), 1) + 1.6))
    labels = [s["label"] for s in measured]
    rates = [s["records_per_second"] / 1e6 for s in measured]
    # Whiskers span the slowest to the fastest run around the median bar.
    run_rates = [[r["records"] / r["seconds"] / 1e6 for r in s["runs"]] for s in measured]
    spread = [[rate - min(runs) for rate, runs in zip(rates, run_rates)],
              [max(runs) - rate for rate, runs in zip(rates, run_rates)]]
    bars = ax.barh(labels, rates, xerr=spread, capsize=3, ecolor="#333333",
                   color=["#d62728" if label.startswith("fastkc") else "#7f7f7f" for label in labels])
    for bar, rate, runs in zip(bars, rates, run_rates):
        ax.text(max(runs), bar.get_y() + bar.get_height() / 2, "  {0:.2f}".format(rate), va="center")
    ax.set_xlabel("million records/s delivered (first poll → last record); median, whiskers: slowest–fastest run")
    ax.set_title("{records:,} × {record_size} B, {compression}, {partitions} partitions, Kafka {kafka_version}"
                 .format(**meta), fontsize=10)
    ax.set_xlim(0, max([max(runs) for runs in run_rates] + [0.001]) * 1.15)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def run(args, log=log_to_stderr):
    if args.quiet:
        def log(message):
            pass
    names = [n.strip() for n in args.clients.split(",") if n.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown or not names:
        raise SystemExit("unknown client(s) {0}; choose from {1}".format(unknown, ", ".join(CLIENTS)))
    if args.repeat < 1 or args.records < 1 or args.partitions < 1 or args.record_size < 1:
        raise SystemExit("--repeat, --records, --partitions and --record-size must be positive")
    kafka_version = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        bootstrap, kafka_version = local_bootstrap(log)
    topic = args.topic or "fastkc-sample-{0}x{1}-{2}-{3}p".format(
        args.records, args.record_size, args.compression, args.partitions)
    log("broker {0}, topic {1}".format(bootstrap, topic))
    ends = prepare_topic(bootstrap, topic, args, log)
    total = sum(ends.values())
    if total != args.records:
        log("note: {0} holds {1:,} records (asked for {2:,}); every client must read {1:,}".format(
            topic, total, args.records))

    if args.warmup:
        # One untimed pass through the broker, so whichever client goes first does not
        # pay for reading a topic written long ago from disk while the others hit the page cache.
        from fastkc import sample_run

        warm = sample_run.consume_all(bootstrap, topic)
        log("warm-up read: {0:,} records in {1:.2f}s (untimed)".format(warm.records, warm.seconds))

    runs = {name: [] for name in names}
    for round_no in range(args.repeat):
        # Clients take turns, so a slow drift in the machine's load spreads over all of them.
        for name in names:
            result = run_client(name, bootstrap, topic, ends, args.timeout, kafka_version)
            runs[name].append(result)
            if "error" in result:
                log("  [{0}/{1}] {2}: FAILED {3}".format(round_no + 1, args.repeat, name, result["error"]))
            else:
                log("  [{0}/{1}] {2}: {3:,} records in {4:.2f}s = {5:,.0f} records/s, peak RSS {6:.0f} MiB".format(
                    round_no + 1, args.repeat, name, result["records"], result["seconds"],
                    result["records"] / result["seconds"], result["peak_rss_bytes"] / 2**20))

    summaries = {name: summarise(name, runs[name], args.record_size) for name in names}
    meta = {
        "records": total,
        "record_size": args.record_size,
        "partitions": args.partitions,
        "compression": args.compression,
        "repeat": args.repeat,
        "topic": topic,
        "kafka_version": kafka_version or "?",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "machine": "{0} {1}, {2} CPUs, load average {3}".format(
            platform.system(), platform.machine(), os.cpu_count(),
            " ".join("{0:.2f}".format(x) for x in os.getloadavg())),
    }
    table = markdown_table(summaries, meta)
    print(table)
    document = {
        "meta": meta,
        "clients": summaries,
        "ratios": {"{0}/{1}".format(n, d): ratio(summaries, n, d) for n, d, _ in TARGETS},
        "table_markdown": table,
    }
    for path in (args.json, args.png):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(document, f, indent=2, sort_keys=False)
        f.write("\n")
    # The table alone too, for the README to quote.
    markdown_path = os.path.splitext(args.json)[0] + ".md"
    with open(markdown_path, "w") as f:
        f.write(table + "\n")
    draw_chart(summaries, meta, args.png)
    log("wrote {0}, {1} and {2}".format(args.json, markdown_path, args.png))
    failed = [name for name, s in summaries.items() if s["status"] == "failed"]
    if failed:
        log("FAILED: " + ", ".join(failed))
        return 1
    return 0


def main(argv=None):
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
