"""wakeup() checks shared by the unit, hostile and live tests: run a
blocking consumer call on a thread, then wake it and assert Java's outcome
(WakeupException, promptly)."""
import threading
import time

from fastkc import errors


def call_in_thread(call):
    """Start call() on a daemon thread. Returns (thread, outcome): outcome
    gets "result" or "error", then "took" (seconds) when the call ends."""
    outcome = {}

    def run():
        start = time.monotonic()
        try:
            outcome["result"] = call()
        except BaseException as exc:  # noqa: B902 - handed to the test
            outcome["error"] = exc
        outcome["took"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def assert_wakeup_ends(consumer, thread, outcome, within=1.0):
    """The call on `thread` is still blocked; consumer.wakeup() must end it
    with WakeupException within `within` seconds."""
    assert thread.is_alive(), outcome
    woken_at = time.monotonic()
    consumer.wakeup()
    thread.join(5)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), errors.WakeupException), outcome
    assert time.monotonic() - woken_at < within
