"""docs/reference/configuration.md is generated from fastkc/config_schema.py
by scripts/gen_config_reference.py; the committed file must be what the
generator writes (a source-tree check, so it lives in tests/quality)."""
import os
import subprocess
import sys

from tests.support.repo import ROOT, load_script

SCRIPT = os.path.join(ROOT, "scripts", "gen_config_reference.py")
REFERENCE = os.path.join(ROOT, "docs", "reference", "configuration.md")


def _generator():
    return load_script("gen_config_reference")


def test_the_committed_reference_is_what_the_schema_generates():
    with open(REFERENCE, encoding="utf-8") as f:
        committed = f.read()
    assert committed == _generator().render(), "run python3 scripts/gen_config_reference.py"


def test_the_check_mode_agrees():
    done = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_key_and_rule_has_its_row():
    from fastkc import config_schema

    text = _generator().render()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0][3:-1] for row in rows] == [s.key for s in config_schema.SETTINGS]
    for rule in config_schema.RULES:
        assert "- " + rule.doc in text
    fetch = next(row for row in rows if row.startswith("| `fetch_max_wait_ms`"))
    assert "Java `fetch.max.wait.ms`" in fetch and "Spark `kafka.fetch.max.wait.ms`" in fetch and "`500`" in fetch
