"""What every end-to-end runner shares: its command line, the clock, the
count check, peak RSS and the one JSON line it hands back to the driver.

A runner is a separate process (`python -m fastkc_tools.bench.run_<client>`), so
one client's heap, threads and garbage-collector state cannot slow down the
next one. It reads the whole topic from the beginning to the end offsets the
driver measured, then prints exactly one JSON object as its last stdout line:

    {"client": ..., "records": N, "seconds": S, "steady_seconds": T,
     "steady_records": M, "time_to_first_record_seconds": F,
     "peak_rss_bytes": B, ...}

Three figures come from one clock (`Clock`):
- steady state, the headline: from the first record delivered to the last.
  The records of the first delivery arrived at that clock's zero, so they are
  not counted: rate = (records - records_in_first_delivery) /
  (t_last_record - t_first_record). A client that starts fetching at
  assign() (librdkafka's background thread) and one that starts at the first
  poll() are measured alike, neither gets a head start.
- time to first record: first poll -> first record, its own column (it is
  where the start-up difference shows).
- first poll -> last record ("seconds"), the figure earlier tables showed.
Connection set-up, metadata and group joins before the first poll are
outside every window, for every client alike.
A runner whose count differs from the topic's exits non-zero: a fast wrong
answer is not a result.

Equal work (the one place that says how each client's touch is the same):
inside the timed window every runner touches the key and the value of every
record it is handed by adding their lengths (a null key or value adds 0), and
reports the sum as "touched_bytes"; finish() fails the run unless that sum is
the produced key + value bytes (`--expected-bytes`, which the driver computes
from the dataset it wrote), so the work is verified, not assumed.
- record objects (fastkc, kafka-python, aiokafka, fastkc.aio): `touch_records`
  reads `record.key` and `record.value` of each record and takes `len()`;
- confluent-kafka: the same through its API, `message.key()` and
  `message.value()` (run_confluent.py, run_share_confluent.py);
- Arrow batches (poll_arrow): the key and value columns hold every record's
  bytes back to back, and a record's length is the difference of two
  neighbouring entries of the column's offsets buffer; the sum over all
  records is therefore last offset − first offset, read from the offsets
  buffer (`touch_arrow`): the columnar form of the same sum;
- Java (java/SteadyStateConsumer.java): `record.key().length` and
  `record.value().length`, as ConsumerPerformance itself does (run_java.py
  checks its `data.consumed.in.MB`, which counts the same bytes).
The ceiling row decodes no record, so it has nothing to touch (it is a bound,
not a client). Bookkeeping that is not the application's work on the record
(confluent-kafka's per-message error check, a share runner's ledger of
offsets) runs inside `Clock.untimed()`, whose time is taken out of every
figure, for every client alike; acknowledgements are the client's own work
and stay inside the window for all (implicit ones inside poll(), fastkc's
acknowledge_batch after it).
"""
import argparse
import asyncio
import contextlib
import json
import resource
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol


class CountMismatch(SystemExit):
    """The runner read a different number of records than the topic holds."""


class TouchMismatch(SystemExit):
    """The key + value bytes a runner touched differ from the bytes produced."""


class _KeyValue(Protocol):
    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...


def touch_records(records: Iterable[_KeyValue]) -> int:
    """The key + value bytes of `records` (objects with .key and .value), each read once."""
    touched = 0
    for record in records:
        key = record.key
        value = record.value
        if key is not None:
            touched += len(key)
        if value is not None:
            touched += len(value)
    return touched


def touch_polled(polled: Mapping[Any, Sequence[_KeyValue]]) -> tuple[int, int]:
    """(records, key + value bytes) of one poll's {partition: [record]} (kafka-python's,
    aiokafka's and fastkc's poll() / getmany() shape), every record touched."""
    records = touched = 0
    for batch in polled.values():
        records += len(batch)
        touched += touch_records(batch)
    return records, touched


def touch_messages(messages: Iterable[Any]) -> int:
    """The key + value bytes of confluent-kafka Messages (its key() and value() methods)."""
    touched = 0
    for message in messages:
        key = message.key()
        value = message.value()
        if key is not None:
            touched += len(key)
        if value is not None:
            touched += len(value)
    return touched


def touch_arrow(batch: Any) -> int:
    """The key + value bytes of an Arrow RecordBatch, from the key and value
    columns' offsets buffers (binary: int32 offsets; large_binary: int64), or
    for binary_view columns (zero_copy) from each row's 16-byte view, whose
    first int32 is the value's length."""
    touched = 0
    for name in ("key", "value"):
        column = batch.column(name)
        kind = str(column.type)
        if len(column) == 0:
            continue
        if kind == "binary_view":
            lengths = memoryview(column.buffers()[1]).cast("i")  # 4 int32 per view, the length first
            touched += sum(lengths[4 * column.offset:4 * (column.offset + len(column)):4])
            continue
        if kind == "binary":
            offsets = memoryview(column.buffers()[1]).cast("i")
        elif kind == "large_binary":
            offsets = memoryview(column.buffers()[1]).cast("q")
        else:
            raise SystemExit("touch_arrow: column {0} is {1}, not binary".format(name, kind))
        touched += offsets[column.offset + len(column)] - offsets[column.offset]
    return touched


# The settings every kafka-python-style client runs with (kafka-python,
# aiokafka, fastkc): no group, from the start, CRCs checked, uncommitted reads —
# the same work for each; fetch sizes stay at each client's (shared) defaults.
KAFKA_PYTHON_STYLE_CONFIG = dict(
    group_id=None,
    enable_auto_commit=False,
    auto_offset_reset="earliest",
    check_crcs=True,
    isolation_level="read_uncommitted",
)


def runner_mode(args: argparse.Namespace, modes: Sequence[str], client: str) -> str:
    """The --mode asked for (the first of `modes` when none); exits on one the runner does not have."""
    mode: str = args.mode or modes[0]
    if mode not in modes:
        raise SystemExit("unknown {0} mode {1!r} ({2})".format(client, mode, ", ".join(modes)))
    return mode


def require_compiled_core() -> None:
    """Exit unless fastkc runs on its compiled core: benchmarking the
    pure-Python twin by accident would be a silent slowdown."""
    import fastkc

    if fastkc.backend != "c":
        raise SystemExit("fastkc backend is {0!r}, not the compiled core: build it first "
                         "(python setup.py build_ext --inplace)".format(fastkc.backend))


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--expected", type=int, required=True,
                        help="records in the topic (sum of end offsets of a topic written once)")
    parser.add_argument("--expected-bytes", type=int, required=True,
                        help="key + value bytes produced into the topic: what the runner must touch")
    parser.add_argument("--ends", required=True, type=_parse_ends,
                        help="end offset per partition, as the driver measured it: 0=250000,1=250000,...")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="give up (and fail) after this many seconds without finishing")
    parser.add_argument("--mode", default=None, help="runner-specific variant (fastkc: records or arrow)")
    args = parser.parse_args(argv)
    if sorted(args.ends) != list(range(args.partitions)):
        parser.error("--ends must name partitions 0..{0}".format(args.partitions - 1))
    return args


def _parse_ends(text: str) -> dict[int, int]:
    ends: dict[int, int] = {}
    for item in text.split(","):
        partition, _, offset = item.partition("=")
        ends[int(partition)] = int(offset)
    return ends


class Tally:
    """Records and bytes touched so far, entered into the clock as they come."""

    def __init__(self, clock: "Clock") -> None:
        self.clock = clock
        self.records = 0
        self.touched = 0

    def saw(self, records: int, touched: int) -> None:
        """One delivery of `records` (> 0) records, `touched` bytes touched."""
        self.records += records
        self.touched += touched
        self.clock.saw_records(records)


def drain(poll_count: Callable[[], tuple[int, int]], positions: Callable[[], Mapping[int, int]],
          args: argparse.Namespace, clock: "Clock") -> tuple[int, int]:
    """Poll until the topic is read; returns (records, key + value bytes touched).

    poll_count() polls once, touches what it delivered and returns (records,
    bytes touched); positions() returns {partition: next offset to read}. The
    loop stops when the count reaches the topic's, or when a poll comes back
    empty with every position at its end offset (so a client that loses
    records stops instead of waiting for the deadline). Afterwards the
    positions must be at the end: a count that reached the total early means
    records were delivered twice.
    """
    expected: int = args.expected
    tally = Tally(clock)
    clock.start()
    while True:
        n, touched = poll_count()
        if n:
            tally.saw(n, touched)
            if tally.records >= expected:
                break
        elif _at_end(positions(), args.ends):
            break
        clock.check_deadline(tally.records, expected)
    where = positions()
    if not _at_end(where, args.ends):
        raise CountMismatch("stopped at positions {0}, the end offsets are {1}".format(where, args.ends))
    return tally.records, tally.touched


async def drain_async(poll_count: Callable[[], Awaitable[tuple[int, int]]],
                      positions: Callable[[], Awaitable[Mapping[int, int]]],
                      args: argparse.Namespace, clock: "Clock") -> tuple[int, int]:
    """drain() for the asyncio runners: getmany and position are coroutines."""
    expected: int = args.expected
    tally = Tally(clock)
    clock.start()
    while True:
        n, touched = await poll_count()
        if n:
            tally.saw(n, touched)
            if tally.records >= expected:
                break
        elif _at_end(await positions(), args.ends):
            break
        clock.check_deadline(tally.records, expected)
    where = await positions()
    if not _at_end(where, args.ends):
        raise CountMismatch("stopped at positions {0}, the end offsets are {1}".format(where, args.ends))
    return tally.records, tally.touched


async def drain_aiokafka_api(consumer_class: Callable[..., Any], topic_partition: Callable[[str, int], Any],
                             args: argparse.Namespace) -> tuple[int, int, "Clock", "LoopStallMeter"]:
    """The asyncio runners' whole run, for any consumer with aiokafka's API
    (aiokafka's own and fastkc.aio's: the class and its TopicPartition are
    the arguments, so both do the same work): assign every partition, seek
    to the beginning, getmany() until the end offsets, touching every
    record, while a ticker task on the same loop measures how long the loop
    was held. Returns (records, bytes touched, clock, meter)."""
    tps = [topic_partition(args.topic, p) for p in range(args.partitions)]
    consumer = consumer_class(bootstrap_servers=args.bootstrap, **KAFKA_PYTHON_STYLE_CONFIG)
    await consumer.start()
    meter = LoopStallMeter()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        clock = Clock(args.timeout)

        async def positions() -> dict[int, int]:
            return {tp.partition: await consumer.position(tp) for tp in tps}

        async def poll_count() -> tuple[int, int]:
            return touch_polled(await consumer.getmany(timeout_ms=1000))

        meter.start()
        records, touched = await drain_async(poll_count, positions, args, clock)
        await meter.stop()
        return records, touched, clock, meter
    finally:
        await meter.stop()
        await consumer.stop()


def _at_end(positions: Mapping[int, int], ends: Mapping[int, int]) -> bool:
    return all(positions.get(p, -1) >= end for p, end in ends.items())


class SteadyFigures(Protocol):
    """What finish() reads of a clock (Clock, or a tool's own figures)."""

    @property
    def first_delivery_records(self) -> int: ...

    @property
    def steady_seconds(self) -> float: ...

    @property
    def time_to_first_record(self) -> float | None: ...


class Clock:
    """first poll, first record, last record; and a deadline so a stuck client
    fails instead of hanging."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.started = 0.0  # set by start()
        self.first_record: float | None = None
        self.first_delivery_records = 0  # delivered at the steady clock's zero: not in its rate
        self.last_record: float | None = None
        # CPU time of the whole process (every thread, so librdkafka's and the
        # asyncio loop's work counts too): on a shared machine, CPU seconds per
        # record vary less with the neighbours' load than wall time does.
        self.cpu_started = 0.0
        self.cpu_last_record: float | None = None
        # time spent in untimed() so far (wall, CPU), and at the first and
        # last record: taken out of every window those records bound
        self.untimed_wall = 0.0
        self.untimed_cpu = 0.0
        self._untimed_at_first = 0.0
        self._untimed_at_last = 0.0
        self._untimed_cpu_at_last = 0.0

    def start(self) -> None:
        self.cpu_started = time.process_time()
        self.started = time.perf_counter()

    def saw_records(self, n: int) -> None:
        """`n` (> 0) records were just handed to the application."""
        now = time.perf_counter()
        if self.first_record is None:
            self.first_record = now
            self.first_delivery_records = n
            self._untimed_at_first = self.untimed_wall
        self.last_record = now
        self.cpu_last_record = time.process_time()
        self._untimed_at_last = self.untimed_wall
        self._untimed_cpu_at_last = self.untimed_cpu

    @contextlib.contextmanager
    def untimed(self) -> Iterator[None]:
        """Bookkeeping outside every figure (module docstring, "Equal work")."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.untimed_wall += time.perf_counter() - wall
            self.untimed_cpu += time.process_time() - cpu

    def check_deadline(self, records_so_far: int, expected: int) -> None:
        if time.perf_counter() - self.started > self.timeout:
            raise SystemExit("timed out after {0:.0f}s with {1:,} of {2:,} records".format(
                self.timeout, records_so_far, expected))

    @property
    def seconds(self) -> float:
        if self.last_record is None:
            return 0.0
        return self.last_record - self.started - self._untimed_at_last

    @property
    def steady_seconds(self) -> float:
        """first record -> last record; 0.0 when every record came in one delivery."""
        if self.last_record is None or self.first_record is None:
            return 0.0
        return self.last_record - self.first_record - (self._untimed_at_last - self._untimed_at_first)

    @property
    def time_to_first_record(self) -> float | None:
        if self.first_record is None:
            return None
        return self.first_record - self.started - self._untimed_at_first

    @property
    def cpu_seconds(self) -> float:
        if self.cpu_last_record is None:
            return 0.0
        return self.cpu_last_record - self.cpu_started - self._untimed_cpu_at_last


def peak_rss_bytes(children: bool = False) -> int:
    """Peak resident set size; Linux reports ru_maxrss in KiB."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss * 1024


def finish(client: str, args: argparse.Namespace, records: int, seconds: float, *,
           touched_bytes: int | None, touched_tolerance: int = 0,
           clock: SteadyFigures | None = None,
           peak_rss: int | None = None, cpu_seconds: float | None = None, **extra: Any) -> dict[str, Any]:
    """Check the count and the touched bytes, then print the result line.
    Never returns normally on a mismatch.

    touched_bytes: the key + value bytes the runner touched in its window
    (None only for the ceiling, which decodes nothing); touched_tolerance: how
    far a tool that reports them rounded (ConsumerPerformance's MB) may be off.
    With `clock` (a Clock that saw every delivery) the steady-state figures go
    in too; without one (a tool with its own clock) they are None."""
    if records != args.expected:
        raise CountMismatch("{0}: read {1:,} records, the topic holds {2:,}".format(
            client, records, args.expected))
    if touched_bytes is not None and abs(touched_bytes - args.expected_bytes) > touched_tolerance:
        raise TouchMismatch("{0}: touched {1:,} key + value bytes, {2:,} were produced".format(
            client, touched_bytes, args.expected_bytes))
    if seconds <= 0:
        raise SystemExit("{0}: no time measured for {1:,} records".format(client, records))
    result: dict[str, Any] = {
        "client": client,
        "records": records,
        "seconds": seconds,
        "peak_rss_bytes": peak_rss if peak_rss is not None else peak_rss_bytes(),
        "cpu_seconds": cpu_seconds,  # None when the runner cannot measure the timed window alone
        "steady_seconds": None,
        "steady_records": None,
        "first_delivery_records": None,
        "time_to_first_record_seconds": None,
        "python": sys.version.split()[0],
        "touched_bytes": touched_bytes,
        "touched_tolerance": touched_tolerance,
    }
    if clock is not None:
        steady = records - clock.first_delivery_records
        result.update({
            # None when one delivery held everything: no interval to divide by.
            "steady_seconds": clock.steady_seconds if steady > 0 and clock.steady_seconds > 0 else None,
            "steady_records": steady if steady > 0 and clock.steady_seconds > 0 else None,
            "first_delivery_records": clock.first_delivery_records,
            "time_to_first_record_seconds": clock.time_to_first_record,
        })
    result.update(extra)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return result


# --- asyncio runners: how long the event loop was held ---------------------------------------
_TICK_S = 0.001


class LoopStallMeter:
    """A task that sleeps _TICK_S at a time: the longest gap between two of
    its wake-ups beyond the sleep itself is the longest the loop was held.

    That wall-clock gap also counts the time the OS ran other processes,
    which on a loaded machine is most of it; `longest_cpu` is the loop
    thread's own CPU time (time.thread_time) in its busiest gap: what the
    code on the loop held it for, whatever the machine's load."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_cpu = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        last = time.perf_counter()
        last_cpu = time.thread_time()
        while True:
            await asyncio.sleep(_TICK_S)
            now, cpu = time.perf_counter(), time.thread_time()
            self.longest = max(self.longest, now - last - _TICK_S)
            self.longest_cpu = max(self.longest_cpu, cpu - last_cpu)
            last, last_cpu = now, cpu

    async def stop(self) -> float:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        return self.longest
