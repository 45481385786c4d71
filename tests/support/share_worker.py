"""One share-group member in its own process, for tests/integration/test_share_groups.py.

    python -m tests.support.share_worker --flavour fastkc|confluent --bootstrap B --topic T --group G
        --behaviour accept|mixed|release|hold --out FILE --stop FILE [--deadline S]

It polls in explicit acknowledgement mode and writes one JSON line per event
to --out, flushed at once (a member SIGKILLed leaves everything it saw):

    {"e": "start"}                                       joined the loop
    {"e": "got", "p": P, "o": O, "dc": D, "t": T}        handed a record (delivery_count D)
    {"e": "ack", "p": P, "o": O, "type": "ACCEPT"}      acknowledge() called
    {"e": "committed", "p": P, "ok": true|false, "error": ...}  commit_sync's result per partition
    {"e": "holding", "t": T}                             (hold) keeps its records unacknowledged
    {"e": "closed", "t": T}                              close() returned

Behaviours, by what each record is answered with:
- accept: ACCEPT.
- mixed: offset % 4 == 1 → RELEASE on the first delivery, ACCEPT afterwards;
  offset % 4 == 3 → REJECT; the others ACCEPT.
- release: RELEASE, every delivery (until the broker archives the record).
- hold: nothing: after the first poll that returns records the member stops
  polling and acknowledging and waits for --stop (or SIGKILL), holding them.

The loop ends when the --stop file exists or after --deadline seconds; close()
follows. Both flavours run the same loop through a small adapter, so the
reference (confluent-kafka's ShareConsumer) and fastkc are judged alike.
"""
import argparse
import json
import os
import sys
import time

ACCEPT, RELEASE, REJECT = "ACCEPT", "RELEASE", "REJECT"
BEHAVIOURS = ("accept", "mixed", "release", "hold")


def decide(behaviour, offset, delivery_count):
    """The acknowledgement type for one record, or None to hold it."""
    if behaviour == "accept":
        return ACCEPT
    if behaviour == "release":
        return RELEASE
    if behaviour == "mixed":
        if offset % 4 == 1 and delivery_count == 1:
            return RELEASE
        if offset % 4 == 3:
            return REJECT
        return ACCEPT
    return None


class ConfluentMember:
    def __init__(self, bootstrap, topic, group):
        from confluent_kafka import AcknowledgeType, ShareConsumer

        self._types = {ACCEPT: AcknowledgeType.ACCEPT, RELEASE: AcknowledgeType.RELEASE,
                       REJECT: AcknowledgeType.REJECT}
        self.consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                       "share.acknowledgement.mode": "explicit", "log_level": 3})
        self.consumer.subscribe([topic])

    def poll(self, seconds):
        records = []
        for message in self.consumer.poll(seconds):
            if message.error() is not None:
                raise RuntimeError("confluent-kafka: {0}".format(message.error()))
            records.append((message, message.partition(), message.offset(), message.delivery_count()))
        return records

    def acknowledge(self, handle, kind):
        self.consumer.acknowledge(handle, self._types[kind])

    def commit(self, seconds):
        return {tp.partition: error for tp, error in self.consumer.commit_sync(seconds).items()}

    def close(self):
        self.consumer.close()


class FastkcMember:
    def __init__(self, bootstrap, topic, group):
        from fastkc import AcknowledgeType, KafkaShareConsumer

        self._types = {ACCEPT: AcknowledgeType.ACCEPT, RELEASE: AcknowledgeType.RELEASE,
                       REJECT: AcknowledgeType.REJECT}
        self.consumer = KafkaShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                           share_acknowledgement_mode="explicit")

    def poll(self, seconds):
        polled = self.consumer.poll(timeout_ms=int(seconds * 1000))
        return [(record, tp.partition, record.offset, record.delivery_count)
                for tp, records in polled.items() for record in records]

    def acknowledge(self, handle, kind):
        self.consumer.acknowledge(handle, self._types[kind])

    def commit(self, seconds):
        return {tp.partition: error for tp, error in self.consumer.commit_sync(timeout_ms=int(seconds * 1000)).items()}

    def close(self):
        self.consumer.close()


MEMBERS = {"confluent": ConfluentMember, "fastkc": FastkcMember}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flavour", choices=sorted(MEMBERS), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--behaviour", choices=BEHAVIOURS, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--stop", required=True)
    parser.add_argument("--deadline", type=float, default=60.0)
    args = parser.parse_args(argv)
    with open(args.out, "a", buffering=1) as out:
        def write(**event):
            out.write(json.dumps(event) + "\n")
            out.flush()

        member = MEMBERS[args.flavour](args.bootstrap, args.topic, args.group)
        write(e="start", t=time.time())
        give_up = time.monotonic() + args.deadline
        try:
            while not os.path.exists(args.stop) and time.monotonic() < give_up:
                records = member.poll(0.5)
                for _, partition, offset, delivery_count in records:
                    write(e="got", p=partition, o=offset, dc=delivery_count, t=time.time())
                if records and args.behaviour == "hold":
                    write(e="holding", t=time.time())
                    while not os.path.exists(args.stop) and time.monotonic() < give_up:
                        time.sleep(0.1)
                    break
                for handle, partition, offset, delivery_count in records:
                    kind = decide(args.behaviour, offset, delivery_count)
                    member.acknowledge(handle, kind)
                    write(e="ack", p=partition, o=offset, type=kind)
                if records:
                    for partition, error in sorted(member.commit(10.0).items()):
                        write(e="committed", p=partition, ok=error is None, error=None if error is None else str(error))
        finally:
            member.close()
            write(e="closed", t=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(main())
