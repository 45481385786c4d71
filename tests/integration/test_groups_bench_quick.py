"""fastkc_tools/bench/rebalance.py runs (quick mode): one join measured per protocol,
so the runner cannot rot unnoticed. Asserts the measurement completes and is
a real duration, never how fast it is."""
import pytest

from fastkc_tools.bench.rebalance import measure, settled_at


@pytest.mark.parametrize("protocol,assignor", [("classic", "cooperative-sticky"), ("consumer", "range")])
def test_rebalance_runner_measures_a_join(kafka_broker, protocol, assignor):
    seconds = measure(kafka_broker.bootstrap_servers, "fastkc", protocol, assignor, rate=600)
    assert 0 < seconds < 60


def test_settled_needs_cover_disjoint_and_fresh_records():
    t = 100.0
    logs = [
        [{"e": "assigned", "t": t, "tps": list(range(6))}],
        [{"e": "assigned", "t": t, "tps": list(range(6, 12))}],
    ]
    assert settled_at(logs, 0) is None  # nobody consumed since the assignment
    logs[0].append({"e": "records", "t": t + 1, "recs": [[p, 0] for p in range(6)]})
    assert settled_at(logs, 0) is None
    logs[1].append({"e": "records", "t": t + 2, "recs": [[p, 0] for p in range(6, 12)]})
    assert settled_at(logs, 0) == t + 2
    logs[1].append({"e": "assigned", "t": t + 3, "tps": [0]})  # overlap: not settled after that
    assert settled_at(logs, t + 2.5) is None
