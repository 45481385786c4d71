"""The well-known types as MessageToDict gives them, with native values.

Both object builders (fastkc/_core/_protobuf.pyx and the twin) build a
well-known type's fields as for any message, then call `convert` with that
dict (its keys the field names, implicit defaults omitted). The result is
what `google.protobuf.json_format.MessageToDict` gives for the type, except
that values stay native: Int64Value and UInt64Value as int (not a string),
BytesValue as bytes (not base64). An Any is not resolved: it is
{"type_url": str, "value": bytes}. The conversions stay in Python
(Duration and FieldMask text by the runtime's own formatters), except
Timestamp's, the common one, which the compiled builder formats itself
(fastkc/_core/_protobuf.pyx `_rfc3339`) and hands here only when out of
range, for the runtime's error.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import duration_pb2, field_mask_pb2, timestamp_pb2


class WellKnownValueError(ValueError):
    """A well-known value MessageToDict cannot render (a Timestamp or
    Duration out of range, a Value with no kind set)."""


def _timestamp(d: dict[str, Any]) -> Any:
    try:
        return timestamp_pb2.Timestamp(seconds=d.get("seconds", 0), nanos=d.get("nanos", 0)).ToJsonString()
    except (ValueError, OverflowError) as e:
        raise WellKnownValueError(str(e)) from None


def _duration(d: dict[str, Any]) -> Any:
    try:
        return duration_pb2.Duration(seconds=d.get("seconds", 0), nanos=d.get("nanos", 0)).ToJsonString()
    except (ValueError, OverflowError) as e:
        raise WellKnownValueError(str(e)) from None


def _field_mask(d: dict[str, Any]) -> Any:
    try:
        return field_mask_pb2.FieldMask(paths=d.get("paths", [])).ToJsonString()
    except ValueError as e:
        raise WellKnownValueError(str(e)) from None


_VALUE_KINDS = ("null_value", "number_value", "string_value", "bool_value", "struct_value", "list_value")


def _value(d: dict[str, Any]) -> Any:
    for k in _VALUE_KINDS:  # a oneof: at most one is in the dict
        if k in d:
            return d[k]
    raise WellKnownValueError("a google.protobuf.Value with no kind set")


def _wrapper(default: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d.get("value", default)


_CONVERT: dict[str, Callable[[dict[str, Any]], Any]] = {
    "google.protobuf.Timestamp": _timestamp,
    "google.protobuf.Duration": _duration,
    "google.protobuf.FieldMask": _field_mask,
    "google.protobuf.Struct": lambda d: d.get("fields", {}),
    "google.protobuf.ListValue": lambda d: d.get("values", []),
    "google.protobuf.Value": _value,
    "google.protobuf.Empty": lambda d: {},
    "google.protobuf.Any": lambda d: {"type_url": d.get("type_url", ""), "value": d.get("value", b"")},
    "google.protobuf.DoubleValue": _wrapper(0.0),
    "google.protobuf.FloatValue": _wrapper(0.0),
    "google.protobuf.Int64Value": _wrapper(0),
    "google.protobuf.UInt64Value": _wrapper(0),
    "google.protobuf.Int32Value": _wrapper(0),
    "google.protobuf.UInt32Value": _wrapper(0),
    "google.protobuf.BoolValue": _wrapper(False),
    "google.protobuf.StringValue": _wrapper(""),
    "google.protobuf.BytesValue": _wrapper(b""),
}


def converter(full_name: str) -> Callable[[dict[str, Any]], Any]:
    """The conversion of one of protobuf_schema.WELL_KNOWN."""
    return _CONVERT[full_name]
