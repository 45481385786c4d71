"""The KIP-848 group member (group_protocol="consumer"): the sync driver
(member.py) around `ConsumerMachine` (consumer_machine.py), which holds
every protocol decision. What stays here: what the machine must learn from
the group client before it asks for requests (topic ids the client already
knows, the coordinator's ConsumerGroupHeartbeat version), and its events on
the application's thread — revoke before assign, lost partitions after
fencing.
"""
import logging
from collections.abc import Sequence

from fastkc.config import Config
from fastkc.group.consumer_machine import (
    FAST_FOLLOW_UP_S,
    KAFKA_PYTHON_STATE,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    ConsumerMachine,
    ConsumerState,
    PartitionsLost,
    Reconcile,
)
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.group.member import GroupMemberBase
from fastkc.structs import ConsumerGroupMetadata, TopicPartition

log = logging.getLogger(__name__)

#: the name the member's states had before the machine (tests, callers)
Member848State = ConsumerState

__all__ = ["ConsumerProtocolMember", "Member848State", "FAST_FOLLOW_UP_S", "LEAVE_EPOCH", "LEAVE_STATIC_EPOCH"]


class ConsumerProtocolMember(GroupMemberBase[ConsumerMachine]):
    protocol_name = "consumer"

    def _make_machine(self, config: Config, coordinator: CoordinatorMachine, now: float) -> ConsumerMachine:
        return ConsumerMachine(config, coordinator, now)

    @property
    def member_epoch(self) -> int:
        return self.machine.member_epoch

    def group_metadata(self) -> ConsumerGroupMetadata:
        machine = self.machine
        return ConsumerGroupMetadata(self.group_id, machine.member_epoch, machine.member_id, self.group_instance_id,
                                     KAFKA_PYTHON_STATE[machine.state])

    def set_pattern(self, pattern: str | None) -> None:
        with self._lock:
            self.machine.set_pattern(pattern)
            self._kick_thread()

    def _before_requests(self) -> None:
        client = getattr(self.transport, "client", None)
        cluster = getattr(client, "cluster", None)
        version = self._heartbeat_version()
        with self._lock:
            if cluster is not None:
                self.machine.learn_topics(cluster)
            self.machine.heartbeat_version = version

    def _heartbeat_version(self) -> int:
        coordinator = self.coordinator.coordinator
        connection = getattr(getattr(self.transport, "client", None), "connection", None)
        if coordinator is None or connection is None:
            return 0
        conn = connection(coordinator.node_id)
        if conn is None or not conn.established:  # its versions hold while re-authenticating
            return 0
        version: int = conn.version_for("ConsumerGroupHeartbeat")
        return version

    def _handle_events(self, events: Sequence[object]) -> None:
        for event in events:
            if isinstance(event, PartitionsLost):
                if self._owned:
                    self._revoke_on_app_thread(list(self._owned), lost=True, commit=False)
            elif isinstance(event, Reconcile):
                self._reconcile(event.target)

    def _reconcile(self, target: set[TopicPartition]) -> None:
        revoked = set(self._owned) - target
        if revoked:
            self._revoke_on_app_thread(sorted(revoked, key=lambda tp: (tp.topic, tp.partition)), lost=False,
                                       commit=True)
        kept = [tp for tp in self._owned if tp in target]
        added = sorted(target - set(kept), key=lambda tp: (tp.topic, tp.partition))
        self._assign_on_app_thread(added, kept + added)
