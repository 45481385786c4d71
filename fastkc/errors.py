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


class DecompressedSizeLimitError(CorruptRecordError):
    """A batch decompresses to more than the configured cap
    (max_decompressed_bytes): a likely decompression bomb."""


class UnsupportedCompressionError(CorruptRecordError, UnsupportedCodecError):
    """The batch names a compression codec id that does not exist."""
