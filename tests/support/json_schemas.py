"""Hypothesis strategies for JSON Schema tests: schemas of the kinds the
Arrow mapping covers (json_schema.arrow_node), and values valid under them.
Shared by tests/unit/test_json_schema_codec.py and
tests/unit/test_json_arrow_parser.py."""
from hypothesis import strategies as st

NAMES = st.sampled_from(["a", "b", "id", "name", "x y", "é", "k\"q"])
SYMBOLS = st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4, unique=True)
INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)
ANY_JSON = st.recursive(st.none() | st.booleans() | INT64 | FLOATS | TEXT,
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3), max_leaves=6)


def leaf_schemas(free_form=True):
    """Scalars, nullable scalars and enums; `free_form`: also schemas that map
    to JSON text ({} and a string with a format)."""
    fixed = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
             {"type": "null"}, {"type": ["integer", "null"]}, {"type": ["null", "string"]}]
    if free_form:
        fixed += [{"type": "string", "format": "date-time"}, {}]
    return st.one_of(st.sampled_from(fixed), SYMBOLS.map(lambda s: {"enum": s}))


def schemas(leaves):
    """Objects, arrays, maps and nullable forms over `leaves`."""
    return st.recursive(leaves, lambda inner: st.one_of(
        st.dictionaries(NAMES, inner, min_size=1, max_size=4).map(lambda p: {"type": "object", "properties": p}),
        inner.map(lambda s: {"type": "array", "items": s}),
        inner.map(lambda s: {"type": "object", "additionalProperties": s}),
        inner.map(lambda s: {"anyOf": [s, {"type": "null"}]}),
    ), max_leaves=8)


def value_of(draw, schema, unknown=False):
    """A value valid under `schema` (the grammar above); `unknown`: objects
    with properties may also hold one the schema does not name."""
    if "anyOf" in schema:
        return None if draw(st.booleans()) else value_of(draw, schema["anyOf"][0], unknown)
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
        return [value_of(draw, schema["items"], unknown) for _ in range(draw(st.integers(0, 3)))]
    if kind == "object" and "properties" in schema:
        names = draw(st.lists(st.sampled_from(sorted(schema["properties"])), unique=True))
        value = {n: value_of(draw, schema["properties"][n], unknown) for n in names}
        if unknown and draw(st.booleans()):
            value["unknown"] = draw(ANY_JSON)  # a property the schema does not name
        return value
    if kind == "object":
        keys = draw(st.lists(TEXT, max_size=3, unique=True))
        return {k: value_of(draw, schema["additionalProperties"], unknown) for k in keys}
    # {}: anything JSON
    return draw(st.recursive(st.none() | st.booleans() | INT64 | FLOATS | TEXT,
                             lambda c: st.lists(c, max_size=2) | st.dictionaries(TEXT, c, max_size=2), max_leaves=4))
