"""Find Java and Maven, and resolve a pinned Apache Kafka release from Maven Central.

The result is a flat folder of jars, ~/.cache/fastkc/kafka-<version>/lib, that
`java -cp '<lib>/*'` runs from. It is built once and reused: a later call only
checks a marker file. Several processes (pytest workers, the CLI) may ask at the
same time, so resolution runs under an exclusive file lock and publishes the
folder with an atomic rename; a half-copied folder is never visible.
"""
import fcntl
import os
import re
import shutil
import string
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from fastkc_tools.broker.errors import (
    JavaNotFoundError,
    KafkaResolutionError,
    MavenNotFoundError,
)

# Release lines the harness knows, pinned to one release each so every machine
# runs the same broker. 4.3.1 was the newest 4.3.x on Maven Central when this
# was written (checked against kafka_2.13/maven-metadata.xml).
KAFKA_LINES = {
    "4.3.x": "4.3.1",
    "3.9.x": "3.9.2",
}
DEFAULT_KAFKA_VERSION = KAFKA_LINES["4.3.x"]

# Kafka's POMs leave logging out, so the harness adds log4j2 itself. Any recent
# 2.2x release works (the binding only has to match slf4j-api 1.7.x); these
# follow the releases noted for each line in the project's broker notes.
_LOG4J2_FOR_MINOR = {(4, 0): "2.24.3", (4, 1): "2.24.3", (4, 2): "2.25.3", (4, 3): "2.25.3"}
_LOG4J2_DEFAULT = "2.25.3"

# Pinned so a cold ~/.m2 does not depend on Maven's built-in default plugin version.
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

_MARKER = ".fastkc-complete"


@dataclass(frozen=True)
class KafkaInstall:
    """A resolved Kafka: where its jars are and how it logs."""

    version: str
    home: str  # ~/.cache/fastkc/kafka-<version>
    lib: str  # the flat classpath folder

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def classpath(self) -> str:
        # Java expands the trailing '*' itself (all jars in the folder).
        return os.path.join(self.lib, "*")

    @property
    def uses_log4j2(self) -> bool:
        return self.major >= 4

    def logging_jvm_flags(self, log_file: str) -> list[str]:
        """JVM flags that send this Kafka's log to `log_file`, WARN and above."""
        if self.uses_log4j2:
            config = _resource_path("log4j2.properties")
            return ["-Dlog4j2.configurationFile=" + config, "-Dfastkc.log.file=" + log_file]
        config = _resource_path("log4j.properties")
        return ["-Dlog4j.configuration=file:" + config, "-Dfastkc.log.file=" + log_file]


def cache_root() -> str:
    """FASTKC_CACHE, else $XDG_CACHE_HOME/fastkc, else ~/.cache/fastkc."""
    explicit = os.environ.get("FASTKC_CACHE")
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fastkc")


def pin_version(requested: str | None) -> str:
    """'4.3.x' → '4.3.1'; an exact 'X.Y.Z' passes through; None → the default."""
    if requested is None:
        return DEFAULT_KAFKA_VERSION
    requested = requested.strip()
    if requested in KAFKA_LINES:
        return KAFKA_LINES[requested]
    if re.fullmatch(r"\d+\.\d+\.\d+", requested):
        return requested
    raise KafkaResolutionError(
        "unknown Kafka version {0!r}: give an exact release (e.g. 4.3.1) or one of {1}".format(
            requested, ", ".join(sorted(KAFKA_LINES))
        )
    )


def _resource_path(name: str) -> str:
    # The resources ship inside the package (package-data), so they are plain files.
    return str(resources.files("fastkc_tools.broker").joinpath("resources", name))


def find_java(min_major: int = 17) -> str:
    """Path of a `java` at least `min_major`; JAVA_HOME wins over PATH."""
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(os.path.join(java_home, "bin", "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    for java in candidates:
        if not os.access(java, os.X_OK):
            continue
        major = java_major_version(java)
        if major is not None and major >= min_major:
            return java
        raise JavaNotFoundError(
            "{0} is Java {1}, but this Kafka needs Java {2}+: install a newer JDK "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or point JAVA_HOME at one".format(
                java, major, min_major
            )
        )
    raise JavaNotFoundError(
        "no `java` found (PATH or JAVA_HOME): the local Kafka needs Java {0}+; install it, "
        "e.g. `apt-get install openjdk-17-jre-headless`".format(min_major)
    )


def java_major_version(java: str) -> int | None:
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    # Java 8 and older report "1.8.0_x".
    return int(match.group(2)) if major == 1 and match.group(2) else major


def find_maven() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise MavenNotFoundError(
            "no `mvn` on PATH: fastkc resolves Kafka's jars from Maven Central with Maven; "
            "install it (e.g. `apt-get install maven`)"
        )
    return mvn


def _render_pom(version: str) -> str:
    major, minor = (int(p) for p in version.split(".")[:2])  # pin_version made it X.Y.Z
    template_name = "pom-kafka4.xml" if major >= 4 else "pom-kafka3.xml"
    with open(_resource_path(template_name), encoding="utf-8") as fh:
        template = string.Template(fh.read())
    return template.substitute(
        kafka_version=version,
        log4j_version=_LOG4J2_FOR_MINOR.get((major, minor), _LOG4J2_DEFAULT),
    )


def resolve_kafka(version: str | None = None, *, log: Callable[[str], object] | None = None) -> KafkaInstall:
    """Return the KafkaInstall for `version`, downloading it on first use.

    `log` (optional callable taking a str) hears about a cold resolution.
    Raises MavenNotFoundError, KafkaResolutionError.
    """
    version = pin_version(version)
    home = os.path.join(cache_root(), "kafka-" + version)
    install = KafkaInstall(version=version, home=home, lib=os.path.join(home, "lib"))
    if os.path.exists(os.path.join(install.lib, _MARKER)):
        return install

    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, ".lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        # Someone else may have finished while this process waited for the lock.
        if os.path.exists(os.path.join(install.lib, _MARKER)):
            return install
        _resolve_locked(install, log)
    return install


def _resolve_locked(install: KafkaInstall, log: Callable[[str], object] | None) -> None:
    mvn = find_maven()
    # Maven itself needs a JDK; say so before mvn prints a less helpful error.
    find_java(min_major=17 if install.major >= 4 else 11)
    if log:
        log("resolving Apache Kafka {0} from Maven Central with mvn (first run only)".format(
            install.version))
    pom = os.path.join(install.home, "pom.xml")
    with open(pom, "w", encoding="utf-8") as fh:
        fh.write(_render_pom(install.version))
    staging = "{0}.tmp-{1}".format(install.lib, os.getpid())
    shutil.rmtree(staging, ignore_errors=True)
    started = time.monotonic()
    cmd = [
        mvn, "-q", "-B", "-f", pom,
        _DEPENDENCY_PLUGIN + ":copy-dependencies",
        "-DincludeScope=runtime",
        "-DoutputDirectory=" + staging,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaResolutionError("mvn did not finish within 30 minutes") from exc
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise KafkaResolutionError(
            "mvn could not resolve Apache Kafka {0} (exit {1}); is Maven Central reachable?\n{2}".format(
                install.version, proc.returncode, tail
            )
        )
    jars = [n for n in os.listdir(staging) if n.endswith(".jar")]
    if not any(n.startswith("kafka_2.13-") for n in jars):
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaResolutionError("mvn finished but kafka_2.13 is not among the resolved jars")
    with open(os.path.join(staging, _MARKER), "w", encoding="utf-8") as fh:
        fh.write("{0} jars in {1:.1f}s\n".format(len(jars), time.monotonic() - started))
    shutil.rmtree(install.lib, ignore_errors=True)
    os.rename(staging, install.lib)
