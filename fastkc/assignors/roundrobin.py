"""The roundrobin assignor (Java's RoundRobinAssignor; not rack-aware, as Java's)."""
from collections.abc import Iterable

from fastkc.assignors.abstract import AbstractPartitionAssignor, Assignments, Lists, Members, PartitionSource
from fastkc.assignors.members import as_assignments, member_topics, members_of, sorted_members
from fastkc.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    Subscription,
    java_string_key,
)
from fastkc.structs import TopicPartition


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
        group = members_of(members)
        ordered = sorted_members(group)
        subscribed = {m.member_id: set(member_topics(m.metadata)) for m in group}
        lists: Lists = {m.member_id: [] for m in group}
        topics = sorted({t for m in group for t in member_topics(m.metadata)}, key=java_string_key)
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
        return as_assignments([m.member_id for m in group], lists)

    def metadata(self, topics: Iterable[str]) -> Subscription:
        return Subscription(self.version, sorted(topics, key=java_string_key), None)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        pass
