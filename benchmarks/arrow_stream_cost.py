"""What reading a topic through KafkaConsumer.arrow_stream() costs next to
poll_arrow(): the same records (Kafka's ProducerPerformance sample, 8
partitions, lz4) read to the end by a poll_arrow() loop, by
pyarrow.RecordBatchReader.from_stream(stream), by polars.DataFrame(stream)
and by duckdb (count(*) and sum(octet_length(value)) over the stream), rounds
interleaved, medians printed with the load average. A figure for the
report, asserted nowhere.

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
    rows = 0
    while rows < records:
        rows += consumer.poll_arrow(timeout_ms=1000).num_rows
    return rows


def from_stream(consumer, records):
    import pyarrow as pa

    return sum(b.num_rows for b in pa.RecordBatchReader.from_stream(consumer.arrow_stream()))


def polars_frame(consumer, records):
    import polars

    return polars.DataFrame(consumer.arrow_stream()).height


def duckdb_sum(consumer, records):
    import duckdb

    stream = consumer.arrow_stream()  # noqa: F841 (duckdb finds it by name)
    (rows, _), = duckdb.sql("select count(*), sum(octet_length(value)) from stream").fetchall()
    return rows


WAYS = {"poll_arrow loop": poll_arrow_loop, "RecordBatchReader.from_stream": from_stream,
        "polars.DataFrame(stream)": polars_frame, "duckdb count/sum over stream": duckdb_sum}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="fastkc-arrow-stream-sample")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--zero-copy", action="store_true",
                        help="arrow_zero_copy=True: key and value as binary_view columns (what polars keeps)")
    args = parser.parse_args()
    from fastkc.sample_run import ensure_sample

    ensure_sample(args.bootstrap, args.topic, records=args.records, record_size=100, partitions=8,
                  compression="lz4")
    times = {name: [] for name in WAYS}
    for round_ in range(args.rounds):
        for name, way in WAYS.items():
            consumer = _consumer(args.bootstrap, args.topic, arrow_zero_copy=args.zero_copy)
            try:
                started = time.perf_counter()
                rows = way(consumer, args.records)
                times[name].append(time.perf_counter() - started)
            finally:
                consumer.close()
            assert rows == args.records, (name, rows)
        print("round {0}: {1} (load {2})".format(round_ + 1, ", ".join(
            "{0} {1:.2f}s".format(n, t[-1]) for n, t in times.items()), os.getloadavg()))
    for name, samples in times.items():
        median = statistics.median(samples)
        print("{0:32s} median {1:.2f}s  {2:.2f} M records/s".format(name, median, args.records / median / 1e6))
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
