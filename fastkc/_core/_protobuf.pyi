# Stub of the compiled Protobuf decoder (fastkc/_core/_protobuf.pyx); checked
# against the built module by tests/quality/test_stubs.py (mypy.stubtest).
from collections.abc import Iterable, Sequence
from typing import Any, final

from fastkc.schema_registry.protobuf_schema import MessageInfo

@final
class ProtobufDecoder:
    def __new__(cls, code: Sequence[int], messages: Sequence[MessageInfo]) -> ProtobufDecoder: ...
    def decode_many(self, payloads: Iterable[bytes | bytearray | memoryview]) -> list[Any]: ...
    def decode_prefixed(self, values: list[Any], start: int, prefix: bytes) -> list[Any]: ...
