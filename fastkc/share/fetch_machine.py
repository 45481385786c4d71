"""Share fetching, I/O-free: which partitions go to which leader,
acknowledgements on the way there, answers turned into buffered records.

The driver repeats (see fastkc/group/machine.py for the shape):

    machine.set_routes(topic_ids, leaders)          # from the cluster view
    for request in machine.next_requests(now, fetch=<the application polls>):
        <send request.api/request.body to broker request.target>
        machine.on_response(request.token, answer, now)  # a dict or the exception
    records = machine.hand_out(max_records) / machine.hand_out_arrow(max_records)

Rules (Java's ShareConsumeRequestManager, where it has one):
- One request in flight per leader: a share session's epochs are sequential.
- A ShareFetch goes to a leader only while the application polls and none
  of that leader's assigned partitions has buffered records; it carries the
  acknowledgements pending for that leader's partitions (piggy-backed).
  While the application polls, acknowledgements for a leader whose records
  are still buffered wait for that next ShareFetch (as Java's do); they go
  in a ShareAcknowledge at once for a commit or close (fetch=False), for a
  RENEW, and for a leader this member fetches nothing from.
- A new session (epoch 0) cannot carry acknowledgements and a
  ShareAcknowledge cannot open one: acknowledgements for a leader whose
  session was lost fail (the broker released those records when the
  session went; they are delivered again).
- close(): a ShareAcknowledge with epoch -1 to every leader with a session,
  carrying the last acknowledgements and RELEASE for every record acquired
  and not acknowledged (delivered or still buffered).
- Answers: a partition's acknowledge_error_code settles the
  acknowledgements sent for it (results for commit_sync / commit_async / the
  callback); its error_code gets the fetch path's reaction (fastkc/fetch/
  codes.py: refresh metadata, fail, retry); records and acquired ranges are
  kept raw and decoded (fastkc.records.decode_share) when handed out, so
  poll() and poll_arrow() read the same buffer.
- A batch that fails to decode (bad CRC, a deserializer's error) is
  released, not rejected (Java rejects a corrupt batch): the broker's
  delivery count limit archives a poison batch, and nothing is lost to a
  client-side fault. The error is raised from the poll that met it.
"""
from __future__ import annotations

import collections
import logging
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from fastkc.deserializers import ArrowDeserializers, RecordDeserializers
from fastkc.errors import (
    IllegalStateError,
    InvalidAcquiredRecordsError,
    KafkaError,
    UnsupportedVersionError,
    for_code,
)
from fastkc.fetch import codes
from fastkc.request import Request
from fastkc.share.acknowledgements import GAP, AcknowledgeType, PartitionAcks, to_batches
from fastkc.share.session import SessionPartition, ShareSession
from fastkc.share_ranges import checked_acquired
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

#: the first ShareFetch / ShareAcknowledge version that takes RENEW (KIP-1222)
#: and ShareFetch's acquire mode (KIP-1206)
RENEW_VERSION = 2
#: ShareFetch v2's ShareAcquireMode (KIP-1206): whole batches (max_records a
#: soft limit, rounded up to batch boundaries) or at most max_records
ACQUIRE_MODES = {"batch_optimized": 0, "record_limit": 1}
#: the most acquired offsets one partition's answer may name. Every acquired
#: offset is tracked on its own until settled (as Java's Acknowledgements
#: map does; a compacted batch's missing offsets become GAPs one by one), so
#: this bounds the memory a broker's answer can demand: ShareFetch asks for
#: max_poll_records, which a broker exceeds only to reach a batch boundary.
MAX_ACQUIRED_OFFSETS = 2_000_000
#: Fetching ahead: a leader gets its next ShareFetch while its buffered
#: records (acquired, not handed out) are at most one fetch's worth (its
#: last answer's records, at least max_poll_records: the broker rounds
#: max_records up to whole batches, so one answer may hold several polls'
#: worth), so the application finds the next records buffered instead of
#: waiting a round trip every few polls. It is bounded because every
#: buffered record's acquisition lock is running: at most one fetch's worth
#: waits behind the records being handed out, and none is fetched ahead once
#: the oldest buffered answer has waited this fraction of the lock duration
#: (a slow application: fetching more would acquire records whose locks
#: could run out before it reaches them, and they would be delivered again).
FETCH_AHEAD_LOCK_FRACTION = 0.25
# A fetch sent ahead asks the broker not to wait (max_wait_ms 0): the
# application has records to work on, and a broker with nothing to hand out
# now (every partition left at its lock limit until this member's
# acknowledgements land: the tail of a topic) would hold the request for
# fetch_max_wait_ms, and the acknowledgements of everything handed out
# meanwhile with it. One that comes back empty stops fetching ahead to that
# leader until its buffer is empty; the next fetch then waits as usual.
#: the broker's default group.share.record.lock.duration.ms, until an answer says otherwise
DEFAULT_LOCK_MS = 30000


class AckResult(NamedTuple):
    """The broker's answer to one partition's acknowledgements: the
    offsets settled and the error (None: accepted)."""

    partition: TopicPartition
    offsets: frozenset[int]
    error: KafkaError | None


class ShareFetchToken:
    """What one request carried (the driver hands it back with the answer):
    its leader, the acknowledgements by partition, whether it fetched, the
    session epoch it used, whether it closed the session."""

    __slots__ = ("what", "node_id", "acks", "fetched", "epoch", "closing", "ahead")

    def __init__(self, what: str, node_id: int, acks: dict[TopicPartition, dict[int, int]], fetched: bool,
                 epoch: int, closing: bool, ahead: bool = False) -> None:
        self.ahead = ahead  # a ShareFetch sent while records of its leader were buffered
        self.what = what
        self.node_id = node_id
        self.acks = acks
        self.fetched = fetched
        self.epoch = epoch
        self.closing = closing


class CompletedShareFetch:
    """One partition's records and acquired ranges from one answer, kept raw
    until handed out. Once decoded: `remaining` are the acquired offsets the
    decode did not settle (offset -> delivery count), `handed_through` the
    last offset handed out (records go out in offset order, so everything in
    remaining above it is still to hand out), `orphans` the offsets of
    remaining without a record (released when the fetch is finished).
    Handing out touches none of these per record."""

    __slots__ = ("partition", "topic_id", "data", "acquired", "received", "remaining", "handed_through", "orphans",
                 "decoded", "offsets", "next_record", "arrow")

    def __init__(self, partition: TopicPartition, topic_id: bytes, data: bytes,
                 acquired: list[tuple[int, int, int]], received: float = 0.0) -> None:
        self.partition = partition
        self.topic_id = topic_id
        self.data = data
        self.acquired = acquired
        self.received = received  # when its answer came (the driver's clock): its locks run from about then
        self.remaining: dict[int, int] | None = None  # None: not decoded yet
        self.handed_through = -1
        self.orphans: set[int] = set()
        self.decoded: list[Any] | None = None  # the records; decoded[next_record:] not handed out yet
        self.offsets: list[int] = []  # the decoded records' offsets, read once
        self.next_record = 0
        self.arrow: Any = None  # an Arrow batch not handed out

    def undelivered(self) -> int:
        """About how many records are still to hand out (the acquired span before decoding)."""
        if self.decoded is not None:
            return len(self.decoded) - self.next_record
        if self.arrow is not None:
            return int(self.arrow.num_rows)
        if self.remaining is not None:
            return 0
        return sum(last - first + 1 for first, last, _ in self.acquired)

    def acquired_offsets(self) -> dict[int, int]:
        """The acquired offsets still held for this fetch: not settled by
        its decode and not handed out (offset -> delivery count)."""
        if self.remaining is None:
            return _offsets_of(self.acquired)
        through = self.handed_through
        left = {offset: count for offset, count in self.remaining.items() if offset > through}
        for offset in self.orphans:
            left[offset] = self.remaining[offset]
        return left


def _offsets_of(acquired: Iterable[tuple[int, int, int]]) -> dict[int, int]:
    """Acquired ranges (first, last, count) -> {offset: count}, built by C-level dict passes."""
    offsets: dict[int, int] = {}
    for first, last, count in acquired:
        offsets.update(dict.fromkeys(range(first, last + 1), count))
    return offsets


#: a record's offset and delivery count: C-level getters for map(), so handing out walks no record in Python
_OFFSET = operator.attrgetter("offset")
_DELIVERY_COUNT = operator.attrgetter("delivery_count")


def _runs(offsets: Mapping[int, int]) -> list[tuple[int, int, int]]:
    """{offset: delivery count} -> acquired ranges (first, last, count)."""
    runs: list[tuple[int, int, int]] = []
    for offset in sorted(offsets):
        count = offsets[offset]
        if runs and runs[-1][1] == offset - 1 and runs[-1][2] == count:
            runs[-1] = (runs[-1][0], offset, count)
        else:
            runs.append((offset, offset, count))
    return runs


Decoder = Callable[..., Any]


class ShareFetchMachine:
    def __init__(self, config: Mapping[str, Any], group_id: str, member_id: str, *,
                 decode: Decoder | None = None, decode_arrow: Decoder | None = None) -> None:
        self.config = config
        self.group_id = group_id
        self.member_id = member_id
        self._decode = decode
        self._decode_arrow = decode_arrow
        # per-record ones go to the decoder; a batch deserializer's field is
        # replaced once per decoded fetch (_records)
        self._deserializers = RecordDeserializers(config.get("key_deserializer"), config.get("value_deserializer"))
        # poll_arrow()'s typed key / value columns (an AvroDeserializer's deserialize_arrow)
        self._arrow_deserializers = ArrowDeserializers(config.get("key_deserializer"),
                                                       config.get("value_deserializer"))
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.topic_ids: dict[str, bytes] = {}
        self.leaders: dict[TopicPartition, int] = {}
        self.sessions: dict[int, ShareSession] = {}
        self.in_flight: dict[int, ShareFetchToken] = {}
        self.acks: dict[TopicPartition, PartitionAcks] = {}
        self.buffer: collections.deque[CompletedShareFetch] = collections.deque()
        self.results: list[AckResult] = []
        self.metadata_wanted = False
        self.fatal_error: BaseException | None = None
        self.acquisition_lock_timeout_ms: int | None = None
        self.versions: dict[int, int] = {}  # node -> its ShareAcknowledge version (the driver's)
        self.answer_records: dict[int, int] = {}  # node -> records its last ShareFetch answer acquired
        self.ahead_came_empty: set[int] = set()  # leaders whose last fetch ahead acquired nothing
        # the offsets the last hand_out_arrow() handed out, by partition (its rows, grouped)
        self.arrow_offsets: dict[TopicPartition, list[int]] = {}
        self.closing = False

    # --- what the driver tells the machine -------------------------------------------------------
    def set_routes(self, topic_ids: Mapping[str, bytes], leaders: Mapping[TopicPartition, int]) -> None:
        self.topic_ids = dict(topic_ids)
        self.leaders = dict(leaders)

    def set_assignment(self, assignment: Iterable[TopicPartition]) -> None:
        """The member's new assignment. Buffered records of partitions it
        no longer holds are released (another member may take them now)."""
        self.assignment = frozenset(assignment)
        kept: collections.deque[CompletedShareFetch] = collections.deque()
        for completed in self.buffer:
            if completed.partition in self.assignment:
                kept.append(completed)
            else:
                self._release(completed)
        self.buffer = kept

    def fenced(self) -> None:
        """The broker dropped this member and released what it held: buffered
        records are dropped (nothing to acknowledge); delivered ones stay
        delivered so the application's acknowledgements still get an answer
        (the broker's error) instead of vanishing."""
        self.assignment = frozenset()
        self.buffer.clear()

    def _partition_acks(self, tp: TopicPartition) -> PartitionAcks:
        acks = self.acks.get(tp)
        if acks is None:
            acks = self.acks[tp] = PartitionAcks()
        return acks

    def _release(self, completed: CompletedShareFetch) -> None:
        self._partition_acks(completed.partition).settle_many(list(completed.acquired_offsets()),
                                                             int(AcknowledgeType.RELEASE))

    # --- the application's acknowledgements -------------------------------------------------------
    def acknowledge(self, tp: TopicPartition, offset: int, kind: AcknowledgeType) -> None:
        acks = self.acks.get(tp)
        what = "record {0}-{1}@{2}".format(tp.topic, tp.partition, offset)
        if acks is None:
            raise IllegalStateError("{0} was not delivered by this consumer".format(what))
        if kind is AcknowledgeType.RENEW:
            self.check_renew(tp)
        acks.acknowledge(offset, kind, what)

    def check_renew(self, tp: TopicPartition) -> None:
        """RENEW needs ShareAcknowledge v2 (KIP-1222) from the partition's leader."""
        leader = self.leaders.get(tp)
        version = self.versions.get(leader) if leader is not None else None
        if version is None or version < RENEW_VERSION:
            raise UnsupportedVersionError(
                "RENEW needs ShareAcknowledge v{0}+ (KIP-1222); the leader of {1} speaks {2}".format(
                    RENEW_VERSION, tp, "an unknown version" if version is None else "v{0}".format(version)))

    def acknowledge_delivered(self, kind: AcknowledgeType) -> int:
        """Every delivered record settled as `kind` (implicit mode)."""
        return sum(acks.acknowledge_all(kind) for acks in self.acks.values())

    def unacknowledged(self) -> int:
        return sum(len(acks.delivered) for acks in self.acks.values())

    def acks_outstanding(self) -> bool:
        return any(acks.pending or acks.sent for acks in self.acks.values())

    def take_results(self) -> list[AckResult]:
        results, self.results = self.results, []
        return results

    # --- requests ----------------------------------------------------------------------------------
    def start_close(self) -> None:
        """From now on every leader gets one final ShareAcknowledge (epoch
        -1): acknowledgements, RELEASE for the rest."""
        self.closing = True
        for acks in self.acks.values():
            acks.acknowledge_all(AcknowledgeType.RELEASE)
        while self.buffer:
            self._release(self.buffer.popleft())

    def close_done(self) -> bool:
        return self.closing and not self.in_flight and not self.acks_outstanding() and \
            not any(session.is_open for session in self.sessions.values())

    def next_requests(self, now: float, fetch: bool) -> list[Request[ShareFetchToken]]:
        """Requests to send now. fetch: the application is polling (a
        ShareFetch may acquire records)."""
        if self.fatal_error is not None:
            error, self.fatal_error = self.fatal_error, None
            raise error
        buffered_nodes, holding = self._nodes_not_fetching_ahead(now)
        by_node: dict[int, list[TopicPartition]] = {}
        if fetch and not self.closing:
            for tp in sorted(self.assignment):
                leader = self.leaders.get(tp)
                if leader is None or tp.topic not in self.topic_ids:
                    self.metadata_wanted = True
                    continue
                by_node.setdefault(leader, []).append(tp)
        if self.config["share_acquire_mode"] == "record_limit":
            for node in by_node:
                version = self.versions.get(node)
                if version is not None and version < RENEW_VERSION:
                    # a v1 broker would ignore the mode and hand out whole batches: say so, before anything moves
                    raise UnsupportedVersionError("share_acquire_mode='record_limit' needs ShareFetch v2 (KIP-1206); "
                                                  "broker {0} speaks v{1}".format(node, version))
        acks_by_node: dict[int, list[TopicPartition]] = {}
        for tp, acks in self.acks.items():
            if not acks.pending:
                continue
            leader = self.leaders.get(tp)
            if leader is None or tp.topic not in self.topic_ids:
                self.metadata_wanted = True
                continue
            acks_by_node.setdefault(leader, []).append(tp)
        requests: list[Request[ShareFetchToken]] = []
        nodes = set(by_node) | set(acks_by_node)
        if self.closing:
            nodes |= {node for node, session in self.sessions.items() if session.is_open}
        for node in sorted(nodes):
            if node in self.in_flight:
                continue
            session = self.sessions.get(node)
            if session is None:
                session = self.sessions[node] = ShareSession(node)
            ack_tps = acks_by_node.get(node, [])
            if self.closing:
                if session.is_open:
                    requests.append(self._acknowledge(session, ack_tps, closing=True))
                else:
                    self._fail_acks(ack_tps, _no_session(node))
                continue
            fetch_tps = by_node.get(node, []) if node not in buffered_nodes else []
            ahead = node in holding
            if not session.is_open and ack_tps:
                # a new session cannot carry them: the records went with the old one
                self._fail_acks(ack_tps, _no_session(node))
                ack_tps = []
            renewing = any(self.acks[tp].has_renew() for tp in ack_tps)
            if fetch_tps and not renewing:
                requests.append(self._fetch(session, fetch_tps, ack_tps, ahead))
            elif ack_tps and (renewing or not by_node.get(node)):
                # a commit or close (fetch=False), a RENEW (its lock is running out), or a leader this
                # member fetches nothing from: no ShareFetch will carry them
                requests.append(self._acknowledge(session, ack_tps, closing=False))
            # else: the leader's records are still buffered; the acknowledgements ride the ShareFetch
            # that follows once the application has taken them (Java's rule: poll's acknowledgements
            # go with the next fetch), or a commit sends them
        return requests

    def _nodes_not_fetching_ahead(self, now: float) -> tuple[set[int | None], set[int | None]]:
        """Leaders that get no ShareFetch now: more than one fetch's worth of
        their records buffered, a buffered answer older than
        FETCH_AHEAD_LOCK_FRACTION of the lock duration, or records buffered
        after a fetch ahead came back empty (see the comments there); and
        the leaders with records buffered."""
        oldest = now - (self.acquisition_lock_timeout_ms or DEFAULT_LOCK_MS) / 1000.0 * FETCH_AHEAD_LOCK_FRACTION
        held: dict[int | None, int] = {}
        full: set[int | None] = set()
        for completed in self.buffer:
            node = self.leaders.get(completed.partition)
            held[node] = held.get(node, 0) + completed.undelivered()
            if completed.received < oldest:
                full.add(node)
        least = self.config["max_poll_records"]
        full.update(node for node, count in held.items()
                     if node is None or count > max(least, self.answer_records.get(node, 0)))
        self.ahead_came_empty.intersection_update(held)  # a drained buffer: the next fetch waits as usual
        full.update(self.ahead_came_empty)
        return full, set(held)

    def _take_acks(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[int, int]]:
        return {tp: self.acks[tp].take() for tp in tps if self.acks[tp].pending}

    def _topics(self, partitions: Mapping[TopicPartition, dict[int, int] | None]) -> list[dict[str, Any]]:
        """{tp: acks or None} -> the request's topics (by id, in order)."""
        topics: dict[bytes, list[dict[str, Any]]] = {}
        for tp, acks in partitions.items():
            entry: dict[str, Any] = {"partition_index": tp.partition}
            entry["acknowledgement_batches"] = [batch._asdict() for batch in to_batches(acks or {})]
            topics.setdefault(self.topic_ids[tp.topic], []).append(entry)
        return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]

    def _fetch(self, session: ShareSession, fetch_tps: list[TopicPartition],
               ack_tps: list[TopicPartition], ahead: bool = False) -> Request[ShareFetchToken]:
        wanted: list[SessionPartition] = [(self.topic_ids[tp.topic], tp.partition) for tp in fetch_tps]
        epoch, added, forgotten = session.build_fetch(wanted)
        acks = self._take_acks(ack_tps)
        by_key = {(self.topic_ids[tp.topic], tp.partition): tp for tp in fetch_tps}
        named: dict[TopicPartition, dict[int, int] | None] = {by_key[key]: None for key in added}
        for tp, tp_acks in acks.items():
            named[tp] = tp_acks
        forgotten_topics: dict[bytes, list[int]] = {}
        for topic_id, partition in forgotten:
            forgotten_topics.setdefault(topic_id, []).append(partition)
        config = self.config
        body = {
            "group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": epoch,
            "max_wait_ms": 0 if ahead else config["fetch_max_wait_ms"], "min_bytes": config["fetch_min_bytes"],
            "max_bytes": config["fetch_max_bytes"], "max_records": config["max_poll_records"],
            "batch_size": config["max_poll_records"],
            "share_acquire_mode": ACQUIRE_MODES[config["share_acquire_mode"]],
            "topics": self._topics(named),
            "forgotten_topics_data": [{"topic_id": t, "partitions": p} for t, p in forgotten_topics.items()],
        }
        token = ShareFetchToken("ShareFetch", session.node_id, acks, True, epoch, False, ahead)
        self.in_flight[session.node_id] = token
        # the broker may hold a ShareFetch for max_wait_ms: the answer's timeout includes it
        timeout = config["request_timeout_ms"] + config["fetch_max_wait_ms"]
        return Request(session.node_id, "ShareFetch", body, timeout, token)

    def _acknowledge(self, session: ShareSession, ack_tps: list[TopicPartition],
                     closing: bool) -> Request[ShareFetchToken]:
        acks = self._take_acks(ack_tps)
        epoch = session.close_epoch() if closing else session.epoch
        body: dict[str, Any] = {
            "group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": epoch,
            "topics": self._topics(dict(acks)),
        }
        if any(AcknowledgeType.RENEW in tp_acks.values() for tp_acks in acks.values()):
            body["is_renew_ack"] = True
        token = ShareFetchToken("ShareAcknowledge", session.node_id, acks, False, epoch, closing)
        self.in_flight[session.node_id] = token
        return Request(session.node_id, "ShareAcknowledge", body, self.config["request_timeout_ms"], token)

    def _fail_acks(self, tps: Iterable[TopicPartition], error: KafkaError) -> None:
        for tp in tps:
            taken = self.acks[tp].take()
            self.acks[tp].answered(taken)
            if taken:
                self.results.append(AckResult(tp, frozenset(taken), error))

    # --- answers -----------------------------------------------------------------------------------
    def owns(self, token: object) -> bool:
        return isinstance(token, ShareFetchToken) and self.in_flight.get(token.node_id) is token

    def on_response(self, token: object, response: Any, now: float) -> None:
        if not self.owns(token):
            return
        assert isinstance(token, ShareFetchToken)
        del self.in_flight[token.node_id]
        session = self.sessions[token.node_id]
        if isinstance(response, BaseException):
            # a lost connection or a timeout: the broker's session state is unknown; start anew
            log.info("%s to broker %s failed: %s", token.what, token.node_id, response)
            session.reset()
            error = response if isinstance(response, KafkaError) else KafkaError(repr(response))
            self._settle(token, {}, error)
            self.metadata_wanted = True
            if not error.retriable:
                # the client's parse-failure policy gave up on this broker's answers: the application hears it
                self.fatal_error = error
            return
        code = response["error_code"]
        session.answered(code)
        lock = response.get("acquisition_lock_timeout_ms")
        if lock:
            self.acquisition_lock_timeout_ms = lock
        if code:
            cls = for_code(code)
            error = cls("{0}: {1}".format(token.what, response.get("error_message") or ""))
            log.info("%s to broker %s: %s", token.what, token.node_id, error)
            self._settle(token, {}, error)
            if not (cls.retriable or cls.invalid_metadata or code in codes.SESSION_ERRORS):
                self.fatal_error = error
            elif cls.invalid_metadata:
                self.metadata_wanted = True
            return
        answered: dict[TopicPartition, KafkaError | None] = {}
        names = {topic_id: name for name, topic_id in self.topic_ids.items()}
        if token.fetched:
            self.answer_records[token.node_id] = 0  # counted as its partitions' checked ranges are buffered
        for topic in response["responses"]:
            name = names.get(topic["topic_id"])
            if name is None:
                continue  # a topic deleted meanwhile: its records cannot be named
            for part in topic["partitions"]:
                tp = TopicPartition(name, part["partition_index"])
                answered[tp] = self._partition_answer(token, tp, topic["topic_id"], part, now)
        self._settle(token, answered, None)
        if token.ahead and not self.answer_records.get(token.node_id):
            self.ahead_came_empty.add(token.node_id)

    def _partition_answer(self, token: ShareFetchToken, tp: TopicPartition, topic_id: bytes,
                          part: Mapping[str, Any], now: float) -> KafkaError | None:
        """One partition of an answer; returns its acknowledgement error."""
        ack_code = part.get("acknowledge_error_code", 0) if token.fetched else part["error_code"]
        ack_error = None
        if ack_code:
            ack_error = for_code(ack_code)("{0} acknowledgements: {1}".format(
                tp, part.get("acknowledge_error_message" if token.fetched else "error_message") or ""))
        if not token.fetched:
            if ack_code and for_code(ack_code).invalid_metadata:
                self.metadata_wanted = True
            return ack_error
        code = part["error_code"]
        if code:
            reaction = codes.reaction(code)
            error = for_code(code)("ShareFetch {0}: {1}".format(tp, part.get("error_message") or ""))
            if reaction == codes.REFRESH_METADATA:
                self.metadata_wanted = True
            elif reaction == codes.FAIL:
                self.fatal_error = error
            log.debug("ShareFetch %s: %s", tp, error)
        acquired = self._checked_acquired(tp, part["acquired_records"])
        if acquired and tp in self.assignment:
            completed = CompletedShareFetch(tp, topic_id, part["records"] or b"", acquired, now)
            self.buffer.append(completed)
            self.answer_records[token.node_id] += completed.undelivered()
        elif acquired:
            # acquired for a partition this member no longer holds: hand it back
            self._release(CompletedShareFetch(tp, topic_id, b"", acquired))
        return ack_error

    def _checked_acquired(self, tp: TopicPartition, ranges: Iterable[Mapping[str, int]]) -> list[tuple[int, int, int]]:
        """A partition's AcquiredRecords, or [] and a typed error for the
        application when they cannot be true (unsorted, overlapping, bad
        counts) or name more offsets than MAX_ACQUIRED_OFFSETS: nothing of
        them is buffered or acknowledged, and the broker delivers them again
        when their lock expires."""
        try:
            acquired = checked_acquired([(r["first_offset"], r["last_offset"], r["delivery_count"]) for r in ranges],
                                        tp.topic, tp.partition)
        except InvalidAcquiredRecordsError as exc:
            self.fatal_error = exc
            return []
        span = sum(last - first + 1 for first, last, _ in acquired)
        if span > MAX_ACQUIRED_OFFSETS:
            self.fatal_error = InvalidAcquiredRecordsError(
                "{0} acquired offsets in one answer, more than the {1} a share consumer tracks".format(
                    span, MAX_ACQUIRED_OFFSETS), tp.topic, tp.partition, 0)
            return []
        return acquired

    def _settle(self, token: ShareFetchToken, answered: Mapping[TopicPartition, KafkaError | None],
                error: KafkaError | None) -> None:
        for tp, offsets in token.acks.items():
            self.acks[tp].answered(offsets)
            result = error if error is not None else answered.get(tp)
            self.results.append(AckResult(tp, frozenset(offsets), result))
        if token.closing:
            self.sessions[token.node_id].reset()
            self.sessions[token.node_id].closed = True

    # --- handing records out -----------------------------------------------------------------------
    def buffered(self) -> bool:
        return bool(self.buffer)

    def _decode_args(self, completed: CompletedShareFetch, acquired: list[tuple[int, int, int]],
                     arrow: bool) -> dict[str, Any]:
        from fastkc.config import decode_budget

        max_decompressed, max_records, _ = decode_budget(self.config)
        args = {"topic": completed.partition.topic, "partition": completed.partition.partition,
                "acquired": acquired, "check_crcs": self.config["check_crcs"],
                "max_decompressed_bytes": max_decompressed, "max_batch_records": max_records}
        if not arrow:  # Arrow columns hold the bytes as they are
            args["key_deserializer"] = self._deserializers.key_per_record
            args["value_deserializer"] = self._deserializers.value_per_record
        return args

    def _records(self, completed: CompletedShareFetch, decoded: Any) -> list[Any]:
        """A decoded fetch's records with their batch-deserialized fields (a
        deserializer's error fails the fetch as a per-record one does)."""
        tp = completed.partition
        return self._deserializers.replaced(list(decoded.records), tp.topic, tp.partition)

    def _first_decode(self, completed: CompletedShareFetch, arrow: bool) -> None:
        """Decode a completed fetch for the first time: its gaps become GAP
        acknowledgements, its released offsets RELEASE; a decoding error
        settles it and is raised."""
        decoder = self._decode_arrow if arrow else self._decode
        assert decoder is not None
        try:
            out = decoder(completed.data, **self._decode_args(completed, completed.acquired, arrow))
            records = None if arrow else self._records(completed, out)
        except Exception as exc:
            self.buffer.remove(completed)
            self._settle_failed_decode(completed, exc)
            raise
        # both forms answer ShareDecoded(records, gaps, released): records a list or an Arrow batch
        if arrow:
            completed.arrow = out.records
            record_offsets = set(out.records.column("offset").to_pylist())
        else:
            assert records is not None
            completed.decoded = records
            completed.offsets = list(map(_OFFSET, completed.decoded))
            record_offsets = set(completed.offsets)
        completed.next_record = 0
        acks = self._partition_acks(completed.partition)
        remaining = _offsets_of(completed.acquired)
        for ranges, kind in ((out.gaps, GAP), (getattr(out, "released", None) or (), int(AcknowledgeType.RELEASE))):
            # gaps: acquired offsets without a record (archived by GAP); released: offsets inside a cut
            # trailing batch, which may hold records these bytes lack (delivered again by RELEASE)
            for first, last in ranges:
                settled = list(range(first, last + 1))
                acks.settle_many(settled, kind)
                for offset in settled:
                    remaining.pop(offset, None)
        completed.remaining = remaining
        completed.orphans = set(remaining.keys() - record_offsets)

    def _settle_failed_decode(self, completed: CompletedShareFetch, exc: BaseException) -> None:
        """A fetch that failed to decode hands out nothing: its gaps (the
        decoder's `.share`, when it says) are GAP, everything else acquired is
        RELEASEd. Java REJECTs a corrupt batch; fastkc releases it, so a fault
        on the way (a proxy, a bit flip) costs a redelivery, not the records,
        and a batch corrupt on the broker's disk is archived by the broker
        once group.share.delivery.count.limit is reached."""
        acks = self._partition_acks(completed.partition)
        failure = getattr(exc, "share", None)
        gaps: set[int] = set()
        for first, last in getattr(failure, "gaps", None) or ():
            gaps.update(range(first, last + 1))
        for offset in completed.acquired_offsets():
            acks.pending[offset] = GAP if offset in gaps else int(AcknowledgeType.RELEASE)
        log.warning("%s: acquired records %s could not be decoded (%s); released", completed.partition,
                    _runs(completed.acquired_offsets())[:3], exc)

    def _redecode(self, completed: CompletedShareFetch, arrow: bool) -> None:
        """A remainder asked for in the other form: decode again, only the
        offsets not handed out."""
        decoder = self._decode_arrow if arrow else self._decode
        assert decoder is not None and completed.remaining is not None
        out = decoder(completed.data, **self._decode_args(completed, _runs(completed.acquired_offsets()), arrow))
        completed.arrow = completed.decoded = None
        if arrow:
            completed.arrow = out.records
        else:
            completed.decoded = self._records(completed, out)
            completed.offsets = list(map(_OFFSET, completed.decoded))
            completed.next_record = 0

    def hand_out(self, max_records: int) -> dict[TopicPartition, list[Any]]:
        """Up to max_records buffered records (decoded now), which become
        delivered: a list slice per fetch and C-level passes over it, no
        Python step per record."""
        out: dict[TopicPartition, list[Any]] = {}
        count = 0
        while self.buffer and count < max_records:
            completed = self.buffer[0]
            if completed.remaining is None:
                self._first_decode(completed, arrow=False)
            elif completed.decoded is None:
                self._redecode(completed, arrow=False)
            decoded = completed.decoded
            assert decoded is not None
            start = completed.next_record
            end = start + max_records - count
            taken = decoded[start:end]
            if taken:
                offsets = completed.offsets[start:end]
                self._partition_acks(completed.partition).deliver_many(offsets, map(_DELIVERY_COUNT, taken))
                completed.handed_through = offsets[-1]
                completed.next_record = start + len(taken)
                completed.arrow = None  # the other form, if asked for, decodes what is left anew
                count += len(taken)
                records = out.get(completed.partition)
                if records is None:
                    out[completed.partition] = taken
                else:
                    records.extend(taken)
            if completed.next_record >= len(decoded):
                self._finish(completed)
        return out

    def hand_out_arrow(self, max_records: int) -> list[Any]:
        """Up to max_records buffered records as Arrow batches (one per
        partition fetch), which become delivered (their offset and
        delivery_count columns read as whole columns). With a deserializer
        that gives typed columns, every batch of one call has one schema:
        the rows from where a column's type would change, or a row fails,
        stay buffered for the next call (_typed)."""
        batches: list[Any] = []
        count = 0
        self.arrow_offsets = {}
        while self.buffer and count < max_records:
            completed = self.buffer[0]
            if completed.remaining is None:
                self._first_decode(completed, arrow=True)
            elif completed.arrow is None:
                self._redecode(completed, arrow=True)
            assert completed.remaining is not None
            batch = completed.arrow
            take = min(batch.num_rows, max_records - count)
            part = batch.slice(0, take)
            if take and self._arrow_deserializers:
                part = self._typed(completed, part, batches)
                if part is None:
                    break  # another type than this call's batches: the next call starts with it
                take = part.num_rows
            rest = batch.slice(take)
            if take:
                offsets = part.column("offset").to_pylist()
                self._partition_acks(completed.partition).deliver_many(
                    offsets, part.column("delivery_count").to_pylist())
                self.arrow_offsets.setdefault(completed.partition, []).extend(offsets)
                completed.handed_through = offsets[-1]
                batches.append(part)
            count += take
            completed.arrow = rest
            completed.decoded = None
            if rest.num_rows == 0:
                self._finish(completed)
        return batches

    def _typed(self, completed: CompletedShareFetch, part: Any, batches: list[Any]) -> Any:
        """`part` (the leading rows of `completed`'s batch) with typed key /
        value columns: its leading rows that decode into one type (the
        first batch's, when this call has one), or None when none do. A
        row 0 that fails is raised by the call that starts at it -- after
        the rows before it were handed out -- and, as a batch deserializer's
        error on poll(), the fetch's rows not handed out are released (the
        broker's delivery count limit archives a poison record)."""
        try:
            typed = self._arrow_deserializers.deserialize(part)
        except Exception as exc:
            if batches:
                return None
            unhanded = completed.arrow.column("offset").to_pylist()
            self._partition_acks(completed.partition).settle_many(unhanded, int(AcknowledgeType.RELEASE))
            self._finish(completed)
            log.warning("%s: %d records from offset %d could not be deserialized (%s); released",
                        completed.partition, len(unhanded), unhanded[0], exc)
            raise
        if batches and typed.schema != batches[0].schema:
            return None
        return typed

    def _finish(self, completed: CompletedShareFetch) -> None:
        self.buffer.popleft()
        if completed.orphans:
            # acquired offsets the decoder gave no record and no gap for: never leave them acquired
            log.warning("%s: acquired offsets %s had no record; releasing them", completed.partition,
                        sorted(completed.orphans)[:10])
            self._partition_acks(completed.partition).settle_many(sorted(completed.orphans),
                                                                 int(AcknowledgeType.RELEASE))
            completed.orphans = set()
        completed.decoded = completed.arrow = None
        completed.offsets = []
        completed.remaining = {}


def _no_session(node: int) -> KafkaError:
    from fastkc.errors import ShareSessionNotFoundError

    return ShareSessionNotFoundError(
        "the share session with broker {0} was lost; the broker released its records (they are delivered "
        "again)".format(node))
