"""Write the JSON -> Arrow fuzz target's plans and seeds.

    python tests/fuzz/make_json_seeds.py [--check]

tests/fuzz/fuzz_json_plans.inc: the plans fastkc/schema_registry/json_arrow.py
compiles from the schemas below (columns, steps, strings, root step): a flat
event with every scalar kind, an enum and nullable fields; nested objects;
arrays of objects; maps of arrays; a top-level array of numbers; null;
two validating plans (required properties, a closed object, length and
item bounds, nulls refused); lists, objects and maps nested past the
parser's depth limit; an object of 70 properties.
`--check` says whether the .inc is current (rewrite it when the plan layout
changes).
tests/fuzz/corpus/json/: payloads in the harness's input format: byte 0 =
plan index, byte 1 % 4 + 1 = how many payloads (the rest split evenly),
then the payload bytes; byte 1 >= 0x80 puts plan mutations first, byte
1 & 0x40 repeats the payloads past the parser's first chunk of rows
(fuzz_json.c says how). Everything here is deterministic: the same files on
every run.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fastkc.schema_registry.json_arrow import compile_plan  # noqa: E402
from fastkc.schema_registry.json_schema import JsonSchemaCodec  # noqa: E402

SCHEMAS = [
    {"type": "object", "properties": {
        "id": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"},
        "kind": {"enum": ["VIEW", "CLICK", "BUY"]}, "ref": {"type": ["string", "null"]}, "nil": {"type": "null"},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "object", "properties": {"c": {"type": "string"}, "d": {"type": "integer"}}},
        "e": {"type": "number"}}}, "f": {"type": "boolean"}}},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}}}}}}},
    {"type": "object", "additionalProperties": {"type": "array", "items": {"enum": ["a", "b"]}}},
    {"type": "array", "items": {"type": "number"}},
    {"type": "null"},
]


def deep_schema(levels):
    """An array of objects whose one property is a map of the next level,
    `levels` deep under two objects: the arrays sit at depths 3, 6, ... so
    the 43rd is the first value past FKC_JA_MAX_DEPTH (128)."""
    node = {"type": "integer"}
    for _ in range(levels):
        node = {"type": "array", "items": {"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": node}}}}
    return {"type": "object", "properties": {"w": {"type": "object", "properties": {"d": node}}}}


def deep_payload(levels, inner):
    text = inner
    for _ in range(levels):
        text = b'[{"m": {"k": ' + text + b"}}]"
    return b'{"w": {"d": ' + text + b"}}"


DEEP_LEVELS = 44

# an object of more properties than the parser tracks on its stack (64): the ones it has seen go to the heap
WIDE_TYPES = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
              {"type": "array", "items": {"type": "integer"}}]
WIDE = {"type": "object", "properties": {f"p{i:02d}": WIDE_TYPES[i % 5] for i in range(70)}}
WIDE_VALUES = [b'"s"', b"1", b"2.5", b"true", b"[1, 2]"]


def wide_payload(order, extra=b""):
    return b"{" + b", ".join(b'"p%02d": %s' % (i, WIDE_VALUES[i % 5]) for i in order) + extra + b"}"


# schemas compiled as validating plans (json_arrow.compile_plan(validate=True)):
# NOT_NULL, CLOSED, bounds and required properties in the steps
VALIDATING = [
    {"type": "object", "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 8}, "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", None]}, "minItems": 1, "maxItems": 3},
        "ref": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
     "required": ["id", "n"], "additionalProperties": False},
    {"type": ["object", "null"], "additionalProperties": {"type": "object", "properties": {
        "x": {"type": "number"}}, "required": ["x"]}},
]

# schemas compiled after the validating ones (the seeds name plans by index)
LATER = [deep_schema(DEEP_LEVELS), WIDE]

# Plan mutations for the seeds (plan_mutation.h: which words, index (2 bytes LE), how, operand, copied index):
# the root column made non-nullable (column word 1 set to 0), which no compiled plan has; the root step's
# flags set to NOT_NULL; its kind set to 99, which the check refuses
NON_NULLABLE_ROOT = bytes([0, 1, 0, 0, 0, 0])
ROOT_NOT_NULL = bytes([1, 3, 0, 0, 1, 0])
ROOT_KIND_99 = bytes([1, 0, 0, 0, 99, 0])
MANY = 0x40  # byte 1: the payloads repeated past the parser's first chunk of 1,024 rows

SEEDS = [
    (0, [b'{"id": "e-1", "n": 42, "x": 1.5, "ok": true, "kind": "CLICK", "ref": null, "nil": null, "maybe": 7}',
         b'{"id": "\\u00e9\\ud83d\\ude00\\n", "n": -9223372036854775808, "x": -0.0, "kind": "BUY", "extra": [1, {}]}',
         b'{"n": 9223372036854775807, "x": 1e308, "ok": false}', b'null']),
    (0, [b'{"id": "a", "id": "b"}', b'{"n": 1.0}', b'{"x": 1e999}', b'{"id": "\\ud800"}']),
    (0, [b' \t{ "id" : "x" , "n" : 0 }\r\n', b'{"x": 0.1000000000000000055511151231257827021181583404541015625}']),
    (1, [b'{"a": {"b": {"c": "deep", "d": 3}, "e": 2.5}, "f": true}', b'{"a": null}', b'{"a": {"b": {}}}']),
    (2, [b'{"items": [{"sku": "s1", "qty": 2, "tags": ["x", "y"]}, {"sku": "s2", "tags": []}, null]}',
         b'{"items": []}', b'{"items": [{"qty": 1}, {"qty": 1, "qty": 2}]}']),
    (3, [b'{"k1": ["a", "b"], "k2": [], "k3": null}', b'{}', b'{"k": ["a"], "k": ["b"]}']),
    (4, [b'[1, 2.5, -3e-5, 1E+2, 0]', b'[]', b'[' + b'1,' * 50 + b'1]']),
    (5, [b'null', b' null ', b'0']),
    (0, [b'{"u": ' + b'[' * 130 + b']' * 130 + b'}', b'{"id": "' + b'\\u0041' * 40 + b'"}']),
    (6, [b'{"id": "abc", "n": 1, "tags": ["a", null], "ref": null}', b'{"id": "", "n": 1}', b'{"n": 2}',
         b'{"id": "x", "n": 1, "other": 0}']),
    (7, [b'{"k": {"x": 1.5}, "j": {"x": 0}}', b'null', b'{"k": {}}']),
    # number literals at FKC_JA_MAX_NUMBER: 4,000 characters read, 4,001 declined
    (0, [b'{"x": 0.' + b"1" * 3998 + b"}"]),
    (0, [b'{"n": ' + b"9" * 4001 + b"}"]),
    # past the depth limit at a list, and just inside it
    (8, [deep_payload(DEEP_LEVELS, b"1"), deep_payload(41, b"[]")]),
    # 70 properties: all of them in order, backwards, a few, and the 70th twice
    (9, [wide_payload(range(70)), wide_payload(range(69, -1, -1)), wide_payload([3, 66, 1]),
         wide_payload([69], b', "p69": [3]')]),
    # more rows than a chunk: strings, lists and maps presized from the first 1,024
    (2, [b'{"items": [{"sku": "s1", "qty": 2, "tags": ["x", "y"]}]}', b'{"items": [{"sku": "\\u00e9"}]}'], MANY),
    (3, [b'{"k1": ["a", "b"], "k2": []}', b'{"k1": ["b"]}', b'null'], MANY | 0x30),
    (0, [b'{"id": "e", "n": 1, "kind": "VIEW"}', b'{"id": "\\ud83d\\ude00"}', b'{"ref": "r"}'], MANY | 0x10),
    # mutated plans
    (0, [b'null', b'{"id": "x"}'], 0, [NON_NULLABLE_ROOT]),
    (0, [b'{"id": "x"}', b'null'], 0, [ROOT_NOT_NULL]),
    (1, [b'{"f": true}'], 0, [ROOT_KIND_99]),
]


def write_inc(path):
    lines = ["/* Generated by tests/fuzz/make_json_seeds.py: plans of fastkc/schema_registry/json_arrow.py. */"]
    names = []
    compiled = [(s, False) for s in SCHEMAS] + [(s, True) for s in VALIDATING] + [(s, False) for s in LATER]
    for k, (schema, validate) in enumerate(compiled):
        plan = compile_plan(JsonSchemaCodec(schema, validate=False).node, validate)
        assert plan is not None, schema
        lines.append(f"static const int64_t ja_plan_{k}_columns[] = {{{', '.join(map(str, plan.columns))}}};")
        lines.append(f"static const int64_t ja_plan_{k}_steps[] = {{{', '.join(map(str, plan.steps))}}};")
        lines.append(f"static const uint8_t ja_plan_{k}_strings[] = {{{', '.join(map(str, plan.strings)) or '0'}}};")
        names.append((k, plan.root_step))
    lines.append("static const fuzz_plan ja_plans[] = {" + ", ".join(
        f"{{ja_plan_{k}_columns, sizeof ja_plan_{k}_columns / sizeof(int64_t), ja_plan_{k}_steps, "
        f"sizeof ja_plan_{k}_steps / sizeof(int64_t), ja_plan_{k}_strings, sizeof ja_plan_{k}_strings, {root}}}"
        for k, root in names) + "};")
    text = "\n".join(lines) + "\n"
    if path is None:
        return text
    with open(path, "w") as f:
        f.write(text)
    return text


def seed_bytes(plan, payloads, flags=0, mutations=()):
    # the harness splits the rest evenly: pad each payload with trailing spaces to one length
    width = max(len(p) for p in payloads)
    head = flags | (len(payloads) - 1)
    if mutations:
        head |= 0x80 | (len(mutations) - 1) << 2
    return (bytes([plan, head]) + b"".join(mutations)
            + b"".join(p + b" " * (width - len(p)) for p in payloads))


def main(argv):
    inc = os.path.join(HERE, "fuzz_json_plans.inc")
    if "--check" in argv:
        with open(inc) as f:
            current = f.read() == write_inc(None)
        print("current" if current else "stale: run python tests/fuzz/make_json_seeds.py")
        return 0 if current else 1
    write_inc(inc)
    out = os.path.join(HERE, "corpus", "json")
    os.makedirs(out, exist_ok=True)
    for plan, payloads, *how in SEEDS:
        data = seed_bytes(plan, payloads, *how)
        with open(os.path.join(out, f"plan{plan}-" + hashlib.sha1(data).hexdigest()[:12]), "wb") as f:
            f.write(data)
    print(f"wrote {inc} and {len(SEEDS)} seeds; schemas: {json.dumps(len(SCHEMAS))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
