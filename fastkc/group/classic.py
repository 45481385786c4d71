"""The classic group protocol member: the sync driver (member.py) around
`ClassicMachine` (classic_machine.py), which holds every protocol decision —
JoinGroup / SyncGroup / Heartbeat / LeaveGroup, eager and cooperative
(KIP-429), static membership (KIP-345). What stays here runs on the
application's thread: the machine's events turned into listener calls,
commits and assignment changes, in the Java client's order.
"""
import logging
from collections.abc import Sequence

from fastkc.assignors import AbstractPartitionAssignor, RebalanceProtocol, partition_changes
from fastkc.config import Config
from fastkc.group.classic_machine import (
    KAFKA_PYTHON_STATE,
    AssignmentReceived,
    ClassicMachine,
    ClassicState,
    PartitionsLost,
    RevokeBeforeRejoin,
    instantiate_assignors,
)
from fastkc.group.coordinator_machine import CoordinatorMachine
from fastkc.group.member import GroupMemberBase
from fastkc.structs import ConsumerGroupMetadata

log = logging.getLogger(__name__)

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

    def _handle_events(self, events: Sequence[object]) -> None:
        for event in events:
            if isinstance(event, PartitionsLost):
                if self._owned:
                    self._revoke_on_app_thread(list(self._owned), lost=True, commit=False)
            elif isinstance(event, RevokeBeforeRejoin):
                if self._owned:  # eager: everything goes back before we rejoin
                    self._revoke_on_app_thread(list(self._owned), lost=False, commit=True)
            elif isinstance(event, AssignmentReceived):
                self._apply_assignment(event)

    def _apply_assignment(self, event: AssignmentReceived) -> None:
        assignment = event.assignment
        assigned = [tp for tp in assignment.partitions() if tp.topic in set(self._subscription or ())]
        if len(assigned) != len(assignment.partitions()):
            log.warning("group %s: assigned partitions of topics not subscribed to were ignored", self.group_id)
        revoked, added = partition_changes(self._owned, assigned)
        if revoked:
            self._revoke_on_app_thread(sorted(revoked), lost=False, commit=True)
        ordered_added = [tp for tp in assigned if tp in added]
        self._assign_on_app_thread(ordered_added, assigned)
        assignor = self.machine.assignors_by_name.get(event.protocol)
        if assignor is not None:
            assignor.on_assignment(assignment, event.generation)
        with self._lock:
            self.machine.assignment_applied(bool(revoked))
