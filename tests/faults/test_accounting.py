"""The ledger itself (no broker): each check catches the violation it is for,
and accepts what the contract allows."""
from fastkc import errors
from tests.support.faults.accounting import Ledger
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


def test_recovery_is_heal_to_next_delivery():
    ledger = _ledger()
    fault = ledger.fault("f")
    fault.start = 1.0
    ledger.healed(fault, t=5.0)
    ledger.delivered_pairs([(0, 0)], 4.0, "a")
    ledger.delivered_pairs([(0, 1)], 5.25, "a")
    assert ledger.recovery() == [0.25]


def test_slope_per_minute():
    assert abs(slope_per_minute([(t, 10 + 0.5 * t) for t in range(0, 120, 5)]) - 30.0) < 1e-9
    assert slope_per_minute([(t, 7) for t in range(10)]) == 0.0
