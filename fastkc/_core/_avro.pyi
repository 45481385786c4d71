# Stub of the compiled Avro decoder (fastkc/_core/_avro.pyx); checked
# against the built module by tests/quality/test_stubs.py (mypy.stubtest).
from collections.abc import Iterable, Sequence
from typing import Any, final

@final
class Decoder:
    def __new__(cls, code: Sequence[int], consts: Sequence[Any], allow_trailing: bool = False) -> Decoder: ...
    def decode_many(self, payloads: Iterable[bytes | bytearray | memoryview]) -> list[Any]: ...
