"""The asyncio consumers tests/integration_aio/ runs against, one test per class.

The suite is written once against aiokafka 0.14's AIOKafkaConsumer API and run
over two implementations:

- "aiokafka": aiokafka.AIOKafkaConsumer, the reference. A test that fails
  here is a wrong test, or an aiokafka departure from the Java client, which
  the test marks xfail(strict=True) for this flavour only
  (reference_deviates in tests/integration_aio/conftest.py).
- "fastkc.aio": fastkc.aio.AIOKafkaConsumer. Skipped, with the reason, while
  it does not exist; with FASTKC_REQUIRE_AIO=1 its absence fails instead, so
  CI cannot pass by skipping (as FASTKC_REQUIRE_CONSUMER for the sync suite).

A test takes every name it needs from its AioFlavour (the consumer class,
the errors module, TopicPartition, the listener base class), so an `except`
clause catches the error class of the implementation under test.
"""
import importlib
import os
import types
from dataclasses import dataclass

import pytest

AIOKAFKA = "aiokafka"
FASTKC_AIO = "fastkc.aio"
AIO_FLAVOUR_NAMES = (AIOKAFKA, FASTKC_AIO)

REQUIRE_ENV = "FASTKC_REQUIRE_AIO"


@dataclass(frozen=True)
class AioFlavour:
    name: str
    AIOKafkaConsumer: type
    errors: types.ModuleType
    TopicPartition: type
    OffsetAndMetadata: type
    ConsumerRebalanceListener: type

    @property
    def is_reference(self):
        return self.name == AIOKAFKA

    def error(self, name):
        """The error class called `name` in this flavour's errors module; a
        flavour lacking it fails the test (a missing name is an incompatibility)."""
        try:
            return getattr(self.errors, name)
        except AttributeError:
            pytest.fail("{0} has no {1} (aiokafka's error name)".format(self.errors.__name__, name))

    def __str__(self):
        return self.name


def _aiokafka():
    import aiokafka
    import aiokafka.abc
    import aiokafka.errors
    import aiokafka.structs

    return AioFlavour(
        name=AIOKAFKA,
        AIOKafkaConsumer=aiokafka.AIOKafkaConsumer,
        errors=aiokafka.errors,
        TopicPartition=aiokafka.structs.TopicPartition,
        OffsetAndMetadata=aiokafka.structs.OffsetAndMetadata,
        ConsumerRebalanceListener=aiokafka.abc.ConsumerRebalanceListener,
    )


def _fastkc_aio():
    """fastkc.aio's flavour, or a string saying why it is unavailable."""
    try:
        aio = importlib.import_module("fastkc.aio")
        errors = importlib.import_module("fastkc.aio.errors")
        structs = importlib.import_module("fastkc.aio.structs")
        abc = importlib.import_module("fastkc.aio.abc")
    except ImportError as exc:
        return "fastkc.aio does not import: {0}".format(exc)
    consumer_class = getattr(aio, "AIOKafkaConsumer", None)
    if consumer_class is None:
        return "fastkc.aio.AIOKafkaConsumer does not exist yet (issue 12: the asyncio driver)"
    return AioFlavour(
        name=FASTKC_AIO,
        AIOKafkaConsumer=consumer_class,
        errors=errors,
        TopicPartition=structs.TopicPartition,
        OffsetAndMetadata=structs.OffsetAndMetadata,
        ConsumerRebalanceListener=abc.ConsumerRebalanceListener,
    )


def load_aio_flavour(name):
    """The AioFlavour called `name`; skips (or, with FASTKC_REQUIRE_AIO=1,
    fails) the calling test when fastkc.aio has no consumer."""
    if name == AIOKAFKA:
        return _aiokafka()
    if name == FASTKC_AIO:
        found = _fastkc_aio()
        if isinstance(found, AioFlavour):
            return found
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail("{0}={1} but {2}".format(REQUIRE_ENV, os.environ[REQUIRE_ENV], found))
        pytest.skip(found)
    raise ValueError("unknown asyncio consumer flavour {0!r}; expected one of {1}".format(name, AIO_FLAVOUR_NAMES))
