"""Protobuf message types for the tests, built from descriptors at import
(no protoc): an `Event` of a realistic shape (scalars of several kinds, a
nested message, repeated, a map, an enum, a oneof, a Timestamp and a
wrapper), registered in a pool of its own so confluent-kafka's
ProtobufSerializer can register its file with the test registry."""
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2, wrappers_pb2  # noqa: F401  (their files enter the pool below)
from google.protobuf.message_factory import GetMessageClass

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED


def _file(name, package):
    proto = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    proto.dependency.extend(["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"])
    place = proto.message_type.add(name="Place")
    place.field.add(name="city", number=1, type=_F.TYPE_STRING, label=_OPTIONAL)
    place.field.add(name="zip", number=2, type=_F.TYPE_INT32, label=_OPTIONAL)
    kind = proto.enum_type.add(name="Kind")
    for number, symbol in enumerate(["KIND_UNSPECIFIED", "KIND_A", "KIND_B"]):
        kind.value.add(name=symbol, number=number)
    event = proto.message_type.add(name="Event")
    fields = [
        ("id", 1, _F.TYPE_INT64, _OPTIONAL, None),
        ("name", 2, _F.TYPE_STRING, _OPTIONAL, None),
        ("score", 3, _F.TYPE_SINT32, _OPTIONAL, None),
        ("level", 4, _F.TYPE_DOUBLE, _OPTIONAL, None),
        ("ok", 5, _F.TYPE_BOOL, _OPTIONAL, None),
        ("digest", 6, _F.TYPE_BYTES, _OPTIONAL, None),
        ("kind", 7, _F.TYPE_ENUM, _OPTIONAL, ".{0}.Kind".format(package)),
        ("where", 8, _F.TYPE_MESSAGE, _OPTIONAL, ".{0}.Place".format(package)),
        ("items", 9, _F.TYPE_DOUBLE, _REPEATED, None),
        ("tags", 10, _F.TYPE_STRING, _REPEATED, None),
        ("at", 11, _F.TYPE_MESSAGE, _OPTIONAL, ".google.protobuf.Timestamp"),
        ("note", 12, _F.TYPE_MESSAGE, _OPTIONAL, ".google.protobuf.StringValue"),
        ("count", 13, _F.TYPE_UINT64, _OPTIONAL, None),
        ("ratio", 14, _F.TYPE_FLOAT, _OPTIONAL, None),
        ("stamp", 15, _F.TYPE_FIXED64, _OPTIONAL, None),
    ]
    for field_name, number, kind_, label, type_name in fields:
        added = event.field.add(name=field_name, number=number, type=kind_, label=label)
        if type_name:
            added.type_name = type_name
    # a oneof: by_user | by_system
    event.oneof_decl.add(name="origin")
    event.field.add(name="by_user", number=16, type=_F.TYPE_STRING, label=_OPTIONAL, oneof_index=0)
    event.field.add(name="by_system", number=17, type=_F.TYPE_INT32, label=_OPTIONAL, oneof_index=0)
    # a map<string, int64>
    entry = event.nested_type.add(name="AttrsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_INT64, label=_OPTIONAL)
    event.field.add(name="attrs", number=18, type=_F.TYPE_MESSAGE, label=_REPEATED,
                    type_name=".{0}.Event.AttrsEntry".format(package))
    return proto


_POOL = descriptor_pool.DescriptorPool()
for _module in (timestamp_pb2, wrappers_pb2):
    _dependency = descriptor_pb2.FileDescriptorProto()
    _module.DESCRIPTOR.CopyToProto(_dependency)
    _POOL.Add(_dependency)
_POOL.Add(_file("fastkc_tests/event.proto", "fastkc.tests"))

Event = GetMessageClass(_POOL.FindMessageTypeByName("fastkc.tests.Event"))
Place = GetMessageClass(_POOL.FindMessageTypeByName("fastkc.tests.Place"))


def event_of(i):
    """Event number i: every field set on some events and left out on others."""
    event = Event(id=i, name="event-{0}".format(i), score=i * 7 - 50, level=i / 8, ok=bool(i % 2),
                  digest=bytes([i % 256] * 4), kind=i % 3, items=[float(i), i / 4][: i % 3],
                  tags=["t{0}".format(j) for j in range(i % 3)], count=i * 1_000_003, ratio=i / 16,
                  stamp=i << 33)
    if i % 4:
        event.where.city = "c{0}".format(i)
        event.where.zip = i
    event.at.seconds = 1_790_000_000 + i
    event.at.nanos = (i % 1000) * 1000
    if i % 5:
        event.note.value = "n{0}".format(i)
    if i % 3 == 1:
        event.by_user = "u{0}".format(i)
    elif i % 3 == 2:
        event.by_system = i
    for j in range(i % 4):
        event.attrs["a{0}".format(j)] = i * j
    return event
