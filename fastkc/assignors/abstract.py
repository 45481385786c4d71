"""The assignor interface (kafka-python 3's, see fastkc.assignors) and the types
assign() takes and returns."""
import abc
import enum
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from fastkc.protocol.consumer_protocol import (
    Assignment,
    Subscription,
)
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.cluster.metadata import TopicMetadata


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
