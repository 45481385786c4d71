"""The codec's fast paths (runs of fixed-size numbers read by one
unpack_from and written by one pack, arrays of numbers read in bulk, a zero
tagged-field count in one byte) against the same codec with them off, on
every declared API, version and direction: the same value from whole bytes,
and the same outcome -- value, or ProtocolParseError with the same reason
and byte position -- from cut and corrupted bytes; the same bytes from a
value, and the same IllegalArgumentError from a value with one number
replaced by something that must not encode.

FASTKC_SLOW=1 raises the number of examples per case.
"""
import copy
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings

from fastkc.errors import IllegalArgumentError, ProtocolParseError
from fastkc.protocol import codec
from tests.support.protocol_strategies import MESSAGE_CASES, message_case_id, message_values

SLOW = os.environ.get("FASTKC_SLOW", "") not in ("", "0")
EXAMPLES = 40 if SLOW else 3

CASES = MESSAGE_CASES
_case_id = message_case_id


def _outcome(decode, data):
    try:
        return ("ok", decode(data))
    except ProtocolParseError as exc:
        return ("error", exc.reason, exc.position)


def _plain(monkeypatch_context, run, data, outcome=_outcome):
    """outcome(run, data) with the fast paths off (no number runs, no bulk
    arrays, every tagged-field count through the general reader)."""
    with monkeypatch_context() as mp:
        mp.setattr(codec, "_STRUCT_CODES", {})
        mp.setattr(codec, "_PLAN", {})
        mp.setattr(codec, "_TAG_FAST_PATH", False)
        return outcome(run, data)


def _encoded(encode, value):
    try:
        return ("ok", encode(value))
    except IllegalArgumentError as exc:
        return ("error", str(exc))


def _int_leaves(value, path=()):
    """Paths to every int (not bool) inside a decoded message value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _int_leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _int_leaves(item, path + (index,))
    elif type(value) is int:
        yield path


def _replaced(value, path, new):
    value = copy.deepcopy(value)
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fast_paths_decode_exactly_as_the_field_by_field_reader(case):
    name, version, response = case
    if response:
        def encode(value):
            return codec.encode_response(name, version, value, correlation_id=7)

        def decode(data):
            return codec.decode_response(name, version, data)
    else:
        def encode(value):
            return codec.encode_request(name, version, value, correlation_id=7, client_id="c")

        def decode(data):
            return codec.decode_request(data)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(message_values(name, version, response=response))
    def check(value):
        data = encode(value)
        rng = random.Random(len(data))
        cuts = sorted(set(rng.sample(range(len(data)), min(len(data), 40))))
        variants = [data] + [data[:cut] for cut in cuts]
        for _ in range(10):
            flipped = bytearray(data)
            flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            variants.append(bytes(flipped))
        for variant in variants:
            assert _outcome(decode, variant) == _plain(pytest.MonkeyPatch.context, decode, variant)
        assert _encoded(encode, value) == _plain(pytest.MonkeyPatch.context, encode, value, _encoded)
        leaves = list(_int_leaves(value))
        for path in rng.sample(leaves, min(len(leaves), 4)):
            for bad in (1 << 64, -(1 << 63) - 1, True, None, 1.5, "1"):
                broken = _replaced(value, path, bad)
                assert _encoded(encode, broken) == _plain(pytest.MonkeyPatch.context, encode, broken, _encoded)

    check()
