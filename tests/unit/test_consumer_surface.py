"""The parts of kafka-python 3's consumer surface fastkc filled in for issue
10, against a scripted peer: DEFAULT_CONFIG, config["api_version"] (kafka-
python's inference from ApiVersions), bootstrap(timeout_ms, refresh), the
error table's UNSUPPORTED_VERSION, the abstract listener; and wakeup() with
Java's semantics (a poll() blocked in another thread raises WakeupException
promptly; with no poll in flight the next poll raises it, once)."""
import random
import threading
import time

import pytest

from fastkc import ConsumerRebalanceListener, KafkaConsumer, errors
from fastkc.cluster.broker_version import infer_broker_version
from fastkc.config import consumer_config
from fastkc.structs import ConsumerGroupMetadata, MemberState, OffsetAndMetadata, TopicPartition
from tests.support.fake_broker import API_KEYS, ScriptedPeer
from tests.support.fake_broker import cluster_handler as _cluster_handler
from tests.support.wakeup import assert_wakeup_ends, call_in_thread

TP = TopicPartition("t", 0)


class _Served:
    """A scripted peer answering ApiVersions and Metadata from a thread
    (Fetch and ListOffsets go unanswered)."""

    def __init__(self):
        box = [0]
        self.peer = ScriptedPeer(_cluster_handler(box))
        box[0] = self.peer.port
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                self.peer.service()
            except OSError:
                return
            time.sleep(0.002)

    def consumer(self, **configs):
        return KafkaConsumer(bootstrap_servers="127.0.0.1:{0}".format(self.peer.port),
                             bootstrap_timeout_ms=3000, **configs)

    def close(self):
        self.stop.set()
        self.thread.join()
        self.peer.close()


@pytest.fixture
def served():
    s = _Served()
    yield s
    s.close()


@pytest.fixture
def consumer(served):
    c = served.consumer()
    yield c
    c.close()


# --- DEFAULT_CONFIG, api_version, bootstrap ----------------------------------------------
def test_default_config_is_every_key_with_its_default(consumer):
    assert set(KafkaConsumer.DEFAULT_CONFIG) == set(consumer.config) == set(consumer_config({}))
    assert KafkaConsumer.DEFAULT_CONFIG["fetch_max_wait_ms"] == 500
    assert KafkaConsumer.DEFAULT_CONFIG["api_version"] is None
    assert KafkaConsumer.DEFAULT_SESSION_TIMEOUT_MS_PRE_KIP_735 == 30000


def _as_kafka_python_infers(api_versions):
    from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions

    return infer_broker_version_from_api_versions(api_versions)


def test_api_version_is_filled_in_from_the_brokers_api_versions(consumer):
    pytest.importorskip("kafka")
    answered = {k["api_key"]: (k["min_version"], k["max_version"]) for k in API_KEYS}
    assert isinstance(consumer.config["api_version"], tuple)
    assert consumer.config["api_version"] == _as_kafka_python_infers(answered)


def test_a_configured_api_version_is_kept(served):
    c = served.consumer(api_version=(2, 8))
    try:
        assert c.config["api_version"] == (2, 8)
    finally:
        c.close()


def test_broker_version_inference_matches_kafka_pythons():
    pytest.importorskip("kafka")
    rng = random.Random(10)
    keys = [0, 1, 2, 3, 4, 9, 11, 24, 29, 35, 48, 18]
    for _ in range(3000):
        api_versions = {}
        for key in rng.sample(keys, rng.randint(0, len(keys))):
            low = rng.randint(0, 6)
            api_versions[key] = (low, low + rng.randint(0, 14))
        assert infer_broker_version(api_versions) == _as_kafka_python_infers(api_versions), api_versions
    assert infer_broker_version({}) == (0, 10, 0)


def test_bootstrap_returns_at_once_when_bootstrapped(served, consumer):
    before = len(served.peer.requests)
    consumer.bootstrap()
    consumer.bootstrap(timeout_ms=0)
    assert len(served.peer.requests) == before


def test_bootstrap_refresh_bootstraps_anew(served, consumer):
    # the scripted peer takes one connection: the refreshed bootstrap goes to
    # a second one, standing at the bootstrap address (the cluster moved)
    second = _Served()
    try:
        consumer.config["bootstrap_servers"] = [("127.0.0.1", second.peer.port)]
        consumer.bootstrap(timeout_ms=3000, refresh=True)
        names = [h["api_name"] for h, _ in second.peer.requests]
        assert names[:2] == ["ApiVersions", "Metadata"]
        assert consumer.bootstrap_connected()
        assert isinstance(consumer.config["api_version"], tuple)
    finally:
        consumer.close()
        second.close()


def test_bootstrap_refresh_without_brokers_times_out(served, consumer):
    served.close()
    start = time.monotonic()
    with pytest.raises(errors.KafkaTimeoutError):
        consumer.bootstrap(timeout_ms=300, refresh=True)
    assert time.monotonic() - start < 5
    served.peer = ScriptedPeer(lambda h, b: None)  # for the fixture's close()
    served.stop = threading.Event()
    served.thread = threading.Thread(target=lambda: None)
    served.thread.start()


def test_bootstrap_on_a_closed_consumer_is_refused(consumer):
    consumer.close()
    with pytest.raises(errors.IllegalStateError):
        consumer.bootstrap()


# --- errors, structs, listener ---------------------------------------------------------
def test_unsupported_version_is_the_brokers_code_35():
    assert errors.for_code(35) is errors.UnsupportedVersionError
    assert errors.kafka_errors[35] is errors.UnsupportedVersionError
    assert issubclass(errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError)
    assert errors.UnsupportedVersionError.description == "The version of API is not supported."
    assert errors.StaleMetadata.invalid_metadata and errors.StaleMetadata.retriable
    assert errors.Cancelled.retriable and not errors.UnknownBrokerIdError.retriable


def test_kafka_python_structs():
    assert OffsetAndMetadata(5) == (5, "", -1)
    assert OffsetAndMetadata() == (None, "", -1)
    assert ConsumerGroupMetadata() == (None, -1, "", None, MemberState.UNJOINED)


def test_listener_is_abstract_as_kafka_pythons():
    with pytest.raises(TypeError):
        ConsumerRebalanceListener()

    class Only(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            self.seen = ("revoked", revoked)

        def on_partitions_assigned(self, assigned):
            pass

    listener = Only()
    listener.on_partitions_lost([TP])  # defaults to revoked
    assert listener.seen == ("revoked", [TP])


# --- wakeup ------------------------------------------------------------------------------
def _idle(consumer):
    """Assigned, position known, paused: poll() has nothing to send or wait
    for, so only its timeout (or a wakeup) ends it."""
    consumer.assign([TP])
    consumer.seek(TP, 0)
    consumer.pause(TP)


def _poll_in_thread(consumer, timeout_ms):
    return call_in_thread(lambda: consumer.poll(timeout_ms=timeout_ms))


def test_an_idle_poll_blocks_for_its_timeout(consumer):
    # the control for the wakeup tests: without wakeup() this poll waits
    _idle(consumer)
    start = time.monotonic()
    assert consumer.poll(timeout_ms=800) == {}
    assert time.monotonic() - start >= 0.75


@pytest.mark.parametrize("paused", [True, False], ids=["idle", "fetch-unanswered"])
def test_wakeup_interrupts_a_blocked_poll(consumer, paused):
    """"idle" blocks in select for the whole timeout, so only the wakeup
    socket pair can end it promptly; "fetch-unanswered" (the scripted peer
    never answers the Fetch, and the fetcher's retry backoff wakes the loop
    every retry_backoff_ms) checks wakeup amid fetch state. The real-broker
    case is tests/integration/test_consumer_surface.py."""
    if paused:
        _idle(consumer)
    else:
        consumer.assign([TP])
        consumer.seek(TP, 0)  # the Fetch goes out and is never answered
    thread, outcome = _poll_in_thread(consumer, 30000)
    time.sleep(0.3)  # the poll is blocked in select by now
    assert_wakeup_ends(consumer, thread, outcome)
    assert outcome["took"] < 2.0
    # once: the next poll runs normally
    assert consumer.poll(timeout_ms=0) == {}


def test_wakeup_without_a_poll_makes_the_next_poll_raise_once(consumer):
    _idle(consumer)
    consumer.wakeup()
    start = time.monotonic()
    with pytest.raises(errors.WakeupException):
        consumer.poll(timeout_ms=30000)
    assert time.monotonic() - start < 0.5
    start = time.monotonic()
    assert consumer.poll(timeout_ms=300) == {}  # not raised again, and it waits as usual
    assert time.monotonic() - start >= 0.25


def test_wakeup_ends_iteration_with_wakeup_exception(served):
    c = served.consumer(consumer_timeout_ms=30000)
    try:
        _idle(c)
        c.wakeup()
        with pytest.raises(errors.WakeupException):
            next(iter(c))
    finally:
        c.close()


def test_wakeup_after_close_is_harmless(consumer):
    consumer.close()
    consumer.wakeup()


def test_wakeup_interrupts_a_position_lookup(consumer):
    # the scripted peer never answers ListOffsets: position() would wait its timeout
    consumer.assign([TP])
    consumer.seek(TP, 7)
    consumer.wakeup()
    assert consumer.position(TP) == 7  # known: no blocking, the wakeup stays pending
    consumer.seek_to_end(TP)
    start = time.monotonic()
    with pytest.raises(errors.WakeupException):
        consumer.position(TP, timeout_ms=30000)
    assert time.monotonic() - start < 0.5
    with pytest.raises(errors.KafkaTimeoutError):  # once
        consumer.position(TP, timeout_ms=300)


# --- wakeup() in the calls that wait on the group's own client or on offset lookups --------
# The scripted peer never answers FindCoordinator or ListOffsets, so each of
# these calls would wait its whole 30 s timeout.
_BLOCKING_CALLS = {
    "commit": lambda c: c.commit({TP: OffsetAndMetadata(5, "", -1)}, timeout_ms=30000),
    "committed": lambda c: c.committed(TP, timeout_ms=30000),
    "end_offsets": lambda c: c.end_offsets([TP], timeout_ms=30000),
    "offsets_for_times": lambda c: c.offsets_for_times({TP: 0}, timeout_ms=30000),
}


@pytest.mark.parametrize("name", sorted(_BLOCKING_CALLS))
def test_wakeup_interrupts_a_blocked_commit_or_lookup(served, name):
    call = _BLOCKING_CALLS[name]
    c = served.consumer(group_id="g-wakeup", request_timeout_ms=30000)
    try:
        thread, outcome = call_in_thread(lambda: call(c))
        time.sleep(0.5)  # blocked on the unanswered request by now
        assert_wakeup_ends(c, thread, outcome)
        # once: the same call now waits its (short) timeout as usual
        with pytest.raises(errors.KafkaTimeoutError):
            _short(name, c)
    finally:
        c.close()


def _short(name, c):
    if name == "commit":
        return c.commit({TP: OffsetAndMetadata(5, "", -1)}, timeout_ms=400)
    if name == "committed":
        return c.committed(TP, timeout_ms=400)
    if name == "end_offsets":
        return c.end_offsets([TP], timeout_ms=400)
    return c.offsets_for_times({TP: 0}, timeout_ms=400)


@pytest.mark.parametrize("name", sorted(_BLOCKING_CALLS))
def test_a_pending_wakeup_makes_the_next_commit_or_lookup_raise_at_once(served, name):
    c = served.consumer(group_id="g-wakeup", request_timeout_ms=30000)
    try:
        c.bootstrap(timeout_ms=3000)
        c.wakeup()
        start = time.monotonic()
        with pytest.raises(errors.WakeupException):
            _BLOCKING_CALLS[name](c)
        assert time.monotonic() - start < 1.0
    finally:
        c.close()
