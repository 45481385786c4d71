"""Session fixtures for the real Kafka broker.

- kafka_broker: one KRaft node, started once per session (first test that asks)
  and stopped at the end. FASTKC_BOOTSTRAP=host:port[,...] uses an already
  running broker instead (nothing is started or stopped);
  FASTKC_KAFKA_VERSION=3.9.x (or an exact release) picks the Kafka started.
- kafka_cluster: three nodes, started only if a test asks for it.
- kafka39_broker: one node of the 3.9 line, started only if a test asks for it.
- share_broker: one node with short share-group record locks and a low
  delivery count limit (SHARE_BROKER_PROPERTIES), for the share-group tests.
- schema_registry: a real Schema Registry (Apicurio's Confluent-compatible API);
  FASTKC_SCHEMA_REGISTRY_URL=http://... uses a running one instead.
- make_topic(partitions=1, configs={...}, replication_factor=1) → a fresh,
  uniquely named topic on kafka_broker; make_cluster_topic the same on the cluster.

Tests using kafka_broker / kafka_cluster get the `broker` / `cluster` marker
automatically, so `-m "not broker and not cluster"` runs the broker-free suite.
"""
import os
import sys
from dataclasses import dataclass

import pytest

# The repository root, so `import fastkc` (in-place build) and
# `from tests.support import ...` work however pytest was launched.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@dataclass(frozen=True)
class ExternalBroker:
    """A broker this session did not start (FASTKC_BOOTSTRAP)."""

    bootstrap_servers: str
    kafka_version: str = None  # unknown: tools use the default release's jars

    @property
    def host(self):
        return self.bootstrap_servers.split(",")[0].rsplit(":", 1)[0]

    @property
    def port(self):
        return int(self.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])


def pytest_sessionstart(session):
    # scripts/wheels.sh runs the tests against an installed wheel: make sure
    # that is the fastkc they import (not a source tree's) and that its
    # compiled core loaded, or every result would be about something else.
    expected = os.environ.get("FASTKC_EXPECT_INSTALLED", "").strip()
    if not expected:
        return
    import fastkc

    where = os.path.realpath(fastkc.__file__)
    if not where.startswith(os.path.realpath(expected) + os.sep):
        pytest.exit("FASTKC_EXPECT_INSTALLED={0} but fastkc was imported from {1}".format(expected, where),
                    returncode=3)
    if fastkc.backend != "c":
        pytest.exit("FASTKC_EXPECT_INSTALLED: the installed fastkc's backend is {0!r}, not 'c'".format(
            fastkc.backend), returncode=3)


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "kafka_broker" in names or "make_topic" in names or "share_broker" in names:
            item.add_marker(pytest.mark.broker)
        if "kafka_cluster" in names or "make_cluster_topic" in names:
            item.add_marker(pytest.mark.cluster)


def _started(tmp_path_factory, name, nodes, **options):
    from fastkc_tools import broker

    data_dir = str(tmp_path_factory.mktemp(name))
    # FASTKC_KAFKA_VERSION=3.9.x runs the whole suite against the older line.
    version = os.environ.get("FASTKC_KAFKA_VERSION") or None
    # die_with_parent: a pytest killed by a CI timeout takes its brokers along.
    info = broker.start(name=name, data_dir=data_dir, nodes=nodes, kafka_version=version,
                        die_with_parent=True, **options)
    return info, data_dir


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    external = os.environ.get("FASTKC_BOOTSTRAP", "").strip()
    if external:
        yield ExternalBroker(bootstrap_servers=external)
        return
    from fastkc_tools import broker

    info, data_dir = _started(tmp_path_factory, "kafka", nodes=1)
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)


@dataclass(frozen=True)
class ExternalSchemaRegistry:
    """A Schema Registry this session did not start (FASTKC_SCHEMA_REGISTRY_URL)."""

    url: str


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory):
    """A real Schema Registry with Confluent's REST API (Apicurio, fastkc_tools/broker/registry.py),
    started once per session by the first test that asks; `.url` is what confluent-kafka's
    and fastkc's clients take. FASTKC_SCHEMA_REGISTRY_URL uses a running one instead."""
    external = os.environ.get("FASTKC_SCHEMA_REGISTRY_URL", "").strip()
    if external:
        yield ExternalSchemaRegistry(url=external)
        return
    from fastkc_tools.broker import registry

    info = registry.start(str(tmp_path_factory.mktemp("schema-registry")), die_with_parent=True)
    try:
        yield info
    finally:
        registry.stop(info)


@pytest.fixture
def registries(schema_registry):
    """(confluent-kafka's SchemaRegistryClient, fastkc's) on the test registry:
    theirs writes the data (the serializers), ours reads it back."""
    from confluent_kafka import schema_registry as confluent_registry

    from fastkc.schema_registry import SchemaRegistryClient

    theirs = confluent_registry.SchemaRegistryClient({"url": schema_registry.url})
    ours = SchemaRegistryClient({"url": schema_registry.url})
    yield theirs, ours
    ours.close()


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory):
    """One broker with the harness's security=True listeners (SASL_PLAINTEXT,
    SSL with client certificates, SASL_SSL; PLAIN, SCRAM, OAUTHBEARER with its
    OIDC server, GSSAPI with its KDC when MIT Kerberos is installed), shared
    by every module that needs no settings of its own: starting one per
    module cost ~10 s each."""
    from fastkc_tools import broker

    info, data_dir = _started(tmp_path_factory, "kafka-secure", nodes=1, security=True)
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)
    # stop() ends the harness's helper processes along with the node
    from fastkc_tools.broker import kerberos, oauth

    service = info.services["oidc"]
    assert not oauth._is_our_server(service["pid"], service["dir"]), "the OIDC server outlived stop()"
    if info.kerberos:
        assert not kerberos._is_kdc(info.kerberos["kdc_pid"]), "the KDC outlived stop()"


@pytest.fixture(scope="session")
def share_broker(tmp_path_factory):
    """One broker whose share groups lock records for SHARE_RECORD_LOCK_MS and
    archive them after SHARE_DELIVERY_COUNT_LIMIT deliveries (always started:
    an external FASTKC_BOOTSTRAP broker would not have these settings)."""
    from fastkc_tools import broker
    from tests.support.share import SHARE_BROKER_PROPERTIES

    info, data_dir = _started(tmp_path_factory, "kafka-share", nodes=1, broker_properties=SHARE_BROKER_PROPERTIES)
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory):
    from fastkc_tools import broker

    info, data_dir = _started(tmp_path_factory, "kafka-cluster", nodes=3)
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)


@pytest.fixture(scope="session")
def kafka39_broker(request, tmp_path_factory):
    """A broker of the older 3.9 line, one for the session (the harness's
    start check and the consumer's 3.9 suite share it; FASTKC_BOOTSTRAP does
    not apply: the point is the version). When the whole session already
    runs on 3.9 (FASTKC_KAFKA_VERSION=3.9.x), its broker is reused."""
    from fastkc_tools import broker

    if (os.environ.get("FASTKC_KAFKA_VERSION", "").startswith("3.9")
            and not os.environ.get("FASTKC_BOOTSTRAP", "").strip()):
        yield request.getfixturevalue("kafka_broker")
        return
    data_dir = str(tmp_path_factory.mktemp("kafka39"))
    info = broker.start(name="kafka39", data_dir=data_dir, kafka_version="3.9.x", die_with_parent=True)
    assert info.kafka_version.startswith("3.9.")
    try:
        yield info
    finally:
        broker.stop(data_dir=data_dir)


def _topic_factory(request, bootstrap):
    from tests.support.kafka_tools import create_topic, unique_name

    def make(partitions=1, configs=None, replication_factor=1, prefix=None):
        name = unique_name(prefix or request.node.name)
        create_topic(bootstrap, name, partitions=partitions, replication_factor=replication_factor,
                     configs=configs)
        return name

    return make


@pytest.fixture
def make_topic(request, kafka_broker):
    """make_topic(partitions=1, configs={...}) → the name of a new topic."""
    return _topic_factory(request, kafka_broker.bootstrap_servers)


@pytest.fixture
def make_cluster_topic(request, kafka_cluster):
    return _topic_factory(request, kafka_cluster.bootstrap_servers)
