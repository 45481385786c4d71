"""The KIP-848 group member (group_protocol="consumer"): the sync driver
(member.py) around `ConsumerMachine` (consumer_machine.py), which holds
every protocol decision. What stays here: what the machine must learn from
the group client before it asks for requests (topic ids the client already
knows, the coordinator's ConsumerGroupHeartbeat version). Its events
(revoke before assign, lost partitions after fencing) are the reconciler's
(reconciler.py), as every member's.
"""
from fastkc.config import Config
from fastkc.group.consumer_machine import (
    FAST_FOLLOW_UP_S,
    KAFKA_PYTHON_STATE,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    ConsumerMachine,
    ConsumerState,
)
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.group.member import GroupMemberBase
from fastkc.structs import ConsumerGroupMetadata

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
