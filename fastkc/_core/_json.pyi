# Stub of the compiled JSON → Arrow parser (fastkc/_core/_json.pyx); checked
# against the built module by tests/quality/test_stubs.py (mypy.stubtest).
from collections.abc import Iterable, Sequence
from typing import Any, final

@final
class JsonArrowDecoder:
    # (payload index, byte offset, why) of the last declined call
    last_declined: Any
    def __new__(cls, columns: Sequence[int], steps: Sequence[int], strings: bytes,
                root_step: int) -> JsonArrowDecoder: ...
    # a pyarrow.Array, or None when the parser declined a payload
    def decode_arrow(self, payloads: Iterable[bytes | bytearray | memoryview]) -> Any: ...
    # values: a pyarrow binary array without nulls; each row is read past its first `skip` bytes
    def decode_arrow_column(self, values: Any, skip: int) -> Any: ...
    # bytes, one a payload: 1 where the plan takes it, 0 where it declines it
    def verdicts(self, payloads: Iterable[bytes | bytearray | memoryview]) -> bytes: ...
