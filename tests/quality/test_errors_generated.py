"""fastkc/errors/broker.py's broker error classes are written out by
scripts/gen_broker_errors.py from the error-code table in the same file (so
type checkers see them); these tests hold the two together. A source-tree
check (it runs the repository's script), so it lives in tests/quality, not
in tests/unit, which also runs against installed wheels outside the tree."""
import os
import subprocess
import sys

from fastkc import errors
from fastkc.errors import broker
from tests.support.repo import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "gen_broker_errors.py")


def _generator():
    return load_script("gen_broker_errors")


def test_the_generated_classes_match_the_table():
    done = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_new_table_row_gets_its_class_generated():
    gen = _generator()
    with open(broker.__file__) as f:
        source = f.read()
    table_end = '"""\n\n# kafka-python 3.0.12'
    edited = source.replace(table_end, "  999 BrandNewError  BRAND_NEW  retriable\n" + table_end, 1)
    assert edited != source
    new = gen.regenerated(edited)
    assert "class BrandNewError(BrokerResponseError, RetriableError):" in new
    assert "errno, message, description = 999, 'BRAND_NEW', _DESCRIPTIONS.get(999)" in new


def test_every_code_maps_to_its_class():
    gen = _generator()
    with open(broker.__file__) as f:
        rows = list(gen.table_rows(f.read()))
    assert len(rows) > 100
    for errno, name, message, flag in rows:
        cls = getattr(errors, name)
        assert errors.for_code(errno) is cls
        assert (cls.errno, cls.message) == (errno, message)
        assert cls.description == broker._DESCRIPTIONS.get(errno)
        assert issubclass(cls, errors.RetriableError) == (flag in ("retriable", "metadata"))
        assert issubclass(cls, errors.InvalidMetadataError) == (flag == "metadata")
        assert issubclass(cls, errors.AuthorizationError) == (flag == "auth")


def test_an_unknown_code_keeps_its_errno():
    cls = errors.for_code(4242)
    assert issubclass(cls, errors.UnknownError) and cls.errno == 4242
    assert cls.__name__ == cls.__qualname__ == "UnrecognizedBrokerError"
    assert errors.for_code(4242) is cls


def test_a_table_edited_without_regenerating_refuses_to_import(tmp_path):
    # the import-time check: a row whose class is missing stops the import
    with open(broker.__file__) as f:
        source = f.read()
    table_end = '"""\n\n# kafka-python 3.0.12'
    module = tmp_path / "stale_errors.py"
    module.write_text(source.replace(table_end, "  999 BrandNewError  BRAND_NEW\n" + table_end, 1))
    # this checkout's fastkc (the hand-written errors it imports), whatever is installed
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", "import stale_errors"], cwd=tmp_path, capture_output=True, text=True,
                          env=env)
    assert done.returncode != 0
    assert "no class BrandNewError for errno 999" in done.stderr, done.stderr
