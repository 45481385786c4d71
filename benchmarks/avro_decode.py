"""Avro payloads to Python values: fastavro's schemaless_reader once per
payload (what confluent-kafka's AvroDeserializer does per message) against
fastkc's AvroDecoder.decode_many (one C call for the list), and the same
payloads as a pyarrow binary column into typed Arrow columns
(decode_arrow_column, what poll_arrow() does with an AvroDeserializer).
A realistic ~15-field event schema (strings, longs, a nested record, a nullable union,
an array, a map, a timestamp-millis, a decimal, an enum), payloads written
by fastavro. Rounds interleaved, medians printed; a figure for the report,
asserted nowhere (the values are checked equal once).

    python3 benchmarks/avro_decode.py [--payloads N] [--rounds R]
    FASTKC_BENCH_QUICK=1 python3 benchmarks/avro_decode.py   # CI: 2000 payloads, one round
"""
import argparse
import datetime
import decimal
import io
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # this checkout's fastkc, not an installed one

QUICK = os.environ.get("FASTKC_BENCH_QUICK", "") not in ("", "0")

EVENT = {
    "type": "record", "name": "PageEvent", "namespace": "bench",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user_id", "type": "long"},
        {"name": "session_id", "type": "string"},
        {"name": "sequence", "type": "long"},
        {"name": "url", "type": "string"},
        {"name": "referrer", "type": ["null", "string"]},
        {"name": "country", "type": "string"},
        {"name": "duration_ms", "type": "int"},
        {"name": "is_bot", "type": "boolean"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "CLICK", "BUY"]}},
        {"name": "device", "type": {"type": "record", "name": "Device", "fields": [
            {"name": "os", "type": "string"}, {"name": "version", "type": "string"},
            {"name": "screen_w", "type": "int"}, {"name": "screen_h", "type": "int"}]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "props", "type": {"type": "map", "values": "string"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    ],
}


def event_value(i):
    """The i-th event (a dict of EVENT's shape, fastavro's types)."""
    base = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    return {
        "event_id": f"evt-{i:012d}", "user_id": 10_000_000 + i * 7, "session_id": f"s-{i % 5000:08x}",
        "sequence": i, "url": f"https://example.com/p/{i % 977}?ref=bench",
        "referrer": None if i % 3 else "https://search.example.org/", "country": ("FR", "US", "DE", "JP")[i % 4],
        "duration_ms": 100 + i % 9000, "is_bot": i % 50 == 0, "kind": ("VIEW", "CLICK", "BUY")[i % 3],
        "device": {"os": "android" if i % 2 else "ios", "version": f"{14 + i % 3}.{i % 10}", "screen_w": 1080,
                   "screen_h": 2400},
        "tags": ["a", "promo"][: i % 3], "props": {"ab": "b" if i % 2 else "a"},
        "ts": base + datetime.timedelta(milliseconds=i * 13), "amount": decimal.Decimal(i % 100_000).scaleb(-2),
    }


def make_payloads(n):
    import fastavro

    parsed = fastavro.parse_schema(EVENT)
    out = []
    for i in range(n):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, event_value(i))
        out.append(buf.getvalue())
    return out


def fastavro_per_value(payloads):
    import fastavro

    parsed = fastavro.parse_schema(EVENT)
    read = fastavro.schemaless_reader
    return [read(io.BytesIO(p), parsed) for p in payloads]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payloads", type=int, default=2000 if QUICK else 200_000)
    parser.add_argument("--rounds", type=int, default=1 if QUICK else 3)
    args = parser.parse_args(argv)

    import pyarrow as pa

    from fastkc.schema_registry.avro import AvroDecoder

    payloads = make_payloads(args.payloads)
    column = pa.array(payloads, pa.binary())  # what poll_arrow() hands a deserializer: the column, built untimed
    decoder = AvroDecoder(json.dumps(EVENT))
    expected = fastavro_per_value(payloads[:200])
    if decoder.decode_many(payloads[:200]) != expected:
        sys.exit("avro_decode: fastkc and fastavro disagree")
    # the Arrow rows as fastavro's values: a map column reads back as (key, value) pairs
    if [dict(row, props=dict(row["props"])) for row in decoder.decode_arrow_column(column[:200]).to_pylist()] \
            != expected:
        sys.exit("avro_decode: fastkc's Arrow columns and fastavro disagree")
    methods = {
        "fastavro schemaless_reader per value": lambda: fastavro_per_value(payloads),
        "fastkc AvroDecoder.decode_many (C)": lambda: decoder.decode_many(payloads),
        "fastkc AvroDecoder.decode_arrow_column": lambda: decoder.decode_arrow_column(column),
    }
    times = {name: [] for name in methods}
    for _ in range(args.rounds):
        for name, fn in methods.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    size = sum(map(len, payloads))
    print_medians(f"{args.payloads} payloads ({size / len(payloads):.0f} B each), {args.rounds} round(s)", times,
                  "fastavro schemaless_reader per value", args.payloads, "values")


def print_medians(title, times, base, count, unit):
    """`title` with the load average, then each way's median rate and its
    ratio to `base`'s."""
    print(f"{title}, load {os.getloadavg()[0]:.2f}{' (QUICK)' if QUICK else ''}")
    base_time = statistics.median(times[base])
    for name, samples in times.items():
        t = statistics.median(samples)
        print(f"  {name:40s} {count / t / 1e6:6.3f} M {unit}/s   x{base_time / t:5.1f}")


if __name__ == "__main__":
    main()
