"""The benchmarks in quick mode: `python -m fastkc_tools.bench report --quick`
(fastkc_tools/bench/report.py, the command that regenerates README's tables) on
tiny datasets, so CI runs every runner, the curves, the asyncio and Arrow
stream tools and the report itself, and none of them can rot. Speed is never
asserted here, only that every client read exactly the topic, touched
exactly its key and value bytes, and that the tables, JSON, charts and the
report (commit, machine, load, date beside each table) come out.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from fastkc_tools.bench import common, curves, driver, report, run_java, share_group

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDS = report.QUICK_RECORDS
PARTITIONS = report.QUICK_PARTITIONS
RECORD_SIZE = 100
# the broker-side sections; decode runs in CI's benchmarks/ quick run (benchmarks/test_report_quick.py)
SECTIONS = ["e2e", "share", "aio", "curves", "aio-stall", "arrow-stream"]


@pytest.fixture(scope="module")
def quick_run(kafka_broker, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    # Through the real command line, as a user would run it.
    proc = subprocess.run([sys.executable, "-m", "fastkc_tools.bench", "report", "--quick",
                           "--only", ",".join(SECTIONS),
                           "--bootstrap", kafka_broker.bootstrap_servers, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1500)
    topic = json.loads((out / "e2e.json").read_text())["meta"]["topic"] if (out / "e2e.json").exists() else None
    return proc, out, topic


def test_the_report_holds_every_table_beside_its_provenance(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads((out / "report.json").read_text())
    assert document["quick"] is True
    assert [e["section"] for e in document["sections"]] == SECTIONS
    text = (out / "report.md").read_text()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for entry in document["sections"]:
        assert entry["status"] == "ok", (entry["section"], entry["error"])
        assert entry["commit"] == head and isinstance(entry["dirty"], bool)
        assert entry["machine"]["cores"] == os.cpu_count() and entry["machine"]["memory_gib"] > 0
        assert entry["machine"]["cpu"]
        assert len(entry["load_before"]) == len(entry["load_after"]) == 3
        assert entry["started"] <= entry["finished"]
        assert entry["tables"], entry["section"]
        for table in entry["tables"]:
            assert table["markdown"] == (out / table["file"]).read_text().strip()
            assert table["markdown"] in text
        section = text[text.index("## {0} — README".format(entry["section"])):]
        # the provenance line sits right under the section's heading, before its tables
        assert re.search(r"\n\nMeasured at: commit [0-9a-f]{40}.*cores, .* GiB memory.*load average "
                         r"\(1, 5, 15 min\) [0-9. ]+ before, [0-9. ]+ after; \d{4}-\d\d-\d\dT",
                         section.split("From `")[0])
    assert "| fastkc.aio decode_threads=1 |" in (out / "aio_loop_stall.md").read_text()
    assert "poll_arrow loop" in (out / "arrow_stream_cost.md").read_text()


def test_report_sections_fail_loudly(tmp_path):
    """An unknown section is refused; a section that cannot run is FAILED in the report and the exit status."""
    with pytest.raises(SystemExit, match="unknown section"):
        report.main(["--only", "e2e,nope", "--out", str(tmp_path)], log=lambda m: None)
    assert report.main(["--quick", "--only", "aio-stall", "--out", str(tmp_path), "--bootstrap", ""],
                       log=lambda m: None) == 1
    entry = json.loads((tmp_path / "report.json").read_text())["sections"][0]
    assert entry["status"] == "failed" and "--bootstrap" in entry["error"]
    assert "**FAILED**" in (tmp_path / "report.md").read_text()


# Clients that deliver at most 500 records per call: 20,000 records always take
# several deliveries, so their steady-state window exists. The others may get a
# whole tiny topic in one delivery (then the row says so, marked ‡).
SEVERAL_DELIVERIES = {"fastkc-records", "kafka-python", "confluent-kafka", "confluent-kafka-tuned"}


def test_every_client_reads_exactly_the_topic(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads((out / "e2e.json").read_text())
    assert document["meta"]["records"] == RECORDS
    clients = document["clients"]
    assert list(clients) == report.E2E_CLIENTS
    for name, summary in clients.items():
        assert summary["status"] == "ok", (name, summary.get("reason"))
        assert summary["records"] == RECORDS, name
        assert summary["seconds"] > 0
        assert summary["peak_rss_bytes"] > 10 * 2**20, name  # a live interpreter or JVM, not a zero
        (run,) = summary["runs"]
        # every key and value byte touched inside the window (null keys: the values' bytes)
        if name in driver.UNTOUCHED:
            assert run["touched_bytes"] is None
        else:
            assert abs(run["touched_bytes"] - RECORDS * RECORD_SIZE) <= run["touched_tolerance"], name
            assert run["touched_tolerance"] == (run_java.TOUCH_ROUNDING if name == "java" else 0), name
        assert summary["records_per_second"] == pytest.approx(driver.run_rate(run))
        assert summary["records_per_second_min"] == summary["records_per_second_max"] == summary["records_per_second"]
        if name == "java":
            # ConsumerPerformance has its own clock only
            assert summary["clock"] == "own" and run["steady_seconds"] is None
            assert summary["time_to_first_record_seconds"] is None
            assert summary["records_per_second"] == pytest.approx(RECORDS / run["seconds"])
            assert summary["cpu_seconds"] is None  # the tool does not report its timed window's CPU
            assert run["jvm_process_cpu_seconds"] > 0
            continue
        assert summary["cpu_seconds"] > 0, name
        assert 0 < run["first_delivery_records"] <= RECORDS, name
        assert 0 <= run["time_to_first_record_seconds"] <= run["seconds"], name
        if name in SEVERAL_DELIVERIES:
            assert summary["clock"] == "steady", name
        if run["steady_seconds"] is not None:
            assert run["steady_records"] == RECORDS - run["first_delivery_records"], name
            assert 0 < run["steady_seconds"] <= run["seconds"], name
            assert summary["records_per_second"] == pytest.approx(run["steady_records"] / run["steady_seconds"])
        else:
            assert summary["clock"] == "one-delivery" and run["first_delivery_records"] == RECORDS, name
        if name == "confluent-kafka-tuned":
            assert run["config"]["fetch.queue.backoff.ms"] == 10
            assert run["config"]["check.crcs"] is True
        if name == "ceiling":
            assert run["api"] == "fastkc_tools.bench_ceiling.CeilingReader.poll_raw"


def test_table_and_chart(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = (out / "e2e.md").read_text()
    assert "| client | records/s (steady) | slowest–fastest |" in table
    for name in report.E2E_CLIENTS:
        assert "| " + driver.LABELS[name] + " | " in table
    assert "target fastkc poll() → records ≥ 2.5× the better of confluent-kafka" in table
    assert "target fastkc poll_arrow() → Arrow ≥ 0.8× ceiling" in table
    assert "load average" in table
    document = json.loads((out / "e2e.json").read_text())
    assert document["table_markdown"].strip() == table.strip()
    clients = document["clients"]
    assert document["ratios"]["fastkc-records/kafka-python"] == pytest.approx(
        clients["fastkc-records"]["records_per_second"] / clients["kafka-python"]["records_per_second"])
    best = max(clients["confluent-kafka"]["records_per_second"],
               clients["confluent-kafka-tuned"]["records_per_second"])
    (vs_librdkafka,) = [t for t in document["targets"] if t["at_least"] == 2.5]
    assert vs_librdkafka["ratio"] == pytest.approx(clients["fastkc-records"]["records_per_second"] / best)
    # the same target taken round by round: run i of fastkc over run i of the better librdkafka row
    against = clients[vs_librdkafka["against"]]["runs"]
    assert vs_librdkafka["round_by_round"] == pytest.approx(
        [driver.run_rate(a) / driver.run_rate(b) for a, b in zip(clients["fastkc-records"]["runs"], against)])
    assert len(vs_librdkafka["round_by_round"]) == len(against) >= 1
    assert "round by round" in table
    for name in ("e2e", "aio", "share"):
        with open(out / (name + ".png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    aio = json.loads((out / "aio.json").read_text())["clients"]
    assert list(aio) == report.AIO_CLIENTS and all(s["status"] == "ok" for s in aio.values())


def test_one_tiny_curve_point(quick_run, kafka_broker):
    """The report's curve: one point of the headers curve (the
    confluent-kafka-written dataset), the curve's own clients."""
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = 6_000
    document = json.loads((out / "curve-headers.json").read_text())
    (point,) = document["points"]
    assert point["x"] == 3 and point["dataset"]["headers"] == 3 and point["dataset"]["records"] == records
    assert point["dataset"]["producer"] == "confluent-kafka"
    assert list(point["clients"]) == list(curves.CURVE_CLIENTS)
    for name, summary in point["clients"].items():
        assert summary["status"] == "ok", (name, summary.get("reason"))
        assert summary["records"] == records, name
        (run,) = summary["runs"]
        if name not in driver.UNTOUCHED:
            assert run["touched_bytes"] == records * 100, name
    table = (out / "curve-headers.md").read_text()
    assert "| 3 | 6,000 |" in table and "load average" in table.lower()
    with open(out / "curve-headers.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # The records really carry the headers the curve says (read back with fastkc).
    from fastkc import KafkaConsumer
    from fastkc.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        tp = TopicPartition(point["dataset"]["topic"], 0)
        consumer.assign([tp])
        polled = consumer.poll(timeout_ms=10000, max_records=5)
        (first,) = [r for rs in polled.values() for r in rs][:1]
        assert first.headers == curves.header_list(3)
        assert len(first.value) == 100
    finally:
        consumer.close()


# The share-group rows (KIP-932) and the acknowledgement each one measures.
SHARE_ROWS = {name: ack for name, ack in {
    "share-fastkc": "implicit", "share-fastkc-arrow": "explicit", "share-confluent": "implicit"}.items()
    if name in driver.CLIENTS}


def test_share_rows_read_the_topic_through_fresh_share_groups(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "share-confluent" in SHARE_ROWS and list(SHARE_ROWS) == report.SHARE_CLIENTS
    clients = json.loads((out / "share.json").read_text())["clients"]
    groups = []
    for name, acknowledgement in SHARE_ROWS.items():
        summary = clients[name]
        assert summary["status"] == "ok", (name, summary.get("reason"))
        (run,) = summary["runs"]
        # the ledger checked every offset once before the runner printed its line
        assert run["records"] == RECORDS, name
        assert run["touched_bytes"] == RECORDS * RECORD_SIZE, name
        assert run["acknowledgement"] == acknowledgement, name
        assert run["time_to_first_record_seconds"] > 0, name  # the group join is in it
        groups.append(run["group"])
    assert len(set(groups)) == len(groups)  # each run its own share group


def test_a_share_runner_that_sees_duplicates_or_losses_fails():
    ledger = share_group.ShareLedger()
    ledger.add([(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)])
    ledger.check({0: 3, 1: 2})
    # {0, 2, 2, 2} against {0, 1, 2, 3}: count and offset sum both match, the sets do not
    same_sum = share_group.ShareLedger()
    same_sum.add([(0, 0), (0, 2), (0, 2), (0, 2)])
    with pytest.raises(common.CountMismatch, match=r"partition 0: 4 records \(2 distinct offsets\).*missing \[1, 3\]"
                       r".*delivered twice \[2, 2\]"):
        same_sum.check({0: 4})
    short = share_group.ShareLedger()
    short.add([(0, 0), (0, 1)])
    with pytest.raises(common.CountMismatch, match="the topic holds 3; missing \\[2\\]"):
        short.check({0: 3})
    beyond = share_group.ShareLedger()
    beyond.add([(0, 0), (0, 1), (0, 3)])
    with pytest.raises(common.CountMismatch, match=r"missing \[2\], outside 0..2: \[3\]"):
        beyond.check({0: 3})
    stray = share_group.ShareLedger()
    stray.add([(0, 0), (5, 0)])
    with pytest.raises(common.CountMismatch, match=r"partitions \[5\]"):
        stray.check({0: 1})


def test_a_share_runner_with_the_wrong_count_fails_loudly(quick_run, kafka_broker):
    proc, _, topic = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    ends = _true_ends(kafka_broker, topic)
    # One record more claimed than partition 1 holds: the runner must wait out its idle limit and fail.
    result = subprocess.run(
        [sys.executable, "-m", "fastkc_tools.bench.run_share_confluent", "--bootstrap", kafka_broker.bootstrap_servers,
         "--topic", topic, "--partitions", str(PARTITIONS), "--expected", str(RECORDS + 1),
         "--expected-bytes", str((RECORDS + 1) * RECORD_SIZE),
         "--ends", "0={0},1={1}".format(ends[0], ends[1] + 1), "--timeout", "90"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode != 0
    assert result.stdout.strip() == ""  # no result line for the driver to take
    assert "partition 1: {0:,} records".format(ends[1]) in result.stderr, result.stderr[-3000:]


def _true_ends(kafka_broker, topic):
    """The topic's end offsets as the broker reports them (written once by this module's run)."""
    from fastkc.net.blocking import BlockingConnection
    from fastkc_tools import sample_run

    host, port = sample_run.split_bootstrap(kafka_broker.bootstrap_servers)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        _, ends = sample_run.topic_layout(conn, topic)
    assert sum(ends.values()) == RECORDS
    return ends


def test_a_runner_with_the_wrong_count_fails_loudly(quick_run, kafka_broker):
    proc, _, topic = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The topic was written by this module's run; its true end offsets, then a claim one short.
    ends = _true_ends(kafka_broker, topic)
    ends_arg = ",".join("{0}={1}".format(p, ends[p]) for p in sorted(ends))
    result = subprocess.run(
        [sys.executable, "-m", "fastkc_tools.bench.run_aiokafka", "--bootstrap", kafka_broker.bootstrap_servers,
         "--topic", topic, "--partitions", str(PARTITIONS), "--expected", str(RECORDS - 1),
         "--expected-bytes", str((RECORDS - 1) * RECORD_SIZE), "--ends", ends_arg, "--timeout", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode != 0
    assert result.stdout.strip() == ""  # no result line for the driver to take
    assert "the topic holds 19,999" in result.stderr or "stopped at positions" in result.stderr, result.stderr


def _run(records, seconds, rss=1, cpu=0.5, first=2, steady_seconds=None):
    return {"client": "aiokafka", "records": records, "seconds": seconds, "peak_rss_bytes": rss, "cpu_seconds": cpu,
            "first_delivery_records": first, "steady_records": records - first if steady_seconds else None,
            "steady_seconds": steady_seconds, "time_to_first_record_seconds": 0.1, "load_average_1m_before": 1.0}


def test_summary_takes_the_median_steady_rate_with_its_spread_and_marks_failures():
    summary = driver.summarise("kafka-python", [{"client": "kafka-python", "error": "exit 1: read 5 records"}], 100)
    assert summary["status"] == "failed" and "read 5 records" in summary["reason"]
    ok = driver.summarise("aiokafka", [
        _run(10, 2.0, rss=1, cpu=0.5, steady_seconds=1.0),   # (10 - 2) / 1.0 = 8
        _run(10, 1.0, rss=3, cpu=0.25, steady_seconds=0.5),  # 16
        _run(10, 4.0, rss=2, cpu=0.75, steady_seconds=2.0),  # 4
    ], 100)
    assert ok["clock"] == "steady"
    assert ok["records_per_second"] == 8.0  # the median run's steady rate, not records / seconds
    assert (ok["records_per_second_min"], ok["records_per_second_max"]) == (4.0, 16.0)
    assert ok["first_poll_to_last_records_per_second"] == 5.0
    assert ok["cpu_seconds"] == 0.5
    assert ok["peak_rss_bytes"] == 3
    one = driver.summarise("fastkc-arrow", [_run(10, 2.0, first=10)], 100)
    assert one["clock"] == "one-delivery" and one["records_per_second"] == 5.0
    table = driver.markdown_table({"kafka-python": summary, "aiokafka": ok, "fastkc-arrow": one}, {
        "records": 10, "record_size": 100, "compression": "lz4", "partitions": 1, "kafka_version": "4.3.1",
        "repeat": 3, "machine": "test"})
    assert "| kafka-python 3.x | FAILED |" in table
    assert "| aiokafka | 8 | 4–16 | 0.0 | 100 ms | 5 | 0.50 | 0 |" in table
    assert "| fastkc poll_arrow() → Arrow | 5 ‡ |" in table


def test_rounds_interleave_the_clients_and_rotate_who_goes_first(monkeypatch):
    calls = []

    def fake_run_client(name, *a, value_size, **k):
        assert value_size == 100
        calls.append(name)
        return dict(_run(10, 1.0, steady_seconds=1.0), client=name, round=len(calls))

    monkeypatch.setattr(driver, "run_client", fake_run_client)
    runs = driver.run_rounds(["fastkc-records", "java", "ceiling"], "h:1", "t", {0: 10}, 3, 5, None,
                             lambda m: None, value_size=100)
    assert calls == ["fastkc-records", "java", "ceiling", "java", "ceiling", "fastkc-records",
                     "ceiling", "fastkc-records", "java"]
    assert {n: len(r) for n, r in runs.items()} == {"fastkc-records": 3, "java": 3, "ceiling": 3}
    # run i of every client is from round i, so round-by-round ratios pair runs of one round
    assert [r["round"] for r in runs["java"]] == [2, 4, 9]


def test_the_driver_fails_a_run_that_touched_other_bytes(monkeypatch):
    """A runner whose result line lacks or misstates touched_bytes is a FAILED run (the
    runner itself also refuses to print one: test_finish_checks_the_touched_bytes)."""
    lines = {"fastkc-records": {"touched_bytes": 999}, "kafka-python": {}, "ceiling": {"touched_bytes": None},
             "java": {"touched_bytes": 1000 + 40, "touched_tolerance": 53}}

    class Proc:
        returncode = 0
        stderr = ""

        def __init__(self, line):
            self.stdout = json.dumps(dict(_run(10, 1.0), **line)) + "\n"

    for name, line in lines.items():
        monkeypatch.setattr(driver.subprocess, "run", lambda *a, line=line, **k: Proc(line))
        result = driver.run_client(name, "h:1", "t", {0: 10}, 5, value_size=100)
        if name in ("ceiling", "java"):
            assert "error" not in result, (name, result)
        else:
            assert "touched" in result["error"] and "1,000 were produced" in result["error"], (name, result)


def test_finish_checks_the_touched_bytes(capsys):
    args = _args(10, {0: 10})
    with pytest.raises(common.TouchMismatch, match="touched 990 key \\+ value bytes, 1,000 were produced"):
        common.finish("x", args, 10, 1.0, touched_bytes=990)
    assert capsys.readouterr().out == ""
    common.finish("x", args, 10, 1.0, touched_bytes=1000 + 20, touched_tolerance=53)
    assert json.loads(capsys.readouterr().out)["touched_bytes"] == 1020


def test_touch_reads_every_key_and_value_rows_and_columns():
    import pyarrow as pa


    class Rec:
        def __init__(self, key, value):
            self.key, self.value = key, value

    assert common.touch_records([Rec(None, b"abc"), Rec(b"k", None), Rec(b"kk", b"v")]) == 3 + 1 + 3
    keys = pa.array([None, b"k", b"kk", b"kkk"], pa.binary())
    values = pa.array([b"a" * 5, None, b"b" * 7, b""], pa.binary())
    batch = pa.RecordBatch.from_arrays([keys, values], names=["key", "value"])
    assert common.touch_arrow(batch) == 6 + 12
    # a slice starts inside the offsets buffer: only its own rows count
    assert common.touch_arrow(batch.slice(1, 2)) == 3 + 7
    assert common.touch_arrow(batch.slice(4, 0)) == 0
    big = pa.RecordBatch.from_arrays([keys.cast(pa.large_binary()), values.cast(pa.large_binary())],
                                     names=["key", "value"])
    assert common.touch_arrow(big) == 18
    views = pa.RecordBatch.from_arrays([keys.cast(pa.binary_view()), values.cast(pa.binary_view())],
                                       names=["key", "value"])  # decode_arrow(zero_copy=True)'s columns
    assert common.touch_arrow(views) == 18 and common.touch_arrow(views.slice(1, 2)) == 3 + 7



def test_the_steady_clock_leaves_out_the_first_delivery(capsys):
    args = _args(10, {0: 10})
    clock = common.Clock(5)
    clock.start()
    clock.saw_records(4)
    clock.saw_records(6)
    common.finish("x", args, 10, clock.seconds, touched_bytes=1000, clock=clock)
    line = json.loads(capsys.readouterr().out)
    assert line["first_delivery_records"] == 4 and line["steady_records"] == 6
    assert 0 < line["steady_seconds"] <= line["seconds"]
    assert 0 <= line["time_to_first_record_seconds"] <= line["seconds"]
    only = common.Clock(5)
    only.start()
    only.saw_records(10)
    common.finish("x", args, 10, 1.0, touched_bytes=1000, clock=only)
    line = json.loads(capsys.readouterr().out)
    assert line["steady_seconds"] is None and line["steady_records"] is None


def test_curve_points_are_bounded():
    point = curves.CURVES["value-size"].point(102400)
    assert curves.point_records(point, 2_000_000, 400_000_000) == 3906
    assert curves.point_records(curves.CURVES["value-size"].point(10), 2_000_000, 400_000_000) == 2_000_000
    assert curves.CURVES["headers"].point(3).producer == "confluent-kafka"
    assert curves.CURVES["codecs"].point("zstd").compression == "zstd"


class _Install:
    def __init__(self, version):
        self.version = version
        self.classpath = "/lib/*"


@pytest.mark.parametrize("version, count_flag, config_flag", [
    ("4.1.1", "--messages", "--consumer.config"),
    ("3.9.2", "--messages", "--consumer.config"),
    ("4.2.0", "--num-records", "--command-config"),
    ("4.3.1", "--num-records", "--command-config"),
])
def test_java_flags_follow_the_kafka_release(version, count_flag, config_flag):
    cmd = run_java.build_command(_Install(version), "java", "h:1", "t", 123, "/c.properties", "g", 10000)
    assert cmd[cmd.index(count_flag) + 1] == "123"
    assert cmd[cmd.index(config_flag) + 1] == "/c.properties"
    assert ("--messages" in cmd) != ("--num-records" in cmd)


def test_java_summary_parsing_checks_its_shape():
    out = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
           "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
           "2026-11-21 21:34:26:149, 2026-11-21 21:34:26:835, 1.9073, 2.7804, 20000, 29154.5190, 412, 274, "
           "6.9611, 72992.7007\n")
    stats = run_java.parse_output(out)
    assert stats["data.consumed.in.nMsg"] == "20000" and stats["fetch.time.ms"] == "274"
    with pytest.raises(RuntimeError):
        run_java.parse_output(out.replace(", 6.9611", ""))
    with pytest.raises(RuntimeError):
        run_java.parse_output("WARNING: Exiting before consuming the expected number of records\n")


def _args(expected, ends):
    return common.parse_args("test", ["--bootstrap", "h:1", "--topic", "t", "--partitions", str(len(ends)),
                                      "--expected", str(expected), "--expected-bytes", str(expected * 100),
                                      "--ends", ",".join("{0}={1}".format(p, e) for p, e in sorted(ends.items())),
                                      "--timeout", "5"])


def _scripted(polls, position_after):
    """poll_count / positions stand-ins: each poll returns the next count (and 100 bytes
    touched per record); positions follow."""
    state = {"polled": 0}
    remaining = list(polls)

    def poll_count():
        state["polled"] += 1
        n = remaining.pop(0) if remaining else 0
        return n, 100 * n

    def positions():
        return position_after(state["polled"])

    return poll_count, positions


def test_drain_stops_at_the_end_offsets():
    args = _args(10, {0: 6, 1: 4})
    poll_count, positions = _scripted([6, 4], lambda n: {0: 6, 1: 4} if n >= 2 else {0: 6, 1: 0})
    assert common.drain(poll_count, positions, args, common.Clock(args.timeout)) == (10, 1000)


def test_drain_refuses_a_count_reached_by_duplicates():
    args = _args(10, {0: 6, 1: 4})
    # Ten records delivered while partition 1 is still at offset 0: some came twice.
    poll_count, positions = _scripted([6, 4], lambda n: {0: 6, 1: 0})
    with pytest.raises(common.CountMismatch, match="stopped at positions"):
        common.drain(poll_count, positions, args, common.Clock(args.timeout))


def test_lost_records_stop_the_loop_and_fail_the_count(capsys):
    args = _args(10, {0: 6, 1: 4})
    # The positions reach the end but only 7 records were delivered.
    poll_count, positions = _scripted([4, 3], lambda n: {0: 6, 1: 4} if n >= 2 else {0: 3, 1: 0})
    records, touched = common.drain(poll_count, positions, args, common.Clock(args.timeout))
    assert (records, touched) == (7, 700)
    with pytest.raises(common.CountMismatch, match="read 7 records, the topic holds 10"):
        common.finish("x", args, records, 1.0, touched_bytes=touched)
    assert capsys.readouterr().out == ""  # no result line printed


def test_a_stuck_client_hits_the_deadline():
    args = _args(10, {0: 10})
    args.timeout = 0.05
    poll_count, positions = _scripted([], lambda n: {0: 0})
    with pytest.raises(SystemExit, match="timed out"):
        common.drain(poll_count, positions, args, common.Clock(args.timeout))


def test_ends_must_name_every_partition():
    with pytest.raises(SystemExit):
        common.parse_args("test", ["--bootstrap", "h:1", "--topic", "t", "--partitions", "3", "--expected", "1",
                                   "--ends", "0=1,2=0"])


def test_the_java_steady_runner_says_when_javac_is_missing(monkeypatch, tmp_path):
    from fastkc_tools.bench import run_java_steady

    monkeypatch.setenv("FASTKC_CACHE", str(tmp_path))  # nothing compiled there yet
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(run_java_steady.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="javac not found"):
        run_java_steady.compiled_classes(_Install("4.3.1"))
    assert not any(tmp_path.rglob("*.class"))


def test_untimed_bookkeeping_is_out_of_every_figure():
    import time

    clock = common.Clock(5)
    clock.start()
    clock.saw_records(2)
    with clock.untimed():
        time.sleep(0.2)
    clock.saw_records(3)
    with clock.untimed():  # after the last record: in no window anyway
        time.sleep(0.05)
    assert clock.untimed_wall >= 0.25
    assert clock.steady_seconds < 0.1  # the 0.2 s of bookkeeping between the records is taken out
    assert clock.seconds < 0.1
