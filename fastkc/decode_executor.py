"""Where decode-ahead jobs run: one small interface, `DecodeExecutor`, owned
by the drivers (the fetch machine owns no thread; it hands out jobs, see
fastkc/fetch/completed.py).

- `InlineDecodeExecutor`: runs a job at once on the caller's thread (no
  thread at all; the sync driver's executor with decode_threads=0, when the
  machine makes no jobs, and the parts' tests).
- `ThreadDecodeExecutor`: one daemon thread ("fastkc-decode"), the sync
  consumer's with decode_threads=1: a queue of jobs, a fetch queued once,
  fire and forget (the stream's lock orders the step with the hand-out).
- The asyncio consumer's, `fastkc.aio.fetch_driver.LoopDecodeExecutor`:
  the loop's `run_in_executor` over one thread, a future per job.

The thread executor's duties (what the decode worker always did):
- It touches nothing but the jobs handed to it; each job touches only its
  fetch's stream, guarded by the stream's own lock (prepare() and the
  hand-outs exclude each other; next_offset/done are snapshots taken under
  that lock). The fetch machine's state belongs to the application's thread.
- A job is a hint, not a promise: the machine may drop the fetch meanwhile
  (seek, pause, reset, unassign, update_offsets=False). The step is then
  prepared into an object nobody reads any more, freed when the job is let
  go: it is never delivered, because the machine only reads fetches it
  still buffers.
- When poll() reaches a stream being prepared it waits on the stream's lock
  (GIL released) and then hands the prepared step out: never a second
  decode of the same data.
- Started lazily by the first job, daemon (a consumer never closed cannot
  block interpreter exit), stopped and joined by close() within a bound: a
  step is at most one fetch of one partition, decoded in milliseconds.
"""
import collections
import logging
import threading
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)


class DecodeJob(Protocol):
    """One "prepare this step" job (fastkc.fetch.completed's PrepareRecordsStep
    and PrepareArrowStep)."""

    @property
    def key(self) -> object:
        """Jobs with the same key are one job while queued (the fetch)."""
        ...

    def run(self) -> bool:
        """Prepare the step, on any thread; True when one was prepared."""
        ...


Handle = TypeVar("Handle", covariant=True)


class DecodeExecutor(Protocol[Handle]):
    """Runs decode-ahead jobs somewhere: submit() returns the executor's
    handle on the job (None for fire and forget, a future to await)."""

    def submit(self, job: DecodeJob) -> Handle: ...

    def close(self, timeout: float = 5.0) -> bool:
        """Take no more jobs, drop the queued ones; True when no thread of
        the executor is left running within `timeout` s."""
        ...


class InlineDecodeExecutor:
    """Runs each job at once, on the caller's thread."""

    def submit(self, job: DecodeJob) -> None:
        job.run()

    def close(self, timeout: float = 5.0) -> bool:
        return True


class ThreadDecodeExecutor:
    """One background thread running the jobs in order (module docstring)."""

    def __init__(self, name: str = "fastkc-decode") -> None:
        self._name = name
        self._jobs: collections.deque[DecodeJob] = collections.deque()
        self._queued: set[int] = set()  # id() of the queued jobs' keys: a fetch is queued once
        self._cond = threading.Condition(threading.Lock())
        self._stopping = False
        self._running = False  # a job is being run
        self._thread: threading.Thread | None = None
        # counters (tests and metrics): steps prepared, and jobs that found nothing to do
        self.prepared_steps = 0
        self.idle_jobs = 0

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def thread(self) -> threading.Thread | None:
        """The thread, once the first job started it."""
        return self._thread

    def queued(self, key: object) -> bool:
        return id(key) in self._queued

    def submit(self, job: DecodeJob) -> None:
        """Run job.run() on the thread, after the jobs queued before it."""
        with self._cond:
            key = id(job.key)
            if self._stopping or key in self._queued:
                return
            self._jobs.append(job)
            self._queued.add(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()  # the thread, not only a wait_idle() caller

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                job = self._jobs.popleft()
                # the job (and its key) stays referenced until run() returns,
                # so the key's id cannot be reused by another fetch meanwhile
                self._queued.discard(id(job.key))
                self._running = True
            try:
                if job.run():
                    self.prepared_steps += 1
                else:
                    self.idle_jobs += 1
            except Exception:  # a decode error is kept in the step; anything else is a bug to see
                log.exception("fastkc decode thread: a decode-ahead job failed")
            del job
            with self._cond:
                self._running = False
                self._cond.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no job is queued or running (tests). True when idle."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._running, timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Drop the queued jobs, let the one in progress finish and join the
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
            log.warning("fastkc decode thread still busy after %.1f s; left running (daemon)", timeout)
        return not alive
