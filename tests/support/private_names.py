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
assignment, an import alias, `__slots__`. Names fastkc never defines
(`sys._getframe`, a namedtuple's `_replace`) are third parties' documented
API, not counted.

A read of a name that this module also defines for its own objects
(`other._client` where the module has a `self._client`) is a use from another
module when the type of `other` is known and its class lives in another
fastkc module. Known, without inference: a parameter's or variable's
annotation, `x = SomeClass(...)`, and an attribute of `self` annotated or
bound so in its class (`self.core = ConnectionCore(...)`, `self.client =
client` with `client: KafkaClient`); a TypeVar or alias stands for the classes
it names. A receiver of unknown type (an unannotated local, an element of a
container) is taken for the module's own object, as before.
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


# typing's names whose arguments are the classes an annotation allows
_UNION_WRAPPERS = ("Optional", "Union")


def _type_names(expr):
    """The class names an annotation names ({"A", "B"} for `A | None | "B"`,
    {"Request"} for `Request[Token]`), None when it is no such simple type."""
    if isinstance(expr, ast.Constant):
        if expr.value is None:
            return set()
        if isinstance(expr.value, str):  # a forward reference
            try:
                return _type_names(ast.parse(expr.value, mode="eval").body)
            except SyntaxError:
                return None
        return None
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
        return _union(_type_names(expr.left), _type_names(expr.right))
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
        if expr.value.id in _UNION_WRAPPERS:
            parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            return _union(*(_type_names(part) for part in parts))
        return {expr.value.id}  # a generic class: its origin
    return None


def _union(*names):
    if any(n is None for n in names):
        return None
    return set().union(*names)


def _bound_type(value, params, attribute_types):
    """The class names of what `value` evaluates to: a constructor call, a
    parameter, `self.attr` (attribute_types: its class's); None when unknown."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return {value.func.id}
    if isinstance(value, ast.Name) and value.id in params:
        return params[value.id]
    if isinstance(value, ast.Attribute) and _own_object(value.value):
        return attribute_types.get(value.attr)
    return None


def _params(function):
    args = function.args
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg: _type_names(a.annotation) for a in every if a.annotation is not None}


class _Types:
    """The types this module's code gives its receivers (see the module docstring)."""

    def __init__(self, module, is_package, tree, files):
        self.module = module
        self.homes = {}  # a class name -> the module it lives in
        self.aliases = {}  # a TypeVar's or alias's name -> the class names it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.homes[node.name] = module
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(module, is_package, node)
                if source in files:
                    for alias in node.names:
                        if "{0}.{1}".format(source, alias.name) not in files:
                            self.homes.setdefault(alias.asname or alias.name, source)
        for node in tree.body:
            target, value = None, None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "TypeVar":
                bounds = value.args[1:] + [k.value for k in value.keywords if k.arg == "bound"]
                names = _union(*(_type_names(b) for b in bounds)) if bounds else None
            else:
                names = _type_names(value) if isinstance(value, (ast.BinOp, ast.Subscript)) else None
            if names:
                self.aliases[target.id] = names
        self.attribute_types = {}  # class node -> {attribute of self: class names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.attribute_types[node] = self._attributes(node)

    @staticmethod
    def _attributes(cls_node):
        out = {}
        for item in cls_node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                out.setdefault(item.target.id, _type_names(item.annotation))
        for method in cls_node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = _params(method)
            for node in ast.walk(method):
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) \
                        and _own_object(node.target.value):
                    out[node.target.attr] = _type_names(node.annotation)
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Attribute) and _own_object(target.value):
                            bound = _bound_type(node.value, params, {})
                            if bound is not None:
                                out.setdefault(target.attr, bound)
        return out

    def receiver_types(self, receiver, function, cls_node):
        """The class names `receiver` (an expression) is known to have, or None."""
        attributes = self.attribute_types.get(cls_node, {})
        if isinstance(receiver, ast.Attribute) and _own_object(receiver.value):
            return attributes.get(receiver.attr)
        if not isinstance(receiver, ast.Name) or function is None:
            return None
        params = _params(function)
        if receiver.id in params:
            return params[receiver.id]
        for node in ast.walk(function):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id == receiver.id:
                return _type_names(node.annotation)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == receiver.id
                                                    for t in node.targets):
                return _bound_type(node.value, params, attributes)
        return None

    def foreign(self, names):
        """Every class in `names` lives in another fastkc module."""
        homes = set()
        for name in names or ():
            for concrete in self.aliases.get(name, {name}):
                homes.add(self.homes.get(concrete))
        return bool(homes) and None not in homes and self.module not in homes


def _enclosing(tree):
    """{node: (innermost function, innermost class)} for every node of the tree."""
    out = {}

    def visit(node, function, cls_node):
        for child in ast.iter_child_nodes(node):
            out[child] = (function, cls_node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child, cls_node)
            elif isinstance(child, ast.ClassDef):
                visit(child, None, child)
            else:
                visit(child, function, cls_node)

    visit(tree, None, None)
    return out


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
        types = _Types(module, is_package, tree, files)
        enclosing = _enclosing(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and is_private(node.attr) and not _own_object(node.value):
                if node.attr not in own:
                    if defined_anywhere[node.attr]:
                        uses.append(Use(module, node.attr, node.lineno))
                elif types.foreign(types.receiver_types(node.value, *enclosing[node])):
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
