"""Kafka's Java consumer at steady state: fastkc_tools/bench/java/SteadyStateConsumer.java
(assign, seekToBeginning, poll(Duration) until the end offsets; first poll,
first record and last record timed like the Python runners), compiled on
first use with `javac` against the kafka-clients jars of the harness's Kafka
and cached under the fastkc cache (keyed by the source and the Kafka
release). The JVM gets the same flags as the ConsumerPerformance row
(run_java.JVM_FLAGS). Peak RSS is the JVM's, as seen by this wrapper.
"""
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastkc_tools.bench.common import finish, peak_rss_bytes
from fastkc_tools.bench.run_java import JVM_FLAGS, java_runner_args

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "SteadyStateConsumer.java")
MAIN_CLASS = "SteadyStateConsumer"

if TYPE_CHECKING:
    from fastkc_tools.broker.resolve import KafkaInstall


class _Clock:
    """The figures the Java program measured, in the shape common.finish reads."""

    def __init__(self, out: Mapping[str, Any]) -> None:
        self.first_delivery_records: int = out["first_delivery_records"]
        self.steady_seconds: float = out["steady_seconds"] or 0.0
        self.time_to_first_record: float | None = out["time_to_first_record_seconds"]


def compiled_classes(install: "KafkaInstall") -> str:
    """The folder holding SteadyStateConsumer.class for this Kafka, compiling it if needed."""
    from fastkc_tools.broker.resolve import cache_root

    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read() + install.version.encode()).hexdigest()[:16]
    out = os.path.join(cache_root(), "bench-java", digest)
    if os.path.isfile(os.path.join(out, MAIN_CLASS + ".class")):
        return out
    javac = shutil.which("javac")
    if javac is None:
        java_home = os.environ.get("JAVA_HOME")
        candidate = os.path.join(java_home, "bin", "javac") if java_home else None
        if candidate and os.access(candidate, os.X_OK):
            javac = candidate
    if javac is None:
        raise SystemExit("javac not found (on PATH or in JAVA_HOME): the Java steady-state runner is compiled "
                         "on first use; install a JDK (not only a JRE) or leave the 'java-steady' client out")
    tmp = out + ".tmp-{0}".format(os.getpid())
    os.makedirs(tmp, exist_ok=True)
    proc = subprocess.run([javac, "-nowarn", "-cp", install.classpath, "-d", tmp, SOURCE],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit("javac failed on {0}:\n{1}".format(SOURCE, (proc.stdout + proc.stderr)[-3000:]))
    try:
        os.rename(tmp, out)  # atomic: a concurrent compile leaves one complete folder
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    args, install, java = java_runner_args(__doc__.split("\n\n")[0], argv)
    classes = compiled_classes(install)
    cmd = [java] + JVM_FLAGS + [
        "-cp", classes + os.pathsep + install.classpath, "-Dlog4j2.level=WARN", MAIN_CLASS,
        args.bootstrap, args.topic, str(args.expected),
        ",".join("{0}={1}".format(p, args.ends[p]) for p in sorted(args.ends)), str(args.timeout)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout + 60)
    if proc.returncode != 0:
        raise SystemExit("SteadyStateConsumer failed (exit {0}):\n{1}".format(
            proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit("SteadyStateConsumer printed no result:\n" + proc.stdout[-2000:])
    out = json.loads(lines[-1])
    finish("Java KafkaConsumer steady state", args, out["records"], out["seconds"],
           touched_bytes=out["touched_bytes"], clock=_Clock(out),
           peak_rss=peak_rss_bytes(children=True), cpu_seconds=out["cpu_seconds"], version=install.version,
           java=out["java_version"])


if __name__ == "__main__":
    main()
