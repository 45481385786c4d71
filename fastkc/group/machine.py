"""What every group state machine shares: requests out, answers in (each
machine's explicit state is a fastkc.state_machine.StateHolder).

A machine never does I/O, never sleeps, never takes a lock and never reads a
clock: `now` (seconds, any monotonic origin) comes with every call. A driver
(today `member.py`'s thread over the blocking `GroupTransport`; an asyncio
driver the same way over its own connections) repeats:

    for request in machine.next_requests(now):
        answer = <send request.api/request.body to request.target, wait>
        machine.on_response(request.token, answer, now)   # answer: the decoded
                                                           # response, or the
                                                           # exception that ended it
    sleep until machine.next_deadline() (or until an answer / the application;
                                         DUE_NOW: at once; None: only they move it)

Requests are fastkc/request.py's `Request[Token]`, to `COORDINATOR` or
`ANY_NODE` (that module says what a driver answers for each). An answer whose
token the machine no longer waits for (a reply that lost a race with a state
change) is ignored.

Errors: `on_response` raises only what no retry can fix (the driver hands it
to the application); everything retriable is absorbed into the state and a
deadline.
"""
#: a deadline that has passed already: the machine has a request to make now
DUE_NOW = float("-inf")


def earliest(*deadlines: float | None) -> float | None:
    """The earliest of the deadlines that are set (None when none is)."""
    present = [d for d in deadlines if d is not None]
    return min(present) if present else None
