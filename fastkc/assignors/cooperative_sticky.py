"""The cooperative-sticky assignor (KIP-429)."""
from collections.abc import Iterable

from fastkc.assignors.abstract import DEFAULT_GENERATION, Assignments, Members, PartitionSource, RebalanceProtocol
from fastkc.assignors.cooperative import moving_partitions
from fastkc.assignors.members import as_assignments, member_generation, member_owned, members_of
from fastkc.assignors.sticky import AbstractStickyAssignor
from fastkc.assignors.user_data import decode_cooperative_user_data, encode_cooperative_user_data
from fastkc.protocol.consumer_protocol import (
    Subscription,
    group_by_topic,
    java_string_key,
)
from fastkc.structs import TopicPartition


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Incremental cooperative sticky (KIP-429): the sticky target, minus any
    partition still owned by another member. That owner sees the partition
    missing from its assignment, revokes it (owned minus assigned) and
    rejoins; the next round assigns it to its new owner. Supports the eager
    protocol too, as Java's does, for groups moving between the two."""

    name = "cooperative-sticky"

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def _member_data(self, subscription: object) -> tuple[list[TopicPartition], int]:
        owned = member_owned(subscription)
        generation = member_generation(subscription)
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
            transferring = moving_partitions(
                {m: member_owned(s) for m, s in subscriptions.items()}, result)
        for tp, new_owner in transferring.items():
            if tp in result[new_owner]:
                result[new_owner].remove(tp)
        return as_assignments([m.member_id for m in members_of(members)], result)
