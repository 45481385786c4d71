"""The asyncio driver of the fetch machine (fastkc.fetch.FetchMachine): one
task, `_run`, moves the machine's requests over an AioClient.

Each pass asks `machine.next_requests(now, link)` for what is due (resets,
validations, fetches), sends each through `client.send` (a task per request:
they are pipelined, several brokers at once), and sleeps until the machine's
next_deadline(), a wake-up, or consumer_timeout_ms (aiokafka's period of its
fetch task) passes. Wake-ups: an answer, a connection ready, metadata,
assign/seek/pause/resume, records handed out (buffer room). Answers go to
`machine.on_response`; a raw Fetch payload the parser refused goes through
the client's parse-failure policy, as in the sync driver
(fastkc/fetch/driver.py). Lost connections and metadata reach the machine
through the client's listeners; the machine's metadata_wanted becomes a
client.request_metadata_update().

Nothing decodes in the task: the application's getmany() takes records
from the machine (`fetched_records`, given this driver's clock), on the
loop; a take that stops at a heavy fetch with nothing prepared has its next
step prepared off the loop (`prepare`: the machine's job on this driver's
`LoopDecodeExecutor`, one "fastkc-aio-decode" thread). `data_event` is set
whenever an answer arrived, so a getmany() waiting for records wakes.
`list_offsets` is the sync driver's blocking ListOffsets loop as a coroutine.

An error next_requests() raises (NoOffsetForPartitionError under
auto_offset_reset='none') is kept and, if a new pass still raises it, raised
by the next get call, as the sync consumer's poll() raises it; the task goes on.
"""
import asyncio
import logging
import time
from collections.abc import Callable, Container
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastkc.aio.client import AioClient
from fastkc.config import Config
from fastkc.decode_executor import DecodeJob
from fastkc.errors import NodeNotReadyError
from fastkc.fetch.completed import CompletedFetch
from fastkc.fetch.driving import FetchDriverBase
from fastkc.fetch.machine import FetchMachine
from fastkc.fetch.offsets import AwaitMetadata, BackOff, LookupResults, LookupStep, offset_lookup
from fastkc.fetch.requests import ConnectionLink
from fastkc.request import Request
from fastkc.structs import ConsumerRecord, TopicPartition

log = logging.getLogger(__name__)

# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any
#: records per step prepared on the decode thread: a take's count, within
#: these bounds (getone()'s one record would cost a thread hand-off each; a
#: step of more than _PREPARE_MAX holds descriptors for records far ahead)
_PREPARE_MIN = 1024
_PREPARE_MAX = 16384


class LoopDecodeExecutor:
    """fastkc.decode_executor.DecodeExecutor for the asyncio consumer: each job
    runs on one thread (`name`_0, started with the first job) through the
    running loop's run_in_executor; submit() returns the job's future.
    close() shuts the thread down without waiting: a step in progress ends
    on its own, in milliseconds."""

    def __init__(self, name: str = "fastkc-aio-decode") -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, job: DecodeJob) -> "asyncio.Future[bool]":
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        return asyncio.get_running_loop().run_in_executor(self._pool, job.run)

    def close(self, timeout: float = 5.0) -> bool:
        """True when no thread was ever started (else it ends on its own)."""
        if self._pool is None:
            return True
        self._pool.shutdown(wait=False, cancel_futures=True)
        return False


class AioFetchDriver(FetchDriverBase):
    client: AioClient

    def __init__(self, client: AioClient, config: Config, *, period_ms: float = 200,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.config = config
        self._clock = clock
        self._period = period_ms / 1000.0
        self.machine = FetchMachine(config, client.cluster)
        self.decode_executor = LoopDecodeExecutor()
        # the fetch whose next step is being prepared, and that preparation
        self._preparing: tuple[CompletedFetch, asyncio.Future[bool]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        #: set when an answer arrived (records may be buffered, a position known); made by start()
        self.data_event: asyncio.Event | None = None
        self._error: Exception | None = None  # raised by the next raise_pending()
        self._closed = False
        client.on_disconnect.append(self._node_lost)
        client.metadata_listeners.append(self._metadata_updated)
        client.on_change.append(self.wake)

    # --- the task ------------------------------------------------------------------------------
    def start(self) -> None:
        self._wake = asyncio.Event()
        self.data_event = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        machine = self.machine
        wake = self._wake
        assert wake is not None  # start() made it before it started this task
        while not self._closed:
            wake.clear()
            self.send_requests()
            wait = self._period
            due = machine.next_deadline()
            if due is not None:
                wait = min(wait, max(0.0, due - self._clock()))
            if wake.is_set():
                await asyncio.sleep(0)  # let the answers' callbacks and the application run first
                continue
            try:
                await asyncio.wait_for(wake.wait(), wait)
            except TimeoutError:
                pass

    def send_requests(self) -> None:
        """One pass: send what the machine says is due now."""
        machine = self.machine
        try:
            requests = machine.next_requests(self._clock(), self._link)
        except Exception as exc:  # NoOffsetForPartitionError: the application's next getmany raises it
            self._error = exc
            requests = []
        finally:
            self._flush_metadata_wish()
        for request in requests:
            self._send(request)

    # --- the takes (the application's get calls) --------------------------------------------
    def fetched_records(self, max_records: int, update_offsets: bool = True, key_deserializer: Any = None,
                        value_deserializer: Any = None, partitions: Container[TopicPartition] | None = None,
                        prepared_only: bool = False) -> dict[TopicPartition, list[ConsumerRecord]]:
        """The machine's take, given this driver's clock."""
        return self.machine.fetched_records(max_records, update_offsets, key_deserializer, value_deserializer,
                                            partitions, prepared_only, now=self._clock())

    def fetched_arrow(self, max_records: int, partitions: Container[TopicPartition] | None = None,
                      prepared_only: bool = False, key_deserializer: Any = None,
                      value_deserializer: Any = None) -> list[_RecordBatch]:
        return self.machine.fetched_arrow(max_records, partitions, prepared_only, now=self._clock(),
                                          key_deserializer=key_deserializer, value_deserializer=value_deserializer)

    def prepare(self, completed: CompletedFetch, limit: int, arrow: bool = False) -> "asyncio.Future[bool]":
        """The future of `completed`'s next step prepared on the decode thread
        (the fetch a prepared_only take named in `machine.unprepared`): as
        many records as a take asks for (at least _PREPARE_MIN), so that a
        take uses up a prepared step and the next one is prepared while the
        application works on what it took; with `arrow`, an Arrow step of as
        many rows as the take asks for."""
        # a step of this fetch still being prepared is the one to wait for
        # (a finished one says nothing about the fetch's next step)
        if self._preparing is not None and self._preparing[0] is completed and not self._preparing[1].done():
            return self._preparing[1]
        max_records = limit if arrow else min(max(limit, _PREPARE_MIN), _PREPARE_MAX)
        step = self.decode_executor.submit(self.machine.prepare_job(completed, max_records, arrow))
        self._preparing = (completed, step)
        return step

    def _send(self, request: Request[int], done: Callable[[], object] | None = None) -> None:
        machine = self.machine
        node_id, api, token = request.node_id, request.api, request.token

        def answered(result: Any, error: BaseException | None) -> None:
            failure = machine.on_response(token, error if error is not None else result, self._clock())
            if request.raw:
                if failure is not None:
                    machine.fail_later(self.client.parse_failed(node_id, api, failure))
                elif error is None:
                    self.client.parse_ok(node_id, api)
            self._flush_metadata_wish()
            if self.data_event is not None:  # None only before start(): nothing waits then
                self.data_event.set()
            self.wake()
            if done is not None:
                done()

        try:
            self.client.send(node_id, api, request.body, answered, raw=request.raw, version=request.version,
                             timeout_ms=request.timeout_ms)
        except NodeNotReadyError as exc:  # gone between link() and now: the machine retries
            answered(None, exc)

    def _node_lost(self, node_id: int) -> None:
        self.machine.on_node_lost(node_id)
        self.wake()

    def _metadata_updated(self) -> None:
        super()._metadata_updated()
        self.wake()

    def raise_pending(self) -> None:
        """Raise what the application must see now: the machine's pending
        error, or next_requests' (a partition without position under
        auto_offset_reset='none'), looked at again now: a seek since the
        task's last pass may have settled it."""
        self.machine.raise_pending()
        if self._take_error() is not None:
            self.send_requests()
            error = self._take_error()
            if error is not None:
                raise error

    def _take_error(self) -> Exception | None:
        error, self._error = self._error, None
        return error

    async def close(self) -> None:
        """Stop the task, ask the brokers to drop our fetch sessions (bounded,
        never fatal), stop the decode thread."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        try:
            await asyncio.wait_for(self._close_sessions(), 1.0)
        except Exception:  # closing must close, whatever the brokers do
            log.debug("closing fetch sessions failed", exc_info=True)
        self.decode_executor.close()

    async def _close_sessions(self) -> None:
        pending: dict[int, asyncio.Future[None]] = {}

        def link(node_id: int) -> ConnectionLink | None:
            conn = self.client.connection(node_id)
            return None if conn is None or not conn.ready or not conn.core.can_send() else ConnectionLink(conn)

        loop = asyncio.get_running_loop()
        for request in self.machine.close_session_requests(link):
            future = pending[request.node_id] = loop.create_future()

            def settle(future: asyncio.Future[None] = future) -> None:
                if not future.done():
                    future.set_result(None)

            self._send(request, done=settle)
        if pending:
            await asyncio.gather(*pending.values())

    # --- offset lookups (beginning_offsets, end_offsets, offsets_for_times) -----------------------
    async def list_offsets(self, timestamps: dict[TopicPartition, int], timeout_ms: float) -> LookupResults:
        """ListOffsets: {tp: timestamp} -> {tp: (offset, timestamp,
        leader_epoch)}, retried on retriable errors until timeout_ms: the
        steps of fastkc.fetch.offsets.offset_lookup, awaited."""
        steps = offset_lookup(self.machine, timestamps, timeout_ms, self._clock, self.config["retry_backoff_ms"])
        outcome: object = None
        while True:
            try:
                step = steps.send(outcome)
            except StopIteration as done:
                results: LookupResults = done.value
                return results
            outcome = await self._perform(step)

    async def _perform(self, step: LookupStep) -> object:
        client = self.client
        if isinstance(step, BackOff):
            await asyncio.sleep(step.seconds)
            return None
        try:
            if isinstance(step, AwaitMetadata):
                if step.topics:
                    client.add_topics(step.topics)
                await client.wait_for_metadata(step.seconds * 1000.0)
                return None
            return await client.request("ListOffsets", step.body, step.seconds * 1000.0, node_id=step.node_id)
        except Exception as exc:  # the lookup decides: retry, or raise it
            return exc
