"""Avro values as kcat prints them (`kcat -s value=avro -r URL`), for
`fastkc consume`: the Avro JSON encoding avro-c's avro_value_to_json writes
on one line, which is what kcat prints.

    text = avro_json(writer_schema_json, value)   # bytes, one line

What avro-c writes, and so what this writes:
- no logical-type conversion: a timestamp-millis prints as its long, a
  decimal as its bytes, a date as its int (avro-c has no logical types);
- a union's non-null branch wrapped in an object named after the branch:
  {"string": "x"}, {"long": 3}, {"Address": {...}} (a named type by its
  name without namespace, as avro_schema_type_name gives it), null as null;
- bytes and fixed as strings of the code points U+0000..U+00FF, one per
  byte;
- records with their fields in schema order, maps with their keys in the
  payload's order;
- jansson's text: ", " and ": " between items, every non-ASCII character
  escaped as \\uXXXX in capitals (a surrogate pair past the BMP), reals as
  "%.17g" (0.1 prints 0.10000000000000001, a float's 1.1 as the double it
  widens to, 1.1000000238418579), with ".0" when they would look like an
  integer and the exponent without "+" or leading zeros.

The payload is read by fastkc's compiled decoder (fastkc.schema_registry.avro)
with the writer schema's logical types taken off, so the values come back
raw. The decoder returns values, not the writer's union branch, so the
branch is found again from the value: the first branch, in the union's
order, the value fits. That is exact except in two cases a writer can make
ambiguous, where the first fitting branch is named: a union holding both
int and long (an int-sized value is tagged "int"), or both float and double
(tagged by whichever comes first).
"""
from __future__ import annotations

import math
from typing import Any

from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_schema import PRIMITIVES

_INT32 = (-(1 << 31), (1 << 31) - 1)


def without_logical_types(schema: Any) -> Any:
    """The schema's JSON with every logicalType taken off (the underlying
    type is then what the decoder returns, as avro-c reads it)."""
    if isinstance(schema, list):
        return [without_logical_types(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "logicalType":
            continue
        if key in ("type", "items", "values"):
            value = without_logical_types(value)
        elif key == "fields" and isinstance(value, list):
            value = [dict(f, type=without_logical_types(f.get("type"))) if isinstance(f, dict) else f
                     for f in value]
        out[key] = value
    return out


class _Names:
    """The named types of a schema by full name (Avro's namespace rules), to
    follow a reference and to name a union branch."""

    def __init__(self, schema: Any) -> None:
        self.types: dict[str, dict[str, Any]] = {}
        self._collect(schema, "")

    def _collect(self, node: Any, namespace: str) -> None:
        if isinstance(node, list):
            for branch in node:
                self._collect(branch, namespace)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            full = self.full_name(node["name"], node.get("namespace", namespace))
            inner = full.rsplit(".", 1)[0] if "." in full else ""
            self.types[full] = dict(node, _namespace=inner)
            for field in node.get("fields", ()) if kind in ("record", "error") else ():
                self._collect(field.get("type"), inner)
        elif kind in ("array", "map"):
            self._collect(node.get("items" if kind == "array" else "values"), namespace)
        elif isinstance(kind, (dict, list)):
            self._collect(kind, namespace)

    @staticmethod
    def full_name(name: str, namespace: str | None) -> str:
        return name if "." in name or not namespace else "{0}.{1}".format(namespace, name)

    def resolve(self, node: Any, namespace: str) -> tuple[Any, str]:
        """(the type's JSON, with a reference followed, the namespace
        inside it)."""
        if isinstance(node, str) and node not in PRIMITIVES:
            found = self.types.get(self.full_name(node, namespace)) or self.types.get(node)
            if found is None:
                raise ValueError("unknown Avro type name {0!r}".format(node))  # the decoder parsed it: never
            return found, found["_namespace"]
        if isinstance(node, dict) and node.get("type") in ("record", "error", "enum", "fixed"):
            full = self.full_name(node["name"], node.get("namespace", namespace))
            found = self.types[full]
            return found, found["_namespace"]
        if isinstance(node, dict) and isinstance(node.get("type"), (str, dict, list)) and \
                node.get("type") not in ("array", "map"):
            return self.resolve(node["type"], namespace)
        return node, namespace


def _kind(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    return str(node.get("type"))


def _fits(node: Any, value: Any) -> bool:
    kind = _kind(node)
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        return kind == "long" or _INT32[0] <= value <= _INT32[1]
    if kind in ("float", "double"):
        return isinstance(value, float)
    if kind == "bytes":
        return isinstance(value, bytes)
    if kind == "fixed":
        return isinstance(value, bytes) and len(value) == node["size"]
    if kind == "string":
        return isinstance(value, str)
    if kind == "enum":
        return isinstance(value, str) and value in node["symbols"]
    if kind == "array":
        return isinstance(value, list)
    if kind in ("record", "error"):
        return isinstance(value, dict) and set(value) == {f["name"] for f in node["fields"]}
    if kind == "map":
        return isinstance(value, dict)
    return False


# --- jansson's text ------------------------------------------------------------------------
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or 0x7F < code < 0x10000:  # DEL stays as it is, as in jansson
            out.append("\\u%04X" % code)
        elif code >= 0x10000:
            code -= 0x10000
            out.append("\\u%04X\\u%04X" % (0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF)))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_real(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        # jansson makes no JSON of them, so avro-c fails the value
        raise ValueError("{0!r} has no JSON form".format(value))
    text = "%.17g" % value
    if "e" in text:
        mantissa, exponent = text.split("e")
        return "{0}e{1}".format(mantissa, int(exponent))
    return text if "." in text else text + ".0"


def _latin1(data: bytes) -> str:
    return data.decode("latin-1")


class _Writer:
    def __init__(self, names: _Names) -> None:
        self.names = names

    def value(self, node: Any, namespace: str, value: Any) -> str:
        node, namespace = self.names.resolve(node, namespace)
        kind = _kind(node)
        if kind == "union":
            if value is None:
                return "null"
            for branch in node:
                resolved, inner = self.names.resolve(branch, namespace)
                if _fits(resolved, value):
                    name = resolved["name"].rsplit(".", 1)[-1] if _kind(resolved) in (
                        "record", "error", "enum", "fixed") else _kind(resolved)
                    return "{{{0}: {1}}}".format(_json_string(name), self.value(resolved, inner, value))
            raise ValueError("no branch of union {0!r} takes {1!r}".format(node, type(value).__name__))
        if kind == "null":
            return "null"
        if kind == "boolean":
            return "true" if value else "false"
        if kind in ("int", "long"):
            return str(int(value))
        if kind in ("float", "double"):
            return _json_real(float(value))
        if kind in ("bytes", "fixed"):
            return _json_string(_latin1(value))
        if kind in ("string", "enum"):
            return _json_string(value)
        if kind == "array":
            return "[" + ", ".join(self.value(node["items"], namespace, item) for item in value) + "]"
        if kind == "map":
            return "{" + ", ".join("{0}: {1}".format(_json_string(k), self.value(node["values"], namespace, v))
                                   for k, v in value.items()) + "}"
        if kind in ("record", "error"):
            return "{" + ", ".join("{0}: {1}".format(_json_string(f["name"]),
                                                     self.value(f["type"], namespace, value[f["name"]]))
                                   for f in node["fields"]) + "}"
        raise ValueError("unknown Avro type {0!r}".format(node))


class AvroJsonWriter:
    """One writer schema's payloads as avro-c's JSON text (module docstring)."""

    def __init__(self, writer_schema: Any) -> None:
        raw = without_logical_types(writer_schema)
        self._schema = raw
        self._decoder = AvroDecoder(raw)
        self._writer = _Writer(_Names(raw))

    def render_many(self, payloads: list[bytes]) -> list[bytes]:
        """The JSON text of each payload (AvroDecodeError for a bad one, as
        the decoder raises it; ValueError for a real with no JSON form)."""
        return [self._writer.value(self._schema, "", value).encode("ascii")
                for value in self._decoder.decode_many(payloads)]


def avro_json(writer_schema: Any, payload: bytes) -> bytes:
    """One payload's JSON text (module docstring)."""
    return AvroJsonWriter(writer_schema).render_many([payload])[0]


__all__ = ["AvroJsonWriter", "avro_json", "without_logical_types"]
