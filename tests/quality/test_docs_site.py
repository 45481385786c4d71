"""The docs site builds with warnings as errors (broken links, a nav entry
without its page, an API reference to a name that does not exist), and the
README stays a front page, not a report."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                             "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "api" / "index.html").exists()


def test_readme_is_short():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        lines = f.read().count("\n")
    assert lines <= 200, "README.md has {0} lines: the guide and the reports belong in docs/".format(lines)
