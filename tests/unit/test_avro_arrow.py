"""The Avro → Arrow path (AvroDecoder.decode_arrow, csrc/fkc_avro_arrow.c)
against fastavro and pyarrow: payloads written by fastavro's
schemaless_writer, decoded into one Arrow array in C, equal to
pyarrow.array(fastavro's values, type=T) where T is the mapping of
docs/guide/schema-registry-arrow.md written out again here (`arrow_type`),
for a realistic event schema, generated schemas and data, schema evolution,
bad payloads, hostile plans and memory."""
import ctypes
import ctypes.util
import datetime
import decimal
import os
import uuid

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fastkc.schema_registry import avro_arrow
from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_errors import AvroArrowUnsupportedError, AvroDecodeError, AvroSchemaError
from tests.support.avro import compiled_decoder_class, encode, fastavro_read, schemas, values
from tests.support.sanitizers import examples

pa = pytest.importorskip("pyarrow")

# under the sanitizers (make asan sets FASTKC_ASAN_LIB) the point is memory
# errors on every path, not the search: fewer examples there (the plain run,
# and the libFuzzer Avro target through the same sink, search wider)
SETTINGS = settings(max_examples=examples(80, 20), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.fixture(autouse=True)
def _compiled_core():
    compiled_decoder_class()  # skips (or fails under FASTKC_REQUIRE_C) without the compiled core


# --- the mapping, written out independently of fastkc ------------------------

_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def _dense(schema):
    return isinstance(schema, list) and len([b for b in schema if b != "null"]) > 1


def _branch_names(union):
    """A dense union's child names: the branches' Avro type names, unique."""
    names = []
    for b in union:
        if isinstance(b, str):
            base = b
        elif "name" in b and b["type"] in ("record", "enum", "fixed"):
            base = b["name"] if "." in b["name"] or "namespace" not in b else f"{b['namespace']}.{b['name']}"
        else:
            base = b["type"]
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


def arrow_type(schema):
    """(the Arrow type, nullable) of an Avro schema."""
    if _dense(schema):
        fields = [pa.field(name, *arrow_type(b)) for name, b in zip(_branch_names(schema), schema)]
        return pa.dense_union(fields, type_codes=list(range(len(schema)))), False
    if isinstance(schema, list):
        others = [b for b in schema if b != "null"]
        return (arrow_type(others[0])[0] if others else pa.null()), len(others) < len(schema)
    if isinstance(schema, str):
        schema = {"type": schema}
    t, logical = schema["type"], schema.get("logicalType")
    if isinstance(t, (dict, list)):
        return arrow_type(t)
    if logical == "decimal" and t in ("bytes", "fixed"):
        p, s = schema["precision"], schema.get("scale", 0)
        return (pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)), False
    if t == "null":
        return pa.null(), True
    if t == "int":
        return {"date": pa.date32(), "time-millis": pa.time32("ms")}.get(logical, pa.int32()), False
    if t == "long":
        if logical == "time-micros":
            return pa.time64("us"), False
        if logical and "timestamp" in logical:
            unit = _UNITS[logical.rsplit("-", 1)[1]]
            return pa.timestamp(unit, tz=None if logical.startswith("local-") else "UTC"), False
        return pa.int64(), False
    simple = {"boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(),
              "string": pa.string(), "enum": pa.dictionary(pa.int32(), pa.string())}
    if t in simple:
        return simple[t], False
    if t == "fixed":
        return pa.binary(schema["size"]), False
    if t == "array":
        return pa.list_(pa.field("item", *arrow_type(schema["items"]))), False
    if t == "map":
        return pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", *arrow_type(schema["values"]))),\
            False
    assert t == "record", schema
    return pa.struct([pa.field(f["name"], *arrow_type(f["type"])) for f in schema["fields"]]), False


def arrow_value(value, t):
    """fastavro's value as pyarrow.array takes it for type `t`."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: arrow_value(value[f.name], f.type) for f in t}
    if pa.types.is_map(t):
        return [(k, arrow_value(v, t.item_type)) for k, v in value.items()]
    if pa.types.is_list(t):
        return [arrow_value(v, t.value_type) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _has_union(t):
    if pa.types.is_union(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_union(f.type) for f in t)
    if pa.types.is_list(t):
        return _has_union(t.value_type)
    if pa.types.is_map(t):
        return _has_union(t.item_type)
    return False


def _unwrap(schema):
    """A schema with {"type": <a type>} wrappers and [null, T] taken off (T)."""
    while isinstance(schema, dict) and isinstance(schema["type"], (dict, list)):
        schema = schema["type"]
    if isinstance(schema, list) and not _dense(schema):
        others = [b for b in schema if b != "null"]
        return _unwrap(others[0]) if others else "null"
    return schema


def _branch_of(value, union):
    """The branch fastavro's writer takes for `value` (its own rules: the
    first it validates against, but double before float and the record with
    the most fields in common): the index it writes first, a zigzag varint
    (fastavro reads a value back as the type it was written with, which
    takes the same branch again; tests/support/avro.py generates only unions
    where it does). A None without a null branch is the placeholder under a
    null parent: branch 0."""
    if value is None and "null" not in union:
        return 0
    first = encode(union, value)[0]
    assert first < 0x80, "more than 63 branches"
    return first >> 1


def _offsets(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return pa.array(out, pa.int32())


def build_array(values, schema):
    """fastavro's values as the array of `schema`'s Arrow type, built child
    by child where a dense union is inside (pyarrow.array makes no unions).
    None under a parent that is null stands for a value nobody reads."""
    t = arrow_type(schema)[0]
    if not _has_union(t):
        return pa.array([arrow_value(v, t) for v in values], type=t)
    schema = _unwrap(schema)
    mask = pa.array([v is None for v in values]) if any(v is None for v in values) else None
    if isinstance(schema, list):
        codes = [_branch_of(v, schema) for v in values]
        seen = [0] * len(schema)
        offsets = []
        for c in codes:
            offsets.append(seen[c])
            seen[c] += 1
        children = [build_array([v for v, c in zip(values, codes) if c == i], b) for i, b in enumerate(schema)]
        return pa.Array.from_buffers(t, len(values), [None, pa.array(codes, pa.int8()).buffers()[1],
                                                      pa.array(offsets, pa.int32()).buffers()[1]],
                                     children=children)
    if schema["type"] == "record":
        children = [build_array([None if v is None else v[f["name"]] for v in values], f["type"])
                    for f in schema["fields"]]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    rows = [[] if v is None else v for v in values]
    if schema["type"] == "array":
        items = build_array([x for r in rows for x in r], schema["items"])
        return pa.ListArray.from_arrays(_offsets(len(r) for r in rows), items, type=t, mask=mask)
    assert schema["type"] == "map", schema
    rows = [{} if v is None else v for v in values]
    keys = pa.array([k for r in rows for k in r], pa.string())
    items = build_array([x for r in rows for x in r.values()], schema["values"])
    return pa.MapArray.from_arrays(_offsets(len(r) for r in rows), keys, items, type=t, mask=mask)


def expected_array(schema, payloads, reader=None):
    return build_array([fastavro_read(schema, p, reader) for p in payloads], reader if reader is not None else schema)


def tagged(arr):
    """arr.to_pylist(), with each dense union value as (type code, value):
    to_pylist alone does not say which branch a value is in."""
    t = arr.type
    if not _has_union(t):
        return arr.to_pylist()
    valid = arr.is_valid().to_pylist()
    if pa.types.is_union(t):
        kids = [tagged(arr.field(i)) for i in range(t.num_fields)]
        return [(c, kids[c][o]) for c, o in zip(arr.type_codes.to_pylist(), arr.offsets.to_pylist())]
    if pa.types.is_struct(t):
        cols = [tagged(arr.field(i)) for i in range(t.num_fields)]
        return [{f.name: col[j] for f, col in zip(t, cols)} if valid[j] else None for j in range(len(arr))]
    offsets = arr.offsets.to_pylist()
    if pa.types.is_list(t):
        items = tagged(arr.values)
        return [items[offsets[j]:offsets[j + 1]] if valid[j] else None for j in range(len(arr))]
    keys, items = arr.keys.to_pylist(), tagged(arr.items)
    return [list(zip(keys[offsets[j]:offsets[j + 1]], items[offsets[j]:offsets[j + 1]])) if valid[j] else None
            for j in range(len(arr))]


def assert_arrow_equals(got, expected):
    got.validate(full=True)
    assert got.type == expected.type, f"{got.type} != {expected.type}"
    assert len(got) == len(expected)
    assert got.to_pylist() == expected.to_pylist()
    assert tagged(got) == tagged(expected)  # the same branch for every union value


# --- a realistic event schema ------------------------------------------------

EVENT = {
    "type": "record", "name": "Event", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "session", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "user", "type": {"type": "record", "name": "User", "fields": [
            {"name": "uid", "type": "long"},
            {"name": "email", "type": ["null", "string"]},
            {"name": "since", "type": {"type": "int", "logicalType": "date"}},
        ]}},
        {"name": "referrer", "type": ["null", "string"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CLICK", "VIEW", "BUY"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "score", "type": "double"},
        {"name": "ratio", "type": "float"},
        {"name": "ok", "type": "boolean"},
        {"name": "payload", "type": "bytes"},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
    ],
}

EVENT_TYPE = pa.struct([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("session", pa.string(), nullable=False),
    pa.field("user", pa.struct([
        pa.field("uid", pa.int64(), nullable=False),
        pa.field("email", pa.string()),
        pa.field("since", pa.date32(), nullable=False),
    ]), nullable=False),
    pa.field("referrer", pa.string()),
    pa.field("tags", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
    pa.field("attrs", pa.map_(pa.field("key", pa.string(), nullable=False),
                              pa.field("value", pa.int64(), nullable=False)), nullable=False),
    pa.field("kind", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False),
    pa.field("day", pa.date32(), nullable=False),
    pa.field("price", pa.decimal128(12, 3), nullable=False),
    pa.field("score", pa.float64(), nullable=False),
    pa.field("ratio", pa.float32(), nullable=False),
    pa.field("ok", pa.bool_(), nullable=False),
    pa.field("payload", pa.binary(), nullable=False),
    pa.field("hash", pa.binary(4), nullable=False),
])


def _event(i):
    return {
        "id": i * 1_000_003 - 5, "name": f"événement-{i}", "session": uuid.UUID(int=i * 7919),
        "user": {"uid": -i, "email": None if i % 3 else f"u{i}@example.com",
                 "since": datetime.date(2020, 1, 1 + i % 28)},
        "referrer": None if i % 2 else "https://example.com/" + "x" * i,
        "tags": ["a", "bb", "ccc"][: i % 4], "attrs": {f"k{j}": j * i for j in range(i % 3)},
        "kind": ["CLICK", "VIEW", "BUY"][i % 3],
        "at": datetime.datetime(2024, 5, 1, 12, 0, i % 60, 1000 * i % 1_000_000, tzinfo=datetime.UTC),
        "day": datetime.date(1969, 12, 31) + datetime.timedelta(days=i),
        "price": decimal.Decimal(f"{-1234.567 + i:.3f}"), "score": 0.1 * i, "ratio": i / 4,
        "ok": bool(i % 2), "payload": bytes(range(i % 7)), "hash": i.to_bytes(4, "big"),
    }


def test_the_mapping_oracle_agrees_with_the_hand_written_event_type():
    assert arrow_type(EVENT)[0] == EVENT_TYPE


def test_a_realistic_event_schema_equals_fastavro_through_pyarrow():
    payloads = [encode(EVENT, _event(i)) for i in range(200)]
    got = AvroDecoder(EVENT).decode_arrow(payloads)
    assert isinstance(got, pa.StructArray)
    assert_arrow_equals(got, expected_array(EVENT, payloads))
    assert got.type == EVENT_TYPE
    assert got.field("kind").dictionary.to_pylist() == ["CLICK", "VIEW", "BUY"]  # the reader's symbols
    assert got.field("user").field("email").null_count == 133
    assert pa.RecordBatch.from_struct_array(got).num_columns == 16


def test_memoryviews_bytearrays_an_empty_list_and_repeated_calls():
    payloads = [encode(EVENT, _event(i)) for i in range(5)]
    decoder = AvroDecoder(EVENT)
    views = [memoryview(b"xx" + p)[2:] for p in payloads] + [bytearray(payloads[0])]
    assert_arrow_equals(decoder.decode_arrow(views), expected_array(EVENT, payloads + payloads[:1]))
    empty = decoder.decode_arrow([])
    empty.validate(full=True)
    assert len(empty) == 0 and empty.type == EVENT_TYPE
    assert_arrow_equals(decoder.decode_arrow(payloads[:2]), expected_array(EVENT, payloads[:2]))


@SETTINGS
@given(st.data())
def test_generated_schemas_and_data_equal_fastavro_through_pyarrow(data):
    schema = data.draw(schemas())
    records = [values(data.draw, schema) for _ in range(data.draw(st.integers(0, 4)))]
    payloads = [encode(schema, r) for r in records]
    decoder = AvroDecoder(schema)
    assert_arrow_equals(decoder.decode_arrow(payloads), expected_array(schema, payloads))


def test_logical_types_keep_their_full_range():
    schema = {"type": "record", "name": "L", "fields": [
        {"name": name, "type": {"type": base, "logicalType": name}} for name, base in [
            ("date", "int"), ("time-millis", "int"), ("time-micros", "long"), ("timestamp-millis", "long"),
            ("timestamp-micros", "long"), ("timestamp-nanos", "long"), ("local-timestamp-millis", "long"),
            ("local-timestamp-micros", "long"), ("local-timestamp-nanos", "long")]
    ]}
    raw = {"type": "record", "name": "L", "fields": [{"name": f["name"], "type": f["type"]["type"]}
                                                      for f in schema["fields"]]}
    # dates and timestamps past what Python's datetime holds: the object path
    # refuses them, Arrow keeps the numbers (times stay inside a day)
    times = ("time-millis", "time-micros")
    rows = [{f["name"]: (v % 86_400_000 if f["name"] in times else v) for f in raw["fields"]}
            for v in (0, -1, 1, (1 << 31) - 1, -(1 << 31))]
    got = AvroDecoder(schema).decode_arrow([encode(raw, r) for r in rows])
    got.validate(full=True)
    assert got.type == arrow_type(schema)[0]
    for f in raw["fields"]:
        numbers = got.field(f["name"]).view(pa.int32() if f["type"] == "int" else pa.int64())
        assert numbers.to_pylist() == [r[f["name"]] for r in rows]


def test_decimals_128_and_256_bytes_and_fixed():
    schema = {"type": "record", "name": "D", "fields": [
        {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 9, "logicalType": "decimal", "precision": 20,
                               "scale": 2}},
        {"name": "w", "type": {"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 10}},
        {"name": "n", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 0}]},
    ]}
    rows = [
        {"b": decimal.Decimal("9" * 34 + ".9999"), "f": decimal.Decimal("-" + "9" * 18 + ".99"),
         "w": decimal.Decimal("-" + "9" * 50 + "." + "9" * 10), "n": decimal.Decimal(-99999)},
        {"b": decimal.Decimal("-0.0001"), "f": decimal.Decimal("0.00"), "w": decimal.Decimal("1E-10"), "n": None},
    ]
    payloads = [encode(schema, r) for r in rows]
    got = AvroDecoder(schema).decode_arrow(payloads)
    assert got.type.field("w").type == pa.decimal256(60, 10)
    assert_arrow_equals(got, expected_array(schema, payloads))


def test_a_decimal_past_its_precision_is_a_typed_error_at_its_offset():
    schema = {"type": "record", "name": "D", "fields": [
        {"name": "x", "type": "long"},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}}]}
    plain = {"type": "record", "name": "D", "fields": [{"name": "x", "type": "long"}, {"name": "d", "type": "bytes"}]}
    ok = encode(plain, {"x": 1, "d": (999).to_bytes(2, "big", signed=True)})
    bad = encode(plain, {"x": 1, "d": (1000).to_bytes(2, "big", signed=True)})
    too_wide = encode(plain, {"x": 1, "d": b"\x01" + bytes(16)})
    decoder = AvroDecoder(schema)
    assert decoder.decode_arrow([ok]).field("d").to_pylist() == [decimal.Decimal(999)]
    for payload in (bad, too_wide):
        with pytest.raises(AvroDecodeError) as e:
            decoder.decode_arrow([ok, payload])
        assert e.value.key() == (1, 1, "decimal", "value out of range")


def test_a_payload_both_unreadable_and_out_of_range_is_its_read_error():
    # The columns are written as the payload is read, so the decimal is
    # refused before the read reaches the cut; the object path reads a
    # payload whole first and reports the cut. The Arrow path must too.
    schema = {"type": "record", "name": "D", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}},
        {"name": "s", "type": "string"}]}
    plain = {"type": "record", "name": "D", "fields": [{"name": "d", "type": "bytes"}, {"name": "s", "type": "string"}]}
    ok = encode(plain, {"d": (7).to_bytes(1, "big", signed=True), "s": "fine"})
    out_of_range = encode(plain, {"d": (1000).to_bytes(2, "big", signed=True), "s": "longer text"})
    decoder = AvroDecoder(schema)
    for bad, key in ((out_of_range[:-3], (1, 4, "string", "truncated")),
                     (out_of_range + b"\x00", (1, len(out_of_range), "datum", "trailing bytes"))):
        with pytest.raises(AvroDecodeError) as object_err:
            decoder.decode_many([ok, bad])
        with pytest.raises(AvroDecodeError) as arrow_err:
            decoder.decode_arrow([ok, bad])
        assert arrow_err.value.key() == object_err.value.key() == key
    with pytest.raises(AvroDecodeError) as arrow_err:
        decoder.decode_arrow([ok, out_of_range])
    assert arrow_err.value.key() == (1, 0, "decimal", "value out of range")


@pytest.mark.parametrize("logical, base, bad", [("time-millis", "int", 86_400_000), ("time-millis", "int", -1),
                                               ("time-micros", "long", 86_400_000_000)])
def test_a_time_outside_a_day_is_the_object_paths_error(logical, base, bad):
    schema = {"type": "record", "name": "T", "fields": [
        {"name": "x", "type": "boolean"}, {"name": "t", "type": {"type": base, "logicalType": logical}}]}
    raw = {"type": "record", "name": "T", "fields": [{"name": "x", "type": "boolean"}, {"name": "t", "type": base}]}
    payloads = [encode(raw, {"x": True, "t": 0}), encode(raw, {"x": False, "t": bad})]
    decoder = AvroDecoder(schema)
    with pytest.raises(AvroDecodeError) as arrow_err:
        decoder.decode_arrow(payloads)
    assert arrow_err.value.key() == (1, 1, logical, "value out of range")
    if bad >= 0:  # fastavro's arithmetic reads a negative time in the first hour
        with pytest.raises(AvroDecodeError) as object_err:
            decoder.decode_many(payloads)
        assert object_err.value.key() == arrow_err.value.key()


def test_values_that_take_no_bytes_fixed_of_size_0_null_and_empty_records():
    schema = {"type": "record", "name": "Z", "fields": [
        {"name": "f", "type": {"type": "fixed", "name": "F0", "size": 0}},
        {"name": "n", "type": "null"},
        {"name": "e", "type": {"type": "record", "name": "E", "fields": []}},
        {"name": "o", "type": ["null", {"type": "record", "name": "O", "fields": [
            {"name": "g", "type": {"type": "fixed", "name": "F1", "size": 0}},
            {"name": "l", "type": {"type": "array", "items": "null"}}]}]},
    ]}
    rows = [{"f": b"", "n": None, "e": {}, "o": None},
            {"f": b"", "n": None, "e": {}, "o": {"g": b"", "l": [None] * 3}}]
    payloads = [encode(schema, r) for r in rows]
    got = AvroDecoder(schema).decode_arrow(payloads)
    assert got.type.field("f").type == pa.binary(0)
    assert_arrow_equals(got, expected_array(schema, payloads))


# --- schema evolution -------------------------------------------------------

WRITER_V1 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "dropped", "type": {"type": "map", "values": "string"}},
    {"name": "qty", "type": {"type": "array", "items": "int"}},
    {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
    {"name": "note", "type": "string"},
    {"name": "price", "type": "float"},
]}

READER_V2 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"},
    {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["SHIPPED", "PAID", "NEW"]}},
    {"name": "qty", "type": {"type": "array", "items": "double"}},
    {"name": "name", "type": "bytes"},
    {"name": "note", "type": ["null", "string"]},
    {"name": "price", "type": "double"},
    {"name": "added_int", "type": "int", "default": 7},
    {"name": "added_str", "type": "string", "default": "x"},
    {"name": "added_opt", "type": ["null", "long"], "default": None},
    {"name": "added_list", "type": {"type": "array", "items": "long"}, "default": [1, 2]},
    {"name": "added_map", "type": {"type": "map", "values": ["null", "string"]}, "default": {"k": "v", "n": None}},
    {"name": "added_rec", "type": {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "bee"}]}, "default": {"a": 3}},
    {"name": "added_enum", "type": {"type": "enum", "name": "E2", "symbols": ["P", "Q"]}, "default": "Q"},
    {"name": "added_fixed", "type": {"type": "fixed", "name": "F2", "size": 2}, "default": "\u00ff\u0001"},
    {"name": "added_dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
     "default": "\u0001"},
    {"name": "added_bool", "type": "boolean", "default": True},
    {"name": "added_float", "type": "float", "default": 1.5},
    {"name": "added_null", "type": "null", "default": None},
]}


def test_schema_evolution_gives_the_readers_types_and_defaults():
    rows = [{"id": i, "name": f"n{i}", "dropped": {"a": "b"}, "qty": list(range(i)), "state": ["NEW", "PAID"][i % 2],
             "note": f"note {i}", "price": i + 0.25} for i in range(4)]
    payloads = [encode(WRITER_V1, r) for r in rows]
    got = AvroDecoder(WRITER_V1, READER_V2).decode_arrow(payloads)
    got.validate(full=True)
    assert got.type == arrow_type(READER_V2)[0]
    assert got.type.field("id").type == pa.int64() and got.type.field("qty").type.value_type == pa.float64()
    assert "dropped" not in [f.name for f in got.type]
    assert got.field("state").dictionary.to_pylist() == ["SHIPPED", "PAID", "NEW"]
    # the fields both schemas have: as fastavro resolves them
    fields = ["id", "state", "qty", "name", "note", "price"]
    resolved = [fastavro_read(WRITER_V1, p, READER_V2) for p in payloads]
    for name in fields:
        assert got.field(name).to_pylist() == [r[name] for r in resolved], name
    # the defaults, on every row
    expected_defaults = {
        "added_int": 7, "added_str": "x", "added_opt": None, "added_list": [1, 2],
        "added_map": [("k", "v"), ("n", None)], "added_rec": {"a": 3, "b": "bee"}, "added_enum": "Q",
        "added_fixed": b"\xff\x01", "added_dec": decimal.Decimal("0.01"), "added_bool": True, "added_float": 1.5,
        "added_null": None,
    }
    for name, value in expected_defaults.items():
        assert got.field(name).to_pylist() == [value] * 4, name


def test_a_writer_union_read_as_its_one_type_and_a_type_read_as_a_nullable_union():
    writer = {"type": "record", "name": "U", "fields": [
        {"name": "a", "type": ["null", "int"]}, {"name": "b", "type": "int"}, {"name": "c", "type": ["int", "null"]}]}
    reader = {"type": "record", "name": "U", "fields": [
        {"name": "a", "type": ["null", "long"]}, {"name": "b", "type": ["null", "long"]},
        {"name": "c", "type": "long"}]}
    payloads = [encode(writer, {"a": None, "b": 1, "c": 2}), encode(writer, {"a": 5, "b": -1, "c": 3})]
    got = AvroDecoder(writer, reader).decode_arrow(payloads)
    assert_arrow_equals(got, expected_array(writer, payloads, reader))
    # the reader refuses the null the writer may write: the same error as the object path
    bad = encode(writer, {"a": None, "b": 1, "c": None})
    decoder = AvroDecoder(writer, reader)
    with pytest.raises(AvroDecodeError) as arrow_err:
        decoder.decode_arrow([payloads[0], bad])
    with pytest.raises(AvroDecodeError) as object_err:
        decoder.decode_many([payloads[0], bad])
    assert arrow_err.value.key() == object_err.value.key()


# --- dense unions ------------------------------------------------------------

INNER = {"type": "record", "name": "Inner", "namespace": "com.example", "fields": [
    {"name": "a", "type": ["string", {"type": "array", "items": "int"}]}]}
UNIONS = {"type": "record", "name": "Unions", "fields": [
    {"name": "first", "type": ["null", "int", "string"]},
    {"name": "last", "type": ["long", "string", "null"]},
    {"name": "none", "type": ["boolean", "double"]},
    {"name": "kinds", "type": [
        # (the fixed before the array: fastavro's writer takes bytes for an array of longs)
        INNER, {"type": "fixed", "name": "Two", "size": 2}, {"type": "array", "items": ["null", "long", "string"]},
        {"type": "map", "values": ["int", "boolean"]}, {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]},
        {"type": "long", "logicalType": "timestamp-millis"},
        {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}]},
    {"name": "opt", "type": ["null", {"type": "record", "name": "Opt", "fields": [
        {"name": "u", "type": ["int", "string"]}, {"name": "m", "type": {"type": "map", "values": ["null", "int",
                                                                                                  "string"]}}]}]},
    {"name": "deep", "type": {"type": "map", "values": [
        "string", {"type": "array", "items": ["long", "double", {"type": "fixed", "name": "One", "size": 1}]}]}},
]}


def _unions_row(i):
    kinds = [{"a": "x" * i}, b"ab", [None, i, "s"][: i % 4], {"k": i % 2 == 0, "n": i}, ["RED", "GREEN"][i % 2],
             {"a": list(range(i))}, datetime.datetime(2024, 1, 1, 0, 0, i, tzinfo=datetime.UTC),
             decimal.Decimal(f"{i}.25")]
    return {"first": [None, i, f"s{i}"][i % 3], "last": [i, f"t{i}", None][i % 3], "none": [i % 2 == 1, i / 2][i % 2],
            "kinds": kinds[i % len(kinds)],
            "opt": None if i % 4 == 0 else {"u": [i, str(i)][i % 2], "m": {"a": None, "b": i, "c": "c"}},
            "deep": {"s": "v", "l": [i, 0.5, b"z"][: i % 4]}}


def test_unions_of_every_kind_nested_everywhere_equal_fastavro_branch_by_branch():
    payloads = [encode(UNIONS, _unions_row(i)) for i in range(40)]
    got = AvroDecoder(UNIONS).decode_arrow(payloads)
    expected = expected_array(UNIONS, payloads)
    assert_arrow_equals(got, expected)
    kinds = got.type.field("kinds").type
    assert [f.name for f in kinds] == ["com.example.Inner", "Two", "array", "map", "Color", "long", "bytes"]
    assert kinds.type_codes == list(range(7)) and kinds.mode == "dense"
    first = got.type.field("first")
    assert not first.nullable and first.type.field(0).type == pa.null() and first.type.field(0).nullable
    assert not first.type.field(1).nullable  # a branch's values are never null: the null branch holds nulls
    assert got.field("last").type_codes.to_pylist()[:3] == [0, 1, 2]
    assert got.field("kinds").type_codes.to_pylist()[:8] == [0, 1, 2, 3, 4, 0, 5, 6]
    # the union under a null record: a row of its first child, never read
    assert got.field("opt").null_count == 10 and len(got.field("opt").field("u")) == 40
    pa.RecordBatch.from_struct_array(got).validate(full=True)


@pytest.mark.parametrize("schema, rows", [
    (["int", "string"], [1, "a", -5, ""]),
    (["null", "int", INNER], [None, 3, {"a": "x"}, {"a": [1, 2]}, None]),
    ({"type": "array", "items": ["float", {"type": "map", "values": ["null", "string", "long"]}]},
     [[1.5, {"a": None, "b": "c", "d": 4}], [], [{}]]),
])
def test_a_union_at_the_top_or_under_a_list_or_map_is_the_value_itself(schema, rows):
    payloads = [encode(schema, r) for r in rows]
    got = AvroDecoder(schema).decode_arrow(payloads)
    assert_arrow_equals(got, expected_array(schema, payloads))
    assert len(AvroDecoder(schema).decode_arrow([])) == 0


EVOLVE_WRITER = {"type": "record", "name": "Ev", "fields": [
    {"name": "u", "type": ["int", "string"]}, {"name": "v", "type": "int"}, {"name": "w", "type": ["null", "int"]}]}
EVOLVE_READER = {"type": "record", "name": "Ev", "fields": [
    {"name": "u", "type": ["string", "long", "int"]}, {"name": "v", "type": ["string", "long"]},
    {"name": "w", "type": ["null", "int", "string"]},
    {"name": "added", "type": ["int", "string"], "default": 5},
    {"name": "added_null", "type": ["null", "string", "int"], "default": None},
    {"name": "added_rec", "type": [INNER, "null"], "default": {"a": [7]}},
]}


def test_schema_evolution_resolves_each_writer_branch_to_its_reader_branch():
    rows = [{"u": 1, "v": 2, "w": None}, {"u": "z", "v": -3, "w": 4}]
    payloads = [encode(EVOLVE_WRITER, r) for r in rows]
    got = AvroDecoder(EVOLVE_WRITER, EVOLVE_READER).decode_arrow(payloads)
    got.validate(full=True)
    assert got.type == arrow_type(EVOLVE_READER)[0]
    # the values are fastavro's ...
    assert got.to_pylist() == [fastavro_read(EVOLVE_WRITER, p, EVOLVE_READER) for p in payloads]
    # ... in the reader branch the program resolved each writer branch to: an
    # int to the reader's int (an exact match before a promotion, Avro Java's
    # rule; fastavro and the spec take the first match, long), a string to
    # string; a writer type that is not a union to its best branch (int: long)
    assert tagged(got) == [
        {"u": (2, 1), "v": (1, 2), "w": (0, None), "added": (0, 5), "added_null": (0, None),
         "added_rec": {"a": (1, [7])}},
        {"u": (0, "z"), "v": (1, -3), "w": (1, 4), "added": (0, 5), "added_null": (0, None),
         "added_rec": {"a": (1, [7])}},
    ]


def test_a_union_default_takes_the_first_branch_it_fits():
    reader = {"type": "record", "name": "Ev", "fields": EVOLVE_WRITER["fields"] + [
        {"name": "later", "type": ["int", "string"], "default": "text"}]}
    payload = encode(EVOLVE_WRITER, {"u": 1, "v": 2, "w": None})
    assert tagged(AvroDecoder(EVOLVE_WRITER, reader).decode_arrow([payload]).field("later")) == [(1, "text")]
    bad = {**reader, "fields": EVOLVE_WRITER["fields"] + [{"name": "y", "type": ["int", "boolean"], "default": []}]}
    with pytest.raises(AvroSchemaError, match="default of field 'y'"):
        AvroDecoder(EVOLVE_WRITER, bad).decode_arrow([payload])


@pytest.mark.parametrize("writer, reader, bad", [
    (UNIONS, None, b"\x08"),  # union branch 4 of 3, first thing read
    (["int", "boolean"], ["string", "long"], b"\x02\x01"),  # the writer's boolean: no reader branch
    (["int", "string"], None, b"\x03"),  # branch -2
])
def test_a_bad_union_branch_is_the_object_paths_error(writer, reader, bad):
    good = encode(writer, _unions_row(1) if writer is UNIONS else 7)
    decoder = AvroDecoder(writer, reader)
    with pytest.raises(AvroDecodeError) as arrow_err:
        decoder.decode_arrow([good, good, bad])
    with pytest.raises(AvroDecodeError) as object_err:
        decoder.decode_many([good, good, bad])
    assert type(arrow_err.value) is AvroDecodeError
    assert arrow_err.value.key() == object_err.value.key()
    assert arrow_err.value.key()[:1] == (2,) and arrow_err.value.what == "union branch"
    assert len(decoder.decode_arrow([good])) == 1  # the decoder goes on


# --- what has no Arrow mapping -----------------------------------------------

@pytest.mark.parametrize("schema", [
    ["null"] + [{"type": "fixed", "name": f"F{i}", "size": 1} for i in range(127)],  # 128 children: past int8 ids
    {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]},
    {"type": "bytes", "logicalType": "decimal", "precision": 77, "scale": 0},
])
def test_a_type_without_mapping_is_refused_before_any_payload_is_read(schema):
    decoder = AvroDecoder(schema)
    with pytest.raises(AvroArrowUnsupportedError):
        decoder.decode_arrow([b"\xff\xff\xff"])  # never read: the refusal comes first
    assert issubclass(AvroArrowUnsupportedError, AvroSchemaError)


def test_a_default_that_does_not_fit_its_type_is_a_schema_error():
    writer = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "x", "type": "int"}, {"name": "y", "type": "int", "default": "seven"}]}
    with pytest.raises(AvroSchemaError, match="default of field 'y'"):
        AvroDecoder(writer, reader).decode_arrow([b"\x02"])


# --- bad payloads: the object path's errors, nothing leaked -----------------

# no logical types: the object path refuses some values the columns hold (a date past year 9999)
PLAIN = {"type": "record", "name": "P", "fields": [
    {"name": "user", "type": {"type": "record", "name": "PUser", "fields": [
        {"name": "uid", "type": "long"}, {"name": "email", "type": ["null", "string"]}]}},
] + [f for f in EVENT["fields"] if f["name"] in (
    "id", "name", "referrer", "tags", "attrs", "kind", "score", "ratio", "ok", "payload", "hash")]}


def test_a_corrupt_payload_in_the_middle_raises_what_the_object_path_raises():
    payloads = [encode(PLAIN, _event(i)) for i in range(10)]
    decoder = AvroDecoder(PLAIN)
    cases = [p[:cut] for p in payloads[4:6] for cut in range(len(p))]
    cases += [p[:i] + bytes([p[i] ^ flip]) + p[i + 1:] for p in payloads[4:6] for i in range(len(p))
              for flip in (0x01, 0x80, 0xFF)]
    raised = 0
    for bad in cases:
        batch = payloads[:3] + [bad] + payloads[7:]
        try:
            objects = decoder.decode_many(batch)
        except AvroDecodeError as e:
            with pytest.raises(AvroDecodeError) as arrow_err:
                decoder.decode_arrow(batch)
            assert type(arrow_err.value) is AvroDecodeError
            assert arrow_err.value.key() == e.key()
            raised += 1
            continue
        got = decoder.decode_arrow(batch)  # a corruption that still decodes: the same values
        got.validate(full=True)
        # (a map that names a key twice: Arrow keeps both entries, a dict the last)
        assert [dict(row, attrs=dict(row["attrs"])) for row in got.to_pylist()] == objects
    assert raised > len(cases) // 4


def _malloc_in_use():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallinfo2") or os.environ.get("FASTKC_ASAN_LIB"):
        pytest.skip("needs glibc's mallinfo2 and the system allocator (not ASan's)")

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost")]

    libc.mallinfo2.restype = Mallinfo2

    def in_use():
        info = libc.mallinfo2()
        return info.uordblks + info.hblkhd

    return in_use


def test_failures_and_released_arrays_leave_no_memory_behind():
    in_use = _malloc_in_use()
    decimal3 = {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}
    schema = {"type": "record", "name": "S", "fields": [
        {"name": "u", "type": ["null", "long", {"type": "array", "items": "string"}, decimal3]},
        {"name": "s", "type": "string"}, {"name": "l", "type": {"type": "array", "items": "long"}},
        {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
        {"name": "d", "type": decimal3}]}
    row = {"u": 5, "s": "x" * 100_000, "l": list(range(1000)), "k": "B", "d": decimal.Decimal(7)}
    good = [encode(schema, row)] * 20                       # about 2 MB of columns per call
    truncated = good + [good[0][:-3]]                        # phase 1 fails after them
    wide = good + [encode(schema, dict(row, d=decimal.Decimal(1)))[:-2] + b"\x04\x27\x10"]  # 10000: the sink fails
    assert good[0][:2] == b"\x02\x0a"  # u: branch 1, 5
    bad_branch = good + [b"\x0e" + good[0][1:]]             # u: branch 7 of 4, phase 1 fails
    wide_in_union = good + [b"\x06\x04\x27\x10" + good[0][2:]]  # u: the decimal branch, 10000: the sink fails
    decoder = AvroDecoder(schema)

    def run():
        for bad in (truncated, wide, bad_branch, wide_in_union):
            with pytest.raises(AvroDecodeError):
                decoder.decode_arrow(bad)
        arr = decoder.decode_arrow(good)
        batch = pa.RecordBatch.from_struct_array(arr)
        del arr, batch

    run()  # warm up: pyarrow's and Python's own first allocations
    before = in_use()
    for _ in range(30):
        run()
    # a leak of the columns would be about 30 * 3 * 2 MB
    assert in_use() - before < 4 << 20


# --- hostile plans ------------------------------------------------------------

def _plan_for(schema):
    decoder = AvroDecoder(schema)
    return decoder.program, avro_arrow.compile_plan(decoder.program)


def test_a_plan_is_set_once_and_checked_against_its_program():
    program, plan = _plan_for(EVENT)
    core = compiled_decoder_class()(program.code, program.consts)
    with pytest.raises(ValueError, match="no Arrow plan"):
        core.decode_arrow([])
    core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)
    with pytest.raises(ValueError, match="already"):
        core.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)
    other_program, other_plan = _plan_for(PLAIN)
    fresh = compiled_decoder_class()(program.code, program.consts)
    with pytest.raises(ValueError, match="not a well-formed"):
        fresh.set_arrow_plan(other_plan.columns, other_plan.steps, other_plan.strings, other_plan.root_step)
    fresh.set_arrow_plan(plan.columns, plan.steps, plan.strings, plan.root_step)  # a refused plan left nothing set


def test_a_union_column_that_is_nullable_or_renumbers_its_children_is_refused():
    program, plan = _plan_for(["null", "int", "string"])
    Decoder = compiled_decoder_class()

    def accepted(columns, strings):
        try:
            Decoder(program.code, program.consts).set_arrow_plan(columns, plan.steps, strings, plan.root_step)
        except ValueError:
            return False
        return True

    assert plan.columns[:1] == [16] and accepted(plan.columns, plan.strings)  # column 0: the dense union
    assert not accepted([plan.columns[0], 1] + plan.columns[2:], plan.strings)  # a validity it does not have
    assert plan.strings.count(b"+ud:0,1,2\0") == 1
    for other in (b"+ud:1,0,2", b"+ud:0,1,3", b"+ud:0,2,1", b"+ud:0,1", b"+us:0,1,2", b"+ud:0,1,"):
        changed = plan.strings.replace(b"+ud:0,1,2\0", other.ljust(10, b"\0"))  # the same length: offsets stay
        assert not accepted(plan.columns, changed), other
    # one column fewer under it: the format names three children
    assert not accepted(plan.columns[:5] + [2] + plan.columns[6:], plan.strings)


def test_every_word_of_a_plan_changed_is_refused_or_builds_a_valid_array():
    schema = {"type": "record", "name": "H", "fields": [
        {"name": "n", "type": ["null", {"type": "record", "name": "In", "fields": [
            {"name": "s", "type": "string"}, {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}}]}]},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "d", "type": {"type": "fixed", "name": "D", "size": 5, "logicalType": "decimal", "precision": 9}},
        {"name": "u", "type": ["int", "null", {"type": "array", "items": ["string", "long"]}]},
    ]}
    reader = {**schema, "fields": schema["fields"] + [
        {"name": "z", "type": {"type": "array", "items": "In"}, "default": [{"s": "q", "f": "abc"}]},
        {"name": "y", "type": ["null", "long", "In"], "default": None}]}
    rows = [{"n": None, "m": {"k": [1, 2]}, "e": "B", "d": decimal.Decimal(5), "u": ["a", 3]},
            {"n": {"s": "hi", "f": b"xyz"}, "m": {}, "e": "A", "d": decimal.Decimal(-123456789), "u": None},
            {"n": None, "m": {}, "e": "A", "d": decimal.Decimal(0), "u": -1}]
    payloads = [encode(schema, r) for r in rows]
    decoder = AvroDecoder(schema, reader)
    program, plan = decoder.program, avro_arrow.compile_plan(decoder.program)
    Decoder = compiled_decoder_class()
    accepted = refused = 0
    for words, which in ((plan.columns, "columns"), (plan.steps, "steps")):
        for i in range(len(words)):
            for value in (-2, -1, 0, 1, 2, 3, words[i] + 1, words[i] - 1, 1 << 40):
                changed = list(words)
                changed[i] = value
                columns, steps = (changed, plan.steps) if which == "columns" else (plan.columns, changed)
                core = Decoder(program.code, program.consts)
                try:
                    core.set_arrow_plan(columns, steps, plan.strings, plan.root_step)
                except ValueError:
                    refused += 1
                    continue
                accepted += 1
                try:
                    core.decode_arrow(payloads).validate(full=True)
                except AvroDecodeError as e:  # a decimal bound moved: a typed refusal of the value
                    assert e.what == "decimal"
    assert refused > accepted > 0


_UNDER_A_LIMIT = r"""
import resource, sys
sys.path.insert(0, {root!r})
import pyarrow  # noqa: F401  (what it maps at import, before the limit)
from fastkc.schema_registry.avro import AvroDecoder

schema = {{"type": "record", "name": "B", "fields": [{{"name": "s", "type": "string"}}]}}
value = b"v" * (16 << 20)
payload = bytes([0x80, 0x80, 0x80, 0x10]) + value  # 16 MiB as a zigzag varint, then the string
decoder = AvroDecoder(schema)
assert len(decoder.decode_arrow([b"\x02x"])) == 1  # warm: the plan compiled
vm = int([line for line in open("/proc/self/status") if line.startswith("VmSize:")][0].split()[1]) * 1024
limit = vm + (48 << 20)  # room for the payloads' tape, not for their 256 MiB of column
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
try:
    decoder.decode_arrow([payload] * 16)
except MemoryError as e:
    print("MemoryError", e)
resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
print("rows", len(decoder.decode_arrow([payload] * 2)))
"""


def test_columns_that_cannot_grow_are_a_memory_error_not_a_crash():
    import subprocess
    import sys

    if os.environ.get("FASTKC_ASAN_LIB"):
        pytest.skip("ASan reserves its shadow memory: an address-space limit stops it, not the columns")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", _UNDER_A_LIMIT.format(root=root)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MemoryError fastkc: out of memory for the Avro Arrow columns" in done.stdout
    assert "rows 2" in done.stdout


def test_the_pure_python_twin_says_the_arrow_path_needs_the_compiled_core():
    import subprocess
    import sys

    code = ("from fastkc.schema_registry.avro import AvroDecoder\n"
            "d = AvroDecoder('long')\n"
            "assert d.decode_many([b'\\x02']) == [1]\n"
            "try:\n    d.decode_arrow([b'\\x02'])\n"
            "except NotImplementedError as e:\n    print('refused:', e)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root,
                          env=dict(os.environ, FASTKC_PURE="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refused: fastkc: decode_arrow needs the compiled core" in done.stdout
