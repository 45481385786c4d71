"""SchemaRegistryClient's configuration: confluent-kafka's keys, checked once."""
import pytest

from fastkc.errors import KafkaConfigurationError
from fastkc.schema_registry import SchemaRegistryConfigurationError
from fastkc.schema_registry.config import parse_config

confluent_sr = pytest.importorskip("confluent_kafka.schema_registry")


def test_defaults():
    config = parse_config({"url": "http://a:8081/"})
    assert config.urls == ("http://a:8081",)
    assert config.auth is None and config.bearer is None and config.ssl_context is None
    assert (config.timeout, config.cache_capacity, config.cache_latest_ttl_sec) == (30.0, 1000, None)
    # confluent-kafka's retry defaults
    assert (config.max_retries, config.retries_wait_ms, config.retries_max_wait_ms) == (3, 1000, 20000)


def test_several_urls_and_the_numbers():
    config = parse_config({"url": "http://a:1, https://b:2/apis/ccompat/v7/", "timeout": 2.5,
                           "cache.capacity": 10, "cache.latest.ttl.sec": 60, "max.retries": 0,
                           "retries.wait.ms": 5, "retries.max.wait.ms": 50})
    assert config.urls == ("http://a:1", "https://b:2/apis/ccompat/v7")
    assert config.ssl_context is not None  # an https URL verifies against the system's CAs
    assert (config.timeout, config.cache_capacity, config.cache_latest_ttl_sec) == (2.5, 10, 60)
    assert (config.max_retries, config.retries_wait_ms, config.retries_max_wait_ms) == (0, 5, 50)


def _refused(conf, key):
    with pytest.raises(SchemaRegistryConfigurationError) as info:
        parse_config(conf)
    # also what confluent-kafka's users catch, and fastkc's configuration error
    assert isinstance(info.value, ValueError) and isinstance(info.value, KafkaConfigurationError)
    assert key in str(info.value)
    return info.value


@pytest.mark.parametrize("conf, key", [
    ({}, "url"),
    ({"url": 5}, "url"),
    ({"url": "ftp://a"}, "url"),
    ({"url": " , "}, "url"),
    ({"url": "http://a", "timeout": "3"}, "timeout"),
    ({"url": "http://a", "timeout": 0}, "timeout"),
    ({"url": "http://a", "cache.capacity": 0}, "cache.capacity"),
    ({"url": "http://a", "max.retries": True}, "max.retries"),
    ({"url": "http://a", "retries.wait.ms": -1}, "retries.wait.ms"),
    ({"url": "http://a", "basic.auth.user.info": "no-colon"}, "basic.auth.user.info"),
    ({"url": "http://u:p@a", "basic.auth.user.info": "x:y"}, "basic.auth.user.info"),
    ({"url": "http://a", "basic.auth.credentials.source": "USER_INFO"}, "basic.auth.user.info"),
    ({"url": "http://a", "basic.auth.credentials.source": "KERBEROS"}, "basic.auth.credentials.source"),
    ({"url": "http://a", "basic.auth.credentials.source": "SASL_INHERIT"}, "sasl.username"),
    ({"url": "http://a", "bearer.auth.credentials.source": "STATIC_TOKEN"}, "bearer.auth.token"),
    ({"url": "http://a", "bearer.auth.credentials.source": "OAUTHBEARER"}, "not supported"),
    ({"url": "http://a", "bearer.auth.token": "t"}, "bearer.auth.credentials.source"),
    ({"url": "http://a", "bearer.auth.credentials.source": "CUSTOM"}, "bearer.auth.custom.provider.function"),
    ({"url": "http://a", "basic.auth.user.info": "u:p", "bearer.auth.credentials.source": "STATIC_TOKEN",
      "bearer.auth.token": "t"}, "basic auth"),
    ({"url": "http://a", "ssl.key.location": "/k.pem"}, "ssl.certificate.location"),
    ({"url": "http://a", "ssl.ca.location": "/nonexistent/ca.pem"}, "ssl.ca.location"),
    ({"url": "http://a", "ssl.ca.location": 3}, "ssl.ca.location"),
])
def test_bad_settings_name_their_key(conf, key):
    _refused(conf, key)


def test_unknown_keys_are_refused_like_confluent_kafka():
    error = _refused({"url": "http://a", "schema.registry.url": "http://b", "auto.register.schemas": True},
                     "unrecognized properties")
    assert "auto.register.schemas, schema.registry.url" in str(error)
    with pytest.raises(ValueError, match="Unrecognized properties"):
        confluent_sr.SchemaRegistryClient({"url": "http://a", "schema.registry.url": "http://b"})


def test_basic_auth_sources():
    # as confluent-kafka: the URL's user info (percent-decoded), kept out of the URLs errors name
    config = parse_config({"url": "http://us%40er:p%3Ass@a:1,http://b:2"})
    assert config.auth == ("us@er", "p:ss") and config.urls == ("http://a:1", "http://b:2")
    assert parse_config({"url": "http://a", "basic.auth.user.info": "u:p:q"}).auth == ("u", "p:q")
    assert parse_config({"url": "http://a", "basic.auth.credentials.source": "user_info",
                         "basic.auth.user.info": "u:p"}).auth == ("u", "p")
    assert parse_config({"url": "http://a", "basic.auth.credentials.source": "SASL_INHERIT",
                         "sasl.username": "su", "sasl.password": "sp"}).auth == ("su", "sp")
    # URL named explicitly: the URL's credentials win over a user.info that is also set
    assert parse_config({"url": "http://x:y@a", "basic.auth.credentials.source": "URL",
                         "basic.auth.user.info": "u:p"}).auth == ("x", "y")


def test_bearer_sources():
    static = parse_config({"url": "http://a", "bearer.auth.credentials.source": "STATIC_TOKEN",
                           "bearer.auth.token": "tok", "bearer.auth.logical.cluster": "lsrc-1",
                           "bearer.auth.identity.pool.id": ["pool-1", "pool-2"]})
    assert static.bearer() == {"bearer.auth.token": "tok", "bearer.auth.logical.cluster": "lsrc-1",
                               "bearer.auth.identity.pool.id": "pool-1,pool-2"}
    calls = []

    def provider(config):
        calls.append(config)
        return {"bearer.auth.token": "fresh-{0}".format(len(calls))}

    custom = parse_config({"url": "http://a", "bearer.auth.credentials.source": "CUSTOM",
                           "bearer.auth.custom.provider.function": provider,
                           "bearer.auth.custom.provider.config": {"k": "v"}})
    # called per request, so a provider can refresh its token
    assert custom.bearer()["bearer.auth.token"] == "fresh-1"
    assert custom.bearer()["bearer.auth.token"] == "fresh-2"
    assert calls == [{"k": "v"}, {"k": "v"}]


def test_tls_files(tmp_path):
    from fastkc_tools.broker import certs

    material = certs.generate(str(tmp_path))
    config = parse_config({"url": "https://a", "ssl.ca.location": material.ca,
                           "ssl.certificate.location": material.client_cert,
                           "ssl.key.location": material.client_key})
    assert config.ssl_context is not None
    assert parse_config({"url": "https://a", "ssl.ca.location": False}).ssl_context.check_hostname is False
