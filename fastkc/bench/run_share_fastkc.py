"""fastkc's KafkaShareConsumer: a fresh share group reading the whole topic
(mode "records": poll() with implicit acknowledgement, each poll accepting
what the previous one returned; mode "arrow": poll_arrow() in explicit mode,
each batch accepted whole with acknowledge_batch(batch, ACCEPT) before the
next poll).

Everything else is the client's default, as for the other rows. The group
starts at the earliest offsets (fastkc/bench/share_group.py); the join
happens in the first poll, so it is in the time to first record, not in the
steady-state window.
"""
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from fastkc.bench.common import Clock, finish, parse_args, require_compiled_core, runner_mode
from fastkc.bench.share_group import ShareLedger, drain_share, fresh_share_group

MODES = ("records", "arrow")
API = {"records": "KafkaShareConsumer.poll (implicit acknowledgement)",
       "arrow": "KafkaShareConsumer.poll_arrow + acknowledge_batch(ACCEPT)"}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    mode = runner_mode(args, MODES, "fastkc share")
    import fastkc

    require_compiled_core()
    from fastkc import AcknowledgeType, KafkaShareConsumer

    pc: Any = None
    if mode == "arrow":
        # An Arrow application has pyarrow imported already: set-up, not time to first record.
        pc = importlib.import_module("pyarrow.compute")

    group = fresh_share_group(args.bootstrap, "fastkc-bench-share-" + mode)
    consumer = KafkaShareConsumer(
        args.topic, bootstrap_servers=args.bootstrap, group_id=group,
        share_acknowledgement_mode="explicit" if mode == "arrow" else "implicit")
    ledger = ShareLedger()
    try:
        clock = Clock(args.timeout)
        if mode == "records":
            def poll_count() -> int:
                delivered = 0
                for tp, records in consumer.poll(timeout_ms=1000).items():
                    ledger.add(tp.partition, len(records), sum(r.offset for r in records))
                    delivered += len(records)
                return delivered
        else:
            accept = AcknowledgeType.ACCEPT

            def poll_count() -> int:
                batch = consumer.poll_arrow(timeout_ms=1000)
                rows: int = batch.num_rows
                if rows:
                    partitions = batch.column("partition")
                    offsets = batch.column("offset")
                    for partition in pc.unique(partitions).to_pylist():
                        mine = pc.equal(partitions, partition)
                        ledger.add(partition, pc.sum(mine.cast("int64")).as_py(),
                                   pc.sum(pc.filter(offsets, mine)).as_py())
                    consumer.acknowledge_batch(batch, accept)
                return rows

        records = drain_share(poll_count, ledger, args, clock)
    finally:
        consumer.close()
    finish("share fastkc " + mode, args, records, clock.seconds, clock=clock, cpu_seconds=clock.cpu_seconds,
           api=API[mode], backend=fastkc.backend,
           acknowledgement="explicit" if mode == "arrow" else "implicit", group=group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
