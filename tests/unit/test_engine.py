"""ConsumerEngine's own rules, without a broker (the engine connects only
when its client is bootstrapped): the poll precondition, wakeup's one
raise, the Arrow stream slot, closing."""
import pytest

from fastkc.config import consumer_config
from fastkc.engine import ConsumerEngine
from fastkc.engine.client_engine import ClientEngine
from fastkc.errors import IllegalStateError, WakeupException
from fastkc.structs import TopicPartition


@pytest.fixture
def engine():
    subscribed = [False]
    engine = ConsumerEngine(consumer_config({"bootstrap_servers": "127.0.0.1:1"}), subscribed=lambda: subscribed[0])
    engine.subscribed = subscribed
    yield engine
    engine.close(0)


def test_polling_needs_an_assignment_or_a_subscription(engine):
    with pytest.raises(IllegalStateError, match="No partitions assigned"):
        engine.check_can_poll()
    engine.subscribed[0] = True
    engine.check_can_poll()  # an assignment may still come from the group
    assert engine.assignment() == [] and dict(engine.partitions()) == {}


def test_wakeup_raises_once(engine):
    engine.raise_wakeup()  # nothing pending: no raise
    engine.wakeup()
    with pytest.raises(WakeupException):
        engine.raise_wakeup()
    engine.raise_wakeup()  # consumed


def test_one_stream_at_a_time(engine):
    first, second = object(), object()
    engine.check_no_stream()
    engine.claim_stream(first)
    assert engine.stream is first
    with pytest.raises(IllegalStateError, match="being read"):
        engine.check_no_stream()
    with pytest.raises(IllegalStateError, match="another arrow_stream"):
        engine.claim_stream(second)
    engine.release_stream(second)  # not the live one: nothing changes
    assert engine.stream is first
    engine.release_stream(first)
    assert engine.stream is None
    engine.check_no_stream()


def test_unknown_leader_and_closing(engine):
    assert engine.leader_for(TopicPartition("t", 0)) is None
    engine.check_open()
    engine.close(0)
    assert engine.closed
    with pytest.raises(IllegalStateError, match="closed"):
        engine.check_open()


def test_the_client_engine_alone_names_its_front_end_and_forgets_a_wakeup():
    """ClientEngine, the layer the share consumer stands on: a call after
    close names the front-end; a wakeup forgotten (close() runs to its end)
    is not raised later; closing closes the client."""
    engine = ClientEngine(consumer_config({"bootstrap_servers": "127.0.0.1:1"}), owner="KafkaShareConsumer")
    engine.wakeup()
    engine.forget_wakeup()
    engine.raise_wakeup()  # forgotten: no raise
    engine.wakeup()
    with pytest.raises(WakeupException):
        engine.raise_wakeup()
    engine.close_client()
    assert engine.closed
    with pytest.raises(IllegalStateError, match=r"\bKafkaShareConsumer is closed$"):
        engine.check_open()


def test_the_consumer_engine_is_a_client_engine_named_kafka_consumer(engine):
    assert isinstance(engine, ClientEngine)
    engine.close(0)
    with pytest.raises(IllegalStateError, match=r"\bKafkaConsumer is closed$"):
        engine.check_open()
