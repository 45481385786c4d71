"""Consumer configuration: kafka-python's keys and defaults, validation, and
the consumer's refusals that need no broker."""
import socket
import time

import pytest

from fastkc import errors
from fastkc.client import KafkaClient
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import CONSUMER_DEFAULTS, consumer_config, parse_host_port
from fastkc.structs import TopicPartition

# kafka-python's values where ours differ on purpose: the client id names
# fastkc; selector / kafka_client name kafka-python classes fastkc does not use.
_OURS = {"client_id", "selector", "kafka_client", "default_offset_commit_callback",
         "partition_assignment_strategy"}


def test_every_kafka_python_key_is_accepted_with_its_default():
    from kafka.consumer.group import KafkaConsumer as Reference

    reference = Reference.DEFAULT_CONFIG
    assert set(reference) <= set(CONSUMER_DEFAULTS)
    for key, value in reference.items():
        if key not in _OURS:
            assert CONSUMER_DEFAULTS[key] == value, key


def test_unknown_key_raises_configuration_error():
    with pytest.raises(errors.KafkaConfigurationError, match="fetch_max_byte"):
        consumer_config({"fetch_max_byte": 1})


@pytest.mark.parametrize("configs", [
    {"fetch_max_bytes": 0},
    {"max_poll_records": -1},
    {"fetch_max_wait_ms": "500"},
    {"auto_offset_reset": "middle"},
    {"isolation_level": "read_dirty"},
    {"request_timeout_ms": 400, "fetch_max_wait_ms": 500},
    {"reconnect_backoff_ms": 500, "reconnect_backoff_max_ms": 100},
    {"security_protocol": "TLS"},
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "NO-SUCH-MECHANISM",
     "sasl_plain_username": "u", "sasl_plain_password": "p"},
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI", "sasl_kerberos_keytab": "/no/such.keytab"},
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"},
    {"bootstrap_servers": ""},
    {"bootstrap_servers": "host:99999"},
    {"bootstrap_servers": 5},
    {"value_deserializer": 5},
    {"group_id": 5},
    {"consumer_timeout_ms": -1},
])
def test_bad_values_raise_configuration_error(configs):
    with pytest.raises(errors.KafkaConfigurationError):
        consumer_config(configs)


def test_normalisations():
    config = consumer_config({"auto_offset_reset": "smallest", "bootstrap_servers": "a:1, [::1]:2,b"})
    assert config["auto_offset_reset"] == "earliest"
    assert config["bootstrap_servers"] == [("a", 1), ("::1", 2), ("b", 9092)]
    # the frame guard follows the fetch sizes
    big = consumer_config({"fetch_max_bytes": 200_000_000})
    assert big["receive_message_max_bytes"] == 200_000_000 + 1048576


def test_group_keys_are_accepted_now():
    config = consumer_config({"group_id": "g", "session_timeout_ms": 10000, "heartbeat_interval_ms": 1000,
                              "enable_auto_commit": False})
    assert config["group_id"] == "g"


def test_parse_host_port():
    assert parse_host_port("h") == ("h", 9092)
    assert parse_host_port("h:1") == ("h", 1)
    assert parse_host_port("[fe80::1]:5") == ("fe80::1", 5)
    with pytest.raises(errors.KafkaConfigurationError):
        parse_host_port("h:x")


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_bootstrap_without_a_broker_raises_no_brokers_available_in_time():
    config = consumer_config({"bootstrap_servers": "127.0.0.1:{0}".format(_closed_port()),
                              "bootstrap_timeout_ms": 500, "reconnect_backoff_ms": 20,
                              "reconnect_backoff_max_ms": 100})
    client = KafkaClient(config)
    started = time.monotonic()
    with pytest.raises(errors.NoBrokersAvailable) as info:
        client.bootstrap()
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 3.0
    # kafka-python 3.x raises KafkaTimeoutError there: the same except clause works
    assert isinstance(info.value, errors.KafkaTimeoutError)
    client.close()


def test_consumer_constructor_raises_and_leaves_nothing_open():
    from fastkc import KafkaConsumer

    with pytest.raises(errors.NoBrokersAvailable):
        KafkaConsumer(bootstrap_servers="127.0.0.1:{0}".format(_closed_port()), bootstrap_timeout_ms=300)


def test_cluster_metadata_update():
    cluster = ClusterMetadata()
    topic_id = bytes(range(16))
    cluster.update({
        "brokers": [{"node_id": 1, "host": "a", "port": 1, "rack": "r"}],
        "cluster_id": "c", "controller_id": 1,
        "topics": [
            {"error_code": 0, "name": "t", "topic_id": topic_id, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 3, "replica_nodes": [1],
                 "isr_nodes": [1], "offline_replicas": []},
                {"error_code": 5, "partition_index": 1, "leader_id": -1, "leader_epoch": 3, "replica_nodes": [1],
                 "isr_nodes": [], "offline_replicas": []}]},
            {"error_code": 3, "name": "missing", "topic_id": bytes(16), "is_internal": False, "partitions": []},
        ],
    }, all_topics=False)
    assert cluster.leader_for(TopicPartition("t", 0)) == 1
    assert cluster.leader_for(TopicPartition("t", 1)) is None
    assert cluster.leader_for(TopicPartition("nope", 0)) is None
    assert cluster.partition(TopicPartition("t", 0)).leader_epoch == 3
    assert cluster.topic_names_by_id == {topic_id: "t"}
    assert cluster.topics["missing"].topic_id is None
    assert cluster.brokers[1].rack == "r"


def test_default_assignors_are_range_then_roundrobin():
    from fastkc import KafkaConsumer
    from fastkc.assignors import RangePartitionAssignor, RoundRobinPartitionAssignor

    # named in the configuration (fastkc.config imports no assignor) ...
    assert CONSUMER_DEFAULTS["partition_assignment_strategy"] == ("range", "roundrobin")
    # ... and shown as kafka-python shows them: the classes
    assert KafkaConsumer.DEFAULT_CONFIG["partition_assignment_strategy"] == (
        RangePartitionAssignor, RoundRobinPartitionAssignor)


def test_importing_fastkc_does_not_import_kafka_python():
    import subprocess
    import sys

    code = "import sys, fastkc; fastkc.KafkaConsumer; print('kafka' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.stdout.strip() == "False"


# --- issue 9: every configuration error is KafkaConfigurationError naming its key ------------------
@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    from fastkc_tools.broker import certs

    directory = tmp_path_factory.mktemp("tls")
    files = certs.generate(str(directory))
    not_pem = directory / "not.pem"
    not_pem.write_bytes(b"\x30\x82\x01\x0a garbage, not PEM")
    return files, str(not_pem), str(directory / "missing.pem")


@pytest.mark.parametrize("key, which", [
    ("ssl_cafile", "missing"), ("ssl_cafile", "not_pem"), ("ssl_cafile", "directory"),
    ("ssl_certfile", "missing"), ("ssl_certfile", "not_pem"),
    ("ssl_keyfile", "missing"), ("ssl_keyfile", "not_pem"),
    ("ssl_crlfile", "missing"), ("ssl_crlfile", "not_pem"),
])
def test_bad_tls_files_name_their_key(tls_files, tmp_path, key, which):
    files, not_pem, missing = tls_files
    configs = {"security_protocol": "SSL", "ssl_cafile": files.ca}
    if key == "ssl_keyfile":
        configs["ssl_certfile"] = files.client_cert
    configs[key] = {"missing": missing, "not_pem": not_pem, "directory": str(tmp_path)}[which]
    with pytest.raises(errors.KafkaConfigurationError, match=key):
        consumer_config(configs)


def test_good_tls_files_build_a_context(tls_files):
    files, _, _ = tls_files
    config = consumer_config({"security_protocol": "SSL", "ssl_cafile": files.ca, "ssl_certfile": files.client_cert,
                              "ssl_keyfile": files.client_key, "ssl_ciphers": "ECDHE+AESGCM"})
    assert config["ssl_cafile"] == files.ca


@pytest.mark.parametrize("configs, key", [
    ({"security_protocol": "SSL", "ssl_ciphers": "NO-SUCH-CIPHER"}, "ssl_ciphers"),
    ({"security_protocol": "SSL", "ssl_ciphers": 5}, "ssl_ciphers"),
    ({"ssl_cafile": 5}, "ssl_cafile"),
    ({"ssl_password": 5}, "ssl_password"),
    ({"socket_options": "TCP_NODELAY"}, "socket_options"),
    ({"socket_options": [(6, 1)]}, "socket_options"),
    ({"socket_options": [("6", 1, 1)]}, "socket_options"),
    ({"send_buffer_bytes": -1}, "send_buffer_bytes"),
    ({"send_buffer_bytes": "64k"}, "send_buffer_bytes"),
    ({"receive_buffer_bytes": 0}, "receive_buffer_bytes"),
    ({"receive_buffer_bytes": 1 << 40}, "receive_buffer_bytes"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": b"alice",
      "sasl_plain_password": "p"}, "sasl_plain_username"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
      "sasl_plain_password": 1234}, "sasl_plain_password"),
    ({"fetch_max_bytes": 1 << 31}, "fetch_max_bytes"),
    ({"max_partition_fetch_bytes": 1 << 31}, "max_partition_fetch_bytes"),
    ({"fetch_min_bytes": 1 << 31}, "fetch_min_bytes"),
    ({"session_timeout_ms": 1 << 31}, "session_timeout_ms"),
    ({"max_poll_interval_ms": 1 << 32}, "max_poll_interval_ms"),
    ({"bootstrap_servers": "a..b:9092"}, "bootstrap"),
    ({"bootstrap_servers": ".a:9092"}, "bootstrap"),
    ({"bootstrap_servers": "x" * 64 + ".example:9092"}, "bootstrap"),
    ({"bootstrap_servers": ".".join(["abcdefgh"] * 30) + ":9092"}, "bootstrap"),
    ({"bootstrap_servers": "bad host:9092"}, "bootstrap"),
    ({"bootstrap_servers": "host:0"}, "bootstrap"),
    ({"bootstrap_servers": "host:70000"}, "bootstrap"),
    ({"bootstrap_servers": "host:-1"}, "bootstrap"),
    ({"bootstrap_servers": ":9092"}, "bootstrap"),
])
def test_configuration_errors_name_the_key(configs, key):
    with pytest.raises(errors.KafkaConfigurationError, match=key):
        consumer_config(configs)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_a_sasl_mechanism_without_a_sasl_protocol_is_ignored_with_a_warning(protocol, caplog):
    # as the Java client (kafka-clients 4.3.1 constructs such a consumer) and
    # kafka-python 3 do: the setting is unused, not an error
    config = consumer_config({"security_protocol": protocol, "sasl_mechanism": "PLAIN"})
    assert config["sasl_mechanism"] == "PLAIN"
    assert "sasl_mechanism 'PLAIN' is ignored" in caplog.text


@pytest.mark.parametrize("server", ["localhost:9092", "kafka-1.internal_net.example.com:9092", "127.0.0.1:1",
                                    "[::1]:9092", "::1", "b\u00fccher.example:9092", "host.:65535"])
def test_valid_bootstrap_hosts_are_accepted(server):
    consumer_config({"bootstrap_servers": server})


@pytest.mark.parametrize("host, port", [("", 9092), ("h", 0), ("h", 70000), ("h", -5)])
def test_metadata_advertising_an_unusable_broker_drops_it(host, port):
    cluster = ClusterMetadata()
    cluster.update({"brokers": [{"node_id": 1, "host": host, "port": port, "rack": None},
                                {"node_id": 2, "host": "ok", "port": 9092, "rack": None}],
                    "cluster_id": "c", "controller_id": 1, "topics": []}, all_topics=True)
    assert set(cluster.brokers) == {2}
