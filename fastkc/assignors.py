"""Partition assignors for the classic group protocol.

The interface is kafka-python 3's (kafka/coordinator/assignors/abstract.py),
so an assignor written for kafka-python plugs in unchanged:

  name                              the protocol name sent in JoinGroup
  supported_protocols()             [RebalanceProtocol...], preferred first
  metadata(topics) -> Subscription  this member's JoinGroup metadata
  assign(cluster, members) -> {member_id: Assignment}
        cluster: anything with partitions_for_topic(topic) -> set | None;
                 optionally partition_racks(topic) -> {partition: racks of
                 its replicas}, which turns on rack-aware assignment
        members: [GroupMember(member_id, group_instance_id, metadata)] with
                 metadata a decoded Subscription (kafka-python's
                 JoinGroupResponseMember has the same three attributes); a
                 {member_id: subscription} dict (kafka-python 2's shape) is
                 accepted too
  on_assignment(assignment, generation)

The built-in assignors compute what the Java client's do (RangeAssignor,
RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor of Kafka 4.x),
read from its behaviour and documentation:

- member order: static members (group_instance_id set) first, ordered by
  instance id, then dynamic members by member id, comparing strings by UTF-16
  code unit as Java does;
- range is rack-aware (KIP-881) and roundrobin is not, as in Java;
- the sticky assignors take the Java "constrained" path when every member
  subscribes to the same topics, reproducing its choices exactly, including
  which members end up with one partition more (Java decides that by the
  iteration order of a HashMap keyed by member id, which is modelled here);
  otherwise a general path that keeps every still-valid owned partition,
  hands out the rest to the least-loaded eligible member and then applies
  chains of hand-overs until no chain can even two members' loads (Java's
  general path balances by a different search, so the two may pick
  different partitions; Kafka 4.3.1's can also hand a member a partition of
  a topic it no longer subscribes to, or throw, which this one never does);
- cooperative-sticky leaves a partition that changes owner out of this
  round's assignment, so its owner revokes it (owned minus assigned) and
  rejoins, and the next round gives it to the new owner: the output passes
  `validate_cooperative_assignment`, the check the Java ConsumerCoordinator
  applies to custom cooperative assignors.

Assignments are written at consumer protocol version 3 with null user data,
like the Java client's. Protocol names match Java's and librdkafka's:
"range", "roundrobin", "sticky", "cooperative-sticky".
"""
import abc
import enum
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from fastkc.errors import IllegalArgumentError, IllegalStateError
from fastkc.protocol.codec import _decode_struct, _encode_struct, _EncodeError
from fastkc.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    Subscription,
    decode_subscription,
    group_by_topic,
    java_string_key,
)
from fastkc.protocol.schema import parse_struct
from fastkc.protocol.types import Reader, Writer, _Malformed
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import BrokerMetadata, TopicMetadata

log = logging.getLogger(__name__)

#: {member_id: [TopicPartition]}: an assignment being built
Lists = dict[str, list[TopicPartition]]
#: what assign() returns: {member_id: Assignment}
Assignments = dict[str, Assignment]
#: what assign() takes as members: [GroupMember-like objects] (kafka-python's
#: JoinGroupResponseMember too) or {member_id: subscription} (kafka-python 2)
Members = Iterable[Any] | Mapping[str, Any]


class PartitionSource(Protocol):
    """What assign() reads of its cluster argument (StaticCluster; any
    object with this method; partition_racks(topic) is optional)."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...


class MetadataView(Protocol):
    """What StaticCluster.from_metadata reads: `topics` (and `brokers`,
    looked up with getattr)."""

    @property
    def topics(self) -> "Mapping[str, TopicMetadata]": ...

DEFAULT_GENERATION = -1


class RebalanceProtocol(enum.IntEnum):
    """KIP-429. EAGER: every member gives up everything before it rejoins.
    COOPERATIVE: members keep what they own; only partitions that move are
    revoked, and a second rebalance hands them to their new owner."""

    EAGER = 0
    COOPERATIVE = 1


#: One group member as an assignor sees it (the JoinGroup response member,
#: its metadata decoded).
class GroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: Subscription


class AbstractPartitionAssignor(abc.ABC):
    """kafka-python 3's assignor interface (see the module docstring)."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The protocol name this assignor is announced under in JoinGroup."""

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.EAGER]

    @abc.abstractmethod
    def assign(self, cluster: PartitionSource, members: Members) -> Assignments:
        """{member_id: Assignment} for every member in `members`."""

    @abc.abstractmethod
    def metadata(self, topics: Iterable[str]) -> Subscription:
        """The Subscription this member sends for `topics`."""

    @abc.abstractmethod
    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """Called with this member's Assignment once a rebalance completes."""


# --------------------------------------------------------------------------
# clusters and members
# --------------------------------------------------------------------------
class StaticCluster:
    """A fixed view of topic partitions (and optionally replica racks), with
    the two methods the assignors read: what the leader hands its assignor
    (`from_metadata` takes it from the client's metadata cache), and what
    tests build by hand.

    partitions: {topic: partition count or iterable of partition ids}
    racks: {topic: {partition: iterable of the racks its replicas are on}}
    """

    def __init__(self, partitions: Mapping[str, int | Iterable[int]],
                 racks: Mapping[str, Mapping[int, Iterable[str]]] | None = None) -> None:
        self._partitions: dict[str, frozenset[int]] = {}
        for topic, spec in partitions.items():
            ids = range(spec) if isinstance(spec, int) else spec
            self._partitions[topic] = frozenset(ids)
        self._racks = {t: {p: frozenset(r) for p, r in by_p.items()} for t, by_p in (racks or {}).items()}

    @classmethod
    def from_metadata(cls, metadata: MetadataView) -> "StaticCluster":
        """A snapshot of the client's metadata cache (fastkc.cluster's
        ClusterMetadata, or anything with `topics` {name: .partitions
        {partition: .replicas}} and `brokers` {node_id: .rack}): partitions
        per topic and the racks of each partition's replicas, which the
        leader's assignor needs for rack-aware assignment."""
        partitions: dict[str, list[int]] = {}
        racks: dict[str, dict[int, list[str]]] = {}
        brokers: Mapping[int, BrokerMetadata] = getattr(metadata, "brokers", None) or {}
        for name, topic in metadata.topics.items():
            by_partition = topic.partitions
            if not by_partition:
                continue
            partitions[name] = list(by_partition)
            racks[name] = {
                p: [rack for rack in (brokers[r].rack for r in meta.replicas if r in brokers) if rack]
                for p, meta in by_partition.items()
            }
        return cls(partitions, racks)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        parts = self._partitions.get(topic)
        return set(parts) if parts is not None else None

    def partition_racks(self, topic: str) -> dict[int, frozenset[str]]:
        return dict(self._racks.get(topic, {}))


def _members_of(members: Members) -> list[GroupMember]:
    """Normalise `members` to [GroupMember] in the order given. Metadata
    still in wire form (bytes) is decoded here; metadata without a `topics`
    attribute is refused rather than read as "subscribes to nothing"."""
    given: Iterable[Any] = members
    if isinstance(members, dict):
        given = [GroupMember(member_id, None, meta) for member_id, meta in members.items()]
    out: list[GroupMember] = []
    for m in given:
        meta = m.metadata
        if isinstance(meta, (bytes, bytearray, memoryview)):
            meta = decode_subscription(meta)
        elif isinstance(getattr(meta, "topics", None), (str, bytes)) or not hasattr(meta, "topics"):
            raise IllegalArgumentError(
                "member {0!r}: metadata is not a subscription (no list of topics): {1!r}".format(m.member_id, meta))
        out.append(GroupMember(m.member_id, getattr(m, "group_instance_id", None), meta))
    ids = [m.member_id for m in out]
    if len(set(ids)) != len(ids):
        raise IllegalArgumentError("duplicate member ids in the group: {0!r}".format(sorted(ids)))
    return out


def _topics_of(subscription: object) -> list[str]:
    return list(getattr(subscription, "topics", None) or ())


def _owned_of(subscription: object) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for item in getattr(subscription, "owned_partitions", None) or ():
        topic, partitions = (item.topic, item.partitions) if hasattr(item, "topic") else item
        out.extend(TopicPartition(topic, p) for p in partitions)
    return out


def _rack_of(subscription: object) -> str | None:
    rack: str | None = getattr(subscription, "rack_id", None)
    return rack or None  # Java treats "" as no rack


def _generation_of(subscription: object) -> int:
    gen: int | None = getattr(subscription, "generation_id", DEFAULT_GENERATION)
    return DEFAULT_GENERATION if gen is None or gen < 0 else gen


def _member_sort_key(member: GroupMember) -> tuple[int, bytes]:
    """Java's MemberInfo order: static members by instance id first, then
    dynamic ones by member id."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.member_id))


def _sorted_members(members: Iterable[GroupMember]) -> list[GroupMember]:
    """Members in Java's MemberInfo order. Java sorts (stably) a list built
    from its HashMap of members, so members that compare equal (static
    members sharing an instance id, which a live group does not allow but a
    leader can be handed) stay in that HashMap's order; so here."""
    by_id = {m.member_id: m for m in members}
    return sorted((by_id[mid] for mid in java_hash_order(list(by_id))), key=_member_sort_key)


def _java_string_hash(s: str) -> int:
    data = java_string_key(s)
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a java.util.HashMap (or HashSet) of these
    string keys, inserted in the given order with default sizing: by bucket
    ((h ^ h >>> 16) & (capacity - 1)), insertion order within a bucket (a
    resize keeps it). Buckets of 8+ colliding keys, which Java turns into
    trees, are not modelled. Java's sticky assignor decides some ties by this
    order, so reproducing its output needs it."""
    ordered = list(keys)
    capacity = 16
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = _java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(ordered, key=bucket)  # stable: insertion order within a bucket


def _partitions_per_topic(cluster: PartitionSource, topics: Iterable[str]) -> dict[str, list[int]]:
    """{topic: sorted partition ids} for the topics with known partitions,
    in the iteration order of Java's HashMap of them (which fixes the order
    partitions are added to a range member's list)."""
    out: dict[str, list[int]] = {}
    for topic in java_hash_order(topics):
        parts = cluster.partitions_for_topic(topic)
        if parts:
            out[topic] = sorted(parts)
        else:
            log.debug("no partition metadata for topic %s; it is not assigned", topic)
    return {t: out[t] for t in java_hash_order(list(out))}


def _partition_racks(cluster: PartitionSource, topic: str) -> dict[int, frozenset[str]]:
    fn: Callable[[str], Mapping[int, Iterable[str]] | None] | None = getattr(cluster, "partition_racks", None)
    if fn is None:
        return {}
    return {p: frozenset(r for r in racks if r) for p, racks in (fn(topic) or {}).items()}


def _use_rack_aware(consumer_racks: Iterable[str], partition_racks_union: Iterable[str],
                    racks_per_partition: Mapping[TopicPartition, frozenset[str]], prefer: bool = False) -> bool:
    """Java's rule: rack-aware only when some consumer rack hosts a replica,
    and (unless preferred) when not every partition is on every rack anyway."""
    if not consumer_racks or not (set(consumer_racks) & set(partition_racks_union)):
        return False
    if prefer:
        return True
    union = frozenset(partition_racks_union)
    return not all(r == union for r in racks_per_partition.values())


def _assignments(member_ids: Iterable[str], lists: Mapping[str, list[TopicPartition]]) -> Assignments:
    return {m: Assignment(HIGHEST_VERSION, group_by_topic(lists.get(m, []), sort=False), None) for m in member_ids}


def _all_topics(members: Iterable[GroupMember]) -> list[str]:
    """All subscribed topics, in the insertion order of Java's HashSet built
    by iterating the members' HashMap (topics of a member in the order its
    subscription lists them)."""
    seen: dict[str, None] = {}
    by_id = {m.member_id: m for m in members}
    for mid in java_hash_order(list(by_id)):
        for topic in _topics_of(by_id[mid].metadata):
            seen.setdefault(topic, None)
    return java_hash_order(list(seen))


# --------------------------------------------------------------------------
# range
# --------------------------------------------------------------------------
class _TopicRangeState:
    """One topic's state while the range assignor works through it."""

    def __init__(self, topic: str, partitions: list[int], consumers: list[tuple[str, str | None]],
                 replica_racks: Mapping[int, frozenset[str]]) -> None:
        self.topic = topic
        # consumers: [(member_id, rack or None)] in member order
        self.consumers = consumers
        self.rack_of = dict(consumers)
        self.unassigned = [TopicPartition(topic, p) for p in partitions]
        self.assigned_count = {c: 0 for c, _ in consumers}
        self.per_consumer = len(partitions) // len(consumers) if consumers else 0
        self.with_extra = len(partitions) % len(consumers) if consumers else 0
        racks_here = {rack for _, rack in consumers if rack is not None}
        self.partition_racks: dict[TopicPartition, frozenset[str]]
        if racks_here:
            self.partition_racks = {TopicPartition(topic, p): replica_racks.get(p, frozenset()) for p in partitions}
        else:
            self.partition_racks = {}
        union: set[str] = set()
        for racks in self.partition_racks.values():
            union |= racks
        self.needs_rack_aware = _use_rack_aware(racks_here, union, self.partition_racks)

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.rack_of.get(consumer)
        if rack is None:
            return True
        return rack in self.partition_racks.get(tp, ())

    def max_assignable(self, consumer: str) -> int:
        room = self.per_consumer + (1 if self.with_extra > 0 else 0) - self.assigned_count[consumer]
        return max(0, room)

    def on_assigned(self, consumer: str, tps: list[TopicPartition]) -> None:
        self.assigned_count[consumer] += len(tps)
        if self.assigned_count[consumer] > self.per_consumer:
            self.with_extra -= 1
        taken = set(tps)
        self.unassigned = [tp for tp in self.unassigned if tp not in taken]


class RangePartitionAssignor(AbstractPartitionAssignor):
    """Per topic, partitions in order split into contiguous ranges over the
    subscribed members in member order; the first (partitions % members)
    members get one more. With consumer racks (subscription v3) and replica
    racks known, partitions are first matched to members on a replica's rack
    (and co-partitioned topics — same members, same partition count — keep
    equal partition numbers on one member), as Java's RangeAssignor does.

    Example (Java's): C0, C1; t0 and t1 with 3 partitions each ->
    C0: t0p0 t0p1 t1p0 t1p1, C1: t0p2 t1p2.
    """

    name = "range"
    version = HIGHEST_VERSION

    def assign(self, cluster: PartitionSource, members: Members) -> Assignments:
        group = _members_of(members)
        ordered = _sorted_members(group)
        rack_of = {m.member_id: _rack_of(m.metadata) for m in group}
        per_topic = _partitions_per_topic(cluster, _all_topics(group))
        subscribed = {m.member_id: set(_topics_of(m.metadata)) for m in group}
        states: list[_TopicRangeState] = []
        for topic, partitions in per_topic.items():
            consumers = [(m.member_id, rack_of[m.member_id]) for m in ordered if topic in subscribed[m.member_id]]
            if not consumers:
                continue
            racks = _partition_racks(cluster, topic) if any(r for _, r in consumers) else {}
            states.append(_TopicRangeState(topic, partitions, consumers, racks))

        lists: Lists = {m.member_id: [] for m in group}
        rack_aware = any(s.needs_rack_aware for s in states)
        if rack_aware:
            self._assign_with_rack_matching(states, lists)
        for state in states:
            self._assign_ranges(state, lambda c, tp: True, lists)
        if rack_aware:
            for parts in lists.values():
                parts.sort(key=lambda tp: (java_string_key(tp.topic), tp.partition))
        return _assignments([m.member_id for m in group], lists)

    @staticmethod
    def _assign(consumer: str, tps: list[TopicPartition], state: _TopicRangeState, lists: Lists) -> None:
        lists[consumer].extend(tps)
        state.on_assigned(consumer, tps)

    def _assign_ranges(self, state: _TopicRangeState, may_assign: Callable[[str, TopicPartition], bool],
                       lists: Lists) -> None:
        for consumer, _ in state.consumers:
            if not state.unassigned:
                break
            limit = state.max_assignable(consumer)
            picked = [tp for tp in state.unassigned if may_assign(consumer, tp)][:limit]
            if picked:
                self._assign(consumer, picked, state, lists)

    def _assign_with_rack_matching(self, states: list[_TopicRangeState], lists: Lists) -> None:
        groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicRangeState]] = {}
        for state in states:
            key = (tuple(state.consumers), len(state.partition_racks))
            groups.setdefault(key, []).append(state)
        for (consumers, num_partitions), group in groups.items():
            if len(group) > 1:
                self._assign_co_partitioned(consumers, num_partitions, group, lists)
            elif group[0].needs_rack_aware:
                self._assign_ranges(group[0], group[0].racks_match, lists)

    def _assign_co_partitioned(self, consumers: Sequence[tuple[str, str | None]], num_partitions: int,
                               group: list[_TopicRangeState], lists: Lists) -> None:
        remaining = [c for c, _ in consumers]
        for p in range(num_partitions):
            tps = [TopicPartition(s.topic, p) for s in group]
            if not all(tp in s.partition_racks for s, tp in zip(group, tps)):
                continue  # a topic without partition p (partial metadata)
            match = next(
                (c for c in remaining
                 if all(s.racks_match(c, tp) and s.max_assignable(c) > 0 for s, tp in zip(group, tps))),
                None,
            )
            if match is None:
                continue
            for s, tp in zip(group, tps):
                self._assign(match, [tp], s, lists)
            if not any(s.max_assignable(match) > 0 for s in group):
                remaining.remove(match)
                if not remaining:
                    break

    def metadata(self, topics: Iterable[str]) -> Subscription:
        return Subscription(self.version, sorted(topics, key=java_string_key), None)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        pass


# --------------------------------------------------------------------------
# roundrobin
# --------------------------------------------------------------------------
class RoundRobinPartitionAssignor(AbstractPartitionAssignor):
    """All partitions of all subscribed topics, sorted by (topic, partition),
    dealt one by one to the members in member order, skipping a member not
    subscribed to the partition's topic. Identical subscriptions give counts
    within one of each other.

    Example (Java's): C0, C1; t0 and t1 with 3 partitions each ->
    C0: t0p0 t0p2 t1p1, C1: t0p1 t1p0 t1p2.
    """

    name = "roundrobin"
    version = HIGHEST_VERSION

    def assign(self, cluster: PartitionSource, members: Members) -> Assignments:
        group = _members_of(members)
        ordered = _sorted_members(group)
        subscribed = {m.member_id: set(_topics_of(m.metadata)) for m in group}
        lists: Lists = {m.member_id: [] for m in group}
        topics = sorted({t for m in group for t in _topics_of(m.metadata)}, key=java_string_key)
        cursor = 0
        for topic in topics:
            parts = cluster.partitions_for_topic(topic)
            if not parts:
                continue
            for p in sorted(parts):
                # some member subscribes to `topic` (it came from a subscription),
                # so this finds one within len(ordered) steps
                while topic not in subscribed[ordered[cursor].member_id]:
                    cursor = (cursor + 1) % len(ordered)
                lists[ordered[cursor].member_id].append(TopicPartition(topic, p))
                cursor = (cursor + 1) % len(ordered)
        return _assignments([m.member_id for m in group], lists)

    def metadata(self, topics: Iterable[str]) -> Subscription:
        return Subscription(self.version, sorted(topics, key=java_string_key), None)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        pass


# --------------------------------------------------------------------------
# sticky: user data formats (not version-prefixed; declared like the rest)
# --------------------------------------------------------------------------
# StickyAssignor's user data: layout 0 without, layout 1 with the generation.
_STICKY_USER_DATA = parse_struct("""
previous_assignment  []       0+
  topic              string   0+
  partitions         [int32]  0+
generation           int32    1+  default=-1
""")
# CooperativeStickyAssignor's user data: the generation alone, for members
# whose subscription predates the generation field (v0/v1).
_COOPERATIVE_USER_DATA = parse_struct("""
generation  int32  0+  default=-1
""")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """The eager sticky assignor's user data (layout 1): previously owned
    partitions grouped per topic, and the generation they belong to."""
    w = Writer()
    body = {
        "previous_assignment": [{"topic": g.topic, "partitions": g.partitions}
                                for g in group_by_topic(list(partitions), sort=True)],
        "generation": generation,
    }
    try:
        _encode_struct(_STICKY_USER_DATA, body, w, 1, False, "")
    except (_EncodeError, ValueError) as exc:
        raise IllegalArgumentError("cannot encode sticky user data: {0}".format(exc)) from None
    return w.getvalue()


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int]:
    """(owned partitions, generation) from sticky user data, as Java reads
    it: layout 1, else layout 0 (generation unknown: -1); bytes that fit
    neither mean no usable history ([], -1), never an error — a member's
    unreadable history must not stop the group from rebalancing."""
    if not data:
        return [], DEFAULT_GENERATION
    for layout in (1, 0):
        try:
            body = _decode_struct(_STICKY_USER_DATA, Reader(data), layout, False)
        except _Malformed:
            continue
        parts = [TopicPartition(e["topic"], p) for e in body["previous_assignment"] for p in e["partitions"]]
        generation: int = body["generation"] if layout == 1 else DEFAULT_GENERATION
        return parts, generation
    log.warning("ignoring sticky user data that fits no known layout (%d bytes)", len(data))
    return [], DEFAULT_GENERATION


def encode_cooperative_user_data(generation: int) -> bytes:
    """The cooperative-sticky user data: the generation as an int32, for
    leaders that read it there (members older than subscription v2)."""
    w = Writer()
    try:
        _encode_struct(_COOPERATIVE_USER_DATA, {"generation": generation}, w, 0, False, "")
    except (_EncodeError, ValueError) as exc:
        raise IllegalArgumentError("cannot encode cooperative user data: {0}".format(exc)) from None
    return w.getvalue()


def decode_cooperative_user_data(data: bytes | None) -> int:
    """The generation in cooperative-sticky user data; -1 when absent or
    unreadable (Java's fallback)."""
    if data is None:
        return DEFAULT_GENERATION
    try:
        generation: int = _decode_struct(_COOPERATIVE_USER_DATA, Reader(data), 0, False)["generation"]
        return generation
    except _Malformed:
        return DEFAULT_GENERATION


# --------------------------------------------------------------------------
# sticky: the shared algorithm
# --------------------------------------------------------------------------
class _RackInfo:
    """Which racks consumers and partition replicas are on (Java's RackInfo)."""

    def __init__(self, member_order: Iterable[str], subscriptions: Mapping[str, object],
                 partitions_per_topic: Mapping[str, list[int]], cluster: PartitionSource) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for mid in member_order:
            rack = _rack_of(subscriptions[mid])
            if rack is not None:
                consumers_by_rack.setdefault(rack, []).append(mid)
        partition_racks: dict[TopicPartition, frozenset[str]] = {}
        union: set[str] = set()
        if consumers_by_rack:
            for topic, parts in partitions_per_topic.items():
                by_p = _partition_racks(cluster, topic)
                for p in parts:
                    racks = by_p.get(p, frozenset())
                    partition_racks[TopicPartition(topic, p)] = racks
                    union |= racks
        self.consumer_racks: dict[str, str]
        self.partition_racks: dict[TopicPartition, frozenset[str]]
        if _use_rack_aware(consumers_by_rack, union, partition_racks):
            self.consumer_racks = {c: rack for rack, cs in consumers_by_rack.items() for c in cs}
            self.partition_racks = partition_racks
        else:
            self.consumer_racks = {}
            self.partition_racks = {}
        # Java computes this from the replica racks whenever any consumer has a
        # rack, even when it then decides against rack-aware assignment, and
        # orders unassigned partitions by it; reproduced as is.
        self.consumers_by_partition = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in racks) for tp, racks in partition_racks.items()
        }

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        return rack is not None and rack not in self.partition_racks.get(tp, ())

    def sort_by_rack_consumers(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        if not self.consumers_by_partition:
            return list(partitions)
        return sorted(partitions, key=lambda tp: self.consumers_by_partition.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: Sequence[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(consumers)):
            index = (first + i) % len(consumers)
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_string_key(tp.topic), tp.partition)


class _ListIterator:
    """java.util.Iterator over a list, with remove() (used where Java's
    round robin removes members while iterating)."""

    def __init__(self, items: list[str]) -> None:
        self.items = items
        self.cursor = 0
        self.last = -1

    def has_next(self) -> bool:
        return self.cursor < len(self.items)

    def next(self) -> str:
        self.last = self.cursor
        self.cursor += 1
        return self.items[self.last]

    def remove(self) -> None:
        if self.last < 0:
            raise IllegalStateError("iterator remove() without next()")
        del self.items[self.last]
        self.cursor = self.last
        self.last = -1


class _ConstrainedBuilder:
    """Every member subscribes to the same topics: each keeps up to its quota
    of what it owns, the rest is dealt round robin (rack-matched first).
    Follows Java's ConstrainedAssignmentBuilder step by step."""

    def __init__(self, partitions_per_topic: Mapping[str, list[int]], rack_info: _RackInfo,
                 owned: Mapping[str, list[TopicPartition]], member_order: list[str],
                 multiply_claimed: set[TopicPartition]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.rack_info = rack_info
        self.owned = owned
        self.member_order = member_order
        self.multiply_claimed = multiply_claimed
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.transferring: dict[TopicPartition, str] = {}
        total = sum(len(p) for p in partitions_per_topic.values())
        n = len(owned)
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over_min = total % n
        self.current_over_min = 0
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        self.assignment: Lists = {m: [] for m in owned}
        self.assigned: list[TopicPartition] = []

    def build(self) -> Lists:
        self._assign_owned()
        assigned = set(self.assigned)
        unassigned = [
            TopicPartition(t, p)
            for t in sorted(self.partitions_per_topic, key=java_string_key)
            for p in self.partitions_per_topic[t]
            if TopicPartition(t, p) not in assigned
        ]
        self.under_min.sort(key=java_string_key)
        self.exactly_min.sort(key=java_string_key)
        unassigned = self.rack_info.sort_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _assign_owned(self) -> None:
        for consumer in self.member_order:
            kept: list[TopicPartition] = []
            for tp in self.owned[consumer]:
                if self.rack_info.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    kept.append(tp)
            kept.sort(key=lambda tp: (tp.partition, java_string_key(tp.topic)))
            kept = [tp for tp in kept if tp not in self.multiply_claimed]
            mine = self.assignment[consumer]
            if len(kept) < self.min_quota:
                mine.extend(kept)
                self.assigned.extend(kept)
                self.under_min.append(consumer)
            elif len(kept) >= self.max_quota and self.current_over_min < self.expected_over_min:
                self.current_over_min += 1
                if self.current_over_min == self.expected_over_min:
                    self.exactly_min.clear()
                mine.extend(kept[:self.max_quota])
                self.assigned.extend(kept[:self.max_quota])
                for tp in kept[self.max_quota:]:
                    self.maybe_revoked[tp] = consumer
            else:
                mine.extend(kept[:self.min_quota])
                self.assigned.extend(kept[:self.min_quota])
                for tp in kept[self.min_quota:]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over_min < self.expected_over_min:
                    self.exactly_min.append(consumer)

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        if not self.rack_info.consumer_racks:
            return unassigned
        left: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            consumer: str | None = None
            index = self.rack_info.next_rack_consumer(tp, self.under_min, next_index)
            if index >= 0:
                consumer = self.under_min[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(consumer)
                    if count < self.max_quota and self.current_over_min < self.expected_over_min:
                        self.exactly_min.append(consumer)
                else:
                    index += 1
                next_index = index % len(self.under_min) if self.under_min else 0
            elif self.exactly_min:
                first = self.rack_info.next_rack_consumer(tp, self.exactly_min, 0)
                if first >= 0:
                    consumer = self.exactly_min[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del self.exactly_min[first]
                        self.current_over_min += 1
                        if self.current_over_min == self.expected_over_min:
                            self.exactly_min.clear()
            if consumer is not None:
                self._assign_new(tp, consumer)
            else:
                left.append(tp)
        return left

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        it = _ListIterator(self.under_min)
        for tp in unassigned:
            if it.has_next():
                consumer = it.next()
            elif not self.under_min and not self.exactly_min:
                raise IllegalStateError("sticky assignor: no member left to take {0}".format(tp))
            elif not self.under_min:
                consumer = self.exactly_min.pop(0)
            else:
                it = _ListIterator(self.under_min)
                consumer = it.next()
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                it.remove()
                self.exactly_min.append(consumer)
            elif count == self.max_quota:
                self.current_over_min += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        self.assignment[consumer].append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in self.multiply_claimed:
            self.transferring[tp] = consumer
        return len(self.assignment[consumer])

    def _verify_unfilled(self) -> None:
        if not self.under_min:
            return
        if self.current_over_min != self.expected_over_min:
            raise IllegalStateError("sticky assignor: partitions ran out before every member reached its quota")
        for consumer in self.under_min:
            if len(self.assignment[consumer]) != self.min_quota:
                raise IllegalStateError("sticky assignor: member {0} is below its quota".format(consumer))


#: one hand-over of a chain: (from member, topic, to member, owned partitions may move)
Move = tuple[str, str, str, bool]


class _GeneralBuilder:
    """Members subscribe to different topics.

    1. Every member keeps each owned partition it still subscribes to.
    2. Each unassigned partition (those of topics with the fewest eligible
       members first) goes to the least-loaded eligible member, preferring
       one on a replica's rack, then the member able to take the fewest
       partitions at all (the others get more chances later).
    3. While some member has at least two partitions more than a member it
       can reach by a chain of hand-overs (it gives one partition to the next
       member in the chain, which gives one on, and so on), apply the chain:
       the ends even out and every member in between keeps its count. Each
       chain lowers the sum of squared loads, so this ends, and when it ends
       no sequence of moves could make the assignment more even.

    Moving a partition its member already owned costs a revocation (and,
    cooperatively, another rebalance), so chains of newly given partitions
    come before any chain moving an owned one, and within each kind a direct
    move anywhere in the group before a longer chain. The search runs over
    topics, not partitions (a member can hand any of its partitions of a
    topic to anyone subscribed to it), which keeps a rebalance of hundreds of
    members and thousands of partitions fast."""

    def __init__(self, partitions_per_topic: Mapping[str, list[int]], rack_info: _RackInfo,
                 owned: Mapping[str, list[TopicPartition]], member_order: list[str],
                 subscriptions: Mapping[str, object]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.rack_info = rack_info
        self.owned = owned
        self.member_order = member_order
        self.subscribed = {m: set(_topics_of(subscriptions[m])) for m in member_order}

    def build(self) -> Lists:
        topics = self.partitions_per_topic
        existing = {TopicPartition(t, p) for t, parts in topics.items() for p in parts}
        order = sorted(self.member_order, key=java_string_key)
        potential = {m: sum(len(topics[t]) for t in self.subscribed[m] if t in topics) for m in order}
        self.rank = {m: (potential[m], i) for i, m in enumerate(order)}
        self.eligible = {t: sorted((m for m in order if t in self.subscribed[m]), key=self.rank.__getitem__)
                         for t in topics}
        self.load = {m: 0 for m in order}
        # holdings[m][topic] = ([newly given], [owned]) partitions, in the order received
        self.holdings: dict[str, dict[str, tuple[list[TopicPartition], list[TopicPartition]]]] = {m: {} for m in order}
        self.kept_of: dict[str, set[TopicPartition]] = {m: set() for m in order}
        taken: set[TopicPartition] = set()
        for m in order:
            for tp in sorted(self.owned[m], key=_tp_key):
                if tp in existing and tp.topic in self.subscribed[m] and tp not in taken:
                    self.kept_of[m].add(tp)
                    self._give(m, tp)
                    taken.add(tp)
        unassigned = [tp for tp in sorted(existing, key=_tp_key) if tp not in taken and self.eligible[tp.topic]]
        unassigned.sort(key=lambda tp: len(self.eligible[tp.topic]))  # stable: (topic, partition) within a count
        for tp in unassigned:
            best = min(self.eligible[tp.topic],
                       key=lambda m: (self.load[m], 1 if self._rack_mismatch(m, tp) else 0, self.rank[m]))
            self._give(best, tp)
        while True:
            path = self._find_path()
            if path is None:
                break
            for src, topic, dst, allow_owned in path:
                self._give(dst, self._take(src, topic, allow_owned))
        return {
            m: sorted((tp for new, owned in self.holdings[m].values() for tp in owned + new), key=_tp_key)
            for m in order
        }

    def _rack_mismatch(self, member: str, tp: TopicPartition) -> bool:
        return bool(self.rack_info.consumer_racks) and self.rack_info.racks_mismatch(member, tp)

    def _give(self, member: str, tp: TopicPartition) -> None:
        new, owned = self.holdings[member].setdefault(tp.topic, ([], []))
        (owned if tp in self.kept_of[member] else new).append(tp)
        self.load[member] += 1

    def _take(self, member: str, topic: str, allow_owned: bool) -> TopicPartition:
        new, owned = self.holdings[member][topic]
        tp = new.pop() if new else owned.pop()
        assert allow_owned or tp not in self.kept_of[member]
        self.load[member] -= 1
        return tp

    def _movable_topics(self, member: str, allow_owned: bool) -> list[str]:
        return [t for t, (new, owned) in self.holdings[member].items() if new or (allow_owned and owned)]

    def _find_path(self) -> list[Move] | None:
        """[(from, topic, to, allow_owned)] evening out two members, or None."""
        load, rank = self.load, self.rank
        donors = sorted(load, key=lambda m: (-load[m], rank[m]))
        floor = min(load.values())
        best_taker: dict[str, str] = {}  # topic -> its least-loaded eligible member, this call

        def taker(topic: str) -> str:
            v = best_taker.get(topic)
            if v is None:
                v = best_taker[topic] = min(self.eligible[topic], key=lambda m: (load[m], rank[m]))
            return v

        for allow_owned in (False, True):
            # direct moves anywhere in the group first
            for src in donors:
                top = load[src]
                if top - 2 < floor:
                    break
                takers = [(taker(t), t) for t in self._movable_topics(src, allow_owned)]
                takers = [(v, t) for v, t in takers if load[v] + 2 <= top]
                if takers:
                    v, topic = min(takers, key=lambda vt: (load[vt[0]], rank[vt[0]]))
                    return [(src, topic, v, allow_owned)]
            # then chains. A member reached from a donor that found no target
            # has no target either (what it reaches, the donor reached, and
            # its own load is no higher), so it is not searched again.
            dead: set[str] = set()
            for src in donors:
                top = load[src]
                if top - 2 < floor:
                    break
                if src in dead:
                    continue
                path = self._chain_from(src, top, allow_owned)
                if isinstance(path, list):
                    return path
                dead |= path
        return None

    def _chain_from(self, src: str, top: int, allow_owned: bool) -> list[Move] | set[str]:
        """The shortest chain from src to a member with at most top - 2
        partitions, as a path; else the set of members src reaches."""
        load, rank = self.load, self.rank
        parent: dict[str, tuple[str, str] | None] = {src: None}
        seen_topics: set[str] = set()
        frontier = [src]
        while frontier:
            reached: list[str] = []
            for u in frontier:
                for topic in self._movable_topics(u, allow_owned):
                    if topic in seen_topics:
                        continue
                    seen_topics.add(topic)
                    for v in self.eligible[topic]:
                        if v not in parent:
                            parent[v] = (u, topic)
                            reached.append(v)
            # of the members first reached at this length, the least loaded
            # gains most (ties: the most constrained member)
            targets = [v for v in reached if load[v] + 2 <= top]
            if targets:
                v = min(targets, key=lambda m: (load[m], rank[m]))
                path: list[Move] = []
                step = parent[v]
                while step is not None:
                    u, topic = step
                    path.append((u, topic, v, allow_owned))
                    v = u
                    step = parent[v]
                path.reverse()
                return path
            frontier = sorted(reached, key=rank.__getitem__)
        return set(parent)


class _AbstractStickyAssignor(AbstractPartitionAssignor):
    """What the eager and cooperative sticky assignors share."""

    version = HIGHEST_VERSION

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION
        # None until the first assignment: a member that never had one sends
        # no sticky history at all (null user data), as Java's does
        self._owned: list[TopicPartition] | None = None
        # set by assign(): partitions moving to another member in the
        # constrained path (None in the general path: computed instead)
        self._transferring: dict[TopicPartition, str] | None = None

    def _member_data(self, subscription: object) -> tuple[list[TopicPartition], int]:
        """(owned partitions, generation) the assignor trusts for a member."""
        raise NotImplementedError

    def _sticky_assign(self, cluster: PartitionSource, members: Members,
                       ) -> tuple[Lists, dict[str, Subscription], Lists]:
        group = _members_of(members)
        subscriptions = {m.member_id: m.metadata for m in group}
        # Java iterates its HashMap of members; its order decides ties
        member_order = java_hash_order([m.member_id for m in group])
        per_topic = _partitions_per_topic(cluster, _all_topics(group))
        all_topics = set(per_topic)
        existing = {TopicPartition(t, p) for t, parts in per_topic.items() for p in parts}

        owned: Lists = {}
        owner_of: dict[TopicPartition, str] = {}
        generation_of: dict[str, int] = {}
        multiply_claimed: set[TopicPartition] = set()
        first_topics: set[str] | None = None
        all_equal = True
        for mid in member_order:
            topics = set(_topics_of(subscriptions[mid]))
            if first_topics is None:
                first_topics = topics
            elif topics != first_topics:
                all_equal = False
            claimed, generation = self._member_data(subscriptions[mid])
            # A competing claim is weighed against the other member's
            # subscription generation field, not the generation its assignor
            # data carries: Java's AbstractStickyAssignor does so, and the two
            # differ only for members that fill one and not the other
            # (kafka-python's v0 subscriptions, for one)
            generation_of[mid] = _generation_of(subscriptions[mid])
            mine: list[TopicPartition] = []
            owned[mid] = mine
            for tp in claimed:
                # Java keeps claims on any topic with metadata; a partition the
                # topic no longer has (recreated smaller) is dropped here too
                if tp.topic not in all_topics or tp not in existing:
                    continue
                other = owner_of.get(tp)
                if other is None:
                    mine.append(tp)
                    owner_of[tp] = mid
                elif generation == generation_of[other]:
                    log.error("members %s and %s both claim %s in generation %d; neither keeps it",
                              mid, other, tp, generation)
                    multiply_claimed.add(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    owner_of[tp] = mid
                elif generation > generation_of[other]:
                    mine.append(tp)
                    if tp in owned[other]:
                        owned[other].remove(tp)
                    owner_of[tp] = mid
        rack_info = _RackInfo(member_order, subscriptions, per_topic, cluster)
        if not group:
            return {}, subscriptions, owned
        if all_equal:
            builder = _ConstrainedBuilder(per_topic, rack_info, owned, member_order, multiply_claimed)
            result = builder.build()
            self._transferring = builder.transferring
        else:
            result = _GeneralBuilder(per_topic, rack_info, owned, member_order, subscriptions).build()
            self._transferring = None
        return result, subscriptions, owned

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._owned = list(assignment.partitions()) if hasattr(assignment, "partitions") else []
        self._generation = generation


class StickyPartitionAssignor(_AbstractStickyAssignor):
    """Eager sticky (KIP-54): as balanced as the subscriptions allow, moving
    as few partitions as possible between rebalances. A member's previous
    assignment and generation travel in its subscription user data (eager
    members own nothing when they rejoin)."""

    name = "sticky"

    def _member_data(self, subscription: object) -> tuple[list[TopicPartition], int]:
        return decode_sticky_user_data(getattr(subscription, "user_data", None))

    def metadata(self, topics: Iterable[str]) -> Subscription:
        user_data = None
        if self._owned is not None:
            user_data = encode_sticky_user_data(self._owned, self._generation)
        return Subscription(self.version, sorted(topics, key=java_string_key), user_data)

    def assign(self, cluster: PartitionSource, members: Members) -> Assignments:
        result, _, _ = self._sticky_assign(cluster, members)
        return _assignments([m.member_id for m in _members_of(members)], result)


class CooperativeStickyAssignor(_AbstractStickyAssignor):
    """Incremental cooperative sticky (KIP-429): the sticky target, minus any
    partition still owned by another member. That owner sees the partition
    missing from its assignment, revokes it (owned minus assigned) and
    rejoins; the next round assigns it to its new owner. Supports the eager
    protocol too, as Java's does, for groups moving between the two."""

    name = "cooperative-sticky"

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def _member_data(self, subscription: object) -> tuple[list[TopicPartition], int]:
        owned = _owned_of(subscription)
        generation = _generation_of(subscription)
        if generation != DEFAULT_GENERATION:
            return owned, generation
        return owned, decode_cooperative_user_data(getattr(subscription, "user_data", None))

    def metadata(self, topics: Iterable[str]) -> Subscription:
        return Subscription(
            self.version,
            sorted(topics, key=java_string_key),
            encode_cooperative_user_data(self._generation),
            group_by_topic(self._owned or [], sort=True),
            self._generation,
        )

    def assign(self, cluster: PartitionSource, members: Members) -> Assignments:
        result, subscriptions, _ = self._sticky_assign(cluster, members)
        transferring = self._transferring
        if transferring is None:
            transferring = _moving_partitions(
                {m: _owned_of(s) for m, s in subscriptions.items()}, result)
        for tp, new_owner in transferring.items():
            if tp in result[new_owner]:
                result[new_owner].remove(tp)
        return _assignments([m.member_id for m in _members_of(members)], result)


# --------------------------------------------------------------------------
# cooperative bookkeeping for the coordinator
# --------------------------------------------------------------------------
def _moving_partitions(owned_by_member: Mapping[str, Iterable[TopicPartition]],
                       assigned_by_member: Mapping[str, list[TopicPartition]]) -> dict[TopicPartition, str]:
    """{partition: new owner} for partitions added to one member while
    revoked from another (Java's computePartitionsTransferringOwnership)."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, assigned in assigned_by_member.items():
        owned = set(owned_by_member.get(member, ()))
        assigned_set = set(assigned)
        for tp in assigned:
            if tp not in owned:
                added[tp] = member
        revoked |= owned - assigned_set
    return {tp: m for tp, m in added.items() if tp in revoked}


def partition_changes(owned: Iterable[TopicPartition], assigned: Iterable[TopicPartition],
                      ) -> tuple[set[TopicPartition], set[TopicPartition]]:
    """(revoked, added) for one member: what the coordinator revokes and what
    it hands the listener after a cooperative rebalance."""
    before, after = set(owned), set(assigned)
    return before - after, after - before


def validate_cooperative_assignment(owned_by_member: Mapping[str, Iterable[TopicPartition]],
                                    assignments: Mapping[str, Assignment | Iterable[TopicPartition]]) -> None:
    """Raise IllegalStateError if an assignment gives a member a partition
    that another member still owns and is losing in this round: under the
    cooperative protocol a partition must be revoked (one rebalance) before
    it is assigned elsewhere (the next). The Java ConsumerCoordinator runs
    this check on the leader for cooperative assignors other than its own.

    owned_by_member: {member_id: iterable of TopicPartition}
    assignments: {member_id: Assignment or iterable of TopicPartition}"""
    assigned: dict[str, list[TopicPartition]] = {}
    for member, value in assignments.items():
        parts = value.partitions() if hasattr(value, "partitions") else value
        assigned[member] = list(parts)
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, parts in assigned.items():
        gone, new = partition_changes(owned_by_member.get(member, ()), parts)
        added |= new
        revoked |= gone
    both = added & revoked
    if both:
        raise IllegalStateError(
            "cooperative assignor reassigned partitions still owned by another member: {0}".format(
                sorted(both, key=_tp_key)))


# the Java client's class names
RangeAssignor = RangePartitionAssignor
RoundRobinAssignor = RoundRobinPartitionAssignor
StickyAssignor = StickyPartitionAssignor

#: kafka-python's default partition_assignment_strategy
DEFAULT_ASSIGNORS = (RangePartitionAssignor, RoundRobinPartitionAssignor)

ASSIGNORS_BY_NAME = {
    cls.name: cls
    for cls in (RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor, CooperativeStickyAssignor)
}
