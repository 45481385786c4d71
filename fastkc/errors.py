"""Errors, named as kafka-python names them so `except` clauses carry over.

The broker error-code table (BrokerResponseError subclasses by errno) is
filled in by the protocol layer; the record-decoding errors live here because
the compiled core raises them.
"""


# imported as a module: kafka-python parity counts the names this module exposes
import typing


class KafkaError(RuntimeError):
    retriable = False
    # whether metadata should be refreshed on error
    invalid_metadata = False

    def __str__(self) -> str:
        if not self.args:
            return self.__class__.__name__
        return "{0}: {1}".format(self.__class__.__name__, super().__str__())

    def __eq__(self, other: object) -> bool:
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

    def __init__(self, reason: str = "", api: str = "", version: int = -1, position: int = -1) -> None:
        self.reason = reason
        self.api = api
        self.version = version
        self.position = position
        super().__init__(
            "{0} v{1} response, byte {2}: {3}".format(api, version, position, reason)
        )

    def __reduce__(self) -> tuple[type[typing.Self], tuple[str, str, int, int]]:
        return (self.__class__, (self.reason, self.api, self.version, self.position))


class InvalidAcquiredRecordsError(KafkaProtocolError):
    """A ShareFetch answer's AcquiredRecords for one partition cannot be true:
    a range with FirstOffset > LastOffset, a negative offset, ranges out of
    order or overlapping, a DeliveryCount outside 1..32767. Raised by
    fastkc.records.decode_share before anything is decoded.

    Attributes: topic, partition (as passed), index (the first bad range's
    position in the list), reason."""

    def __init__(self, reason: str = "", topic: str = "", partition: int = -1, index: int = -1) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.index = index
        super().__init__(
            "{0} (topic={1!r}, partition={2}, range {3})".format(reason, topic, partition, index)
        )

    def __reduce__(self) -> tuple[type[typing.Self], tuple[str, str, int, int]]:
        return (self.__class__, (self.reason, self.topic, self.partition, self.index))


class BrokerResponseError(KafkaError):
    # None on the base class as in kafka-python; every code's class sets them
    errno: int | None = None
    message: str | None = None
    description: str | None = None

    def __str__(self) -> str:
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
    description = "This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt."
    # Java's CorruptRecordException is a RetriableException (kafka-python 3.0.12
    # says False; listed in tests/support/parity_exceptions.py)
    retriable = True
    # Set by fastkc.records.decode_share / decode_share_arrow only: a
    # fastkc.structs.ShareFailure saying what becomes of the acquired offsets
    # the decode did not hand out (None for every other decoder)
    share: typing.Any = None

    def __init__(
        self,
        reason: str = "",
        topic: str = "",
        partition: int = -1,
        offset: int = -1,
        records: typing.Any = None,
        next_offset: int = -1,
    ) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.records = records if records is not None else []
        self.next_offset = next_offset
        super().__init__(
            "{0} (topic={1!r}, partition={2}, offset={3})".format(reason, topic, partition, offset)
        )

    def __reduce__(self) -> tuple[type[typing.Self], tuple[str, str, int, int, typing.Any, int]]:
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


# kafka-python's client-side errors, raised by its own client; fastkc keeps
# the names so `except` clauses and imports carry over.
class Cancelled(RetriableError):
    pass


class InvalidReceiveError(KafkaProtocolError):
    pass


class MetadataEmptyBrokerList(RetriableError):
    pass


class QuotaViolationError(KafkaError):
    pass


class StaleMetadata(InvalidMetadataError):
    pass


class TransactionAbortedError(KafkaError):
    """A transaction was aborted by its producer (KIP-654); kafka-python's producer name."""
    message = "Failing batch since transaction was aborted"


class UnknownBrokerIdError(KafkaError):
    pass


class UnrecognizedBrokerVersion(KafkaError):
    pass


class WakeupException(KafkaError):
    """KafkaConsumer.wakeup() interrupted a blocking call (Java's name;
    kafka-python 3.0.12 has no wakeup())."""


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
  35 UnsupportedVersionError                       UNSUPPORTED_VERSION
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

# kafka-python 3.0.12's (and Kafka's Errors) description of each broker error code,
# the generated classes below carry them.
_DESCRIPTIONS = {
    -1: 'An unexpected server error.',
    0: 'No error--it worked!',
    1: 'The requested offset is outside the range of offsets maintained by the server for the given topic/partition.',
    3: 'This request is for a topic or partition that does not exist on this broker.',
    4: 'The message has a negative size.',
    5: 'This error is thrown if we are in the middle of a leadership election and there is currently no leader for this partition and hence it is unavailable for writes.',
    6: 'This error is thrown if the client attempts to send messages to a replica that is not the leader for some partition. It indicates that the clients metadata is out of date.',
    7: 'This error is thrown if the request exceeds the user-specified time limit in the request.',
    8: 'This is not a client facing error and is used mostly by tools when a broker is not alive.',
    9: 'If replica is expected on a broker, but is not (this can be safely ignored).',
    10: 'The server has a configurable maximum message size to avoid unbounded memory allocation. This error is thrown if the client attempt to produce a message larger than this maximum.',
    11: 'Internal error code for broker-to-broker communication.',
    12: 'If you specify a string larger than configured maximum for offset metadata.',
    14: 'The broker returns this error code for txn or group requests, when the coordinator is loading and hence cant process requests',
    15: 'The broker returns this error code for consumer and transaction requests if the offsets topic has not yet been created, or if the group/txn coordinator is not active.',
    16: 'The broker returns this error code if it is not the correct coordinator for the specified consumer or transaction group',
    17: 'For a request which attempts to access an invalid topic (e.g. one which has an illegal name), or if an attempt is made to write to an internal topic (such as the consumer offsets topic).',
    18: 'If a message batch in a produce request exceeds the maximum configured segment size.',
    19: 'Returned from a produce request when the number of in-sync replicas is lower than the configured minimum and requiredAcks is -1.',
    20: 'Returned from a produce request when the message was written to the log, but with fewer in-sync replicas than required.',
    21: 'Returned from a produce request if the requested requiredAcks is invalid (anything other than -1, 1, or 0).',
    22: 'Returned from group membership requests (such as heartbeats) when the generation id provided in the request is not the current generation.',
    23: 'Returned in join group when the member provides a protocol type or set of protocols which is not compatible with the current group.',
    24: 'Returned in join group when the groupId is empty or null.',
    25: 'Returned from group requests (offset commits/fetches, heartbeats, etc) when the memberId is not in the current generation.',
    26: 'Return in join group when the requested session timeout is outside of the allowed range on the broker',
    27: 'Returned in heartbeat requests when the coordinator has begun rebalancing the group. This indicates to the client that it should rejoin the group.',
    28: 'This error indicates that an offset commit was rejected because of oversize metadata.',
    29: 'Returned by the broker when the client is not authorized to access the requested topic.',
    30: 'Returned by the broker when the client is not authorized to access a particular groupId.',
    31: 'Returned by the broker when the client is not authorized to use an inter-broker or administrative API.',
    32: 'The timestamp of the message is out of acceptable range.',
    33: 'The broker does not support the requested SASL mechanism.',
    34: 'Request is not valid given the current SASL state.',
    35: 'The version of API is not supported.',
    36: 'Topic with this name already exists.',
    37: 'Number of partitions is invalid.',
    38: 'Replication-factor is invalid.',
    39: 'Replication assignment is invalid.',
    40: 'Configuration is invalid.',
    41: 'This is not the correct controller for this cluster.',
    42: 'This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.',
    43: 'The message format version on the broker does not support this request.',
    44: 'Request parameters do not satisfy the configured policy.',
    45: 'The broker received an out of order sequence number.',
    46: 'The broker received a duplicate sequence number.',
    47: 'Producer attempted to produce with an old epoch.',
    48: 'The producer attempted a transactional operation in an invalid state.',
    49: 'The producer attempted to use a producer id which is not currently assigned to its transactional id.',
    50: 'The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).',
    51: 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.',
    52: 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.',
    53: 'Transactional Id authorization failed.',
    54: 'Security features are disabled.',
    55: 'The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.',
    56: 'Disk error when trying to access log file on the disk.',
    57: 'The user-specified log directory is not found in the broker config.',
    58: 'SASL Authentication failed.',
    59: "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.",
    60: 'A partition reassignment is in progress.',
    61: 'Delegation Token feature is not enabled.',
    62: 'Delegation Token is not found on server.',
    63: 'Specified Principal is not valid Owner/Renewer.',
    64: 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.',
    65: 'Delegation Token authorization failed.',
    66: 'Delegation Token is expired.',
    67: 'Supplied principalType is not supported.',
    68: 'The group is not empty.',
    69: 'The group id does not exist.',
    70: 'The fetch session ID was not found.',
    71: 'The fetch session epoch is invalid.',
    72: 'There is no listener on the leader broker that matches the listener on which metadata request was processed.',
    73: 'Topic deletion is disabled.',
    74: 'The leader epoch in the request is older than the epoch on the broker.',
    75: 'The leader epoch in the request is newer than the epoch on the broker.',
    76: 'The requesting client does not support the compression type of given partition.',
    77: 'Broker epoch has changed.',
    78: 'The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.',
    79: 'The group member needs to have a valid member id before actually entering a consumer group.',
    80: 'The preferred leader was not available.',
    81: 'The consumer group has reached its max size.',
    82: 'The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.',
    83: 'Eligible topic partition leaders are not available.',
    84: 'Leader election not needed for topic partition.',
    85: 'No partition reassignment is in progress.',
    86: 'Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.',
    87: 'This record has failed the validation on broker and hence will be rejected.',
    88: 'There are unstable offsets that need to be cleared.',
    89: 'The throttling quota has been exceeded.',
    90: 'There is a newer producer with the same transactionalId which fences the current one.',
    91: 'A request illegally referred to a resource that does not exist.',
    92: 'A request illegally referred to the same resource twice.',
    93: 'Requested credential would not meet criteria for acceptability.',
    94: 'Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.',
    95: 'The given update version was invalid.',
    96: 'Unable to update finalized features due to an unexpected server error.',
    97: 'Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.',
    98: 'Requested snapshot was not found.',
    99: 'Requested position is not greater than or equal to zero, and less than the size of the snapshot.',
    100: 'This server does not host this topic ID.',
    101: 'This broker ID is already in use.',
    102: 'The given broker ID was not registered.',
    103: "The log's topic ID did not match the topic ID in the request.",
    104: 'The clusterId in the request does not match that found on the server.',
    105: 'The transactionalId could not be found.',
    106: 'The fetch session encountered inconsistent topic ID usage.',
    107: 'The new ISR contains at least one ineligible replica.',
    108: 'The AlterPartition request successfully updated the partition state but the leader has changed.',
    109: 'The requested offset is moved to tiered storage.',
    110: 'The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.',
    111: 'The instance ID is still used by another member in the consumer group. That member must leave first.',
    112: 'The assignor or its version range is not supported by the consumer group.',
    113: 'The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.',
    114: 'The request was sent to an endpoint of the wrong type.',
    115: 'This endpoint type is not supported yet.',
    116: 'This controller ID is not known.',
    117: 'Client sent a push telemetry request with an invalid or outdated subscription ID.',
    118: 'Client sent a push telemetry request larger than the maximum size the broker will accept.',
    119: 'The controller has considered the broker registration to be invalid.',
    120: 'The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.',
    121: 'The record state is invalid. The acknowledgement of delivery could not be completed.',
    122: 'The share session was not found.',
    123: 'The share session epoch is invalid.',
    124: 'The share coordinator rejected the request because the share-group state epoch did not match.',
    125: "The voter key doesn't match the receiving replica's key.",
    126: 'The voter is already part of the set of voters.',
    127: 'The voter is not part of the set of voters.',
}


# --- BEGIN GENERATED by scripts/gen_broker_errors.py from _BROKER_ERROR_TABLE; do not edit ---


class UnknownError(BrokerResponseError):
    errno, message, description = -1, 'UNKNOWN', _DESCRIPTIONS.get(-1)


class NoError(BrokerResponseError):
    errno, message, description = 0, 'NO_ERROR', _DESCRIPTIONS.get(0)


class OffsetOutOfRangeError(BrokerResponseError):
    errno, message, description = 1, 'OFFSET_OUT_OF_RANGE', _DESCRIPTIONS.get(1)


class UnknownTopicOrPartitionError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 3, 'UNKNOWN_TOPIC_OR_PARTITION', _DESCRIPTIONS.get(3)


class InvalidFetchRequestError(BrokerResponseError):
    errno, message, description = 4, 'INVALID_FETCH_SIZE', _DESCRIPTIONS.get(4)


class LeaderNotAvailableError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 5, 'LEADER_NOT_AVAILABLE', _DESCRIPTIONS.get(5)


class NotLeaderForPartitionError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 6, 'NOT_LEADER_FOR_PARTITION', _DESCRIPTIONS.get(6)


class RequestTimedOutError(BrokerResponseError, RetriableError):
    errno, message, description = 7, 'REQUEST_TIMED_OUT', _DESCRIPTIONS.get(7)


class BrokerNotAvailableError(BrokerResponseError):
    errno, message, description = 8, 'BROKER_NOT_AVAILABLE', _DESCRIPTIONS.get(8)


class ReplicaNotAvailableError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 9, 'REPLICA_NOT_AVAILABLE', _DESCRIPTIONS.get(9)


class MessageSizeTooLargeError(BrokerResponseError):
    errno, message, description = 10, 'MESSAGE_SIZE_TOO_LARGE', _DESCRIPTIONS.get(10)


class StaleControllerEpochError(BrokerResponseError):
    errno, message, description = 11, 'STALE_CONTROLLER_EPOCH', _DESCRIPTIONS.get(11)


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno, message, description = 12, 'OFFSET_METADATA_TOO_LARGE', _DESCRIPTIONS.get(12)


class NetworkExceptionError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 13, 'NETWORK_EXCEPTION', _DESCRIPTIONS.get(13)


class CoordinatorLoadInProgressError(BrokerResponseError, RetriableError):
    errno, message, description = 14, 'COORDINATOR_LOAD_IN_PROGRESS', _DESCRIPTIONS.get(14)


class CoordinatorNotAvailableError(BrokerResponseError, RetriableError):
    errno, message, description = 15, 'COORDINATOR_NOT_AVAILABLE', _DESCRIPTIONS.get(15)


class NotCoordinatorError(BrokerResponseError, RetriableError):
    errno, message, description = 16, 'NOT_COORDINATOR', _DESCRIPTIONS.get(16)


class InvalidTopicError(BrokerResponseError):
    errno, message, description = 17, 'INVALID_TOPIC', _DESCRIPTIONS.get(17)


class RecordListTooLargeError(BrokerResponseError):
    errno, message, description = 18, 'RECORD_LIST_TOO_LARGE', _DESCRIPTIONS.get(18)


class NotEnoughReplicasError(BrokerResponseError, RetriableError):
    errno, message, description = 19, 'NOT_ENOUGH_REPLICAS', _DESCRIPTIONS.get(19)


class NotEnoughReplicasAfterAppendError(BrokerResponseError, RetriableError):
    errno, message, description = 20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', _DESCRIPTIONS.get(20)


class InvalidRequiredAcksError(BrokerResponseError):
    errno, message, description = 21, 'INVALID_REQUIRED_ACKS', _DESCRIPTIONS.get(21)


class IllegalGenerationError(BrokerResponseError):
    errno, message, description = 22, 'ILLEGAL_GENERATION', _DESCRIPTIONS.get(22)


class InconsistentGroupProtocolError(BrokerResponseError):
    errno, message, description = 23, 'INCONSISTENT_GROUP_PROTOCOL', _DESCRIPTIONS.get(23)


class InvalidGroupIdError(BrokerResponseError):
    errno, message, description = 24, 'INVALID_GROUP_ID', _DESCRIPTIONS.get(24)


class UnknownMemberIdError(BrokerResponseError):
    errno, message, description = 25, 'UNKNOWN_MEMBER_ID', _DESCRIPTIONS.get(25)


class InvalidSessionTimeoutError(BrokerResponseError):
    errno, message, description = 26, 'INVALID_SESSION_TIMEOUT', _DESCRIPTIONS.get(26)


class RebalanceInProgressError(BrokerResponseError):
    errno, message, description = 27, 'REBALANCE_IN_PROGRESS', _DESCRIPTIONS.get(27)


class InvalidCommitOffsetSizeError(BrokerResponseError):
    errno, message, description = 28, 'INVALID_COMMIT_OFFSET_SIZE', _DESCRIPTIONS.get(28)


class TopicAuthorizationFailedError(AuthorizationError):
    errno, message, description = 29, 'TOPIC_AUTHORIZATION_FAILED', _DESCRIPTIONS.get(29)


class GroupAuthorizationFailedError(AuthorizationError):
    errno, message, description = 30, 'GROUP_AUTHORIZATION_FAILED', _DESCRIPTIONS.get(30)


class ClusterAuthorizationFailedError(AuthorizationError):
    errno, message, description = 31, 'CLUSTER_AUTHORIZATION_FAILED', _DESCRIPTIONS.get(31)


class InvalidTimestampError(BrokerResponseError):
    errno, message, description = 32, 'INVALID_TIMESTAMP', _DESCRIPTIONS.get(32)


class UnsupportedSaslMechanismError(BrokerResponseError):
    errno, message, description = 33, 'UNSUPPORTED_SASL_MECHANISM', _DESCRIPTIONS.get(33)


class IllegalSaslStateError(BrokerResponseError):
    errno, message, description = 34, 'ILLEGAL_SASL_STATE', _DESCRIPTIONS.get(34)


class UnsupportedVersionError(BrokerResponseError):
    errno, message, description = 35, 'UNSUPPORTED_VERSION', _DESCRIPTIONS.get(35)


class TopicAlreadyExistsError(BrokerResponseError):
    errno, message, description = 36, 'TOPIC_ALREADY_EXISTS', _DESCRIPTIONS.get(36)


class InvalidPartitionsError(BrokerResponseError):
    errno, message, description = 37, 'INVALID_PARTITIONS', _DESCRIPTIONS.get(37)


class InvalidReplicationFactorError(BrokerResponseError):
    errno, message, description = 38, 'INVALID_REPLICATION_FACTOR', _DESCRIPTIONS.get(38)


class InvalidReplicationAssignmentError(BrokerResponseError):
    errno, message, description = 39, 'INVALID_REPLICATION_ASSIGNMENT', _DESCRIPTIONS.get(39)


class InvalidConfigurationError(BrokerResponseError):
    errno, message, description = 40, 'INVALID_CONFIG', _DESCRIPTIONS.get(40)


class NotControllerError(BrokerResponseError, RetriableError):
    errno, message, description = 41, 'NOT_CONTROLLER', _DESCRIPTIONS.get(41)


class InvalidRequestError(BrokerResponseError):
    errno, message, description = 42, 'INVALID_REQUEST', _DESCRIPTIONS.get(42)


class UnsupportedForMessageFormatError(BrokerResponseError):
    errno, message, description = 43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT', _DESCRIPTIONS.get(43)


class PolicyViolationError(BrokerResponseError):
    errno, message, description = 44, 'POLICY_VIOLATION', _DESCRIPTIONS.get(44)


class OutOfOrderSequenceNumberError(BrokerResponseError):
    errno, message, description = 45, 'OUT_OF_ORDER_SEQUENCE_NUMBER', _DESCRIPTIONS.get(45)


class DuplicateSequenceNumberError(BrokerResponseError):
    errno, message, description = 46, 'DUPLICATE_SEQUENCE_NUMBER', _DESCRIPTIONS.get(46)


class InvalidProducerEpochError(BrokerResponseError):
    errno, message, description = 47, 'INVALID_PRODUCER_EPOCH', _DESCRIPTIONS.get(47)


class InvalidTxnStateError(BrokerResponseError):
    errno, message, description = 48, 'INVALID_TXN_STATE', _DESCRIPTIONS.get(48)


class InvalidProducerIdMappingError(BrokerResponseError):
    errno, message, description = 49, 'INVALID_PRODUCER_ID_MAPPING', _DESCRIPTIONS.get(49)


class InvalidTransactionTimeoutError(BrokerResponseError):
    errno, message, description = 50, 'INVALID_TRANSACTION_TIMEOUT', _DESCRIPTIONS.get(50)


class ConcurrentTransactionsError(BrokerResponseError, RetriableError):
    errno, message, description = 51, 'CONCURRENT_TRANSACTIONS', _DESCRIPTIONS.get(51)


class TransactionCoordinatorFencedError(BrokerResponseError):
    errno, message, description = 52, 'TRANSACTION_COORDINATOR_FENCED', _DESCRIPTIONS.get(52)


class TransactionalIdAuthorizationFailedError(AuthorizationError):
    errno, message, description = 53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', _DESCRIPTIONS.get(53)


class SecurityDisabledError(BrokerResponseError):
    errno, message, description = 54, 'SECURITY_DISABLED', _DESCRIPTIONS.get(54)


class OperationNotAttemptedError(BrokerResponseError):
    errno, message, description = 55, 'OPERATION_NOT_ATTEMPTED', _DESCRIPTIONS.get(55)


class KafkaStorageError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 56, 'KAFKA_STORAGE_ERROR', _DESCRIPTIONS.get(56)


class LogDirNotFoundError(BrokerResponseError):
    errno, message, description = 57, 'LOG_DIR_NOT_FOUND', _DESCRIPTIONS.get(57)


class SaslAuthenticationFailedError(BrokerResponseError):
    errno, message, description = 58, 'SASL_AUTHENTICATION_FAILED', _DESCRIPTIONS.get(58)


class UnknownProducerIdError(BrokerResponseError):
    errno, message, description = 59, 'UNKNOWN_PRODUCER_ID', _DESCRIPTIONS.get(59)


class ReassignmentInProgressError(BrokerResponseError):
    errno, message, description = 60, 'REASSIGNMENT_IN_PROGRESS', _DESCRIPTIONS.get(60)


class DelegationTokenAuthDisabledError(BrokerResponseError):
    errno, message, description = 61, 'DELEGATION_TOKEN_AUTH_DISABLED', _DESCRIPTIONS.get(61)


class DelegationTokenNotFoundError(BrokerResponseError):
    errno, message, description = 62, 'DELEGATION_TOKEN_NOT_FOUND', _DESCRIPTIONS.get(62)


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    errno, message, description = 63, 'DELEGATION_TOKEN_OWNER_MISMATCH', _DESCRIPTIONS.get(63)


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    errno, message, description = 64, 'DELEGATION_TOKEN_REQUEST_NOT_ALLOWED', _DESCRIPTIONS.get(64)


class DelegationTokenAuthorizationFailedError(AuthorizationError):
    errno, message, description = 65, 'DELEGATION_TOKEN_AUTHORIZATION_FAILED', _DESCRIPTIONS.get(65)


class DelegationTokenExpiredError(BrokerResponseError):
    errno, message, description = 66, 'DELEGATION_TOKEN_EXPIRED', _DESCRIPTIONS.get(66)


class InvalidPrincipalTypeError(BrokerResponseError):
    errno, message, description = 67, 'INVALID_PRINCIPAL_TYPE', _DESCRIPTIONS.get(67)


class NonEmptyGroupError(BrokerResponseError):
    errno, message, description = 68, 'NON_EMPTY_GROUP', _DESCRIPTIONS.get(68)


class GroupIdNotFoundError(BrokerResponseError):
    errno, message, description = 69, 'GROUP_ID_NOT_FOUND', _DESCRIPTIONS.get(69)


class FetchSessionIdNotFoundError(BrokerResponseError, RetriableError):
    errno, message, description = 70, 'FETCH_SESSION_ID_NOT_FOUND', _DESCRIPTIONS.get(70)


class InvalidFetchSessionEpochError(BrokerResponseError, RetriableError):
    errno, message, description = 71, 'INVALID_FETCH_SESSION_EPOCH', _DESCRIPTIONS.get(71)


class ListenerNotFoundError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 72, 'LISTENER_NOT_FOUND', _DESCRIPTIONS.get(72)


class TopicDeletionDisabledError(BrokerResponseError):
    errno, message, description = 73, 'TOPIC_DELETION_DISABLED', _DESCRIPTIONS.get(73)


class FencedLeaderEpochError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 74, 'FENCED_LEADER_EPOCH', _DESCRIPTIONS.get(74)


class UnknownLeaderEpochError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 75, 'UNKNOWN_LEADER_EPOCH', _DESCRIPTIONS.get(75)


class UnsupportedCompressionTypeError(BrokerResponseError):
    errno, message, description = 76, 'UNSUPPORTED_COMPRESSION_TYPE', _DESCRIPTIONS.get(76)


class StaleBrokerEpochError(BrokerResponseError):
    errno, message, description = 77, 'STALE_BROKER_EPOCH', _DESCRIPTIONS.get(77)


class OffsetNotAvailableError(BrokerResponseError, RetriableError):
    errno, message, description = 78, 'OFFSET_NOT_AVAILABLE', _DESCRIPTIONS.get(78)


class MemberIdRequiredError(BrokerResponseError):
    errno, message, description = 79, 'MEMBER_ID_REQUIRED', _DESCRIPTIONS.get(79)


class PreferredLeaderNotAvailableError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 80, 'PREFERRED_LEADER_NOT_AVAILABLE', _DESCRIPTIONS.get(80)


class GroupMaxSizeReachedError(BrokerResponseError):
    errno, message, description = 81, 'GROUP_MAX_SIZE_REACHED', _DESCRIPTIONS.get(81)


class FencedInstanceIdError(BrokerResponseError):
    errno, message, description = 82, 'FENCED_INSTANCE_ID', _DESCRIPTIONS.get(82)


class EligibleLeadersNotAvailableError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE', _DESCRIPTIONS.get(83)


class ElectionNotNeededError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 84, 'ELECTION_NOT_NEEDED', _DESCRIPTIONS.get(84)


class NoReassignmentInProgressError(BrokerResponseError):
    errno, message, description = 85, 'NO_REASSIGNMENT_IN_PROGRESS', _DESCRIPTIONS.get(85)


class GroupSubscribedToTopicError(BrokerResponseError):
    errno, message, description = 86, 'GROUP_SUBSCRIBED_TO_TOPIC', _DESCRIPTIONS.get(86)


class UnstableOffsetCommitError(BrokerResponseError, RetriableError):
    errno, message, description = 88, 'UNSTABLE_OFFSET_COMMIT', _DESCRIPTIONS.get(88)


class ThrottlingQuotaExceededError(BrokerResponseError, RetriableError):
    errno, message, description = 89, 'THROTTLING_QUOTA_EXCEEDED', _DESCRIPTIONS.get(89)


class ProducerFencedError(BrokerResponseError):
    errno, message, description = 90, 'PRODUCER_FENCED', _DESCRIPTIONS.get(90)


class ResourceNotFoundError(BrokerResponseError):
    errno, message, description = 91, 'RESOURCE_NOT_FOUND', _DESCRIPTIONS.get(91)


class DuplicateResourceError(BrokerResponseError):
    errno, message, description = 92, 'DUPLICATE_RESOURCE', _DESCRIPTIONS.get(92)


class UnacceptableCredentialError(BrokerResponseError):
    errno, message, description = 93, 'UNACCEPTABLE_CREDENTIAL', _DESCRIPTIONS.get(93)


class InconsistentVoterSetError(BrokerResponseError):
    errno, message, description = 94, 'INCONSISTENT_VOTER_SET', _DESCRIPTIONS.get(94)


class InvalidUpdateVersionError(BrokerResponseError):
    errno, message, description = 95, 'INVALID_UPDATE_VERSION', _DESCRIPTIONS.get(95)


class FeatureUpdateFailedError(BrokerResponseError):
    errno, message, description = 96, 'FEATURE_UPDATE_FAILED', _DESCRIPTIONS.get(96)


class PrincipalDeserializationFailureError(BrokerResponseError):
    errno, message, description = 97, 'PRINCIPAL_DESERIALIZATION_FAILURE', _DESCRIPTIONS.get(97)


class SnapshotNotFoundError(BrokerResponseError):
    errno, message, description = 98, 'SNAPSHOT_NOT_FOUND', _DESCRIPTIONS.get(98)


class PositionOutOfRangeError(BrokerResponseError):
    errno, message, description = 99, 'POSITION_OUT_OF_RANGE', _DESCRIPTIONS.get(99)


class UnknownTopicIdError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 100, 'UNKNOWN_TOPIC_ID', _DESCRIPTIONS.get(100)


class DuplicateBrokerRegistrationError(BrokerResponseError):
    errno, message, description = 101, 'DUPLICATE_BROKER_REGISTRATION', _DESCRIPTIONS.get(101)


class BrokerIdNotRegisteredError(BrokerResponseError):
    errno, message, description = 102, 'BROKER_ID_NOT_REGISTERED', _DESCRIPTIONS.get(102)


class InconsistentTopicIdError(BrokerResponseError, InvalidMetadataError):
    errno, message, description = 103, 'INCONSISTENT_TOPIC_ID', _DESCRIPTIONS.get(103)


class InconsistentClusterIdError(BrokerResponseError):
    errno, message, description = 104, 'INCONSISTENT_CLUSTER_ID', _DESCRIPTIONS.get(104)


class TransactionalIdNotFoundError(BrokerResponseError):
    errno, message, description = 105, 'TRANSACTIONAL_ID_NOT_FOUND', _DESCRIPTIONS.get(105)


class FetchSessionTopicIdError(BrokerResponseError, RetriableError):
    errno, message, description = 106, 'FETCH_SESSION_TOPIC_ID_ERROR', _DESCRIPTIONS.get(106)


class IneligibleReplicaError(BrokerResponseError):
    errno, message, description = 107, 'INELIGIBLE_REPLICA', _DESCRIPTIONS.get(107)


class NewLeaderElectedError(BrokerResponseError):
    errno, message, description = 108, 'NEW_LEADER_ELECTED', _DESCRIPTIONS.get(108)


class OffsetMovedToTieredStorageError(BrokerResponseError):
    errno, message, description = 109, 'OFFSET_MOVED_TO_TIERED_STORAGE', _DESCRIPTIONS.get(109)


class FencedMemberEpochError(BrokerResponseError):
    errno, message, description = 110, 'FENCED_MEMBER_EPOCH', _DESCRIPTIONS.get(110)


class UnreleasedInstanceIdError(BrokerResponseError):
    errno, message, description = 111, 'UNRELEASED_INSTANCE_ID', _DESCRIPTIONS.get(111)


class UnsupportedAssignorError(BrokerResponseError):
    errno, message, description = 112, 'UNSUPPORTED_ASSIGNOR', _DESCRIPTIONS.get(112)


class StaleMemberEpochError(BrokerResponseError):
    errno, message, description = 113, 'STALE_MEMBER_EPOCH', _DESCRIPTIONS.get(113)


class MismatchedEndpointTypeError(BrokerResponseError):
    errno, message, description = 114, 'MISMATCHED_ENDPOINT_TYPE', _DESCRIPTIONS.get(114)


class UnsupportedEndpointTypeError(BrokerResponseError):
    errno, message, description = 115, 'UNSUPPORTED_ENDPOINT_TYPE', _DESCRIPTIONS.get(115)


class UnknownControllerIdError(BrokerResponseError):
    errno, message, description = 116, 'UNKNOWN_CONTROLLER_ID', _DESCRIPTIONS.get(116)


class UnknownSubscriptionIdError(BrokerResponseError):
    errno, message, description = 117, 'UNKNOWN_SUBSCRIPTION_ID', _DESCRIPTIONS.get(117)


class TelemetryTooLargeError(BrokerResponseError):
    errno, message, description = 118, 'TELEMETRY_TOO_LARGE', _DESCRIPTIONS.get(118)


class InvalidRegistrationError(BrokerResponseError):
    errno, message, description = 119, 'INVALID_REGISTRATION', _DESCRIPTIONS.get(119)


class TransactionAbortableError(BrokerResponseError):
    errno, message, description = 120, 'TRANSACTION_ABORTABLE', _DESCRIPTIONS.get(120)


class InvalidRecordStateError(BrokerResponseError):
    errno, message, description = 121, 'INVALID_RECORD_STATE', _DESCRIPTIONS.get(121)


class ShareSessionNotFoundError(BrokerResponseError, RetriableError):
    errno, message, description = 122, 'SHARE_SESSION_NOT_FOUND', _DESCRIPTIONS.get(122)


class InvalidShareSessionEpochError(BrokerResponseError, RetriableError):
    errno, message, description = 123, 'INVALID_SHARE_SESSION_EPOCH', _DESCRIPTIONS.get(123)


class FencedStateEpochError(BrokerResponseError):
    errno, message, description = 124, 'FENCED_STATE_EPOCH', _DESCRIPTIONS.get(124)


class InvalidVoterKeyError(BrokerResponseError):
    errno, message, description = 125, 'INVALID_VOTER_KEY', _DESCRIPTIONS.get(125)


class DuplicateVoterError(BrokerResponseError):
    errno, message, description = 126, 'DUPLICATE_VOTER', _DESCRIPTIONS.get(126)


class VoterNotFoundError(BrokerResponseError):
    errno, message, description = 127, 'VOTER_NOT_FOUND', _DESCRIPTIONS.get(127)


class InvalidRegularExpressionError(BrokerResponseError):
    errno, message, description = 128, 'INVALID_REGULAR_EXPRESSION', _DESCRIPTIONS.get(128)


class RebootstrapRequiredError(BrokerResponseError):
    errno, message, description = 129, 'REBOOTSTRAP_REQUIRED', _DESCRIPTIONS.get(129)


class StreamsInvalidTopologyError(BrokerResponseError):
    errno, message, description = 130, 'STREAMS_INVALID_TOPOLOGY', _DESCRIPTIONS.get(130)


class StreamsInvalidTopologyEpochError(BrokerResponseError):
    errno, message, description = 131, 'STREAMS_INVALID_TOPOLOGY_EPOCH', _DESCRIPTIONS.get(131)


class StreamsTopologyFencedError(BrokerResponseError):
    errno, message, description = 132, 'STREAMS_TOPOLOGY_FENCED', _DESCRIPTIONS.get(132)


class ShareSessionLimitReachedError(BrokerResponseError):
    errno, message, description = 133, 'SHARE_SESSION_LIMIT_REACHED', _DESCRIPTIONS.get(133)


# --- END GENERATED ---


_BY_ERRNO: dict[int, type[BrokerResponseError]] = {2: CorruptRecordError}


def _index_broker_errors() -> None:
    # The table is the source of the classes above (the generator writes
    # them); this maps each code to its class and refuses to import a module
    # whose classes and table disagree (a table edited without regenerating).
    namespace = globals()
    for line in _BROKER_ERROR_TABLE.strip().splitlines():
        errno_text, name, message = line.split()[:3]
        errno = int(errno_text)
        cls = namespace.get(name)
        if not (isinstance(cls, type) and issubclass(cls, BrokerResponseError)):
            raise ImportError("fastkc.errors: no class {0} for errno {1}: run scripts/gen_broker_errors.py".format(
                name, errno))
        if "errno" not in vars(cls):
            # defined by hand above (InvalidRecordError, raised by the record
            # decoders, must stay a CorruptRecordError): it takes the code here
            cls.errno, cls.message, cls.description = errno, message, _DESCRIPTIONS.get(errno)
        elif (cls.errno, cls.message) != (errno, message):
            raise ImportError("fastkc.errors: {0} is out of date: run scripts/gen_broker_errors.py".format(name))
        _BY_ERRNO[errno] = cls


_index_broker_errors()

#: errno -> BrokerResponseError subclass (kafka-python's public name for the table)
kafka_errors = _BY_ERRNO


class IncompatibleBrokerVersion(UnsupportedVersionError):
    """No API version both fastkc and the broker speak (raised by the client,
    as in kafka-python, a subclass of the broker's UNSUPPORTED_VERSION)."""


_UNRECOGNIZED: dict[int, type[BrokerResponseError]] = {}


def for_code(errno: int) -> type[BrokerResponseError]:
    """The BrokerResponseError subclass for a broker error code. An unknown
    code (a newer broker) gets a subclass of UnknownError that keeps the
    errno, so the code is never lost."""
    cls = _BY_ERRNO.get(errno)
    if cls is None:
        cls = _UNRECOGNIZED.get(errno)
        if cls is None:
            cls = _UNRECOGNIZED[errno] = _unrecognized(errno)
    return cls


def _unrecognized(errno: int) -> type[BrokerResponseError]:
    class UnrecognizedBrokerError(UnknownError):
        pass

    # named as a top-level class of this module, as type() named it before
    UnrecognizedBrokerError.__qualname__ = "UnrecognizedBrokerError"
    UnrecognizedBrokerError.errno = errno
    return UnrecognizedBrokerError
