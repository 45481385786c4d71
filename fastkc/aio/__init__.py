"""fastkc's asyncio front end: aiokafka 0.14's consumer API over fastkc's core.

- `fastkc.aio.consumer.AIOKafkaConsumer`: the consumer, over
  `fastkc.engine.aio_engine.AioConsumerEngine`, which drives the machines
  the sync consumer drives through `fastkc.aio.client` (connections,
  metadata) and `fastkc.aio.fetch_driver`;

- `fastkc.aio.config`: aiokafka's constructor keywords, their defaults and
  checks, and their translation into fastkc's (kafka-python's) config keys;
- `fastkc.aio.errors`: aiokafka.errors' names over fastkc's error classes;
- `fastkc.aio.abc`: aiokafka's ConsumerRebalanceListener (sync or async
  callbacks) and AbstractTokenProvider;
- `fastkc.aio.structs`: aiokafka.structs' record and tuple types.

`from fastkc.aio import X` offers the names aiokafka's package offers except
its producer (there is none).
"""
from fastkc.aio.abc import ConsumerRebalanceListener
from fastkc.aio.consumer import AIOKafkaConsumer
from fastkc.aio.errors import ConsumerStoppedError, IllegalOperation
from fastkc.aio.structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = [
    "AIOKafkaConsumer",
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "IllegalOperation",
    "ConsumerRecord",
    "TopicPartition",
    "OffsetAndTimestamp",
    "OffsetAndMetadata",
]
