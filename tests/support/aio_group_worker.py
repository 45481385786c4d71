"""One asyncio group member in a process of its own, for
tests/integration_aio/test_aio_groups.py (the member a test SIGKILLs).

    python -m tests.support.aio_group_worker FLAVOUR BOOTSTRAP TOPIC GROUP OUT_FILE
        [--batch N] [--pause-ms N] [--session-timeout-ms N]

FLAVOUR is an asyncio consumer of tests/support/aio_flavours.py ("aiokafka",
"fastkc.aio"). The member subscribes with a listener, hands out at most
--batch records per getmany(), commits them at once (manual commits, and
in on_partitions_revoked, as aiokafka's documentation asks), and sleeps
--pause-ms between batches so a test can kill it mid-stream.

Writes one JSON object per line to OUT_FILE, flushed at once (a SIGKILL
loses nothing already written):
  {"e": "assigned"|"revoked", "t": time, "tps": [p, ...]}     listener calls
  {"e": "records", "t": time, "recs": [[p, offset], ...]}     what getmany handed over
  {"e": "committing", "t": time, "offsets": {p: offset}}      a commit about to be sent
  {"e": "committed", "t": time, "offsets": {p: offset}}       commits the broker accepted
  {"e": "commit_failed", "t": time, "error": name}
  {"e": "ready"} once started; SIGTERM stops the consumer and the process.
"""
import argparse
import asyncio
import json
import os
import signal
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("flavour")
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("out")
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--pause-ms", type=int, default=50)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    args = parser.parse_args(argv)
    with open(args.out, "a", buffering=1) as out:
        def emit(**fields):
            fields["t"] = time.time()
            out.write(json.dumps(fields) + "\n")

        asyncio.run(run(args, emit))
        emit(e="closed")


async def run(args, emit):
    from tests.support.aio_flavours import load_aio_flavour

    flavour = load_aio_flavour(args.flavour)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    consumer = flavour.AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=args.session_timeout_ms, heartbeat_interval_ms=300,
        fetch_max_wait_ms=100)

    handed = {}  # TopicPartition -> the offset after the last record handed out

    async def commit(offsets):
        # logged first: a SIGKILL can land after the broker took a commit and before "committed" is written
        emit(e="committing", offsets={tp.partition: offset for tp, offset in offsets.items()})
        try:
            await consumer.commit(offsets)
        except flavour.errors.KafkaError as exc:
            emit(e="commit_failed", error=type(exc).__name__)
            return
        emit(e="committed", offsets={tp.partition: offset for tp, offset in offsets.items()})

    class Listener(flavour.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            emit(e="revoked", tps=sorted(tp.partition for tp in revoked))
            offsets = {tp: handed[tp] for tp in revoked if tp in handed}
            if offsets:
                await commit(offsets)
            for tp in revoked:  # a partition assigned again later starts from its committed offset
                handed.pop(tp, None)

        async def on_partitions_assigned(self, assigned):
            emit(e="assigned", tps=sorted(tp.partition for tp in assigned))

    consumer.subscribe([args.topic], listener=Listener())
    await consumer.start()
    emit(e="ready")
    try:
        while not stopping.is_set():
            batch = await consumer.getmany(timeout_ms=100, max_records=args.batch)
            recs = [[tp.partition, r.offset] for tp, records in batch.items() for r in records]
            if recs:
                emit(e="records", recs=recs)
                offsets = {tp: records[-1].offset + 1 for tp, records in batch.items() if records}
                handed.update(offsets)
                await commit(offsets)
            await asyncio.sleep(args.pause_ms / 1000)
    finally:
        await consumer.stop()


if __name__ == "__main__":
    main()
