"""A real Schema Registry (Apicurio Registry, Confluent-compatible API) on 127.0.0.1 for tests.

    from fastkc_tools.broker import registry
    info = registry.start(data_dir)    # assembles on first use, then ~15 s to start
    info.url                           # 'http://127.0.0.1:40123/apis/ccompat/v7'
    registry.stop(info)

Apicurio Registry serves Confluent's REST API under /apis/ccompat/v7, so
confluent-kafka's SchemaRegistryClient and serializers work against `info.url`
unchanged. Maven Central publishes it only as a Quarkus application jar
(apicurio-registry-app, no runnable uber-jar), so `resolve_registry()` assembles
it once with Quarkus augmentation (the quarkus-maven-plugin `build` goal over a
generated pom, resources/pom-apicurio.xml) into ~/.cache/fastkc, under the same
lock-and-rename discipline as the Kafka jars (fastkc_tools/broker/resolve.py).

Why 2.4.x and not 3.x: this machine's Maven mirror serves no 3.x release whose
modules are all present (3.3.3 lacks apicurio-registry-schema-util-provider,
-contracts-rules, -config-definitions; 3.0.9 lacks its parent pom; 2.5/2.6 lack
schema-util-provider). 2.4.2.Final resolves with the two substitutions noted in
the pom. Its storage is in-memory H2 (the default), its ccompat API has no
schema GUIDs (/schemas/guids/ is Confluent 8's), and it runs on Java 17.
"""
import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from fastkc_tools.broker.errors import BrokerHarnessError, BrokerStartupError, KafkaResolutionError
from fastkc_tools.broker.resolve import cache_root, find_java, find_maven

APICURIO_VERSION = "2.4.2.Final"
# The Quarkus the registry's parent pom names for this release.
_QUARKUS_VERSION = "2.16.4.Final"
# Substitutes for artifacts the mirror lacks (see resources/pom-apicurio.xml).
_CONFIG_INDEX_VERSION = "0.1.10.Final"
_EVERIT_VERSION = "1.14.2"

# Where Apicurio serves Confluent's API.
CCOMPAT_PATH = "/apis/ccompat/v7"

# The registry holds a few schemas per test: a small serial-GC heap keeps it
# near 250 MB RSS on a shared 2-core machine. C1 only (TieredStopAtLevel=1)
# starts faster; the registry is never the hot path of a test.
REGISTRY_JVM_FLAGS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                      "-Xss512k", "-XX:MaxMetaspaceSize=192m"]

_MARKER = ".fastkc-complete"
_RUNNER = "registry-runner.jar"


class RegistryStartupError(BrokerStartupError):
    """The registry exited or never answered an HTTP request during start-up."""


class RegistryResolutionError(KafkaResolutionError):
    """Maven could not assemble the registry (offline, an artifact not served, ...)."""


@dataclass(frozen=True)
class RegistryInstall:
    """An assembled registry: its runnable jar (with lib/ beside it)."""

    version: str
    home: str  # ~/.cache/fastkc/apicurio-registry-<version>
    app_dir: str  # the runner jar and its lib/ folder

    @property
    def runner_jar(self) -> str:
        return os.path.join(self.app_dir, _RUNNER)

    @property
    def complete(self) -> bool:
        return os.path.exists(os.path.join(self.app_dir, _MARKER))


@dataclass(frozen=True)
class RegistryInfo:
    """A running registry started by `start`."""

    pid: int
    port: int
    data_dir: str
    log_path: str

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:{0}".format(self.port)

    @property
    def url(self) -> str:
        """What confluent-kafka's and fastkc's clients take as `url`."""
        return self.base_url + CCOMPAT_PATH


def registry_install(version: str = APICURIO_VERSION) -> RegistryInstall:
    home = os.path.join(cache_root(), "apicurio-registry-" + version)
    return RegistryInstall(version=version, home=home, app_dir=os.path.join(home, "app"))


def resolve_registry(*, log: Callable[[str], object] | None = None) -> RegistryInstall:
    """The assembled registry, built on first use (several minutes, once).

    Raises MavenNotFoundError, JavaNotFoundError, RegistryResolutionError.
    """
    install = registry_install()
    if install.complete:
        return install
    os.makedirs(install.home, exist_ok=True)
    with open(os.path.join(install.home, ".lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        # Another process may have finished while this one waited for the lock.
        if not install.complete:
            _assemble_locked(install, log)
    return install


def _render_pom() -> str:
    template = resources.files("fastkc_tools.broker").joinpath("resources", "pom-apicurio.xml").read_text("utf-8")
    return string.Template(template).substitute(
        registry_version=APICURIO_VERSION,
        quarkus_version=_QUARKUS_VERSION,
        config_index_version=_CONFIG_INDEX_VERSION,
        everit_version=_EVERIT_VERSION,
    )


def _assemble_locked(install: RegistryInstall, log: Callable[[str], object] | None) -> None:
    mvn = find_maven()
    find_java(min_major=17)
    if log:
        log("assembling Apicurio Registry {0} from Maven Central (first run only, a few minutes)".format(
            install.version))
    build = os.path.join(install.home, "build-{0}".format(os.getpid()))
    shutil.rmtree(build, ignore_errors=True)
    resources_dir = os.path.join(build, "src", "main", "resources")
    os.makedirs(resources_dir)
    with open(os.path.join(build, "pom.xml"), "w", encoding="utf-8") as fh:
        fh.write(_render_pom())
    # The application jar carries no Jandex index, so Quarkus must be told to
    # index it, or its CDI beans are invisible to augmentation.
    with open(os.path.join(resources_dir, "application.properties"), "w", encoding="utf-8") as fh:
        fh.write("quarkus.index-dependency.registry-app.group-id=io.apicurio\n"
                 "quarkus.index-dependency.registry-app.artifact-id=apicurio-registry-app\n")
    started = time.monotonic()
    try:
        proc = subprocess.run([mvn, "-q", "-B", "-f", os.path.join(build, "pom.xml"), "package", "-DskipTests"],
                              capture_output=True, text=True, timeout=1800, cwd=build)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(build, ignore_errors=True)
        raise RegistryResolutionError("mvn did not assemble the registry within 30 minutes") from exc
    target = os.path.join(build, "target")
    runners = [n for n in os.listdir(target) if n.endswith("-runner.jar")] if os.path.isdir(target) else []
    if proc.returncode != 0 or not runners:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        shutil.rmtree(build, ignore_errors=True)
        raise RegistryResolutionError("mvn could not assemble Apicurio Registry {0} (exit {1})\n{2}".format(
            install.version, proc.returncode, tail))
    staging = "{0}.tmp-{1}".format(install.app_dir, os.getpid())
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    # The runner jar's manifest names lib/<jar> relative to itself.
    os.rename(os.path.join(target, runners[0]), os.path.join(staging, _RUNNER))
    os.rename(os.path.join(target, "lib"), os.path.join(staging, "lib"))
    with open(os.path.join(staging, _MARKER), "w", encoding="utf-8") as fh:
        fh.write("assembled in {0:.1f}s\n".format(time.monotonic() - started))
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(install.app_dir, ignore_errors=True)
    os.rename(staging, install.app_dir)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pdeathsig_prefix() -> list[str]:
    # PR_SET_PDEATHSIG through util-linux's setpriv: the JVM gets SIGTERM when
    # the process that started it (a pytest killed by a timeout) dies.
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv and sys.platform.startswith("linux") else []


def answers(url: str, timeout: float = 2.0) -> bool:
    """True when `url` (a ccompat base URL) answers GET /subjects with a JSON list:
    a real HTTP round trip through the registry's storage, not just an open port."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/subjects", timeout=timeout) as resp:
            return resp.status == 200 and isinstance(json.loads(resp.read()), list)
    except (OSError, ValueError):
        return False


def _log_tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, "rb") as fh:
            return "\n".join(fh.read().decode("utf-8", "replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def start(data_dir: str, *, port: int | None = None, timeout: float = 180.0, die_with_parent: bool = False,
          log: Callable[[str], object] | None = None) -> RegistryInfo:
    """Start one registry on 127.0.0.1 (a free port unless `port`), wait until it
    answers, return where it is. Its log goes to `data_dir`/registry.log."""
    install = resolve_registry(log=log)
    java = find_java(min_major=17)
    os.makedirs(data_dir, exist_ok=True)
    deadline = time.monotonic() + timeout
    # A free port can be taken by another process before the JVM binds it:
    # a chosen-by-us port is retried with a new one (an explicit one is not).
    attempts = 1 if port is not None else 3
    last_error: RegistryStartupError | None = None
    for _ in range(attempts):
        chosen = port if port is not None else _free_port()
        try:
            return _start_once(install, java, data_dir, chosen, deadline, die_with_parent)
        except RegistryStartupError as exc:
            last_error = exc
            if time.monotonic() >= deadline or "Address already in use" not in exc.log_tail:
                raise
    assert last_error is not None
    raise last_error


def _start_once(install: RegistryInstall, java: str, data_dir: str, port: int, deadline: float,
                die_with_parent: bool) -> RegistryInfo:
    tmpdir = os.path.join(data_dir, "tmp")
    os.makedirs(tmpdir, exist_ok=True)
    log_path = os.path.join(data_dir, "registry.log")
    cmd = ((_pdeathsig_prefix() if die_with_parent else []) + [java] + REGISTRY_JVM_FLAGS + [
        "-Djava.awt.headless=true", "-Djava.io.tmpdir=" + tmpdir,
        "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port={0}".format(port),
        # one line per request is noise in a test log
        "-Dquarkus.http.access-log.enabled=false",
        "-jar", install.runner_jar,
    ])
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=data_dir, start_new_session=True)
    info = RegistryInfo(pid=proc.pid, port=port, data_dir=data_dir, log_path=log_path)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RegistryStartupError("the registry exited with code {0} during start-up".format(proc.returncode),
                                       log_tail=_log_tail(log_path))
        if answers(info.url):
            return info
        time.sleep(0.5)
    _terminate(proc.pid, 10.0)
    raise RegistryStartupError("the registry did not answer on {0} in time".format(info.url),
                               log_tail=_log_tail(log_path))


def _terminate(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            # not our child (another process started it): poll for its end
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            finished = 0
        if finished == pid:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def stop(info: RegistryInfo, timeout: float = 20.0) -> None:
    """SIGTERM (Quarkus shuts down cleanly), SIGKILL after `timeout` seconds."""
    _terminate(info.pid, timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fastkc_tools.broker.registry",
                                     description="The test Schema Registry (Apicurio, Confluent-compatible API).")
    parser.add_argument("command", choices=["resolve"], help="assemble it into the cache (skipped when present)")
    parser.parse_args(argv)
    try:
        install = resolve_registry(log=lambda msg: print("registry:", msg, file=sys.stderr))
    except BrokerHarnessError as exc:
        print("registry: {0}".format(exc), file=sys.stderr)
        return 1
    print(install.runner_jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
