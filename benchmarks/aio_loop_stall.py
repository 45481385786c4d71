"""How long fastkc.aio's getmany() holds the event loop, with its decode
thread (decode_threads=1, the default) and without it (0), next to aiokafka:
a topic of large gzip batches (confluent-kafka's producer, batch.size 1 MiB,
linger 200 ms, compressible 1 KiB values: ~1 MiB compressed batches that
decompress to several MiB -- the steps that would hold a loop longest), read
to the end by each in interleaved rounds while a ticker task on the same loop
(1 ms sleeps) records the longest gap between its wake-ups, and the loop
thread's own CPU time in its busiest gap (the wall-clock gap also counts the
OS running other processes). Each client touches every record's key and
value (fastkc_tools/bench/common.py, "Equal work"; the sum must be the produced
bytes) and the order rotates round by round. Prints median (min-max) per
client, with the load average. A figure for the report, asserted nowhere.

    python3 benchmarks/aio_loop_stall.py --bootstrap HOST:PORT [--records N] [--rounds R]
"""
import argparse
import asyncio
import os
import statistics
import time
import uuid

from fastkc_tools.bench.common import LoopStallMeter, touch_records

VALUE = b"record %08d "  # times VALUE_REPEAT, numbered: 1,248 compressible bytes, null keys
VALUE_REPEAT = 78


def make_topic(bootstrap, records):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "aio-stall-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "gzip", "batch.size": 1 << 20,
                         "linger.ms": 200, "message.max.bytes": 8 << 20})
    for i in range(records):
        producer.produce(topic, value=(VALUE % i) * VALUE_REPEAT)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


async def read(client, bootstrap, topic, records):
    if client == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest", max_partition_fetch_bytes=8 << 20)
    else:
        from fastkc.aio import AIOKafkaConsumer, TopicPartition
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest", max_partition_fetch_bytes=8 << 20,
                                    decode_threads=int(client[-1]))
    await consumer.start()
    meter = LoopStallMeter()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got, touched, deliveries, first, last = 0, 0, 0, None, None
        meter.start()
        while got < records:
            batch = await consumer.getmany(timeout_ms=1000)
            n = 0
            for polled in batch.values():
                n += len(polled)
                touched += touch_records(polled)
            if n:
                last = time.perf_counter()
                if first is None:
                    first, first_n = last, n
                got += n
                deliveries += 1
        await meter.stop()
        produced = records * len(VALUE % 0) * VALUE_REPEAT
        if got != records or touched != produced:
            raise SystemExit("{0}: {1} records, {2} key + value bytes touched; produced {3}, {4} bytes".format(
                client, got, touched, records, produced))
        rate = (got - first_n) / (last - first) if last > first else float("nan")
        return meter.longest, meter.longest_cpu, rate, deliveries
    finally:
        await meter.stop()
        await consumer.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    topic = make_topic(args.bootstrap, args.records)
    clients = ["fastkc.aio decode_threads=1", "fastkc.aio decode_threads=0", "aiokafka"]
    runs = {c: [] for c in clients}
    for round_ in range(args.rounds):
        shift = round_ % len(clients)
        for client in clients[shift:] + clients[:shift]:
            runs[client].append(asyncio.run(read(client, args.bootstrap, topic, args.records)))
    print("{0:,} records x 1 KiB in ~1 MiB gzip batches, {1} interleaved rounds, load average {2:.2f}".format(
        args.records, args.rounds, os.getloadavg()[0]))
    print("| client | longest loop stall, wall ms | its loop-thread CPU ms | steady records/s | getmany calls |")
    print("|---|---|---|---|---|")

    def cell(values, scale=1.0, spec=".1f"):
        values = [v * scale for v in values]
        return "{0:{3}} ({1:{3}}-{2:{3}})".format(statistics.median(values), min(values), max(values), spec)

    for client in clients:
        stall, cpu, rate, calls = zip(*runs[client])
        print("| {0} | {1} | {2} | {3} | {4} |".format(client, cell(stall, 1000), cell(cpu, 1000),
                                                        cell(rate, spec=",.0f"), cell(calls, spec=".0f")))


if __name__ == "__main__":
    main()
