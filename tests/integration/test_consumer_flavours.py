"""The suite's flavours (tests/support/consumers.py): each loads its own
consumer class and error module. No broker."""
import pytest

import fastkc
from tests.support.consumers import FASTKC, KAFKA_PYTHON, load_flavour


def test_kafka_python_is_always_available():
    import kafka

    flavour = load_flavour(KAFKA_PYTHON)
    assert flavour.KafkaConsumer is kafka.KafkaConsumer and flavour.is_reference


def test_present_fastkc_consumer_is_loaded_with_its_own_errors(monkeypatch):
    class StandIn:
        pass

    monkeypatch.setattr(fastkc, "KafkaConsumer", StandIn, raising=False)
    flavour = load_flavour(FASTKC)
    assert flavour.KafkaConsumer is StandIn and not flavour.is_reference
    assert flavour.errors.__name__ == "fastkc.errors"
    # An error name the flavour lacks fails the test that needs it.
    with pytest.raises(pytest.fail.Exception, match="NoSuchErrorName"):
        flavour.error("NoSuchErrorName")


def test_unknown_flavour_name_is_refused():
    with pytest.raises(ValueError):
        load_flavour("librdkafka")
