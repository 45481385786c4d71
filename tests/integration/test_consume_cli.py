"""`fastkc consume` as a process against the real broker, on records written
by confluent-kafka's producer: kcat's output byte for byte (-f, -J, -Z),
every start option, -c, -e on compacted and transactional tails, -G commits
(read back with kafka-python), the Arrow IPC and Parquet files, `| head`,
Ctrl-C, and the errors (exit 1) of an unknown topic and an unreachable broker.

kcat (Debian's 1.7.1, scripts/setup.sh installs it) is the reference of the
differential tests; they skip without it unless FASTKC_REQUIRE_KCAT=1.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.kafka_tools import Message, TransactionalWriter, create_topic, produce, unique_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_TS = 1_700_000_000_000
RECORDS = 60
PARTITIONS = 2

requires_kcat = pytest.mark.skipif(
    shutil.which("kcat") is None and os.environ.get("FASTKC_REQUIRE_KCAT") != "1",
    reason="kcat is not installed (scripts/setup.sh installs it; FASTKC_REQUIRE_KCAT=1 makes this a failure)")


def _message(i):
    """Every shape kcat renders in its own way: null and empty keys and
    values, bytes that are not UTF-8, JSON's special characters and control
    characters, newlines inside values, headers with null and empty values."""
    key = None if i % 7 == 0 else (b"" if i % 11 == 0 else b"key-%d" % i)
    if i % 10 == 0:
        value = None
    elif i % 13 == 0:
        value = b""
    else:
        value = b'v%d "q" \\ / \t\x01\x1f\x7f \xff\xfe caf\xc3\xa9 \n line2' % i
    headers = ()
    if i % 4 == 0:
        headers = (("trace", b"t-%d" % i), ("empty", b""), ("none", None), ("trace", b"dup"))
    elif i % 5 == 0:
        # not a NUL byte: kcat prints header values with printf's %.*s, which
        # stops at the first NUL; fastkc prints every byte
        headers = (("caf\u00e9", b"\x01bin"),)
    return Message(key=key, value=value, headers=headers, timestamp=BASE_TS + i * 1000,
                   partition=i % PARTITIONS)


@pytest.fixture(scope="module")
def topic(kafka_broker):
    """(name, the WrittenRecords by partition) of a 2-partition topic."""
    bootstrap = kafka_broker.bootstrap_servers
    # the records are stamped in 2023: without retention.ms=-1 the broker's
    # retention check (every 5 min) deletes them in the middle of the module
    name = create_topic(bootstrap, unique_name("consume-cli"), partitions=PARTITIONS,
                        configs={"retention.ms": "-1"})
    written = produce(bootstrap, name, [_message(i) for i in range(RECORDS)])
    by_partition = {p: sorted((r for r in written if r.partition == p), key=lambda r: r.offset)
                    for p in range(PARTITIONS)}
    return name, by_partition


def fastkc(*argv, timeout=60, **kwargs):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "fastkc.cli", "consume", *argv], capture_output=True,
                          timeout=timeout, cwd=ROOT, env=env, **kwargs)


def kcat(*argv):
    if shutil.which("kcat") is None:  # only reached with FASTKC_REQUIRE_KCAT=1
        pytest.fail("FASTKC_REQUIRE_KCAT=1 but kcat is not installed (scripts/setup.sh installs it)")
    return subprocess.run(["kcat", "-C", "-q", *argv], capture_output=True, timeout=60)


def lines_of(done):
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stderr == b""
    return done.stdout.decode().splitlines()


# --- kcat, byte for byte -----------------------------------------------------------
@requires_kcat
@pytest.mark.parametrize("options", [
    [],  # the default: %s\n
    ["-f", "%t|%p|%o|%k|%K|%s|%S|%T|%h\\n"],
    ["-f", "Key (%K bytes): %k\\tValue (%S bytes): %s\\x7c%%\\065\\n--\\n"],
    ["-Z", "-f", "%k=%s;"],
    ["-J"],
], ids=["default", "every-token", "kcat-readme", "null-text", "json"])
def test_output_matches_kcat(kafka_broker, topic, options):
    """Partition by partition (the interleaving of partitions is each
    client's own), the whole output is the same bytes."""
    name, written = topic
    bootstrap = kafka_broker.bootstrap_servers
    for partition in range(PARTITIONS):
        ours = fastkc("-b", bootstrap, "-t", name, "-p", str(partition), "-o", "beginning", "-e", *options)
        theirs = kcat("-b", bootstrap, "-t", name, "-p", str(partition), "-o", "beginning", "-e", *options)
        assert theirs.returncode == 0, theirs.stderr
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == theirs.stdout
        assert len(ours.stdout) > 0


@requires_kcat
def test_log_append_time_matches_kcat(kafka_broker, make_topic):
    """The broker's timestamps: -J's "tstype":"logappend" and %T."""
    bootstrap = kafka_broker.bootstrap_servers
    name = make_topic(partitions=1, configs={"message.timestamp.type": "LogAppendTime"})
    produce(bootstrap, name, [Message(key=b"k%d" % i, value=b"v%d" % i, timestamp=BASE_TS) for i in range(5)])
    outputs = {}
    for options in (["-J"], ["-f", "%o %T %s\\n"]):
        ours = fastkc("-b", bootstrap, "-t", name, "-o", "beginning", "-e", *options)
        theirs = kcat("-b", bootstrap, "-t", name, "-o", "beginning", "-e", *options)
        assert ours.returncode == 0 and theirs.returncode == 0
        assert ours.stdout == theirs.stdout
        outputs[options[0]] = ours.stdout
    rows = [json.loads(line) for line in outputs["-J"].splitlines()]
    assert len(rows) == 5
    assert all(r["tstype"] == "logappend" and r["ts"] != BASE_TS for r in rows)  # the broker's clock


# --- what the output means (no kcat needed) -------------------------------------------
def test_json_lines_hold_the_records(kafka_broker, topic):
    name, written = topic
    done = fastkc("-b", kafka_broker.bootstrap_servers, "-t", name, "-p", "1", "-o", "beginning", "-e", "-J")
    assert done.returncode == 0 and done.stderr == b""
    rows = [json.loads(line.decode("utf-8", "replace")) for line in done.stdout.splitlines()]
    assert [r["offset"] for r in rows] == [w.offset for w in written[1]]
    for row, record in zip(rows, written[1]):
        assert row["topic"] == name and row["partition"] == 1
        assert (row["tstype"], row["ts"]) == ("create", record.timestamp)
        assert row["key"] == (None if record.key is None else record.key.decode())
        assert (row["payload"] is None) == (record.value is None)
        assert ("headers" in row) == bool(record.headers)
        if record.headers:
            flat = [x for k, v in record.headers for x in (k, None if v is None else v.decode("utf-8", "replace"))]
            assert row["headers"] == flat


def _offsets(done):
    return [tuple(int(x) for x in line.split()) for line in lines_of(done)]


def test_start_offsets(kafka_broker, topic):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    ends = {p: written[p][-1].offset + 1 for p in written}
    po = ("-f", "%p %o\\n")
    every = sorted((p, r.offset) for p in written for r in written[p])
    assert sorted(_offsets(fastkc("-b", b, "-t", name, "-o", "beginning", "-e", *po))) == every
    assert _offsets(fastkc("-b", b, "-t", name, "-o", "end", "-e", *po)) == []
    assert _offsets(fastkc("-b", b, "-t", name, "-p", "0", "-o", "7", "-e", *po)) == \
        [(0, o) for o in range(7, ends[0])]
    assert sorted(_offsets(fastkc("-b", b, "-t", name, "-o", "-3", "-e", *po))) == \
        sorted((p, o) for p in written for o in range(ends[p] - 3, ends[p]))
    # -N larger than the partition: from its beginning
    assert len(_offsets(fastkc("-b", b, "-t", name, "-p", "1", "-o", "-1000", "-e", *po))) == ends[1]
    # a timestamp: record i was stamped BASE_TS + i s and went to partition i % 2
    at = BASE_TS + 40 * 1000
    expected = sorted((i % 2, i // 2) for i in range(40, RECORDS))
    assert sorted(_offsets(fastkc("-b", b, "-t", name, "-o", "@%d" % at, "-e", *po))) == expected
    assert sorted(_offsets(fastkc("-b", b, "-t", name, "--from-time", str(at), "-e", *po))) == expected
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at / 1000))
    assert sorted(_offsets(fastkc("-b", b, "-t", name, "--from-time", iso, "-e", *po))) == expected
    # past the last record: nothing, and -e still ends
    assert _offsets(fastkc("-b", b, "-t", name, "--from-time", str(BASE_TS + 10**9), "-e", *po)) == []


def test_stop_times(kafka_broker, topic):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    po = ("-f", "%p %o\\n")
    to = BASE_TS + 20 * 1000
    # --to-time is inclusive, and ends the run without -e once every partition passed it
    expected = sorted((i % 2, i // 2) for i in range(10, 21))
    got = fastkc("-b", b, "-t", name, "--from-time", str(BASE_TS + 10 * 1000), "--to-time", str(to), *po)
    assert sorted(_offsets(got)) == expected
    # kcat's e@ stops before the time
    got = fastkc("-b", b, "-t", name, "-o", "e@%d" % to, *po)
    assert sorted(_offsets(got)) == sorted((i % 2, i // 2) for i in range(20))


def test_count_and_multiple_topics(kafka_broker, topic, make_topic):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    other = make_topic(partitions=1)
    produce(b, other, [Message(value=b"other-%d" % i) for i in range(5)])
    assert len(lines_of(fastkc("-b", b, "-t", name, "-o", "beginning", "-c", "9", "-f", "%o\\n"))) == 9
    both = lines_of(fastkc("-b", b, "-t", name, "-t", other, "-o", "beginning", "-e", "-f", "%t\\n"))
    assert both.count(other) == 5 and both.count(name) == RECORDS


def test_arrow_ipc_and_parquet_read_back(kafka_broker, topic, tmp_path):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    expected = sorted((r.partition, r.offset, r.key, r.value, r.timestamp,
                       [(k, v) for k, v in r.headers]) for p in written for r in written[p])

    def rows(table):
        got = []
        for row in table.to_pylist():
            headers = [(h["key"], h["value"]) for h in row["headers"] or ()]
            got.append((row["partition"], row["offset"], row["key"], row["value"],
                        int(row["timestamp"].timestamp() * 1000), headers))
            assert row["topic"] == name
        return sorted(got)

    ipc = tmp_path / "out.arrows"
    done = fastkc("-b", b, "-t", name, "-o", "beginning", "-e", "--arrow-ipc", str(ipc))
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done.stderr
    with pa.ipc.open_stream(str(ipc)) as reader:
        assert rows(reader.read_all()) == expected

    done = fastkc("-b", b, "-t", name, "-o", "beginning", "-e", "--arrow-ipc", "-")
    assert done.returncode == 0
    assert rows(pa.ipc.open_stream(pa.py_buffer(done.stdout)).read_all()) == expected

    parquet = tmp_path / "out.parquet"
    done = fastkc("-b", b, "-t", name, "-o", "beginning", "-e", "--parquet", str(parquet))
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert rows(pq.read_table(str(parquet))) == expected
    assert pq.ParquetFile(str(parquet)).metadata.num_row_groups >= 1

    # nothing to read: still a valid, empty file with the schema
    empty = tmp_path / "empty.parquet"
    assert fastkc("-b", b, "-t", name, "-o", "end", "-e", "--parquet", str(empty)).returncode == 0
    assert pq.read_table(str(empty)).num_rows == 0


# --- groups -------------------------------------------------------------------------------
def _committed(bootstrap, group, name):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(name, p)) for p in range(PARTITIONS)}
    finally:
        consumer.close()


def test_group_commits_what_was_written(kafka_broker, topic):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    group = unique_name("cli-group")
    first = _offsets(fastkc("-b", b, "-t", name, "-G", group, "-o", "beginning", "-c", "7", "-f", "%p %o\\n"))
    assert len(first) == 7
    committed = _committed(b, group, name)
    for p in range(PARTITIONS):
        mine = [o for q, o in first if q == p]
        # a partition with nothing written yet: its position (the beginning) is committed
        assert committed[p] == (max(mine) + 1 if mine else 0), (committed, first)
    rest = _offsets(fastkc("-b", b, "-t", name, "-G", group, "-e", "-f", "%p %o\\n"))
    assert sorted(first + rest) == sorted((p, r.offset) for p in written for r in written[p])
    assert _committed(b, group, name) == {p: written[p][-1].offset + 1 for p in written}
    # nothing left: -e ends at once and commits nothing new
    assert _offsets(fastkc("-b", b, "-t", name, "-G", group, "-e", "-f", "%p %o\\n")) == []


def test_ctrl_c_commits_and_exits_cleanly(kafka_broker, topic):
    name, written = topic
    b = kafka_broker.bootstrap_servers
    group = unique_name("cli-sigint")
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "fastkc.cli", "consume", "-b", b, "-t", name, "-G", group,
                             "-o", "beginning", "-f", "%p %o\\n"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0)  # unbuffered: communicate() reads the pipe, not a reader's buffer
    try:
        first = proc.stdout.readline()  # it is reading: every record is written, then it waits for more
        assert first
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _committed(b, group, name)[0] is None:
            time.sleep(0.5)  # not committed yet: the periodic commit comes within 5 s
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    lines = [first] + out.splitlines(keepends=True)
    assert len(lines) == RECORDS
    assert _committed(b, group, name) == {p: written[p][-1].offset + 1 for p in written}


# --- -e where the last offset holds no record ---------------------------------------------
def test_exit_at_end_of_a_compacted_topic(kafka_broker, compacted_topic):
    name, held, log_end = compacted_topic
    done = fastkc("-b", kafka_broker.bootstrap_servers, "-t", name, "-o", "beginning", "-e", "-f", "%o\\n",
                  timeout=60)
    assert [int(x) for x in lines_of(done)] == [r.offset for r in held]


def test_exit_at_end_after_transactions(kafka_broker, make_topic):
    """The log ends with an abort marker after aborted records: with
    read_committed no record is visible at or near the end offset."""
    b = kafka_broker.bootstrap_servers
    name = make_topic(partitions=1)
    with TransactionalWriter(b) as tx:
        kept = tx.write(name, [Message(value=b"kept-%d" % i, partition=0) for i in range(5)], commit=True)
        tx.write(name, [Message(value=b"dropped-%d" % i, partition=0) for i in range(5)], commit=False)
    done = fastkc("-b", b, "-t", name, "-o", "beginning", "-e", "-X", "isolation_level=read_committed",
                  "-f", "%o %s\\n")
    assert lines_of(done) == ["%d kept-%d" % (r.offset, i) for i, r in enumerate(kept)]
    # read_uncommitted sees the aborted records too (as kcat does), and also ends
    done = fastkc("-b", b, "-t", name, "-o", "beginning", "-e", "-f", "%s\\n")
    assert len(lines_of(done)) == 10


# --- pipes and errors -----------------------------------------------------------------
def test_closed_pipe_ends_quietly(kafka_broker, make_topic):
    b = kafka_broker.bootstrap_servers
    name = make_topic(partitions=1)
    # more than a pipe holds, so the writes meet the closed pipe
    produce(b, name, [Message(value=b"x" * 200, partition=0) for _ in range(20000)], compression="lz4")
    env = dict(os.environ, PYTHONPATH=ROOT)
    command = "set -o pipefail; {0} -m fastkc.cli consume -b {1} -t {2} -o beginning -e | head -3".format(
        sys.executable, b, name)
    done = subprocess.run(["bash", "-c", command], capture_output=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (b"x" * 200 + b"\n") * 3
    assert done.stderr == b""


def test_unknown_topic_is_an_error(kafka_broker):
    started = time.monotonic()
    done = fastkc("-b", kafka_broker.bootstrap_servers, "-t", unique_name("absent"), "-e",
                  "-X", "request_timeout_ms=5000")
    assert done.returncode == 1
    assert done.stderr.decode().startswith("fastkc consume: error: UnknownTopicOrPartitionError")
    assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_unreachable_broker_is_an_error():
    started = time.monotonic()
    done = fastkc("-b", "127.0.0.1:1", "-t", "t", "-e", "-X", "bootstrap_timeout_ms=1500")
    assert done.returncode == 1
    assert done.stderr.decode().startswith("fastkc consume: error: NoBrokersAvailable")
    assert done.stderr.count(b"\n") == 1
    assert time.monotonic() - started < 20


def test_unwritable_output_is_an_error(kafka_broker, topic, tmp_path):
    name, written = topic
    done = fastkc("-b", kafka_broker.bootstrap_servers, "-t", name, "-o", "beginning", "-e",
                  "--parquet", str(tmp_path / "missing-folder" / "out.parquet"))
    assert done.returncode == 1
    assert done.stderr.decode().startswith("fastkc consume: error: output: ")
    assert done.stderr.count(b"\n") == 1


def test_config_file_and_settings(kafka_broker, topic, tmp_path):
    name, written = topic
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers={0}\nfetch_max_wait_ms=100\nclient.id=cli-test\n".format(
        kafka_broker.bootstrap_servers))
    done = fastkc("-F", str(config), "-t", name, "-p", "0", "-o", "beginning", "-e", "-f", "%o\\n",
                  "-X", "max_partition_fetch_bytes=1024", "-X", "check_crcs=true")
    assert [int(x) for x in lines_of(done)] == [r.offset for r in written[0]]


def test_progress_only_on_a_terminal(kafka_broker, topic):
    import pty

    name, written = topic
    controller, terminal = pty.openpty()
    try:
        env = dict(os.environ, PYTHONPATH=ROOT)
        done = subprocess.run([sys.executable, "-m", "fastkc.cli", "consume", "-b", kafka_broker.bootstrap_servers,
                               "-t", name, "-o", "beginning", "-e", "-f", "%o\\n"], stdout=subprocess.PIPE,
                              stderr=terminal, cwd=ROOT, env=env, timeout=60)
        os.close(terminal)
        terminal = None
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
        if terminal is not None:
            os.close(terminal)
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == RECORDS
    assert b"records" in seen  # the status line went to the terminal, not to stdout
