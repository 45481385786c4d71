"""The Arrow path of Schema Registry values: AvroDeserializer.deserialize_arrow
(one partition's column → a typed array, cut where the type would change or
a row fails) and fastkc.deserializers.ArrowDeserializers (a take's key and
value columns, cut at the first such row across partitions). The payloads are
written by fastavro, an independent encoder; the consumers' end of it (the
rows given back and fetched again) is tests/unit/test_fetch_arrow_deserialize.py
and, on a real broker and registry, tests/integration/test_avro_arrow_consumers.py."""
import json
import uuid

import pytest

from fastkc.deserializers import ArrowDeserializers, HeaderColumn, is_arrow_deserializer, partition_rows
from fastkc.schema_registry import (
    AvroDeserializer,
    PayloadDecodeError,
    ValueFramingError,
    WriterSchemaError,
    frame_schema_id,
)
from tests.support.avro import encode, fastavro_read
from tests.support.fake_registry import V1, V1_AGAIN, V2, FakeRegistry, event_registry, framed_value, registered

pa = pytest.importorskip("pyarrow")

def _column(values):
    return pa.array(values, pa.binary())


def test_a_column_with_nulls_decodes_as_fastavro_reads_it():
    data = [{"id": i, "tag": None if i % 3 else "t%d" % i} for i in range(7)]
    values = [framed_value(1, V1, d) for d in data]
    values[2] = values[5] = None  # tombstones stay null rows
    out = AvroDeserializer(event_registry()).deserialize_arrow(_column(values), "t", 0, list(range(10, 17)))
    assert len(out) == 7 and out.null_count == 2
    expected = [None if v is None else fastavro_read(V1, v[5:]) for v in values]
    assert out.to_pylist() == expected
    assert out.type == pa.struct([pa.field("id", pa.int64(), nullable=False), pa.field("tag", pa.string())])


@pytest.mark.parametrize("arrow_type", ["binary_view", "large_binary"])
def test_a_view_or_large_binary_column_decodes_as_a_binary_one(arrow_type):
    """A consumer with arrow_zero_copy=True hands binary_view columns; the
    prefix search and the codecs read binary (binary_slice has no
    binary_view kernel)."""
    data = [{"id": i, "tag": None if i % 2 else "a tag past twelve bytes %d" % i} for i in range(5)]
    values = [framed_value(1, V1, d) for d in data]
    values[3] = None
    column = pa.array(values, getattr(pa, arrow_type)())
    out = AvroDeserializer(event_registry()).deserialize_arrow(column, "t", 0, list(range(5)))
    assert out.to_pylist() == [None if v is None else d for v, d in zip(values, data)]


def test_the_run_ends_where_the_writer_schema_changes_the_type():
    deserializer = AvroDeserializer(event_registry())
    values = [framed_value(1, V1, {"id": 1, "tag": "a"}), framed_value(3, V1_AGAIN, {"id": 2, "tag": None}),
              framed_value(2, V2, {"id": 3, "tag": "c", "score": 2.0}),
              framed_value(2, V2, {"id": 4, "tag": None, "score": 1.0})]
    first = deserializer.deserialize_arrow(_column(values), "t", 0, [0, 1, 2, 3])
    # ids 1 and 3 are one Arrow type: one run across the two ids
    assert first.to_pylist() == [{"id": 1, "tag": "a"}, {"id": 2, "tag": None}]
    rest = deserializer.deserialize_arrow(_column(values[2:]), "t", 0, [2, 3])
    assert rest.to_pylist() == [{"id": 3, "tag": "c", "score": 2.0}, {"id": 4, "tag": None, "score": 1.0}]


def test_a_reader_schema_gives_one_type_for_every_writer():
    deserializer = AvroDeserializer(event_registry(), schema_str=json.dumps(V2))
    values = [framed_value(1, V1, {"id": 1, "tag": "a"}), framed_value(2, V2, {"id": 2, "tag": None, "score": 3.0}),
              None, framed_value(3, V1_AGAIN, {"id": 4, "tag": "d"})]
    out = deserializer.deserialize_arrow(_column(values), "t", 0, [0, 1, 2, 3])
    assert out.to_pylist() == [{"id": 1, "tag": "a", "score": 0.5}, {"id": 2, "tag": None, "score": 3.0}, None,
                               {"id": 4, "tag": "d", "score": 0.5}]


def test_a_bad_row_ends_the_run_and_raises_when_a_call_starts_at_it():
    deserializer = AvroDeserializer(event_registry())
    good = [framed_value(1, V1, {"id": i, "tag": None}) for i in range(3)]
    corrupt = frame_schema_id(1) + b"\x02\x07"  # id 1, then a union branch 3 of 2
    values = good[:2] + [corrupt] + good[2:]
    out = deserializer.deserialize_arrow(_column(values), "t", 4, [50, 51, 52, 53])
    assert out.to_pylist() == [{"id": 0, "tag": None}, {"id": 1, "tag": None}]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_arrow(_column(values[2:]), "t", 4, [52, 53])
    assert (info.value.topic, info.value.partition, info.value.offset, info.value.schema_id) == ("t", 4, 52, 1)


@pytest.mark.parametrize("bad, error", [
    (b"\x07\x00\x00\x00\x01\x02", ValueFramingError),  # wrong magic
    (b"\x00\x00", ValueFramingError),  # cut short
    (frame_schema_id(99) + b"\x02", WriterSchemaError),  # unknown id
])
def test_an_unframed_row_or_unknown_id_is_typed_and_named(bad, error):
    deserializer = AvroDeserializer(event_registry())
    values = [framed_value(1, V1, {"id": 1, "tag": None}), bad]
    assert len(deserializer.deserialize_arrow(_column(values), "t", 1, [7, 8])) == 1
    with pytest.raises(error) as info:
        deserializer.deserialize_arrow(_column(values[1:]), "t", 1, [8])
    assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 1, 8)


def test_a_type_with_no_arrow_mapping_is_a_typed_error_at_its_row():
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    deserializer = AvroDeserializer(FakeRegistry({4: registered(node)}))
    values = [framed_value(4, node, {"next": None})]
    with pytest.raises(WriterSchemaError, match="contains itself") as info:
        deserializer.deserialize_arrow(_column(values), "t", 0, [3])
    assert info.value.offset == 3 and info.value.schema_id == 4


def test_a_union_value_is_a_dense_union_column_with_tombstones_in_place():
    schema = ["int", "string"]
    record = {"type": "record", "name": "U", "fields": [{"name": "u", "type": ["null", "int", "string"]}]}
    registry = FakeRegistry({4: registered(schema), 5: registered(record)})
    values = [framed_value(4, schema, 3), None, framed_value(4, schema, "x"), None]
    out = AvroDeserializer(registry).deserialize_arrow(_column(values), "t", 0, [0, 1, 2, 3])
    out.validate(full=True)
    assert out.type == pa.dense_union([pa.field("int", pa.int32(), nullable=False),
                                       pa.field("string", pa.string(), nullable=False)])
    assert out.to_pylist() == [3, None, "x", None]
    rows = [framed_value(5, record, {"u": v}) for v in (None, 1, "s")]
    got = AvroDeserializer(registry).deserialize_arrow(_column(rows), "t", 0, [0, 1, 2])
    assert got.to_pylist() == [{"u": None}, {"u": 1}, {"u": "s"}]
    assert got.field("u").type_codes.to_pylist() == [0, 1, 2]


def test_the_header_form_is_read_row_by_row():
    guid = uuid.UUID("6f1d7a52-5f35-4c2e-9a0b-8d1f2f3a4b5c")
    deserializer = AvroDeserializer(FakeRegistry({str(guid): registered(V1)}))
    header = [("__value_schema_id", b"\x01" + guid.bytes)]
    values = [encode(V1, {"id": i, "tag": "h"}) for i in range(3)]
    out = deserializer.deserialize_arrow(_column(values), "t", 0, [0, 1, 2], [header] * 3)
    assert out.to_pylist() == [{"id": i, "tag": "h"} for i in range(3)]


# --- a take's columns: ArrowDeserializers ----------------------------------------------------

def _take(rows, headers=None):
    """An Arrow take in poll_arrow()'s schema: rows of (partition, offset,
    value); headers[i] row i's (name, value) pairs."""
    from fastkc.records import arrow_schema

    return pa.RecordBatch.from_pylist([
        {"key": None, "value": value, "topic": "t", "partition": partition, "offset": offset,
         "timestamp": None, "timestampType": 0,
         "headers": [{"key": k, "value": v} for k, v in (headers[i] if headers else [])]}
        for i, (partition, offset, value) in enumerate(rows)], schema=arrow_schema())


def test_only_deserializers_with_deserialize_arrow_count():
    avro = AvroDeserializer(event_registry())
    assert is_arrow_deserializer(avro) and not is_arrow_deserializer(lambda b: b)
    assert not ArrowDeserializers(None, lambda b: b) and ArrowDeserializers(None, avro)


def test_partition_rows_follow_the_take():
    take = _take([(0, 5, None), (0, 6, None), (2, 1, None), (1, 9, None)])
    assert [(r.start, r.end, r.partition) for r in partition_rows(take)] == [(0, 2, 0), (2, 3, 2), (3, 4, 1)]
    assert [(r.start, r.end, r.partition) for r in partition_rows(take, 1)] == [(1, 2, 0), (2, 3, 2), (3, 4, 1)]


def test_a_take_is_cut_at_the_first_partition_of_another_type():
    take = _take([(0, 0, framed_value(1, V1, {"id": 0, "tag": None})), (0, 1, None),
                  (1, 0, framed_value(3, V1_AGAIN, {"id": 5, "tag": "x"})),
                  (2, 0, framed_value(2, V2, {"id": 9, "tag": None, "score": 1.0}))])
    out = ArrowDeserializers(None, AvroDeserializer(event_registry())).deserialize(take)
    assert out.num_rows == 3
    assert out.column("value").to_pylist() == [{"id": 0, "tag": None}, None, {"id": 5, "tag": "x"}]
    assert out.schema.field("value").type == pa.struct([pa.field("id", pa.int64(), nullable=False),
                                                         pa.field("tag", pa.string())])
    assert out.column("key").type == pa.binary()  # no key deserializer: raw


def test_a_take_is_cut_before_a_failing_partition_and_a_take_from_there_raises():
    take = _take([(0, 0, framed_value(1, V1, {"id": 0, "tag": None})), (1, 3, b"not framed")])
    deserializers = ArrowDeserializers(None, AvroDeserializer(event_registry()))
    assert deserializers.deserialize(take).num_rows == 1
    with pytest.raises(ValueFramingError) as info:
        deserializers.deserialize(take.slice(1))
    assert (info.value.partition, info.value.offset) == (1, 3)


class _CountingAvro(AvroDeserializer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def deserialize_arrow(self, values, topic, partition, offsets, headers_list=None, field="value"):
        self.calls.append((len(values), partition))
        return super().deserialize_arrow(values, topic, partition, offsets, headers_list, field)


def test_a_take_of_several_partitions_is_decoded_in_one_call():
    rows = [(p, 10 * p + i, framed_value(1, V1, {"id": 10 * p + i, "tag": None if i else "first"}))
            for p in (3, 0, 5) for i in range(4)]
    rows[5] = (0, 1, None)  # a tombstone inside the second partition
    deserializer = _CountingAvro(event_registry())
    out = ArrowDeserializers(None, deserializer).deserialize(_take(rows))
    assert deserializer.calls == [(12, 3)]
    assert out.num_rows == 12
    assert out.column("value").to_pylist() == [None if v is None else fastavro_read(V1, v[5:]) for _, _, v in rows]


def test_a_failing_row_inside_a_later_partition_cuts_the_take_there_and_names_its_partition():
    good = [(p, 100 * p + i, framed_value(1, V1, {"id": i, "tag": None})) for p in (0, 1, 2) for i in range(3)]
    corrupt = frame_schema_id(1) + b"\x02\x07"  # id 1, then a union branch 3 of 2
    rows = good[:4] + [(1, 101, corrupt)] + good[5:]
    deserializers = ArrowDeserializers(None, AvroDeserializer(event_registry()))
    out = deserializers.deserialize(_take(rows))
    assert out.num_rows == 4  # partition 0 whole, and partition 1's row before the bad one
    assert out.column("value").to_pylist() == [fastavro_read(V1, v[5:]) for _, _, v in good[:4]]
    with pytest.raises(PayloadDecodeError) as info:
        deserializers.deserialize(_take(rows).slice(4))
    assert (info.value.partition, info.value.offset) == (1, 101)


def test_a_first_partition_of_only_tombstones_is_delivered_before_the_next_ones_bad_row():
    corrupt = frame_schema_id(1) + b"\x02\x07"
    rows = [(0, 7, None), (0, 8, None), (1, 3, corrupt), (1, 4, framed_value(1, V1, {"id": 1, "tag": None}))]
    deserializer = _CountingAvro(event_registry())
    deserializers = ArrowDeserializers(None, deserializer)
    out = deserializers.deserialize(_take(rows))
    assert out.num_rows == 2 and out.column("value").to_pylist() == [None, None]
    with pytest.raises(PayloadDecodeError) as info:
        deserializers.deserialize(_take(rows).slice(2))
    assert (info.value.partition, info.value.offset) == (1, 3)
    assert deserializer.calls[0] == (2, 0)  # partition by partition: the first holds only nulls


def test_keys_and_values_cut_at_the_earlier_change():
    v2_key = framed_value(2, V2, {"id": 2, "tag": None, "score": 0.0})
    rows = [{"key": framed_value(1, V1, {"id": k, "tag": None}) if k != 2 else v2_key,
             "value": framed_value(1, V1, {"id": k, "tag": "v"})} for k in range(4)]
    from fastkc.records import arrow_schema

    take = pa.RecordBatch.from_pylist([dict(r, topic="t", partition=0, offset=i, timestamp=None, timestampType=0,
                                            headers=[]) for i, r in enumerate(rows)], schema=arrow_schema())
    avro = AvroDeserializer(event_registry())
    out = ArrowDeserializers(avro, avro).deserialize(take)
    assert out.num_rows == 2
    assert out.column("key").to_pylist() == [{"id": 0, "tag": None}, {"id": 1, "tag": None}]
    assert out.column("value").to_pylist() == [{"id": 0, "tag": "v"}, {"id": 1, "tag": "v"}]


GUID = uuid.UUID("6f1d7a52-5f35-4c2e-9a0b-8d1f2f3a4b5c")
TRACE = ("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")


def test_a_header_column_converts_only_the_rows_asked_for():
    headers = [[TRACE], [], [TRACE, ("__value_schema_id", b"\x01" + GUID.bytes)], None]
    column = _take([(0, i, None) for i in range(4)], headers[:3] + [[]]).column("headers")
    lazy = HeaderColumn(column)
    assert len(lazy) == 4 and lazy[0] == [TRACE] and lazy[1] == [] and lazy[2] == headers[2]
    assert lazy[1:3] == [[], headers[2]]
    assert not lazy.any_named("__value_schema_id", [0, 1, 3]) and lazy.any_named("__value_schema_id", [1, 2])
    assert not lazy.any_named("__value_schema_id", [])


@pytest.mark.parametrize("guid_row", [None, 2])
def test_rows_with_headers_decode_as_rows_without(guid_row):
    """Tracing headers on prefix-framed values (the common production case)
    change nothing; a row that carries the schema-id header makes the run
    header-framed from row 0, as when each row's headers are Python lists
    (and both framings of one schema share the run)."""
    registry = FakeRegistry({1: registered(V1), str(GUID): registered(V1)})
    values = [framed_value(1, V1, {"id": i, "tag": "t"}) for i in range(4)]
    headers = [[TRACE] for _ in values]
    if guid_row is not None:
        values[guid_row] = encode(V1, {"id": guid_row, "tag": "g"})
        headers[guid_row] = [TRACE, ("__value_schema_id", b"\x01" + GUID.bytes)]
    take = _take([(0, i, v) for i, v in enumerate(values)], headers)
    deserializer = AvroDeserializer(registry)
    out = ArrowDeserializers(None, deserializer).deserialize(take).column("value")
    as_lists = deserializer.deserialize_arrow(take.column("value"), "t", 0, list(range(4)), headers, "value")
    assert out.to_pylist() == as_lists.to_pylist()
    assert out.to_pylist() == [{"id": i, "tag": "g" if i == guid_row else "t"} for i in range(4)]


# --- the compiled decoder reading an Arrow column in place -------------------------------------

def _decoder():
    from fastkc.schema_registry.avro import AvroDecoder

    return AvroDecoder(V1)


def test_a_column_is_read_in_place_from_a_slice_of_it():
    payloads = [encode(V1, {"id": i, "tag": "x" * i}) for i in range(6)]
    column = _column([b"PFX!!" + p for p in payloads]).slice(2, 3)  # an offset into the buffers
    assert _decoder().decode_arrow_column(column, 5).to_pylist() == [{"id": i, "tag": "x" * i} for i in (2, 3, 4)]
    # binary_view and large_binary columns are cast first
    for kind in (pa.binary_view(), pa.large_binary()):
        assert len(_decoder().decode_arrow_column(column.cast(kind), 5)) == 3


# (offsets past the data buffer: pyarrow refuses to build such an array)
@pytest.mark.parametrize("offsets", [
    [0, 3, 2],  # going back
    [0, 1, 3],  # a row shorter than the skipped prefix
])
def test_offsets_that_do_not_fit_the_buffers_are_refused(offsets):
    data = pa.py_buffer(b"\x00" * 6)
    column = pa.Array.from_buffers(pa.binary(), 2, [None, pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]),
                                                    data])
    with pytest.raises(ValueError, match="data buffer"):
        _decoder().decode_arrow_column(column, 2)


def test_a_column_with_nulls_is_refused_by_the_in_place_reader():
    with pytest.raises(ValueError, match="nulls"):
        _decoder().decode_arrow_column(_column([None, encode(V1, {"id": 1, "tag": None})]), 0)


def test_the_header_form_with_null_rows_names_each_row_by_its_own_offset_and_headers():
    guid = uuid.UUID("6f1d7a52-5f35-4c2e-9a0b-8d1f2f3a4b5c")
    deserializer = AvroDeserializer(FakeRegistry({str(guid): registered(V1)}))
    header = [("__value_schema_id", b"\x01" + guid.bytes)]
    values = [encode(V1, {"id": 0, "tag": None}), None, b"\x02\x07"]  # row 2: union branch 3 of 2
    headers = [header, None, header]  # the null row (a tombstone) carries no header
    out = deserializer.deserialize_arrow(_column(values), "t", 0, [10, 11, 12], headers)
    assert out.to_pylist() == [{"id": 0, "tag": None}, None]
    with pytest.raises(PayloadDecodeError) as info:
        deserializer.deserialize_arrow(_column(values[2:]), "t", 0, [12], headers[2:])
    assert info.value.offset == 12
