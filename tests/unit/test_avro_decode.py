"""The Avro decoder against fastavro: hypothesis-generated schemas and data,
written by fastavro's schemaless_writer, read by the compiled decoder, its
twin and fastavro's schemaless_reader: the same values, of the same types."""
import datetime
import decimal
import uuid

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fastkc.schema_registry.avro import AvroDecoder
from fastkc.schema_registry.avro_errors import AvroDecodeError
from tests.support.avro import Pair, assert_same, encode, fastavro_read, schemas, values
from tests.support.sanitizers import examples

# no shrinking: generated schemas shrink for minutes; a failure prints its draws
SETTINGS = settings(max_examples=examples(80, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@SETTINGS
@given(st.data())
def test_generated_schemas_and_data_equal_fastavro(data):
    schema = data.draw(schemas())
    records = [values(data.draw, schema) for _ in range(data.draw(st.integers(1, 4)))]
    payloads = [encode(schema, r) for r in records]
    got = Pair(schema).both(payloads)
    for payload, value in zip(payloads, got):
        assert_same(value, fastavro_read(schema, payload))


EVENT = {
    "type": "record", "name": "Event", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long", "string"]}},
        {"name": "user", "type": ["null", {"type": "record", "name": "User", "fields": [
            {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "since", "type": {"type": "int", "logicalType": "date"}},
        ]}]},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "fprice", "type": {"type": "fixed", "name": "P", "size": 8, "logicalType": "decimal",
                                    "precision": 18, "scale": 2}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "ratio", "type": "float"},
        {"name": "blob", "type": "bytes"},
        {"name": "ok", "type": "boolean"},
        {"name": "nothing", "type": "null"},
    ],
}


def _event(i):
    return {
        "id": i * 1_000_003 - 5, "name": f"événement-{i}", "tags": ["a", "bb"][: i % 3],
        "attrs": {"x": i, "y": None, "z": "s"},
        "user": None if i % 2 else {"uid": uuid.UUID(int=i), "since": datetime.date(2020, 1, 1 + i % 28)},
        "at": datetime.datetime(2024, 5, 1, 12, 0, i % 60, tzinfo=datetime.UTC),
        "at_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999 - i),
        "t": datetime.time(13, 14, 15, 16_000), "price": decimal.Decimal("-1234.567"),
        "fprice": decimal.Decimal("99.99"), "kind": "ABC"[i % 3], "ratio": 0.1 * i, "blob": bytes(range(i % 7)),
        "ok": bool(i % 2), "nothing": None,
    }


def test_a_realistic_event_schema_many_payloads_per_call():
    payloads = [encode(EVENT, _event(i)) for i in range(50)]
    got = Pair(EVENT).both(payloads)
    assert len(got) == 50
    for payload, value in zip(payloads, got):
        assert_same(value, fastavro_read(EVENT, payload))
    assert got[0]["at"].tzinfo is datetime.UTC


def test_public_decoder_takes_json_text_and_memoryviews():
    import json

    payloads = [encode(EVENT, _event(i)) for i in range(3)]
    decoder = AvroDecoder(json.dumps(EVENT))
    views = [memoryview(b"xx" + p)[2:] for p in payloads] + [bytearray(payloads[0])]
    got = decoder.decode_many(views)
    for value, payload in zip(got, payloads + [payloads[0]]):
        assert_same(value, fastavro_read(EVENT, payload))
    assert_same(decoder.decode(payloads[1]), fastavro_read(EVENT, payloads[1]))
    assert decoder.decode_many([]) == []


def test_recursive_schema_by_name():
    schema = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"},
        {"name": "next", "type": ["null", "Node"]},
        {"name": "kids", "type": {"type": "array", "items": "Node"}},
    ]}
    value = {"v": 1, "next": {"v": 2, "next": None, "kids": []},
             "kids": [{"v": 3, "next": None, "kids": [{"v": 4, "next": None, "kids": []}]}]}
    payload = encode(schema, value)
    assert_same(Pair(schema).both([payload])[0], fastavro_read(schema, payload))


def test_namespaces_and_references_to_earlier_names():
    schema = {"type": "record", "name": "a.b.Outer", "fields": [
        {"name": "x", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "y", "type": "Hash"},
        {"name": "z", "type": "a.b.Hash"},
        {"name": "in", "type": {"type": "record", "name": "Inner", "namespace": "c", "fields": [
            {"name": "h", "type": "a.b.Hash"}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["Q"]}},
        ]}},
        {"name": "e2", "type": "c.E"},
    ]}
    value = {"x": b"abcd", "y": b"efgh", "z": b"ijkl", "in": {"h": b"mnop", "e": "Q"}, "e2": "Q"}
    payload = encode(schema, value)
    assert_same(Pair(schema).both([payload])[0], fastavro_read(schema, payload))


def test_primitive_root_schema_and_block_forms():
    # a bare primitive schema, and arrays written in blocks with byte sizes
    # (negative counts), which fastavro's writer never emits
    assert Pair("string").both([b"\x06abc"]) == ["abc"]
    assert Pair({"type": "array", "items": "int"}).both([b"\x03\x04\x02\x04\x04\x06\x08\x00"]) == [[1, 2, 3, 4]]
    assert Pair({"type": "map", "values": "int"}).both([b"\x01\x06\x02k\x02\x00"]) == [{"k": 1}]


def test_float_and_double_bits_survive():
    schema = {"type": "record", "name": "F",
              "fields": [{"name": "f", "type": "float"}, {"name": "d", "type": "double"}]}
    for f, d in [(float("inf"), -0.0), (-1.5e-45, 5e-324), (3.4028234663852886e38, 1.7976931348623157e308)]:
        payload = encode(schema, {"f": f, "d": d})
        assert_same(Pair(schema).both([payload])[0], fastavro_read(schema, payload))


def test_timestamp_edges_equal_fastavro():
    # the compiled builder's timestamp path (C-API timedelta) at its edges
    for logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        schema = {"type": "long", "logicalType": logical}
        scale = 1 if "millis" in logical else 1000
        raw = [-1, 0, 1, -86_400_001, 86_399_999, -62_135_596_800_000 * scale, 253_402_300_799_999 * scale]
        payloads = [encode("long", v) for v in raw]
        got = Pair(schema).both(payloads)
        for payload, value in zip(payloads, got):
            assert_same(value, fastavro_read(schema, payload))


# The builder's own paths for the commonest logical types (a decimal of at
# most 18 digits written as text, a timestamp built from its civil date),
# across their whole ranges, against fastavro's conversions.
FAST_PATHS = settings(max_examples=300, deadline=None)
_MILLIS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)  # 0001-01-01 .. 9999-12-31, datetime's range


@FAST_PATHS
@given(st.data())
def test_short_decimals_equal_fastavro(data):
    precision = data.draw(st.integers(1, 18))
    scale = data.draw(st.integers(0, precision))
    schema = {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    bound = 10 ** precision - 1
    unscaled = data.draw(st.lists(st.one_of(st.integers(-bound, bound), st.sampled_from([0, 1, -1, bound, -bound])),
                                  min_size=1, max_size=8))
    payloads = [encode(schema, decimal.Decimal(u).scaleb(-scale)) for u in unscaled]
    for payload, value in zip(payloads, Pair(schema).both(payloads)):
        assert_same(value, fastavro_read(schema, payload))


@FAST_PATHS
@given(st.sampled_from(["timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"]),
       st.lists(st.integers(*_MILLIS_RANGE), min_size=1, max_size=8), st.integers(0, 999))
def test_timestamps_across_the_calendar_equal_fastavro(logical, millis, micros):
    schema = {"type": "long", "logicalType": logical}
    raw = [m * 1000 + (micros if m < _MILLIS_RANGE[1] else 0) if "micros" in logical else m for m in millis]
    payloads = [encode("long", v) for v in raw]
    for payload, value in zip(payloads, Pair(schema).both(payloads)):
        assert_same(value, fastavro_read(schema, payload))


def test_a_prefixed_run_ends_at_the_first_value_of_another_frame():
    """decode_prefixed: the leading values that carry the frame, each read
    past it; the compiled decoder and the twin agree on the run and on an
    error's index (counted from start)."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    pair = Pair(schema)
    frame, other = b"\x00\x00\x00\x00\x07", b"\x00\x00\x00\x00\x08"
    good = [frame + encode(schema, {"n": i}) for i in range(4)]
    stops = {"None": None, "another id": other + encode(schema, {"n": 9}), "short": frame[:3],
             "a memoryview": memoryview(good[0]), "a bytearray": bytearray(good[0])}
    for why, stop in stops.items():
        values = [b"skipped"] + good[:2] + [stop] + good[2:]
        for decoder in (pair.c, pair.twin):
            assert decoder.decode_prefixed(values, 1, frame) == [{"n": 0}, {"n": 1}], why
            assert decoder.decode_prefixed(values, 3, frame) == [], why
            assert decoder.decode_prefixed(values, 4, frame) == [{"n": 2}, {"n": 3}], why
            assert decoder.decode_prefixed(values, len(values), frame) == [], why
    bad = [b"x"] + good[:2] + [frame + b"\x81"] + good[2:]  # a varint cut short
    keys = set()
    for decoder in (pair.c, pair.twin):
        with pytest.raises(AvroDecodeError) as info:
            decoder.decode_prefixed(bad, 1, frame)
        keys.add(info.value.key())
        with pytest.raises(IndexError):
            decoder.decode_prefixed(good, len(good) + 1, frame)
    assert len(keys) == 1 and next(iter(keys))[0] == 2
