"""The benchmarks' Schema Registry event, in each format: the ~15-field page
event of benchmarks/avro_decode.py (strings, longs, a nested record, a
nullable string, an array, a map, a timestamp, a decimal, an enum) as an
Avro record (`avro_decode.EVENT`), a Protobuf message (`PageEvent`, built
here from descriptors, no protoc) and a JSON object under a JSON Schema
(`JSON_SCHEMA`). Event i carries `sequence` = i in every format: what the
benchmarks sum to touch every value."""
import datetime

from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2, wrappers_pb2
from google.protobuf.message_factory import GetMessageClass

from benchmarks.avro_decode import event_value

_F = descriptor_pb2.FieldDescriptorProto


def _page_event_file():
    proto = descriptor_pb2.FileDescriptorProto(name="bench/page_event.proto", package="bench", syntax="proto3")
    proto.dependency.extend(["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"])
    kind = proto.enum_type.add(name="Kind")
    for number, symbol in enumerate(["VIEW", "CLICK", "BUY"]):
        kind.value.add(name=symbol, number=number)
    device = proto.message_type.add(name="Device")
    for number, (name, kind_) in enumerate([("os", _F.TYPE_STRING), ("version", _F.TYPE_STRING),
                                            ("screen_w", _F.TYPE_INT32), ("screen_h", _F.TYPE_INT32)], 1):
        device.field.add(name=name, number=number, type=kind_, label=_F.LABEL_OPTIONAL)
    event = proto.message_type.add(name="PageEvent")
    entry = event.nested_type.add(name="PropsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    fields = [
        ("event_id", _F.TYPE_STRING, None, False), ("user_id", _F.TYPE_INT64, None, False),
        ("session_id", _F.TYPE_STRING, None, False), ("sequence", _F.TYPE_INT64, None, False),
        ("url", _F.TYPE_STRING, None, False), ("referrer", _F.TYPE_MESSAGE, ".google.protobuf.StringValue", False),
        ("country", _F.TYPE_STRING, None, False), ("duration_ms", _F.TYPE_INT32, None, False),
        ("is_bot", _F.TYPE_BOOL, None, False), ("kind", _F.TYPE_ENUM, ".bench.Kind", False),
        ("device", _F.TYPE_MESSAGE, ".bench.Device", False), ("tags", _F.TYPE_STRING, None, True),
        ("props", _F.TYPE_MESSAGE, ".bench.PageEvent.PropsEntry", True),
        ("ts", _F.TYPE_MESSAGE, ".google.protobuf.Timestamp", False), ("amount", _F.TYPE_STRING, None, False),
    ]
    for number, (name, kind_, type_name, repeated) in enumerate(fields, 1):
        field = event.field.add(name=name, number=number, type=kind_,
                                label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
        if type_name:
            field.type_name = type_name
    return proto


_POOL = descriptor_pool.DescriptorPool()
for _module in (timestamp_pb2, wrappers_pb2):
    _dependency = descriptor_pb2.FileDescriptorProto()
    _module.DESCRIPTOR.CopyToProto(_dependency)
    _POOL.Add(_dependency)
_POOL.Add(_page_event_file())
PageEvent = GetMessageClass(_POOL.FindMessageTypeByName("bench.PageEvent"))


def protobuf_event(i):
    """Event i as a PageEvent message (the Avro event's values)."""
    avro = event_value(i)
    message = PageEvent(event_id=avro["event_id"], user_id=avro["user_id"], session_id=avro["session_id"],
                        sequence=i, url=avro["url"], country=avro["country"], duration_ms=avro["duration_ms"],
                        is_bot=avro["is_bot"], kind=("VIEW", "CLICK", "BUY").index(avro["kind"]),
                        tags=avro["tags"], props=avro["props"], amount=str(avro["amount"]))
    if avro["referrer"] is not None:
        message.referrer.value = avro["referrer"]
    message.device.os, message.device.version = avro["device"]["os"], avro["device"]["version"]
    message.device.screen_w, message.device.screen_h = avro["device"]["screen_w"], avro["device"]["screen_h"]
    message.ts.FromDatetime(avro["ts"])
    return message


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "PageEvent", "type": "object",
    "properties": {
        "event_id": {"type": "string"}, "user_id": {"type": "integer"}, "session_id": {"type": "string"},
        "sequence": {"type": "integer"}, "url": {"type": "string"}, "referrer": {"type": ["string", "null"]},
        "country": {"type": "string"}, "duration_ms": {"type": "integer"}, "is_bot": {"type": "boolean"},
        "kind": {"type": "string", "enum": ["VIEW", "CLICK", "BUY"]},
        "device": {"type": "object", "properties": {
            "os": {"type": "string"}, "version": {"type": "string"}, "screen_w": {"type": "integer"},
            "screen_h": {"type": "integer"}}, "required": ["os", "version", "screen_w", "screen_h"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "props": {"type": "object", "additionalProperties": {"type": "string"}},
        "ts": {"type": "string", "format": "date-time"}, "amount": {"type": "string"},
    },
    "required": ["event_id", "user_id", "sequence", "ts"],
}


def json_event(i):
    """Event i as a JSON object (the Avro event's values; ts in RFC 3339, amount as text)."""
    avro = dict(event_value(i))
    ts: datetime.datetime = avro["ts"]
    avro["ts"] = ts.isoformat().replace("+00:00", "Z")
    avro["amount"] = str(avro["amount"])
    return avro
