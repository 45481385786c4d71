#!/usr/bin/env bash
# README's test command: set up everything on a fresh machine, then run every
# check CI runs. The pytest session starts and stops its own Kafka broker.
#   FUZZ_SECONDS  seconds per fuzz target (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

bash scripts/setup.sh

echo "== C kernel unit tests (ASan + UBSan)"
make -s test-c PYTHON="$PY"

echo "== decoder tests under ASan + UBSan"
make -s asan PYTHON="$PY"

echo "== fuzzing, ${FUZZ_SECONDS:-20}s per target"
make -s fuzz PYTHON="$PY" FUZZ_SECONDS="${FUZZ_SECONDS:-20}"

echo "== benchmarks, quick mode (they must keep running; no speed is asserted)"
FASTKC_BENCH_QUICK=1 $PY -m pytest -q benchmarks/ --benchmark-disable

echo "== the test suite (unit, corpus, integration against a real broker)"
# FASTKC_REQUIRE_C turns a missing compiled core into a failure, not a skip;
# FASTKC_REQUIRE_FAULTS a missing toxiproxy (tests/faults/) likewise, and
# FASTKC_REQUIRE_MSK_REFERENCE AWS's missing reference signer (AWS_MSK_IAM),
# FASTKC_REQUIRE_KERBEROS a missing KDC or gssapi binding (GSSAPI),
# FASTKC_REQUIRE_KCAT a missing kcat (`fastkc consume`'s differential tests).
FASTKC_REQUIRE_C=1 FASTKC_REQUIRE_CONSUMER=1 FASTKC_REQUIRE_FAULTS=1 FASTKC_REQUIRE_MSK_REFERENCE=1 \
    FASTKC_REQUIRE_KERBEROS=1 FASTKC_REQUIRE_KCAT=1 $PY -m pytest -q
