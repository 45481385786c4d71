"""fastkc: assign every partition, seek to the beginning, then poll()
(mode "records": kafka-python-style ConsumerRecords) or poll_arrow()
(mode "arrow": one pyarrow.RecordBatch per call) until the end offsets, with
the same configs as the kafka-python runner.

Until fastkc.KafkaConsumer exists, mode "records" measures the interim fetch
loop fastkc.sample_run.consume_all (same protocol codec, Fetch parser and
record decoder, no consumer around them) and says so in its result; mode
"arrow" then exits with UNAVAILABLE, which the driver reports as such.
"""
import sys

from benchmarks.e2e.common import Clock, drain, finish, parse_args

UNAVAILABLE = 3  # exit status: this variant cannot run with the fastkc checked out


def main(argv=None):
    args = parse_args(__doc__.split("\n\n")[0], argv)
    mode = args.mode or "records"
    if mode not in ("records", "arrow"):
        raise SystemExit("unknown fastkc mode {0!r} (records or arrow)".format(mode))
    import fastkc

    if fastkc.backend != "c":
        # Benchmarking the pure-Python twin by accident would be a silent slowdown.
        raise SystemExit("fastkc backend is {0!r}, not the compiled core: build it first "
                         "(python setup.py build_ext --inplace)".format(fastkc.backend))
    consumer_cls = getattr(fastkc, "KafkaConsumer", None)
    if consumer_cls is None:
        if mode == "arrow":
            print("fastkc.KafkaConsumer (poll_arrow) is not in this checkout", file=sys.stderr)
            return UNAVAILABLE
        return interim(args)
    from fastkc.structs import TopicPartition

    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer = consumer_cls(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        check_crcs=True,
        isolation_level="read_uncommitted",
    )
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        clock = Clock(args.timeout)
        if mode == "records":
            def poll_count():
                return sum(len(batch) for batch in consumer.poll(timeout_ms=1000).values())
        else:
            def poll_count():
                return consumer.poll_arrow(timeout_ms=1000).num_rows

        def positions():
            return {tp.partition: consumer.position(tp) for tp in tps}

        records = drain(poll_count, positions, args, clock)
    finally:
        consumer.close()
    finish("fastkc " + mode, args, records, clock.seconds, api="KafkaConsumer." +
           ("poll" if mode == "records" else "poll_arrow"), backend=fastkc.backend)
    return 0


def interim(args):
    import fastkc
    from fastkc import sample_run

    # consume_all times itself from its first Fetch to its last response, which is
    # "first poll to last record" for a loop with no consumer around it.
    result = sample_run.consume_all(args.bootstrap, args.topic)
    finish("fastkc records", args, result.records, result.seconds,
           api="interim fetch loop (fastkc.sample_run.consume_all)", backend=fastkc.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
