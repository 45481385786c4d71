"""The broker session's scheduler (tests/support/xdist_affinity.py) keeps
files sharing a started broker on one worker; that holds only while each
file outside the folder scopes names at most one shared fixture."""
import glob
import os

from tests.support import xdist_affinity
from tests.support.repo import ROOT


def _named_shared_fixtures(path):
    with open(path, encoding="utf-8") as fh:
        return set(xdist_affinity.SHARED_FIXTURE_NAME.findall(fh.read()))


def test_a_broker_test_file_names_at_most_one_shared_fixture():
    crowded = {}
    for path in glob.glob(os.path.join(ROOT, "tests", "integration*", "test_*.py")):
        named = _named_shared_fixtures(path)
        if len(named) > 1:
            crowded[os.path.relpath(path, ROOT)] = sorted(named)
    assert not crowded, "split these files, one shared broker each: {0}".format(crowded)


def test_files_sharing_a_fixture_or_a_folder_share_a_scope():
    scope = lambda path: xdist_affinity.scope_of(path + "::t", ROOT)  # noqa: E731
    assert scope("tests/integration/test_groups.py") == scope("tests/integration/test_broker_harness.py")
    assert scope("tests/integration/test_groups.py") == "shared:kafka_cluster"
    assert scope("tests/faults/test_soak.py") == scope("tests/faults/test_toxics.py") == "tests/faults"
    assert scope("tests/integration/test_consumer_arrow.py") == "tests/integration/test_consumer_arrow.py"
