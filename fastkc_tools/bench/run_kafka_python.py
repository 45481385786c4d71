"""kafka-python 3.x KafkaConsumer: assign every partition, seek to the
beginning, poll() until the end offsets. Its defaults are the ones the other
runners copy (check_crcs=True, read_uncommitted, 50 MiB / 1 MiB fetch sizes,
500 records per poll); the crc32c package gives it the C checksum.
"""
from collections.abc import Sequence

from fastkc_tools.bench.common import KAFKA_PYTHON_STYLE_CONFIG, Clock, drain, finish, parse_args, touch_polled


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    from kafka import KafkaConsumer, TopicPartition
    from kafka.record import util

    # A silent pure-Python CRC fallback would make this anchor look slower than it is.
    crc = "{0}.{1}".format(getattr(util._crc32c, "__module__", "?"), getattr(util._crc32c, "__name__", "?"))
    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        **KAFKA_PYTHON_STYLE_CONFIG,
    )
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        clock = Clock(args.timeout)

        def poll_count() -> tuple[int, int]:
            return touch_polled(consumer.poll(timeout_ms=1000))

        def positions() -> dict[int, int]:
            return {tp.partition: consumer.position(tp) for tp in tps}

        records, touched = drain(poll_count, positions, args, clock)
    finally:
        consumer.close()
    import kafka

    finish("kafka-python", args, records, clock.seconds, touched_bytes=touched, clock=clock,
           cpu_seconds=clock.cpu_seconds,
           version=kafka.__version__, crc32c=crc)


if __name__ == "__main__":
    main()
