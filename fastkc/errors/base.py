"""The hand-written errors: kafka-python's names and hierarchy, the typed
record-corruption errors the compiled core raises, the client-side errors.
The broker error-code classes are generated into fastkc/errors/broker.py."""
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


class ArrowMemoryError(RecordBudgetExceededError, MemoryError):
    """The Arrow columns could not grow for what a batch decodes (the
    process's memory or address-space limit, e.g. a container's RLIMIT_AS,
    facing huge values). The columns grow with what is decoded, never with
    what a batch claims, so this means the batch's records really do not
    fit. `offset` is the batch's base offset and `records` holds the records
    before it; poll_arrow() raises it with the position left at the batch
    (seek() past it to continue). Also a MemoryError, as it used to be."""


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

