"""The partition fetch state: the transition table is Java's
(SubscriptionState.FetchStates), an illegal move raises, every legal move is
reachable through the machine's own moves, and fetchable / has_valid_position
are derived from the state (paused and stalled are flags beside it)."""
import itertools

import pytest

from fastkc.errors import IllegalStateError
from fastkc.fetch.state import (
    TRANSITIONS,
    FetchState,
    IllegalFetchStateTransition,
    PartitionState,
)
from fastkc.structs import TopicPartition

TP = TopicPartition("t", 0)
S = FetchState

# Java 3.x FetchStates.validTransitions, written out by hand (not derived from TRANSITIONS)
JAVA_LEGAL = {
    (S.INITIALIZING, S.FETCHING), (S.INITIALIZING, S.AWAIT_RESET), (S.INITIALIZING, S.AWAIT_VALIDATION),
    (S.FETCHING, S.FETCHING), (S.FETCHING, S.AWAIT_RESET), (S.FETCHING, S.AWAIT_VALIDATION),
    (S.AWAIT_RESET, S.FETCHING), (S.AWAIT_RESET, S.AWAIT_RESET), (S.AWAIT_RESET, S.AWAIT_VALIDATION),
    (S.AWAIT_VALIDATION, S.FETCHING), (S.AWAIT_VALIDATION, S.AWAIT_RESET),
    (S.AWAIT_VALIDATION, S.AWAIT_VALIDATION),
}


def _in(state):
    p = PartitionState(TP)
    p.fetch_state = state
    return p


def test_the_table_is_javas():
    table = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert table == JAVA_LEGAL
    assert set(TRANSITIONS) == set(FetchState)


@pytest.mark.parametrize("src,dst", sorted(set(itertools.product(FetchState, FetchState)) - JAVA_LEGAL,
                                           key=lambda pair: (pair[0].name, pair[1].name)))
def test_every_illegal_transition_raises(src, dst):
    p = _in(src)
    with pytest.raises(IllegalFetchStateTransition) as info:
        p.transition(dst)
    assert isinstance(info.value, IllegalStateError)
    assert p.fetch_state is src  # nothing moved


def test_nothing_returns_to_initializing():
    for src in FetchState:
        with pytest.raises(IllegalFetchStateTransition):
            _in(src).transition(S.INITIALIZING)


# each legal move, made by the method the machine uses for it
_MOVES = {
    S.FETCHING: lambda p: p.seek(10, 3) if p.fetch_state is not S.AWAIT_VALIDATION else p.validated(),
    S.AWAIT_RESET: lambda p: p.await_reset("earliest"),
    S.AWAIT_VALIDATION: lambda p: p.await_validation(),
}


@pytest.mark.parametrize("src,dst", sorted(JAVA_LEGAL, key=lambda pair: (pair[0].name, pair[1].name)))
def test_every_legal_transition_is_reachable_by_the_machines_moves(src, dst):
    p = PartitionState(TP)
    # reach src from a fresh partition by legal moves only
    if src is not S.INITIALIZING:
        p.seek(5, 1)
        if src is not S.FETCHING:
            _MOVES[src](p)
    assert p.fetch_state is src
    _MOVES[dst](p)
    assert p.fetch_state is dst


def test_derived_predicates():
    p = PartitionState(TP)
    assert not p.fetchable() and not p.has_valid_position and not p.fetch_state.has_position
    p.await_reset("latest")
    assert p.position is None and p.reset_strategy == "latest" and not p.fetchable()
    p.seek(7, 2)
    assert p.fetchable() and p.has_valid_position and p.reset_strategy is None
    assert (p.position, p.fetch_offset, p.position_epoch, p.fetch_epoch) == (7, 7, 2, 2)
    p.paused = True  # a flag beside the state, as in Java
    assert not p.fetchable() and p.fetch_state is S.FETCHING
    p.paused = False
    p.stalled = True
    assert not p.fetchable() and p.has_valid_position
    p.stalled = False
    p.await_validation()
    assert p.awaiting_validation and p.fetch_state.has_position and not p.has_valid_position
    assert not p.fetchable() and p.position == 7
    p.validated()
    assert p.fetchable()


def test_seek_clears_what_the_old_position_held():
    p = PartitionState(TP)
    p.seek(1)
    p.buffered.append(object())
    p.stalled = True
    p.no_progress = 1
    p.seek(20, 4)
    assert not p.buffered and not p.stalled and p.no_progress == 0
