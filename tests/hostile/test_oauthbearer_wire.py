"""OAUTHBEARER's wire flow against the scripted fake broker: what the client
sends at each step (RFC 7628), and brokers that refuse in the RFC's way or
break it. The real broker's side is in tests/integration/test_oauthbearer_broker.py."""
import time

import pytest

from fastkc import KafkaConsumer
from fastkc.auth.oauthbearer import UnsecuredTokenProvider
from fastkc.errors import SaslAuthenticationFailedError
from tests.support import fake_broker as kit

REQUEST_TIMEOUT_MS = 1000
@pytest.fixture
def make_broker():
    threads_before = {t.ident for t in kit.client_threads()}
    fds_before = kit.open_fds()
    made = []

    def make(mode):
        made.append(kit.OAuthFakeBroker(mode, topics={"t": 1}, records=3))
        return made[-1]

    yield make
    for b in made:
        b.close()
        assert not b.errors, b.errors
    assert kit.wait_for(lambda: {t.ident for t in kit.client_threads()} <= threads_before)
    assert kit.wait_for(lambda: kit.open_fds() <= fds_before)


def _consumer(broker, provider):
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider,
                         request_timeout_ms=REQUEST_TIMEOUT_MS, bootstrap_timeout_ms=5000,
                         reconnect_backoff_ms=20)


class _Recording(UnsecuredTokenProvider):
    def __init__(self):
        super().__init__("alice", extensions={"traceId": "t-1", "tenant": "blue"})
        self.tokens = []

    def token(self):
        self.tokens.append(super().token())
        return self.tokens[-1]


def test_accepted_first_message_on_the_wire(make_broker):
    broker = make_broker("accept")
    provider = _Recording()
    consumer = _consumer(broker, provider)
    try:
        assert "t" in consumer.topics()
    finally:
        consumer.close()
    first = broker.received[0]
    assert first == ("n,,\x01auth=Bearer " + provider.tokens[0] + "\x01traceId=t-1\x01tenant=blue\x01\x01").encode()
    # one token per authentication, each its own
    assert len(broker.received) == len(provider.tokens) >= 1


def test_refusal_follows_rfc7628_and_names_the_status(make_broker):
    broker = make_broker("refuse")
    provider = _Recording()
    began = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as info:
        _consumer(broker, provider)
    # one round trip for the token, one for the \x01; no retry loop
    assert time.monotonic() - began < REQUEST_TIMEOUT_MS / 1000.0
    assert broker.received[1] == b"\x01" and len(broker.received) == 2
    message = str(info.value)
    assert "OAUTHBEARER" in message and "invalid_token" in message
    assert provider.tokens[0] not in message


def test_success_after_a_refusal_is_still_a_failure(make_broker):
    broker = make_broker("refuse-then-succeed")
    with pytest.raises(SaslAuthenticationFailedError, match="refused the token .status invalid_token"):
        _consumer(broker, _Recording())
    assert broker.received[1] == b"\x01"
