"""Protobuf payloads decoded in C: `ProtobufDecoder(descriptor)`.

    decoder = ProtobufDecoder(Event.DESCRIPTOR)
    dicts = decoder.decode_many(payloads)           # MessageToDict's shape, native values
    array = decoder.decode_arrow_column(column, 6)  # one pyarrow struct array

The payloads are bare Protobuf binary (the Confluent framing, magic byte,
schema id and message indexes, is cut by the caller, or skipped in place by
decode_prefixed / decode_arrow_column). The message type is compiled once
(fastkc/schema_registry/protobuf_schema.py), the C interpreter
(csrc/fkc_protobuf.c) reads a batch with the GIL released, and the values
are built in C from its tape:
- dicts (fastkc/_core/_protobuf.pyx): the keys and nesting of
  `json_format.MessageToDict(message, preserving_proto_field_name=True)` for
  the message the runtime parses from the same bytes, with native values
  (int64s as ints, bytes as bytes, enums as their names, map keys as their
  type);
- or one typed Arrow array (csrc/fkc_protobuf_arrow.c), as
  fastkc/schema_registry/protobuf_arrow.py maps the message
  (docs/guide/schema-registry-protobuf.md).
A bad payload raises ProtobufDecodeError with its index in the list and the
byte offset where reading failed.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from fastkc import _backend
from fastkc.schema_registry import protobuf_arrow, protobuf_schema
from fastkc.schema_registry.protobuf_errors import ProtobufDecodeError, ProtobufSchemaError

__all__ = ["ProtobufDecoder", "ProtobufDecodeError", "ProtobufSchemaError"]

_Buffer = bytes | bytearray | memoryview


class ProtobufDecoder:
    """Decodes payloads of the message `descriptor` (a
    google.protobuf.descriptor.Descriptor) into dicts or Arrow.

    Thread-safe: the compiled decoder keeps its read position on the
    instance while it builds the values (and the well-known types' hook runs
    Python code, where another thread may take the GIL), so one instance
    decodes one list at a time, under its own lock.
    """

    def __init__(self, descriptor: Any, *, max_depth: int = protobuf_schema.MAX_DEPTH) -> None:
        self.program = protobuf_schema.compile_program(descriptor, max_depth)
        self._core = _backend.protobuf_decoder_core()(self.program.code, self.program.messages)
        self._lock = threading.Lock()
        self._arrow_ready = False  # the Arrow plan is compiled on the first Arrow decode

    def decode_many(self, payloads: Iterable[_Buffer]) -> list[Any]:
        """The dicts of `payloads` in order (one C call for the whole list)."""
        listed = payloads if isinstance(payloads, list) else list(payloads)
        with self._lock:
            values: list[Any] = self._core.decode_many(listed)
            return values

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix` (one schema's
        frame, message indexes included), each past it, read in place; []
        when values[start] is not bytes. The error's index counts from `start`."""
        with self._lock:
            run: list[Any] = self._core.decode_prefixed(values, start, prefix)
            return run

    def decode_arrow(self, payloads: Iterable[_Buffer]) -> Any:
        """The messages of `payloads` as one pyarrow struct array, one row per
        payload. A field with no Arrow mapping raises
        ProtobufArrowUnsupportedError before anything is read; needs the
        compiled core."""
        with self._lock:
            return self._arrow_core().decode_arrow(payloads)

    def decode_arrow_column(self, column: Any, skip: int = 0) -> Any:
        """decode_arrow() of the rows of a pyarrow binary column (binary,
        large_binary or binary_view; no nulls), each past its first `skip`
        bytes (the Schema Registry prefix), read in place."""
        import pyarrow as pa

        if not pa.types.is_binary(column.type):
            column = column.cast(pa.binary())
        with self._lock:
            return self._arrow_core().decode_arrow_column(column, skip)

    def _arrow_core(self) -> Any:
        """The compiled core with its Arrow plan (compiled on first use); under self._lock."""
        if _backend.name != "c":
            raise NotImplementedError("fastkc: Protobuf Arrow columns need the compiled core (the pure-Python "
                                      "twin that FASTKC_PURE=1 selects decodes into Python values only)")
        if not self._arrow_ready:
            plan = protobuf_arrow.compile_plan(self.program)
            self._core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)
            self._arrow_ready = True
        return self._core
