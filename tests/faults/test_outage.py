"""The consumer's own calls while every broker is unreachable (all proxies
disabled: connections refused; or all blackholed: connections held, nothing
answers), on the application's thread:

- poll() keeps returning ({}) within its timeout, raises nothing, and the
  process stays idle (no busy reconnect loop: CPU well under a core);
- commit() gives up within its timeout with a typed error
  (KafkaTimeoutError or another fastkc.errors type), never hangs;
- after the heal the records written meanwhile arrive, none lost or repeated;
- close() under a blackhole returns within its bound.
"""
import time

import pytest

from fastkc import KafkaConsumer, errors
from tests.faults.runner import CONSUMER_TIMEOUTS, GROUP_TIMEOUTS, record
from tests.support.kafka_tools import Message, create_topic, produce, unique_name

pytestmark = [pytest.mark.faults, pytest.mark.cluster]


def _poll_for(consumer, seconds, got, raised):
    deadline = time.monotonic() + seconds
    longest = 0.0
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend((r.partition, r.offset) for r in records)
        except Exception as exc:  # noqa: BLE001 - checked below
            raised.append(exc)
        longest = max(longest, time.monotonic() - t0)
    return longest


@pytest.mark.slow
def test_outage_poll_commit_close(cluster):
    topic = create_topic(cluster.direct, unique_name("faults-outage"), partitions=3, replication_factor=3)
    first = produce(cluster.direct, topic, [Message(value=b"a%d" % i, partition=i % 3) for i in range(300)])
    c = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, group_id=unique_name("faults-outage"),
                      auto_offset_reset="earliest", enable_auto_commit=False, **CONSUMER_TIMEOUTS, **GROUP_TIMEOUTS)
    got, raised, figures = [], [], {}
    closed = False
    try:
        deadline = time.monotonic() + 30
        while len(got) < 300:
            assert time.monotonic() < deadline, "did not read the first 300"
            for records in c.poll(timeout_ms=200).values():
                got.extend((r.partition, r.offset) for r in records)
        c.commit()

        # 1. refused: every proxy disabled
        for p in cluster.proxies.values():
            p.set_enabled(False)
        cpu0, wall0 = time.process_time(), time.monotonic()
        figures["refused_longest_poll_s"] = round(_poll_for(c, 6.0, got, raised), 3)
        figures["refused_cpu_share"] = round((time.process_time() - cpu0) / (time.monotonic() - wall0), 3)
        t0 = time.monotonic()
        with pytest.raises(errors.KafkaError) as commit_err:
            c.commit(timeout_ms=3000)
        figures["refused_commit_s"] = round(time.monotonic() - t0, 2)
        figures["refused_commit_error"] = type(commit_err.value).__name__
        second = produce(cluster.direct, topic, [Message(value=b"b%d" % i, partition=i % 3) for i in range(150)])
        healed = time.monotonic()
        for p in cluster.proxies.values():
            p.set_enabled(True)
        deadline = time.monotonic() + 30
        while len(got) < 450:
            assert time.monotonic() < deadline, "records written during the outage did not arrive"
            _poll_for(c, 0.2, got, raised)
        figures["refused_recovery_s"] = round(time.monotonic() - healed, 2)
        # The outage outlasted the session: the member rejoins, and commit()
        # says so (RebalanceInProgressError, as Java) until it has.
        deadline = time.monotonic() + 30
        while True:
            try:
                c.commit()
                break
            except errors.RebalanceInProgressError:
                assert time.monotonic() < deadline, "never rejoined"
                _poll_for(c, 0.2, got, raised)

        # 2. blackhole: every byte held
        toxics = [(p, p.add("timeout", timeout=0)) for p in cluster.proxies.values()]
        cpu0, wall0 = time.process_time(), time.monotonic()
        figures["blackhole_longest_poll_s"] = round(_poll_for(c, 6.0, got, raised), 3)
        figures["blackhole_cpu_share"] = round((time.process_time() - cpu0) / (time.monotonic() - wall0), 3)
        t0 = time.monotonic()
        try:
            c.commit(timeout_ms=3000)
            figures["blackhole_commit_error"] = None  # nothing to commit past the last commit is allowed
        except errors.KafkaError as exc:
            figures["blackhole_commit_error"] = type(exc).__name__
        figures["blackhole_commit_s"] = round(time.monotonic() - t0, 2)
        t0 = time.monotonic()
        c.close(timeout_ms=3000)
        closed = True
        figures["blackhole_close_s"] = round(time.monotonic() - t0, 2)
        for p, name in toxics:
            p.remove(name)
    finally:
        if not closed:
            c.close(autocommit=False)
    print("\noutage:", figures)
    assert not raised, raised  # poll raises nothing for an outage
    assert set(got) == {(r.partition, r.offset) for r in first + second}
    # re-deliveries only past the first commit (everything of `first`)
    repeated = {x for x in got if got.count(x) > 1}
    assert not repeated & {(r.partition, r.offset) for r in first}, sorted(repeated)[:10]
    figures["duplicates"] = len(got) - len(set(got))
    assert figures["refused_longest_poll_s"] < 1.5 and figures["blackhole_longest_poll_s"] < 1.5
    assert figures["refused_cpu_share"] < 0.3 and figures["blackhole_cpu_share"] < 0.3
    assert figures["refused_commit_s"] < 6.0 and figures["blackhole_commit_s"] < 6.0
    assert figures["blackhole_close_s"] < 6.0
    record(dict(scenario="outage: refused / blackholed, application thread", **figures))
