"""fastkc: assign every partition, seek to the beginning, then poll()
(mode "records": kafka-python-style ConsumerRecords, all decoding on the
polling thread, decode_threads=0; mode "records-threaded": the same with the
decode worker, decode_threads=1) or poll_arrow() (mode "arrow": one
pyarrow.RecordBatch per call) until the end offsets, with the same configs as
the kafka-python runner. Mode "ceiling" reads the same way through
fastkc_tools.bench_ceiling.CeilingReader: the consumer's network path, every batch
CRC-checked, nothing decoded.
"""
import importlib
import sys
from collections.abc import Sequence

from fastkc_tools.bench.common import (
    KAFKA_PYTHON_STYLE_CONFIG,
    Clock,
    drain,
    finish,
    parse_args,
    require_compiled_core,
    runner_mode,
    touch_arrow,
    touch_polled,
)

MODES = ("records", "records-threaded", "arrow", "ceiling")
API = {"records": "KafkaConsumer.poll", "records-threaded": "KafkaConsumer.poll",
       "arrow": "KafkaConsumer.poll_arrow",
       "ceiling": "fastkc_tools.bench_ceiling.CeilingReader.poll_raw"}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    mode = runner_mode(args, MODES, "fastkc")
    import fastkc

    require_compiled_core()
    from fastkc import KafkaConsumer
    from fastkc.structs import TopicPartition

    if mode == "arrow":
        # poll_arrow() imports pyarrow on its first call; an Arrow application
        # has it imported already, so that is set-up, not time to first record.
        importlib.import_module("pyarrow")

    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    reader = None
    if mode == "ceiling":
        from fastkc_tools.bench_ceiling import CeilingReader

        reader = CeilingReader(bootstrap_servers=args.bootstrap, **KAFKA_PYTHON_STYLE_CONFIG)
        consumer = reader.consumer
    else:
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
            def poll_count() -> tuple[int, int]:
                return touch_polled(consumer.poll(timeout_ms=1000))
        elif mode == "arrow":
            def poll_count() -> tuple[int, int]:
                batch = consumer.poll_arrow(timeout_ms=1000)
                rows: int = batch.num_rows
                return rows, touch_arrow(batch) if rows else 0
        else:
            ceiling = reader
            assert ceiling is not None  # made above for this mode

            def poll_count() -> tuple[int, int]:
                checked: int = ceiling.poll_raw(timeout_ms=1000)
                return checked, 0  # nothing decoded: nothing to touch (common.py, "Equal work")

        def positions() -> dict[int, int]:
            return {tp.partition: consumer.position(tp) for tp in tps}

        records, touched = drain(poll_count, positions, args, clock)
    finally:
        consumer.close()
    finish("fastkc " + mode, args, records, clock.seconds, touched_bytes=None if mode == "ceiling" else touched,
           clock=clock, cpu_seconds=clock.cpu_seconds,
           api=API[mode], backend=fastkc.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
