"""The .pyi stubs of the compiled modules against the built extension
(mypy.stubtest: every name, signature and property of the runtime module is
in the stub and agrees with it). A missing compiled core fails under
FASTKC_REQUIRE_C, as everywhere else, and skips otherwise."""
import importlib
import os

import pytest

from tests.quality.conftest import ROOT, run_tool

MODULES = ["fastkc._core._records", "fastkc._core._fetch", "fastkc._core._avro"]


def test_stubs_match_the_compiled_modules():
    try:
        for name in MODULES:
            importlib.import_module(name)
    except ImportError as exc:
        if os.environ.get("FASTKC_REQUIRE_C"):
            pytest.fail("compiled core missing: {0}".format(exc))
        pytest.skip("compiled core not built: {0}".format(exc))
    code, out = run_tool(["mypy.stubtest", "--mypy-config-file", "pyproject.toml", "--concise",
                          "--allowlist", os.path.join(ROOT, "tests", "quality", "stubtest_allowlist.txt")]
                         + MODULES)
    assert code == 0, out


def test_every_compiled_module_has_a_stub():
    core = os.path.join(ROOT, "fastkc", "_core")
    bridges = sorted(n[:-4] for n in os.listdir(core) if n.endswith(".pyx"))
    assert bridges == sorted(m.rsplit(".", 1)[1] for m in MODULES)
    assert [b for b in bridges if not os.path.exists(os.path.join(core, b + ".pyi"))] == []
