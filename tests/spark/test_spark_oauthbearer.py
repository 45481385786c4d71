"""Spark's option names for OAUTHBEARER (and SCRAM) in the `fastkc` source:
the option parsing without Spark, then a real local session reading through
the harness's OIDC-validated OAUTHBEARER listener and its SCRAM listener."""
import logging
import pickle

import pytest

from fastkc.auth.oauthbearer import UnsecuredTokenProvider
from fastkc.auth.oidc import OidcClientCredentialsProvider
from fastkc.spark import options as so
from tests.support.kafka_tools import Message, create_topic, produce, unique_name

_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
SECRET = "Sup3r-s3cret"


def _oauth_options(**extra):
    options = {
        "kafka.bootstrap.servers": "h:1",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
        "kafka.sasl.login.callback.handler.class": _HANDLER,
        "kafka.sasl.jaas.config": '{0} required clientId="my-app" clientSecret="{1}" scope="kafka:read" '
                                  'extension_logicalCluster="lkc-42";'.format(_MODULE, SECRET),
    }
    options.update(extra)
    return {k.lower(): v for k, v in options.items()}


def test_oidc_options_build_the_provider():
    config = so.consumer_config(_oauth_options(**{"kafka.sasl.login.retry.backoff.max.ms": "2500"}))
    provider = config["sasl_oauth_token_provider"]
    assert isinstance(provider, OidcClientCredentialsProvider)
    assert (provider.token_endpoint_url, provider.client_id, provider.scope) == (
        "https://idp.example/oauth2/token", "my-app", "kafka:read")
    assert provider.extensions() == {"logicalCluster": "lkc-42"}
    assert provider.retry_backoff_max_ms == 2500
    assert config["sasl_mechanism"] == "OAUTHBEARER" and config["security_protocol"] == "SASL_SSL"
    # the configuration travels to the executors
    assert pickle.loads(pickle.dumps(config))["sasl_oauth_token_provider"].client_id == "my-app"


def test_relocated_class_names_are_accepted():
    # Databricks relocates the Kafka client under "kafkashaded."
    config = so.consumer_config(_oauth_options(**{
        "kafka.sasl.login.callback.handler.class": "kafkashaded." + _HANDLER.replace(
            "oauthbearer.", "oauthbearer.secured.", 1),
        "kafka.sasl.jaas.config": 'kafkashaded.{0} required clientId="a" clientSecret="b";'.format(_MODULE)}))
    assert config["sasl_oauth_token_provider"].client_id == "a"


def test_kip1139_config_keys_win_over_jaas_options():
    config = so.consumer_config(_oauth_options(**{
        "kafka.sasl.oauthbearer.client.credentials.client.id": "from-config",
        "kafka.sasl.oauthbearer.scope": "other"}))
    assert config["sasl_oauth_token_provider"].client_id == "from-config"
    assert config["sasl_oauth_token_provider"].scope == "other"


def test_unsecured_jaas_options_build_unsigned_tokens():
    options = _oauth_options(**{"kafka.sasl.jaas.config": '{0} required unsecuredLoginStringClaim_sub="bob";'.format(
        _MODULE)})
    del options["kafka.sasl.oauthbearer.token.endpoint.url"]
    provider = so.consumer_config(options)["sasl_oauth_token_provider"]
    assert isinstance(provider, UnsecuredTokenProvider) and provider.sub == "bob"


@pytest.mark.parametrize("change, match", [
    ({"kafka.sasl.login.callback.handler.class": "com.example.MyHandler"}, "cannot run"),
    ({"kafka.sasl.jaas.config": _MODULE + ' required clientId="my-app";'}, "clientSecret"),
    ({"kafka.sasl.oauthbearer.token.endpoint.url": "ftp://idp/token"}, "http"),
    ({"kafka.sasl.login.retry.backoff.ms": "soon"}, "For input string"),
])
def test_bad_oauth_options_are_errors_without_the_secret(change, match, caplog):
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(so.SparkKafkaOptionError, match=match) as info:
            so.consumer_config(_oauth_options(**change))
    assert SECRET not in str(info.value)
    assert SECRET not in caplog.text


def test_other_login_modules_still_refused():
    with pytest.raises(so.SparkKafkaOptionError, match=r"PLAIN, SCRAM, OAUTHBEARER, Krb5 \(GSSAPI\) and AWS IAM"):
        so.consumer_config({"kafka.sasl.jaas.config": "com.example.CustomLoginModule required;"})


# --- a real local Spark session through the secure listeners --------------------------

@pytest.fixture(scope="module")
def secure_kafka(secure_broker):
    return secure_broker  # the session's (tests/conftest.py)


@pytest.mark.broker
@pytest.mark.parametrize("mechanism", ["OAUTHBEARER", "SCRAM-SHA-512"])
def test_spark_reads_through_secure_listener(spark, secure_kafka, mechanism):
    topic = create_topic(secure_kafka.bootstrap_servers, unique_name("spark-" + mechanism.lower()), partitions=2)
    written = produce(secure_kafka.bootstrap_servers, topic,
                      [Message(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(40)])
    reader = spark.read.format("fastkc").option("subscribe", topic)
    if mechanism == "OAUTHBEARER":
        oidc = secure_kafka.credentials["oauthbearer"]
        reader = (reader.option("kafka.bootstrap.servers", secure_kafka.listeners["SASL_PLAINTEXT"])
                  .option("kafka.security.protocol", "SASL_PLAINTEXT")
                  .option("kafka.sasl.mechanism", "OAUTHBEARER")
                  .option("kafka.sasl.oauthbearer.token.endpoint.url", oidc["token_endpoint_url"])
                  .option("kafka.sasl.login.callback.handler.class", _HANDLER)
                  .option("kafka.sasl.jaas.config", '{0} required clientId="fastkc" clientSecret="{1}";'.format(
                      _MODULE, oidc["clients"]["fastkc"]["secret"])))
    else:
        reader = (reader.option("kafka.bootstrap.servers", secure_kafka.listeners["SASL_SSL"])
                  .option("kafka.security.protocol", "SASL_SSL")
                  .option("kafka.ssl.truststore.type", "PEM")
                  .option("kafka.ssl.truststore.location", secure_kafka.tls["ca"])
                  .option("kafka.sasl.mechanism", "SCRAM-SHA-512")
                  .option("kafka.sasl.jaas.config",
                          'org.apache.kafka.common.security.scram.ScramLoginModule required '
                          'username="alice" password="alice-secret";'))
    rows = reader.load().selectExpr("partition", "offset", "key", "value").collect()
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in rows)
    assert got == sorted((r.partition, r.offset, r.key, r.value) for r in written)
