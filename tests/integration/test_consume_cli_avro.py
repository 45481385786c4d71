"""`fastkc consume -s ... avro -r URL` as a process against the real broker
and a real Schema Registry (Apicurio, the `schema_registry` fixture), on keys
and values written by confluent-kafka's AvroSerializer: each printed as
kcat prints Avro (the Avro JSON encoding; checked against fastavro's own
encoder on the same bytes), -J's key_schema_id / value_schema_id, -f's %s,
and a value that is not Schema Registry framing reported on stderr with its
offset (-J: "payload_error"), the other records printed, exit status 1."""
import datetime
import io
import json
import os
import struct
import subprocess
import sys

import pytest

from fastkc.schema_registry.avro_json import without_logical_types
from tests.support.kafka_tools import Message, produce

avro_serde = pytest.importorskip("confluent_kafka.schema_registry.avro")
fastavro = pytest.importorskip("fastavro")
from confluent_kafka import serialization as confluent_serialization  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VALUE_SCHEMA = {
    "type": "record", "name": "Payment", "namespace": "fastkc.cli",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "payer", "type": "string"},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"]}},
        {"name": "memo", "type": ["null", "string", {"type": "record", "name": "Memo",
                                                      "fields": [{"name": "text", "type": "string"}]}]},
    ],
}
KEY_SCHEMA = {"type": "record", "name": "PaymentKey", "namespace": "fastkc.cli",
              "fields": [{"name": "payer", "type": "string"}]}
COUNT = 12
BAD = 3  # written unframed
NULL = 5  # a null value


def _payment(i):
    at = datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=i)
    memo = [None, "caf\u00e9 \"{0}\"".format(i), {"text": "t{0}".format(i)}][i % 3]
    return {"id": i, "payer": "p{0}".format(i % 4), "amount": None if i % 4 == 0 else i / 8, "at": at,
            "state": "NEW" if i % 2 else "DONE", "memo": memo}


def _expected(schema, framed):
    """fastavro's Avro JSON encoding of the payload's raw values (logical
    types off, as avro-c reads them)."""
    raw_schema = fastavro.parse_schema(without_logical_types(schema))
    value = fastavro.schemaless_reader(io.BytesIO(framed[5:]), raw_schema)
    out = io.StringIO()
    fastavro.json_writer(out, raw_schema, [value])
    return json.loads(out.getvalue())


def _fullname_tags_to_short(node):
    """fastavro tags a union's named branch with its full name; avro-c (and
    kcat) with its name."""
    if isinstance(node, dict):
        return {k.rsplit(".", 1)[-1]: _fullname_tags_to_short(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_fullname_tags_to_short(v) for v in node]
    return node


@pytest.fixture(scope="module")
def avro_topic(schema_registry, kafka_broker):
    """(bootstrap, topic, [(key, value)] by offset): COUNT records written
    through confluent-kafka's serializers against the real registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from tests.support.kafka_tools import create_topic, unique_name

    theirs = SchemaRegistryClient({"url": schema_registry.url})
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_name("cli-avro"), partitions=1)
    values = avro_serde.AvroSerializer(theirs, json.dumps(VALUE_SCHEMA))
    keys = avro_serde.AvroSerializer(theirs, json.dumps(KEY_SCHEMA))
    field = confluent_serialization.MessageField
    messages = []
    for i in range(COUNT):
        payment = _payment(i)
        key = keys({"payer": payment["payer"]}, confluent_serialization.SerializationContext(topic, field.KEY))
        if i == BAD:
            value = b"not avro"
        elif i == NULL:
            value = None
        else:
            value = values(payment, confluent_serialization.SerializationContext(topic, field.VALUE))
        messages.append(Message(key=key, value=value, partition=0))
    written = produce(bootstrap, topic, messages)
    return bootstrap, topic, [(w.key, w.value) for w in sorted(written, key=lambda w: w.offset)]


def _consume(bootstrap, registry_url, topic, *argv):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "fastkc.cli", "consume", "-b", bootstrap, "-t", topic,
                           "-o", "beginning", "-e", "-r", registry_url, *argv],
                          capture_output=True, timeout=120, cwd=ROOT, env=env)


def test_json_output_has_each_key_and_value_as_avro_json_with_its_schema_id(avro_topic, schema_registry):
    bootstrap, topic, written = avro_topic
    done = _consume(bootstrap, schema_registry.url, topic, "-J", "-s", "avro")
    assert done.returncode == 1, done.stderr  # the unframed value: reported, the rest printed
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["offset"] for line in lines] == list(range(COUNT))
    for offset, (line, (key, value)) in enumerate(zip(lines, written)):
        assert line["key"] == _fullname_tags_to_short(_expected(KEY_SCHEMA, key))
        assert line["key_schema_id"] == struct.unpack(">I", key[1:5])[0]
        if offset == BAD:
            assert line["payload"] is None and "not Schema Registry framing" in line["payload_error"]
            assert "value_schema_id" not in line
        elif offset == NULL:
            assert line["payload"] is None and "payload_error" not in line and "value_schema_id" not in line
        else:
            assert line["payload"] == _fullname_tags_to_short(_expected(VALUE_SCHEMA, value))
            assert line["value_schema_id"] == struct.unpack(">I", value[1:5])[0]
    errors = done.stderr.decode().splitlines()
    assert [e for e in errors if "Failed to deserialize" in e] == [
        e for e in errors if "Failed to deserialize value in message in {0} [0] at offset {1}:".format(
            topic, BAD) in e]
    assert len([e for e in errors if "Failed to deserialize" in e]) == 1


def test_format_output_prints_the_json_text(avro_topic, schema_registry):
    bootstrap, topic, written = avro_topic
    done = _consume(bootstrap, schema_registry.url, topic, "-f", "%o %s\\n", "-s", "value=avro")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode("ascii").splitlines()
    assert len(lines) == COUNT
    for offset, (line, (_key, value)) in enumerate(zip(lines, written)):
        number, _, text = line.partition(" ")
        assert int(number) == offset
        if offset in (BAD, NULL):
            assert text == ""
        else:
            assert json.loads(text) == _fullname_tags_to_short(_expected(VALUE_SCHEMA, value))
            assert ": " in text and ", " in text  # jansson's separators, as kcat prints
