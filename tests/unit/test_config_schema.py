"""The declarative configuration schema (fastkc/config_schema.py): its typed
form, its aliases (Java, librdkafka, aiokafka, Spark), the generic checks of
each kind, the cross-key rules in every flavour, the named default assignors
and api_version's validation against kafka-python 3.0.12's."""
import logging
import typing

import pytest

from fastkc import config_schema as cs
from fastkc.aio import config as aio_config
from fastkc.aio.errors import ConfigTypeError, ConfigValueError
from fastkc.config import CONSUMER_DEFAULTS, consumer_config
from fastkc.errors import KafkaConfigurationError
from fastkc.spark import options as spark_options


def test_the_typed_form_lists_the_schemas_keys():
    typed = list(typing.get_type_hints(cs.ConsumerConfig))
    assert typed == [s.key for s in cs.SETTINGS]
    assert list(CONSUMER_DEFAULTS) == typed
    assert cs.ConsumerConfig.__required_keys__ == frozenset(typed)


def test_the_typed_form_agrees_with_each_kind():
    hints = typing.get_type_hints(cs.ConsumerConfig)
    expected = {cs.Kind.INT: int, cs.Kind.BOOL: bool, cs.Kind.STR: str, cs.Kind.CHOICE: type(None)}
    for setting in cs.SETTINGS:
        want = expected.get(setting.kind)
        if setting.kind is cs.Kind.CHOICE:
            want = type(setting.choices[0])
        if want is None:
            continue
        if setting.nullable or setting.default is None:
            assert hints[setting.key] == want | None, setting.key
        else:
            assert hints[setting.key] is want, setting.key


def test_every_default_passes_its_own_check():
    for setting in cs.SETTINGS:
        assert cs.check_value(setting, setting.default) == setting.default, setting.key


def test_a_key_is_declared_once_and_each_alias_names_one_key():
    assert len(cs.SETTINGS_BY_KEY) == len(cs.SETTINGS)
    spellings = [s.java for s in cs.SETTINGS if s.java] + [n for s in cs.SETTINGS for n in s.librdkafka]
    assert len(spellings) == len(set(spellings))
    for setting in cs.SETTINGS:
        assert cs.key_for(setting.key) == setting.key
        assert cs.key_for(setting.dotted) == setting.key
        for name in setting.librdkafka:
            assert cs.key_for(name) == setting.key
            # Spark's options are Java's names: librdkafka's are not among them
            assert cs.key_for(name, librdkafka=False) in (None, cs.key_for(name.replace(".", "_")))
    assert cs.key_for("no.such.key") is None


def test_aliases_of_the_renamed_keys():
    assert cs.key_for("ssl.key.password") == "ssl_password"
    assert cs.key_for("ssl.cipher.suites") == "ssl_ciphers"
    assert cs.key_for("sasl.mechanisms") == "sasl_mechanism"
    assert cs.key_for("sasl.mechanisms", librdkafka=False) is None
    assert cs.key_for("metadata.broker.list") == "bootstrap_servers"
    assert cs.SETTINGS_BY_KEY["fetch_max_wait_ms"].spark == "kafka.fetch.max.wait.ms"
    assert cs.SETTINGS_BY_KEY["ssl_password"].spark == "kafka.ssl.key.password"
    assert cs.SETTINGS_BY_KEY["ssl_context"].spark is None  # a Python object: no option spells it


def test_aiokafka_keywords_are_the_schemas_where_shared():
    shared = {s.key for s in cs.SETTINGS if s.aiokafka}
    aiokafkas = {key.name for key in aio_config.KEYS} - set(aio_config.FASTKC_ADDITIONS)
    assert aiokafkas & set(cs.SETTINGS_BY_KEY) == shared
    for key in aio_config.KEYS:
        if isinstance(key.check, cs.Setting):
            assert key.check.key == key.name


@pytest.mark.parametrize("name, text, value", [
    ("fetch.max.wait.ms", "250", 250),
    ("check.crcs", "off", False),
    ("consumer_timeout_ms", "1500", 1500.0),
    ("api.version", "0.10.2", (0, 10, 2)),
    ("sasl.password", "s3cret", "s3cret"),
    ("partition.assignment.strategy", "sticky, range", ("sticky", "range")),
    ("receive.buffer.bytes", "65536", 65536),
])
def test_setting_from_text(name, text, value):
    key, typed = cs.setting_from_text(name, text)
    assert key == cs.key_for(name) and typed == value


@pytest.mark.parametrize("name, text, error", [
    ("fetch_max_wait_ms", "soon", ValueError),
    ("check_crcs", "maybe", ValueError),
    ("api_version", "garbage", ValueError),
    ("partition_assignment_strategy", "fair", ValueError),
    ("ssl_context", "x", cs.NotTextSettable),
    ("no_such_key", "1", KeyError),
])
def test_setting_from_text_refusals(name, text, error):
    with pytest.raises(error):
        cs.setting_from_text(name, text)


def test_spark_options_are_typed_by_the_schema(caplog):
    config = spark_options.consumer_config({
        "kafka.consumer.timeout.ms": "1500", "kafka.api.version": "2.6", "kafka.ssl.cipher.suites": "ECDHE+AESGCM",
        "kafka.receive.buffer.bytes": "65536", "kafka.sasl.mechanisms": "PLAIN"})
    assert config["consumer_timeout_ms"] == 1500.0
    assert config["api_version"] == (2, 6)
    assert config["ssl_ciphers"] == "ECDHE+AESGCM"
    assert config["receive_buffer_bytes"] == 65536
    assert "sasl_mechanism" not in config  # librdkafka's name is not a Java option
    with caplog.at_level(logging.WARNING):
        spark_options.consumer_config({"kafka.socket.options": "x"})
    assert "kafka.socket.options has no fastkc equivalent" in caplog.text
    for option, text in (("kafka.check.crcs", "yes"), ("kafka.fetch.min.bytes", "1k"), ("kafka.api.version", "x")):
        with pytest.raises(spark_options.SparkKafkaOptionError, match='For input string: "{0}"'.format(text)):
            spark_options.consumer_config({option: text})


# one value of the wrong type or out of range per key of each kind, and the key the error must name
@pytest.mark.parametrize("key, value", [
    ("fetch_min_bytes", -1), ("fetch_min_bytes", 1.5), ("decode_threads", 2), ("consumer_timeout_ms", "1"),
    ("consumer_timeout_ms", float("nan")), ("client_id", 5), ("group_instance_id", ""),
    ("auto_offset_reset", "middle"), ("security_protocol", "TLS"), ("bootstrap_servers", [1]),
    ("partition_assignment_strategy", []), ("partition_assignment_strategy", ["fair"]),
    ("partition_assignment_strategy", [object]), ("key_deserializer", 5), ("default_offset_commit_callback", 5),
    ("ssl_cafile", 5), ("ssl_password", 5), ("ssl_context", "ctx"), ("socket_options", [(6, 1)]),
    ("proxy_url", "http://proxy:3128"), ("api_version", "garbage"),
])
def test_each_kind_refuses_a_bad_value_naming_its_key(key, value):
    with pytest.raises(KafkaConfigurationError, match=key):
        consumer_config({key: value})


def test_a_secret_is_never_in_a_message():
    with pytest.raises(KafkaConfigurationError) as info:
        consumer_config({"sasl_plain_password": 123456789})
    assert "123456789" not in str(info.value) and "sasl_plain_password" in str(info.value)


# --- cross-key rules ------------------------------------------------------------------
@pytest.mark.parametrize("configs, key", [
    ({"reconnect_backoff_ms": 500, "reconnect_backoff_max_ms": 100}, "reconnect_backoff_max_ms"),
    ({"request_timeout_ms": 400, "fetch_max_wait_ms": 500}, "fetch_max_wait_ms"),
    ({"request_timeout_ms": 600000}, "connections_max_idle_ms"),
    ({"group_id": "g", "heartbeat_interval_ms": 45000}, "heartbeat_interval_ms"),
])
def test_cross_key_rules(configs, key):
    with pytest.raises(KafkaConfigurationError, match=key):
        consumer_config(configs)


def test_the_heartbeat_rule_applies_with_a_classic_group_only():
    # kafka-python's Heartbeat checks it only with a group_id: without one there is no session
    assert consumer_config({"heartbeat_interval_ms": 45000})["heartbeat_interval_ms"] == 45000
    # KIP-848: the broker sets the heartbeat interval and the session for group_protocol='consumer'
    assert consumer_config({"group_id": "g", "group_protocol": "consumer",
                            "heartbeat_interval_ms": 45000})["heartbeat_interval_ms"] == 45000


def test_rules_raise_aiokafkas_value_error_in_the_aio_flavour():
    with pytest.raises(ConfigValueError, match="heartbeat_interval_ms"):
        aio_config.resolve(group_id="g", heartbeat_interval_ms=10000)
    with pytest.raises(ConfigValueError, match="fetch_max_wait_ms"):
        aio_config.resolve(fetch_max_wait_ms=45000)
    with pytest.raises(ConfigTypeError, match="check_crcs"):
        aio_config.resolve(check_crcs=1)  # aiokafka's flavour wants a bool; kafka-python's reads truth values
    assert consumer_config({"check_crcs": 1})["check_crcs"] == 1


# --- the default assignors, named ---------------------------------------------------------
def test_assignor_names_are_the_built_in_assignors():
    from fastkc.assignors import ASSIGNORS_BY_NAME

    assert set(cs.ASSIGNOR_NAMES) == set(ASSIGNORS_BY_NAME)


def test_the_group_resolves_names_and_keeps_classes_and_instances():
    from fastkc.assignors import RangePartitionAssignor, StickyPartitionAssignor
    from fastkc.group.classic_machine import instantiate_assignors, resolve_assignors

    sticky = StickyPartitionAssignor()
    assert resolve_assignors(("range", "sticky")) == (RangePartitionAssignor, StickyPartitionAssignor)
    assert resolve_assignors(["range", sticky]) == [RangePartitionAssignor, sticky]
    given = [RangePartitionAssignor]
    assert resolve_assignors(given) is given  # kafka-python's consumer shows what it was given
    made = instantiate_assignors(["range", sticky])
    assert isinstance(made[0], RangePartitionAssignor) and made[1] is sticky


# --- api_version (issue 23): kafka-python 3.0.12 raises at construction -----------------------
ACCEPTED = [(None, None), ("auto", None), ((2, 6), (2, 6)), ((0, 10, 2), (0, 10, 2)), ("2.6", (2, 6)),
            ("0.10.2", (0, 10, 2)), (" 2.6", (2, 6)), ((4, 3), (4, 3)), ((9, 9), (9, 9)), ((2, 6, 0, 0), (2, 6, 0, 0)),
            ((0, 8, 0), (0, 8, 0))]
REFUSED = ["garbage", "", "2.6.x", "2..6", "2.-6", [2, 6], 2, 2.6, b"2.6", (), (0, 7), ("a", "b"), (2, "6"),
           (2, -1), (True,), (2.5,)]
# kafka-python 3.0.12 takes these without an error (and then uses a nonsense version): fastkc refuses them
KAFKA_PYTHON_TAKES = [(True,), (2.5,), (2, -1), "2.-6"]


@pytest.mark.parametrize("value, normalized", ACCEPTED, ids=[repr(v) for v, _ in ACCEPTED])
def test_api_version_accepted(value, normalized):
    assert consumer_config({"api_version": value})["api_version"] == normalized


@pytest.mark.parametrize("value", REFUSED, ids=[repr(v) for v in REFUSED])
def test_api_version_malformed_is_a_configuration_error(value):
    with pytest.raises(KafkaConfigurationError, match="api_version"):
        consumer_config({"api_version": value})


def _kafka_python_refuses(value):
    version_data = pytest.importorskip("kafka.protocol.broker_version_data")
    try:
        version_data.BrokerVersionData(value)
    except Exception:  # noqa: BLE001 - kafka-python raises ValueError, TypeError or its own errors
        return True
    return False


@pytest.mark.parametrize("value", REFUSED, ids=[repr(v) for v in REFUSED])
def test_api_version_refusals_match_kafka_python(value):
    # what kafka-python's consumer does with api_version at construction (kafka.net.manager)
    assert _kafka_python_refuses(value) is (value not in KAFKA_PYTHON_TAKES)


@pytest.mark.parametrize("value", [v for v, _ in ACCEPTED if v not in (None, "auto")])
def test_api_version_acceptances_match_kafka_python(value):
    assert not _kafka_python_refuses(value)


def test_the_consumer_refuses_a_malformed_api_version_at_construction():
    from fastkc import KafkaConsumer

    with pytest.raises(KafkaConfigurationError, match="api_version"):
        KafkaConsumer(api_version="garbage", bootstrap_servers="127.0.0.1:1")
