"""fastkc: a fast, kafka-python-compatible Kafka consumer."""
from fastkc import _backend
from fastkc.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

__version__ = "0.1.0"

from fastkc.consumer import KafkaConsumer  # noqa: E402  (needs __version__ for its ApiVersions)
from fastkc.group import ConsumerRebalanceListener  # noqa: E402  (kafka-python exports it at the top too)

#: "c" when the compiled core is in use, "python" for the pure-Python twin.
backend = _backend.name

__all__ = [
    "backend",
    "KafkaConsumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]
