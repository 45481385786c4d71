"""The rebalance reconciler: what the application does with a group
machine's event, as an explicit, ordered list of steps. I/O-free: it reads
the event, the partitions the member owns and its subscription, and says
what to do; the sync member (`member.py`) executes the steps by calling,
the asyncio driver (`fastkc/aio/group_driver.py`) by awaiting where
aiokafka awaits. One list for both, so the two cannot drift apart.

The Java client's order, for every protocol:
- lost partitions (the member was fenced, the group moved on): no commit,
  `on_partitions_lost` (a listener without it hears `on_partitions_revoked`),
  then the fetcher stops.
- revoked partitions (eager: all before rejoining; cooperative: only what
  moves; KIP-848: what the target no longer holds): their positions are
  committed first when auto commit is on, then `on_partitions_revoked`,
  then the fetcher stops.
- the new assignment: the fetcher takes it (committed offsets of the new
  partitions read), then `on_partitions_assigned`: the new partitions
  (Java, kafka-python) or the whole assignment (aiokafka), as the driver
  was told.
- classic only, last: the assignor hears of the assignment and the machine
  learns it was applied (a cooperative member that revoked rejoins then).
KIP-848 acknowledges through the machine's `app_done`, as every event.

A listener that raises never stops a hand-over half way (the group would
be left inconsistent): `ListenerErrors` keeps the rule of each front end.
"""
import logging
from collections.abc import Iterable
from typing import NamedTuple

from fastkc.assignors import partition_changes
from fastkc.group import classic_machine, consumer_machine
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

#: the warning both drivers log when the auto commit before a revocation fails
COMMIT_BEFORE_REVOKE_FAILED = "group %s: commit before revocation failed: %s"

REVOKED = "on_partitions_revoked"
ASSIGNED = "on_partitions_assigned"
LOST = "on_partitions_lost"


def sorted_partitions(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The order listeners are handed partitions in (topic, partition)."""
    return sorted(tps, key=lambda tp: (tp.topic, tp.partition))


class CommitBeforeRevoke(NamedTuple):
    """Commit the positions of these partitions (auto commit) and wait; a
    failure is logged (COMMIT_BEFORE_REVOKE_FAILED) and the revocation goes on."""
    partitions: list[TopicPartition]


class CallListener(NamedTuple):
    """Call the rebalance listener's `method` (REVOKED / ASSIGNED / LOST)
    with these partitions, already sorted."""
    method: str
    partitions: list[TopicPartition]


class Revoke(NamedTuple):
    """The member no longer owns these partitions: the fetcher stops."""
    partitions: list[TopicPartition]


class Assign(NamedTuple):
    """The member owns `assignment` (the fetcher takes it); `added`, the
    partitions new to it, start at their committed offsets."""
    added: list[TopicPartition]
    assignment: list[TopicPartition]


class AcknowledgeAssignment(NamedTuple):
    """Classic: the assignor hears of the assignment, then the machine
    learns it was applied (`revoked_any`: a cooperative member rejoins)."""
    event: classic_machine.AssignmentReceived
    revoked_any: bool


Step = CommitBeforeRevoke | CallListener | Revoke | Assign | AcknowledgeAssignment


class Reconciler:
    """Events in, steps out (module docstring)."""

    def __init__(self, group_id: str, *, auto_commit: bool, assigned_hears_whole_assignment: bool) -> None:
        """auto_commit: positions are committed before a revocation;
        assigned_hears_whole_assignment: on_partitions_assigned gets the
        whole assignment (aiokafka) instead of the added partitions (Java,
        kafka-python)."""
        self.group_id = group_id
        self.auto_commit = auto_commit
        self.assigned_hears_whole_assignment = assigned_hears_whole_assignment

    def steps(self, event: object, owned: Iterable[TopicPartition],
              subscription: Iterable[str] | None) -> list[Step]:
        """What to do for one event of the membership machine, given the
        partitions owned before it; an event the application has nothing to
        do for gives no steps."""
        owned = list(owned)
        if isinstance(event, (classic_machine.PartitionsLost, consumer_machine.PartitionsLost)):
            return self._lose(owned) if owned else []
        if isinstance(event, classic_machine.RevokeBeforeRejoin):
            # eager: everything goes back before the member rejoins
            return self._revoke(owned) if owned else []
        if isinstance(event, classic_machine.AssignmentReceived):
            return self._classic_assignment(event, owned, set(subscription or ()))
        if isinstance(event, consumer_machine.Reconcile):
            return self._reconcile(event.target, owned)
        return []

    def release(self, owned: Iterable[TopicPartition]) -> list[Step]:
        """The application gives every partition back (the sync consumer's
        close and unsubscribe, which commit all positions before)."""
        partitions = list(owned)
        return [CallListener(REVOKED, sorted_partitions(partitions)), Revoke(partitions)]

    def _lose(self, partitions: list[TopicPartition]) -> list[Step]:
        return [CallListener(LOST, sorted_partitions(partitions)), Revoke(partitions)]

    def _revoke(self, partitions: list[TopicPartition]) -> list[Step]:
        steps: list[Step] = [CommitBeforeRevoke(partitions)] if self.auto_commit else []
        steps += [CallListener(REVOKED, sorted_partitions(partitions)), Revoke(partitions)]
        return steps

    def _assign(self, added: list[TopicPartition], assignment: list[TopicPartition]) -> list[Step]:
        heard = assignment if self.assigned_hears_whole_assignment else added
        return [Assign(added, assignment), CallListener(ASSIGNED, sorted_partitions(heard))]

    def _classic_assignment(self, event: classic_machine.AssignmentReceived, owned: list[TopicPartition],
                            subscribed: set[str]) -> list[Step]:
        given = event.assignment.partitions()
        assigned = [tp for tp in given if tp.topic in subscribed]
        if len(assigned) != len(given):
            log.warning("group %s: assigned partitions of topics not subscribed to were ignored", self.group_id)
        revoked, added = partition_changes(owned, assigned)
        steps: list[Step] = self._revoke(sorted_partitions(revoked)) if revoked else []
        steps += self._assign([tp for tp in assigned if tp in added], assigned)
        steps.append(AcknowledgeAssignment(event, bool(revoked)))
        return steps

    def _reconcile(self, target: set[TopicPartition], owned: list[TopicPartition]) -> list[Step]:
        """KIP-848: revoke what the target no longer holds, then take what
        it adds (owned order kept, new partitions sorted after)."""
        revoked = set(owned) - target
        steps: list[Step] = self._revoke(sorted_partitions(revoked)) if revoked else []
        kept = [tp for tp in owned if tp in target]
        added = sorted_partitions(target - set(kept))
        steps += self._assign(added, kept + added)
        return steps


def listener_method(listener: object, method: str) -> str | None:
    """The name of the listener method to call for `method`, or None: a
    listener without on_partitions_lost (kafka-python's and aiokafka's
    abstract classes predate it) hears on_partitions_revoked, as Java's
    default method does."""
    if listener is None:
        return None
    if getattr(listener, method, None) is not None:
        return method
    if method == LOST and getattr(listener, REVOKED, None) is not None:
        return REVOKED
    return None


class ListenerErrors:
    """What a raising listener does to the hand-over: it always goes on.
    raise_after_hand_over (Java, kafka-python): the first error is kept and
    raised from poll once the hand-over is complete (`take`), so it is
    logged without its traceback (the application gets that); otherwise
    (aiokafka) the error is only logged, with its traceback."""

    def __init__(self, group_id: str, *, raise_after_hand_over: bool) -> None:
        self.group_id = group_id
        self.raise_after_hand_over = raise_after_hand_over
        self._first: Exception | None = None

    def failed(self, method: str, exc: Exception) -> None:
        if not self.raise_after_hand_over:
            log.exception("group %s: %s raised %r", self.group_id, method, exc)
            return
        log.error("group %s: %s raised %r", self.group_id, method, exc)
        if self._first is None:
            self._first = exc

    def take(self) -> Exception | None:
        """The first error kept since the last take (None: none)."""
        first, self._first = self._first, None
        return first
