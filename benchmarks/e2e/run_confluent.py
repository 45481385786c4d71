"""confluent-kafka (librdkafka): assign every partition at the beginning,
consume(num_messages=500) until the end offsets.

librdkafka's defaults differ from the other clients': check.crcs is off and
isolation.level is read_committed. Both are set like the others' here. The
group id is only there because the client refuses to start without one;
nothing is committed. Every returned Message is checked for an error, as any
correct application of this API must.
"""
import sys

from benchmarks.e2e.common import Clock, drain, finish, parse_args


def main(argv=None):
    args = parse_args(__doc__.split("\n\n")[0], argv)
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "fastkc-bench-confluent",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "check.crcs": True,
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "earliest",
    })
    tps = [TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)]
    try:
        consumer.assign(tps)
        clock = Clock(args.timeout)

        def poll_count():
            messages = consumer.consume(num_messages=500, timeout=1.0)
            for message in messages:
                if message.error() is not None:
                    raise KafkaException(message.error())
            return len(messages)

        def positions():
            # position() is the offset after the last message handed to the application
            # (or a negative logical offset before the first one).
            return {tp.partition: tp.offset for tp in consumer.position(
                [TopicPartition(args.topic, p) for p in range(args.partitions)])}

        records = drain(poll_count, positions, args, clock)
    finally:
        consumer.close()
    finish("confluent-kafka", args, records, clock.seconds, cpu_seconds=clock.cpu_seconds,
           version=confluent_kafka.version()[0], librdkafka=confluent_kafka.libversion()[0])


if __name__ == "__main__":
    sys.exit(main())
