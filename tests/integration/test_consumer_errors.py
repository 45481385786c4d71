"""Issue 4: bad input and idleness — nothing listening on the bootstrap port,
a wrong SASL password against the --security broker (typed errors, no hang),
and an idle consumer that sleeps in poll instead of spinning."""
import gc
import resource
import socket
import time

import pytest

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _unused_port():
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_wrong_bootstrap_port_is_a_typed_error_within_bootstrap_timeout(flavour):
    # kafka-python 3.x raises KafkaTimeoutError("Unable to bootstrap from
    # <servers>") (2.x called it NoBrokersAvailable): a drop-in must raise
    # something `except KafkaTimeoutError` catches (fastkc: NoBrokersAvailable,
    # a subclass), naming the servers it tried.
    port = _unused_port()
    began = time.monotonic()
    with pytest.raises(flavour.error("KafkaTimeoutError"), match="127.0.0.1:{0}".format(port)):
        consumer = flavour.KafkaConsumer(bootstrap_servers="127.0.0.1:{0}".format(port),
                                         bootstrap_timeout_ms=3000, enable_auto_commit=False)
        try:
            # A consumer that connects lazily must fail on first use instead.
            consumer.topics()
        finally:
            consumer.close()
    assert time.monotonic() - began < 3.0 + 10.0


@pytest.mark.parametrize("as_list", [True, False], ids=["list", "comma-separated"])
def test_bootstrap_skips_an_unreachable_server(flavour, kafka_broker, make_topic, as_list):
    # Bootstrap tries each server in turn: a dead first entry only costs a
    # refused connect.
    topic = make_topic(partitions=2)
    servers = ["127.0.0.1:{0}".format(_unused_port()), kafka_broker.bootstrap_servers.split(",")[0]]
    consumer = flavour.KafkaConsumer(bootstrap_servers=servers if as_list else ",".join(servers),
                                     bootstrap_timeout_ms=20000, enable_auto_commit=False)
    try:
        assert consumer.partitions_for_topic(topic) == {0, 1}
    finally:
        consumer.close()




def _sasl_configs(info, mechanism, password):
    return dict(bootstrap_servers=info.listeners["SASL_PLAINTEXT"], security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password=password,
                enable_auto_commit=False)


# secure_broker starts a broker of its own: marked like the session-broker tests.
@pytest.mark.broker
@pytest.mark.parametrize("mechanism", SASL_MECHANISMS)
def test_right_sasl_password_connects(flavour, secure_broker, mechanism):
    # The broker's admin creates a topic; alice must see it (SASL works, so
    # the wrong-password case below fails for the password alone).
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.support.kafka_tools import unique_name

    topic = unique_name("consumer-sasl")
    admin = AdminClient({"bootstrap.servers": secure_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    consumer = flavour.KafkaConsumer(**_sasl_configs(secure_broker, mechanism, "alice-secret"))
    try:
        deadline = time.monotonic() + 30
        while topic not in consumer.topics():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert consumer.partitions_for_topic(topic) == {0}
    finally:
        consumer.close()


# Two mechanisms (PLAIN fails in one round trip, SCRAM in the exchange):
# each kafka-python case waits out its bootstrap timeout.
@pytest.mark.broker
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_wrong_sasl_password_is_an_authentication_error_not_a_hang(flavour, reference_deviates,
                                                                   secure_broker, mechanism):
    reference_deviates("a failed SASL handshake is retried until bootstrap_timeout_ms and surfaces as "
                       "KafkaTimeoutError('Unable to bootstrap'); the Java client raises "
                       "SaslAuthenticationException (SASL_AUTHENTICATION_FAILED) at once")
    bootstrap_timeout_ms = 3000
    began = time.monotonic()
    with pytest.raises(flavour.error("SaslAuthenticationFailedError")):
        consumer = flavour.KafkaConsumer(bootstrap_timeout_ms=bootstrap_timeout_ms,
                                         **_sasl_configs(secure_broker, mechanism, "wrong-password"))
        try:
            consumer.topics()
        finally:
            consumer.close()
    # An authentication failure is not retriable: it comes well before the
    # bootstrap timeout would.
    assert time.monotonic() - began < bootstrap_timeout_ms / 1000.0


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _idle_consumer(open_consumer, flavour, make_topic, partitions=1):
    topic = make_topic(partitions=partitions)
    tps = [flavour.TopicPartition(topic, p) for p in range(partitions)]
    consumer = open_consumer()
    consumer.assign(tps)
    consumer.seek_to_end()
    # Warm up: connections, metadata, the first (empty) fetches.
    assert consumer.poll(timeout_ms=500) == {}
    # Producers of earlier tests in this process may still own librdkafka
    # threads; collect them so their CPU is not counted as the consumer's.
    gc.collect()
    return consumer, tps


def _assert_idle_poll(consumer, timeout_ms=2000):
    cpu_before, wall_before = _cpu_seconds(), time.monotonic()
    result = consumer.poll(timeout_ms=timeout_ms)
    cpu, wall = _cpu_seconds() - cpu_before, time.monotonic() - wall_before
    assert result == {}
    # poll waits out its timeout when nothing comes (it does not return early)...
    assert wall >= 0.9 * timeout_ms / 1000.0
    # ...and sleeps while it waits: a behaviour bound, far above a blocked
    # select and far below a busy loop (~100%).
    assert cpu / wall < 0.10, "idle poll used {0:.0%} of a core".format(cpu / wall)


def test_idle_consumer_uses_almost_no_cpu(flavour, open_consumer, make_topic):
    consumer, _ = _idle_consumer(open_consumer, flavour, make_topic)
    _assert_idle_poll(consumer)


def test_poll_with_every_partition_paused_sleeps(flavour, open_consumer, make_topic):
    # Nothing to fetch at all (kafka-python #1315 / #1383: 100% CPU here).
    consumer, tps = _idle_consumer(open_consumer, flavour, make_topic, partitions=2)
    consumer.pause(*tps)
    _assert_idle_poll(consumer, timeout_ms=1500)


def test_consumer_between_polls_uses_almost_no_cpu(flavour, open_consumer, make_topic):
    # Whatever a consumer does in the background (pipelined fetches, I/O
    # threads), an application that is not polling pays almost nothing.
    consumer, _ = _idle_consumer(open_consumer, flavour, make_topic)
    cpu_before, wall_before = _cpu_seconds(), time.monotonic()
    time.sleep(1.5)
    cpu, wall = _cpu_seconds() - cpu_before, time.monotonic() - wall_before
    assert cpu / wall < 0.10, "a consumer not being polled used {0:.0%} of a core".format(cpu / wall)
    # Still working afterwards.
    _assert_idle_poll(consumer, timeout_ms=500)
