"""Rows per second reading one Kafka topic in Spark and touching every row's
key and value (the sum of their lengths, checked against the produced bytes):
format("fastkc") (fastkc's C core, Arrow batches through the Python data
source) against format("kafka") (Spark's own JVM source, spark-sql-kafka-0-10
and its dependencies resolved with mvn into ~/.cache/fastkc/), side by side in
one session per cluster shape:

- local[2]: driver and executor in one JVM, two task slots;
- standalone-1 / standalone-2: a Spark standalone master with 1 or 2 workers
  of one core each on 127.0.0.1 (tests/support/spark_standalone.py), the
  executors in their own JVMs with their own Python workers.

    python benchmarks/spark/bench_spark.py                 # 4M records, 8 partitions, lz4, all three shapes
    python benchmarks/spark/bench_spark.py --quick         # 100k records, local[2], one run: smoke run
    python benchmarks/spark/bench_spark.py --clusters local[2],standalone-2
    FASTKC_BOOTSTRAP=host:port python benchmarks/spark/bench_spark.py   # an existing broker

Without FASTKC_BOOTSTRAP a single-node broker is started (fastkc_tools.broker) and
stopped at the end. In each shape every source first counts the topic (the
count must equal the records written; it also warms up the JIT and the Python
workers), then reads it `--runs` times, the sources interleaved; the table
reports the median (and best) run. A full run (not --quick) writes
benchmarks/results/spark.md, spark.json and spark.png (--out elsewhere).
"""
import argparse
import contextlib
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

# The newest spark-sql-kafka-0-10 that Maven Central serves in full; it runs
# on the pyspark 4.3 runtime (the Kafka source's Spark APIs did not change).
BASELINE_VERSION = "4.2.0"


def maven_jars(pom, name, marker, version=BASELINE_VERSION):
    """Local paths of the jars `pom` (beside this file) resolves, less those
    the pyspark wheel already carries (any version); resolved with mvn into
    ~/.cache/fastkc/<name>-<version>/ on first use (when no `marker` jar is
    there yet)."""
    import pyspark

    folder = os.path.expanduser("~/.cache/fastkc/{0}-{1}".format(name, version))
    if not glob.glob(os.path.join(folder, marker)):
        subprocess.run(["mvn", "-q", "-s", os.path.join(HERE, "settings.xml"), "-f", os.path.join(HERE, pom),
                        "-Dspark.version=" + version, "dependency:copy-dependencies", "-DincludeScope=runtime",
                        "-DoutputDirectory=" + folder], check=True)
    shipped = {os.path.basename(j).rsplit("-", 1)[0]
               for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar"))}
    # keep only artifacts the wheel does not already carry (any version)
    return sorted(j for j in glob.glob(os.path.join(folder, "*.jar"))
                  if os.path.basename(j).rsplit("-", 1)[0] not in shipped)


def baseline_jars(version=BASELINE_VERSION):
    """Spark's Kafka source and the jars it needs that the pyspark wheel lacks."""
    return maven_jars("pom.xml", "spark-kafka", "spark-sql-kafka-*.jar", version)


def load_topic(bootstrap, records, partitions, record_size):
    from tests.support.kafka_tools import create_topic, producer_performance, unique_name

    topic = unique_name("spark-bench")
    create_topic(bootstrap, topic, partitions=partitions)
    run = producer_performance(bootstrap, topic, records, record_size=record_size, compression="lz4",
                               extra_props={"batch.size": 262144, "linger.ms": 50}, timeout=1800)
    return topic, run


@contextlib.contextmanager
def bench_broker(bootstrap=None):
    """`bootstrap` when given (an existing broker), else a single-node broker
    started here, stopped and its data removed after."""
    if bootstrap:
        yield bootstrap
        return
    from fastkc_tools import broker

    data_dir = tempfile.mkdtemp(prefix="fastkc-spark-bench-")
    try:
        yield broker.start(name="spark-bench", data_dir=data_dir, nodes=1, die_with_parent=True).bootstrap_servers
    finally:
        broker.stop(data_dir=data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)  # the topics are hundreds of MB


SHAPES = ("local[2]", "standalone-1", "standalone-2")


def session(jars, master="local[2]", executors=0):
    """A SparkSession on `master` with the baseline jars and the `fastkc`
    source registered; with a standalone master, one 1-core executor per
    worker (`executors`), waited for so the first stage spreads."""
    from tests.spark.conftest import FAST_SETTINGS, worker_environment
    from tests.spark.conftest import ROOT as REPO

    worker_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("fastkc-spark-bench").config("spark.jars", ",".join(jars))
    for key, value in FAST_SETTINGS.items():
        if key != "spark.driver.extraJavaOptions":  # full JIT for a throughput measurement
            builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", "2g")
    if executors:
        builder = (builder.config("spark.executor.cores", "1").config("spark.cores.max", str(executors))
                   .config("spark.executor.memory", "1g").config("spark.pyspark.python", sys.executable)
                   # the executors import fastkc from this checkout (in-place build);
                   # on a real cluster it is installed on every node or shipped with spark.archives
                   .config("spark.executorEnv.PYTHONPATH", REPO))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import fastkc.spark

    fastkc.spark.register(spark)
    if executors:
        from tests.support.spark_standalone import wait_for_executors

        if not wait_for_executors(spark, executors):
            spark.stop()
            raise SystemExit("the standalone cluster did not give {0} executors within a minute".format(executors))
    return spark


def read_once(spark, fmt, bootstrap, topic, expected_bytes):
    """Seconds to read the topic and touch every row's key and value: the
    sum of their byte lengths, the same Spark query over either source
    (fastkc_tools/bench/common.py, "Equal work"); the sum must be the produced
    bytes (null keys, values of --record-size bytes)."""
    from pyspark.sql import functions as F

    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    touch = df.select(F.sum(F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0)))
                      .alias("touched"))
    started = time.perf_counter()
    (touched,) = touch.first()
    seconds = time.perf_counter() - started
    if touched != expected_bytes:
        raise SystemExit("{0} touched {1} key + value bytes, {2} were produced".format(fmt, touched, expected_bytes))
    return seconds


def count_rows(spark, fmt, bootstrap, topic):
    return (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .load().count())


@contextlib.contextmanager
def shape_session(shape, jars):
    """A session() on one cluster shape (SHAPES) with `jars`; a standalone
    cluster is started before it and stopped after."""
    if shape == "local[2]":
        cluster, executors, folder = contextlib.nullcontext("local[2]"), 0, None
    else:
        from tests.support.spark_standalone import standalone_cluster

        executors = int(shape.rsplit("-", 1)[1])
        folder = tempfile.mkdtemp(prefix="fastkc-spark-standalone-")
        cluster = standalone_cluster(folder, workers=executors)
    try:
        with cluster as master:
            spark = session(jars, master, executors)
            try:
                yield spark
            finally:
                spark.stop()
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def measure_shape(shape, jars, bootstrap, topic, records, record_size, runs, log=print):
    """{fmt: [seconds per run]} for one cluster shape."""
    with shape_session(shape, jars) as spark:
        results = measure_in_session(spark, ("kafka", "fastkc"), bootstrap, topic, records, records * record_size,
                                     runs)
        log("{0}: {1}".format(shape, {fmt: [round(t, 2) for t in ts] for fmt, ts in results.items()}))
    return results


def measure_in_session(spark, formats, bootstrap, topic, records, expected_bytes, runs):
    """{fmt: [seconds per run]}: each source counts the topic first (the
    count must be `records`; also the warm-up), then the runs, interleaved,
    the source that goes first alternating run by run."""
    for fmt in formats:
        rows = count_rows(spark, fmt, bootstrap, topic)
        if rows != records:
            raise SystemExit("{0} read {1} rows, expected {2}".format(fmt, rows, records))
    return interleaved(formats, runs, lambda fmt: read_once(spark, fmt, bootstrap, topic, expected_bytes))


def interleaved(names, runs, run_one):
    """{name: [run_one(name) of each run]}: interleaved, so load on the
    machine hits every name alike; rotated, so none always goes first."""
    results = {}
    for run in range(runs):
        shift = run % len(names)
        for name in list(names[shift:]) + list(names[:shift]):
            results.setdefault(name, []).append(run_one(name))
    return results


def rates(seconds, records):
    """One source's figures over its runs: the seconds, and rows/s of the
    median, the best and the slowest run."""
    return {"seconds": seconds, "rows_per_second": records / statistics.median(seconds),
            "best_rows_per_second": records / min(seconds), "slowest_rows_per_second": records / max(seconds)}


def summarize(measured, records, record_size, partitions, runs, load):
    """The figures of a run: per cluster shape and source, the seconds of
    each run, rows/s of the median and of the best run, fastkc / kafka."""
    summary = {"records": records, "record_size": record_size, "partitions": partitions, "runs": runs,
               "load": list(load), "shapes": {}}
    for shape, results in measured.items():
        row = {}
        for fmt, seconds in results.items():
            row[fmt] = rates(seconds, records)
        both = "kafka" in row and "fastkc" in row
        row["ratio"] = row["fastkc"]["rows_per_second"] / row["kafka"]["rows_per_second"] if both else None
        summary["shapes"][shape] = row
    return summary


def table(summary):
    lines = ["| cluster | format(\"kafka\") rows/s | format(\"fastkc\") rows/s | fastkc / kafka |",
             "|---|---:|---:|---:|"]
    def rate(row, fmt):
        return "{0:,.0f}".format(row[fmt]["rows_per_second"]) if fmt in row else "not measured"

    for shape, row in summary["shapes"].items():
        ratio = "{0:.2f}x".format(row["ratio"]) if row["ratio"] is not None else "-"
        lines.append("| {0} | {1} | {2} | {3} |".format(shape, rate(row, "kafka"), rate(row, "fastkc"), ratio))
    lines.append("")
    lines.append("{records:,} records x {record_size} B, {partitions} partitions, lz4; median of {runs} runs "
                 "per source after a counting warm-up, sources interleaved; rows/s = records / median seconds of "
                 "summing every row's key and value length (the sum checked against the produced bytes); "
                 "standalone workers have 1 core each; "
                 "1-min load average {load[0]:.1f} before, {load[1]:.1f} after".format(**summary))
    return "\n".join(lines)


def draw_chart(summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(summary["shapes"])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.38
    for i, (fmt, color) in enumerate((("kafka", "#7f7f7f"), ("fastkc", "#d62728"))):
        figures = [summary["shapes"][s].get(fmt, {}) for s in shapes]
        rates = [f.get("rows_per_second", 0) / 1e6 for f in figures]
        best = [f.get("best_rows_per_second", 0) / 1e6 for f in figures]
        xs = [x + (i - 0.5) * width for x in range(len(shapes))]
        bars = ax.bar(xs, rates, width, color=color, label='format("{0}")'.format(fmt),
                      yerr=[[0] * len(rates), [b - r for b, r in zip(best, rates)]], capsize=3, ecolor="#333333")
        for bar, rate in zip(bars, rates):
            ax.text(bar.get_x() + bar.get_width() / 2, rate, "{0:.2f}".format(rate), ha="center", va="bottom",
                    fontsize=8)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([s if summary["shapes"][s]["ratio"] is None else "{0}\n({1:.2f}x)".format(
        s, summary["shapes"][s]["ratio"]) for s in shapes])
    ax.set_ylabel("million rows/s (median; whisker: best run)")
    ax.set_title("Spark read, key + value lengths summed: {records:,} x {record_size} B, {partitions} partitions, lz4"
                 .format(**summary), fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clusters", default=",".join(SHAPES),
                        help="comma-separated among {0}".format(", ".join(SHAPES)))
    parser.add_argument("--quick", action="store_true", help="100k records, local[2] only, one run each")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"),
                        help="folder for spark.md/.json/.png (full runs only)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.runs, args.clusters = 100_000, 1, "local[2]"
    shapes = [s.strip() for s in args.clusters.split(",") if s.strip()]
    if not shapes or any(s not in SHAPES for s in shapes):
        raise SystemExit("--clusters: choose among {0}".format(", ".join(SHAPES)))

    jars = baseline_jars()
    load_before = os.getloadavg()[0]
    measured = {}
    with bench_broker(os.environ.get("FASTKC_BOOTSTRAP", "").strip()) as bootstrap:
        topic, run = load_topic(bootstrap, args.records, args.partitions, args.record_size)
        print("loaded {0} records ({1} B values, {2} partitions, lz4): {3}".format(
            args.records, args.record_size, args.partitions, run.output), flush=True)
        for shape in shapes:
            measured[shape] = measure_shape(shape, jars, bootstrap, topic, args.records, args.record_size,
                                            args.runs)

    summary = summarize(measured, args.records, args.record_size, args.partitions, args.runs,
                        (load_before, os.getloadavg()[0]))
    text = table(summary)
    print()
    print(text)
    if not args.quick:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "spark.md"), "w") as fh:
            fh.write("# Spark: rows/s, format(\"fastkc\") vs format(\"kafka\")\n\n"
                     "Regenerate: `python benchmarks/spark/bench_spark.py`\n\n" + text + "\n")
        with open(os.path.join(args.out, "spark.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
        draw_chart(summary, os.path.join(args.out, "spark.png"))
    return summary


if __name__ == "__main__":
    main()
