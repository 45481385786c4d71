"""Avro payloads decoded in C: `AvroDecoder(writer_schema, reader_schema=None)`.

    decoder = AvroDecoder(writer_schema_json)
    values = decoder.decode_many(payloads)   # what fastavro.schemaless_reader gives, per payload

The payloads are bare Avro binary (the Confluent framing, magic byte and
schema id, is cut by the caller that reads it). With a reader schema, every
value is resolved to it by Avro's rules (promotions, defaults for added
fields, removed fields skipped, aliases, enum and union mapping): the
resolution is compiled once here (fastkc/schema_registry/avro_schema.py),
the C interpreter (csrc/fkc_avro.c) follows it with the GIL released, and
the values are built in C. A bad payload raises AvroDecodeError with its
index in the list and the byte offset where reading failed.

`decoder.decode_arrow(payloads)` gives the same payloads as one typed
pyarrow.Array instead (the reader's types, mapped as
fastkc/schema_registry/avro_arrow.py says), built in C from the same read.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from fastkc import _backend
from fastkc.schema_registry import avro_arrow, avro_schema
from fastkc.schema_registry.avro_errors import AvroDecodeError, AvroSchemaError

__all__ = ["AvroDecoder", "AvroDecodeError", "AvroSchemaError"]

_Buffer = bytes | bytearray | memoryview


def _same_schema(a: Any, b: Any) -> bool:
    # fastavro's schemaless_reader drops a reader schema equal to the writer
    # schema (no resolution at all): so does this decoder.
    try:
        return bool(_loaded(a) == _loaded(b))
    except ValueError:
        return False


def _loaded(schema: Any) -> Any:
    return json.loads(schema) if isinstance(schema, (str, bytes, bytearray)) else schema


class AvroDecoder:
    """Decodes Avro payloads written with `writer_schema`, as `reader_schema`
    when given (JSON text, or the JSON already loaded).

    Bounds (hostile input gets a typed error, never unbounded work):
      max_depth: nesting of the schema, and of the data at decode time
      max_empty_items: items that take no bytes (nulls, empty records) in
        one payload's arrays
      allow_trailing_bytes: by default bytes after the value are an error
        (they mean the payload was not written with this schema); fastavro
        ignores them, and so does this decoder when True

    Thread-safe: the compiled decoder keeps its read position on the
    instance while it builds the values, and the logical-type conversions
    run Python code (where another thread may take the GIL), so one
    instance decodes one list at a time, under its own lock.
    """

    def __init__(
        self,
        writer_schema: Any,
        reader_schema: Any = None,
        *,
        max_depth: int = avro_schema.DEFAULT_MAX_DEPTH,
        max_empty_items: int = avro_schema.DEFAULT_MAX_EMPTY_ITEMS,
        allow_trailing_bytes: bool = False,
    ) -> None:
        writer = avro_schema.parse_schema(writer_schema, max_depth=max_depth)
        reader: avro_schema.AvroType | None = None
        if reader_schema is not None and not _same_schema(writer_schema, reader_schema):
            reader = avro_schema.parse_schema(reader_schema, max_depth=max_depth)
        self.program = avro_schema.compile_program(
            writer, reader, max_depth=max_depth, max_empty_items=max_empty_items
        )
        self._core = _backend.AvroDecoderCore(self.program.code, self.program.consts, allow_trailing_bytes)
        self._lock = threading.Lock()
        self._arrow_ready = False  # the Arrow plan is compiled on the first decode_arrow

    def decode_many(self, payloads: Iterable[_Buffer]) -> list[Any]:
        """The values of `payloads` in order (one C call for the whole list)."""
        with self._lock:
            return self._core.decode_many(payloads)

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix` (one writer
        schema's 5-byte frame), each past it, read in place; [] when
        values[start] is not. AvroDecodeError's index counts from start."""
        with self._lock:
            result: list[Any] = self._core.decode_prefixed(values, start, prefix)
            return result

    def decode_arrow(self, payloads: Iterable[_Buffer]) -> Any:
        """The values of `payloads` as one pyarrow.Array (a record schema: a
        struct array), one row per payload. A reader type with no Arrow
        mapping raises AvroArrowUnsupportedError before anything is read;
        needs the compiled core."""
        with self._lock:
            return self._arrow_core().decode_arrow(payloads)

    def decode_arrow_column(self, values: Any, skip: int = 0) -> Any:
        """decode_arrow() of the rows of a pyarrow binary column (binary,
        large_binary or binary_view; no nulls), each past its first `skip`
        bytes (the Schema Registry prefix): the rows are read in place, with
        no bytes object per row."""
        import pyarrow as pa

        if not pa.types.is_binary(values.type):
            values = values.cast(pa.binary())
        with self._lock:
            return self._arrow_core().decode_arrow_column(values, skip)

    def _arrow_core(self) -> Any:
        """The compiled core with its Arrow plan (compiled on first use); under self._lock."""
        if not hasattr(self._core, "decode_arrow"):
            raise NotImplementedError("fastkc: decode_arrow needs the compiled core (the pure-Python twin that "
                                      "FASTKC_PURE=1 selects decodes into Python values only)")
        if not self._arrow_ready:
            plan = avro_arrow.compile_plan(self.program)
            self._core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)
            self._arrow_ready = True
        return self._core

    def decode(self, payload: _Buffer) -> Any:
        """The value of one payload."""
        return self.decode_many([payload])[0]
