"""Share-group (KIP-932) helpers for the tests and the bench, on the real broker.

A share group starts reading at the LATEST offset unless its group config
`share.auto.offset.reset` says otherwise, and that config must be in place
before the first member joins (the broker fixes a partition's start offset
when the group first acquires records from it). Group configs are set with
IncrementalAlterConfigs on a GROUP resource; confluent-kafka's AdminClient
sends it, so no fastkc code is involved in preparing what fastkc is tested on.
"""
import time

# Share-group settings for tests/conftest.py's share_broker (names and ranges from Kafka 4.3.1's
# ShareGroupConfig and GroupCoordinatorConfig): a lock of 3 s (allowed
# 1000-3600000 and at least the minimum, itself 1000-30000, 15000 by
# default) and 3 deliveries before a record is archived (2-10, at least the
# minimum of 2). The harness already gives every test broker 1 s share
# heartbeats and 10 s share sessions; the session and the lock's floor are
# repeated here because the tests' timing rests on them.
SHARE_RECORD_LOCK_MS = 3000
SHARE_DELIVERY_COUNT_LIMIT = 3
SHARE_SESSION_TIMEOUT_MS = 10000
SHARE_BROKER_PROPERTIES = {
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": SHARE_RECORD_LOCK_MS,
    "group.share.delivery.count.limit": SHARE_DELIVERY_COUNT_LIMIT,
    "group.share.session.timeout.ms": SHARE_SESSION_TIMEOUT_MS,
}

# Kafka's accepted values (GroupConfig in Kafka 4.3.1); "by_duration:<ISO-8601>" also exists.
AUTO_OFFSET_RESETS = ("earliest", "latest")


def set_group_configs(bootstrap, group, configs, *, timeout=30.0):
    """Set (incrementally) the given group configs of share group `group`,
    then wait until DescribeConfigs shows them: the coordinator applies an
    alteration through its log, and a member joining before that would start
    with the old values."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    wanted = {name: str(value) for name, value in configs.items()}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in wanted.items()])
    (future,) = admin.incremental_alter_configs([resource], request_timeout=timeout).values()
    future.result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)],
                                              request_timeout=timeout).values()
        entries = described.result(timeout)
        seen = {name: entries[name].value for name in wanted if name in entries}
        if seen == wanted:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("group {0}: configs {1} still read {2} after {3}s".format(group, wanted, seen, timeout))
        time.sleep(0.1)


def set_share_auto_offset_reset(bootstrap, group, reset="earliest", *, timeout=30.0):
    """Make share group `group` start at the `reset` end of each partition
    ("earliest" to read what was written before the first member joined).
    Call it before the group's first member joins."""
    if reset not in AUTO_OFFSET_RESETS and not reset.startswith("by_duration:"):
        raise ValueError("share.auto.offset.reset is earliest, latest or by_duration:<ISO-8601 duration>, "
                         "not {0!r}".format(reset))
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": reset}, timeout=timeout)


def accept_ledger_problems(written, acknowledgements):
    """What is wrong with a share group's ledger, compared as offset sets: every
    written (partition, offset) ACCEPTed exactly once, and nothing else acknowledged.

    written: the (partition, offset) pairs the producer got acknowledged;
    acknowledgements: {(partition, offset): Counter of acknowledgement types}.
    Returns a list of problems (empty when the ledger holds). A count and an
    offset sum would pass {0, 2, 2, 2} for {0, 1, 2, 3}; the sets and the
    per-offset counts do not."""
    written = list(written)
    expected = set(written)
    problems = []
    twice_written = sorted(k for k in expected if written.count(k) > 1) if len(expected) != len(written) else []
    if twice_written:
        problems.append("written twice (the producer's own report): {0}".format(twice_written[:10]))
    accepted = {key for key, types in acknowledgements.items() if types.get("ACCEPT")}
    missing = sorted(expected - accepted)
    if missing:
        problems.append("never ACCEPTed: {0}".format(missing[:10]))
    stray = sorted(set(acknowledgements) - expected)
    if stray:
        problems.append("acknowledged but never written: {0}".format(stray[:10]))
    wrong = sorted((key, dict(types)) for key, types in acknowledgements.items()
                   if key in expected and types != {"ACCEPT": 1})
    if wrong:
        problems.append("not ACCEPTed exactly once (and nothing else): {0}".format(wrong[:10]))
    return problems
