"""The driver's planning time of a batch read over many partitions: what
runs before the first task (metadata, ListOffsets for both ends, the
InputPartitions and their pickling), for format("fastkc") and, for
comparison, format("kafka") (Spark's own JVM source).

    python benchmarks/spark/bench_planning.py                    # 10 topics x 1,000 partitions
    python benchmarks/spark/bench_planning.py --partitions 500 --topics 2 --runs 1 --no-baseline
    FASTKC_BOOTSTRAP=host:port python benchmarks/spark/bench_planning.py   # an existing broker

Two figures per source:
- reader: FastkcBatchReader.partitions() called directly in this process,
  plus pickling every InputPartition one by one (Spark pickles each); no
  Spark involved.
- session: spark.read...load() then df.rdd.getNumPartitions() in a local
  session, which runs schema(), reader() and partitions() in Spark's Python
  planner processes and carries the partitions to the JVM.
- Spark alone: the same call on plan_floor.py's source, whose partitions()
  returns as many ready-made partitions at no cost: Spark's own share.

The topics are named after their shape (fastkc-plan-<topics>x<per topic>-<i>)
and reused when they exist, so a long-lived broker pays for creating them
once. Every partition holds a few records, so no range is empty (empty
ranges are dropped and would make planning look cheaper than it is).
Without FASTKC_BOOTSTRAP a single-node broker is started and stopped.
"""
import argparse
import json
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

RECORDS_PER_PARTITION = 3


def topic_names(topics, per_topic):
    return ["fastkc-plan-{0}x{1}-{2}".format(topics, per_topic, i) for i in range(topics)]


def ensure_topics(bootstrap, names, per_topic):
    """Create the topics that are missing and give every partition records."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    from tests.support.kafka_tools import create_topic, producer_config

    existing = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=60).topics
    missing = [n for n in names if n not in existing]
    for name in missing:
        create_topic(bootstrap, name, partitions=per_topic, timeout=300)
    if missing:
        producer = Producer(producer_config(bootstrap, compression="lz4", **{"linger.ms": 20}))
        for name in missing:
            for part in range(per_topic):
                for i in range(RECORDS_PER_PARTITION):
                    producer.produce(name, value=b"plan-%d" % i, partition=part)
                producer.poll(0)
        if producer.flush(300):
            raise SystemExit("the producer could not deliver every planning record")
    return missing


def source_options(bootstrap, names):
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": ",".join(names),
            "startingOffsets": "earliest", "endingOffsets": "latest"}


def plan_in_reader(options):
    """(seconds, number of InputPartitions, pickled bytes) of one planning
    call without Spark."""
    from fastkc.spark import options as spark_options
    from fastkc.spark.source import FastkcBatchReader

    started = time.perf_counter()
    reader = FastkcBatchReader(spark_options.parse(options, streaming=False))
    parts = reader.partitions()
    size = sum(len(pickle.dumps(p)) for p in parts)
    return time.perf_counter() - started, len(parts), size


def plan_in_session(spark, fmt, options):
    started = time.perf_counter()
    reader = spark.read.format(fmt)
    for key, value in options.items():
        reader = reader.option(key, value)
    tasks = reader.load().rdd.getNumPartitions()
    return time.perf_counter() - started, tasks


def session(jars):
    from bench_spark import session as bench_session

    # Spark's planner workers import plan_floor from this folder
    os.environ["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p and p != HERE])
    spark = bench_session(jars)
    import plan_floor

    spark.dataSource.register(plan_floor.FloorSource)
    return spark


def plan_floor_in_session(spark, partitions):
    """Spark's share: the same planning call on a source whose partitions()
    costs nothing."""
    started = time.perf_counter()
    tasks = spark.read.format("fastkc_plan_floor").option("partitions", str(partitions)).load().rdd.getNumPartitions()
    return time.perf_counter() - started, tasks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000, help="partitions in total")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-baseline", action="store_true", help="skip format(\"kafka\")")
    parser.add_argument("--no-session", action="store_true", help="only the reader figure (no Spark session)")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"),
                        help="folder for spark_planning.md/.json ('' writes nothing)")
    args = parser.parse_args(argv)
    if args.partitions % args.topics:
        raise SystemExit("--partitions must be a multiple of --topics")
    per_topic = args.partitions // args.topics

    external = os.environ.get("FASTKC_BOOTSTRAP", "").strip()
    data_dir = None
    if external:
        bootstrap = external
    else:
        from fastkc_tools import broker

        data_dir = tempfile.mkdtemp(prefix="fastkc-plan-bench-")
        bootstrap = broker.start(name="plan-bench", data_dir=data_dir, nodes=1, die_with_parent=True).bootstrap_servers
    figures = {"partitions": args.partitions, "topics": args.topics, "runs": args.runs}
    try:
        names = topic_names(args.topics, per_topic)
        began = time.perf_counter()
        created = ensure_topics(bootstrap, names, per_topic)
        if created:
            print("created {0} topics x {1} partitions in {2:.1f} s".format(
                len(created), per_topic, time.perf_counter() - began), flush=True)
        options = source_options(bootstrap, names)
        load_before = os.getloadavg()[0]

        reader_runs = []
        plan_in_reader(options)  # warm-up: imports, the broker's first answers
        for _ in range(args.runs):
            seconds, count, size = plan_in_reader(options)
            if count != args.partitions:
                raise SystemExit("planned {0} partitions, expected {1}".format(count, args.partitions))
            reader_runs.append(seconds)
        figures["reader"] = {"seconds": reader_runs, "pickled_bytes": size}

        if not args.no_session:
            jars = []
            formats = ["fastkc"]
            if not args.no_baseline:
                from bench_spark import baseline_jars

                jars = baseline_jars()
                formats.append("kafka")
            spark = session(jars)
            try:
                for fmt in formats:
                    plan_in_session(spark, fmt, options)  # warm-up: Python planner workers, JIT
                plan_floor_in_session(spark, args.partitions)
                for _ in range(args.runs):
                    for fmt in formats:  # interleaved: load on the machine hits both alike
                        seconds, tasks = plan_in_session(spark, fmt, options)
                        if tasks != args.partitions:
                            raise SystemExit("{0} planned {1} tasks, expected {2}".format(fmt, tasks, args.partitions))
                        figures.setdefault("session", {}).setdefault(fmt, []).append(seconds)
                    seconds, tasks = plan_floor_in_session(spark, args.partitions)
                    if tasks != args.partitions:
                        raise SystemExit("the floor source planned {0} tasks".format(tasks))
                    figures.setdefault("floor", []).append(seconds)
            finally:
                spark.stop()
        figures["load_average"] = [load_before, os.getloadavg()[0]]
    finally:
        if data_dir is not None:
            from fastkc_tools import broker

            broker.stop(data_dir=data_dir)
            shutil.rmtree(data_dir, ignore_errors=True)  # the topics are hundreds of MB

    text = table(figures)
    print()
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "spark_planning.md"), "w") as fh:
            fh.write("# Spark: the driver's planning time\n\nRegenerate: `python benchmarks/spark/bench_planning.py`"
                     "\n\n" + text + "\n")
        with open(os.path.join(args.out, "spark_planning.json"), "w") as fh:
            json.dump(figures, fh, indent=1)
    return figures


def table(figures):
    lines = ["| planning {0:,} partitions ({1} topics) | median s | best s |".format(
        figures["partitions"], figures["topics"]), "|---|---:|---:|"]
    rows = [("fastkc reader: partitions() + pickling each InputPartition", figures["reader"]["seconds"])]
    for fmt, runs in figures.get("session", {}).items():
        rows.append(("format(\"{0}\") in a local[2] session: load() + rdd.getNumPartitions()".format(fmt), runs))
    if "floor" in figures:
        rows.append(("Spark alone: a Python source whose partitions() returns {0:,} ready-made partitions".format(
            figures["partitions"]), figures["floor"]))
    for label, runs in rows:
        lines.append("| {0} | {1:.3f} | {2:.3f} |".format(label, statistics.median(runs), min(runs)))
    lines.append("")
    lines.append("{0} runs each after a warm-up, sources interleaved; every partition holds {1} records; "
                 "InputPartitions pickled one by one: {2:,} B in total; 1-min load average {3:.1f} before, "
                 "{4:.1f} after".format(figures["runs"], RECORDS_PER_PARTITION, figures["reader"]["pickled_bytes"],
                                        *figures["load_average"]))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
