"""fastkc's KafkaShareConsumer: a fresh share group reading the whole topic
(mode "records": poll() with implicit acknowledgement, each poll accepting
what the previous one returned; mode "arrow": poll_arrow() in explicit mode,
each batch accepted whole with acknowledge_batch(batch, ACCEPT) before the
next poll; its partition and offset columns are kept and counted into the
ledger once the clock has stopped, as a columnar application would not walk
them row by row).

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

    pa: Any = None
    if mode == "arrow":
        # An Arrow application has pyarrow imported already: set-up, not time to first record.
        pa = importlib.import_module("pyarrow")

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
            columns: list[Any] = []

            def poll_count() -> int:
                batch = consumer.poll_arrow(timeout_ms=1000)
                rows: int = batch.num_rows
                if rows:
                    # copies: a column slice would keep the whole fetch's buffers alive
                    columns.append((batch.column("partition").to_numpy().copy(),
                                    batch.column("offset").to_numpy().copy()))
                    consumer.acknowledge_batch(batch, accept)
                return rows

            def settle() -> None:
                table = pa.table({"partition": pa.chunked_array([p for p, _ in columns], pa.int32()),
                                  "offset": pa.chunked_array([o for _, o in columns], pa.int64())})
                columns.clear()
                for row in table.group_by("partition").aggregate([("offset", "count"), ("offset", "sum")]).to_pylist():
                    ledger.add(row["partition"], row["offset_count"], row["offset_sum"])

        records = drain_share(poll_count, ledger, args, clock, settle if mode == "arrow" else None)
    finally:
        consumer.close()
    finish("share fastkc " + mode, args, records, clock.seconds, clock=clock, cpu_seconds=clock.cpu_seconds,
           api=API[mode], backend=fastkc.backend,
           acknowledgement="explicit" if mode == "arrow" else "implicit", group=group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
