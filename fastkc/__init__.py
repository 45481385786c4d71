"""fastkc: a fast, kafka-python-compatible Kafka consumer."""
from fastkc import _backend
from fastkc.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

__version__ = "0.1.0"

#: "c" when the compiled core is in use, "python" for the pure-Python twin.
backend = _backend.name

__all__ = [
    "backend",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]
