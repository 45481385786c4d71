"""Avro → Arrow: the Arrow type each reader type becomes, compiled into the
plan the C reader (csrc/fkc_avro_arrow.c) follows from the payloads' bytes.

`compile_plan(program)` walks a compiled Avro program (avro_schema.py)
together with its reader schema and writes two flat int64 lists and a blob:

- columns: the Arrow tree, one row of COL_WIDTH words per column (layout,
  nullable, name, Arrow format string, children, parameters), column 0 the
  array itself. The mapping (docs/guide/schema-registry-arrow.md):

      record -> struct          array -> list          map -> map<utf8, V>
      null -> null              boolean -> bool        int -> int32
      long -> int64             float -> float32       double -> float64
      bytes -> binary           string -> utf8         fixed -> fixed_size_binary
      enum -> dictionary<int32, utf8> (the reader's symbols, in order)
      [null, T] / [T, null] -> T, nullable; [null] -> null
      any other union -> dense_union, one child per branch in the union's
        order (null -> a null child), type code = branch index, each child
        named after its branch's type (a named type's full name)
      date -> date32, time-millis -> time32[ms], time-micros -> time64[us],
      timestamp-* -> timestamp[unit, UTC], local-timestamp-* -> timestamp[unit],
      decimal -> decimal128(p, s) (decimal256 past 38 digits), uuid -> utf8

  A type that is not a union is a non-nullable field; a union of null and
  one type is nullable; a dense union is a non-nullable field (Arrow's
  unions have no validity: a null is a row of its null child). Recursive
  types and unions of more than 127 branches have no Arrow mapping here:
  AvroArrowUnsupportedError, before anything is decoded.

- steps: how the program's values land in those columns (one step per
  value position: a record's writer fields, a union's writer branches, an
  array's items), and constant steps for the reader's defaults. A value
  whose reader type is a dense union goes through a step on the union's
  column whose child step writes the branch's child (csrc/fkc_avro_arrow.h).

The types follow the reader schema (the program already resolved writer to
reader: promotions, skipped fields, defaults, enum and union mapping); the
logical type that names a column's Arrow type is the reader's. A writer
type read as a reader union lands in the branch the program resolved it to
(avro_schema.best_branch: Avro Java's rule, an exact match before a
promotion, where the spec and fastavro take the first match).
"""
from __future__ import annotations

import struct
from typing import Any

from fastkc.schema_registry import avro_schema as s

# Column layouts: the shared tree's (arrow_columns.py, csrc/fkc_typed_columns.h)
from fastkc.schema_registry.arrow_columns import (
    BINARY,
    BOOL,
    DECIMAL,
    DENSE_UNION,
    DICT,
    FIXED_BINARY,
    FLOAT32,
    FLOAT64,
    INT32,
    INT64,
    LIST,
    MAP,
    MAX_UNION_CHILDREN,
    NULL,
    STRUCT,
    UTF8,
    ArrowPlan,
    ColumnTree,
)
from fastkc.schema_registry.arrow_columns import COUNT as _COUNT
from fastkc.schema_registry.arrow_columns import FIRST as _FIRST
from fastkc.schema_registry.avro_errors import AvroArrowUnsupportedError, AvroSchemaError

_TIME_UNITS = {"millis": "m", "micros": "u", "nanos": "n"}
_LONG_FORMATS = {s.L_TIME_MICROS: "ttu"} | {
    kind: f"ts{_TIME_UNITS[name.rsplit('-', 1)[1]]}:{'' if name.startswith('local-') else 'UTC'}"
    for kind, name in s.LOGICAL_NAMES.items() if "timestamp" in name
}
_INT_FORMATS = {s.L_DATE: "tdD", s.L_TIME_MILLIS: "ttm"}
# Arrow's time32[ms] and time64[us] hold a time of day: the sink refuses others
_DAY = {s.L_TIME_MILLIS: 86_400_000, s.L_TIME_MICROS: 86_400_000_000}
_SIMPLE = {"boolean": (BOOL, "b"), "float": (FLOAT32, "f"), "double": (FLOAT64, "g"), "string": (UTF8, "u")}
_NULL_TYPE = s.AvroType("null")
_STRING_TYPE = s.AvroType("string")


def compile_plan(program: s.Program) -> ArrowPlan:
    """The Arrow plan of `program` (its reader schema's types)."""
    c = _PlanCompiler(program)
    root = c.new_column()
    c.fill(root, program.reader, "", ())
    step = c.value_step(program.root, program.reader, root, program.writer)
    return c.plan(step)


def _describe(t: s.AvroType) -> str:
    return repr(t.name) if t.name else t.kind


def _dense(t: s.AvroType) -> bool:
    """Whether `t` is a union of two or more types besides null (a dense union column)."""
    return t.kind == "union" and sum(b.kind != "null" for b in t.branches) > 1


def _nullable_branch(t: s.AvroType) -> tuple[s.AvroType, bool]:
    """A union's one non-null branch (null: [null] alone) and whether null is
    a branch; any other type (not a dense union) as itself."""
    if t.kind != "union":
        return t, False
    others = [b for b in t.branches if b.kind != "null"]
    return (others[0] if others else _NULL_TYPE), len(others) < len(t.branches)


def _branch_names(t: s.AvroType) -> list[str]:
    """A dense union's child names: each branch's Avro type name (a named
    type's full name), made unique with a suffix when two coincide."""
    names: list[str] = []
    for b in t.branches:
        base = b.name or b.kind
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


class _PlanCompiler(ColumnTree):
    def __init__(self, program: s.Program) -> None:
        super().__init__()
        self.code = program.code
        self.consts = program.consts

    # -- columns: the reader's types -----------------------------------------

    def new_column(self) -> int:
        cid = self.add_column()
        if cid is None:
            raise AvroSchemaError(f"Avro schema: {self.too_many()}")
        return cid

    def children(self, cid: int, named: list[tuple[str, s.AvroType]], stack: tuple[s.AvroType, ...]) -> None:
        """Columns for `named` (name, type), numbered together after every
        column made so far (a column's children are contiguous)."""
        ids = [self.new_column() for _ in named]
        col = self.columns[cid]
        col[_FIRST], col[_COUNT] = (ids[0] if ids else 0), len(ids)
        for child, (name, t) in zip(ids, named):
            self.fill(child, t, name, stack)

    def fill(self, cid: int, t: s.AvroType, name: str, stack: tuple[s.AvroType, ...]) -> None:
        if _dense(t):
            n = len(t.branches)
            if n > MAX_UNION_CHILDREN:
                raise AvroArrowUnsupportedError(
                    f"Avro schema: the union [{', '.join(_describe(b) for b in t.branches)}] has {n} branches, "
                    f"more than an Arrow union's {MAX_UNION_CHILDREN}")
            self.set_column(cid, DENSE_UNION, False, name, "+ud:" + ",".join(str(i) for i in range(n)))
            self.children(cid, list(zip(_branch_names(t), t.branches)), stack)
            return
        t, nullable = _nullable_branch(t)
        params = [0, 0, 0]
        kind = t.kind
        if kind == "null":
            layout, fmt, nullable = NULL, "n", True
        elif kind in _SIMPLE:
            layout, fmt = _SIMPLE[kind]
        elif kind == "int":
            layout, fmt = INT32, _INT_FORMATS.get(t.logical, "i")
            params = [_DAY.get(t.logical, 0), 0, 0]
        elif kind == "long":
            layout, fmt = INT64, _LONG_FORMATS.get(t.logical, "l")
            params = [_DAY.get(t.logical, 0), 0, 0]
        elif kind in ("bytes", "fixed") and t.logical == s.L_DECIMAL:
            layout, fmt, params = self.decimal(t)
        elif kind == "bytes":
            layout, fmt = BINARY, "z"
        elif kind == "fixed":
            layout, fmt, params = FIXED_BINARY, f"w:{t.size}", [t.size, 0, 0]
        elif kind == "enum":
            layout, fmt, params = DICT, "i", self.symbols(t.symbols)
        else:
            layout, fmt = {"array": (LIST, "+l"), "map": (MAP, "+m"), "record": (STRUCT, "+s")}[kind]
        self.columns[cid][:4] = [layout, int(nullable), self.text(name), self.text(fmt)]
        self.columns[cid][6:] = params
        if kind == "array":
            assert t.items is not None
            self.children(cid, [("item", t.items)], stack)
        elif kind == "map":
            assert t.values is not None
            entries = self.new_column()
            self.columns[cid][_FIRST], self.columns[cid][_COUNT] = entries, 1
            self.columns[entries][:4] = [STRUCT, 0, self.text("entries"), self.text("+s")]
            self.children(entries, [("key", _STRING_TYPE), ("value", t.values)], stack)
        elif kind == "record":
            if any(t is outer for outer in stack):
                raise AvroArrowUnsupportedError(
                    f"Avro schema: the record {t.name!r} contains itself, and Arrow types cannot be recursive")
            self.children(cid, [(f.name, f.type) for f in t.fields], stack + (t,))

    def decimal(self, t: s.AvroType) -> tuple[int, str, list[int]]:
        if t.precision > 76:
            raise AvroArrowUnsupportedError(
                f"Avro schema: decimal({t.precision}, {t.scale}) is wider than Arrow's decimal256 (76 digits)")
        width, suffix = (16, "") if t.precision <= 38 else (32, ",256")
        bound = self.blob((10 ** t.precision).to_bytes(width, "little"))
        return DECIMAL, f"d:{t.precision},{t.scale}{suffix}", [width, bound, 0]

    # -- steps: the program's values into the columns ----------------------

    def reserve(self, head: list[int], n: int) -> int:
        sid = len(self.steps)
        self.steps += head + [n] + [-1] * n
        return sid

    def value_step(self, pc: int, t: s.AvroType, cid: int, w: s.AvroType) -> int:
        """The step reading the program's value at `pc` (reader type `t`,
        writer type `w`) into column `cid`."""
        code = self.code
        op = code[pc]
        if op == s.OP_UNION:  # a writer union: each branch writes this column, or its branch's child
            n = code[pc + 1]
            sid = self.reserve([pc, cid], n)
            dense = _dense(t)
            for i in range(n):
                target, reader_branch = code[pc + 2 + 2 * i], code[pc + 3 + 2 * i]
                if target >= 0:
                    which = reader_branch if reader_branch >= 0 else i  # a writer-only program: itself
                    branch = t.branches[which] if t.kind == "union" else t
                    column = self.columns[cid][_FIRST] + which if dense else cid
                    self.steps[sid + 3 + i] = self.value_step(target, branch, column, w.branches[i])
            return sid
        if _dense(t):  # a writer type the program resolved to one branch of the reader's union
            which = s.best_branch(w, t.branches)
            sid = self.reserve([pc, cid], 1)
            self.steps[sid + 3] = self.value_step(pc, t.branches[which], self.columns[cid][_FIRST] + which, w)
            return sid
        if t.kind == "union":  # a reader union the program resolved to one branch
            is_null = op == s.OP_SCALAR and code[pc + 1] == s.W_NULL
            t = _NULL_TYPE if is_null else _nullable_branch(t)[0]
        first = self.columns[cid][_FIRST]
        if op in (s.OP_SCALAR, s.OP_ENUM):
            return self.reserve([pc, cid], 0)
        if op == s.OP_ARRAY:
            assert t.items is not None and w.items is not None
            sid = self.reserve([pc, cid], 1)
            self.steps[sid + 3] = self.value_step(code[pc + 1], t.items, first, w.items)
            return sid
        if op == s.OP_MAP:
            assert t.values is not None and w.values is not None
            sid = self.reserve([pc, cid], 1)
            self.steps[sid + 3] = self.value_step(code[pc + 1], t.values, self.columns[first][_FIRST] + 1, w.values)
            return sid
        nfields, ndefaults = code[pc + 1], code[pc + 2]
        sid = self.reserve([pc, cid], nfields + ndefaults)
        index = {f.name: i for i, f in enumerate(t.fields)}
        for i in range(nfields):
            field_pc, key = code[pc + 4 + 2 * i], code[pc + 5 + 2 * i]
            if key >= 0:  # a skipped writer field writes nothing
                k = index[self.consts[key]]
                self.steps[sid + 3 + i] = self.value_step(field_pc, t.fields[k].type, first + k, w.fields[i].type)
        at = pc + 4 + 2 * nfields
        for j in range(ndefaults):
            key, default = code[at + 2 * j], code[at + 2 * j + 1]
            k = index[self.consts[key]]
            where = f"field {t.fields[k].name!r} of {t.name!r}"
            self.steps[sid + 3 + nfields + j] = self.const_step(self.consts[default], t.fields[k].type, first + k,
                                                                where)
        return sid

    def const_step(self, value: Any, t: s.AvroType, cid: int, where: str) -> int:
        """A step writing the JSON default `value` of reader type `t`."""
        if _dense(t):
            return self.union_const_step(value, t, cid, where)
        branch, nullable = _nullable_branch(t)
        if value is None and (nullable or branch.kind == "null"):
            return self.reserve([-1, cid, 1, 0, 0], 0)
        t = branch
        first = self.columns[cid][_FIRST]
        try:
            if t.kind == "array" and isinstance(value, list):
                assert t.items is not None
                sid = self.reserve([-1, cid, 0, 0, 0], len(value))
                for i, item in enumerate(value):
                    self.steps[sid + 6 + i] = self.const_step(item, t.items, first, where)
                return sid
            if t.kind == "map" and isinstance(value, dict):
                assert t.values is not None
                key_col = self.columns[first][_FIRST]
                sid = self.reserve([-1, cid, 0, 0, 0], 2 * len(value))
                for i, (k, v) in enumerate(value.items()):
                    self.steps[sid + 6 + 2 * i] = self.const_step(k, _STRING_TYPE, key_col, where)
                    self.steps[sid + 7 + 2 * i] = self.const_step(v, t.values, key_col + 1, where)
                return sid
            if t.kind == "record" and isinstance(value, dict):
                sid = self.reserve([-1, cid, 0, 0, 0], len(t.fields))
                for i, f in enumerate(t.fields):
                    if f.name in value:
                        v = value[f.name]
                    elif f.has_default:
                        v = f.default
                    else:
                        raise ValueError(f"no value for {f.name!r}")
                    self.steps[sid + 6 + i] = self.const_step(v, f.type, first + i, where)
                return sid
            data = self.scalar_bytes(value, t)
        except (ValueError, TypeError, struct.error, OverflowError, UnicodeError) as e:
            raise AvroSchemaError(f"Avro schema: the default of {where} does not fit its type: {e}") from None
        return self.reserve([-1, cid, 0, self.blob(data), len(data)], 0)

    def union_const_step(self, value: Any, t: s.AvroType, cid: int, where: str) -> int:
        """A dense union's default: a constant of the first branch it fits
        (the spec has it match the first branch; a later one is taken as
        readers that accept any branch do)."""
        sid = self.reserve([-1, cid, 0, 0, 0], 1)
        mark = len(self.steps)
        first = self.columns[cid][_FIRST]
        for i, branch in enumerate(t.branches):
            try:
                self.steps[sid + 6] = self.const_step(value, branch, first + i, where)
                return sid
            except AvroSchemaError:
                del self.steps[mark:]  # the steps of a branch it did not fit
        raise AvroSchemaError(f"Avro schema: the default of {where} does not fit its type: "
                              f"{value!r} fits no branch of the union")

    @staticmethod
    def scalar_bytes(value: Any, t: s.AvroType) -> bytes:
        """A JSON default's bytes as the column holds them."""
        kind = t.kind
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "boolean" and isinstance(value, bool):
            return bytes([value])
        if kind in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
            day = _DAY.get(t.logical)
            if day is not None and not 0 <= value < day:
                raise ValueError(f"{value} is not a time of day")
            return struct.pack("<i" if kind == "int" else "<q", value)
        if kind in ("float", "double") and number:
            return struct.pack("<f" if kind == "float" else "<d", value)
        if kind == "string" and isinstance(value, str):
            return value.encode()
        if kind == "enum" and isinstance(value, str):
            return struct.pack("<i", t.symbols.index(value))
        if kind in ("bytes", "fixed") and isinstance(value, str):
            raw = value.encode("latin-1")  # Avro writes bytes defaults as code points 0-255
            if kind == "fixed" and len(raw) != t.size:
                raise ValueError(f"{len(raw)} bytes for a fixed of {t.size}")
            if t.logical != s.L_DECIMAL:
                return raw
            unscaled = int.from_bytes(raw, "big", signed=True)
            if abs(unscaled) >= 10 ** t.precision:
                raise ValueError(f"more digits than the precision {t.precision}")
            return unscaled.to_bytes(16 if t.precision <= 38 else 32, "little", signed=True)
        raise TypeError(f"{value!r} is not a {kind}")
