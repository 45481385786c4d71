"""The eager sticky assignor (KIP-54) and what it shares with the cooperative one."""
import logging
from collections.abc import Iterable

from fastkc.assignors.abstract import (
    DEFAULT_GENERATION,
    AbstractPartitionAssignor,
    Assignments,
    Lists,
    Members,
    PartitionSource,
)
from fastkc.assignors.members import (
    as_assignments,
    java_hash_order,
    member_generation,
    member_topics,
    members_of,
    subscribed_topics,
    topic_partitions,
)
from fastkc.assignors.sticky_builders import ConstrainedBuilder, GeneralBuilder, RackInfo
from fastkc.assignors.user_data import decode_sticky_user_data, encode_sticky_user_data
from fastkc.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    Subscription,
    java_string_key,
)
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)


class AbstractStickyAssignor(AbstractPartitionAssignor):
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
        group = members_of(members)
        subscriptions = {m.member_id: m.metadata for m in group}
        # Java iterates its HashMap of members; its order decides ties
        member_order = java_hash_order([m.member_id for m in group])
        per_topic = topic_partitions(cluster, subscribed_topics(group))
        all_topics = set(per_topic)
        existing = {TopicPartition(t, p) for t, parts in per_topic.items() for p in parts}

        owned: Lists = {}
        owner_of: dict[TopicPartition, str] = {}
        generation_of: dict[str, int] = {}
        multiply_claimed: set[TopicPartition] = set()
        first_topics: set[str] | None = None
        all_equal = True
        for mid in member_order:
            topics = set(member_topics(subscriptions[mid]))
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
            generation_of[mid] = member_generation(subscriptions[mid])
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
        rack_info = RackInfo(member_order, subscriptions, per_topic, cluster)
        if not group:
            return {}, subscriptions, owned
        if all_equal:
            builder = ConstrainedBuilder(per_topic, rack_info, owned, member_order, multiply_claimed)
            result = builder.build()
            self._transferring = builder.transferring
        else:
            result = GeneralBuilder(per_topic, rack_info, owned, member_order, subscriptions).build()
            self._transferring = None
        return result, subscriptions, owned

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._owned = list(assignment.partitions()) if hasattr(assignment, "partitions") else []
        self._generation = generation


class StickyPartitionAssignor(AbstractStickyAssignor):
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
        return as_assignments([m.member_id for m in members_of(members)], result)
