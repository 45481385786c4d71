"""The differences from kafka-python 3.0.12's consumer surface that fastkc
keeps on purpose, each with its reason. tests/unit/test_kafka_python_parity.py
fails on any difference not listed here and on any entry here that is no
longer a difference (so fixing one means deleting its entry).

Keys: "<area>.<kind>:<name>", as test_kafka_python_parity.py builds them.
"""
_RECORD_ERROR = ("fastkc's typed record-decoding error (a CorruptRecordError subclass, so "
                 "kafka-python's except clauses still catch it)")
_NEWER_BROKER_CODE = ("a broker error code from Kafka's Errors newer than kafka-python 3.0.12's table; "
                      "without it the code would surface as UnknownError")

EXCEPTIONS = {
    # --- config --------------------------------------------------------------------
    "config.default:client_id": "fastkc identifies itself to brokers (logs, quotas) as 'fastkc', "
                                "not as kafka-python's 'kafka-python-<version>'",
    "config.default:selector": "accepted for compatibility and ignored: fastkc's client owns its "
                               "selector (default None instead of selectors.DefaultSelector)",
    "config.default:kafka_client": "accepted for compatibility and ignored: fastkc has one client "
                                   "(fastkc.client.KafkaClient), not a pluggable kafka-python client class",
    "config.extra:group_protocol": "KIP-848: 'classic' (default, kafka-python's) or 'consumer' "
                                   "(ConsumerGroupHeartbeat), Java's group.protocol",
    "config.extra:group_remote_assignor": "KIP-848: the server-side assignor for group_protocol='consumer', "
                                          "Java's group.remote.assignor",
    "config.extra:sasl_kerberos_keytab": "GSSAPI: credentials from this client keytab into a private in-memory "
                                         "cache (Java's JAAS Krb5LoginModule keyTab=...; kafka-python only "
                                         "reads the Kerberos environment)",
    "config.extra:sasl_kerberos_principal": "GSSAPI: the client principal to authenticate as (Java's JAAS "
                                            "Krb5LoginModule principal=...)",
    "config.extra:arrow_zero_copy": "poll_arrow(): key and value as binary_view columns pointing into the "
                                    "fetched buffers (no copy); poll_arrow itself is fastkc's",
    "config.extra:decode_threads": "fastkc's decode worker: 1 decodes the next step, decompression included, "
                                   "on a background thread while the application handles the current "
                                   "records; 0 (default) keeps all decoding on the polling thread",
    # --- consumer ------------------------------------------------------------------
    "consumer.extra:poll_arrow": "fastkc's columnar poll: one pyarrow.RecordBatch",
    "consumer.extra:arrow_stream": "fastkc's Arrow stream (PyCapsule __arrow_c_stream__) of poll_arrow's "
                                   "batches, for polars, duckdb and pyarrow readers",
    "consumer.extra:wakeup": "Java's KafkaConsumer.wakeup(): interrupts poll() from another thread "
                             "(kafka-python 3.0.12 has none)",
    # --- errors --------------------------------------------------------------------
    "errors.attr:CorruptRecordError.retriable": "True as in Java (CorruptRecordException is a "
                                                "RetriableException: a re-fetch may read good bytes); "
                                                "kafka-python 3.0.12 says False",
    "errors.attr:CorruptRecordException.retriable": "the alias of CorruptRecordError (see there)",
    "errors.attr:InvalidRecordError.retriable": "a CorruptRecordError subclass in fastkc (see the base entry)",
    "errors.base-extra:InvalidRecordError<CorruptRecordError": "the record decoders raise InvalidRecordError "
                                                               "for records that break the format; code "
                                                               "catching CorruptRecordError must see them",
    "errors.extra:ArrowCapacityError": _RECORD_ERROR,
    "errors.extra:ArrowMemoryError": _RECORD_ERROR,
    "errors.extra:DecompressedSizeLimitError": _RECORD_ERROR,
    "errors.extra:FetchProgressError": _RECORD_ERROR,
    "errors.extra:RecordBudgetExceededError": _RECORD_ERROR,
    "errors.extra:RecordCountLimitError": _RECORD_ERROR,
    "errors.extra:RecordCrcError": _RECORD_ERROR,
    "errors.extra:RecordDecompressionError": _RECORD_ERROR,
    "errors.extra:UnsupportedCompressionError": _RECORD_ERROR,
    "errors.extra:InvalidAcquiredRecordsError": "a ShareFetch answer's impossible acquired ranges (a "
                                                "KafkaProtocolError subclass; kafka-python has no share consumer)",
    "errors.extra:ProtocolParseError": "a response that does not parse (a KafkaProtocolError subclass)",
    "errors.extra:NoBrokersAvailable": "kafka-python 2.x's name for a failed bootstrap, kept as a "
                                       "KafkaTimeoutError subclass (what kafka-python 3 raises there)",
    "errors.extra:SslAuthenticationError": "Java's SslAuthenticationException: a TLS handshake that cannot "
                                           "succeed is raised at once (a KafkaConnectionError subclass)",
    "errors.extra:WakeupException": "Java's name for what wakeup() makes poll() raise",
    "errors.extra:InvalidRegularExpressionError": _NEWER_BROKER_CODE,
    "errors.extra:RebootstrapRequiredError": _NEWER_BROKER_CODE,
    "errors.extra:ShareSessionLimitReachedError": _NEWER_BROKER_CODE,
    "errors.extra:StreamsInvalidTopologyEpochError": _NEWER_BROKER_CODE,
    "errors.extra:StreamsInvalidTopologyError": _NEWER_BROKER_CODE,
    "errors.extra:StreamsTopologyFencedError": _NEWER_BROKER_CODE,
    # --- structs -------------------------------------------------------------------
    "structs.extra:ConsumerRecord": "kafka-python defines it in kafka.consumer.fetcher; fastkc keeps "
                                    "all value types in fastkc.structs (same fields, same order)",
    "structs.extra:DecodedPartition": "fastkc.records.decode_partition()'s result",
    "structs.extra:ScanInfo": "fastkc.records.scan_blob()'s result",
    "structs.extra:ShareRecord": "a share group's record (KIP-932; kafka-python has no share consumer)",
    "structs.extra:ShareDecoded": "fastkc.records.decode_share()'s result",
    "structs.extra:ShareFailure": "what a share decode stopped by a corrupt batch leaves to acknowledge",
    "structs.extra:FetchResponse": "the compiled Fetch parser's result types",
    "structs.extra:FetchTopicResponse": "the compiled Fetch parser's result types",
    "structs.extra:FetchPartitionResponse": "the compiled Fetch parser's result types",
}
