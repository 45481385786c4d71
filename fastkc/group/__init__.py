"""Consumer groups: the member that joins a group for KafkaConsumer.

Layout — I/O-free state machines (every protocol decision; see machine.py):
- machine.py              requests, targets, the transition-table state holder
- coordinator_machine.py  FindCoordinator, coordinator lost, backoff
- commit_machine.py       OffsetCommit / OffsetFetch and the Java client's commit rules
- classic_machine.py      the classic protocol (JoinGroup/SyncGroup/Heartbeat), eager and cooperative
- consumer_machine.py     the KIP-848 protocol (ConsumerGroupHeartbeat, server-side assignors)
- reconciler.py           a machine's events as ordered steps (commit, listener, revoke, assign),
                          executed by both drivers (this sync one, fastkc/aio/group_driver.py)
- subscription.py         topics / pattern and their rules, shared by both consumers
and the sync driver that moves their requests:
- transport.py  the group's I/O (its own KafkaClient; blocking calls to the coordinator)
- member.py     threads, locks, the reconciler's steps, commits, committed offsets (both protocols)
- classic.py / kip848.py  what each protocol's member adds
"""
from typing import Any

from fastkc.config import Config
from fastkc.group.member import ConsumerRebalanceListener, GroupMemberBase, MemberApp, MemberTransport
from fastkc.structs import ConsumerGroupMetadata

GROUP_PROTOCOLS = ("classic", "consumer")


def make_group_member(config: Config, app: MemberApp, transport: MemberTransport | None = None,
                      **kwargs: Any) -> GroupMemberBase[Any]:
    """The member for config["group_protocol"] ("classic" or "consumer")."""
    from fastkc.group.transport import GroupTransport

    if transport is None:
        transport = GroupTransport(config)
    if config.get("group_protocol", "classic") == "consumer":
        from fastkc.group.kip848 import ConsumerProtocolMember

        return ConsumerProtocolMember(config, transport, app, **kwargs)
    from fastkc.group.classic import ClassicGroupMember

    return ClassicGroupMember(config, transport, app, **kwargs)


__all__ = ["ConsumerGroupMetadata", "ConsumerRebalanceListener", "GROUP_PROTOCOLS", "make_group_member"]
