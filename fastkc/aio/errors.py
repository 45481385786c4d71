"""aiokafka 0.14's error names (`aiokafka.errors`) over fastkc's error classes.

After `import aiokafka.errors` becomes `import fastkc.aio.errors`, every
`except X` clause must catch what fastkc raises for the same failure. So:

- a name aiokafka shares with kafka-python (and fastkc.errors) is fastkc's
  class itself: `fastkc.aio.errors.KafkaError is fastkc.errors.KafkaError`,
  and a broker error code maps to one class whichever front end raised it;
- a broker error aiokafka spells differently (GroupLoadInProgressError,
  NotCoordinatorForGroupError, SaslAuthenticationFailed, ...) is fastkc's
  class for the same error code under aiokafka's name (an alias, not a copy:
  a copy would not be caught by the other name);
- an error only aiokafka has (ConsumerStoppedError, IllegalOperation,
  RecordTooLargeError, ...) is a class of its own here, with aiokafka's
  bases: ConsumerStoppedError and IllegalOperation are plain Exceptions
  there, so `except KafkaError` must not catch them here either.

Deliberate differences from aiokafka (pinned in
tests/unit/test_aiokafka_surface.py, each with its reason): the retriable /
invalid_metadata flags and the parents fastkc's classes take from
kafka-python 3 and the Java client (NoBrokersAvailable is a
KafkaTimeoutError, KafkaTimeoutError is retriable, ...); errno 13 is Kafka's
NETWORK_EXCEPTION (aiokafka's StaleLeaderEpochCodeError names a code Kafka
retired), so the alias is fastkc's NetworkExceptionError.
"""
from fastkc.errors import (  # noqa: F401 - re-exported under aiokafka's names
    BrokerNotAvailableError,
    BrokerResponseError,
    Cancelled,
    ClusterAuthorizationFailedError,
    CommitFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    CorrelationIdError,
    CorruptRecordError,
    CorruptRecordException,
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    DuplicateSequenceNumberError,
    FetchSessionIdNotFoundError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    IllegalArgumentError,
    IllegalGenerationError,
    IllegalSaslStateError,
    IllegalStateError,
    IncompatibleBrokerVersion,
    InconsistentGroupProtocolError,
    InvalidCommitOffsetSizeError,
    InvalidConfigurationError,
    InvalidFetchRequestError,
    InvalidFetchSessionEpochError,
    InvalidGroupIdError,
    InvalidPartitionsError,
    InvalidPrincipalTypeError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    InvalidSessionTimeoutError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaStorageError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    ListenerNotFoundError,
    LogDirNotFoundError,
    MemberIdRequiredError,
    MessageSizeTooLargeError,
    MetadataEmptyBrokerList,
    NetworkExceptionError,
    NoBrokersAvailable,
    NodeNotReadyError,
    NoError,
    NonEmptyGroupError,
    NoOffsetForPartitionError,
    NotControllerError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OffsetMetadataTooLargeError,
    OffsetOutOfRangeError,
    OperationNotAttemptedError,
    OutOfOrderSequenceNumberError,
    PolicyViolationError,
    QuotaViolationError,
    ReassignmentInProgressError,
    RebalanceInProgressError,
    RecordListTooLargeError,
    ReplicaNotAvailableError,
    RequestTimedOutError,
    SaslAuthenticationFailedError,
    SecurityDisabledError,
    StaleControllerEpochError,
    StaleMetadata,
    TooManyInFlightRequests,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    TransactionCoordinatorFencedError,
    UnknownError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnrecognizedBrokerVersion,
    UnsupportedCodecError,
    UnsupportedForMessageFormatError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    for_code,
    kafka_errors,
)

# --- the same broker error code under aiokafka's spelling ---------------------
InvalidMessageError = CorruptRecordException  # aiokafka's backward-compatibility alias, errno 2
StaleLeaderEpochCodeError = NetworkExceptionError  # errno 13
GroupLoadInProgressError = CoordinatorLoadInProgressError  # errno 14
GroupCoordinatorNotAvailableError = CoordinatorNotAvailableError  # errno 15
NotCoordinatorForGroupError = NotCoordinatorError  # errno 16
OutOfOrderSequenceNumber = OutOfOrderSequenceNumberError  # errno 45
DuplicateSequenceNumber = DuplicateSequenceNumberError  # errno 46
InvalidProducerEpoch = InvalidProducerEpochError  # errno 47
InvalidTxnState = InvalidTxnStateError  # errno 48
InvalidProducerIdMapping = InvalidProducerIdMappingError  # errno 49
InvalidTransactionTimeout = InvalidTransactionTimeoutError  # errno 50
ConcurrentTransactions = ConcurrentTransactionsError  # errno 51
TransactionCoordinatorFenced = TransactionCoordinatorFencedError  # errno 52
TransactionalIdAuthorizationFailed = TransactionalIdAuthorizationFailedError  # errno 53
SecurityDisabled = SecurityDisabledError  # errno 54
OperationNotAttempted = OperationNotAttemptedError  # errno 55
LogDirNotFound = LogDirNotFoundError  # errno 57
SaslAuthenticationFailed = SaslAuthenticationFailedError  # errno 58
UnknownProducerId = UnknownProducerIdError  # errno 59
ReassignmentInProgress = ReassignmentInProgressError  # errno 60
DelegationTokenAuthDisabled = DelegationTokenAuthDisabledError  # errno 61
DelegationTokenNotFound = DelegationTokenNotFoundError  # errno 62
DelegationTokenOwnerMismatch = DelegationTokenOwnerMismatchError  # errno 63
DelegationTokenRequestNotAllowed = DelegationTokenRequestNotAllowedError  # errno 64
DelegationTokenAuthorizationFailed = DelegationTokenAuthorizationFailedError  # errno 65
DelegationTokenExpired = DelegationTokenExpiredError  # errno 66
InvalidPrincipalType = InvalidPrincipalTypeError  # errno 67
NonEmptyGroup = NonEmptyGroupError  # errno 68
GroupIdNotFound = GroupIdNotFoundError  # errno 69
FetchSessionIdNotFound = FetchSessionIdNotFoundError  # errno 70
InvalidFetchSessionEpoch = InvalidFetchSessionEpochError  # errno 71
ListenerNotFound = ListenerNotFoundError  # errno 72
MemberIdRequired = MemberIdRequiredError  # errno 79


# --- errors only aiokafka has ---------------------------------------------------
class ConsumerStoppedError(Exception):
    """A get*/iteration call on a stopped consumer, pending ones included.
    A plain Exception, as in aiokafka: `except KafkaError` does not catch it."""


class IllegalOperation(Exception):
    """An operation the configuration does not allow (commit() without a
    group_id). A plain Exception, as in aiokafka."""


class RecordTooLargeError(KafkaError):
    """aiokafka's error for a record larger than max_partition_fetch_bytes on
    brokers before 0.10.1 (later ones always return the first batch whole);
    kept so code that catches it imports."""


class AuthenticationMethodNotSupported(KafkaError):
    """Defined by aiokafka, raised by nothing there; kept for imports."""


class AuthenticationFailedError(KafkaError):
    """Defined by aiokafka, raised by nothing there (a refused SASL exchange
    is SaslAuthenticationFailed, errno 58); kept for imports, and not an
    alias of errno 58 so an `except` clause catches what it caught before."""

    retriable = False


class KafkaUnavailableError(KafkaError):
    """Defined by aiokafka, raised by nothing in its consumer; kept for imports."""


class ProducerClosed(KafkaError):
    """aiokafka's producer error (fastkc has no producer); kept for imports."""


class ProducerFenced(KafkaError):
    """aiokafka's producer error (fastkc has no producer); kept for imports."""

    def __init__(self, msg: str = ("There is a newer producer using the same transactional_id or "
                            "transaction timeout occurred (check that processing time is "
                            "below transaction_timeout_ms)")) -> None:
        super().__init__(msg)


# --- fastkc additions: configuration errors that keep aiokafka's types ----------
class ConfigValueError(KafkaConfigurationError, ValueError):
    """A keyword with a value aiokafka refuses with ValueError (a
    security_protocol it does not know, SSL without ssl_context, ...) or one
    fastkc refuses where aiokafka would fail later: both `except ValueError`
    (aiokafka's contract) and `except KafkaConfigurationError` catch it."""


class ConfigTypeError(KafkaConfigurationError, TypeError):
    """A keyword AIOKafkaConsumer does not take (Python's TypeError there), or
    a value of the wrong type: `except TypeError` still catches it."""


__all__ = [
    # aiokafka custom errors
    "ConsumerStoppedError",
    "NoOffsetForPartitionError",
    "RecordTooLargeError",
    "ProducerClosed",
    # Kafka Python errors
    "KafkaError",
    "IllegalStateError",
    "IllegalArgumentError",
    "NoBrokersAvailable",
    "NodeNotReadyError",
    "KafkaProtocolError",
    "CorrelationIdError",
    "Cancelled",
    "TooManyInFlightRequests",
    "StaleMetadata",
    "UnrecognizedBrokerVersion",
    "IncompatibleBrokerVersion",
    "CommitFailedError",
    "AuthenticationMethodNotSupported",
    "AuthenticationFailedError",
    "BrokerResponseError",
    # Numbered errors
    "NoError",
    "UnknownError",
    "OffsetOutOfRangeError",
    "CorruptRecordException",
    "UnknownTopicOrPartitionError",
    "InvalidFetchRequestError",
    "LeaderNotAvailableError",
    "NotLeaderForPartitionError",
    "RequestTimedOutError",
    "BrokerNotAvailableError",
    "ReplicaNotAvailableError",
    "MessageSizeTooLargeError",
    "StaleControllerEpochError",
    "OffsetMetadataTooLargeError",
    "StaleLeaderEpochCodeError",
    "GroupLoadInProgressError",
    "GroupCoordinatorNotAvailableError",
    "NotCoordinatorForGroupError",
    "InvalidTopicError",
    "RecordListTooLargeError",
    "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError",
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidGroupIdError",
    "UnknownMemberIdError",
    "InvalidSessionTimeoutError",
    "RebalanceInProgressError",
    "InvalidCommitOffsetSizeError",
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "InvalidTimestampError",
    "UnsupportedSaslMechanismError",
    "IllegalSaslStateError",
    "UnsupportedVersionError",
    "TopicAlreadyExistsError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidReplicationAssignmentError",
    "InvalidConfigurationError",
    "NotControllerError",
    "InvalidRequestError",
    "UnsupportedForMessageFormatError",
    "PolicyViolationError",
    "KafkaUnavailableError",
    "KafkaTimeoutError",
    "KafkaConnectionError",
    "UnsupportedCodecError",
]
