"""fastkc's import graph, read from the source with `ast` (nothing imported).

Edges are the modules an import statement names: `import a.b` and
`from a import b` (b a submodule) → a.b; `from a.b import name` → a.b.
The parent packages' __init__ modules that Python also runs on the way are
not edges: every module would otherwise depend on fastkc/__init__.py, and
Python runs a parent first anyway. An import is module-level when it runs
while the module is imported (top level, class bodies, module-level if/try),
function-level when it sits in a function body (it runs on the first call),
type-checking when it sits under `if TYPE_CHECKING:` (it never runs, but the
two modules still know each other: a cycle through it is a tangle all the
same, and moving the import out of the guard would make it a real one).
"""
import ast
import os
from dataclasses import dataclass, field


@dataclass
class ImportGraph:
    modules: set = field(default_factory=set)
    module_level: dict = field(default_factory=dict)  # module -> {imported module: line}
    function_level: dict = field(default_factory=dict)
    type_checking: dict = field(default_factory=dict)


def _module_name(root, path):
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Collector(ast.NodeVisitor):
    def __init__(self, name, is_package, modules):
        self.name, self.is_package, self.modules = name, is_package, modules
        self.depth = 0  # function nesting
        self.guarded = 0  # `if TYPE_CHECKING:` nesting
        self.module_level, self.function_level, self.type_checking = {}, {}, {}

    def _add(self, target, line):
        if target not in self.modules or target == self.name:
            return
        if self.guarded:
            edges = self.type_checking
        else:
            edges = self.function_level if self.depth else self.module_level
        edges.setdefault(target, line)

    def _resolve(self, node):
        if not node.level:
            return node.module
        base = self.name.split(".")
        if not self.is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node):
        source = self._resolve(node)
        for alias in node.names:
            sub = "{0}.{1}".format(source, alias.name)
            self._add(sub if sub in self.modules else source, node.lineno)

    def visit_If(self, node):
        if _is_type_checking(node.test):
            self.guarded += 1
            for child in node.body:
                self.visit(child)
            self.guarded -= 1
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function


def build(root, packages=("fastkc", "fastkc_tools")):
    """The graph of every .py module under root/<each of packages> (the
    library and the tools shipped beside it)."""
    paths = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(root, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    paths[_module_name(root, path)] = path
    graph = ImportGraph(modules=set(paths))
    for name, path in sorted(paths.items()):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        collector = _Collector(name, path.endswith("__init__.py"), graph.modules)
        collector.visit(tree)
        graph.module_level[name] = collector.module_level
        graph.function_level[name] = collector.function_level
        graph.type_checking[name] = collector.type_checking
    return graph


def cycles(edges):
    """The strongly connected components with a cycle (Tarjan), each as a
    sorted tuple of modules, and for each one cycle through it as a path."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return {component: _one_cycle(edges, component) for component in sorted(found)}


def _one_cycle(edges, component):
    # the shortest cycle through the component's first module (breadth-first)
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, ())):
            if w == start:
                return paths[v] + [start]
            if w in members and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError("no cycle through {0}".format(start))


def combined(graph):
    """Every import: module level, in functions and under TYPE_CHECKING."""
    return {m: set(graph.module_level[m]) | set(graph.function_level[m]) | set(graph.type_checking[m])
            for m in graph.modules}
