"""Run every decode reader in one process and print a Markdown table:
records/s per reader and the ratios that matter (fastkc C → records against
kafka-python's and aiokafka's consumer paths; fastkc C → Arrow against the
floor). Also writes benchmarks/results/decode.json and, beside it, the table
as decode.md.

  python benchmarks/decode_table.py [--rounds 3] [--shapes 100B,1KiB] [--codecs none,lz4]
  FASTKC_BENCH_QUICK=1 python benchmarks/decode_table.py     # tiny payload, one round

Payload and reader details: benchmarks/readers.py. The rounds interleave:
each round runs every reader once, in an order that rotates from round to
round, so a change in the machine's load falls on all readers alike rather
than on whichever ran during it. Times are the median of the rounds (the
twin runs one round: it is the oracle, not a contender); the Arrow ÷ floor
ratio is the median of the per-round ratios, with their range.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import readers as B  # noqa: E402

C_RECORDS = "fastkc C → records"
C_ARROW = "fastkc C → Arrow"
C_ARROW_ZC = "fastkc C → Arrow zero-copy"
TWIN = "fastkc twin → records"
KAFKA_PYTHON = "kafka-python consumer path"
AIOKAFKA = "aiokafka consumer path"
FLOOR = "floor (CRC32C + memcpy)"


def time_once(reader, pieces, expected, expected_bytes):
    """Seconds of one read, which must see every record and touch every key
    and value byte (the floor touches none: None)."""
    gc.collect()
    start = time.perf_counter()
    seen, touched = reader(pieces)
    seconds = time.perf_counter() - start
    if seen != expected:
        raise AssertionError("reader saw {0} records, the payload holds {1}".format(seen, expected))
    if touched is not None and touched != expected_bytes:
        raise AssertionError("reader touched {0} key + value bytes, the payload holds {1}".format(
            touched, expected_bytes))
    return seconds


def time_interleaved(readers, pieces, expected, expected_bytes, rounds, first):
    """{name: [seconds per round]}: every reader once per round, the order
    rotating by one each round (starting at `first`); the twin only in the
    first round."""
    for reader in readers.values():
        reader(pieces[:1])  # warm-up, untimed: first-call imports and caches
    names = list(readers)
    times = {name: [] for name in names}
    for r in range(rounds):
        shift = (first + r) % len(names)
        for name in names[shift:] + names[:shift]:
            if name == TWIN and times[name]:
                continue
            times[name].append(time_once(readers[name], pieces, expected, expected_bytes))
    return times


def _kafka_python_crc32c():
    from kafka.record import util

    fn = util._crc32c
    return "{0}.{1}".format(getattr(fn, "__module__", "?"), getattr(fn, "__name__", "?"))


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt_rate(rate):
    return "—" if rate is None else "{0:.2f}".format(rate / 1e6)


def fmt_ratio(r, suffix="×"):
    return "—" if r is None else "{0:.1f}{1}".format(r, suffix)


def fmt_range(bounds):
    return "" if not bounds else " ({0:.1f}–{1:.1f})".format(*bounds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1 if B.QUICK else 3)
    parser.add_argument("--shapes", default=",".join(B.SHAPES))
    parser.add_argument("--codecs", default=",".join(B.CODECS))
    parser.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "decode.json"))
    args = parser.parse_args(argv)

    crc_name = B.crc32c_for_floor()[1]
    compiled = B.compiled_module()
    rows = []
    for shape in args.shapes.split(","):
        for codec in args.codecs.split(","):
            pieces, counts = B.payload(shape, codec)
            total = sum(counts)
            readers = B.readers(counts)
            times = time_interleaved(readers, pieces, total, B.payload_bytes(shape, total), args.rounds,
                                     first=len(rows))
            rates = {name: total / statistics.median(seconds) for name, seconds in times.items()}
            for name in readers:
                print("  {0:8s} {1:5s} {2:28s} {3:8.3f} M records/s".format(
                    shape, codec, name, rates[name] / 1e6), file=sys.stderr)
            # each round's Arrow time over the same round's floor time
            round_ratios = sorted(a / f for a, f in zip(times.get(C_ARROW, []), times.get(FLOOR, [])))
            rows.append({
                "shape": shape,
                "codec": codec,
                "records": total,
                "bytes": sum(len(p) for p in pieces),
                "fetch_pieces": len(pieces),
                "records_per_second": rates,
                "c_records_vs_kafka_python": ratio(rates.get(C_RECORDS), rates.get(KAFKA_PYTHON)),
                "c_records_vs_aiokafka": ratio(rates.get(C_RECORDS), rates.get(AIOKAFKA)),
                # "within 2× of the floor" means this time ratio is ≤ 2: the
                # median of the rounds' ratios, and their range
                "arrow_time_vs_floor": statistics.median(round_ratios) if round_ratios else None,
                "arrow_time_vs_floor_range": [round_ratios[0], round_ratios[-1]] if round_ratios else None,
            })
            del pieces

    columns = [C_RECORDS, C_ARROW, C_ARROW_ZC, TWIN, KAFKA_PYTHON, AIOKAFKA, FLOOR]
    lines = [
        "| payload | codec | " + " | ".join(columns)
        + " | C records ÷ kafka-python | C records ÷ aiokafka | Arrow time ÷ floor time |",
        "|---|---|" + "---|" * (len(columns) + 3),
    ]
    for row in rows:
        r = row["records_per_second"]
        lines.append("| {0} | {1} | {2} | {3} | {4} | {5} |".format(
            row["shape"], row["codec"],
            " | ".join(fmt_rate(r.get(c)) for c in columns),
            fmt_ratio(row["c_records_vs_kafka_python"]),
            fmt_ratio(row["c_records_vs_aiokafka"]),
            fmt_ratio(row["arrow_time_vs_floor"]) + fmt_range(row["arrow_time_vs_floor_range"]),
        ))
    header = (
        "Decode throughput, million records/s (median of {0} interleaved rounds; twin 1 round; "
        "Arrow ÷ floor: median of the rounds' ratios and their range). "
        "{1} records per payload{2}. Floor CRC-32C: {3}.{4}".format(
            args.rounds,
            rows[0]["records"] if rows else 0,
            " (QUICK mode)" if B.QUICK else "",
            crc_name,
            "" if compiled is not None else " The compiled core is not built: its columns are empty.",
        )
    )
    print(header)
    print()
    print("\n".join(lines))
    markdown_path = os.path.splitext(args.json)[0] + ".md"

    result = {
        "quick": B.QUICK,
        "rounds": args.rounds,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "processor": platform.processor() or platform.platform(),
        "cpu_count": os.cpu_count(),
        "floor_crc32c": crc_name,
        # kafka-python checks CRC-32C with the crc32c package when installed
        "kafka_python_crc32c": _kafka_python_crc32c(),
        "crc32c_implementation": getattr(compiled, "crc32c_implementation", lambda: None)() if compiled else None,
        "rows": rows,
    }
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump(result, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    with open(markdown_path, "w") as fh:
        fh.write(header + "\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
