"""The decompressed bytes one take decodes (fastkc/config.py, the decoding
budget; fastkc.fetch.completed.TakeBudget): a poll(), getmany() or
poll_arrow() that has handed out records starts no further decode step once
the steps it handed out decompressed the per-step budget, whatever number of
compressed batches the fetch holds; the rest stays buffered and the next take
resumes there.

The streams' `decompressed_bytes` (what a take is charged) is tested with
the streams (tests/unit/test_record_stream.py); here, the record buffer's
takes over fetches of many batches of every codec,
with a budget of a few hundred bytes (decode_budget patched): every record
handed out once, in order, positions never past what was handed out, each
take's records from a bounded number of decompressed bytes, C and twin
taking the same records take by take, and an unbounded budget giving the
takes max_records alone gives (the normal path is untouched)."""
import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastkc.config import decode_budget
from fastkc.decode_executor import ThreadDecodeExecutor
from fastkc.fetch import buffer as buffer_module
from tests.support import batchgen as g
from tests.support import property_settings, using_backend
from tests.support.scripted_fetch import TP0
from tests.support.scripted_fetch import answer_fetch as _answer_fetch
from tests.support.scripted_fetch import positioned as _positioned

CODECS = [g.NONE, g.GZIP, g.SNAPPY, g.LZ4, g.ZSTD]
UNBOUNDED = 1 << 62


# --- the record buffer's takes ----------------------------------------------------------------------
def _payload(values):
    """The bytes batchgen compresses for a batch of `values` (its records, encoded)."""
    return b"".join(g.encode_record(r) for r in g.records_from_values(values))


@contextlib.contextmanager
def take_budget(held):
    """The consumer's decoding budget with `held` decompressed bytes per step
    and per take (the per-batch cap stays the default's): patched where the
    record buffer reads it, for fetchers made inside the block."""
    real = buffer_module.decode_budget

    def patched(config):
        per_batch, records, _held = real(config)
        return per_batch, records, held

    buffer_module.decode_budget = patched
    try:
        yield
    finally:
        buffer_module.decode_budget = real


def _fetch_of(batches):
    """A fetch's blob and its records' offsets and values, from [(codec, values)]."""
    parts, offsets, values, payloads, offset = [], [], [], [], 0
    for codec, vals in batches:
        parts.append(g.record_batch(g.records_from_values(vals), base_offset=offset, codec=codec))
        offsets.extend(range(offset, offset + len(vals)))
        values.extend(vals)
        payloads.append((range(offset, offset + len(vals)), 0 if codec == g.NONE else len(_payload(vals))))
        offset += len(vals)
    return b"".join(parts), offsets, values, payloads


def takes(module, blob, budget, max_records, arrow, decode_threads=0, prepared_only=False, zero_copy=False):
    """Every take of one fetch of `blob` under `budget`: [(offsets, values,
    position after)]. prepared_only: the asyncio consumer's takes (a heavy
    fetch's steps prepared by jobs, run here between takes); zero_copy: the
    Arrow takes' builders view the decompressed buffers (arrow_zero_copy)."""
    with using_backend(module), take_budget(budget):
        client, fetcher = _positioned({0: 0}, decode_threads=decode_threads, arrow_zero_copy=zero_copy)
        machine = fetcher.machine
        try:
            fetcher.send_requests()
            _answer_fetch(client, client.take("Fetch"), {0: {"records": blob}})
            log = []
            for _ in range(10_000):
                executor = fetcher.decode_executor
                if isinstance(executor, ThreadDecodeExecutor):
                    assert executor.wait_idle(10)
                if arrow:
                    batches = (machine.fetched_arrow(max_records, None, True, now=client.now) if prepared_only
                               else fetcher.fetched_arrow(max_records))
                    offsets = batches[0].column("offset").to_pylist() if batches else []
                    values = batches[0].column("value").to_pylist() if batches else []
                else:
                    out = (machine.fetched_records(max_records, prepared_only=True, now=client.now) if prepared_only
                           else fetcher.fetched_records(max_records))
                    offsets = [r.offset for r in out.get(TP0, [])]
                    values = [r.value for r in out.get(TP0, [])]
                if offsets:
                    log.append((offsets, values, fetcher.state(TP0).position))
                if prepared_only and machine.unprepared is not None:
                    machine.prepare_job(machine.unprepared, max_records, arrow).run()
                elif not offsets:
                    break
            else:
                raise AssertionError("the takes never ended")
            assert fetcher.buffered_bytes() == 0
            return log
        finally:
            assert fetcher.close_worker(10)


def touched_bytes(offsets, payloads):
    """The decompressed bytes of the compressed batches a take's records come from."""
    return sum(size for span, size in payloads if any(o in span for o in offsets))


def check_takes(log, offsets, values, payloads, budget, max_records, allowance):
    handed = [o for got, _, _ in log for o in got]
    assert handed == offsets  # each record once, in order
    assert [v for _, got, _ in log for v in got] == values
    for got, _, position in log:
        assert got and len(got) <= max_records
        assert position == got[-1] + 1  # never past what was handed out
    biggest = max(size for _, size in payloads)
    for got, _, _ in log:
        # a take runs its steps while it was charged less than the budget;
        # its last step opens batches while it holds less; plus the rest of
        # a batch an earlier take opened (and, decoding ahead, a prepared step)
        assert touched_bytes(got, payloads) <= allowance * (budget + biggest)


@property_settings(fast_examples=25, slow_examples=500)
@given(data=st.data())
def test_takes_hand_out_everything_in_order_within_the_budget_c_and_twin_alike(both, data):
    compiled, twin = both
    batches = [(data.draw(st.sampled_from(CODECS)),
                [bytes([65 + i % 26]) * data.draw(st.integers(0, 120)) for i in range(data.draw(st.integers(1, 6)))])
               for _ in range(data.draw(st.integers(1, 10)))]
    blob, offsets, values, payloads = _fetch_of(batches)
    budget = data.draw(st.sampled_from([1, 150, 600]))
    max_records = data.draw(st.sampled_from([1, 4, 500]))
    arrow = data.draw(st.booleans())
    log = takes(compiled, blob, budget, max_records, arrow)
    assert takes(twin, blob, budget, max_records, arrow) == log
    check_takes(log, offsets, values, payloads, budget, max_records, allowance=2)
    # the normal path: an unbounded budget leaves the takes to max_records alone
    free = takes(compiled, blob, UNBOUNDED, max_records, arrow)
    assert [len(got) for got, _, _ in free] == [min(max_records, len(offsets) - i)
                                                for i in range(0, len(offsets), max_records)]


@pytest.mark.parametrize("arrow, zero_copy", [(False, False), (True, False), (True, True)],
                         ids=["records", "arrow", "zero-copy arrow"])
def test_a_fetch_of_many_compressed_batches_takes_several_polls(backend, arrow, zero_copy):
    # 40 zstd batches of 3 x 100 bytes (~310 decompressed each) under a
    # budget of 600: two batches a take, not the whole fetch at once (also
    # when zero-copy columns keep the decompressed buffers they view)
    batches = [(g.ZSTD, [b"%04d" % (3 * i + j) + b"z" * 96 for j in range(3)]) for i in range(40)]
    blob, offsets, values, payloads = _fetch_of(batches)
    log = takes(backend, blob, 600, 500, arrow, zero_copy=zero_copy)
    assert [len(got) for got, _, _ in log] == [6] * 20
    check_takes(log, offsets, values, payloads, 600, 500, allowance=2)
    # the same fetch under the default budget: one take
    default = decode_budget({"max_partition_fetch_bytes": 1 << 20})[2]
    assert [len(got) for got, _, _ in takes(backend, blob, default, 500, arrow, zero_copy=zero_copy)] == [120]


@pytest.mark.parametrize("how", ["decode thread", "prepared_only records", "prepared_only arrow"])
def test_takes_of_steps_prepared_off_the_callers_thread_keep_the_budget(compiled_backend, how):
    # decode_threads=1 (the sync consumer's decode-ahead) and prepared_only
    # takes (the asyncio consumer's): steps are prepared off the caller's
    # thread and charged to the take that hands them out
    batches = [(codec, [b"%04d" % i + b"p" * 90 for i in range(4 * n, 4 * n + 4)])
               for n, codec in enumerate([g.ZSTD, g.LZ4, g.GZIP, g.SNAPPY] * 6)]
    blob, offsets, values, payloads = _fetch_of(batches)
    for max_records in (3, 500):
        log = takes(compiled_backend, blob, 500, max_records, how.endswith("arrow"),
                    decode_threads=1 if how == "decode thread" else 0, prepared_only=how.startswith("prepared"))
        check_takes(log, offsets, values, payloads, 500, max_records, allowance=3)
        if max_records == 500:
            assert len(log) > 1
