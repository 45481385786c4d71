"""Where a newly owned partition starts: at the group's committed offset.

One rule for every front-end (the sync consumer's group member, the asyncio
group driver, assign() with a group_id on either), as in the Java client's
refreshCommittedOffsets: a partition handed to this consumer has no position
until its committed offset has been read. Until then the fetcher holds it
(no fetch, no auto_offset_reset). A read that fails (the coordinator moving,
a timeout) is tried again after retry_backoff_ms. Only a read that succeeds
and finds nothing committed lets auto_offset_reset choose.

Releasing a partition to auto_offset_reset after a failed read is the bug
this module exists against. It re-delivers from the earliest offset
('earliest') or skips to the end ('latest'). The soak saw it: a member that
joined while the coordinator's node was killed read partition 1 from offset 0
although 1002 was committed.

I/O-free: the caller reads the committed offsets its own way (blocking or
awaited) and reports the answer or the failure here.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from fastkc.group.commit_machine import Committed
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)


class HeldPartitions(Protocol):
    """The fetch side: FetchMachine has these three."""

    def hold_for_committed(self, tp: TopicPartition, held: bool = True) -> None: ...

    def is_held(self, tp: TopicPartition) -> bool: ...

    def seek(self, tp: TopicPartition, offset: int, epoch: int) -> None: ...


class CommittedStarts:
    """The partitions whose committed offsets are still to be read."""

    def __init__(self, retry_backoff_ms: float) -> None:
        self._backoff = retry_backoff_ms / 1000.0
        self._pending: dict[TopicPartition, None] = {}  # a dict for its order
        self._next_try = 0.0

    def hold(self, fetch: HeldPartitions, partitions: Iterable[TopicPartition]) -> None:
        """Partitions just assigned: held until their committed offsets are
        read (one already given a position, by a seek, needs nothing)."""
        for tp in partitions:
            fetch.hold_for_committed(tp)
            if fetch.is_held(tp):
                self._pending[tp] = None
        self._next_try = 0.0  # new partitions are looked up at once

    def due(self, fetch: HeldPartitions, now: float) -> list[TopicPartition]:
        """The partitions to read now: [] when none are pending, or while
        backing off after a failed read. Partitions unassigned or sought
        since they were held are dropped here."""
        self._pending = {tp: None for tp in self._pending if fetch.is_held(tp)}
        if not self._pending or now < self._next_try:
            return []
        return list(self._pending)

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def seconds_to_retry(self, now: float) -> float:
        return max(0.0, self._next_try - now)

    def failed(self, now: float, error: BaseException) -> None:
        """The read failed: the partitions stay held, read again after
        retry_backoff_ms."""
        self._next_try = now + self._backoff
        log.warning("committed offsets of %s not read (%s); the partitions wait and it is tried again in %.0f ms",
                    sorted(self._pending), error, self._backoff * 1000.0)

    def settle(self, fetch: HeldPartitions, committed: Committed) -> None:
        """The read succeeded: each partition starts at its committed offset,
        or goes by auto_offset_reset when nothing is committed."""
        for tp, entry in committed.items():
            if tp not in self._pending:
                continue  # not asked for here
            del self._pending[tp]
            if not fetch.is_held(tp):
                continue  # unassigned or sought meanwhile
            if entry is not None and entry.offset is not None and entry.offset >= 0:
                fetch.seek(tp, entry.offset, entry.leader_epoch)
            else:
                fetch.hold_for_committed(tp, False)
