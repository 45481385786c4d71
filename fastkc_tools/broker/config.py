"""server.properties for the local KRaft nodes (combined broker + controller).

Every node runs both roles, so one JVM per node and no separate controller
process. The settings favour a fast start on a small machine: one-partition
internal topics, a short broker heartbeat, no initial rebalance delay, KIP-848
group timeouts short enough for tests (each within Kafka's min..max bounds and
heartbeat < session, or the broker refuses to start).
"""
import base64
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Listener names double as their security protocols, except CONTROLLER.
CLIENT_LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SECURE_LISTENERS = ("SASL_PLAINTEXT", "SSL", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# A plaintext client listener that advertises another port than it binds
# (start(proxied=True)): a TCP proxy such as Toxiproxy listens on the
# advertised port and forwards to the bound one, so every connection a client
# makes after bootstrap (metadata hands out advertised addresses) goes
# through the proxy, where faults are injected.
PROXIED_LISTENER = "PROXIED"


def new_cluster_id() -> str:
    """16 random bytes, base64url without padding (22 chars), as Kafka's
    `StorageTool random-uuid` prints. Kafka rejects ids starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode("ascii")
        if not cid.startswith("-"):
            return cid


@dataclass
class NodePlan:
    """One node: its id, folders and ports (ports[listener name] → port)."""

    node_id: int
    dir: str  # node root: server.properties, logs, the KRaft log dir below
    ports: dict[str, int] = field(default_factory=dict)
    # listener name → the port it advertises when not its bound port
    advertised: dict[str, int] = field(default_factory=dict)
    # extra JVM flags of this node (-D system properties: a JAAS or krb5
    # file, the URLs an OAUTHBEARER listener may fetch keys from)
    jvm_options: list[str] = field(default_factory=list)

    @property
    def log_dir(self) -> str:
        return os.path.join(self.dir, "data")

    @property
    def properties_path(self) -> str:
        return os.path.join(self.dir, "server.properties")

    @property
    def server_log(self) -> str:
        return os.path.join(self.dir, "server.log")

    @property
    def stdout_log(self) -> str:
        return os.path.join(self.dir, "stdout.log")


@dataclass
class Credentials:
    """Test users. Same names for every mechanism, so a test can pick any."""

    admin_user: str = "admin"
    admin_password: str = "admin-secret"
    user: str = "alice"
    password: str = "alice-secret"

    def as_dict(self) -> dict[str, Any]:
        return {
            "mechanisms": list(SASL_MECHANISMS),
            "users": {self.admin_user: self.admin_password, self.user: self.password},
        }

    def scram_format_args(self) -> list[str]:
        """StorageTool --add-scram arguments (SCRAM users are written into the
        metadata log at format time, so they exist before the first client)."""
        args: list[str] = []
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            for name, password in ((self.admin_user, self.admin_password), (self.user, self.password)):
                args += ["--add-scram", "{0}=[name={1},password={2}]".format(mechanism, name, password)]
        return args


def _props_text(props: Mapping[str, object]) -> str:
    lines = ["# written by fastkc_tools.broker; regenerated at every start"]
    lines += ["{0}={1}".format(k, v) for k, v in props.items()]
    return "\n".join(lines) + "\n"


def node_properties(node: NodePlan, all_nodes: Sequence[NodePlan], *, security: Mapping[str, str] | None = None,
                    credentials: Credentials | None = None,
                    extra: Mapping[str, object] | None = None) -> dict[str, object]:
    """The server.properties mapping for `node` in a cluster of `all_nodes`.

    security: None, or a dict with 'keystore' and 'truststore' PEM paths.
    """
    replication = len(all_nodes)
    voters = ",".join(
        "{0}@127.0.0.1:{1}".format(n.node_id, n.ports["CONTROLLER"]) for n in all_nodes
    )
    client_names = [name for name in CLIENT_LISTENERS if name in node.ports]
    listeners = ["{0}://127.0.0.1:{1}".format(n, node.ports[n]) for n in client_names]
    advertised = ["{0}://127.0.0.1:{1}".format(n, node.advertised.get(n, node.ports[n])) for n in client_names]
    protocol_map = ["{0}:{0}".format(n) for n in client_names] + ["CONTROLLER:PLAINTEXT"]
    if PROXIED_LISTENER in node.ports:
        listeners.append("{0}://127.0.0.1:{1}".format(PROXIED_LISTENER, node.ports[PROXIED_LISTENER]))
        advertised.append("{0}://127.0.0.1:{1}".format(PROXIED_LISTENER, node.advertised[PROXIED_LISTENER]))
        protocol_map.append(PROXIED_LISTENER + ":PLAINTEXT")
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": ",".join(listeners + ["CONTROLLER://127.0.0.1:{0}".format(node.ports["CONTROLLER"])]),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(protocol_map),
        # Inter-broker and controller traffic stay plaintext: tests aim TLS/SASL at clients only.
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": node.log_dir,
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min(2, replication),
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min(2, replication),
        "share.coordinator.state.topic.num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 1000,
        "group.consumer.min.session.timeout.ms": 3000,
        "group.consumer.session.timeout.ms": 10000,
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.consumer.heartbeat.interval.ms": 1000,
        # Share groups (KIP-932) are on in Kafka 4.2+ as formatted (share.version=1
        # is in the 4.3 feature mapping). Their defaults suit production, not
        # tests: a 5 s heartbeat and a 45 s minimum session make a killed member
        # take most of a minute to leave. The record lock stays 30 s by default;
        # lowering its floor lets a test give one group a short lock through the
        # group config share.record.lock.duration.ms.
        "group.share.min.heartbeat.interval.ms": 500,
        "group.share.heartbeat.interval.ms": 1000,
        "group.share.min.session.timeout.ms": 3000,
        "group.share.session.timeout.ms": 10000,
        "group.share.min.record.lock.duration.ms": 1000,
        "broker.heartbeat.interval.ms": 500,
        # The default 128 MiB cleaner buffer is most of a test broker's heap.
        "log.cleaner.dedupe.buffer.size": 2097152,
        "num.network.threads": 2,
        "num.io.threads": 4,
        "num.partitions": 1,
        # Tests create and delete many topics; make deletion prompt.
        "delete.topic.enable": "true",
    }
    if security:
        creds = credentials or Credentials()
        props["sasl.enabled.mechanisms"] = ",".join(SASL_MECHANISMS)
        users = " ".join(
            'user_{0}="{1}"'.format(name, pw)
            for name, pw in ((creds.admin_user, creds.admin_password), (creds.user, creds.password))
        )
        for listener in ("sasl_plaintext", "sasl_ssl"):
            prefix = "listener.name.{0}.".format(listener)
            props[prefix + "plain.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="{0}" password="{1}" {2};'.format(creds.admin_user, creds.admin_password, users)
            )
            for mech in ("scram-sha-256", "scram-sha-512"):
                props[prefix + mech + ".sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        # PEM stores: the keystore file holds the PKCS#8 key and the certificate
        # chain; with PEM, Kafka wants no store password.
        for listener in ("ssl", "sasl_ssl"):
            prefix = "listener.name.{0}.".format(listener)
            props[prefix + "ssl.keystore.type"] = "PEM"
            props[prefix + "ssl.keystore.location"] = security["keystore"]
            props[prefix + "ssl.truststore.type"] = "PEM"
            props[prefix + "ssl.truststore.location"] = security["truststore"]
        # The SSL listener authenticates clients by certificate (mTLS);
        # SASL_SSL authenticates them by SASL, so it asks for no client certificate.
        props["listener.name.ssl.ssl.client.auth"] = "required"
        props["listener.name.sasl_ssl.ssl.client.auth"] = "none"
    # Last, so a caller's setting (connections.max.reauth.ms, another
    # mechanism's JAAS line) wins over the defaults above.
    props.update(extra or {})
    return props


def write_node_properties(node: NodePlan, all_nodes: Sequence[NodePlan], **kwargs: Any) -> str:
    os.makedirs(node.dir, exist_ok=True)
    with open(node.properties_path, "w", encoding="utf-8") as fh:
        fh.write(_props_text(node_properties(node, all_nodes, **kwargs)))
    return node.properties_path
