"""Fetch planning and Fetch responses: which partitions are fetched from
which broker (the leader, or the preferred read replica of KIP-392), one
Fetch in flight per broker, the request order rotated, the buffered-bytes
cap, the session's request body, and what each answered partition does to
its state.

Pipelining: as soon as a Fetch response is parsed, the decoder's own framing
reads its entry headers (fastkc.records.scan_blob: C, no record touched) to
find where the complete data ends, so the next Fetch goes on the wire before
the application has even seen the records. The machine has no batch-layout
rules of its own. Buffered, undecoded responses are capped at
fetch_max_bytes in total; past the cap no new Fetch is planned until poll()
drains the buffer, so memory stays bounded under lag.

Invariant: a partition's buffered fetches are contiguous and start at its
position; every seek, reset or truncation clears them and sets
fetch_offset = position, and a response is accepted only if it answers the
fetch_offset the partition still has (anything else is stale and dropped).
"""
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fastkc import _backend
from fastkc import records as fastkc_records
from fastkc.config import Config
from fastkc.errors import FetchProgressError, IncompatibleBrokerVersion, ProtocolParseError
from fastkc.fetch import codes
from fastkc.fetch.completed import CompletedFetch
from fastkc.fetch.partitions import FetchPartitions
from fastkc.fetch.reactions import Reactions
from fastkc.fetch.requests import Link, NodeLink, RequestLedger, isolation_level
from fastkc.fetch.session import FetchSession, PartitionFetch
from fastkc.fetch.state import PartitionState
from fastkc.request import Request
from fastkc.structs import ScanInfo, TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import ClusterMetadata
    from fastkc.metrics import ConsumerMetrics, ResponseTally

log = logging.getLogger("fastkc.fetch")

# A response whose data for a partition cannot advance its position (no
# complete entry, or only batches below the fetch offset) is refetched, but
# not forever. Kafka sends the first batch of the first partition with data
# in a response whole, even past every byte limit (KIP-74: the broker reads
# with minOneMessage until one partition returned data), so only a later
# partition's first batch can be legitimately cut -- and those partitions take
# turns at the front (we rotate the request order; the broker moves
# partitions that returned data to the end of the session). So a cut first
# entry counts only when this partition was the first with data in its
# response, and batches wholly below the fetch offset (never sent by a
# broker, which starts at the batch holding the offset) always count. After
# this many consecutive counted responses poll() raises FetchProgressError
# (typed, naming the partition and offset) instead of refetching in a silent
# loop; the refetch before it absorbs a one-off race. Java's CompletedFetch
# raises RecordTooLargeException / CorruptRecordException in the same spots.
_NO_PROGRESS_LIMIT = 2


class FetchedData(Protocol):
    """What the planner hands the record buffer (buffer.py's RecordBuffer)."""

    def add(self, state: PartitionState, completed: CompletedFetch) -> None:
        """Buffer a partition's fetched data after what it holds."""
        ...

    def fetched(self) -> None:
        """A Fetch answer was handled (decode ahead may start)."""
        ...

    def buffered_bytes(self) -> int:
        """Undecoded bytes buffered (the planner caps them at fetch_max_bytes)."""
        ...


class DivergenceCheck(Protocol):
    """What a Fetch's diverging epoch is handed to (offsets.py's OffsetRequests)."""

    def check_divergence(self, tp: TopicPartition, epoch: int, end_offset: int) -> None:
        """The leader's log for the position's epoch ends at end_offset."""
        ...


class FetchPlanner:
    """The fetch machine's Fetch requests, sessions and answers (see the
    module docstring). The facade keeps `cluster` current."""

    def __init__(self, config: Config, cluster: "ClusterMetadata", partitions: FetchPartitions,
                 requests: RequestLedger, reactions: Reactions, buffer: FetchedData, offsets: DivergenceCheck,
                 metrics: dict[str, int]) -> None:
        self.config = config
        self.cluster = cluster
        self._partitions = partitions
        self._requests = requests
        self._reactions = reactions
        self._buffer = buffer
        self._offsets = offsets
        self._metrics = metrics  # the machine's counters; this part adds fetches and bytes fetched
        self.sensors: ConsumerMetrics | None = None  # the windowed metrics (the facade sets them)
        self._sessions: dict[int, FetchSession] = {}  # by node_id
        self._in_flight_nodes: set[int] = set()  # brokers with a Fetch of ours on the wire
        # brokers the last full pass fetched from (meaningful while the
        # partitions' plan is not stale)
        self._fetch_nodes: set[int] = set()
        self._fetch_rotation = 0
        self._isolation = isolation_level(config)

    @property
    def sessions(self) -> Mapping[int, FetchSession]:
        """The fetch session with each broker (by node id)."""
        return self._sessions

    @property
    def in_flight_nodes(self) -> frozenset[int]:
        """The brokers a Fetch of ours is on the wire to."""
        return frozenset(self._in_flight_nodes)

    def _fetch_target(self, tp: TopicPartition, state: PartitionState, now: float) -> int | None:
        """The broker to fetch tp from: the preferred read replica (KIP-392)
        while its lease lasts, else the leader."""
        if state.preferred_replica is not None:
            if now < state.preferred_replica_until and state.preferred_replica in self.cluster.brokers:
                return state.preferred_replica
            state.preferred_replica = None
        return self.cluster.leader_for(tp)

    def plan(self, now: float, link: Link) -> None:
        """The Fetches due now, into the request ledger's outbox."""
        if self._buffer.buffered_bytes() >= self.config["fetch_max_bytes"]:
            return  # bounded memory: wait until poll() drains the buffer
        in_flight = self._in_flight_nodes
        partitions = self._partitions
        if in_flight and not partitions.plan_stale and self._fetch_nodes <= in_flight:
            return  # every broker we fetch from already has a fetch on the wire (the common case per poll)
        cluster = self.cluster
        wanted_by_node: dict[int, dict[TopicPartition, PartitionFetch]] = {}
        nodes: set[int] = set()
        # Rotate the order partitions are asked in, as the Java client does:
        # the broker fills fetch_max_bytes in request order, so a fixed order
        # could starve the partitions at the end.
        states = list(partitions.states.items())
        if states:
            self._fetch_rotation = (self._fetch_rotation + 1) % len(states)
            states = states[self._fetch_rotation:] + states[:self._fetch_rotation]
        for tp, state in states:
            if not state.fetchable():
                continue
            node_id = self._fetch_target(tp, state, now)
            if node_id is None:
                partitions.want_metadata()
                continue
            nodes.add(node_id)  # backing-off partitions count too: their broker must be looked at again
            if state.next_retry > now:
                continue
            if node_id in in_flight:
                continue
            meta = cluster.partition(tp)
            leader_epoch = meta.leader_epoch if meta is not None else -1
            fetch_offset = state.fetch_offset
            assert fetch_offset is not None  # fetchable: FETCHING, entered only through seek(), which sets it
            wanted_by_node.setdefault(node_id, {})[tp] = (
                fetch_offset, leader_epoch, state.fetch_epoch, self.config["max_partition_fetch_bytes"])
        self._fetch_nodes = nodes
        partitions.planned()
        for node_id, wanted in wanted_by_node.items():
            node = link(node_id)
            if node is None:
                continue
            self._plan_fetch(node_id, node, wanted, now)

    def _plan_fetch(self, node_id: int, node: NodeLink, wanted: dict[TopicPartition, PartitionFetch],
                    now: float) -> None:
        version = min(_fetch_version(node), _backend.FETCH_MAX_VERSION)
        cluster = self.cluster
        if version >= 13 and any(cluster.topics.get(tp.topic) is None or cluster.topics[tp.topic].topic_id is None
                                 for tp in wanted):
            version = 12  # a topic without a known id: name-based Fetch
        session = self._sessions.get(node_id)
        if session is None:
            session = self._sessions[node_id] = FetchSession(
                node_id, self.config["enable_incremental_fetch_sessions"] and version >= 7)
        session_id, epoch, to_send, to_forget = session.build(wanted)
        topics: list[dict[str, Any]] = []
        by_topic: dict[str, dict[str, Any]] = {}
        use_ids = version >= 13
        for tp, (offset, leader_epoch, last_epoch, max_bytes) in to_send:
            entry = by_topic.get(tp.topic)
            if entry is None:
                entry = {"partitions": []}
                if use_ids:
                    entry["topic_id"] = cluster.topics[tp.topic].topic_id
                else:
                    entry["topic"] = tp.topic
                by_topic[tp.topic] = entry
                topics.append(entry)
            entry["partitions"].append({"partition": tp.partition, "current_leader_epoch": leader_epoch,
                                        "fetch_offset": offset, "last_fetched_epoch": last_epoch,
                                        "log_start_offset": -1, "partition_max_bytes": max_bytes})
        forgotten: dict[str, list[int]] = {}
        for tp in to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        forgotten_list: list[dict[str, Any]] = []
        for topic, parts in forgotten.items():
            item: dict[str, Any] = {"partitions": parts}
            if use_ids:
                meta = cluster.topics.get(topic)
                if meta is None or meta.topic_id is None:
                    session.reset()  # cannot name it: start over with a full session
                    continue
                item["topic_id"] = meta.topic_id
            else:
                item["topic"] = topic
            forgotten_list.append(item)
        body = {
            "replica_id": -1,
            "max_wait_ms": self.config["fetch_max_wait_ms"],
            "min_bytes": self.config["fetch_min_bytes"],
            "max_bytes": self.config["fetch_max_bytes"],
            "isolation_level": self._isolation,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": topics,
            "forgotten_topics_data": forgotten_list,
            "rack_id": self.config["client_rack"],
        }
        sent_offsets = {tp: data[0] for tp, data in wanted.items()}
        self._in_flight_nodes.add(node_id)
        sent_at = now

        def answered(result: Any, error: BaseException | None, now: float) -> ProtocolParseError | None:
            self._in_flight_nodes.discard(node_id)
            if error is not None:
                session.reset()
                self._reactions.retry_later(sent_offsets, now, error)
                return None
            if self.sensors is not None:
                self.sensors.fetch_latency.record((now - sent_at) * 1000.0)
            payload, used_version = result
            failure = self._handle_fetch_response(node_id, session, epoch, payload, used_version, sent_offsets, now)
            self._buffer.fetched()
            return failure

        self._requests.emit(node_id, "Fetch", body, answered, raw=True, version=version)
        self._metrics["fetch-total"] += 1

    def _handle_fetch_response(self, node_id: int, session: FetchSession, epoch_sent: int, payload: bytes | memoryview,
                               version: int, sent_offsets: dict[TopicPartition, int],
                               now: float) -> ProtocolParseError | None:
        try:
            response = _backend.parse_fetch_response(payload, version)
        except ProtocolParseError as exc:
            # the connection cannot be trusted: the driver applies the
            # client's parse-failure policy to what this returns
            session.reset()
            self._reactions.retry_later(sent_offsets, now)
            return exc
        sensors = self.sensors
        tally = None
        if sensors is not None:
            sensors.fetch_throttle.record(response.throttle_time_ms)
            tally = sensors.tally()
        if not session.handle_response(response.error_code, response.session_id, epoch_sent):
            log.debug("fetch session with broker %s reset: error %s", node_id, response.error_code)
            # asked again after retry_backoff_ms: a broker answering every
            # Fetch at once with an error must not be fetched from in a loop
            self._reactions.retry_later(sent_offsets, now, metadata=response.error_code not in codes.SESSION_ERRORS)
            return None
        names = self.cluster.topic_names_by_id
        partitions = self._partitions
        seen_data = False  # for "first partition with data in the response" (_NO_PROGRESS_LIMIT)
        # a full fetch (no session, or a new one) must answer every partition
        # it asked for; one left out is asked again after the backoff
        unanswered = set(sent_offsets) if epoch_sent in (FetchSession.INITIAL_EPOCH, FetchSession.FINAL_EPOCH) \
            else None
        for topic in response.topics:
            name = topic.topic if topic.topic is not None else (
                names.get(topic.topic_id) if topic.topic_id is not None else None)
            if name is None:
                partitions.want_metadata()
                continue
            if tally is not None:
                tally.add_topic(name)
            for part in topic.partitions:
                has_data = part.records is not None and len(part.records) > 0
                first_with_data = has_data and not seen_data
                seen_data = seen_data or has_data
                tp = TopicPartition(name, part.partition)
                if unanswered:
                    unanswered.discard(tp)
                state = partitions.states.get(tp)
                sent = sent_offsets.get(tp)
                if state is None:
                    continue
                if sent is None:
                    # an incremental response may answer for a session partition
                    # we did not resend: it answers the offset the session holds
                    held = session.partitions.get(tp)
                    sent = held[0] if held is not None else None
                if sent is None or state.fetch_offset != sent or not state.fetchable():
                    continue  # stale: sought, reset or paused since
                code = part.error_code
                if code != codes.NONE:
                    self._reactions.partition_error(tp, code, "Fetch", now, state=state)
                    continue
                state.highwater = part.high_watermark
                state.last_stable_offset = part.last_stable_offset
                state.fetched_at = now
                state.log_start_offset = part.log_start_offset
                if part.preferred_read_replica >= 0 and part.preferred_read_replica != node_id:
                    state.preferred_replica = part.preferred_read_replica
                    state.preferred_replica_until = now + self.config["metadata_max_age_ms"] / 1000.0
                diverging = part.diverging_epoch
                if diverging is not None and diverging[0] >= 0 and diverging[1] >= 0:
                    self._offsets.check_divergence(tp, diverging[0], diverging[1])
                    continue
                data = part.records
                if data is None or len(data) == 0:
                    continue
                self._buffer_fetched(state, tp, sent, data, part.aborted_transactions, tally, first_with_data, now)
        if tally is not None:
            tally.seal()
        if unanswered:
            log.debug("broker %s left %s out of a full fetch response", node_id, sorted(unanswered))
            self._reactions.retry_later(unanswered, now, metadata=False)
        return None

    def _buffer_fetched(self, state: PartitionState, tp: TopicPartition, sent: int, data: memoryview,
                        aborted: list[tuple[int, int]] | None, tally: "ResponseTally | None",
                        first_with_data: bool, now: float) -> None:
        info = fastkc_records.scan_blob(data)
        if info.tail == "malformed":
            # hand the bad bytes to the decoder (which raises the typed
            # error from poll, after the records before them); fetch
            # nothing more for this partition until that happened
            resume_at = sent if info.next_offset is None else max(sent, info.next_offset)
            completed = CompletedFetch(tp, sent, data, aborted, resume_at, info.leader_epoch, len(data))
            if tally is not None:
                tally.pending += 1
                completed.tally = tally
            self._buffer.add(state, completed)
            state.stalled = True
            return
        next_offset = info.next_offset
        if next_offset is None or next_offset <= sent:
            self._no_progress(state, tp, sent, data, info, first_with_data, now)
            return
        state.no_progress = 0
        complete = info.complete_bytes
        completed = CompletedFetch(tp, sent, data if complete == len(data) else data[:complete], aborted,
                                   next_offset, info.leader_epoch, complete)
        completed.slow_codec_bytes = info.slow_codec_bytes
        if tally is not None:
            tally.pending += 1
            completed.tally = tally
        self._buffer.add(state, completed)
        self._metrics["fetch-bytes-total"] += complete
        assert state.fetch_offset is not None  # the caller took this answer because it matched fetch_offset
        if next_offset > state.fetch_offset:
            state.fetch_offset = next_offset
            if info.leader_epoch >= 0:
                state.fetch_epoch = info.leader_epoch

    def _no_progress(self, state: PartitionState, tp: TopicPartition, sent: int, data: memoryview, info: ScanInfo,
                     first_with_data: bool, now: float) -> None:
        """Data that cannot advance the position: refetch, a bounded number of
        times (see _NO_PROGRESS_LIMIT for the rule and why)."""
        if info.next_offset is None:
            if not first_with_data:
                # a later partition's first batch, cut at the response's byte
                # limit: legitimate, fetched again when its turn comes
                if len(data) >= self.config["max_partition_fetch_bytes"]:
                    log.warning("%s: the batch at offset %s is larger than max_partition_fetch_bytes", tp, sent)
                return
            offset = info.tail_offset if info.tail_offset >= 0 else sent
            reason = ("the entry at offset {0} declares {1} bytes but the broker sent {2}, and it was the first "
                      "partition with data in its response, which Kafka always sends whole".format(
                          offset, info.tail_size, len(data)))
        else:
            offset = sent
            reason = ("the broker sent only batches below the fetch offset {0} (they end at offset {1})".format(
                sent, info.next_offset - 1))
        state.no_progress += 1
        log.warning("%s: %s (%d time(s) in a row)", tp, reason, state.no_progress)
        if state.no_progress >= _NO_PROGRESS_LIMIT:
            self._partitions.fail(FetchProgressError(
                reason + "; refetched {0} time(s) without progress".format(state.no_progress - 1),
                tp.topic, tp.partition, offset, [], offset + 1))
            state.next_retry = now + self._reactions.backoff

    # --- sessions ---------------------------------------------------------------------------
    def close_session_requests(self, link: Link) -> list[Request[int]]:
        """A Fetch with the final epoch to each broker holding a session of
        ours, as the Java client sends on close, so its session cache slot
        frees at once. The sessions are reset; the answers change nothing."""
        requests: list[Request[int]] = []
        for node_id, session in self._sessions.items():
            if session.session_id == 0 or node_id in self._in_flight_nodes:
                continue
            node = link(node_id)
            if node is None:
                continue
            body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": self.config["fetch_max_bytes"],
                    "isolation_level": self._isolation, "session_id": session.session_id,
                    "session_epoch": FetchSession.FINAL_EPOCH, "topics": [], "forgotten_topics_data": [],
                    "rack_id": self.config["client_rack"]}
            requests.append(self._requests.emit(node_id, "Fetch", body, lambda result, error, now: None, raw=True,
                                                version=min(_fetch_version(node), _backend.FETCH_MAX_VERSION),
                                                outbox=False))
            session.reset()
        return requests

    def on_node_lost(self, node_id: int) -> None:
        """The connection to node_id is gone (its in-flight answers arrive as
        errors): its fetch session starts over."""
        session = self._sessions.get(node_id)
        if session is not None:
            session.reset()
        self._in_flight_nodes.discard(node_id)


def _fetch_version(node: NodeLink) -> int:
    """The Fetch version a ready broker speaks; a broker that speaks none
    fastkc knows (older than Fetch v4) is refused with the typed error."""
    version = node.version_for("Fetch")
    if version is None:
        raise IncompatibleBrokerVersion("the broker speaks no Fetch version fastkc knows")
    return version
