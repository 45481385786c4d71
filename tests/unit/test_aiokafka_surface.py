"""fastkc.aio's non-consumer pieces against the installed aiokafka 0.14.0.

- the constructor keyword table (fastkc/aio/config.py) against
  AIOKafkaConsumer.__init__'s signature: names, order, defaults; the checks
  and their error types against what aiokafka's constructor raises; the
  translation into fastkc's keys accepted by fastkc.config;
- fastkc.aio.errors against aiokafka.errors: every name, errno, message,
  flag and subclass relation, every difference listed with its reason;
- the listener / token-provider ABCs, the structs (fields, a record decoded
  by both libraries from the same bytes), commit()'s offsets argument;
- AIOKafkaConsumer's public surface recorded (EXPECTED_SURFACE, checked
  against aiokafka here) and required of fastkc.aio.AIOKafkaConsumer
  (fastkc/aio/consumer.py).
"""
import asyncio
import dataclasses
import inspect
import ssl
import types
import warnings

import pytest

aiokafka = pytest.importorskip("aiokafka")  # a dev dependency; the only reason to skip
import aiokafka.abc as aabc  # noqa: E402
import aiokafka.errors as aerrors  # noqa: E402
import aiokafka.structs as astructs  # noqa: E402
import aiokafka.util as autil  # noqa: E402

import fastkc  # noqa: E402
import fastkc.errors as ferrors  # noqa: E402
from fastkc.aio import abc as oabc  # noqa: E402
from fastkc.aio import config as oconfig  # noqa: E402
from fastkc.aio import errors as oerrors  # noqa: E402
from fastkc.aio import structs as ostructs  # noqa: E402

_EMPTY = inspect.Parameter.empty


def _aiokafka_keywords():
    params = inspect.signature(aiokafka.AIOKafkaConsumer.__init__).parameters.values()
    return [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


# --- the constructor keywords ------------------------------------------------------

# default differences, each deliberate
DEFAULT_DIFFERENCES = {
    # the id a broker logs and applies client-id quotas to: fastkc does not
    # announce itself as aiokafka
    "client_id": ("aiokafka-0.14.0", "fastkc-aio-" + fastkc.__version__),
}


def test_keyword_table_is_aiokafkas_signature():
    keywords = _aiokafka_keywords()
    ours = [key.name for key in oconfig.KEYS if key.name not in oconfig.FASTKC_ADDITIONS]
    assert ours == [p.name for p in keywords], "same keywords in the same order"
    assert [key.name for key in oconfig.KEYS][len(ours):] == list(oconfig.FASTKC_ADDITIONS)
    resolved = oconfig.resolve().aio
    for param in keywords:
        if param.name in DEFAULT_DIFFERENCES:
            assert (param.default, resolved[param.name]) == DEFAULT_DIFFERENCES[param.name]
        elif param.name == "partition_assignment_strategy":
            # aiokafka's RoundRobinPartitionAssignor: fastkc's class of the same protocol name
            assert [a.name for a in param.default] == [a.name for a in resolved[param.name]] == ["roundrobin"]
            assert all(a.__module__.startswith("fastkc.") for a in resolved[param.name])
        else:
            assert resolved[param.name] == param.default, param.name


def test_the_signature_itself_takes_topics_first():
    params = list(inspect.signature(aiokafka.AIOKafkaConsumer.__init__).parameters.values())
    assert [(p.name, p.kind) for p in params[:2]] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("topics", inspect.Parameter.VAR_POSITIONAL)]


def _aiokafka_construct(**kwargs):
    """What aiokafka's constructor raises for kwargs (it needs a running loop)."""

    async def construct():
        consumer = aiokafka.AIOKafkaConsumer(**kwargs)
        consumer._closed = True  # nothing was started; silences its ResourceWarning
        return consumer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            asyncio.run(construct())
        except Exception as exc:  # noqa: BLE001 - the type is the result
            return exc
    return None


# (kwargs, the builtin type aiokafka's constructor raises, the key our message names)
REFUSED_BY_BOTH = [
    (dict(security_protocol="BOGUS"), ValueError, "security_protocol"),
    (dict(security_protocol="SSL"), ValueError, "ssl_context"),
    (dict(security_protocol="SASL_SSL", sasl_plain_username="u", sasl_plain_password="p"), ValueError,
     "ssl_context"),
    (dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="KERBEROS"), ValueError, "sasl_mechanism"),
    (dict(security_protocol="SASL_PLAINTEXT"), ValueError, "sasl_plain_username"),
    (dict(security_protocol="SASL_PLAINTEXT", sasl_plain_username="u"), ValueError, "sasl_plain_username"),
    (dict(max_poll_records=0), ValueError, "max_poll_records"),
    (dict(max_poll_records="10"), ValueError, "max_poll_records"),
    (dict(no_such_option=1), TypeError, "no_such_option"),
]


@pytest.mark.parametrize("kwargs,builtin,key", REFUSED_BY_BOTH, ids=[str(c[0]) for c in REFUSED_BY_BOTH])
def test_refused_like_aiokafka(kwargs, builtin, key):
    theirs = _aiokafka_construct(**kwargs)
    assert isinstance(theirs, builtin), theirs
    with pytest.raises(ferrors.KafkaConfigurationError, match=key) as info:
        oconfig.resolve(**kwargs)
    # an `except ValueError` / `except TypeError` written for aiokafka still catches ours
    assert isinstance(info.value, builtin)


# aiokafka constructs these (and fails later, or never); fastkc refuses them at once
REFUSED_BY_FASTKC_ONLY = [
    # aiokafka: ValueError only at start() ("Incorrect isolation level")
    (dict(isolation_level="read_comitted"), ValueError, "isolation_level"),
    # aiokafka: a logged warning at start(), then behaves as "none" (Java refuses the value)
    (dict(auto_offset_reset="smallest"), ValueError, "auto_offset_reset"),
    # aiokafka: its fetches time out (the fetch waits longer than the request may take)
    (dict(fetch_max_wait_ms=45000), ValueError, "fetch_max_wait_ms"),
    # aiokafka checks no types: these fail somewhere inside it later
    (dict(fetch_max_bytes="1048576"), TypeError, "fetch_max_bytes"),
    (dict(enable_auto_commit="false"), TypeError, "enable_auto_commit"),
    (dict(session_timeout_ms=0), ValueError, "session_timeout_ms"),
    (dict(group_id=7), TypeError, "group_id"),
    (dict(ssl_context="ca.pem"), TypeError, "ssl_context"),
    (dict(value_deserializer="json"), TypeError, "value_deserializer"),
    (dict(partition_assignment_strategy=[]), TypeError, "partition_assignment_strategy"),
    (dict(partition_assignment_strategy=[object]), TypeError, "partition_assignment_strategy"),
    # fastkc.config's own checks, reached through the translation (kafka-python's key names)
    (dict(bootstrap_servers="host:99999"), None, "bootstrap server"),
    (dict(group_instance_id=""), None, "group_instance_id"),
]


@pytest.mark.parametrize("kwargs,builtin,key", REFUSED_BY_FASTKC_ONLY,
                         ids=[str(c[0]) for c in REFUSED_BY_FASTKC_ONLY])
def test_refused_by_fastkc_where_aiokafka_constructs(kwargs, builtin, key):
    assert _aiokafka_construct(**kwargs) is None
    with pytest.raises(ferrors.KafkaConfigurationError, match=key) as info:
        oconfig.resolve(**kwargs)
    if builtin is not None:
        assert isinstance(info.value, builtin)


def test_fastkc_additions_are_checked():
    with pytest.raises(oerrors.ConfigValueError, match="group_protocol"):
        oconfig.resolve(group_protocol="cooperative")
    with pytest.raises(oerrors.ConfigTypeError, match="group_remote_assignor"):
        oconfig.resolve(group_remote_assignor=3)


def test_aiokafka_quirk_unknown_reset_policy_becomes_none(caplog):
    from aiokafka.consumer.fetcher import OffsetResetStrategy

    assert OffsetResetStrategy.from_str("smallest") == OffsetResetStrategy.NONE
    assert "Unrecognized" in caplog.text
    # ... and reads case-insensitively, which fastkc.aio keeps
    assert OffsetResetStrategy.from_str("EARLIEST") == OffsetResetStrategy.EARLIEST
    assert oconfig.resolve(auto_offset_reset="EARLIEST").core["auto_offset_reset"] == "earliest"


@pytest.mark.parametrize("name,value", [("api_version", "2.8.0"), ("loop", None)])
def test_deprecated_keywords_warn_and_stay_out_of_the_core(name, value):
    if name == "loop":
        value = asyncio.new_event_loop()
    try:
        with pytest.warns(DeprecationWarning, match="deprecated"):
            resolved = oconfig.resolve(**{name: value})
    finally:
        if name == "loop":
            value.close()
    assert resolved.aio[name] is value
    # kafka-python's api_version pins protocol versions: aiokafka's is a no-op, so it must not reach the core
    assert resolved.core["api_version"] is None
    assert name not in resolved.driver
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oconfig.resolve()  # the defaults warn about nothing


def test_translation_defaults():
    resolved = oconfig.resolve(bootstrap_servers="broker1:9093,broker2")
    core = resolved.core
    assert core["bootstrap_servers"] == [("broker1", 9093), ("broker2", 9092)]
    assert core["client_id"] == "fastkc-aio-" + fastkc.__version__
    assert core["request_timeout_ms"] == 40000 and core["session_timeout_ms"] == 10000
    assert core["client_rack"] == ""
    assert core["sasl_mechanism"] is None  # PLAINTEXT: aiokafka's "PLAIN" default is not a SASL request
    assert core["connections_max_idle_ms"] == 540000
    # kafka-python's consumer_timeout_ms stops iteration: aiokafka's 200 must never reach it
    assert core["consumer_timeout_ms"] == float("inf")
    assert core["max_poll_records"] == 500  # the core's step; getmany's cap is the driver's
    assert resolved.driver == {"key_deserializer": None, "value_deserializer": None, "rebalance_timeout_ms": 10000,
                               "consumer_timeout_ms": 200, "max_poll_records": None, "decode_threads": 1}


def test_decode_threads():
    assert oconfig.resolve(decode_threads=0).driver["decode_threads"] == 0
    for bad in (2, -1, True, "1", None):
        with pytest.raises(ValueError, match="decode_threads"):
            oconfig.resolve(decode_threads=bad)


def test_translation_of_the_keys_that_differ():
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as AioRoundRobin
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as AioSticky

    import fastkc.assignors as fassignors

    class Custom:
        name = "custom"
        version = 0

        @classmethod
        def assign(cls, cluster, members):
            return {}

    def decode(raw):
        return raw

    resolved = oconfig.resolve(
        partition_assignment_strategy=[AioSticky, AioRange, AioRoundRobin, Custom],
        connections_max_idle_ms=None, rebalance_timeout_ms=20000, max_poll_records=7,
        client_rack="rack-a", value_deserializer=decode, consumer_timeout_ms=50.5, group_id="g",
        group_protocol="consumer", group_remote_assignor="uniform")
    core = resolved.core
    assert core["partition_assignment_strategy"] == [fassignors.StickyPartitionAssignor,
                                                     fassignors.RangePartitionAssignor,
                                                     fassignors.RoundRobinPartitionAssignor, Custom]
    assert core["connections_max_idle_ms"] == 2 ** 31 - 1
    assert core["client_rack"] == "rack-a"
    assert (core["group_protocol"], core["group_remote_assignor"]) == ("consumer", "uniform")
    assert core["value_deserializer"] is None  # the driver applies it, aiokafka's way
    assert resolved.driver["value_deserializer"] is decode
    assert resolved.driver["rebalance_timeout_ms"] == 20000
    assert resolved.driver["max_poll_records"] == 7
    assert resolved.driver["consumer_timeout_ms"] == 50.5
    # a connections_max_idle_ms below request_timeout_ms: aiokafka takes it, fastkc's core needs it above
    assert oconfig.resolve(connections_max_idle_ms=1000).core["connections_max_idle_ms"] == 40001


def test_translation_of_security_settings():
    context = ssl.create_default_context()
    resolved = oconfig.resolve(security_protocol="SASL_SSL", ssl_context=context, sasl_mechanism="SCRAM-SHA-512",
                               sasl_plain_username="u", sasl_plain_password="p")
    core = resolved.core
    assert (core["security_protocol"], core["sasl_mechanism"], core["ssl_context"]) == (
        "SASL_SSL", "SCRAM-SHA-512", context)
    assert (core["sasl_plain_username"], core["sasl_plain_password"]) == ("u", "p")

    class Tokens(oabc.AbstractTokenProvider):
        async def token(self):
            return "t"

    provider = Tokens()
    core = oconfig.resolve(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                           sasl_oauth_token_provider=provider).core
    assert core["sasl_oauth_token_provider"] is provider
    core = oconfig.resolve(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
                           sasl_kerberos_service_name="kfk", sasl_kerberos_domain_name="example.org").core
    assert (core["sasl_kerberos_service_name"], core["sasl_kerberos_domain_name"]) == ("kfk", "example.org")


# --- errors --------------------------------------------------------------------------

def _aiokafka_error_names():
    return sorted(n for n in dir(aerrors) if not n.startswith("_") and inspect.isclass(getattr(aerrors, n))
                  and issubclass(getattr(aerrors, n), BaseException))


# (subclass, class): aiokafka's answer to issubclass -> fastkc's; kafka-python 3's hierarchy, which fastkc keeps
HIERARCHY_DIFFERENCES = {
    # kafka-python 3 (and fastkc) raise NoBrokersAvailable as a KafkaTimeoutError (bootstrap timed out)
    ("NoBrokersAvailable", "KafkaTimeoutError"): (False, True),
    # fastkc's is the broker's UNSUPPORTED_VERSION (errno 35) found by the client, as in kafka-python
    ("IncompatibleBrokerVersion", "BrokerResponseError"): (False, True),
    ("IncompatibleBrokerVersion", "UnsupportedVersionError"): (False, True),
}

# (name, attribute): (aiokafka's, fastkc's); fastkc's flags are the Java client's Errors table
# (kafka-python 3's for the client-side classes), which the sync consumer already uses
ATTRIBUTE_DIFFERENCES = {
    ("ConcurrentTransactions", "retriable"): (False, True),
    ("CorruptRecordException", "retriable"): (False, True),  # Java's CorruptRecordException is retriable
    ("InvalidMessageError", "retriable"): (False, True),  # the same class
    ("FetchSessionIdNotFound", "retriable"): (False, True),
    ("InvalidFetchSessionEpoch", "retriable"): (False, True),
    ("KafkaProtocolError", "retriable"): (True, False),  # kafka-python 3: malformed bytes do not heal
    ("KafkaTimeoutError", "retriable"): (False, True),
    ("ListenerNotFound", "retriable"): (False, True),
    ("ListenerNotFound", "invalid_metadata"): (False, True),
    ("NoBrokersAvailable", "invalid_metadata"): (True, False),
    ("ReplicaNotAvailableError", "retriable"): (False, True),
    ("ReplicaNotAvailableError", "invalid_metadata"): (False, True),
    ("IncompatibleBrokerVersion", "errno"): (None, 35),
    ("IncompatibleBrokerVersion", "message"): (None, "UNSUPPORTED_VERSION"),
    # errno 13 is Kafka's NETWORK_EXCEPTION (Errors.java); aiokafka keeps a name Kafka retired
    ("StaleLeaderEpochCodeError", "retriable"): (False, True),
    ("StaleLeaderEpochCodeError", "invalid_metadata"): (False, True),
    ("StaleLeaderEpochCodeError", "message"): ("STALE_LEADER_EPOCH_CODE", "NETWORK_EXCEPTION"),
}


def test_every_aiokafka_error_name_exists():
    names = _aiokafka_error_names()
    assert len(names) > 100
    assert [n for n in names if not hasattr(oerrors, n)] == []
    assert sorted(oerrors.__all__) == sorted(aerrors.__all__)
    for name in oerrors.__all__:
        assert inspect.isclass(getattr(oerrors, name)), name


def test_names_kafka_python_shares_are_fastkcs_classes():
    shared = [n for n in _aiokafka_error_names() if hasattr(ferrors, n)]
    assert "KafkaError" in shared and "OffsetOutOfRangeError" in shared
    for name in shared:
        assert getattr(oerrors, name) is getattr(ferrors, name), name


def test_broker_codes_map_to_one_class_under_both_names():
    for name in _aiokafka_error_names():
        theirs = getattr(aerrors, name)
        errno = getattr(theirs, "errno", None)
        if errno is None or not issubclass(theirs, aerrors.BrokerResponseError):
            continue
        ours = getattr(oerrors, name)
        assert ours.errno == errno, name
        # what fastkc's core raises for the code is what `except aiokafka_name` catches
        assert oerrors.for_code(errno) is ours, name
        if (name, "message") not in ATTRIBUTE_DIFFERENCES:
            assert ours.message == theirs.message, name
    assert oerrors.GroupLoadInProgressError is ferrors.CoordinatorLoadInProgressError
    assert oerrors.SaslAuthenticationFailed is ferrors.SaslAuthenticationFailedError
    # an unknown code: aiokafka says UnknownError; fastkc a subclass of it that keeps the code
    assert issubclass(oerrors.for_code(9999), oerrors.UnknownError)
    assert aerrors.for_code(9999) is aerrors.UnknownError


def test_except_clauses_catch_the_same_classes():
    names = _aiokafka_error_names()
    found = {}
    for sub in names:
        for sup in names:
            if sub != sup:
                theirs = issubclass(getattr(aerrors, sub), getattr(aerrors, sup))
                ours = issubclass(getattr(oerrors, sub), getattr(oerrors, sup))
                if theirs != ours:
                    found[(sub, sup)] = (theirs, ours)
    assert found == HIERARCHY_DIFFERENCES


def test_flags_and_codes_are_aiokafkas_but_the_listed():
    found = {}
    for name in _aiokafka_error_names():
        for attr in ("retriable", "invalid_metadata", "errno", "message"):
            theirs = getattr(getattr(aerrors, name), attr, None)
            ours = getattr(getattr(oerrors, name), attr, None)
            if theirs != ours:
                found[(name, attr)] = (theirs, ours)
    assert found == ATTRIBUTE_DIFFERENCES


def test_aiokafka_only_errors_keep_their_bases():
    # plain Exceptions in aiokafka: `except KafkaError` must not start catching a stopped consumer
    for name in ("ConsumerStoppedError", "IllegalOperation"):
        assert not issubclass(getattr(oerrors, name), ferrors.KafkaError)
        assert getattr(oerrors, name).__mro__[1] is Exception
    for name in ("RecordTooLargeError", "AuthenticationFailedError", "AuthenticationMethodNotSupported",
                 "KafkaUnavailableError", "ProducerClosed", "ProducerFenced"):
        assert getattr(oerrors, name).__mro__[1] is ferrors.KafkaError, name
    assert str(oerrors.ProducerFenced()).startswith("ProducerFenced: There is a newer producer")
    # the configuration errors are both fastkc's and the builtin aiokafka raised
    assert issubclass(oerrors.ConfigValueError, (ferrors.KafkaConfigurationError))
    assert issubclass(oerrors.ConfigValueError, ValueError)
    assert issubclass(oerrors.ConfigTypeError, TypeError)
    assert oerrors.KafkaConfigurationError is ferrors.KafkaConfigurationError


# --- listener and token provider ------------------------------------------------------------

def test_abstract_classes_have_aiokafkas_abstract_methods():
    for ours, theirs in ((oabc.ConsumerRebalanceListener, aabc.ConsumerRebalanceListener),
                         (oabc.AbstractTokenProvider, aabc.AbstractTokenProvider)):
        assert ours.__abstractmethods__ == theirs.__abstractmethods__
        for name in ours.__abstractmethods__ | {"extensions"} & set(dir(theirs)):
            # parameters and defaults (fastkc's are annotated, aiokafka's are not)
            assert _bare_signature(getattr(ours, name)) == _bare_signature(getattr(theirs, name)), name
            assert inspect.iscoroutinefunction(getattr(ours, name)) == inspect.iscoroutinefunction(
                getattr(theirs, name)), name
    assert not hasattr(oabc.ConsumerRebalanceListener, "on_partitions_lost")

    class Half(oabc.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

    with pytest.raises(TypeError):
        Half()


def test_listener_callbacks_sync_and_async():
    calls = []

    class Listener(oabc.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            calls.append(("revoked", revoked))

        async def on_partitions_assigned(self, assigned):
            await asyncio.sleep(0)
            calls.append(("assigned", assigned))
            return "done"

    listener = oabc.check_listener(Listener())
    tps = [ostructs.TopicPartition("t", 0)]

    async def run():
        assert await oabc.call_listener(listener.on_partitions_revoked, tps) is None
        assert await oabc.call_listener(listener.on_partitions_assigned, tps) == "done"

    asyncio.run(run())
    assert calls == [("revoked", tps), ("assigned", tps)]
    assert oabc.check_listener(None) is None
    with pytest.raises(TypeError, match="ConsumerRebalanceListener"):
        oabc.check_listener(object())
    # aiokafka's own listener class is not ours (as aiokafka refuses ours): the import must change
    with pytest.raises(TypeError):
        class TheirListener(aabc.ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                pass

        oabc.check_listener(TheirListener())


def test_listener_errors_propagate_to_the_driver():
    async def failing(partitions):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(oabc.call_listener(failing, []))


# --- structs ------------------------------------------------------------------------

def test_struct_fields_are_aiokafkas():
    assert [f.name for f in dataclasses.fields(ostructs.ConsumerRecord)] == [
        f.name for f in dataclasses.fields(astructs.ConsumerRecord)]
    assert ostructs.ConsumerRecord.__hash__ is None and astructs.ConsumerRecord.__hash__ is None
    for name in ("OffsetAndMetadata", "OffsetAndTimestamp", "BrokerMetadata", "PartitionMetadata",
                 "RecordMetadata", "TopicPartition"):
        assert getattr(ostructs, name)._fields == getattr(astructs, name)._fields, name
    assert set(astructs.__all__) <= set(ostructs.__all__)
    import fastkc.aio
    import fastkc.structs

    assert ostructs.TopicPartition is fastkc.structs.TopicPartition
    theirs, ours = astructs.TopicPartition("t", 3), ostructs.TopicPartition("t", 3)
    assert theirs == ours and hash(theirs) == hash(ours) and {theirs: 1}[ours] == 1
    # the package exports what aiokafka's exports, its producer and low-level client aside
    assert set(aiokafka.__all__) - set(fastkc.aio.__all__) == {"AIOKafkaProducer", "AIOKafkaClient"}


def test_a_record_decoded_by_both_libraries():
    """The same batch through aiokafka's record reader and fastkc's decoder:
    from_fastkc_record() gives aiokafka's record exactly."""
    from aiokafka.consumer.fetcher import PartitionRecords
    from aiokafka.record.memory_records import MemoryRecords

    import fastkc.records
    from tests.support import batchgen

    records = [
        batchgen.Record(key=b"k0", value=b"v0", headers=[("h", b"1"), ("h", None)], offset_delta=0,
                        timestamp_delta=0),
        batchgen.Record(key=None, value=b"", headers=[], offset_delta=1, timestamp_delta=5),
        batchgen.Record(key=b"", value=None, headers=[("\u00fc", b"\x00")], offset_delta=2, timestamp_delta=9),
    ]
    blob = batchgen.record_batch(records, base_offset=40, leader_epoch=3)
    reader = MemoryRecords(blob)
    batch = reader.next_batch()
    fake_fetcher = types.SimpleNamespace(_key_deserializer=None, _value_deserializer=None)
    tp = astructs.TopicPartition("topic-a", 2)
    theirs = [PartitionRecords._consumer_record(fake_fetcher, tp, r) for r in batch]
    decoded = fastkc.records.decode(blob, topic="topic-a", partition=2, fetch_offset=40)
    ours = [ostructs.from_fastkc_record(r) for r in decoded]
    assert [dataclasses.astuple(r) for r in ours] == [dataclasses.astuple(r) for r in theirs]
    # what the conversion drops
    assert [r.leader_epoch for r in decoded] == [3, 3, 3]
    assert [r.serialized_header_size for r in decoded] == [3, -1, 3]
    assert [r.checksum for r in theirs] == [None, None, None]


COMMIT_OFFSETS = [
    {ostructs.TopicPartition("t", 0): 5},
    {ostructs.TopicPartition("t", 0): (5, "meta"), ostructs.TopicPartition("t", 1): 0},
    {ostructs.TopicPartition("t", 0): ostructs.OffsetAndMetadata(9, "")},
    {},
    None,
    [(ostructs.TopicPartition("t", 0), 5)],
    {("t", 0): 5},
    {ostructs.TopicPartition("t", 0): (5, None)},
    {ostructs.TopicPartition("t", 0): (5,)},
    {ostructs.TopicPartition("t", 0): "5"},
]


@pytest.mark.parametrize("offsets", COMMIT_OFFSETS, ids=[repr(o) for o in COMMIT_OFFSETS])
def test_commit_offsets_like_aiokafka(offsets):
    # aiokafka checks its own TopicPartition class; give it its own keys
    def theirs_of(value):
        if isinstance(value, dict):
            return {(astructs.TopicPartition(*k) if isinstance(k, ostructs.TopicPartition) else k): v
                    for k, v in value.items()}
        return value

    try:
        expected = autil.commit_structure_validate(theirs_of(offsets))
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            ostructs.normalize_commit_offsets(offsets)
        return
    got = ostructs.normalize_commit_offsets(offsets)
    assert {tuple(k): tuple(v) for k, v in got.items()} == {tuple(k): tuple(v) for k, v in expected.items()}
    assert all(type(v) is ostructs.OffsetAndMetadata for v in got.values())


@pytest.mark.parametrize("offset", [True, -5, "7"])
def test_commit_offsets_stricter_than_aiokafka(offset):
    tp = ostructs.TopicPartition("t", 0)
    # aiokafka sends these to the broker as they are
    assert autil.commit_structure_validate({astructs.TopicPartition("t", 0): (offset, "")})
    with pytest.raises(ValueError, match="int >= 0"):
        ostructs.normalize_commit_offsets({tp: (offset, "")})


def test_commit_offsets_take_fastkc_and_aiokafka_keys():
    import fastkc.structs

    got = ostructs.normalize_commit_offsets(
        {astructs.TopicPartition("t", 1): fastkc.structs.OffsetAndMetadata(3, "m", 7)})
    assert got == {ostructs.TopicPartition("t", 1): ostructs.OffsetAndMetadata(3, "m")}


# --- the consumer class to come -----------------------------------------------------------

# aiokafka 0.14.0's AIOKafkaConsumer: public methods and the async protocol
# methods, as (kind, signature). The signature of __init__ is checked through
# the keyword table above (its defaults are the table's).
EXPECTED_SURFACE = {
    "__aenter__": ("async", "(self)"),
    "__aexit__": ("async", "(self, exc_type, exc, tb)"),
    "__aiter__": ("sync", "(self)"),
    "__anext__": ("async", "(self)"),
    "assign": ("sync", "(self, partitions)"),
    "assignment": ("sync", "(self)"),
    "beginning_offsets": ("async", "(self, partitions)"),
    "commit": ("async", "(self, offsets=None)"),
    "committed": ("async", "(self, partition)"),
    "end_offsets": ("async", "(self, partitions)"),
    "getmany": ("async", "(self, *partitions, timeout_ms=0, max_records=None)"),
    "getone": ("async", "(self, *partitions)"),
    "highwater": ("sync", "(self, partition)"),
    "last_poll_timestamp": ("sync", "(self, partition)"),
    "last_stable_offset": ("sync", "(self, partition)"),
    "offsets_for_times": ("async", "(self, timestamps)"),
    "partitions_for_topic": ("sync", "(self, topic)"),
    "pause": ("sync", "(self, *partitions)"),
    "paused": ("sync", "(self)"),
    "position": ("async", "(self, partition)"),
    "resume": ("sync", "(self, *partitions)"),
    "seek": ("sync", "(self, partition, offset)"),
    "seek_to_beginning": ("async", "(self, *partitions)"),
    "seek_to_committed": ("async", "(self, *partitions)"),
    "seek_to_end": ("async", "(self, *partitions)"),
    "start": ("async", "(self)"),
    "stop": ("async", "(self)"),
    "subscribe": ("sync", "(self, topics=(), pattern=None, listener=None)"),
    "subscription": ("sync", "(self)"),
    "topics": ("async", "(self)"),
    "unsubscribe": ("sync", "(self)"),
}
# what fastkc.aio.AIOKafkaConsumer adds (issue 12)
EXPECTED_EXTRAS = {"getmany_arrow"}
_PROTOCOL = ("__aenter__", "__aexit__", "__aiter__", "__anext__")


def _bare_signature(function):
    """A function's signature without its annotations, as a string."""
    signature = inspect.signature(function).replace(return_annotation=_EMPTY)
    return str(signature.replace(parameters=[p.replace(annotation=_EMPTY) for p in signature.parameters.values()]))


def _surface(cls):
    found = {}
    for name in dir(cls):
        if name.startswith("_") and name not in _PROTOCOL:
            continue
        value = inspect.getattr_static(cls, name)
        if not callable(value):
            continue
        kind = "async" if inspect.iscoroutinefunction(value) else "sync"
        found[name] = (kind, _bare_signature(value))
    return found


def test_expected_surface_is_aiokafkas():
    assert _surface(aiokafka.AIOKafkaConsumer) == EXPECTED_SURFACE


def _init_keywords(cls):
    params = inspect.signature(cls.__init__).parameters.values()
    return [(p.name, p.kind) for p in params]


def test_fastkc_aio_consumer_has_aiokafkas_surface():
    from fastkc.aio import AIOKafkaConsumer

    surface = _surface(AIOKafkaConsumer)
    assert {n: s for n, s in surface.items() if n not in EXPECTED_EXTRAS} == EXPECTED_SURFACE
    assert EXPECTED_EXTRAS <= set(surface)
    assert surface["getmany_arrow"][0] == "async"
    # the constructor takes *topics and exactly the table's keywords, defaults from the table
    assert _init_keywords(AIOKafkaConsumer) == [("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                                ("topics", inspect.Parameter.VAR_POSITIONAL)] + [
        (key.name, inspect.Parameter.KEYWORD_ONLY) for key in oconfig.KEYS]
    for param in list(inspect.signature(AIOKafkaConsumer.__init__).parameters.values())[2:]:
        assert param.default == oconfig.KEYS_BY_NAME[param.name].default, param.name
