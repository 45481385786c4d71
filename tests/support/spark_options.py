"""Options Spark's Kafka source rejects, with (a distinctive part of) the
message Spark 4.2's KafkaSourceProvider gives, checked against the JVM
source itself (benchmarks/spark resolves its jars). Shared by the option
unit tests and the in-session test."""

BS = "127.0.0.1:9"  # never contacted: validation fails first

BATCH_CASES = [
    ({"kafka.bootstrap.servers": BS},
     "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. "
     "See the docs for more details."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "assign": '{"a":[0]}'},
     "Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign."),
    ({"kafka.bootstrap.servers": BS, "assign": "a"},
     "No topicpartitions to assign as specified value for option 'assign' is 'a'"),
    ({"kafka.bootstrap.servers": BS, "subscribe": " , "},
     "No topics to subscribe to as specified value for option 'subscribe' is ' , '"),
    ({"kafka.bootstrap.servers": BS, "subscribePattern": "  "},
     "Pattern to subscribe is empty as specified value for option 'subscribePattern' is '  '"),
    ({"subscribe": "a"},
     "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "minPartitions": "0"},
     "minPartitions must be positive"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.auto.offset.reset": "earliest"},
     "Kafka option 'auto.offset.reset' is not supported."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.key.deserializer": "x"},
     "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with "
     "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.value.deserializer": "x"},
     "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with "
     "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.enable.auto.commit": "true"},
     "Kafka option 'enable.auto.commit' is not supported"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.interceptor.classes": "x"},
     "Kafka option 'interceptor.classes' is not supported"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "startingOffsets": "latest"},
     "starting offset can't be latest for batch queries on Kafka"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'},
     "startingOffsets for a-0 can't be latest for batch queries on Kafka"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "endingOffsets": "earliest"},
     "ending offset can't be earliest for batch queries on Kafka"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'},
     "ending offset for a-0 can't be earliest for batch queries on Kafka"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "startingOffsets": "{nope"},
     'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {nope'),
    ({"kafka.bootstrap.servers": BS, "assign": "{nope"},
     'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {nope'),
]

STREAM_CASES = [
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "endingOffsets": "latest"},
     "ending offset not valid in streaming queries"),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "endingOffsetsByTimestamp": '{"a":{"0":1}}'},
     "ending timestamp not valid in streaming queries"),
    ({"kafka.bootstrap.servers": BS},
     "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"},
     "The value of minOffsetPerTrigger(20) is higher than the maxOffsetsPerTrigger(10)."),
    ({"kafka.bootstrap.servers": BS, "subscribe": "a", "kafka.auto.offset.reset": "latest"},
     "Kafka option 'auto.offset.reset' is not supported."),
]
