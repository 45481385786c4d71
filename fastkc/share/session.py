"""The client side of one leader's share session (KIP-932), I/O-free.

A share session belongs to (group, member id, broker). Its epoch says where
the client is in it:
- 0 opens a session: the first ShareFetch to a broker lists every partition
  to fetch from it. It cannot carry acknowledgements, and a ShareAcknowledge
  cannot open a session.
- then 1, 2, ...: each answered request moves the epoch on; a ShareFetch
  names only the partitions added since the last one and "forgets" the
  partitions the member no longer fetches from this broker.
- -1 closes it (close()): a ShareAcknowledge carrying the last
  acknowledgements; the broker releases what the session still holds.

SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH or a lost connection
start a new session (epoch 0) as Java's ShareSessionHandler does (the epoch
rule is fastkc/session_epoch.py's, shared with fetch sessions); the broker
has released the records the old session held, so acknowledgements for them
can no longer succeed. Any other top-level error still moves the epoch on
(the broker counted the request).
"""
from __future__ import annotations

from collections.abc import Iterable

from fastkc.errors import InvalidShareSessionEpochError, ShareSessionNotFoundError
from fastkc.session_epoch import FINAL_EPOCH, SessionEpoch

#: top-level errors after which the session is gone: open a new one
SESSION_ERRORS = frozenset((ShareSessionNotFoundError.errno, InvalidShareSessionEpochError.errno))

#: a partition as a share session names it: (topic id, partition index)
SessionPartition = tuple[bytes, int]


class ShareSession:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self._epoch = SessionEpoch()
        self.partitions: dict[SessionPartition, None] = {}  # what the broker's session fetches, in order
        self.closed = False

    @property
    def epoch(self) -> int:
        """The epoch the next ShareFetch or ShareAcknowledge carries."""
        return self._epoch.value

    @property
    def is_open(self) -> bool:
        """The broker holds a session: acknowledgements may be sent."""
        return not self._epoch.opening and not self.closed

    def build_fetch(self, wanted: Iterable[SessionPartition]) -> tuple[int, list[SessionPartition],
                                                                        list[SessionPartition]]:
        """(epoch, partitions to name, partitions to forget) for a ShareFetch
        of `wanted`. A new session names them all."""
        wanted = list(dict.fromkeys(wanted))
        if self._epoch.opening:
            self.partitions = dict.fromkeys(wanted)
            return self.epoch, wanted, []
        added = [tp for tp in wanted if tp not in self.partitions]
        forgotten = [tp for tp in self.partitions if tp not in set(wanted)]
        self.partitions = dict.fromkeys(wanted)
        return self.epoch, added, forgotten

    def close_epoch(self) -> int:
        """The epoch of the request that ends the session."""
        self.closed = True
        return FINAL_EPOCH

    def answered(self, error_code: int) -> bool:
        """An answer came (its top-level error code): False when the session
        is gone and the next request opens a new one."""
        if self.closed:
            return True
        if error_code in SESSION_ERRORS:
            self.reset()
            return False
        self._epoch.answered()
        return True

    def reset(self) -> None:
        """A lost connection or a session error: the next ShareFetch opens anew."""
        self._epoch.restart()
        self.partitions = {}
        self.closed = False
