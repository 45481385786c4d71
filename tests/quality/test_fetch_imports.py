"""The fetch machine's modules (fastkc/fetch/) import each other without a
cycle, counting every import: module level, inside functions, and under
`if TYPE_CHECKING:` (which tests/quality/test_import_cycles.py leaves out).
The three parts (planner, offsets, buffer) import none of each other: each
names what it needs of another in a Protocol, and only the facade
(machine.py) composes them; a cycle would mean one part reaching back into
another's insides."""
import ast
import os

from tests.quality import import_graph
from tests.quality.conftest import ROOT

PACKAGE = "fastkc.fetch"


def _every_import(path, module, is_package, modules):
    """The fastkc.fetch modules `module` imports, wherever the import sits."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # `from a import b`: the submodule a.b when there is one, else a
                submodule = "{0}.{1}".format(source, alias.name)
                found.add(submodule if submodule in modules else source)
    return {m for m in found if m in modules and m != module}


def _fetch_graph():
    folder = os.path.join(ROOT, "fastkc", "fetch")
    files = {}
    for name in os.listdir(folder):
        if name.endswith(".py"):
            module = PACKAGE if name == "__init__.py" else "{0}.{1}".format(PACKAGE, name[:-3])
            files[module] = os.path.join(folder, name)
    return {module: _every_import(path, module, path.endswith("__init__.py"), set(files))
            for module, path in files.items()}


def test_the_fetch_graph_sees_type_checking_imports():
    graph = _fetch_graph()
    assert "fastkc.fetch.completed" in graph["fastkc.fetch.state"]  # imported only under TYPE_CHECKING
    assert "fastkc.fetch.planner" in graph["fastkc.fetch.machine"]


def test_no_import_cycle_in_the_fetch_package():
    found = import_graph.cycles(_fetch_graph())
    assert found == {}, found
