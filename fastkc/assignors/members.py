"""What every assignor reads: the cluster (StaticCluster) and the group's members
in Java's order (HashMap iteration, MemberInfo sort), their subscriptions'
topics, owned partitions, racks and generations."""
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from fastkc.assignors.abstract import (
    DEFAULT_GENERATION,
    Assignments,
    GroupMember,
    Members,
    MetadataView,
    PartitionSource,
)
from fastkc.errors import IllegalArgumentError
from fastkc.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    decode_subscription,
    group_by_topic,
    java_string_key,
)
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import BrokerMetadata

log = logging.getLogger(__name__)


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


def members_of(members: Members) -> list[GroupMember]:
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


def member_topics(subscription: object) -> list[str]:
    return list(getattr(subscription, "topics", None) or ())


def member_owned(subscription: object) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for item in getattr(subscription, "owned_partitions", None) or ():
        topic, partitions = (item.topic, item.partitions) if hasattr(item, "topic") else item
        out.extend(TopicPartition(topic, p) for p in partitions)
    return out


def member_rack(subscription: object) -> str | None:
    rack: str | None = getattr(subscription, "rack_id", None)
    return rack or None  # Java treats "" as no rack


def member_generation(subscription: object) -> int:
    gen: int | None = getattr(subscription, "generation_id", DEFAULT_GENERATION)
    return DEFAULT_GENERATION if gen is None or gen < 0 else gen


def _member_sort_key(member: GroupMember) -> tuple[int, bytes]:
    """Java's MemberInfo order: static members by instance id first, then
    dynamic ones by member id."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.member_id))


def sorted_members(members: Iterable[GroupMember]) -> list[GroupMember]:
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


def topic_partitions(cluster: PartitionSource, topics: Iterable[str]) -> dict[str, list[int]]:
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


def partition_racks_of(cluster: PartitionSource, topic: str) -> dict[int, frozenset[str]]:
    fn: Callable[[str], Mapping[int, Iterable[str]] | None] | None = getattr(cluster, "partition_racks", None)
    if fn is None:
        return {}
    return {p: frozenset(r for r in racks if r) for p, racks in (fn(topic) or {}).items()}


def use_rack_aware(consumer_racks: Iterable[str], partition_racks_union: Iterable[str],
                    racks_per_partition: Mapping[TopicPartition, frozenset[str]], prefer: bool = False) -> bool:
    """Java's rule: rack-aware only when some consumer rack hosts a replica,
    and (unless preferred) when not every partition is on every rack anyway."""
    if not consumer_racks or not (set(consumer_racks) & set(partition_racks_union)):
        return False
    if prefer:
        return True
    union = frozenset(partition_racks_union)
    return not all(r == union for r in racks_per_partition.values())


def as_assignments(member_ids: Iterable[str], lists: Mapping[str, list[TopicPartition]]) -> Assignments:
    return {m: Assignment(HIGHEST_VERSION, group_by_topic(lists.get(m, []), sort=False), None) for m in member_ids}


def subscribed_topics(members: Iterable[GroupMember]) -> list[str]:
    """All subscribed topics, in the insertion order of Java's HashSet built
    by iterating the members' HashMap (topics of a member in the order its
    subscription lists them)."""
    seen: dict[str, None] = {}
    by_id = {m.member_id: m for m in members}
    for mid in java_hash_order(list(by_id)):
        for topic in member_topics(by_id[mid].metadata):
            seen.setdefault(topic, None)
    return java_hash_order(list(seen))
