"""Protobuf payloads decoded in C: `ProtobufDecoder(descriptor)`.

    decoder = ProtobufDecoder(MyEvent.DESCRIPTOR)
    dicts = decoder.decode_many(payloads)          # MessageToDict's dicts, native values
    table = decoder.decode_arrow_column(column, 6)  # one pyarrow struct array

The payloads are bare Protobuf binary (the Confluent framing, magic byte,
schema id and message indexes, is cut by the caller, or skipped in place by
decode_prefixed / decode_arrow_column). The descriptor is compiled once
(fastkc/schema_registry/protobuf_schema.py), the C interpreter
(csrc/fkc_protobuf.c) reads with the GIL released, and the values are built
in C: dicts, or one typed Arrow array as fastkc/schema_registry/protobuf_arrow.py
maps it (docs/guide/schema-registry-protobuf.md). A bad payload raises
ProtobufDecodeError with its index in the list and the byte offset where
reading failed.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import Descriptor

from fastkc import _backend
from fastkc.schema_registry import protobuf_arrow, protobuf_schema

_Buffer = bytes | bytearray | memoryview


class ProtobufDecoder:
    """A message type, compiled, ready to decode payloads of it.

    Thread-safe: the compiled decoder keeps its read position on the
    instance while it builds values, so one instance decodes one list at a
    time, under its own lock."""

    def __init__(self, descriptor: Descriptor, *, max_depth: int = protobuf_schema.MAX_DEPTH) -> None:
        self.program = protobuf_schema.compile_program(descriptor, max_depth)
        self._core: Any = None
        if _backend.name == "c":
            from fastkc._core._protobuf import ProtobufDecoder as _Compiled

            self._core = _Compiled(self.program.code, self.program.messages)
        self._lock = threading.Lock()
        self._arrow_ready = False  # the Arrow plan is compiled on the first decode_arrow

    def decode_many(self, payloads: Iterable[_Buffer]) -> list[Any]:
        """The dicts of `payloads` in order."""
        if self._core is None:
            from fastkc._twin import protobuf as twin

            return twin.decode_many(self.program, [bytes(p) for p in payloads])
        with self._lock:
            result: list[Any] = self._core.decode_many(payloads)
            return result

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix`, each past it;
        [] when values[start] is not. ProtobufDecodeError's index counts from
        start."""
        if self._core is None:
            run = []
            for v in values[start:]:
                if type(v) is not bytes or not v.startswith(prefix):
                    break
                run.append(v[len(prefix):])
            return self.decode_many(run)
        with self._lock:
            result: list[Any] = self._core.decode_prefixed(values, start, prefix)
            return result

    def decode_arrow(self, payloads: Iterable[_Buffer]) -> Any:
        """The messages of `payloads` as one pyarrow struct array, one row per
        payload. A field with no Arrow mapping raises
        ProtobufArrowUnsupportedError before anything is read; needs the
        compiled core."""
        with self._lock:
            return self._arrow_core().decode_arrow(payloads)

    def decode_arrow_column(self, values: Any, skip: int = 0) -> Any:
        """decode_arrow() of the rows of a pyarrow binary column (binary,
        large_binary or binary_view; no nulls), each past its first `skip`
        bytes (the Schema Registry prefix), read in place."""
        import pyarrow as pa

        if not pa.types.is_binary(values.type):
            values = values.cast(pa.binary())
        with self._lock:
            return self._arrow_core().decode_arrow_column(values, skip)

    def _arrow_core(self) -> Any:
        """The compiled core with its Arrow plan (compiled on first use); under self._lock."""
        if self._core is None:
            raise NotImplementedError("fastkc: decode_arrow needs the compiled core (the pure-Python twin that "
                                      "FASTKC_PURE=1 selects decodes into Python values only)")
        if not self._arrow_ready:
            plan = protobuf_arrow.compile_plan(self.program)
            self._core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)
            self._arrow_ready = True
        return self._core
