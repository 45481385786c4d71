"""`python -m fastkc_tools.bench report --quick --only decode`: the report command
(fastkc_tools/bench/report.py) in the quick mode CI's `benchmarks/` run exercises,
on its broker-less section (tests/integration/test_bench_quick.py runs the
broker-side ones). Asserts the table came out beside its commit, machine,
load and date, never a speed."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_report_quick_decode(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fastkc_tools.bench", "report", "--quick", "--only", "decode",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (entry,) = json.loads((tmp_path / "report.json").read_text())["sections"]
    assert entry["section"] == "decode" and entry["status"] == "ok"
    assert len(entry["commit"] or "") == 40 and entry["machine"]["cores"] == os.cpu_count()
    ((table),) = entry["tables"]
    assert table["file"] == "decode.md" and "(QUICK mode)" in table["markdown"]
    text = (tmp_path / "report.md").read_text()
    assert "Measured at: commit " + entry["commit"] in text and table["markdown"] in text
    rows = json.loads((tmp_path / "decode.json").read_text())["rows"]
    assert len(rows) == 9 and all(r["records"] > 0 for r in rows)
