"""The Arrow column tree the C sinks build and the plan that carries it,
shared by the Avro, Protobuf and JSON Schema plans (avro_arrow.py,
protobuf_arrow.py, json_arrow.py).

A tree is a flat int64 list of COL_WIDTH words per column (layout, nullable,
name, Arrow format string, first child, children, p0..p2), column 0 the
array itself, a column's children contiguous and after it, and a blob of
the names, formats and dictionaries they point into. csrc/fkc_typed_columns.h
names the same numbers and checks every tree it is given.
"""
from __future__ import annotations

import dataclasses
import struct

# Column layouts (csrc/fkc_typed_columns.h)
NULL = 0
BOOL = 1
INT32 = 2
INT64 = 3
FLOAT32 = 4
FLOAT64 = 5
FIXED_BINARY = 6
DECIMAL = 7
BINARY = 8
UTF8 = 9
STRUCT = 10
LIST = 11
MAP = 12
DICT = 13
UINT32 = 14
UINT64 = 15
DENSE_UNION = 16  # int8 type ids (type id i = child i), int32 offsets; no validity

MAX_UNION_CHILDREN = 127  # Arrow's type ids are int8

COL_WIDTH = 9  # [layout, nullable, name, format, first child, children, p0, p1, p2]
FIRST, COUNT = 4, 5

# An Arrow tree repeats a named type at each place it is used; this bounds
# what a schema that reuses its types can fan out into.
MAX_COLUMNS = 100_000


@dataclasses.dataclass(frozen=True)
class ArrowPlan:
    """What a C sink needs (csrc/fkc_avro_arrow.c, fkc_protobuf_arrow.c,
    fkc_json_arrow.c; each checks it against its own program): the column
    tree, the steps that fill it, the strings blob and the first step."""

    columns: list[int]
    steps: list[int]
    strings: bytes
    root_step: int


class ColumnTree:
    """Columns, steps and the strings blob being written (a plan compiler's
    base; the steps' words are each format's own)."""

    def __init__(self) -> None:
        self.columns: list[list[int]] = []
        self.steps: list[int] = []
        self.strings = bytearray()
        self.texts: dict[str, int] = {}

    def text(self, value: str) -> int:
        """A NUL-terminated string (names, formats), shared."""
        found = self.texts.get(value)
        if found is None:
            found = self.texts[value] = self.blob(value.encode() + b"\0")
        return found

    def blob(self, data: bytes) -> int:
        at = len(self.strings)
        self.strings += data
        return at

    def too_many(self) -> str:
        """The error text when a tree would pass MAX_COLUMNS (the caller raises its format's error)."""
        return f"more than {MAX_COLUMNS} Arrow columns"

    def add_column(self) -> int | None:
        """A new column's index, None past MAX_COLUMNS."""
        if len(self.columns) >= MAX_COLUMNS:
            return None
        self.columns.append([0] * COL_WIDTH)
        return len(self.columns) - 1

    def set_column(self, cid: int, layout: int, nullable: bool, name: str, fmt: str,
                   params: list[int] | None = None) -> None:
        col = self.columns[cid]
        col[:4] = [layout, int(nullable), self.text(name), self.text(fmt)]
        col[6:] = params or [0, 0, 0]

    def symbols(self, symbols: tuple[str, ...] | list[str]) -> list[int]:
        """A DICT column's p0..p2: the symbol count, its offsets and bytes in the blob."""
        data = [sym.encode() for sym in symbols]
        offsets = [0]
        for d in data:
            offsets.append(offsets[-1] + len(d))
        at = self.blob(struct.pack(f"<{len(offsets)}i", *offsets))
        return [len(symbols), at, self.blob(b"".join(data))]

    def flat(self) -> list[int]:
        return [w for col in self.columns for w in col]

    def plan(self, root_step: int) -> ArrowPlan:
        """The finished plan, its program starting at `root_step`."""
        return ArrowPlan(self.flat(), self.steps, bytes(self.strings), root_step)
