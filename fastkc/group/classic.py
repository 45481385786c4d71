"""The classic group protocol member: the sync driver (member.py) around
`ClassicMachine` (classic_machine.py), which holds every protocol decision —
JoinGroup / SyncGroup / Heartbeat / LeaveGroup, eager and cooperative
(KIP-429), static membership (KIP-345). What stays here runs on the
application's thread: the assignor and the machine told that an assignment
was applied (the reconciler's last step for it, reconciler.py).
"""
from collections.abc import Mapping

from fastkc.assignors import AbstractPartitionAssignor, RebalanceProtocol
from fastkc.config import Config
from fastkc.group.classic_machine import (
    KAFKA_PYTHON_STATE,
    ClassicMachine,
    ClassicState,
    instantiate_assignors,
)
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.group.member import GroupMemberBase
from fastkc.group.reconciler import AcknowledgeAssignment
from fastkc.structs import ConsumerGroupMetadata

#: the name the member's states had before the machine (tests, callers)
MemberState = ClassicState

__all__ = ["ClassicGroupMember", "MemberState", "instantiate_assignors"]


class ClassicGroupMember(GroupMemberBase[ClassicMachine]):
    protocol_name = "classic"

    def _make_machine(self, config: Config, coordinator: CoordinatorMachine, now: float) -> ClassicMachine:
        return ClassicMachine(config, coordinator, now)

    @property
    def generation(self) -> int:
        return self.machine.generation

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return self.machine.rebalance_protocol

    @property
    def assignors(self) -> list[AbstractPartitionAssignor]:
        return self.machine.assignors

    def group_metadata(self) -> ConsumerGroupMetadata:
        machine = self.machine
        return ConsumerGroupMetadata(self.group_id, machine.generation, machine.member_id, self.group_instance_id,
                                     KAFKA_PYTHON_STATE[machine.state])

    def metadata_changed(self, partition_counts: Mapping[str, int]) -> None:
        """As the base's; and while a subscribed topic is still missing from
        what this leader assigned from (leader_snapshot_incomplete), each
        metadata answer asks for the next (the client paces them by
        retry_backoff_ms) until the topic shows."""
        super().metadata_changed(partition_counts)
        with self._lock:
            incomplete = self.machine.leader_snapshot_incomplete
        if incomplete:
            self.app.request_metadata_update()

    def _acknowledge_assignment(self, step: AcknowledgeAssignment) -> None:
        event = step.event
        assignor = self.machine.assignors_by_name.get(event.protocol)
        if assignor is not None:
            assignor.on_assignment(event.assignment, event.generation)
        with self._lock:
            self.machine.assignment_applied(step.revoked_any)
            incomplete = self.machine.leader_snapshot_incomplete
        if incomplete:
            # the consumer's next metadata answer reaches metadata_changed
            self.app.request_metadata_update()
