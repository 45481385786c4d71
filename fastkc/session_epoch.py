"""The epoch rule every client-side broker session follows: KIP-227 fetch
sessions (fastkc/fetch/session.py) and KIP-932 share sessions
(fastkc/share/session.py). Each session keeps its own partition
bookkeeping; the epoch is the same for both:

- INITIAL_EPOCH (0) opens a session: the request names every partition.
- each answered request moves the epoch on by one; past INT32_MAX it wraps
  to 1 (0 would open a new session, negative numbers are reserved).
- FINAL_EPOCH (-1) closes the session (or, for a fetch, asks for none).
- a session error or a lost connection starts anew at INITIAL_EPOCH.
"""
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: the largest epoch (the field is an INT32); the next one is 1
MAX_EPOCH = 0x7FFFFFFF


class SessionEpoch:
    """Where one session stands: `value` is the epoch its next request carries."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = INITIAL_EPOCH

    def __repr__(self) -> str:
        return "<SessionEpoch {0}>".format(self.value)

    @property
    def opening(self) -> bool:
        """The next request opens a session (names every partition)."""
        return self.value == INITIAL_EPOCH

    def answered(self) -> None:
        """The broker answered the request that carried `value`: move on."""
        self.value = self.value + 1 if self.value < MAX_EPOCH else 1

    def restart(self) -> None:
        """A session error or a lost connection: the next request opens anew."""
        self.value = INITIAL_EPOCH
