"""The range assignor (Java's RangeAssignor, rack-aware as KIP-881)."""
from collections.abc import Callable, Iterable, Mapping, Sequence

from fastkc.assignors.abstract import AbstractPartitionAssignor, Assignments, Lists, Members, PartitionSource
from fastkc.assignors.members import (
    as_assignments,
    member_rack,
    member_topics,
    members_of,
    partition_racks_of,
    sorted_members,
    subscribed_topics,
    topic_partitions,
    use_rack_aware,
)
from fastkc.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    Subscription,
    java_string_key,
)
from fastkc.structs import TopicPartition


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
        self.needs_rack_aware = use_rack_aware(racks_here, union, self.partition_racks)

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
        group = members_of(members)
        ordered = sorted_members(group)
        rack_of = {m.member_id: member_rack(m.metadata) for m in group}
        per_topic = topic_partitions(cluster, subscribed_topics(group))
        subscribed = {m.member_id: set(member_topics(m.metadata)) for m in group}
        states: list[_TopicRangeState] = []
        for topic, partitions in per_topic.items():
            consumers = [(m.member_id, rack_of[m.member_id]) for m in ordered if topic in subscribed[m.member_id]]
            if not consumers:
                continue
            racks = partition_racks_of(cluster, topic) if any(r for _, r in consumers) else {}
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
        return as_assignments([m.member_id for m in group], lists)

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
