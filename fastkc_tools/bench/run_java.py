"""Kafka's Java consumer through org.apache.kafka.tools.ConsumerPerformance,
from the jars the broker harness resolved (the same Kafka release as the
broker unless --kafka-version says otherwise).

The tool subscribes with a fresh group (so it starts at the earliest offset)
and reads --num-records records (--messages before Kafka 4.2). Its
fetch.time.ms excludes the group join, which makes it the Java counterpart
of "first poll to last record". The JVM gets the heap and collector that
Kafka's own kafka-run-class.sh gives its tools, not the harness's
start-up-minded tool flags (those stop the JIT at C1, which would handicap
this yardstick). Peak RSS is the JVM's, as seen by this wrapper.

The tool touches every record's key and value itself (it sums their lengths
into data.consumed.in.MB, MiB printed with 4 decimals): that figure is
checked against the produced bytes within its rounding (common.finish).
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fastkc_tools.bench.common import finish, parse_args, peak_rss_bytes

if TYPE_CHECKING:
    from fastkc_tools.broker.resolve import KafkaInstall


def java_runner_args(description: str,
                     argv: Sequence[str] | None) -> tuple[argparse.Namespace, "KafkaInstall", str]:
    """The runner's arguments plus --kafka-version (the release whose jars
    to run, the broker's by default) → (args, the Kafka install, java)."""
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--kafka-version", default=None)
    known, rest = extra.parse_known_args(argv)
    args = parse_args(description, rest)
    from fastkc_tools.broker.resolve import find_java, resolve_kafka

    return args, resolve_kafka(known.kafka_version), find_java()

MIB = 2**20
# data.consumed.in.MB is printed with 4 decimals: at most half a unit of the last one off
TOUCH_ROUNDING = int(0.00005 * MIB) + 1

# What kafka-run-class.sh and kafka-consumer-perf-test.sh give the tool.
JVM_FLAGS = ["-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-Djava.awt.headless=true"]


def build_command(install: "KafkaInstall", java: str, bootstrap: str, topic: str, num_records: int,
                  config_path: str, group: str, timeout_ms: int) -> list[str]:
    major, minor = (int(p) for p in install.version.split(".")[:2])
    cmd = [java] + JVM_FLAGS + [
        "-cp", install.classpath,
        "-Dlog4j2.level=WARN",
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server", bootstrap,
        "--topic", topic,
        "--group", group,
        "--timeout", str(timeout_ms),
    ]
    if (major, minor) >= (4, 2):
        # 4.2 renamed --messages and --consumer.config (the old flags are deprecated).
        cmd += ["--num-records", str(num_records), "--command-config", config_path]
    else:
        cmd += ["--messages", str(num_records), "--consumer.config", config_path]
    return cmd


def parse_output(stdout: str) -> dict[str, str]:
    """{column: value} from the tool's CSV-like header and summary line."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time"):
            header = [c.strip() for c in line.split(",")]
            if i + 1 >= len(lines):
                break
            values = [v.strip() for v in lines[i + 1].split(",")]
            if len(values) != len(header):
                raise RuntimeError("ConsumerPerformance summary does not match its header:\n" + stdout[-2000:])
            return dict(zip(header, values))
    raise RuntimeError("ConsumerPerformance printed no summary:\n" + stdout[-2000:])


def main(argv: Sequence[str] | None = None) -> None:
    args, install, java = java_runner_args(__doc__.split("\n\n")[0], argv)
    with tempfile.TemporaryDirectory(prefix="fastkc-bench-java-") as tmp:
        config_path = os.path.join(tmp, "consumer.properties")
        with open(config_path, "w") as f:
            # Java's defaults already are these; written out so the comparison is explicit.
            f.write("check.crcs=true\nisolation.level=read_uncommitted\nauto.offset.reset=earliest\n")
        cmd = build_command(install, java, args.bootstrap, args.topic, args.expected, config_path,
                            "fastkc-bench-java-" + uuid.uuid4().hex[:12],
                            timeout_ms=10000)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        raise SystemExit("ConsumerPerformance failed (exit {0}):\n{1}".format(
            proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    if "Exiting before consuming the expected number" in proc.stdout + proc.stderr:
        print((proc.stdout + proc.stderr)[-2000:], file=sys.stderr)
    stats = parse_output(proc.stdout)
    records = int(stats["data.consumed.in.nMsg"])
    seconds = float(stats["fetch.time.ms"]) / 1000.0
    touched = round(float(stats["data.consumed.in.MB"]) * MIB)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The JVM's CPU covers its start-up, JIT and group join too, so it is kept apart
    # from cpu_seconds (the timed window only, which the tool does not report).
    finish("Java ConsumerPerformance", args, records, seconds, peak_rss=peak_rss_bytes(children=True),
           touched_bytes=touched, touched_tolerance=TOUCH_ROUNDING,
           version=install.version, tool_stats=stats, jvm_process_cpu_seconds=usage.ru_utime + usage.ru_stime)


if __name__ == "__main__":
    main()
