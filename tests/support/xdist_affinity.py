"""A pytest-xdist scheduler that keeps the test files sharing a started broker
on one worker (scripts/test.sh loads it with `-p tests.support.xdist_affinity`
for the broker sessions).

Why: every xdist worker is a pytest session of its own, so a session fixture
(the 3-node cluster, the secure broker, the 3.9 broker, the Schema Registry,
the fault campaign's proxied cluster, the SparkSession) starts once per worker
that runs a test asking for it. Spread file by file (`--dist loadfile`), CI
started each of them on every worker, up to 16 JVMs at once on two cores.
Here a file's scope is:
- its folder, for the folders whose conftest starts the shared resource
  (FOLDER_SCOPES);
- else the first shared fixture its source names, in SHARED_FIXTURES order;
- else the file itself (as `--dist loadfile`).
Scopes are handed out in the order the files were collected
(--no-loadscope-reorder keeps it), so the longest folders go first on the
command line. A file naming two shared fixtures gets the first one's scope
and starts the other where it runs: one file, one shared broker, keeps this
exact (tests/integration/test_broker_harness*.py are split for that).
"""
import functools
import os
import re

# folder → why its files share one worker
FOLDER_SCOPES = {
    "tests/faults": "one proxied 3-node cluster and one toxiproxy for the whole campaign",
    "tests/spark": "one local SparkSession (a JVM) for the folder",
}
# session fixtures of tests/conftest.py that start something heavy, heaviest first
SHARED_FIXTURES = ("kafka_cluster", "secure_broker", "kafka39_broker", "schema_registry", "share_broker")
SHARED_FIXTURE_NAME = re.compile(r"\b(" + "|".join(SHARED_FIXTURES) + r")\b")


def scope_of(nodeid, rootdir):
    """The scope of a test: FOLDER_SCOPES' folder, a shared fixture's name, or its file."""
    path = nodeid.split("::", 1)[0]
    for folder in FOLDER_SCOPES:
        if path.startswith(folder + "/"):
            return folder
    fixture = _shared_fixture_of(os.path.join(rootdir, path))
    return "shared:" + fixture if fixture else path


@functools.cache
def _shared_fixture_of(filename):
    try:
        with open(filename, encoding="utf-8") as fh:
            named = set(SHARED_FIXTURE_NAME.findall(fh.read()))
    except OSError:
        return None
    return next((name for name in SHARED_FIXTURES if name in named), None)


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    rootdir = str(config.rootpath)

    class SharedBrokerScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return scope_of(nodeid, rootdir)

    return SharedBrokerScheduling(config, log)
