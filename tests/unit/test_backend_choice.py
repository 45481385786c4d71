"""The backend (compiled core or twin) is chosen in one place, fastkc/_backend.py,
for the records functions and the Fetch response parser alike; nothing else
in the package imports fastkc._core. Only FASTKC_PURE=1 selects the twin: a
missing compiled core is an ImportError that says how to fix it."""
import pathlib
import re
import subprocess
import sys

import fastkc
from fastkc import _backend
from fastkc.protocol import codec
from tests.support import batchgen as bg

# Files outside _backend.py that may import fastkc._core directly: none.
ALLOWED = set()


def test_nothing_but_the_backend_imports_the_compiled_core():
    root = pathlib.Path(fastkc.__file__).parent
    offenders = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("_core/") or rel == "_backend.py":
            continue
        if re.search(r"^\s*(from fastkc\._core\b|import fastkc\._core\b|from fastkc import _core\b)",
                     path.read_text(), re.MULTILINE):
            offenders.add(rel)
    assert offenders <= ALLOWED, offenders - ALLOWED


def test_the_fetch_parser_follows_the_records_backend():
    module = _backend.parse_fetch_response.__module__
    if _backend.name == "c":
        assert module.startswith("fastkc._core")
        assert _backend.impl.__name__ == "fastkc._core.records"
    else:
        assert module == "fastkc._backend"


def test_the_pure_backend_parses_fetch_with_the_codec():
    code = ("from fastkc import _backend; print(_backend.name, _backend.parse_fetch_response.__module__, "
            "_backend.impl.__name__)")
    out = subprocess.run([sys.executable, "-c", code], env={"FASTKC_PURE": "1", "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True, cwd=str(pathlib.Path(fastkc.__file__).parents[1]))
    assert out.stdout.split() == ["python", "fastkc._backend", "fastkc._twin.records"]


def test_both_parsers_read_the_same_response():
    from fastkc._backend import parse_fetch_response

    blob = bg.record_batch(bg.records_from_values([b"a", b"b"]), base_offset=4)
    response = {"throttle_time_ms": 3, "error_code": 0, "session_id": 9, "responses": [
        {"topic": "t", "topic_id": bytes(16), "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 6, "last_stable_offset": 6,
             "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
             "records": blob}]}]}
    payload = codec.encode_response("Fetch", 12, response, correlation_id=7)
    ours = parse_fetch_response(payload, 12)
    correlation_id, body = codec.decode_response("Fetch", 12, payload)
    oracle = codec.to_fetch_response(correlation_id, body, 12)
    assert ours.session_id == oracle.session_id == 9
    assert bytes(ours.topics[0].partitions[0].records) == bytes(oracle.topics[0].partitions[0].records) == blob
    assert _backend.FETCH_MAX_VERSION >= 12


# a checkout whose extension modules were never built: the compiled modules cannot be found
_WITHOUT_CORE = """
import sys

class NoExtensions:
    def find_spec(self, name, path=None, target=None):
        if name in ("fastkc._core._records", "fastkc._core._fetch"):
            raise ImportError("No module named " + repr(name))
        return None

sys.meta_path.insert(0, NoExtensions())
"""


def _import_without_core(extra_env, then):
    env = {"PATH": "/usr/bin:/bin", **extra_env}
    return subprocess.run([sys.executable, "-c", _WITHOUT_CORE + "import fastkc\n" + then], env=env,
                          capture_output=True, text=True, cwd=str(pathlib.Path(fastkc.__file__).parents[1]))


def test_a_missing_compiled_core_is_an_import_error_that_says_how_to_fix_it():
    done = _import_without_core({}, "print(fastkc.backend)")
    assert done.returncode != 0 and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: fastkc: the compiled core (fastkc._core) could not be imported"), last
    assert "No module named 'fastkc._core._" in last  # what was missing
    assert "C compiler" in last and "build_ext --inplace" in last and "FASTKC_PURE=1" in last


def test_only_fastkc_pure_selects_the_twin():
    done = _import_without_core({"FASTKC_PURE": "1"}, "print(fastkc.backend)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python"]
    assert "Warning" not in done.stderr
    done = _import_without_core({"FASTKC_PURE": "0"}, "print(fastkc.backend)")
    assert done.returncode != 0 and "FASTKC_PURE=1" in done.stderr
