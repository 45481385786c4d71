"""Group faults on the proxied cluster, for the classic protocol and KIP-848
(group_protocol="consumer"):

- coordinator loss during commits and a rebalance: members commit every
  300 ms; a second member joins and the coordinator's node is SIGKILLed in
  the same moment, restarted 3 s later (with FASTKC_SLOW=1 it is then
  killed once more under steady commits);
- members SIGKILLed mid-rebalance: three member processes
  (tests/support/group_worker.py, auto-commit every 200 ms) through the
  proxies; a fourth joins and one of the three is SIGKILLed while the group
  rebalances; later another is SIGKILLed right after a member leaves.

The ledger checks every produced record reached some member, no member
skipped an offset, no commit passed what was handed out, and every
re-delivery starts at or after the last accepted commit.
Expected errors: commit() may raise a typed retriable or commit error while
the coordinator moves or the group rebalances; poll() raises nothing.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from fastkc import errors
from fastkc_tools import broker
from tests.support.faults.accounting import CommitAuditor, Ledger, SteadyProducer
from tests.support.faults.runner import SLOW, record, run_scenario
from tests.support.group_worker import read_events
from tests.support.kafka_tools import coordinator_of, create_topic, unique_name

pytestmark = [pytest.mark.faults, pytest.mark.cluster]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMIT_ERRORS = (errors.KafkaTimeoutError, errors.KafkaConnectionError, errors.CommitFailedError,
                 errors.RebalanceInProgressError, errors.NodeNotReadyError)
PROTOCOLS = ["classic", "consumer"]


@pytest.mark.slow
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_coordinator_loss_during_commits_and_rebalance(cluster, protocol):
    def inject(ctx):
        for rnd in range(2 if SLOW else 1):
            victim = coordinator_of(cluster.direct, ctx.group_id)
            fault = ctx.fault("kill -9 coordinator node {0}".format(victim)
                              + (" while c1 joins" if rnd == 0 else ""))
            if rnd == 0:
                ctx.add_member("c1")
            broker.kill_node(cluster.info, victim)
            time.sleep(3.0)
            broker.start_node(cluster.info, victim, timeout=90.0, die_with_parent=True)
            ctx.healed(fault)
            ctx.wait_flowing(timeout=45.0, more=30)

    configs = {"group_protocol": protocol}
    if protocol == "consumer":
        configs.update(session_timeout_ms=45000, heartbeat_interval_ms=3000)  # not used by KIP-848
    run_scenario(cluster, "coordinator-loss-" + protocol, inject, partitions=6, expected_errors=COMMIT_ERRORS,
                 consumer_configs=configs, commit_every=0.3)


# --- member processes -----------------------------------------------------------------

def _worker(bootstrap, topic, group, out, protocol, err):
    extra = ["--protocol", protocol]
    if protocol == "classic":
        extra += ["--assignor", "cooperative-sticky"]
    return subprocess.Popen([sys.executable, "-m", "tests.support.group_worker", bootstrap, topic, group, out,
                             *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(err, "w"))


def _feed(ledger, name, events):
    for ev in events:
        if ev["e"] == "records":
            ledger.delivered_pairs([tuple(r) for r in ev["recs"]], ev["t"], name)
        elif ev["e"] == "committed":
            ledger.committed({int(p): o for p, o in ev["offsets"].items()}, consumer=name, t=ev["t"])
        elif ev["e"] in ("assigned", "revoked", "lost"):  # what may explain a re-delivery
            ledger.event("{0} {1} {2}".format(name, ev["e"], ev["tps"]), ev["t"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_members_sigkilled_mid_rebalance(cluster, tmp_path, protocol):
    partitions = 8
    name = "sigkill-mid-rebalance-" + protocol
    topic = create_topic(cluster.direct, unique_name("faults-members"), partitions=partitions,
                         replication_factor=3)
    group = unique_name("faults-members")
    ledger = Ledger(name)
    producer = SteadyProducer(cluster.direct, topic, partitions, ledger, rate=200)
    producer.start()
    auditor = CommitAuditor(cluster.direct, group, topic, ledger)
    auditor.start()
    procs = {}

    def start(i):
        procs["m%d" % i] = _worker(cluster.bootstrap, topic, group, str(tmp_path / ("m%d.log" % i)), protocol,
                                   str(tmp_path / ("m%d.err" % i)))

    def delivered_by(m):
        return sum(len(ev["recs"]) for ev in read_events(str(tmp_path / (m + ".log"))) if ev["e"] == "records")

    def wait(pred, timeout, what):
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline, "timed out: " + what
            time.sleep(0.1)

    began = time.monotonic()
    try:
        for i in range(3):
            start(i)
        wait(lambda: all(delivered_by(m) > 0 for m in ("m0", "m1", "m2")), 60, "three members consuming")
        # A fourth member joins; while the group rebalances, m0 is SIGKILLed.
        fault = ledger.fault("m3 joins, m0 SIGKILLed mid-rebalance")
        start(3)
        wait(lambda: any(ev["e"] == "ready" for ev in read_events(str(tmp_path / "m3.log"))), 30, "m3 subscribed")
        time.sleep(0.3)
        procs["m0"].send_signal(signal.SIGKILL)
        wait(lambda: delivered_by("m3") > 0, 60, "m3 consuming")
        ledger.healed(fault)
        # m1 leaves cleanly; in the rebalance that follows m2 is SIGKILLed.
        fault = ledger.fault("m1 leaves, m2 SIGKILLed mid-rebalance")
        procs["m1"].send_signal(signal.SIGTERM)
        time.sleep(0.3)
        procs["m2"].send_signal(signal.SIGKILL)
        start(4)
        wait(lambda: delivered_by("m4") > 0, 60, "m4 consuming")
        ledger.healed(fault)
        time.sleep(1.0)
        producer.finish(timeout=60)
        live = ("m3", "m4")

        def caught_up():
            fresh = Ledger(name)
            fresh.produced = set(ledger.produced)
            for m in procs:
                _feed(fresh, m, read_events(str(tmp_path / (m + ".log"))))
            return fresh.caught_up()

        wait(caught_up, 60, "the live members deliver everything produced")
    finally:
        producer.finish(timeout=60)
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        auditor.finish()
        auditor.read_now()
    for m in procs:
        _feed(ledger, m, read_events(str(tmp_path / (m + ".log"))))
    for m in ("m1",) + live:
        err = open(str(tmp_path / (m + ".err"))).read()
        assert procs[m].returncode == 0 and "Traceback" not in err, (m, procs[m].returncode, err[-2000:])
    report = ledger.report()
    d = report.__dict__.copy()
    d.update(seconds=round(time.monotonic() - began, 1))
    record(d)
    print("\n" + report.row())
    assert not report.failures(), report.failures()
    assert report.broker_commit_reads > 0 and any(offsets for _, offsets in ledger.broker_commits)
