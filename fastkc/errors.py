"""Errors, named as kafka-python names them so `except` clauses carry over.

The broker error-code table (BrokerResponseError subclasses by errno) is
filled in by the protocol layer; the record-decoding errors live here because
the compiled core raises them.
"""


class KafkaError(RuntimeError):
    retriable = False
    # whether metadata should be refreshed on error
    invalid_metadata = False

    def __str__(self):
        if not self.args:
            return self.__class__.__name__
        return "{0}: {1}".format(self.__class__.__name__, super().__str__())

    def __eq__(self, other):
        return self.__class__ == other.__class__ and self.args == other.args

    __hash__ = RuntimeError.__hash__


class KafkaConfigurationError(KafkaError):
    pass


class IllegalStateError(KafkaError):
    pass


class IllegalArgumentError(KafkaError):
    pass


class UnsupportedCodecError(KafkaError):
    pass


class CommitFailedError(KafkaError):
    """An offset commit the group can no longer accept: the member was
    removed from the group or its generation is over (kafka-python's name)."""


class KafkaProtocolError(KafkaError):
    """The broker sent bytes that do not follow the protocol (kafka-python's name)."""


class ProtocolParseError(KafkaProtocolError):
    """A response payload does not match the layout its API version declares:
    truncated, an impossible or negative non-null length, an over-long varint,
    bytes left over after the body. Raised by the compiled Fetch parser and by
    the generic protocol codec alike, so callers catch one class.

    Attributes:
      api: the API name ("Fetch", ...)
      version: the API version the bytes were parsed as
      position: byte offset into the payload (header included) where parsing
                failed, -1 when unknown
      reason: what was being read and why it failed
    """

    def __init__(self, reason="", api="", version=-1, position=-1):
        self.reason = reason
        self.api = api
        self.version = version
        self.position = position
        super().__init__(
            "{0} v{1} response, byte {2}: {3}".format(api, version, position, reason)
        )

    def __reduce__(self):
        return (self.__class__, (self.reason, self.api, self.version, self.position))


class BrokerResponseError(KafkaError):
    errno = None
    message = None
    description = None

    def __str__(self):
        """Add errno to standard KafkaError str"""
        return "[Error {0}] {1}".format(self.errno, super().__str__())


class CorruptRecordError(BrokerResponseError):
    """Record bytes that cannot be decoded: bad CRC, impossible length,
    over-long varint, unknown magic, a codec failure.

    Never raised for a batch that is merely cut short at the end of a fetch
    (the broker truncates at the byte limit; that is normal).

    Attributes:
      topic, partition: where the bytes came from (as passed to decode)
      offset: the base offset of the batch (or message set entry) that failed,
              -1 when not even that could be read
      reason: what was wrong, with the byte position inside the blob
      records: the records decoded before the failure, in order, so nothing
               already valid is lost (a list, or a pyarrow.RecordBatch for
               decode_arrow)
      next_offset: offset to resume at if the caller chooses to skip the bad
              batch (the Java client never does that on its own)
    """

    errno = 2
    message = "CORRUPT_MESSAGE"
    description = (
        "This message has failed its CRC checksum, exceeds the valid size, "
        "has a null key for a compacted topic, or is otherwise corrupt."
    )
    retriable = True

    def __init__(self, reason="", topic="", partition=-1, offset=-1, records=None, next_offset=-1):
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.records = records if records is not None else []
        self.next_offset = next_offset
        super().__init__(
            "{0} (topic={1!r}, partition={2}, offset={3})".format(reason, topic, partition, offset)
        )

    def __reduce__(self):
        return (
            self.__class__,
            (self.reason, self.topic, self.partition, self.offset, self.records, self.next_offset),
        )


CorruptRecordException = CorruptRecordError


class RecordCrcError(CorruptRecordError):
    """The stored CRC (CRC32C for magic 2, CRC32 for magic 0/1) does not match."""


class InvalidRecordError(CorruptRecordError):
    """Structurally impossible bytes: bad magic, lengths that cannot hold,
    over-long or overflowing varints, trailing garbage inside a batch."""


class RecordDecompressionError(CorruptRecordError):
    """The codec rejected the compressed payload of a batch."""


class RecordBudgetExceededError(CorruptRecordError):
    """A batch needs more memory than the decoding budget allows (see
    fastkc/config.py, decode_budget()): the budget follows the configuration,
    not what a batch claims. Raised by poll() with the position left at the
    batch; seek() past it (offset + 1, or next_offset) to continue."""


class DecompressedSizeLimitError(RecordBudgetExceededError):
    """A batch decompresses to more than the configured cap
    (max_decompressed_bytes): a likely decompression bomb."""


class RecordCountLimitError(RecordBudgetExceededError):
    """A batch declares more records than the per-batch descriptor budget
    (max_batch_records): record-count amplification."""


class ArrowCapacityError(RecordBudgetExceededError):
    """A one-call Arrow decode (decode_arrow) would pass Arrow's int32
    offsets (2 GiB of keys, values or headers, or 2^31 - 1 rows): `records`
    holds the batch up to `next_offset`; decode again from there (poll_arrow
    splits into several batches by itself)."""


class FetchProgressError(InvalidRecordError):
    """The broker keeps sending data for a partition that cannot advance its
    position: an entry cut short where the broker must send it whole (the
    first partition with data in a response), or only batches below the
    fetch offset. Raised by poll() instead of refetching silently forever."""


class UnsupportedCompressionError(CorruptRecordError, UnsupportedCodecError):
    """The batch names a compression codec id that does not exist."""


# --- connection-level errors (kafka-python's names and hierarchy) ----------
class RetriableError(KafkaError):
    retriable = True


class InvalidMetadataError(RetriableError):
    invalid_metadata = True


class KafkaConnectionError(InvalidMetadataError):
    """The connection to a broker failed or was closed under a request."""


class SslAuthenticationError(KafkaConnectionError):
    """The TLS handshake failed: the broker's certificate does not verify
    (unknown CA, wrong host name, revoked), or the peers share no protocol or
    cipher. No retry can fix that, so it is raised at once, as the Java
    client's SslAuthenticationException is (kafka-python 3 reports a
    retriable KafkaConnectionError and retries until its timeout; this one
    is still caught by `except KafkaConnectionError`)."""

    retriable = False


class KafkaTimeoutError(RetriableError):
    """No (complete) answer within the timeout."""


class CorrelationIdError(RetriableError, KafkaProtocolError):
    """A response carried another correlation id than the request awaiting it."""


class AuthorizationError(BrokerResponseError):
    pass


# --- consumer-side errors (kafka-python 3.x names) ---------------------------
class NoBrokersAvailable(KafkaTimeoutError):
    """No bootstrap server answered within bootstrap_timeout_ms. A
    KafkaTimeoutError, which is what kafka-python 3.x raises there."""


class NodeNotReadyError(RetriableError):
    """A request was aimed at a broker whose connection is not ready."""


class TooManyInFlightRequests(RetriableError):
    """max_in_flight_requests_per_connection requests already await answers."""


class NoOffsetForPartitionError(KafkaError):
    """No position and auto_offset_reset='none'."""


class LogTruncationError(KafkaError):
    """The log was truncated below the position (KIP-320) and
    auto_offset_reset='none' forbids resetting past it."""


# --- the broker error-code table ---------------------------------------------
# errno, kafka-python's class name, Kafka's error name (as kafka-python spells
# it), and flags: "retriable", "metadata" (retriable and metadata must be
# refreshed), "auth" (an AuthorizationError). Codes from Kafka's
# org.apache.kafka.common.protocol.Errors; errno 2 is CorruptRecordError above.
_BROKER_ERROR_TABLE = """
  -1 UnknownError                                  UNKNOWN
   0 NoError                                       NO_ERROR
   1 OffsetOutOfRangeError                         OFFSET_OUT_OF_RANGE
   3 UnknownTopicOrPartitionError                  UNKNOWN_TOPIC_OR_PARTITION                    metadata
   4 InvalidFetchRequestError                      INVALID_FETCH_SIZE
   5 LeaderNotAvailableError                       LEADER_NOT_AVAILABLE                          metadata
   6 NotLeaderForPartitionError                    NOT_LEADER_FOR_PARTITION                      metadata
   7 RequestTimedOutError                          REQUEST_TIMED_OUT                             retriable
   8 BrokerNotAvailableError                       BROKER_NOT_AVAILABLE
   9 ReplicaNotAvailableError                      REPLICA_NOT_AVAILABLE                         metadata
  10 MessageSizeTooLargeError                      MESSAGE_SIZE_TOO_LARGE
  11 StaleControllerEpochError                     STALE_CONTROLLER_EPOCH
  12 OffsetMetadataTooLargeError                   OFFSET_METADATA_TOO_LARGE
  13 NetworkExceptionError                         NETWORK_EXCEPTION                             metadata
  14 CoordinatorLoadInProgressError                COORDINATOR_LOAD_IN_PROGRESS                  retriable
  15 CoordinatorNotAvailableError                  COORDINATOR_NOT_AVAILABLE                     retriable
  16 NotCoordinatorError                           NOT_COORDINATOR                               retriable
  17 InvalidTopicError                             INVALID_TOPIC
  18 RecordListTooLargeError                       RECORD_LIST_TOO_LARGE
  19 NotEnoughReplicasError                        NOT_ENOUGH_REPLICAS                           retriable
  20 NotEnoughReplicasAfterAppendError             NOT_ENOUGH_REPLICAS_AFTER_APPEND              retriable
  21 InvalidRequiredAcksError                      INVALID_REQUIRED_ACKS
  22 IllegalGenerationError                        ILLEGAL_GENERATION
  23 InconsistentGroupProtocolError                INCONSISTENT_GROUP_PROTOCOL
  24 InvalidGroupIdError                           INVALID_GROUP_ID
  25 UnknownMemberIdError                          UNKNOWN_MEMBER_ID
  26 InvalidSessionTimeoutError                    INVALID_SESSION_TIMEOUT
  27 RebalanceInProgressError                      REBALANCE_IN_PROGRESS
  28 InvalidCommitOffsetSizeError                  INVALID_COMMIT_OFFSET_SIZE
  29 TopicAuthorizationFailedError                 TOPIC_AUTHORIZATION_FAILED                    auth
  30 GroupAuthorizationFailedError                 GROUP_AUTHORIZATION_FAILED                    auth
  31 ClusterAuthorizationFailedError               CLUSTER_AUTHORIZATION_FAILED                  auth
  32 InvalidTimestampError                         INVALID_TIMESTAMP
  33 UnsupportedSaslMechanismError                 UNSUPPORTED_SASL_MECHANISM
  34 IllegalSaslStateError                         ILLEGAL_SASL_STATE
  35 IncompatibleBrokerVersion                     UNSUPPORTED_VERSION
  36 TopicAlreadyExistsError                       TOPIC_ALREADY_EXISTS
  37 InvalidPartitionsError                        INVALID_PARTITIONS
  38 InvalidReplicationFactorError                 INVALID_REPLICATION_FACTOR
  39 InvalidReplicationAssignmentError             INVALID_REPLICATION_ASSIGNMENT
  40 InvalidConfigurationError                     INVALID_CONFIG
  41 NotControllerError                            NOT_CONTROLLER                                retriable
  42 InvalidRequestError                           INVALID_REQUEST
  43 UnsupportedForMessageFormatError              UNSUPPORTED_FOR_MESSAGE_FORMAT
  44 PolicyViolationError                          POLICY_VIOLATION
  45 OutOfOrderSequenceNumberError                 OUT_OF_ORDER_SEQUENCE_NUMBER
  46 DuplicateSequenceNumberError                  DUPLICATE_SEQUENCE_NUMBER
  47 InvalidProducerEpochError                     INVALID_PRODUCER_EPOCH
  48 InvalidTxnStateError                          INVALID_TXN_STATE
  49 InvalidProducerIdMappingError                 INVALID_PRODUCER_ID_MAPPING
  50 InvalidTransactionTimeoutError                INVALID_TRANSACTION_TIMEOUT
  51 ConcurrentTransactionsError                   CONCURRENT_TRANSACTIONS                       retriable
  52 TransactionCoordinatorFencedError             TRANSACTION_COORDINATOR_FENCED
  53 TransactionalIdAuthorizationFailedError       TRANSACTIONAL_ID_AUTHORIZATION_FAILED         auth
  54 SecurityDisabledError                         SECURITY_DISABLED
  55 OperationNotAttemptedError                    OPERATION_NOT_ATTEMPTED
  56 KafkaStorageError                             KAFKA_STORAGE_ERROR                           metadata
  57 LogDirNotFoundError                           LOG_DIR_NOT_FOUND
  58 SaslAuthenticationFailedError                 SASL_AUTHENTICATION_FAILED
  59 UnknownProducerIdError                        UNKNOWN_PRODUCER_ID
  60 ReassignmentInProgressError                   REASSIGNMENT_IN_PROGRESS
  61 DelegationTokenAuthDisabledError              DELEGATION_TOKEN_AUTH_DISABLED
  62 DelegationTokenNotFoundError                  DELEGATION_TOKEN_NOT_FOUND
  63 DelegationTokenOwnerMismatchError             DELEGATION_TOKEN_OWNER_MISMATCH
  64 DelegationTokenRequestNotAllowedError         DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
  65 DelegationTokenAuthorizationFailedError       DELEGATION_TOKEN_AUTHORIZATION_FAILED         auth
  66 DelegationTokenExpiredError                   DELEGATION_TOKEN_EXPIRED
  67 InvalidPrincipalTypeError                     INVALID_PRINCIPAL_TYPE
  68 NonEmptyGroupError                            NON_EMPTY_GROUP
  69 GroupIdNotFoundError                          GROUP_ID_NOT_FOUND
  70 FetchSessionIdNotFoundError                   FETCH_SESSION_ID_NOT_FOUND                    retriable
  71 InvalidFetchSessionEpochError                 INVALID_FETCH_SESSION_EPOCH                   retriable
  72 ListenerNotFoundError                         LISTENER_NOT_FOUND                            metadata
  73 TopicDeletionDisabledError                    TOPIC_DELETION_DISABLED
  74 FencedLeaderEpochError                        FENCED_LEADER_EPOCH                           metadata
  75 UnknownLeaderEpochError                       UNKNOWN_LEADER_EPOCH                          metadata
  76 UnsupportedCompressionTypeError               UNSUPPORTED_COMPRESSION_TYPE
  77 StaleBrokerEpochError                         STALE_BROKER_EPOCH
  78 OffsetNotAvailableError                       OFFSET_NOT_AVAILABLE                          retriable
  79 MemberIdRequiredError                         MEMBER_ID_REQUIRED
  80 PreferredLeaderNotAvailableError              PREFERRED_LEADER_NOT_AVAILABLE                metadata
  81 GroupMaxSizeReachedError                      GROUP_MAX_SIZE_REACHED
  82 FencedInstanceIdError                         FENCED_INSTANCE_ID
  83 EligibleLeadersNotAvailableError              ELIGIBLE_LEADERS_NOT_AVAILABLE                metadata
  84 ElectionNotNeededError                        ELECTION_NOT_NEEDED                           metadata
  85 NoReassignmentInProgressError                 NO_REASSIGNMENT_IN_PROGRESS
  86 GroupSubscribedToTopicError                   GROUP_SUBSCRIBED_TO_TOPIC
  87 InvalidRecordError                            INVALID_RECORD
  88 UnstableOffsetCommitError                     UNSTABLE_OFFSET_COMMIT                        retriable
  89 ThrottlingQuotaExceededError                  THROTTLING_QUOTA_EXCEEDED                     retriable
  90 ProducerFencedError                           PRODUCER_FENCED
  91 ResourceNotFoundError                         RESOURCE_NOT_FOUND
  92 DuplicateResourceError                        DUPLICATE_RESOURCE
  93 UnacceptableCredentialError                   UNACCEPTABLE_CREDENTIAL
  94 InconsistentVoterSetError                     INCONSISTENT_VOTER_SET
  95 InvalidUpdateVersionError                     INVALID_UPDATE_VERSION
  96 FeatureUpdateFailedError                      FEATURE_UPDATE_FAILED
  97 PrincipalDeserializationFailureError          PRINCIPAL_DESERIALIZATION_FAILURE
  98 SnapshotNotFoundError                         SNAPSHOT_NOT_FOUND
  99 PositionOutOfRangeError                       POSITION_OUT_OF_RANGE
 100 UnknownTopicIdError                           UNKNOWN_TOPIC_ID                              metadata
 101 DuplicateBrokerRegistrationError              DUPLICATE_BROKER_REGISTRATION
 102 BrokerIdNotRegisteredError                    BROKER_ID_NOT_REGISTERED
 103 InconsistentTopicIdError                      INCONSISTENT_TOPIC_ID                         metadata
 104 InconsistentClusterIdError                    INCONSISTENT_CLUSTER_ID
 105 TransactionalIdNotFoundError                  TRANSACTIONAL_ID_NOT_FOUND
 106 FetchSessionTopicIdError                      FETCH_SESSION_TOPIC_ID_ERROR                  retriable
 107 IneligibleReplicaError                        INELIGIBLE_REPLICA
 108 NewLeaderElectedError                         NEW_LEADER_ELECTED
 109 OffsetMovedToTieredStorageError               OFFSET_MOVED_TO_TIERED_STORAGE
 110 FencedMemberEpochError                        FENCED_MEMBER_EPOCH
 111 UnreleasedInstanceIdError                     UNRELEASED_INSTANCE_ID
 112 UnsupportedAssignorError                      UNSUPPORTED_ASSIGNOR
 113 StaleMemberEpochError                         STALE_MEMBER_EPOCH
 114 MismatchedEndpointTypeError                   MISMATCHED_ENDPOINT_TYPE
 115 UnsupportedEndpointTypeError                  UNSUPPORTED_ENDPOINT_TYPE
 116 UnknownControllerIdError                      UNKNOWN_CONTROLLER_ID
 117 UnknownSubscriptionIdError                    UNKNOWN_SUBSCRIPTION_ID
 118 TelemetryTooLargeError                        TELEMETRY_TOO_LARGE
 119 InvalidRegistrationError                      INVALID_REGISTRATION
 120 TransactionAbortableError                     TRANSACTION_ABORTABLE
 121 InvalidRecordStateError                       INVALID_RECORD_STATE
 122 ShareSessionNotFoundError                     SHARE_SESSION_NOT_FOUND                       retriable
 123 InvalidShareSessionEpochError                 INVALID_SHARE_SESSION_EPOCH                   retriable
 124 FencedStateEpochError                         FENCED_STATE_EPOCH
 125 InvalidVoterKeyError                          INVALID_VOTER_KEY
 126 DuplicateVoterError                           DUPLICATE_VOTER
 127 VoterNotFoundError                            VOTER_NOT_FOUND
 128 InvalidRegularExpressionError                 INVALID_REGULAR_EXPRESSION
 129 RebootstrapRequiredError                      REBOOTSTRAP_REQUIRED
 130 StreamsInvalidTopologyError                   STREAMS_INVALID_TOPOLOGY
 131 StreamsInvalidTopologyEpochError              STREAMS_INVALID_TOPOLOGY_EPOCH
 132 StreamsTopologyFencedError                    STREAMS_TOPOLOGY_FENCED
 133 ShareSessionLimitReachedError                 SHARE_SESSION_LIMIT_REACHED
"""

_BY_ERRNO = {2: CorruptRecordError}


def _build_broker_errors():
    bases_for = {
        "": (BrokerResponseError,),
        "retriable": (BrokerResponseError, RetriableError),
        "metadata": (BrokerResponseError, InvalidMetadataError),
        "auth": (AuthorizationError,),
    }
    for line in _BROKER_ERROR_TABLE.strip().splitlines():
        errno, name, message, *flags = line.split()
        existing = globals().get(name)
        if isinstance(existing, type) and issubclass(existing, BrokerResponseError):
            # Defined by hand above (InvalidRecordError, raised by the record
            # decoders, must stay a CorruptRecordError): map the code to it
            # instead of shadowing it with an unrelated class.
            existing.errno, existing.message = int(errno), message
            _BY_ERRNO[int(errno)] = existing
            continue
        cls = type(name, bases_for[flags[0] if flags else ""], {
            "errno": int(errno), "message": message, "__module__": __name__,
        })
        globals()[name] = cls
        _BY_ERRNO[int(errno)] = cls


_build_broker_errors()
_UNRECOGNIZED = {}


def for_code(errno):
    """The BrokerResponseError subclass for a broker error code. An unknown
    code (a newer broker) gets a subclass of UnknownError that keeps the
    errno, so the code is never lost."""
    cls = _BY_ERRNO.get(errno)
    if cls is None:
        cls = _UNRECOGNIZED.get(errno)
        if cls is None:
            cls = type("UnrecognizedBrokerError", (UnknownError,), {"errno": errno, "__module__": __name__})  # noqa: F821
            _UNRECOGNIZED[errno] = cls
    return cls
