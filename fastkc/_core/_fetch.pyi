
from fastkc.structs import FetchResponse

MIN_VERSION: int
MAX_VERSION: int

def parse_fetch_response(buf: bytes | bytearray | memoryview, version: int) -> FetchResponse: ...
def grow_bytearray(buf: bytearray, size: int) -> None: ...
