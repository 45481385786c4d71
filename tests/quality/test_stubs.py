"""The .pyi stubs of the compiled modules against the built extension
(mypy.stubtest: every name, signature and property of the runtime module is
in the stub and agrees with it). A missing compiled core fails."""
import importlib
import os

from tests.support.repo import ROOT, run_tool

MODULES = ["fastkc._core._records", "fastkc._core._fetch", "fastkc._core._avro", "fastkc._core._protobuf",
           "fastkc._core._json"]


def test_stubs_match_the_compiled_modules():
    for name in MODULES:
        importlib.import_module(name)
    code, out = run_tool(["mypy.stubtest", "--mypy-config-file", "pyproject.toml", "--concise",
                          "--allowlist", os.path.join(ROOT, "tests", "quality", "stubtest_allowlist.txt")]
                         + MODULES)
    assert code == 0, out


def test_every_compiled_module_has_a_stub():
    core = os.path.join(ROOT, "fastkc", "_core")
    bridges = sorted(n[:-4] for n in os.listdir(core) if n.endswith(".pyx"))
    assert bridges == sorted(m.rsplit(".", 1)[1] for m in MODULES)
    assert [b for b in bridges if not os.path.exists(os.path.join(core, b + ".pyi"))] == []
