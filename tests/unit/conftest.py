"""Fixtures that choose the decoding backend for the unit tests.

The compiled core is part of fastkc: a test that needs it imports it, and a
checkout without it built fails those tests (python setup.py build_ext
--inplace) rather than skipping them.
"""
import pytest

from fastkc._core import records as compiled
from fastkc._twin import records as twin
from tests.support import using_backend


@pytest.fixture(scope="session")
def compiled_backend():
    """The compiled core module (fastkc._core.records)."""
    return compiled


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
