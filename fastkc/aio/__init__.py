"""fastkc's asyncio front end: aiokafka 0.14's consumer API over fastkc's core.

What exists today is everything the consumer class will be held to apart from
the class itself (issue 12; the driver lands in the next round):

- `fastkc.aio.config`: aiokafka's constructor keywords, their defaults and
  checks, and their translation into fastkc's (kafka-python's) config keys;
- `fastkc.aio.errors`: aiokafka.errors' names over fastkc's error classes;
- `fastkc.aio.abc`: aiokafka's ConsumerRebalanceListener (sync or async
  callbacks) and AbstractTokenProvider;
- `fastkc.aio.structs`: aiokafka.structs' record and tuple types.

`from fastkc.aio import X` offers the names aiokafka's package offers except
its clients (AIOKafkaConsumer is still to come; there is no producer).
"""
from fastkc.aio.abc import ConsumerRebalanceListener
from fastkc.aio.errors import ConsumerStoppedError, IllegalOperation
from fastkc.aio.structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = [
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "IllegalOperation",
    "ConsumerRecord",
    "TopicPartition",
    "OffsetAndTimestamp",
    "OffsetAndMetadata",
]
