"""The group state machines on canned answers, with no driver and no
socket: the driver-neutral scenarios of tests/support/group_scenarios.py
(the asyncio driver can play the same lists), the transition tables, and
what a machine does with answers it no longer waits for."""
import pytest

from fastkc.errors import IllegalStateError
from fastkc.group.classic_machine import ClassicState
from fastkc.group.commit_machine import OpState
from fastkc.group.consumer_machine import ConsumerState
from fastkc.group.coordinator_machine import CoordinatorState
from tests.support import group_scenarios as gs


@pytest.mark.parametrize("name", sorted(gs.SCENARIOS))
def test_scenario(name):
    protocol, settings, build = gs.SCENARIOS[name]
    gs.run(build(), gs.Machines(protocol, **settings))


def test_a_scenario_that_expects_the_wrong_request_fails():
    # the runner itself can fail: a wrong expectation is reported
    steps = [gs.subscribe(), gs.Send("JoinGroup", gs.join("m-1"))]
    with pytest.raises(AssertionError, match="asked for FindCoordinator"):
        gs.run(steps, gs.Machines())


@pytest.mark.parametrize("machine_class, states", [
    ("classic", ClassicState), ("consumer", ConsumerState)])
def test_every_state_is_in_the_transition_table_and_illegal_moves_raise(machine_class, states):
    m = gs.Machines(machine_class)
    table = m.member._LEGAL
    assert set(table) == set(states)
    assert table[states.CLOSED] == set()
    with pytest.raises(IllegalStateError):
        m.member._set_state(states.STABLE)  # never straight from the initial state
    m.member.close()
    for target in states:
        with pytest.raises(IllegalStateError):
            m.member._set_state(target)


def test_coordinator_and_operation_tables_refuse_illegal_moves():
    m = gs.Machines()
    with pytest.raises(IllegalStateError):
        m.coordinator._set_state(CoordinatorState.KNOWN)  # only through a lookup
    op = m.commits.fetch(gs.TPS[:1], m.now)
    with pytest.raises(IllegalStateError):
        op._set_state(OpState.BACKOFF)


def test_an_answer_the_machine_no_longer_waits_for_is_ignored():
    m = gs.Machines()
    gs.run(gs.classic_join_as_leader() + [gs.Tick(3.0)], m)
    m.collect()
    (_, request), = m.outstanding
    assert request.api == "Heartbeat"
    m.member.fenced("a commit answered UNKNOWN_MEMBER_ID meanwhile")
    m.member.on_response(request.token, gs.heartbeat(gs.REBALANCE_IN_PROGRESS), m.now)  # stale: ignored
    assert m.member.state is ClassicState.UNJOINED and m.member.rejoin_requested is None
    m.member.on_response(object(), gs.heartbeat(), m.now)  # a token it never made
    assert m.member.state is ClassicState.UNJOINED


def test_a_machine_sends_one_request_at_a_time_and_names_its_next_deadline():
    m = gs.Machines()
    gs.run(gs.classic_join_as_leader(), m)
    assert m.member.next_deadline() == pytest.approx(m.now + 3.0)  # the next heartbeat
    m.now += 3.0
    first = m.member.next_requests(m.now)
    assert [r.api for r in first] == ["Heartbeat"]
    assert m.member.next_requests(m.now) == [] and m.member.next_deadline() is None  # waiting for the answer
