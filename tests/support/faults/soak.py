"""The soak: a group of fastkc members consuming for a long time through the
proxies, with periodic rebalances (the oldest member closes, a new one joins)
and injected faults (toxics in turn, and a broker kill -9 + restart), while
this process's RSS, open file descriptors and thread count are sampled.

    python -m tests.faults.soak --minutes 25            # the long mode (own cluster)
    python -m tests.faults.soak --quick                 # the CI mode, ~2 minutes
    ... --out DIR                                       # soak.json + soak.md there

After a warm-up, the slope of each series is fitted by least squares (per
minute) and compared with its bound (BOUNDS); any slope beyond its bound
fails the run. The records go through the same ledger as the campaign
(tests/support/faults/accounting.py): nothing lost, no gaps, no commit ahead,
re-deliveries only from a commit, typed errors only.

Only the consumers live in this process: the producer is a child process
(confluent-kafka, acks=all) that writes what it was acknowledged to a file,
and deliveries are spooled to a file too, so neither the producer's library
nor the accounting itself shows up in the sampled figures.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

# the repository root (this file is tests/support/faults/soak.py): the producer child runs from it
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# Growth allowed per minute after the warm-up. A leak of one connection, one
# thread or one fetch buffer per rebalance or per fault would exceed them
# (a rebalance every `period` seconds); allocator noise stays well within.
BOUNDS = {"rss_mib": 2.0, "fds": 0.5, "threads": 0.2}
QUICK = dict(minutes=1.3, warmup_s=25.0, sample_s=2.0, period_s=8.0, rate=100)
# the long mode also restarts a broker (kill -9) every 10th period (5 min)
LONG = dict(warmup_s=180.0, sample_s=5.0, period_s=30.0, rate=150, restart_every=10)


def slope_per_minute(points):
    """Least-squares slope of [(t_seconds, value)] in value per minute."""
    n = len(points)
    if n < 3:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    if den == 0:
        return 0.0
    return sum((t - mt) * (v - mv) for t, v in points) / den * 60.0


def sample():
    rss_kib = 0
    threads = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return {"rss_mib": rss_kib / 1024.0, "fds": len(os.listdir("/proc/self/fd")), "threads": threads,
            "py_threads": threading.active_count()}


class SpoolLedger:
    """The ConsumerDriver's recording interface, spooled to a file (JSON lines)."""

    def __init__(self, path, expected_errors):
        from tests.support.faults.accounting import Ledger

        self.fh = open(path, "w", buffering=1 << 16)
        self.path = path
        self.lock = threading.Lock()
        self.errors_ledger = Ledger("soak", expected_errors=expected_errors)
        self.count = 0
        self.events = []  # rebalances, members started / stopped: few, kept in memory

    def delivered(self, records_by_tp, consumer="c0", t=None):
        t = time.time() if t is None else t
        recs = [[tp.partition, r.offset] for tp, records in records_by_tp.items() for r in records]
        with self.lock:
            self.count += len(recs)
            self.fh.write(json.dumps({"e": "d", "c": consumer, "t": t, "r": recs}) + "\n")

    def committed(self, offsets, consumer="c0", t=None):
        t = time.time() if t is None else t
        with self.lock:
            self.fh.write(json.dumps({"e": "c", "c": consumer, "t": t,
                                      "o": {str(p): o for p, o in offsets.items()}}) + "\n")

    def error(self, exc, t=None):
        self.errors_ledger.error(exc, t)

    def event(self, name, start=None, end=None):
        from tests.support.faults.accounting import Event

        e = Event(name, time.time() if start is None else start, end)
        with self.lock:
            self.events.append(e)
        return e

    def close(self):
        with self.lock:
            self.fh.close()

    def load(self, produced_path, faults):
        ledger = self.errors_ledger
        with open(self.path) as fh:
            for line in fh:
                ev = json.loads(line)
                if ev["e"] == "d":
                    ledger.delivered_pairs([tuple(r) for r in ev["r"]], ev["t"], ev["c"])
                else:
                    ledger.committed({int(p): o for p, o in ev["o"].items()}, ev["c"], ev["t"])
        with open(produced_path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 3:
                    p, o, t = int(parts[0]), int(parts[1]), float(parts[2])
                    ledger.produced.add((p, o))
                    ledger.produced_at[(p, o)] = t
        ledger.faults = faults
        ledger.events = list(self.events)
        return ledger


def produce_main(bootstrap, topic, partitions, rate, out_path):
    """The producer child: acks=all, round-robin, (partition offset time) per
    acknowledged record into out_path; SIGTERM flushes and exits."""
    from confluent_kafka import Producer

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    out = open(out_path, "w", buffering=1 << 14)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True, "message.timeout.ms": 300000, "log_level": 2})

    def delivered(err, msg):
        if err is None:
            out.write("{0} {1} {2}\n".format(msg.partition(), msg.offset(), time.time()))

    n = 0
    start = time.monotonic()
    while not stop:
        producer.produce(topic, value=b"%d" % n, partition=n % partitions, on_delivery=delivered)
        n += 1
        producer.poll(0)
        ahead = n / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    producer.flush(120)
    out.close()


def run(cluster, *, minutes, warmup_s, sample_s, period_s, rate, out_dir, members=2, partitions=6,
        log=print, bounds=None, restart_every=None, coordinator_victim=True):
    """Run the soak on `cluster` (tests/faults/conftest.ProxiedCluster) and
    return the result dict (also written to out_dir/soak.json and soak.md)."""
    from fastkc import errors
    from fastkc_tools import broker
    from tests.support.faults.accounting import ConsumerDriver
    from tests.support.faults.runner import make_fastkc
    from tests.support.kafka_tools import coordinator_of, create_topic, unique_name

    bounds = dict(BOUNDS, **(bounds or {}))
    os.makedirs(out_dir, exist_ok=True)
    topic = create_topic(cluster.direct, unique_name("soak"), partitions=partitions, replication_factor=3)
    group = unique_name("soak-group")
    expected = (errors.KafkaTimeoutError, errors.KafkaConnectionError, errors.CommitFailedError,
                errors.RebalanceInProgressError, errors.NodeNotReadyError)
    spool = SpoolLedger(os.path.join(out_dir, "soak-deliveries.jsonl"), expected)
    produced_path = os.path.join(out_dir, "soak-produced.txt")
    producer = subprocess.Popen([sys.executable, "-m", "tests.support.faults.soak", "--produce", cluster.direct, topic,
                                 str(partitions), str(rate), produced_path], cwd=_ROOT)
    make = make_fastkc(cluster.bootstrap, topic, partitions, group)
    live = []
    serial = [0]

    def add_member():
        d = ConsumerDriver(spool, make, name="m%d" % serial[0], commit_every=1.0)
        serial[0] += 1
        live.append(d)
        d.start()

    from tests.support.faults.accounting import Fault

    faults = []
    toxics = [("latency", dict(latency=200, jitter=50), 3.0), ("reset_peer", dict(timeout=200), 2.0),
              ("timeout", dict(timeout=0), 3.0), ("limit_data", dict(bytes=4000), 2.0),
              ("slicer", dict(average_size=100, size_variation=50, delay=100), 3.0),
              ("bandwidth", dict(rate=32), 3.0)]
    samples = []
    began = time.monotonic()
    end = began + minutes * 60.0
    next_sample = began
    next_period = began + period_s
    period = 0
    restarted = False
    for _ in range(members):
        add_member()
    try:
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                s = sample()
                s["t"] = round(now - began, 2)
                s["members"] = len(live)
                samples.append(s)
                next_sample += sample_s
            if now >= next_period:
                period += 1
                # a rebalance: the oldest member closes, a new one joins
                old = live.pop(0)
                old.finish(timeout=30)
                add_member()
                # a fault: a toxic in turn on every proxy; a broker kill -9
                # and restart instead every `restart_every` periods, or
                # (quick mode) once, midway after the warm-up
                if (period % restart_every == 0) if restart_every else (
                        not restarted and now - began > warmup_s + (end - began - warmup_s) / 2):
                    restarted = True
                    # the group coordinator's node: the harshest victim (the
                    # members lose their coordinator and some leaders at once),
                    # and the same one every run rather than one run in three
                    victim = coordinator_of(cluster.direct, group) if coordinator_victim else 1 + period % 3
                    f = Fault("kill -9 + restart node {0}".format(victim), time.time())
                    broker.kill_node(cluster.info, victim)
                    time.sleep(2.0)
                    broker.start_node(cluster.info, victim, timeout=90.0, die_with_parent=True)
                else:
                    kind, attrs, secs = toxics[period % len(toxics)]
                    f = Fault("toxic " + kind, time.time())
                    added = [(p, p.add(kind, **attrs)) for p in cluster.proxies.values()]
                    time.sleep(secs)
                    for p, name in added:
                        p.remove(name)
                f.heal = time.time()
                faults.append(f)
                log("soak: {0:.0f}s, period {1}: {2} (delivered {3})".format(
                    now - began, period, f.name, spool.count))
                next_period = time.monotonic() + period_s
            time.sleep(min(0.2, max(0.0, min(next_sample, next_period) - time.monotonic())))
    finally:
        producer.send_signal(signal.SIGTERM)
        producer.wait(180)
    # let the members catch up with everything produced, then stop them
    # (counts only: the full check runs on the files afterwards)
    deadline = time.monotonic() + 90.0
    last, stable_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        with open(produced_path) as fh:
            acked = sum(1 for _ in fh)
        if spool.count != last:
            last, stable_since = spool.count, time.monotonic()
        if spool.count >= acked and time.monotonic() - stable_since > 2.0:
            break
        time.sleep(0.5)
    for d in live:
        d.finish(timeout=30)
    spool.close()
    ledger = spool.load(produced_path, faults)
    report = ledger.report()

    steady = [s for s in samples if s["t"] >= warmup_s]
    slopes = {k: round(slope_per_minute([(s["t"], s[k]) for s in steady]), 3) for k in bounds}
    over = {k: v for k, v in slopes.items() if v > bounds[k]}
    result = {
        "minutes": minutes, "warmup_s": warmup_s, "sample_s": sample_s, "period_s": period_s, "rate": rate,
        "rebalances": period, "faults": [f.name for f in faults],
        "slopes_per_minute": slopes, "bounds_per_minute": bounds, "over_bounds": over,
        "first": samples[0] if samples else None, "last": samples[-1] if samples else None,
        "max": {k: max(s[k] for s in samples) for k in ("rss_mib", "fds", "threads")} if samples else None,
        "ledger": {k: getattr(report, k) for k in ("produced", "delivered", "lost", "duplicates",
                                                   "recovery_median_s", "recovery_worst_s",
                                                   "delay_median_s", "delay_worst_s", "errors")},
        "ledger_failures": report.failures(),
        # per healed fault, each partition's catch-up after the heal, worst first
        "catch_up": [{"fault": name, "partitions": partitions} for name, partitions in ledger.catch_up()],
        "samples": samples,
    }
    result["ok"] = not over and not report.failures()
    with open(os.path.join(out_dir, "soak.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    with open(os.path.join(out_dir, "soak.md"), "w") as fh:
        fh.write(markdown(result))
    return result


def markdown(result):
    lines = ["## Soak: {0} min, {1} rebalances, {2} faults".format(
        result["minutes"], result["rebalances"], len(result["faults"])), "",
        "| series | first | last | max | slope after {0:.0f}s warm-up (/min) | bound (/min) |".format(
            result["warmup_s"]),
        "|---|---|---|---|---|---|"]
    for k in ("rss_mib", "fds", "threads"):
        lines.append("| {0} | {1:.1f} | {2:.1f} | {3:.1f} | {4:+.3f} | {5} |".format(
            k, result["first"][k], result["last"][k], result["max"][k], result["slopes_per_minute"][k],
            result["bounds_per_minute"][k]))
    lg = result["ledger"]
    lines += ["", "records produced {0}, delivered {1}, lost {2}, duplicates {3}; recovery median {4:.2f}s, "
              "worst {5:.2f}s; errors {6}; {7}".format(
                  lg["produced"], lg["delivered"], lg["lost"], lg["duplicates"], lg["recovery_median_s"],
                  lg["recovery_worst_s"], lg["errors"] or "none", "PASS" if result["ok"] else "FAIL"), ""]
    if result.get("catch_up"):
        lines += ["Caught up after each heal, per partition, worst first:", ""]
        lines += ["- {0}: {1}".format(entry["fault"], ", ".join(
            "p{0} {1}".format(p, "never" if s is None else "{0:.2f} s".format(s)) for p, s in entry["partitions"]))
            for entry in result["catch_up"]]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--produce":
        bootstrap, topic, partitions, rate, out = argv[1:6]
        produce_main(bootstrap, topic, int(partitions), float(rate), out)
        return 0
    parser = argparse.ArgumentParser(prog="python -m tests.faults.soak")
    parser.add_argument("--minutes", type=float, default=25.0)
    parser.add_argument("--quick", action="store_true", help="the CI mode (78 s)")
    parser.add_argument("--out", default=None, help="folder for soak.json / soak.md")
    args = parser.parse_args(argv)
    conf = dict(QUICK) if args.quick else dict(LONG, minutes=args.minutes)
    out = args.out or tempfile.mkdtemp(prefix="fastkc-soak-")
    os.makedirs(out, exist_ok=True)
    from fastkc_tools import broker
    from tests.support.faults.cluster import ProxiedCluster
    from tests.support.faults.toxiproxy import ToxiproxyServer

    server = ToxiproxyServer.start(os.path.join(out, "toxiproxy.log"))
    data_dir = os.path.join(out, "cluster")
    info = broker.start(name="soak", data_dir=data_dir, nodes=3, proxied=True, die_with_parent=True)
    try:
        proxies = {n.node_id: server.client.create("kafka-{0}".format(n.node_id), listen=n.proxy_route()[0],
                                                   upstream=n.proxy_route()[1]) for n in info.nodes}
        result = run(ProxiedCluster(info=info, proxies=proxies, toxiproxy=server), out_dir=out,
                     log=lambda m: print(m, flush=True), **conf)
    finally:
        broker.stop(data_dir=data_dir)
        server.stop()
    print(markdown(result))
    print("written to", out)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
