"""FetchMachine: the consumer's fetch path as one I/O-free state machine.

It never sends, receives, polls, sleeps, reads a clock or starts a thread. A
driver moves its requests over connections and hands the answers back:

- `next_requests(now, link)` -> [Request]: the resets (ListOffsets),
  validations (OffsetForLeaderEpoch) and Fetches due now. `link(node_id)`
  says whether a broker can take a request now and which versions it speaks
  (None: not now; else an object with `version_for(api_name)`, None for an
  API it does not speak). Each Request (fastkc.request) carries the node,
  the API, the body, request_timeout_ms, an opaque int token, the version
  the body was built for (None: the driver may pick any) and `raw` (the
  answer is wanted undecoded, as (payload, version)).
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
- `take_decode_jobs()` (decode_ahead): "prepare this step" jobs for the
  driver's decode executor (fastkc.decode_executor), after on_response and
  after a take that returned records.

The application's side stays methods: assign, seek, request_reset, pause,
resume, fetched_records, fetched_arrow, raise_pending, and the lookups'
builders (list_offsets_requests / list_offsets_answer) for the driver's
blocking loop. The takes are given the caller's `now` (a corrupt batch backs
its partition off from it).

The facade composes three parts, each owning its state, over the shared
partition states (partitions.py):
- `planner` (planner.py, FetchPlanner): which partitions from which broker,
  the fetch sessions (session.py), the Fetch bodies, answers -> buffered
  fetches;
- `offsets` (offsets.py, OffsetRequests): resets, lookups, KIP-320
  validation;
- `buffer` (buffer.py, RecordBuffer): the buffered fetches (completed.py)
  and their hand-out, the decode-ahead jobs.
The planner and the offset requests share the request ledger (requests.py)
and the reactions to partition errors (reactions.py, from codes.py).
"""
from collections.abc import Container, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import Config
from fastkc.errors import ProtocolParseError
from fastkc.fetch.buffer import DecodeJob, RecordBuffer
from fastkc.fetch.completed import CompletedFetch, streams_prepare_off_thread
from fastkc.fetch.offsets import LookupResults, OffsetRequests
from fastkc.fetch.partitions import FetchPartitions
from fastkc.fetch.planner import FetchPlanner
from fastkc.fetch.reactions import Reactions, fatal
from fastkc.fetch.requests import Link, RequestLedger
from fastkc.fetch.state import NO_EPOCH, FetchState, PartitionState
from fastkc.request import Request
from fastkc.structs import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from fastkc.metrics import ConsumerMetrics

# a pyarrow.RecordBatch (pyarrow has no type information)
_RecordBatch = Any


class FetchMachine:
    def __init__(self, config: Config, cluster: ClusterMetadata) -> None:
        self.config = config
        self._now = 0.0  # the last driven call's now (next_deadline's "future")
        self._partitions = FetchPartitions()
        self.metrics = {"fetch-total": 0, "records-consumed-total": 0, "bytes-consumed-total": 0,
                        "fetch-bytes-total": 0, "offset-validations-total": 0}
        self._requests = RequestLedger(config["request_timeout_ms"])
        # decode_threads=1: steps are prepared ahead, as jobs for the driver's
        # executor; only the compiled core's streams can prepare off-thread
        decode_ahead = bool(config.get("decode_threads", 0)) and streams_prepare_off_thread()
        self.buffer = RecordBuffer(config, self._partitions, self.metrics, decode_ahead=decode_ahead)
        self._reactions = Reactions(config, self._partitions, self.buffer)
        self.offsets = OffsetRequests(config, cluster, self._partitions, self._requests, self._reactions,
                                      self.buffer, self.metrics)
        self.planner = FetchPlanner(config, cluster, self._partitions, self._requests, self._reactions,
                                    self.buffer, self.offsets, self.metrics)
        # the windowed metrics (fastkc.metrics.ConsumerMetrics), set by the
        # consumer unless metrics_enabled=False; fed per response and per step
        self._sensors: ConsumerMetrics | None = None

    # --- driven -------------------------------------------------------------------------
    def next_requests(self, now: float, link: Link) -> list[Request[int]]:
        """The requests due now (see the module docstring). Raises the
        NoOffsetForPartitionError of a partition without position under
        auto_offset_reset='none'."""
        self._now = now
        self.offsets.plan(now, link)
        self.planner.plan(now, link)
        return self._requests.take_outbox()

    def on_response(self, token: int, payload_or_error: Any, now: float) -> ProtocolParseError | None:
        self._now = now
        return self._requests.answer(token, payload_or_error, now)

    def on_node_lost(self, node_id: int) -> None:
        """The connection to node_id is gone (its in-flight answers arrive as
        errors): its fetch session starts over."""
        self.planner.on_node_lost(node_id)

    def on_metadata(self, cluster: ClusterMetadata | None = None) -> None:
        """New metadata (leader epochs are checked: KIP-320); None: the
        metadata object the machine has was updated in place."""
        if cluster is not None:
            self.planner.cluster = cluster
        self.offsets.on_metadata(self.planner.cluster)

    @property
    def cluster(self) -> ClusterMetadata:
        """The metadata the parts plan with (on_metadata changes it)."""
        return self.planner.cluster

    def next_deadline(self) -> float | None:
        """The earliest future time a backed-off partition may be asked
        again, or None (nothing waits on time)."""
        waits = [s.next_retry for s in self._partitions.states.values() if s.next_retry > self._now]
        return min(waits) if waits else None

    @property
    def metadata_wanted(self) -> bool:
        return self._partitions.metadata_wanted

    @metadata_wanted.setter
    def metadata_wanted(self, wanted: bool) -> None:
        self._partitions.metadata_wanted = wanted

    def fail_later(self, error: BaseException | None) -> None:
        """An error the driver's policy turned fatal (a connection's parse
        failures past its limit): raised by the next raise_pending()."""
        if error is not None and fatal(error):
            self._partitions.fail(error)

    def close_session_requests(self, link: Link) -> list[Request[int]]:
        """A Fetch with the final epoch to each broker holding a session of
        ours (close), see FetchPlanner.close_session_requests."""
        return self.planner.close_session_requests(link)

    def take_decode_jobs(self) -> list[DecodeJob]:
        """The decode-ahead jobs made since the last call, for the driver's
        decode executor (none unless decode_ahead)."""
        return self.buffer.take_decode_jobs()

    @property
    def decode_ahead(self) -> bool:
        """Whether the machine makes decode-ahead jobs (decode_threads=1 on
        the compiled core): the driver then runs them on a thread."""
        return self.buffer.decode_ahead

    # --- the application's side -----------------------------------------------------------
    @property
    def states(self) -> dict[TopicPartition, PartitionState]:
        """The assigned partitions' states, in assignment order."""
        return self._partitions.states

    @property
    def sensors(self) -> "ConsumerMetrics | None":
        return self._sensors

    @sensors.setter
    def sensors(self, sensors: "ConsumerMetrics | None") -> None:
        self._sensors = self.planner.sensors = self.buffer.sensors = sensors

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        # unassigned partitions leave the fetch sessions as "forgotten" on the
        # next fetch; their buffered data goes now
        for state in self._partitions.assign(partitions):
            self.buffer.drop(state)
        if self._sensors is not None:
            self._sensors.partitions_kept(self.states)

    def state(self, tp: TopicPartition) -> PartitionState:
        return self.states[tp]

    def seek(self, tp: TopicPartition, offset: int, epoch: int = NO_EPOCH) -> None:
        self._partitions.replan()
        state = self.states[tp]
        self.buffer.drop(state)
        state.seek(offset, epoch)

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        self._reactions.request_reset(tp, strategy)

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None:
        """Keep a partition without position from auto_offset_reset while its
        committed offset is read (group/committed_starts.py); seek() or
        held=False ends it."""
        state = self.states[tp]
        state.held = held and state.fetch_state is FetchState.INITIALIZING
        if not state.held:
            self._partitions.replan()

    def is_held(self, tp: TopicPartition) -> bool:
        """Still held for its committed offset (False once unassigned, sought
        or released)."""
        state = self.states.get(tp)
        return state is not None and state.held and state.fetch_state is FetchState.INITIALIZING

    def pause(self, tp: TopicPartition) -> None:
        self._partitions.replan()
        self.states[tp].paused = True
        self.buffer.discard_prepared(self.states[tp])

    def resume(self, tp: TopicPartition) -> None:
        self._partitions.replan()
        self.states[tp].paused = False

    @property
    def pending_error(self) -> BaseException | None:
        """The error the next raise_pending() raises, if any."""
        return self._partitions.pending_error

    def raise_pending(self) -> None:
        error = self._partitions.take_error()
        if error is not None:
            raise error

    def has_buffered(self) -> bool:
        return self.buffer.has_buffered()

    def buffered_bytes(self) -> int:
        return self.buffer.buffered_bytes()

    def fetched_records(self, max_records: int, update_offsets: bool = True, key_deserializer: Any = None,
                        value_deserializer: Any = None, partitions: Container[TopicPartition] | None = None,
                        prepared_only: bool = False, *, now: float | None = None,
                        ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """RecordBuffer.fetched_records; `now` is the caller's clock (a corrupt
        batch's partition backs off from it), the last driven call's when None."""
        return self.buffer.fetched_records(self._now if now is None else now, max_records, update_offsets,
                                           key_deserializer, value_deserializer, partitions, prepared_only)

    def fetched_arrow(self, max_records: float, partitions: Container[TopicPartition] | None = None,
                      prepared_only: bool = False, *, now: float | None = None, key_deserializer: Any = None,
                      value_deserializer: Any = None) -> list[_RecordBatch]:
        """RecordBuffer.fetched_arrow; `now` as for fetched_records."""
        return self.buffer.fetched_arrow(self._now if now is None else now, max_records, partitions, prepared_only,
                                         key_deserializer, value_deserializer)

    @property
    def decode_steps(self) -> dict[str, int]:
        """Record steps handed out from a step prepared off the caller's
        thread, waited for, or decoded on it (RecordBuffer.decode_steps)."""
        return self.buffer.decode_steps

    @property
    def unprepared(self) -> CompletedFetch | None:
        """The fetch a prepared_only take stopped at, for the caller to prepare."""
        return self.buffer.unprepared

    def prepare_job(self, completed: CompletedFetch, max_records: int, arrow: bool = False) -> DecodeJob:
        """The job preparing `completed`'s next step (RecordBuffer.prepare_job)."""
        return self.buffer.prepare_job(completed, max_records, arrow)

    # --- lookups for the application (the driver waits) ----------------------------------
    def list_offsets_requests(self, timestamps: Mapping[TopicPartition, int],
                              ) -> tuple[dict[int, dict[TopicPartition, int]], list[TopicPartition]]:
        return self.offsets.list_offsets_requests(timestamps)

    def list_offsets_body(self, timestamps: Mapping[TopicPartition, int]) -> dict[str, Any]:
        return self.offsets.list_offsets_body(timestamps)

    @staticmethod
    def list_offsets_answer(asked: Mapping[TopicPartition, int], response: Any) -> tuple[LookupResults, bool]:
        return OffsetRequests.list_offsets_answer(asked, response)
