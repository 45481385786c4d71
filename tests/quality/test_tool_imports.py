"""The consumer never imports the tools shipped beside it: the broker harness,
the benchmark suite and the sample run live in a package of their own
(fastkc_tools/), reached as user-facing commands through `fastkc`
(fastkc/cli.py), and no library module imports them, counting every import
(module level, inside functions, under `if TYPE_CHECKING:`). So an
application's `import fastkc` (or a Spark executor's) loads none of them."""
import pytest

from tests.support import import_graph
from tests.support.repo import ROOT

TOOLS = ("fastkc_tools",)
#: the command-line dispatcher is the tools' entry point, not library code
ENTRY_POINTS = ("fastkc.cli", "fastkc.__main__")


def _is_tool(module):
    return any(module == tool or module.startswith(tool + ".") for tool in TOOLS)


@pytest.fixture(scope="module")
def edges():
    return import_graph.combined(import_graph.build(ROOT))


def test_the_graph_sees_the_tools(edges):
    # the check below would pass on a graph that missed them
    assert any(_is_tool(m) for m in edges) and any(_is_tool(t) for t in edges["fastkc.cli"])


def test_no_library_module_imports_a_tool(edges):
    library = {m: sorted(t for t in targets if _is_tool(t)) for m, targets in edges.items()
               if not _is_tool(m) and m not in ENTRY_POINTS}
    assert {m: tools for m, tools in library.items() if tools} == {}
