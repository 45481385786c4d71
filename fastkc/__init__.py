"""fastkc: a fast, kafka-python-compatible Kafka consumer."""
from fastkc import _backend
from fastkc._version import __version__ as __version__
from fastkc.consumer import KafkaConsumer
from fastkc.group import ConsumerRebalanceListener  # kafka-python exports it at the top too
from fastkc.share import AcknowledgeType, KafkaShareConsumer
from fastkc.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

#: "c" when the compiled core is in use, "python" for the pure-Python twin.
backend = _backend.name

__all__ = [
    "backend",
    "KafkaConsumer",
    "KafkaShareConsumer",
    "AcknowledgeType",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]
