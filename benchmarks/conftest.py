"""Fixtures of the decode benchmark: payloads built once per session.

FASTKC_BENCH_QUICK=1 shrinks the payload to 4 batches x 50 records and runs
one round, so CI exercises every reader without spending minutes.
"""
import pytest

from benchmarks import readers as B

_cache = {}


@pytest.fixture(scope="session")
def payloads():
    def get(shape, codec):
        key = (shape, codec)
        if key not in _cache:
            _cache[key] = B.payload(shape, codec)
        return _cache[key]

    return get
