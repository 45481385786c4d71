"""The group state machines on canned answers, with no driver and no
socket: the driver-neutral scenarios of tests/support/group_scenarios.py
(the asyncio driver can play the same lists), the transition tables, and
what a machine does with answers it no longer waits for."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkc.errors import IllegalStateError, KafkaConnectionError, KafkaError
from fastkc.errors import IllegalStateError as _Illegal
from fastkc.group.classic_machine import ClassicState
from fastkc.group.commit_machine import OpState
from fastkc.group.consumer_machine import ConsumerState
from fastkc.group.coordinator_machine import CoordinatorState
from fastkc.group.machine import earliest
from fastkc.structs import OffsetAndMetadata
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


# --- random walks: whatever the coordinator answers, the machines stay in their tables --------------

_CODES = [gs.NONE, gs.NONE, gs.NONE, gs.COORDINATOR_LOAD_IN_PROGRESS, gs.COORDINATOR_NOT_AVAILABLE,
          gs.NOT_COORDINATOR, gs.ILLEGAL_GENERATION, gs.UNKNOWN_MEMBER_ID, gs.REBALANCE_IN_PROGRESS,
          gs.MEMBER_ID_REQUIRED, gs.FENCED_MEMBER_EPOCH, gs.GROUP_AUTHORIZATION_FAILED, gs.FENCED_INSTANCE_ID]


def _answer(request, code, partitions):
    api = request.api
    if api == "FindCoordinator":
        return gs.find_coordinator(code if code in (0, 14, 15, 30) else 0)
    if api == "Metadata":
        return gs.cluster()
    if api == "JoinGroup":
        return gs.join("m-1", members=[("m-1", gs.subscription())], error=code, leader="m-1")
    if api == "SyncGroup":
        return gs.sync(partitions, error=code)
    if api == "Heartbeat":
        return gs.heartbeat(code)
    if api == "LeaveGroup":
        return gs.leave(code)
    if api == "ConsumerGroupHeartbeat":
        epoch = request.body["member_epoch"]
        return gs.heartbeat_848(max(epoch, 0) + 1, [tp.partition for tp in partitions], error=code)
    if api == "OffsetCommit":
        return gs.commit([0], code)
    if api == "OffsetFetch":
        return gs.offset_fetch({0: 1})
    raise AssertionError(api)


# mostly successful answers (so the walks reach STABLE, RECONCILING, ...), with errors, cut
# connections, time passing and the application acting in between
_ACTIONS = st.lists(st.tuples(
    st.sampled_from(["answer"] * 8 + ["error", "fail", "tick", "tick", "app", "app", "commit", "leave",
                                      "unsubscribe"]),
    st.sampled_from(_CODES), st.integers(0, 4), st.floats(0.0, 4.0)), min_size=1, max_size=80)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from(["classic", "consumer"]), actions=_ACTIONS)
def test_random_answers_never_break_a_transition_table(protocol, actions):
    m = gs.Machines(protocol, max_poll_interval_ms=20000)
    m.member.set_subscription([gs.TOPIC])
    for kind, code, count, seconds in actions:
        if kind == "tick":
            m.now += seconds
        elif kind == "app":
            events = m.member.take_events()
            m.member.app_polled(m.now)
            for event in events:
                if type(event).__name__ in ("PartitionsLost", "RevokeBeforeRejoin"):
                    m.member.owned = []
                elif type(event).__name__ == "AssignmentReceived":
                    m.member.owned = event.assignment.partitions()
                elif type(event).__name__ == "Reconcile":
                    m.member.owned = sorted(event.target)
            m.member.app_done(events)
        elif kind == "commit":
            m.commits.commit({gs.TPS[0]: OffsetAndMetadata(5, "", -1)}, m.now, deadline=m.now + 2, retry=True)
        elif kind == "leave":
            m.member.leave("test", m.now)
        elif kind == "unsubscribe":
            m.member.set_subscription(None if m.member.subscription else [gs.TOPIC])
        else:
            if not m.outstanding:
                m.collect()
            if not m.outstanding:
                continue
            machine, request = m.outstanding.popleft()
            if kind == "fail":
                answer = KafkaConnectionError("cut")
            else:
                answer = _answer(request, code if kind == "error" else gs.NONE, gs.TPS[:count])
            try:
                machine.on_response(request.token, answer, m.now)
            except _Illegal:
                raise
            except KafkaError as exc:
                assert not exc.retriable, exc  # only what no retry fixes is raised
        assert m.member.state in m.member._LEGAL
        member_tokens = [r for mach, r in m.outstanding if mach is m.member]
        assert len(member_tokens) <= 1  # one membership request at a time
        # a deadline that has passed means a request now, or a state that waits no more:
        # a driver sleeping until next_deadline() never spins, never oversleeps
        if not m.outstanding:
            due = _due(m)
            m.collect()
            if m.outstanding:  # requests now: the deadline had said so
                assert due is not None and due <= m.now, (m.member.state, due, m.outstanding)
            elif due is not None and due <= m.now:
                assert _due(m) is None or _due(m) > m.now, (m.member.state, _due(m))


def _due(m):
    return earliest(m.member.next_deadline(), m.commits.next_deadline() if m.commits.busy else None)
