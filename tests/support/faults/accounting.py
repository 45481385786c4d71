"""Jepsen-style accounting for the fault campaign, written once and used by
every scenario (tests/faults/test_*.py) and by the soak.

A run records:
- produced: every (partition, offset) a delivery report confirmed, with a
  digest of its value (SteadyProducer: confluent-kafka, acks=all, straight
  to the brokers, a distinct value per record);
- deliveries: every (partition, offset, time, consumer) the application was
  handed by fastkc's poll(), and the digest of each delivered value;
- commits: every commit fastkc said the broker accepted (time, consumer,
  {partition: offset});
- broker commits: the group's committed offsets as the broker answers them
  to an independent client (CommitAuditor: confluent-kafka's AdminClient,
  list_consumer_group_offsets, every half second and once at the end), with
  the time each answer came;
- events: every fault injected (name, start, heal time), every rebalance a
  member's listener saw and every member started or stopped: what may
  explain a re-delivery;
- errors: every exception out of fastkc's public calls (time, type name,
  message), with `untyped` for anything not a fastkc.errors.KafkaError.

`Ledger.report()` then counts, and `Report.failures()` fails the run on any of:
1. lost: every produced offset was delivered at least once;
2. wrong values: a delivered value whose digest differs from the one produced
   at that (partition, offset);
3. gaps: per partition and per consumer, consecutive deliveries move on by
   exactly one offset, or go back (a re-delivery after a rebalance or
   reset), or jump forward only over offsets some member had already
   delivered (a partition handed back after others consumed it);
4. commits never ahead, two ways: a commit fastkc reported for partition p
   is at most one past the highest offset of p any consumer had been handed
   when it was accepted; and every committed offset the broker answered with
   is at most one past the highest offset of p handed out before the answer
   came (the independent read-back);
5. duplicates: a re-delivered offset o of p is >= the latest commit of p
   accepted before the re-delivery began (a consumer re-reads from the
   committed offset, not before), and the re-delivery starts inside an
   event's window (from its start to DUPLICATE_GRACE_S after its end); with
   allow_duplicates=False none at all;
6. typed errors only, and only of the kinds the scenario expects.
`catch_up()` gives, per healed fault and per partition, the time from the
heal until that partition had handed out every record acknowledged as
produced before the heal (0 when it already had), worst partition first;
the report's recovery figures are each fault's worst partition.
"""
import bisect
import hashlib
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from fastkc import errors as fk_errors

# A re-delivery is explained by an event (fault, rebalance, member start or
# stop) that began before it and ended at most this long before: the group's
# session timeout in the campaign (6 s, runner.GROUP_TIMEOUTS) for a member
# whose loss the coordinator only notices then, plus the new owner's first
# fetches from the committed offset.
DUPLICATE_GRACE_S = 10.0


def digest(value):
    """A value's digest as the ledger keeps it (None for a null value)."""
    return None if value is None else hashlib.blake2b(value, digest_size=8).digest()


@dataclass
class Event:
    """Something that may explain re-deliveries: a rebalance, a member started or stopped."""
    name: str
    start: float
    end: float = None


@dataclass
class Fault:
    name: str
    start: float
    heal: float = None


@dataclass
class Report:
    scenario: str
    produced: int
    delivered: int  # distinct (partition, offset)
    deliveries: int  # including re-deliveries
    lost: int
    duplicates: int
    gaps: list
    commits_ahead: list
    early_duplicates: list
    untyped_errors: list
    unexpected_errors: list
    errors: dict  # type name → count
    faults: int
    # per healed fault, its worst partition's catch-up (catch_up()): median and worst over the faults
    recovery_median_s: float
    recovery_worst_s: float
    recoveries: list = field(default_factory=list)  # each fault's worst partition's catch-up (s)
    # per healed fault: (name, [(partition, seconds to catch up)], worst partition first)
    catch_up: list = field(default_factory=list)
    values_checked: int = 0  # deliveries whose value was compared with the produced one
    wrong_values: list = field(default_factory=list)  # (consumer, partition, offset)
    broker_commit_reads: int = 0  # committed-offset answers read back by the independent client
    broker_commits_ahead: list = field(default_factory=list)  # (time, partition, committed, handled)
    unexplained_duplicates: list = field(default_factory=list)  # (consumer, partition, offset, time)
    # per fault: (name, seconds it lasted, records delivered meanwhile,
    # longest pause between deliveries from its start to the first delivery
    # after its heal)
    fault_windows: list = field(default_factory=list)
    worst_stall_s: float = 0.0
    # produced (acknowledged) → first delivered, over every record: what the
    # consumer adds, whatever the producer's own stalls
    delay_median_s: float = 0.0
    delay_worst_s: float = 0.0

    CHECKS = ("wrong_values", "gaps", "commits_ahead", "broker_commits_ahead", "early_duplicates",
              "unexplained_duplicates", "untyped_errors", "unexpected_errors")

    def ok(self):
        return not (self.lost or any(getattr(self, what) for what in self.CHECKS))

    HEADER = ("| scenario | faults | produced | delivered | lost | duplicates | values checked / wrong "
              "| broker commit reads / ahead | caught up after heal, worst partition: median / worst (s) "
              "| worst stall (s) | delay median / worst (s) | errors raised (typed) |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|")

    def row(self):
        """One line for RESULTS.md (columns: HEADER)."""
        errs = ", ".join("{0}×{1}".format(k, v) for k, v in sorted(self.errors.items())) or "none"
        rec = ("{0:.2f} / {1:.2f}".format(self.recovery_median_s, self.recovery_worst_s)
               if self.recoveries else "n/a")
        return ("| {0} | {1} | {2} | {3} | {4} | {5} | {6} / {7} | {8} / {9} | {10} | {11:.2f} | {12:.2f} / {13:.2f} "
                "| {14} |").format(
            self.scenario, self.faults, self.produced, self.delivered, self.lost, self.duplicates,
            self.values_checked, len(self.wrong_values), self.broker_commit_reads, len(self.broker_commits_ahead),
            rec, self.worst_stall_s, self.delay_median_s, self.delay_worst_s, errs)

    def failures(self):
        out = []
        if self.lost:
            out.append("{0} produced records never delivered".format(self.lost))
        for what in self.CHECKS:
            items = getattr(self, what)
            if items:
                out.append("{0}: {1}".format(what, items[:5]))
        return out


class Ledger:
    def __init__(self, scenario, expected_errors=()):
        self.scenario = scenario
        self.expected_errors = tuple(expected_errors)  # fastkc.errors classes a scenario may see
        self.lock = threading.Lock()
        self.produced = set()
        self.produced_at = {}  # (partition, offset) → time its delivery report came
        self.produced_digest = {}  # (partition, offset) → digest of the value produced there
        self.deliveries = []  # (partition, offset, t, consumer)
        self.delivered_digests = []  # (partition, offset, digest, consumer): values as handed out
        self.commits = []  # (t, consumer, {partition: offset})
        self.broker_commits = []  # (t the answer came, {partition: committed offset}) read back independently
        self.faults = []
        self.events = []  # rebalances, members started / stopped (Event)
        self.errors = []  # (t, exc type name, message, typed, expected)

    # --- recording ---------------------------------------------------------
    def produced_one(self, partition, offset, value=None):
        """A delivery report for (partition, offset); `value` (bytes) when the
        producer knows it, so the consumers' values can be checked."""
        with self.lock:
            self.produced.add((partition, offset))
            self.produced_at[(partition, offset)] = time.time()
            if value is not None:
                self.produced_digest[(partition, offset)] = digest(value)

    def delivered(self, records_by_tp, consumer="c0", t=None):
        t = time.time() if t is None else t
        with self.lock:
            for tp, records in records_by_tp.items():
                for r in records:
                    self.deliveries.append((tp.partition, r.offset, t, consumer))
                    self.delivered_digests.append((tp.partition, r.offset, digest(r.value), consumer))

    def delivered_pairs(self, pairs, t, consumer):
        with self.lock:
            for p, o in pairs:
                self.deliveries.append((p, o, t, consumer))

    def committed(self, offsets, consumer="c0", t=None):
        """offsets: {partition: next offset} the broker accepted."""
        t = time.time() if t is None else t
        with self.lock:
            self.commits.append((t, consumer, dict(offsets)))

    def committed_any(self):
        """True once a commit of some offsets was accepted (a commit with no
        partition, e.g. while nothing was assigned, commits nothing)."""
        with self.lock:
            return any(offsets for _t, _c, offsets in self.commits)

    def broker_committed(self, offsets, t=None):
        """offsets: {partition: committed offset} as the broker answered an
        independent client at `t` (partitions with no commit left out)."""
        t = time.time() if t is None else t
        with self.lock:
            self.broker_commits.append((t, dict(offsets)))

    def event(self, name, start=None, end=None):
        """A rebalance or a member started / stopped (at `start`, lasting until `end`)."""
        e = Event(name, time.time() if start is None else start, end)
        with self.lock:
            self.events.append(e)
        return e

    def error(self, exc, t=None):
        typed = isinstance(exc, fk_errors.KafkaError)
        expected = typed and isinstance(exc, self.expected_errors) if self.expected_errors else False
        with self.lock:
            self.errors.append((time.time() if t is None else t, type(exc).__name__, str(exc)[:300],
                                typed, expected))

    def fault(self, name):
        f = Fault(name, time.time())
        with self.lock:
            self.faults.append(f)
        return f

    def healed(self, fault, t=None):
        fault.heal = time.time() if t is None else t

    # --- queries -------------------------------------------------------------
    def delivered_set(self):
        with self.lock:
            return {(p, o) for p, o, _, _ in self.deliveries}

    def caught_up(self):
        """Everything produced so far was delivered."""
        with self.lock:
            produced = set(self.produced)
        return produced <= self.delivered_set()

    def wait_caught_up(self, timeout, producer=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if producer is None or producer.idle():
                if self.caught_up():
                    return True
            time.sleep(0.1)
        return False

    def catch_up(self):
        """[(fault name, [(partition, seconds)])] per healed fault: for each
        partition with records acknowledged as produced before the heal, the
        time from the heal until every one of them had been handed out (0.0
        when all had been already; None when one never was), worst first."""
        with self.lock:
            produced_at = dict(self.produced_at)
            faults = list(self.faults)
            first = {}
            for p, o, t, _ in self.deliveries:
                if (p, o) not in first or t < first[(p, o)]:
                    first[(p, o)] = t
        out = []
        for f in faults:
            if f.heal is None:
                continue
            latest = {}  # partition → when its last record acknowledged before the heal was first handed out
            for (p, o), acked in produced_at.items():
                if acked > f.heal:
                    continue
                handed = first.get((p, o), float("inf"))
                latest[p] = max(latest.get(p, float("-inf")), handed)
            per_partition = [(p, None if t == float("inf") else round(max(0.0, t - f.heal), 3))
                             for p, t in latest.items()]
            per_partition.sort(key=lambda x: (x[1] is not None, -(x[1] or 0.0), x[0]))
            out.append((f.name, per_partition))
        return out

    def recovery(self):
        """Each healed fault's worst partition's catch-up (catch_up()), in fault order."""
        return [partitions[0][1] if partitions else 0.0 for _, partitions in self.catch_up()]

    # --- the checks ----------------------------------------------------------
    def report(self, allow_duplicates=True):
        with self.lock:
            deliveries = list(self.deliveries)
            commits = sorted(self.commits, key=lambda c: c[0])
            broker_commits = sorted(self.broker_commits, key=lambda c: c[0])
            produced = set(self.produced)
            errors = list(self.errors)
            produced_at = dict(self.produced_at)
            produced_digest = dict(self.produced_digest)
            delivered_digests = list(self.delivered_digests)
            windows = [(e.start, (e.end if e.end is not None else e.start) + DUPLICATE_GRACE_S)
                       for e in self.events]
            windows += [(f.start, (f.heal if f.heal is not None else float("inf")) + DUPLICATE_GRACE_S)
                        for f in self.faults]
        delivered = {(p, o) for p, o, _, _ in deliveries}
        first = {}
        for p, o, t, _ in deliveries:
            if (p, o) not in first or t < first[(p, o)]:
                first[(p, o)] = t
        delays = sorted(max(0.0, first[k] - t) for k, t in produced_at.items() if k in first)
        lost = produced - delivered

        gaps = []
        by_consumer = defaultdict(list)
        for p, o, t, c in deliveries:
            by_consumer[(c, p)].append((o, t))
        for (c, p), seq in by_consumer.items():
            for (prev, _), (cur, t) in zip(seq, seq[1:]):
                # a jump forward is a hand-over coming back (another member
                # delivered the offsets in between meanwhile) or a gap
                if cur > prev + 1 and any((p, x) in produced and first.get((p, x), float("inf")) > t
                                          for x in range(prev + 1, cur)):
                    gaps.append((c, p, prev, cur))

        # 3. a commit of p is at most one past the highest offset of p any
        # consumer had been handed when it was accepted
        ahead = []
        handed = defaultdict(lambda: -1)  # p → highest offset handed so far
        events = sorted([(t, 0, ("d", p, o, c)) for p, o, t, c in deliveries]
                        + [(t, 1, ("c", offs, c)) for t, c, offs in commits], key=lambda e: (e[0], e[1]))
        for _when, _, ev in events:
            if ev[0] == "d":
                _, p, o, c = ev
                handed[p] = max(handed[p], o)
            else:
                _, offs, c = ev
                for p, off in offs.items():
                    p = int(p)
                    if off > handed[p] + 1:
                        ahead.append((c, p, off, handed[p]))

        # 4b. the committed offsets the broker answered with, against what
        # had been handed out before each answer came
        broker_ahead = []
        handed_times = defaultdict(list)  # p → [(t, offset)] sorted by time
        for p, o, t, _ in sorted(deliveries, key=lambda d: d[2]):
            handed_times[p].append((t, o))
        highest = {p: _running_max([o for _, o in seq]) for p, seq in handed_times.items()}
        times_of = {p: [t for t, _ in seq] for p, seq in handed_times.items()}
        for t, offs in broker_commits:
            for p, off in offs.items():
                i = bisect.bisect_right(times_of.get(p, []), t)
                handed = highest[p][i - 1] if i else -1
                if off > handed + 1:
                    broker_ahead.append((round(t, 3), p, off, handed))

        # 5. duplicates: the first re-delivery of each run starts at or
        # after the latest commit accepted before it, inside an event's window.
        seen = set()
        dups = 0
        early = []
        unexplained = []
        last_commit = defaultdict(lambda: -1)
        for when, _kind, ev in events:
            if ev[0] == "c":
                for p, off in ev[1].items():
                    last_commit[int(p)] = off
                continue
            _, p, o, c = ev
            if (p, o) in seen:
                dups += 1
                if not allow_duplicates or o < last_commit[p]:
                    early.append((c, p, o, last_commit[p]))
                elif not any(a <= when <= b for a, b in windows):
                    unexplained.append((c, p, o, round(when, 3)))
            seen.add((p, o))

        # 2. values: each delivered value against the one produced at its offset
        wrong_values = [(c, p, o) for p, o, d, c in delivered_digests
                        if (p, o) in produced_digest and produced_digest[(p, o)] != d]
        values_checked = sum(1 for p, o, _, _ in delivered_digests if (p, o) in produced_digest)

        counts = defaultdict(int)
        for _, name, _, _, _ in errors:
            counts[name] += 1
        untyped = [(name, msg) for _, name, msg, typed, _ in errors if not typed]
        unexpected = [(name, msg) for _, name, msg, typed, exp in errors if typed and not exp]
        catch_up = self.catch_up()
        rec = [parts[0][1] if parts else 0.0 for _, parts in catch_up]
        rec_known = [r for r in rec if r is not None]
        windows = []
        times = sorted(t for _, _, t, _ in deliveries)
        for f in self.faults:
            end = f.heal if f.heal is not None else time.time()
            inside = [t for t in times if f.start <= t < end]
            after = [t for t in times if t >= end][:1]
            points = [f.start] + inside + after
            stall = max((b - a for a, b in zip(points, points[1:])), default=0.0)
            windows.append((f.name, round(end - f.start, 2), len(inside), round(stall, 3)))
        return Report(
            scenario=self.scenario, produced=len(produced), delivered=len(delivered & produced),
            deliveries=len(deliveries), lost=len(lost), duplicates=dups, gaps=gaps, commits_ahead=ahead,
            early_duplicates=early, untyped_errors=untyped, unexpected_errors=unexpected, errors=dict(counts),
            faults=len(self.faults),
            # a fault after which some partition never caught up counts as infinitely slow (and as lost records)
            recovery_median_s=statistics.median(rec_known) if rec_known and len(rec_known) == len(rec)
            else (float("inf") if rec else 0.0),
            recovery_worst_s=(max(rec_known) if len(rec_known) == len(rec) else float("inf")) if rec else 0.0,
            recoveries=rec, catch_up=catch_up, values_checked=values_checked, wrong_values=wrong_values,
            broker_commit_reads=len(broker_commits), broker_commits_ahead=broker_ahead,
            unexplained_duplicates=unexplained, fault_windows=windows,
            worst_stall_s=max((w[3] for w in windows), default=0.0),
            delay_median_s=round(statistics.median(delays), 3) if delays else 0.0,
            delay_worst_s=round(delays[-1], 3) if delays else 0.0)


def _running_max(values):
    out, best = [], -1
    for v in values:
        best = max(best, v)
        out.append(best)
    return out


def committed_offsets(admin, group, topic, timeout=10.0):
    """{partition: committed offset} of `group` on `topic`, as the brokers answer
    confluent-kafka's AdminClient `admin` (partitions without a commit left out)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                               request_timeout=timeout)[group]
    answer = future.result(timeout)
    return {tp.partition: tp.offset for tp in answer.topic_partitions
            if tp.topic == topic and tp.offset >= 0 and tp.error is None}


class CommitAuditor(threading.Thread):
    """An independent reader of the group's committed offsets: confluent-kafka's
    AdminClient (list_consumer_group_offsets, straight to the brokers) every
    `every` seconds, each answer entered with the time it came
    (Ledger.broker_committed). read_now() takes one more answer, e.g. after
    the consumers stopped. Failed reads (the coordinator moving, a fault on
    the way) are counted, not raised: they are the brokers' faults."""

    # every=None (the default): no reads while faults run, only read_now()
    # once the consumers stopped. Reading every 0.5 s through a broker
    # kill -9 made librdkafka abort the whole test process (SIGABRT from one
    # of its threads, in test_kill9_restart_loop, not yet understood): an
    # independent reader must never take the campaign down with it.
    def __init__(self, bootstrap, group, topic, ledger, every=None):
        super().__init__(daemon=True, name="commit-auditor")
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        self.group, self.topic, self.ledger, self.every = group, topic, ledger, every
        self.stop_event = threading.Event()
        self.failed_reads = 0

    def read_now(self, timeout=2.0, attempts=8):
        """One read of the committed offsets, tried up to `attempts` times a
        second apart; True when the broker answered. A short first timeout:
        on a fresh cluster the first reads wait for the offsets topic to
        exist, and the next try should not wait behind them; each later try
        waits twice as long as the one before (up to 16 s), so a loaded
        machine's slow answer still arrives."""
        for attempt in range(attempts):
            try:
                offsets = committed_offsets(self.admin, self.group, self.topic, min(16.0, timeout * 2 ** attempt))
            except Exception:  # noqa: BLE001 - a read during a fault may fail; it is counted
                offsets = None
            if offsets is None or (not offsets and self.ledger.committed_any() and attempt + 1 < attempts):
                # no answer, or none yet where commits were accepted (a
                # coordinator that moved answers before it loaded the group's
                # offsets): counted, and asked again; the last try's answer
                # is kept whatever it says, so lost offsets still fail
                self.failed_reads += 1
                if attempt + 1 < attempts:
                    time.sleep(1.0)
                continue
            self.ledger.broker_committed(offsets, time.time())
            return True
        return False

    def run(self):
        if self.every is None:
            return
        while not self.stop_event.wait(self.every):
            self.read_now()

    def finish(self, timeout=15):
        self.stop_event.set()
        self.join(timeout)


class SteadyProducer(threading.Thread):
    """confluent-kafka's Producer (acks=all, idempotent) writes `rate`
    records/s round-robin over `partitions` straight to the brokers and
    records every delivered (partition, offset) in the ledger."""

    def __init__(self, bootstrap, topic, partitions, ledger, rate=200):
        super().__init__(daemon=True, name="steady-producer")
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "enable.idempotence": True, "message.timeout.ms": 120000,
                                  # the faults make librdkafka log every lost connection
                                  "log_level": 2})
        self.topic = topic
        self.partitions = partitions
        self.ledger = ledger
        self.rate = rate
        self.stop_event = threading.Event()
        self.paused = threading.Event()
        self.sent = 0
        self.acked = 0
        self.failed = []

    def _delivered(self, err, msg):
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked += 1
            self.ledger.produced_one(msg.partition(), msg.offset(), msg.value())

    def idle(self):
        """Everything sent so far has a delivery report."""
        return self.acked + len(self.failed) >= self.sent

    def run(self):
        start = time.monotonic()
        n = 0
        while not self.stop_event.is_set():
            if self.paused.is_set():
                self.producer.poll(0.05)
                start = time.monotonic()
                n = 0
                continue
            self.producer.produce(self.topic, value=b"%d" % self.sent, partition=self.sent % self.partitions,
                                  on_delivery=self._delivered)
            self.sent += 1
            n += 1
            self.producer.poll(0)
            ahead = n / self.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        self.producer.flush(60)

    def finish(self, timeout=60):
        self.stop_event.set()
        self.join(timeout)


class RebalanceEvents:
    """A rebalance listener that enters each call as a ledger event (what may
    explain a re-delivery)."""

    def __init__(self, ledger, member):
        self.ledger, self.member = ledger, member

    def _event(self, what, tps):
        self.ledger.event("{0} {1} {2}".format(self.member, what, sorted(tp.partition for tp in tps)))

    def on_partitions_revoked(self, tps):
        self._event("revoked", tps)

    def on_partitions_assigned(self, tps):
        self._event("assigned", tps)

    def on_partitions_lost(self, tps):
        self._event("lost", tps)


class ConsumerDriver(threading.Thread):
    """Runs a fastkc KafkaConsumer's poll loop on its own thread (the
    consumer is used by this thread only), recording deliveries, accepted
    commits (commit() every `commit_every` s when group_id is set) and every
    exception its public calls raise. An exception is recorded and the loop
    goes on (a typed error is part of the contract; the scenario says which
    ones are allowed). The member's start and stop and its listener's calls
    are ledger events (RebalanceEvents): `make_consumer(listener)` builds the
    consumer and subscribes it with that listener."""

    def __init__(self, ledger, make_consumer, name="c0", commit_every=None, poll_ms=100):
        super().__init__(daemon=True, name="driver-" + name)
        self.ledger = ledger
        self.make_consumer = make_consumer
        self.cname = name
        self.commit_every = commit_every
        self.poll_ms = poll_ms
        self.stop_event = threading.Event()
        self.consumer = None
        self.last_poll = time.monotonic()
        self.longest_poll = 0.0

    def run(self):
        self.ledger.event("member {0} starts".format(self.cname))
        self.consumer = self.make_consumer(RebalanceEvents(self.ledger, self.cname))
        next_commit = time.monotonic() + (self.commit_every or 0)
        try:
            while not self.stop_event.is_set():
                began = time.monotonic()
                try:
                    batch = self.consumer.poll(timeout_ms=self.poll_ms)
                except Exception as exc:  # noqa: BLE001 - every error is accounted
                    self.ledger.error(exc)
                    time.sleep(0.05)
                    continue
                finally:
                    self.longest_poll = max(self.longest_poll, time.monotonic() - began)
                    self.last_poll = time.monotonic()
                if batch:
                    self.ledger.delivered(batch, consumer=self.cname)
                if self.commit_every and time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + self.commit_every
                    self.commit()
        finally:
            stopping = self.ledger.event("member {0} stops".format(self.cname))
            try:
                self.consumer.close(autocommit=False)
            except Exception as exc:  # noqa: BLE001
                self.ledger.error(exc)
            stopping.end = time.time()

    def commit(self):
        try:
            positions = {tp: self.consumer.position(tp) for tp in self.consumer.assignment()}
            self.consumer.commit()
        except Exception as exc:  # noqa: BLE001
            self.ledger.error(exc)
            return
        self.ledger.committed({tp.partition: off for tp, off in positions.items()}, consumer=self.cname)

    def finish(self, timeout=30):
        self.stop_event.set()
        self.join(timeout)
        return not self.is_alive()
