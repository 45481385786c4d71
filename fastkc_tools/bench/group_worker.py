"""One group member in a process of its own, for `fastkc bench-rebalance`
(fastkc_tools/bench/rebalance.py) and tests/integration/test_groups*.py.

    python -m fastkc_tools.bench.group_worker BOOTSTRAP TOPIC GROUP OUT_FILE
        [--protocol classic|consumer] [--assignor range|roundrobin|sticky|cooperative-sticky]
        [--client fastkc|confluent] [--commit-interval-ms N]

Writes one JSON object per line to OUT_FILE (flushed at once, so a SIGKILL
loses nothing already written):
  {"e": "assigned"|"revoked"|"lost", "t": time, "tps": [[p, ...]]}   listener calls
  {"e": "records", "t": time, "recs": [[partition, offset], ...]}     what poll handed over
  {"e": "committed", "t": time, "offsets": {partition: offset}}       commits the broker accepted
  {"e": "ready"} once subscribed; SIGTERM closes the consumer (commit, revoke, leave) and exits.
"""
import argparse
import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

# emit(e="assigned", tps=[...]): one event line, stamped with the time
Emit = Callable[..., None]


def read_events(path: str) -> list[dict[str, Any]]:
    """The events a worker has written to `path` so far (complete lines
    only: the worker may be in the middle of one); [] before it starts.

    A read racing the worker's append can also see the new bytes as zeros
    (seen once here: a line of NULs and the newline, which broke a whole
    report run), so the first line that is not JSON ends what is read this
    time, as an unfinished one does; the next read sees it whole."""
    events: list[dict[str, Any]] = []
    if not os.path.exists(path):
        return events
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            try:
                events.append(json.loads(line))
            except ValueError:
                break
    return events


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("out")
    parser.add_argument("--protocol", default="classic")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--client", default="fastkc")
    parser.add_argument("--commit-interval-ms", type=int, default=200)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    args = parser.parse_args(argv)
    out = open(args.out, "a", buffering=1)
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    def emit(**fields: Any) -> None:
        fields["t"] = time.time()
        out.write(json.dumps(fields) + "\n")

    if args.client == "confluent":
        run_confluent(args, emit, stop)
    else:
        run_fastkc(args, emit, stop)
    emit(e="closed")
    out.close()


def run_fastkc(args: argparse.Namespace, emit: Emit, stop: list[int]) -> None:
    from fastkc import KafkaConsumer
    from fastkc.assignors import ASSIGNORS_BY_NAME

    class Listener:
        def on_partitions_revoked(self, tps: Any) -> None:
            emit(e="revoked", tps=[tp.partition for tp in tps])

        def on_partitions_assigned(self, tps: Any) -> None:
            emit(e="assigned", tps=[tp.partition for tp in tps])

        def on_partitions_lost(self, tps: Any) -> None:
            emit(e="lost", tps=[tp.partition for tp in tps])

    def committed(offsets: Any, error: BaseException | None) -> None:
        if error is None:
            emit(e="committed", offsets={tp.partition: om.offset for tp, om in offsets.items()})

    configs: dict[str, Any] = dict(bootstrap_servers=args.bootstrap, group_id=args.group, auto_offset_reset="earliest",
                   enable_auto_commit=True, auto_commit_interval_ms=args.commit_interval_ms,
                   default_offset_commit_callback=committed, group_protocol=args.protocol,
                   fetch_max_wait_ms=100)
    if args.protocol == "classic":
        configs.update(session_timeout_ms=args.session_timeout_ms, heartbeat_interval_ms=300,
                       partition_assignment_strategy=[ASSIGNORS_BY_NAME[args.assignor]])
    consumer = KafkaConsumer(**configs)
    consumer.subscribe([args.topic], listener=Listener())
    emit(e="ready")
    while not stop:
        batch = consumer.poll(100)
        recs = [[tp.partition, r.offset] for tp, records in batch.items() for r in records]
        if recs:
            emit(e="records", recs=recs)
    consumer.close()


def run_confluent(args: argparse.Namespace, emit: Emit, stop: list[int]) -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap, "group.id": args.group, "auto.offset.reset": "earliest",
        "enable.auto.commit": True, "auto.commit.interval.ms": args.commit_interval_ms, "fetch.wait.max.ms": 100}
    if args.protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 300,
                     "partition.assignment.strategy": args.assignor})
    consumer = Consumer(conf)
    cooperative = args.protocol == "consumer" or args.assignor == "cooperative-sticky"

    def on_assign(c: Any, tps: Any) -> None:
        emit(e="assigned", tps=[tp.partition for tp in tps])
        if cooperative:
            c.incremental_assign(tps)
        else:
            c.assign(tps)

    def on_revoke(c: Any, tps: Any) -> None:
        emit(e="revoked", tps=[tp.partition for tp in tps])
        if cooperative:
            c.incremental_unassign(tps)
        else:
            c.unassign()

    def on_lost(c: Any, tps: Any) -> None:
        emit(e="lost", tps=[tp.partition for tp in tps])
        if cooperative:
            c.incremental_unassign(tps)
        else:
            c.unassign()

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit(e="ready")
    while not stop:
        msgs = consumer.consume(500, 0.1)
        recs = [[m.partition(), m.offset()] for m in msgs if m.error() is None]
        if recs:
            emit(e="records", recs=recs)
    consumer.close()


if __name__ == "__main__":
    main()
