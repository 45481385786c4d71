"""The broker error-code table: kafka-python's names and flags, code by code."""
import inspect

import kafka.errors as kp

from fastkc import errors

# kafka-python's own code table (kafka.errors.kafka_errors): a subclass that
# inherits an errno (IncompatibleBrokerVersion < UnsupportedVersionError, 35)
# is not the class of that code
KAFKA_PYTHON = {errno: cls for errno, cls in kp.kafka_errors.items() if errno is not None}
assert all(inspect.isclass(cls) and issubclass(cls, kp.BrokerResponseError) for cls in KAFKA_PYTHON.values())

# classes fastkc defines by hand for the record decoders; their flags follow
# the decoders' needs, the code mapping still holds
HAND_WRITTEN = {2: errors.CorruptRecordError, 87: errors.InvalidRecordError}


def test_every_kafka_python_code_maps_to_the_same_name_and_flags():
    assert len(KAFKA_PYTHON) > 120
    for errno, theirs in KAFKA_PYTHON.items():
        ours = errors.for_code(errno)
        assert ours.errno == errno
        assert issubclass(ours, errors.BrokerResponseError)
        assert ours.__name__ == theirs.__name__, errno
        assert ours.message == theirs.message, errno
        if errno in HAND_WRITTEN:
            assert ours is HAND_WRITTEN[errno]
            continue
        assert bool(ours.retriable) == bool(theirs.retriable), ours.__name__
        assert bool(ours.invalid_metadata) == bool(theirs.invalid_metadata), ours.__name__
        assert issubclass(ours, errors.AuthorizationError) == issubclass(theirs, kp.AuthorizationError)
        assert getattr(errors, ours.__name__) is ours


def test_codes_newer_than_kafka_python():
    assert errors.for_code(129).__name__ == "RebootstrapRequiredError"
    assert errors.for_code(133).message == "SHARE_SESSION_LIMIT_REACHED"


def test_unknown_codes_keep_their_errno():
    cls = errors.for_code(9999)
    assert cls.errno == 9999 and issubclass(cls, errors.UnknownError)
    assert errors.for_code(9999) is cls  # one class per code
    assert "[Error 9999]" in str(cls("boom"))


def test_raising_and_catching_by_kafka_python_names():
    try:
        raise errors.for_code(3)("topic gone")
    except errors.InvalidMetadataError as exc:
        assert exc.retriable and exc.invalid_metadata
        assert str(exc) == "[Error 3] UnknownTopicOrPartitionError: topic gone"
    assert issubclass(errors.KafkaConnectionError, errors.InvalidMetadataError)
    assert issubclass(errors.CorrelationIdError, errors.KafkaProtocolError)
    assert errors.KafkaTimeoutError.retriable
