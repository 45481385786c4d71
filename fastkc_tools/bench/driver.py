"""End-to-end consumer throughput at steady state: one topic, every client, interleaved rounds.

    fastkc bench [--records 2000000] [--record-size 100] [--partitions 8]
        [--compression lz4] [--repeat 3] [--clients fastkc-records,fastkc-arrow,...]
        [--bootstrap HOST:PORT] [--json PATH] [--png PATH]
    fastkc bench --curve value-size|partitions|codecs|headers|all [...]
    python -m fastkc_tools.bench [same options]

The topic is prepared once (created and written by Kafka's own Java
ProducerPerformance through fastkc_tools.sample_run.ensure_sample, so the demo and
the benchmark share it) and then read from its beginning to its end offsets by
each client in its own process (fastkc_tools/bench/run_*.py). With --repeat N the
clients take turns N times (round 1: every client once, then round 2, ...), so
a drift in the machine's load spreads over all of them; the order rotates
by one client per round (round r starts with the r-th client), so no client
always goes first (with at least as many rounds as clients, each one does).
Every runner touches the key and value of every record inside its timed
window and must have touched exactly the produced bytes
(fastkc_tools/bench/common.py, "Equal work"); a run that did not is FAILED.

The headline is the steady-state rate (fastkc_tools/bench/common.py): from the
first record delivered to the last, counting the records after the first
delivery, rate = (records - records_in_first_delivery) / (t_last - t_first);
the median over the rounds with the slowest and fastest run beside it.
Time to first record (first poll -> first record) is its own column, and the
older first poll -> last record rate is kept as a column too. Java's
ConsumerPerformance only reports its own start -> end window; its row keeps
that clock and says so (the `java-steady` row is Kafka's Java consumer timed
like the others).

Prints a Markdown table (with the load average, and each target as a ratio
measured in this run, never asserted), then writes the JSON and a PNG chart
(default: benchmarks/results/e2e.json and e2e.png in a checkout, else
fastkc-bench-results/ in the working directory; the table alone goes to
e2e.md beside the JSON). Any client that reads a different number of records
than the topic holds, or fails, is reported as FAILED and the driver exits
with status 1 after writing what it has. With --curve, fastkc_tools/bench/curves.py
runs instead (tables and charts per curve; the choice is made by
fastkc_tools/bench/__main__.py's run(), so this module never imports curves.py,
which builds on it).
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Log = Callable[[str], None]
# one runner's JSON result line, and a client's summary over its runs (JSON documents)
Result = dict[str, Any]
Summary = dict[str, Any]

# The folder that holds the fastkc package the driver runs from: a checkout's
# root, or site-packages. Each runner process is started there with it first on
# PYTHONPATH, so it imports this same fastkc (never another copy that the
# caller's directory or environment would put first).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_results_dir() -> str:
    """benchmarks/results/ of the checkout fastkc runs from (the figures the
    README quotes), else fastkc-bench-results/ in the working directory."""
    checkout = os.path.join(PACKAGE_PARENT, "benchmarks", "results")
    if os.path.isdir(checkout):
        return checkout
    return os.path.abspath("fastkc-bench-results")


RESULTS = default_results_dir()

# name → (runner module, mode); the order is the table's.
CLIENTS = {
    "fastkc-records": ("fastkc_tools.bench.run_fastkc", "records"),
    "fastkc-records-threaded": ("fastkc_tools.bench.run_fastkc", "records-threaded"),
    "fastkc-arrow": ("fastkc_tools.bench.run_fastkc", "arrow"),
    "ceiling": ("fastkc_tools.bench.run_fastkc", "ceiling"),
    "kafka-python": ("fastkc_tools.bench.run_kafka_python", None),
    "fastkc-aio": ("fastkc_tools.bench.run_fastkc_aio", None),
    "aiokafka": ("fastkc_tools.bench.run_aiokafka", None),
    "confluent-kafka": ("fastkc_tools.bench.run_confluent", "default"),
    "confluent-kafka-tuned": ("fastkc_tools.bench.run_confluent", "tuned"),
    # share groups (KIP-932): each run reads the topic through a fresh share group
    "share-fastkc": ("fastkc_tools.bench.run_share_fastkc", "records"),
    "share-fastkc-arrow": ("fastkc_tools.bench.run_share_fastkc", "arrow"),
    "share-confluent": ("fastkc_tools.bench.run_share_confluent", None),
    "java-steady": ("fastkc_tools.bench.run_java_steady", None),
    "java": ("fastkc_tools.bench.run_java", None),
}
LABELS = {
    "fastkc-records": "fastkc poll() → records",
    "fastkc-records-threaded": "fastkc poll() → records, decode worker (decode_threads=1)",
    "fastkc-arrow": "fastkc poll_arrow() → Arrow",
    "ceiling": "ceiling: fastkc fetch + CRC, no decode",
    "kafka-python": "kafka-python 3.x",
    "fastkc-aio": "fastkc.aio getmany() → records",
    "aiokafka": "aiokafka",
    "confluent-kafka": "confluent-kafka consume(500)",
    "confluent-kafka-tuned": "confluent-kafka consume(500), fetch.queue.backoff.ms=10",
    "share-fastkc": "share group: fastkc KafkaShareConsumer.poll(), implicit acks",
    "share-fastkc-arrow": "share group: fastkc poll_arrow() + acknowledge_batch(ACCEPT)",
    "share-confluent": "share group: confluent-kafka ShareConsumer.poll() (Preview), implicit acks",
    "java-steady": "Java KafkaConsumer poll() (steady-state runner)",
    "java": "Java ConsumerPerformance (its own clock †)",
}
# The rows of fastkc itself (drawn in its colour).
FASTKC_ROWS = ("fastkc", "share-fastkc")
# Clients whose runner reports only its own start → end window (no first-record clock).
OWN_CLOCK = {"java"}
# Rows that decode no record and so touch none (a bound, not a client: common.py, "Equal work").
UNTOUCHED = {"ceiling"}
CLOCK_MARK = {"steady": "", "own": " †", "one-delivery": " ‡"}

# (numerator, denominators, at least): the numerator against the BEST of the
# denominators — reported as a ratio measured in this run, never asserted.
TARGETS = [
    ("fastkc-records", ("confluent-kafka", "confluent-kafka-tuned"), 2.5),
    ("fastkc-records", ("kafka-python",), 10.0),
    ("fastkc-arrow", ("java",), 4.0),
    ("fastkc-arrow", ("ceiling",), 0.8),
    ("fastkc-aio", ("aiokafka",), 5.0),
    ("fastkc-aio", ("fastkc-records",), 0.9),
]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fastkc bench", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options, shared with `fastkc bench`."""
    parser.add_argument("--records", type=int, default=2_000_000, help="records in the topic (default 2000000)")
    parser.add_argument("--record-size", type=int, default=100, help="value bytes per record (default 100)")
    parser.add_argument("--partitions", type=int, default=8, help="partitions (default 8)")
    parser.add_argument("--compression", default="lz4", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds; each client runs once per round, figures are medians (default 3)")
    parser.add_argument("--clients", default=None,
                        help="comma-separated subset of: " + ", ".join(CLIENTS)
                        + " (default: all; with --curve: the curve's own set)")
    parser.add_argument("--bootstrap", default=None,
                        help="use this broker instead of the local one (started if it is not running)")
    parser.add_argument("--kafka-version", default=None,
                        help="with --bootstrap: the broker's Kafka release (labels the tables; the Java rows "
                        "use its jars); default: the harness's default release")
    parser.add_argument("--topic", default=None, help="topic name (default derived from the dataset's shape)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per client run")
    parser.add_argument("--json", default=None,
                        help="where to write the results (default benchmarks/results/e2e.json in a checkout, else "
                        "./fastkc-bench-results/e2e.json; with --curve, "
                        "the curve's files go to the folder of this path)")
    parser.add_argument("--png", default=None, help="where to draw the chart (default beside the JSON)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="skip the untimed read of the topic before the first client")
    parser.add_argument("--curve", default=None, choices=("value-size", "partitions", "codecs", "headers", "all"),
                        help="run a curve (several datasets) instead of one point")
    parser.add_argument("--max-records", type=int, default=2_000_000,
                        help="with --curve: at most this many records per point (default 2000000)")
    parser.add_argument("--max-value-bytes", type=int, default=400_000_000,
                        help="with --curve: at most this many value bytes per point (default 400000000)")
    parser.add_argument("--points", default=None,
                        help="with --curve (one curve): a comma-separated subset of its x values, e.g. 10,1024")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def log_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join("{0:.2f}".format(x) for x in os.getloadavg())


def machine_line() -> str:
    return "{0} {1}, {2} CPUs, load average {3}".format(
        platform.system(), platform.machine(), os.cpu_count(), load_average())


def local_bootstrap(log: Log) -> tuple[str, str]:
    """The local broker's address, starting it first if needed (as the demo does)."""
    from fastkc_tools import broker

    st = broker.status()
    info = st.info if st.running and st.info is not None else broker.start(log=lambda m: log("fastkc: " + m))
    return info.bootstrap_servers, info.kafka_version


def prepare_topic(bootstrap: str, topic: str, args: argparse.Namespace, log: Log) -> dict[int, int]:
    """Create and fill the topic unless it holds the dataset; return its end offsets."""
    from fastkc_tools import sample_run

    sample_run.ensure_sample(bootstrap, topic, records=args.records, record_size=args.record_size,
                             partitions=args.partitions, compression=args.compression, log=log)
    return topic_ends(bootstrap, topic, args.partitions)


def topic_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from fastkc.net.blocking import BlockingConnection
    from fastkc_tools import sample_run

    host, port = sample_run.split_bootstrap(bootstrap)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        topic_id, ends = sample_run.topic_layout(conn, topic)
    if topic_id is None:
        raise RuntimeError("topic {0} vanished after loading".format(topic))
    if sorted(ends) != list(range(partitions)):
        raise RuntimeError("topic {0} has partitions {1}, not {2}: pick another --topic".format(
            topic, sorted(ends), partitions))
    return ends


def produced_bytes(ends: Mapping[int, int], value_size: int) -> int:
    """The key + value bytes of a benchmark topic: its records carry null keys
    and values of exactly `value_size` bytes (ProducerPerformance's
    --record-size; curves.produce_with_headers writes the same shape)."""
    return sum(ends.values()) * value_size


def run_client(name: str, bootstrap: str, topic: str, ends: Mapping[int, int], timeout: float,
               kafka_version: str | None = None, *, value_size: int) -> Result:
    """One run of one client in its own process → its result dict (or an error dict)."""
    module, mode = CLIENTS[name]
    expected_bytes = produced_bytes(ends, value_size)
    cmd = [sys.executable, "-m", module, "--bootstrap", bootstrap, "--topic", topic,
           "--partitions", str(len(ends)), "--expected", str(sum(ends.values())),
           "--expected-bytes", str(expected_bytes),
           "--ends", ",".join("{0}={1}".format(p, ends[p]) for p in sorted(ends)),
           "--timeout", str(timeout)]
    if mode:
        cmd += ["--mode", mode]
    if name in ("java", "java-steady") and kafka_version:
        cmd += ["--kafka-version", kafka_version]
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # pyarrow imports numpy, whose bundled OpenBLAS starts a thread per core
    # that spins for a while (blas_thread_server: ~8 % of the Arrow runner's
    # profile, on the core the broker needs). No client here does linear
    # algebra, so every runner gets one BLAS thread: the same environment for
    # all, and what an ingestion process should set (README, Benchmarks).
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The neighbours' load, so a noisy figure can be told from a slow client.
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        # The runner's own deadline fires first; this one only catches a wedged process.
        proc = subprocess.run(cmd, cwd=PACKAGE_PARENT, env=env, capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return {"client": name, "error": "runner did not exit within {0:.0f}s".format(timeout + 120)}
    if proc.returncode != 0:
        return {"client": name, "error": "exit {0}: {1}".format(proc.returncode, proc.stderr.strip()[-2000:])}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        result: Result = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"client": name, "error": "no result line in its output:\n" + proc.stdout[-2000:]}
    # The runner checked its touched bytes itself; the driver checks that it
    # reported them at all, so a runner cannot skip the work unnoticed.
    touched = result.get("touched_bytes")
    if name not in UNTOUCHED and (touched is None
                                  or abs(touched - expected_bytes) > result.get("touched_tolerance", 0)):
        return {"client": name, "error": "touched {0} key + value bytes, {1:,} were produced".format(
            touched, expected_bytes)}
    result["process_seconds"] = time.perf_counter() - started
    result["load_average_1m_before"] = load_before
    return result


def round_order(names: Sequence[str], round_no: int) -> list[str]:
    """The clients of round `round_no`: the list rotated by one per round."""
    shift = round_no % len(names)
    return list(names[shift:]) + list(names[:shift])


def run_rounds(names: Sequence[str], bootstrap: str, topic: str, ends: Mapping[int, int], repeat: int,
               timeout: float, kafka_version: str | None, log: Log, *, value_size: int) -> dict[str, list[Result]]:
    """{client: [run result]}: `repeat` rounds, every client once per round, in
    turn, the order rotated each round (round_order)."""
    runs: dict[str, list[Result]] = {name: [] for name in names}
    for round_no in range(repeat):
        for name in round_order(names, round_no):
            result = run_client(name, bootstrap, topic, ends, timeout, kafka_version, value_size=value_size)
            runs[name].append(result)
            if "error" in result:
                log("  [{0}/{1}] {2}: FAILED {3}".format(round_no + 1, repeat, name, result["error"]))
            else:
                log("  [{0}/{1}] {2}: {3:,.0f} records/s steady, first record after {4}, peak RSS {5:.0f} MiB"
                    " (load {6:.2f})".format(
                        round_no + 1, repeat, name, run_rate(result),
                        fmt_ms(result.get("time_to_first_record_seconds")),
                        result["peak_rss_bytes"] / 2**20, result["load_average_1m_before"]))
    return runs


def has_steady(result: Result) -> bool:
    return result.get("steady_seconds") is not None and bool(result.get("steady_records"))


def run_rate(result: Result) -> float:
    """A run's headline rate: steady state when the runner measured it, else its own window."""
    if has_steady(result):
        return float(result["steady_records"] / result["steady_seconds"])
    return float(result["records"] / result["seconds"])


def summarise(name: str, runs: Sequence[Result], record_size: int) -> Summary:
    ok = [r for r in runs if "error" not in r]
    summary: Summary = {"client": name, "label": LABELS[name], "runs": runs}
    if len(ok) != len(runs) or not ok:
        summary["status"] = "failed"
        summary["reason"] = next((r["error"] for r in runs if "error" in r), "no runs")
        return summary
    rates = [run_rate(r) for r in ok]
    rate = statistics.median(rates)
    records = ok[0]["records"]
    if all(has_steady(r) for r in ok):
        clock = "steady"
    elif name in OWN_CLOCK:
        clock = "own"
    else:
        clock = "one-delivery"
    ttfr = [r["time_to_first_record_seconds"] for r in ok if r.get("time_to_first_record_seconds") is not None]
    summary.update({
        "status": "ok",
        "records": records,
        # which clock the headline rate comes from: "steady" (first → last
        # record), "own" (a tool's own window) or "one-delivery" (some run got
        # every record in one delivery, leaving no interval: first poll → last)
        "clock": clock,
        "records_per_second": rate,
        "records_per_second_min": min(rates),
        "records_per_second_max": max(rates),
        # Values only (ProducerPerformance writes null keys; headers are not counted).
        "value_megabytes_per_second": rate * record_size / 1e6,
        "time_to_first_record_seconds": statistics.median(ttfr) if len(ttfr) == len(ok) else None,
        # the previous headline: first poll → last record, all records
        "first_poll_to_last_records_per_second": statistics.median(r["records"] / r["seconds"] for r in ok),
        "seconds": statistics.median(r["seconds"] for r in ok),
        "peak_rss_bytes": max(r["peak_rss_bytes"] for r in ok),
        "cpu_seconds": (statistics.median(r["cpu_seconds"] for r in ok)
                        if all(r.get("cpu_seconds") is not None for r in ok) else None),
        "load_average_1m": statistics.median(r["load_average_1m_before"] for r in ok
                                             if r.get("load_average_1m_before") is not None)
        if any(r.get("load_average_1m_before") is not None for r in ok) else None,
        "api": ok[0].get("api"),
        "version": ok[0].get("version"),
    })
    return summary


def ratio(summaries: Mapping[str, Summary], numerator: str, denominator: str) -> float | None:
    a, b = summaries.get(numerator), summaries.get(denominator)
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return None
    return float(a["records_per_second"] / b["records_per_second"])


def target_ratio(summaries: Mapping[str, Summary], numerator: str,
                 denominators: Sequence[str]) -> tuple[float, str] | tuple[None, None]:
    """numerator ÷ the best of the denominators measured, and which one that was."""
    measured = [(summaries[d]["records_per_second"], d) for d in denominators
                if d in summaries and summaries[d]["status"] == "ok"]
    a = summaries.get(numerator)
    if not measured or not a or a["status"] != "ok":
        return None, None
    best_rate, best = max(measured)
    return float(a["records_per_second"] / best_rate), best


def paired_ratios(summaries: Mapping[str, Summary], numerator: str, denominator: str) -> list[float]:
    """numerator ÷ denominator round by round (run i of each: the same round).

    On a shared machine the load drifts between rounds far more than it does
    within one, so the ratio of two runs taken back to back is steadier than
    the ratio of two medians taken over all rounds: both are reported."""
    a, b = summaries.get(numerator), summaries.get(denominator)
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return []
    return [run_rate(x) / run_rate(y) for x, y in zip(a["runs"], b["runs"])]


def fmt_paired(ratios: Sequence[float]) -> str:
    if not ratios:
        return ""
    return "; round by round {0} (median), {1}–{2}".format(
        fmt_ratio(statistics.median(ratios)), fmt_ratio(min(ratios)), fmt_ratio(max(ratios)))


def target_key(numerator: str, denominators: Sequence[str]) -> str:
    return "{0}/{1}".format(numerator, "best-of(" + ",".join(denominators) + ")" if len(denominators) > 1
                            else denominators[0])


def markdown_table(summaries: Mapping[str, Summary], meta: Mapping[str, Any]) -> str:
    lines = [
        "End-to-end consumption of {records:,} records × {record_size} B ({compression}, {partitions} partitions, "
        "Kafka {kafka_version}); {repeat} interleaved round(s), median and slowest–fastest run.".format(**meta),
        "",
        "| client | records/s (steady) | slowest–fastest | MB/s (values) | first record after "
        "| records/s (first poll → last) | CPU s | peak RSS MiB | poll() ÷ it | poll_arrow() ÷ it |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summaries.items():
        label = s["label"]
        if s["status"] != "ok":
            lines.append("| {0} | {1} | | | | | | | | |".format(label, s["status"].upper()))
            continue
        lines.append("| {0} | {1:,.0f}{2} | {3:,.0f}–{4:,.0f} | {5:.1f} | {6} | {7:,.0f} | {8} | {9:.0f} | {10} "
                     "| {11} |".format(
                         label, s["records_per_second"], CLOCK_MARK[s["clock"]],
                         s["records_per_second_min"], s["records_per_second_max"],
                         s["value_megabytes_per_second"], fmt_ms(s["time_to_first_record_seconds"]),
                         s["first_poll_to_last_records_per_second"],
                         "—" if s["cpu_seconds"] is None else "{0:.2f}".format(s["cpu_seconds"]),
                         s["peak_rss_bytes"] / 2**20,
                         fmt_ratio(ratio(summaries, "fastkc-records", name)),
                         fmt_ratio(ratio(summaries, "fastkc-arrow", name))))
    lines.append("")
    lines.append("records/s (steady): (records − those of the first delivery) ÷ (last record's time − first "
                 "record's time), per run. First record after: first poll → first record. † its own clock: "
                 "ConsumerPerformance's fetch.time.ms (start → end of its fetch loop), which it alone reports; "
                 "‡ every record came in one delivery, so first poll → last record. "
                 "CPU s: the client process's CPU (all its threads), first poll → last record. "
                 "Machine: {machine}.".format(**meta))
    for numerator, denominators, at_least in TARGETS:
        r, best = target_ratio(summaries, numerator, denominators)
        verdict = "not measured" if r is None else ("met" if r >= at_least else "NOT met")
        against = LABELS[denominators[0]] if len(denominators) == 1 else "the better of {0} (here: {1})".format(
            " and ".join(LABELS[d] for d in denominators), LABELS[best] if best else "—")
        paired = paired_ratios(summaries, numerator, best) if best else []
        lines.append("- target {0} ≥ {1:g}× {2}: {3} ({4}{5})".format(
            LABELS[numerator], at_least, against, fmt_ratio(r), verdict, fmt_paired(paired)))
    return "\n".join(lines)


def fmt_ratio(r: float | None) -> str:
    return "—" if r is None else "{0:.2f}×".format(r)


def fmt_ms(seconds: float | None) -> str:
    return "—" if seconds is None else "{0:,.0f} ms".format(seconds * 1000)


def draw_chart(summaries: Mapping[str, Summary], meta: Mapping[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [s for s in summaries.values() if s["status"] == "ok"][::-1]  # barh draws bottom-up
    fig, ax = plt.subplots(figsize=(10, 0.6 * max(len(measured), 1) + 1.8))
    labels = [s["label"] for s in measured]
    rates = [s["records_per_second"] / 1e6 for s in measured]
    # Whiskers span the slowest to the fastest run around the median bar.
    lows = [s["records_per_second_min"] / 1e6 for s in measured]
    highs = [s["records_per_second_max"] / 1e6 for s in measured]
    spread = [[rate - low for rate, low in zip(rates, lows)], [high - rate for rate, high in zip(rates, highs)]]
    colours = ["#1f77b4" if s["client"] == "ceiling" else "#d62728" if s["client"].startswith(FASTKC_ROWS)
               else "#7f7f7f" for s in measured]
    bars = ax.barh(labels, rates, xerr=spread, capsize=3, ecolor="#333333", color=colours)
    for bar, rate, high in zip(bars, rates, highs):
        ax.text(high, bar.get_y() + bar.get_height() / 2, "  {0:.2f}".format(rate), va="center")
    ax.set_xlabel("million records/s at steady state (first record → last); median, whiskers: slowest–fastest "
                  "run; † own clock")
    ax.set_title("{records:,} × {record_size} B, {compression}, {partitions} partitions, Kafka {kafka_version}; "
                 "load {load}".format(load=load_average(), **meta), fontsize=10)
    ax.set_xlim(0, max(highs + [0.001]) * 1.18)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PACKAGE_PARENT,
                             capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def client_names(text: str | None, default: Iterable[str]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()] if text else list(default)
    unknown = [n for n in names if n not in CLIENTS]
    if unknown or not names:
        raise SystemExit("unknown client(s) {0}; choose from {1}".format(unknown, ", ".join(CLIENTS)))
    return names


def broker_for(args: argparse.Namespace, log: Log) -> tuple[str, str | None]:
    """(bootstrap, kafka version or None). A given bootstrap that is the
    local broker's takes its version from the harness (the tables name it)."""
    if args.bootstrap:
        return args.bootstrap, args.kafka_version or local_version(args.bootstrap)
    return local_bootstrap(log)


def local_version(bootstrap: str) -> str | None:
    """The Kafka version of the local broker when `bootstrap` is its address, else None."""
    from fastkc_tools import broker

    st = broker.status()
    if st.running and st.info is not None and st.info.bootstrap_servers == bootstrap:
        version: str = st.info.kafka_version
        return version
    return None


def warm_up(bootstrap: str, topic: str, log: Log) -> None:
    # One untimed pass through the broker, so whichever client goes first does not
    # pay for reading a topic written long ago from disk while the others hit the page cache.
    from fastkc_tools import sample_run

    warm = sample_run.consume_all(bootstrap, topic)
    log("warm-up read: {0:,} records in {1:.2f}s (untimed)".format(warm.records, warm.seconds))


def run(args: argparse.Namespace, log: Callable[[str], None] = log_to_stderr) -> int:
    """One point: every client on one topic (`fastkc bench` without --curve)."""
    names = client_names(args.clients, CLIENTS)
    if args.repeat < 1 or args.records < 1 or args.partitions < 1 or args.record_size < 1:
        raise SystemExit("--repeat, --records, --partitions and --record-size must be positive")
    json_path = args.json or os.path.join(RESULTS, "e2e.json")
    png_path = args.png or os.path.splitext(json_path)[0] + ".png"
    bootstrap, kafka_version = broker_for(args, log)
    topic = args.topic or "fastkc-sample-{0}x{1}-{2}-{3}p".format(
        args.records, args.record_size, args.compression, args.partitions)
    log("broker {0}, topic {1}".format(bootstrap, topic))
    ends = prepare_topic(bootstrap, topic, args, log)
    total = sum(ends.values())
    if total != args.records:
        log("note: {0} holds {1:,} records (asked for {2:,}); every client must read {1:,}".format(
            topic, total, args.records))
    if args.warmup:
        warm_up(bootstrap, topic, log)

    runs = run_rounds(names, bootstrap, topic, ends, args.repeat, args.timeout, kafka_version, log,
                      value_size=args.record_size)
    summaries = {name: summarise(name, runs[name], args.record_size) for name in names}
    meta = {
        "records": total,
        "record_size": args.record_size,
        "partitions": args.partitions,
        "compression": args.compression,
        "repeat": args.repeat,
        "topic": topic,
        "kafka_version": kafka_version or "?",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "machine": machine_line(),
    }
    table = markdown_table(summaries, meta)
    print(table)
    document = {
        "meta": meta,
        "clients": summaries,
        "ratios": {"{0}/{1}".format(n, d): ratio(summaries, n, d)
                   for n, ds, _ in TARGETS for d in ds},
        "targets": [{"key": target_key(n, ds), "numerator": n, "against": target_ratio(summaries, n, ds)[1],
                     "ratio": target_ratio(summaries, n, ds)[0], "at_least": at_least,
                     "round_by_round": paired_ratios(summaries, n, target_ratio(summaries, n, ds)[1] or "")}
                    for n, ds, at_least in TARGETS],
        "table_markdown": table,
    }
    for path in (json_path, png_path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(document, f, indent=2, sort_keys=False)
        f.write("\n")
    # The table alone too, for the README to quote.
    markdown_path = os.path.splitext(json_path)[0] + ".md"
    with open(markdown_path, "w") as f:
        f.write(table + "\n")
    draw_chart(summaries, meta, png_path)
    log("wrote {0}, {1} and {2}".format(json_path, markdown_path, png_path))
    failed = [name for name, s in summaries.items() if s["status"] == "failed"]
    if failed:
        log("FAILED: " + ", ".join(failed))
        return 1
    return 0
