"""`fastkc bench` needs nothing but the packages: run from a directory that
holds only fastkc and fastkc_tools (links to this checkout's packages, as an
installed wheel would put them), under `python -I` (no PYTHONPATH, no user site, no current
directory on sys.path), the bench's modules import and `fastkc bench --help`
works, and no `tests` or `benchmarks` module is ever imported (neither
exists there, so an import of one would fail, not fall back)."""
import json
import os
import subprocess
import sys

import pytest

from tests.support.repo import ROOT

BENCH_MODULES = [
    "fastkc_tools.bench.driver", "fastkc_tools.bench.curves", "fastkc_tools.bench.common",
    "fastkc_tools.bench.rebalance", "fastkc_tools.bench.group_worker", "fastkc_tools.bench.run_fastkc",
    "fastkc_tools.bench.run_kafka_python",
    "fastkc_tools.bench.run_aiokafka", "fastkc_tools.bench.run_confluent", "fastkc_tools.bench.run_java",
    "fastkc_tools.bench.run_java_steady",
]

# Runs in the child: imports, then reports what got loaded from where.
_PROBE = """
import json, sys
sys.path.insert(0, {site!r})
import importlib
for name in {modules!r}:
    importlib.import_module(name)
from fastkc.cli import main
try:
    code = main({argv!r})
except SystemExit as exc:
    code = exc.code
import fastkc
print(json.dumps({{"code": code, "fastkc": fastkc.__file__,
                   "foreign": sorted(m for m in sys.modules if m.split(".")[0] in ("tests", "benchmarks"))}}),
      file=sys.stderr)
"""


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for package in ("fastkc", "fastkc_tools"):
        os.symlink(os.path.join(ROOT, package), site / package)
    return site


def _probe(site, cwd, modules, argv):
    code = _PROBE.format(site=str(site), modules=modules, argv=argv)
    proc = subprocess.run([sys.executable, "-I", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])


def test_the_bench_imports_without_the_checkout(site, tmp_path):
    _, report = _probe(site, tmp_path, BENCH_MODULES, ["bench", "--help"])
    assert report["foreign"] == []
    assert report["fastkc"] == str(site / "fastkc" / "__init__.py")


def test_fastkc_bench_help_from_any_directory(site, tmp_path):
    out, report = _probe(site, tmp_path, [], ["bench", "--help"])
    assert report["code"] == 0
    assert "--curve" in out and "--clients" in out  # the driver's own options, not a bare stub
    assert report["foreign"] == []
    out, report = _probe(site, tmp_path, [], ["bench-rebalance", "--help"])
    assert report["code"] == 0 and "--only" in out and report["foreign"] == []


def test_results_default_outside_a_checkout(site, tmp_path):
    # Outside a checkout the results go under the working directory, never
    # into site-packages; inside one, to benchmarks/results as before.
    code = ("import sys; sys.path.insert(0, {0!r}); from fastkc_tools.bench import driver; "
            "print(driver.RESULTS)").format(str(site))
    proc = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "fastkc-bench-results")
    from fastkc_tools.bench import driver

    assert driver.RESULTS == os.path.join(ROOT, "benchmarks", "results")
