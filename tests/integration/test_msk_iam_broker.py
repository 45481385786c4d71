"""AWS_MSK_IAM against a real Kafka broker (4.3.1, the project's harness).

Amazon MSK's server side is not public and there is no MSK here, so the
broker gets one for the test: tests/support/msk_reference/
MskIamBrokerAgent.java, a Java agent that registers an AWS_MSK_IAM
SaslServer on the broker's SASL_SSL listener. It checks the payload's fields
and verifies its SigV4 signature with the AWS SDK for Java's presigner (the
signer AWS's own client library uses, independent of the botocore signer in
fastkc), then answers MSK's JSON. An independent producer (confluent-kafka)
writes through the PLAINTEXT listener; fastkc reads everything back through
SASL_SSL + AWS_MSK_IAM, exactly. A wrong secret is refused by the broker:
SaslAuthenticationFailedError naming AWS_MSK_IAM, at once, with no secret.

Needs java/javac and (the first time) mvn for the AWS SDK jars, like
tests/unit/test_msk_iam_reference.py: skipped without them, a failure under
FASTKC_REQUIRE_MSK_REFERENCE=1.
"""
import os
import time

import pytest

pytest.importorskip("botocore")

from fastkc import KafkaConsumer, errors  # noqa: E402
from fastkc.structs import TopicPartition  # noqa: E402
from fastkc_tools import broker  # noqa: E402
from fastkc_tools.broker.resolve import resolve_kafka  # noqa: E402
from tests.support import aws_env, msk_reference  # noqa: E402
from tests.support.kafka_tools import Message, create_topic, produce, unique_name  # noqa: E402

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+sessiontoken=="
REGION = "eu-west-1"
REQUEST_TIMEOUT_MS = 3000
SLACK = 1.5  # seconds: a JVM broker on a shared 2-core machine


@pytest.fixture(scope="module")
def msk_broker(tmp_path_factory):
    try:
        agent, sdk_lib = msk_reference.broker_agent(resolve_kafka().lib)
    except msk_reference.ReferenceUnavailable as exc:
        if os.environ.get("FASTKC_REQUIRE_MSK_REFERENCE") == "1":
            pytest.fail("the AWS SDK for the broker's AWS_MSK_IAM side is required: {0}".format(exc))
        pytest.skip("the AWS SDK for the broker's AWS_MSK_IAM side is unavailable: {0}".format(exc))
    data_dir = str(tmp_path_factory.mktemp("kafka-msk-iam"))
    accepted = os.path.join(data_dir, "accepted-credentials.properties")
    with open(accepted, "w") as fh:
        fh.write("accessKey={0}\nsecretKey={1}\nsessionToken={2}\nregion={3}\nhost=127.0.0.1\n".format(
            ACCESS_KEY, SECRET_KEY, TOKEN, REGION))
    info = broker.start(
        name="msk-iam", data_dir=data_dir, security=True, die_with_parent=True,
        broker_properties={
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "AWS_MSK_IAM",
            # Kafka logs every mechanism's listener in through JAAS; AWS_MSK_IAM's
            # server needs no login credentials, so any module that succeeds will do
            "listener.name.sasl_ssl.aws_msk_iam.sasl.jaas.config":
                "org.apache.kafka.common.security.plain.PlainLoginModule required;",
        },
        jvm_options=["-javaagent:{0}={1}|{2}".format(agent, sdk_lib, accepted)])
    try:
        yield info
    finally:
        broker.stop(name="msk-iam", data_dir=data_dir)


def _broker_said(info, text):
    with open(os.path.join(info.nodes[0].dir, "stdout.log"), encoding="utf-8", errors="replace") as fh:
        return fh.read().count(text)


def _consumer(info, **extra):
    settings = dict(bootstrap_servers=info.listeners["SASL_SSL"], security_protocol="SASL_SSL",
                    sasl_mechanism="AWS_MSK_IAM", ssl_cafile=info.tls["ca"], request_timeout_ms=REQUEST_TIMEOUT_MS,
                    fetch_max_wait_ms=200, enable_auto_commit=False, auto_offset_reset="earliest")
    settings.update(extra)
    return KafkaConsumer(**settings)


@pytest.mark.broker
def test_consumes_exactly_what_an_independent_producer_wrote(msk_broker, monkeypatch, tmp_path):
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, SECRET_KEY, TOKEN, REGION)
    topic = unique_name("msk-iam")
    plain = msk_broker.listeners["PLAINTEXT"]
    create_topic(plain, topic, partitions=2)
    written = produce(plain, topic, [Message(key=b"k%d" % i, value=b"value-%d" % i, partition=i % 2)
                                     for i in range(200)])
    accepted_before = _broker_said(msk_broker, "fastkc-msk-iam: accepted")
    consumer = _consumer(msk_broker)
    try:
        parts = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(parts)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < len(written) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
    finally:
        consumer.close()
    expect = sorted((w.partition, w.offset, w.key, w.value) for w in written)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in got) == expect
    # every connection of the consumer was one the broker verified and accepted
    assert _broker_said(msk_broker, "fastkc-msk-iam: accepted") > accepted_before
    assert _broker_said(msk_broker, "fastkc-msk-iam: refused") == 0


@pytest.mark.broker
def test_a_wrong_secret_is_refused_by_the_broker_at_once(msk_broker, monkeypatch, tmp_path):
    wrong = SECRET_KEY[:-1] + "X"
    aws_env.isolate(monkeypatch, tmp_path, ACCESS_KEY, wrong, TOKEN, REGION)
    refused_before = _broker_said(msk_broker, "fastkc-msk-iam: refused: signature does not verify")
    began = time.monotonic()
    with pytest.raises(errors.SaslAuthenticationFailedError) as info:
        _consumer(msk_broker, bootstrap_timeout_ms=30000).close()
    assert time.monotonic() - began < REQUEST_TIMEOUT_MS / 1000.0 + SLACK
    message = str(info.value)
    assert "AWS_MSK_IAM" in message and "Access denied" in message
    for secret in (SECRET_KEY, wrong, TOKEN):
        assert secret not in message
    assert _broker_said(msk_broker, "fastkc-msk-iam: refused: signature does not verify") == refused_before + 1
