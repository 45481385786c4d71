"""The one mechanism behind every explicit state machine in fastkc: a state
from an Enum, one table of legal moves, and a move that refuses anything the
table does not list (asyncpg's `_set_state`).

Each machine keeps its own enum and its own table (`state -> the states it
may move to`); only the checking is shared:

- `StateHolder[S]`: a base class for a machine that owns its `state`
  (the group machines, the share member, the connection core). A subclass
  sets `_LEGAL` and `_machine_name`, calls `_init_state(initial)` and moves
  only through `_set_state(new)`; the last moves are kept in `transitions`
  for logs and tests. A table that misses a state of its enum fails at
  import, not on the first move out of the forgotten state.
- `check_transition(...)`: the same check for a record that keeps its state
  under another name beside other fields (the fetch machine's
  `PartitionState`: thousands of them, no history kept).

An illegal move is a bug in the machine, never a broker's or an
application's doing: it raises `IllegalTransition` (an IllegalStateError)
naming the machine and both states, and the state does not change.
"""
import collections
import enum
from collections.abc import Collection, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from fastkc.errors import IllegalStateError

S = TypeVar("S", bound=enum.Enum)

#: a machine's legal moves: state -> the states it may move to
Transitions = Mapping[S, Collection[S]]


class IllegalTransition(IllegalStateError):
    """A move the machine's transition table does not list."""

    def __init__(self, machine: str, from_state: enum.Enum, to_state: enum.Enum) -> None:
        super().__init__("{0}: illegal transition {1} -> {2}".format(machine, from_state.name, to_state.name))
        self.machine = machine
        self.from_state = from_state
        self.to_state = to_state


def check_transition(legal: "Transitions[S]", machine: str, from_state: S, to_state: S,
                     error: type[IllegalTransition] = IllegalTransition) -> None:
    """Raise `error` unless `legal` lets `from_state` move to `to_state`."""
    if to_state not in legal[from_state]:
        raise error(machine, from_state, to_state)


def check_table(legal: "Transitions[S]") -> None:
    """A table names every state of its enum, and moves only to those
    (TypeError otherwise: a machine written wrong, caught when it is defined)."""
    if not legal:
        return
    states = set(next(iter(legal)).__class__.__members__.values())
    targets = {target for row in legal.values() for target in row}
    missing = states - set(legal)
    strangers = (set(legal) | targets) - states
    if missing or strangers:
        raise TypeError("transition table: states without a row {0}, states of another enum {1}".format(
            sorted(s.name for s in missing), sorted(repr(s) for s in strangers)))


class StateHolder(Generic[S]):
    """An enum state changed only through `_set_state`, which refuses any
    move `_LEGAL` does not list (IllegalTransition)."""

    #: state -> the states it may move to (the subclass's own enum)
    _LEGAL: ClassVar[Mapping[Any, Collection[Any]]] = {}
    #: names the machine in an IllegalTransition (an instance may set its own)
    _machine_name = "state machine"
    #: how many past moves `transitions` keeps
    _HISTORY = 64

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_LEGAL" in cls.__dict__:
            check_table(cls._LEGAL)

    def _init_state(self, initial: S) -> None:
        self.state = initial
        # (from, to): for logs and tests
        self.transitions: collections.deque[tuple[S, S]] = collections.deque(maxlen=self._HISTORY)

    def _set_state(self, new: S) -> None:
        check_transition(self._LEGAL, self._machine_name, self.state, new)
        self.transitions.append((self.state, new))
        self.state = new
