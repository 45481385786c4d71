"""Fixtures of the asyncio consumer suite (issue 12), the sync suite's
(tests/integration/conftest.py) counterpart.

- flavour: parametrizes a test over the asyncio consumers
  (tests/support/aio_flavours.py): aiokafka's AIOKafkaConsumer, the
  reference, and fastkc.aio's.
- aio(scenario, timeout=60): runs `async def scenario(consumers)` on a fresh
  event loop; consumers.new(*topics, **configs) / await
  consumers.started(...) make consumers of the flavour on kafka_broker,
  every one stopped when the scenario ends (tests/support/aio_tools.py).
- reference_deviates(reason): marks the aiokafka case of the running test
  xfail(strict=True) where aiokafka departs from the Java client (the test
  asserts the Java client's behaviour).
- fastkc_bug(reason): marks the fastkc.aio case xfail(strict=True) for a
  known fastkc failure (never to make a wrong test pass).
- fastkc_aio_flavour: fastkc.aio's flavour alone, for getmany_arrow.
- bootstrap: kafka_broker's bootstrap servers (the session's one broker;
  every test makes its own topics with make_topic).
"""
import pytest

from tests.support.aio_flavours import AIO_FLAVOUR_NAMES, FASTKC_AIO, load_aio_flavour
from tests.support.aio_tools import run_scenario


@pytest.fixture(params=AIO_FLAVOUR_NAMES)
def flavour(request):
    return load_aio_flavour(request.param)


@pytest.fixture
def fastkc_aio_flavour():
    """fastkc.aio's flavour alone, for what only it has (getmany_arrow)."""
    return load_aio_flavour(FASTKC_AIO)


@pytest.fixture
def bootstrap(kafka_broker):
    return kafka_broker.bootstrap_servers


@pytest.fixture
def aio(flavour, bootstrap):
    def run(scenario, timeout=60):
        return run_scenario(flavour, bootstrap, scenario, timeout)

    return run


@pytest.fixture
def reference_deviates(request, flavour):
    """reference_deviates("why") marks this test xfail(strict=True) when it
    runs on aiokafka: the test asserts the Java client's behaviour, which
    aiokafka does not have; strict, so the mark must go once aiokafka has it."""

    def mark(reason):
        if flavour.is_reference:
            request.applymarker(pytest.mark.xfail(strict=True, reason="aiokafka deviates: " + reason))

    return mark


@pytest.fixture
def fastkc_bug(request, flavour):
    def mark(reason):
        if flavour.name == FASTKC_AIO:
            request.applymarker(pytest.mark.xfail(strict=True, reason="fastkc.aio bug: " + reason))

    return mark
