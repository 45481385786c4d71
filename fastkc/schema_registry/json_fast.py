"""The fast path of JSON Schema validation: a fastjsonschema function (the
schema compiled into Python code once) deciding accept/reject, used only for
schemas where its decision is jsonschema's (json_schema.py keeps jsonschema
as the reference: a rejected value is validated again by jsonschema, which
gives the message and path, and has the last word).

Which schemas (`refusal` says why one is not):

- the draft jsonschema picks for the schema (validator_for: "$schema", Draft
  2020-12 when absent) is 4, 6 or 7, compiled with fastjsonschema's generator
  for that same draft (fastjsonschema guesses a draft from a substring of
  "$schema"; the copy it compiles names the draft jsonschema chose);
- or it is 2019-09 / 2020-12 and the schema uses only keywords whose meaning
  is the same in draft 7 (then compiled as draft 7): no "$defs",
  "prefixItems", array-form "items", "additionalItems", "dependent*",
  "unevaluated*", "$anchor", "$dynamic*", "$recursive*", "min/maxContains",
  "$vocabulary" (none of them is in the allow-list below);
- in every draft: only the keywords of `_KEYWORDS` (fastjsonschema and
  jsonschema checked against each other by tests/unit/test_json_schema_codec.py;
  "pattern" is not one: fastjsonschema turns "$" into "\\Z", jsonschema's
  re.search lets "$" match before a final newline), no "$id"/"id" anywhere (a
  resolution scope), every "$ref" a local "#" or "#/..." pointer with no
  sibling keyword (draft 7 ignores siblings, 2019+ applies them), and no
  registry references. So fastjsonschema never resolves a URI, and never
  fetches one.

Compiled with use_default=False (fastjsonschema would otherwise write a
property's "default" into the value), use_formats=False (confluent-kafka does
not assert "format"), no handlers.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema
from jsonschema import Draft4Validator, Draft6Validator, Draft7Validator

__all__ = ["fast_validator", "refusal"]

_DRAFT_URIS: dict[Any, str] = {
    Draft4Validator: "http://json-schema.org/draft-04/schema#",
    Draft6Validator: "http://json-schema.org/draft-06/schema#",
    Draft7Validator: "http://json-schema.org/draft-07/schema#",
}

# keywords holding one subschema / a list of them / a name -> subschema map
_ONE = ("additionalProperties", "items", "not")
_LIST = ("anyOf", "oneOf", "allOf")
_MAP = ("properties", "definitions")
# validation keywords whose decisions agree between fastjsonschema and
# jsonschema in drafts 4 to 2020-12 (bools are not numbers; 1.0 is an
# integer from draft 6 on, not in draft 4; enum/const compare True and 1 as
# different, 1 and 1.0 as equal, also nested), and annotations both ignore
_KEYWORDS = frozenset(_ONE + _LIST + _MAP + (
    "type", "enum", "const", "required", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minProperties", "maxProperties", "format",
    "title", "description", "default", "examples", "$comment", "readOnly", "writeOnly", "deprecated",
))


def refusal(schema: Any, references: Mapping[str, Any], cls: Any) -> str | None:
    """Why `schema` (validated by jsonschema's `cls`) must not take the fast
    path; None when it may."""
    if references:
        return "registry references"
    if not isinstance(schema, dict):
        return "a boolean schema"
    if cls not in _DRAFT_URIS and cls.__name__ not in ("Draft201909Validator", "Draft202012Validator"):
        return "draft {0}".format(cls.__name__)
    late = cls not in _DRAFT_URIS
    seen: set[int] = set()
    todo: list[tuple[Any, str]] = [(schema, "#")]
    while todo:
        node, where = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return "{0} is not a schema".format(where)
        if id(node) in seen:
            continue
        seen.add(id(node))
        for key, sub in node.items():
            if key == "$schema" and node is schema:
                continue
            if key == "$defs" and not late and isinstance(sub, dict):
                # drafts 4-7 do not know "$defs", but a "$ref" may point into it
                todo.extend((s, where + "/$defs") for s in sub.values())
                continue
            if key == "$ref":
                if len(node) != 1:
                    return "{0}: $ref with sibling keywords".format(where)
                target = _local_target(schema, sub)
                if target is None:
                    return "{0}: $ref {1!r} is not a local pointer".format(where, sub)
                todo.append((target, str(sub)))
                continue
            if key not in _KEYWORDS:
                return "{0}: keyword {1!r}".format(where, key)
            if key in ("enum", "const") and not _finite(sub):
                # fastjsonschema writes the value's repr into its code: "nan"
                # and "inf" are no Python names (NameError when validating)
                return "{0}: {1} holds NaN or Infinity".format(where, key)
            if key in _ONE:
                if key == "items" and not isinstance(sub, (dict, bool)):
                    return "{0}: array-form items".format(where)
                todo.append((sub, where + "/" + key))
            elif key in _LIST:
                if not isinstance(sub, list):
                    return "{0}: {1} is not a list".format(where, key)
                todo.extend((s, where + "/" + key) for s in sub)
            elif key in _MAP:
                if not isinstance(sub, dict):
                    return "{0}: {1} is not an object".format(where, key)
                todo.extend((s, where + "/" + key) for s in sub.values())
    return None


def _finite(value: Any) -> bool:
    """No NaN or Infinity anywhere in `value` (json.loads reads them in a
    schema's text)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def _local_target(root: Any, ref: Any) -> Any:
    """What a "#" or "#/a/b" $ref points at in `root`; None for any other
    form (a URI, a plain-name fragment, a %-escape: resolved by jsonschema
    only)."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")) or "%" in ref:
        return None
    target = root
    for part in ref.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def fast_validator(schema: Any, references: Mapping[str, Any], cls: Any) -> Callable[[Any], Any] | None:
    """The compiled fastjsonschema function for `schema` (raising
    fastjsonschema.JsonSchemaValueException on a value it rejects), or None
    when the schema is refused (`refusal`) or does not compile."""
    if refusal(schema, references, cls) is not None:
        return None
    definition = dict(schema)
    # fastjsonschema picks its generator by substring of "$schema": name the
    # draft jsonschema picked (2019-09 / 2020-12 schemas use only draft-7
    # keywords here)
    definition["$schema"] = _DRAFT_URIS.get(cls, _DRAFT_URIS[Draft7Validator])
    try:
        return fastjsonschema.compile(definition, handlers={}, use_default=False, use_formats=False,
                                      detailed_exceptions=False)
    except Exception:  # a schema fastjsonschema cannot compile: jsonschema validates it
        return None
