"""The compiled Fetch response parser (the hot protocol path).

parse_fetch_response(buf, version) -> fastkc.structs.FetchResponse

`buf` is one Fetch response payload: the bytes after the 4-byte size prefix,
response header included (correlation id; from v12 also the header's tagged
fields), as any contiguous bytes-like object. Versions 4-18.

Each partition's `records` is a memoryview slice of `buf` (no copy), None when
the broker sent null; decode it with fastkc.records. Fields a version does not
carry take the defaults documented in fastkc/structs.py. Any malformation
raises fastkc.errors.ProtocolParseError naming the version and byte position.

The generic protocol codec (fastkc/protocol/) decodes the same bytes; it is
this parser's test oracle, not a fallback: there is no silent slow path here.
"""
from fastkc._core._fetch import MAX_VERSION, MIN_VERSION, parse_fetch_response

__all__ = ["parse_fetch_response", "MIN_VERSION", "MAX_VERSION", "SUPPORTED_VERSIONS"]

SUPPORTED_VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
