"""fastkc.deserializers: which deserializers run per batch, and how a
partition's records get their keys and values from one deserialize_many call
(the fetch buffer and the share fetch machine use it; the consumers' tests
are tests/integration/test_batch_deserializer_consumers.py)."""
import gc
import sys

import pytest

from fastkc import records as R
from fastkc.config import consumer_config
from fastkc.deserializers import RecordDeserializers, call_form, is_batch_deserializer, per_record
from fastkc.errors import KafkaConfigurationError
from fastkc.structs import ConsumerRecord, ShareRecord
from tests.support import batchgen as g


class Failure(Exception):
    def __init__(self, offset):
        super().__init__("bad value at {0}".format(offset))
        self.offset = offset


class Upper:
    """A batch deserializer (not callable): upper-cases, fails on b"BAD" at its offset."""

    def __init__(self):
        self.calls = []

    def deserialize_many(self, values, topic, partition, offsets, headers_list=None, field="value"):
        self.calls.append((list(values), topic, partition, list(offsets), headers_list, field))
        for value, offset in zip(values, offsets):
            if value == b"BAD":
                raise Failure(offset)
        return [None if v is None else v.upper() for v in values]


def _records(values, base_offset=100):
    blob = g.record_batch([g.Record(key=b"k%d" % i, value=v, headers=[("h", b"%d" % i)], offset_delta=i,
                                    timestamp_delta=i) for i, v in enumerate(values)], base_offset=base_offset)
    return R.decode(blob, topic="t", partition=3)


def test_what_counts_as_a_batch_deserializer():
    class Both(Upper):
        def __call__(self, data):
            raise AssertionError("never per record")

    class KafkaPythonStyle:
        def deserialize(self, topic, headers, data):
            return data

    def plain(data):
        return data

    for batch in (Upper(), Both()):
        assert is_batch_deserializer(batch) and per_record(batch) is None
    for other in (plain, KafkaPythonStyle(), None):
        assert not is_batch_deserializer(other) and per_record(other) is other
    # a deserialize_many that is not callable is no batch deserializer
    not_callable = type("NotCallable", (), {"deserialize_many": 3})()
    assert not is_batch_deserializer(not_callable)


def test_the_consumer_config_takes_a_batch_only_deserializer():
    batch = Upper()
    assert consumer_config({"value_deserializer": batch})["value_deserializer"] is batch
    with pytest.raises(KafkaConfigurationError, match="deserialize_many"):
        consumer_config({"value_deserializer": object()})


def test_one_call_per_field_and_the_record_shape_kept():
    records = _records([b"a", None, b"c"])
    keys, values = Upper(), Upper()
    split = RecordDeserializers(keys, values)
    assert (split.key_per_record, split.value_per_record, split.batched) == (None, None, True)
    out = split.deserialize(records, "t", 3)
    assert out.error is None and out.failed_at is None
    assert [r.value for r in out.records] == [b"A", None, b"C"]
    assert [r.key for r in out.records] == [b"K0", b"K1", b"K2"]
    assert len(keys.calls) == 1 and len(values.calls) == 1
    raw_values, topic, partition, offsets, headers, field = values.calls[0]
    assert (raw_values, topic, partition, offsets, field) == ([b"a", None, b"c"], "t", 3, [100, 101, 102], "value")
    assert headers == [[("h", b"0")], [("h", b"1")], [("h", b"2")]] and keys.calls[0][5] == "key"
    # everything else as built: type, sizes of the raw bytes, offsets, headers
    for before, after in zip(records, out.records):
        assert type(after) is ConsumerRecord
        assert after._replace(key=before.key, value=before.value) == before


def test_only_the_batch_field_is_left_to_the_batch():
    def plain(data):
        return ("plain", data)

    split = RecordDeserializers(plain, Upper())
    assert split.key_per_record is plain and split.value_per_record is None
    records = R.decode(g.record_batch([g.Record(key=b"k", value=b"v", headers=[])]), topic="t",
                       key_deserializer=split.key_per_record, value_deserializer=split.value_per_record)
    out = split.deserialize(records, "t", 0)
    assert [(r.key, r.value) for r in out.records] == [(("plain", b"k"), b"V")]
    # without a batch deserializer the records pass as they are
    assert RecordDeserializers(plain, None).deserialize(records, "t", 0).records is records


def test_a_failure_gives_the_records_before_it_and_its_offset():
    records = _records([b"a", b"b", b"BAD", b"d"])
    values = Upper()
    out = RecordDeserializers(None, values).deserialize(records, "t", 3)
    assert isinstance(out.error, Failure) and out.failed_at == 102
    assert [r.value for r in out.records] == [b"A", b"B"]
    assert values.calls[1][3] == [100, 101]  # the prefix decoded again, the bad one and after not
    # at the first record: nothing before it
    out = RecordDeserializers(None, Upper()).deserialize(_records([b"BAD", b"x"]), "t", 3)
    assert (out.records, out.failed_at) == ([], 100)


def test_an_error_naming_no_record_fails_at_the_first():
    class Broken:
        def deserialize_many(self, values, topic, partition, offsets, headers_list=None, field="value"):
            raise RuntimeError("registry gone")

    out = RecordDeserializers(None, Broken()).deserialize(_records([b"a", b"b"]), "t", 3)
    assert isinstance(out.error, RuntimeError) and (out.records, out.failed_at) == ([], 100)


def test_a_wrong_count_is_an_error():
    class Short:
        def deserialize_many(self, values, topic, partition, offsets, headers_list=None, field="value"):
            return values[1:]

    with pytest.raises(TypeError, match="returned 1 values for 2"):
        RecordDeserializers(None, Short()).replaced(_records([b"a", b"b"]), "t", 3)


def test_share_records_keep_their_type_and_delivery_count():
    blob = g.record_batch([g.Record(key=None, value=b"v%d" % i, headers=[], offset_delta=i) for i in range(3)])
    decoded = R.decode_share(blob, topic="t", partition=0, acquired=[(0, 2, 4)])
    out = RecordDeserializers(None, Upper()).replaced(list(decoded.records), "t", 0)
    assert [type(r) for r in out] == [ShareRecord] * 3
    assert [(r.value, r.delivery_count) for r in out] == [(b"V0", 4), (b"V1", 4), (b"V2", 4)]


def test_a_per_record_failure_is_found_by_replaying_the_raw_records():
    seen = []

    class Boom(Exception):
        pass

    def value_fn(data):
        seen.append(data)
        if data == b"BAD":
            raise Boom("no")
        return data.decode()

    class Keys:  # kafka-python 3's form: deserialize(topic, headers, data)
        def deserialize(self, topic, headers, data):
            return (topic, headers[0][1], data)

    split = RecordDeserializers(Keys(), value_fn)
    raw = _records([b"a", b"b", b"BAD", b"d"])
    out = split.replayed(raw, "t", 3)
    # the user's own error, unchanged; the records before it as the builder would have made them
    assert isinstance(out.error, Boom) and out.failed_at == 102
    built = R.decode(g.record_batch([g.Record(key=b"k%d" % i, value=v, headers=[("h", b"%d" % i)], offset_delta=i,
                                              timestamp_delta=i) for i, v in enumerate([b"a", b"b"])],
                                    base_offset=100), topic="t", partition=3,
                     key_deserializer=Keys(), value_deserializer=value_fn)
    assert out.records == built
    assert b"d" not in seen  # nothing past the bad record is deserialized
    # all pass when replayed: no error, every record
    assert split.replayed(_records([b"a"]), "t", 3).error is None
    assert call_form(None) is None and call_form(value_fn) == (value_fn, False)
    with pytest.raises(TypeError):
        call_form(3)


def test_the_rebuild_is_the_same_in_c_and_in_the_twin(both):
    compiled, twin = both
    records = _records([b"a", None, b"c"])
    shares = [ShareRecord(*record, 2) for record in records]
    value = {"kept": ["alive"]}
    for batch in (records, shares):
        for fields in ([], [(7, [1, 2, 3])], [(6, ["x", "y", "z"]), (7, [value, [], None])]):
            got = compiled.replace_fields(batch, fields)
            assert got == twin.replace_fields(batch, fields)
            assert [type(r) for r in got] == [type(r) for r in batch]
            for index, values in fields:
                assert [r[index] for r in got] == values
            # the new values may be anything, so the records are GC-tracked
            assert all(gc.is_tracked(r) for r in got)
    before = sys.getrefcount(value)
    rebuilt = compiled.replace_fields(records, [(7, [value] * 3)])
    assert sys.getrefcount(value) == before + 3
    del rebuilt
    assert sys.getrefcount(value) == before
    assert compiled.replace_fields([], [(7, [])]) == twin.replace_fields([], [(7, [])]) == []


@pytest.mark.parametrize("fields, records, error", [
    ([(7, [1, 2])], None, ValueError),  # a value short
    ([(13, [1, 2, 3])], None, IndexError),  # ConsumerRecord has 13 slots
    ([(-1, [1, 2, 3])], None, IndexError),
    ([(6, [1, 2, 3])] * 3, None, ValueError),  # key and value at most
    ([(7, [1, 2, 3])], "mixed", TypeError),
    ([(0, [1])], "not tuples", TypeError),
])
def test_a_rebuild_that_cannot_be_is_refused_alike(both, fields, records, error):
    decoded = _records([b"a", b"b", b"c"])
    if records == "mixed":
        records = decoded[:2] + [ShareRecord(*decoded[2], 1)]
    elif records == "not tuples":
        records = [[1, 2]]
    else:
        records = decoded
    for backend in both:
        with pytest.raises(error):
            backend.replace_fields(records, fields)
