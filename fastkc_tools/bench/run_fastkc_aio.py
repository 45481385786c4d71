"""fastkc.aio AIOKafkaConsumer: assign every partition, seek to the beginning,
getmany() until the end offsets, as the aiokafka runner does (check_crcs=True,
read_uncommitted, default fetch sizes, no max_records: getmany hands over
whatever is buffered). A ticker task on the same loop (1 ms sleeps) records
the longest time the loop was held: longest_loop_stall_ms in the result.
"""
import argparse
import asyncio
import sys
from collections.abc import Sequence

from fastkc_tools.bench.common import (
    KAFKA_PYTHON_STYLE_CONFIG,
    Clock,
    LoopStallMeter,
    drain_async,
    finish,
    parse_args,
    require_compiled_core,
    touch_polled,
)


async def consume(args: argparse.Namespace) -> tuple[int, int, Clock, LoopStallMeter]:
    from fastkc.aio import AIOKafkaConsumer, TopicPartition

    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, **KAFKA_PYTHON_STYLE_CONFIG)
    await consumer.start()
    meter = LoopStallMeter()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        clock = Clock(args.timeout)

        async def positions() -> dict[int, int]:
            return {tp.partition: await consumer.position(tp) for tp in tps}

        async def poll_count() -> tuple[int, int]:
            return touch_polled(await consumer.getmany(timeout_ms=1000))

        meter.start()
        records, touched = await drain_async(poll_count, positions, args, clock)
        await meter.stop()
        return records, touched, clock, meter
    finally:
        await meter.stop()
        await consumer.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import fastkc

    require_compiled_core()
    records, touched, clock, meter = asyncio.run(consume(args))
    finish("fastkc.aio getmany", args, records, clock.seconds, touched_bytes=touched, clock=clock,
           cpu_seconds=clock.cpu_seconds,
           api="fastkc.aio.AIOKafkaConsumer.getmany", backend=fastkc.backend,
           longest_loop_stall_ms=round(meter.longest * 1000.0, 2),
           longest_loop_hold_cpu_ms=round(meter.longest_cpu * 1000.0, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
