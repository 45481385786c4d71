"""AWS_MSK_IAM over the scripted broker (tests/support/fake_broker.py), over TLS
(SASL_SSL, as kafka-python and MSK require).

There is no MSK here (issue 10). The kit plays its part: it offers
AWS_MSK_IAM, checks the client's JSON payload field by field and recomputes
its SigV4 signature with botocore from the credentials it was given
(kit.verify_msk_iam), then answers MSK's JSON (version, request-id) or
refuses with error 58. A full KafkaConsumer bootstraps through that and
consumes the kit's records; the negative cases fail typed, in time, with
no secret in the message. The payload's exact bytes are checked against
AWS's own signer in tests/unit/test_msk_iam_reference.py.
"""
import ssl
import time

import pytest

pytest.importorskip("botocore")

from fastkc import KafkaConsumer, errors  # noqa: E402
from fastkc.structs import TopicPartition  # noqa: E402
from tests.support import aws_env  # noqa: E402
from tests.support import fake_broker as kit  # noqa: E402

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+sessiontoken=="
REGION = "eu-west-1"
REQUEST_TIMEOUT_MS = 1000
SLACK = 1.0  # seconds: scheduling on a shared 2-core machine


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from fastkc_tools.broker import certs

    files = certs.generate(str(tmp_path_factory.mktemp("msk-tls")))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(files.broker_keystore)
    return files.ca, server


@pytest.fixture
def aws(monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, SECRET_KEY, TOKEN, REGION)


def _consumer(broker, cafile, **extra):
    settings = dict(bootstrap_servers=broker.bootstrap, security_protocol="SASL_SSL", sasl_mechanism="AWS_MSK_IAM",
                    ssl_cafile=cafile, request_timeout_ms=REQUEST_TIMEOUT_MS, fetch_max_wait_ms=100,
                    reconnect_backoff_ms=20, reconnect_backoff_max_ms=200, retry_backoff_ms=20,
                    enable_auto_commit=False, auto_offset_reset="earliest")
    settings.update(extra)
    return KafkaConsumer(**settings)


def _no_secret(text):
    assert SECRET_KEY not in text and TOKEN not in text, text


def test_consumer_authenticates_and_consumes_over_sasl_ssl(tls, aws):
    cafile, server = tls
    threads_before = {t.ident for t in kit.client_threads()}
    fds_before = kit.open_fds()
    with kit.FakeBroker(topics={"t": 2}, records=10, tls=server,
                        msk_iam=(ACCESS_KEY, SECRET_KEY, TOKEN, REGION)) as broker:
        consumer = _consumer(broker, cafile)
        try:
            parts = [TopicPartition("t", 0), TopicPartition("t", 1)]
            consumer.assign(parts)
            got = {tp: [] for tp in parts}
            deadline = time.monotonic() + 10
            while sum(map(len, got.values())) < 20 and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=200).items():
                    got[tp].extend(records)
        finally:
            consumer.close()
        for tp in parts:
            assert [(r.offset, r.value) for r in got[tp]] == [(i, b"v%d" % i) for i in range(10)], tp
        assert not broker.errors, broker.errors
        # every connection authenticated, and every payload verified
        verdicts = [reason for _, reason in broker.msk_iam]
        assert verdicts and verdicts == [None] * len(verdicts)
        assert broker.count("SaslAuthenticate") == len(verdicts) == broker.connections
        payload = broker.msk_iam[0][0]
        assert payload["host"] == "127.0.0.1" and payload["x-amz-security-token"] == TOKEN
    # nothing of the client's is left after close()
    assert kit.wait_for(lambda: {t.ident for t in kit.client_threads()} <= threads_before)
    assert kit.wait_for(lambda: kit.open_fds() <= fds_before)


def test_a_refused_signature_fails_at_once_naming_the_mechanism(tls, aws):
    # the kit holds another secret: the client's signature does not verify
    kit_secret = SECRET_KEY[:-1] + "X"
    cafile, server = tls
    with kit.FakeBroker(tls=server, msk_iam=(ACCESS_KEY, kit_secret, TOKEN, REGION)) as broker:
        began = time.monotonic()
        with pytest.raises(errors.SaslAuthenticationFailedError) as info:
            _consumer(broker, cafile, bootstrap_timeout_ms=20000).close()
        elapsed = time.monotonic() - began
        # refused: no retry until bootstrap_timeout_ms
        assert elapsed < REQUEST_TIMEOUT_MS / 1000.0 + SLACK, elapsed
        assert broker.msk_iam[0][1] == "signature does not verify"
        assert broker.count("SaslAuthenticate") == 1
    message = str(info.value)
    assert "AWS_MSK_IAM" in message and "Access denied" in message
    _no_secret(message)


@pytest.mark.parametrize("auth_bytes", [b"<html>503</html>", b"", b'{"version": "1999", "request-id": "x"}'],
                         ids=["html", "empty", "wrong-version"])
def test_a_garbage_answer_is_an_authentication_error(tls, aws, auth_bytes):
    cafile, server = tls
    with kit.FakeBroker(tls=server, msk_iam=(ACCESS_KEY, SECRET_KEY, TOKEN, REGION)) as broker:
        broker.script("SaslAuthenticate", kit.answer(
            lambda header, body, default: dict(default, error_code=0, error_message=None, auth_bytes=auth_bytes)))
        began = time.monotonic()
        with pytest.raises(errors.SaslAuthenticationFailedError) as info:
            _consumer(broker, cafile, bootstrap_timeout_ms=20000).close()
        assert time.monotonic() - began < REQUEST_TIMEOUT_MS / 1000.0 + SLACK
        assert broker.msk_iam[0][1] is None  # the payload was fine; the answer was not
    assert "AWS_MSK_IAM" in str(info.value)
    _no_secret(str(info.value))


def test_a_silent_broker_times_out_the_authentication(tls, aws):
    cafile, server = tls
    with kit.FakeBroker(tls=server, msk_iam=(ACCESS_KEY, SECRET_KEY, TOKEN, REGION)) as broker:
        broker.script("SaslAuthenticate", kit.silence())
        began = time.monotonic()
        with pytest.raises(errors.KafkaError) as info:
            _consumer(broker, cafile, bootstrap_timeout_ms=1500).close()
        assert time.monotonic() - began < 1.5 + SLACK
    _no_secret(str(info.value))


def test_a_broker_without_the_mechanism_is_refused_typed(tls, aws):
    cafile, server = tls
    with kit.FakeBroker(tls=server, sasl=("alice", "secret")) as broker:  # offers PLAIN only
        with pytest.raises(errors.UnsupportedSaslMechanismError, match="AWS_MSK_IAM"):
            _consumer(broker, cafile, bootstrap_timeout_ms=20000).close()


def test_no_credentials_fail_before_any_connection(tls, monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, region=REGION)
    cafile, server = tls
    with kit.FakeBroker(tls=server, msk_iam=(ACCESS_KEY, SECRET_KEY, TOKEN, REGION)) as broker:
        with pytest.raises(errors.KafkaConfigurationError, match="AWS_MSK_IAM"):
            _consumer(broker, cafile)
        assert broker.connections == 0
