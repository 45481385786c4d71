"""OAUTHBEARER against a real broker: one secure broker (the harness's OIDC
server, SASL_PLAINTEXT validating JWTs against its JWKS, SASL_SSL in Kafka's
unsecured mode), data written by confluent-kafka's producer, read by fastkc
through a consumer group so the coordinator connection authenticates too."""
import os
import time

import pytest

from fastkc import KafkaConsumer, TopicPartition
from fastkc.auth.oidc import OidcClientCredentialsProvider
from fastkc.errors import SaslAuthenticationFailedError
from fastkc_tools import broker
from fastkc_tools.broker import oauth
from tests.support.kafka_tools import Message, create_topic, produce, unique_name

pytestmark = pytest.mark.broker

kp_oauth = pytest.importorskip("kafka.net.sasl.oauth")


@pytest.fixture(scope="module")
def oauth_broker(secure_broker):
    return secure_broker  # the session's (tests/conftest.py)


@pytest.fixture(scope="module")
def oidc(oauth_broker):
    return oauth_broker.credentials["oauthbearer"]


@pytest.fixture(scope="module")
def written(oauth_broker):
    """A 3-partition topic and what confluent-kafka's producer wrote to it."""
    topic = create_topic(oauth_broker.bootstrap_servers, unique_name("oauth"), partitions=3)
    messages = [Message(key=b"k%d" % i, value=b"value-%d" % i, partition=i % 3) for i in range(60)]
    records = produce(oauth_broker.bootstrap_servers, topic, messages)
    return topic, sorted((r.partition, r.offset, r.key, r.value) for r in records)


class CountingOidcProvider(OidcClientCredentialsProvider):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.token_calls = 0

    def token(self):
        self.token_calls += 1
        return super().token()


class KafkaPythonUnsecuredProvider(kp_oauth.AbstractTokenProvider):
    """Written for kafka-python 3.0.12, used unchanged: unsigned JWTs for
    Kafka's unsecured mode, with a SASL extension."""

    def __init__(self, sub):
        super().__init__()
        self.sub = sub
        self.calls = 0

    def token(self):
        self.calls += 1
        return oauth.unsecured_token(self.sub)

    def extensions(self):
        return {"traceId": "fastkc-test"}


def _read_all(consumer, expected_count, timeout=30.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected_count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend((r.partition, r.offset, r.key, r.value) for r in records)
    return sorted(got)


def _consume_in_group(topic, expected, **config):
    group = unique_name("oauth-group")
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             **config)
    try:
        got = _read_all(consumer, len(expected))
        consumer.commit()
        committed = {p: consumer.committed(TopicPartition(topic, p)) for p in range(3)}
    finally:
        consumer.close()
    assert got == expected  # exactly what the producer wrote: nothing lost, nothing twice
    ends = {}
    for partition, offset, _, _ in expected:
        ends[partition] = max(ends.get(partition, -1), offset + 1)
    assert committed == ends


def test_oidc_provider_through_jwks_validating_listener(oauth_broker, oidc, written):
    topic, expected = written
    provider = CountingOidcProvider(oidc["token_endpoint_url"], "fastkc", oidc["clients"]["fastkc"]["secret"],
                                    scope="kafka")
    _consume_in_group(topic, expected, bootstrap_servers=oauth_broker.listeners["SASL_PLAINTEXT"],
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                      sasl_oauth_token_provider=provider)
    # Every connection (bootstrap, the group coordinator's, the leader's)
    # asked for the token; one fetch from the endpoint served them all.
    assert provider.token_calls >= 2
    assert provider.fetches == 1


def test_kafka_python_provider_through_unsecured_listener(oauth_broker, written):
    topic, expected = written
    provider = KafkaPythonUnsecuredProvider("bob")
    _consume_in_group(topic, expected, bootstrap_servers=oauth_broker.listeners["SASL_SSL"],
                      security_protocol="SASL_SSL", ssl_cafile=oauth_broker.tls["ca"],
                      sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider)
    assert provider.calls >= 2


class _Fixed:
    def __init__(self, token):
        self._token = token

    def token(self):
        return self._token


def _signed(oidc, **kwargs):
    with open(oidc["signing_key"], "rb") as fh:
        pem = fh.read()
    kwargs.setdefault("issuer", oidc["issuer"])
    return oauth.sign_token(pem, oidc["kid"], "mallory", **kwargs)


def _other_key_token(oidc):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    # Same kid as the harness's key: only the signature can tell them apart.
    return oauth.sign_token(pem, oidc["kid"], "mallory", issuer=oidc["issuer"])


@pytest.mark.parametrize("case", ["expired", "other key", "wrong audience", "wrong issuer", "unsigned"])
def test_broker_refuses_bad_tokens_fast(oauth_broker, oidc, case):
    token = {
        "expired": lambda: _signed(oidc, lifetime=60, now=time.time() - 3600),
        "other key": lambda: _other_key_token(oidc),
        "wrong audience": lambda: _signed(oidc, audience="someone-else"),
        "wrong issuer": lambda: _signed(oidc, issuer="http://127.0.0.1:1"),
        "unsigned": lambda: oauth.unsecured_token("mallory"),
    }[case]()
    request_timeout_ms = 5000
    began = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as info:
        KafkaConsumer(bootstrap_servers=oauth_broker.listeners["SASL_PLAINTEXT"], security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=_Fixed(token),
                      request_timeout_ms=request_timeout_ms, bootstrap_timeout_ms=20000)
    elapsed = time.monotonic() - began
    assert elapsed < request_timeout_ms / 1000.0, elapsed
    message = str(info.value)
    assert "OAUTHBEARER" in message and "invalid_token" in message  # the broker's RFC 7628 status
    assert token not in message and token.split(".")[1] not in message


def test_wrong_client_secret_fails_fast_without_the_secret(oauth_broker, oidc):
    secret = oidc["clients"]["fastkc"]["secret"] + "-wrong"
    provider = OidcClientCredentialsProvider(oidc["token_endpoint_url"], "fastkc", secret)
    began = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as info:
        KafkaConsumer(bootstrap_servers=oauth_broker.listeners["SASL_PLAINTEXT"], security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider,
                      request_timeout_ms=5000, bootstrap_timeout_ms=20000)
    assert time.monotonic() - began < 2.0  # a 401 is not retried
    message = str(info.value)
    assert "HTTP 401" in message and oidc["token_endpoint_url"] in message
    assert secret not in message and oidc["clients"]["fastkc"]["secret"] not in message


def test_token_endpoint_down_fails_within_the_retry_bound(oauth_broker, oidc):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = "http://127.0.0.1:{0}/token".format(s.getsockname()[1])
    provider = OidcClientCredentialsProvider(dead, "fastkc", "x", retry_backoff_ms=100, retry_backoff_max_ms=1500)
    began = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError, match="token endpoint"):
        KafkaConsumer(bootstrap_servers=oauth_broker.listeners["SASL_PLAINTEXT"], security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider,
                      request_timeout_ms=5000, bootstrap_timeout_ms=20000)
    assert time.monotonic() - began < 3.0


def test_harness_describes_oauthbearer(oauth_broker, oidc):
    import io

    assert "OAUTHBEARER" in oauth_broker.credentials["mechanisms"]
    out = io.StringIO()
    broker.describe(oauth_broker, out=out)
    text = out.getvalue()
    assert oidc["token_endpoint_url"] in text and oidc["clients"]["fastkc"]["secret"] in text
    assert "unsecured" in text
    assert os.path.exists(oidc["signing_key"])


def test_an_independent_oidc_client_authenticates_against_the_harness(oauth_broker, oidc):
    # librdkafka's own OIDC implementation (sasl.oauthbearer.method=oidc)
    # checks the harness's token endpoint and JWKS listener independently of
    # fastkc's provider: it writes through the validated listener, fastkc
    # reads back over PLAINTEXT.
    from confluent_kafka import Producer

    topic = create_topic(oauth_broker.bootstrap_servers, unique_name("oauth-rdkafka"))
    producer = Producer({
        "bootstrap.servers": oauth_broker.listeners["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": oidc["token_endpoint_url"],
        "sasl.oauthbearer.client.id": "fastkc",
        "sasl.oauthbearer.client.secret": oidc["clients"]["fastkc"]["secret"],
        "acks": "all"})
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"rd-%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(bootstrap_servers=oauth_broker.bootstrap_servers, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = _read_all(consumer, 10)
    finally:
        consumer.close()
    assert [(r[2], r[3]) for r in got] == [(b"k%d" % i, b"rd-%d" % i) for i in range(10)]
