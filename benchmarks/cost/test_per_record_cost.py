"""The per-record cost tool runs and counts (quick payload, one decode each):
its numbers are never asserted as speeds, only as counts that a broken
counter could not produce."""
import os
import shutil

import pytest

from benchmarks.cost import per_record_cost as cost


@pytest.fixture(scope="module")
def quick_payload(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("FASTKC_BENCH_QUICK", "1")
    import importlib

    from benchmarks import readers

    importlib.reload(readers)  # QUICK is read at import time
    try:
        yield cost.payload_file("100B", "none", str(tmp_path_factory.mktemp("cost")))
    finally:
        monkeypatch_module.delenv("FASTKC_BENCH_QUICK")
        importlib.reload(readers)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler for the shim")
def test_allocations_are_counted_per_record(quick_payload):
    # A ConsumerRecord, its value bytes, its headers list and its key bytes at least;
    # a shim that is not preloaded (or counts nothing) gives 0.
    assert cost.allocations("fastkc C → records", quick_payload, 1) >= 4
    # the floor allocates per piece, not per record
    assert cost.allocations("floor (CRC32C + memcpy)", quick_payload, 1) < 0.5


def test_instructions_of_the_decode_loop_alone(quick_payload):
    full, records = cost.instructions("floor (CRC32C + memcpy)", quick_payload, 100)
    if full is None:
        pytest.skip(records)
    base, _ = cost.instructions("floor (CRC32C + memcpy)", quick_payload, 0)
    # CRC-32C and a copy of ~120 bytes each: some tens of instructions, never none
    assert records > 0 and 10 < (full - base) / records < 100_000
