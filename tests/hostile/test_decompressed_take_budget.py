"""A fetch of many compressed batches, each just under the per-batch
decompression cap, under an address-space limit (RLIMIT_AS, as a container
sets it): the consumer hands out every record, in order, once, with its
position never past what it handed out, and its memory stays bounded by the
decoding budget whatever the fetch decompresses to in all -- never a bare
MemoryError.

Before the per-take budget (fastkc/config.py, the decoding budget;
fastkc.fetch.completed.TakeBudget) the bound held per batch only: poll()
took decode steps until it had max_records records, and each step's records
(copies of one batch's 32 MiB value) stayed alive until the poll returned,
so 500 records of such batches asked for ~16 GiB; poll_arrow() without
max_records decoded the whole fetch into one batch's columns. An independent
probe drove poll() to 3.9 GiB and a bare MemoryError under a 4 GiB limit.

The fetch: BATCHES batches (zstd, gzip and lz4; zstd reaches ~32,000:1 on
zeros, gzip ~1,000:1, lz4 ~250:1), each one record whose value is VALUE zero
bytes (64 KiB under the default per-batch cap of 32 MiB), ~3 GiB in all from
a ~3 MB answer, served from the fake broker's log (tests/support/fake_broker.py)
from whatever offset the consumer asks. Each scenario runs in a child process:
the limit is the address space in use once the consumer is set up plus 1 GiB
(threads get one malloc arena, as in tests/hostile/test_arrow_memory.py).

Peak RSS growth, bounded by PEAK_RSS_BOUND = 10 per-batch budgets: a take's
records come from at most ~4 budgets of decompressed data (the rule in
fastkc/config.py) -- in Arrow form the columns grow by doubling, so up to
twice that while they grow -- and the decoder holds at most ~2 more (the
finished batches a step keeps plus the open one; a codec that does not know
the output size grows its buffer by doubling; with decode_threads=1 a step
prepared ahead holds half a budget and its open batch). That is 320 MiB for
the default 32 MiB budget, against ~3 GiB decompressed and 1 GiB of address
space left. Measured (load ~3.5 on 2 cores): poll() ~164 MiB in 12 s, with
the decode thread ~168 MiB in 10 s, poll_arrow() ~236 MiB in 8 s; the code
before the budget: poll() a bare MemoryError at 1 GiB in its first call,
poll_arrow() an ArrowMemoryError after 16 records.
"""
import json
import os
import subprocess
import sys

import pytest

from fastkc.config import decode_budget

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20

BATCH_BUDGET = decode_budget({"max_partition_fetch_bytes": 1 * MIB})[0]  # the default config's: 32 MiB
VALUE = BATCH_BUDGET - 64 * 1024
CODEC_CYCLE = ("zstd", "zstd", "zstd", "zstd", "gzip", "lz4")
BATCHES = 96  # 64 zstd, 16 gzip, 16 lz4: ~3 GiB decompressed
HEADROOM = 1 << 30  # RLIMIT_AS: the address space in use plus this
SLACK = 16 * MIB  # the interpreter, the fake broker's answers, allocator rounding
PEAK_RSS_BOUND = 10 * BATCH_BUDGET + SLACK

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
import lz4.frame, zstandard
from fastkc import KafkaConsumer, errors
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg
from tests.support.fake_broker import FakeBroker, serve_log

MIB = 1 << 20
VALUE, BATCHES, CYCLE, FORM, THREADS = {value}, {batches}, {cycle!r}, {form!r}, {threads}
if FORM == "arrow":
    import pyarrow, pyarrow.compute  # (with what they map at import, before the limit)

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

# One record of VALUE zero bytes, compressed per codec as a producer would
# write it (no content size for gzip and lz4: their output grows as it comes).
record = bg.encode_record(bg.Record(value=bytes(VALUE), offset_delta=0, timestamp_delta=0))
payloads = {{
    "zstd": (bg.ZSTD, zstandard.ZstdCompressor(level=3).compress(record)),
    "gzip": (bg.GZIP, bg.compress(bg.GZIP, record)),
    "lz4": (bg.LZ4, lz4.frame.compress(record)),
}}
del record
batches = [(i, bg.raw_batch(i, *payloads[CYCLE[i % len(CYCLE)]], 1, 0)) for i in range(BATCHES)]
report = {{"fetch_bytes": sum(len(b) for _, b in batches)}}
TP = TopicPartition("t", 0)
with FakeBroker(topics={{"t": 1}}, records=BATCHES) as broker:
    broker.script("Fetch", serve_log(batches))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000,
                             enable_auto_commit=False, auto_offset_reset="earliest", decode_threads=THREADS)
    consumer.assign([TP])
    consumer.seek(TP, 0)
    limit = status("VmSize") + {headroom}
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from the current RSS on
    rss = status("VmRSS")
    report["limit"] = limit
    started = time.monotonic()
    seen, wrong_values, ahead, polls, most = [], 0, 0, 0, 0
    try:
        while len(seen) < BATCHES and polls < 8 * BATCHES:
            polls += 1
            if FORM == "arrow":
                batch = consumer.poll_arrow(timeout_ms=5000)
                offsets = batch.column("offset").to_pylist()
                lengths = pyarrow.compute.binary_length(batch.column("value")).to_pylist()
                zero = all(pyarrow.compute.equal(pyarrow.compute.binary_slice(batch.column("value"), 0, 8),
                                                 bytes(8)).to_pylist()) if offsets else True
                del batch
            else:
                polled = consumer.poll(timeout_ms=5000).get(TP, [])
                offsets = [r.offset for r in polled]
                lengths = [len(r.value) for r in polled]
                zero = all(r.value[:8] == bytes(8) for r in polled)
                del polled
            wrong_values += sum(1 for n in lengths if n != VALUE) + (0 if zero else 1)
            most = max(most, len(offsets))
            seen.extend(offsets)
            if offsets and consumer.position(TP) != offsets[-1] + 1:
                ahead += 1
        report["outcome"] = "ok"
    except errors.KafkaError as exc:
        report["outcome"] = "typed: " + type(exc).__name__ + ": " + str(exc)[:300]
    except MemoryError as exc:
        report["outcome"] = "bare MemoryError: " + str(exc)[:300]
    report.update(secs=time.monotonic() - started, growth=status("VmHWM") - rss, polls=polls,
                  count=len(seen), first=seen[:1], last=seen[-1:], in_order=seen == list(range(len(seen))),
                  wrong_values=wrong_values, positions_ahead=ahead, most_per_poll=most)
    consumer.close()
    report["kit_errors"] = [repr(e) for e in broker.errors]
print(json.dumps(report))
"""


def _run(form, threads):
    code = _CHILD.format(root=ROOT, value=VALUE, batches=BATCHES, cycle=CODEC_CYCLE, form=form, threads=threads,
                         headroom=HEADROOM)
    env = dict(os.environ, MALLOC_ARENA_MAX="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("form,threads", [("records", 0), ("records", 1), ("arrow", 0)],
                         ids=["poll", "poll-decode-thread", "poll_arrow"])
def test_many_batches_under_the_cap_are_all_handed_out_within_the_budget(form, threads):
    if form == "arrow":
        pytest.importorskip("pyarrow")
    # the bounds prove something: the fetch decompresses to far more than
    # the memory allowed, and than the address space left
    total = BATCHES * VALUE
    assert total > 8 * PEAK_RSS_BOUND and total > 2 * HEADROOM
    result = _run(form, threads)
    print(json.dumps(result))  # the figures, for the log (-s)
    assert result["outcome"] == "ok", result
    assert result["fetch_bytes"] * 500 < total  # a bomb: over 500:1 in all
    assert (result["count"], result["first"], result["last"]) == (BATCHES, [0], [BATCHES - 1])
    assert result["in_order"] and result["wrong_values"] == 0
    assert result["positions_ahead"] == 0
    assert result["growth"] < PEAK_RSS_BOUND, result["growth"]
    assert result["kit_errors"] == []
