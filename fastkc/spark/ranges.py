"""Offset ranges: resolving Spark's offset specs against the broker, splitting
ranges into tasks, and streaming admission control. Runs on the driver.

Facts mirrored from Spark's Kafka source (KafkaOffsetRangeCalculator,
KafkaMicroBatchStream.rateLimit): ranges are exclusive at the end, ranges of
size <= 0 are dropped, minPartitions splits proportionally to range size,
maxOffsetsPerTrigger is shared across partitions by backlog without starving
small partitions.
"""
import functools
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fastkc.spark.options import EARLIEST, LATEST, OffsetSpec, SourceOptions, SparkKafkaOptionError
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer

# (topic, partition): Spark's offsets are keyed by plain pairs (picklable, JSON-able)
Pair = tuple[str, int]
Offsets = dict[Pair, int]


class _Lookup(Protocol):
    def __call__(self, consumer: "KafkaConsumer", pairs: Sequence[Pair],
                 timeout_ms: float | None = ...) -> Offsets: ...


log = logging.getLogger(__name__)

DATA_LOSS_ADVICE = (
    " Some data may have been lost because they are not available in Kafka any more; either the data was aged out "
    "by Kafka or the topic may have been deleted before all the data in the topic was processed. If you don't want "
    'your streaming query to fail on such cases, set the source option "failOnDataLoss" to "false".')


class KafkaDataLossError(RuntimeError):
    """Data a query needs is gone (failOnDataLoss=true)."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # inclusive
    end: int  # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


def report_data_loss(fail_on_data_loss: bool, message: str) -> None:
    if fail_on_data_loss:
        raise KafkaDataLossError(message + "." + DATA_LOSS_ADVICE)
    log.warning("%s. Some data may have been lost; failOnDataLoss is false, so the query goes on", message)


def topic_partitions(consumer: "KafkaConsumer", opts: SourceOptions) -> list[Pair]:
    """The sorted (topic, partition) pairs the options select, as of now."""
    if opts.strategy == "assign":
        return sorted(set(opts.assign))
    if opts.strategy == "subscribe":
        _look_up_topics(consumer, opts.topics)
        topics: Sequence[str] = opts.topics
    else:
        # Java's Pattern.matcher(topic).matches(): the whole name must match
        # (topics() fetched the metadata of every topic: nothing more to ask)
        pattern = re.compile(opts.pattern or "")
        topics = sorted(t for t in consumer.topics() if pattern.fullmatch(t))
    out: list[Pair] = []
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        out.extend((topic, p) for p in sorted(parts or ()))
    return sorted(out)


def _look_up_topics(consumer: "KafkaConsumer", topics: Sequence[str]) -> None:
    """Metadata of all `topics` in one request. partitions_for_topic() asks
    for a topic it has not seen, and every answer covers all the topics
    asked for so far: topic by topic, 10 topics of 1,000 partitions cost 10
    requests and 55,000 partitions decoded instead of 10,000. A topic that
    does not exist is simply absent afterwards (partitions_for_topic then
    asks once more and finds nothing, as before)."""
    from fastkc.consumer import engine_of
    from fastkc.errors import KafkaTimeoutError

    try:
        engine_of(consumer).ensure_metadata(topics, consumer.config["request_timeout_ms"])
    except KafkaTimeoutError:
        pass  # partitions_for_topic() waits (and gives up) topic by topic, as without this look-up


def _tps(pairs: Iterable[Pair]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in pairs]


def earliest(consumer: "KafkaConsumer", pairs: Sequence[Pair], timeout_ms: float | None = None) -> Offsets:
    if not pairs:
        return {}
    got = consumer.beginning_offsets(_tps(pairs), timeout_ms)
    return {(tp.topic, tp.partition): off for tp, off in got.items()}


def latest(consumer: "KafkaConsumer", pairs: Sequence[Pair], timeout_ms: float | None = None) -> Offsets:
    # end_offsets honours the consumer's isolation_level: the last stable
    # offset with read_committed, as Spark's source reads it
    if not pairs:
        return {}
    got = consumer.end_offsets(_tps(pairs), timeout_ms)
    return {(tp.topic, tp.partition): off for tp, off in got.items()}


def both_ends(consumer: "KafkaConsumer", earliest_pairs: Sequence[Pair],
              latest_pairs: Sequence[Pair] | None = None) -> tuple[Offsets, Offsets]:
    """({(t, p): earliest}, {(t, p): latest}): the ListOffsets of both ends
    sent at once, one request per end to each partition's leader, all in
    flight together (the broker answers one while the other is decoded;
    beginning_offsets() then end_offsets() would wait for each in turn).
    latest_pairs defaults to earliest_pairs.

    Only the answers without an error are taken from this fast path; any
    partition without a leader, without an answer or with an error code goes
    through the consumer's own beginning_offsets()/end_offsets(), which
    retry, refresh metadata and raise exactly as they always do."""
    latest_pairs = earliest_pairs if latest_pairs is None else latest_pairs
    wanted = {EARLIEST: list(earliest_pairs), LATEST: list(latest_pairs)}
    found: dict[int, Offsets] = {EARLIEST: {}, LATEST: {}}
    # one request_timeout_ms for everything, fast path and fallback together
    # (a dead leader must not cost the timeout twice)
    timeout_ms = consumer.config["request_timeout_ms"]
    deadline = time.monotonic() + timeout_ms / 1000.0
    if wanted[EARLIEST] or wanted[LATEST]:
        try:
            _list_offsets_at_once(consumer, wanted, found, deadline)
        except Exception as exc:  # the fallback below raises what matters, with the consumer's rules
            log.debug("pipelined ListOffsets failed (%s); asking partition sets in turn", exc)
    asks: tuple[tuple[int, _Lookup], ...] = ((EARLIEST, earliest), (LATEST, latest))
    for stamp, ask in asks:
        missing = [tp for tp in wanted[stamp] if tp not in found[stamp]]
        if missing:
            left_ms = (deadline - time.monotonic()) * 1000.0
            if left_ms <= 0:
                from fastkc.errors import KafkaTimeoutError

                raise KafkaTimeoutError("ListOffsets did not complete within {0} ms".format(timeout_ms))
            found[stamp].update(ask(consumer, missing, left_ms))
    return found[EARLIEST], found[LATEST]


def _list_offsets_at_once(consumer: "KafkaConsumer", wanted: Mapping[int, list[Pair]],
                          found: dict[int, Offsets], deadline: float) -> None:
    from fastkc.consumer import engine_of
    from fastkc.errors import NodeNotReadyError
    from fastkc.fetch import list_offsets_results as _list_offsets_results

    engine = engine_of(consumer)
    client = engine.client
    fetcher = engine.fetcher
    # leaders: with `assign` no metadata was asked for yet
    _look_up_topics(consumer, sorted({t for pairs in wanted.values() for t, _ in pairs}))
    requests: dict[tuple[int, Any], dict[TopicPartition, int]] = {}  # (timestamp, node) -> {tp: timestamp}
    for stamp, pairs in wanted.items():
        for t, p in pairs:
            tp = TopicPartition(t, p)
            leader = engine.leader_for(tp)
            if leader is not None:
                requests.setdefault((stamp, leader), {})[tp] = stamp
    unsent = dict(requests)
    answers: dict[tuple[int, Any], tuple[Any, Any]] = {}
    # each request goes out as soon as its leader's connection is ready
    while (unsent or len(answers) < len(requests)) and time.monotonic() < deadline:
        for key in [key for key in unsent if client.ready(key[1])]:
            part = unsent.pop(key)
            try:
                client.send(key[1], "ListOffsets", fetcher.list_offsets_body(part),
                            functools.partial(_keep_answer, answers, key))
            except NodeNotReadyError:
                answers[key] = (None, None)  # left to the fallback
        if unsent or len(answers) < len(requests):
            client.poll(min(0.05 if unsent else 1.0, max(0.0, deadline - time.monotonic())))
    for key, (response, error) in answers.items():
        if response is None or error is not None:
            continue
        stamp, _ = key
        asked = requests[key]
        for tp, code, offset, _epoch, _ts in _list_offsets_results(response):
            if code == 0 and tp in asked:
                found[stamp][(tp.topic, tp.partition)] = offset


def _keep_answer(answers: dict[tuple[int, Any], tuple[Any, Any]], key: tuple[int, Any], response: Any,
                 error: BaseException | None) -> None:
    answers[key] = (response, error)


def _prefetch(spec: OffsetSpec, pairs: Sequence[Pair]) -> tuple[list[Pair], list[Pair]]:
    """The (earliest, latest) pairs an OffsetSpec will ask for."""
    if spec.kind == "earliest":
        return list(pairs), []
    if spec.kind == "latest":
        return [], list(pairs)
    if spec.kind == "offsets":
        chosen = [tp for tp in pairs if tp in spec.by_partition]
        return ([tp for tp in chosen if spec.by_partition[tp] == EARLIEST],
                [tp for tp in chosen if spec.by_partition[tp] == LATEST])
    return [], []


def resolve_both(consumer: "KafkaConsumer", starting: OffsetSpec, ending: OffsetSpec, pairs: Sequence[Pair], *,
                 no_match_strategy: str = "error") -> tuple[Offsets, Offsets]:
    """(starts, ends): resolve() of both specs, with every earliest/latest
    lookup either needs made in one round (both_ends)."""
    start_e, start_l = _prefetch(starting, pairs)
    end_e, end_l = _prefetch(ending, pairs)
    known = both_ends(consumer, sorted(set(start_e) | set(end_e)), sorted(set(start_l) | set(end_l)))
    starts = resolve(consumer, starting, pairs, starting=True, no_match_strategy=no_match_strategy, known=known)
    ends = resolve(consumer, ending, pairs, starting=False, known=known)
    return starts, ends


def resolve(consumer: "KafkaConsumer", spec: OffsetSpec, pairs: Sequence[Pair], *, starting: bool,
            no_match_strategy: str = "error", known: tuple[Offsets, Offsets] | None = None) -> Offsets:
    """{(t, p): offset} for `pairs` from an OffsetSpec (options.OffsetSpec).
    known: ({tp: earliest}, {tp: latest}) looked up already (resolve_both)."""

    def lookup_earliest(wanted: Sequence[Pair]) -> Offsets:
        return _known_or_asked(consumer, wanted, known[0] if known else None, earliest)

    def lookup_latest(wanted: Sequence[Pair]) -> Offsets:
        return _known_or_asked(consumer, wanted, known[1] if known else None, latest)

    if spec.kind == "earliest":
        return lookup_earliest(pairs)
    if spec.kind == "latest":
        return lookup_latest(pairs)
    if spec.kind == "offsets":
        given = set(spec.by_partition)
        if given != set(pairs):
            raise AssertionError(
                "assertion failed: If {0} contains specific offsets, you must specify all TopicPartitions.\n"
                "Use -1 for latest, -2 for earliest.\nSpecified: {1} Assigned: {2}".format(
                    "startingOffsets" if starting else "endingOffsets",
                    sorted("{0}-{1}".format(*tp) for tp in given),
                    sorted("{0}-{1}".format(*tp) for tp in pairs)))
        wanted_earliest = [tp for tp in pairs if spec.by_partition[tp] == EARLIEST]
        wanted_latest = [tp for tp in pairs if spec.by_partition[tp] == LATEST]
        out = {tp: spec.by_partition[tp] for tp in pairs}
        out.update(lookup_earliest(wanted_earliest))
        out.update(lookup_latest(wanted_latest))
        return out
    if spec.kind == "timestamps":
        given = set(spec.by_partition)
        if given != set(pairs):
            raise AssertionError(
                "assertion failed: If {0} contains specific timestamps, you must specify all TopicPartitions.\n"
                "Specified: {1} Assigned: {2}".format(
                    "startingOffsetsByTimestamp" if starting else "endingOffsetsByTimestamp",
                    sorted("{0}-{1}".format(*tp) for tp in given),
                    sorted("{0}-{1}".format(*tp) for tp in pairs)))
        stamps = dict(spec.by_partition)
    else:  # "timestamp": one for every partition
        assert spec.timestamp is not None  # options.py sets it with the kind
        stamps = {tp: spec.timestamp for tp in pairs}
    found = consumer.offsets_for_times({TopicPartition(t, p): ts for (t, p), ts in stamps.items()})
    out = {}
    missing: list[Pair] = []
    for tp in pairs:
        hit = found[TopicPartition(*tp)]
        if hit is not None:
            out[tp] = hit.offset
        elif starting and no_match_strategy == "error":
            raise SparkKafkaOptionError(
                "No offset matched from request of topic-partition {0}-{1} and timestamp {2}.".format(
                    tp[0], tp[1], stamps[tp]))
        else:
            missing.append(tp)  # no record at or after T: the end of the partition
    out.update(lookup_latest(missing))
    return out


def _known_or_asked(consumer: "KafkaConsumer", wanted: Sequence[Pair], known: Offsets | None,
                    ask: _Lookup) -> Offsets:
    if not known:
        return ask(consumer, wanted)
    out = {tp: known[tp] for tp in wanted if tp in known}
    rest = [tp for tp in wanted if tp not in known]
    if rest:
        out.update(ask(consumer, rest))
    return out


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Drop empty ranges, cap each at max_records_per_partition, then split
    proportionally to size until there are about min_partitions."""
    kept = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None:
        capped: list[OffsetRange] = []
        for r in kept:
            capped.extend(_divide(r, math.ceil(r.size / max_records_per_partition)))
        kept = capped
    if min_partitions is not None and len(kept) < min_partitions:
        total = sum(r.size for r in kept)
        split: list[OffsetRange] = []
        for r in kept:
            # round(), at least one part: Spark's rule for "close to the ideal size"
            parts = max(int(math.floor(r.size / total * min_partitions + 0.5)), 1)
            split.extend(_divide(r, parts))
        kept = split
    return [r for r in kept if r.size > 0]


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1:
        return [r]
    bounds = [r.start + (r.size * i) // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, bounds[i], bounds[i + 1]) for i in range(parts)]


def rate_limit(limit: int, start: Mapping[Pair, int], end: Mapping[Pair, int]) -> Offsets:
    """Spark's share of `limit` rows across partitions by backlog.
    start/end: {(t, p): offset}; partitions in `end` only start at end (no backlog)."""
    sizes = {tp: e - start[tp] for tp, e in end.items() if tp in start and e - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(end)
    out: Offsets = {}
    for tp, e in end.items():
        if tp not in sizes:
            out[tp] = e
            continue
        prorate = limit * (sizes[tp] / total)
        # never starve a small partition: a share below one row rounds up
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(e, start[tp] + int(share))
    return out


class TriggerDelay:
    """minOffsetsPerTrigger / maxTriggerDelay (Spark's delayBatch): hold a
    trigger back while the backlog is below min_rows, but never longer than
    max_delay_ms after the last trigger that went ahead."""

    def __init__(self, min_rows: int, max_delay_ms: float, clock: Callable[[], float]) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self.clock = clock  # seconds, monotonic
        self.last_trigger = clock()

    def hold(self, backlog: int) -> bool:
        now = self.clock()
        if (now - self.last_trigger) * 1000 >= self.max_delay_ms or backlog >= self.min_rows:
            self.last_trigger = now
            return False
        return True


# --- the offsets Spark checkpoints: {"topic": {"partition": next}} ---------------------

def to_json_offsets(offsets: Mapping[Pair, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, part), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    return out


def from_json_offsets(obj: Mapping[str, Mapping[str, int]] | None) -> Offsets:
    if obj is None:
        return {}
    return {(topic, int(part)): int(off) for topic, parts in obj.items() for part, off in parts.items()}
