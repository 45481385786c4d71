"""The decode worker's tests under ASan + UBSan (PYTHONMALLOC=malloc), in a
subprocess through `make asan` with its own build tree: the threaded path
(prepare() on the worker, hand-outs on the polling thread, the C lz4 path's
per-thread contexts) must run clean. Slow (a sanitized build), so it runs
only when FASTKC_ASAN=1."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = ("tests/unit/test_prepared_steps.py tests/unit/test_decode_worker.py tests/unit/test_lz4_native.py "
         "tests/unit/test_record_stream.py")


@pytest.mark.skipif(os.environ.get("FASTKC_ASAN") != "1", reason="set FASTKC_ASAN=1 to build and run under ASan")
def test_decode_worker_suites_run_clean_under_asan_and_ubsan():
    out = subprocess.run(["make", "asan", "ASAN_DIR=build/asan-worker", "ASAN_TESTS=" + TESTS,
                          "PYTHON=" + sys.executable], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    tail = (out.stdout + out.stderr)[-4000:]
    assert out.returncode == 0, tail
    assert "asan_guard: 2 sanitized modules exercised" in out.stderr + out.stdout, tail
