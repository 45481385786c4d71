"""Jepsen-style accounting for the fault campaign, written once and used by
every scenario (tests/faults/test_*.py) and by the soak.

A run records:
- produced: every (partition, offset) a delivery report confirmed
  (SteadyProducer: confluent-kafka, acks=all, straight to the brokers);
- deliveries: every (partition, offset, time, consumer) the application was
  handed by fastkc's poll();
- commits: every commit the broker accepted (time, consumer, {partition: offset});
- faults: every fault injected (name, start, heal time);
- errors: every exception out of fastkc's public calls (time, type name,
  message), with `untyped` for anything not a fastkc.errors.KafkaError.

`Ledger.check()` then asserts:
1. lost: every produced offset was delivered at least once;
2. gaps: per partition and per consumer, consecutive deliveries move on by
   exactly one offset, or go back (a re-delivery after a rebalance or
   reset), or jump forward only over offsets some member had already
   delivered (a partition handed back after others consumed it);
3. commits never ahead: a commit for partition p is at most one past the
   highest offset of p any consumer had been handed when it was accepted;
4. duplicates only after the last successful commit: a re-delivered offset
   o of p is >= the latest commit of p accepted before the re-delivery began
   (a consumer re-reads from the committed offset, not before); scenarios
   without groups allow no duplicates at all;
5. typed errors only, and only of the kinds the scenario expects.
`recovery()` gives, per healed fault, the time from the heal to the next
record delivered (median and worst over the run's faults).
"""
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from fastkc import errors as fk_errors


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
    recovery_median_s: float
    recovery_worst_s: float
    recoveries: list = field(default_factory=list)
    # per fault: (name, seconds it lasted, records delivered meanwhile,
    # longest pause between deliveries from its start to the first delivery
    # after its heal)
    fault_windows: list = field(default_factory=list)
    worst_stall_s: float = 0.0
    # produced (acknowledged) → first delivered, over every record: what the
    # consumer adds, whatever the producer's own stalls
    delay_median_s: float = 0.0
    delay_worst_s: float = 0.0

    def ok(self):
        return not (self.lost or self.gaps or self.commits_ahead or self.early_duplicates
                    or self.untyped_errors or self.unexpected_errors)

    HEADER = ("| scenario | faults | produced | delivered | lost | duplicates | recovery median / worst (s) "
              "| worst stall (s) | delay median / worst (s) | errors raised (typed) |\n"
              "|---|---|---|---|---|---|---|---|---|---|")

    def row(self):
        """One line for RESULTS.md (columns: HEADER)."""
        errs = ", ".join("{0}×{1}".format(k, v) for k, v in sorted(self.errors.items())) or "none"
        rec = ("{0:.2f} / {1:.2f}".format(self.recovery_median_s, self.recovery_worst_s)
               if self.recoveries else "n/a")
        return "| {0} | {1} | {2} | {3} | {4} | {5} | {6} | {7:.2f} | {8:.2f} / {9:.2f} | {10} |".format(
            self.scenario, self.faults, self.produced, self.delivered, self.lost, self.duplicates, rec,
            self.worst_stall_s, self.delay_median_s, self.delay_worst_s, errs)

    def failures(self):
        out = []
        if self.lost:
            out.append("{0} produced records never delivered".format(self.lost))
        for what in ("gaps", "commits_ahead", "early_duplicates", "untyped_errors", "unexpected_errors"):
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
        self.deliveries = []  # (partition, offset, t, consumer)
        self.commits = []  # (t, consumer, {partition: offset})
        self.faults = []
        self.errors = []  # (t, exc type name, message, typed, expected)

    # --- recording ---------------------------------------------------------
    def produced_one(self, partition, offset):
        with self.lock:
            self.produced.add((partition, offset))
            self.produced_at[(partition, offset)] = time.time()

    def delivered(self, records_by_tp, consumer="c0", t=None):
        t = time.time() if t is None else t
        with self.lock:
            for tp, records in records_by_tp.items():
                for r in records:
                    self.deliveries.append((tp.partition, r.offset, t, consumer))

    def delivered_pairs(self, pairs, t, consumer):
        with self.lock:
            for p, o in pairs:
                self.deliveries.append((p, o, t, consumer))

    def committed(self, offsets, consumer="c0", t=None):
        """offsets: {partition: next offset} the broker accepted."""
        t = time.time() if t is None else t
        with self.lock:
            self.commits.append((t, consumer, dict(offsets)))

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

    def recovery(self):
        with self.lock:
            times = sorted(t for _, _, t, _ in self.deliveries)
            faults = list(self.faults)
        out = []
        import bisect
        for f in faults:
            if f.heal is None:
                continue
            i = bisect.bisect_right(times, f.heal)
            if i < len(times):
                out.append(round(times[i] - f.heal, 3))
        return out

    # --- the checks ----------------------------------------------------------
    def report(self, allow_duplicates=True):
        with self.lock:
            deliveries = list(self.deliveries)
            commits = sorted(self.commits, key=lambda c: c[0])
            produced = set(self.produced)
            errors = list(self.errors)
            produced_at = dict(self.produced_at)
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

        # 4. duplicates: the first re-delivery of each run starts at or
        # after the latest commit accepted before it.
        seen = set()
        dups = 0
        early = []
        last_commit = defaultdict(lambda: -1)
        for _when, _kind, ev in events:
            if ev[0] == "c":
                for p, off in ev[1].items():
                    last_commit[int(p)] = off
                continue
            _, p, o, c = ev
            if (p, o) in seen:
                dups += 1
                if not allow_duplicates or o < last_commit[p]:
                    early.append((c, p, o, last_commit[p]))
            seen.add((p, o))

        counts = defaultdict(int)
        for _, name, _, _, _ in errors:
            counts[name] += 1
        untyped = [(name, msg) for _, name, msg, typed, _ in errors if not typed]
        unexpected = [(name, msg) for _, name, msg, typed, exp in errors if typed and not exp]
        rec = self.recovery()
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
            recovery_median_s=statistics.median(rec) if rec else 0.0,
            recovery_worst_s=max(rec) if rec else 0.0, recoveries=rec, fault_windows=windows,
            worst_stall_s=max((w[3] for w in windows), default=0.0),
            delay_median_s=round(statistics.median(delays), 3) if delays else 0.0,
            delay_worst_s=round(delays[-1], 3) if delays else 0.0)


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
            self.ledger.produced_one(msg.partition(), msg.offset())

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


class ConsumerDriver(threading.Thread):
    """Runs a fastkc KafkaConsumer's poll loop on its own thread (the
    consumer is used by this thread only), recording deliveries, accepted
    commits (commit() every `commit_every` s when group_id is set) and every
    exception its public calls raise. An exception is recorded and the loop
    goes on (a typed error is part of the contract; the scenario says which
    ones are allowed)."""

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
        self.consumer = self.make_consumer()
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
            try:
                self.consumer.close(autocommit=False)
            except Exception as exc:  # noqa: BLE001
                self.ledger.error(exc)

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
