# Stub of the compiled Fetch response parser (fastkc/_core/_fetch.pyx); checked
# against the built module by tests/quality/test_stubs.py (mypy.stubtest).
from fastkc.structs import FetchResponse

MIN_VERSION: int
MAX_VERSION: int

def parse_fetch_response(buf: bytes | bytearray | memoryview, version: int) -> FetchResponse: ...
def grow_bytearray(buf: bytearray, size: int) -> None: ...
