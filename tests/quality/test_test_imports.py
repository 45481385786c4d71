"""Tests import what they share from tests/support, never from each other.

A test module that imports another test module (or a conftest, or a helper
file kept beside some other folder's tests) makes the second one a library
without saying so: pytest imports it a second time under another name (two
copies of its globals), its fixtures leak into the importer, and an edit to
one test file breaks tests elsewhere. What two test files share lives in
tests/support/, where its readers know it is shared.

Every import counts: module level, inside functions, relative ones.
"""
import ast
import pathlib

from tests.support.repo import ROOT

TESTS = pathlib.Path(ROOT) / "tests"
SUPPORT = TESTS / "support"


def _package(path):
    return ".".join(path.relative_to(ROOT).parent.parts)


def _imported(text, package):
    """(line, [module names]) for every import statement in `text`, a module
    of `package`, relative ones resolved; `from a import b` gives a.b (b may
    be a module)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.append((node.lineno, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            found.append((node.lineno, [base + "." + alias.name for alias in node.names]))
    return found


def _outside_support(module):
    parts = module.split(".")
    return parts[0] == "tests" and len(parts) > 2 and parts[1] != "support"


def _offending(paths):
    """"file:line imports names" for each import statement that reaches a
    test folder's module."""
    found = []
    for path in paths:
        for line, modules in _imported(path.read_text(), _package(path)):
            bad = [m for m in modules if _outside_support(m)]
            if bad:
                found.append("{0}:{1} imports {2}".format(path.relative_to(ROOT), line, ", ".join(bad)))
    return found


def test_tests_import_only_from_support():
    found = _offending(p for p in sorted(TESTS.rglob("*.py")) if SUPPORT not in p.parents)
    print("test-to-test imports: {0}".format(len(found)))
    assert not found, "{0} test-to-test imports; move what these share into tests/support/:\n  {1}".format(
        len(found), "\n  ".join(found))


def test_support_imports_no_test_module():
    # support is the bottom layer: it must not reach back up into a test folder
    found = _offending(sorted(SUPPORT.rglob("*.py")))
    assert not found, "\n".join(found)


def test_the_scan_sees_each_form_of_import():
    # the checks above pass on a scan that sees nothing: prove it sees each form
    text = ("from tests.unit.test_conn import X\nfrom . import test_y\nfrom .kit import z\n"
            "def f():\n    import tests.hostile.kit\nfrom tests.support import batchgen\n")
    modules = [m for _, names in _imported(text, "tests.unit") for m in names]
    assert [m for m in modules if _outside_support(m)] == [
        "tests.unit.test_conn.X", "tests.unit.test_y", "tests.unit.kit.z", "tests.hostile.kit"]
    assert "tests.support.batchgen" in modules


def _skips_on_own_modules(text):
    """(line, module) of every pytest.importorskip of one of fastkc's own
    modules in `text`."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "importorskip"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and node.args[0].value.split(".")[0] in ("fastkc", "fastkc_tools")):
            found.append((node.lineno, node.args[0].value))
    return found


def test_the_check_below_sees_an_own_module_skip():
    assert _skips_on_own_modules('import pytest\nm = pytest.importorskip("fastkc.schema_registry.client")\n') == [
        (2, "fastkc.schema_registry.client")]
    assert _skips_on_own_modules('import pytest\npa = pytest.importorskip("pyarrow")\n') == []


def test_no_test_skips_when_one_of_our_own_modules_fails_to_import():
    """pytest.importorskip is for optional third-party libraries (an oracle,
    an extra). Ours must import wherever the tests run: a module that fails
    to (a dependency missing from an install) is a failure to see, not a
    skip -- the wheels' test venv once skipped a whole Protobuf suite on it."""
    skips = {}
    for path in sorted(TESTS.rglob("*.py")):
        found = _skips_on_own_modules(path.read_text())
        if found:
            skips[str(path.relative_to(ROOT))] = found
    assert skips == {}
