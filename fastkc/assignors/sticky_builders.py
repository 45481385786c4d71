"""The sticky algorithm both sticky assignors share: Java's "constrained" builder
(every member subscribes to the same topics) and the general one."""
from collections.abc import Iterable, Mapping, Sequence

from fastkc.assignors.abstract import Lists, PartitionSource
from fastkc.assignors.members import member_rack, member_topics, partition_racks_of, use_rack_aware
from fastkc.errors import IllegalStateError
from fastkc.protocol.consumer_protocol import java_string_key
from fastkc.structs import TopicPartition


class RackInfo:
    """Which racks consumers and partition replicas are on (Java's RackInfo)."""

    def __init__(self, member_order: Iterable[str], subscriptions: Mapping[str, object],
                 partitions_per_topic: Mapping[str, list[int]], cluster: PartitionSource) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for mid in member_order:
            rack = member_rack(subscriptions[mid])
            if rack is not None:
                consumers_by_rack.setdefault(rack, []).append(mid)
        partition_racks: dict[TopicPartition, frozenset[str]] = {}
        union: set[str] = set()
        if consumers_by_rack:
            for topic, parts in partitions_per_topic.items():
                by_p = partition_racks_of(cluster, topic)
                for p in parts:
                    racks = by_p.get(p, frozenset())
                    partition_racks[TopicPartition(topic, p)] = racks
                    union |= racks
        self.consumer_racks: dict[str, str]
        self.partition_racks: dict[TopicPartition, frozenset[str]]
        if use_rack_aware(consumers_by_rack, union, partition_racks):
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


def tp_key(tp: TopicPartition) -> tuple[bytes, int]:
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


class ConstrainedBuilder:
    """Every member subscribes to the same topics: each keeps up to its quota
    of what it owns, the rest is dealt round robin (rack-matched first).
    Follows Java's ConstrainedAssignmentBuilder step by step."""

    def __init__(self, partitions_per_topic: Mapping[str, list[int]], rack_info: RackInfo,
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


class GeneralBuilder:
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

    def __init__(self, partitions_per_topic: Mapping[str, list[int]], rack_info: RackInfo,
                 owned: Mapping[str, list[TopicPartition]], member_order: list[str],
                 subscriptions: Mapping[str, object]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.rack_info = rack_info
        self.owned = owned
        self.member_order = member_order
        self.subscribed = {m: set(member_topics(subscriptions[m])) for m in member_order}

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
            for tp in sorted(self.owned[m], key=tp_key):
                if tp in existing and tp.topic in self.subscribed[m] and tp not in taken:
                    self.kept_of[m].add(tp)
                    self._give(m, tp)
                    taken.add(tp)
        unassigned = [tp for tp in sorted(existing, key=tp_key) if tp not in taken and self.eligible[tp.topic]]
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
            m: sorted((tp for new, owned in self.holdings[m].values() for tp in owned + new), key=tp_key)
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
