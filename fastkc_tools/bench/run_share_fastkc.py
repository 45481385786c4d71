"""fastkc's KafkaShareConsumer: a fresh share group reading the whole topic
(mode "records": poll() with implicit acknowledgement, each poll accepting
what the previous one returned; mode "arrow": poll_arrow() in explicit mode,
each batch accepted whole with acknowledge_batch(batch, ACCEPT) before the
next poll). Both touch every record's key and value in the window and enter
the offsets into the ledger in Clock.untimed(), as the confluent-kafka runner
does (common.py, "Equal work").

Everything else is the client's default, as for the other rows. The group
starts at the earliest offsets (fastkc_tools/bench/share_group.py); the join
happens in the first poll, so it is in the time to first record, not in the
steady-state window.
"""
import importlib
import sys
from collections.abc import Sequence

from fastkc_tools.bench.common import (
    Clock,
    finish,
    parse_args,
    require_compiled_core,
    runner_mode,
    touch_arrow,
    touch_polled,
)
from fastkc_tools.bench.share_group import ShareLedger, drain_share, fresh_share_group

MODES = ("records", "arrow")
API = {"records": "KafkaShareConsumer.poll (implicit acknowledgement)",
       "arrow": "KafkaShareConsumer.poll_arrow + acknowledge_batch(ACCEPT)"}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    mode = runner_mode(args, MODES, "fastkc share")
    import fastkc

    require_compiled_core()
    from fastkc import AcknowledgeType, KafkaShareConsumer

    if mode == "arrow":
        # An Arrow application has pyarrow imported already: set-up, not time to first record.
        importlib.import_module("pyarrow")

    group = fresh_share_group(args.bootstrap, "fastkc-bench-share-" + mode)
    consumer = KafkaShareConsumer(
        args.topic, bootstrap_servers=args.bootstrap, group_id=group,
        share_acknowledgement_mode="explicit" if mode == "arrow" else "implicit")
    ledger = ShareLedger()
    try:
        clock = Clock(args.timeout)
        if mode == "records":
            def poll_count() -> tuple[int, int]:
                polled = consumer.poll(timeout_ms=1000)
                delivered, touched = touch_polled(polled)
                with clock.untimed():
                    for tp, records in polled.items():
                        ledger.add((tp.partition, r.offset) for r in records)
                return delivered, touched
        else:
            accept = AcknowledgeType.ACCEPT

            def poll_count() -> tuple[int, int]:
                batch = consumer.poll_arrow(timeout_ms=1000)
                rows: int = batch.num_rows
                if not rows:
                    return 0, 0
                touched = touch_arrow(batch)
                consumer.acknowledge_batch(batch, accept)
                with clock.untimed():
                    ledger.add(zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist()))
                return rows, touched

        records, touched = drain_share(poll_count, ledger, args, clock)
    finally:
        consumer.close()
    finish("share fastkc " + mode, args, records, clock.seconds, touched_bytes=touched, clock=clock,
           cpu_seconds=clock.cpu_seconds,
           api=API[mode], backend=fastkc.backend,
           acknowledgement="explicit" if mode == "arrow" else "implicit", group=group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
