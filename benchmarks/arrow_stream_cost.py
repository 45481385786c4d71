"""What reading a topic through KafkaConsumer.arrow_stream() costs next to
poll_arrow(): the same records (Kafka's ProducerPerformance sample, 8
partitions, lz4) read to the end by a poll_arrow() loop, by
pyarrow.RecordBatchReader.from_stream(stream), by polars.DataFrame(stream)
and by duckdb over the stream, rounds interleaved (the order rotated each
round), medians printed with the load average. Every way touches each
record's key and value the way the end-to-end runners do
(fastkc_tools/bench/common.py, "Equal work": the sum of their lengths, from the
offsets buffers for Arrow batches, with polars' and duckdb's own length
functions), and the sum must be the produced bytes (null keys, 100-byte
values). A figure for the report, asserted nowhere.

    python3 benchmarks/arrow_stream_cost.py --bootstrap HOST:PORT [--records N] [--rounds R] [--zero-copy]
"""
import argparse
import os
import statistics
import time


def _consumer(bootstrap, topic, **configs):
    from fastkc import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **configs)
    partitions = sorted(consumer.partitions_for_topic(topic))
    consumer.assign([TopicPartition(topic, p) for p in partitions])
    consumer.seek_to_beginning()
    return consumer


def poll_arrow_loop(consumer, records):
    from fastkc_tools.bench.common import touch_arrow

    rows = touched = 0
    while rows < records:
        batch = consumer.poll_arrow(timeout_ms=1000)
        rows += batch.num_rows
        touched += touch_arrow(batch)
    return rows, touched


def from_stream(consumer, records):
    import pyarrow as pa

    from fastkc_tools.bench.common import touch_arrow

    rows = touched = 0
    for batch in pa.RecordBatchReader.from_stream(consumer.arrow_stream()):
        rows += batch.num_rows
        touched += touch_arrow(batch)
    return rows, touched


def polars_frame(consumer, records):
    import polars

    frame = polars.DataFrame(consumer.arrow_stream())
    touched = frame.select((polars.col("key").bin.size().fill_null(0)
                            + polars.col("value").bin.size().fill_null(0)).sum()).item()
    return frame.height, touched


def duckdb_sum(consumer, records):
    import duckdb

    stream = consumer.arrow_stream()  # noqa: F841 (duckdb finds it by name)
    (rows, touched), = duckdb.sql("select count(*), coalesce(sum(octet_length(key)), 0) "
                                  "+ coalesce(sum(octet_length(value)), 0) from stream").fetchall()
    return rows, touched


WAYS = {"poll_arrow loop": poll_arrow_loop, "RecordBatchReader.from_stream": from_stream,
        "polars.DataFrame(stream)": polars_frame, "duckdb count/sum(octet_length) over stream": duckdb_sum}
RECORD_SIZE = 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="fastkc-arrow-stream-sample")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--zero-copy", action="store_true",
                        help="arrow_zero_copy=True: key and value as binary_view columns (what polars keeps)")
    args = parser.parse_args()
    from fastkc_tools.sample_run import ensure_sample

    ensure_sample(args.bootstrap, args.topic, records=args.records, record_size=RECORD_SIZE, partitions=8,
                  compression="lz4")
    times = {name: [] for name in WAYS}
    for round_ in range(args.rounds):
        names = list(WAYS)
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            consumer = _consumer(args.bootstrap, args.topic, arrow_zero_copy=args.zero_copy)
            try:
                started = time.perf_counter()
                rows, touched = WAYS[name](consumer, args.records)
                times[name].append(time.perf_counter() - started)
            finally:
                consumer.close()
            if rows != args.records or touched != args.records * RECORD_SIZE:
                raise SystemExit("{0}: {1} rows, {2} key + value bytes; produced {3} records, {4} bytes".format(
                    name, rows, touched, args.records, args.records * RECORD_SIZE))
        print("round {0}: {1} (load {2})".format(round_ + 1, ", ".join(
            "{0} {1:.2f}s".format(n, t[-1]) for n, t in times.items()), os.getloadavg()))
    for name, samples in times.items():
        median = statistics.median(samples)
        print("{0:32s} median {1:.2f}s  {2:.2f} M records/s".format(name, median, args.records / median / 1e6))
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
