"""What the FetchMachine's parts share, for the type checker.

FetchMachine (machine.py) is one object assembled from mixins: OffsetsMixin
(offsets.py), PlannerMixin (planner.py) and HandoutMixin (handout.py). Each
part reads the machine's attributes and calls methods another part defines.
`MachineParts`, the base of every part, declares those attributes once (with
their types; FetchMachine.__init__ sets them) and, for the type checker
only, the methods one part calls of another; at run time it adds nothing.
"""
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from fastkc.config import Config
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import ClusterMetadata
    from fastkc.decode_worker import DecodeWorker
    from fastkc.errors import ProtocolParseError
    from fastkc.fetch.handout import CompletedFetch
    from fastkc.fetch.machine import Request
    from fastkc.fetch.session import FetchSession
    from fastkc.fetch.state import PartitionState
    from fastkc.metrics import ConsumerMetrics


class NodeLink(Protocol):
    """A ready connection as the machine sees it (machine.ConnectionLink):
    the version it speaks of an API, None when it speaks none fastkc knows."""

    def version_for(self, api_name: str) -> int | None: ...


#: next_requests' `link`: a ready connection to node_id, or None (not now)
Link = Callable[[int], NodeLink | None]
#: a request's answer handler: (the answer, or None; the error that ended it,
#: or None) -> the ProtocolParseError of a Fetch payload the parser refused
Handler = Callable[[Any, BaseException | None], "ProtocolParseError | None"]


class MachineParts:
    """The FetchMachine's attributes (set by FetchMachine.__init__; the
    comments there say what each holds) and its parts' shared methods."""

    config: Config
    cluster: "ClusterMetadata"
    _clock: Callable[[], float]
    _now: float
    _backoff: float
    states: "dict[TopicPartition, PartitionState]"
    _sessions: "dict[int, FetchSession]"
    _in_flight_nodes: set[int]
    _buffered_bytes: int
    _pending_error: BaseException | None
    _next_partition: int
    _isolation: int
    metrics: dict[str, int]
    sensors: "ConsumerMetrics | None"
    metadata_wanted: bool
    _leader_epochs_seen: dict[TopicPartition, int]
    _fetch_nodes: set[int] | None
    _fetch_rotation: int
    _outbox: "list[Request]"
    _handlers: dict[int, Handler]
    _next_token: int
    _max_decompressed: int
    _max_batch_records: int
    _max_held: int
    _arrow_zero_copy: bool
    _in_line: TopicPartition | None
    _worker: "DecodeWorker | None"
    _prepare_held: int
    decode_steps: dict[str, int]
    unprepared: "CompletedFetch | None"
    _records_form: bool

    if TYPE_CHECKING:
        # defined by machine.py (FetchMachine)
        def _emit(self, node_id: int, api: str, body: dict[str, Any], handler: Handler, raw: bool = False,
                  version: int | None = None, outbox: bool = True) -> "Request": ...

        def _leader_ready(self, tp: TopicPartition, link: Link) -> int | None: ...

        def _retry_later(self, tps: Iterable[TopicPartition], error: BaseException | None = None,
                         metadata: bool = True) -> None: ...

        def request_reset(self, tp: TopicPartition, strategy: str) -> None: ...

        # defined by planner.py (PlannerMixin)
        def _replan(self) -> None: ...

        def _partition_error(self, tp: TopicPartition, code: int, what: str,
                             state: "PartitionState | None" = None) -> None: ...

        # defined by offsets.py (OffsetsMixin)
        def _check_divergence(self, tp: TopicPartition, epoch: int, end_offset: int) -> None: ...

        # defined by handout.py (HandoutMixin)
        def _drop_buffered(self, state: "PartitionState") -> None: ...

        def _prepare_ahead(self, key_deserializer: Any, value_deserializer: Any) -> None: ...

