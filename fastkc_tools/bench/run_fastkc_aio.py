"""fastkc.aio AIOKafkaConsumer: assign every partition, seek to the beginning,
getmany() until the end offsets, as the aiokafka runner does (check_crcs=True,
read_uncommitted, default fetch sizes, no max_records: getmany hands over
whatever is buffered). A ticker task on the same loop (1 ms sleeps) records
the longest time the loop was held: longest_loop_stall_ms in the result.
"""
import asyncio
import sys
from collections.abc import Sequence

from fastkc_tools.bench.common import drain_aiokafka_api, finish, parse_args, require_compiled_core


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import fastkc
    from fastkc.aio import AIOKafkaConsumer, TopicPartition

    require_compiled_core()
    records, touched, clock, meter = asyncio.run(drain_aiokafka_api(AIOKafkaConsumer, TopicPartition, args))
    finish("fastkc.aio getmany", args, records, clock.seconds, touched_bytes=touched, clock=clock,
           cpu_seconds=clock.cpu_seconds,
           api="fastkc.aio.AIOKafkaConsumer.getmany", backend=fastkc.backend,
           longest_loop_stall_ms=round(meter.longest * 1000.0, 2),
           longest_loop_hold_cpu_ms=round(meter.longest_cpu * 1000.0, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
