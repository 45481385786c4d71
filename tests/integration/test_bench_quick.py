"""`fastkc bench` in quick mode: the whole end-to-end driver on a tiny topic,
so CI runs every runner and the benchmark cannot rot. Speed is never
asserted here, only that every client read exactly the topic and that the
table, JSON and chart come out.
"""
import json
import os
import subprocess
import sys

import pytest

from benchmarks.e2e import common, driver, run_java
from tests.support.kafka_tools import unique_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDS = 20_000
PARTITIONS = 2
RECORD_SIZE = 100


@pytest.fixture(scope="module")
def quick_run(kafka_broker, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    topic = unique_name("bench-quick")
    argv = ["bench", "--bootstrap", kafka_broker.bootstrap_servers, "--topic", topic,
            "--records", str(RECORDS), "--record-size", str(RECORD_SIZE), "--partitions", str(PARTITIONS),
            "--compression", "lz4", "--repeat", "1", "--timeout", "120",
            "--json", str(out / "e2e.json"), "--png", str(out / "e2e.png")]
    # Through the real command line, as a user would run it.
    proc = subprocess.run([sys.executable, "-m", "fastkc.cli"] + argv, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    return proc, out, topic


def test_every_client_reads_exactly_the_topic(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads((out / "e2e.json").read_text())
    assert document["meta"]["records"] == RECORDS
    clients = document["clients"]
    assert list(clients) == list(driver.CLIENTS)
    for name, summary in clients.items():
        assert summary["status"] == "ok", (name, summary.get("reason"))
        assert summary["records"] == RECORDS, name
        assert summary["seconds"] > 0
        assert summary["records_per_second"] == pytest.approx(RECORDS / summary["seconds"])
        assert summary["peak_rss_bytes"] > 10 * 2**20, name  # a live interpreter or JVM, not a zero
        if name == "confluent-kafka-tuned":
            assert summary["runs"][0]["config"]["fetch.queue.backoff.ms"] == 10
            assert summary["runs"][0]["config"]["check.crcs"] is True
        if name == "java":
            assert summary["cpu_seconds"] is None  # the tool does not report its timed window's CPU
            assert summary["runs"][0]["jvm_process_cpu_seconds"] > 0
        else:
            assert summary["cpu_seconds"] > 0, name


def test_table_and_chart(quick_run):
    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout
    assert "| client | records/s |" in table
    for label in ("kafka-python 3.x", "aiokafka", "confluent-kafka consume(500)",
                  "confluent-kafka consume(500), fetch.queue.backoff.ms=10", "Java ConsumerPerformance"):
        assert "| " + label + " | " in table
    assert "target fastkc poll() → records ≥ 2× confluent-kafka" in table
    document = json.loads((out / "e2e.json").read_text())
    assert document["table_markdown"].strip() == table.strip()
    assert document["ratios"]["fastkc-records/kafka-python"] == pytest.approx(
        document["clients"]["fastkc-records"]["records_per_second"]
        / document["clients"]["kafka-python"]["records_per_second"])
    assert (out / "e2e.md").read_text().strip() == table.strip()
    with open(out / "e2e.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_runner_with_the_wrong_count_fails_loudly(quick_run, kafka_broker):
    proc, _, topic = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The topic was written by this module's run; its true end offsets, then a claim one short.
    from fastkc import sample_run
    from fastkc.protocol.blocking import BlockingConnection

    host, port = sample_run._split(kafka_broker.bootstrap_servers)
    with BlockingConnection(host, port, timeout=30.0) as conn:
        _, ends = sample_run.topic_layout(conn, topic)
    assert sum(ends.values()) == RECORDS
    ends_arg = ",".join("{0}={1}".format(p, ends[p]) for p in sorted(ends))
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.e2e.run_aiokafka", "--bootstrap", kafka_broker.bootstrap_servers,
         "--topic", topic, "--partitions", str(PARTITIONS), "--expected", str(RECORDS - 1),
         "--ends", ends_arg, "--timeout", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode != 0
    assert result.stdout.strip() == ""  # no result line for the driver to take
    assert "the topic holds 19,999" in result.stderr or "stopped at positions" in result.stderr, result.stderr


def test_summary_takes_the_median_and_marks_failures():
    summary = driver.summarise("kafka-python", [{"client": "kafka-python", "error": "exit 1: read 5 records"}], 100)
    assert summary["status"] == "failed" and "read 5 records" in summary["reason"]
    ok = driver.summarise("aiokafka", [
        {"client": "aiokafka", "records": 10, "seconds": 2.0, "peak_rss_bytes": 1, "cpu_seconds": 0.5},
        {"client": "aiokafka", "records": 10, "seconds": 1.0, "peak_rss_bytes": 3, "cpu_seconds": 0.25},
        {"client": "aiokafka", "records": 10, "seconds": 4.0, "peak_rss_bytes": 2, "cpu_seconds": 0.75},
    ], 100)
    assert ok["seconds"] == 2.0 and ok["records_per_second"] == 5.0  # the median run
    assert ok["cpu_seconds"] == 0.5
    assert ok["peak_rss_bytes"] == 3
    table = driver.markdown_table({"kafka-python": summary, "aiokafka": ok}, {
        "records": 10, "record_size": 100, "compression": "lz4", "partitions": 1, "kafka_version": "4.3.1",
        "repeat": 3, "machine": "test"})
    assert "| kafka-python 3.x | FAILED |" in table
    assert "| aiokafka | 5 | 0.0 | 2.00 | 0.50 | 0 |" in table


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
                                      "--expected", str(expected),
                                      "--ends", ",".join("{0}={1}".format(p, e) for p, e in sorted(ends.items())),
                                      "--timeout", "5"])


def _scripted(polls, position_after):
    """poll_count / positions stand-ins: each poll returns the next count; positions follow."""
    state = {"polled": 0}
    remaining = list(polls)

    def poll_count():
        state["polled"] += 1
        return remaining.pop(0) if remaining else 0

    def positions():
        return position_after(state["polled"])

    return poll_count, positions


def test_drain_stops_at_the_end_offsets():
    args = _args(10, {0: 6, 1: 4})
    poll_count, positions = _scripted([6, 4], lambda n: {0: 6, 1: 4} if n >= 2 else {0: 6, 1: 0})
    assert common.drain(poll_count, positions, args, common.Clock(args.timeout)) == 10


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
    records = common.drain(poll_count, positions, args, common.Clock(args.timeout))
    assert records == 7
    with pytest.raises(common.CountMismatch, match="read 7 records, the topic holds 10"):
        common.finish("x", args, records, 1.0)
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
