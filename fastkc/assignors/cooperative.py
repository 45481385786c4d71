"""Cooperative bookkeeping for the coordinator: which partitions change owner,
and Java's check of a cooperative assignment."""
from collections.abc import Iterable, Mapping

from fastkc.assignors.sticky_builders import tp_key
from fastkc.errors import IllegalStateError
from fastkc.protocol.consumer_protocol import Assignment
from fastkc.structs import TopicPartition


def moving_partitions(owned_by_member: Mapping[str, Iterable[TopicPartition]],
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
                sorted(both, key=tp_key)))
