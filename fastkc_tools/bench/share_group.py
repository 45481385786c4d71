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
  topic is seen only by counting. `ShareLedger` keeps the set of offsets
  delivered per partition and every offset delivered twice: a partition
  whose set is exactly 0..end-1 (a topic written once, from offset 0) with
  nothing twice got each of its offsets once. The ledger is bookkeeping: every
  runner fills it inside Clock.untimed() (common.py, "Equal work").
- The loop stops at the topic's count, or after `IDLE_SECONDS` without a
  record (a client that lost records stops instead of waiting for the
  deadline), and the ledger is checked either way.

The steady-state clock is common.Clock, as for the other rows.
"""
import argparse
import time
import uuid
from collections.abc import Callable, Iterable

from fastkc.errors import for_code
from fastkc.net.blocking import BlockingConnection
from fastkc_tools.bench.common import Clock, CountMismatch, Tally

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
    """Per partition: the set of offsets delivered; and every (partition,
    offset) delivered again after its first time."""

    def __init__(self) -> None:
        self.records = 0
        self.offsets: dict[int, set[int]] = {}
        self.twice: list[tuple[int, int]] = []

    def add(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Enter delivered (partition, offset) pairs."""
        for partition, offset in pairs:
            seen = self.offsets.get(partition)
            if seen is None:
                seen = self.offsets[partition] = set()
            if offset in seen:
                self.twice.append((partition, offset))
            else:
                seen.add(offset)
            self.records += 1

    def check(self, ends: dict[int, int]) -> None:
        """Raise CountMismatch unless every offset 0..end-1 of every partition came exactly once."""
        wrong = []
        for partition, end in sorted(ends.items()):
            seen = self.offsets.get(partition, set())
            twice = sorted(o for p, o in self.twice if p == partition)
            missing = [o for o in range(end) if o not in seen]
            beyond = sorted(o for o in seen if not 0 <= o < end)
            if missing or beyond or twice:
                wrong.append("partition {0}: {1:,} records ({2:,} distinct offsets), the topic holds {3:,}; "
                             "missing {4}, outside 0..{5}: {6}, delivered twice {7}".format(
                                 partition, len(seen) + len(twice), len(seen), end, missing[:5], end - 1,
                                 beyond[:5], twice[:5]))
        stray = sorted(set(self.offsets) - set(ends))
        if stray:
            wrong.append("records from partitions {0}, which the topic does not have".format(stray))
        if wrong:
            raise CountMismatch("; ".join(wrong))


def drain_share(poll_count: Callable[[], tuple[int, int]], ledger: ShareLedger, args: argparse.Namespace,
                clock: Clock) -> tuple[int, int]:
    """Poll until the topic's count came (or nothing came for IDLE_SECONDS
    after records flowed), then check the ledger; returns (records, key +
    value bytes touched).

    poll_count() polls once, touches what it delivered, enters it into
    `ledger` (inside clock.untimed()) and returns (records, bytes touched)."""
    expected: int = args.expected
    tally = Tally(clock)
    clock.start()
    while tally.records < expected:
        n, touched = poll_count()
        if n:
            tally.saw(n, touched)
        elif clock.last_record is not None and time.perf_counter() - clock.last_record > IDLE_SECONDS:
            break
        clock.check_deadline(tally.records, expected)
    if ledger.records != tally.records:
        raise CountMismatch("{0:,} records delivered, {1:,} in the ledger".format(tally.records, ledger.records))
    ledger.check(args.ends)
    return tally.records, tally.touched
