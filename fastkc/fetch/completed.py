"""One partition's data from one Fetch response (`CompletedFetch`, Java's
CompletedFetch), and the decode-ahead jobs over it.

A decode-ahead job is "prepare this step": phase 1 of the fetch's next decode
step (CRC checks, decompression, parsing into descriptors; C with the GIL
released) run off the caller's thread, so that the hand-out on the caller's
thread mostly builds objects. The record buffer (buffer.py) makes the jobs;
a driver runs them through its `fastkc.decode_executor.DecodeExecutor` (the
machine owns no thread). A job touches only its fetch's stream (which has its
own lock) and the fetch's `nothing_to_prepare` / `arrow_ready`, never the
machine's state: a fetch dropped meanwhile (seek, pause, unassign) gets a
step nobody reads, freed with it.
"""
from typing import TYPE_CHECKING, Any

from fastkc import _backend
from fastkc import records as fastkc_records
from fastkc.errors import CorruptRecordError
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc._backend import RecordStream
    from fastkc.metrics import ResponseTally

# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any
#: a records blob: a slice of the Fetch response (memoryview) or bytes
_Buffer = bytes | bytearray | memoryview

ARROW_STEP_MAX = 1 << 62  # an Arrow step without max_records: no count limit


class CompletedFetch:
    """One partition's data from one Fetch response, parsed; decoded lazily
    through a decoder stream (buffer.py)."""

    __slots__ = ("tp", "fetch_offset", "data", "aborted", "next_offset", "leader_epoch", "nbytes", "stream",
                 "form", "tally", "records_out", "nothing_to_prepare", "slow_codec_bytes", "arrow_ready",
                 "decompressed_charged")

    def __init__(self, tp: TopicPartition, fetch_offset: int, data: _Buffer, aborted: list[tuple[int, int]] | None,
                 next_offset: int, leader_epoch: int, nbytes: int) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset  # where the stream starts / has got to
        self.data = data
        self.aborted = aborted
        self.next_offset = next_offset  # from the scan: one past the complete entries
        self.leader_epoch = leader_epoch
        self.nbytes = nbytes
        # The decoder over `data`, for poll() ("records") or poll_arrow()
        # ("arrow"); a call asking for the other form starts a new stream
        # from the position (the decoder skips what is below it).
        self.stream: RecordStream | None = None
        self.form: str | None = None
        # the stream's decompressed_bytes already charged to a take's budget
        # (TakeBudget): 0 whenever a new stream starts
        self.decompressed_charged = 0
        # metrics: the response's ResponseTally (None when metrics are off)
        # and the records handed out from this fetch, added per step
        self.tally: ResponseTally | None = None
        self.records_out = 0
        # set by an off-thread prepare() of the records stream that found
        # nothing to do with no step kept: the stream is used up or failed,
        # so what is left of it (the end, or its sticky error) is cheap to
        # take on the caller's thread (fetched_records(prepared_only=True))
        self.nothing_to_prepare = False
        # bytes of its entries compressed with gzip, snappy or zstd (the
        # scan's count): what makes its steps heavy (worth_preparing)
        self.slow_codec_bytes = 0
        # an Arrow step of its stream decoded off the caller's thread
        # (PrepareArrowStep), waiting to be handed out by fetched_arrow
        self.arrow_ready: PreparedArrowStep | None = None


class TakeBudget:
    """The decompressed bytes one take (a poll, a getmany, a poll_arrow) may
    decode (fastkc/config.py, the decoding budget): each fetch's steps are
    charged what its stream decompressed since the last charge (a step
    prepared off the caller's thread is charged by the take that hands it
    out), and a take that has handed out records starts no further step
    once the charges reach `limit`."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def charge(self, completed: CompletedFetch, stream: "RecordStream") -> None:
        """Charge what `completed`'s stream decompressed since its last charge."""
        total = stream.decompressed_bytes
        self.spent += total - completed.decompressed_charged
        completed.decompressed_charged = total

    def used_up(self) -> bool:
        return self.spent >= self.limit


class PreparedArrowStep:
    """One Arrow step decoded off the caller's thread into a builder of its
    own: the rows (None when it appended none), the stream it advanced (it
    is handed out only while that stream is still the fetch's), how many
    rows were handed out so far, and the CorruptRecordError that ended it
    after those rows (reported once every row before it is out)."""

    __slots__ = ("batch", "stream", "error", "taken")

    def __init__(self, batch: _RecordBatch | None, stream: "RecordStream", error: CorruptRecordError | None) -> None:
        self.batch = batch
        self.stream = stream
        self.error = error
        self.taken = 0


# Which fetches have their steps prepared off the caller's thread
# (prepared_only): any holding gzip-, snappy- or zstd-compressed entries --
# inflating costs milliseconds per MiB of output, and a few KiB of
# compressible data can inflate to MiBs, so their compressed size says
# little -- and any larger than BYTES_WORTH_PREPARING. Uncompressed and lz4
# data (liblz4 in C, ~4 GB/s) cost ~20-50 ns a record in phase 1, less than
# the thread hand-off (~50-100 us) for a take of a few thousand records, and
# about what building those records costs on the loop anyway. Measured on
# the e2e bench (2 M x 100 B, lz4, 1 MiB fetches per partition): preparing
# every step off the loop cost fastkc.aio 5-30 % of its rate.
BYTES_WORTH_PREPARING = 4 * 1024 * 1024


def worth_preparing(completed: CompletedFetch) -> bool:
    """Whether a fetch's decode steps are heavy enough to prepare off the
    caller's thread (see BYTES_WORTH_PREPARING)."""
    return completed.slow_codec_bytes > 0 or completed.nbytes >= BYTES_WORTH_PREPARING


def streams_prepare_off_thread() -> bool:
    """Whether the backend's decoder streams can prepare a step on another
    thread (the compiled core's can; the twin's decode inline)."""
    return hasattr(getattr(_backend.impl, "RecordStream", None), "prepare")


class PrepareRecordsStep:
    """The job "prepare the next step (at most max_records) of this fetch's
    records stream" (`fastkc.decode_executor.DecodeJob`). The stream is the
    fetch's when the job runs: a fetch whose stream went (pause) or is an
    Arrow one gets nothing."""

    __slots__ = ("completed", "max_records", "max_held")

    def __init__(self, completed: CompletedFetch, max_records: int, max_held: int) -> None:
        self.completed = completed
        self.max_records = max_records
        self.max_held = max_held

    @property
    def key(self) -> object:
        """Jobs for the same fetch are one job while queued."""
        return self.completed

    def run(self) -> bool:
        """True when a step was prepared; marks a fetch whose stream has
        nothing left to prepare (used up or failed) `nothing_to_prepare`."""
        completed = self.completed
        stream = completed.stream
        if stream is None or completed.form != "records":
            return False
        if stream.prepare(self.max_records, self.max_held):
            return True
        if not stream.prepared:
            completed.nothing_to_prepare = True
        return False


class PrepareArrowStep:
    """The job "decode the next Arrow step (at most max_records rows) of this
    fetch's stream into a builder of its own" (`DecodeJob`), kept in
    `completed.arrow_ready` for fetched_arrow(prepared_only=True). A stream
    replaced meanwhile keeps a step nobody reads."""

    __slots__ = ("completed", "max_records", "max_held", "zero_copy")

    def __init__(self, completed: CompletedFetch, max_records: int, max_held: int, zero_copy: bool) -> None:
        self.completed = completed
        self.max_records = max_records
        self.max_held = max_held
        self.zero_copy = zero_copy

    @property
    def key(self) -> object:
        return self.completed

    def run(self) -> bool:
        completed = self.completed
        stream = completed.stream
        if stream is None or completed.form != "arrow" or completed.arrow_ready is not None:
            return False
        builder = fastkc_records.arrow_builder(zero_copy=self.zero_copy)
        error = None
        try:
            stream.arrow(int(min(self.max_records, ARROW_STEP_MAX)), self.max_held, None, builder)
        except CorruptRecordError as exc:
            error = exc  # the rows before the bad batch stay in the builder
        if completed.stream is not stream:
            return False
        completed.arrow_ready = PreparedArrowStep(builder.finish() if builder.num_rows else None, stream, error)
        return True
