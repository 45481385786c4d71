"""Every file or folder DESIGN.md names in backticks exists.

DESIGN.md is the map of the code; a path that no longer exists (a module
moved by a restructuring, a benchmark folder removed) makes the map lie.
A backticked token counts as a path when it starts with one of the
repository's top-level folders or ends like a file or a folder; it is
looked up from the repository root, the package (`net/core.py` means
`fastkc/net/core.py`), then from the folder of any other path named on the
same line (table rows say `fastkc_tools/bench/` and then `java/`).
A wildcard must match something. Build outputs that git ignores are not in
a checkout and are skipped.
"""
import glob
import os
import re

from tests.support.repo import ROOT

_TOP = ("fastkc/", "tests/", "csrc/", "benchmarks/", "scripts/")
_FILE_END = re.compile(r"\.(py|pyx|pyi|pxd|c|h|inc|md|txt|toml|sh|java|xml|json|png|in|typed)$|/$")
#: outputs the build and the tools write (all git-ignored), named in DESIGN.md as where things go
_OUTPUTS = ("build/", "build/asan/", "tests/fuzz/build/", ".mypy_cache/", "./fastkc-bench-results/")


def _named_paths(text):
    """(line number, token, the other path-like tokens of that line)."""
    for number, line in enumerate(text.splitlines(), 1):
        tokens = [t.rstrip(".,:;") for t in re.findall(r"`([^`\s]+)`", line)]
        paths = [t for t in tokens if "/" in t and "<" not in t and "{" not in t
                 and not t.startswith(("http", "-", "~")) and (t.startswith(_TOP) or _FILE_END.search(t))]
        for token in paths:
            yield number, token, paths


def _exists(token, neighbours):
    others = [n for n in neighbours if n != token]
    bases = [ROOT, os.path.join(ROOT, "fastkc")]
    bases += [os.path.join(ROOT, os.path.dirname(n.rstrip("/"))) for n in others]
    bases += [os.path.join(ROOT, n) for n in others if n.endswith("/")]
    # a wildcard (`group/*_machine.py`) must match at least one file
    return any(glob.glob(os.path.join(base, token)) for base in bases)


def test_every_path_in_design_exists():
    with open(os.path.join(ROOT, "DESIGN.md"), encoding="utf-8") as f:
        text = f.read()
    checked, missing = 0, []
    for number, token, neighbours in _named_paths(text):
        if token in _OUTPUTS:
            continue
        checked += 1
        if not _exists(token, neighbours):
            missing.append("line {0}: {1}".format(number, token))
    assert checked > 100, "the path extraction found almost nothing: is the pattern still right?"
    assert not missing, "DESIGN.md names paths that do not exist:\n" + "\n".join(missing)


def test_a_missing_path_is_caught():
    # the check itself can fail: a made-up module on a table row is reported
    row = "| `fastkc/fetcher.py` | the old fetcher |"
    found = [(token, neighbours) for _, token, neighbours in _named_paths(row)]
    assert found == [("fastkc/fetcher.py", ["fastkc/fetcher.py"])]
    assert not _exists("fastkc/fetcher.py", ["fastkc/fetcher.py"])
    assert _exists("java/", ["fastkc_tools/bench/", "java/"])
    assert _exists("group/*_machine.py", ["group/*_machine.py"])
    assert not _exists("group/*_nothing.py", ["group/*_nothing.py"])
