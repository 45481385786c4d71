#!/usr/bin/env bash
# README's test command: set up everything on a fresh machine, then run every
# check CI runs. The pytest session starts and stops its own Kafka broker.
#   FUZZ_SECONDS  seconds per fuzz target (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# each step says how far into the run it starts, so CI's log shows where
# the time goes (the whole run should stay well under 30 minutes)
step() { printf "== [%dm%02ds] %s\n" $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
trap 'step "done"' EXIT

step "set-up (scripts/setup.sh)"
bash scripts/setup.sh

# The C kernel unit tests (make test-c, ASan + UBSan) run inside the main
# pytest run (tests/c/test_c_kernels.py), not twice.
step "decoder tests under ASan + UBSan"
make -s asan PYTHON="$PY"

step "fuzzing, ${FUZZ_SECONDS:-20}s per target"
make -s fuzz PYTHON="$PY" FUZZ_SECONDS="${FUZZ_SECONDS:-20}"

step "benchmarks, quick mode (they must keep running; no speed is asserted)"
FASTKC_BENCH_QUICK=1 $PY -m pytest -q benchmarks/ --benchmark-disable

step "wheels: the sdist, a manylinux wheel per CPython, each wheel tested in a fresh venv"
# scripts/wheels.sh runs tests/unit against the installed wheel on every
# interpreter (3.11 included), so the main run below leaves tests/unit out
# (PYTEST_ADDOPTS, so that run's own line stays as it is). The FASTKC_REQUIRE_*
# switches reach the wheels' unit runs through the environment.
FASTKC_REQUIRE_WHEELS="3.11 3.12 3.13" FASTKC_REQUIRE_C=1 FASTKC_REQUIRE_CONSUMER=1 FASTKC_REQUIRE_FAULTS=1 \
    FASTKC_REQUIRE_MSK_REFERENCE=1 FASTKC_REQUIRE_KERBEROS=1 PYTHON="$PY" bash scripts/wheels.sh all
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} --ignore=tests/unit"

step "the test suite: corpus, C kernels, hostile brokers, integration (real brokers), fault campaign, Spark"
# FASTKC_REQUIRE_C turns a missing compiled core into a failure, not a skip;
# FASTKC_REQUIRE_FAULTS a missing toxiproxy (tests/faults/) likewise, and
# FASTKC_REQUIRE_MSK_REFERENCE AWS's missing reference signer (AWS_MSK_IAM),
# FASTKC_REQUIRE_KERBEROS a missing KDC or gssapi binding (GSSAPI),
# FASTKC_REQUIRE_POLARS / _DUCKDB a missing interop extra (arrow_stream()),
# FASTKC_REQUIRE_KCAT a missing kcat (`fastkc consume`'s differential tests),
# FASTKC_REQUIRE_AIO a missing fastkc.aio.AIOKafkaConsumer (tests/integration_aio/).
# One session: the fault campaign run beside it as a second session once saw
# a fresh consumer deliver nothing in its first 30 s (test_toxic[limit_data]'s
# warm-up, before any toxic; 1 run in 3). tests/faults/runner.py now prints
# the producer's counts, the consumer's state and fastkc's last log lines when
# that happens; in series until it is understood.
FASTKC_REQUIRE_C=1 FASTKC_REQUIRE_CONSUMER=1 FASTKC_REQUIRE_FAULTS=1 FASTKC_REQUIRE_MSK_REFERENCE=1 \
    FASTKC_REQUIRE_KERBEROS=1 FASTKC_REQUIRE_POLARS=1 FASTKC_REQUIRE_DUCKDB=1 FASTKC_REQUIRE_KCAT=1 \
    FASTKC_REQUIRE_AIO=1 \
    $PY -m pytest -q --durations=25
