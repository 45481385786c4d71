"""Property tests that call the csrc kernels directly through cffi.

cffi serves here as a test harness, not as a second bridge: it compiles
csrc/fkc_varint.c, fkc_crc32c.c and fkc_crc32.c into a throwaway module so
hypothesis can check them, byte for byte, against independent Python
references (a from-the-spec varint decoder, the `crc32c` package, zlib).
"""
import pathlib
import random
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import property_settings

cffi = pytest.importorskip("cffi")
crc32c_ref = pytest.importorskip("crc32c")

ROOT = pathlib.Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"

CDEF = """
typedef enum { FKC_VARINT_OK = 0, FKC_VARINT_TRUNCATED = 1, FKC_VARINT_OVERLONG = 2,
               FKC_VARINT_OVERFLOW = 3 } fkc_varint_status;
fkc_varint_status fkc_uvarint32_decode(const uint8_t *p, size_t avail, uint32_t *value, size_t *consumed);
fkc_varint_status fkc_uvarint64_decode(const uint8_t *p, size_t avail, uint64_t *value, size_t *consumed);
size_t fkc_uvarint32_encode(uint32_t v, uint8_t *out);
size_t fkc_uvarint64_encode(uint64_t v, uint8_t *out);
uint32_t fkc_crc32c_software(uint32_t crc, const uint8_t *data, size_t len);
uint32_t fkc_crc32c_hardware(uint32_t crc, const uint8_t *data, size_t len);
int fkc_crc32c_hardware_available(void);
uint32_t fkc_crc32(uint32_t crc, const uint8_t *data, size_t len);
"""


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        "_fkc_kernels_cffi",
        '#include "fkc_varint.h"\n#include "fkc_crc32c.h"\n#include "fkc_crc32.h"\n',
        sources=[str(CSRC / name) for name in ("fkc_varint.c", "fkc_crc32c.c", "fkc_crc32.c")],
        include_dirs=[str(CSRC)],
        extra_compile_args=["-std=c11", "-O1"],
    )
    build_dir = tmp_path_factory.mktemp("cffi_kernels")
    try:
        lib_path = ffi.compile(tmpdir=str(build_dir))
    except Exception as exc:  # no compiler: say so rather than pass
        pytest.skip("cannot build the cffi test module: {0}".format(exc))
    import importlib.util

    spec = importlib.util.spec_from_file_location("_fkc_kernels_cffi", lib_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- Python references, written from the protobuf/Kafka varint definition --------------------
def ref_uvarint(data, max_bytes, width):
    """(status, value, consumed): status names as in fkc_varint_status."""
    value = 0
    for i in range(max_bytes):
        if i >= len(data):
            return "truncated", None, None
        b = data[i]
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if value >> width:
                return "overflow", None, None
            return "ok", value, i + 1
    return "overlong", None, None


STATUS = {0: "ok", 1: "truncated", 2: "overlong", 3: "overflow"}


def c_uvarint32(k, data):
    value = k.ffi.new("uint32_t *", 0xDEADBEEF)
    consumed = k.ffi.new("size_t *", 777)
    st_ = k.lib.fkc_uvarint32_decode(data, len(data), value, consumed)
    return STATUS[st_], value[0], consumed[0]


def c_uvarint64(k, data):
    value = k.ffi.new("uint64_t *", 0xDEADBEEF)
    consumed = k.ffi.new("size_t *", 777)
    st_ = k.lib.fkc_uvarint64_decode(data, len(data), value, consumed)
    return STATUS[st_], value[0], consumed[0]


def uvarint_bytes(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Bytes biased towards continuation bytes, so long and over-long forms are common.
varint_bytes = st.lists(
    st.one_of(st.integers(0x80, 0xFF), st.integers(0, 0xFF)), min_size=0, max_size=12
).map(bytes)


@property_settings(fast_examples=400)
@given(varint_bytes)
def test_uvarint32_matches_reference(k, data):
    status, value, consumed = c_uvarint32(k, data)
    ref_status, ref_value, ref_consumed = ref_uvarint(data, 5, 32)
    assert status == ref_status
    if ref_status == "ok":
        assert (value, consumed) == (ref_value, ref_consumed)
    else:  # nothing written on failure: the cursor does not move
        assert (value, consumed) == (0xDEADBEEF, 777)


@property_settings(fast_examples=400)
@given(varint_bytes)
def test_uvarint64_matches_reference(k, data):
    status, value, consumed = c_uvarint64(k, data)
    ref_status, ref_value, ref_consumed = ref_uvarint(data, 10, 64)
    assert status == ref_status
    if ref_status == "ok":
        assert (value, consumed) == (ref_value, ref_consumed)
    else:
        assert (value, consumed) == (0xDEADBEEF, 777)


@property_settings(fast_examples=300)
@given(st.integers(0, 2**32 - 1), st.binary(max_size=4))
def test_uvarint32_roundtrip_with_trailing_bytes(k, value, tail):
    out = k.ffi.new("uint8_t[5]")
    n = k.lib.fkc_uvarint32_encode(value, out)
    encoded = bytes(k.ffi.buffer(out, n))
    assert encoded == uvarint_bytes(value)
    assert c_uvarint32(k, encoded + tail) == ("ok", value, n)


@property_settings(fast_examples=300)
@given(st.integers(0, 2**64 - 1))
def test_uvarint64_roundtrip(k, value):
    out = k.ffi.new("uint8_t[10]")
    n = k.lib.fkc_uvarint64_encode(value, out)
    encoded = bytes(k.ffi.buffer(out, n))
    assert encoded == uvarint_bytes(value)
    assert c_uvarint64(k, encoded) == ("ok", value, n)


def test_varint_edges(k):
    assert c_uvarint32(k, b"\xff\xff\xff\xff\x0f")[:2] == ("ok", 2**32 - 1)
    assert c_uvarint32(k, b"\xff\xff\xff\xff\x10")[0] == "overflow"
    assert c_uvarint32(k, b"\x80\x80\x80\x80\x80\x01")[0] == "overlong"
    assert c_uvarint64(k, b"\xff" * 9 + b"\x01")[:2] == ("ok", 2**64 - 1)
    assert c_uvarint64(k, b"\xff" * 9 + b"\x02")[0] == "overflow"
    assert c_uvarint64(k, b"\x80" * 10 + b"\x00")[0] == "overlong"
    assert c_uvarint32(k, b"\x80\x00") == ("ok", 0, 2)  # redundant zero byte: accepted, as Java


@property_settings(fast_examples=300)
@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_crc32c_software_matches_crc32c_package(k, data, seed):
    assert k.lib.fkc_crc32c_software(0, data, len(data)) == crc32c_ref.crc32c(data)
    assert k.lib.fkc_crc32c_software(seed, data, len(data)) == crc32c_ref.crc32c(data, seed)


@property_settings(fast_examples=300)
@given(st.binary(max_size=300), st.integers(0, 40))
def test_crc32c_hardware_matches_software(k, data, split):
    if not k.lib.fkc_crc32c_hardware_available():
        pytest.skip("no SSE4.2 CRC32 instruction on this CPU")
    expected = crc32c_ref.crc32c(data)
    assert k.lib.fkc_crc32c_hardware(0, data, len(data)) == expected
    split = min(split, len(data))
    first = k.lib.fkc_crc32c_hardware(0, data[:split], split)
    assert k.lib.fkc_crc32c_hardware(first, data[split:], len(data) - split) == expected


# The hardware path runs three interleaved chains over 768-byte and 12 KiB
# rounds: lengths spanning several rounds, unaligned starts and a running CRC.
@property_settings(fast_examples=60)
@given(st.integers(0, 60_000), st.integers(0, 7), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_crc32c_hardware_rounds_match_software(k, length, start, seed, fill):
    if not k.lib.fkc_crc32c_hardware_available():
        pytest.skip("no SSE4.2 CRC32 instruction on this CPU")
    data = random.Random(fill).randbytes(start + length)[start:]
    expected = crc32c_ref.crc32c(data, seed)
    assert k.lib.fkc_crc32c_hardware(seed, data, len(data)) == expected
    assert k.lib.fkc_crc32c_software(seed, data, len(data)) == expected


@property_settings(fast_examples=300)
@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_crc32_matches_zlib(k, data, seed):
    assert k.lib.fkc_crc32(0, data, len(data)) == zlib.crc32(data)
    assert k.lib.fkc_crc32(seed, data, len(data)) == zlib.crc32(data, seed)


def test_crc_known_vectors(k):
    assert k.lib.fkc_crc32c_software(0, b"123456789", 9) == 0xE3069283
    assert k.lib.fkc_crc32(0, b"123456789", 9) == 0xCBF43926
