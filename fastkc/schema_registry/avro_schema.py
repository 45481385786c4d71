"""Avro schemas: parsed with bounds, then compiled for the decoders.

Two steps, both pure Python and done once per schema (pair):

1. `parse_schema(text)` turns Avro's JSON form into `AvroType` nodes: named
   types with namespaces, references to names defined earlier, recursion by
   name. A hostile schema (too long, too deep, too many types) gets an
   `AvroSchemaError`, never a RecursionError or an unbounded walk.

2. `compile_program(writer, reader=None)` resolves the writer schema against
   the reader schema by Avro's "Schema Resolution" rules (promotions,
   string<->bytes, fields added with defaults, fields removed, aliases, enum
   symbol mapping, union branch mapping) and writes the result as a flat
   list of int32 opcodes and operands (`Program.code`) plus the Python
   constants the object builder needs (`Program.consts`: field names, enum
   symbols, defaults, decimal parameters). Every resolution decision is made
   here; the interpreters (csrc/fkc_avro.c and its twin fastkc/_twin/avro.py)
   only follow the program.

The program's layout (the C header csrc/fkc_avro.h names the same numbers):

    header  [MAGIC, root_pc, max_depth, max_empty_items]
    SCALAR  [OP_SCALAR, wire, out, logical, size, const]
    ENUM    [OP_ENUM, n, (reader_index, const) * n]    reader_index -1: no symbol
    ARRAY   [OP_ARRAY, item_pc, item_min_size, item_weight]
    MAP     [OP_MAP, value_pc, value_min_size, value_weight]
    UNION   [OP_UNION, n, (pc, reader_branch) * n]     pc -1: branch has no match
    RECORD  [OP_RECORD, nfields, ndefaults, name_const,
             (pc, key_const) * nfields,                key_const -1: skip the field
             (key_const, default_const) * ndefaults]

An item's weight is how many values it holds that take no bytes (nulls,
records, empty fixed): an array of items of no bytes spends weight * count
of the payload's budget (max_empty_items), so neither a claimed 2^31 nulls
nor records that fan out into many empty records by reusing a named type
cost more than the budget; a type whose weight passes MAX_EMPTY_WEIGHT is
refused when compiled (it would turn each byte into that many values).

A skipped field's pc points at a writer-only program (compiled without a
reader), run without emitting values. Children are referenced by absolute
pc, so a recursive named type is a loop in the program.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from fastkc.schema_registry.avro_errors import AvroSchemaError

MAGIC = 0x41565231  # "AVR1": a program made by this compiler version

# opcodes
OP_SCALAR = 1
OP_ENUM = 2
OP_ARRAY = 3
OP_MAP = 4
OP_UNION = 5
OP_RECORD = 6

# wire kinds: how the writer encoded a scalar
W_NULL = 0
W_BOOLEAN = 1
W_INT = 2
W_LONG = 3
W_FLOAT = 4
W_DOUBLE = 5
W_BYTES = 6
W_STRING = 7
W_FIXED = 8

# out kinds: the reader's type (the Python value and the Arrow column)
O_NULL = 0
O_BOOLEAN = 1
O_INT = 2
O_LONG = 3
O_FLOAT = 4
O_DOUBLE = 5
O_BYTES = 6
O_STRING = 7
O_FIXED = 8

# logical kinds (the writer's, as fastavro converts by the writer's schema)
L_NONE = 0
L_DECIMAL = 1
L_UUID = 2
L_DATE = 3
L_TIME_MILLIS = 4
L_TIME_MICROS = 5
L_TIMESTAMP_MILLIS = 6
L_TIMESTAMP_MICROS = 7
L_TIMESTAMP_NANOS = 8
L_LOCAL_TIMESTAMP_MILLIS = 9
L_LOCAL_TIMESTAMP_MICROS = 10
L_LOCAL_TIMESTAMP_NANOS = 11
L_DURATION = 12

LOGICAL_NAMES = {
    L_DECIMAL: "decimal",
    L_UUID: "uuid",
    L_DATE: "date",
    L_TIME_MILLIS: "time-millis",
    L_TIME_MICROS: "time-micros",
    L_TIMESTAMP_MILLIS: "timestamp-millis",
    L_TIMESTAMP_MICROS: "timestamp-micros",
    L_TIMESTAMP_NANOS: "timestamp-nanos",
    L_LOCAL_TIMESTAMP_MILLIS: "local-timestamp-millis",
    L_LOCAL_TIMESTAMP_MICROS: "local-timestamp-micros",
    L_LOCAL_TIMESTAMP_NANOS: "local-timestamp-nanos",
    L_DURATION: "duration",
}
# which base types a logical type may annotate (others are ignored, as the spec says)
_LOGICAL_BASES = {
    "decimal": ("bytes", "fixed"),
    "uuid": ("string", "fixed"),
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "duration": ("fixed",),
}
_LOGICAL_BY_NAME = {name: kind for kind, name in LOGICAL_NAMES.items()}

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_WIRE = {
    "null": W_NULL, "boolean": W_BOOLEAN, "int": W_INT, "long": W_LONG, "float": W_FLOAT,
    "double": W_DOUBLE, "bytes": W_BYTES, "string": W_STRING, "fixed": W_FIXED,
}
# writer type -> reader types it may be read as (besides itself)
_PROMOTIONS = {
    "int": ("long", "float", "double"),
    "long": ("float", "double"),
    "float": ("double",),
    "string": ("bytes",),
    "bytes": ("string",),
}

DEFAULT_MAX_DEPTH = 64  # schema nesting, and data nesting at decode time
DEFAULT_MAX_TYPES = 10_000
DEFAULT_MAX_SCHEMA_BYTES = 1 << 20
# Items that take no bytes (null, an empty record) are not bounded by the
# payload's length: this caps them per payload, so a claimed 2^31 nulls
# fails instead of building a list of 2^31 Nones.
DEFAULT_MAX_EMPTY_ITEMS = 1 << 20
MAX_EMPTY_WEIGHT = 10_000


@dataclasses.dataclass(eq=False)
class AvroField:
    name: str
    type: AvroType
    has_default: bool
    default: Any
    aliases: tuple[str, ...]


@dataclasses.dataclass(eq=False)
class AvroType:
    """One node of a parsed schema. Named types are shared by reference (a
    recursive type contains itself); compare them by identity."""

    kind: str  # a primitive name, "fixed", "enum", "array", "map", "union" or "record"
    name: str = ""  # full name of a named type
    aliases: tuple[str, ...] = ()  # full names
    logical: int = L_NONE
    size: int = 0  # fixed
    precision: int = 0  # decimal
    scale: int = 0
    symbols: tuple[str, ...] = ()  # enum
    enum_default: str | None = None
    items: AvroType | None = None  # array
    values: AvroType | None = None  # map
    branches: tuple[AvroType, ...] = ()  # union
    fields: list[AvroField] = dataclasses.field(default_factory=list)  # record

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def _fail(msg: str) -> AvroSchemaError:
    return AvroSchemaError(f"Avro schema: {msg}")


class _Parser:
    def __init__(self, max_depth: int, max_types: int) -> None:
        self.max_depth = max_depth
        self.max_types = max_types
        self.types = 0
        self.named: dict[str, AvroType] = {}

    def full_name(self, name: Any, namespace: str) -> str:
        if not isinstance(name, str) or not name:
            raise _fail(f"a name must be a non-empty string, not {name!r}")
        for part in name.split("."):
            if not part or not (part[0].isalpha() or part[0] == "_") or not all(
                ch.isalnum() or ch == "_" for ch in part
            ) or not part.isascii():
                raise _fail(f"invalid name {name!r}")
        if "." in name or not namespace:
            return name
        return f"{namespace}.{name}"

    def count(self) -> None:
        self.types += 1
        if self.types > self.max_types:
            raise _fail(f"more than {self.max_types} types")

    def lookup(self, ref: str, namespace: str) -> AvroType:
        if ref in PRIMITIVES:
            self.count()
            return AvroType(ref)
        for candidate in ((f"{namespace}.{ref}", ref) if namespace and "." not in ref else (ref,)):
            found = self.named.get(candidate)
            if found is not None:
                return found
        raise _fail(f"unknown type {ref!r}")

    def define(self, t: AvroType) -> None:
        if t.name in PRIMITIVES or t.short_name in PRIMITIVES:
            raise _fail(f"a named type cannot be called {t.name!r}")
        if t.name in self.named:
            raise _fail(f"type {t.name!r} defined twice")
        self.named[t.name] = t

    def aliases(self, raw: Any, namespace: str) -> tuple[str, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise _fail(f"aliases must be a list, not {raw!r}")
        return tuple(self.full_name(a, namespace) for a in raw)

    def parse(self, s: Any, namespace: str, depth: int) -> AvroType:
        if depth > self.max_depth:
            raise _fail(f"nested deeper than {self.max_depth}")
        if isinstance(s, str):
            return self.lookup(s, namespace)
        if isinstance(s, list):
            self.count()
            branches = tuple(self.parse(b, namespace, depth + 1) for b in s)
            if not branches:
                raise _fail("a union needs at least one branch")
            seen: set[str] = set()
            for b in branches:
                if b.kind == "union":
                    raise _fail("a union cannot directly contain a union")
                key = b.name if b.name else b.kind
                if key in seen:
                    raise _fail(f"union has two branches of type {key!r}")
                seen.add(key)
            return AvroType("union", branches=branches)
        if not isinstance(s, dict):
            raise _fail(f"not a schema: {s!r}")
        kind = s.get("type")
        if isinstance(kind, (dict, list)):
            # {"type": {...}} wraps a schema (logical attributes on it are ignored)
            return self.parse(kind, namespace, depth + 1)
        if not isinstance(kind, str):
            raise _fail(f"missing or bad 'type' in {s!r}")
        logical_name = s.get("logicalType")
        if kind in PRIMITIVES:
            self.count()
            t = AvroType(kind)
            self.logical(t, logical_name, s)
            return t
        if kind in ("record", "error", "enum", "fixed"):
            self.count()
            ns = s.get("namespace", namespace)
            if ns is not None and not isinstance(ns, str):
                raise _fail(f"namespace must be a string, not {ns!r}")
            name = self.full_name(s.get("name"), ns or "")
            own_ns = name.rsplit(".", 1)[0] if "." in name else ""
            aliases = self.aliases(s.get("aliases"), own_ns)
            t = AvroType("record" if kind == "error" else kind, name=name, aliases=aliases)
            self.define(t)
            if kind == "fixed":
                size = s.get("size")
                if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 0x7FFFFFFF:
                    raise _fail(f"fixed {name!r} needs a size in [0, 2^31), not {size!r}")
                t.size = size
                self.logical(t, logical_name, s)
            elif kind == "enum":
                symbols = s.get("symbols")
                if not isinstance(symbols, list) or not all(isinstance(x, str) for x in symbols):
                    raise _fail(f"enum {name!r} needs a list of string symbols")
                if len(set(symbols)) != len(symbols):
                    raise _fail(f"enum {name!r} repeats a symbol")
                self.types += len(symbols)
                if self.types > self.max_types:
                    raise _fail(f"more than {self.max_types} types")
                t.symbols = tuple(symbols)
                default = s.get("default")
                if default is not None and default not in t.symbols:
                    raise _fail(f"enum {name!r} default {default!r} is not a symbol")
                t.enum_default = default
            else:
                fields = s.get("fields")
                if not isinstance(fields, list):
                    raise _fail(f"record {name!r} needs a list of fields")
                names: set[str] = set()
                for f in fields:
                    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                        raise _fail(f"record {name!r} has a field without a name")
                    if f["name"] in names:
                        raise _fail(f"record {name!r} has two fields named {f['name']!r}")
                    names.add(f["name"])
                    if "type" not in f:
                        raise _fail(f"field {f['name']!r} of {name!r} has no type")
                    ftype = self.parse(f["type"], own_ns, depth + 1)
                    faliases = f.get("aliases") or []
                    if not isinstance(faliases, list) or not all(isinstance(a, str) for a in faliases):
                        raise _fail(f"field {f['name']!r} aliases must be strings")
                    t.fields.append(AvroField(f["name"], ftype, "default" in f, f.get("default"), tuple(faliases)))
            return t
        if kind == "array":
            self.count()
            if "items" not in s:
                raise _fail("array without items")
            return AvroType("array", items=self.parse(s["items"], namespace, depth + 1))
        if kind == "map":
            self.count()
            if "values" not in s:
                raise _fail("map without values")
            return AvroType("map", values=self.parse(s["values"], namespace, depth + 1))
        # a reference written as {"type": "Name"}
        return self.lookup(kind, namespace)

    def logical(self, t: AvroType, logical_name: Any, s: dict[str, Any]) -> None:
        # An unknown or misplaced logical type is ignored (Avro spec): the
        # value reads as its base type.
        if not isinstance(logical_name, str) or t.kind not in _LOGICAL_BASES.get(logical_name, ()):
            return
        if logical_name == "decimal":
            precision, scale = s.get("precision"), s.get("scale", 0)
            if not isinstance(precision, int) or not isinstance(scale, int) or isinstance(precision, bool) \
                    or isinstance(scale, bool) or precision < 1 or not 0 <= scale <= precision:
                return
            if t.kind == "fixed" and t.size < 64 and precision > int((8 * t.size - 1) * 0.30102999566398):
                return
            t.precision, t.scale = precision, scale
        if logical_name == "uuid" and t.kind == "fixed" and t.size != 16:
            return
        if logical_name == "duration" and t.size != 12:
            return
        t.logical = _LOGICAL_BY_NAME[logical_name]


def parse_schema(
    schema: Any,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_types: int = DEFAULT_MAX_TYPES,
    max_bytes: int = DEFAULT_MAX_SCHEMA_BYTES,
) -> AvroType:
    """Parse an Avro schema (its JSON text, or the JSON already loaded)."""
    if isinstance(schema, (str, bytes, bytearray)):
        if len(schema) > max_bytes:
            raise _fail(f"schema text longer than {max_bytes} bytes")
        try:
            schema = json.loads(schema)
        except RecursionError:
            raise _fail("schema JSON nested too deeply") from None
        except ValueError as e:
            # a bare primitive name ("string") is valid Avro but not JSON
            text = schema.decode() if isinstance(schema, (bytes, bytearray)) else schema
            if text.strip() in PRIMITIVES:
                schema = text.strip()
            else:
                raise _fail(f"not JSON: {e}") from None
    return _Parser(max_depth, max_types).parse(schema, "", 0)


def _names_match(writer: AvroType, reader: AvroType) -> bool:
    return (
        writer.short_name == reader.short_name
        or writer.name in reader.aliases
        or writer.short_name in {a.rsplit(".", 1)[-1] for a in reader.aliases}
    )


def _matches(w: AvroType, r: AvroType, promote: bool = True) -> bool:
    """Whether writer type `w` may be read as reader type `r` (shallow, as the
    spec's union-branch rule: names for named types, items for arrays);
    with promote False, only without a promotion."""
    if w.kind == "union" or r.kind == "union":
        return True
    if w.kind in PRIMITIVES and r.kind in PRIMITIVES:
        return w.kind == r.kind or (promote and r.kind in _PROMOTIONS.get(w.kind, ()))
    if w.kind != r.kind:
        return False
    if w.kind in ("record", "enum"):
        return _names_match(w, r)
    if w.kind == "fixed":
        return w.size == r.size and _names_match(w, r)
    if w.kind == "array":
        assert w.items is not None and r.items is not None
        return _matches(w.items, r.items, promote)
    assert w.values is not None and r.values is not None
    return _matches(w.values, r.values, promote)


def best_branch(w: AvroType, branches: tuple[AvroType, ...]) -> int:
    """The reader union branch a writer type resolves to: the first that
    matches without a promotion, else the first that matches with one (Avro
    Java's rule; fastavro takes the first match either way, so a writer's
    bytes in a reader's ["string", "bytes"] stays bytes here). -1: none."""
    for promote in (False, True):
        for i, b in enumerate(branches):
            if _matches(w, b, promote):
                return i
    return -1


@dataclasses.dataclass
class Program:
    """A compiled (writer, reader) pair: the code both interpreters run and the
    constants the Python object builder uses."""

    code: list[int]
    consts: list[Any]
    writer: AvroType
    reader: AvroType

    @property
    def root(self) -> int:
        return self.code[1]


class _Compiler:
    def __init__(self, max_depth: int, max_empty_items: int) -> None:
        self.code: list[int] = [MAGIC, 0, max_depth, max_empty_items]
        self.consts: list[Any] = []
        self.const_ids: dict[tuple[str, str], int] = {}
        self.memo: dict[tuple[int, int], int] = {}
        self.min_sizes: dict[int, int] = {}
        self.weights: dict[int, int] = {}

    def const(self, value: Any) -> int:
        # strings (names, symbols) are shared; defaults get their own slot
        if isinstance(value, str):
            key = ("s", value)
            found = self.const_ids.get(key)
            if found is not None:
                return found
            self.const_ids[key] = len(self.consts)
        self.consts.append(value)
        return len(self.consts) - 1

    def min_size(self, t: AvroType) -> int:
        """The fewest bytes a value of writer type `t` takes (a lower bound:
        a type that contains itself counts 0 for the inner occurrence)."""
        key = id(t)
        if key in self.min_sizes:
            return self.min_sizes[key]
        self.min_sizes[key] = 0
        if t.kind in ("null",):
            n = 0
        elif t.kind == "float":
            n = 4
        elif t.kind == "double":
            n = 8
        elif t.kind == "fixed":
            n = t.size
        elif t.kind == "record":
            n = min(sum(self.min_size(f.type) for f in t.fields), 0x7FFFFFFF)
        else:
            n = 1
        self.min_sizes[key] = n
        return n

    def weight(self, t: AvroType) -> int:
        """How many values of no bytes a value of writer type `t` holds
        outside its own byte-taking parts (a type that contains itself
        counts 0 for the inner occurrence: the depth bound stops that)."""
        key = id(t)
        if key in self.weights:
            return self.weights[key]
        self.weights[key] = 0
        if t.kind == "record":
            n = 1 + sum(self.weight(f.type) for f in t.fields)
        elif t.kind == "null" or (t.kind == "fixed" and t.size == 0):
            n = 1
        else:
            n = 0
        if n > MAX_EMPTY_WEIGHT:
            raise _fail(f"{self.describe(t)} holds more than {MAX_EMPTY_WEIGHT} values that take no bytes")
        self.weights[key] = n
        return n

    def compile(self, w: AvroType, r: AvroType | None) -> int:
        """The pc of a program reading writer `w` as reader `r` (None: as
        itself, also the skip programs). Raises AvroSchemaError when `r`
        cannot read `w`."""
        key = (id(w), id(r) if r is not None else 0)
        found = self.memo.get(key)
        if found is not None:
            return found
        if r is None:
            r_eff = w
        elif r.kind == "union" and w.kind != "union":
            best = best_branch(w, r.branches)
            if best < 0:
                raise _fail(f"writer type {self.describe(w)} matches no branch of the reader's union")
            pc = self.compile(w, r.branches[best])
            self.memo[key] = pc
            return pc
        else:
            r_eff = r
        if w.kind != "union" and not _matches(w, r_eff):
            raise _fail(f"writer type {self.describe(w)} cannot be read as {self.describe(r_eff)}")
        code = self.code
        pc = len(code)
        if w.kind in PRIMITIVES or w.kind == "fixed":
            self.memo[key] = pc
            const = -1
            if w.logical == L_DECIMAL:
                const = self.const((w.precision, w.scale))
            code += [OP_SCALAR, _WIRE[w.kind], _WIRE[r_eff.kind], w.logical, w.size, const]
        elif w.kind == "enum":
            self.memo[key] = pc
            code += [OP_ENUM, len(w.symbols)]
            for sym in w.symbols:
                if sym in r_eff.symbols:
                    code += [r_eff.symbols.index(sym), self.const(sym)]
                elif r is not None and r_eff.enum_default:  # fastavro: a truthy default
                    code += [r_eff.symbols.index(r_eff.enum_default), self.const(r_eff.enum_default)]
                else:
                    code += [-1, self.const(sym)]
        elif w.kind in ("array", "map"):
            self.memo[key] = pc
            code += [OP_ARRAY if w.kind == "array" else OP_MAP, 0, 0, 0]
            child_w = w.items if w.kind == "array" else w.values
            child_r = r_eff.items if w.kind == "array" else r_eff.values
            assert child_w is not None and child_r is not None
            code[pc + 1] = self.compile(child_w, child_r if r is not None else None)
            code[pc + 2] = self.min_size(child_w)
            code[pc + 3] = max(1, self.weight(child_w))
        elif w.kind == "union":
            self.memo[key] = pc
            n = len(w.branches)
            code += [OP_UNION, n] + [0] * (2 * n)
            for i, b in enumerate(w.branches):
                target, reader_branch = self.union_branch(b, r)
                code[pc + 2 + 2 * i] = target
                code[pc + 3 + 2 * i] = reader_branch
        else:
            self.memo[key] = pc  # before the fields: a recursive record loops here
            self.record(pc, w, r_eff if r is not None else None)
        return pc

    def union_branch(self, b: AvroType, r: AvroType | None) -> tuple[int, int]:
        # A writer branch the reader cannot read fails when a value takes it
        # (pc -1), as the spec and fastavro have it, not at compile time.
        if r is None:
            return self.compile(b, None), -1
        if r.kind == "union":
            index = best_branch(b, r.branches)
            candidate = r.branches[index] if index >= 0 else None
        else:
            index, candidate = -1, r if _matches(b, r) else None
        if candidate is None:
            return -1, -1
        try:
            return self.compile(b, candidate), index
        except AvroSchemaError:
            return -1, index

    def record(self, pc: int, w: AvroType, r: AvroType | None) -> None:
        code = self.code
        fields: list[tuple[AvroField, AvroField | None]] = []
        defaults: list[AvroField] = []
        if r is None:
            fields = [(f, f) for f in w.fields]
        else:
            by_name = {f.name: f for f in r.fields}
            by_alias = {a: f for f in r.fields for a in f.aliases}
            used: set[str] = set()
            for f in w.fields:
                rf = by_name.get(f.name) or by_alias.get(f.name)
                if rf is not None and rf.name in used:
                    rf = None
                if rf is not None:
                    used.add(rf.name)
                fields.append((f, rf))
            for rf in r.fields:
                if rf.name not in used:
                    if not rf.has_default:
                        raise _fail(f"reader field {rf.name!r} of {r.name!r} is not written and has no default")
                    defaults.append(rf)
        code += [OP_RECORD, len(fields), len(defaults), self.const(w.name if r is None else r.name)]
        code += [0] * (2 * len(fields) + 2 * len(defaults))
        at = pc + 4
        for f, rf in fields:
            if rf is None:
                code[at], code[at + 1] = self.compile(f.type, None), -1
            else:
                # a field read as itself (no reader schema) compiles writer-only
                code[at] = self.compile(f.type, rf.type if r is not None else None)
                code[at + 1] = self.const(rf.name)
            at += 2
        for rf in defaults:
            code[at], code[at + 1] = self.const(rf.name), self.const(copy.deepcopy(rf.default))
            at += 2

    @staticmethod
    def describe(t: AvroType) -> str:
        return repr(t.name) if t.name else t.kind


def compile_program(
    writer: AvroType,
    reader: AvroType | None = None,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_empty_items: int = DEFAULT_MAX_EMPTY_ITEMS,
) -> Program:
    """Compile the program reading `writer`-encoded data as `reader` (None:
    as the writer schema itself). max_depth bounds the data's nesting
    (records, arrays, maps, unions) at decode time."""
    if not 1 <= max_depth <= 1000:
        raise ValueError("max_depth must be in [1, 1000]")
    if not 0 <= max_empty_items <= 0x7FFFFFFF:
        raise ValueError("max_empty_items must be in [0, 2^31)")
    c = _Compiler(max_depth, max_empty_items)
    c.weight(writer)  # refuses a writer type that fans out into too many empty values
    c.code[1] = c.compile(writer, reader)
    if len(c.code) > 0x7FFFFFFF:
        raise _fail("program too large")
    return Program(c.code, c.consts, writer, reader if reader is not None else writer)
