"""Decode throughput of fastkc (compiled core → records and → Arrow, and the
pure-Python twin) against kafka-python's and aiokafka's consumer paths and the
floor (one CRC-32C pass + one memcpy). See benchmarks/readers.py for the
payload and how each reader is driven.

  pytest benchmarks/ --benchmark-only            # the suite
  FASTKC_BENCH_QUICK=1 pytest benchmarks/ -q     # CI: tiny payload, one round
  python benchmarks/decode_table.py              # the ratio table + JSON

Each run asserts the reader saw every record of the payload and touched
every key and value byte, so a benchmark cannot pass while decoding (or
handing over) nothing; it never asserts a speed.
"""
import pytest

from benchmarks import readers as B

READER_NAMES = [
    "fastkc C → records",
    "fastkc C → Arrow",
    "fastkc C → Arrow zero-copy",
    "fastkc twin → records",
    "kafka-python consumer path",
    "aiokafka consumer path",
    "floor (CRC32C + memcpy)",
]


@pytest.mark.parametrize("codec", list(B.CODECS))
@pytest.mark.parametrize("shape", list(B.SHAPES))
@pytest.mark.parametrize("reader_name", READER_NAMES)
def test_decode(benchmark, payloads, shape, codec, reader_name):
    pieces, counts = payloads(shape, codec)
    available = B.readers(counts)
    if reader_name not in available:
        pytest.skip("the compiled core is not built (python setup.py build_ext --inplace)")
    reader = available[reader_name]
    benchmark.group = "{0} {1}".format(shape, codec)
    benchmark.extra_info["records"] = sum(counts)
    benchmark.extra_info["bytes"] = sum(len(p) for p in pieces)
    rounds = 1 if B.QUICK else 3
    seen, touched = benchmark.pedantic(reader, args=(pieces,), rounds=rounds, iterations=1, warmup_rounds=0)
    assert seen == sum(counts)
    if reader_name.startswith("floor"):
        assert touched is None  # it decodes no record
    else:
        assert touched == B.payload_bytes(shape, sum(counts))
