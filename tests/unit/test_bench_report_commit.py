"""The benchmark report's provenance: a table is marked as measured on
uncommitted code when code differs from HEAD, never because an earlier
section of the same report wrote its figures (benchmarks/results/)."""
import os
import subprocess

from fastkc_tools.bench import report


def _git(repo, *argv):
    subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))


def _repo(tmp_path):
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "e2e.md").write_text("old figures\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "start")
    return tmp_path


def test_clean_tree(tmp_path):
    repo = _repo(tmp_path)
    got = report.commit(str(repo))
    assert len(got["commit"]) == 40 and got["dirty"] is False


def test_figures_written_by_the_report_are_not_uncommitted_code(tmp_path):
    repo = _repo(tmp_path)
    (repo / "benchmarks" / "results" / "e2e.md").write_text("new figures\n")
    (repo / "benchmarks" / "results" / "aio.md").write_text("untracked\n")
    assert report.commit(str(repo))["dirty"] is False


def test_changed_code_is_uncommitted(tmp_path):
    repo = _repo(tmp_path)
    (repo / "benchmarks" / "results" / "e2e.md").write_text("new figures\n")
    (repo / "code.py").write_text("x = 2\n")
    assert report.commit(str(repo))["dirty"] is True


def test_outside_a_checkout_nothing_is_claimed(tmp_path):
    assert report.commit(str(tmp_path)) == {"commit": None, "dirty": None}
