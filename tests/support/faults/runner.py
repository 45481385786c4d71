"""One fault scenario, run the same way every time:

    report = run_scenario(cluster, "latency 300 ms", inject, expected_errors=(...))

1. a fresh topic (RF 3, `partitions`) on the proxied cluster;
2. the independent SteadyProducer (acks=all, straight to the brokers);
3. one fastkc consumer through the proxies on its own thread
   (ConsumerDriver: a classic group member committing every second, or a
   manual assignment with group=False);
4. warm-up until records flow, then `inject(ctx)`, which injects faults and
   heals them (ctx.fault(name) / ctx.healed(fault));
5. production stops, the consumer must deliver everything produced within
   `settle` seconds; the ledger's checks run and the report is kept for
   RESULTS.md (FASTKC_FAULTS_REPORT=path.json appends it there).
With a group, a CommitAuditor reads the group's committed offsets back from
the brokers (straight, not through the proxies) every half second and once
after the consumers stopped, for the ledger's "broker commits ahead" check.
allow_duplicates=False fails any re-delivery (scenarios where nothing can
explain one); otherwise re-deliveries must fall in an event's window.
"""
import collections
import contextlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass

from tests.support.faults.accounting import CommitAuditor, ConsumerDriver, Ledger, SteadyProducer
from tests.support.kafka_tools import create_topic, unique_name

# Client timeouts for every consumer of the campaign: short enough that a
# blackholed request is abandoned in seconds (the Java client's defaults are
# 30 s), not so short that the latency and bandwidth toxics trip them.
CONSUMER_TIMEOUTS = dict(request_timeout_ms=5000, reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000,
                         retry_backoff_ms=100, fetch_max_wait_ms=200, metadata_max_age_ms=5000)
GROUP_TIMEOUTS = dict(session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=60000)

REPORTS = []

# FASTKC_SLOW=1: more rounds per scenario and the extra scenarios CI leaves
# out to stay within its 6-minute budget for tests/faults.
SLOW = os.environ.get("FASTKC_SLOW", "") not in ("", "0")


def record(report_dict):
    """Keep one scenario's figures (FASTKC_FAULTS_REPORT=path appends them
    there as a JSON line, for RESULTS.md)."""
    REPORTS.append(report_dict)
    path = os.environ.get("FASTKC_FAULTS_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(report_dict, default=str) + "\n")


@dataclass
class Ctx:
    cluster: object
    topic: str
    ledger: Ledger
    producer: SteadyProducer
    driver: ConsumerDriver
    group_id: str
    make_consumer: object = None
    members: list = None  # every ConsumerDriver (driver first)
    auditor: CommitAuditor = None  # with a group: reads its committed offsets back from the brokers

    def add_member(self, name):
        """Another fastkc member of the same group, on its own thread."""
        member = ConsumerDriver(self.ledger, self.make_consumer, name=name, commit_every=self.driver.commit_every)
        self.members.append(member)
        member.start()
        return member

    def fault(self, name):
        return self.ledger.fault(name)

    def healed(self, fault):
        self.ledger.healed(fault)

    def wait_flowing(self, timeout=30.0, more=20):
        """Wait until the consumer delivered `more` new records."""
        start = len(self.ledger.deliveries)
        deadline = time.monotonic() + timeout
        while len(self.ledger.deliveries) < start + more:
            assert time.monotonic() < deadline, "no records delivered for {0:.0f}s\n{1}".format(
                timeout, self.diagnosis())
            assert self.driver.is_alive(), "consumer thread died\n" + self.diagnosis()
            time.sleep(0.05)

    def diagnosis(self):
        """What a stalled scenario looked like: the producer's counts, the
        consumer's errors and assignment, and fastkc's last log lines (a rare
        stall under a loaded CI machine must be explainable from its output)."""
        lines = ["producer: sent {0}, acked {1}, failed {2}".format(
            self.producer.sent, self.producer.acked, len(self.producer.failed))]
        lines.append("deliveries {0}; errors (last 5): {1}".format(
            len(self.ledger.deliveries), self.ledger.errors[-5:]))
        for member in self.members:
            try:
                assignment = sorted(member.consumer.assignment()) if member.consumer else None
            except Exception as exc:  # noqa: BLE001 - a diagnosis must not raise
                assignment = repr(exc)
            lines.append("{0}: alive {1}, last poll {2:.1f}s ago, assignment {3}".format(
                member.name, member.is_alive(), time.monotonic() - member.last_poll, assignment))
        lines.append("fastkc log, last {0} lines:".format(len(RECENT_LOG.lines)))
        lines.extend(RECENT_LOG.lines)
        return "\n".join(lines)

    def all_proxies(self):
        return list(self.cluster.proxies.values())


class _RecentLog(logging.Handler):
    """The last lines fastkc logged during a scenario (DEBUG), kept for
    Ctx.diagnosis()."""

    def __init__(self, keep=120):
        super().__init__(logging.DEBUG)
        self.lines = collections.deque(maxlen=keep)
        self.setFormatter(logging.Formatter("%(relativeCreated)8.0f %(threadName)s %(name)s %(message)s"))

    def emit(self, record):
        self.lines.append(self.format(record)[:300])

    @contextlib.contextmanager
    def attached(self):
        self.lines.clear()
        logger = logging.getLogger("fastkc")
        level = logger.level
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)
        try:
            yield
        finally:
            logger.removeHandler(self)
            logger.setLevel(level)


RECENT_LOG = _RecentLog()


def make_fastkc(bootstrap, topic, partitions, group_id=None, **configs):
    from fastkc import KafkaConsumer, TopicPartition

    conf = dict(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                client_id="faults")
    conf.update(CONSUMER_TIMEOUTS)
    if group_id:
        conf.update(GROUP_TIMEOUTS)
        conf["group_id"] = group_id
    conf.update(configs)

    def make(listener=None):
        consumer = KafkaConsumer(**conf)
        if group_id:
            consumer.subscribe([topic], listener=listener)
        else:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        return consumer

    return make


def run_scenario(cluster, name, inject, *, partitions=3, rate=150, group=True, expected_errors=(),
                 settle=60.0, consumer_configs=None, topic_configs=None, allow_duplicates=True,
                 commit_every=1.0):
    ledger = Ledger(name, expected_errors=expected_errors)
    topic = create_topic(cluster.direct, unique_name("faults-" + name), partitions=partitions,
                         replication_factor=3, configs=topic_configs)
    group_id = unique_name("faults-group") if group else None
    producer = SteadyProducer(cluster.direct, topic, partitions, ledger, rate=rate)
    make = make_fastkc(cluster.bootstrap, topic, partitions, group_id, **(consumer_configs or {}))
    driver = ConsumerDriver(ledger, make, commit_every=commit_every if group else None)
    auditor = CommitAuditor(cluster.direct, group_id, topic, ledger) if group else None
    ctx = Ctx(cluster, topic, ledger, producer, driver, group_id, make, [driver], auditor)
    with RECENT_LOG.attached():
        return _run(ctx, inject, settle, allow_duplicates, name)


def _run(ctx, inject, settle, allow_duplicates, name):
    ledger, producer, auditor = ctx.ledger, ctx.producer, ctx.auditor
    producer.start()
    ctx.driver.start()
    if auditor is not None:
        auditor.start()
    began = time.monotonic()
    try:
        ctx.wait_flowing(timeout=30.0, more=50)
        inject(ctx)
        producer.finish(timeout=90)
        caught = ledger.wait_caught_up(settle, producer)
    finally:
        producer.finish(timeout=90)
        stopped = all([m.finish(timeout=30) for m in ctx.members])
        if auditor is not None:
            auditor.finish()
            auditor.read_now()  # what the group left committed, against everything handed out
    report = ledger.report(allow_duplicates=allow_duplicates)
    report_dict = asdict(report)
    report_dict.update(seconds=round(time.monotonic() - began, 1), producer_failures=len(producer.failed),
                       longest_poll_s=round(max(m.longest_poll for m in ctx.members), 2),
                       broker_commit_reads_failed=auditor.failed_reads if auditor else None)
    record(report_dict)
    longest = max(m.longest_poll for m in ctx.members)
    print("\n" + report.row(), "longest poll {0:.2f}s".format(longest))
    assert stopped, "the consumer thread did not stop (close() hung)"
    problems = report.failures()
    assert caught or problems, "consumer did not catch up within {0}s".format(settle)
    assert not problems, "{0}: {1}".format(name, "; ".join(problems))
    if auditor is not None:
        # the read-back check ran: a group that committed was read back at least once
        assert report.broker_commit_reads > 0 and (not ledger.committed_any() or any(
            offsets for _, offsets in ledger.broker_commits)), (
            "no committed offsets read back from the brokers: {0} answers {1}, {2} reads failed or empty, "
            "last accepted commit {3}".format(report.broker_commit_reads, ledger.broker_commits[-3:],
                                              auditor.failed_reads, ledger.commits[-1:]))
    assert longest < 15.0, "poll() blocked {0:.1f}s".format(longest)
    return report
