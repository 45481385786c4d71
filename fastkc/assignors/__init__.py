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
from fastkc.assignors.abstract import (
    AbstractPartitionAssignor,
    Assignments,
    GroupMember,
    Lists,
    Members,
    MetadataView,
    PartitionSource,
    RebalanceProtocol,
)
from fastkc.assignors.cooperative import partition_changes, validate_cooperative_assignment
from fastkc.assignors.cooperative_sticky import CooperativeStickyAssignor
from fastkc.assignors.members import StaticCluster, java_hash_order
from fastkc.assignors.range import RangePartitionAssignor
from fastkc.assignors.roundrobin import RoundRobinPartitionAssignor
from fastkc.assignors.sticky import StickyPartitionAssignor
from fastkc.assignors.user_data import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

__all__ = [
    "ASSIGNORS_BY_NAME", "DEFAULT_ASSIGNORS", "AbstractPartitionAssignor", "Assignments", "CooperativeStickyAssignor",
    "GroupMember", "Lists", "Members", "MetadataView", "PartitionSource", "RangeAssignor", "RangePartitionAssignor",
    "RebalanceProtocol", "RoundRobinAssignor", "RoundRobinPartitionAssignor", "StaticCluster", "StickyAssignor",
    "StickyPartitionAssignor", "decode_cooperative_user_data", "decode_sticky_user_data",
    "encode_cooperative_user_data", "encode_sticky_user_data", "java_hash_order", "partition_changes",
    "validate_cooperative_assignment",
]

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

