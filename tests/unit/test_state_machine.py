"""The shared state holder (fastkc/state_machine.py) and session-epoch rule
(fastkc/session_epoch.py): illegal moves are refused with the machine and
both states named, incomplete tables fail when defined, and the epoch opens
at 0, moves on per answer, wraps past INT32_MAX to 1 and restarts at 0."""
import enum

import pytest

from fastkc.errors import IllegalStateError, InvalidFetchSessionEpochError, ShareSessionNotFoundError
from fastkc.fetch.session import FetchSession
from fastkc.fetch.state import FetchState, IllegalFetchStateTransition, PartitionState
from fastkc.session_epoch import FINAL_EPOCH, INITIAL_EPOCH, MAX_EPOCH, SessionEpoch
from fastkc.share.session import ShareSession
from fastkc.state_machine import IllegalTransition, StateHolder, check_table
from fastkc.structs import TopicPartition


class Light(enum.Enum):
    OFF = "off"
    ON = "on"
    BROKEN = "broken"


class Lamp(StateHolder[Light]):
    _LEGAL = {Light.OFF: {Light.ON, Light.BROKEN}, Light.ON: {Light.OFF, Light.BROKEN}, Light.BROKEN: set()}
    _machine_name = "lamp"

    def __init__(self) -> None:
        self._init_state(Light.OFF)


def test_legal_moves_are_made_and_recorded():
    lamp = Lamp()
    lamp._set_state(Light.ON)
    lamp._set_state(Light.OFF)
    assert lamp.state is Light.OFF
    assert list(lamp.transitions) == [(Light.OFF, Light.ON), (Light.ON, Light.OFF)]


def test_an_illegal_move_is_refused_naming_the_machine_and_both_states():
    lamp = Lamp()
    lamp._set_state(Light.BROKEN)
    with pytest.raises(IllegalTransition) as info:
        lamp._set_state(Light.ON)
    err = info.value
    assert isinstance(err, IllegalStateError)
    assert (err.machine, err.from_state, err.to_state) == ("lamp", Light.BROKEN, Light.ON)
    assert err.args == ("lamp: illegal transition BROKEN -> ON",)
    assert lamp.state is Light.BROKEN and len(lamp.transitions) == 1  # nothing moved


def test_a_table_missing_a_state_fails_when_the_machine_is_defined():
    with pytest.raises(TypeError, match="BROKEN"):
        class HalfLamp(StateHolder[Light]):
            _LEGAL = {Light.OFF: {Light.ON}, Light.ON: {Light.OFF}}
    with pytest.raises(TypeError, match="another enum"):
        check_table({Light.OFF: {FetchState.FETCHING}, Light.ON: set(), Light.BROKEN: set()})


def test_the_partition_state_refuses_with_the_shared_error():
    p = PartitionState(TopicPartition("t", 3))
    with pytest.raises(IllegalFetchStateTransition) as info:
        p.transition(FetchState.INITIALIZING)
    assert isinstance(info.value, IllegalTransition)
    assert info.value.from_state is FetchState.INITIALIZING and "t" in info.value.machine


def test_the_epoch_opens_at_zero_moves_on_and_restarts():
    epoch = SessionEpoch()
    assert epoch.value == INITIAL_EPOCH and epoch.opening
    epoch.answered()
    epoch.answered()
    assert epoch.value == 2 and not epoch.opening
    epoch.restart()
    assert epoch.value == INITIAL_EPOCH and epoch.opening
    assert FINAL_EPOCH == -1


def test_the_epoch_wraps_past_int32_max_to_one():
    epoch = SessionEpoch()
    epoch.value = MAX_EPOCH
    epoch.answered()
    assert epoch.value == 1  # never 0 (that would open a new session) nor negative


def _fetch_session_at(value):
    session = FetchSession(node_id=1, incremental=True)
    session.build({})
    session.handle_response(0, 77, INITIAL_EPOCH)
    session._epoch.value = value
    return session


def _share_session_at(value):
    session = ShareSession(node_id=1)
    session._epoch.value = value
    return session


def test_both_sessions_follow_the_one_rule():
    fetch, share = _fetch_session_at(MAX_EPOCH), _share_session_at(MAX_EPOCH)
    assert fetch.handle_response(0, 77, MAX_EPOCH) and fetch.epoch == 1
    assert share.answered(0) and share.epoch == 1
    # a session error starts anew in both
    assert not fetch.handle_response(InvalidFetchSessionEpochError.errno, 0, 1) and fetch.epoch == INITIAL_EPOCH
    assert not share.answered(ShareSessionNotFoundError.errno) and share.epoch == INITIAL_EPOCH
