"""fastkc/schema_registry/avro_json.py: Avro payloads as avro-c's
avro_value_to_json prints them (kcat -s avro). The payloads are written by
fastavro; the structure is checked against fastavro's own Avro JSON encoder
(json_writer) on the same raw values, the text byte for byte against what
jansson prints."""
import io
import json

import fastavro
import pytest

from fastkc.schema_registry.avro_errors import AvroDecodeError
from fastkc.schema_registry.avro_json import AvroJsonWriter, avro_json, without_logical_types

ADDRESS = {"type": "record", "name": "Address", "fields": [
    {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}
SCHEMA = {"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "ratio", "type": "double"},
    {"name": "weight", "type": "float"},
    {"name": "ok", "type": "boolean"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 2}},
    {"name": "home", "type": ["null", ADDRESS]},
    {"name": "work", "type": ["null", "Address"]},
    {"name": "note", "type": ["null", "string", "long"]},
    {"name": "scores", "type": {"type": "array", "items": "int"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
    {"name": "blob", "type": "bytes"},
]}


def _raw_value(i):
    """A value of SCHEMA without its logical types (what avro-c reads)."""
    return {"id": 10 ** 12 + i, "name": "caf\u00e9 \"q\" \\ \n\t\x01 \U0001F600 #%d" % i,
            "at": 1_790_000_000_000 + i,
            "day": 20_000 + i, "price": b"\x01\xe2\x40", "ratio": 0.1 * i, "weight": 1.5, "ok": i % 2 == 0,
            "kind": "AB"[i % 2], "tag": b"\x00\xff", "home": None if i % 3 == 0 else {"city": "Oslo", "zip": i},
            "work": {"city": "Bergen", "zip": None}, "note": [None, "n%d" % i, i][i % 3],
            "scores": list(range(i % 4)), "attrs": {"a": 1e20, "b": None, "c": -2.5e-7},
            "blob": bytes(range(0, 256, 37))}


def _payload(value, schema=SCHEMA):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(without_logical_types(schema)), value)
    return out.getvalue()


def _fastavro_json(value, schema=SCHEMA):
    """fastavro's Avro JSON encoding of the raw value (its union tags are full
    names: this schema has no namespace, so they are avro-c's too)."""
    out = io.StringIO()
    fastavro.json_writer(out, fastavro.parse_schema(without_logical_types(schema)), [value])
    return json.loads(out.getvalue())


@pytest.mark.parametrize("i", range(6))
def test_the_structure_is_the_avro_json_encoding(i):
    value = _raw_value(i)
    text = avro_json(SCHEMA, _payload(value))
    assert json.loads(text) == _fastavro_json(value)


def test_the_text_is_janssons():
    value = dict(_raw_value(1), weight=1.1)  # a float: printed as the double it widens to
    text = avro_json(SCHEMA, _payload(value)).decode("ascii")
    # no logical-type conversion: longs, ints and the decimal's bytes as they are
    assert '"at": 1790000000001, "day": 20001, "price": "\\u0001\\u00E2@"' in text
    # reals as %.17g, a float as the double it widens to, exponents without "+"
    assert '"ratio": 0.10000000000000001, "weight": 1.1000000238418579' in text
    assert '"attrs": {"a": {"double": 1e20}, "b": null, "c": {"double": -2.4999999999999999e-7}}' in text
    # non-ASCII as capital \\uXXXX, past the BMP as a surrogate pair; DEL stays
    assert '"name": "caf\\u00E9 \\"q\\" \\\\ \\n\\t\\u0001 \\uD83D\\uDE00 #1"' in text
    # unions: named branches by their name, the rest by their type
    assert '"home": {"Address": {"city": "Oslo", "zip": {"int": 1}}}' in text
    assert '"work": {"Address": {"city": "Bergen", "zip": null}}' in text
    assert '"note": {"string": "n1"}' in text
    assert '"kind": "B", "tag": "\\u0000\\u00FF"' in text
    assert text.startswith('{"id": 1000000000001, ') and "\n" not in text


def test_a_bad_payload_is_the_decoders_typed_error():
    writer = AvroJsonWriter(SCHEMA)
    good = _payload(_raw_value(2))
    with pytest.raises(AvroDecodeError):
        writer.render_many([good, good[:7]])
    assert writer.render_many([good]) == [avro_json(SCHEMA, good)]


def test_namespaced_named_types_print_their_short_name():
    schema = {"type": "record", "name": "R", "namespace": "com.example", "fields": [
        {"name": "u", "type": ["null", {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}]},
        {"name": "v", "type": ["null", "com.example.Inner"]}]}
    payload = _payload({"u": {"x": 1}, "v": {"x": 2}}, schema)
    assert avro_json(schema, payload) == b'{"u": {"Inner": {"x": 1}}, "v": {"Inner": {"x": 2}}}'
