"""A SASL step computed off the polling thread (auth.PendingStep: GSSAPI's
first step waits on the KDC inside libkrb5, which cannot be interrupted).
While it runs, the client's poll keeps its own timeout and the connection is
failed with the step's typed error at request_timeout_ms; once it is done,
authentication goes on. The mechanism here is PLAIN whose first message is
held back by an Event, standing in for a KDC that is slow or silent; the
fake broker (tests/support/fake_broker.py) answers the PLAIN exchange."""
import threading
import time

import pytest

from fastkc import auth, errors
from fastkc.auth import scram
from fastkc.client import KafkaClient
from fastkc.config import consumer_config
from fastkc.conn import ConnectionState
from tests.support import fake_broker as kit

USER, PASSWORD = "alice", "s3cret-pw"


class _SlowFirstStep:
    """PLAIN, but its first message comes from a PendingStep that waits for `release`."""

    def __init__(self, config, host, release):
        self._plain = scram.SaslExchange("PLAIN", config["sasl_plain_username"], config["sasl_plain_password"])
        self._release = release

    def first_message(self):
        def work():
            self._release.wait(30)
            if not self._release.is_set():
                raise errors.SaslAuthenticationFailedError("never released")
            return self._plain.first_message()

        return auth.PendingStep(work, lambda: errors.SaslAuthenticationFailedError("SASL TEST: KDC silent"),
                                "fastkc-test-pending")

    def receive(self, data):
        return self._plain.receive(data)


@pytest.fixture
def slow_mechanism(monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(auth, "new_exchange", lambda config, host: _SlowFirstStep(config, host, release))
    yield release
    release.set()  # let a worker still waiting end


def _client(broker, **configs):
    configs.setdefault("request_timeout_ms", 1500)
    configs = dict(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                   sasl_plain_username=USER, sasl_plain_password=PASSWORD, **configs)
    return KafkaClient(consumer_config(configs))


def test_a_pending_step_completes_and_authentication_goes_on(slow_mechanism):
    with kit.FakeBroker(sasl=(USER, PASSWORD)) as broker:
        client = _client(broker)
        try:
            threading.Timer(0.4, slow_mechanism.set).start()
            began = time.monotonic()
            client.bootstrap(timeout_ms=5000)
            assert 0.35 < time.monotonic() - began < 3.0
            assert broker.count("SaslAuthenticate") >= 1
        finally:
            client.close()


def test_poll_keeps_its_timeout_while_a_step_waits(slow_mechanism):
    with kit.FakeBroker(sasl=(USER, PASSWORD)) as broker:
        client = _client(broker, request_timeout_ms=5000)
        try:
            slow_mechanism.set()
            client.bootstrap(timeout_ms=5000)
            slow_mechanism.clear()  # the node's next connection meets a silent KDC
            client.connection(1).close()
            assert not client.ready(1)
            conn = client.connection(1)
            deadline = time.monotonic() + 5
            while conn.state is not ConnectionState.AUTHENTICATING and time.monotonic() < deadline:
                client.poll(0.02)
            assert conn.state is ConnectionState.AUTHENTICATING
            longest = 0.0
            for _ in range(10):  # a blocking step would hold each of these for seconds
                began = time.monotonic()
                client.poll(0.05)
                longest = max(longest, time.monotonic() - began)
            assert longest < 0.5, longest
            assert conn.state is ConnectionState.AUTHENTICATING
            slow_mechanism.set()
            deadline = time.monotonic() + 5
            while not client.ready(1) and time.monotonic() < deadline:
                client.poll(0.05)
            assert conn.ready
        finally:
            client.close()


def test_a_step_running_past_request_timeout_fails_typed_and_in_time(slow_mechanism):
    with kit.FakeBroker(sasl=(USER, PASSWORD)) as broker:
        client = _client(broker, request_timeout_ms=800)
        try:
            began = time.monotonic()
            with pytest.raises(errors.SaslAuthenticationFailedError, match="KDC silent"):
                client.bootstrap(timeout_ms=10000)
            took = time.monotonic() - began
        finally:
            client.close()
    assert 0.7 < took < 3.0, took  # request_timeout_ms, not the bootstrap timeout
    assert broker.count("SaslAuthenticate") == 0  # the step's message was never sent
