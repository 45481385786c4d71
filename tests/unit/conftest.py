"""Fixtures that choose the decoding backend for the unit tests.

The compiled core may be absent on a developer machine (not built yet);
then C-dependent tests skip WITH a reason. CI sets FASTKC_REQUIRE_C=1, and
there a missing core is a failure, so a broken build can never make the
differential tests pass by skipping.
"""
import os

import pytest

from fastkc._twin import records as twin
from tests.support import load_compiled, using_backend

REQUIRE_C = os.environ.get("FASTKC_REQUIRE_C", "") == "1"


@pytest.fixture(scope="session")
def compiled_backend():
    """The compiled core module (fastkc._core.records), or skip / fail."""
    module, reason = load_compiled()
    if module is None:
        if REQUIRE_C:
            pytest.fail("FASTKC_REQUIRE_C=1 but " + reason, pytrace=False)
        pytest.skip(reason + " (build it: python setup.py build_ext --inplace)")
    return module


@pytest.fixture(scope="session")
def twin_backend():
    return twin


@pytest.fixture(scope="module")
def both(compiled_backend, twin_backend):
    """(compiled core, twin) for the differential tests."""
    return compiled_backend, twin_backend


@pytest.fixture(params=["python", "c"])
def backend(request):
    """Each test using this runs once per backend, through fastkc.records."""
    if request.param == "python":
        module = twin
    else:
        module = request.getfixturevalue("compiled_backend")
    with using_backend(module):
        yield module
