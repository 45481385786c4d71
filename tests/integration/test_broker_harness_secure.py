"""The harness's secure broker (broker.start(security=True), the session's
`secure_broker`): its SASL users, TLS listeners and refusals, checked with
confluent-kafka's clients."""
import pytest

from tests.support.kafka_tools import consume_all, create_topic, unique_name


def _admin(conf):
    from confluent_kafka.admin import AdminClient

    return AdminClient(dict(conf, log_level=0))


def _broker_ids(conf, timeout=15):
    return sorted(_admin(conf).list_topics(timeout=timeout).brokers)


# --- security listeners ----------------------------------------------------------------



def _sasl(info, listener, mechanism, user="alice", password="alice-secret"):
    conf = {"bootstrap.servers": info.listeners[listener], "security.protocol": listener,
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    if listener == "SASL_SSL":
        conf["ssl.ca.location"] = info.tls["ca"]
    return conf


@pytest.mark.broker
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_users_can_connect(secure_broker, listener, mechanism):
    assert secure_broker.credentials["users"]["alice"] == "alice-secret"
    assert _broker_ids(_sasl(secure_broker, listener, mechanism)) == [1]


@pytest.mark.broker
def test_ssl_listener_with_client_certificate(secure_broker):
    tls = secure_broker.tls
    conf = {"security.protocol": "SSL", "ssl.ca.location": tls["ca"],
            "ssl.certificate.location": tls["client_cert"], "ssl.key.location": tls["client_key"]}
    ssl_addr = secure_broker.listeners["SSL"]
    # The certificate names both 127.0.0.1 and localhost, and the client checks the name.
    assert _broker_ids(dict(conf, **{"bootstrap.servers": ssl_addr})) == [1]
    assert _broker_ids(dict(conf, **{"bootstrap.servers": ssl_addr.replace("127.0.0.1", "localhost")})) == [1]


@pytest.mark.broker
def test_secure_produce_and_consume_over_sasl_ssl(secure_broker):
    # Topics are created over PLAINTEXT; the data goes through SASL_SSL + SCRAM.
    topic = create_topic(secure_broker.bootstrap_servers, unique_name("secure"))
    conf = _sasl(secure_broker, "SASL_SSL", "SCRAM-SHA-512")
    from confluent_kafka import Producer

    producer = Producer(dict(conf, **{"acks": "all"}))
    for i in range(5):
        producer.produce(topic, key=b"k%d" % i, value=b"secret-%d" % i, partition=0)
    assert producer.flush(30) == 0
    read = consume_all(secure_broker.bootstrap_servers, topic)
    assert [(r.key, r.value) for r in read] == [(b"k%d" % i, b"secret-%d" % i) for i in range(5)]


@pytest.mark.broker
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_wrong_password_is_an_authentication_error(secure_broker, mechanism):
    from confluent_kafka import KafkaError, KafkaException

    errors = []
    conf = _sasl(secure_broker, "SASL_PLAINTEXT", mechanism, password="wrong")
    conf["error_cb"] = errors.append
    admin = _admin(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    # librdkafka hands client-level errors to error_cb from poll().
    for _ in range(20):
        if errors:
            break
        admin.poll(0.25)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


@pytest.mark.broker
def test_ssl_listener_refuses_client_without_certificate(secure_broker):
    from confluent_kafka import KafkaException

    conf = {"bootstrap.servers": secure_broker.listeners["SSL"], "security.protocol": "SSL",
            "ssl.ca.location": secure_broker.tls["ca"]}
    with pytest.raises(KafkaException):
        _admin(conf).list_topics(timeout=5)
