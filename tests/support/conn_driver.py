"""Drive one BrokerConnection's I/O by hand, as KafkaClient.poll does, for
tests that talk to a scripted peer (tests/unit/test_conn.py) or the fake
broker (tests/hostile/test_conn_frames.py)."""
import selectors
import time


def drive(conn, until, timeout=3.0, service=None):
    """Run `conn` until until() is true; service() (a peer living on this
    thread) is called every round. Returns the response payloads that were
    answered, in order; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    answers = []
    with selectors.DefaultSelector() as sel:
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError("timed out; connection is {0}".format(conn.state))
            if service is not None:
                service()
            if conn.sock is None:
                time.sleep(0.005)
                conn.check_timeouts()
                continue
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wants_write() else 0)
            sel.register(conn.sock, events)
            ready = sel.select(0.01)
            sel.unregister(conn.sock)
            for _, mask in ready:
                if mask & selectors.EVENT_WRITE:
                    conn.on_writable()
                if mask & selectors.EVENT_READ and conn.sock is not None:
                    for request, payload in conn.on_readable():
                        request.callback(payload, None)
                        answers.append(payload)
            conn.check_timeouts()
    return answers
