"""Start, stop and inspect local Kafka nodes (KRaft, broker + controller each).

Layout of a data folder (default ~/.cache/fastkc/run/<name>):
  state.json        who runs: pids, ports, addresses, credentials, TLS files
  .lock             held while a start or stop is in progress
  certs/            generated TLS material (with --security)
  node-<id>/        server.properties, server.log (log4j), stdout.log, data/ (log.dirs)

Nodes run detached from the starting process (their own session), so the CLI
can exit and `stop`/`status` can work from another process through state.json.
Every start formats fresh storage: a test broker carries nothing over.
"""
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import IO, TYPE_CHECKING, Any

from fastkc.errors import KafkaError
from fastkc_tools.broker import oauth, probe
from fastkc_tools.broker.config import (
    PROXIED_LISTENER,
    SASL_MECHANISMS,
    SECURE_LISTENERS,
    Credentials,
    NodePlan,
    new_cluster_id,
    write_node_properties,
)
from fastkc_tools.broker.errors import (
    BrokerAlreadyRunningError,
    BrokerHarnessError,
    BrokerStartupError,
    PortInUseError,
)
from fastkc_tools.broker.resolve import cache_root, find_java, resolve_kafka

if TYPE_CHECKING:
    from fastkc_tools.broker.certs import TlsFiles
    from fastkc_tools.broker.kerberos import Realm
    from fastkc_tools.broker.resolve import KafkaInstall

Log = Callable[[str], object]

STATE_FILE = "state.json"

# Broker JVM flags (single node gets a fixed 1 GiB heap; each node of a
# three-node cluster on one machine gets at most 512 MiB).
_SINGLE_NODE_HEAP = ["-Xms1g", "-Xmx1g"]
_CLUSTER_NODE_HEAP = ["-Xmx512m"]
_BROKER_GC = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]
# FASTKC_BROKER_JIT=c1 (scripts/test.sh sets it for the test suites): brokers
# compile with C1 only and collect with the serial GC. A test suite starts
# some twenty brokers on two cores, each short-lived and lightly loaded, and
# C2's compiler threads spent much of their CPU warming code that never ran
# long; benchmarks keep the default (a broker at full speed).
_C1_BROKER_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def broker_jit_flags() -> list[str]:
    choice = os.environ.get("FASTKC_BROKER_JIT", "").strip().lower()
    if choice in ("", "default"):
        return _BROKER_GC
    if choice == "c1":
        return _C1_BROKER_FLAGS
    raise BrokerHarnessError("FASTKC_BROKER_JIT must be 'c1' or 'default', not {0!r}".format(choice))
# Short-lived CLI tools (StorageTool, ProducerPerformance): small heap, no JIT
# tiers beyond C1, serial GC; they start noticeably faster.
TOOL_JVM_FLAGS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]

# Popen objects of nodes started by this process, by pid, so stop() can reap
# them (otherwise they linger as zombies and look alive).
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass
class NodeInfo:
    node_id: int
    pid: int
    ports: dict[str, int]  # listener name → port (CONTROLLER included)
    dir: str
    # listener name → the port advertised instead of the bound one
    # (proxied=True: "PROXIED" → the port its proxy must listen on)
    advertised: dict[str, int] = field(default_factory=dict)
    jvm_options: list[str] = field(default_factory=list)  # extra JVM flags, kept for restarts

    def proxy_route(self) -> tuple[int, int] | None:
        """(listen port, upstream port) of this node's proxy, or None."""
        if PROXIED_LISTENER not in self.advertised:
            return None
        return self.advertised[PROXIED_LISTENER], self.ports[PROXIED_LISTENER]


@dataclass
class BrokerInfo:
    """What a started broker (or cluster) looks like to its clients."""

    name: str
    data_dir: str
    kafka_version: str
    cluster_id: str
    nodes: list[NodeInfo]
    # listener name → "127.0.0.1:p1,127.0.0.1:p2,..." (PLAINTEXT always; the
    # secure ones with security=True; PROXIED, the proxies' addresses, with
    # proxied=True)
    listeners: dict[str, str]
    security: bool = False
    credentials: dict[str, Any] = field(default_factory=dict)  # users and mechanisms
    tls: dict[str, str] = field(default_factory=dict)  # ca, client_cert, client_key, broker_keystore
    # helper processes living as long as the nodes (stop() ends them):
    # "oidc" → the OAUTHBEARER token endpoint + JWKS (fastkc_tools/broker/oauth.py)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the harness's Kerberos realm when GSSAPI is on (fastkc_tools.broker.kerberos.Realm.as_dict)
    kerberos: dict[str, Any] = field(default_factory=dict)
    startup_seconds: float = 0.0
    started_at: float = 0.0

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT bootstrap address list (what most tests want)."""
        return self.listeners["PLAINTEXT"]

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        """The first node's PLAINTEXT port."""
        return self.nodes[0].ports["PLAINTEXT"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BrokerInfo":
        data = dict(data)
        data["nodes"] = [NodeInfo(**n) for n in data["nodes"]]
        return cls(**data)


@dataclass
class BrokerStatus:
    running: bool  # every node alive
    alive: dict[int, bool]  # node id → bool
    info: BrokerInfo | None = None  # None when no state file exists

    def describe(self) -> str:
        if self.info is None:
            return "no broker started in this data folder"
        state = "running" if self.running else (
            "partly running" if any(self.alive.values()) else "not running")
        return "{0} ({1} node(s), Kafka {2})".format(state, len(self.info.nodes), self.info.kafka_version)


def default_data_dir(name: str = "default") -> str:
    return os.path.join(cache_root(), "run", name)


def _data_dir(name: str, data_dir: str | None) -> str:
    return os.path.abspath(data_dir) if data_dir else default_data_dir(name)


def _location_flags(name: str, data_dir: str) -> str:
    """The CLI flags that point at this data folder (for messages)."""
    if data_dir != default_data_dir(name):
        return " --data-dir " + data_dir
    return "" if name == "default" else " --name " + name


@contextlib.contextmanager
def _folder_lock(data_dir: str) -> Iterator[None]:
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(data_dir, ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _read_state(data_dir: str) -> BrokerInfo | None:
    path = os.path.join(data_dir, STATE_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            return BrokerInfo.from_dict(json.load(fh))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError) as exc:
        raise BrokerHarnessError("unreadable broker state file {0}: {1}".format(path, exc)) from exc


def _write_state(info: BrokerInfo) -> None:
    path = os.path.join(info.data_dir, STATE_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(info.to_json())
    os.replace(tmp, path)


def _pid_alive(pid: int, marker: str | None = None) -> bool:
    """True if `pid` runs (not a zombie) and, when `marker` is given and /proc
    exists, its command line contains `marker` (guards against pid reuse)."""
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/{0}/stat".format(pid), "rb") as fh:
            # The state letter follows the parenthesised command name.
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
        if marker is not None:
            with open("/proc/{0}/cmdline".format(pid), "rb") as fh:
                return marker.encode() in fh.read()
    except (FileNotFoundError, IndexError):
        # Either the process vanished between kill() and open() (dead), or
        # there is no /proc on this system, where kill() is all we can ask.
        return not os.path.exists("/proc")
    return True


def _node_alive(node: NodeInfo) -> bool:
    return _pid_alive(node.pid, marker=os.path.join(node.dir, "server.properties"))


def status(*, name: str = "default", data_dir: str | None = None) -> BrokerStatus:
    """Running or not, with the addresses and credentials from state.json."""
    data_dir = _data_dir(name, data_dir)
    info = _read_state(data_dir)
    if info is None:
        return BrokerStatus(running=False, alive={}, info=None)
    alive = {n.node_id: _node_alive(n) for n in info.nodes}
    return BrokerStatus(running=all(alive.values()), alive=alive, info=info)


def _reserve_ports(count: int) -> list[int]:
    """`count` distinct free ports on 127.0.0.1, chosen by the kernel. The
    sockets stay open until all are chosen so no port is handed out twice;
    another process could still grab one before Kafka binds it, which start()
    detects and answers by retrying with new ports."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _node_log_tail(node: NodePlan, lines: int = 40) -> str:
    parts = []
    for path in (node.server_log, node.stdout_log):
        text = _tail(path, lines)
        if text.strip():
            parts.append("[{0}]\n{1}".format(path, text))
    return "\n".join(parts)


def _format_storage(java: str, install: "KafkaInstall", node: NodePlan, cluster_id: str,
                    scram_args: Sequence[str]) -> None:
    cmd = (
        [java]
        + TOOL_JVM_FLAGS
        + install.logging_jvm_flags(os.path.join(node.dir, "format.log"))
        + ["-cp", install.classpath, "kafka.tools.StorageTool", "format",
           "-t", cluster_id, "-c", node.properties_path]
        + list(scram_args)
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise BrokerStartupError(
            "formatting KRaft storage for node {0} failed (exit {1})".format(node.node_id, proc.returncode),
            log_tail="\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:]),
        )


def _die_with_parent_prefix() -> list[str]:
    """A command prefix that makes the JVM receive SIGTERM when the process
    that started it dies (Linux PR_SET_PDEATHSIG, set by util-linux `setpriv`
    before it execs java). Used by test fixtures so a killed pytest leaves no
    broker behind; the CLI's brokers must outlive the CLI and do not use it."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or not sys.platform.startswith("linux"):
        return []
    return [setpriv, "--pdeathsig", "TERM", "--"]


def _launch(java: str, install: "KafkaInstall", node: NodePlan, heap: list[str],
            die_with_parent: bool = False) -> "subprocess.Popen[bytes]":
    tmpdir = os.path.join(node.dir, "tmp")
    # zstd-jni and snappy-java unpack native libraries into java.io.tmpdir; a
    # private folder avoids a noexec /tmp and clashes between nodes.
    os.makedirs(tmpdir, exist_ok=True)
    cmd = (
        (_die_with_parent_prefix() if die_with_parent else [])
        + [java]
        + heap
        + broker_jit_flags()
        + ["-Djava.awt.headless=true", "-Djava.io.tmpdir=" + tmpdir]
        + list(node.jvm_options)
        + install.logging_jvm_flags(node.server_log)
        + ["-cp", install.classpath, "kafka.Kafka", node.properties_path]
    )
    with open(node.stdout_log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=node.dir,
            # Own session: a Ctrl-C in the terminal that ran `fastkc broker
            # start` must not reach the broker.
            start_new_session=True,
        )
    _children[proc.pid] = proc
    return proc


def _plan_nodes(data_dir: str, nodes: int, security: bool, first_port: int | None,
                proxied: bool = False) -> list[NodePlan]:
    names = ["PLAINTEXT", "CONTROLLER"] + (list(SECURE_LISTENERS) if security else [])
    if proxied:
        names.append(PROXIED_LISTENER)
    # proxied: one more port per node, the one its proxy listens on (advertised)
    ports = _reserve_ports((len(names) + (1 if proxied else 0)) * nodes)
    proxy_ports = [ports.pop() for _ in range(nodes)] if proxied else []
    if first_port is not None:
        if not _port_free(first_port):
            raise PortInUseError(
                "port {0} on 127.0.0.1 is already in use; choose another or leave the port "
                "out to let fastkc pick free ones".format(first_port))
        # The kernel may have handed out the requested port itself: drop it (or
        # the last one) so the ports stay distinct.
        ports.remove(first_port) if first_port in ports else ports.pop()
        ports.insert(0, first_port)
    plans = []
    for i in range(nodes):
        chunk = ports[i * len(names):(i + 1) * len(names)]
        node_id = i + 1
        plans.append(NodePlan(node_id=node_id, dir=os.path.join(data_dir, "node-{0}".format(node_id)),
                              ports=dict(zip(names, chunk)),
                              advertised={PROXIED_LISTENER: proxy_ports[i]} if proxied else {}))
    return plans


def _looks_like_port_clash(node: NodePlan) -> bool:
    text = _node_log_tail(node, 200)
    return "Address already in use" in text or "BindException" in text


def _kill_all(procs: Sequence["subprocess.Popen[bytes]"], timeout: float = 10.0) -> None:
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        _children.pop(proc.pid, None)


def start(*, name: str = "default", nodes: int = 1, security: bool = False, kafka_version: str | None = None,
          data_dir: str | None = None, port: int | None = None, timeout: float | None = None, log: Log | None = None,
          die_with_parent: bool = False, proxied: bool = False, broker_properties: Mapping[str, object] | None = None,
          jvm_options: Sequence[str] | None = None, kerberos: bool | None = None) -> BrokerInfo:
    """Start a local Kafka (1 or 3 nodes) and return its BrokerInfo once every
    node answers an ApiVersions + Metadata round trip listing all nodes.

    port: the first node's PLAINTEXT port; None lets the kernel pick free
          ports (and start-up retries with new ones if a port gets taken).
    log:  optional callable(str) for progress messages.
    die_with_parent: the nodes get SIGTERM if this process dies (Linux with
          util-linux's setpriv; for test sessions, not for the CLI).
    proxied: each node also gets a plaintext listener "PROXIED" that
          advertises a port chosen up front instead of its own; start a TCP
          proxy on each node's `proxy_route()` (listen, upstream) and clients
          bootstrapped from info.listeners["PROXIED"] talk to every broker
          through the proxies. The harness starts no proxy itself, and the
          PLAINTEXT listener (and its readiness probe) stays direct.
    broker_properties: server.properties entries set on every node after
          the harness's own (they win), e.g. connections.max.reauth.ms.
    jvm_options: extra JVM flags for every node (kept for start_node).
    kerberos: with security, also a GSSAPI mechanism on the SASL listeners,
          backed by a KDC of its own (fastkc_tools.broker.kerberos; info.kerberos
          says how to connect). None: when MIT Kerberos is installed; True:
          required; False: off.
    Raises BrokerAlreadyRunningError, PortInUseError, BrokerStartupError,
    JavaNotFoundError, MavenNotFoundError, KafkaResolutionError.
    """
    if nodes not in (1, 3):
        raise BrokerHarnessError("nodes must be 1 or 3 (a quorum of 3 controllers), not {0}".format(nodes))
    data_dir = _data_dir(name, data_dir)
    began = time.monotonic()
    install = resolve_kafka(kafka_version, log=log)
    java = find_java(min_major=17 if install.major >= 4 else 11)
    if timeout is None:
        timeout = 90.0 if nodes == 1 else 150.0

    with _folder_lock(data_dir):
        current = status(name=name, data_dir=data_dir)
        if current.info is not None and any(current.alive.values()):
            raise BrokerAlreadyRunningError(
                "a Kafka broker is already running from {0} (bootstrap {1}, pids {2}); "
                "stop it first with `fastkc broker stop{3}`".format(
                    data_dir, current.info.bootstrap_servers,
                    ", ".join(str(n.pid) for n in current.info.nodes),
                    _location_flags(name, data_dir)))
        if current.info is not None and current.info.kerberos:
            _stop_kdc(current.info.kerberos.get("kdc_pid"))  # left by a start that died half-way
        attempts = 1 if port is not None else 3
        for attempt in range(1, attempts + 1):
            try:
                info = _start_locked(install, java, name, data_dir, nodes, security, port,
                                     began + timeout, log, die_with_parent, proxied,
                                     broker_properties, jvm_options, kerberos)
            except BaseException as exc:
                _stop_services(data_dir)
                if not isinstance(exc, _PortClash):
                    raise
                if attempt == attempts:
                    raise BrokerStartupError("ports kept being taken by other processes during start-up") from exc
                if log:
                    log("a chosen port was taken meanwhile; retrying with new ports")
                continue
            info.startup_seconds = round(time.monotonic() - began, 2)
            _write_state(info)
            return info
    raise AssertionError("unreachable")


class _PortClash(Exception):
    pass


def _start_locked(install: "KafkaInstall", java: str, name: str, data_dir: str, nodes: int, security: bool,
                  port: int | None, deadline: float, log: Log | None, die_with_parent: bool, proxied: bool = False,
                  broker_properties: Mapping[str, object] | None = None, jvm_options: Sequence[str] | None = None,
                  kerberos: bool | None = None) -> BrokerInfo:
    # Fresh storage every time: remove what a previous run left behind.
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(data_dir, STATE_FILE))
    for entry in os.listdir(data_dir):
        if entry.startswith("node-") or entry == "certs":
            shutil.rmtree(os.path.join(data_dir, entry), ignore_errors=True)

    plans = _plan_nodes(data_dir, nodes, security, port, proxied)
    for plan in plans:
        plan.jvm_options = list(jvm_options or ())
    credentials = Credentials() if security else None
    tls = None
    tls_props = None
    if security:
        # Imported here: `cryptography` is only needed for --security.
        from fastkc_tools.broker import certs

        tls = certs.generate(os.path.join(data_dir, "certs"))
        tls_props = {"keystore": tls.broker_keystore, "truststore": tls.ca}
    # Each mechanism beyond PLAIN/SCRAM brings its settings and lists itself
    # after the ones before it in sasl.enabled.mechanisms (the last word wins).
    mechanism_props: dict[str, object] = {}
    mechanisms: list[str] = list(SASL_MECHANISMS)
    oidc: dict[str, Any] | None = None
    if security:
        oidc = _start_oidc(data_dir, plans, die_with_parent)
        mechanism_props.update(oauth.broker_properties(oidc, mechanisms))
        mechanisms.append("OAUTHBEARER")
    realm = _kerberos_hook(data_dir, security, kerberos, die_with_parent, log)
    if realm is not None:
        mechanism_props.update(realm.broker_properties(("sasl_plaintext", "sasl_ssl"), mechanisms))
        for plan in plans:
            plan.jvm_options += realm.jvm_options()
    # The caller's entries still win over the mechanisms'.
    properties = {**mechanism_props, **(broker_properties or {})}
    try:
        return _start_nodes(install, java, name, data_dir, nodes, security, port, deadline, log, die_with_parent,
                            plans, credentials, tls, tls_props, properties, realm, oidc)
    except BaseException:
        if realm is not None:
            _stop_kdc(realm.pid)
        raise


def _kerberos_hook(data_dir: str, security: bool, kerberos: bool | None, die_with_parent: bool,
                   log: Log | None) -> "Realm | None":
    """The realm behind the GSSAPI listeners, its KDC started, or None."""
    from fastkc_tools.broker import kerberos as krb

    if not security or kerberos is False or (kerberos is None and not krb.available()):
        return None
    if not krb.available():
        raise BrokerStartupError("kerberos=True needs MIT Kerberos (krb5kdc, kdb5_util, kadmin.local, kinit: "
                                 "Debian's krb5-kdc, krb5-admin-server, krb5-user)")
    realm = krb.create(os.path.join(data_dir, "kerberos"))
    krb.start_kdc(realm, die_with_parent_prefix=_die_with_parent_prefix() if die_with_parent else ())
    if log:
        log("Kerberos realm {0}: KDC on 127.0.0.1:{1} (pid {2})".format(realm.realm, realm.port, realm.pid))
    return realm


def _stop_kdc(pid: int | None) -> None:
    from fastkc_tools.broker import kerberos as krb

    krb.stop_kdc(pid)


def _start_nodes(install: "KafkaInstall", java: str, name: str, data_dir: str, nodes: int, security: bool,
                 port: int | None, deadline: float, log: Log | None, die_with_parent: bool, plans: list[NodePlan],
                 credentials: Credentials | None, tls: "TlsFiles | None", tls_props: Mapping[str, str] | None,
                 broker_properties: Mapping[str, object], realm: "Realm | None",
                 oidc: dict[str, Any] | None) -> BrokerInfo:
    for plan in plans:
        write_node_properties(plan, plans, security=tls_props, credentials=credentials, extra=broker_properties)

    cluster_id = new_cluster_id()
    scram_args = credentials.scram_format_args() if credentials else []
    if log:
        log("formatting KRaft storage for {0} node(s) (cluster id {1})".format(nodes, cluster_id))
    # The nodes are formatted in parallel: each StorageTool run is a JVM start.
    with ThreadPoolExecutor(max_workers=nodes) as pool:
        for future in [pool.submit(_format_storage, java, install, p, cluster_id, scram_args) for p in plans]:
            future.result()

    heap = _SINGLE_NODE_HEAP if nodes == 1 else _CLUSTER_NODE_HEAP
    procs = [_launch(java, install, plan, heap, die_with_parent) for plan in plans]
    info = BrokerInfo(
        name=name,
        data_dir=data_dir,
        kafka_version=install.version,
        cluster_id=cluster_id,
        nodes=[NodeInfo(node_id=p.node_id, pid=proc.pid, ports=dict(p.ports), dir=p.dir,
                        advertised=dict(p.advertised), jvm_options=list(p.jvm_options))
               for p, proc in zip(plans, procs)],
        listeners={
            listener: ",".join("127.0.0.1:{0}".format(p.advertised.get(listener, p.ports[listener]))
                               for p in plans)
            for listener in plans[0].ports if listener != "CONTROLLER"
        },
        security=bool(security),
        credentials=_credentials(credentials, oidc, realm),
        tls=tls.as_dict() if tls else {},
        services={"oidc": {"pid": oidc["pid"], "dir": os.path.dirname(oidc["signing_key"])}} if oidc else {},
        kerberos=realm.as_dict() if realm is not None else {},
        started_at=time.time(),
    )
    # Written before readiness: if this process dies while waiting (killed,
    # not just interrupted), a later `stop` still finds the pids to end.
    _write_state(info)
    if log:
        log("started {0} node(s) (pids {1}); waiting until they answer".format(
            nodes, ", ".join(str(p.pid) for p in procs)))
    try:
        _wait_ready(plans, procs, cluster_id, deadline, port)
    except BaseException:
        _kill_all(procs)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(data_dir, STATE_FILE))
        raise
    return info


def _wait_ready(plans: Sequence[NodePlan], procs: Sequence["subprocess.Popen[bytes]"], cluster_id: str,
                deadline: float, explicit_port: object, expected_nodes: list[int] | None = None) -> None:
    # expected_nodes: every node id the cluster has (default: the ones being
    # started; a restarted single node must still see all its peers).
    expected: tuple[str | None, list[int]] = (cluster_id, expected_nodes or [p.node_id for p in plans])
    pending = list(plans)
    last_error: dict[int, str] = {}
    while True:
        for plan, proc in zip(plans, procs):
            if proc.poll() is not None:
                if explicit_port is None and _looks_like_port_clash(plan):
                    raise _PortClash()
                raise BrokerStartupError(
                    "Kafka node {0} exited during start-up with code {1}".format(plan.node_id, proc.returncode),
                    log_tail=_node_log_tail(plan),
                )
        still = []
        for plan in pending:
            try:
                seen = probe.cluster_view("127.0.0.1", plan.ports["PLAINTEXT"], timeout=3.0)
            except KafkaError as exc:
                # Refused, reset, timed out: the node is still coming up.
                last_error[plan.node_id] = str(exc)
                still.append(plan)
                continue
            if seen != expected:
                last_error[plan.node_id] = "Metadata says cluster {0[0]} with nodes {0[1]}, expecting {1[0]} " \
                    "with {1[1]}".format(seen, expected)
                still.append(plan)
        pending = still
        if not pending:
            return
        if time.monotonic() > deadline:
            plan = pending[0]
            raise BrokerStartupError(
                "Kafka node {0} did not answer ApiVersions + Metadata in time (last: {1})".format(
                    plan.node_id, last_error.get(plan.node_id, "no attempt")),
                log_tail=_node_log_tail(plan),
            )
        time.sleep(0.25)


def stop(*, name: str = "default", data_dir: str | None = None, timeout: float = 30.0) -> BrokerInfo | None:
    """Stop the nodes recorded in the data folder: SIGTERM (Kafka's clean
    shutdown), then SIGKILL for any still alive after `timeout` seconds; wait
    until each has exited. Returns the BrokerInfo that was stopped, or None if
    nothing was running."""
    data_dir = _data_dir(name, data_dir)
    if not os.path.isdir(data_dir):
        return None
    with _folder_lock(data_dir):
        info = _read_state(data_dir)
        if info is None:
            return None
        live = [n for n in info.nodes if _node_alive(n)]
        for node in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.pid, signal.SIGTERM)
        remaining = _wait_exit(live, timeout)
        for node in remaining:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.pid, signal.SIGKILL)
        remaining = _wait_exit(remaining, 15.0)
        if remaining:
            raise BrokerHarnessError("Kafka node(s) with pid(s) {0} did not exit even after SIGKILL".format(
                ", ".join(str(n.pid) for n in remaining)))
        _stop_kdc(info.kerberos.get("kdc_pid"))
        os.remove(os.path.join(data_dir, STATE_FILE))
        _stop_services(data_dir)
        return info


# --- OAUTHBEARER (fastkc_tools/broker/oauth.py): the OIDC server started with security=True
def _start_oidc(data_dir: str, plans: Sequence[NodePlan], die_with_parent: bool) -> dict[str, Any]:
    described = oauth.start_server(os.path.join(data_dir, "oauth"),
                                   die_with_parent_prefix=_die_with_parent_prefix() if die_with_parent else ())
    for plan in plans:
        plan.jvm_options = plan.jvm_options + oauth.jvm_options(described)
    return described


def _stop_services(data_dir: str) -> None:
    oauth.stop_server(os.path.join(data_dir, "oauth"))


def _credentials(credentials: Credentials | None, oidc: Mapping[str, Any] | None,
                 realm: "Realm | None") -> dict[str, Any]:
    """What BrokerInfo.credentials says: users, every mechanism the SASL
    listeners offer, and how OAUTHBEARER clients get tokens."""
    if credentials is None:
        return {}
    out = credentials.as_dict()
    if oidc is not None:
        out["mechanisms"] = list(out["mechanisms"]) + ["OAUTHBEARER"]
        out["oauthbearer"] = {k: v for k, v in oidc.items() if k != "pid"}
    if realm is not None:
        out["mechanisms"] = list(out["mechanisms"]) + ["GSSAPI"]
    return out


def stop_node(info: BrokerInfo, node_id: int, *, timeout: float = 30.0) -> None:
    """Stop one node of a running broker (SIGTERM: Kafka's controlled
    shutdown; SIGKILL after `timeout`) and wait for it to exit. Its data dir,
    ports and state entry stay, so start_node() brings the same node back:
    how tests take a broker or a cluster member away and return it."""
    node = _node_of(info, node_id)
    with contextlib.suppress(ProcessLookupError):
        os.kill(node.pid, signal.SIGTERM)
    if _wait_exit([node], timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid, signal.SIGKILL)
        if _wait_exit([node], 15.0):
            raise BrokerHarnessError("Kafka node {0} (pid {1}) did not exit even after SIGKILL".format(
                node_id, node.pid))


def kill_node(info: BrokerInfo, node_id: int, *, timeout: float = 15.0) -> None:
    """SIGKILL one node (no controlled shutdown: a crash) and wait for it to
    exit; start_node() brings it back, recovering its log as after a crash."""
    node = _node_of(info, node_id)
    with contextlib.suppress(ProcessLookupError):
        os.kill(node.pid, signal.SIGKILL)
    if _wait_exit([node], timeout):
        raise BrokerHarnessError("Kafka node {0} (pid {1}) did not exit after SIGKILL".format(node_id, node.pid))


def start_node(info: BrokerInfo, node_id: int, *, timeout: float = 90.0, die_with_parent: bool = False,
               expect_nodes: Sequence[int] | None = None) -> None:
    """Start a node stopped by stop_node() again from its existing data dir,
    properties and ports (no reformat); record its new pid in `info` and the
    state file (so stop() ends it), and return once it answers ApiVersions +
    Metadata listing every node of the cluster (or `expect_nodes`, the ids
    it must list, when others are meant to stay down)."""
    node = _node_of(info, node_id)
    if _node_alive(node):
        raise BrokerAlreadyRunningError("Kafka node {0} is already running (pid {1})".format(node_id, node.pid))
    install = resolve_kafka(info.kafka_version)
    java = find_java(min_major=17 if install.major >= 4 else 11)
    plan = NodePlan(node_id=node.node_id, dir=node.dir, ports=dict(node.ports), advertised=dict(node.advertised),
                    jvm_options=list(node.jvm_options))
    heap = _SINGLE_NODE_HEAP if len(info.nodes) == 1 else _CLUSTER_NODE_HEAP
    proc = _launch(java, install, plan, heap, die_with_parent=die_with_parent)
    node.pid = proc.pid
    _write_state(info)
    # A restarted node never clashes on ports it held before: treat its
    # ports as explicit so an early exit is reported, not retried elsewhere.
    _wait_ready([plan], [proc], info.cluster_id, time.monotonic() + timeout, explicit_port=True,
                expected_nodes=sorted(expect_nodes) if expect_nodes else [n.node_id for n in info.nodes])


def _node_of(info: BrokerInfo, node_id: int) -> NodeInfo:
    for node in info.nodes:
        if node.node_id == node_id:
            return node
    raise BrokerHarnessError("no node {0} in this broker (nodes {1})".format(
        node_id, [n.node_id for n in info.nodes]))


def _wait_exit(nodes: Sequence[NodeInfo], timeout: float) -> list[NodeInfo]:
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    while pending:
        for node in pending:
            child = _children.get(node.pid)
            if child is not None and child.poll() is not None:
                _children.pop(node.pid, None)
        pending = [n for n in pending if _node_alive(n)]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return pending


def describe(info: BrokerInfo, *, out: IO[str] = sys.stdout) -> None:
    """Print addresses (and with security, credentials and TLS files)."""
    print("bootstrap: {0}".format(info.bootstrap_servers), file=out)
    for listener, addresses in sorted(info.listeners.items()):
        print("  {0:<15} {1}".format(listener, addresses), file=out)
    print("kafka {0}, cluster id {1}, {2} node(s), data {3}".format(
        info.kafka_version, info.cluster_id, len(info.nodes), info.data_dir), file=out)
    for node in info.nodes:
        route = node.proxy_route()
        if route:
            print("  node {0}: proxy 127.0.0.1:{1} -> 127.0.0.1:{2} (start it before using PROXIED)".format(
                node.node_id, route[0], route[1]), file=out)
    if info.security:
        users = info.credentials.get("users", {})
        print("SASL mechanisms: {0}".format(", ".join(info.credentials.get("mechanisms", SASL_MECHANISMS))),
              file=out)
        for user, password in sorted(users.items()):
            print("  user {0} / password {1}".format(user, password), file=out)
        for key in ("ca", "client_cert", "client_key"):
            if key in info.tls:
                print("  {0:<12} {1}".format(key, info.tls[key]), file=out)
        print("  (the SSL listener requires the client certificate; SASL_SSL does not)", file=out)
        if "oauthbearer" in info.credentials:
            for line in oauth.describe_lines(info.credentials["oauthbearer"]):
                print(line, file=out)
    if info.kerberos:
        k = info.kerberos
        print("GSSAPI (Kerberos realm {0}, KDC {1}) on SASL_PLAINTEXT and SASL_SSL:".format(k["realm"], k["kdc"]),
              file=out)
        print("  export KRB5_CONFIG={0}".format(k["krb5_config"]), file=out)
        print("  client principal {0}, keytab {1}".format(k["client_principal"], k["client_keytab"]), file=out)
        print("  KafkaConsumer(..., security_protocol='SASL_PLAINTEXT', sasl_mechanism='GSSAPI', "
              "sasl_kerberos_service_name='{0}', sasl_kerberos_keytab='{1}', sasl_kerberos_principal='{2}')".format(
                  k["service_name"], k["client_keytab"], k["client_principal"]), file=out)
