"""confluent-kafka's ShareConsumer (Preview in 2.16): a fresh share group
reading the whole topic with poll() and its default acknowledgement
(share.acknowledgement.mode=implicit: a poll accepts what the previous one
returned).

Everything else is the client's default, as for the other rows. Every
returned Message's key and value are touched in the window; its error check
and its ledger entry run in Clock.untimed(), as the fastkc runners' ledger
does (common.py, "Equal work"). The group starts at the earliest offsets
(fastkc_tools/bench/share_group.py); the join happens in the first poll, so it is
in the time to first record, not in the steady-state window.
"""
from collections.abc import Sequence

from fastkc_tools.bench.common import Clock, finish, parse_args, touch_messages
from fastkc_tools.bench.share_group import ShareLedger, drain_share, fresh_share_group

#: seconds one poll() may block (1 s, as every other runner's poll)
POLL_SECONDS = 1.0


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import confluent_kafka
    from confluent_kafka import KafkaException, ShareConsumer

    group = fresh_share_group(args.bootstrap, "fastkc-bench-share-confluent")
    config = {"bootstrap.servers": args.bootstrap, "group.id": group}
    consumer = ShareConsumer(config)
    ledger = ShareLedger()
    try:
        consumer.subscribe([args.topic])
        clock = Clock(args.timeout)

        def poll_count() -> tuple[int, int]:
            messages = consumer.poll(POLL_SECONDS)
            touched = touch_messages(messages)
            with clock.untimed():
                for message in messages:
                    if message.error() is not None:
                        raise KafkaException(message.error())
                    partition, offset = message.partition(), message.offset()
                    if partition is None or offset is None:  # only error events lack them
                        raise SystemExit("a record without a partition or offset: {0!r}".format(message))
                    ledger.add(((partition, offset),))
            return len(messages), touched

        records, touched = drain_share(poll_count, ledger, args, clock)
    finally:
        consumer.close()
    finish("share confluent-kafka", args, records, clock.seconds, touched_bytes=touched, clock=clock,
           cpu_seconds=clock.cpu_seconds,
           api="confluent_kafka.ShareConsumer.poll", version=confluent_kafka.__version__,
           librdkafka=confluent_kafka.libversion()[0], acknowledgement="implicit", group=group)


if __name__ == "__main__":
    main()
