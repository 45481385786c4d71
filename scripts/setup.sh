#!/usr/bin/env bash
# Everything fastkc needs on a fresh machine (Debian, Python 3.11, Java 17 + Maven):
# system packages, the Python dependencies, the compiled core (built in place),
# and the Kafka jars resolved from Maven Central into ~/.cache/fastkc.
# Safe to run again: every step is skipped or cheap when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}

need_apt=()
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
# clang's libFuzzer/ASan runtimes for the fuzz targets
[ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] || need_apt+=(libclang-rt-14-dev)
# MIT Kerberos: the broker harness's KDC (krb5kdc, kdb5_util, kadmin.local),
# kinit for its readiness probe, and the headers the gssapi package builds against
[ -x /usr/sbin/krb5kdc ] || need_apt+=(krb5-kdc)
[ -x /usr/sbin/kadmin.local ] || need_apt+=(krb5-admin-server)
command -v kinit >/dev/null 2>&1 || need_apt+=(krb5-user)
command -v krb5-config >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
# instructions per record (benchmarks/cost): cachegrind counts them where the
# virtual machine hides the CPU's counters from perf
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
# kcat: the reference of `fastkc consume`'s differential tests (Debian's 1.7.1)
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing system packages: ${need_apt[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "setup: warning: missing ${need_apt[*]} (fuzz targets and the Kerberos tests need them); continuing" >&2
    fi
fi

command -v java >/dev/null 2>&1 || { echo "setup: Java 17+ is required (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
command -v mvn >/dev/null 2>&1 || { echo "setup: Maven is required (apt-get install maven)" >&2; exit 1; }

# The build requirements too, not only in pip's isolated build env: the
# in-place rebuild below (and make asan) run setup.py directly.
$PY -m pip install -q --disable-pip-version-check "setuptools>=70" wheel "Cython>=3.1,<3.4"
$PY -m pip install -q --disable-pip-version-check -e ".[dev,spark]"
# The editable install builds the extension; build in place again so the
# tree always holds the extension of the current sources.
$PY setup.py -q build_ext --inplace
$PY -c "import fastkc, sys; print('setup: fastkc backend =', fastkc.backend); sys.exit(fastkc.backend != 'c')"

# Resolve Kafka from Maven Central once (cached for later runs).
$PY -m fastkc.cli broker resolve

# The integration tests' Schema Registry (Apicurio, Confluent-compatible API),
# assembled from Maven Central by Quarkus augmentation once (a few minutes), then
# cached beside the Kafka jars; quiet when already there.
$PY -m fastkc_tools.broker.registry resolve >/dev/null

# AWS's reference AWS_MSK_IAM signer (software.amazon.msk:aws-msk-iam-auth), the
# oracle of tests/unit/test_msk_iam_reference.py: resolved from Maven Central into
# the same cache and compiled once; quiet when already there. A failure is a
# warning here (the test then skips, or fails under FASTKC_REQUIRE_MSK_REFERENCE=1).
$PY -m tests.support.msk_reference || true

# Toxiproxy (the fault tests' TCP proxy) from the Go module proxy, into
# ~/.cache/fastkc/bin. Without Go the fault tests skip with a reason
# (scripts/test.sh sets FASTKC_REQUIRE_FAULTS=1, which makes that a failure).
TOXI_VERSION=v2.5.0
TOXI_BIN="${FASTKC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fastkc}/bin"
if [ -x "$TOXI_BIN/toxiproxy-server" ]; then
    :
elif command -v go >/dev/null 2>&1; then
    echo "setup: installing toxiproxy $TOXI_VERSION into $TOXI_BIN"
    tmpbin=$(mktemp -d)
    GOBIN="$tmpbin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXI_VERSION"
    GOBIN="$tmpbin" go install "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXI_VERSION"
    mkdir -p "$TOXI_BIN"
    mv "$tmpbin/server" "$TOXI_BIN/toxiproxy-server"
    mv "$tmpbin/cli" "$TOXI_BIN/toxiproxy-cli"
    rmdir "$tmpbin"
else
    echo "setup: warning: Go is missing, so toxiproxy is not installed (tests/faults will skip)" >&2
fi
