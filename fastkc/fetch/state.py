"""A partition's fetch state: one enum, one table of legal transitions.

The states are the Java client's (SubscriptionState.FetchStates), with the
same meaning and the same transitions:

- INITIALIZING: assigned, no position yet and no reset asked for.
- AWAIT_RESET: the position comes from a ListOffsets (auto_offset_reset, an
  explicit seek_to_beginning/end, an out-of-range fetch offset).
- AWAIT_VALIDATION: there is a position, but the leader changed since it was
  taken: OffsetForLeaderEpoch must confirm it (KIP-320) before fetching.
- FETCHING: a valid position; fetched from when not paused.

Paused is a separate flag (as in Java): pausing keeps the state. So is
`stalled` (a malformed batch is buffered: nothing is fetched until poll() has
raised its error), which Java does not need because its fetch and decode are
one step.

Nothing goes back to INITIALIZING: once a partition has been given a position
or a reset, it only moves between the other three. Any other move is a bug in
the fetch machine and raises IllegalFetchStateTransition (a
fastkc.state_machine.IllegalTransition).
"""
import enum
from collections import deque
from typing import TYPE_CHECKING

from fastkc.state_machine import IllegalTransition, check_table, check_transition
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.fetch.completed import CompletedFetch

NO_EPOCH = -1


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    FETCHING = "fetching"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"

    @property
    def has_position(self) -> bool:
        return self in (FetchState.FETCHING, FetchState.AWAIT_VALIDATION)

    @property
    def has_valid_position(self) -> bool:
        return self is FetchState.FETCHING


_ANY_BUT_INITIALIZING = frozenset((FetchState.FETCHING, FetchState.AWAIT_RESET, FetchState.AWAIT_VALIDATION))

#: state -> the states it may move to (Java's FetchStates.validTransitions)
TRANSITIONS = {
    FetchState.INITIALIZING: _ANY_BUT_INITIALIZING,
    FetchState.FETCHING: _ANY_BUT_INITIALIZING,
    FetchState.AWAIT_RESET: _ANY_BUT_INITIALIZING,
    FetchState.AWAIT_VALIDATION: _ANY_BUT_INITIALIZING,
}
check_table(TRANSITIONS)


class IllegalFetchStateTransition(IllegalTransition):
    """A move the transition table does not allow: a bug in the fetch
    machine, never a broker's or an application's doing."""


class PartitionState:
    """One assigned partition as the fetch machine sees it."""

    __slots__ = ("tp", "fetch_state", "position", "position_epoch", "fetch_offset", "fetch_epoch", "paused",
                 "reset_strategy", "validation_in_flight", "highwater", "last_stable_offset", "log_start_offset",
                 "buffered", "preferred_replica", "preferred_replica_until", "reset_in_flight", "next_retry",
                 "stalled", "no_progress", "fetched_at", "held")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.fetch_state = FetchState.INITIALIZING
        self.position: int | None = None
        self.position_epoch = NO_EPOCH
        self.fetch_offset: int | None = None
        self.fetch_epoch = NO_EPOCH
        self.paused = False
        self.reset_strategy: str | None = None  # 'earliest' / 'latest' while AWAIT_RESET
        self.validation_in_flight = False
        self.reset_in_flight = False
        self.highwater: int | None = None
        self.last_stable_offset: int | None = None
        self.log_start_offset: int | None = None
        self.buffered: deque[CompletedFetch] = deque()
        self.preferred_replica: int | None = None
        self.preferred_replica_until = 0.0
        self.next_retry = 0.0
        # a malformed batch is buffered: no fetch until poll() raised its error
        self.stalled = False
        # consecutive responses that could not advance the position (planner's _NO_PROGRESS_LIMIT)
        self.no_progress = 0
        # the driver's clock reading of the last fetch answer that carried
        # this partition (aiokafka's last_poll_timestamp), None before one
        self.fetched_at: float | None = None
        # the driver is looking up the group's committed offset: no
        # auto_offset_reset until it seeks or releases (hold_for_committed)
        self.held = False

    def transition(self, new_state: FetchState) -> None:
        # the shared check, not a StateHolder: one per partition, no history kept
        check_transition(TRANSITIONS, "fetch state of {0}".format(self.tp), self.fetch_state, new_state,
                         IllegalFetchStateTransition)
        self.fetch_state = new_state

    @property
    def awaiting_validation(self) -> bool:
        return self.fetch_state is FetchState.AWAIT_VALIDATION

    @property
    def has_valid_position(self) -> bool:
        return self.fetch_state.has_valid_position

    def fetchable(self) -> bool:
        return self.fetch_state is FetchState.FETCHING and not self.paused and not self.stalled

    # --- the moves (each one transition of the table) -----------------------------------
    def seek(self, offset: int, epoch: int = NO_EPOCH) -> None:
        """A position known to be valid (an explicit seek, a reset's answer,
        a validation's verdict): FETCHING from it, nothing buffered."""
        self.transition(FetchState.FETCHING)
        self.held = False
        self.position = offset
        self.position_epoch = epoch
        self.fetch_offset = offset
        self.fetch_epoch = epoch
        self.reset_strategy = None
        self.stalled = False
        self.no_progress = 0
        self.buffered.clear()

    def await_reset(self, strategy: str) -> None:
        self.transition(FetchState.AWAIT_RESET)
        self.held = False
        self.reset_strategy = strategy
        self.position = None
        self.fetch_offset = None

    def await_validation(self) -> None:
        self.transition(FetchState.AWAIT_VALIDATION)

    def validated(self) -> None:
        """The leader confirmed the position (or cannot tell): fetch from it."""
        self.transition(FetchState.FETCHING)
