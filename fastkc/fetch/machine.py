"""FetchMachine: the consumer's fetch path as one I/O-free state machine.

It never sends, receives, polls or sleeps. A driver moves its requests over
connections and hands the answers back:

- `next_requests(now, link)` -> [Request]: the resets (ListOffsets),
  validations (OffsetForLeaderEpoch) and Fetches due now. `link(node_id)`
  says whether a broker can take a request now and which versions it speaks
  (None: not now; else an object with `version_for(api_name)`, None for an
  API it does not speak). Each Request carries the node, the API, the body,
  the version the body was built for (None: the driver may pick any), `raw`
  (the answer is wanted undecoded, as (payload, version)) and an opaque token.
- `on_response(token, payload_or_error, now)`: a request's answer (the
  decoded body, or (payload, version) when raw) or the exception that ended
  it. Returns the ProtocolParseError of a Fetch payload the parser refused
  (the driver applies its connection's parse-failure policy and may hand the
  machine the error to raise with `fail_later`), else None.
- `on_node_lost(node_id)`, `on_metadata(cluster)`: a connection is gone,
  new metadata arrived (leader epochs are checked: KIP-320).
- `next_deadline()`: when a backed-off retry falls due (the driver's poll
  timeout need not be longer), or None.
- `metadata_wanted`: set when the machine would like fresh metadata; the
  driver clears it and asks its client.

The application's side stays methods: assign, seek, request_reset, pause,
resume, fetched_records, fetched_arrow, raise_pending, and the lookups'
builders (list_offsets_requests / list_offsets_answer) for the driver's
blocking loop. Application-side calls read the injected `clock` (for
backoffs); the driven calls take `now` from the driver.

The concerns live in: state.py (the partition states and their legal
transitions), session.py (KIP-227), offsets.py (resets, lookups,
validation), planner.py (which partitions from which broker, the Fetch body,
responses, error reactions), handout.py (decoding and handing records out),
codes.py (error code -> reaction, from fastkc.errors).
"""
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from fastkc import _backend
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import Config, decode_budget
from fastkc.decode_worker import DecodeWorker
from fastkc.errors import IncompatibleBrokerVersion, KafkaProtocolError, ProtocolParseError
from fastkc.fetch.base import Handler, Link
from fastkc.fetch.handout import _PREPARE_AHEAD, HandoutMixin
from fastkc.fetch.offsets import OffsetsMixin
from fastkc.fetch.planner import PlannerMixin
from fastkc.fetch.session import FetchSession
from fastkc.fetch.state import NO_EPOCH, FetchState, PartitionState
from fastkc.structs import TopicPartition

log = logging.getLogger("fastkc.fetch")


class Request(NamedTuple):
    node_id: int
    api: str
    body: dict[str, Any]
    version: int | None  # the version the body was built for; None: any the driver picks
    raw: bool  # answer wanted as (payload bytes, version), undecoded
    token: int  # hand back to on_response (opaque to the driver)


class FetchMachine(OffsetsMixin, PlannerMixin, HandoutMixin):
    def __init__(self, config: Config, cluster: ClusterMetadata, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.cluster = cluster
        self._clock = clock
        self._now = clock()
        self._backoff = config["retry_backoff_ms"] / 1000.0
        self.states: dict[TopicPartition, PartitionState] = {}  # in assignment order
        self._sessions: dict[int, FetchSession] = {}  # by node_id
        self._in_flight_nodes: set[int] = set()
        self._buffered_bytes = 0
        self._pending_error: BaseException | None = None
        self._next_partition = 0  # round-robin start for poll
        self._isolation = 1 if config["isolation_level"] == "read_committed" else 0
        self.metrics = {"fetch-total": 0, "records-consumed-total": 0, "bytes-consumed-total": 0,
                        "fetch-bytes-total": 0, "offset-validations-total": 0}
        # the windowed metrics (fastkc.metrics.ConsumerMetrics), set by the
        # consumer unless metrics_enabled=False; fed per response and per step
        self.sensors = None
        self.metadata_wanted = False
        self._leader_epochs_seen: dict[TopicPartition, int] = {}  # the newest leader epoch metadata showed
        self._fetch_nodes: set[int] | None = None  # brokers the last full fetch pass fetched from (None: look again)
        self._fetch_rotation = 0
        self._outbox: list[Request] = []
        self._handlers: dict[int, Handler] = {}  # token -> the answer's handler
        self._next_token = 0
        # the decoding budget (fastkc.config.decode_budget): per-batch
        # decompressed bytes and records, decompressed bytes held per step
        self._max_decompressed, self._max_batch_records, self._max_held = decode_budget(config)
        self._arrow_zero_copy = bool(config.get("arrow_zero_copy", False))
        # the partition whose buffered fetch poll() left mid-way: drained first
        self._in_line: TopicPartition | None = None
        # the decode worker (decode_threads=1); only the compiled core's
        # streams can prepare a step off the polling thread
        self._worker: DecodeWorker | None = None
        if config.get("decode_threads", 0) and hasattr(getattr(_backend.impl, "RecordStream", None),
                                                       "prepare"):
            self._worker = DecodeWorker()
        self._prepare_held = max(1, self._max_held // _PREPARE_AHEAD)
        # record steps poll() took from a step the worker had prepared, had
        # to wait for (the worker was on it), or decoded itself
        self.decode_steps = {"prepared": 0, "waited": 0, "inline": 0}
        self.unprepared = None  # fetched_records(prepared_only=True): the fetch it stopped at
        # poll_arrow() was called last: no record streams are prepared for
        # fetches as they arrive (the Arrow form would start its own)
        self._records_form = True

    # --- driven -------------------------------------------------------------------------
    def next_requests(self, now: float, link: Link) -> list[Request]:
        """The requests due now (see the module docstring). Raises the
        NoOffsetForPartitionError of a partition without position under
        auto_offset_reset='none'."""
        self._now = now
        self._ensure_reset_strategies()
        self._plan_resets(now, link)
        self._plan_validations(now, link)
        self._plan_fetches(now, link)
        out, self._outbox = self._outbox, []
        return out

    def on_response(self, token: int, payload_or_error: Any, now: float) -> ProtocolParseError | None:
        self._now = now
        handler = self._handlers.pop(token, None)
        if handler is None:
            return None  # answered before (a driver's double report), or never ours
        if isinstance(payload_or_error, BaseException):
            return handler(None, payload_or_error)
        return handler(payload_or_error, None)

    def next_deadline(self) -> float | None:
        """The earliest future time a backed-off partition may be asked
        again, or None (nothing waits on time)."""
        waits = [s.next_retry for s in self.states.values() if s.next_retry > self._now]
        return min(waits) if waits else None

    def fail_later(self, error: BaseException | None) -> None:
        """An error the driver's policy turned fatal (a connection's parse
        failures past its limit): raised by the next raise_pending()."""
        if isinstance(error, KafkaProtocolError) and not error.retriable:
            self._pending_error = error

    def _emit(self, node_id: int, api: str, body: dict[str, Any], handler: Handler, raw: bool = False,
              version: int | None = None, outbox: bool = True) -> Request:
        token = self._next_token
        self._next_token += 1
        self._handlers[token] = handler
        request = Request(node_id, api, body, version, raw, token)
        if outbox:
            self._outbox.append(request)
        return request

    def _leader_ready(self, tp: TopicPartition, link: Link) -> int | None:
        leader = self.cluster.leader_for(tp)
        if leader is None:
            self.metadata_wanted = True
            return None
        return leader if link(leader) is not None else None

    def _retry_later(self, tps: Iterable[TopicPartition], error: BaseException | None = None,
                     metadata: bool = True) -> None:
        self.fail_later(error)  # the client's parse-failure limit was reached (or the broker's framing is broken)
        self._replan()
        until = self._now + self._backoff
        for tp in tps:
            state = self.states.get(tp)
            if state is not None:
                state.next_retry = until
        if metadata:
            self.metadata_wanted = True

    # --- the application's side -----------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._replan()
        old = self.states
        self.states = {}
        for tp in partitions:
            self.states[tp] = old.get(tp) or PartitionState(tp)
        # unassigned partitions leave the fetch sessions as "forgotten" on the
        # next fetch; their buffered data goes now
        for tp, state in old.items():
            if tp not in self.states:
                self._drop_buffered(state)
        if self.sensors is not None:
            self.sensors.partitions_kept(self.states)

    def state(self, tp: TopicPartition) -> PartitionState:
        return self.states[tp]

    def seek(self, tp: TopicPartition, offset: int, epoch: int = NO_EPOCH) -> None:
        self._replan()
        state = self.states[tp]
        self._drop_buffered(state)
        state.seek(offset, epoch)

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        self._replan()
        state = self.states[tp]
        self._drop_buffered(state)
        state.await_reset(strategy)

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None:
        """Keep a partition without position from auto_offset_reset while the
        driver looks up its committed offset (an asyncio driver cannot block
        in assign() as the sync one does); seek() or held=False ends it."""
        state = self.states[tp]
        state.held = held and state.fetch_state is FetchState.INITIALIZING
        if not state.held:
            self._replan()

    def pause(self, tp: TopicPartition) -> None:
        self._replan()
        self.states[tp].paused = True
        self._discard_prepared(self.states[tp])

    def resume(self, tp: TopicPartition) -> None:
        self._replan()
        self.states[tp].paused = False


class VersionedConnection(Protocol):
    """A driver's connection (fastkc.conn.BrokerConnection, fastkc.net.aio.AioConnection)."""

    def version_for(self, api_name: str) -> int: ...


class ConnectionLink:
    """What the machine asks of a ready connection (next_requests' `link`):
    the versions it speaks. Both drivers hand their connections over in it."""

    __slots__ = ("conn",)

    def __init__(self, conn: VersionedConnection) -> None:
        self.conn = conn

    def version_for(self, api_name: str) -> int | None:
        try:
            return self.conn.version_for(api_name)
        except IncompatibleBrokerVersion:
            return None
