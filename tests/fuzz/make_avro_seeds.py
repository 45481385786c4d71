"""Write the Avro fuzz target's programs and seeds.

    python tests/fuzz/make_avro_seeds.py

tests/fuzz/fuzz_avro_programs.inc: programs compiled by
fastkc/schema_registry/avro_schema.py from the schemas below, and the Arrow
plans (fastkc/schema_registry/avro_arrow.py) of those that have one (rewrite
it when the program or plan layout changes; `--check` says whether it is
current).
tests/fuzz/corpus/avro/: valid payloads for them, written by fastavro (an
independent encoder), in the harness's input format: byte 0 = program
index (< 0x80), byte 1 = how many payloads (1-4, the rest split evenly),
then the payload bytes.
"""
import hashlib
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fastkc.schema_registry import avro_arrow, avro_schema  # noqa: E402
from fastkc.schema_registry.avro_errors import AvroArrowUnsupportedError  # noqa: E402

EVENT = {"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long", "string"]}},
    {"name": "user", "type": ["null", {"type": "record", "name": "U", "fields": [
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}}, {"name": "b", "type": "boolean"}]}]},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B", "C"]}},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3}},
]}
NODE = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]},
    {"name": "kids", "type": {"type": "array", "items": "Node"}},
]}
NULLS = {"type": "array", "items": {"type": "map", "values": {"type": "array", "items": "null"}}}
WRITER_V1 = {"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "gone", "type": {"type": "array", "items": ["null", "string"]}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]}},
    {"name": "u", "type": ["null", "string", "int"]}, {"name": "s", "type": "string"},
]}
READER_V2 = {"type": "record", "name": "R", "fields": [
    {"name": "s", "type": "bytes"}, {"name": "a", "type": "double"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
    {"name": "u", "type": ["null", "string"]}, {"name": "added", "type": "long", "default": 7},
]}

# every Arrow mapping at once: logical types, nested nullable records, maps, defaults
ARROW = {"type": "record", "name": "A", "fields": [
    {"name": "id", "type": "long"}, {"name": "s", "type": ["string", "null"]},
    {"name": "u", "type": ["null", {"type": "record", "name": "AIn", "fields": [
        {"name": "t", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "string"]}}]}]},
    {"name": "k", "type": {"type": "enum", "name": "AK", "symbols": ["A", "B"]}},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}},
    {"name": "w", "type": {"type": "fixed", "name": "AW", "size": 17, "logicalType": "decimal", "precision": 40}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "f", "type": "float"}, {"name": "b", "type": "boolean"}, {"name": "n", "type": "null"},
]}
ARROW_READER = {**ARROW, "fields": [f for f in ARROW["fields"] if f["name"] != "b"] + [
    {"name": "added", "type": {"type": "array", "items": "AIn"}, "default": [{"t": [1], "m": {"x": None}}]}]}

# dense unions: of every kind, nested, at the top of a field and inside lists, maps, records, other unions
UNIONS = {"type": "record", "name": "Un", "fields": [
    {"name": "a", "type": ["null", "int", "string"]},
    {"name": "b", "type": [{"type": "record", "name": "UIn", "fields": [
        {"name": "x", "type": ["long", {"type": "array", "items": ["null", "double", "string"]}]}]},
        {"type": "fixed", "name": "UF", "size": 2}, {"type": "map", "values": ["int", "boolean"]},
        {"type": "enum", "name": "UE", "symbols": ["P", "Q"]},
        {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}, "null"]},
    {"name": "c", "type": ["null", {"type": "record", "name": "UOpt", "fields": [
        {"name": "u", "type": ["float", "string"]}]}]},
]}
# a writer union resolved branch by branch, a writer type into a reader union, union defaults
UNIONS_READER = {"type": "record", "name": "Un", "fields": [
    {"name": "a", "type": ["string", "null", "long", "int"]}, UNIONS["fields"][1],
    {"name": "c", "type": ["null", UNIONS["fields"][2]["type"][1], "string"]},
    {"name": "d", "type": ["null", "UOpt"], "default": None},
    {"name": "e", "type": ["int", {"type": "array", "items": ["null", "UIn"]}], "default": 3},
]}

PROGRAMS = [(EVENT, None), (NODE, None), (NULLS, None), (WRITER_V1, READER_V2), (WRITER_V1, None),
            (ARROW, ARROW_READER), (UNIONS, None), (UNIONS, UNIONS_READER)]
VALUES = [
    [{"id": 1, "name": "n", "tags": ["a"], "attrs": {"k": 1, "z": None},
      "user": {"uid": "00000000-0000-0000-0000-000000000001", "b": True},
      "at": 5, "price": __import__("decimal").Decimal("1.25"), "kind": "B", "f": 0.5, "d": -2.0, "fx": b"abc"}],
    [{"v": 1, "next": {"v": 2, "next": None, "kids": []}, "kids": [{"v": 3, "next": None, "kids": []}]}],
    [[{"a": [None, None]}, {}]],
    [{"a": 1, "gone": [None, "x"], "e": "Y", "u": "s", "s": "t"}, {"a": -1, "gone": [], "e": "X", "u": None, "s": ""}],
    [{"a": 2, "gone": ["q"], "e": "Z", "u": 3, "s": "é"}],
    [{"id": 1, "s": "x", "u": {"t": [1, 2], "m": {"a": None, "b": "c"}}, "k": "B",
      "d": __import__("decimal").Decimal("-99.9"), "w": __import__("decimal").Decimal(10 ** 39 - 1), "day": -3,
      "at": 1 << 50, "f": 1.5, "b": True, "n": None},
     {"id": -1, "s": None, "u": None, "k": "A", "d": __import__("decimal").Decimal(0),
      "w": __import__("decimal").Decimal(-1), "day": 0, "at": 0, "f": -0.0, "b": False, "n": None}],
]
_UNION_VALUES = [
    {"a": None, "b": {"x": 5}, "c": None},
    {"a": 3, "b": {"x": [None, 1.5, "s"]}, "c": {"u": 0.5}},
    {"a": "t", "b": b"ab", "c": {"u": "v"}},
    {"a": -1, "b": {"k": 1, "l": True}, "c": None},
    {"a": None, "b": "Q", "c": None},
    {"a": 0, "b": __import__("decimal").Decimal("-12.5"), "c": {"u": "w"}},
    {"a": "", "b": None, "c": {"u": 1.0}},
]
VALUES += [_UNION_VALUES, _UNION_VALUES]


def _program(writer, reader):
    w = avro_schema.parse_schema(json.dumps(writer))
    r = avro_schema.parse_schema(json.dumps(reader)) if reader is not None else None
    return avro_schema.compile_program(w, r)


def _ints(values):
    return ", ".join(str(x) for x in values)


def render_programs():
    lines = ["/* Generated by tests/fuzz/make_avro_seeds.py: programs of fastkc/schema_registry/avro_schema.py"
             " and their Arrow plans (avro_arrow.py). */"]
    plans = []
    for i, (writer, reader) in enumerate(PROGRAMS):
        program = _program(writer, reader)
        lines.append(f"static const int32_t avro_program_{i}[] = {{{_ints(program.code)}}};")
        try:
            plan = avro_arrow.compile_plan(program)
        except AvroArrowUnsupportedError:
            plans.append("{NULL, 0, NULL, 0, NULL, 0, 0}")
            continue
        lines.append(f"static const int64_t avro_plan_{i}_columns[] = {{{_ints(plan.columns)}}};")
        lines.append(f"static const int64_t avro_plan_{i}_steps[] = {{{_ints(plan.steps)}}};")
        lines.append(f"static const uint8_t avro_plan_{i}_strings[] = {{{_ints(plan.strings)}}};")
        plans.append(f"{{avro_plan_{i}_columns, sizeof avro_plan_{i}_columns / sizeof(int64_t), avro_plan_{i}_steps,"
                     f" sizeof avro_plan_{i}_steps / sizeof(int64_t), avro_plan_{i}_strings,"
                     f" sizeof avro_plan_{i}_strings, {plan.root_step}}}")
    lines.append("static const int32_t *const avro_programs[] = {"
                 + ", ".join(f"avro_program_{i}" for i in range(len(PROGRAMS))) + "};")
    lines.append("static const size_t avro_program_lengths[] = {"
                 + ", ".join(f"sizeof avro_program_{i} / sizeof(int32_t)" for i in range(len(PROGRAMS))) + "};")
    lines.append("static const avro_fuzz_plan avro_plans[] = {" + ", ".join(plans) + "};")
    return "\n".join(lines) + "\n"


def main():
    import fastavro

    inc = os.path.join(HERE, "fuzz_avro_programs.inc")
    text = render_programs()
    if "--check" in sys.argv:
        with open(inc) as f:
            sys.exit(0 if f.read() == text else "fuzz_avro_programs.inc is out of date: rerun make_avro_seeds.py")
    with open(inc, "w") as f:
        f.write(text)
    directory = os.path.join(HERE, "corpus", "avro")
    os.makedirs(directory, exist_ok=True)
    for index, ((writer, _), values) in enumerate(zip(PROGRAMS, VALUES)):
        parsed = fastavro.parse_schema(writer)
        payloads = []
        for v in values:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, v)
            payloads.append(buf.getvalue())
        for group in ([p] for p in payloads):
            seed = bytes([index, len(group)]) + b"".join(group)
            with open(os.path.join(directory, hashlib.sha1(seed).hexdigest()[:16]), "wb") as f:
                f.write(seed)


if __name__ == "__main__":
    main()
