"""The ledger itself (no broker): each check catches the violation it is for,
and accepts what the contract allows."""
from fastkc import errors
from fastkc.structs import ConsumerRecord, TopicPartition
from tests.support.faults.accounting import DUPLICATE_GRACE_S, Ledger
from tests.support.faults.soak import slope_per_minute


def _ledger(n=10):
    ledger = Ledger("unit", expected_errors=(errors.KafkaTimeoutError,))
    for o in range(n):
        ledger.produced_one(0, o)
    return ledger


def test_clean_run_with_hand_back_and_redelivery_from_commit():
    ledger = _ledger()
    ledger.delivered_pairs([(0, 0), (0, 1), (0, 2)], 1.0, "a")
    ledger.committed({0: 3}, "a", 1.5)
    ledger.delivered_pairs([(0, 3), (0, 4), (0, 5)], 2.0, "a")  # not committed: re-read by b
    ledger.event("b assigned [0]", 2.8)  # the rebalance that explains b's re-reading
    ledger.delivered_pairs([(0, 3), (0, 4), (0, 5), (0, 6)], 3.0, "b")
    ledger.committed({0: 7}, "b", 3.5)
    ledger.delivered_pairs([(0, 7), (0, 8), (0, 9)], 4.0, "a")  # handed back to a: a jump over b's offsets
    ledger.error(errors.KafkaTimeoutError("commit"))
    report = ledger.report()
    assert report.ok(), report.failures()
    assert (report.lost, report.duplicates, report.errors) == (0, 3, {"KafkaTimeoutError": 1})


def test_each_violation_is_caught():
    ledger = _ledger()
    ledger.delivered_pairs([(0, 0), (0, 1), (0, 2)], 1.0, "a")
    ledger.committed({0: 2}, "a", 1.5)
    ledger.committed({0: 5}, "a", 1.6)  # ahead of what was handed out (3 at most)
    ledger.delivered_pairs([(0, 1)], 2.0, "b")  # re-delivered before the last commit (5)
    ledger.delivered_pairs([(0, 4)], 3.0, "a")  # skips 3: a gap
    ledger.error(ValueError("untyped"))
    ledger.error(errors.CommitFailedError("not expected here"))
    report = ledger.report()
    assert report.lost == 6  # 3, 5..9
    assert report.gaps == [("a", 0, 2, 4)]
    assert report.commits_ahead == [("a", 0, 5, 2)]
    assert report.early_duplicates == [("b", 0, 1, 5)]
    assert report.untyped_errors == [("ValueError", "untyped")]
    assert [name for name, _ in report.unexpected_errors] == ["CommitFailedError"]
    assert not report.ok()


def _record(partition, offset, value):
    return ConsumerRecord("t", partition, -1, offset, 0, 0, None, value, [], None, -1, len(value), -1)


def test_values_are_checked_against_what_was_produced():
    ledger = Ledger("unit")
    for o in range(3):
        ledger.produced_one(0, o, b"v%d" % o)
    tp = TopicPartition("t", 0)
    ledger.delivered({tp: [_record(0, 0, b"v0"), _record(0, 1, b"v2"), _record(0, 2, b"v2")]}, "a", 1.0)
    report = ledger.report()
    assert report.lost == 0 and report.values_checked == 3
    assert report.wrong_values == [("a", 0, 1)]  # offset 1 handed out with offset 2's value
    assert not report.ok() and "wrong_values" in report.failures()[0]


def test_committed_offsets_read_back_from_the_broker_never_pass_what_was_handed_out():
    ledger = _ledger()
    ledger.delivered_pairs([(0, 0), (0, 1), (0, 2)], 1.0, "a")
    ledger.broker_committed({0: 3}, 1.5)  # one past the highest handed out: fine
    ledger.broker_committed({0: 2}, 1.6)
    ledger.broker_committed({0: 5}, 1.7)  # ahead: 3 and 4 were never handed out
    ledger.delivered_pairs([(0, 3), (0, 4)], 2.0, "a")
    ledger.broker_committed({0: 5}, 2.5)  # now handed out
    ledger.broker_committed({1: 1}, 2.6)  # a partition nothing was handed out of
    report = ledger.report()
    assert report.broker_commit_reads == 5
    assert report.broker_commits_ahead == [(1.7, 0, 5, 2), (2.6, 1, 1, -1)]
    assert not report.ok()


def test_duplicates_need_an_event_to_explain_them():
    ledger = _ledger()
    ledger.delivered_pairs([(0, 0), (0, 1)], 1.0, "a")
    ledger.committed({0: 1}, "a", 1.1)
    ledger.delivered_pairs([(0, 1)], 2.0, "a")  # re-delivered from the commit, but nothing happened
    fault = ledger.fault("f")
    fault.start = 3.0
    ledger.healed(fault, t=4.0)
    ledger.delivered_pairs([(0, 1)], 4.0 + DUPLICATE_GRACE_S - 1, "a")  # within the fault's window
    ledger.delivered_pairs([(0, 1)], 4.0 + DUPLICATE_GRACE_S + 1, "a")  # after it
    ledger.event("member b starts", 30.0)
    ledger.delivered_pairs([(0, 1)], 31.0, "b")  # explained by the new member
    report = ledger.report()
    assert report.duplicates == 4
    assert report.unexplained_duplicates == [("a", 0, 1, 2.0), ("a", 0, 1, 4.0 + DUPLICATE_GRACE_S + 1)]
    strict = ledger.report(allow_duplicates=False)
    assert len(strict.early_duplicates) == 4 and not strict.ok()


def test_recovery_is_per_partition_catch_up_worst_first():
    ledger = Ledger("unit")
    for p in range(3):
        for o in range(3):
            ledger.produced_one(p, o)
            ledger.produced_at[(p, o)] = 1.0 + o  # acknowledged at 1, 2, 3
    ledger.produced_one(1, 3)
    ledger.produced_at[(1, 3)] = 9.0  # after the heal: not part of the catch-up
    fault = ledger.fault("f")
    fault.start = 2.5
    ledger.healed(fault, t=5.0)
    ledger.delivered_pairs([(0, 0), (0, 1), (0, 2)], 4.0, "a")  # partition 0 had everything before the heal
    ledger.delivered_pairs([(1, 0), (2, 0)], 4.5, "a")
    ledger.delivered_pairs([(2, 1), (2, 2)], 5.25, "a")  # the next record on any partition: 0.25 s
    ledger.delivered_pairs([(1, 1)], 6.0, "a")
    ledger.delivered_pairs([(1, 2)], 12.0, "a")  # partition 1 caught up 7 s after the heal
    assert ledger.catch_up() == [("f", [(1, 7.0), (2, 0.25), (0, 0.0)])]
    assert ledger.recovery() == [7.0]
    report = ledger.report()
    assert (report.recovery_median_s, report.recovery_worst_s) == (7.0, 7.0)
    assert report.catch_up == [("f", [(1, 7.0), (2, 0.25), (0, 0.0)])]


def test_slope_per_minute():
    assert abs(slope_per_minute([(t, 10 + 0.5 * t) for t in range(0, 120, 5)]) - 30.0) < 1e-9
    assert slope_per_minute([(t, 7) for t in range(10)]) == 0.0
