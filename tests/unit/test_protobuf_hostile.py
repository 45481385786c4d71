"""Hostile Protobuf payloads: typed errors at the right byte, the compiled
decoder and its twin agree on (index, offset, what, problem), the runtime
(upb) refuses the same payloads, and nothing crashes or allocates what the
input only claims."""
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.protobuf import ALL, AllMsg, Pair

P3 = Pair(ALL)
S_INT32 = ALL.fields_by_name["s_int32"].number      # 13: tag 0x68
S_STRING = ALL.fields_by_name["s_string"].number    # 25
CHILD = ALL.fields_by_name["child"].number          # 102


def _nested(depth):
    body = b""
    for _ in range(depth):
        n, prefix = len(body), bytearray()
        while True:
            prefix.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                break
        body = b"\xb2\x06" + bytes(prefix) + body  # field 102 (child), wire type 2
    return body


@pytest.mark.parametrize("payload,expected", [
    (b"\x68", (0, 1, "int32", "truncated")),                                    # a value cut short
    (b"\x68\x80", (0, 1, "int32", "truncated")),                                # a varint cut short
    (b"\x80", (0, 0, "tag", "truncated")),
    (b"\x68" + b"\xff" * 10 + b"\x01", (0, 1, "int32", "over-long varint")),   # an 11-byte varint
    (b"\xff" * 11, (0, 0, "tag", "over-long varint")),
    (b"\x80\x80\x80\x80\x10", (0, 0, "tag", "field number out of range")),     # a tag past 32 bits
    (b"\x00", (0, 0, "tag", "field number 0")),
    (b"\x08\x01\x07", (0, 2, "tag", "field number 0")),
    (b"\x0e", (0, 0, "tag", "invalid wire type")),                             # wire type 6
    (b"\x0f", (0, 0, "tag", "invalid wire type")),                             # wire type 7
    (b"\x0c", (0, 0, "tag", "unexpected end group")),
    (b"\xca\x01\x05ab", (0, 2, "string length", "past the end")),             # a length past the end
    (b"\xca\x01\x80\x80\x80\x80\x08", (0, 2, "string length", "past the end")),  # a claimed 2^31
    (b"\xca\x01\x02a\xff", (0, 3, "string", "invalid UTF-8")),
    (b"\xca\x01\x03\xed\xa0\x80", (0, 3, "string", "invalid UTF-8")),          # a surrogate
    (b"\x72\x03\x01", (0, 1, "packed length", "past the end")),       # r_int32 packed
    (b"\x72\x01\x80", (0, 2, "int32", "truncated")),                            # a varint past its packed run
    (b"\x12\x05\x00\x00\x00\x00", (0, 1, "packed length", "past the end")),  # r_double
    (b"\x12\x03\x00\x00\x00", (0, 2, "double", "truncated")),                   # a partial packed double
    (b"\x09\x00\x00", (0, 1, "double", "truncated")),
    (b"\xb2\x06\x01\x68", (0, 4, "int32", "truncated")),                        # inside a sub-message
    (b"\xb2\x06\x01\x0c", (0, 3, "tag", "unexpected end group")),
    (b"\x5b", (0, 1, "group", "truncated")),                                    # an unknown group left open
    (b"\x5b\x64", (0, 1, "end group", "mismatched field number")),
    (b"\xf0\xff\x01", (0, 3, "unknown varint", "truncated")),
    (b"\xf1\xff\x01\x00", (0, 3, "unknown fixed64", "truncated")),
    (b"\xf5\xff\x01\x00", (0, 3, "unknown fixed32", "truncated")),
    (b"\xf2\xff\x01\x09", (0, 3, "unknown length", "past the end")),
    (_nested(101), (0, len(_nested(101)), "message", "nesting too deep")),  # the 101st body: at the end
    (b"\x5b" * 101 + b"\x5c" * 101, (0, 101, "group", "nesting too deep")),
])
def test_bad_payloads_fail_at_their_byte(payload, expected):
    assert P3.error([payload]) == expected
    with pytest.raises(Exception):  # noqa: B017 - upb refuses it too (its error is untyped)
        AllMsg.FromString(payload)


def test_depth_100_is_fine():
    assert P3.outcome([_nested(100)]) == P3.outcome([_nested(100)])
    AllMsg.FromString(_nested(100))
    assert isinstance(P3.both([_nested(100), b"\x5b" * 100 + b"\x5c" * 100]), list)


def test_the_failing_payload_is_named_by_its_index():
    good = AllMsg(s_int32=5, s_string="x").SerializeToString()
    assert P3.error([good, good, good[:-1], good]) == (2, 4, "string length", "past the end")


def test_claimed_huge_length_fails_fast():
    payload = b"\xca\x01\xff\xff\xff\xff\x07" + b"a" * 16
    start = time.perf_counter()
    assert P3.error([payload]) == (0, 2, "string length", "past the end")
    assert time.perf_counter() - start < 1.0


_UNDER_A_LIMIT = """
import resource, sys
sys.path.insert(0, {root!r})
from tests.support.protobuf import Pair, ALL
decoder = Pair(ALL).c
value = "v" * (32 << 20)
payload = b"\\xca\\x01\\x80\\x80\\x80\\x10" + value.encode()  # s_string: 32 MiB
assert decoder.decode_many([b"\\x68\\x01"])  # warm
vm = int([line for line in open("/proc/self/status") if line.startswith("VmSize:")][0].split()[1]) * 1024
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (vm + (160 << 20), hard))  # the dict's 32 MiB str, not 512 MiB of tape
[got] = decoder.decode_many([payload])
resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
print("decoded", got["s_string"] == value)
"""


def test_a_long_value_needs_tape_for_what_is_read_not_for_its_length():
    # The reader's bound is 2 tape words per payload byte (tape_room in
    # csrc/fkc_protobuf.c): for one 32 MiB string that is 512 MiB, where the
    # string is 3 words. Past FKC_PB_RESERVE_WORDS the tape grows with what
    # is read, so the decode fits an address space that holds the value.
    import os
    import subprocess
    import sys

    if os.environ.get("FASTKC_ASAN_LIB"):
        pytest.skip("ASan reserves its shadow memory: an address-space limit stops it, not the tape")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", _UNDER_A_LIMIT.format(root=root)], capture_output=True,
                          text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "decoded True" in done.stdout


_SEED = AllMsg(s_int32=-7, s_string="héllo", r_int32=[1, 2, 300], r_double=[1.5], child=AllMsg(s_bytes=b"x"),
               m_string={"k": AllMsg(s_int64=3)}, c_str="o").SerializeToString()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_SEED) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(0, len(_SEED)))
def test_corrupted_payloads_agree_and_never_crash(edits, cut):
    data = bytearray(_SEED)
    for at, byte in edits:
        data[at] = byte
    payload = bytes(data[:cut])
    P3.outcome([payload])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_agree_and_never_crash(payload):
    P3.outcome([payload])


def test_random_bytes_in_bulk():
    rng = random.Random(7)
    for _ in range(2000):
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        P3.outcome([payload])
