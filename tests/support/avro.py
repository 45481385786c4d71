"""Shared by the Avro decoder tests: hypothesis strategies for Avro schemas
and data, fastavro as the encoder and reference reader, and the compiled
and twin decoders side by side."""
from __future__ import annotations

import datetime
import decimal
import io
import json
import os
import uuid
from typing import Any

import pytest
from hypothesis import strategies as st

from fastkc._twin import avro as twin
from fastkc.schema_registry import avro_schema
from fastkc.schema_registry.avro_errors import AvroDecodeError

fastavro = pytest.importorskip("fastavro")

REQUIRE_C = os.environ.get("FASTKC_REQUIRE_C", "") == "1"


def compiled_decoder_class() -> Any:
    try:
        from fastkc._core._avro import Decoder
    except ImportError as exc:
        if REQUIRE_C:
            pytest.fail(f"FASTKC_REQUIRE_C=1 but the compiled Avro decoder is missing: {exc}", pytrace=False)
        pytest.skip(f"compiled core not built: {exc}")
    return Decoder


def encode(schema: Any, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, _force=True), value)
    return buf.getvalue()


def fastavro_read(writer: Any, payload: bytes, reader: Any = None) -> Any:
    w = fastavro.parse_schema(writer, _force=True)
    r = fastavro.parse_schema(reader, _force=True) if reader is not None else None
    return fastavro.schemaless_reader(io.BytesIO(payload), w, r)


class Pair:
    """The compiled decoder and the twin for one (writer, reader) pair."""

    def __init__(self, writer: Any, reader: Any = None, **bounds: Any) -> None:
        allow_trailing = bounds.pop("allow_trailing", False)
        w = avro_schema.parse_schema(json.dumps(writer))
        r = avro_schema.parse_schema(json.dumps(reader)) if reader is not None else None
        self.program = avro_schema.compile_program(w, r, **bounds)
        self.c = compiled_decoder_class()(self.program.code, self.program.consts, allow_trailing)
        self.twin = twin.Decoder(self.program.code, self.program.consts, allow_trailing)

    def both(self, payloads: list[bytes]) -> list[Any]:
        """The compiled decoder's values, after checking the twin's are the same."""
        got = self.c.decode_many(payloads)
        assert_same(got, self.twin.decode_many(payloads))
        return got

    def error(self, payloads: list[bytes]) -> tuple[int, int, str, str]:
        """The (index, offset, what, problem) both decoders fail with (the same)."""
        with pytest.raises(AvroDecodeError) as c_err:
            self.c.decode_many(payloads)
        with pytest.raises(AvroDecodeError) as t_err:
            self.twin.decode_many(payloads)
        assert c_err.value.key() == t_err.value.key()
        return c_err.value.key()

    def outcome(self, payloads: list[bytes]) -> Any:
        """Values or the error key, checked equal between the two decoders."""
        try:
            got = self.c.decode_many(payloads)
        except AvroDecodeError as e:
            with pytest.raises(AvroDecodeError) as t_err:
                self.twin.decode_many(payloads)
            assert t_err.value.key() == e.key(), (payloads, e.key(), t_err.value.key())
            return e.key()
        assert_same(got, self.twin.decode_many(payloads))
        return got


def assert_same(a: Any, b: Any, path: str = "$") -> None:
    """Equal values of the same types, recursively (1 == 1.0 is not enough)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, dict):
        assert list(a) == list(b) or set(a) == set(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, datetime.datetime):
        assert a == b and a.tzinfo == b.tzinfo, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, float) and a != a:
        assert b != b, f"{path}: nan != {b!r}"  # a corrupted payload's NaN (NaN != NaN)
    elif isinstance(a, decimal.Decimal):
        assert a.as_tuple() == b.as_tuple(), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


# --- hypothesis: schemas and values -----------------------------------------

TS_MILLIS = (-62_135_596_800_000, 253_402_300_799_999)
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def _logical(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from([
        "date", "time-millis", "time-micros", "timestamp-millis", "timestamp-micros", "timestamp-nanos",
        "local-timestamp-millis", "local-timestamp-micros", "uuid", "decimal-bytes", "decimal-fixed",
        "duration", "uuid-fixed",
    ]))
    if kind == "date":
        return {"type": "int", "logicalType": "date"}
    if kind == "time-millis":
        return {"type": "int", "logicalType": "time-millis"}
    if kind in ("decimal-bytes", "decimal-fixed"):
        precision = draw(st.integers(1, 20))
        schema: dict[str, Any] = {"type": "bytes", "logicalType": "decimal", "precision": precision,
                                  "scale": draw(st.integers(0, precision))}
        if kind == "decimal-fixed":
            schema.update(type="fixed", size=9 if precision <= 20 else 16)
        return schema
    if kind == "uuid":
        return {"type": "string", "logicalType": "uuid"}
    if kind == "uuid-fixed":
        return {"type": "fixed", "size": 16, "logicalType": "uuid"}
    if kind == "duration":
        return {"type": "fixed", "size": 12, "logicalType": "duration"}
    return {"type": "long", "logicalType": kind}


def _leaf() -> Any:
    return st.one_of(
        st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes", "string"]),
        _logical(),
        st.builds(lambda syms: {"type": "enum", "symbols": syms},
                  st.lists(st.from_regex(r"[A-Z][A-Z0-9_]{0,4}", fullmatch=True), min_size=1, max_size=5, unique=True)),
        st.builds(lambda n: {"type": "fixed", "size": n}, st.integers(0, 6)),
    )


def _extend(children: Any) -> Any:
    return st.one_of(
        st.builds(lambda t: {"type": "array", "items": t}, children),
        st.builds(lambda t: {"type": "map", "values": t}, children),
        st.builds(lambda t: ["null", t], children.filter(lambda t: not isinstance(t, list) and t != "null")),
        st.builds(lambda fields: {"type": "record", "fields": fields},
                  st.lists(st.tuples(_names, children), min_size=0, max_size=5, unique_by=lambda f: f[0])),
        st.lists(st.sampled_from(["int", "string", "boolean", "double", "bytes"]), min_size=2, max_size=4,
                 unique=True).map(lambda b: ["null"] + b),
        _general_union(children),
    )


_NAMED = ("enum", "fixed", "record")


def _branch_key(t: Any) -> Any:
    """What Avro allows once per union: a primitive (logical types count as
    their base type), array, map; named types are each their own."""
    if isinstance(t, str):
        return t
    return ("named", id(t)) if t["type"] in _NAMED else t["type"]


def _union_ok(branches: list[Any]) -> bool:
    """A union whose values fastavro writes and reads back into one branch
    (the tests tell the branch from the value): at most one logical type (a
    datetime is a date, a time fits time-millis and time-micros), and then
    no string or enum (fastavro's logical types take ISO and uuid strings
    first)."""
    logical = [b for b in branches if isinstance(b, dict) and "logicalType" in b]
    stringy = any(b == "string" or (isinstance(b, dict) and b["type"] == "enum") for b in branches)
    return len(logical) == 0 or (len(logical) == 1 and not stringy)


def _general_union(children: Any) -> Any:
    """A union of 2-4 types besides null (any kind, nested), null first, last or absent."""
    branch = children.filter(lambda t: not isinstance(t, list) and t != "null")
    unions = st.lists(branch, min_size=2, max_size=4, unique_by=_branch_key).filter(_union_ok)
    return st.tuples(unions, st.sampled_from(["first", "last", "none"])).map(
        lambda u: ["null"] + u[0] if u[1] == "first" else u[0] + ["null"] if u[1] == "last" else u[0])


def _name_types(schema: Any, counter: list[int]) -> Any:
    """Give named types unique names and records their field dicts."""
    if isinstance(schema, list):
        return [_name_types(b, counter) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out["type"] in ("enum", "fixed", "record"):
        counter[0] += 1
        out["name"] = f"T{counter[0]}"
    if out["type"] == "record":
        out["fields"] = [{"name": n, "type": _name_types(t, counter)} for n, t in schema["fields"]]
    elif out["type"] == "array":
        out["items"] = _name_types(schema["items"], counter)
    elif out["type"] == "map":
        out["values"] = _name_types(schema["values"], counter)
    return out


def schemas() -> Any:
    """Avro schemas: a record at the root (as registry data is), nested types below."""
    tree = st.recursive(_leaf(), _extend, max_leaves=12)
    root = st.lists(st.tuples(_names, tree), min_size=1, max_size=6, unique_by=lambda f: f[0]).map(
        lambda fields: {"type": "record", "fields": fields})
    return root.map(lambda s: {**_name_types(s, [0]), "name": "Root"})


def _decimal_value(draw: Any, precision: int, scale: int) -> decimal.Decimal:
    digits = draw(st.integers(-(10 ** precision - 1), 10 ** precision - 1))
    return decimal.Decimal(digits).scaleb(-scale)


def values(draw: Any, schema: Any) -> Any:
    """A value of `schema` that fastavro's writer accepts."""
    if isinstance(schema, list):
        return values(draw, draw(st.sampled_from(schema)))
    if isinstance(schema, str):
        schema = {"type": schema}
    t, logical = schema["type"], schema.get("logicalType")
    if logical == "decimal":
        return _decimal_value(draw, schema["precision"], schema.get("scale", 0))
    if logical == "uuid" and t == "string":
        return uuid.UUID(int=draw(st.integers(0, (1 << 128) - 1)))
    if logical == "date":
        return draw(st.integers(-719_162, 2_932_896))
    if logical == "time-millis":
        return draw(st.integers(0, 86_400_000 - 1))
    if logical == "time-micros":
        return draw(st.integers(0, 86_400_000_000 - 1))
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return draw(st.integers(*TS_MILLIS))
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return draw(st.integers(TS_MILLIS[0] * 1000, TS_MILLIS[1] * 1000))
    simple = {
        "null": st.none(), "boolean": st.booleans(), "int": st.integers(*INT32), "long": st.integers(*INT64),
        "float": st.floats(width=32, allow_nan=False), "double": st.floats(allow_nan=False),
        "bytes": st.binary(max_size=20), "string": st.text(max_size=20),
    }
    if t in simple:
        return draw(simple[t])
    if t == "fixed":
        return draw(st.binary(min_size=schema["size"], max_size=schema["size"]))
    if t == "enum":
        return draw(st.sampled_from(schema["symbols"]))
    if t == "array":
        return [values(draw, schema["items"]) for _ in range(draw(st.integers(0, 3)))]
    if t == "map":
        return {draw(st.text(max_size=5)): values(draw, schema["values"]) for _ in range(draw(st.integers(0, 3)))}
    return {f["name"]: values(draw, f["type"]) for f in schema["fields"]}
