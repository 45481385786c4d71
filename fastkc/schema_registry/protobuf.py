"""Protobuf payloads decoded in C: `ProtobufDecoder(descriptor)`.

    decoder = ProtobufDecoder(Event.DESCRIPTOR)
    dicts = decoder.decode_many(payloads)   # MessageToDict's shape, native values

The payloads are bare Protobuf binary (the Confluent framing is cut by the
caller that reads it). The message type is compiled once
(fastkc/schema_registry/protobuf_schema.py), the C interpreter
(csrc/fkc_protobuf.c) reads a batch with the GIL released, and the dicts
are built in C from its tape (fastkc/_core/_protobuf.pyx): the keys and
nesting of `json_format.MessageToDict(message, preserving_proto_field_name=True)`
for the message the runtime parses from the same bytes, with native values
(int64s as ints, bytes as bytes, enums as their names, map keys as their
type). A bad payload raises ProtobufDecodeError with its index in the list
and the byte offset where reading failed.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from fastkc import _backend
from fastkc.schema_registry import protobuf_schema
from fastkc.schema_registry.protobuf_errors import ProtobufDecodeError, ProtobufSchemaError

__all__ = ["ProtobufDecoder", "ProtobufDecodeError", "ProtobufSchemaError"]

_Buffer = bytes | bytearray | memoryview


class ProtobufDecoder:
    """Decodes payloads of the message `descriptor` (a
    google.protobuf.descriptor.Descriptor) into dicts.

    Thread-safe: the compiled decoder keeps its read position on the
    instance while it builds the values (and the well-known types' hook runs
    Python code, where another thread may take the GIL), so one instance
    decodes one list at a time, under its own lock.
    """

    def __init__(self, descriptor: Any) -> None:
        self.program = protobuf_schema.compile_program(descriptor)
        self._core = _backend.ProtobufDecoderCore(self.program.code, self.program.messages)
        self._lock = threading.Lock()

    def decode_many(self, payloads: Iterable[_Buffer]) -> list[Any]:
        """The dicts of `payloads` in order (one C call for the whole list)."""
        listed = payloads if isinstance(payloads, list) else list(payloads)
        with self._lock:
            return self._core.decode_many(listed)

    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]:
        """decode_many() of one Schema Registry run: the leading values from
        values[start] on that are bytes starting with `prefix` (one schema's
        frame, message indexes included), each past it, read in place; []
        when values[start] is not bytes. The error's index counts from `start`."""
        with self._lock:
            return self._core.decode_prefixed(values, start, prefix)

    def decode_arrow_column(self, column: Any, skip: int = 0) -> Any:
        """Typed Arrow columns of Protobuf values: not built yet (the C sink
        is in progress); refused with a typed error, never raw bytes."""
        raise ProtobufSchemaError("Protobuf values as typed Arrow columns are not supported yet")
