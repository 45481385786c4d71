"""Kafka's own command-line tools, run from the jars the harness resolved.

Used by the main job (to load a sample dataset) and by the tests (bulk data
written by an independent, Java producer).
"""
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from fastkc_tools.broker.harness import TOOL_JVM_FLAGS
from fastkc_tools.broker.resolve import find_java, resolve_kafka


@dataclass(frozen=True)
class PerfRun:
    num_records: int
    records_per_second: float
    output: str  # the tool's last summary line


def producer_performance(bootstrap: str, topic: str, num_records: int, *, kafka_version: str | None = None,
                         record_size: int | None = None, compression: str = "none", throughput: int = -1,
                         extra_props: Mapping[str, object] | None = None, timeout: float = 300.0) -> PerfRun:
    """Write `num_records` with org.apache.kafka.tools.ProducerPerformance
    (the Java producer from the same jars as the broker).

    Without record_size the payloads are --payload-monotonic: record i's
    value is str(i) in ASCII, keys are null. On a one-partition topic written
    only by this run, offset i therefore holds b"%d" % i — see
    monotonic_values(). With record_size, payloads are random bytes of that
    size and only the count can be checked.
    """
    install = resolve_kafka(kafka_version)
    props = {"acks": "all", "compression.type": compression, "linger.ms": 20}
    props.update(extra_props or {})
    cmd = [find_java()] + TOOL_JVM_FLAGS + [
        "-cp", install.classpath,
        # The tool's own logging is noise here; its summary goes to stdout.
        "-Dlog4j2.level=WARN",
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic", topic, "--num-records", str(num_records), "--throughput", str(throughput),
    ]
    cmd += ["--record-size", str(record_size)] if record_size else ["--payload-monotonic"]
    prop_args = ["{0}={1}".format(k, v) for k, v in props.items()]
    major_minor = tuple(int(p) for p in install.version.split(".")[:2])
    if major_minor >= (4, 2):
        # 4.2 added --bootstrap-server and --command-property (the old flag is deprecated).
        cmd += ["--bootstrap-server", bootstrap, "--command-property"] + prop_args
    else:
        cmd += ["--producer-props", "bootstrap.servers=" + bootstrap] + prop_args
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("ProducerPerformance failed (exit {0}):\n{1}".format(
            proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    summary = [line for line in proc.stdout.splitlines() if "records sent" in line]
    if not summary:
        raise RuntimeError("ProducerPerformance printed no summary:\n" + proc.stdout[-3000:])
    match = re.match(r"\s*(\d+) records sent, ([\d.]+) records/sec", summary[-1])
    if not match:
        raise RuntimeError("unexpected ProducerPerformance summary: " + summary[-1])
    return PerfRun(num_records=int(match.group(1)), records_per_second=float(match.group(2)),
                   output=summary[-1].strip())
