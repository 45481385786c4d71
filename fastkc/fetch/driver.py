"""The synchronous driver: FetchMachine over a KafkaClient. The only part of
the fetch path that touches the client: it moves the machine's requests over
the client's connections, hands answers, lost connections and metadata
back, asks for metadata when the machine wants it, runs the blocking offset
lookups' waiting loop, and runs the machine's decode-ahead jobs on its
decode executor (a thread with decode_threads=1). Everything else is the
machine's, reached through this object as the consumer always did
(`fetcher.states`, `fetcher.fetched_records(...)`)."""
import functools
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any

from fastkc.config import Config
from fastkc.decode_executor import DecodeExecutor, InlineDecodeExecutor, ThreadDecodeExecutor
from fastkc.errors import NodeNotReadyError
from fastkc.fetch.driving import FetchDriverBase
from fastkc.fetch.machine import FetchMachine
from fastkc.fetch.offsets import AwaitMetadata, BackOff, LookupResults, LookupStep, offset_lookup
from fastkc.fetch.requests import ConnectionLink
from fastkc.request import Request
from fastkc.structs import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from fastkc.client import KafkaClient
    from fastkc.metrics import ConsumerMetrics

# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any


class Fetcher(FetchDriverBase):
    client: "KafkaClient"

    def __init__(self, client: "KafkaClient", config: Config, *, clock: Callable[[], float] | None = None) -> None:
        self.client = client
        self.config = config
        self._clock = clock or client.clock
        self.machine = FetchMachine(config, client.cluster)
        # where the machine's decode-ahead jobs run: the "fastkc-decode"
        # thread with decode_threads=1 (the machine makes none otherwise)
        self.decode_executor: DecodeExecutor[None] = (
            ThreadDecodeExecutor("fastkc-decode") if self.machine.decode_ahead else InlineDecodeExecutor())
        client.on_disconnect.append(self.machine.on_node_lost)
        client.metadata_listeners.append(self._metadata_updated)

    def __getattr__(self, name: str) -> Any:
        # the application's side and the state live in the machine
        if name == "machine":  # not set yet (during __init__): no recursion
            raise AttributeError(name)
        return getattr(self.machine, name)

    @property
    def sensors(self) -> "ConsumerMetrics | None":
        return self.machine.sensors

    @sensors.setter
    def sensors(self, value: "ConsumerMetrics | None") -> None:
        self.machine.sensors = value

    def _submit_decode_jobs(self) -> None:
        for job in self.machine.take_decode_jobs():
            self.decode_executor.submit(job)

    # --- the takes: the machine's, given this driver's clock; then decode ahead ----------------
    def fetched_records(self, max_records: int, update_offsets: bool = True, key_deserializer: Any = None,
                        value_deserializer: Any = None, partitions: Container[TopicPartition] | None = None,
                        ) -> dict[TopicPartition, list[ConsumerRecord]]:
        records = self.machine.fetched_records(max_records, update_offsets, key_deserializer, value_deserializer,
                                               partitions, now=self._clock())
        self._submit_decode_jobs()
        return records

    def fetched_arrow(self, max_records: float, partitions: Container[TopicPartition] | None = None,
                      key_deserializer: Any = None, value_deserializer: Any = None) -> list[_RecordBatch]:
        return self.machine.fetched_arrow(max_records, partitions, now=self._clock(),
                                          key_deserializer=key_deserializer, value_deserializer=value_deserializer)

    def close_worker(self, timeout: float = 5.0) -> bool:
        """Stop the decode executor (close()): True when its thread is gone.
        A closed executor drops the jobs it is given: the takes go on
        decoding on the caller's thread."""
        return self.decode_executor.close(timeout)

    def send_requests(self) -> None:
        """Send the resets, validations and fetches that are due. Raises the
        NoOffsetForPartitionError of a partition without position under 'none'."""
        try:
            requests = self.machine.next_requests(self._clock(), self._link)
        finally:
            self._flush_metadata_wish()
        for request in requests:
            self._send(request)

    def _send(self, request: Request[int], done: Callable[[], object] | None = None) -> None:
        machine = self.machine
        node_id, api, token = request.node_id, request.api, request.token

        def answered(result: Any, error: BaseException | None) -> None:
            failure = machine.on_response(token, error if error is not None else result, self._clock())
            self._submit_decode_jobs()
            if request.raw:
                conn = self.client.connection(node_id)
                if failure is not None:
                    policy_error = self.client.parse_failed(conn, api, failure) if conn is not None else failure
                    machine.fail_later(policy_error)
                elif error is None and conn is not None:
                    self.client.parse_ok(conn, api)
            self._flush_metadata_wish()
            if done is not None:
                done()

        try:
            self.client.send(node_id, api, request.body, answered, raw=request.raw, version=request.version,
                             timeout_ms=request.timeout_ms)
        except NodeNotReadyError as exc:  # the node went away between link() and now: the machine retries
            answered(None, exc)

    def close_sessions(self) -> set[int]:
        """Ask each broker to drop our fetch session (a Fetch with the final
        epoch, as the Java client sends on close) so its session cache slot
        frees at once. Returns the set of brokers asked; each leaves the set
        when it answers (the caller may poll for that, never must)."""
        pending: set[int] = set()

        def link(node_id: int) -> ConnectionLink | None:
            if not self.client.is_connected(node_id):
                return None
            conn = self.client.connection(node_id)
            return None if conn is None or not conn.can_send() else ConnectionLink(conn)

        for request in self.machine.close_session_requests(link):
            pending.add(request.node_id)
            self._send(request, done=functools.partial(pending.discard, request.node_id))
        return pending

    # --- blocking lookups (beginning_offsets, end_offsets, offsets_for_times) ------------------
    def list_offsets(self, timestamps: dict[TopicPartition, int], timeout_ms: float) -> LookupResults:
        """Blocking ListOffsets: {tp: timestamp} -> {tp: (offset, timestamp,
        leader_epoch)}, retried on retriable errors until timeout_ms: the
        steps of fastkc.fetch.offsets.offset_lookup, performed blocking."""
        steps = offset_lookup(self.machine, timestamps, timeout_ms, self._clock, self.config["retry_backoff_ms"])
        outcome: object = None
        while True:
            try:
                step = steps.send(outcome)
            except StopIteration as done:
                results: LookupResults = done.value
                return results
            outcome = self._perform(step)

    def _perform(self, step: LookupStep) -> object:
        client = self.client
        if isinstance(step, BackOff):
            until = self._clock() + step.seconds
            while self._clock() < until:
                client.poll(until - self._clock())
            return None
        try:
            if isinstance(step, AwaitMetadata):
                if step.topics:
                    client.add_topics(step.topics)
                client.wait_for_metadata(step.seconds * 1000.0)
                return None
            return client.request("ListOffsets", step.body, step.seconds * 1000.0, node_id=step.node_id)
        except Exception as exc:  # the lookup decides: retry, or raise it
            return exc
