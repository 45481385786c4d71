"""The broker harness itself: start/stop/status, the CLI across processes,
three nodes and its error messages. The security listeners are checked in
test_broker_harness_secure.py, the 3.9 line in test_broker_harness_kafka39.py:
one shared broker per file, so the CI scheduler (tests/support/xdist_affinity.py)
keeps each file on the worker that already started that broker."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from fastkc_tools import broker
from fastkc_tools.broker import config as broker_config
from fastkc_tools.broker import resolve
from tests.support.kafka_tools import Message, consume_all, produce

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _admin(conf):
    from confluent_kafka.admin import AdminClient

    return AdminClient(dict(conf, log_level=0))


def _broker_ids(conf, timeout=15):
    return sorted(_admin(conf).list_topics(timeout=timeout).brokers)


def _proc_state(pid):
    try:
        with open("/proc/{0}/stat".format(pid), "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except FileNotFoundError:
        return None


def _cli(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "fastkc.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=_ROOT)


# Tests that start Kafka (or run mvn) themselves carry the `broker` marker,
# like those using the session fixtures, so -m "not broker" skips every JVM.

# --- no JVM needed --------------------------------------------------------------------

def test_cluster_id_is_kafka_shaped():
    ids = {broker_config.new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for cid in ids:
        assert len(cid) == 22 and not cid.startswith("-")
        assert set(cid) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_version_pins():
    assert resolve.pin_version(None) == broker.DEFAULT_KAFKA_VERSION
    assert resolve.pin_version("4.3.x").startswith("4.3.")
    assert resolve.pin_version("3.9.x").startswith("3.9.")
    assert resolve.pin_version("4.1.1") == "4.1.1"
    with pytest.raises(broker.KafkaResolutionError, match="unknown Kafka version"):
        resolve.pin_version("latest")


def test_the_c1_switch_gives_brokers_c1_and_the_serial_gc(monkeypatch):
    from fastkc_tools.broker import harness

    monkeypatch.delenv("FASTKC_BROKER_JIT", raising=False)
    assert "-XX:+UseG1GC" in harness.broker_jit_flags()
    monkeypatch.setenv("FASTKC_BROKER_JIT", "c1")
    assert harness.broker_jit_flags() == ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    monkeypatch.setenv("FASTKC_BROKER_JIT", "c2")
    with pytest.raises(broker.BrokerHarnessError, match="FASTKC_BROKER_JIT"):
        harness.broker_jit_flags()


def test_missing_java_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(broker.JavaNotFoundError, match="install"):
        broker.find_java()


def test_missing_maven_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(broker.MavenNotFoundError, match="apt-get install maven"):
        resolve.find_maven()


def test_three_node_properties_share_one_quorum(tmp_path):
    plans = [broker_config.NodePlan(node_id=i, dir=str(tmp_path / str(i)),
                                    ports={"PLAINTEXT": 9000 + i, "CONTROLLER": 9100 + i}) for i in (1, 2, 3)]
    props = [broker_config.node_properties(p, plans) for p in plans]
    assert {p["controller.quorum.voters"] for p in props} == {
        "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"}
    assert [p["listeners"] for p in props] == [
        "PLAINTEXT://127.0.0.1:900{0},CONTROLLER://127.0.0.1:910{0}".format(i) for i in (1, 2, 3)]
    assert all(p["offsets.topic.replication.factor"] == 3 and p["transaction.state.log.min.isr"] == 2
               for p in props)


def test_proxied_listener_binds_one_port_and_advertises_another(tmp_path):
    """start(proxied=True): a PROXIED listener (plaintext) bound on its own
    port, advertised on the proxy's; the other listeners are unchanged."""
    plans = [broker_config.NodePlan(node_id=i, dir=str(tmp_path / str(i)),
                                    ports={"PLAINTEXT": 9000 + i, "CONTROLLER": 9100 + i, "PROXIED": 9200 + i},
                                    advertised={"PROXIED": 9300 + i}) for i in (1, 2, 3)]
    props = broker_config.node_properties(plans[1], plans)
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:9002,PROXIED://127.0.0.1:9202,"
                                  "CONTROLLER://127.0.0.1:9102")
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9002,PROXIED://127.0.0.1:9302"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"


@pytest.mark.broker
def test_concurrent_resolution_runs_mvn_once(tmp_path):
    """Two processes asking for the same Kafka at once (pytest workers, the
    CLI): one resolves under the lock, the other waits and reuses its result."""
    cache = str(tmp_path / "cache")
    script = ("from fastkc_tools.broker.resolve import resolve_kafka\n"
              "install = resolve_kafka('4.3.x', log=lambda m: print('RESOLVING'))\n"
              "print('LIB', install.lib)\n")
    env = dict(os.environ, FASTKC_CACHE=cache,
               PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=_ROOT) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    stdout = "".join(out for out, _ in outputs)
    assert stdout.count("RESOLVING") == 1
    libs = {line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("LIB ")}
    assert len(libs) == 1
    lib = libs.pop()
    jars = os.listdir(lib)
    assert any(j.startswith("kafka_2.13-4.3.") for j in jars)
    assert any(j.startswith("log4j-slf4j-impl-") for j in jars)
    # No half-copied staging folder is left beside the published one.
    assert sorted(os.listdir(os.path.dirname(lib))) == [".lock", "lib", "pom.xml"]


def test_generated_certificates_fit_kafka_and_clients(tmp_path):
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    from fastkc_tools.broker import certs

    files = certs.generate(str(tmp_path))
    with open(files.ca, "rb") as fh:
        ca = x509.load_pem_x509_certificate(fh.read())
    with open(files.broker_keystore, "rb") as fh:
        keystore = fh.read()
    # Kafka's PEM keystore: an unencrypted PKCS#8 key, then the chain leaf first.
    assert keystore.startswith(b"-----BEGIN PRIVATE KEY-----")
    chain = x509.load_pem_x509_certificates(keystore[keystore.index(b"-----BEGIN CERTIFICATE-----"):])
    leaf = chain[0]
    assert [c.subject for c in chain] == [leaf.subject, ca.subject]
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.IPv4Address("127.0.0.1")]
    for path in (files.broker_keystore, files.client_cert):
        with open(path, "rb") as fh:
            data = fh.read()
        cert = x509.load_pem_x509_certificates(data[data.index(b"-----BEGIN CERTIFICATE-----"):])[0]
        # Signed by the CA (raises InvalidSignature otherwise).
        ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                               ec.ECDSA(cert.signature_hash_algorithm))
    assert oct(os.stat(files.client_key).st_mode & 0o777) == "0o600"


@pytest.mark.broker
def test_fixture_brokers_die_with_their_parent(tmp_path):
    """A test session killed outright must not leave a JVM behind."""
    script = ("import sys, time\n"
              "from fastkc_tools import broker\n"
              "info = broker.start(data_dir=sys.argv[1], die_with_parent=True)\n"
              "print(info.nodes[0].pid, flush=True)\n"
              "time.sleep(600)\n")
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True, env=env, cwd=_ROOT)
    try:
        pid = int(parent.stdout.readline())
        assert _proc_state(pid) not in (None, "Z")
    finally:
        parent.kill()
        parent.wait(30)
    deadline = time.monotonic() + 30
    while _proc_state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _proc_state(pid) in (None, "Z")


# --- the session broker -------------------------------------------------------------

def test_session_broker_status_and_second_start(kafka_broker):
    if not isinstance(kafka_broker, broker.BrokerInfo):
        pytest.skip("FASTKC_BOOTSTRAP: the broker was not started by this session")
    st = broker.status(data_dir=kafka_broker.data_dir)
    assert st.running and st.alive == {1: True}
    assert st.info.bootstrap_servers == kafka_broker.bootstrap_servers
    assert _broker_ids({"bootstrap.servers": kafka_broker.bootstrap_servers}) == [1]
    with pytest.raises(broker.BrokerAlreadyRunningError, match="already running"):
        broker.start(data_dir=kafka_broker.data_dir)
    # The refused start left the running broker alone.
    assert broker.status(data_dir=kafka_broker.data_dir).running


@pytest.mark.broker
def test_taken_port_is_refused_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(broker.PortInUseError, match=str(port)):
            broker.start(data_dir=str(tmp_path), port=port)
    assert not broker.status(data_dir=str(tmp_path)).running


class _GrabPortAfterFormat:
    """Wraps the harness's storage formatting so that, right after it, another
    socket takes the node's PLAINTEXT port: the broker JVM then fails to bind
    and exits, as when another process grabs the port during start-up."""

    def __init__(self, monkeypatch, times):
        from fastkc_tools.broker import harness

        self.real = harness._format_storage
        self.times = times
        self.sockets = []
        monkeypatch.setattr(harness, "_format_storage", self)

    def __call__(self, java, install, node, cluster_id, scram_args):
        self.real(java, install, node, cluster_id, scram_args)
        if len(self.sockets) < self.times:
            s = socket.socket()
            s.bind(("127.0.0.1", node.ports["PLAINTEXT"]))
            s.listen(1)
            self.sockets.append(s)

    def close(self):
        for s in self.sockets:
            s.close()


@pytest.mark.broker
def test_broker_exiting_at_startup_raises_with_log_tail(tmp_path, monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    grab = _GrabPortAfterFormat(monkeypatch, times=1)
    try:
        # An explicit port is never silently replaced, so the failure surfaces.
        with pytest.raises(broker.BrokerStartupError) as caught:
            broker.start(data_dir=str(tmp_path), port=port, timeout=60)
    finally:
        grab.close()
    assert "exited during start-up" in str(caught.value)
    assert "Address already in use" in caught.value.log_tail
    assert not broker.status(data_dir=str(tmp_path)).running


@pytest.mark.broker
def test_port_taken_during_startup_is_replaced_automatically(tmp_path, monkeypatch):
    grab = _GrabPortAfterFormat(monkeypatch, times=1)
    try:
        info = broker.start(data_dir=str(tmp_path), timeout=60)
        try:
            taken = grab.sockets[0].getsockname()[1]
            assert info.port != taken
            assert _broker_ids({"bootstrap.servers": info.bootstrap_servers}) == [1]
        finally:
            broker.stop(data_dir=str(tmp_path))
    finally:
        grab.close()


@pytest.mark.broker
def test_cli_start_status_stop_across_processes(tmp_path):
    data_dir = str(tmp_path / "cli")
    started = _cli("broker", "start", "--data-dir", data_dir)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("bootstrap: 127.0.0.1:")
    bootstrap = started.stdout.split()[1]
    try:
        status = _cli("broker", "status", "--data-dir", data_dir, "--json")
        assert status.returncode == 0
        report = json.loads(status.stdout)
        assert report["running"] is True
        assert report["info"]["listeners"]["PLAINTEXT"] == bootstrap
        pid = report["info"]["nodes"][0]["pid"]
        assert _broker_ids({"bootstrap.servers": bootstrap}) == [1]
        again = _cli("broker", "start", "--data-dir", data_dir)
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        stopped = _cli("broker", "stop", "--data-dir", data_dir)
    assert stopped.returncode == 0 and "stopped 1 node" in stopped.stdout
    # stop returned only after the JVM exited (gone, or a zombie left for
    # whichever process inherited it to reap).
    assert not os.path.exists("/proc/{0}".format(pid)) or _proc_state(pid) == "Z"
    after = _cli("broker", "status", "--data-dir", data_dir)
    assert after.returncode == 3 and "no broker" in after.stdout


# --- three nodes ---------------------------------------------------------------------

def test_three_node_cluster_answers_and_replicates(kafka_cluster, make_cluster_topic):
    assert len(kafka_cluster.nodes) == 3
    assert len({n.ports["PLAINTEXT"] for n in kafka_cluster.nodes}) == 3
    for node in kafka_cluster.nodes:
        # Each node on its own answers with the full cluster.
        assert _broker_ids({"bootstrap.servers": "127.0.0.1:{0}".format(node.ports["PLAINTEXT"])}) == [1, 2, 3]
    topic = make_cluster_topic(partitions=3, replication_factor=3, configs={"min.insync.replicas": 2})
    md = _admin({"bootstrap.servers": kafka_cluster.bootstrap_servers}).list_topics(topic, timeout=15)
    assert all(sorted(p.replicas) == [1, 2, 3] for p in md.topics[topic].partitions.values())
    messages = [Message(key=b"k%d" % i, value=b"v%d" % i, partition=i % 3) for i in range(30)]
    written = produce(kafka_cluster.bootstrap_servers, topic, messages, compression="snappy")
    read = consume_all(kafka_cluster.bootstrap_servers, topic)
    assert [r.comparable() for r in read] == sorted(
        (r.comparable() for r in written), key=lambda c: (c[1], c[2]))
