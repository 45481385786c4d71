"""Build and run the C kernel unit tests (tests/c/test_kernels.c) through the
Makefile's test-c target, so `pytest` covers them too. Built into a private
directory under ASan + UBSan; a failing CHECK, a sanitizer report or a
compiler warning (-Werror) fails this test."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="needs gcc and make")
def test_c_kernel_unit_tests(tmp_path):
    proc = subprocess.run(
        ["make", "-s", "test-c", "TESTC_DIR={0}".format(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert " 0 failures" in proc.stdout, output
    checks = int(proc.stdout.strip().splitlines()[-1].split()[0])
    assert checks > 400, output  # the suite ran in full, not an early exit
