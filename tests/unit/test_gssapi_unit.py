"""GSSAPI without a KDC: configuration checks at construction, the Spark JAAS
translation, and the RFC 4752 security-layer step against a stand-in GSS
context (the exchange itself runs against a real KDC and broker in
tests/integration/test_gssapi.py)."""
import struct
import time

import pytest

from fastkc import KafkaConsumer
from fastkc.config import consumer_config
from fastkc.errors import KafkaConfigurationError, SaslAuthenticationFailedError
from fastkc.spark import options as so

gssapi = pytest.importorskip("gssapi", reason="the gssapi package (fastkc[kerberos]) is not installed")
from fastkc.auth import gssapi as mech  # noqa: E402 -- after the skip


def _config(**overrides):
    base = {"bootstrap_servers": "127.0.0.1:9", "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"}
    base.update(overrides)
    return base


def test_defaults_are_kafka_pythons():
    config = consumer_config(_config())
    assert config["sasl_kerberos_service_name"] == "kafka"
    assert config["sasl_kerberos_domain_name"] is None and config["sasl_kerberos_name"] is None
    assert config["sasl_kerberos_keytab"] is None and config["sasl_kerberos_principal"] is None


@pytest.mark.parametrize("overrides,key", [
    ({"sasl_kerberos_keytab": "/nonexistent/client.keytab"}, "sasl_kerberos_keytab"),
    ({"sasl_kerberos_keytab": 42}, "sasl_kerberos_keytab"),
    ({"sasl_kerberos_principal": ""}, "sasl_kerberos_principal"),
    ({"sasl_kerberos_service_name": ""}, "sasl_kerberos_service_name"),
    ({"sasl_kerberos_service_name": None}, "sasl_kerberos_service_name"),
    ({"sasl_kerberos_name": 3}, "sasl_kerberos_name"),
    ({"sasl_kerberos_domain_name": b"host"}, "sasl_kerberos_domain_name"),
])
def test_bad_configuration_fails_at_construction_naming_the_key(overrides, key):
    began = time.monotonic()
    with pytest.raises(KafkaConfigurationError, match=key):
        KafkaConsumer(**_config(**overrides))
    assert time.monotonic() - began < 1.0  # no connection was tried


def test_kerberos_name_replaces_service_and_domain(tmp_path):
    keytab = tmp_path / "k.keytab"
    keytab.write_bytes(b"\x05\x02")
    # a gssapi.Name is accepted as is, a str too, and the service name is then not needed
    consumer_config(_config(sasl_kerberos_name=gssapi.Name("kafka@b1", gssapi.NameType.hostbased_service),
                            sasl_kerberos_service_name=None, sasl_kerberos_keytab=str(keytab)))
    consumer_config(_config(sasl_kerberos_name="kafka@b1", sasl_kerberos_service_name=None))


class _Wrapped:
    def __init__(self, message):
        self.message = message


class _FakeContext:
    """What the security-layer step uses of gssapi.SecurityContext; wrap and
    unwrap are identity functions so the test sees the plain octets."""

    complete = True
    initiator_name = "alice@EXAMPLE.COM"

    def __init__(self):
        self.wrapped = []

    def unwrap(self, data):
        return _Wrapped(bytes(data))

    def wrap(self, data, encrypt):
        self.wrapped.append((bytes(data), encrypt))
        return _Wrapped(bytes(data))


def _exchange_at_offer():
    config = consumer_config(_config())
    exchange = mech.GssapiExchange(config, "broker1")
    exchange._ctx = _FakeContext()
    exchange._step = "offer"
    return exchange


def test_security_layer_answer_is_rfc_4752():
    exchange = _exchange_at_offer()
    # the server offers every layer (bits 1|2|4) and a 64 KiB max size
    reply = exchange.receive(struct.pack(">B", 7) + (65536).to_bytes(3, "big"))
    # no security layer, max size 0 (RFC 4752: MUST be 0 without a layer),
    # the authorization id = the authenticated principal; not encrypted
    assert reply == b"\x01\x00\x00\x00alice@EXAMPLE.COM"
    assert exchange._ctx.wrapped == [(reply, False)]
    # the server's empty final message completes the exchange
    assert exchange.receive(b"") is None


@pytest.mark.parametrize("offer,cause", [
    (b"\x01\x00\x00", "malformed security-layer offer"),
    (b"\x01\x00\x00\x00\x00", "malformed security-layer offer"),
    (b"\x04\x00\x10\x00", "requires a security layer"),
])
def test_bad_offers_are_authentication_errors(offer, cause):
    with pytest.raises(SaslAuthenticationFailedError, match=cause) as caught:
        _exchange_at_offer().receive(offer)
    assert "GSSAPI" in str(caught.value)


def test_bytes_after_the_end_are_an_authentication_error():
    exchange = _exchange_at_offer()
    exchange.receive(b"\x01\x00\x00\x00")
    with pytest.raises(SaslAuthenticationFailedError, match="after the exchange ended"):
        exchange.receive(b"more")


def test_spark_krb5_login_module_with_keytab():
    config = so.consumer_config({
        "kafka.bootstrap.servers": "h:1",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "GSSAPI",
        "kafka.sasl.kerberos.service.name": "kafka",
        "kafka.sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true '
                                  'storeKey=true keyTab="/etc/security/app.keytab" principal="app/h1@EX.COM";',
    })
    assert config == {
        "bootstrap_servers": "h:1", "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka", "sasl_kerberos_keytab": "/etc/security/app.keytab",
        "sasl_kerberos_principal": "app/h1@EX.COM", "client_id": "fastkc-spark",
    }


def test_spark_krb5_login_module_with_ticket_cache():
    config = so.consumer_config({"kafka.sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule '
                                                           'required useTicketCache="true";'})
    assert "sasl_kerberos_keytab" not in config and "sasl_kerberos_principal" not in config


@pytest.mark.parametrize("jaas,cause", [
    ("com.sun.security.auth.module.Krb5LoginModule required;", "needs useKeyTab=true"),
    ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;", 'needs keyTab="..."'),
    ('com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="/tmp/c";',
     "ticketCache is not supported"),
])
def test_spark_krb5_login_modules_fastkc_cannot_honour(jaas, cause):
    with pytest.raises(so.SparkKafkaOptionError, match=cause):
        so.consumer_config({"kafka.sasl.jaas.config": jaas})


def test_missing_gssapi_package_fails_at_construction(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gssapi", None)  # `import gssapi` now raises ImportError
    with pytest.raises(KafkaConfigurationError, match=r"GSSAPI needs the gssapi package.*fastkc\[kerberos\]"):
        KafkaConsumer(**_config())
