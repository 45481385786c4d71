"""Test-only helpers: an independent encoder of Kafka record batches
(batchgen), a way to call fastkc.records through a chosen backend, and the
hypothesis settings shared by the property tests."""
import contextlib
import os

from hypothesis import HealthCheck, settings

from fastkc import _backend


@contextlib.contextmanager
def using_backend(module):
    """Route fastkc.records' public functions to `module` (the twin or the
    compiled core) for the duration of the block.

    fastkc/records.py normalises arguments and then calls _backend.impl;
    swapping impl (and restoring it) exercises exactly that normalisation for
    either backend, without a second copy of it in the tests. Safe inside a
    hypothesis example, unlike pytest's function-scoped monkeypatch.
    """
    saved = _backend.impl
    _backend.impl = module
    try:
        yield module
    finally:
        _backend.impl = saved


SLOW = os.environ.get("FASTKC_SLOW", "") not in ("", "0")


def property_settings(fast_examples=60, slow_examples=1500):
    """Hypothesis settings: a quick, derandomized run by default (the same
    examples every time, so a CI failure is a change in the code, never a
    lucky draw), a large random exploration with FASTKC_SLOW=1."""
    return settings(
        max_examples=slow_examples if SLOW else fast_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=not SLOW,
    )


def require_optional(module, switch):
    """Import an optional test dependency (an extra's package), or skip the
    test without it; with the environment switch (e.g. FASTKC_REQUIRE_POLARS=1,
    which CI sets) its absence fails instead."""
    import importlib

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get(switch) == "1":
            pytest.fail("{0}=1 but {1} is not installed".format(switch, module))
        pytest.skip("{0} is not installed (an optional extra)".format(module))
