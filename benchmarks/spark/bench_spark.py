"""Rows per second reading one Kafka topic into Spark's `noop` sink:
format("fastkc") (fastkc's C core, Arrow batches through the Python data
source) against format("kafka") (Spark's own JVM source, spark-sql-kafka-0-10
and its dependencies resolved with mvn into ~/.cache/fastkc/), in one session.

    python benchmarks/spark/bench_spark.py                 # 4M records, 8 partitions, lz4
    python benchmarks/spark/bench_spark.py --quick         # 100k records: smoke run
    FASTKC_BOOTSTRAP=host:port python benchmarks/spark/bench_spark.py   # an existing broker

Without FASTKC_BOOTSTRAP a single-node broker is started (fastkc.broker) and
stopped at the end. Each source reads the whole topic `--runs` times after one
warm-up read; the table reports the best and the median run.
"""
import argparse
import glob
import os
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


def baseline_jars(version=BASELINE_VERSION):
    """Local paths of Spark's Kafka source and the jars it needs that the
    pyspark wheel lacks (resolved with mvn on first use)."""
    import pyspark

    folder = os.path.expanduser("~/.cache/fastkc/spark-kafka-{0}".format(version))
    if not glob.glob(os.path.join(folder, "spark-sql-kafka-*.jar")):
        subprocess.run(["mvn", "-q", "-s", os.path.join(HERE, "settings.xml"), "-f", os.path.join(HERE, "pom.xml"),
                        "-Dspark.version=" + version, "dependency:copy-dependencies", "-DincludeScope=runtime",
                        "-DoutputDirectory=" + folder], check=True)
    shipped = {os.path.basename(j).rsplit("-", 1)[0]
               for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar"))}
    # keep only artifacts the wheel does not already carry (any version)
    return sorted(j for j in glob.glob(os.path.join(folder, "*.jar"))
                  if os.path.basename(j).rsplit("-", 1)[0] not in shipped)


def load_topic(bootstrap, records, partitions, record_size):
    from tests.support.kafka_tools import create_topic, producer_performance, unique_name

    topic = unique_name("spark-bench")
    create_topic(bootstrap, topic, partitions=partitions)
    run = producer_performance(bootstrap, topic, records, record_size=record_size, compression="lz4",
                               extra_props={"batch.size": 262144, "linger.ms": 50}, timeout=1800)
    return topic, run


def session(jars):
    from tests.spark.conftest import FAST_SETTINGS, worker_environment

    worker_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("fastkc-spark-bench").config("spark.jars", ",".join(jars))
    for key, value in FAST_SETTINGS.items():
        if key != "spark.driver.extraJavaOptions":  # full JIT for a throughput measurement
            builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", "2g")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import fastkc.spark

    fastkc.spark.register(spark)
    return spark


def read_once(spark, fmt, bootstrap, topic):
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def count_rows(spark, fmt, bootstrap, topic):
    return (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .load().count())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100k records, one run each")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.runs = 100_000, 1

    jars = baseline_jars()
    load_before = os.getloadavg()[0]
    external = os.environ.get("FASTKC_BOOTSTRAP", "").strip()
    data_dir = None
    if external:
        bootstrap = external
    else:
        from fastkc import broker

        data_dir = tempfile.mkdtemp(prefix="fastkc-spark-bench-")
        bootstrap = broker.start(name="spark-bench", data_dir=data_dir, nodes=1, die_with_parent=True).bootstrap_servers
    try:
        topic, run = load_topic(bootstrap, args.records, args.partitions, args.record_size)
        print("loaded {0} records ({1} B values, {2} partitions, lz4): {3}".format(
            args.records, args.record_size, args.partitions, run.output), flush=True)
        spark = session(jars)
        try:
            results = {}
            for fmt in ("kafka", "fastkc"):
                rows = count_rows(spark, fmt, bootstrap, topic)
                if rows != args.records:
                    raise SystemExit("{0} read {1} rows, expected {2}".format(fmt, rows, args.records))
                read_once(spark, fmt, bootstrap, topic)  # warm-up (JIT, Python workers)
            for _ in range(args.runs):
                for fmt in ("kafka", "fastkc"):  # interleaved, so load on the machine hits both alike
                    results.setdefault(fmt, []).append(read_once(spark, fmt, bootstrap, topic))
        finally:
            spark.stop()
    finally:
        if data_dir is not None:
            from fastkc import broker

            broker.stop(data_dir=data_dir)

    base = args.records / min(results["kafka"])
    print()
    print("| source | best s | median s | rows/s (best) | vs format(\"kafka\") |")
    print("|---|---:|---:|---:|---:|")
    for fmt in ("kafka", "fastkc"):
        best, median = min(results[fmt]), statistics.median(results[fmt])
        rate = args.records / best
        print("| format(\"{0}\") | {1:.2f} | {2:.2f} | {3:,.0f} | {4:.2f}x |".format(fmt, best, median, rate, rate / base))
    # the machine may be shared: the load says how comparable two tables are
    print("\n{0} records x {1} B, {2} partitions, lz4, local[2], {3} runs each after a warm-up; "
          "1-min load average {4:.1f} before, {5:.1f} after".format(
              args.records, args.record_size, args.partitions, args.runs, load_before, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
