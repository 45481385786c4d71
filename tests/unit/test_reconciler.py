"""The rebalance reconciler (fastkc/group/reconciler.py) on canned events:
the ordered steps both group drivers execute, for eager, cooperative and
KIP-848 rebalances, lost against revoked partitions and raising listeners;
and the subscription state both consumers share (fastkc/group/subscription.py)."""
import logging
import re

import pytest

from fastkc.errors import IllegalStateError
from fastkc.group import classic_machine, consumer_machine
from fastkc.group.reconciler import (
    ASSIGNED,
    COMMIT_BEFORE_REVOKE_FAILED,
    LOST,
    REVOKED,
    AcknowledgeAssignment,
    Assign,
    CallListener,
    CommitBeforeRevoke,
    ListenerErrors,
    Reconciler,
    Revoke,
    listener_method,
)
from fastkc.group.subscription import EXCLUSIVE, SubscriptionState, visible_topics
from fastkc.protocol.consumer_protocol import Assignment
from fastkc.structs import TopicPartition

A = [TopicPartition("a", p) for p in range(4)]
B0 = TopicPartition("b", 0)


def java(auto_commit=True):
    return Reconciler("g", auto_commit=auto_commit, assigned_hears_whole_assignment=False)


def aiokafka(auto_commit=True):
    return Reconciler("g", auto_commit=auto_commit, assigned_hears_whole_assignment=True)


def received(partitions, generation=2):
    topics = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return classic_machine.AssignmentReceived(generation, "range", Assignment(0, list(topics.items())))


def test_eager_revokes_everything_with_a_commit_first_then_takes_the_new_assignment():
    owned = [A[1], A[0]]
    assert java().steps(classic_machine.RevokeBeforeRejoin(owned), owned, ["a"]) == [
        CommitBeforeRevoke([A[1], A[0]]), CallListener(REVOKED, [A[0], A[1]]), Revoke([A[1], A[0]])]
    # after the eager revocation nothing is owned: everything is added
    event = received([A[2], A[0]])
    assert java().steps(event, [], ["a"]) == [
        Assign([A[2], A[0]], [A[2], A[0]]), CallListener(ASSIGNED, [A[0], A[2]]), AcknowledgeAssignment(event, False)]


def test_cooperative_revokes_only_what_moves_and_acknowledges_that_it_revoked():
    owned = [A[0], A[1], A[2]]
    event = received([A[1], A[2], A[3]])
    steps = java().steps(event, owned, ["a"])
    assert steps == [
        CommitBeforeRevoke([A[0]]), CallListener(REVOKED, [A[0]]), Revoke([A[0]]),
        Assign([A[3]], [A[1], A[2], A[3]]), CallListener(ASSIGNED, [A[3]]),
        AcknowledgeAssignment(event, True)]  # revoked: the machine rejoins
    # aiokafka's listener hears of the whole assignment; nothing else differs
    whole = aiokafka().steps(event, owned, ["a"])
    assert whole[4] == CallListener(ASSIGNED, [A[1], A[2], A[3]])
    assert whole[:4] + whole[5:] == steps[:4] + steps[5:]


def test_an_unchanged_assignment_is_acknowledged_without_a_revocation():
    event = received([A[0], A[1]])
    assert java().steps(event, [A[0], A[1]], ["a"]) == [
        Assign([], [A[0], A[1]]), CallListener(ASSIGNED, []), AcknowledgeAssignment(event, False)]


def test_partitions_of_topics_not_subscribed_to_are_ignored_with_a_warning(caplog):
    event = received([A[0], B0])
    with caplog.at_level(logging.WARNING, logger="fastkc.group.reconciler"):
        steps = java().steps(event, [], ["a"])
    assert steps[0] == Assign([A[0]], [A[0]])
    assert "topics not subscribed to were ignored" in caplog.text


def test_kip848_revokes_what_the_target_drops_then_adds_the_rest_sorted_after_what_it_keeps():
    owned = [A[2], A[0], A[1]]
    steps = java().steps(consumer_machine.Reconcile({A[0], A[3], B0, A[1]}), owned, ["a", "b"])
    assert steps == [
        CommitBeforeRevoke([A[2]]), CallListener(REVOKED, [A[2]]), Revoke([A[2]]),
        Assign([A[3], B0], [A[0], A[1], A[3], B0]), CallListener(ASSIGNED, [A[3], B0])]
    # KIP-848 acknowledges through the machine's app_done: no classic acknowledgement
    assert not any(isinstance(step, AcknowledgeAssignment) for step in steps)
    assert aiokafka().steps(consumer_machine.Reconcile(set()), owned, ["a"])[-1] == CallListener(ASSIGNED, [])


@pytest.mark.parametrize("event", [classic_machine.PartitionsLost([]), consumer_machine.PartitionsLost([])])
def test_lost_partitions_are_never_committed_and_go_to_on_partitions_lost(event):
    owned = [A[1], A[0]]
    assert java(auto_commit=True).steps(event, owned, ["a"]) == [
        CallListener(LOST, [A[0], A[1]]), Revoke([A[1], A[0]])]


def test_revoked_partitions_without_auto_commit_are_not_committed():
    assert java(auto_commit=False).steps(classic_machine.RevokeBeforeRejoin([A[0]]), [A[0]], ["a"]) == [
        CallListener(REVOKED, [A[0]]), Revoke([A[0]])]


def test_nothing_owned_nothing_to_revoke_or_lose_and_other_events_give_no_steps():
    reconciler = java()
    assert reconciler.steps(classic_machine.RevokeBeforeRejoin([]), [], ["a"]) == []
    assert reconciler.steps(classic_machine.PartitionsLost([]), [], ["a"]) == []
    assert reconciler.steps(classic_machine.PollTimeoutExpired(300000), [A[0]], ["a"]) == []


def test_release_calls_revoked_without_a_commit():
    # close() and unsubscribe() commit every position before (one commit)
    assert java(auto_commit=True).release([A[1], A[0]]) == [CallListener(REVOKED, [A[0], A[1]]), Revoke([A[1], A[0]])]


def test_a_listener_without_on_partitions_lost_hears_a_revocation():
    class Old:
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, assigned):
            pass

    class New(Old):
        def on_partitions_lost(self, lost):
            pass

    assert listener_method(Old(), LOST) == REVOKED
    assert listener_method(New(), LOST) == LOST
    assert listener_method(Old(), ASSIGNED) == ASSIGNED
    assert listener_method(None, REVOKED) is None
    assert listener_method(object(), LOST) is None


def test_java_listener_errors_keep_the_first_for_poll_aiokafka_ones_are_only_logged(caplog):
    java_rule = ListenerErrors("g", raise_after_hand_over=True)
    first, second = ValueError("one"), ValueError("two")
    with caplog.at_level(logging.ERROR, logger="fastkc.group.reconciler"):
        java_rule.failed(REVOKED, first)
        java_rule.failed(ASSIGNED, second)
    assert java_rule.take() is first and java_rule.take() is None
    assert "on_partitions_assigned raised ValueError('two')" in caplog.text
    caplog.clear()
    aiokafka_rule = ListenerErrors("g", raise_after_hand_over=False)
    with caplog.at_level(logging.ERROR, logger="fastkc.group.reconciler"):
        try:
            raise second
        except ValueError as exc:
            aiokafka_rule.failed(ASSIGNED, exc)
    assert aiokafka_rule.take() is None
    assert "Traceback" in caplog.text  # logged with its traceback: nobody else sees it


def test_the_commit_warning_names_the_group():
    assert COMMIT_BEFORE_REVOKE_FAILED % ("g", "boom") == "group g: commit before revocation failed: boom"


# --- the subscription state -------------------------------------------------------------------------
class Topic:
    def __init__(self, partitions, internal=False, error_code=0):
        self.partitions = dict.fromkeys(partitions)
        self.is_internal = internal
        self.error_code = error_code


CLUSTER = {
    "orders": Topic([1, 0]),
    "orders-eu": Topic([0]),
    "__consumer_offsets": Topic([0, 1], internal=True),
    "orders-broken": Topic([0], error_code=3),
    "payments": Topic([0]),
}


def test_subscribe_assign_and_pattern_are_exclusive():
    state = SubscriptionState()
    state.check_assign()  # nothing subscribed: assign() may
    with pytest.raises(IllegalStateError, match=re.escape(EXCLUSIVE)):
        state.check_subscribe(["t"], "t.*", assigned=False)
    with pytest.raises(IllegalStateError, match=re.escape(EXCLUSIVE)):
        state.check_subscribe(["t"], None, assigned=True)  # partitions assigned by hand
    state.subscribe(["t"], None)
    state.check_subscribe(["u"], None, assigned=True)  # re-subscribing replaces the subscription
    with pytest.raises(IllegalStateError, match=re.escape(EXCLUSIVE)):
        state.check_assign()
    state.unsubscribe()
    assert not state.subscribed and state.pattern is None
    state.check_assign()


def test_without_a_group_a_subscription_gets_every_known_partition_of_its_topics():
    state = SubscriptionState()
    assert state.follow_metadata(CLUSTER, exclude_internal=True) == []  # not subscribed
    state.subscribe(["payments", "orders", "missing", "orders-broken"], None)
    assert state.follow_metadata(CLUSTER, exclude_internal=True) == [
        TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("payments", 0)]
    assert state.topics == {"payments", "orders", "missing", "orders-broken"}  # topics stay as given


@pytest.mark.parametrize("exclude_internal", [True, False])
def test_a_pattern_matches_topic_names_with_internal_ones_left_out_when_excluded(exclude_internal):
    state = SubscriptionState()
    state.subscribe([], "orders.*|__.*")
    assert state.subscribed and state.topics == set()  # matches unknown until metadata
    partitions = state.follow_metadata(CLUSTER, exclude_internal)
    expected = {"orders", "orders-eu"} | (set() if exclude_internal else {"__consumer_offsets"})
    assert state.topics == expected
    assert {tp.topic for tp in partitions} == expected
    assert visible_topics(CLUSTER, exclude_internal) == expected | {"payments"}
    # re.match: anchored at the start of the name
    assert visible_topics(CLUSTER, True, re.compile("eu")) == set()
