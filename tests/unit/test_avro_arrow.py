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

pa = pytest.importorskip("pyarrow")

# under the sanitizers (make asan sets FASTKC_ASAN_LIB) the point is memory
# errors on every path, not the search: fewer examples there (the plain run,
# and the libFuzzer Avro target through the same sink, search wider)
SETTINGS = settings(max_examples=20 if os.environ.get("FASTKC_ASAN_LIB") else 80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.fixture(autouse=True)
def _compiled_core():
    compiled_decoder_class()  # skips (or fails under FASTKC_REQUIRE_C) without the compiled core


# --- the mapping, written out independently of fastkc ------------------------

_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def general_union(schema):
    """Whether `schema` holds a union of several non-null types (no Arrow mapping yet)."""
    if isinstance(schema, list):
        return len([b for b in schema if b != "null"]) > 1 or any(general_union(b) for b in schema)
    if isinstance(schema, dict):
        return any(general_union(schema.get(k)) for k in ("items", "values")) or any(
            general_union(f["type"]) for f in schema.get("fields", ()))
    return False


def arrow_type(schema):
    """(the Arrow type, nullable) of an Avro schema."""
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


def expected_array(schema, payloads, reader=None):
    t = arrow_type(reader if reader is not None else schema)[0]
    return pa.array([arrow_value(fastavro_read(schema, p, reader), t) for p in payloads], type=t)


def assert_arrow_equals(got, expected):
    got.validate(full=True)
    assert got.type == expected.type, f"{got.type} != {expected.type}"
    assert len(got) == len(expected)
    assert got.to_pylist() == expected.to_pylist()


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
    if general_union(schema):
        with pytest.raises(AvroArrowUnsupportedError):
            decoder.decode_arrow(payloads)
        return
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


# --- what has no Arrow mapping -----------------------------------------------

@pytest.mark.parametrize("schema", [
    ["int", "string"],
    {"type": "record", "name": "R", "fields": [{"name": "x", "type": ["null", "int", "string"]}]},
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
    schema = {"type": "record", "name": "S", "fields": [
        {"name": "s", "type": "string"}, {"name": "l", "type": {"type": "array", "items": "long"}},
        {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}}]}
    row = {"s": "x" * 100_000, "l": list(range(1000)), "k": "B", "d": decimal.Decimal(7)}
    good = [encode(schema, row)] * 20                       # about 2 MB of columns per call
    truncated = good + [good[0][:-3]]                        # phase 1 fails after them
    wide = good + [encode(schema, dict(row, d=decimal.Decimal(1)))[:-2] + b"\x04\x27\x10"]  # 10000: the sink fails
    decoder = AvroDecoder(schema)

    def run():
        for bad in (truncated, wide):
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


def test_every_word_of_a_plan_changed_is_refused_or_builds_a_valid_array():
    schema = {"type": "record", "name": "H", "fields": [
        {"name": "n", "type": ["null", {"type": "record", "name": "In", "fields": [
            {"name": "s", "type": "string"}, {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}}]}]},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "d", "type": {"type": "fixed", "name": "D", "size": 5, "logicalType": "decimal", "precision": 9}},
    ]}
    reader = {**schema, "fields": schema["fields"] + [
        {"name": "z", "type": {"type": "array", "items": "In"}, "default": [{"s": "q", "f": "abc"}]}]}
    rows = [{"n": None, "m": {"k": [1, 2]}, "e": "B", "d": decimal.Decimal(5)},
            {"n": {"s": "hi", "f": b"xyz"}, "m": {}, "e": "A", "d": decimal.Decimal(-123456789)}]
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
    assert "MemoryError fastkc: out of memory for the Avro tape or its Arrow columns" in done.stdout
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
