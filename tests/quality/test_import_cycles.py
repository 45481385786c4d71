"""No import cycles in fastkc (the graph: tests/support/import_graph.py).

Every import counts: module level, inside functions and under
`if TYPE_CHECKING:`. A cycle through module-level imports fails outright:
the import order then decides whether a name exists yet. A cycle closed by a
function-level (lazy) or type-checking import works, but it is the same
tangle hidden: it fails too, except for the cycles listed in KNOWN, which
were there when the graph started counting every import (issue 22) and are
being removed. Each of those is an xfail(strict=True) test, so the day one
disappears (or changes shape) its test passes, strict turns that into a
failure, and its entry must be removed or narrowed here: the list only
shrinks.
"""
import pytest

from tests.support import import_graph
from tests.support.repo import ROOT

# component (sorted modules) -> the cycle, and why it is still here
KNOWN: dict = {}


@pytest.fixture(scope="module")
def graph():
    return import_graph.build(ROOT)


def _describe(graph, path):
    hops = []
    for a, b in zip(path, path[1:]):
        if b in graph.module_level[a]:
            hops.append("{0} -> {1} (line {2}, module level)".format(a, b, graph.module_level[a][b]))
        else:
            hops.append("{0} -> {1} (line {2}, in a function)".format(a, b, graph.function_level[a][b]))
    return "\n    ".join(hops)


def _report(graph, found):
    return "\n".join("cycle among {0}:\n    {1}".format(", ".join(c), _describe(graph, p)) for c, p in found.items())


def test_the_graph_sees_imports(graph):
    # a parse that found no edges would pass every cycle check below
    assert "fastkc.consumer" in graph.module_level["fastkc"]
    assert "fastkc.errors" in graph.module_level["fastkc.consumer"]
    assert "fastkc.group" in graph.function_level["fastkc.consumer"]
    assert "fastkc.arrow_stream" in graph.type_checking["fastkc.consumer"]


def test_no_cycle_through_module_level_imports(graph):
    found = import_graph.cycles({m: set(edges) for m, edges in graph.module_level.items()})
    assert found == {}, _report(graph, found)


def test_no_new_cycle_through_lazy_imports(graph):
    found = import_graph.cycles(import_graph.combined(graph))
    new = {c: p for c, p in found.items() if c not in KNOWN}
    assert new == {}, _report(graph, new)


@pytest.mark.parametrize("component", [
    pytest.param(c, id="+".join(m.rsplit(".", 1)[-1] for m in c[:3]) + ("+..." if len(c) > 3 else ""),
                 marks=pytest.mark.xfail(strict=True, reason=why))
    for c, why in KNOWN.items()
])
def test_known_cycle_is_gone(graph, component):
    found = import_graph.cycles(import_graph.combined(graph))
    assert component not in found, _report(graph, {component: found[component]})


def test_every_kind_of_import_is_an_edge():
    # a type-checking import and a function-level one close a cycle as a module-level one does
    import ast

    source = "if TYPE_CHECKING:\n    from pkg import b\ndef f():\n    from . import c\n"
    collector = import_graph._Collector("pkg.a", False, {"pkg.a", "pkg.b", "pkg.c"})
    collector.visit(ast.parse(source))
    assert collector.type_checking == {"pkg.b": 2}
    assert collector.function_level == {"pkg.c": 4}


def test_cycles_are_found():
    # the detector itself, on a graph with one cycle and one dead end
    found = import_graph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()})
    assert found == {("a", "b", "c"): ["a", "b", "c", "a"]}
