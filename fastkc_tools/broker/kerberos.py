"""A throw-away MIT Kerberos realm for the local broker's GSSAPI listeners.

Everything lives in one private folder (``<data dir>/kerberos``): kdc.conf,
krb5.conf, the KDC database, the broker's and the client's keytabs, the KDC's
log. Nothing reads or writes /etc/krb5.conf or the machine's default
credential cache: the KDC and kadmin.local are pointed at the folder through
KRB5_CONFIG / KRB5_KDC_PROFILE, the broker's JVM through
-Djava.security.krb5.conf, and clients through KRB5_CONFIG (or gssapi's
credential store).

The realm (FASTKC.TEST) holds two principals with random keys, written to
keytabs: the broker's ``kafka/127.0.0.1`` (every listener binds and
advertises 127.0.0.1, so that is the host clients name in the service
principal) and the client's ``fastkc-client``. ``krb5kdc -n`` runs in the
foreground as a child of the starting process; ``stop()`` ends it by the
pid recorded in the broker's state file.

Needs Debian's krb5-kdc, krb5-admin-server and krb5-user (``available()``
says whether they are installed; scripts/setup.sh installs them).
"""
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastkc_tools.broker.errors import BrokerStartupError

REALM = "FASTKC.TEST"
SERVICE_NAME = "kafka"
HOST = "127.0.0.1"
CLIENT_NAME = "fastkc-client"
# Where the packages put the daemons (sbin is often not on a user's PATH).
_SEARCH_PATH = os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/sbin"))
_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
# KDC round trips: kdc_timeout per try (ms), max_retries tries per KDC.
# Java's Kerberos (the broker's) honours both, so a broker never waits long
# on the KDC. MIT's libkrb5 1.20 (the Python client's) ignores them; the
# client bounds its blocking KDC calls itself (fastkc/auth/gssapi.py).
CLIENT_KDC_TIMEOUT_MS = 1500
CLIENT_KDC_MAX_RETRIES = 2


def _which(tool: str) -> str:
    path = shutil.which(tool, path=_SEARCH_PATH)
    if path is None:
        raise BrokerStartupError("Kerberos: {0} is not installed (MIT Kerberos: Debian's krb5-kdc, "
                                 "krb5-admin-server, krb5-user)".format(tool))
    return path


def available() -> bool:
    """True when every MIT Kerberos tool the harness runs is installed."""
    return all(shutil.which(t, path=_SEARCH_PATH) for t in _TOOLS)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def krb5_conf_text(port: int, realm: str = REALM) -> str:
    """The client/broker krb5.conf: one realm on 127.0.0.1:port, no DNS.

    udp_preference_limit = 1 makes MIT and Java clients speak TCP only (the
    KDC listens on TCP only, so one reserved port is enough). rdns and
    dns_canonicalize_hostname off: the service principal is built from the
    host as given (127.0.0.1), not from a reverse lookup that would turn it
    into 'localhost'."""
    return """[libdefaults]
    default_realm = {realm}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    kdc_timeout = {timeout}
    max_retries = {retries}
    ticket_lifetime = 1h
    forwardable = false

[realms]
    {realm} = {{
        kdc = {host}:{port}
    }}

[domain_realm]
    {host} = {realm}
""".format(realm=realm, host=HOST, port=port, timeout=CLIENT_KDC_TIMEOUT_MS, retries=CLIENT_KDC_MAX_RETRIES)


def _kdc_conf_text(folder: str, port: int, realm: str = REALM) -> str:
    return """[kdcdefaults]
    kdc_listen = ""
    kdc_tcp_listen = {host}:{port}

[realms]
    {realm} = {{
        database_name = {folder}/principal
        key_stash_file = {folder}/stash
        acl_file = {folder}/kadm5.acl
        kdc_listen = ""
        kdc_tcp_listen = {host}:{port}
        max_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{folder}/kdc.log
""".format(realm=realm, host=HOST, port=port, folder=folder)


class Realm:
    """Paths and principals of a prepared realm (what clients need)."""

    def __init__(self, folder: str, port: int, realm: str = REALM) -> None:
        self.folder = folder
        self.port = port
        self.realm = realm
        self.krb5_config = os.path.join(folder, "krb5.conf")
        self.kdc_profile = os.path.join(folder, "kdc.conf")
        self.broker_keytab = os.path.join(folder, "kafka.keytab")
        self.client_keytab = os.path.join(folder, "client.keytab")
        self.service_principal = "{0}/{1}@{2}".format(SERVICE_NAME, HOST, realm)
        self.client_principal = "{0}@{1}".format(CLIENT_NAME, realm)
        self.log = os.path.join(folder, "kdc.log")
        self.pid: int | None = None

    def env(self) -> dict[str, str]:
        """The environment for MIT tools on this realm (never the machine's)."""
        env = dict(os.environ)
        env["KRB5_CONFIG"] = self.krb5_config
        env["KRB5_KDC_PROFILE"] = self.kdc_profile
        # A private cache, so nothing a tool obtains lands in the user's.
        env["KRB5CCNAME"] = "FILE:" + os.path.join(self.folder, "probe.ccache")
        env.pop("KRB5_CLIENT_KTNAME", None)
        env.pop("KRB5_KTNAME", None)
        return env

    def as_dict(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "kdc": "{0}:{1}".format(HOST, self.port),
            "kdc_pid": self.pid,
            "krb5_config": self.krb5_config,
            "service_name": SERVICE_NAME,
            "service_principal": self.service_principal,
            "broker_keytab": self.broker_keytab,
            "client_principal": self.client_principal,
            "client_keytab": self.client_keytab,
            "folder": self.folder,
        }

    def broker_properties(self, listeners: Iterable[str], mechanisms: Sequence[str]) -> dict[str, object]:
        """server.properties entries enabling GSSAPI on `listeners` (lower-case
        listener names) next to the other `mechanisms`."""
        props: dict[str, object] = {
            "sasl.enabled.mechanisms": ",".join(tuple(mechanisms) + ("GSSAPI",)),
            "sasl.kerberos.service.name": SERVICE_NAME,
        }
        jaas = ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                'keyTab="{0}" principal="{1}";'.format(self.broker_keytab, self.service_principal))
        for listener in listeners:
            props["listener.name.{0}.gssapi.sasl.jaas.config".format(listener)] = jaas
        return props

    def jvm_options(self) -> list[str]:
        return ["-Djava.security.krb5.conf=" + self.krb5_config]


def _run(cmd: list[str], realm: Realm, what: str, timeout: float = 30) -> "subprocess.CompletedProcess[str]":
    try:
        proc = subprocess.run(cmd, env=realm.env(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BrokerStartupError("Kerberos: {0} did not finish within {1} s".format(what, timeout)) from None
    if proc.returncode != 0:
        raise BrokerStartupError("Kerberos: {0} failed (exit {1})".format(what, proc.returncode),
                                 log_tail=(proc.stdout + proc.stderr).strip()[-3000:])
    return proc


def create(folder: str, realm: str = REALM) -> Realm:
    """A fresh realm database with the broker's and the client's principals
    and keytabs in `folder` (emptied first). Returns a Realm (KDC not started)."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, mode=0o700)
    r = Realm(os.path.abspath(folder), _free_port(), realm)
    _write(r.krb5_config, krb5_conf_text(r.port, realm))
    _write(r.kdc_profile, _kdc_conf_text(r.folder, r.port, realm))
    _write(os.path.join(r.folder, "kadm5.acl"), "")
    # The master password only unlocks this throw-away database; the stash
    # file lets krb5kdc open it unattended.
    _run([_which("kdb5_util"), "create", "-s", "-r", realm, "-P", secrets.token_hex(16)], r,
         "creating the realm database")
    script = "\n".join((
        "addprinc -randkey {0}".format(r.service_principal),
        "addprinc -randkey {0}".format(r.client_principal),
        "ktadd -k {0} {1}".format(r.broker_keytab, r.service_principal),
        "ktadd -k {0} {1}".format(r.client_keytab, r.client_principal),
    ))
    for line in script.splitlines():
        _run([_which("kadmin.local"), "-r", realm, "-q", line], r, "kadmin.local: " + line.split(" -k ")[0])
    for path in (r.broker_keytab, r.client_keytab):
        if not os.path.exists(path):
            raise BrokerStartupError("Kerberos: kadmin.local wrote no keytab {0}".format(path))
    return r


def start_kdc(r: Realm, *, timeout: float = 20.0, die_with_parent_prefix: Sequence[str] = ()) -> Realm:
    """Start ``krb5kdc -n`` on the realm and return once a ``kinit`` with the
    client keytab succeeds (the KDC answers). Sets r.pid."""
    cmd = list(die_with_parent_prefix) + [_which("krb5kdc"), "-n", "-r", r.realm, "-P",
                                          os.path.join(r.folder, "kdc.pid")]
    with open(os.path.join(r.folder, "kdc.stdout"), "wb") as out:
        proc = subprocess.Popen(cmd, env=r.env(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=r.folder, start_new_session=True)
    r.pid = proc.pid
    _kdc_children[proc.pid] = proc
    deadline = time.monotonic() + timeout
    kinit = [_which("kinit"), "-k", "-t", r.client_keytab, r.client_principal]
    last = ""
    while True:
        if proc.poll() is not None:
            raise BrokerStartupError("Kerberos: krb5kdc exited with code {0}".format(proc.returncode),
                                     log_tail=_tail(r))
        probe = subprocess.run(kinit, env=r.env(), capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL)
        if probe.returncode == 0:
            return r
        last = (probe.stderr or probe.stdout).strip()
        if time.monotonic() > deadline:
            stop_kdc(r.pid)
            raise BrokerStartupError("Kerberos: the KDC did not answer kinit within {0} s ({1})".format(
                timeout, last), log_tail=_tail(r))
        time.sleep(0.1)


def _tail(r: Realm) -> str:
    parts = []
    for name in ("kdc.stdout", "kdc.log"):
        with contextlib.suppress(OSError):
            with open(os.path.join(r.folder, name), encoding="utf-8", errors="replace") as fh:
                parts.append(fh.read()[-2000:])
    return "\n".join(parts)


# Popen objects of KDCs started by this process (reaped on stop).
_kdc_children: dict[int, "subprocess.Popen[bytes]"] = {}


def _is_kdc(pid: int) -> bool:
    """Guards against pid reuse: only a krb5kdc is signalled."""
    try:
        with open("/proc/{0}/cmdline".format(pid), "rb") as fh:
            return b"krb5kdc" in fh.read()
    except OSError:
        return False


def stop_kdc(pid: int | None, timeout: float = 5.0) -> None:
    """End the KDC with `pid` (SIGTERM, then SIGKILL) if it still runs."""
    if not pid:
        return
    child = _kdc_children.pop(pid, None)
    if child is None and not _is_kdc(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if child is not None:
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout)
        return
    deadline = time.monotonic() + timeout
    while _is_kdc(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _is_kdc(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def realm_of(kerberos_info: Mapping[str, Any]) -> Realm:
    """The Realm behind a BrokerInfo.kerberos dict (to add principals)."""
    r = Realm(kerberos_info["folder"], int(kerberos_info["kdc"].rsplit(":", 1)[1]), kerberos_info["realm"])
    r.pid = kerberos_info.get("kdc_pid")
    return r


def add_principal(kerberos_info: Mapping[str, Any], name: str, keytab: str) -> str:
    """Add principal `name` (in the realm unless it names one) with a random
    key, written to `keytab`; returns the full principal name."""
    r = realm_of(kerberos_info)
    principal = name if "@" in name else "{0}@{1}".format(name, r.realm)
    _run([_which("kadmin.local"), "-r", r.realm, "-q", "addprinc -randkey " + principal], r,
         "kadmin.local: addprinc " + principal)
    _run([_which("kadmin.local"), "-r", r.realm, "-q", "ktadd -k {0} {1}".format(keytab, principal)], r,
         "kadmin.local: ktadd " + principal)
    return principal


def delete_principal(kerberos_info: Mapping[str, Any], principal: str) -> None:
    """Remove `principal` from the KDC (its keytabs stay, now useless)."""
    r = realm_of(kerberos_info)
    _run([_which("kadmin.local"), "-r", r.realm, "-q", "delprinc -force " + principal], r,
         "kadmin.local: delprinc " + principal)


def export_key(kerberos_info: Mapping[str, Any], principal: str, keytab: str, *, new_key: bool = False) -> None:
    """Append `principal`'s key to `keytab`. new_key=True first gives the
    principal a new random key (a new key version: keytabs holding only the
    old one can no longer decrypt its tickets); otherwise the current key is
    exported unchanged."""
    r = realm_of(kerberos_info)
    query = "ktadd -k {0} {1}{2}".format(keytab, "" if new_key else "-norandkey ", principal)
    _run([_which("kadmin.local"), "-r", r.realm, "-q", query], r, "kadmin.local: ktadd " + principal)
