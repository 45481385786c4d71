"""ruff over the Python sources with the repository's configuration
(pyproject.toml: the rule set, the line length, the to-do exclusions)."""
from tests.quality.conftest import run_tool

PATHS = ["fastkc", "tests", "benchmarks", "scripts", "pyspark_fastkc.py", "setup.py"]


def test_ruff_passes():
    code, out = run_tool(["ruff", "check", "--no-cache"] + PATHS)
    assert code == 0, out
