"""What the fetch machine's parts share (Java's SubscriptionState, plus the
machine's three signals to its driver and the application).

- The assigned partitions' states, in assignment order. Only the facade
  (FetchMachine.assign) changes which partitions there are; every part moves
  a partition only through PartitionState's moves (state.py), and the record
  buffer alone adds to or clears its buffered fetches.
- `replan()`: something changed which brokers partitions are fetched from, or
  whether they can be; the planner's next pass looks at every partition
  (only the planner reads and clears it).
- `want_metadata()`: fresh metadata would help; the driver reads and clears
  `metadata_wanted` and asks its client.
- `fail(error)`: an error for the application, raised by the next
  raise_pending() (a newer one replaces an older one not raised yet).
"""
from collections.abc import Iterable

from fastkc.fetch.state import PartitionState
from fastkc.structs import TopicPartition


class FetchPartitions:
    def __init__(self) -> None:
        self.states: dict[TopicPartition, PartitionState] = {}  # in assignment order
        self.plan_stale = True
        self.metadata_wanted = False
        self._pending_error: BaseException | None = None

    def assign(self, partitions: Iterable[TopicPartition]) -> list[PartitionState]:
        """The new assignment (states kept for partitions still assigned);
        returns the states of the partitions no longer assigned."""
        self.replan()
        old = self.states
        self.states = {tp: old.get(tp) or PartitionState(tp) for tp in partitions}
        return [state for tp, state in old.items() if tp not in self.states]

    def replan(self) -> None:
        self.plan_stale = True

    def planned(self) -> None:
        """The planner looked at every partition (its plan is current)."""
        self.plan_stale = False

    def want_metadata(self) -> None:
        self.metadata_wanted = True

    def fail(self, error: BaseException) -> None:
        self._pending_error = error

    def take_error(self) -> BaseException | None:
        error, self._pending_error = self._pending_error, None
        return error

    @property
    def pending_error(self) -> BaseException | None:
        return self._pending_error
