"""AWS_MSK_IAM (fastkc/auth/msk_iam.py): configuration errors at
construction, the broker's answer, credentials refreshed per
authentication, and no secret in any message or log line. The payload
itself is checked against AWS's reference signer in
test_msk_iam_reference.py, the exchange over a broker in
tests/hostile/test_msk_iam_kit.py."""
import datetime
import json
import logging
import sys
import time

import pytest

pytest.importorskip("botocore")
import botocore.credentials  # noqa: E402

from fastkc import KafkaConsumer, errors  # noqa: E402
from fastkc.auth import PendingStep, msk_iam  # noqa: E402
from tests.support import aws_env  # noqa: E402

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+sessiontoken=="
HOST = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com"
CONFIG = {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM"}


def _construct(**extra):
    # 127.0.0.1:9 (discard): construction must fail before any connection
    return KafkaConsumer(bootstrap_servers="127.0.0.1:9", bootstrap_timeout_ms=500, request_timeout_ms=300,
                         fetch_max_wait_ms=100, **dict(CONFIG, **extra))


def _no_secret(text):
    assert SECRET_KEY not in text and TOKEN not in text, text


@pytest.fixture
def env(monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, SECRET_KEY, TOKEN, "eu-west-1")
    return monkeypatch


def test_mechanism_is_registered_under_kafka_pythons_name():
    from fastkc import auth
    assert "AWS_MSK_IAM" in auth.MECHANISMS and auth.module_for("AWS_MSK_IAM") is msk_iam


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT"])
def test_sasl_ssl_is_required(env, protocol):
    with pytest.raises(errors.KafkaConfigurationError) as info:
        _construct(security_protocol=protocol)
    assert "SASL_SSL" in str(info.value) and "AWS_MSK_IAM" in str(info.value)


def test_no_credentials_fail_construction_naming_the_mechanism(monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, region="eu-west-1")
    began = time.monotonic()
    with pytest.raises(errors.KafkaConfigurationError) as info:
        _construct()
    assert time.monotonic() - began < 2.0
    assert "AWS_MSK_IAM" in str(info.value) and "credentials" in str(info.value)


def test_half_credentials_are_no_credentials(monkeypatch, tmp_path):
    # botocore's environment provider wants both the key id and the secret
    aws_env.isolate(monkeypatch, tmp_path, access_key=ACCESS_KEY, region="eu-west-1")
    with pytest.raises(errors.KafkaConfigurationError, match="AWS_MSK_IAM"):
        _construct()


def test_no_region_fails_construction(monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, SECRET_KEY, TOKEN)
    with pytest.raises(errors.KafkaConfigurationError) as info:
        _construct()
    assert "AWS_MSK_IAM" in str(info.value) and "AWS_DEFAULT_REGION" in str(info.value)
    _no_secret(str(info.value))


def test_region_and_credentials_from_a_profile_file(monkeypatch, tmp_path):
    # the shared files of botocore's chain, a named profile
    aws_env.isolate(monkeypatch, tmp_path)
    (tmp_path / "credentials").write_text("[team]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n".format(
        ACCESS_KEY, SECRET_KEY))
    (tmp_path / "config").write_text("[profile team]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "team")
    msk_iam.check_config(CONFIG)
    payload = json.loads(msk_iam.new_exchange(CONFIG, HOST).first_message())
    assert payload["x-amz-credential"].startswith(ACCESS_KEY + "/")
    assert payload["x-amz-credential"].endswith("/ap-south-1/kafka-cluster/aws4_request")
    assert "x-amz-security-token" not in payload


def test_missing_botocore_is_a_configuration_error(env):
    env.setitem(sys.modules, "botocore", None)  # import botocore -> ImportError
    env.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(errors.KafkaConfigurationError) as info:
        _construct()
    assert "botocore" in str(info.value) and "AWS_MSK_IAM" in str(info.value)


def test_payload_fields(env):
    msk_iam.check_config(CONFIG)
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    payload = json.loads(msk_iam.new_exchange(CONFIG, HOST).first_message())
    after = datetime.datetime.now(datetime.UTC)
    assert payload["version"] == "2020_10_22" and payload["host"] == HOST
    assert payload["action"] == "kafka-cluster:Connect" and payload["x-amz-expires"] == "900"
    assert payload["user-agent"].startswith("fastkc/")
    assert payload["x-amz-security-token"] == TOKEN
    signed = datetime.datetime.strptime(payload["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    assert before <= signed <= after
    assert SECRET_KEY not in json.dumps(payload)


# --- the broker's answer ----------------------------------------------------------------------------
def _exchange(env):
    msk_iam.check_config(CONFIG)
    exchange = msk_iam.new_exchange(CONFIG, HOST)
    exchange.first_message()
    return exchange


def test_a_good_answer_completes(env):
    answer = json.dumps({"version": "2020_10_22", "request-id": "4f1e2c3a-0000"}).encode()
    assert _exchange(env).receive(answer) is None


@pytest.mark.parametrize("answer", [
    b"",  # kafka-python: not authenticated; AWS's library: "Expects a non-empty authentication response"
    b"not json at all",
    b"\xff\xfe\x00",
    b"[1, 2]",
    b'{"version": "2019_01_01", "request-id": "x"}',
    b'{"version": "2020_10_22"}',
    b'{"version": "2020_10_22", "request-id": 7}',
    b'{"version": "2020_10_22", "request-id": "x"' + b" " * 10,  # cut short
])
def test_a_bad_answer_is_an_authentication_error(env, answer):
    with pytest.raises(errors.SaslAuthenticationFailedError) as info:
        _exchange(env).receive(answer)
    assert "AWS_MSK_IAM" in str(info.value)
    _no_secret(str(info.value))


def test_a_second_answer_is_refused(env):
    exchange = _exchange(env)
    exchange.receive(b'{"version": "2020_10_22", "request-id": "x"}')
    with pytest.raises(errors.SaslAuthenticationFailedError, match="AWS_MSK_IAM"):
        exchange.receive(b'{"version": "2020_10_22", "request-id": "x"}')


# --- credentials per authentication -----------------------------------------------------------------
def test_each_authentication_signs_with_refreshed_credentials(env):
    # A RefreshableCredentials (what botocore's chain returns for assume-role,
    # SSO, container and instance credentials) near its expiry refreshes at
    # the next authentication: that one signs with the new key.
    issued = []

    def refresh():
        issued.append(len(issued))
        # expires in 5 minutes: inside botocore's mandatory refresh window
        # (10 min), so every use refreshes -- one refresh per authentication
        expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
        return {"access_key": "AKIDROTATED{0}".format(len(issued)), "secret_key": SECRET_KEY, "token": TOKEN,
                "expiry_time": expiry.isoformat()}

    refreshable = botocore.credentials.RefreshableCredentials.create_from_metadata(refresh(), refresh, "test")
    env.setattr(msk_iam, "_sources", {msk_iam._chain_key(): (refreshable, "eu-west-1")})
    first = json.loads(_first_message(msk_iam.new_exchange(CONFIG, HOST)))
    second = json.loads(_first_message(msk_iam.new_exchange(CONFIG, HOST)))
    assert first["x-amz-credential"].split("/")[0] != second["x-amz-credential"].split("/")[0]
    assert second["x-amz-credential"].startswith("AKIDROTATED")


def _first_message(exchange):
    """The first message, waited for when it is a PendingStep (a refresh)."""
    message = exchange.first_message()
    if isinstance(message, PendingStep):
        assert message.wait(10)
        message = message.result()
    return message


def test_a_slow_refresh_runs_off_the_polling_thread(env):
    # STS or the instance metadata service answering slowly must not hold
    # the connection's thread (the consumer's poll loop): the exchange hands
    # the connection a PendingStep at once, which later yields the payload
    def refresh():
        time.sleep(0.5)
        expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
        return {"access_key": "AKIDSLOWREFRESH", "secret_key": SECRET_KEY, "token": TOKEN,
                "expiry_time": expiry.isoformat()}

    expired = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)).isoformat()
    refreshable = botocore.credentials.RefreshableCredentials.create_from_metadata(
        {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "token": TOKEN, "expiry_time": expired}, refresh, "test")
    env.setattr(msk_iam, "_sources", {msk_iam._chain_key(): (refreshable, "eu-west-1")})
    began = time.monotonic()
    message = msk_iam.new_exchange(CONFIG, HOST).first_message()
    assert time.monotonic() - began < 0.2
    assert isinstance(message, PendingStep) and not message.done()
    assert message.wait(10)
    assert json.loads(message.result())["x-amz-credential"].startswith("AKIDSLOWREFRESH/")
    # fresh now: the next authentication signs on the spot
    assert json.loads(msk_iam.new_exchange(CONFIG, HOST).first_message())["x-amz-credential"].startswith(
        "AKIDSLOWREFRESH/")


def test_a_failed_refresh_is_an_authentication_error_without_secrets(env):
    def refresh():
        raise RuntimeError("STS said no for " + SECRET_KEY)  # a message holding a secret must not leak

    expired = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)).isoformat()
    refreshable = botocore.credentials.RefreshableCredentials.create_from_metadata(
        {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "token": TOKEN, "expiry_time": expired}, refresh, "test")
    env.setattr(msk_iam, "_sources", {msk_iam._chain_key(): (refreshable, "eu-west-1")})
    with pytest.raises(errors.SaslAuthenticationFailedError) as info:
        _first_message(msk_iam.new_exchange(CONFIG, HOST))
    assert "AWS_MSK_IAM" in str(info.value)
    _no_secret(str(info.value))


def test_the_source_follows_the_environment(env, tmp_path):
    msk_iam.check_config(CONFIG)
    env.setenv("AWS_ACCESS_KEY_ID", "AKIDOTHERKEY")
    payload = json.loads(msk_iam.new_exchange(CONFIG, HOST).first_message())
    assert payload["x-amz-credential"].startswith("AKIDOTHERKEY/")


def test_no_secret_in_any_log_line_at_debug(env, caplog):
    caplog.set_level(logging.DEBUG)
    msk_iam.check_config(CONFIG)
    exchange = msk_iam.new_exchange(CONFIG, HOST)
    exchange.first_message()
    exchange.receive(b'{"version": "2020_10_22", "request-id": "r-1"}')
    text = "\n".join(r.getMessage() for r in caplog.records)
    # botocore logged its canonical request (the presigned query): it was there, masked
    assert "CanonicalRequest" in text and "X-Amz-Security-Token=***" in text
    _no_secret(text)
