"""The I/O-free modules import nothing that does I/O, keeps time or starts a thread.

Every protocol decision lives in a machine that its drivers (sync, asyncio,
blocking) feed with bytes and `now`; a machine that imported `socket`,
`time` or `threading` could block, read a clock or start a thread behind its
drivers' backs, and the canned-answer tests would no longer cover what runs.
The list is the set DESIGN.md calls I/O-free; every import counts, inside
functions too (tests/support/imports.py).
"""
import glob
import os

import pytest

from tests.support.imports import IO_AND_TIME, top_level_imports
from tests.support.repo import ROOT

_DRIVERS = {"fastkc/fetch/driver.py"}
_IO_FREE = sorted(
    ["fastkc/net/core.py", "fastkc/state_machine.py", "fastkc/session_epoch.py", "fastkc/request.py"]
    + [os.path.relpath(p, ROOT) for pattern in ("fastkc/cluster/*.py", "fastkc/fetch/*.py")
       for p in glob.glob(os.path.join(ROOT, pattern))]
    + ["fastkc/group/{0}.py".format(m) for m in ("machine", "coordinator_machine", "commit_machine",
                                                  "classic_machine", "consumer_machine", "reconciler",
                                                  "subscription")]
    + ["fastkc/share/{0}.py".format(m) for m in ("member_machine", "session", "acknowledgements", "fetch_machine")]
)
_IO_FREE = [p for p in _IO_FREE if p not in _DRIVERS]


@pytest.mark.parametrize("path", _IO_FREE)
def test_an_io_free_module_imports_no_io_clock_or_thread(path):
    imported = top_level_imports(os.path.join(ROOT, path))
    assert imported.isdisjoint(IO_AND_TIME), "{0} imports {1}".format(path, sorted(imported & IO_AND_TIME))


def test_the_check_sees_a_driver():
    # the check can fail: the sync fetch driver and the selector client do import the clock or a socket
    assert top_level_imports(os.path.join(ROOT, "fastkc/client.py")) & IO_AND_TIME
    assert len(_IO_FREE) > 25, "the glob found almost nothing: did the packages move?"
