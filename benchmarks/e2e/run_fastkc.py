"""fastkc: assign every partition, seek to the beginning, then poll()
(mode "records": kafka-python-style ConsumerRecords, all decoding on the
polling thread, decode_threads=0; mode "records-threaded": the same with the
decode worker, decode_threads=1) or poll_arrow() (mode "arrow": one
pyarrow.RecordBatch per call) until the end offsets, with the same configs as
the kafka-python runner.
"""
import sys

from benchmarks.e2e.common import KAFKA_PYTHON_STYLE_CONFIG, Clock, drain, finish, parse_args


def main(argv=None):
    args = parse_args(__doc__.split("\n\n")[0], argv)
    mode = args.mode or "records"
    if mode not in ("records", "records-threaded", "arrow"):
        raise SystemExit("unknown fastkc mode {0!r} (records, records-threaded or arrow)".format(mode))
    import fastkc

    if fastkc.backend != "c":
        # Benchmarking the pure-Python twin by accident would be a silent slowdown.
        raise SystemExit("fastkc backend is {0!r}, not the compiled core: build it first "
                         "(python setup.py build_ext --inplace)".format(fastkc.backend))
    from fastkc import KafkaConsumer
    from fastkc.structs import TopicPartition

    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        decode_threads=1 if mode == "records-threaded" else 0,
        **KAFKA_PYTHON_STYLE_CONFIG,
    )
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        clock = Clock(args.timeout)
        if mode in ("records", "records-threaded"):
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
    finish("fastkc " + mode, args, records, clock.seconds, cpu_seconds=clock.cpu_seconds,
           api="KafkaConsumer." + ("poll_arrow" if mode == "arrow" else "poll"), backend=fastkc.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
