"""Every front-end consumes through an engine (fastkc/engine/): none imports
a driver (connections, the clients, the fetch drivers), counting every import
(module level, inside functions, under `if TYPE_CHECKING:`). A front-end that
needs something below records asks its engine's API for it, so the drivers
can change behind the engines without touching a front-end."""
import pytest

from tests.support import import_graph
from tests.support.repo import ROOT

FRONT_ENDS = ("fastkc.consumer", "fastkc.aio.consumer", "fastkc.share.consumer", "fastkc.arrow_stream",
              "fastkc.consume", "fastkc.spark", "fastkc_tools.bench_ceiling")
DRIVERS = ("fastkc.conn", "fastkc.client", "fastkc.fetch.driver", "fastkc.net", "fastkc.aio.client",
           "fastkc.aio.fetch_driver")


def _under(module, packages):
    return any(module == p or module.startswith(p + ".") for p in packages)


@pytest.fixture(scope="module")
def edges():
    return import_graph.combined(import_graph.build(ROOT))


def test_the_graph_sees_front_ends_and_drivers(edges):
    # the check below would pass on a graph that missed them
    for front_end in FRONT_ENDS:
        assert any(_under(m, (front_end,)) for m in edges), front_end
    for driver in DRIVERS:
        assert any(_under(m, (driver,)) for m in edges), driver
    # and the engines do import the drivers: the rule is not vacuous
    assert "fastkc.client" in edges["fastkc.engine.client_engine"]
    assert "fastkc.aio.fetch_driver" in edges["fastkc.engine.aio_engine"]


def test_no_front_end_imports_a_driver(edges):
    found = {m: sorted(t for t in targets if _under(t, DRIVERS)) for m, targets in edges.items()
             if _under(m, FRONT_ENDS)}
    assert {m: drivers for m, drivers in found.items() if drivers} == {}
