"""Share groups (KIP-932, "queues for Kafka"): KafkaShareConsumer and its
machines — member_machine.py (ShareGroupHeartbeat), session.py (one
leader's share session), acknowledgements.py (delivered -> acknowledged ->
sent -> answered), fetch_machine.py (ShareFetch / ShareAcknowledge),
consumer.py (the sync driver and the public API)."""
from fastkc.share.acknowledgements import AcknowledgeType
from fastkc.share.consumer import KafkaShareConsumer

__all__ = ["AcknowledgeType", "KafkaShareConsumer"]
