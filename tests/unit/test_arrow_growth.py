"""The Arrow columns grow with what each record writes (csrc/fkc_arrow_builder.h,
fkc_builder_append / fkc_builder_grow_for): records whose keys, values and
headers outgrow every column in the middle of a batch, through the one-shot
decode_arrow (its first reservation from the input size) and through a
stream's steps into one shared builder (no first reservation), copied and
zero-copy, agree row for row with decode()'s records. Run under ASan by
`make asan ASAN_TESTS=tests/unit/test_arrow_growth.py`."""

import random

import pytest

from fastkc import records as R
from tests.support import batchgen as bg

pa = pytest.importorskip("pyarrow")


def _growing_blob(seed):
    """Batches whose records grow from empty to ~40 KiB values, with null and
    long keys, null header values and header lists that grow too."""
    rng = random.Random(seed)
    blob, offset = b"", 0
    for size in (1, 7, 60, 400, 3000):
        recs = []
        for i in range(size):
            n = offset + i
            stem = bytes(rng.randrange(256) for _ in range(min(n * 3, 40_000) % 997))
            value = None if rng.random() < 0.05 else stem * (1 + n // 300)
            key = None if rng.random() < 0.1 else b"k" * rng.randrange(0, 40)
            headers = [("h%d" % j, None if rng.random() < 0.2 else b"x" * rng.randrange(0, 50))
                       for j in range(rng.randrange(0, 4))]
            recs.append(bg.Record(key=key, value=value, headers=headers, offset_delta=i, timestamp_delta=i))
        blob += bg.record_batch(recs, base_offset=offset)
        offset += size
    return blob


def _rows(blob):
    return [(r.offset, r.key, r.value, [(k, v) for k, v in r.headers]) for r in R.decode(blob, topic="t", partition=0)]


def _arrow_rows(rb):
    rb.validate(full=True)
    headers = [[(h["key"], h["value"]) for h in hs] if hs is not None else []
               for hs in rb.column("headers").to_pylist()]
    return list(zip(rb.column("offset").to_pylist(), rb.column("key").to_pylist(), rb.column("value").to_pylist(),
                    headers))


@pytest.mark.parametrize("zero_copy", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_decode_arrow_grows_in_the_middle_of_batches(seed, zero_copy):
    blob = _growing_blob(seed)
    expected = _rows(blob)
    assert len(expected) == 3468
    rb = R.decode_arrow(blob, topic="t", partition=0, zero_copy=zero_copy)
    assert _arrow_rows(rb) == expected


@pytest.mark.parametrize("zero_copy", [False, True])
def test_stream_steps_grow_one_shared_builder(zero_copy):
    blob = _growing_blob(3)
    expected = _rows(blob)
    builder = R.arrow_builder(zero_copy=zero_copy)
    stream = R.record_stream(blob, topic="t", partition=0, arrow=True)
    added = 0
    # steps that cut batches (descriptors) and steps that take them whole (one pass)
    for step in (1, 5, 50, 2000, 10_000):
        added += stream.arrow(step, None, None, builder)
    assert added == len(expected)
    assert _arrow_rows(builder.finish()) == expected
