"""The fetch path: positions, fetch sessions, per-leader fetches, pipelining,
offset resets and truncation detection. Python runs here once per FETCH (and
once per partition in it); every record is decoded and built in C by
fastkc.records.

Two offsets per partition:
- `position`: the next offset the application will be given (what
  KafkaConsumer.position() returns), advanced by poll().
- `fetch_offset`: the next offset to ask the broker for. As soon as a Fetch
  response is parsed, the decoder's own framing reads its entry headers
  (fastkc.records.scan_blob: C, no record touched) to find where the complete
  data ends, so the next Fetch can go on the wire before the application has
  even seen the records (pipelining). The fetcher has no batch-layout rules
  of its own. Buffered, undecoded responses are capped at fetch_max_bytes in
  total; past the cap no new Fetch is sent until poll() drains the buffer, so
  memory stays bounded under lag.

Decoding is lazy and resumable, per partition, at poll time, into records or
Arrow columns as the caller asks: each buffered fetch gets a decoder stream
(fastkc.records.record_stream, Java's CompletedFetch walk) that decompresses
a batch only when it is reached and hands out at most the records asked for,
within the memory budget of fastkc.config.decode_budget(). poll() keeps
draining the partition whose fetch it left mid-way before it starts another
(`_in_line`), so one partition's decoded batch is alive at a time.

Invariant: a partition's buffered fetches are contiguous and start at its
position; every seek, reset or truncation clears them and sets
fetch_offset = position, and a response is accepted only if it answers the
fetch_offset the partition still has (anything else is stale and dropped).

Fetch sessions (KIP-227): one FetchSession per broker; the first Fetch is full
(epoch 0) and creates the session, later ones send only the partitions whose
fetch state changed, plus the ones to forget. Any session error, or a lost
connection, starts a new full session.

Truncation (KIP-320), as the Java client does: after a leader change the
position is validated with OffsetForLeaderEpoch before fetching resumes, and a
Fetch (v12+) may report a diverging epoch directly. If the leader's log ends
below the position for the position's epoch, the position moves to that end
offset — or, with auto_offset_reset='none', LogTruncationError is raised from
poll.
"""
import logging
from collections import deque

from fastkc import records as fastkc_records
from fastkc.config import decode_budget
from fastkc.decode_worker import DecodeWorker
from fastkc.errors import (
    CorruptRecordError,
    FetchProgressError,
    KafkaProtocolError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    ProtocolParseError,
    TopicAuthorizationFailedError,
    for_code,
)
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

try:
    from fastkc import _backend

    if _backend.name == "c":
        from fastkc._core.fetch import parse_fetch_response as _parse_fetch_c
    else:
        _parse_fetch_c = None
except ImportError:  # pragma: no cover - _backend announces a missing core itself
    _parse_fetch_c = None

# Error codes handled by the fetch path (Kafka's Errors enum).
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REPLICA_NOT_AVAILABLE = 9
KAFKA_STORAGE_ERROR = 56
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
OFFSET_NOT_AVAILABLE = 78
UNKNOWN_TOPIC_ID = 100
INCONSISTENT_TOPIC_ID = 103
FETCH_SESSION_TOPIC_ID_ERROR = 106
TOPIC_AUTHORIZATION_FAILED = 29

# Errors after which the leader is probably elsewhere: refresh metadata now.
METADATA_ERRORS = frozenset((UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE,
                             KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, OFFSET_NOT_AVAILABLE,
                             UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID))
SESSION_ERRORS = frozenset((FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR))

EARLIEST = -2
LATEST = -1
_RESET_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}

_NO_EPOCH = -1


# poll() decodes a fetched blob in steps of at most this many records instead
# of all at once. Why: ~8,000 ConsumerRecords of one 1 MB blob fill several
# of CPython's 1 MiB object arenas, which are all emptied when the blob is
# used up, handed back to the OS (only one empty arena is kept) and mapped
# again, page by page, by the next decode: on the 2 M x 100 B benchmark that
# was ~100,000 of the run's ~195,000 page faults. A step's records (~1,000,
# under one arena) are mostly freed before the next step is built, so the
# same arena memory is reused while it is mapped and in cache. Measured there
# with pieces of whole batches (perf stat, 3 runs each): 1024 → ~80 k page
# faults, 0.40-0.48 CPU-s; 2048 → ~106 k, 0.45-0.54; 4096 → ~151 k,
# 0.51-0.59; whole blobs → ~193 k, 0.58-0.66.
_STEP_RECORDS = 1024

# The decode worker (decode_threads=1, fastkc/decode_worker.py) prepares a
# stream's next step of up to this many records (~1.3 MB of descriptors; a
# whole 1 MiB fetch of 100-byte records is ~9,500): one thread hand-off
# (tens of us) per fetch, not per poll. poll() still builds objects in
# pieces of _STEP_RECORDS from it.
_PREPARE_RECORDS = 16384
# Streams with a step prepared or in preparation at once: the partition
# poll() is draining and the next one in line. Each prepared step holds at
# most half the per-step decompressed budget (plus its open batch), so the
# two together stay within what one step may hold today.
_PREPARE_AHEAD = 2
_ARROW_STEP_MAX = 1 << 62  # poll_arrow without max_records: no count limit

# A response whose data for a partition cannot advance its position (no
# complete entry, or only batches below the fetch offset) is refetched, but
# not forever. Kafka sends the first batch of the first partition with data
# in a response whole, even past every byte limit (KIP-74: the broker reads
# with minOneMessage until one partition returned data), so only a later
# partition's first batch can be legitimately cut — and those partitions take
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


class CompletedFetch:
    """One partition's data from one Fetch response, parsed; decoded lazily
    through a decoder stream (see module docstring)."""

    __slots__ = ("tp", "fetch_offset", "data", "aborted", "next_offset", "leader_epoch", "nbytes", "stream",
                 "form", "tally", "records_out")

    def __init__(self, tp, fetch_offset, data, aborted, next_offset, leader_epoch, nbytes):
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
        self.stream = None
        self.form = None
        # metrics: the response's ResponseTally (None when metrics are off)
        # and the records handed out from this fetch, added per step
        self.tally = None
        self.records_out = 0


class PartitionState:
    __slots__ = ("tp", "position", "position_epoch", "fetch_offset", "fetch_epoch", "paused", "reset_strategy",
                 "awaiting_validation", "validation_in_flight", "highwater", "last_stable_offset",
                 "log_start_offset", "buffered", "preferred_replica", "preferred_replica_until", "reset_in_flight",
                 "next_retry", "stalled", "no_progress")

    def __init__(self, tp):
        self.tp = tp
        self.position = None
        self.position_epoch = _NO_EPOCH
        self.fetch_offset = None
        self.fetch_epoch = _NO_EPOCH
        self.paused = False
        self.reset_strategy = None  # 'earliest' / 'latest' while a reset is due
        self.awaiting_validation = False
        self.validation_in_flight = False
        self.reset_in_flight = False
        self.highwater = None
        self.last_stable_offset = None
        self.log_start_offset = None
        self.buffered = deque()
        self.preferred_replica = None
        self.preferred_replica_until = 0.0
        self.next_retry = 0.0
        # a malformed batch is buffered: no fetch until poll() raised its error
        self.stalled = False
        # consecutive responses that could not advance the position (_NO_PROGRESS_LIMIT)
        self.no_progress = 0

    def fetchable(self):
        return (not self.paused and self.position is not None and self.reset_strategy is None
                and not self.awaiting_validation and not self.stalled)

    def seek(self, offset, epoch=_NO_EPOCH):
        self.position = offset
        self.position_epoch = epoch
        self.fetch_offset = offset
        self.fetch_epoch = epoch
        self.reset_strategy = None
        self.awaiting_validation = False
        self.stalled = False
        self.no_progress = 0
        self.buffered.clear()


class FetchSession:
    """The client side of one broker's incremental fetch session (KIP-227)."""

    INITIAL_EPOCH = 0
    FINAL_EPOCH = -1

    def __init__(self, node_id, incremental):
        self.node_id = node_id
        self.incremental = incremental
        self.session_id = 0
        self.epoch = self.INITIAL_EPOCH
        self.partitions = {}  # tp -> the fetch state the broker's session holds

    def build(self, wanted):
        """wanted: {tp: (fetch_offset, leader_epoch, last_fetched_epoch,
        max_bytes)} in fetch order. Returns (session_id, epoch, to_send,
        to_forget), to_send in the same order."""
        if not self.incremental:
            return 0, self.FINAL_EPOCH, list(wanted.items()), []
        if self.session_id == 0 or self.epoch == self.INITIAL_EPOCH:
            self.partitions = dict(wanted)
            return self.session_id, self.INITIAL_EPOCH, list(wanted.items()), []
        to_send = [(tp, data) for tp, data in wanted.items() if self.partitions.get(tp) != data]
        to_forget = [tp for tp in self.partitions if tp not in wanted]
        for tp in to_forget:
            del self.partitions[tp]
        for tp, data in to_send:
            self.partitions[tp] = data
        return self.session_id, self.epoch, to_send, to_forget

    def handle_response(self, error_code, session_id, epoch_sent):
        """Advance the session after a response (True) or reset it after a
        session error (False)."""
        if not self.incremental:
            return True
        if error_code in SESSION_ERRORS or error_code != NONE:
            self.reset()
            return False
        if epoch_sent == self.INITIAL_EPOCH:
            if session_id == 0:  # the broker would not create a session: full fetches again
                self.reset()
            else:
                self.session_id = session_id
                self.epoch = 1
        else:
            self.epoch = self.epoch + 1 if self.epoch < 0x7FFFFFFF else 1
        return True

    def reset(self):
        self.session_id = 0
        self.epoch = self.INITIAL_EPOCH
        self.partitions = {}

    def partitions_in_session(self):
        return set(self.partitions)


class Fetcher:
    def __init__(self, client, config, *, clock=None):
        self.client = client
        self.config = config
        self._clock = clock or client._clock
        self.states = {}  # tp -> PartitionState, in assignment order
        self._sessions = {}  # node_id -> FetchSession
        self._in_flight_nodes = set()
        self._buffered_bytes = 0
        self._pending_error = None
        self._next_partition = 0  # round-robin start for poll
        self._isolation = 1 if config["isolation_level"] == "read_committed" else 0
        self.metrics = {"fetch-total": 0, "records-consumed-total": 0, "bytes-consumed-total": 0,
                        "fetch-bytes-total": 0, "offset-validations-total": 0}
        # the windowed metrics (fastkc.metrics.ConsumerMetrics), set by the
        # consumer unless metrics_enabled=False; fed per response and per step
        self.sensors = None
        self._leader_epochs_seen = {}  # tp -> the newest leader epoch metadata showed
        self._fetch_nodes = None  # brokers the last full fetch pass fetched from (None: look again)
        self._fetch_rotation = 0
        # the decoding budget (fastkc.config.decode_budget): per-batch
        # decompressed bytes and records, decompressed bytes held per step
        self._max_decompressed, self._max_batch_records, self._max_held = decode_budget(config)
        self._arrow_zero_copy = bool(config.get("arrow_zero_copy", False))
        self._in_line = None  # the partition whose buffered fetch poll() left mid-way: drained first
        # the decode worker (decode_threads=1); only the compiled core's
        # streams can prepare a step off the polling thread
        self._worker = None
        if config.get("decode_threads", 0) and hasattr(getattr(fastkc_records._backend.impl, "RecordStream", None),
                                                       "prepare"):
            self._worker = DecodeWorker()
        self._prepare_held = max(1, self._max_held // _PREPARE_AHEAD)
        # record steps poll() took from a step the worker had prepared, had
        # to wait for (the worker was on it), or decoded itself
        self.decode_steps = {"prepared": 0, "waited": 0, "inline": 0}
        # poll_arrow() was called last: no record streams are prepared for
        # fetches as they arrive (the Arrow form would start its own)
        self._records_form = True
        client.on_disconnect.append(self._node_lost)
        client.metadata_listeners.append(self._metadata_updated)

    # --- assignment and positions ----------------------------------------------------
    def assign(self, partitions):
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

    def state(self, tp):
        return self.states[tp]

    def seek(self, tp, offset, epoch=_NO_EPOCH):
        self._replan()
        state = self.states[tp]
        self._drop_buffered(state)
        state.seek(offset, epoch)

    def request_reset(self, tp, strategy):
        self._replan()
        state = self.states[tp]
        self._drop_buffered(state)
        state.reset_strategy = strategy
        state.position = None
        state.fetch_offset = None
        state.awaiting_validation = False

    def _drop_buffered(self, state):
        for completed in state.buffered:
            self._buffered_bytes -= completed.nbytes
            if completed.tally is not None:
                # dropped, not consumed: its bytes do not count, the records
                # handed out from it before do (kafka-python's drain())
                completed.tally.done(state.tp.topic, 0, completed.records_out)
        state.buffered.clear()
        if self._in_line == state.tp:
            self._in_line = None
        state.stalled = False
        self._replan()
        if state.position is not None:
            state.fetch_offset = state.position
            state.fetch_epoch = state.position_epoch

    def _ensure_reset_strategies(self):
        """Partitions without a position get the auto_offset_reset policy
        (there are no committed offsets without a group)."""
        policy = self.config["auto_offset_reset"]
        for tp, state in self.states.items():
            if state.position is None and state.reset_strategy is None:
                if policy == "none":
                    raise NoOffsetForPartitionError("no position for {0} and auto_offset_reset='none'".format(tp))
                state.reset_strategy = policy

    # --- the cycle: called from every client poll ---------------------------------------
    def send_requests(self):
        """Send offset resets, validations and fetches that are due. Raises the
        NoOffsetForPartitionError of a partition without position under 'none'."""
        self._ensure_reset_strategies()
        self._send_resets()
        self._send_validations()
        self._send_fetches()

    def _leader_ready(self, tp):
        leader = self.client.cluster.leader_for(tp)
        if leader is None:
            self.client.request_metadata_update()
            return None
        return leader if self.client.ready(leader) else None

    # --- offset resets (ListOffsets) --------------------------------------------------------
    def _send_resets(self):
        now = self._clock()
        by_node = {}
        for tp, state in self.states.items():
            if state.reset_strategy is None or state.reset_in_flight or state.next_retry > now:
                continue
            leader = self._leader_ready(tp)
            if leader is None:
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            strategies = {tp: self.states[tp].reset_strategy for tp in tps}
            body = self._list_offsets_body({tp: _RESET_TIMESTAMPS[strategies[tp]] for tp in tps})
            for tp in tps:
                self.states[tp].reset_in_flight = True

            def answered(response, error, strategies=strategies):
                for tp in strategies:
                    if tp in self.states:
                        self.states[tp].reset_in_flight = False
                if error is not None:
                    self._retry_later(strategies, error)
                    return
                unanswered = set(strategies)
                for tp, code, offset, epoch, _ in _list_offsets_results(response):
                    unanswered.discard(tp)
                    state = self.states.get(tp)
                    if state is None or state.reset_strategy != strategies.get(tp):
                        continue  # unassigned or sought meanwhile
                    if code != NONE:
                        self._partition_error(tp, code, "ListOffsets")
                        state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0
                        continue
                    state.seek(offset, epoch)
                    self._replan()
                if unanswered:  # left out by the broker: asked again after the backoff, not at once
                    self._retry_later(unanswered, metadata=False)

            self.client.send(node_id, "ListOffsets", body, answered)

    def _retry_later(self, tps, error=None, metadata=True):
        if isinstance(error, KafkaProtocolError) and not error.retriable:
            # the client's parse-failure limit was reached (or the broker's
            # framing is broken): poll() raises it; the retry stays backed off
            self._pending_error = error
        self._replan()
        until = self._clock() + self.config["retry_backoff_ms"] / 1000.0
        for tp in tps:
            state = self.states.get(tp)
            if state is not None:
                state.next_retry = until
        if metadata:
            self.client.request_metadata_update()

    def _list_offsets_body(self, timestamps):
        topics = {}
        cluster = self.client.cluster
        for tp, ts in timestamps.items():
            meta = cluster.partition(tp)
            epoch = meta.leader_epoch if meta is not None else -1
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "current_leader_epoch": epoch, "timestamp": ts})
        return {"replica_id": -1, "isolation_level": self._isolation,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "timeout_ms": self.config["request_timeout_ms"]}

    def list_offsets(self, timestamps, timeout_ms):
        """Blocking ListOffsets: {tp: timestamp} → {tp: (offset, timestamp,
        leader_epoch)}, retried on retriable errors until timeout_ms."""
        deadline = self._clock() + timeout_ms / 1000.0
        results = {}
        remaining_tps = dict(timestamps)
        cluster = self.client.cluster
        looked_up_metadata = False
        while remaining_tps:
            missing = [tp for tp in remaining_tps if cluster.leader_for(tp) is None]
            if missing:
                # A partition with no known leader, even one past its topic's
                # count, may yet appear (partitions added, topic created,
                # leader elected): as kafka-python and the Java client do,
                # refresh metadata every retry_backoff_ms until timeout_ms,
                # then KafkaTimeoutError naming them.
                self.client.add_topics({tp.topic for tp in missing})
                if looked_up_metadata:
                    self._back_off(deadline, timeout_ms, missing)
                self._wait_metadata(deadline, timeout_ms, missing)
                looked_up_metadata = True
                continue
            by_node = {}
            for tp, ts in remaining_tps.items():
                by_node.setdefault(cluster.leader_for(tp), {})[tp] = ts
            retry = False
            for node_id, part in by_node.items():
                left = self._time_left(deadline, timeout_ms)
                try:
                    response = self.client.request("ListOffsets", self._list_offsets_body(part), left * 1000.0,
                                                   node_id=node_id)
                except KafkaTimeoutError:
                    raise
                except Exception as exc:
                    if getattr(exc, "retriable", False):
                        retry = True
                        continue
                    raise
                answered = set()
                for tp, code, offset, epoch, ts in _list_offsets_results(response):
                    if tp not in part:
                        continue
                    answered.add(tp)
                    if code != NONE:
                        error = for_code(code)
                        if error.retriable or code in METADATA_ERRORS:
                            retry = True
                            continue
                        raise error("ListOffsets for {0}".format(tp))
                    results[tp] = (offset, ts, epoch)
                    del remaining_tps[tp]
                if answered != set(part):
                    retry = True  # the broker left partitions out: ask again, after the backoff
            if retry and remaining_tps:
                # paced by retry_backoff_ms: a broker that keeps answering
                # without the partitions must not be asked in a tight loop
                pause = min(self.config["retry_backoff_ms"] / 1000.0, max(0.0, deadline - self._clock()))
                end = self._clock() + pause
                while self._clock() < end:
                    self.client.poll(end - self._clock())
                self.client.request_metadata_update()
                self._wait_metadata(deadline, timeout_ms)
        return results

    def _wait_metadata(self, deadline, timeout_ms, missing=()):
        left = self._time_left(deadline, timeout_ms, missing)
        try:
            self.client.wait_for_metadata(left * 1000.0)
        except KafkaTimeoutError:
            self._time_left(self._clock(), timeout_ms, missing)  # the same message as any other expiry
            raise

    def _back_off(self, deadline, timeout_ms, missing):
        left = self._time_left(deadline, timeout_ms, missing)
        until = self._clock() + min(left, self.config["retry_backoff_ms"] / 1000.0)
        while self._clock() < until:
            self.client.poll(until - self._clock())

    def _time_left(self, deadline, timeout_ms, missing=()):
        left = deadline - self._clock()
        if left <= 0:
            detail = "; no leader known for {0}".format(sorted(missing)) if missing else ""
            raise KafkaTimeoutError("ListOffsets did not complete within {0} ms{1}".format(timeout_ms, detail))
        return left

    # --- validation after leader changes (KIP-320) --------------------------------------------
    def _metadata_updated(self):
        self._replan()
        cluster = self.client.cluster
        for tp, state in self.states.items():
            meta = cluster.partition(tp)
            if meta is None or meta.leader_epoch < 0:
                continue
            # Java's rule: a new leader epoch means the position must be
            # validated against the new leader's log before fetching resumes
            changed = self._epoch_changed(tp, meta.leader_epoch)
            if changed and state.position is not None and state.position_epoch >= 0 \
                    and not state.awaiting_validation and state.reset_strategy is None:
                state.awaiting_validation = True
                self._drop_buffered(state)

    def _epoch_changed(self, tp, epoch):
        # stale metadata (an older epoch from a lagging broker) is ignored
        seen = self._leader_epochs_seen.get(tp)
        if seen is None or epoch > seen:
            self._leader_epochs_seen[tp] = epoch
        return seen is not None and epoch > seen

    def _send_validations(self):
        now = self._clock()
        by_node = {}
        for tp, state in self.states.items():
            if not state.awaiting_validation or state.validation_in_flight or state.next_retry > now:
                continue
            leader = self._leader_ready(tp)
            if leader is None:
                continue
            conn = self.client.connection(leader)
            if conn is None or conn.api_versions.get(23) is None:
                state.awaiting_validation = False  # the broker cannot tell: trust the position
                continue
            by_node.setdefault(leader, []).append(tp)
        for node_id, tps in by_node.items():
            topics = {}
            requested = {}
            for tp in tps:
                state = self.states[tp]
                meta = self.client.cluster.partition(tp)
                topics.setdefault(tp.topic, []).append({"partition": tp.partition,
                                                        "current_leader_epoch": meta.leader_epoch,
                                                        "leader_epoch": state.position_epoch})
                state.validation_in_flight = True
                requested[tp] = (state.position, state.position_epoch)
            body = {"replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
            log.debug("validating positions of %s with broker %s (OffsetForLeaderEpoch)", sorted(requested), node_id)
            self.metrics["offset-validations-total"] += len(requested)

            def answered(response, error, requested=requested):
                for tp in requested:
                    if tp in self.states:
                        self.states[tp].validation_in_flight = False
                if error is not None:
                    self._retry_later(requested, error)
                    return
                unanswered = set(requested)
                for topic in response["topics"]:
                    for p in topic["partitions"]:
                        tp = TopicPartition(topic["topic"], p["partition"])
                        unanswered.discard(tp)
                        state = self.states.get(tp)
                        if state is None or requested.get(tp) != (state.position, state.position_epoch) or \
                                not state.awaiting_validation:
                            continue
                        if p["error_code"] != NONE:
                            self._partition_error(tp, p["error_code"], "OffsetForLeaderEpoch")
                            state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0
                            continue
                        state.awaiting_validation = False
                        self._check_divergence(tp, p["leader_epoch"], p["end_offset"])  # replans
                if unanswered:  # left out by the broker: asked again after the backoff, not at once
                    self._retry_later(unanswered, metadata=False)

            self.client.send(node_id, "OffsetForLeaderEpoch", body, answered)

    def _check_divergence(self, tp, epoch, end_offset):
        """The leader's log for the position's epoch ends at end_offset."""
        self._replan()
        state = self.states[tp]
        if end_offset < 0 or epoch < 0:
            return  # the broker does not know the epoch: nothing to compare (Java: validated)
        if state.position is not None and end_offset < state.position:
            if self.config["auto_offset_reset"] == "none":
                self._drop_buffered(state)
                self._pending_error = LogTruncationError(
                    "log of {0} truncated: position {1} (epoch {2}) is past the leader's end offset {3} for epoch {4}"
                    .format(tp, state.position, state.position_epoch, end_offset, epoch))
                state.awaiting_validation = True  # stays unfetchable until the application seeks
                return
            log.info("truncation detected for %s: position %s moves to %s", tp, state.position, end_offset)
            self._drop_buffered(state)
            state.seek(end_offset, epoch)
        elif state.fetch_offset is not None and end_offset < state.fetch_offset:
            self._drop_buffered(state)  # data buffered past the end of the true log: fetch again

    # --- fetches ------------------------------------------------------------------------------
    def _fetch_target(self, tp, state):
        """The broker to fetch tp from: the preferred read replica (KIP-392)
        while its lease lasts, else the leader."""
        if state.preferred_replica is not None:
            if self._clock() < state.preferred_replica_until and \
                    state.preferred_replica in self.client.cluster.brokers:
                return state.preferred_replica
            state.preferred_replica = None
        return self.client.cluster.leader_for(tp)

    def _replan(self):
        """Something changed which brokers partitions are fetched from (or
        whether they can be): the next _send_fetches looks at every partition."""
        self._fetch_nodes = None

    def _send_fetches(self):
        if self._buffered_bytes >= self.config["fetch_max_bytes"]:
            return  # bounded memory: wait until poll() drains the buffer
        in_flight = self._in_flight_nodes
        if in_flight and self._fetch_nodes is not None and self._fetch_nodes <= in_flight:
            return  # every broker we fetch from already has a fetch on the wire (the common case per poll)
        now = self._clock()
        cluster = self.client.cluster
        wanted_by_node = {}
        nodes = set()
        # Rotate the order partitions are asked in, as the Java client does:
        # the broker fills fetch_max_bytes in request order, so a fixed order
        # could starve the partitions at the end.
        states = list(self.states.items())
        if states:
            self._fetch_rotation = (self._fetch_rotation + 1) % len(states)
            states = states[self._fetch_rotation:] + states[:self._fetch_rotation]
        for tp, state in states:
            if not state.fetchable():
                continue
            node_id = self._fetch_target(tp, state)
            if node_id is None:
                self.client.request_metadata_update()
                continue
            nodes.add(node_id)  # backing-off partitions count too: their broker must be looked at again
            if state.next_retry > now:
                continue
            if node_id in in_flight:
                continue
            meta = cluster.partition(tp)
            leader_epoch = meta.leader_epoch if meta is not None else -1
            wanted_by_node.setdefault(node_id, {})[tp] = (
                state.fetch_offset, leader_epoch, state.fetch_epoch, self.config["max_partition_fetch_bytes"])
        self._fetch_nodes = nodes
        for node_id, wanted in wanted_by_node.items():
            if not self.client.ready(node_id):
                continue
            self._send_fetch(node_id, wanted)

    def _send_fetch(self, node_id, wanted):
        conn = self.client.connection(node_id)
        version = conn.version_for("Fetch")
        cluster = self.client.cluster
        if version >= 13 and any(cluster.topics.get(tp.topic) is None or cluster.topics[tp.topic].topic_id is None
                                 for tp in wanted):
            version = 12  # a topic without a known id: name-based Fetch
        if _parse_fetch_c is not None:
            from fastkc._core.fetch import MAX_VERSION

            version = min(version, MAX_VERSION)
        session = self._sessions.get(node_id)
        if session is None:
            session = self._sessions[node_id] = FetchSession(
                node_id, self.config["enable_incremental_fetch_sessions"] and version >= 7)
        session_id, epoch, to_send, to_forget = session.build(wanted)
        topics = []
        by_topic = {}
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
        forgotten = {}
        for tp in to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        forgotten_list = []
        for topic, parts in forgotten.items():
            item = {"partitions": parts}
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
        sent_at = self._clock()

        def answered(result, error):
            self._in_flight_nodes.discard(node_id)
            if error is not None:
                session.reset()
                self._retry_later(sent_offsets, error)
                return
            if self.sensors is not None:
                self.sensors.fetch_latency.record((self._clock() - sent_at) * 1000.0)
            payload, used_version = result
            self._handle_fetch_response(node_id, session, epoch, payload, used_version, sent_offsets)
            if self._worker is not None and self._records_form:
                # new data: its first steps can be prepared while this thread
                # goes on (poll() may still be handing out older data)
                self._prepare_ahead(self.config["key_deserializer"], self.config["value_deserializer"])

        self.client.send(node_id, "Fetch", body, answered, raw=True, version=version)
        self.metrics["fetch-total"] += 1

    def _handle_fetch_response(self, node_id, session, epoch_sent, payload, version, sent_offsets):
        try:
            response = parse_fetch(payload, version)
        except ProtocolParseError as exc:  # the connection cannot be trusted: the client's policy
            session.reset()
            conn = self.client.connection(node_id)
            error = self.client.parse_failed(conn, "Fetch", exc) if conn is not None else exc
            self._retry_later(sent_offsets, error)
            return
        conn = self.client.connection(node_id)
        if conn is not None:
            self.client.parse_ok(conn, "Fetch")
        sensors = self.sensors
        tally = None
        if sensors is not None:
            sensors.fetch_throttle.record(response.throttle_time_ms)
            tally = sensors.tally()
        if not session.handle_response(response.error_code, response.session_id, epoch_sent):
            log.debug("fetch session with broker %s reset: error %s", node_id, response.error_code)
            # asked again after retry_backoff_ms: a broker answering every
            # Fetch at once with an error must not be fetched from in a loop
            self._retry_later(sent_offsets, metadata=response.error_code not in SESSION_ERRORS)
            return
        names = self.client.cluster.topic_names_by_id
        now = self._clock()
        seen_data = False  # for "first partition with data in the response" (_NO_PROGRESS_LIMIT)
        # a full fetch (no session, or a new one) must answer every partition
        # it asked for; one left out is asked again after the backoff
        unanswered = set(sent_offsets) if epoch_sent in (FetchSession.INITIAL_EPOCH, FetchSession.FINAL_EPOCH) \
            else None
        for topic in response.topics:
            name = topic.topic if topic.topic is not None else names.get(topic.topic_id)
            if name is None:
                self.client.request_metadata_update()
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
                state = self.states.get(tp)
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
                if code != NONE:
                    self._partition_error(tp, code, "Fetch", state=state)
                    continue
                state.highwater = part.high_watermark
                state.last_stable_offset = part.last_stable_offset
                state.log_start_offset = part.log_start_offset
                if part.preferred_read_replica >= 0 and part.preferred_read_replica != node_id:
                    state.preferred_replica = part.preferred_read_replica
                    state.preferred_replica_until = now + self.config["metadata_max_age_ms"] / 1000.0
                diverging = part.diverging_epoch
                if diverging is not None and diverging[0] >= 0 and diverging[1] >= 0:
                    self._check_divergence(tp, diverging[0], diverging[1])
                    continue
                data = part.records
                if data is None or len(data) == 0:
                    continue
                info = fastkc_records.scan_blob(data)
                if info.tail == "malformed":
                    # hand the bad bytes to the decoder (which raises the typed
                    # error from poll, after the records before them); fetch
                    # nothing more for this partition until that happened
                    next_offset = sent if info.next_offset is None else max(sent, info.next_offset)
                    completed = CompletedFetch(tp, sent, data, part.aborted_transactions, next_offset,
                                               info.leader_epoch, len(data))
                    if tally is not None:
                        tally.pending += 1
                        completed.tally = tally
                    state.buffered.append(completed)
                    self._buffered_bytes += len(data)
                    state.stalled = True
                    continue
                next_offset = info.next_offset
                if next_offset is None or next_offset <= sent:
                    self._no_progress(state, tp, sent, data, info, first_with_data)
                    continue
                state.no_progress = 0
                complete = info.complete_bytes
                completed = CompletedFetch(tp, sent, data if complete == len(data) else data[:complete],
                                           part.aborted_transactions, next_offset, info.leader_epoch, complete)
                if tally is not None:
                    tally.pending += 1
                    completed.tally = tally
                state.buffered.append(completed)
                self._buffered_bytes += complete
                self.metrics["fetch-bytes-total"] += complete
                if next_offset > state.fetch_offset:
                    state.fetch_offset = next_offset
                    if info.leader_epoch >= 0:
                        state.fetch_epoch = info.leader_epoch
        if tally is not None:
            tally.seal()
        if unanswered:
            log.debug("broker %s left %s out of a full fetch response", node_id, sorted(unanswered))
            self._retry_later(unanswered, metadata=False)

    def _no_progress(self, state, tp, sent, data, info, first_with_data):
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
            self._pending_error = FetchProgressError(
                reason + "; refetched {0} time(s) without progress".format(state.no_progress - 1),
                tp.topic, tp.partition, offset, [], offset + 1)
            state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0

    def _partition_error(self, tp, code, what, state=None):
        self._replan()
        state = state or self.states.get(tp)
        if code == OFFSET_OUT_OF_RANGE and state is not None:
            policy = self.config["auto_offset_reset"]
            if policy == "none":
                self._pending_error = OffsetOutOfRangeError(
                    "{0}: fetch offset {1} is out of range and auto_offset_reset='none'".format(tp, state.fetch_offset))
                state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0
                return
            log.info("%s: offset %s out of range, resetting to %s", tp, state.fetch_offset, policy)
            self.request_reset(tp, policy)
            return
        if code == TOPIC_AUTHORIZATION_FAILED:
            self._pending_error = TopicAuthorizationFailedError("{0} for {1}".format(what, tp))
            return
        if code in METADATA_ERRORS:
            if state is not None:
                state.preferred_replica = None
            self.client.request_metadata_update()
        else:
            log.warning("%s for %s: %s", what, tp, for_code(code).__name__)
        if state is not None:
            state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0

    def close_sessions(self):
        """Ask each broker to drop our fetch session (a Fetch with the final
        epoch, as the Java client sends on close) so its session cache slot
        frees at once. Returns the set of brokers asked; each leaves the set
        when it answers (the caller may poll for that, never must)."""
        pending = set()
        for node_id, session in self._sessions.items():
            if session.session_id == 0 or node_id in self._in_flight_nodes or not self.client.is_connected(node_id):
                continue
            conn = self.client.connection(node_id)
            if conn is None or not conn.can_send():
                continue
            version = conn.version_for("Fetch")
            body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": self.config["fetch_max_bytes"],
                    "isolation_level": self._isolation, "session_id": session.session_id,
                    "session_epoch": FetchSession.FINAL_EPOCH, "topics": [], "forgotten_topics_data": [],
                    "rack_id": self.config["client_rack"]}
            pending.add(node_id)
            self.client.send(node_id, "Fetch", body, lambda result, error, n=node_id: pending.discard(n),
                             raw=True, version=version)
            session.reset()
        return pending

    def _node_lost(self, node_id):
        session = self._sessions.get(node_id)
        if session is not None:
            session.reset()
        self._in_flight_nodes.discard(node_id)

    # --- handing records to the application ------------------------------------------------------
    def raise_pending(self):
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error

    def has_buffered(self):
        return any(s.buffered and not s.paused for s in self.states.values())

    def buffered_bytes(self):
        return self._buffered_bytes

    def _ordered_states(self):
        states = list(self.states.values())
        if not states:
            return states
        start = self._next_partition % len(states)
        self._next_partition = start + 1
        states = states[start:] + states[:start]
        # The fetch poll() left mid-way is drained first (Java's
        # nextInLineFetch): one partition's decoded batch is alive at a time.
        in_line = self.states.get(self._in_line) if self._in_line is not None else None
        if in_line is not None and in_line.buffered and states[0] is not in_line:
            states.remove(in_line)
            states.insert(0, in_line)
        return states

    def _stop_at_bad_batch(self, state, exc, handed_out_to, advance=True):
        """After a CorruptRecordError: drop what is buffered, move the position
        past the records already handed out (`handed_out_to`: the offset after
        the last, or None) to the bad batch, and fetch again from there after
        retry_backoff_ms — the records before it are delivered, the error
        surfaces next, nothing is skipped."""
        self._drop_buffered(state)
        if advance:
            if handed_out_to is not None:
                state.position = handed_out_to
            bad_offset = getattr(exc, "offset", None)
            if bad_offset is not None and bad_offset > state.position:
                state.position = bad_offset
        state.fetch_offset = state.position
        state.next_retry = self._clock() + self.config["retry_backoff_ms"] / 1000.0

    def _stream(self, state, completed, form, key_deserializer=None, value_deserializer=None):
        """The decoder stream of `completed` for `form`, started from the
        position when there is none for that form yet; None (and the buffer
        dropped) when the fetch is not contiguous with the position."""
        if completed.stream is not None and completed.form == form:
            return completed.stream
        if completed.stream is None and completed.fetch_offset != state.position:
            self._drop_buffered(state)  # stale: fetch again
            return None
        config = self.config
        tp = completed.tp
        completed.stream = fastkc_records.record_stream(
            completed.data, topic=tp.topic, partition=tp.partition, fetch_offset=state.position,
            check_crcs=config["check_crcs"], isolation_level=config["isolation_level"],
            aborted_transactions=completed.aborted or (), key_deserializer=key_deserializer,
            value_deserializer=value_deserializer, max_decompressed_bytes=self._max_decompressed,
            max_batch_records=self._max_batch_records, arrow=form == "arrow")
        completed.form = form
        completed.fetch_offset = state.position
        return completed.stream

    @staticmethod
    def _resume_at(stream, completed, done):
        # A used-up fetch moves the position past its last complete entry
        # even when the decoder's next offset is lower: a legacy wrapper's
        # offset is its last inner offset by definition (Java's
        # batch.nextOffset()), whatever offsets a hostile wrapper holds
        # inside, and this is where the next fetch was pipelined from.
        if done:
            return max(stream.next_offset, completed.next_offset)
        return stream.next_offset

    def _used_up(self, state, completed):
        state.buffered.popleft()
        self._buffered_bytes -= completed.nbytes
        self.metrics["bytes-consumed-total"] += completed.nbytes
        if completed.tally is not None:
            completed.tally.done(state.tp.topic, completed.nbytes, completed.records_out)
        if self._in_line == state.tp:
            self._in_line = None

    def fetched_records(self, max_records, update_offsets=True, key_deserializer=None, value_deserializer=None):
        """{tp: [ConsumerRecord]} of up to max_records buffered records. A
        CorruptRecordError is raised after the records before the bad batch
        were returned (here, or by the next call when some were returned)."""
        self._records_form = True
        out = {}
        remaining = max_records
        for state in self._ordered_states():
            if remaining <= 0:
                break
            if state.paused or not state.buffered:
                continue
            tp = state.tp
            taken = []
            while state.buffered and remaining > 0:
                completed = state.buffered[0]
                stream = self._stream(state, completed, "records", key_deserializer, value_deserializer)
                if stream is None:
                    break
                if self._worker is not None:
                    # where this step's phase 1 comes from (metrics: how much the worker took over)
                    self.decode_steps["waited" if stream.preparing else
                                      "prepared" if stream.pending else "inline"] += 1
                try:
                    chunk = stream.records(min(remaining, _STEP_RECORDS), self._max_held)
                except CorruptRecordError as exc:
                    good = list(getattr(exc, "records", None) or ())
                    if good:
                        taken.extend(good)
                        remaining -= len(good)
                        completed.records_out += len(good)
                        if update_offsets:
                            state.position_epoch = good[-1].leader_epoch
                    self._stop_at_bad_batch(state, exc, good[-1].offset + 1 if good else None,
                                            advance=update_offsets)
                    if taken:
                        self._pending_error = exc
                        break
                    if out:
                        self._pending_error = exc
                        return out
                    raise
                if chunk:
                    if taken:
                        taken.extend(chunk)
                    else:
                        taken = chunk
                    remaining -= len(chunk)
                    completed.records_out += len(chunk)
                done = stream.done
                if update_offsets:
                    state.position = self._resume_at(stream, completed, done)
                    if chunk:
                        state.position_epoch = chunk[-1].leader_epoch
                    elif done and completed.leader_epoch >= 0:
                        state.position_epoch = completed.leader_epoch
                completed.fetch_offset = stream.next_offset
                if done:
                    self._used_up(state, completed)
                else:
                    self._in_line = tp
                    if not chunk:
                        break  # cannot happen (a step that hands out nothing is the end); never spin
                if not update_offsets:
                    break
            if not update_offsets:
                # the position stays: what was handed out will be fetched again
                self._drop_buffered(state)
            if taken:
                out[tp] = taken
                self.metrics["records-consumed-total"] += len(taken)
            if self.sensors is not None and update_offsets:
                self.sensors.partition_position(state)  # lag and lead: once per partition per poll
        if self._worker is not None and out and update_offsets:
            self._prepare_ahead(key_deserializer, value_deserializer)
        return out

    def _prepare_ahead(self, key_deserializer, value_deserializer):
        """Hand the worker the next steps the next poll() will need: the
        first buffered fetch of the partitions in the order that poll will
        take them (the in-line one first), _PREPARE_AHEAD of them."""
        states = list(self.states.values())
        if not states:
            return
        start = self._next_partition % len(states)  # where _ordered_states() will start next
        order = states[start:] + states[:start]
        in_line = self.states.get(self._in_line) if self._in_line is not None else None
        if in_line is not None and in_line.buffered and order[0] is not in_line:
            order.remove(in_line)
            order.insert(0, in_line)
        ahead = 0
        for state in order:
            if ahead >= _PREPARE_AHEAD:
                break
            if state.paused or not state.buffered:
                continue
            completed = state.buffered[0]
            stream = completed.stream
            if stream is None:
                if completed.fetch_offset != state.position:
                    continue  # poll() will find it stale and fetch again
                stream = self._stream(state, completed, "records", key_deserializer, value_deserializer)
            elif completed.form != "records":
                continue
            ahead += 1
            if not stream.done and not stream.pending:
                self._worker.submit(stream, _PREPARE_RECORDS, self._prepare_held)

    def close_worker(self, timeout=5.0):
        """Stop and join the decode worker (close()); True when it is gone."""
        worker, self._worker = self._worker, None
        return worker.stop(timeout) if worker is not None else True

    def _discard_prepared(self, state):
        # A prepared step of a paused partition is not delivered later: the
        # stream goes, and the next poll after resume() decodes again from
        # the position (the fetched bytes stay buffered).
        if self._worker is None or not state.buffered:
            return
        completed = state.buffered[0]
        if completed.stream is not None and completed.form == "records" and completed.fetch_offset == state.position:
            completed.stream = None
            completed.form = None

    def fetched_arrow(self, max_records):
        """A list holding one pyarrow.RecordBatch (arrow_schema()) of up to
        max_records buffered records across partitions, or an empty list;
        positions advanced. The steps append to one ArrowBuilder (one copy of
        the data, no join afterwards); a step ends before the batch would pass
        Arrow's int32 offsets, and the rest is handed out by the next call."""
        builder = fastkc_records.arrow_builder(zero_copy=self._arrow_zero_copy)
        self._records_form = False
        remaining = max_records
        for state in self._ordered_states():
            if remaining <= 0:
                break
            if state.paused or not state.buffered:
                continue
            tp = state.tp
            while state.buffered and remaining > 0:
                completed = state.buffered[0]
                stream = self._stream(state, completed, "arrow")
                if stream is None:
                    break
                try:
                    appended = stream.arrow(int(min(remaining, _ARROW_STEP_MAX)), self._max_held, None, builder)
                except CorruptRecordError as exc:
                    # the step's records before the bad batch are in the builder
                    handed_out_to = builder.last_offset + 1 if stream.last_totals[0] else None
                    self._stop_at_bad_batch(state, exc, handed_out_to)
                    if builder.num_rows:
                        self._pending_error = exc
                        return [builder.finish()]
                    raise
                done = stream.done
                state.position = self._resume_at(stream, completed, done)
                completed.fetch_offset = stream.next_offset
                if appended:
                    remaining -= appended
                    completed.records_out += appended
                    self.metrics["records-consumed-total"] += appended
                if self.sensors is not None:
                    self.sensors.partition_position(state)  # lag and lead: once per step
                    if stream.leader_epoch >= 0:
                        state.position_epoch = stream.leader_epoch
                if done:
                    if completed.leader_epoch >= 0:
                        state.position_epoch = completed.leader_epoch
                    self._used_up(state, completed)
                else:
                    self._in_line = tp
                    if not appended:
                        return [builder.finish()] if builder.num_rows else []  # full (int32 offsets)
        return [builder.finish()] if builder.num_rows else []

    def pause(self, tp):
        self._replan()
        self.states[tp].paused = True
        self._discard_prepared(self.states[tp])

    def resume(self, tp):
        self._replan()
        self.states[tp].paused = False


def parse_fetch(payload, version):
    """A Fetch response payload → fastkc.structs.FetchResponse, by the compiled
    parser when the core is built, else by the generic codec (the twin)."""
    if _parse_fetch_c is not None:
        return _parse_fetch_c(payload, version)
    from fastkc.protocol import codec

    correlation_id, body = codec.decode_response("Fetch", version, payload)
    return codec.to_fetch_response(correlation_id, body, version)


def _list_offsets_results(response):
    for topic in response["topics"]:
        for p in topic["partitions"]:
            yield (TopicPartition(topic["name"], p["partition_index"]), p["error_code"], p["offset"],
                   p["leader_epoch"], p["timestamp"])
