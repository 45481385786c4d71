"""GSSAPI (Kerberos) against a real MIT KDC and a real Kafka GSSAPI listener.

The session's secure broker (tests/conftest.py, security=True): with MIT
Kerberos installed the harness creates a throw-away realm
(fastkc_tools/broker/kerberos.py), starts krb5kdc on 127.0.0.1 and gives the SASL
listeners a GSSAPI mechanism backed by the broker's keytab. Data is written by confluent-kafka's producer over
PLAINTEXT and read through GSSAPI.

Credentials never come from the machine: KRB5_CONFIG points at the realm's
krb5.conf and KRB5CCNAME at an in-memory cache for the whole module, and each
test names its keytab (config key or MIT's KRB5_CLIENT_KTNAME).
"""
import os
import re
import socket
import time
import uuid

import pytest

from fastkc_tools import broker
from fastkc_tools.broker import kerberos
from tests.support.consumers import assert_records_match, load_flavour, mixed_messages, poll_records
from tests.support.kafka_tools import create_topic, produce, unique_name

# FASTKC_REQUIRE_KERBEROS=1 (scripts/test.sh) turns a missing binding or KDC
# into a failure: CI must not pass by skipping the only GSSAPI checks.
_REQUIRED = os.environ.get("FASTKC_REQUIRE_KERBEROS") == "1"
try:
    import gssapi
except ImportError:
    if _REQUIRED:
        raise
    pytest.skip("the gssapi package (fastkc[kerberos]) is not installed", allow_module_level=True)
if not kerberos.available():
    if _REQUIRED:
        raise RuntimeError("FASTKC_REQUIRE_KERBEROS=1 but MIT Kerberos (krb5kdc, kadmin.local, kinit) is missing")
    pytest.skip("MIT Kerberos (krb5-kdc, krb5-admin-server, krb5-user) is not installed; scripts/setup.sh "
                "installs it", allow_module_level=True)

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def kdc_broker(secure_broker):
    """The session's secure broker (tests/conftest.py): with MIT Kerberos
    installed its security=True start includes the realm and GSSAPI."""
    info = secure_broker
    assert info.kerberos, "the secure broker started without its Kerberos realm"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KRB5_CONFIG", info.kerberos["krb5_config"])
        # Never the machine's default ticket cache or keytab.
        env.setenv("KRB5CCNAME", "MEMORY:fastkc-tests-" + uuid.uuid4().hex)
        env.delenv("KRB5_CLIENT_KTNAME", raising=False)
        yield info


def _gssapi_config(info, listener="SASL_PLAINTEXT", **overrides):
    config = {
        "bootstrap_servers": info.listeners[listener],
        "security_protocol": listener,
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka",
        "sasl_kerberos_keytab": info.kerberos["client_keytab"],
        "sasl_kerberos_principal": info.kerberos["client_principal"],
        "request_timeout_ms": 5000,
        "bootstrap_timeout_ms": 15000,
    }
    if listener == "SASL_SSL":
        config["ssl_cafile"] = info.tls["ca"]
    config.update(overrides)
    return config


def _kdc_log(info):
    with open(os.path.join(info.kerberos["folder"], "kdc.log"), encoding="utf-8", errors="replace") as fh:
        return fh.read()


def test_harness_realm_and_status(kdc_broker):
    k = kdc_broker.kerberos
    assert k["service_principal"] == "kafka/127.0.0.1@" + k["realm"]
    assert os.path.getsize(k["client_keytab"]) > 0 and os.path.getsize(k["broker_keytab"]) > 0
    # state.json carries the realm, so `fastkc broker status` prints how to connect
    status = broker.status(data_dir=kdc_broker.data_dir)
    assert status.running and status.info.kerberos == k
    import io

    out = io.StringIO()
    broker.describe(status.info, out=out)
    text = out.getvalue()
    assert "export KRB5_CONFIG=" + k["krb5_config"] in text
    assert k["client_principal"] in text and k["client_keytab"] in text
    # the listeners offer every mechanism the harness set up, GSSAPI last
    assert kdc_broker.credentials["mechanisms"][-2:] == ["OAUTHBEARER", "GSSAPI"]
    assert "SASL mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI" in text


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_group_consumes_exactly_what_confluent_wrote(kdc_broker, listener):
    from fastkc import KafkaConsumer, TopicPartition

    topic = create_topic(kdc_broker.bootstrap_servers, unique_name("gssapi-" + listener.lower()), partitions=2)
    written = sorted(produce(kdc_broker.bootstrap_servers, topic, mixed_messages(120, 2)),
                     key=lambda w: (w.partition, w.offset))
    group = unique_name("gssapi-group")
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             **_gssapi_config(kdc_broker, listener))
    try:
        consumed = poll_records(consumer, len(written), timeout=30)
        assert_records_match(consumed, written)
        consumer.commit()
        ends = {p: max(w.offset for w in written if w.partition == p) + 1 for p in (0, 1)}
        for p, end in ends.items():
            assert consumer.committed(TopicPartition(topic, p)) == end
    finally:
        consumer.close()
    # The broker's service ticket really came from the harness's KDC.
    assert "{0} for {1}".format(kdc_broker.kerberos["client_principal"],
                                kdc_broker.kerberos["service_principal"]) in _kdc_log(kdc_broker)

    # The group's next member, through GSSAPI too, resumes at the commit.
    again = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                          **_gssapi_config(kdc_broker, listener))
    try:
        leftovers = []
        deadline = time.monotonic() + 20
        while len(again.assignment()) < 2 and time.monotonic() < deadline:
            leftovers += [r for rs in again.poll(timeout_ms=200).values() for r in rs]
        leftovers += [r for rs in again.poll(timeout_ms=300).values() for r in rs]
        assert leftovers == []
        assert {p: again.position(TopicPartition(topic, p)) for p in (0, 1)} == ends
    finally:
        again.close()


@pytest.mark.parametrize("flavour_name", ["kafka-python", "fastkc"])
def test_kafka_python_keys_with_the_kerberos_environment(kdc_broker, monkeypatch, flavour_name):
    """kafka-python's own configuration (no keytab key): credentials from
    MIT's client keytab variable, as a kafka-python deployment has them.
    kafka-python runs it too, showing the harness's listener is standard."""
    flavour = load_flavour(flavour_name)
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", kdc_broker.kerberos["client_keytab"])
    monkeypatch.setenv("KRB5CCNAME", "MEMORY:fastkc-env-" + uuid.uuid4().hex)
    topic = create_topic(kdc_broker.bootstrap_servers, unique_name("gssapi-env"))
    written = sorted(produce(kdc_broker.bootstrap_servers, topic, mixed_messages(30, 1)), key=lambda w: w.offset)
    config = _gssapi_config(kdc_broker)
    del config["sasl_kerberos_keytab"], config["sasl_kerberos_principal"], config["bootstrap_timeout_ms"]
    consumer = flavour.KafkaConsumer(auto_offset_reset="earliest", enable_auto_commit=False, **config)
    try:
        consumer.assign([flavour.TopicPartition(topic, 0)])
        assert_records_match(poll_records(consumer, len(written), timeout=30), written)
    finally:
        consumer.close()


def test_missing_keytab_in_config_fails_at_construction_naming_the_key(kdc_broker, tmp_path):
    from fastkc import KafkaConsumer
    from fastkc.errors import KafkaConfigurationError

    missing = str(tmp_path / "no-such.keytab")
    with pytest.raises(KafkaConfigurationError, match="sasl_kerberos_keytab") as caught:
        KafkaConsumer(**_gssapi_config(kdc_broker, sasl_kerberos_keytab=missing))
    assert missing in str(caught.value)


def _fails_fast(config, *, within):
    """Authenticate (topics() needs a connection); return the error and the
    seconds it took."""
    from fastkc import KafkaConsumer

    began = time.monotonic()
    consumer = None
    try:
        consumer = KafkaConsumer(**config)
        consumer.topics()
    except Exception as exc:  # noqa: BLE001 -- the test inspects it
        elapsed = time.monotonic() - began
        assert elapsed < within, "took {0:.1f}s: {1!r}".format(elapsed, exc)
        return exc, elapsed
    finally:
        if consumer is not None:
            consumer.close()
    pytest.fail("authentication succeeded; an error was expected")


def _assert_gssapi_failure(exc, *causes):
    from fastkc.errors import SaslAuthenticationFailedError

    assert isinstance(exc, SaslAuthenticationFailedError), repr(exc)
    text = str(exc)
    assert "GSSAPI" in text
    # causes are regular expressions: libkrb5 names the principal in some
    # builds ("Client 'x@R' not found ...") and not in others
    assert any(re.search(c, text) for c in causes), text


def test_principal_unknown_to_the_kdc(kdc_broker, tmp_path):
    keytab = str(tmp_path / "ghost.keytab")
    ghost = kerberos.add_principal(kdc_broker.kerberos, "ghost-" + uuid.uuid4().hex[:6], keytab)
    kerberos.delete_principal(kdc_broker.kerberos, ghost)
    exc, _ = _fails_fast(_gssapi_config(kdc_broker, sasl_kerberos_keytab=keytab, sasl_kerberos_principal=ghost),
                         within=5.0)
    _assert_gssapi_failure(exc, "Client ('[^']+' )?not found in Kerberos database")
    assert ghost in str(exc)


def test_principal_not_in_the_keytab(kdc_broker):
    exc, _ = _fails_fast(_gssapi_config(kdc_broker, sasl_kerberos_principal="nobody@" + kdc_broker.kerberos["realm"]),
                         within=5.0)
    _assert_gssapi_failure(exc, "credentials were unavailable")


def test_missing_keytab_through_the_environment_is_typed_at_authentication(kdc_broker, monkeypatch, tmp_path):
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(tmp_path / "no-such.keytab"))
    monkeypatch.setenv("KRB5CCNAME", "MEMORY:fastkc-empty-" + uuid.uuid4().hex)
    config = _gssapi_config(kdc_broker)
    del config["sasl_kerberos_keytab"], config["sasl_kerberos_principal"]
    exc, _ = _fails_fast(config, within=5.0)
    _assert_gssapi_failure(exc, "credentials were unavailable")


@pytest.mark.parametrize("overrides", [{"sasl_kerberos_service_name": "kafka-wrong"},
                                       {"sasl_kerberos_domain_name": "broker.elsewhere"},
                                       {"sasl_kerberos_name": "nokafka@127.0.0.1"}],
                         ids=["service-name", "domain-name", "kerberos-name"])
def test_wrong_service_principal(kdc_broker, overrides):
    exc, _ = _fails_fast(_gssapi_config(kdc_broker, **overrides), within=5.0)
    _assert_gssapi_failure(exc, "Server (\\S+ )?not found in Kerberos database")


@pytest.mark.parametrize("as_name", [False, True], ids=["str", "gssapi.Name"])
def test_kerberos_name_overrides_service_and_domain(kdc_broker, as_name):
    """kafka-python's sasl_kerberos_name names the broker's service: with it
    the (here wrong) service and domain names are ignored."""
    from fastkc import KafkaConsumer

    name = "kafka@127.0.0.1"
    if as_name:
        name = gssapi.Name(name, name_type=gssapi.NameType.hostbased_service)
    topic = create_topic(kdc_broker.bootstrap_servers, unique_name("gssapi-name"))
    consumer = KafkaConsumer(**_gssapi_config(kdc_broker, sasl_kerberos_name=name,
                                              sasl_kerberos_service_name="not-kafka",
                                              sasl_kerberos_domain_name="not.this.host"))
    try:
        assert topic in consumer.topics()
    finally:
        consumer.close()


def _krb5_conf_with_kdc(info, path, port):
    text = open(info.kerberos["krb5_config"], encoding="utf-8").read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(info.kerberos["kdc"], "127.0.0.1:{0}".format(port)))
    return str(path)


def _fresh_client(info, tmp_path, name):
    # A principal no earlier test used: its in-memory ticket cache is empty,
    # so authenticating must reach the KDC.
    keytab = str(tmp_path / (name + ".keytab"))
    return keytab, kerberos.add_principal(info.kerberos, "{0}-{1}".format(name, uuid.uuid4().hex[:6]), keytab)


def test_kdc_that_never_answers_fails_within_request_timeout(kdc_broker, monkeypatch, tmp_path):
    """libkrb5's KDC calls block and ignore kdc_timeout: the exchange bounds
    them by request_timeout_ms."""
    keytab, principal = _fresh_client(kdc_broker, tmp_path, "blackhole")
    with socket.socket() as hole:  # accepts (backlog) and never answers
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        monkeypatch.setenv("KRB5_CONFIG", _krb5_conf_with_kdc(kdc_broker, tmp_path / "hole.conf",
                                                              hole.getsockname()[1]))
        exc, elapsed = _fails_fast(_gssapi_config(kdc_broker, sasl_kerberos_keytab=keytab,
                                                  sasl_kerberos_principal=principal, request_timeout_ms=2000),
                                   within=6.0)
    _assert_gssapi_failure(exc, "request_timeout_ms")
    assert elapsed >= 1.9  # it did wait for the KDC, up to the timeout


def test_kdc_down_fails_at_once(kdc_broker, monkeypatch, tmp_path):
    keytab, principal = _fresh_client(kdc_broker, tmp_path, "nokdc")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]  # bound, never listening: refused
        monkeypatch.setenv("KRB5_CONFIG", _krb5_conf_with_kdc(kdc_broker, tmp_path / "down.conf", closed_port))
        exc, _ = _fails_fast(_gssapi_config(kdc_broker, sasl_kerberos_keytab=keytab, sasl_kerberos_principal=principal),
                             within=5.0)
    _assert_gssapi_failure(exc, "Cannot contact any KDC")


def test_spark_reads_through_gssapi_with_a_jaas_keytab_login(kdc_broker):
    """A real local Spark session (its own process: its Python workers must
    start with the realm's KRB5_CONFIG), configured with Spark's option names
    and Java's Krb5LoginModule JAAS line, reads what confluent-kafka wrote."""
    pytest.importorskip("pyspark", minversion="4.2")
    import base64
    import json
    import subprocess
    import sys

    topic = create_topic(kdc_broker.bootstrap_servers, unique_name("gssapi-spark"), partitions=2)
    written = sorted(produce(kdc_broker.bootstrap_servers, topic, mixed_messages(60, 2)),
                     key=lambda w: (w.partition, w.offset))
    job = os.path.join(os.path.dirname(os.path.dirname(__file__)), "spark", "gssapi_job.py")
    env = dict(os.environ, KRB5CCNAME="MEMORY:fastkc-spark")  # KRB5_CONFIG: set by the fixture
    proc = subprocess.run([sys.executable, job, kdc_broker.listeners["SASL_PLAINTEXT"], topic,
                           kdc_broker.kerberos["client_keytab"], kdc_broker.kerberos["client_principal"]],
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])["rows"]

    def b64(value):
        return None if value is None else base64.b64encode(value).decode("ascii")

    assert rows == [[w.partition, w.offset, b64(w.key), b64(w.value)] for w in written]


def test_broker_that_cannot_read_the_ticket_refuses_with_a_typed_error(kdc_broker, tmp_path):
    """The KDC's key for the broker's principal changes (a new key version
    the broker's keytab lacks): the broker cannot decrypt the client's
    ticket and answers SaslAuthenticate with an error, which must surface as
    SaslAuthenticationFailedError at once. Runs last: it rotates the
    broker's key, then appends the new key to the broker's keytab."""
    k = kdc_broker.kerberos
    kerberos.export_key(k, k["service_principal"], str(tmp_path / "rotated.keytab"), new_key=True)
    try:
        keytab, principal = _fresh_client(kdc_broker, tmp_path, "refused")  # fresh cache: a new-key ticket
        exc, _ = _fails_fast(_gssapi_config(kdc_broker, sasl_kerberos_keytab=keytab,
                                            sasl_kerberos_principal=principal), within=5.0)
        from fastkc.errors import SaslAuthenticationFailedError

        assert isinstance(exc, SaslAuthenticationFailedError), repr(exc)
        assert "SASL GSSAPI authentication with 127.0.0.1" in str(exc)
    finally:
        kerberos.export_key(k, k["service_principal"], k["broker_keytab"])  # the broker gets the new key
    # With the new key in its keytab (the JVM re-reads the file) the broker
    # accepts new-key tickets again: the refusal was the key, nothing else.
    from fastkc import KafkaConsumer

    keytab, principal = _fresh_client(kdc_broker, tmp_path, "accepted")
    consumer = KafkaConsumer(**_gssapi_config(kdc_broker, sasl_kerberos_keytab=keytab,
                                              sasl_kerberos_principal=principal))
    try:
        assert consumer.topics() is not None
    finally:
        consumer.close()
