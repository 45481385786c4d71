"""The asyncio consumers tests/integration_aio/ runs against, one test per class.

The suite is written once against aiokafka 0.14's AIOKafkaConsumer API and run
over two implementations:

- "aiokafka": aiokafka.AIOKafkaConsumer, the reference. A test that fails
  here is a wrong test, or an aiokafka departure from the Java client, which
  the test marks xfail(strict=True) for this flavour only
  (reference_deviates in tests/integration_aio/conftest.py).
- "fastkc.aio": fastkc.aio.AIOKafkaConsumer.

A test takes every name it needs from its AioFlavour (the consumer class,
the errors module, TopicPartition, the listener base class), so an `except`
clause catches the error class of the implementation under test.
"""
import types
from dataclasses import dataclass

import pytest

AIOKAFKA = "aiokafka"
FASTKC_AIO = "fastkc.aio"
AIO_FLAVOUR_NAMES = (AIOKAFKA, FASTKC_AIO)


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
    import fastkc.aio
    import fastkc.aio.abc
    import fastkc.aio.errors
    import fastkc.aio.structs

    return AioFlavour(
        name=FASTKC_AIO,
        AIOKafkaConsumer=fastkc.aio.AIOKafkaConsumer,
        errors=fastkc.aio.errors,
        TopicPartition=fastkc.aio.structs.TopicPartition,
        OffsetAndMetadata=fastkc.aio.structs.OffsetAndMetadata,
        ConsumerRebalanceListener=fastkc.aio.abc.ConsumerRebalanceListener,
    )


def load_aio_flavour(name):
    """The AioFlavour called `name`."""
    if name == AIOKAFKA:
        return _aiokafka()
    if name == FASTKC_AIO:
        return _fastkc_aio()
    raise ValueError("unknown asyncio consumer flavour {0!r}; expected one of {1}".format(name, AIO_FLAVOUR_NAMES))
