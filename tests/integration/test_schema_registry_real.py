"""fastkc's SchemaRegistryClient and framing against a real Schema Registry.

The registry is Apicurio's Confluent-compatible API (the `schema_registry`
fixture); the schemas and the framed bytes are written by confluent-kafka's
own client and serializers, so fastkc reads what it did not write.
"""
import io
import json
import uuid

import pytest

from fastkc.schema_registry import (
    SchemaNotFoundError,
    SchemaRegistryError,
    split_value,
)
from tests.support.kafka_tools import unique_name

sr = pytest.importorskip("confluent_kafka.schema_registry")
avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
protobuf_serde = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
json_serde = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
fastavro = pytest.importorskip("fastavro")
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

EVENT = {
    "type": "record", "name": "Event", "namespace": "fastkc.test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tag", "type": ["null", "string"], "default": None},
    ],
}


def _unique(prefix):
    return unique_name(prefix)


def _context(topic):
    return SerializationContext(topic, MessageField.VALUE)


def test_avro_serializer_bytes_split_and_their_schema_read_back(registries):
    theirs, ours = registries
    topic = _unique("avro")
    serializer = avro_serde.AvroSerializer(theirs, json.dumps(EVENT))
    record = {"id": 42, "name": "alpha", "tag": None}
    value = serializer(record, _context(topic))
    frame = split_value(value, topic=topic, partition=0, offset=0)
    assert frame.guid is None and frame.message_indexes is None
    schema = ours.get_schema(frame.schema_id)
    assert schema.schema_type == "AVRO" and schema.references == ()
    assert json.loads(schema.schema_str) == json.loads(theirs.get_schema(frame.schema_id).schema_str)
    # the payload boundary is right: the rest of the bytes is exactly the record
    parsed = fastavro.parse_schema(json.loads(schema.schema_str))
    payload = io.BytesIO(frame.payload)
    assert fastavro.schemaless_reader(payload, parsed) == record
    assert payload.read() == b""
    latest = ours.get_latest_version(topic + "-value")
    assert (latest.schema_id, latest.subject, latest.version) == (frame.schema_id, topic + "-value", 1)
    assert ours.get_version(topic + "-value", 1).schema_id == frame.schema_id


def test_references_resolve_recursively(registries):
    theirs, ours = registries
    base_subject, mid_subject, top_subject = _unique("base"), _unique("mid"), _unique("top")
    base = {"type": "record", "name": "Base", "namespace": "r", "fields": [{"name": "v", "type": "int"}]}
    mid = {"type": "record", "name": "Mid", "namespace": "r", "fields": [{"name": "b", "type": "r.Base"}]}
    top = {"type": "record", "name": "Top", "namespace": "r",
           "fields": [{"name": "m", "type": "r.Mid"}, {"name": "b", "type": "r.Base"}]}
    theirs.register_schema(base_subject, sr.Schema(json.dumps(base), "AVRO"))
    theirs.register_schema(mid_subject, sr.Schema(json.dumps(mid), "AVRO",
                                                  [sr.SchemaReference("r.Base", base_subject, 1)]))
    top_schema = sr.Schema(json.dumps(top), "AVRO", [sr.SchemaReference("r.Mid", mid_subject, 1),
                                                     sr.SchemaReference("r.Base", base_subject, 1)])
    top_id = theirs.register_schema(top_subject, top_schema)
    resolved = ours.resolve(top_id)
    assert [r.name for r in resolved.schema.references] == ["r.Mid", "r.Base"]
    assert list(resolved.referenced) == ["r.Base", "r.Mid"]
    assert json.loads(resolved.referenced["r.Mid"].schema_str) == mid
    assert resolved.referenced["r.Mid"].references[0].subject == base_subject
    assert ours.is_cached(top_id)


def test_avro_with_references_through_confluent_serializer(registries):
    theirs, ours = registries
    topic = _unique("refs")
    base_subject = _unique("base")
    base = {"type": "record", "name": "Base", "namespace": "q", "fields": [{"name": "v", "type": "int"}]}
    top = {"type": "record", "name": "Top", "namespace": "q", "fields": [{"name": "b", "type": "q.Base"}]}
    theirs.register_schema(base_subject, sr.Schema(json.dumps(base), "AVRO"))
    top_schema = sr.Schema(json.dumps(top), "AVRO", [sr.SchemaReference("q.Base", base_subject, 1)])
    theirs.register_schema(topic + "-value", top_schema)
    serializer = avro_serde.AvroSerializer(theirs, top_schema, conf={"auto.register.schemas": False,
                                                                      "use.latest.version": True})
    value = serializer({"b": {"v": 7}}, _context(topic))
    frame = split_value(value)
    resolved = ours.resolve(frame.schema_id)
    assert list(resolved.referenced) == ["q.Base"]
    named = {"q.Base": fastavro.parse_schema(json.loads(resolved.referenced["q.Base"].schema_str))}
    parsed = fastavro.parse_schema(json.loads(resolved.schema.schema_str), named_schemas=named)
    assert fastavro.schemaless_reader(io.BytesIO(frame.payload), parsed) == {"b": {"v": 7}}


def _protobuf_classes():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file_proto = descriptor_pb2.FileDescriptorProto(name=_unique("fastkc_test") + ".proto", package="fastkc.test",
                                                    syntax="proto3")
    first = file_proto.message_type.add(name="First")
    first.field.add(name="a", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    second = file_proto.message_type.add(name="Second")
    inner = second.nested_type.add(name="Inner")
    inner.field.add(name="s", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    first_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("fastkc.test.First"))
    inner_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("fastkc.test.Second.Inner"))
    return first_cls, inner_cls


def test_protobuf_serializer_message_indexes(registries):
    theirs, ours = registries
    first_cls, inner_cls = _protobuf_classes()
    for cls, message, expected_indexes in ((first_cls, first_cls(a=5), (0,)),
                                           (inner_cls, inner_cls(s="hi"), (1, 0))):
        topic = _unique("proto")
        serializer = protobuf_serde.ProtobufSerializer(cls, theirs, conf={"use.deprecated.format": False})
        value = serializer(message, _context(topic))
        frame = split_value(value, protobuf=True, topic=topic)
        assert frame.message_indexes == expected_indexes
        assert cls.FromString(frame.payload) == message
        schema = ours.get_schema(frame.schema_id)
        assert schema.schema_type == "PROTOBUF"
        assert "message Second" in schema.schema_str or schema.schema_str == theirs.get_schema(
            frame.schema_id).schema_str


def test_json_serializer(registries):
    theirs, ours = registries
    topic = _unique("json")
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Thing", "type": "object",
              "properties": {"n": {"type": "integer"}}}
    serializer = json_serde.JSONSerializer(json.dumps(schema), theirs)
    value = serializer({"n": 3}, _context(topic))
    frame = split_value(value)
    assert json.loads(frame.payload) == {"n": 3}
    got = ours.get_schema(frame.schema_id)
    assert got.schema_type == "JSON" and json.loads(got.schema_str) == schema


def test_register_and_lookup_agree_with_confluent(registries):
    theirs, ours = registries
    subject = _unique("reg")
    from fastkc.schema_registry import Schema

    schema = Schema(json.dumps(EVENT), "AVRO")
    schema_id = ours.register_schema(subject, schema)
    assert ours.register_schema(subject, schema) == schema_id
    looked_up = ours.lookup_schema(subject, schema)
    assert (looked_up.schema_id, looked_up.version, looked_up.subject) == (schema_id, 1, subject)
    theirs_registered = theirs.lookup_schema(subject, sr.Schema(json.dumps(EVENT), "AVRO"))
    assert theirs_registered.schema_id == schema_id


def test_unknown_id_subject_and_guid_are_typed(registries, schema_registry):
    _, ours = registries
    with pytest.raises(SchemaNotFoundError) as info:
        ours.get_schema(987654321)
    assert info.value.error_code == 40403 and "987654321" in str(info.value)
    assert schema_registry.url in info.value.url
    with pytest.raises(SchemaRegistryError) as info:
        ours.get_latest_version(_unique("missing"))
    assert info.value.error_code in (40401, 40402) and info.value.http_status_code == 404
    # Apicurio 2.4 has no /schemas/guids/ (Confluent 8's): a typed error naming the GUID
    guid = str(uuid.uuid4())
    with pytest.raises(SchemaRegistryError) as info:
        ours.get_schema_by_guid(guid)
    assert guid in str(info.value) and info.value.http_status_code == 404


def test_framing_of_records_read_back_from_kafka(registries, make_topic, kafka_broker):
    from confluent_kafka import Producer

    from fastkc import KafkaConsumer

    theirs, ours = registries
    topic = make_topic(partitions=1)
    serializer = avro_serde.AvroSerializer(theirs, json.dumps(EVENT))
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    sent = [{"id": i, "name": "n{0}".format(i), "tag": None if i % 2 else "t"} for i in range(5)]
    for record in sent:
        producer.produce(topic, serializer(record, _context(topic)))
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        records = []
        for message in consumer:
            records.append(message)
            if len(records) == len(sent):
                break
    finally:
        consumer.close()
    frames = [split_value(r.value, topic=r.topic, partition=r.partition, offset=r.offset) for r in records]
    schemas = ours.prefetch(f.schema_id for f in frames)
    assert len(schemas) == 1
    parsed = fastavro.parse_schema(json.loads(schemas[frames[0].schema_id].schema.schema_str))
    assert [fastavro.schemaless_reader(io.BytesIO(f.payload), parsed) for f in frames] == sent


def test_one_client_shared_by_decode_threads(registries):
    from concurrent.futures import ThreadPoolExecutor

    theirs, ours = registries
    ids = []
    for i in range(6):
        schema = dict(EVENT, name="Shared{0}".format(i))
        ids.append(theirs.register_schema(_unique("shared"), sr.Schema(json.dumps(schema), "AVRO")))
    # eight threads ask for overlapping sets at once, as a consumer's decode threads would
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda n: ours.prefetch(ids[n % 3:n % 3 + 4]), range(16)))
    for answer in answers:
        for schema_id, resolved in answer.items():
            assert json.loads(resolved.schema.schema_str)["name"] == "Shared{0}".format(ids.index(schema_id))
    assert all(ours.is_cached(i) for i in ids)
