#!/usr/bin/env bash
# README's test command: set up everything on a fresh machine, then run every
# check CI runs. The pytest sessions start and stop their own Kafka brokers.
#   FUZZ_SECONDS  seconds per fuzz target (default 20)
#
# The budget is 30 minutes on a 2-core machine. Where the time goes, and why
# the stages are laid out as they are:
# - The wheels stage (sdist, three wheels, each tested in a fresh venv, with
#   tests/unit and tests/packaging run against the installed wheel) runs in
#   the background from after set-up until it ends (about 9.5 minutes),
#   beside the sanitizer run, the broker-free suites, the fuzzers and the
#   start of the broker sessions: none of them asserts a time, and the
#   wheels stage touches only dist/ (it builds from the sdist, not the
#   tree). Its result is read at the end. The fuzzers run two at a time.
# - The broker-free suites (tests/hostile, tests/quality, tests/c) and the
#   quick benchmarks run in one pytest-xdist session with two workers, file
#   by file: they share no broker, the suites mostly wait on scripted stalls
#   and timeouts, and the benchmarks are one CPU-bound file beside them.
# - The broker suites run last, in one pytest-xdist session with three
#   workers (their tests mostly wait on brokers, timeouts and faults).
#   tests/support/xdist_affinity.py keeps the files that share a started
#   broker (the 3-node cluster, the secure broker, the 3.9 broker, the
#   Schema Registry, the fault campaign's proxied cluster, the SparkSession)
#   on one worker. Before (dec7e82: two sessions side by side, integration
#   file by file over two workers | faults, Spark, asyncio and docs in one
#   process) each worker started every shared broker its files asked for,
#   16 JVMs at once, and the stage took 17m24 of a 29m28 run. At ee5cdec (this
#   layout, with the Spark Avro and Arrow Avro tests added) it took 17m35
#   with the two cores 90 % busy: the stage is CPU-bound, so more workers
#   would not help; less CPU does. Hence the brokers run with C1 and the
#   serial GC (FASTKC_BROKER_JIT=c1) and Spark's standalone driver and
#   executors likewise.
# Each stage prints when it starts; the end prints every stage's duration.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

STAGE_NAMES=()
STAGE_SECONDS=()
stage_name=""
stage_t0=$SECONDS
end_stage() {
    if [ -n "$stage_name" ]; then
        STAGE_NAMES+=("$stage_name")
        STAGE_SECONDS+=($((SECONDS - stage_t0)))
    fi
    stage_name=""
}
step() {
    end_stage
    stage_name=$1
    stage_t0=$SECONDS
    printf "== [%dm%02ds] %s\n" $((SECONDS / 60)) $((SECONDS % 60)) "$*"
}
summary() {
    local rc=$? i
    # a stage that failed while the wheels ran: stop them (their own process group)
    if [ -n "${wheels_pid:-}" ] && kill -0 "$wheels_pid" 2> /dev/null; then
        kill -- -"$wheels_pid" 2> /dev/null || true
    fi
    end_stage
    printf "== [%dm%02ds] done (exit %d); stage durations:\n" $((SECONDS / 60)) $((SECONDS % 60)) "$rc"
    for i in "${!STAGE_NAMES[@]}"; do
        printf "==   %3dm%02ds  %s\n" $((STAGE_SECONDS[i] / 60)) $((STAGE_SECONDS[i] % 60)) "${STAGE_NAMES[$i]}"
    done
    if [ -n "${WHEELS_SECONDS_FILE:-}" ] && [ -s "$WHEELS_SECONDS_FILE" ]; then
        local w
        w=$(cat "$WHEELS_SECONDS_FILE")
        printf "==   %3dm%02ds  wheels (in the background, from after set-up)\n" $((w / 60)) $((w % 60))
    fi
}
trap summary EXIT

# Which folders each run takes is said once, here; a folder in neither fails
# the run (tests/unit and tests/packaging are the wheels stage's: they run
# against the installed wheels; support, corpus and fuzz hold no pytest tests).
BROKER_FREE=(tests/hostile tests/quality tests/c)
# (in this order: the broker session hands the longest groups out first)
WITH_BROKERS=(tests/spark tests/faults tests/integration tests/integration_aio tests/docs)
for dir in tests/*/; do
    dir=${dir%/}
    case $dir in tests/__*) continue ;; esac
    case " ${BROKER_FREE[*]} ${WITH_BROKERS[*]} tests/unit tests/packaging tests/support tests/corpus tests/fuzz " in
        *" $dir "*) ;;
        *) echo "scripts/test.sh: $dir is in no pytest run: add it to BROKER_FREE or WITH_BROKERS" >&2; exit 1 ;;
    esac
done

step "set-up (scripts/setup.sh)"
bash scripts/setup.sh

step "wheels, started in the background: the sdist, a manylinux wheel per CPython, each tested in a fresh venv"
# scripts/wheels.sh runs all of tests/unit against the installed wheel of
# this checkout's interpreter (3.11), so the pytest runs below leave
# tests/unit out. The 3.12 and 3.13 wheels run the smoke test and the unit
# tests whose outcome can differ by interpreter: the compiled core built for
# it (decoders, C/twin differential, corpus, kernels, Fetch parser, lz4,
# Arrow), the asyncio drivers, and the kafka-python / aiokafka surface parity;
# the rest is pure Python that already ran once (PER_INTERPRETER_UNIT_TESTS
# in wheels.sh). The FASTKC_REQUIRE_* switches
# reach the wheels' unit runs through the environment.
mkdir -p build/ci
WHEELS_LOG=build/ci/wheels.log
WHEELS_SECONDS_FILE=build/ci/wheels.seconds
rm -f "$WHEELS_SECONDS_FILE"
# setsid: a process group of its own, so a failure elsewhere can stop it whole
FASTKC_REQUIRE_WHEELS="3.11 3.12 3.13" FASTKC_REQUIRE_MSK_REFERENCE=1 FASTKC_REQUIRE_KERBEROS=1 \
    PYTHON="$PY" WHEELS_SECONDS_FILE=$WHEELS_SECONDS_FILE setsid bash -c 't0=$SECONDS; bash scripts/wheels.sh all && echo $((SECONDS - t0)) > "$WHEELS_SECONDS_FILE"' \
    > "$WHEELS_LOG" 2>&1 &
wheels_pid=$!

# The C kernel unit tests (make test-c, ASan + UBSan) run inside pytest
# (tests/c/test_c_kernels.py), not twice.
step "decoder tests under ASan + UBSan"
make -s asan PYTHON="$PY"

# fastkc's own modules (the compiled core included) are imported outright: a
# missing one fails. The optional tools and extras skip without their switch:
# FASTKC_REQUIRE_FAULTS turns a missing toxiproxy (tests/faults/) into a failure,
# FASTKC_REQUIRE_MSK_REFERENCE AWS's missing reference signer (AWS_MSK_IAM),
# FASTKC_REQUIRE_KERBEROS a missing KDC or gssapi binding (GSSAPI),
# FASTKC_REQUIRE_POLARS / _DUCKDB a missing interop extra (arrow_stream()),
# FASTKC_REQUIRE_KCAT a missing kcat (`fastkc consume`'s differential tests).
export FASTKC_REQUIRE_FAULTS=1 FASTKC_REQUIRE_MSK_REFERENCE=1 FASTKC_REQUIRE_KERBEROS=1 \
    FASTKC_REQUIRE_POLARS=1 FASTKC_REQUIRE_DUCKDB=1 FASTKC_REQUIRE_KCAT=1

step "broker-free suites and the quick benchmarks, two workers, beside the wheels stage"
# the benchmarks must keep running; quick mode (FASTKC_BENCH_QUICK) and
# --benchmark-disable: no speed is asserted (only benchmarks/ reads the switch)
FASTKC_BENCH_QUICK=1 $PY -m pytest -q -n 2 --dist loadfile --durations=10 --benchmark-disable \
    "${BROKER_FREE[@]}" benchmarks/

step "fuzzing, ${FUZZ_SECONDS:-20}s per target"
make -s -j2 fuzz-build PYTHON="$PY"
make -s fuzz PYTHON="$PY" FUZZ_SECONDS="${FUZZ_SECONDS:-20}" FUZZ_JOBS=2

step "suites on real brokers: one session, three workers, files sharing a broker kept on one worker"
# tests/support/xdist_affinity.py says how files are grouped; the longest
# groups come first on the command line (--no-loadscope-reorder keeps that
# order). The junit file gives each file's time; the CPU line says how busy
# the two cores were, so the next layout is chosen on figures.
# brokers with C1 and the serial GC (fastkc_tools/broker/harness.py says why)
export FASTKC_BROKER_JIT=c1
cpu_before=$(head -1 /proc/stat)
broker_rc=0
$PY -m pytest -q --durations=20 -n 3 --dist loadscope --no-loadscope-reorder -p tests.support.xdist_affinity \
    --junitxml=build/ci/brokers.xml "${WITH_BROKERS[@]}" || broker_rc=$?
$PY - "$cpu_before" "$(head -1 /proc/stat)" <<'CPU'
import sys
def ticks(line):
    fields = [int(x) for x in line.split()[1:]]
    return sum(fields), fields[3] + fields[4]  # all, idle + iowait
(t0, i0), (t1, i1) = ticks(sys.argv[1]), ticks(sys.argv[2])
print("== the two cores were busy {0:.0f} % of this stage".format(100.0 * (1 - (i1 - i0) / max(1, t1 - t0))))
CPU
$PY -m tests.support.junit_times build/ci/brokers.xml || true
[ "$broker_rc" = 0 ] || { echo "the broker session failed: its failures are above" >&2; exit 1; }

step "waiting for the wheels stage (it ended during the broker sessions)"
wheels_rc=0
wait "$wheels_pid" || wheels_rc=$?
wheels_pid=""
cat "$WHEELS_LOG"
[ "$wheels_rc" = 0 ] || { echo "the wheels stage failed (exit $wheels_rc): its log is above" >&2; exit 1; }
