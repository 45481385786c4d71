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
from tests.support import json_schemas


def schemas():
    return json_schemas.schemas(json_schemas.leaf_schemas())


def value_of(draw, schema):
    return json_schemas.value_of(draw, schema)


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


# -- the fast validation path (fastkc/schema_registry/json_fast.py) ----------------------------------------------
# fastjsonschema decides first where its decisions are jsonschema's; checked
# here decision for decision against jsonschema on generated schemas and on
# values generated to break them

DRAFTS = [None, "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
          "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
          "https://json-schema.org/draft/2020-12/schema"]
# property names that would break generated code if pasted unescaped
NASTY = st.sampled_from(["a", "b", "id", '"', "'", "\\", "{variable}", "a\nb", "__class__"])
NUMBERS = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 1.0, 2.0, -1.0, 1e20, 2**63, 2**64, 10**30, -(2**70)]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.sampled_from(["", "a", "ab", "abc", "é", "\U0001f600"]),
                    st.sampled_from([float("nan"), float("inf"), 1.5, -0.0, 0.0]))
CONSTS = st.recursive(SCALARS, lambda c: st.lists(c, max_size=2) | st.dictionaries(NASTY, c, max_size=2),
                      max_leaves=3)


def checked_leaves():
    bound = st.integers(0, 3)
    return st.one_of(
        json_schemas.leaf_schemas(),
        st.sampled_from([{"type": "integer"}, {"type": "number"}, {"type": ["integer", "boolean"]},
                         {"type": ["number", "string"]}, {"type": "array"}, {"type": "object"}, True, False,
                         {"not": {"type": "integer"}}]),
        st.fixed_dictionaries({}, optional={"minimum": NUMBERS, "maximum": NUMBERS, "type": st.sampled_from(
            ["integer", "number"])}),
        st.fixed_dictionaries({}, optional={"exclusiveMinimum": NUMBERS, "exclusiveMaximum": NUMBERS}),
        st.fixed_dictionaries({}, optional={"minLength": bound, "maxLength": bound, "minItems": bound,
                                            "maxItems": bound, "minProperties": bound, "maxProperties": bound}),
        st.lists(CONSTS, min_size=1, max_size=4).map(lambda e: {"enum": e}),
        CONSTS.map(lambda c: {"const": c}),
    )


def checked_schemas():
    return st.recursive(checked_leaves(), lambda inner: st.one_of(
        st.builds(lambda p, req, extra: {"type": "object", "properties": p, "required": sorted(set(req) & set(p))
                                         or sorted(p)[:1], "additionalProperties": extra},
                  st.dictionaries(NASTY, inner, min_size=1, max_size=3), st.lists(NASTY, max_size=2),
                  st.one_of(st.booleans(), inner)),
        inner.map(lambda s: {"type": "array", "items": s}),
        st.lists(inner, min_size=1, max_size=3).flatmap(
            lambda b: st.sampled_from([{"anyOf": b}, {"oneOf": b}, {"allOf": b}])),
        inner.map(lambda s: {"not": s}),
        inner.map(lambda s: {"definitions": {"d": s}, "type": "object",
                             "properties": {"r": {"$ref": "#/definitions/d"}, "self": {"$ref": "#"}}}),
    ), max_leaves=6)


def mutant(draw, schema, value, depth=0):
    """`value`, or a value near it that may break `schema`: a wrong type, a
    key dropped or added, an integral float for an int, a bool for a number,
    a big int, an enum miss, extra nesting."""
    choice = draw(st.integers(0, 5))
    if choice == 0 or depth > 4:
        return draw(CONSTS)
    if choice == 1:
        return [value] if draw(st.booleans()) else {"a": value}
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.booleans()):
            return {k: v for k, v in value.items() if k != key}
        sub = schema.get("properties", {}).get(key, {}) if isinstance(schema, dict) else {}
        return dict(value, **{key: mutant(draw, sub, value[key], depth + 1)})
    if isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        sub = schema.get("items", {}) if isinstance(schema, dict) else {}
        return value[:i] + [mutant(draw, sub, value[i], depth + 1)] + value[i + 1:]
    if type(value) is int:
        return draw(st.sampled_from([float(value), value + 2**64, value == 1, str(value)]))
    if type(value) is float and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return draw(CONSTS)


@st.composite
def fast_cases(draw):
    schema = draw(st.one_of(checked_schemas(), schemas()))
    draft = draw(st.sampled_from(DRAFTS))
    if draft and isinstance(schema, dict):
        schema = dict(schema, **{"$schema": draft})
    values = []
    for _ in range(draw(st.integers(1, 6))):
        try:
            base = value_of(draw, schema) if isinstance(schema, dict) and draw(st.booleans()) else draw(CONSTS)
        except (KeyError, IndexError, TypeError):
            base = draw(CONSTS)  # a checked_schemas shape value_of does not know
        values.append(mutant(draw, schema, base) if draw(st.booleans()) else base)
    return schema, values


def jsonschema_only(schema):
    codec = JsonSchemaCodec(schema)
    codec._fast = None
    return codec


def outcome(codec, value):
    try:
        codec._validate_all([value])
    except JsonValidationError as exc:
        return "reject", exc.reason, exc.path
    return ("accept",)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fast_cases())
def test_fast_validation_decides_as_jsonschema(case):
    import fastjsonschema
    from hypothesis import assume, event

    schema, values = case
    try:
        codec = JsonSchemaCodec(schema)
    except JsonSchemaError:
        assume(False)  # not a valid schema of its draft: jsonschema refuses it, no path runs
    event("fast" if codec._fast is not None else "jsonschema")
    reference = jsonschema_only(schema)
    for v in values:
        want = reference._validator.is_valid(v)
        if codec._fast is not None:
            try:
                codec._fast(v)
                fast = True
            except fastjsonschema.JsonSchemaValueException:
                fast = False
            assert fast == want, (schema, v)
            event("accepted" if want else "rejected")
        # the codec's outcome (decision, message, path) is jsonschema's either way
        assert outcome(codec, v) == outcome(reference, v)
    assert codec.fast_disagreements == 0


D7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"
FAST = [
    EVENT,
    dict(EVENT, **{"$schema": D7}),
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 1, "exclusiveMinimum": True},
    {"$schema": D2020, "type": "array", "items": {"type": "integer"}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"$ref": "#/definitions/s"}, "kids": {"type": "array", "items": {
        "$ref": "#"}}}, "definitions": {"s": {"type": "string", "format": "email"}}},
    {"$schema": D7, "$defs": {"n": {"type": "number"}}, "items": {"$ref": "#/$defs/n"}},
    {"type": "object", "properties": {"a": {"type": "integer", "default": 5}}, "title": "t", "description": "d"},
]
SLOW = [
    (True, "a boolean schema"),
    ({"$defs": {"n": {"type": "number"}}, "items": {"$ref": "#/$defs/n"}}, "keyword '$defs'"),
    ({"prefixItems": [{"type": "integer"}]}, "keyword 'prefixItems'"),
    ({"$schema": D7, "items": [{"type": "integer"}]}, "array-form items"),
    ({"$schema": D7, "additionalItems": False}, "keyword 'additionalItems'"),
    ({"dependentRequired": {"a": ["b"]}}, "keyword 'dependentRequired'"),
    ({"dependentSchemas": {"a": {}}}, "keyword 'dependentSchemas'"),
    ({"$schema": D7, "dependencies": {"a": ["b"]}}, "keyword 'dependencies'"),
    ({"unevaluatedProperties": False}, "keyword 'unevaluatedProperties'"),
    ({"$anchor": "x"}, "keyword '$anchor'"),
    ({"$dynamicAnchor": "x"}, "keyword '$dynamicAnchor'"),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": True}, "$recursiveAnchor"),
    ({"minContains": 2}, "keyword 'minContains'"),
    ({"$id": "http://x.example/s", "type": "object"}, "keyword '$id'"),
    ({"properties": {"a": {"$id": "a.json", "type": "string"}}}, "keyword '$id'"),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://x.example/s"}, "keyword 'id'"),
    ({"properties": {"a": {"$ref": "#/definitions/s", "type": "string"}}, "definitions": {"s": {}}},
     "$ref with sibling keywords"),
    ({"properties": {"a": {"$ref": "#/definitions/%73"}}, "definitions": {"s": {}}}, "not a local pointer"),
    ({"type": "string", "pattern": "^a$"}, "keyword 'pattern'"),
    ({"$schema": D7, "contentEncoding": "base64"}, "keyword 'contentEncoding'"),
    ({"type": "number", "multipleOf": 0.1}, "keyword 'multipleOf'"),
    ({"$schema": "http://json-schema.org/draft-03/schema#", "type": "integer"}, "draft Draft3Validator"),
]


@pytest.mark.parametrize("schema", FAST, ids=[json.dumps(s)[:60] for s in FAST])
def test_schemas_that_take_the_fast_path(schema):
    from fastkc.schema_registry.json_fast import refusal

    codec = JsonSchemaCodec(schema)
    assert refusal(codec.schema, {}, type(codec._validator)) is None
    assert codec._fast is not None


@pytest.mark.parametrize("schema, why", SLOW, ids=[w for _, w in SLOW])
def test_schemas_that_jsonschema_alone_validates(schema, why):
    from fastkc.schema_registry.json_fast import refusal

    codec = JsonSchemaCodec(schema)
    reason = refusal(codec.schema, {}, type(codec._validator))
    assert reason is not None and why in reason, reason
    assert codec._fast is None


def test_registry_references_take_jsonschema():
    codec = JsonSchemaCodec({"type": "object", "properties": {"h": {"$ref": "a.json"}}},
                            references={"a.json": {"type": "string"}})
    assert codec._fast is None


def test_the_fast_path_writes_no_defaults_and_keeps_jsonschemas_errors():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 5}, "b": {"default": [1]}},
              "required": ["c"]}
    codec = JsonSchemaCodec(schema)
    assert codec._fast is not None
    assert codec.decode_many([b'{"c": 1}']) == [{"c": 1}]  # no "a": 5, no "b"
    with pytest.raises(JsonValidationError) as e:
        codec.decode_many([b'{"c": 1}', b'{"a": 1.5, "c": 1}'])
    assert (e.value.index, e.value.reason, e.value.path) == (1, "1.5 is not of type 'integer'", "$.a")
    with pytest.raises(JsonValidationError) as e:
        codec.decode_many([b'{"a": 1}'])
    assert e.value.reason == "'c' is a required property" and e.value.path == "$"
    assert codec.fast_disagreements == 0


def test_a_fast_rejection_jsonschema_accepts_is_accepted_and_counted():
    codec = JsonSchemaCodec({"type": "integer"})

    def rejects_all(value):
        import fastjsonschema

        raise fastjsonschema.JsonSchemaValueException("no")

    codec._fast = rejects_all
    # 1 is taken by the compiled parser's validating plan, never asked of
    # the fast function; 2.0 and 3.0 (integers for jsonschema) it declines
    assert codec.decode_many([b"1", b"2.0", b"3.0"]) == [1, 2, 3]  # jsonschema is the reference
    assert codec.fast_disagreements == 2
    with pytest.raises(JsonValidationError) as e:
        codec.decode_many([b'"x"'])
    assert e.value.reason == "'x' is not of type 'integer'"


@pytest.mark.parametrize("schema", ['{"enum": [NaN, 1]}', '{"const": [Infinity]}', '{"enum": [{"a": -Infinity}]}'])
def test_non_finite_enum_values_take_jsonschema(schema):
    # fastjsonschema writes repr(nan) into its generated code, a NameError
    # when it runs: such schemas are refused
    codec = JsonSchemaCodec(schema)
    assert codec._fast is None
    with pytest.raises(JsonValidationError):
        codec.decode_many([b"2"])


def test_a_fault_of_the_fast_function_leaves_the_value_to_jsonschema():
    codec = JsonSchemaCodec({"type": "integer"})
    codec._fast = lambda value: 1 / 0
    assert codec.decode_many([b"1"]) == [1]
    with pytest.raises(JsonValidationError):
        codec.decode_many([b"1.5"])
    assert codec.fast_disagreements == 0


def test_what_the_compiled_parser_validates_python_does_not_validate_again():
    # decode_many: a value whose payload the validating plan takes is valid
    # (the plan checks each of this schema's keywords exactly); the others,
    # declined for what the parser does not read (an integer past int64, a
    # float where an integer is declared) or for a keyword they break, go to
    # the fast validator, then jsonschema
    codec = JsonSchemaCodec({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                             "additionalProperties": False})
    asked = []
    fast = codec._fast
    assert fast is not None

    def counting(value):
        asked.append(value)
        return fast(value)

    codec._fast = counting
    big = 2 ** 70
    payloads = [b'{"n": 1}', b'{"n": %d}' % big, b'{"n": 2.0}', b'{"n": 3}']
    assert codec.decode_many(payloads) == [{"n": 1}, {"n": big}, {"n": 2.0}, {"n": 3}]
    assert asked == [{"n": big}, {"n": 2.0}]
    for bad, reason in ((b'{}', "'n' is a required property"), (b'{"n": 1, "m": 2}', "Additional properties"),
                        (b'{"n": "1"}', "'1' is not of type 'integer'")):
        with pytest.raises(JsonValidationError) as e:
            codec.decode_many([b'{"n": 1}', bad])
        assert e.value.index == 1 and reason in e.value.reason
    assert codec.fast_disagreements == 0
