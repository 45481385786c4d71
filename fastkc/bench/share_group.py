"""What the share-group runners share (run_share_fastkc.py, run_share_confluent.py).

A share-group run differs from the others in three ways:

- Its group is fresh every run (a share group remembers what it delivered),
  and a share group starts at the LATEST offset unless its group config
  `share.auto.offset.reset` says `earliest` before the first member joins.
  `fresh_share_group()` names one and sets that through fastkc's own
  BlockingConnection (IncrementalAlterConfigs on a GROUP resource), then
  waits until DescribeConfigs reads it back: the alteration reaches the
  group coordinator through the metadata log, not at once.
- There are no positions: the broker hands out records, so the end of the
  topic is seen only by counting. `ShareLedger` counts per partition and sums
  the offsets: a partition whose count and offset sum both match its end
  offset (a topic written once, from offset 0) got each of its offsets once;
  a record delivered twice or lost shows in one or the other.
- The loop stops at the topic's count, or after `IDLE_SECONDS` without a
  record (a client that lost records stops instead of waiting for the
  deadline), and the ledger is checked either way.

The steady-state clock is common.Clock, as for the other rows.
"""
import argparse
import time
import uuid
from collections.abc import Callable

from fastkc.bench.common import Clock, CountMismatch
from fastkc.errors import for_code
from fastkc.net.blocking import BlockingConnection

#: Kafka's ConfigResource type of a group (GROUP = 32 in its IncrementalAlterConfigs)
GROUP_RESOURCE = 32
#: AlterConfigOp.OpType SET
SET = 0
#: no record for this long once records flowed: the topic is read (or records were lost)
IDLE_SECONDS = 15.0


def fresh_share_group(bootstrap: str, prefix: str, timeout: float = 30.0) -> str:
    """A new share group name whose group config says share.auto.offset.reset=earliest."""
    group = "{0}-{1}".format(prefix, uuid.uuid4().hex[:12])
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    with BlockingConnection(host, int(port), client_id="fastkc-bench", timeout=timeout) as conn:
        answer = conn.request("IncrementalAlterConfigs", {
            "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": SET, "value": "earliest"}]}],
            "validate_only": False,
        })
        (result,) = answer["responses"]
        if result["error_code"]:
            raise for_code(result["error_code"])("setting share.auto.offset.reset on group {0}: {1}".format(
                group, result["error_message"]))
        deadline = time.monotonic() + timeout
        while _group_config(conn, group, "share.auto.offset.reset") != "earliest":
            if time.monotonic() > deadline:
                raise SystemExit("group {0}: share.auto.offset.reset not earliest after {1:.0f}s".format(
                    group, timeout))
            time.sleep(0.05)
    return group


def _group_config(conn: BlockingConnection, group: str, name: str) -> str | None:
    answer = conn.request("DescribeConfigs", {"resources": [
        {"resource_type": GROUP_RESOURCE, "resource_name": group, "configuration_keys": [name]}]})
    (result,) = answer["results"]
    for config in result["configs"]:
        if config["name"] == name:
            value: str | None = config["value"]
            return value
    return None


class ShareLedger:
    """Per partition: how many records were delivered and the sum of their offsets."""

    def __init__(self) -> None:
        self.records = 0
        self.counts: dict[int, int] = {}
        self.offset_sums: dict[int, int] = {}

    def add(self, partition: int, count: int, offset_sum: int) -> None:
        self.records += count
        self.counts[partition] = self.counts.get(partition, 0) + count
        self.offset_sums[partition] = self.offset_sums.get(partition, 0) + offset_sum

    def check(self, ends: dict[int, int]) -> None:
        """Raise CountMismatch unless every offset 0..end-1 of every partition came once."""
        wrong = []
        for partition, end in sorted(ends.items()):
            count, total = self.counts.get(partition, 0), self.offset_sums.get(partition, 0)
            if count != end or total != end * (end - 1) // 2:
                wrong.append("partition {0}: {1:,} records (offset sum {2:,}), the topic holds {3:,} "
                              "(offset sum {4:,})".format(partition, count, total, end, end * (end - 1) // 2))
        stray = sorted(set(self.counts) - set(ends))
        if stray:
            wrong.append("records from partitions {0}, which the topic does not have".format(stray))
        if wrong:
            raise CountMismatch("; ".join(wrong))


def drain_share(poll_count: Callable[[], int], ledger: ShareLedger, args: argparse.Namespace, clock: Clock,
                settle: Callable[[], None] | None = None) -> int:
    """Poll until the topic's count came (or nothing came for IDLE_SECONDS
    after records flowed), then check the ledger.

    poll_count() polls once and returns how many records it delivered,
    entering them into `ledger` as it goes or leaving that to settle(),
    which runs after the last record's time is taken (a columnar runner
    keeps its columns and counts them once, outside the timed window)."""
    expected: int = args.expected
    records = 0
    clock.start()
    while records < expected:
        n = poll_count()
        if n:
            records += n
            clock.saw_records(n)
        elif clock.last_record is not None and time.perf_counter() - clock.last_record > IDLE_SECONDS:
            break
        clock.check_deadline(records, expected)
    if settle is not None:
        settle()
    if ledger.records != records:
        raise CountMismatch("{0:,} records delivered, {1:,} in the ledger".format(records, ledger.records))
    ledger.check(args.ends)
    return records
