"""Broker faults under steady production, the fastkc consumer reading through
the proxies: `kill -9` of a node and a restart, twice in a loop (the
partitions' leaders move; the group coordinator may be on the killed node),
and a controlled leader failover (SIGTERM of the node leading partition 0).

Expected errors: poll() raises nothing (the fetcher moves to the new leaders
on its own); a commit may fail with a typed retriable/commit error while the
coordinator moves.
"""
import time

import pytest

from fastkc import errors
from fastkc_tools import broker
from tests.support.faults.runner import SLOW, run_scenario
from tests.support.kafka_tools import leader_of

pytestmark = [pytest.mark.faults, pytest.mark.cluster]

COMMIT_ERRORS = (errors.KafkaTimeoutError, errors.KafkaConnectionError, errors.CommitFailedError,
                 errors.RebalanceInProgressError, errors.NodeNotReadyError)


@pytest.mark.slow
def test_kill9_restart_loop(cluster):
    """SIGKILL the leader of partition `round`, keep it down 3 s, restart it;
    once in CI, three times (each a different node) with FASTKC_SLOW=1."""
    def inject(ctx):
        for rnd in range(3 if SLOW else 1):
            victim = leader_of(cluster.direct, ctx.topic, rnd % 3)
            fault = ctx.fault("kill -9 node {0}".format(victim))
            broker.kill_node(cluster.info, victim)
            time.sleep(3.0)
            broker.start_node(cluster.info, victim, timeout=90.0, die_with_parent=True)
            ctx.healed(fault)
            ctx.wait_flowing(timeout=30.0, more=30)

    run_scenario(cluster, "kill9-restart-loop", inject, expected_errors=COMMIT_ERRORS)


def test_leader_failover(cluster):
    """Controlled shutdown of partition 0's leader (leadership moves to a
    follower at once), records keep flowing while it is down, then it
    returns."""
    def inject(ctx):
        victim = leader_of(cluster.direct, ctx.topic, 0)
        fault = ctx.fault("failover from node {0}".format(victim))
        broker.stop_node(cluster.info, victim, timeout=30.0)
        ctx.healed(fault)  # leadership moved: heal is the end of the shutdown
        ctx.wait_flowing(timeout=30.0, more=100)
        assert leader_of(cluster.direct, ctx.topic, 0) != victim
        back = ctx.fault("node {0} returns".format(victim))
        broker.start_node(cluster.info, victim, timeout=90.0, die_with_parent=True)
        ctx.healed(back)
        ctx.wait_flowing(timeout=30.0, more=30)

    run_scenario(cluster, "leader-failover", inject, expected_errors=COMMIT_ERRORS)
