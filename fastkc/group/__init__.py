"""Consumer groups: the member that joins a group for KafkaConsumer.

Layout:
- transport.py  the group's I/O (its own KafkaClient; blocking calls to the coordinator)
- member.py     what both protocols share: threads, listener calls, commits, committed offsets
- classic.py    the classic protocol (JoinGroup/SyncGroup/Heartbeat), eager and cooperative
- kip848.py     the KIP-848 protocol (ConsumerGroupHeartbeat, server-side assignors)
"""
from fastkc.group.member import ConsumerRebalanceListener
from fastkc.structs import ConsumerGroupMetadata

GROUP_PROTOCOLS = ("classic", "consumer")


def make_group_member(config, app, transport=None, **kwargs):
    """The member for config["group_protocol"] ("classic" or "consumer")."""
    from fastkc.group.transport import GroupTransport

    transport = transport if transport is not None else GroupTransport(config)
    if config.get("group_protocol", "classic") == "consumer":
        from fastkc.group.kip848 import ConsumerProtocolMember

        return ConsumerProtocolMember(config, transport, app, **kwargs)
    from fastkc.group.classic import ClassicGroupMember

    return ClassicGroupMember(config, transport, app, **kwargs)


__all__ = ["ConsumerGroupMetadata", "ConsumerRebalanceListener", "GROUP_PROTOCOLS", "make_group_member"]
