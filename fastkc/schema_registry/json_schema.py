"""JSON Schema payloads: parsed values (confluent-kafka's JSONDeserializer's,
before from_dict) and typed Arrow columns.

    codec = JsonSchemaCodec(schema_str, references={"other.json": other_schema}, validate=True)
    codec.decode_many(payloads)      # [json value, ...] (the Confluent frame already cut)
    codec.arrow_type                 # the Arrow type the schema maps to
    codec.decode_arrow(payloads)     # pyarrow.Array of that type, one row a payload

Built once per (schema, references); the jsonschema validator and the Arrow
plan are compiled in the constructor, never per value.

Values. A payload must be one JSON text in UTF-8 (RFC 8259 §8.1; confluent's
serializer writes UTF-8). Its value is `json.loads(payload.decode("utf-8"))`,
computed with orjson (C, several times faster). orjson and json.loads agree on
every text both accept (values, float rounding, duplicate keys: the last one
wins at the first one's place); where they differ this module gives
json.loads's value, which is what confluent-kafka returns without orjson:

- integers outside [-2**63, 2**64): orjson 3.8 returns a float (a silent
  precision loss, and what confluent-kafka returns with orjson installed);
  a payload holding a run of 19 or more digits is parsed by json.loads.
- NaN, Infinity, -Infinity, numbers past the double range (json.loads: inf),
  escaped lone surrogates ("\\ud800"): orjson refuses them, so such a
  payload is parsed by json.loads.
- deep nesting: orjson 3.8 takes 10**5 nested arrays, json.loads raises
  RecursionError (about 1000 levels, with the interpreter's stack): a
  payload with more than 1024 brackets is parsed by json.loads, and its
  RecursionError is a JsonDecodeError.

Refused (JsonDecodeError) where json.loads on the bytes would accept: a UTF-8
BOM, UTF-16/32 text, UTF-8-encoded surrogates (json.loads decodes bytes with
"surrogatepass"). confluent-kafka with orjson refuses them too.

Validation (validate=True) is confluent-kafka 2.16's: jsonschema's validator
class for the schema's "$schema" (Draft 2020-12 when absent), the schema
checked against its metaschema once, "format" not asserted, references
registered by name as Draft 7 resources; a failure raises
JsonValidationError with jsonschema's message. Where its decisions are
jsonschema's (json_fast.py says for which schemas), a fastjsonschema function
compiled from the schema decides first (about 20x faster on a 15-field
event); a value it rejects is validated by jsonschema, whose message, path
and decision are the result. Unlike confluent-kafka, a
`$ref` to a URI that is not a given reference is refused when the schema is
compiled, never fetched.

The Arrow mapping is `arrow_node`'s table (docs/guide/schema-registry-json.md).
"""
from __future__ import annotations

import gc
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import fastjsonschema
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from jsonschema import ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

from fastkc import _backend
from fastkc.schema_registry.errors import (
    JsonArrowTypeError,
    JsonDecodeError,
    JsonSchemaError,
    JsonValidationError,
)
from fastkc.schema_registry.json_arrow import BOOL, ENUM, FLOAT, INT, LIST, MAP, NULL, STRING, STRUCT, TEXT
from fastkc.schema_registry.json_arrow import compile_plan as compile_arrow_plan
from fastkc.schema_registry.json_fast import fast_validator

__all__ = ["JsonSchemaCodec", "arrow_node", "ArrowNode"]

Payload = bytes | bytearray | memoryview

# orjson turns an integer of 20 digits past 2**64 - 1 (or 19 past -2**63) into
# a float; any run of 19 digits (also inside a string or a fraction, where
# json.loads gives the same value anyway) sends the payload to json.loads.
# Found with bytes.translate (digits -> "0", the rest -> " ") and a substring
# search, both C loops: a regex took longer than orjson's parse (measured).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * 19
# orjson 3.8 parses arrays nested past any depth (10**5 levels) where
# json.loads raises RecursionError; a payload with more brackets than
# orjson's object-depth limit is given to json.loads, so the two agree (a
# text that deep needs at least twice as many bytes).
_ORJSON_DEPTH = 1024
_DEEP_BYTES = 2 * _ORJSON_DEPTH
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Arrow node kinds (ArrowNode.kind): json_arrow.py names them

_SCALAR_TYPES = {NULL: pa.null(), BOOL: pa.bool_(), INT: pa.int64(), FLOAT: pa.float64(), STRING: pa.string(),
                 TEXT: pa.string()}
_JSON_SCALARS = {"null": NULL, "boolean": BOOL, "integer": INT, "number": FLOAT, "string": STRING}
# keywords that make a schema more than its "type" says: such a schema maps to
# the JSON-text fallback unless it is the one nullable form (below)
_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if")


@dataclass(frozen=True)
class Checks:
    """What validating the value at one position asks beyond its Arrow kind,
    for a position whose keywords the C parser checks exactly (json_arrow.py
    writes them into a validating plan): a null allowed or not, the
    properties an object must have and whether it may have others, and the
    bounds of a string's code points or a list's items (max -1: none)."""

    null_ok: bool
    required: tuple[str, ...] = ()
    closed: bool = False
    min_len: int = 0
    max_len: int = -1


@dataclass(frozen=True)
class ArrowNode:
    """One position of the Arrow tree: its kind, and its children (STRUCT:
    the properties; LIST: the items; MAP: the values) or enum symbols."""

    kind: str
    children: tuple[tuple[str, ArrowNode], ...] = ()
    symbols: tuple[str, ...] = ()
    arrow_type: Any = field(default=None, compare=False)
    # the type read_json and pa.array build: an enum is read as utf8, then
    # turned into dictionary indices over the symbols
    build_type: Any = field(default=None, compare=False)
    has_enum: bool = False
    # a position Arrow's JSON reader cannot build: json-text (it has no
    # "sub-value as text"), null (its list<null> comes out malformed, measured
    # with pyarrow 26)
    needs_values: bool = False
    # None: the position's keywords are not all ones the C parser checks
    # exactly (a validating plan then has to leave validation to Python)
    checks: Checks | None = field(default=None, compare=False)


def _make(kind: str, children: tuple[tuple[str, ArrowNode], ...] = (), symbols: tuple[str, ...] = ()) -> ArrowNode:
    if kind in _SCALAR_TYPES:
        t = b = _SCALAR_TYPES[kind]
    elif kind == ENUM:
        t, b = pa.dictionary(pa.int32(), pa.string()), pa.string()
    elif kind == STRUCT:
        # every field nullable: a JSON object may leave out any property
        # ("required" is validation's business), and a null is kept as null
        t = pa.struct([pa.field(n, c.arrow_type) for n, c in children])
        b = pa.struct([pa.field(n, c.build_type) for n, c in children])
    elif kind == LIST:
        t, b = pa.list_(children[0][1].arrow_type), pa.list_(children[0][1].build_type)
    else:
        t, b = pa.map_(pa.string(), children[0][1].arrow_type), pa.map_(pa.string(), children[0][1].build_type)
    return ArrowNode(kind, children, symbols, t, b,
                     kind == ENUM or any(c.has_enum for _, c in children),
                     kind in (TEXT, NULL) or any(c.needs_values for _, c in children))


class _Resolver:
    """Finds what a `$ref` points at: a JSON pointer into the root schema
    ("#/$defs/X", "#/definitions/X"), a reference by its registered name, or
    a pointer into one ("other.json#/$defs/Y")."""

    def __init__(self, root: Any, references: Mapping[str, Any]) -> None:
        self.root = root
        self.references = references

    def resolve(self, ref: str) -> tuple[str, Any]:
        """(a key naming the target, the target schema)."""
        name, _, pointer = ref.partition("#")
        if name:
            if name not in self.references:
                raise JsonSchemaError("JSON schema: $ref {0!r} names no given reference".format(ref))
            doc = self.references[name]
        else:
            doc = self.root
        target = doc
        for part in pointer.split("/")[1:] if pointer else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise JsonSchemaError("JSON schema: $ref {0!r} points at nothing".format(ref))
        return name + "#" + pointer, target


def arrow_node(schema: Any, references: Mapping[str, Any] | None = None) -> ArrowNode:
    """The Arrow tree of a (loaded) JSON schema. The mapping:

        {"type": "object", "properties": {...}}   -> struct (every field nullable, declared order;
                                                     other properties dropped)
        {"type": "object", "additionalProperties": S} (no properties) -> map<utf8, S>
        {"type": "array", "items": S}               -> list<S>  (no "items": list<json-text>)
        "string" -> utf8 (any "format", date-time, date and uuid included: the text as written)
        "integer" -> int64          "number" -> float64          "boolean" -> bool
        "null" -> null
        ["T", "null"], anyOf/oneOf [S, {"type": "null"}] -> S (null kept as null)
        {"enum": [strings (and null)]} -> dictionary<int32, utf8> over the symbols, in order
        {"$ref": ...} -> its target (local pointer or a reference's name); a $ref back into
                          a schema being mapped (recursion) -> json-text
        anything else (several types, other unions, allOf/not/if, tuples, a free-form
        object, true/{}) -> json-text: utf8 holding the sub-value's JSON text
                          (json.dumps with separators (",", ":"), ensure_ascii=False)
    """
    resolver = _Resolver(schema, references or {})
    return _node(schema, resolver, ("#",))  # the root is being mapped: "$ref": "#" recurses


def _nullable_branch(branches: Any) -> Any:
    """The one non-null schema of an anyOf/oneOf list that is that schema and
    {"type": "null"}; None for any other list."""
    if not isinstance(branches, list):
        return None
    others = [b for b in branches if not (isinstance(b, dict) and b == {"type": "null"})]
    if len(others) == 1 and len(branches) == 2:
        return others[0]
    return None


def _node(schema: Any, resolver: _Resolver, stack: tuple[str, ...]) -> ArrowNode:
    if len(stack) > 64:
        return _make(TEXT)
    if not isinstance(schema, dict):
        return _make(TEXT)  # true / false
    ref = schema.get("$ref")
    if isinstance(ref, str):
        key, target = resolver.resolve(ref)
        if key in stack:  # recursion: an Arrow type cannot contain itself
            return _make(TEXT)
        return _node(target, resolver, stack + (key,))
    present = [k for k in _COMBINATORS if k in schema]
    if present:
        branch = _nullable_branch(schema.get(present[0])) if present[0] in ("anyOf", "oneOf") else None
        if len(present) == 1 and branch is not None and "type" not in schema:
            inner = _node(branch, resolver, stack)
            return replace(inner, checks=_either_null(schema, present[0], inner.checks))
        return _make(TEXT)
    if "enum" in schema:
        values = schema["enum"]
        if isinstance(values, list) and values and all(isinstance(v, str) or v is None for v in values):
            symbols = tuple(dict.fromkeys(v for v in values if v is not None))
            if symbols:
                return replace(_make(ENUM, symbols=symbols), checks=_enum_checks(schema, None in values))
        return _make(TEXT)
    kind = schema.get("type")
    nullable = False
    if isinstance(kind, list):
        non_null = [k for k in kind if k != "null"]
        if not non_null and kind:
            return replace(_make(NULL), checks=_checks(schema, True, ()))
        if len(non_null) != 1:
            return _make(TEXT)
        nullable = len(non_null) != len(kind)
        kind = non_null[0]
    if kind in _JSON_SCALARS:
        bounds = ("minLength", "maxLength") if kind == "string" else ()
        return replace(_make(_JSON_SCALARS[kind]), checks=_checks(schema, nullable or kind == "null", bounds))
    if kind == "array":
        items = schema.get("items", True)
        if "prefixItems" in schema or not isinstance(items, (dict, bool)):
            return _make(TEXT)  # a tuple: positions of different types
        node = _make(LIST, (("item", _node(items, resolver, stack)),))
        return replace(node, checks=_checks(schema, nullable, ("minItems", "maxItems"), ("items",)))
    if kind == "object":
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            node = _make(STRUCT, tuple((str(n), _node(s, resolver, stack)) for n, s in props.items()))
            return replace(node, checks=_struct_checks(schema, nullable, props))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and "patternProperties" not in schema:
            node = _make(MAP, (("value", _node(extra, resolver, stack)),))
            return replace(node, checks=_checks(schema, nullable, (), ("additionalProperties",)))
    return _make(TEXT)


# Keywords that assert nothing about a value (annotations, the draft, holders
# of subschemas reached through $ref), and the bounds the C parser checks.
_ANNOTATIONS = frozenset(("title", "description", "default", "examples", "$comment", "readOnly", "writeOnly",
                          "deprecated", "format", "$schema", "definitions", "$defs"))
_BOUNDS = {"minLength": "min_len", "maxLength": "max_len", "minItems": "min_len", "maxItems": "max_len"}


def _checks(schema: dict[str, Any], null_ok: bool, bounds: tuple[str, ...],
            others: tuple[str, ...] = ()) -> Checks | None:
    """The position's Checks when its keywords are "type", annotations,
    `bounds` (non-negative integers) and `others` (its subschemas', checked
    at theirs); None for any other keyword. ("format" asserts nothing:
    confluent-kafka's validator, like jsonschema's default, does not check it.)"""
    found: dict[str, int] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in others or key == "type":
            continue
        if key not in bounds or type(value) is not int or value < 0:
            return None
        found[_BOUNDS[key]] = value
    checks = Checks(null_ok, **found)  # type: ignore[arg-type]
    if checks.max_len >= 0 and checks.max_len < checks.min_len:
        return None  # no value fits: Python's validator says so
    return checks


def _struct_checks(schema: dict[str, Any], nullable: bool, props: dict[str, Any]) -> Checks | None:
    """An object with properties: "required" (names of its properties) and
    "additionalProperties" false or true; a schema there (values the parser
    skips unchecked) leaves validation to Python."""
    extra = schema.get("additionalProperties", True)
    required = schema.get("required", [])
    if extra not in (True, False) or not isinstance(required, list) or not all(
            isinstance(name, str) and name in props for name in required):
        return None
    base = _checks(schema, nullable, (), ("properties", "required", "additionalProperties"))
    return None if base is None else replace(base, required=tuple(required), closed=extra is False)


def _enum_checks(schema: dict[str, Any], null_listed: bool) -> Checks | None:
    """An enum of strings (and null): a null passes when the enum lists it and
    "type", if there, allows it."""
    kind = schema.get("type", ["string", "null"])
    kinds = kind if isinstance(kind, list) else [kind]
    if not kinds or not set(kinds) <= {"string", "null"} or "string" not in kinds:
        return None
    return _checks(schema, null_listed and "null" in kinds, (), ("enum",))


def _either_null(schema: dict[str, Any], combinator: str, inner: Checks | None) -> Checks | None:
    """anyOf/oneOf [S, {"type": "null"}]: a null passes anyOf; oneOf only when
    S refuses it (else both branches match); other values as S says."""
    if inner is None or any(k not in _ANNOTATIONS and k != combinator for k in schema):
        return None
    return replace(inner, null_ok=True if combinator == "anyOf" else not inner.null_ok)


def _has_digit_run(data: Payload) -> bool:
    return _DIGIT_RUN in bytes(data).translate(_DIGITS_AS_ZERO)


def _brackets(p: Payload) -> int:
    data = p if isinstance(p, (bytes, bytearray)) else bytes(p)
    return data.count(b"[") + data.count(b"{")


class _Mismatch(Exception):
    """A value that does not fit its Arrow position (internal: becomes JsonArrowTypeError)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


def _describe(value: Any) -> str:
    name = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", float: "a number",
            int: "an integer"}.get(type(value), type(value).__name__)
    return "{0} ({1})".format(name, json.dumps(value, ensure_ascii=False)[:40])


def _utf8(text: str, path: str) -> None:
    """Refuses a str Arrow's utf8 cannot hold (json.loads keeps an escaped
    lone surrogate, "\\ud800", as it is)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise _Mismatch(path, "a string with a lone surrogate cannot be UTF-8") from None


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _converter(node: ArrowNode) -> Callable[[Any, str], Any]:
    """A function giving, for a parsed JSON value, what pa.array takes for
    `node.build_type` (enums stay strings): the oracle of the Arrow path.
    Strict where pa.array is lax (it would truncate 1.5 into an int64, read
    true as 1.0 and "ab" as the list ["a", "b"])."""
    kind = node.kind

    def fail(v: Any, path: str) -> Any:
        raise _Mismatch(path, "{0} where the schema maps to {1}".format(_describe(v), node.arrow_type))

    if kind == NULL:
        def conv(v: Any, path: str) -> Any:
            return None if v is None else fail(v, path)
    elif kind == BOOL:
        def conv(v: Any, path: str) -> Any:
            return v if v is None or v is True or v is False else fail(v, path)
    elif kind == INT:
        def conv(v: Any, path: str) -> Any:
            t = type(v)
            if t is int:
                if _INT64_MIN <= v <= _INT64_MAX:
                    return v
                raise _Mismatch(path, "the integer {0} is outside int64".format(v))
            if t is float and v.is_integer() and -(2.0**63) <= v < 2.0**63:
                return int(v)  # JSON Schema's integer includes 1.0
            return None if v is None else fail(v, path)
    elif kind == FLOAT:
        def conv(v: Any, path: str) -> Any:
            t = type(v)
            if t is float:
                return v
            if t is int:
                try:
                    return float(v)
                except OverflowError:
                    raise _Mismatch(path, "the integer {0} is outside float64".format(v)) from None
            return None if v is None else fail(v, path)
    elif kind in (STRING, ENUM):
        symbols = frozenset(node.symbols)

        def conv(v: Any, path: str) -> Any:
            if type(v) is str:
                if kind == ENUM and v not in symbols:
                    raise _Mismatch(path, "{0} is not one of the enum's symbols".format(_describe(v)))
                if not v.isascii():
                    _utf8(v, path)
                return v
            return None if v is None else fail(v, path)
    elif kind == TEXT:
        def conv(v: Any, path: str) -> Any:
            if v is None:
                return None
            try:
                return _json_text(v).encode()
            except UnicodeEncodeError:
                raise _Mismatch(path, "a string with a lone surrogate cannot be UTF-8") from None
    elif kind == STRUCT:
        fields = [(name, _converter(child)) for name, child in node.children]

        def conv(v: Any, path: str) -> Any:
            if type(v) is dict:
                return {name: c(v.get(name), path + "." + name) for name, c in fields}
            return None if v is None else fail(v, path)
    elif kind == LIST:
        item = _converter(node.children[0][1])

        def conv(v: Any, path: str) -> Any:
            if type(v) is list:
                return [item(x, "{0}[{1}]".format(path, i)) for i, x in enumerate(v)]
            return None if v is None else fail(v, path)
    else:
        value = _converter(node.children[0][1])

        def conv(v: Any, path: str) -> Any:
            if type(v) is dict:
                for k in v:
                    if not k.isascii():
                        _utf8(k, path)
                return [(k, value(x, path + "." + k)) for k, x in v.items()]
            return None if v is None else fail(v, path)
    return conv


def _to_dictionaries(array: Any, node: ArrowNode) -> Any:
    """`array` (of node.build_type) with each enum position turned from utf8
    into dictionary<int32, utf8> over the enum's symbols. Raises _Mismatch
    (without a payload index) when a string is not a symbol."""
    if not node.has_enum:
        return array
    if node.kind == ENUM:
        symbols = pa.array(node.symbols, pa.string())
        indices = pc.index_in(array, value_set=symbols)
        if indices.null_count != array.null_count:
            raise _Mismatch("$", "a string that is not one of the enum's symbols")
        return pa.DictionaryArray.from_arrays(indices.cast(pa.int32()), symbols)
    mask = array.is_null() if array.null_count else None
    if node.kind == STRUCT:
        # flatten(): the children with the struct's nulls applied (a null
        # struct's child slots hold whatever the builder put there)
        children = [_to_dictionaries(a, child) for a, (_, child) in zip(array.flatten(), node.children)]
        return pa.StructArray.from_arrays(children, fields=list(node.arrow_type), mask=mask)
    if node.kind == LIST:
        values = _to_dictionaries(array.values, node.children[0][1])
        return pa.ListArray.from_arrays(array.offsets, values, type=node.arrow_type, mask=mask)
    # MAP: keys stay utf8, the values may hold enums
    items = _to_dictionaries(array.items, node.children[0][1])
    return pa.MapArray.from_arrays(array.offsets, array.keys, items, type=node.arrow_type, mask=mask)


def _flatten(array: Any) -> Any:
    """A pa.Array from what pa.array or a table column gives (a ChunkedArray
    when the data is large): one contiguous array."""
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


class JsonSchemaCodec:
    """Parses (and validates) JSON payloads of one schema; see the module's
    docstring for the values, the validation and the Arrow mapping.

    Args:
      schema: the JSON schema, as text or loaded (a dict, or true/false)
      references: the schemas its `$ref`s name, by reference name (the
        registry's reference "name"), text or loaded
      validate: validate every value against the schema (confluent-kafka's
        JSONDeserializer's "validate", on by default)

    Raises JsonSchemaError when the schema or a reference is not usable.
    """

    def __init__(self, schema: Mapping[str, Any] | bool | str, references: Mapping[str, Any] | None = None,
                 validate: bool = True) -> None:
        self.schema: Any = self._load(schema, "the schema")
        self.references: dict[str, Any] = {name: self._load(s, "reference {0!r}".format(name))
                                           for name, s in (references or {}).items()}
        self.validate = validate
        self._validator: Any = None
        # compiled Python code deciding accept/reject, for the schemas where
        # its decisions are jsonschema's (json_fast.py); None: jsonschema alone
        self._fast: Callable[[Any], Any] | None = None
        # values the fast path rejected and jsonschema accepted (accepted:
        # jsonschema is the reference); the tests require 0
        self.fast_disagreements = 0
        if validate:
            cls = validator_for(self.schema)
            try:
                cls.check_schema(self.schema)
            except SchemaError as exc:
                raise JsonSchemaError("JSON schema: not a valid schema: {0}".format(exc.message)) from None
            # no `retrieve`: a $ref to a URI that is not a given reference is
            # an error, not a network fetch
            registry: Registry[Any] = Registry().with_resources(
                (name, Resource.from_contents(s, default_specification=DRAFT7))
                for name, s in self.references.items())
            self._validator = cls(self.schema, registry=registry)
            self._fast = fast_validator(self.schema, self.references, cls)
        self.node = arrow_node(self.schema, self.references)
        self._convert = _converter(self.node)
        # the compiled JSON -> Arrow parsers, made on the first Arrow call
        # (False: no plan, or no compiled core), by validating: the plain one,
        # and the one that also declines every value the schema rejects
        self._native: dict[bool, Any] = {}
        # read_json reads objects: each payload is wrapped as {"v": payload}
        self._read_schema = pa.schema([pa.field("v", self.node.build_type)])

    @staticmethod
    def _load(schema: Any, what: str) -> Any:
        if isinstance(schema, str):
            try:
                return json.loads(schema)
            except ValueError as exc:
                raise JsonSchemaError("JSON schema: {0} is not JSON: {1}".format(what, exc)) from None
        if isinstance(schema, Mapping):
            return dict(schema)
        if isinstance(schema, bool):
            return schema
        raise JsonSchemaError("JSON schema: {0} is a {1}, not a str, dict or bool".format(what, type(schema).__name__))

    @property
    def arrow_type(self) -> Any:
        """The pyarrow.DataType of decode_arrow's column."""
        return self.node.arrow_type

    # -- values ---------------------------------------------------------------

    def decode_many(self, payloads: Sequence[Payload]) -> list[Any]:
        """The JSON value of each payload (validated when `validate`).

        Raises JsonDecodeError / JsonValidationError naming the first bad
        payload's index."""
        loads = orjson.loads
        # one pass over all the payloads; payload by payload only when a run is there
        check_each = _has_digit_run(b"\n".join(payloads))
        values = []
        # the GC is paused while the values are made, as the compiled Avro
        # and Protobuf builders pause it: each value is a few GC-tracked
        # dicts and lists, and young collections triggered every few
        # hundred of them rescan the growing batch (orjson's loads of the
        # benchmark event: ~4.5 µs with the GC on, ~2.8 µs paused)
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for i, p in enumerate(payloads):
                try:
                    if check_each and _has_digit_run(p):
                        raise ValueError  # orjson would turn a long integer into a float
                    if len(p) > _DEEP_BYTES and _brackets(p) > _ORJSON_DEPTH:
                        raise ValueError  # maybe deeper than json.loads goes (it has no fixed bound)
                    v = loads(p)
                except ValueError:  # orjson.JSONDecodeError is one
                    v = self._slow_loads(i, p)
                values.append(v)
        finally:
            if gc_was_enabled:
                gc.enable()
        if self._validator is not None:
            self._validate_all(values, payloads)
        return values

    @staticmethod
    def _slow_loads(index: int, payload: Payload) -> Any:
        """json.loads on strict UTF-8, with its every failure typed."""
        try:
            text = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonDecodeError(index, "not UTF-8: {0}".format(exc)) from None
        try:
            return json.loads(text)
        except RecursionError:
            raise JsonDecodeError(index, "nested too deeply") from None
        except ValueError as exc:  # JSONDecodeError, and the int digit limit
            raise JsonDecodeError(index, "not JSON: {0}".format(exc)) from None

    def _validate_all(self, values: list[Any], payloads: Sequence[Payload] | None = None) -> None:
        """Validates values[i], read from payloads[i] (when given). Where the compiled
        parser's validating plan takes a payload (it exists only where it
        checks each of the schema's keywords exactly, and takes only what
        Python reads the same way: decode_arrow), the value is valid
        without Python looking at it; the rest go through fastjsonschema,
        or jsonschema, which has the last word."""
        checker = self._native_parser(validating=True)
        taken = checker.verdicts(payloads) if checker is not None and payloads is not None else bytes(len(values))
        if 0 not in taken:
            return
        fast = self._fast
        if fast is not None:
            rejected = fastjsonschema.JsonSchemaValueException
            for i, v in enumerate(values):
                if taken[i]:
                    continue
                try:
                    fast(v)
                except rejected:
                    self._validate_one(i, v)  # jsonschema's message and path, and its decision
                    self.fast_disagreements += 1  # reached only when jsonschema accepts
                except Exception:  # RecursionError, or a fault of the generated code: jsonschema decides
                    self._validate_one(i, v)
            return
        for i, v in enumerate(values):
            if not taken[i]:
                self._validate_one(i, v)

    def _validate_one(self, i: int, v: Any) -> None:
        """jsonschema's validation of value `i`, its failures typed."""
        try:
            self._validator.validate(v)
        except ValidationError as exc:
            raise JsonValidationError(i, exc.message, exc.json_path) from None
        except Unresolvable as exc:
            raise JsonSchemaError("JSON schema: cannot resolve {0}".format(exc)) from None
        except RecursionError:
            raise JsonValidationError(i, "nested too deeply to validate") from None

    # -- Arrow -------------------------------------------------------------------

    def decode_arrow(self, payloads: Sequence[Payload]) -> Any:
        """A pyarrow.Array of `arrow_type`, one row per payload: the values of
        decode_many (so the same errors), then as arrow_node maps them;
        JsonArrowTypeError for a value that does not fit.

        The compiled parser (csrc/fkc_json_arrow.c, following the plan
        json_arrow.py compiles from `node`) parses the payloads straight
        into the columns, with the GIL released. It declines whatever
        Python's reading could read otherwise (its header lists what);
        then reference_arrow() builds the column, or raises the payload's
        typed error. With validation on, a parser that checks the schema's
        keywords itself (where it can: json_arrow.compile_plan) takes the
        call first; declined, decode_many validates (the validator's typed
        error), then the plain parser builds the column."""
        exact = self._native_parser(validating=self._validator is not None)
        array = exact.decode_arrow(payloads) if exact is not None else None
        return array if array is not None else self._declined_arrow(payloads)

    def _declined_arrow(self, payloads: Sequence[Payload]) -> Any:
        """decode_arrow() where the parser that checks all the codec asks has
        no plan or declined: without validation, the Python way; with it,
        the validator's verdict (its typed error), then the plain parser,
        then the Python way."""
        if self._validator is None:
            return self.reference_arrow(payloads)
        values = self.decode_many(payloads)
        native = self._native_parser(validating=False)
        array = native.decode_arrow(payloads) if native is not None else None
        return array if array is not None else self.reference_arrow(payloads, values)

    def reference_arrow(self, payloads: Sequence[Payload], values: list[Any] | None = None) -> Any:
        """decode_arrow() the Python way: the reference the compiled parser
        is held to (`values`: decode_many's, when the caller has them).

        Arrow's own JSON reader (C++, multithreaded) builds the column; it
        is the faster of the two Python ways measured (with 100k 330-byte
        events it takes about a third of pa.array's time over the parsed
        values). It reads the payloads only after decode_many has accepted
        each as one JSON text, so a payload cannot run into the next line.
        Wherever it refuses the data, or the schema has json-text or null
        positions (ArrowNode.needs_values), the column is built from the
        parsed values by the strict converter instead, which names the bad
        payload."""
        if values is None:
            values = self.decode_many(payloads)
        if not self.node.needs_values and values:
            try:
                return self._read_json(payloads)
            except (pa.ArrowException, ValueError, _Mismatch):
                pass  # the converter below gives the value or the payload's error
        return self._from_values(values)

    def decode_arrow_column(self, column: Any, skip: int) -> Any:
        """decode_arrow() of the rows of a pyarrow binary column without
        nulls, each past its first `skip` bytes (read in place by the
        compiled parser, when it can validate what the schema asks)."""
        if not pa.types.is_binary(column.type):
            column = column.cast(pa.binary())
        exact = self._native_parser(validating=self._validator is not None)
        array = exact.decode_arrow_column(column, skip) if exact is not None else None
        if array is not None:
            return array
        return self._declined_arrow([memoryview(row)[skip:] for row in column.to_pylist()])

    def _native_parser(self, validating: bool) -> Any:
        """The compiled parser of this schema's Arrow plan, or None. A
        validating one exists only where the fast validator does (the
        schema's keywords mean the same in every draft: json_fast.py)."""
        if validating not in self._native:
            core = _backend.json_arrow_decoder_core()
            plan = None
            if core is not None and (not validating or self._fast is not None):
                plan = compile_arrow_plan(self.node, validating)
            if core is None or plan is None:
                self._native[validating] = False
            else:
                self._native[validating] = core(plan.columns, plan.steps, plan.strings, plan.root_step)
        return self._native[validating] or None

    def _read_json(self, payloads: Sequence[Payload]) -> Any:
        parts = [p if isinstance(p, bytes) else bytes(p) for p in payloads]
        data = b'{"v":' + b'}\n{"v":'.join(parts) + b"}"
        # a payload pretty-printed over lines (whitespace only: JSON strings
        # cannot hold a raw newline) needs the slower line-spanning reader
        multiline = data.count(b"\n") != len(parts) - 1
        options = pa_json.ParseOptions(explicit_schema=self._read_schema, unexpected_field_behavior="ignore",
                                       newlines_in_values=multiline)
        table = pa_json.read_json(io.BytesIO(data), parse_options=options)
        if table.num_rows != len(parts):
            raise ValueError("row count")
        return _to_dictionaries(_flatten(table.column(0)), self.node)

    def _from_values(self, values: list[Any]) -> Any:
        convert = self._convert
        rows = []
        for i, v in enumerate(values):
            try:
                rows.append(convert(v, "$"))
            except _Mismatch as exc:
                raise JsonArrowTypeError(i, exc.reason, exc.path) from None
            except RecursionError:
                raise JsonArrowTypeError(i, "nested too deeply") from None
        array = _flatten(pa.array(rows, type=self.node.build_type))
        try:
            return _to_dictionaries(array, self.node)
        except _Mismatch as exc:  # the converter checked the symbols: not reached
            raise JsonArrowTypeError(0, exc.reason, exc.path) from None
