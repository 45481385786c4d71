"""Rebalance time: from a member joining until every member is consuming again.

    python -m fastkc_tools.bench.rebalance [--bootstrap HOST:PORT] [--repeat N] [--rate R]
    fastkc bench-rebalance [...]

Two members of one client and protocol share a 12-partition topic under
steady production (confluent-kafka's producer, `--rate` records/s); a third
member process joins. Every member logs its listener calls and the records
poll hands it (fastkc_tools/bench/group_worker.py). The rebalance is over at the
first moment when the three own disjoint partitions covering the topic, each
owns at least one, and each has been handed a record from every partition it
owns since its last assignment change. The time from the third member's
subscribe() to that moment is reported, median (and min, max) over the
repeats (the scenarios take turns, one join each per round, the order
rotated each round), for fastkc (classic eager with range, cooperative-sticky, KIP-848)
and confluent-kafka (the same three) on the same broker and settings:
session 3 s, heartbeat 300 ms (classic); the broker's KIP-848 heartbeat
interval (1 s on the local test broker).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from fastkc_tools.bench.driver import PACKAGE_PARENT
from fastkc_tools.bench.group_worker import read_events

PARTITIONS = 12
SCENARIOS = [
    ("fastkc", "classic", "range", "fastkc classic eager (range)"),
    ("confluent", "classic", "range", "confluent-kafka classic eager (range)"),
    ("fastkc", "classic", "cooperative-sticky", "fastkc cooperative-sticky"),
    ("confluent", "classic", "cooperative-sticky", "confluent-kafka cooperative-sticky"),
    ("fastkc", "consumer", "range", "fastkc KIP-848 (consumer protocol)"),
    ("confluent", "consumer", "range", "confluent-kafka KIP-848 (consumer protocol)"),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", default=None, help="use this broker (default: start a local one)")
    parser.add_argument("--repeat", type=int, default=3, help="joins measured per scenario (median reported)")
    parser.add_argument("--rate", type=int, default=1200, help="records/s produced while measuring")
    parser.add_argument("--only", default=None, help="comma-separated client names to run (fastkc,confluent)")
    parser.add_argument("--json", default=None, help="also write the results to this file")


class _Producer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.rate = topic, rate
        self.stop = threading.Event()

    def run(self) -> None:
        i, start = 0, time.monotonic()
        while not self.stop.is_set():
            self.producer.produce(self.topic, value=b"x", partition=i % PARTITIONS)
            i += 1
            self.producer.poll(0)
            ahead = i / self.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        self.producer.flush(10)


def _runner_env() -> dict[str, str]:
    # the member processes import the same fastkc as this one (see driver.PACKAGE_PARENT)
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create the topic (fastkc's own CreateTopics) and wait until every
    partition has a leader, so the members' first assignment is the whole topic."""
    from fastkc.net.blocking import BlockingConnection
    from fastkc_tools import sample_run

    host, port = sample_run.split_bootstrap(bootstrap)
    deadline = time.monotonic() + timeout
    with BlockingConnection(host, port, timeout=timeout) as conn:
        sample_run.create_topic(conn, topic, partitions)
        while True:
            md = conn.request("Metadata", {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
            (entry,) = md["topics"]
            if (entry["error_code"] == 0 and len(entry["partitions"]) == partitions
                    and all(p["leader_id"] >= 0 for p in entry["partitions"])):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("topic {0} has no leader for every partition after {1}s".format(topic, timeout))
            time.sleep(0.1)


def _spawn(bootstrap: str, topic: str, group: str, out: str, client: str, protocol: str,
           assignor: str) -> "subprocess.Popen[bytes]":
    return subprocess.Popen([sys.executable, "-m", "fastkc_tools.bench.group_worker", bootstrap, topic, group, out,
                             "--client", client, "--protocol", protocol, "--assignor", assignor,
                             "--commit-interval-ms", "1000"],
                            cwd=PACKAGE_PARENT, env=_runner_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def settled_at(logs: Sequence[Sequence[dict[str, Any]]], since: float) -> float | None:
    """The first time after `since` at which the members own disjoint
    partitions covering the topic, each owns some, and each was handed a
    record from every partition it owns since its last assignment change."""
    events = sorted(((ev["t"], i, ev) for i, evs in enumerate(logs) for ev in evs), key=lambda x: (x[0], x[1]))
    owned: list[set[int]] = [set() for _ in logs]
    fresh: list[set[int]] = [set() for _ in logs]  # partitions handed a record since the last change
    for t, i, ev in events:
        kind = ev["e"]
        if kind == "assigned":
            owned[i] |= set(ev["tps"])
            fresh[i] = set()
        elif kind in ("revoked", "lost"):
            owned[i] -= set(ev["tps"])
            fresh[i] = set()
        elif kind == "records":
            fresh[i] |= {p for p, _ in ev["recs"]}
        else:
            continue
        if t < since:
            continue
        union: set[int] = set().union(*owned)
        if len(union) == PARTITIONS and sum(len(o) for o in owned) == PARTITIONS and all(owned) \
                and all(o <= f for o, f in zip(owned, fresh)):
            return float(t)
    return None


def measure(bootstrap: str, client: str, protocol: str, assignor: str, rate: int, timeout: float = 60.0) -> float:
    topic = "rebalance-" + uuid.uuid4().hex[:8]
    group = "rb-" + uuid.uuid4().hex[:8]
    create_topic(bootstrap, topic, PARTITIONS)
    producer = _Producer(bootstrap, topic, rate)
    producer.start()
    tmp = tempfile.mkdtemp(prefix="fastkc-rebalance-")
    paths = [os.path.join(tmp, "m{0}.jsonl".format(i)) for i in range(3)]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for path in paths[:2]:
            procs.append(_spawn(bootstrap, topic, group, path, client, protocol, assignor))
        deadline = time.monotonic() + timeout
        while settled_at([read_events(p) for p in paths[:2]], 0) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the first two members never settled")
            time.sleep(0.1)
        # steady state first: past any post-rebalance heartbeat follow-ups
        time.sleep(3.0)
        procs.append(_spawn(bootstrap, topic, group, paths[2], client, protocol, assignor))
        while True:
            logs = [read_events(p) for p in paths]
            ready = [ev["t"] for ev in logs[2] if ev["e"] == "ready"]
            if ready:
                done = settled_at(logs, ready[0])
                if done is not None:
                    return done - float(ready[0])
            if time.monotonic() > deadline + timeout:
                raise RuntimeError("no settled group after the join")
            time.sleep(0.1)
    finally:
        producer.stop.set()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        producer.join(15)


def main(args: argparse.Namespace) -> int:
    started = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from fastkc_tools import broker

        data_dir = tempfile.mkdtemp(prefix="fastkc-rebalance-broker-")
        started = broker.start(name="bench-rebalance", data_dir=data_dir)
        bootstrap = started.bootstrap_servers
    only = set(args.only.split(",")) if args.only else None
    scenarios = [sc for sc in SCENARIOS if not only or sc[0] in only]
    times: dict[str, list[float]] = {label: [] for _, _, _, label in scenarios}
    results: list[dict[str, Any]] = []
    try:
        # The scenarios take turns, one join each per round, the order rotated
        # by one per round: no client always goes first on a fresher broker.
        for round_no in range(args.repeat):
            shift = round_no % len(scenarios) if scenarios else 0
            for client, protocol, assignor, label in scenarios[shift:] + scenarios[:shift]:
                times[label].append(measure(bootstrap, client, protocol, assignor, args.rate))
        for client, protocol, assignor, label in scenarios:
            seconds = times[label]
            results.append({"scenario": label, "client": client, "protocol": protocol, "assignor": assignor,
                            "seconds": seconds, "median": statistics.median(seconds)})
            print("{0:<48} median {1:6.3f} s   (min {2:.3f}, max {3:.3f}, n={4})".format(
                label, statistics.median(seconds), min(seconds), max(seconds), len(seconds)), flush=True)
    finally:
        if started is not None:
            from fastkc_tools import broker

            broker.stop(data_dir=data_dir)
    print()
    print("{0:<24} {1:>10} {2:>16} {3:>8}".format("protocol", "fastkc s", "confluent-kafka s", "ratio"))
    by = {(r["client"], r["protocol"], r["assignor"]): r["median"] for r in results}
    for protocol, assignor, name in (("classic", "range", "eager (range)"),
                                     ("classic", "cooperative-sticky", "cooperative-sticky"),
                                     ("consumer", "range", "KIP-848")):
        ours, theirs = by.get(("fastkc", protocol, assignor)), by.get(("confluent", protocol, assignor))
        print("{0:<24} {1:>10} {2:>16} {3:>8}".format(
            name, "-" if ours is None else "{0:.3f}".format(ours), "-" if theirs is None else "{0:.3f}".format(theirs),
            "-" if not (ours and theirs) else "{0:.2f}x".format(theirs / ours)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
