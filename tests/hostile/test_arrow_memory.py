"""Huge values on the Arrow path under an address-space limit (RLIMIT_AS, as a
container sets it): the columns grow with what is decoded, never with what a
batch claims, and a batch whose records really do not fit is a typed
ArrowMemoryError naming topic, partition and the batch's offset -- never a bare
MemoryError, never a crash -- after which the consumer goes on past it.

Each scenario runs in a child process: the limit is set there, after the
input is built, as the address space in use plus a headroom, so the figures do
not depend on what the interpreter and pyarrow map at start-up. The headrooms
sit between what the growing columns need and what the former reservations
(every byte column sized by the batch's payload, and rows, headers and
one-shot hints sized from the claims and the input) asked for:

  - decode_arrow, one uncompressed batch of 3 x 48 MiB values (~144 MiB):
    1.25 GiB of headroom is enough now (the columns' peak is ~0.7 GiB, old
    arena and new while growing), the former reservation wanted ~2.9 GiB;
  - the same batch under 300 MiB of headroom: ArrowMemoryError with the
    records of the small batch before it;
  - a batch claiming RecordCount = payload / 7 (14 M, within the record
    budget of decode_arrow's max_decompressed_bytes=1 GiB) with two huge records: the
    usual InvalidRecordError (the payload ends early), with no memory error
    on the way (the former reservation sized rows by the claim);
  - a consumer's poll_arrow() against the fake broker serving a zstd batch
    of 2 x 96 MiB zero values (a small fetch, ~192 MiB decompressed): under
    a headroom that holds the decompressed payload but not its columns,
    ArrowMemoryError at the batch, the position left there, and seek() past
    it delivers the next batch.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20

pytest.importorskip("pyarrow")

_COMMON = r"""
import json, resource, sys
sys.path.insert(0, {root!r})
import pyarrow  # noqa: F401  (with what it maps at import, before the limit)
from fastkc import errors, records
from tests.support import batchgen as bg

MIB = 1 << 20
records.decode_arrow(bg.record_batch(bg.records_from_values([b"warm"])), topic="t", partition=0)

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

def limit_to(headroom):
    limit = status("VmSize") + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from the current RSS on
    return limit, status("VmRSS")

def outcome(call):
    try:
        value = call()
        return {{"ok": True, "value": value}}
    except errors.CorruptRecordError as exc:
        return {{"ok": False, "cls": type(exc).__name__, "topic": exc.topic, "partition": exc.partition,
                "offset": exc.offset, "next_offset": exc.next_offset, "memory": isinstance(exc, MemoryError),
                "rows": len(exc.records), "reason": exc.reason}}
    except MemoryError as exc:
        return {{"ok": False, "cls": "bare MemoryError", "reason": str(exc)}}
"""

_DECODE_ARROW = _COMMON + r"""
VALUE = 48 * MIB
BUDGET = 1 << 30  # RecordCount's budget: 16 M records (the batches are uncompressed)
value = b"v" * VALUE
payload = None
small = bg.record_batch(bg.records_from_values([b"a", b"b"]), base_offset=0)
huge = bg.record_batch(bg.records_from_values([value] * 3), base_offset=2)
if {case!r} == "claim":
    # RecordCount as large as the payload could hold (>= 7 bytes a record)
    # and the record budget allows, LastOffsetDelta to match; two records follow
    payload = b"".join(bg.encode_record(r) for r in bg.records_from_values([value] * 2))
    claim = min(len(payload) // 7, records.batch_record_budget(BUDGET))
    huge = bg.record_batch([], base_offset=2, raw_records=payload, count=claim, last_offset_delta=claim)
blob = small + huge
value = payload = None  # the batch holds the only copy
limit, rss = limit_to({headroom})
result = outcome(lambda: records.decode_arrow(blob, topic="t", partition=3, fetch_offset=0,
                                              max_decompressed_bytes=BUDGET).num_rows)
result.update(growth=status("VmHWM") - rss, limit=limit, blob=len(blob))
print(json.dumps(result))
"""

_CONSUMER = r"""
import os
from fastkc import KafkaConsumer
from fastkc.structs import TopicPartition
from tests.support.fake_broker import FakeBroker, serve_log

VALUE = 96 * MIB
TP = TopicPartition("t", 0)
batches = [
    (0, bg.record_batch(bg.records_from_values([b"before"]), base_offset=0)),
    (1, bg.record_batch(bg.records_from_values([bytes(VALUE)] * 2), base_offset=1, codec=bg.ZSTD)),
    (3, bg.record_batch(bg.records_from_values([b"after"]), base_offset=3)),
]
report = {{"fetch_bytes": sum(len(b) for _, b in batches)}}
with FakeBroker(topics={{"t": 1}}, records=4) as broker:
    broker.script("Fetch", serve_log(batches))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=5000,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             max_partition_fetch_bytes=8 * MIB)  # a 256 MiB decompression budget
    consumer.assign([TP])
    first = consumer.poll_arrow(timeout_ms=5000, max_records=1)  # the fetch is in, the huge batch not decoded
    report["first"] = first.column("offset").to_pylist()
    del first
    report["limit"], rss = limit_to({headroom})
    polls = []
    for _ in range(20):
        got = outcome(lambda: consumer.poll_arrow(timeout_ms=500).column("offset").to_pylist())
        polls.append(got)
        if not got["ok"] or got["value"]:
            break
    report["huge"] = polls[-1]
    report["growth"] = status("VmHWM") - rss
    report["position"] = consumer.position(TP)
    consumer.seek(TP, 3)
    report["after"] = consumer.poll_arrow(timeout_ms=5000).column("offset").to_pylist()
    consumer.close()
    report["kit_errors"] = [repr(e) for e in broker.errors]
print(json.dumps(report))
"""


def _run(code):
    # One malloc arena: every thread's own 64 MiB heap reservation would
    # count against the limit, by how many threads happened to allocate (and
    # OpenBLAS, if numpy comes in, reserves buffers per thread).
    env = dict(os.environ, MALLOC_ARENA_MAX="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _decode_arrow(case, headroom):
    return _run(_DECODE_ARROW.format(root=ROOT, case=case, headroom=headroom))


def test_huge_values_decode_when_their_columns_fit():
    result = _decode_arrow("fits", 1280 * MIB)
    assert result["ok"], result
    assert result["value"] == 5
    # the input is mapped already; the columns' touched pages (one copy of the
    # values, twice while the arena moves) stay within a small multiple of it
    assert result["growth"] < 3 * result["blob"], result


def test_huge_values_that_do_not_fit_are_a_typed_error_at_their_batch():
    result = _decode_arrow("tight", 300 * MIB)
    assert not result["ok"]
    assert result["cls"] == "ArrowMemoryError", result
    assert (result["topic"], result["partition"], result["offset"]) == ("t", 3, 2)
    assert result["memory"]  # still a MemoryError for code that catches that
    assert result["rows"] == 2  # the small batch before it
    assert result["growth"] < 300 * MIB


def test_a_claimed_record_count_reserves_nothing():
    result = _decode_arrow("claim", 400 * MIB)
    assert not result["ok"]
    assert (result["cls"], result["offset"], result["rows"]) == ("InvalidRecordError", 2, 2), result
    assert "payload ends after 2 of" in result["reason"]
    assert result["growth"] < 300 * MIB


def test_poll_arrow_raises_the_typed_error_and_seek_goes_past_it():
    # headroom for the decompressed payload (192 MiB) and little more: the
    # columns of two 96 MiB values cannot be had
    result = _run(_COMMON.format(root=ROOT) + _CONSUMER.format(headroom=280 * MIB))
    assert result["fetch_bytes"] < 2 * MIB
    assert result["first"] == [0]
    huge = result["huge"]
    assert not huge["ok"]
    assert huge["cls"] == "ArrowMemoryError", huge
    assert (huge["topic"], huge["partition"], huge["offset"]) == ("t", 0, 1)
    assert result["position"] == 1  # left at the batch
    assert result["after"] == [3]
    assert result["growth"] < 500 * MIB
    assert result["kit_errors"] == []
