"""Hostile Avro payloads and schemas: typed errors at the right byte, the
compiled decoder and its twin agree, nothing crashes or allocates what the
input only claims."""
import json
import random
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fastkc.schema_registry import avro_schema
from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_errors import AvroDecodeError, AvroSchemaError
from tests.support.avro import Pair, compiled_decoder_class, encode, schemas, values
from tests.support.sanitizers import examples

REC = {"type": "record", "name": "R", "fields": [
    {"name": "s", "type": "string"}, {"name": "l", "type": "long"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "u", "type": ["null", "int"]},
]}


@pytest.mark.parametrize("payload,expected", [
    (b"", (0, 0, "string length", "truncated")),
    (b"\x80", (0, 0, "string length", "truncated")),                       # varint cut short
    (b"\x06ab", (0, 1, "string", "truncated")),                           # a length past the end
    (b"\x03", (0, 0, "string length", "negative length")),
    (b"\x02\xff", (0, 1, "string", "invalid UTF-8")),
    (b"\x02\xed\xa0\x80"[:2], (0, 1, "string", "invalid UTF-8")),
    (b"\x00" + b"\xff" * 10, (0, 1, "long", "over-long varint")),          # an 11-byte varlong
    (b"\x00" + b"\xff" * 9 + b"\x02", (0, 1, "long", "varint overflows its width")),
    (b"\x00\x00\x04", (0, 2, "enum index", "index out of range")),
    (b"\x00\x00\x01", (0, 2, "enum index", "index out of range")),         # -1
    (b"\x00\x00\x00\x04", (0, 3, "union branch", "index out of range")),
    (b"\x00\x00\x00\x02\xff\xff\xff\xff\x7f", (0, 4, "int", "varint overflows its width")),  # 5-byte int past 32 bits
    (b"\x00\x00\x00\x00\x00", (0, 4, "datum", "trailing bytes")),
])
def test_bad_payloads_fail_at_their_byte(payload, expected):
    assert Pair(REC).error([payload]) == expected


def test_the_failing_payload_is_named_by_its_index():
    good = encode(REC, {"s": "x", "l": 1, "e": "B", "u": None})
    assert Pair(REC).error([good, good, good[:-1], good]) == (2, 4, "union branch", "truncated")


def test_trailing_bytes_can_be_allowed():
    good = encode(REC, {"s": "x", "l": 1, "e": "B", "u": 5})
    assert Pair(REC, allow_trailing=True).both([good + b"junk"]) == Pair(REC).both([good])


def test_claimed_huge_array_fails_before_allocating():
    # 2^31 items claimed, a few bytes given: refused by the count check, at once
    schema = {"type": "array", "items": "long"}
    huge = b"\x80\x80\x80\x80\x10" + b"\x02" * 8  # zigzag(2^31)
    start = time.perf_counter()
    assert Pair(schema).error([huge]) == (0, 0, "array block count", "more items than bytes left")
    assert time.perf_counter() - start < 1.0
    # items that take no bytes are bounded by max_empty_items instead
    nulls = {"type": "array", "items": "null"}
    assert Pair(nulls).error([huge]) == (0, 0, "array block count", "too many items")
    assert Pair(nulls, max_empty_items=3).both([b"\x06\x00"]) == [[None, None, None]]
    assert Pair(nulls, max_empty_items=3).error([b"\x04\x04\x00"]) == (0, 1, "array block count", "too many items")
    # a block byte size past the end; the most negative count
    assert Pair(schema).error([b"\x01\x7e"]) == (0, 1, "array block size", "past the end")
    assert Pair(schema).error([b"\x01\x01"]) == (0, 1, "array block size", "negative length")
    assert Pair(schema).error([b"\xff" * 9 + b"\x01"]) == (0, 0, "array block count", "count out of range")


def test_map_counts_need_a_byte_per_key():
    schema = {"type": "map", "values": "null"}
    assert Pair(schema).error([b"\x0e\x02a\x02b\x00"]) == (0, 0, "map block count", "more items than bytes left")
    assert Pair(schema).both([b"\x04\x02a\x02b\x00"]) == [{"a": None, "b": None}]


def test_nesting_is_bounded():
    schema = {"type": "record", "name": "N", "fields": [{"name": "n", "type": ["null", "N"]}]}
    depth = 40
    payload = b"\x02" * depth + b"\x00"
    value = Pair(schema, max_depth=100).both([payload])[0]
    for _ in range(depth):
        value = value["n"]
    assert value == {"n": None}
    # each level is a record and a union: 2 per level
    assert Pair(schema, max_depth=20).error([payload]) == (0, 10, "record", "nesting too deep")


def test_logical_values_python_cannot_hold_fail_at_their_offset():
    schema = {"type": "record", "name": "T", "fields": [
        {"name": "a", "type": "int"}, {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    far = encode({"type": "record", "name": "T",
                  "fields": [{"name": "a", "type": "int"}, {"name": "t", "type": "long"}]},
                 {"a": 0, "t": 1 << 60})
    assert Pair(schema).error([far]) == (0, 1, "timestamp-millis", "value out of range")
    uid = {"type": "string", "logicalType": "uuid"}
    assert Pair(uid).error([b"\x06abc"]) == (0, 0, "uuid", "value out of range")


@pytest.mark.parametrize("schema,message", [
    ('{"type": "array", "items": ' * 200 + '"int"' + "}" * 200, "nested deeper"),
    (json.dumps({"type": "array", "items": "Nope"}), "unknown type"),
    (json.dumps({"type": "record", "name": "R", "fields": [{"name": "a"}]}), "no type"),
    (json.dumps({"type": "enum", "name": "E", "symbols": ["A", "A"]}), "repeats"),
    (json.dumps(["int", "int"]), "two branches"),
    (json.dumps({"type": "fixed", "name": "F", "size": -1}), "size"),
    ("{not json", "not JSON"),
    (json.dumps({"type": "record", "name": "R", "fields": [{"name": f"f{i}", "type": "int"} for i in range(20)]}),
     "more than 10 types"),
])
def test_hostile_schemas_get_typed_errors(schema, message):
    with pytest.raises(AvroSchemaError, match=message):
        avro_schema.parse_schema(schema, max_types=10 if "f19" in schema else 1000)


def test_enormous_schema_text_is_refused_before_parsing():
    with pytest.raises(AvroSchemaError, match="longer than"):
        AvroDecoder(" " * (avro_schema.DEFAULT_MAX_SCHEMA_BYTES + 1))


def test_malformed_programs_are_refused():
    Decoder = compiled_decoder_class()
    good = avro_schema.compile_program(avro_schema.parse_schema(json.dumps(REC)))
    for bad in ([], [0, 4, 64, 0], good.code[:-1], good.code[:1] + [len(good.code) + 5] + good.code[2:],
                good.code + [99]):
        with pytest.raises(ValueError):
            Decoder(bad, good.consts)


# no shrinking: generated schemas shrink for minutes; a failure prints its draws
@settings(max_examples=examples(60, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(st.data())
def test_corrupted_payloads_agree_between_compiled_and_twin(data):
    schema = data.draw(schemas())
    payload = bytearray(encode(schema, values(data.draw, schema)))
    rng = random.Random(data.draw(st.integers(0, 1 << 30)))
    pair = Pair(schema)
    variants = [bytes(payload[:n]) for n in range(len(payload))]  # every truncation
    for _ in range(20):
        mutated = bytearray(payload)
        for _ in range(rng.randint(1, 3)):
            if mutated:
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        variants.append(bytes(mutated))
    for v in variants:
        outcome = pair.outcome([v])
        if isinstance(outcome, tuple):  # an error key: its offset is inside the payload
            assert outcome[0] == 0 and 0 <= outcome[1] <= len(v)


def test_errors_are_kafka_errors_with_fields():
    from fastkc.errors import KafkaError

    with pytest.raises(AvroDecodeError) as err:
        AvroDecoder(json.dumps(REC)).decode_many([b"\x06ab"])
    assert isinstance(err.value, KafkaError)
    assert (err.value.index, err.value.offset, err.value.what, err.value.problem) == (0, 1, "string", "truncated")
    assert "byte 1" in str(err.value)


def test_a_schema_fanning_out_into_empty_values_is_refused():
    # R0 holds two R1s, each two R2s, ...: 2^20 records per value, no bytes
    schema = {"type": "record", "name": "R0", "fields": [{"name": "n", "type": "null"}]}
    for i in range(1, 21):
        schema = {"type": "record", "name": f"R{i}", "fields": [{"name": "a", "type": schema},
                                                                {"name": "b", "type": f"R{i - 1}"}]}
    with pytest.raises(AvroSchemaError, match="values that take no bytes"):
        AvroDecoder(json.dumps(schema), max_depth=64)


def test_empty_items_spend_the_budget_by_weight():
    item = {"type": "record", "name": "I", "fields": [{"name": "a", "type": "null"}, {"name": "b", "type": "null"}]}
    schema = {"type": "array", "items": item}  # 3 values of no bytes per item
    assert Pair(schema, max_empty_items=6).both([b"\x04\x00"]) == [[{"a": None, "b": None}] * 2]
    assert Pair(schema, max_empty_items=6).error([b"\x06\x00"]) == (0, 0, "array block count", "too many items")
