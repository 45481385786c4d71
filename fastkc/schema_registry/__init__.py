"""Schema Registry data: Confluent-framed Avro (and later Protobuf, JSON Schema) decoded in C."""
