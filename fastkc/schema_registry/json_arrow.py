"""JSON Schema → Arrow in C: the plan csrc/fkc_json_arrow.c follows to parse
JSON payloads straight into the columns of a schema's Arrow mapping.

The mapping itself is json_schema.py's (`arrow_node`: one ArrowNode tree,
documented in docs/guide/schema-registry-json.md); this module only writes
that tree down as a column tree (arrow_columns.py) and steps
(csrc/fkc_json_arrow.h: [kind, column, n, word * n]). A tree with a
json-text position (a sub-schema without one Arrow type) has no plan: the
Python converter builds those.

The C parser declines anything where Python's reading could differ (see its
header); JsonSchemaCodec then reads the call the Python way, which is the
reference and raises the typed errors.
"""
from __future__ import annotations

from typing import Any, Protocol

from fastkc.schema_registry import arrow_columns as ac

# Arrow node kinds (json_schema.ArrowNode.kind), named here so that this
# module needs nothing of json_schema's
NULL, BOOL, INT, FLOAT, STRING, ENUM, TEXT, STRUCT, LIST, MAP = (
    "null", "bool", "int64", "float64", "utf8", "enum", "json-text", "struct", "list", "map")

# Step layout and kinds (csrc/fkc_json_arrow.h)
STEP_HEAD, PROP_WIDTH = 6, 4
K_NULL, K_BOOL, K_INT, K_FLOAT, K_STRING, K_ENUM, K_STRUCT, K_LIST, K_MAP = range(9)

# node kind -> (step kind, column layout, Arrow format)
_SCALARS = {
    NULL: (K_NULL, ac.NULL, "n"),
    BOOL: (K_BOOL, ac.BOOL, "b"),
    INT: (K_INT, ac.INT64, "l"),
    FLOAT: (K_FLOAT, ac.FLOAT64, "g"),
    STRING: (K_STRING, ac.UTF8, "u"),
}


# Step flags (csrc/fkc_json_arrow.h)
F_NOT_NULL, F_CLOSED = 1, 2


class NodeChecks(Protocol):
    """What a validating plan reads of json_schema.Checks."""

    @property
    def null_ok(self) -> bool: ...
    @property
    def required(self) -> tuple[str, ...]: ...
    @property
    def closed(self) -> bool: ...
    @property
    def min_len(self) -> int: ...
    @property
    def max_len(self) -> int: ...


class Node(Protocol):
    """What the plan reads of json_schema.ArrowNode."""

    @property
    def kind(self) -> str: ...
    @property
    def children(self) -> tuple[tuple[str, Any], ...]: ...
    @property
    def symbols(self) -> tuple[str, ...]: ...
    @property
    def checks(self) -> NodeChecks | None: ...


def compile_plan(node: Node, validate: bool = False) -> ac.ArrowPlan | None:
    """The plan of `node`'s Arrow type, one row per payload; None when the
    tree has a json-text position or more columns than a tree may have.
    `validate`: the plan also declines every value the schema rejects (the
    caller vouches that its keywords mean what they do in every draft:
    json_fast.refusal() passed), None when a position has a keyword the
    parser does not check (ArrowNode.checks is None)."""
    c = _PlanCompiler(validate)
    try:
        root = c.new_column()
        step = c.step(root, node, "", True)
    except _NoPlan:
        return None
    return c.plan(step)


class _NoPlan(Exception):
    pass


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


class _PlanCompiler(ac.ColumnTree):
    def __init__(self, validate: bool) -> None:
        super().__init__()
        self.validate = validate

    def new_column(self) -> int:
        cid = self.add_column()
        if cid is None:
            raise _NoPlan
        return cid

    def reserve(self, kind: int, cid: int, words: list[int], node: Node) -> int:
        flags, lo, hi = 0, 0, -1
        if self.validate:
            checks = node.checks
            if checks is None:
                raise _NoPlan
            flags = (0 if checks.null_ok else F_NOT_NULL) | (F_CLOSED if checks.closed else 0)
            lo, hi = checks.min_len, checks.max_len
        sid = len(self.steps)
        self.steps += [kind, cid, len(words), flags, lo, hi] + words
        return sid

    def required(self, node: Node, name: str) -> int:
        checks = node.checks
        return int(self.validate and checks is not None and name in checks.required)

    def step(self, cid: int, node: Node, name: str, nullable: bool) -> int:
        if node.kind in _SCALARS:
            kind, layout, fmt = _SCALARS[node.kind]
            self.set_column(cid, layout, nullable, name, fmt)
            return self.reserve(kind, cid, [], node)
        if node.kind == ENUM:
            self.set_column(cid, ac.DICT, nullable, name, "i", self.symbols(node.symbols))
            return self.reserve(K_ENUM, cid, [], node)
        if node.kind == STRUCT:
            self.set_column(cid, ac.STRUCT, nullable, name, "+s")
            ids = [self.new_column() for _ in node.children]
            self.columns[cid][4:6] = [ids[0] if ids else 0, len(ids)]
            sid = self.reserve(K_STRUCT, cid, [0] * (PROP_WIDTH * len(ids)), node)
            for i, (prop, child) in enumerate(node.children):
                if "\0" in prop or not _utf8(prop):
                    raise _NoPlan  # names are NUL-terminated UTF-8 in the blob
                data = prop.encode()
                words = [self.blob(data), len(data), self.step(ids[i], child, prop, True), self.required(node, prop)]
                at = sid + STEP_HEAD + PROP_WIDTH * i
                self.steps[at:at + PROP_WIDTH] = words
            return sid
        if node.kind == LIST:
            self.set_column(cid, ac.LIST, nullable, name, "+l")
            item = self.new_column()
            self.columns[cid][4:6] = [item, 1]
            sid = self.reserve(K_LIST, cid, [0], node)
            self.steps[sid + STEP_HEAD] = self.step(item, node.children[0][1], "item", True)
            return sid
        if node.kind == MAP:
            self.set_column(cid, ac.MAP, nullable, name, "+m")
            entries = self.new_column()
            self.columns[cid][4:6] = [entries, 1]
            self.set_column(entries, ac.STRUCT, False, "entries", "+s")
            key, value = self.new_column(), self.new_column()
            self.columns[entries][4:6] = [key, 2]
            self.set_column(key, ac.UTF8, False, "key", "u")
            sid = self.reserve(K_MAP, cid, [0], node)
            self.steps[sid + STEP_HEAD] = self.step(value, node.children[0][1], "value", True)
            return sid
        raise _NoPlan  # json-text: the Python converter's
