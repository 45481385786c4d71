"""The configuration reaches no assignor module: every import counted,
function-level ones too (tests/support/import_graph.py), so the cycle
config -> assignors -> client -> config cannot close through the
configuration (the default assignors are named, not imported). A
source-tree check, so it lives in tests/quality, not beside the unit tests
the wheels run outside the repository."""
from tests.support import import_graph
from tests.support.repo import ROOT


def test_the_configuration_reaches_no_assignor():
    edges = import_graph.combined(import_graph.build(ROOT))
    for start in ("fastkc.config", "fastkc.config_schema"):
        seen, todo = set(), [start]
        while todo:
            for module in edges.get(todo.pop(), ()):
                if module not in seen:
                    seen.add(module)
                    todo.append(module)
        assert "fastkc.errors" in seen  # the walk follows edges
        assert "fastkc.assignors" not in seen and start not in seen, start
