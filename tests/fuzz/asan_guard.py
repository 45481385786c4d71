"""pytest plugin for `make asan`: prove the sanitized build is what ran.

The sanitized extension lives in its own tree ($FASTKC_ASAN_LIB); if any
fastkc._core extension module was imported from elsewhere (the normal
in-place build, say, because a path setting put the repository first), the
run would be silently uninstrumented. This plugin fails the session then, and
also when no compiled module was exercised at all.
"""
import os
import sys

import pytest


def _compiled_modules():
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name.startswith("fastkc._core.") and path.endswith(".so"):
            yield name, path


def pytest_sessionfinish(session, exitstatus):
    expected = os.environ.get("FASTKC_ASAN_LIB")
    if not expected:
        return
    expected = os.path.realpath(expected) + os.sep
    loaded = list(_compiled_modules())
    wrong = [(n, p) for n, p in loaded if not os.path.realpath(p).startswith(expected)]
    problem = None
    if wrong:
        problem = "compiled modules not from the sanitized build: {0}".format(wrong)
    elif not loaded:
        problem = "no fastkc._core extension module was imported: nothing ran under the sanitizers"
    if problem:
        sys.stderr.write("\nasan_guard: " + problem + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        sys.stderr.write(
            "\nasan_guard: {0} sanitized modules exercised: {1}\n".format(
                len(loaded), ", ".join(sorted(n for n, _ in loaded))
            )
        )
