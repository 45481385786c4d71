"""Network faults between the fastkc consumer and all three brokers, through
Toxiproxy (downstream: broker → client, unless said), under steady
production. Each scenario is a classic group member committing every second;
the ledger (tests/faults/accounting.py) checks nothing is lost, skipped or
committed ahead, and re-deliveries start at a commit.

Expected errors: poll() raises nothing for these faults (the client retries
and reconnects on its own); a synchronous commit may fail with a typed
timeout/connection/commit error while the coordinator is unreachable.
"""
import time

import pytest

from fastkc import errors
from tests.faults.runner import run_scenario

pytestmark = [pytest.mark.faults, pytest.mark.cluster]

COMMIT_ERRORS = (errors.KafkaTimeoutError, errors.KafkaConnectionError, errors.CommitFailedError,
                 errors.RebalanceInProgressError, errors.NodeNotReadyError)


def _toxic_everywhere(ctx, name, kind, seconds, **attrs):
    fault = ctx.fault(name)
    toxics = [(proxy, proxy.add(kind, **attrs)) for proxy in ctx.all_proxies()]
    time.sleep(seconds)
    for proxy, toxic in toxics:
        proxy.remove(toxic)
    ctx.healed(fault)
    ctx.wait_flowing(timeout=30.0, more=20)


CASES = {
    # name: (toxic, seconds, attributes, errors allowed, rounds)
    "latency": ("latency", 4.0, dict(latency=300, jitter=100), (), 1),
    "bandwidth": ("bandwidth", 4.0, dict(rate=16), COMMIT_ERRORS, 1),
    "slicer": ("slicer", 4.0, dict(average_size=64, size_variation=48, delay=200), (), 1),
    "reset_peer": ("reset_peer", 4.0, dict(timeout=300), COMMIT_ERRORS, 2),
    # timeout=0 holds every byte until removed; 7 s outlasts the consumer's
    # request_timeout_ms (5 s), so requests time out and connections are
    # replaced (the new ones are held as well) before the heal.
    "blackhole": ("timeout", 7.0, dict(timeout=0), COMMIT_ERRORS, 2),
    "limit_data": ("limit_data", 4.0, dict(bytes=3000), COMMIT_ERRORS, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_toxic(cluster, case):
    kind, seconds, attrs, allowed, rounds = CASES[case]

    def inject(ctx):
        for i in range(rounds):
            _toxic_everywhere(ctx, "{0}#{1}".format(case, i), kind, seconds, **attrs)

    report = run_scenario(cluster, "toxic-" + case, inject, expected_errors=allowed)
    if case == "blackhole":
        # the toxic really held the data: almost nothing came through it
        for name, seconds, during, _ in report.fault_windows:
            assert during < 150 * 3, (name, seconds, during)
