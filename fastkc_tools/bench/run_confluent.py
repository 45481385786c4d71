"""confluent-kafka (librdkafka): assign every partition at the beginning,
consume(num_messages=500) until the end offsets.

librdkafka's defaults differ from the other clients': check.crcs is off and
isolation.level is read_committed. Both are set like the others' here. The
group id is only there because the client refuses to start without one;
nothing is committed. Every returned Message's key and value are touched in
the window (common.py, "Equal work"); then each is checked for an error, as
any correct application of this API must, in Clock.untimed() (the other
clients' poll() raises its errors: no per-record check for them to time).

Mode "tuned" also lowers fetch.queue.backoff.ms from its 1000 ms default to
TUNED_FETCH_QUEUE_BACKOFF_MS. librdkafka stops fetching a partition while its
local queue holds queued.min.messages (100,000) records or
queued.max.messages.kbytes, and then waits that long before fetching again,
although the application drains the queue far sooner: reading a backlog, the
default client idles most of the time (its CPU seconds are a fraction of its
wall time). The tuned row shows what the client does without that stall.
"""
from collections.abc import Sequence

from fastkc_tools.bench.common import Clock, drain, finish, parse_args, runner_mode, touch_messages

TUNED_FETCH_QUEUE_BACKOFF_MS = 10


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    mode = runner_mode(args, ("default", "tuned"), "confluent-kafka")
    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": "fastkc-bench-confluent",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "check.crcs": True,
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "earliest",
    }
    if mode == "tuned":
        config["fetch.queue.backoff.ms"] = TUNED_FETCH_QUEUE_BACKOFF_MS
    consumer = Consumer(config)
    tps = [TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)]
    try:
        consumer.assign(tps)
        clock = Clock(args.timeout)

        def poll_count() -> tuple[int, int]:
            messages = consumer.consume(num_messages=500, timeout=1.0)
            touched = touch_messages(messages)
            with clock.untimed():
                for message in messages:
                    if message.error() is not None:
                        raise KafkaException(message.error())
            return len(messages), touched

        def positions() -> dict[int, int]:
            # position() is the offset after the last message handed to the application,
            # or a negative logical offset (OFFSET_INVALID) while none has been: on
            # these fresh topics that means offset 0 — what an empty partition's end is.
            return {tp.partition: max(tp.offset, 0) for tp in consumer.position(
                [TopicPartition(args.topic, p) for p in range(args.partitions)])}

        records, touched = drain(poll_count, positions, args, clock)
    finally:
        consumer.close()
    finish("confluent-kafka" + (" tuned" if mode == "tuned" else ""), args, records, clock.seconds,
           touched_bytes=touched, clock=clock, cpu_seconds=clock.cpu_seconds, version=confluent_kafka.__version__,
           librdkafka=confluent_kafka.libversion()[0],
           config={k: v for k, v in config.items() if k != "bootstrap.servers"})


if __name__ == "__main__":
    main()
