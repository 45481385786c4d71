"""The fetch machine's parts (fastkc/fetch/planner.py, offsets.py,
buffer.py) import none of each other, counting every import (module level,
inside functions, under `if TYPE_CHECKING:`): each names what it needs of
another in a Protocol, and only the facade (machine.py) composes them; an
edge between two parts would mean one reaching into another's insides.
(No cycle anywhere in fastkc, this package included:
tests/quality/test_import_cycles.py.)"""
import pytest

from tests.support import import_graph
from tests.support.repo import ROOT

PARTS = ("fastkc.fetch.planner", "fastkc.fetch.offsets", "fastkc.fetch.buffer")


@pytest.fixture(scope="module")
def edges():
    return import_graph.combined(import_graph.build(ROOT))


def test_the_graph_sees_type_checking_imports(edges):
    assert "fastkc.fetch.completed" in edges["fastkc.fetch.state"]  # imported only under TYPE_CHECKING
    assert "fastkc.fetch.planner" in edges["fastkc.fetch.machine"]


@pytest.mark.parametrize("part", PARTS)
def test_a_part_imports_no_other_part(edges, part):
    assert not (set(edges[part]) & (set(PARTS) - {part})), edges[part]


def test_no_import_cycle_in_the_fetch_package(edges):
    fetch = {m: {t for t in targets if t.startswith("fastkc.fetch")}
             for m, targets in edges.items() if m.startswith("fastkc.fetch")}
    assert import_graph.cycles(fetch) == {}
