"""`python -m fastkc_tools.bench report`: regenerate every figure table README.md
quotes, each beside the commit, the machine, the load and the date it was
measured under.

    python -m fastkc_tools.bench report [--quick] [--only e2e,share,...] [--bootstrap HOST:PORT] [--out DIR]

Each section runs one of the benchmark tools in its own process, from this
checkout (PYTHONPATH first, as driver.run_client does), and collects the
Markdown tables the tool writes. Then `report.md` (and `report.json`) in the
output folder hold, per section: the README part it feeds, the exact command,
the commit (`git rev-parse HEAD` and whether the work tree had uncommitted
changes), the machine (CPU model, cores, memory), the load average before
and after, the start and end dates, and the tables. A section that fails is
reported as FAILED with its error and the others still run; the exit status
is then 1.

The full run (no --quick) writes into benchmarks/results/, where README's
figures come from; it wants a quiet machine and took 29 minutes on the
2-core machine (2026-11-29, every section). --quick runs
every broker-side section on tiny datasets, one round, into
build/bench-report/ (the committed results stay as they are): what
tests/integration/test_bench_quick.py runs, and benchmarks/test_report_quick.py
(CI's `benchmarks/` quick run) runs its broker-less part (`--only decode`).
Sections that need more than the one broker (faults: a 3-node cluster and
Toxiproxy; spark: Spark and its Maven jars; spark-avro: those, spark-avro's
and a Schema Registry) or take minutes even when small
(rebalance, cost) are left out of --quick unless --only names them.
"""
import argparse
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from fastkc_tools.bench.driver import CLIENTS, PACKAGE_PARENT, RESULTS

# the e2e table's rows: every client but the share-group ones (their own table, "share")
E2E_CLIENTS = [name for name in CLIENTS if not name.startswith("share-")]
SHARE_CLIENTS = [name for name in CLIENTS if name.startswith("share-")]
AIO_CLIENTS = ["fastkc-records", "fastkc-aio", "aiokafka"]
QUICK_RECORDS = 20_000
QUICK_PARTITIONS = 2


@dataclasses.dataclass(frozen=True)
class Section:
    name: str
    readme: str  # the README part its tables feed
    commands: Callable[["Plan"], list[list[str]]]  # argv lists, run in order
    tables: Callable[["Plan"], list[str]]  # the Markdown files that hold its tables (under the output folder)
    in_quick: bool = True  # run by --quick without --only
    stdout_table: str | None = None  # the commands' stdout is the table: written to this file


@dataclasses.dataclass(frozen=True)
class Plan:
    quick: bool
    out: str
    bootstrap: str | None
    topic: str | None  # --quick: one fresh topic shared by the driver's sections

    def path(self, name: str) -> str:
        return os.path.join(self.out, name)

    def broker(self) -> list[str]:
        return ["--bootstrap", self.bootstrap] if self.bootstrap else []

    def driver(self, clients: Sequence[str], repeat: int, json_name: str) -> list[str]:
        """`python -m fastkc_tools.bench` on the headline dataset (or the quick one)."""
        argv = [sys.executable, "-m", "fastkc_tools.bench", "--clients", ",".join(clients),
                "--json", self.path(json_name)]
        if self.quick:
            argv += ["--records", str(QUICK_RECORDS), "--partitions", str(QUICK_PARTITIONS), "--repeat", "1",
                     "--timeout", "120"]
            argv += ["--topic", self.topic] if self.topic else []
        else:
            argv += ["--repeat", str(repeat)]
        return argv + self.broker()


def _needs_broker(plan: Plan) -> str:
    if not plan.bootstrap:
        raise SystemExit("this section takes --bootstrap HOST:PORT (or FASTKC_BOOTSTRAP)")
    return plan.bootstrap


def _script(path: str) -> list[str]:
    return [sys.executable, os.path.join(PACKAGE_PARENT, path)]


SECTIONS = [
    Section("e2e", 'Benchmarks, "End to end"',
            lambda p: [p.driver(E2E_CLIENTS, 3, "e2e.json")], lambda p: ["e2e.md"]),
    Section("share", 'Share groups, "Throughput"',
            lambda p: [p.driver(SHARE_CLIENTS, 3, "share.json")], lambda p: ["share.md"]),
    Section("aio", 'asyncio, "Speed"',
            lambda p: [p.driver(AIO_CLIENTS, 5, "aio.json")], lambda p: ["aio.md"]),
    Section("curves", 'Benchmarks, "Curves"',
            lambda p: [[sys.executable, "-m", "fastkc_tools.bench", "--json", p.path("curves.json")] + p.broker()
                       + (["--curve", "headers", "--points", "3", "--max-records", "6000", "--repeat", "1",
                           "--timeout", "120"] if p.quick else ["--curve", "all"])],
            lambda p: ["curve-headers.md"] if p.quick else
            ["curve-{0}.md".format(c) for c in ("codecs", "value-size", "partitions", "headers")]),
    Section("decode", 'Benchmarks, "Decode, no broker"',
            lambda p: [_script("benchmarks/decode_table.py") + ["--json", p.path("decode.json")]
                       + ([] if p.quick else ["--rounds", "5"])],
            lambda p: ["decode.md"]),
    Section("aio-stall", 'asyncio, "Decoding stays off the loop"',
            lambda p: [_script("benchmarks/aio_loop_stall.py") + ["--bootstrap", _needs_broker(p)]
                       + (["--records", "2000", "--rounds", "1"] if p.quick else [])],
            lambda p: ["aio_loop_stall.md"], stdout_table="aio_loop_stall.md"),
    Section("arrow-stream", 'Arrow stream, "The 2 M-record sample"',
            lambda p: [_script("benchmarks/arrow_stream_cost.py") + ["--bootstrap", _needs_broker(p)]
                       + (["--records", "5000", "--rounds", "1", "--topic", (p.topic or "") + "-arrow-stream"]
                          if p.quick else [])],
            lambda p: ["arrow_stream_cost.md"], stdout_table="arrow_stream_cost.md"),
    Section("cost", 'Benchmarks, "Decode" (instructions and allocations per record)',
            lambda p: [[sys.executable, "-m", "benchmarks.cost.per_record_cost", "--json", p.path("cost.json")]
                       + (["--reps", "1"] if p.quick else [])],
            lambda p: ["cost.md"], in_quick=False),
    Section("rebalance", 'Benchmarks, "Rebalance time"',
            lambda p: [[sys.executable, "-m", "fastkc_tools.bench.rebalance", "--json", p.path("rebalance.json")]
                       + p.broker() + ["--repeat", "1" if p.quick else "5"]],
            lambda p: ["rebalance.md"], in_quick=False, stdout_table="rebalance.md"),
    Section("spark", 'Benchmarks, "Spark"',
            lambda p: [_script("benchmarks/spark/bench_spark.py") + (["--quick"] if p.quick else ["--out", p.out]),
                       _script("benchmarks/spark/bench_planning.py") + ["--out", p.out]
                       + (["--partitions", "100", "--runs", "1"] if p.quick else [])],
            lambda p: ["spark_planning.md"] if p.quick else ["spark.md", "spark_planning.md"], in_quick=False),
    Section("spark-avro", 'docs/reports/benchmarks.md, "Spark, Schema-Registry Avro"',
            lambda p: [_script("benchmarks/spark/bench_spark_avro.py") + ["--out", p.out]
                       + (["--quick"] if p.quick else [])],
            lambda p: ["spark-avro.md"], in_quick=False),
    Section("faults", 'Reliability, "Faults on real brokers" (and tests/faults/RESULTS.md)',
            lambda p: [[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/faults"],
                       [sys.executable, "-m", "tests.faults.results_table", p.path("faults.jsonl")]],
            lambda p: ["faults.md"], in_quick=False, stdout_table="faults.md"),
]
BY_NAME = {s.name: s for s in SECTIONS}


# --- where and when ------------------------------------------------------------------------------
#: where the report's sections write their figures: a change there is a figure, not code
RESULTS_PATHSPEC = ":(exclude)benchmarks/results"


def _git(*argv: str, cwd: str = PACKAGE_PARENT) -> str:
    try:
        proc = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def commit(cwd: str = PACKAGE_PARENT) -> dict[str, Any]:
    """HEAD and whether tracked files other than the figures differ from it
    (a figure of uncommitted code says so; the figures an earlier section
    of the same report wrote do not count)."""
    head = _git("rev-parse", "HEAD", cwd=cwd) or None
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", ".", RESULTS_PATHSPEC, cwd=cwd)
    return {"commit": head, "dirty": bool(changed) if head else None}


def _proc_field(path: str, name: str) -> str | None:
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    mem_kib = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kib.split()[0]) / 2**20, 1) if mem_kib else None,
        "system": "{0} {1}".format(platform.system(), platform.release()),
        "python": sys.version.split()[0],
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- running -------------------------------------------------------------------------------------
def run_section(section: Section, plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """Run one section's commands; its record for report.json (tables included)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # as driver.run_client gives every runner
    if plan.quick:
        env["FASTKC_BENCH_QUICK"] = "1"
    if plan.bootstrap:
        env["FASTKC_BOOTSTRAP"] = plan.bootstrap
    if section.name == "faults":
        env["FASTKC_FAULTS_REPORT"] = plan.path("faults.jsonl")
        if os.path.exists(env["FASTKC_FAULTS_REPORT"]):
            os.remove(env["FASTKC_FAULTS_REPORT"])
    entry: dict[str, Any] = {"section": section.name, "readme": section.readme, **commit(),
                             "machine": machine(), "load_before": _load(), "started": _now(), "commands": []}
    stdout: list[str] = []
    error = None
    try:
        for argv in section.commands(plan):
            entry["commands"].append(" ".join(argv))
            log("report: {0}: {1}".format(section.name, " ".join(argv)))
            proc = subprocess.run(argv, cwd=PACKAGE_PARENT, env=env, capture_output=True, text=True)
            stdout.append(proc.stdout)
            if proc.returncode != 0:
                error = "exit {0}: {1}".format(proc.returncode, (proc.stderr or proc.stdout).strip()[-3000:])
                break
    except SystemExit as exc:  # a section that cannot run here (no broker given)
        error = str(exc)
    entry.update(load_after=_load(), finished=_now())
    if section.stdout_table and error is None:
        with open(plan.path(section.stdout_table), "w") as f:
            f.write("".join(stdout).strip() + "\n")
    tables = []
    for name in section.tables(plan) if error is None else []:
        try:
            with open(plan.path(name)) as f:
                tables.append({"file": name, "markdown": f.read().strip()})
        except OSError as exc:
            error = "{0} was not written: {1}".format(name, exc)
    entry.update(status="failed" if error else "ok", error=error, tables=tables)
    return entry


def provenance_line(entry: dict[str, Any]) -> str:
    m = entry["machine"]
    head = entry["commit"] or "unknown"
    return ("commit {0}{1}; {2}, {3} cores, {4} GiB memory, {5}, Python {6}; load average (1, 5, 15 min) "
            "{7} before, {8} after; {9} → {10}".format(
                head, " (uncommitted changes)" if entry["dirty"] else "", m["cpu"], m["cores"], m["memory_gib"],
                m["system"], m["python"], " ".join(map(str, entry["load_before"])),
                " ".join(map(str, entry["load_after"])), entry["started"], entry["finished"]))


def render(entries: Sequence[dict[str, Any]], quick: bool) -> str:
    lines = ["# Benchmark report{0}".format(" (QUICK mode: tiny datasets, one round — not figures)" if quick else ""),
             "",
             "Regenerated by `python -m fastkc_tools.bench report{0}` (fastkc_tools/bench/report.py). "
             "Every runner touched "
             "each record's key and value inside its timed window, checked against the produced bytes "
             "(fastkc_tools/bench/common.py, \"Equal work\").".format(" --quick" if quick else ""), ""]
    for entry in entries:
        lines += ["## {0} — README: {1}".format(entry["section"], entry["readme"]), "",
                  "Measured at: " + provenance_line(entry) + ".", ""]
        lines += ["Command: `{0}`".format(c) for c in entry["commands"]] + [""]
        if entry["status"] != "ok":
            lines += ["**FAILED**: " + "\n".join("    " + x for x in str(entry["error"]).splitlines()), ""]
            continue
        for table in entry["tables"]:
            lines += ["From `{0}`:".format(table["file"]), "", table["markdown"], ""]
    return "\n".join(lines)


def previous_entries(out: str, quick: bool) -> list[dict[str, Any]]:
    """The sections of the report already in `out` (report.json), if it was
    made in the same mode; [] when there is none or it cannot be read."""
    try:
        with open(os.path.join(out, "report.json")) as f:
            previous = json.load(f)
    except (OSError, ValueError):
        return []
    if not isinstance(previous, dict) or previous.get("quick") != quick:
        return []
    sections = previous.get("sections")
    if not isinstance(sections, list):
        return []
    return [e for e in sections if isinstance(e, dict) and e.get("section") in BY_NAME]


def merged(previous: Sequence[dict[str, Any]], fresh: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`--only` regenerates some sections: the report keeps the others as
    they were measured (each with its own commit and load), the fresh ones
    replace theirs, in the sections' order."""
    by_name = {e["section"]: e for e in previous}
    by_name.update({e["section"]: e for e in fresh})
    return [by_name[s.name] for s in SECTIONS if s.name in by_name]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fastkc_tools.bench report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny datasets, one round, into build/bench-report/ (what the tests run)")
    parser.add_argument("--only", default=None, help="comma-separated sections: " + ", ".join(BY_NAME))
    parser.add_argument("--bootstrap", default=os.environ.get("FASTKC_BOOTSTRAP") or None,
                        help="the broker (default FASTKC_BOOTSTRAP; the driver's sections start a local one without)")
    parser.add_argument("--out", default=None,
                        help="output folder (default: a checkout's benchmarks/results/, with --quick its "
                        "build/bench-report/)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, log: Callable[[str], None] = print) -> int:
    args = parse_args(argv)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown or not names:
            raise SystemExit("unknown section(s) {0}; choose from {1}".format(unknown, ", ".join(BY_NAME)))
        sections = [BY_NAME[n] for n in names]
    else:
        sections = [s for s in SECTIONS if s.in_quick or not args.quick]
    # a checkout's benchmarks/results/ (else ./fastkc-bench-results/, driver.RESULTS); quick runs
    # beside it in build/ (a checkout) or their own folder, so committed figures stay as they are
    in_checkout = os.path.dirname(RESULTS) == os.path.join(PACKAGE_PARENT, "benchmarks")
    quick_out = (os.path.join(PACKAGE_PARENT, "build", "bench-report") if in_checkout
                 else os.path.abspath("fastkc-bench-report-quick"))
    out = os.path.abspath(args.out or (quick_out if args.quick else RESULTS))
    os.makedirs(out, exist_ok=True)
    topic = "fastkc-report-quick-" + uuid.uuid4().hex[:10] if args.quick else None
    plan = Plan(quick=args.quick, out=out, bootstrap=args.bootstrap, topic=topic)
    entries = []
    for section in sections:
        entry = run_section(section, plan, log)
        entries.append(entry)
        log("report: {0}: {1}".format(section.name, entry["status"] if entry["status"] == "ok"
                                      else "FAILED " + str(entry["error"])[-500:]))
    if args.only:
        entries = merged(previous_entries(out, args.quick), entries)
    text = render(entries, args.quick)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"quick": args.quick, "sections": entries}, f, indent=2, ensure_ascii=False)
        f.write("\n")
    log("report: wrote {0}".format(os.path.join(out, "report.md")))
    return 0 if all(e["status"] == "ok" for e in entries) else 1


if __name__ == "__main__":
    sys.exit(main())
