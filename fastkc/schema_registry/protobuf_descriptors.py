"""Registry Protobuf schemas → protobuf descriptors.

The registry holds a Protobuf schema either as `.proto` text or in the
serialized form: a base64 FileDescriptorProto (what confluent-kafka's
ProtobufSerializer registers, and what Confluent's registry answers with
`?format=serialized`). This module reads the serialized form: each schema
(the writer's, and every file it references, dependencies first) goes into
a DescriptorPool of its own, with the well-known types' files, and a frame's
message indexes pick the message (the path of indexes through the file's
top-level messages, then their nested ones, as confluent-kafka's framing
defines it).

`.proto` text is refused with a typed error (ProtobufSchemaError) that says
so: parsing it needs protoc, which is not a dependency of fastkc. A
deserializer given a `message_type` never needs the registry's schema.
"""
from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError

from fastkc.schema_registry.protobuf_errors import ProtobufSchemaError

__all__ = ["decode_serialized", "is_serialized", "message_at", "pool_with"]

# The well-known types' files a schema may import without a registry
# reference (confluent-kafka's serializer never registers them), each after
# the files it imports (type.proto imports any and source_context, api.proto type).
_WELL_KNOWN_MODULES = (
    "any_pb2", "duration_pb2", "empty_pb2", "field_mask_pb2", "source_context_pb2", "struct_pb2",
    "timestamp_pb2", "type_pb2", "api_pb2", "wrappers_pb2", "descriptor_pb2",
)


def is_serialized(schema_str: str) -> bool:
    """Whether `schema_str` looks like the serialized form (base64 of a
    FileDescriptorProto) rather than `.proto` text."""
    try:
        decode_serialized(schema_str, "schema")
    except ProtobufSchemaError:
        return False
    return True


def decode_serialized(schema_str: str, what: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of a serialized-form schema."""
    try:
        raw = base64.b64decode(schema_str, validate=True)
    except (binascii.Error, ValueError):
        raise ProtobufSchemaError("{0} is not the serialized form (base64 FileDescriptorProto): it looks like "
                                  ".proto text, which fastkc does not parse".format(what)) from None
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(raw)
    except DecodeError as exc:
        raise ProtobufSchemaError("{0}: the base64 is not a FileDescriptorProto: {1}".format(what, exc)) from None


@functools.cache
def _well_known_files() -> tuple[descriptor_pb2.FileDescriptorProto, ...]:
    import importlib

    files = []
    for module in _WELL_KNOWN_MODULES:
        loaded = importlib.import_module("google.protobuf." + module)
        proto = descriptor_pb2.FileDescriptorProto()
        loaded.DESCRIPTOR.CopyToProto(proto)
        files.append(proto)
    return tuple(files)


def pool_with(root: descriptor_pb2.FileDescriptorProto,
              referenced: Mapping[str, descriptor_pb2.FileDescriptorProto]) -> FileDescriptor:
    """`root`'s FileDescriptor, built in a new pool with the well-known types
    and `referenced` (reference name → file, dependencies first). The
    referenced files are added under their reference names, which is how
    `root` imports them."""
    pool = descriptor_pool.DescriptorPool()
    present: set[str] = set()
    for proto in _well_known_files():
        pool.Add(proto)
        present.add(proto.name)
    try:
        for name, proto in referenced.items():
            if name in present:
                continue
            named = descriptor_pb2.FileDescriptorProto()
            named.CopyFrom(proto)
            named.name = name
            pool.Add(named)
            present.add(name)
        if root.name in present:
            root = _renamed(root, "fastkc_root_" + root.name)
        pool.Add(root)
        return pool.FindFileByName(root.name)
    except (TypeError, KeyError, ValueError) as exc:
        raise ProtobufSchemaError("the schema's files do not build: {0}".format(exc)) from None


def _renamed(proto: descriptor_pb2.FileDescriptorProto, name: str) -> descriptor_pb2.FileDescriptorProto:
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(proto)
    copy.name = name
    return copy


def message_at(file: FileDescriptor, indexes: Sequence[int]) -> Descriptor:
    """The message a frame's message indexes name: indexes[0] among the
    file's top-level messages, each next one among the previous one's
    nested messages."""
    if not indexes:
        raise ProtobufSchemaError("no message index")
    # the file's top-level messages in declaration order (the index is a position in it)
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    candidates = [file.message_types_by_name[m.name] for m in proto.message_type]
    message: Descriptor | None = None
    for depth, index in enumerate(indexes):
        if index < 0 or index >= len(candidates):
            raise ProtobufSchemaError("message index {0} (at depth {1}) is out of range: {2} message(s) there"
                                      .format(index, depth, len(candidates)))
        message = candidates[index]
        candidates = list(message.nested_types)
    assert message is not None
    return message
