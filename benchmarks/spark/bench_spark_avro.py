"""Rows per second of Schema-Registry Avro values read into typed Spark
columns, one topic, two ways in one session:

- format("fastkc") with valueFormat=avro: the value column's type planned
  from the subject's latest schema (the registry read at load()), each
  record decoded in C straight into Arrow struct columns; `.select("value.*")`;
- format("kafka") + from_avro: Spark's own JVM source (spark-sql-kafka-0-10)
  and spark-avro's from_avro over the value with its 5-byte Confluent frame
  (magic byte, schema id) cut by `substring(value, 6, length(value) - 5)`,
  the writer schema given as JSON; `.select("v.*")`.

The values are benchmarks/registry_events.py's ~15-field page events
(benchmarks/avro_decode.py's EVENT: strings, longs, a nested record, a
nullable union, an array, a map, a timestamp-millis, a decimal, an enum),
written by confluent-kafka's AvroSerializer against a real Schema Registry
(benchmarks/registry_poll.py's write_topic), 8 partitions, lz4.

Equal work: each timed run is `df.write.format("noop").mode("overwrite").save()`
of every field of every record (both plans end in a projection of the
value's fields, so every field is materialized in every row). Before the
runs, untimed and once per source (also the warm-up), both must give the
same column types and the same aggregates: the row count, the sum of
`sequence`, the non-null `referrer`s, the length of the strings, and the
sum of a CRC-32 of each row's JSON (every field of every record).

    python benchmarks/spark/bench_spark_avro.py                     # 2M events, local[2], 5 runs
    python benchmarks/spark/bench_spark_avro.py --quick --out /tmp/x  # 20k events, one run: smoke run
    python benchmarks/spark/bench_spark_avro.py --clusters local[2],standalone-2
    python benchmarks/spark/bench_spark_avro.py --bootstrap HOST:PORT --registry URL --topic NAME

Without --bootstrap (or FASTKC_BOOTSTRAP) a single-node broker is started
and stopped at the end, without --registry an Apicurio registry
(fastkc_tools/broker/registry.py). --topic names the topic: one that already
holds exactly --records events is read as it is (its records' schema id
must be its subject's latest in --registry: the registry that wrote them),
a missing one is written. Jars: bench_spark.py's Kafka source (pom.xml)
and spark-avro (pom-avro.xml), resolved with mvn into ~/.cache/fastkc/.
A full run writes benchmarks/results/spark-avro.md and .json (--out
elsewhere); --quick writes only with --out.
"""
import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_spark import (  # noqa: E402
    BASELINE_VERSION,
    SHAPES,
    baseline_jars,
    bench_broker,
    interleaved,
    maven_jars,
    rates,
    shape_session,
)

from benchmarks.avro_decode import EVENT  # noqa: E402

SOURCES = ("kafka", "fastkc")
LABELS = {"kafka": 'format("kafka") + from_avro', "fastkc": 'format("fastkc"), valueFormat=avro'}
WRITER_SCHEMA = json.dumps(EVENT)
# the 5-byte Confluent frame (magic 0, 4-byte schema id) cut before from_avro
UNFRAMED = "substring(value, 6, length(value) - 5)"


def avro_jars(version=BASELINE_VERSION):
    """spark-avro (from_avro) and what it needs that the pyspark wheel lacks."""
    return maven_jars("pom-avro.xml", "spark-avro", "spark-avro_*.jar", version)


def events(spark, source, bootstrap, topic, registry_url):
    """The topic's events as a DataFrame of EVENT's fields, by `source`."""
    from pyspark.sql import functions as F

    reader = (spark.read.format(source).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", "latest"))
    if source == "fastkc":
        return (reader.option("valueFormat", "avro").option("schema.registry.url", registry_url).load()
                .select("value.*"))
    from pyspark.sql.avro.functions import from_avro

    return reader.load().select(from_avro(F.expr(UNFRAMED), WRITER_SCHEMA).alias("v")).select("v.*")


def aggregates(df):
    """What both sources must agree on (a dict): the row count, the sum of
    `sequence` (a long), the non-null `referrer`s (the nullable union), the
    characters of event_id and url, and the sum of a CRC-32 of each row's
    JSON, which covers every field of every record."""
    from pyspark.sql import functions as F

    return df.agg(F.count(F.lit(1)).alias("rows"), F.sum("sequence").alias("sequence_sum"),
                  F.count("referrer").alias("referrers"),
                  F.sum(F.length("event_id") + F.length("url")).alias("string_chars"),
                  F.sum(F.crc32(F.to_json(F.struct(*df.columns)).cast("binary"))).alias("row_json_crc32_sum"),
                  ).first().asDict()


def check_equal_output(frames, records):
    """Untimed, once (also the warm-up): every DataFrame of `frames`
    ({source: df}) has the same column types and aggregates(), with
    `records` rows and events 0 .. records-1 (their sequence sum and
    referrers, every third event's); the aggregates and the column types."""
    types = {source: df.schema.simpleString() for source, df in frames.items()}
    if len(set(types.values())) != 1:
        raise SystemExit("the sources' columns differ: {0}".format(types))
    found = {source: aggregates(df) for source, df in frames.items()}
    expected = {"rows": records, "sequence_sum": records * (records - 1) // 2, "referrers": (records + 2) // 3}
    for source, figures in found.items():
        wrong = {k: (figures[k], v) for k, v in expected.items() if figures[k] != v}
        if wrong:
            raise SystemExit("{0} read other events than written: (read, written) {1}".format(source, wrong))
    if len({json.dumps(f, sort_keys=True, default=str) for f in found.values()}) != 1:
        raise SystemExit("the sources' outputs differ: {0}".format(found))
    return dict(next(iter(found.values())), columns=next(iter(types.values())))


def write_noop(df):
    """Seconds to compute every row of `df` into Spark's noop sink."""
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def measure_in_session(spark, sources, bootstrap, topic, registry_url, records, runs):
    """({source: [seconds per run]}, the checked aggregates): the output
    check first, then the runs, the sources interleaved, the one that goes
    first rotating run by run."""
    frames = {source: events(spark, source, bootstrap, topic, registry_url) for source in sources}
    clock = time.monotonic()
    checked = check_equal_output(frames, records)
    print("output checked equal ({0:.0f} s)".format(time.monotonic() - clock), flush=True)
    return interleaved(sources, runs, lambda source: write_noop(frames[source])), checked


def topic_events(bootstrap, topic):
    """(records, the first record's schema id) of an existing topic, None when it does not exist."""
    from fastkc import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            return None
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        count = sum(end[tp] - begin[tp] for tp in tps)
        first = next((tp for tp in tps if end[tp] > begin[tp]), None)
        schema_id = None
        if first is not None:
            consumer.assign([first])
            consumer.seek(first, begin[first])
            for _ in range(30):
                batch = consumer.poll(timeout_ms=1000, max_records=1).get(first)
                if batch:
                    schema_id = int.from_bytes(batch[0].value[1:5], "big")
                    break
        return count, schema_id
    finally:
        consumer.close()


def ensure_topic(bootstrap, registry_url, records, topic=None):
    """The topic to read: `topic` as it is when it already holds `records`
    events framed with the id of its subject's latest schema, else written here
    (registry_poll.write_topic; a fresh name without `topic`)."""
    from benchmarks.registry_poll import FORMATS, write_topic

    if topic:
        found = topic_events(bootstrap, topic)
        if found is not None:
            count, schema_id = found
            if count != records:
                raise SystemExit("topic {0} holds {1} records, not --records {2}".format(topic, count, records))
            from fastkc.schema_registry import SchemaRegistryClient

            with SchemaRegistryClient({"url": registry_url}) as client:
                try:
                    latest = client.get_latest_version(topic + "-value").schema_id
                except Exception as exc:  # the subject is not in this registry
                    latest = "nothing ({0})".format(exc)
            if latest != schema_id:
                raise SystemExit("topic {0}'s records name schema id {1}, the registry's {0}-value is {2}: "
                                 "pass --registry with the registry that wrote them".format(topic, schema_id, latest))
            print("reading topic {0} as it is: {1} events".format(topic, count), flush=True)
            return topic
    return write_topic(bootstrap, registry_url, records, FORMATS["avro"](), topic=topic)


def summarize(measured, records, runs, load, checked):
    import pyspark

    from fastkc_tools.bench.report import commit, machine

    head = commit()
    summary = {"records": records, "partitions": 8, "runs": runs, "load": list(load),
               "commit": (head["commit"] or "unknown")[:9], "dirty": head["dirty"], "machine": machine(),
               "pyspark": pyspark.__version__, "baseline": BASELINE_VERSION, "checked": checked,
               "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "shapes": {}}
    for shape, results in measured.items():
        row = {source: rates(seconds, records) for source, seconds in results.items()}
        both = all(s in row for s in SOURCES)
        row["ratio"] = row["fastkc"]["rows_per_second"] / row["kafka"]["rows_per_second"] if both else None
        summary["shapes"][shape] = row
    return summary


def table(summary, quick=False):
    lines = ["| cluster | {0} rows/s (slowest–fastest) | {1} rows/s (slowest–fastest) | fastkc / kafka |".format(
        LABELS["kafka"], LABELS["fastkc"]), "|---|---:|---:|---:|"]

    def rate(row, source):
        if source not in row:
            return "not measured"
        r = row[source]
        return "{0:,.0f} ({1:,.0f}–{2:,.0f})".format(r["rows_per_second"], r["slowest_rows_per_second"],
                                                     r["best_rows_per_second"])

    for shape, row in summary["shapes"].items():
        ratio = "{0:.2f}x".format(row["ratio"]) if row["ratio"] is not None else "-"
        lines.append("| {0} | {1} | {2} | {3} |".format(shape, rate(row, "kafka"), rate(row, "fastkc"), ratio))
    m = summary["machine"]
    lines += ["", ("{quick}{records:,} Avro page events (registry_events.py, confluent-kafka's AvroSerializer), "
                   "{partitions} partitions, lz4; median of {runs} runs per source after an untimed check that both "
                   "give the same columns and aggregates, sources interleaved; rows/s = records / seconds of "
                   "df.write.format(\"noop\") of every field; standalone workers have 1 core each. "
                   "pyspark {pyspark}, spark-sql-kafka-0-10 and spark-avro {baseline}; commit {commit}{changes}, "
                   "{cores} cores ({cpu}); 1-min load average {load[0]:.1f} before, {load[1]:.1f} after; {date}.")
              .format(quick="QUICK mode (tiny, one run: not a figure). " if quick else "", cores=m["cores"],
                      cpu=m["cpu"], changes=" (uncommitted changes)" if summary["dirty"] else "", **summary)]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clusters", default="local[2]",
                        help="comma-separated among {0} (default local[2])".format(", ".join(SHAPES)))
    parser.add_argument("--bootstrap", default=os.environ.get("FASTKC_BOOTSTRAP", "").strip() or None,
                        help="an existing broker (default FASTKC_BOOTSTRAP; else one is started here)")
    parser.add_argument("--registry", help="a running Schema Registry's URL (else Apicurio is started here)")
    parser.add_argument("--topic", help="the topic: read as it is when it holds --records events, else written")
    parser.add_argument("--quick", action="store_true", help="20k events, local[2] only, one run each")
    parser.add_argument("--out", default=None,
                        help="folder for spark-avro.md/.json (default benchmarks/results; --quick: none)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.runs, args.clusters = 20_000, 1, "local[2]"
    shapes = [s.strip() for s in args.clusters.split(",") if s.strip()]
    if not shapes or any(s not in SHAPES for s in shapes):
        raise SystemExit("--clusters: choose among {0}".format(", ".join(SHAPES)))
    out = args.out if args.out is not None or args.quick else os.path.join(ROOT, "benchmarks", "results")

    from fastkc_tools.broker import registry as apicurio

    jars = baseline_jars() + avro_jars()
    load_before = os.getloadavg()[0]
    measured, checked = {}, None
    with bench_broker(args.bootstrap) as bootstrap:
        registry_dir = None if args.registry else tempfile.mkdtemp(prefix="fastkc-spark-avro-registry-")
        started = None
        try:
            started = apicurio.start(registry_dir, die_with_parent=True) if registry_dir else None
            registry_url = args.registry or started.url
            clock = time.monotonic()
            topic = ensure_topic(bootstrap, registry_url, args.records, args.topic)
            print("topic {0}: {1} events, 8 partitions, lz4 ({2:.0f} s)".format(topic, args.records,
                                                                                time.monotonic() - clock), flush=True)
            for shape in shapes:
                with shape_session(shape, jars) as spark:
                    measured[shape], checked = measure_in_session(spark, SOURCES, bootstrap, topic, registry_url,
                                                                  args.records, args.runs)
                print("{0}: both sources gave {1}".format(shape, checked), flush=True)
                print("{0}: {1}".format(shape, {s: [round(t, 2) for t in ts] for s, ts in measured[shape].items()}),
                      flush=True)
        finally:
            if started is not None:
                apicurio.stop(started)
            if registry_dir is not None:
                shutil.rmtree(registry_dir, ignore_errors=True)

    summary = summarize(measured, args.records, args.runs, (load_before, os.getloadavg()[0]), checked)
    text = table(summary, args.quick)
    print()
    print(text)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "spark-avro.md"), "w") as fh:
            fh.write("# Spark, Schema-Registry Avro: format(\"fastkc\") valueFormat=avro vs format(\"kafka\") + "
                     "from_avro\n\nRegenerate: `python benchmarks/spark/bench_spark_avro.py`\n\n" + text + "\n")
        with open(os.path.join(out, "spark-avro.json"), "w") as fh:
            json.dump(summary, fh, indent=1, default=str)
    return summary


if __name__ == "__main__":
    main()
