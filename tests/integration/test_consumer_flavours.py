"""The suite's own switch (tests/support/consumers.py): fastkc's cases are
skipped while fastkc has no KafkaConsumer, and with FASTKC_REQUIRE_CONSUMER=1
that absence fails instead (so CI cannot go green by skipping). No broker."""
import pytest

import fastkc
from tests.support.consumers import FASTKC, KAFKA_PYTHON, REQUIRE_ENV, load_flavour


def test_kafka_python_is_always_available():
    import kafka

    flavour = load_flavour(KAFKA_PYTHON)
    assert flavour.KafkaConsumer is kafka.KafkaConsumer and flavour.is_reference


def test_missing_fastkc_consumer_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.delattr(fastkc, "KafkaConsumer", raising=False)
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="fastkc.KafkaConsumer does not exist"):
        load_flavour(FASTKC)


def test_missing_fastkc_consumer_fails_when_required(monkeypatch):
    monkeypatch.delattr(fastkc, "KafkaConsumer", raising=False)
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=REQUIRE_ENV):
        load_flavour(FASTKC)


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
