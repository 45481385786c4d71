"""The acquired ranges of a ShareFetch answer (KIP-932), in a leaf module:
checked once by `fastkc.records.decode_share` and used by both backends
(the twin for everything, the compiled core's bridge for the rare error
path; its gaps on the normal path come from C, `fkc_share_gaps`).

A range is (first_offset, last_offset inclusive, delivery_count). Java's
ShareCompletedFetch walks the acquired offsets one by one beside the
records; here they stay ranges, and every function is one merge pass over
the sorted ranges and the records' offsets (which the decoder hands out in
strictly increasing order under a share filter).
"""
from collections.abc import Iterable, Sequence

from fastkc.errors import InvalidAcquiredRecordsError
from fastkc.structs import ShareFailure

AcquiredRange = tuple[int, int, int]

# DeliveryCount is an int16 on the wire; the broker starts it at 1
_MAX_DELIVERY_COUNT = (1 << 15) - 1
# a record's offset must leave room for the next offset (fkc_frame_entry's rule)
_MAX_OFFSET = (1 << 63) - 2


def checked_acquired(acquired: Iterable[Sequence[int]], topic: str, partition: int) -> list[AcquiredRange]:
    """The ranges as a list of int triples, or InvalidAcquiredRecordsError
    naming the first bad one: each first <= last within [0, 2^63 - 2],
    sorted, not overlapping, delivery_count in 1..32767."""
    out: list[AcquiredRange] = []
    previous_last = -1
    for index, item in enumerate(acquired):
        try:
            first, last, count = (int(v) for v in item)
        except (TypeError, ValueError):
            raise InvalidAcquiredRecordsError(
                "an acquired range must be (first_offset, last_offset, delivery_count), not {0!r}".format(item),
                topic, partition, index) from None
        if not 0 <= first <= last <= _MAX_OFFSET:
            reason = "FirstOffset {0} / LastOffset {1}: need 0 <= first <= last <= 2^63 - 2".format(first, last)
        elif first <= previous_last:
            reason = "FirstOffset {0} is not past the previous range's LastOffset {1} (unsorted or overlapping)".format(
                first, previous_last)
        elif not 1 <= count <= _MAX_DELIVERY_COUNT:
            reason = "DeliveryCount {0} is outside 1..{1}".format(count, _MAX_DELIVERY_COUNT)
        else:
            out.append((first, last, count))
            previous_last = last
            continue
        raise InvalidAcquiredRecordsError(reason, topic, partition, index)
    return out


def _undelivered(acquired: Sequence[AcquiredRange], delivered: Iterable[int]) -> list[tuple[int, int]]:
    """The acquired offsets not in `delivered` (strictly increasing, each
    inside a range), as ranges in offset order."""
    out: list[tuple[int, int]] = []
    ranges = iter(acquired)
    current = next(ranges, None)
    start = current[0] if current else 0  # the first offset of `current` not yet accounted for
    for offset in delivered:
        while current is not None and current[1] < offset:
            if start <= current[1]:
                out.append((start, current[1]))
            current = next(ranges, None)
            start = current[0] if current else 0
        if current is None:
            break
        if start < offset:
            out.append((start, offset - 1))
        start = offset + 1
    while current is not None:
        if start <= current[1]:
            out.append((start, current[1]))
        current = next(ranges, None)
        start = current[0] if current else 0
    return out


def share_gaps(acquired: Sequence[AcquiredRange], delivered: Iterable[int]) -> list[tuple[int, int]]:
    """The gaps of a decode that reached the end: every acquired offset no
    record was handed out for (compacted away, a control record, past the
    last complete batch), as Java's ShareCompletedFetch adds them."""
    return _undelivered(acquired, delivered)


def _clip(ranges: Sequence[tuple[int, int]], low: int, high: int) -> list[tuple[int, int]]:
    return [(max(a, low), min(b, high)) for a, b in ranges if a <= high and b >= low]


def share_failure(
    acquired: Sequence[AcquiredRange], delivered: Iterable[int], batch_first: int, batch_last: int
) -> ShareFailure:
    """What a decode stopped by a bad batch (BaseOffset batch_first, last
    offset batch_last as its header says; equal when the header says no
    more) leaves: acquired, undelivered offsets below the batch are gaps,
    inside it rejected, past it released (see fastkc.structs.ShareFailure)."""
    left = _undelivered(acquired, delivered)
    return ShareFailure(
        gaps=_clip(left, -(1 << 63), batch_first - 1),
        rejected=_clip(left, batch_first, batch_last),
        released=_clip(left, batch_last + 1, 1 << 63),
    )
