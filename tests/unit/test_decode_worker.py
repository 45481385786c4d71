"""The decode worker (decode_threads=1) against the single-threaded fetcher
(decode_threads=0): the same scripted fetches, polls, seeks, pauses,
re-assignments, corrupt batches and update_offsets=False give the same
records, positions, position epochs and errors, poll by poll -- with the
worker idle before each action (so prepared steps are certainly there to be
handed out, or discarded) and without waiting (racing it). Then the
consumer-level duties on the fake broker: close() while the worker is busy
returns within its bound, wakeup() still interrupts poll(), records match."""
import threading
import time

import pytest

from fastkc import KafkaConsumer, errors
from fastkc.config import consumer_config
from fastkc.decode_executor import ThreadDecodeExecutor
from fastkc.fetch import Fetcher
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg
from tests.support.fake_broker import FakeBroker
from tests.support.scripted_fetch import TOPIC, ScriptedClient
from tests.support.scripted_fetch import answer_fetch as _answer_fetch
from tests.support.scripted_fetch import fetch_offsets as _fetch_offsets
from tests.support.scripted_fetch import make_fetcher as _fetcher

TP = [TopicPartition(TOPIC, p) for p in range(3)]


def _batches(base, n, per, codec, epoch=5, bad_at=None):
    out = []
    for i in range(n):
        off = base + i * per
        batch = bg.record_batch(bg.records_from_values([b"p%d-%d" % (base, off + j) for j in range(per)],
                                                       key=b"k"), base_offset=off, leader_epoch=epoch,
                                codec=codec)
        out.append(bg.bad_crc(batch) if off == bad_at else batch)
    return b"".join(out)


def _control_tail(base, pid=7):
    return bg.control_batch(bg.CONTROL_COMMIT, base_offset=base, producer_id=pid)


class Run:
    """One fetcher driven by a script; `log` collects what the application sees."""

    def __init__(self, decode_threads, wait):
        self.client = ScriptedClient(partitions=(0, 1, 2))
        self.fetcher = Fetcher(self.client, consumer_config({"bootstrap_servers": "h:1",
                                                             "decode_threads": decode_threads}))
        self.wait = wait
        self.log = []

    def settle(self):
        worker = self.fetcher.decode_executor
        if self.wait and isinstance(worker, ThreadDecodeExecutor):
            assert worker.wait_idle(10)

    def observe(self, what):
        self.log.append((what, {tp.partition: (s.position, s.position_epoch)
                                for tp, s in self.fetcher.states.items()}))

    def do(self, action, *args):
        self.settle()
        f = self.fetcher
        if action == "assign":
            f.assign([TP[p] for p in args[0]])
            for p, offset in args[1].items():
                f.seek(TP[p], offset)
        elif action == "fetch":  # answer the next Fetch with {partition: blob}
            f.send_requests()
            request = self.client.take("Fetch")
            asked = _fetch_offsets(request)
            blobs = {p: args[0][p](asked[p]) for p in asked if p in args[0]}
            _answer_fetch(self.client, request, {p: {"records": b} for p, b in blobs.items()})
        elif action == "poll":
            n, update = args[0], args[1] if len(args) > 1 else True
            try:
                out = f.fetched_records(n, update_offsets=update)
                self.log.append(("records", {tp.partition: [(r.offset, r.value, r.leader_epoch) for r in recs]
                                             for tp, recs in out.items()}))
                f.raise_pending()
            except errors.CorruptRecordError as exc:
                self.log.append(("error", type(exc).__name__, exc.offset, exc.next_offset,
                                 [r.offset for r in exc.records or ()]))
        elif action == "seek":
            f.seek(TP[args[0]], args[1])
        elif action == "pause":
            f.pause(TP[args[0]])
        elif action == "resume":
            f.resume(TP[args[0]])
        self.observe(action)

    def close(self):
        assert self.fetcher.close_worker(10)


def run_script(script, decode_threads, wait):
    run = Run(decode_threads, wait)
    try:
        for step in script:
            run.do(*step)
        return run.log, run.fetcher
    finally:
        run.close()


def _data(codec, per=7, batches=6, bad_at=None, control=False):
    def make(start):
        blob = _batches(start, batches, per, codec, bad_at=bad_at)
        if control:
            blob += _control_tail(start + batches * per)
        return blob
    return make


SCRIPTS = {
    "plain polls of every size": lambda c: [
        ("assign", [0, 1, 2], {0: 0, 1: 0, 2: 0}),
        ("fetch", {0: _data(c), 1: _data(c), 2: _data(c, control=True)}),
        ("poll", 5), ("poll", 500), ("poll", 3), ("poll", 1), ("poll", 13),
        ("fetch", {0: _data(c), 1: _data(c, control=True), 2: _data(c)}),
        ("poll", 7), ("poll", 7), ("poll", 100), ("poll", 2), ("poll", 500), ("poll", 500),
    ],
    "corrupt batch mid-stream": lambda c: [
        ("assign", [0, 1], {0: 0, 1: 0}),
        ("fetch", {0: _data(c, bad_at=21), 1: _data(c)}),
        ("poll", 4), ("poll", 10), ("poll", 10), ("poll", 10), ("poll", 500), ("poll", 500),
    ],
    "seek during a prepared step": lambda c: [
        ("assign", [0, 1], {0: 0, 1: 0}),
        ("fetch", {0: _data(c), 1: _data(c)}),
        ("poll", 5), ("seek", 0, 2), ("seek", 1, 30), ("poll", 6),
        ("fetch", {0: _data(c), 1: _data(c)}),
        ("poll", 6), ("seek", 0, 40), ("poll", 500),
        ("fetch", {0: _data(c), 1: _data(c)}),
        ("poll", 500), ("poll", 500),
    ],
    "pause and resume": lambda c: [
        ("assign", [0, 1, 2], {0: 0, 1: 0, 2: 0}),
        ("fetch", {0: _data(c), 1: _data(c), 2: _data(c)}),
        ("poll", 5), ("pause", 0), ("pause", 1), ("poll", 9), ("resume", 0), ("poll", 9), ("resume", 1),
        ("poll", 9), ("poll", 500), ("poll", 500),
    ],
    "assignment change": lambda c: [
        ("assign", [0, 1, 2], {0: 0, 1: 0, 2: 0}),
        ("fetch", {0: _data(c), 1: _data(c), 2: _data(c)}),
        ("poll", 5), ("assign", [1], {}), ("poll", 11), ("assign", [0, 1, 2], {0: 3, 2: 8}),
        ("fetch", {0: _data(c), 1: _data(c), 2: _data(c)}),
        ("poll", 500), ("poll", 500), ("poll", 500),
    ],
    "update_offsets=False": lambda c: [
        ("assign", [0, 1], {0: 0, 1: 0}),
        ("fetch", {0: _data(c), 1: _data(c)}),
        ("poll", 5), ("poll", 8, False), ("poll", 8),
        ("fetch", {0: _data(c), 1: _data(c)}),
        ("poll", 500, False), ("poll", 500),
    ],
}

CODECS = {"none": bg.NONE, "lz4": bg.LZ4, "zstd": bg.ZSTD, "gzip": bg.GZIP}


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_decode_worker_changes_nothing_the_application_sees(name, codec):
    script = SCRIPTS[name](CODECS[codec])
    expected, plain = run_script(script, 0, wait=False)
    assert not plain.decode_ahead and not isinstance(plain.decode_executor, ThreadDecodeExecutor)
    assert any(entry[0] == "records" and entry[1] for entry in expected)
    for wait in (True, False):
        got, threaded = run_script(script, 1, wait=wait)
        assert got == expected, (name, codec, wait)
    if name == "plain polls of every size":
        # and the worker did the work: most steps were prepared ahead
        _, threaded = run_script(script, 1, wait=True)
        assert threaded.decode_steps["prepared"] > threaded.decode_steps["inline"]


def test_the_twin_backend_has_no_worker(twin_backend):
    from tests.support import using_backend

    with using_backend(twin_backend):
        client, fetcher = _fetcher(decode_threads=1)
    assert not fetcher.decode_ahead and not isinstance(fetcher.decode_executor, ThreadDecodeExecutor)


@pytest.mark.parametrize("value", [2, -1, "1", None, 1.0])
def test_decode_threads_is_0_or_1(value):
    from fastkc.config import consumer_config

    with pytest.raises(errors.KafkaConfigurationError, match="decode_threads"):
        consumer_config({"decode_threads": value})


# --- the consumer on the fake broker -------------------------------------------------------


def _read_all(consumer, tps, total, timeout=20):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < total and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=200, max_records=3).items():
            got.extend((tp.partition, r.offset, r.value) for r in recs)
    return got


def test_consumer_reads_the_same_with_and_without_the_worker():
    with FakeBroker(topics={"t": 3}, records=40) as broker:
        seen = {}
        for dt in (0, 1):
            consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, decode_threads=dt,
                                     auto_offset_reset="earliest", enable_auto_commit=False)
            try:
                tps = [TopicPartition("t", p) for p in range(3)]
                consumer.assign(tps)
                records = _read_all(consumer, tps, 120)
                seen[dt] = (sorted(records), {tp.partition: consumer.position(tp) for tp in tps})
                assert isinstance(consumer._fetcher.decode_executor, ThreadDecodeExecutor) == (dt == 1)
            finally:
                consumer.close()
        assert seen[0] == seen[1] and len(seen[0][0]) == 120
        assert not broker.errors


def test_close_while_the_worker_is_busy_returns_within_its_bound(monkeypatch):
    # A codec call that takes 1 s stands for a worker deep in a big step:
    # close() waits for it (bounded) and joins the thread; nothing hangs.
    from fastkc._core import _records

    real = _records._gzip_decompress
    started = threading.Event()

    def slow(src, cap):
        if threading.current_thread().name == "fastkc-decode":
            started.set()
            time.sleep(1.0)
        return real(src, cap)

    monkeypatch.setattr(_records, "_gzip_decompress", slow)
    blob = _batches(0, 3, 5, bg.GZIP)
    run = Run(1, wait=False)
    run.do("assign", [0, 1], {0: 0, 1: 0})
    run.do("fetch", {0: lambda start: blob, 1: lambda start: blob})
    worker = run.fetcher.decode_executor
    assert started.wait(10), "the worker never started a step"
    thread = worker.thread
    t0 = time.monotonic()
    assert run.fetcher.close_worker(10)
    assert time.monotonic() - t0 < 5
    assert not thread.is_alive()
    # a stopped worker takes no jobs; the fetcher goes on decoding itself
    out = run.fetcher.fetched_records(500)
    assert sorted(tp.partition for tp in out) == [0, 1] and all(len(v) == 15 for v in out.values())


def test_wakeup_interrupts_a_poll_with_the_worker():
    with FakeBroker(topics={"t": 1}, records=5) as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, decode_threads=1, auto_offset_reset="earliest")
        try:
            tp = TopicPartition("t", 0)
            consumer.assign([tp])
            assert _read_all(consumer, [tp], 5)
            timer = threading.Timer(0.3, consumer.wakeup)
            timer.start()
            t0 = time.monotonic()
            with pytest.raises(errors.WakeupException):
                consumer.poll(timeout_ms=10000)
            assert time.monotonic() - t0 < 5
            timer.join()
        finally:
            consumer.close()
        worker = consumer._fetcher.decode_executor
        assert worker.started and not worker.thread.is_alive()  # close() stopped and joined it


def test_a_forgotten_consumer_does_not_block_exit():
    # the worker thread is a daemon: a consumer never closed cannot keep the
    # interpreter alive (run in a child process that exits right after a poll)
    import subprocess
    import sys
    import textwrap

    with FakeBroker(topics={"t": 1}, records=5) as broker:
        code = textwrap.dedent("""
            from fastkc import KafkaConsumer
            from fastkc.structs import TopicPartition
            c = KafkaConsumer(bootstrap_servers=%r, decode_threads=1, auto_offset_reset="earliest")
            c.assign([TopicPartition("t", 0)])
            n = 0
            for _ in range(50):
                n += sum(len(v) for v in c.poll(timeout_ms=200).values())
                if n >= 5:
                    break
            assert c._fetcher.decode_executor.started
            print("read", n)
        """ % broker.bootstrap)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             cwd=__import__("os").path.dirname(__import__("os").path.dirname(
                                 __import__("os").path.dirname(__import__("os").path.abspath(__file__)))))
        assert out.returncode == 0, out.stderr
        assert "read 5" in out.stdout
