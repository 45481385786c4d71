"""Instructions and heap allocations per record, per decode reader: the
profile issue 11 asks for beside any throughput target that is missed.

    python -m benchmarks.cost.per_record_cost [--shapes 100B] [--codecs none,lz4] [--reps 20]
        [--readers "fastkc C → records,fastkc C → Arrow,floor (CRC32C + memcpy)"]

Each reader (benchmarks/readers.py: the same payloads and fetch-sized pieces
as the decode table) runs in child processes:
  - instructions: a child that decodes the payload `--reps` times, minus a
    child that loads the payload and decodes one piece (the warm-up) but
    nothing else, counted by `perf stat -e instructions:u` where the CPU's
    counters are exposed, else by valgrind's cachegrind (exact, ~50x slower:
    virtual machines often hide the counters); the difference divided by the
    records decoded. Instructions are nearly deterministic, so unlike
    seconds they do not move with the neighbours' load.
  - allocations: the child runs with alloc_counter.c preloaded,
    PYTHONMALLOC=malloc and pyarrow on the system allocator, and reads the
    counter around the decode loop alone.
Prints a Markdown table; writes benchmarks/results/cost.json and cost.md.
With neither tool the instructions column is empty and the table says why.
The payload is built once (kafka-python's builder is slow, more so under
valgrind) and handed to the children as a pickle.
"""
import argparse
import ctypes
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
DEFAULT_READERS = ("fastkc C → records", "fastkc C → Arrow", "floor (CRC32C + memcpy)")


def shim_path():
    """Build the allocation counter once per source version (cached beside the user's other builds)."""
    source = os.path.join(HERE, "alloc_counter.c")
    folder = os.path.expanduser("~/.cache/fastkc/cost")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, "alloc_counter-{0}.so".format(int(os.path.getmtime(source))))
    if not os.path.exists(target):
        compiler = os.environ.get("CC", "cc")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "shim.so")
            subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", out, source], check=True)
            shutil.move(out, target)
    return target


# --- the child: decode and count -------------------------------------------------------------
def child(reader_name, payload_path, reps):
    sys.path.insert(0, ROOT)
    from benchmarks import readers as B

    with open(payload_path, "rb") as f:
        pieces, counts = pickle.load(f)
    readers = B.readers(counts)
    if reader_name not in readers:
        raise SystemExit("no reader {0!r} (have: {1})".format(reader_name, ", ".join(readers)))
    reader = readers[reader_name]
    reader(pieces[:1])  # warm-up: imports and caches, in the baseline too
    counter = None
    try:
        counter = ctypes.CDLL(None).fkc_alloc_count
        counter.restype = ctypes.c_ulonglong
    except AttributeError:
        pass  # not preloaded: the instructions run
    before = counter() if counter else 0
    seen = 0
    for _ in range(reps):
        seen += reader(pieces)[0]  # (records, bytes touched): the touch is in every count alike
    after = counter() if counter else 0
    if seen != reps * sum(counts):
        raise SystemExit("reader saw {0} records, expected {1}".format(seen, reps * sum(counts)))
    print(json.dumps({"records": seen, "allocations": after - before if counter else None}))


def _child_cmd(reader, payload_path, reps):
    return [sys.executable, "-m", "benchmarks.cost.per_record_cost", "--child", reader, payload_path, str(reps)]


def payload_file(shape, codec, folder):
    sys.path.insert(0, ROOT)
    from benchmarks import readers as B

    path = os.path.join(folder, "{0}-{1}.pickle".format(shape, codec))
    with open(path, "wb") as f:
        pickle.dump(B.payload(shape, codec), f)
    return path


def _env(**extra):
    env = dict(os.environ)
    # the same string hashes in both children, so their dict work matches and the difference is the decoding
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def instructions(reader, payload_path, reps):
    """(instructions of a child decoding `reps` times, records it decoded), or (None, why not)."""
    cmd = _child_cmd(reader, payload_path, reps)
    perf = shutil.which("perf")
    if perf is not None:
        with tempfile.NamedTemporaryFile(suffix=".csv") as out:
            proc = subprocess.run([perf, "stat", "-x,", "-o", out.name, "-e", "instructions:u", "--"] + cmd,
                                  cwd=ROOT, env=_env(), capture_output=True, text=True)
            counted = None
            for line in open(out.name):
                fields = line.strip().split(",")
                if proc.returncode == 0 and len(fields) > 2 and fields[2].startswith("instructions") \
                        and fields[0].strip().isdigit():
                    counted = int(fields[0])
            if counted is not None:
                return counted, json.loads(proc.stdout.strip().splitlines()[-1])["records"]
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None, "neither perf with hardware counters nor valgrind is available"
    proc = subprocess.run([valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
                          + cmd, cwd=ROOT, env=_env(), capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or not found:
        return None, "valgrind failed: " + proc.stderr.strip()[-300:]
    return int(found.group(1).replace(",", "")), json.loads(proc.stdout.strip().splitlines()[-1])["records"]


def allocations(reader, payload_path, reps):
    env = _env(LD_PRELOAD=shim_path(), PYTHONMALLOC="malloc", ARROW_DEFAULT_MEMORY_POOL="system")
    proc = subprocess.run(_child_cmd(reader, payload_path, reps), cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["allocations"] / result["records"]


def measure(reader, shape, codec, payload_path, reps):
    row = {"reader": reader, "shape": shape, "codec": codec}
    full, records = instructions(reader, payload_path, reps)
    base, why = instructions(reader, payload_path, 0)
    if full is None or base is None:
        row["instructions_per_record"] = None
        row["note"] = records if full is None else why
    else:
        row["instructions_per_record"] = (full - base) / records
    row["allocations_per_record"] = allocations(reader, payload_path, reps)
    return row


def markdown(rows):
    lines = ["Per-record cost of decoding (benchmarks/readers.py payloads, 1 MiB fetch pieces; "
             "instructions: perf stat instructions:u or valgrind cachegrind, baseline child subtracted; allocations: "
             "malloc/calloc/realloc calls with PYTHONMALLOC=malloc).", "",
             "| payload | codec | reader | instructions/record | allocations/record |",
             "|---|---|---|---|---|"]
    for r in rows:
        ipr = r["instructions_per_record"]
        lines.append("| {0} | {1} | {2} | {3} | {4:.2f} |".format(
            r["shape"], r["codec"], r["reader"], "—" if ipr is None else "{0:.0f}".format(ipr),
            r["allocations_per_record"]))
    notes = sorted({r["note"] for r in rows if r.get("note")})
    lines += ["", *("- " + n for n in notes)] if notes else []
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[2], int(argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="100B")
    parser.add_argument("--codecs", default="none,lz4")
    parser.add_argument("--readers", default=",".join(DEFAULT_READERS))
    parser.add_argument("--reps", type=int, default=3, help="decodes of the payload per measuring child")
    parser.add_argument("--json", default=os.path.join(RESULTS, "cost.json"))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape in args.shapes.split(","):
            for codec in args.codecs.split(","):
                path = payload_file(shape, codec, folder)
                for reader in args.readers.split(","):
                    rows.append(measure(reader, shape, codec, path, args.reps))
                    print("  {0} {1} {2}: {3}".format(shape, codec, reader, rows[-1]), file=sys.stderr)
    table = markdown(rows)
    print(table)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows, "table_markdown": table}, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.splitext(args.json)[0] + ".md", "w") as f:
        f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
