"""The compiled JSON -> Arrow parser (csrc/fkc_json_arrow.c) held to the
Python way it stands in for (JsonSchemaCodec.reference_arrow): on generated
schemas, values and spellings, and on hostile payloads, decode_arrow gives
the same column or raises the same typed error naming the same payload. The
parser must take plain data itself (never declining it), and must decline
every case its header lists, so that a parser that silently accepted
something Python reads otherwise fails here."""
import json
import locale
import os
import random
import shutil
import struct
import subprocess

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkc._core._json import JsonArrowDecoder
from fastkc.schema_registry.errors import JsonPayloadError
from fastkc.schema_registry.json_arrow import compile_plan
from fastkc.schema_registry.json_schema import JsonSchemaCodec
from tests.support import json_schemas
from tests.support.json_schemas import ANY_JSON, NAMES, SYMBOLS, TEXT
from tests.support.sanitizers import examples


def schemas():
    return json_schemas.schemas(json_schemas.leaf_schemas(free_form=False))


def fitting(draw, schema):
    """A value the schema's Arrow type holds (objects may hold a property the schema does not name)."""
    return json_schemas.value_of(draw, schema, unknown=True)


def spell(draw, value):
    """`value` as JSON text, one of several ways."""
    how = draw(st.sampled_from(["orjson", "ascii", "utf8", "indent", "spaces"]))
    if how == "orjson":
        return orjson.dumps(value)
    if how == "ascii":
        return json.dumps(value).encode()  # \\uXXXX escapes, surrogate pairs
    if how == "utf8":
        return json.dumps(value, ensure_ascii=False).encode()
    if how == "indent":
        return json.dumps(value, indent=2).encode()
    return b" \t\r\n" + json.dumps(value, separators=(" , ", " : ")).replace("/", "\\/").encode() + b"\n "


def outcome(call):
    """(\"value\", array) or (\"error\", type, payload index)."""
    try:
        return ("value", call())
    except JsonPayloadError as exc:
        return ("error", type(exc), exc.index)


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a == b
    # the values spelled out: equals() holds NaN unequal to itself and -0.0 equal to 0.0
    return a[1].type == b[1].type and repr(a[1].to_pylist()) == repr(b[1].to_pylist())


def check_same(codec, payloads):
    """decode_arrow and decode_arrow_column against the Python way; returns the outcome."""
    ours = outcome(lambda: codec.decode_arrow(payloads))
    reference = outcome(lambda: codec.reference_arrow(payloads))
    assert same(ours, reference), (payloads, ours, reference)
    column = pa.array([b"\0\0\0\0\1" + p for p in payloads], pa.binary())
    assert same(outcome(lambda: codec.decode_arrow_column(column, 5)), reference)
    return reference


def parser(schema):
    plan = compile_plan(JsonSchemaCodec(schema, validate=False).node)
    assert plan is not None
    return JsonArrowDecoder(plan.columns, plan.steps, plan.strings, plan.root_step)


@st.composite
def fitting_case(draw):
    schema = draw(schemas())
    return schema, [spell(draw, fitting(draw, schema)) for _ in range(draw(st.integers(1, 5)))]


@settings(max_examples=examples(150, 15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fitting_case(), st.booleans())
def test_fitting_values_are_the_python_way_and_never_declined(case, validate):
    schema, payloads = case
    codec = JsonSchemaCodec(schema, validate=validate)
    result = check_same(codec, payloads)
    assert result[0] == "value"
    # the parser took them itself (an integer past int64 cannot occur: INT64),
    # where the schema has a plan (not one with a JSON-text position)
    plan = compile_plan(codec.node)
    if plan is not None:
        decoder = JsonArrowDecoder(plan.columns, plan.steps, plan.strings, plan.root_step)
        assert decoder.decode_arrow(payloads) is not None, decoder.last_declined


@st.composite
def mangled_case(draw):
    """Fitting values with one payload spoiled: a value swapped for any JSON,
    bytes cut, inserted or replaced."""
    schema = draw(schemas())
    payloads = [spell(draw, fitting(draw, schema)) for _ in range(draw(st.integers(1, 4)))]
    i = draw(st.integers(0, len(payloads) - 1))
    how = draw(st.sampled_from(["any", "cut", "insert", "replace"]))
    p = payloads[i]
    if how == "any":
        p = spell(draw, draw(ANY_JSON))
    elif how == "cut":
        p = p[:draw(st.integers(0, len(p)))]
    else:
        at = draw(st.integers(0, len(p)))
        junk = draw(st.binary(min_size=1, max_size=3) | st.sampled_from(
            [b'"', b"\\", b",", b"{", b"]", b"\\ud800", b"\xff", b"1e999", b"-", b"null", b":"]))
        p = p[:at] + junk + p[at + (1 if how == "replace" else 0):]
    payloads[i] = p
    return schema, payloads


@settings(max_examples=examples(200, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled_case(), st.booleans())
def test_spoiled_payloads_give_the_python_ways_column_or_typed_error(case, validate):
    schema, payloads = case
    check_same(JsonSchemaCodec(schema, validate=validate), payloads)


EVENT = {"type": "object", "properties": {
    "s": {"type": "string"}, "i": {"type": "integer"}, "f": {"type": "number"}, "b": {"type": "boolean"},
    "e": {"enum": ["A", "B"]}, "o": {"type": "object", "properties": {"x": {"type": "integer"}}},
    "l": {"type": "array", "items": {"type": "integer"}},
    "m": {"type": "object", "additionalProperties": {"type": "string"}}}}

# each is declined by the parser (its header's list), and decode_arrow still
# gives the Python way's column or typed error
DECLINED = [
    (b'{"s": "a", "s": "b"}', "a duplicate key"),
    (b'{"o": {"x": 1, "x": 2}}', "a duplicate key"),
    (b'{"m": {"k": "a", "k": "b"}}', "a duplicate key"),
    (b'{"i": 9223372036854775808}', "an integer past int64"),
    (b'{"i": -9223372036854775809}', "an integer past int64"),
    (b'{"f": 100000000000000000000000000000}', "an integer past int64"),
    (b'{"i": 1.0}', "a fraction or exponent where the schema maps to int64"),
    (b'{"i": 1e2}', "a fraction or exponent where the schema maps to int64"),
    (b'{"f": -0}', "-0 where the schema maps to float64"),
    (b'{"f": 1e400}', "a number past float64"),
    (b'{"f": NaN}', "not a number"),
    (b'{"f": Infinity}', "not a number"),
    (b'{"s": "\\ud800"}', "a lone surrogate"),
    (b'{"s": "\\udc00x"}', "a lone surrogate"),
    (b'{"s": "\\ud800\\u0041"}', "a lone surrogate"),
    (b'{"s": 1}', "not a string"),
    (b'{"i": "1"}', "not a number"),
    (b'{"b": 1}', "not a boolean"),
    (b'{"e": "C"}', "not one of the enum's symbols"),
    (b'{"o": []}', "not an object"),
    (b'{"l": {}}', "not an array"),
    (b'{"s": "a"} x', "bytes after the value"),
    (b'{"s": "a"}{}', "bytes after the value"),
    (b'', "not JSON"),
    (b'\xef\xbb\xbf{}', "not an object"),
    (b'{"s": "\xff"}', "not UTF-8"),
    (b'{"s": "a\nb"}', "not JSON"),
    (b'{"s": "a\\x"}', "not JSON"),
    (b'{"s": "a"', "not JSON"),
    (b'{"i": 01}', "not JSON"),
    (b'{"i": -}', "not JSON"),
    (b'{"f": 1.}', "not JSON"),
    (b'{"u": ' + b"[" * 200 + b"]" * 200 + b"}", "nested too deeply"),
    (b'{"u": ' + b"1" * 5000 + b"}", "a number longer than Python reads"),
    (b'{"u": 1, "u": [}', "not JSON"),
    (b'{"s": "a",}', "not JSON"),
]


@pytest.mark.parametrize("payload, why", DECLINED, ids=[w + ": " + repr(p[:20]) for p, w in DECLINED])
def test_what_python_reads_otherwise_is_declined(payload, why):
    decoder = parser(EVENT)
    good = b'{"s": "ok", "i": 1}'
    assert decoder.decode_arrow([good, payload]) is None
    assert decoder.last_declined[0] == 1 and decoder.last_declined[2] == why
    for validate in (True, False):
        check_same(JsonSchemaCodec(EVENT, validate=validate), [good, payload])


def test_the_integer_minus_zero_for_a_number_is_declined():
    """Regression: the parser wrote 0.0 for `-0` (json.loads's integer 0 as
    float(int)), while Arrow's JSON reader, which builds the Python way's
    column for a tree without maps or null positions, reads -0.0; the two
    compare equal under Array.equals(). Declined now, so decode_arrow is
    whatever the Python way gives."""
    event_arrow = {"type": "object", "properties": {k: v for k, v in EVENT["properties"].items() if k != "m"}}
    payloads = [b'{"f": -0}', b'{"f": 1.5}']
    for schema, want in ((event_arrow, "-0.0"), (EVENT, "0.0")):  # Arrow's JSON reader, the converter
        decoder = parser(schema)
        assert decoder.decode_arrow(payloads) is None
        assert decoder.last_declined == (0, 6, "-0 where the schema maps to float64")
        for validate in (True, False):
            got = JsonSchemaCodec(schema, validate=validate).decode_arrow(payloads)
            assert repr(got.field("f").to_pylist()) == "[{0}, 1.5]".format(want)


def test_plain_data_with_every_kind_is_taken_and_equals_the_python_way():
    rnd = random.Random(3)
    payloads = []
    for n in range(300):
        value = {"s": "é\"\\/\u2028😀" * (n % 3), "i": rnd.randrange(-(2**63), 2**63), "f": rnd.uniform(-1e6, 1e6),
                 "b": n % 2 == 0, "e": "AB"[n % 2], "o": {"x": n, "y": [1, {"z": None}]},
                 "l": [n, -n, 0], "m": {str(k): "v" * k for k in range(n % 4)}}
        if n % 5 == 0:
            value = {k: None for k in value}
        if n % 7 == 0:
            del value["s"]
        payloads.append(json.dumps(value, ensure_ascii=n % 2 == 0).encode())
    decoder = parser(EVENT)
    array = decoder.decode_arrow(payloads)
    assert array is not None, decoder.last_declined
    assert array.equals(JsonSchemaCodec(EVENT, validate=False).reference_arrow(payloads))
    assert array.null_count == 0 and array.field("s").null_count == 60 + 43 - 9  # n % 5 or n % 7 (both: 9)


DOUBLES = ["0.1000000000000000055511151231257827021181583404541015625", "2.2250738585072011e-308",
           "2.2250738585072012e-308", "4.9e-324", "1.7976931348623157e308", "-0.0", "0.0", "1E+2",
           "123456789012345678901234567890e-10", "9007199254740993", "-9007199254740993", "1e-400",
           "0." + "3" * 700, "179769313486231580793728971405303415079934132710037826936173778980444968292764750946"
           "649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845"
           "81705e-100"]


def float_payloads():
    rnd = random.Random(11)
    texts = list(DOUBLES)
    for _ in range(500):
        bits = rnd.getrandbits(64)
        d = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if d == d and abs(d) != float("inf"):
            texts.append(repr(d))
    texts += [str(rnd.randrange(-(2**63), 2**63)) for _ in range(200)]
    texts += [str(2**53 + k) for k in range(-3, 4)] + [str(-(2**63)), str(2**63 - 1)]
    return [b'{"f": ' + t.encode() + b"}" for t in texts], texts


def test_numbers_are_read_as_python_reads_them():
    payloads, texts = float_payloads()
    decoder = parser(EVENT)
    array = decoder.decode_arrow(payloads)
    assert array is not None, decoder.last_declined
    got = array.field("f").to_pylist()
    want = [float(json.loads(t)) for t in texts]
    assert [struct.pack("<d", g) for g in got] == [struct.pack("<d", w) for w in want]


def comma_locale(directory, monkeypatch):
    """de_DE.UTF-8 (a decimal comma), compiled into `directory` with localedef
    from glibc's locale sources and found through LOCPATH; None when the
    machine cannot make it."""
    if shutil.which("localedef") is None or not os.path.exists("/usr/share/i18n/locales/de_DE"):
        return None
    out = os.path.join(directory, "de_DE.UTF-8")
    done = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", out], capture_output=True, check=False)
    if not os.path.isdir(out):
        return None
    assert done.returncode in (0, 1), done.stderr  # 1: warnings only
    monkeypatch.setenv("LOCPATH", directory)
    return "de_DE.UTF-8"


def test_numbers_do_not_follow_the_process_locale(tmp_path, monkeypatch):
    name = comma_locale(str(tmp_path), monkeypatch)
    if name is None:
        pytest.skip("localedef or glibc's de_DE locale source is missing")
    payloads, texts = float_payloads()
    old = locale.setlocale(locale.LC_NUMERIC)
    locale.setlocale(locale.LC_NUMERIC, name)
    try:
        assert locale.localeconv()["decimal_point"] == ","  # strtod would now stop at the "."
        array = parser(EVENT).decode_arrow(payloads)
    finally:
        locale.setlocale(locale.LC_NUMERIC, old)
    assert array is not None
    assert array.field("f").to_pylist() == [float(json.loads(t)) for t in texts]


def test_a_plan_that_does_not_agree_with_itself_is_refused():
    plan = compile_plan(JsonSchemaCodec(EVENT, validate=False).node)
    assert plan is not None
    steps = list(plan.steps)
    steps[1] = 5  # the root step on another column
    with pytest.raises(ValueError):
        JsonArrowDecoder(plan.columns, steps, plan.strings, plan.root_step)
    steps = list(plan.steps)
    steps[0] = 7  # a struct step called a list
    with pytest.raises(ValueError):
        JsonArrowDecoder(plan.columns, steps, plan.strings, plan.root_step)
    with pytest.raises(ValueError):
        JsonArrowDecoder(plan.columns, plan.steps, plan.strings, len(plan.steps))


def test_json_text_positions_have_no_plan_and_take_the_python_way():
    schema = {"type": "object", "properties": {"free": {}, "n": {"type": "integer"}}}
    codec = JsonSchemaCodec(schema, validate=False)
    assert compile_plan(codec.node) is None
    payloads = [b'{"free": {"a": [1, 2]}, "n": 3}', b'{"free": "x"}']
    assert check_same(codec, payloads)[0] == "value"


# -- validating plans: the parser checks the schema's keywords itself ---------

def constrained_leaves():
    return st.one_of(
        st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
                         {"type": "null"}, {"type": ["integer", "null"]}, {"type": ["null", "string"]},
                         {"type": "string", "format": "date-time"}, {"type": "string", "title": "t"}]),
        st.tuples(st.integers(0, 3), st.integers(-1, 2)).map(
            lambda b: {"type": "string", "minLength": b[0], **({"maxLength": b[0] + b[1]} if b[1] >= 0 else {})}),
        st.tuples(SYMBOLS, st.booleans(), st.sampled_from([None, "string", ["string", "null"]])).map(
            lambda e: {"enum": e[0] + ([None] if e[1] else []), **({"type": e[2]} if e[2] else {})}),
    )


def constrained_schemas():
    def object_of(props, required_bits, closed):
        names = sorted(props)
        schema = {"type": "object", "properties": props,
                  "required": [n for i, n in enumerate(names) if required_bits >> i & 1]}
        if closed is not None:
            schema["additionalProperties"] = closed
        return schema

    return st.recursive(constrained_leaves(), lambda inner: st.one_of(
        st.builds(object_of, st.dictionaries(NAMES, inner, min_size=1, max_size=3), st.integers(0, 7),
                  st.sampled_from([None, True, False])),
        st.builds(lambda s, lo, more: {"type": "array", "items": s, "minItems": lo,
                                       **({"maxItems": lo + more} if more >= 0 else {})},
                  inner, st.integers(0, 2), st.integers(-1, 2)),
        inner.map(lambda s: {"type": "object", "additionalProperties": s}),
        inner.map(lambda s: {"anyOf": [s, {"type": "null"}]}),
        inner.map(lambda s: {"oneOf": [s, {"type": "null"}]}),
        inner.map(lambda s: {"type": ["array", "null"], "items": s}),
    ), max_leaves=6)


def near(draw, schema):
    """A value of the schema's kinds that may break its other keywords (a
    required property left out, one not named, a length out of bounds, a
    null where none is allowed)."""
    if draw(st.integers(0, 9)) == 0:
        return None
    if "anyOf" in schema or "oneOf" in schema:
        return near(draw, (schema.get("anyOf") or schema["oneOf"])[0])
    if "enum" in schema:
        return draw(st.sampled_from([v for v in schema["enum"]] + ["zz"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = [k for k in kind if k != "null"][0]
    if kind == "string":
        return draw(st.text(st.characters(blacklist_categories=["Cs"]), max_size=5))
    if kind == "integer":
        return draw(st.integers(-5, 5))
    if kind == "number":
        return draw(st.one_of(st.floats(-9, 9), st.integers(-5, 5)))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        return [near(draw, schema["items"]) for _ in range(draw(st.integers(0, 4)))]
    if "properties" in schema:
        names = draw(st.lists(st.sampled_from(sorted(schema["properties"])), unique=True))
        value = {n: near(draw, schema["properties"][n]) for n in names}
        if draw(st.integers(0, 3)) == 0:
            value["other"] = 1
        return value
    return {k: near(draw, schema["additionalProperties"]) for k in draw(st.lists(TEXT, max_size=3, unique=True))}


@st.composite
def constrained_case(draw):
    schema = draw(constrained_schemas())
    return schema, [orjson.dumps(near(draw, schema)) for _ in range(draw(st.integers(1, 4)))]


@settings(max_examples=examples(300, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(constrained_case())
def test_a_validating_plan_accepts_only_what_the_validator_accepts(case):
    from jsonschema.validators import validator_for

    schema, payloads = case
    codec = JsonSchemaCodec(schema, validate=True)
    check_same(codec, payloads)
    if compile_plan(codec.node) is None:
        return  # a JSON-text position (e.g. anyOf [null, null]): the Python way, checked above
    plan = compile_plan(codec.node, validate=True)
    assert plan is not None  # every keyword here is one the parser checks
    decoder = JsonArrowDecoder(plan.columns, plan.steps, plan.strings, plan.root_step)
    array = decoder.decode_arrow(payloads)
    validator = validator_for(schema)(schema)
    each_valid = [validator.is_valid(json.loads(p)) for p in payloads]
    valid = all(each_valid)
    # the values path (decode_many) skips the validator where a payload's verdict is 1
    verdicts = decoder.verdicts(payloads)
    assert len(verdicts) == len(payloads)
    for p, verdict, ok in zip(payloads, verdicts, each_valid):
        assert verdict in (0, 1)
        assert verdict == (decoder.decode_arrow([p]) is not None), (schema, p)
        assert ok or not verdict, (schema, p)
    assert (array is not None) == all(verdicts)
    if array is not None:
        assert valid, (schema, payloads)
    elif valid:
        # declined values the validator accepts: only for what the plain parser declines too
        plain = compile_plan(codec.node)
        assert plain is not None
        assert JsonArrowDecoder(plain.columns, plain.steps, plain.strings, plain.root_step).decode_arrow(
            payloads) is None, (schema, payloads, decoder.last_declined)


@pytest.mark.parametrize("schema, why", [
    ({"type": "integer", "minimum": 0}, "a number bound"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
     "values of other properties under a schema"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "a required name not listed"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}, "minProperties"),
    ({"type": "string", "pattern": "a"}, "pattern"),
    ({"enum": ["a"], "type": "integer"}, "an enum typed otherwise"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}], "maxLength": 2}, "a keyword beside anyOf"),
])
def test_keywords_the_parser_does_not_check_leave_validation_to_python(schema, why):
    codec = JsonSchemaCodec(schema, validate=True)
    assert compile_plan(codec.node, validate=True) is None, why
    payloads = [b'"ab"', b'{"a": "x"}', b"3"]
    for payload in payloads:
        check_same(codec, [payload])


def test_the_benchmark_event_schema_is_validated_by_the_parser():
    schema = {"type": "object", "properties": {
        "id": {"type": "string", "minLength": 1}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {
            "type": "string"}, "maxItems": 2}, "kind": {"enum": ["A", "B"]}, "ref": {"type": ["string", "null"]}},
        "required": ["id", "n"], "additionalProperties": False}
    codec = JsonSchemaCodec(schema, validate=True)
    good = b'{"id": "x", "n": 1, "tags": ["a"], "kind": "A", "ref": null}'
    assert codec.decode_arrow([good]).to_pylist()[0]["n"] == 1
    decoder = codec._native_parser(validating=True)
    assert decoder is not None
    for bad, why in [(b'{"n": 1}', "a required property is missing"),
                     (b'{"id": "", "n": 1}', "a string length the schema does not allow"),
                     (b'{"id": "x", "n": 1, "tags": ["a", "b", "c"]}', "an item count the schema does not allow"),
                     (b'{"id": "x", "n": 1, "x": 0}', "a property the schema does not allow"),
                     (b'{"id": "x", "n": null}', "null where the schema wants a value"),
                     (b'{"id": "x", "n": 1, "kind": null}', "null where the schema wants a value")]:
        assert decoder.decode_arrow([bad]) is None and decoder.last_declined[2] == why, bad
        check_same(codec, [bad])


def test_verdicts_payload_by_payload():
    # fkc_ja_verdicts rewinds its columns after each payload, a declined one
    # half written: declines between payloads that grow the columns (strings
    # of up to 700 code points), the verdicts one per payload
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 5000}, "n": {"type": "integer"}},
              "required": ["n"]}
    codec = JsonSchemaCodec(schema)
    plan = compile_plan(codec.node, validate=True)
    decoder = JsonArrowDecoder(plan.columns, plan.steps, plan.strings, plan.root_step)
    declined = {0, 1022, 1023, 1024, 2047, 2048, 2999}
    payloads = []
    for i in range(3000):
        if i in declined:
            payloads.append([b'{"s": "x"}', b'{"n": 1.5}', b'{"n": 1', b'{"n": 1, "n": 2}'][i % 4])
        else:
            payloads.append(orjson.dumps({"s": "é" * (i % 700), "n": i}))
    verdicts = decoder.verdicts(payloads)
    assert [i for i, v in enumerate(verdicts) if not v] == sorted(declined)
    assert set(verdicts) == {0, 1}
    assert decoder.verdicts([]) == b""
    assert decoder.verdicts([memoryview(b'x{"n": 2}')[1:]]) == b"\x01"
