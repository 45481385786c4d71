"""ruff over the Python sources with the repository's configuration
(pyproject.toml: the rule set, the line length; no Python source excluded)."""
import tomllib

from tests.support.repo import ROOT, run_tool

PATHS = ["fastkc", "tests", "benchmarks", "scripts", "pyspark_fastkc.py", "setup.py"]


def test_ruff_passes():
    code, out = run_tool(["ruff", "check", "--no-cache"] + PATHS)
    assert code == 0, out


def test_no_python_source_is_excluded():
    # the exclusions hold generated files only (Cython's C), never a module
    # or test left out of the lint
    with open(ROOT + "/pyproject.toml", "rb") as f:
        excluded = tomllib.load(f)["tool"]["ruff"].get("extend-exclude", [])
    assert [p for p in excluded if not p.endswith(".c")] == []


def test_the_configuration_finds_what_it_should(tmp_path):
    # the rule set is live: an unused import, an over-long line, an unsorted
    # import block and a mutable default are each reported with the repository's configuration
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\n\ndef f(x=[]):\n    return x  # " + "x" * 120 + "\n")
    code, out = run_tool(["ruff", "check", "--no-cache", "--config", ROOT + "/pyproject.toml", str(bad)])
    assert code == 1
    for rule in ("F401", "E501", "I001", "B006"):
        assert rule in out, out
