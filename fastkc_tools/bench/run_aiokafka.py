"""aiokafka AIOKafkaConsumer: assign every partition, seek to the beginning,
getmany() until the end offsets (check_crcs=True, read_uncommitted, default
fetch sizes, no max_records: getmany hands over whatever is buffered). The
same ticker task as fastkc.aio's runner measures how long the loop was held;
both runs are common.drain_aiokafka_api.
"""
import asyncio
from collections.abc import Sequence

from fastkc_tools.bench.common import drain_aiokafka_api, finish, parse_args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import aiokafka
    from aiokafka.structs import TopicPartition

    records, touched, clock, meter = asyncio.run(drain_aiokafka_api(aiokafka.AIOKafkaConsumer, TopicPartition, args))
    finish("aiokafka", args, records, clock.seconds, touched_bytes=touched, clock=clock, cpu_seconds=clock.cpu_seconds,
           version=aiokafka.__version__, longest_loop_stall_ms=round(meter.longest * 1000.0, 2),
           longest_loop_hold_cpu_ms=round(meter.longest_cpu * 1000.0, 2))


if __name__ == "__main__":
    main()
