"""What an Avro logical type becomes in Python: fastavro's conversions.

Both sinks (the compiled object builder in fastkc/_core/_avro.pyx and the
twin, fastkc/_twin/avro.py) convert through `convert_logical`, so records
equal fastavro's `schemaless_reader` output: fastavro converts by the
WRITER's logical type (the reader's is not consulted), and only these:
decimal (bytes, fixed), uuid (string), date, time-millis, time-micros,
timestamp-millis/-micros and their local- forms. The others (uuid on fixed,
the -nanos timestamps, duration) stay their base value, as fastavro leaves
them. A value Python cannot hold (a timestamp past year 9999) raises
ValueError or OverflowError; the callers turn it into AvroDecodeError at the
value's offset.
"""
from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable
from typing import Any

from fastkc.schema_registry import avro_schema as s

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_DAYS_SHIFT = datetime.date(1970, 1, 1).toordinal()
_contexts: dict[int, decimal.Context] = {}


def _decimal(raw: bytes, params: tuple[int, int]) -> decimal.Decimal:
    precision, scale = params
    ctx = _contexts.get(precision)
    if ctx is None:
        ctx = _contexts[precision] = decimal.Context(prec=precision)
    return ctx.create_decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale, ctx)


def _time_millis(v: int, _: Any) -> datetime.time:
    # fastavro's arithmetic, true division included (a negative value above
    # -1 hour reads as a time in the first hour, as fastavro has it)
    return datetime.time(int(v / 3_600_000), int(v / 60_000) % 60, int(v / 1000) % 60, int(v % 1000) * 1000)


def _time_micros(v: int, _: Any) -> datetime.time:
    return datetime.time(int(v / 3_600_000_000), int(v / 60_000_000) % 60, int(v / 1_000_000) % 60, v % 1_000_000)


_CONVERT: dict[int, Callable[[Any, Any], Any]] = {
    s.L_DECIMAL: _decimal,
    s.L_DATE: lambda v, _: datetime.date.fromordinal(v + _DAYS_SHIFT),
    s.L_TIME_MILLIS: _time_millis,
    s.L_TIME_MICROS: _time_micros,
    s.L_TIMESTAMP_MILLIS: lambda v, _: _EPOCH + datetime.timedelta(microseconds=v * 1000),
    s.L_TIMESTAMP_MICROS: lambda v, _: _EPOCH + datetime.timedelta(microseconds=v),
    s.L_LOCAL_TIMESTAMP_MILLIS: lambda v, _: _EPOCH_NAIVE + datetime.timedelta(microseconds=v * 1000),
    s.L_LOCAL_TIMESTAMP_MICROS: lambda v, _: _EPOCH_NAIVE + datetime.timedelta(microseconds=v),
}


def python_converts(logical: int, wire: int) -> bool:
    """Whether fastavro turns this (logical kind, writer wire kind) into
    another Python value than the base one."""
    if logical == s.L_UUID:
        return wire == s.W_STRING
    return logical in _CONVERT


def convert_logical(logical: int, wire: int, raw: Any, param: Any) -> Any:
    """The fastavro value of a logical-typed `raw` base value (bytes for
    bytes/fixed, str for string, int for int/long)."""
    if logical == s.L_UUID:
        return uuid.UUID(raw) if wire == s.W_STRING else raw
    fn = _CONVERT.get(logical)
    return raw if fn is None else fn(raw, param)
