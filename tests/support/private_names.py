"""Cross-module reads of private names in fastkc, found with `ast` (nothing imported).

The rule (style.md: a module never uses another module's private members):
a private name (one leading underscore, not a dunder) is used only in the
module that defines it. Counted as a use from another module:

- `x._name` (read, call, write or delete) where x is not the module's own
  object (`self`, `cls`, `super()`, `type(self)`) and `_name` is defined in
  some other fastkc module but not in this one;
- `from m import _name` and `import m._name`, m a fastkc module, from a
  module other than m, with one exception: a private *module* (`fastkc._core`,
  `fastkc._backend`) is its package's own, so modules inside that package
  (and its subpackages) may import it; from outside (pyspark_fastkc.py) it
  is a private read like any other.

A module "defines" a private name when it binds it: `def`/`class`, an
assignment to a name or to `self._name`/`cls._name`, a class-body
assignment, an import alias, `__slots__`. Without type inference a read of a
name that this module also defines for its own objects (`other._client`
where the module has a `self._client`) is not seen, and names fastkc never
defines (`sys._getframe`, a namedtuple's `_replace`) are third parties'
documented API, not counted.
"""
import ast
import os
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Use:
    module: str
    name: str
    line: int


def is_private(name):
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _own_object(node):
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "super":
            return True
        return node.func.id == "type" and len(node.args) == 1 and _own_object(node.args[0])
    return False


def module_files(root):
    """{module name: path} for fastkc/ and pyspark_fastkc.py."""
    files = {}
    for folder, _, names in os.walk(os.path.join(root, "fastkc")):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                files[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    spark = os.path.join(root, "pyspark_fastkc.py")
    if os.path.exists(spark):
        files["pyspark_fastkc"] = spark
    return files


def _definitions(tree):
    defined = set()

    def bind_target(target, in_class):
        if isinstance(target, ast.Name):
            defined.add(target.id)
        elif isinstance(target, ast.Attribute) and _own_object(target.value):
            defined.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind_target(element, in_class)
        elif isinstance(target, ast.Starred):
            bind_target(target.value, in_class)

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind_target(target, False)
                if isinstance(target, ast.Name) and target.id == "__slots__":
                    defined.update(e.value for e in ast.walk(node.value)
                                   if isinstance(e, ast.Constant) and isinstance(e.value, str))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            bind_target(node.target, False)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind_target(node.target, False)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind_target(node.optional_vars, False)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                defined.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return {name for name in defined if is_private(name)}


def _resolve(module, is_package, node):
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_allowed(importer, private_module):
    # fastkc._core may be imported by fastkc and everything under it
    package = private_module.rsplit(".", 1)[0]
    return importer == package or importer.startswith(package + ".")


def find(root):
    """Every cross-module use of a private name, in module then line order."""
    files = module_files(root)
    trees, defined = {}, {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            trees[module] = ast.parse(f.read(), path)
        defined[module] = _definitions(trees[module])
    defined_anywhere = Counter(name for names in defined.values() for name in names)
    uses = []
    for module, tree in sorted(trees.items()):
        own = defined[module]
        is_package = files[module].endswith("__init__.py")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and is_private(node.attr) and not _own_object(node.value):
                if node.attr not in own and defined_anywhere[node.attr]:
                    uses.append(Use(module, node.attr, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(module, is_package, node)
                for alias in node.names:
                    target = "{0}.{1}".format(source, alias.name)
                    if target in files:  # a module
                        if is_private(alias.name) and not _private_module_allowed(module, target):
                            uses.append(Use(module, alias.name, node.lineno))
                    elif is_private(alias.name) and source in files and source != module:
                        uses.append(Use(module, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    for i, part in enumerate(parts):
                        prefix = ".".join(parts[: i + 1])
                        if is_private(part) and prefix in files and not _private_module_allowed(module, prefix):
                            uses.append(Use(module, part, node.lineno))
    return sorted(uses, key=lambda u: (u.module, u.line, u.name))


def counts(uses):
    """{module: {name: uses}}."""
    out = {}
    for use in uses:
        out.setdefault(use.module, Counter())[use.name] += 1
    return {module: dict(sorted(names.items())) for module, names in sorted(out.items())}
