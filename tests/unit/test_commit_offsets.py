"""commit()'s offsets, one rule for both consumers
(fastkc.group.commit_machine.normalise_offsets): what is accepted becomes an
OffsetAndMetadata; anything else is a TypeError or ValueError naming it."""
import pytest

from fastkc.group.commit_machine import normalise_offsets
from fastkc.structs import OffsetAndMetadata, TopicPartition

TP = TopicPartition("t", 0)


def test_the_accepted_forms():
    assert normalise_offsets({TP: 5}) == {TP: OffsetAndMetadata(5, "", -1)}
    assert normalise_offsets({TP: (5, "m")}) == {TP: OffsetAndMetadata(5, "m", -1)}
    assert normalise_offsets({TP: (5, "m", 3)}) == {TP: OffsetAndMetadata(5, "m", 3)}
    assert normalise_offsets({TP: OffsetAndMetadata(5, "m", 3)}) == {TP: OffsetAndMetadata(5, "m", 3)}


@pytest.mark.parametrize("offsets, error, words", [
    ({("t", 0): 5}, TypeError, "keyed by TopicPartition"),
    ({TP: "5"}, TypeError, "must be OffsetAndMetadata"),
    ({TP: True}, TypeError, "must be OffsetAndMetadata"),
    ({TP: (5,)}, TypeError, "must be OffsetAndMetadata"),
    ({TP: -1}, ValueError, "non-negative"),
    ({TP: OffsetAndMetadata(None, "", -1)}, ValueError, "non-negative"),
])
def test_the_refused_forms(offsets, error, words):
    with pytest.raises(error, match=words):
        normalise_offsets(offsets)
