"""How many generated examples a property test runs: fewer under the
sanitizers (`make asan` sets FASTKC_ASAN_LIB), where each example costs
several times more and the point is a memory error on every path, not a
wide search; the plain runs (the wheels stage runs tests/unit against each
wheel) search wide."""
import os

UNDER_SANITIZERS = bool(os.environ.get("FASTKC_ASAN_LIB"))


def examples(plain, sanitized):
    """`plain` examples, or `sanitized` under the sanitizers."""
    return sanitized if UNDER_SANITIZERS else plain
