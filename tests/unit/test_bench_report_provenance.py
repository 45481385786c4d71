"""The benchmark report's provenance: a table is marked as measured on
uncommitted code when code differs from HEAD, never because an earlier
section of the same report wrote its figures (benchmarks/results/); a report
of some sections (--only) keeps the other sections as they were measured."""
import json
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


def _entry(section, commit):
    return {"section": section, "commit": commit, "status": "ok", "tables": []}


def test_only_keeps_the_sections_it_did_not_run(tmp_path):
    # --only rebalance after a full report: e2e keeps its own commit, rebalance is replaced
    (tmp_path / "report.json").write_text(json.dumps(
        {"quick": False, "sections": [_entry("e2e", "a" * 40), _entry("rebalance", "b" * 40)]}))
    kept = report.previous_entries(str(tmp_path), quick=False)
    got = report.merged(kept, [_entry("rebalance", "c" * 40), _entry("cost", "c" * 40)])
    order = [s.name for s in report.SECTIONS]
    assert [e["section"] for e in got] == sorted(["e2e", "rebalance", "cost"], key=order.index)
    assert {e["section"]: e["commit"][0] for e in got} == {"e2e": "a", "rebalance": "c", "cost": "c"}


def test_a_report_of_the_other_mode_or_unreadable_is_not_kept(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"quick": True, "sections": [_entry("e2e", "a" * 40)]}))
    assert report.previous_entries(str(tmp_path), quick=False) == []
    (tmp_path / "report.json").write_text("{not json")
    assert report.previous_entries(str(tmp_path), quick=False) == []
    assert report.previous_entries(str(tmp_path / "missing"), quick=False) == []
