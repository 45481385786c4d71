"""The group workers' event logs as the benchmarks and the group tests read
them while a worker still appends: only whole JSON lines count, and a read
stops at the first line that is not one yet (unfinished, or seen as zeros
by a read racing the append), to see it whole on the next read."""
import json

from fastkc_tools.bench.group_worker import read_events


def _line(**fields):
    return json.dumps(fields) + "\n"


def test_no_log_yet(tmp_path):
    assert read_events(str(tmp_path / "absent.jsonl")) == []


def test_unfinished_last_line_is_left_for_the_next_read(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(_line(e="ready", t=1.0) + '{"e": "assig')
    assert read_events(str(path)) == [{"e": "ready", "t": 1.0}]
    path.write_text(_line(e="ready", t=1.0) + _line(e="assigned", t=2.0))
    assert [ev["e"] for ev in read_events(str(path))] == ["ready", "assigned"]


def test_a_line_read_as_zeros_ends_the_read(tmp_path):
    path = tmp_path / "m.jsonl"
    # what a read racing the append saw once: the new line's bytes as NULs, then its newline
    path.write_bytes((_line(e="ready", t=1.0)).encode() + b"\x00" * 20 + b"\n" + _line(e="closed", t=3.0).encode())
    assert read_events(str(path)) == [{"e": "ready", "t": 1.0}]
