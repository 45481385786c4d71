"""JsonSchemaCodec (fastkc/schema_registry/json_schema.py): its values equal
json.loads's and confluent-kafka's JSONDeserializer's, its Arrow column equals
the parsed values mapped by the documented table, and every bad payload is a
typed error naming its index."""
import json
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkc.schema_registry.errors import (
    JsonArrowTypeError,
    JsonDecodeError,
    JsonPayloadError,
    JsonSchemaError,
    JsonValidationError,
)
from fastkc.schema_registry.json_schema import JsonSchemaCodec

NAMES = st.sampled_from(["a", "b", "id", "name", "x y", "é"])
SYMBOLS = st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4, unique=True)
INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)


def leaf_schemas():
    return st.one_of(
        st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
                         {"type": "null"}, {"type": ["integer", "null"]}, {"type": ["null", "string"]},
                         {"type": "string", "format": "date-time"}, {}]),
        SYMBOLS.map(lambda s: {"enum": s}),
    )


def schemas():
    return st.recursive(leaf_schemas(), lambda inner: st.one_of(
        st.dictionaries(NAMES, inner, min_size=1, max_size=4).map(
            lambda p: {"type": "object", "properties": p}),
        inner.map(lambda s: {"type": "array", "items": s}),
        inner.map(lambda s: {"type": "object", "additionalProperties": s}),
        inner.map(lambda s: {"anyOf": [s, {"type": "null"}]}),
    ), max_leaves=8)


def value_of(draw, schema):
    """A value valid under `schema` (the grammar above)."""
    if "anyOf" in schema:
        return None if draw(st.booleans()) else value_of(draw, schema["anyOf"][0])
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return None if draw(st.booleans()) else value_of(draw, {"type": [k for k in kind if k != "null"][0]})
    if kind == "string":
        return draw(TEXT)
    if kind == "integer":
        return draw(INT64)
    if kind == "number":
        return draw(st.one_of(FLOATS, INT64))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        return [value_of(draw, schema["items"]) for _ in range(draw(st.integers(0, 3)))]
    if kind == "object" and "properties" in schema:
        names = draw(st.lists(st.sampled_from(sorted(schema["properties"])), unique=True))
        return {n: value_of(draw, schema["properties"][n]) for n in names}
    if kind == "object":
        keys = draw(st.lists(TEXT, max_size=3, unique=True))
        return {k: value_of(draw, schema["additionalProperties"]) for k in keys}
    # {}: anything JSON
    return draw(st.recursive(st.none() | st.booleans() | INT64 | FLOATS | TEXT,
                             lambda c: st.lists(c, max_size=2) | st.dictionaries(TEXT, c, max_size=2), max_leaves=4))


def expected_row(schema, value):
    """The test's oracle of the Arrow mapping (the documented table), as
    pyarrow's to_pylist() gives it: struct -> dict of every property, map ->
    (key, value) pairs, enum -> the symbol, a free-form value -> its JSON text."""
    if value is None:
        return None
    if "anyOf" in schema:
        return expected_row(schema["anyOf"][0], value)
    if "enum" in schema:
        return value
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = [k for k in kind if k != "null"][0]
    if kind == "number":
        return float(value)
    if kind in ("string", "integer", "boolean"):
        return value
    if kind == "array":
        return [expected_row(schema["items"], v) for v in value]
    if kind == "object" and "properties" in schema:
        return {n: expected_row(s, value.get(n)) for n, s in schema["properties"].items()}
    if kind == "object":
        return [(k, expected_row(schema["additionalProperties"], v)) for k, v in value.items()]
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@st.composite
def schema_and_values(draw):
    schema = draw(schemas())
    values = [value_of(draw, schema) for _ in range(draw(st.integers(1, 5)))]
    return schema, values


def confluent_deserializer(schema, validate=True):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    return JSONDeserializer(json.dumps(schema), conf={"validate": validate})


def confluent_value(deserializer, payload):
    from confluent_kafka.serialization import MessageField, SerializationContext

    # confluent's deserializer reads the frame (magic 0, schema id); with a
    # schema_str and no client it never asks a registry
    return deserializer(b"\x00\x00\x00\x00\x01" + payload, SerializationContext("t", MessageField.VALUE))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_values(), st.booleans())
def test_generated_values_match_json_loads_confluent_and_the_arrow_oracle(case, pretty):
    schema, values = case
    payloads = [json.dumps(v, indent=2 if pretty else None, ensure_ascii=pretty).encode() for v in values]
    codec = JsonSchemaCodec(schema)
    decoded = codec.decode_many(payloads)
    assert decoded == [json.loads(p) for p in payloads]
    deserializer = confluent_deserializer(schema)
    assert decoded == [confluent_value(deserializer, p) for p in payloads]
    column = codec.decode_arrow(payloads)
    assert column.type == codec.arrow_type
    assert column.to_pylist() == [expected_row(schema, v) for v in values]
    # the Arrow reader and the converter build the same column
    assert column.equals(codec._from_values(decoded))


MAPPING = [
    ({"type": "string"}, pa.string()),
    ({"type": "string", "format": "date-time"}, pa.string()),
    ({"type": "string", "format": "uuid"}, pa.string()),
    ({"type": "integer"}, pa.int64()),
    ({"type": "number"}, pa.float64()),
    ({"type": "boolean"}, pa.bool_()),
    ({"type": "null"}, pa.null()),
    ({"type": ["integer", "null"]}, pa.int64()),
    ({"oneOf": [{"type": "null"}, {"type": "number"}]}, pa.float64()),
    ({"type": ["integer", "string"]}, pa.string()),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, pa.string()),
    ({"allOf": [{"type": "integer"}]}, pa.string()),
    ({}, pa.string()),
    (True, pa.string()),
    ({"type": "object"}, pa.string()),
    ({"type": "array"}, pa.list_(pa.string())),
    ({"type": "array", "items": [{"type": "integer"}]}, pa.string()),
    ({"type": "array", "prefixItems": [{"type": "integer"}]}, pa.string()),
    ({"enum": ["A", "B", None]}, pa.dictionary(pa.int32(), pa.string())),
    ({"enum": [1, 2]}, pa.string()),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, pa.map_(pa.string(), pa.int64())),
    ({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"$ref": "#/definitions/s"}},
      "required": ["b"], "definitions": {"s": {"type": "string"}}},
     pa.struct([("b", pa.int64()), ("a", pa.string())])),
    ({"type": "array", "items": {"$ref": "#/$defs/n"}, "$defs": {"n": {"type": "number"}}}, pa.list_(pa.float64())),
]


@pytest.mark.parametrize("schema, arrow_type", MAPPING, ids=[json.dumps(s) for s, _ in MAPPING])
def test_the_mapping_table(schema, arrow_type):
    codec = JsonSchemaCodec(schema, validate=False)
    assert codec.arrow_type == arrow_type
    # required does not make a field non-nullable: every field is nullable
    if pa.types.is_struct(arrow_type):
        assert all(f.nullable for f in codec.arrow_type)


def test_a_registry_reference_by_name():
    address = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    schema = {"type": "object", "properties": {"home": {"$ref": "address.json"}}}
    codec = JsonSchemaCodec(schema, references={"address.json": json.dumps(address)})
    assert codec.arrow_type == pa.struct([("home", pa.struct([("city", pa.string())]))])
    payloads = [b'{"home": {"city": "Oslo"}}']
    assert codec.decode_arrow(payloads).to_pylist() == [{"home": {"city": "Oslo"}}]
    # the reference validates too (its "required")
    with pytest.raises(JsonValidationError) as e:
        codec.decode_many([b'{"home": {}}'])
    assert e.value.index == 0 and "'city' is a required property" in e.value.reason


def test_recursion_becomes_json_text():
    tree = {"type": "object", "properties": {"v": {"type": "integer"},
                                             "kids": {"type": "array", "items": {"$ref": "#"}}}}
    codec = JsonSchemaCodec(tree)
    assert codec.arrow_type == pa.struct([("v", pa.int64()), ("kids", pa.list_(pa.string()))])
    row = codec.decode_arrow([b'{"v": 1, "kids": [{"v": 2, "kids": []}]}']).to_pylist()
    assert row == [{"v": 1, "kids": ['{"v":2,"kids":[]}']}]


@pytest.mark.parametrize("schema", [
    '{"type": ',
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"type": "object", "properties": {"a": {"$ref": "other.json"}}},
    {"type": "no-such-type"},
    42,
])
def test_unusable_schemas_are_typed(schema):
    with pytest.raises(JsonSchemaError):
        JsonSchemaCodec(schema)


def test_the_enum_dictionary_is_the_symbols_in_order():
    codec = JsonSchemaCodec({"type": "object", "properties": {"k": {"enum": ["Z", "A", "M"]}}})
    column = codec.decode_arrow([b'{"k": "M"}', b'{}', b'{"k": "Z"}'])
    kinds = column.field("k")
    assert kinds.dictionary.to_pylist() == ["Z", "A", "M"]
    assert kinds.indices.to_pylist() == [2, None, 0]


def test_where_orjson_and_json_loads_differ_the_value_is_json_loads():
    codec = JsonSchemaCodec({}, validate=False)
    payloads = [b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551616",
                b'"\\ud800"', b"NaN", b"-Infinity", b"1e400", b'{"a": 1, "b": 2, "a": 3}']
    got = codec.decode_many(payloads)
    want = [json.loads(p.decode()) for p in payloads]
    assert repr(got) == repr(want)  # repr: exact types, NaN compared as text
    assert type(got[0]) is int and math.isnan(got[4]) and list(got[7]) == ["a", "b"]


@pytest.mark.parametrize("payload, what", [
    (b"", "not JSON"),
    (b"   ", "not JSON"),
    (b'{"a": 1', "not JSON"),
    (b'{"a": 1}{"a": 2}', "not JSON"),
    (b'{"a": 1}\n{"a": 2}', "not JSON"),
    (b'"\xff"', "not UTF-8"),
    (b'"\xed\xa0\x80"', "not UTF-8"),  # a UTF-8-encoded surrogate
    (b"\xef\xbb\xbf{}", "not JSON"),  # a BOM
    ('{"a": 1}'.encode("utf-16"), "not UTF-8"),
    (b"[" * 100_000, "nested too deeply"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"1" * 5000, "not JSON"),  # past Python's int digit limit
])
def test_bad_payloads_are_typed_decode_errors(payload, what):
    codec = JsonSchemaCodec({}, validate=False)
    for method in (codec.decode_many, codec.decode_arrow):
        with pytest.raises(JsonDecodeError) as e:
            method([b"{}", b"[]", payload])
        assert e.value.index == 2 and e.value.reason.startswith(what), e.value
        assert isinstance(e.value, ValueError)


EVENT = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                          "tags": {"type": "array", "items": {"type": "string"}},
                                          "kind": {"enum": ["A", "B"]},
                                          "attrs": {"type": "object", "additionalProperties": {"type": "number"}}},
         "required": ["id"]}


@pytest.mark.parametrize("payload, path", [
    (b'{"id": "7"}', "$.id"),
    (b'{"id": 1.5}', "$.id"),
    (b'{"id": true}', "$.id"),
    (b'{"id": 9223372036854775808}', "$.id"),
    (b'{"id": 1, "name": 5}', "$.name"),
    (b'{"id": 1, "tags": "ab"}', "$.tags"),
    (b'{"id": 1, "tags": ["a", 1]}', "$.tags[1]"),
    (b'{"id": 1, "kind": "C"}', "$.kind"),
    (b'{"id": 1, "attrs": {"q": "x"}}', "$.attrs.q"),
    (b'{"id": 1, "attrs": [["q", 1]]}', "$.attrs"),
    (b'{"id": 1, "name": "\\ud800"}', "$.name"),
    (b'[["id", 1]]', "$"),
])
def test_values_that_do_not_fit_the_arrow_type(payload, path):
    ok = b'{"id": 1, "name": "n", "tags": ["t"], "kind": "A", "attrs": {"w": 2}}'
    with pytest.raises(JsonArrowTypeError) as e:
        JsonSchemaCodec(EVENT, validate=False).decode_arrow([ok, ok, payload])
    assert e.value.index == 2 and e.value.path == path, e.value
    # with validation on, the same payloads fail validation first (but for
    # those the schema allows and Arrow cannot hold)
    with pytest.raises(JsonPayloadError) as e:
        JsonSchemaCodec(EVENT).decode_arrow([ok, payload])
    assert e.value.index == 1


def test_integral_numbers_fit_an_integer_column():
    # JSON Schema's integer includes 1.0 and 1e2; Arrow's reader refuses them,
    # so the converter builds this column
    codec = JsonSchemaCodec(EVENT)
    assert codec.decode_arrow([b'{"id": 1.0}', b'{"id": 1e2}']).field("id").to_pylist() == [1, 100]


@given(st.lists(schema_and_values().flatmap(lambda c: st.just(c)), min_size=1, max_size=1),
       st.integers(0, 2**32), st.sampled_from([b"x", b"\x00", b"\xff", b"}", b'"', b"\n", b"1"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_corrupted_payloads_decode_or_raise_typed_like_json_loads(cases, seed, junk):
    schema, values = cases[0]
    payloads = [json.dumps(v).encode() for v in values]
    p = payloads[0]
    at = seed % (len(p) + 1)
    payloads[0] = p[:at] + junk + p[at + 1:] if seed % 2 else p[:at]  # a byte replaced, or truncated
    for validate in (False, True):
        codec = JsonSchemaCodec(schema, validate=validate)
        try:
            want = json.loads(payloads[0].decode())
        except (ValueError, UnicodeDecodeError):
            with pytest.raises(JsonDecodeError) as e:
                codec.decode_many(payloads)
            assert e.value.index == 0
            continue
        try:
            assert codec.decode_many(payloads)[0] == want
            column = codec.decode_arrow(payloads)
        except (JsonValidationError, JsonArrowTypeError) as e:
            assert e.index == 0
        else:
            assert column.to_pylist()[0] == expected_row(schema, want)


def test_validation_is_confluents():
    # the same verdict and message as confluent-kafka's JSONDeserializer
    from confluent_kafka.serialization import SerializationError

    payloads = [b'{"id": "x"}', b'{"name": "n"}', b'{"id": 1, "kind": "Q"}', b'{"id": 1, "date": "not-a-date"}']
    schema = dict(EVENT, properties=dict(EVENT["properties"], date={"type": "string", "format": "date"}))
    codec = JsonSchemaCodec(schema)
    deserializer = confluent_deserializer(schema)
    for p in payloads:
        try:
            want = confluent_value(deserializer, p)
        except SerializationError as exc:
            with pytest.raises(JsonValidationError) as e:
                codec.decode_many([p])
            assert e.value.reason == str(exc)
        else:
            assert codec.decode_many([p]) == [want]  # "format" is not asserted
    # validate=False lets them through
    assert len(JsonSchemaCodec(schema, validate=False).decode_many(payloads)) == 4


def test_memoryviews_and_an_empty_list():
    codec = JsonSchemaCodec(EVENT)
    data = b'xx{"id": 3}'
    assert codec.decode_many([memoryview(data)[2:]]) == [{"id": 3}]
    assert codec.decode_arrow([memoryview(data)[2:]]).field("id").to_pylist() == [3]
    assert codec.decode_many([]) == []
    empty = codec.decode_arrow([])
    assert len(empty) == 0 and empty.type == codec.arrow_type


def test_a_top_level_scalar_and_extra_properties():
    codec = JsonSchemaCodec({"type": "integer"}, validate=False)
    assert codec.decode_arrow([b"1", b"null", b"-5"]).to_pylist() == [1, None, -5]
    codec = JsonSchemaCodec({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert codec.decode_arrow([b'{"a": 1, "zzz": [1, {"q": 2}]}']).to_pylist() == [{"a": 1}]
