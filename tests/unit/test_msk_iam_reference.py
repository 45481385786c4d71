"""AWS_MSK_IAM's payload against AWS's own reference signer.

There is no MSK here (issue 10), so the client message is checked against
the Java library AWS publishes for it, software.amazon.msk:aws-msk-iam-auth
(tests/support/msk_reference: resolved from Maven Central, its payload
generator run with a fixed clock), with the same credentials, region, host,
clock and user agent: every field equal, the signature byte for byte. A
second oracle is kafka-python 3.0.12's own AWS_MSK_IAM client (its clock
fixed by patching the module's datetime).

The reference needs java, javac and (the first time) mvn with Maven Central;
without them the tests skip, and FASTKC_REQUIRE_MSK_REFERENCE=1 (set by
scripts/test.sh) makes that a failure.
"""
import datetime
import json
import os
import types

import pytest

pytest.importorskip("botocore")
import botocore.auth  # noqa: E402
import botocore.credentials  # noqa: E402

from fastkc.auth import msk_iam  # noqa: E402
from tests.support import aws_env, msk_reference  # noqa: E402

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
# a session token with the characters SigV4's query encoding must escape
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+example=="

CASES = [
    # (host, region, token, epoch seconds)
    ("b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com", "eu-west-1", TOKEN, 1764000000),
    # a date change one second later (the scope's date comes from the same clock)
    ("b-3.prod.7x9k2m.c12.kafka.us-east-1.amazonaws.com", "us-east-1", None, 1767225599),
    ("boot-abcd1234.c3.kafka-serverless.ap-southeast-2.amazonaws.com", "ap-southeast-2", TOKEN, 1700000000),
    # not an MSK name: the library takes the region from AWS_REGION then
    ("127.0.0.1", "eu-central-1", None, 1780000000),
]


@pytest.fixture(scope="module")
def reference():
    try:
        return msk_reference.ensure()
    except msk_reference.ReferenceUnavailable as exc:
        if os.environ.get("FASTKC_REQUIRE_MSK_REFERENCE") == "1":
            pytest.fail("AWS's reference signer is required (FASTKC_REQUIRE_MSK_REFERENCE=1): {0}".format(exc))
        pytest.skip("AWS's reference signer unavailable: {0}".format(exc))


def _fixed_clock(monkeypatch, epoch):
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    # botocore's SigV4 signers read the time through this one function
    monkeypatch.setattr(botocore.auth, "get_current_datetime",
                        lambda remove_tzinfo=True: moment.replace(tzinfo=None) if remove_tzinfo else moment)


def _same(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key
    assert ours["x-amz-signature"].encode("ascii") == theirs["x-amz-signature"].encode("ascii")


IDS = ["msk-eu-west-1-token", "msk-us-east-1-date-edge", "serverless-ap-southeast-2-token", "ip-eu-central-1"]


@pytest.mark.parametrize("host,region,token,epoch", CASES, ids=IDS)
def test_payload_matches_aws_reference_signer(reference, monkeypatch, host, region, token, epoch):
    agent = msk_iam.user_agent()
    java_bytes, java_live = msk_reference.payload(reference, host, ACCESS_KEY, SECRET_KEY, token, epoch, agent,
                                                  region=region)
    java = json.loads(java_bytes)
    # The fixed-clock run took the library's own path: its public entry point
    # (real clock) gives the same fields, and only the time-bound ones differ.
    assert sorted(java_live) == sorted(java)
    assert {k for k in java if java_live[k] != java[k]} <= {"x-amz-date", "x-amz-credential", "x-amz-signature",
                                                            "x-amz-expires"}
    # the live run's expiry is its expiration instant less its signing time,
    # two clock reads: a second's tick between them gives 899 (seen once)
    assert java_live["x-amz-expires"] in ("899", "900")
    assert java["x-amz-date"] == datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime(
        "%Y%m%dT%H%M%SZ")
    assert java["x-amz-expires"] == "900" and ("x-amz-security-token" in java) == bool(token)

    _fixed_clock(monkeypatch, epoch)
    ours = json.loads(msk_iam.signed_payload(host, botocore.credentials.Credentials(ACCESS_KEY, SECRET_KEY, token),
                                             region))
    _same(ours, java)


def test_one_key_off_changes_the_signature(reference, monkeypatch):
    # the comparison can fail: a secret one character off signs differently
    host, region, token, epoch = CASES[0]
    java = json.loads(msk_reference.payload(reference, host, ACCESS_KEY, SECRET_KEY, token, epoch,
                                            msk_iam.user_agent(), region=region)[0])
    _fixed_clock(monkeypatch, epoch)
    ours = json.loads(msk_iam.signed_payload(host, botocore.credentials.Credentials(
        ACCESS_KEY, SECRET_KEY[:-1] + "Z", token), region))
    assert ours["x-amz-signature"] != java["x-amz-signature"]
    assert {k for k in java if ours[k] != java[k]} == {"x-amz-signature"}


def test_exchange_from_the_environment_matches_the_reference(reference, monkeypatch, tmp_path):
    # the whole client path: botocore's chain (environment variables), the
    # region from AWS_DEFAULT_REGION, new_exchange() for the connection's host
    host, region, token, epoch = CASES[0]
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, SECRET_KEY, token, region)
    config = {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM"}
    msk_iam.check_config(config)
    _fixed_clock(monkeypatch, epoch)
    ours = json.loads(msk_iam.new_exchange(config, host).first_message())
    java = json.loads(msk_reference.payload(reference, host, ACCESS_KEY, SECRET_KEY, token, epoch,
                                            msk_iam.user_agent(), region=region)[0])
    _same(ours, java)


@pytest.mark.parametrize("host,region,token,epoch", CASES, ids=IDS)
def test_payload_matches_kafka_python(monkeypatch, host, region, token, epoch):
    kafka_msk = pytest.importorskip("kafka.net.sasl.msk")
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    fake = types.SimpleNamespace(timezone=datetime.timezone,
                                 datetime=types.SimpleNamespace(now=lambda tz=None: moment))
    monkeypatch.setattr(kafka_msk, "datetime", fake)
    theirs = json.loads(kafka_msk.AwsMskIamClient(host, ACCESS_KEY, SECRET_KEY, region, token).first_message())
    _fixed_clock(monkeypatch, epoch)
    ours = json.loads(msk_iam.signed_payload(host, botocore.credentials.Credentials(ACCESS_KEY, SECRET_KEY, token),
                                             region, agent="kafka-python"))
    _same(ours, theirs)
