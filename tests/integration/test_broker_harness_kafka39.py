"""The harness's broker of the older 3.9 line (the session's `kafka39_broker`)."""
import os

import pytest


def _broker_ids(conf, timeout=15):
    from confluent_kafka.admin import AdminClient

    return sorted(AdminClient(dict(conf, log_level=0)).list_topics(timeout=timeout).brokers)


# --- the older 3.9 line ---------------------------------------------------------------

@pytest.mark.broker
def test_kafka_3_9_line_starts_and_answers(kafka39_broker):
    # the session's 3.9 broker (tests/conftest.py), started by broker.start(kafka_version="3.9.x")
    info = kafka39_broker
    assert info.kafka_version.startswith("3.9.")
    assert _broker_ids({"bootstrap.servers": info.bootstrap_servers}) == [1]
    # reload4j logging went to the node's log file.
    with open(os.path.join(info.nodes[0].dir, "server.log"), encoding="utf-8") as fh:
        assert "Kafka Server started" in fh.read()
