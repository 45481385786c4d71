"""The decode worker (`decode_threads=1`): one background thread per consumer
that runs the next decode step's phase 1 -- CRC checks, decompression,
record parsing into descriptors (`RecordStream.prepare`, C with the GIL
released except inside the codec calls) -- while the application handles the
records poll() returned, so that the next poll() mostly builds objects.

Threads and what they touch:
- The worker touches nothing but the RecordStream objects handed to it, each
  guarded by its own lock (prepare() and the hand-outs exclude each other;
  next_offset/done are snapshots taken under that lock). The fetcher's state
  (partitions, buffered fetches, positions) belongs to the application's
  thread alone.
- A job is a hint, not a promise: the fetcher may drop the stream meanwhile
  (seek, pause, reset, unassign, update_offsets=False). The worker then
  prepares a step into an object nobody reads any more, which is freed when
  the worker lets go of it: such a step is never delivered, because the
  fetcher only reads streams it still buffers.
- When poll() reaches a stream the worker is preparing it waits on the
  stream's lock (GIL released) and then hands the prepared step out, so
  there is never a second decode of the same data.
- Started lazily by the first job, daemon (a consumer never closed cannot
  block interpreter exit), stopped and joined by close() within a bound: a
  step is at most one fetch of one partition, decoded in milliseconds.
"""
import collections
import logging
import threading
from typing import Protocol

log = logging.getLogger(__name__)


class PreparableStream(Protocol):
    """What the worker needs of a job's stream (the backends' RecordStream)."""

    def prepare(self, max_records: int, max_held_bytes: int | None) -> bool:
        """Decode the next step ahead; False when there was nothing to do."""
        ...


_Job = tuple[PreparableStream, int, int | None]


class DecodeWorker:
    def __init__(self, name: str = "fastkc-decode") -> None:
        self._name = name
        self._jobs: collections.deque[_Job] = collections.deque()
        self._queued: set[int] = set()  # id() of the streams in _jobs: a stream is queued once
        self._cond = threading.Condition(threading.Lock())
        self._stopping = False
        self._running = False  # a job is being prepared
        self._thread: threading.Thread | None = None
        # counters (tests and metrics): steps prepared, and jobs that found nothing to do
        self.prepared_steps = 0
        self.idle_jobs = 0

    @property
    def started(self) -> bool:
        return self._thread is not None

    def queued(self, stream: PreparableStream) -> bool:
        return id(stream) in self._queued

    def submit(self, stream: PreparableStream, max_records: int, max_held_bytes: int | None) -> None:
        """Ask for stream.prepare(max_records, max_held_bytes) on the worker."""
        with self._cond:
            if self._stopping or id(stream) in self._queued:
                return
            self._jobs.append((stream, max_records, max_held_bytes))
            self._queued.add(id(stream))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()  # the worker, not only a wait_idle() caller

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                stream, max_records, max_held = self._jobs.popleft()
                # the stream object stays referenced until prepare() returns,
                # so its id cannot be reused by another stream meanwhile
                self._queued.discard(id(stream))
                self._running = True
            try:
                if stream.prepare(max_records, max_held):
                    self.prepared_steps += 1
                else:
                    self.idle_jobs += 1
            except Exception:  # a decode error is kept in the step; anything else is a bug to see
                log.exception("fastkc decode worker: prepare failed")
            del stream
            with self._cond:
                self._running = False
                self._cond.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no job is queued or running (tests). True when idle."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._running, timeout)

    def stop(self, timeout: float = 5.0) -> bool:
        """Drop the queued jobs, let the step in progress finish and join the
        thread within `timeout` s. True when the thread is gone."""
        with self._cond:
            self._stopping = True
            self._jobs.clear()
            self._queued.clear()
            self._cond.notify_all()
        thread = self._thread
        if thread is None:
            return True
        if thread is not threading.current_thread():
            thread.join(timeout)
        alive = thread.is_alive()
        if alive:
            log.warning("fastkc decode worker still busy after %.1f s; left running (daemon)", timeout)
        return not alive
