"""fastkc/spark/formats.py without a SparkSession: the options of
valueFormat / keyFormat, the decoder's Arrow types mapped to what Spark's
columns hold, and the executor's cast of a decoded column to them (the
Spark end is test_avro_format.py beside it)."""
import json

import pytest

from fastkc.spark.formats import SparkFormatError, parse_formats, spark_arrow_type, to_spark_column
from fastkc.spark.options import SparkKafkaOptionError, parse
from tests.support.avro import encode

pa = pytest.importorskip("pyarrow")

EVERYTHING = {"type": "record", "name": "All", "fields": [
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "digest", "type": {"type": "fixed", "name": "D", "size": 4}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": {"type": "enum", "name": "T", "symbols": ["a", "b"]}}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", {"type": "int", "logicalType": "date"}]}},
]}


def _params(**options):
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "events"}
    base.update({k.lower(): v for k, v in options.items()})
    return base


def test_the_decoder_types_become_spark_column_types():
    from fastkc.spark.formats import avro_arrow_type

    t = spark_arrow_type(avro_arrow_type(json.dumps(EVERYTHING)))
    assert t.field("kind").type == pa.string()
    assert t.field("at").type == pa.timestamp("us", tz="UTC")
    assert t.field("local").type == pa.timestamp("us")
    assert t.field("tod").type == pa.int32()
    assert t.field("digest").type == pa.binary()
    assert t.field("price").type == pa.decimal128(9, 2)
    assert t.field("tags").type.value_type == pa.string()
    assert t.field("attrs").type.item_type == pa.date32()
    from pyspark.sql.pandas.types import from_arrow_type

    assert from_arrow_type(t).simpleString() == (
        "struct<kind:string,at:timestamp,local:timestamp_ntz,tod:int,digest:binary,price:decimal(9,2),"
        "tags:array<string>,attrs:map<string,date>>")


def test_a_decoded_column_is_cast_to_its_spark_type():
    import datetime
    import decimal

    from fastkc.schema_registry.avro import AvroDecoder

    at_ns = 1_767_323_045_678_901_234  # fastavro writes timestamp-nanos from the number
    value = {"kind": "Y", "at": at_ns,
             "local": datetime.datetime(2026, 1, 2, 3, 4, 5, 678000), "tod": datetime.time(1, 2, 3, 4000),
             "digest": b"abcd", "price": decimal.Decimal("12.34"), "tags": ["b", "a"],
             "attrs": {"d": datetime.date(2026, 3, 4), "n": None}}
    decoded = AvroDecoder(EVERYTHING).decode_arrow([encode(EVERYTHING, value)])
    column = to_spark_column(decoded, spark_arrow_type(decoded.type))
    [row] = column.to_pylist()
    assert row["kind"] == "Y" and row["tags"] == ["b", "a"] and row["digest"] == b"abcd"
    # nanoseconds truncated to Spark's microseconds
    at = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(microseconds=at_ns // 1000)
    assert row["at"] == at and row["local"] == value["local"]
    assert row["tod"] == 3_723_004  # milliseconds of the day
    assert row["price"] == decimal.Decimal("12.34")
    assert dict(row["attrs"]) == value["attrs"]


UNIONS = {"type": "record", "name": "Unions", "fields": [
    {"name": "u", "type": ["null", "int", {"type": "enum", "name": "E", "symbols": ["P", "Q"]},
                           {"type": "long", "logicalType": "timestamp-nanos"}]},
    {"name": "both", "type": ["string", "double"]},
    {"name": "l", "type": {"type": "array", "items": ["string", {"type": "record", "name": "In", "fields": [
        {"name": "x", "type": ["int", "string"]}]}]}},
    {"name": "m", "type": {"type": "map", "values": ["null", "boolean", "long"]}},
]}


def test_a_union_of_several_types_is_spark_avros_struct_of_members():
    from fastkc.spark.formats import avro_arrow_type

    t = spark_arrow_type(avro_arrow_type(json.dumps(UNIONS)))
    # spark-avro: the branches besides null, in order, as member0, member1, ...
    # each nullable; the struct nullable when null is a branch
    assert t.field("u") == pa.field("u", pa.struct([
        pa.field("member0", pa.int32()), pa.field("member1", pa.string()),
        pa.field("member2", pa.timestamp("us", tz="UTC"))]), nullable=True)
    assert t.field("both") == pa.field("both", pa.struct([
        pa.field("member0", pa.string()), pa.field("member1", pa.float64())]), nullable=False)
    assert not t.field("l").type.value_field.nullable and t.field("m").type.item_field.nullable
    from pyspark.sql.pandas.types import from_arrow_type

    assert from_arrow_type(t).simpleString() == (
        "struct<u:struct<member0:int,member1:string,member2:timestamp>,both:struct<member0:string,member1:double>,"
        "l:array<struct<member0:string,member1:struct<x:struct<member0:int,member1:string>>>>,"
        "m:map<string,struct<member0:boolean,member1:bigint>>>")


def test_a_union_column_becomes_the_member_structs_one_member_set_per_row():
    from fastkc.schema_registry.avro import AvroDecoder

    rows = [{"u": None, "both": "s", "l": ["a", {"x": 1}], "m": {"n": None, "b": True, "l": 5}},
            {"u": 7, "both": 0.5, "l": [], "m": {}},
            {"u": "Q", "both": "t", "l": [{"x": "y"}], "m": {"l": -1}},
            {"u": 1_767_323_045_678_901_234, "both": 1.5, "l": ["z"], "m": {}}]
    expected_u = [None, {"member0": 7, "member1": None, "member2": None},
                  {"member0": None, "member1": "Q", "member2": None}]
    decoded = AvroDecoder(UNIONS).decode_arrow([encode(UNIONS, r) for r in rows])
    target = spark_arrow_type(decoded.type)
    column = to_spark_column(decoded, target)
    column.validate(full=True)
    assert column.type == target
    got = column.to_pylist()
    assert [r["u"] for r in got[:3]] == expected_u
    assert got[3]["u"]["member2"].timestamp() == 1_767_323_045.678901  # nanoseconds cut to microseconds
    assert [r["both"] for r in got] == [{"member0": "s", "member1": None}, {"member0": None, "member1": 0.5},
                                        {"member0": "t", "member1": None}, {"member0": None, "member1": 1.5}]
    assert got[0]["l"] == [{"member0": "a", "member1": None},
                           {"member0": None, "member1": {"x": {"member0": 1, "member1": None}}}]
    assert got[2]["l"] == [{"member0": None, "member1": {"x": {"member0": None, "member1": "y"}}}]
    assert got[0]["m"] == [("n", None), ("b", {"member0": True, "member1": None}),
                           ("l", {"member0": None, "member1": 5})]
    # a slice of a batch (pyarrow's union type_codes and offsets ignore its offset) gives the same rows
    for start, length in ((1, 2), (2, 2), (3, 1), (0, 0)):
        part = to_spark_column(decoded.slice(start, length), target)
        part.validate(full=True)
        assert part.to_pylist() == got[start:start + length]


def test_binary_stays_the_default():
    assert parse_formats(_params(), ("events",)) is None
    assert parse(_params(), streaming=False).formats is None


@pytest.mark.parametrize("options, message", [
    ({"valueFormat": "thrift", "schema.registry.url": "http://r"}, "valueFormat must be one of"),
    ({"valueFormat": "avro"}, "schema.registry.url"),
    ({"valueFormat": "protobuf"}, "schema.registry.url"),
    ({"valueFormat": "json", "schema.registry.url": "http://r", "valueSchema": "{not json"}, "not JSON"),
    ({"valueFormat": "avro", "schema.registry.url": "http://r", "valueSchema": "{not json"}, "not JSON"),
])
def test_bad_format_options_are_option_errors(options, message):
    with pytest.raises(SparkKafkaOptionError, match=message):
        parse(_params(**options), streaming=False)


def test_the_latest_schema_needs_one_topic_or_a_subject():
    params = _params(valueFormat="avro", **{"schema.registry.url": "http://r"})
    params["subscribe"] = "a,b"
    with pytest.raises(SparkFormatError, match="valueSubject"):
        parse_formats(params, ("a", "b"))


def test_a_given_reader_schema_is_not_looked_up():
    formats = parse_formats(_params(keyFormat="avro", keySchema='"string"', **{"schema.registry.url": "http://r"}),
                            ("events",))
    assert formats.reader_schema("key") == '"string"' and formats.reader_schema("value") is None
    assert formats.arrow_type("key") == pa.string() and formats.arrow_type("value") is None
    assert dict(formats.registry) == {"url": "http://r"}


def test_a_fields_type_is_made_once_a_process(monkeypatch):
    # planning and every partition a reused Python worker reads ask again
    import fastkc.spark.formats as formats_module

    made = []
    real = formats_module.avro_arrow_type
    monkeypatch.setattr(formats_module, "avro_arrow_type", lambda schema: made.append(schema) or real(schema))
    schema = json.dumps({"type": "record", "name": "Once", "fields": [{"name": "a", "type": "long"}]})
    formats = parse_formats(_params(valueFormat="avro", valueSchema=schema, **{"schema.registry.url": "http://r"}),
                            ("events",))
    first = formats.arrow_type("value")
    again = parse_formats(_params(valueFormat="avro", valueSchema=schema, **{"schema.registry.url": "http://r"}),
                          ("events",)).arrow_type("value")
    assert first is again and first == pa.struct([pa.field("a", pa.int64(), False)])
    assert made.count(schema) == 1


def test_a_decimal_spark_cannot_hold_fails_at_planning():
    wide = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 0}
    with pytest.raises(SparkFormatError, match="38"):
        parse_formats(_params(valueFormat="avro", valueSchema=json.dumps(wide), **{"schema.registry.url": "http://r"}),
                      ("events",))


def test_the_latest_version_of_the_topic_subject_is_the_reader(monkeypatch):
    asked = []

    class Registry:
        def get_latest_version(self, subject):
            from fastkc.schema_registry.client import RegisteredSchema, Schema

            asked.append(subject)
            return RegisteredSchema(3, None, Schema('{"type": "record", "name": "R", "fields": '
                                                    '[{"name": "a", "type": "int"}]}'), subject, 2)

    formats = parse_formats(_params(valueFormat="avro", **{"schema.registry.url": "http://r"}), ("events",),
                            registry_client=Registry())
    assert asked == ["events-value"]
    assert formats.arrow_type("value") == pa.struct([pa.field("a", pa.int32(), nullable=False)])
