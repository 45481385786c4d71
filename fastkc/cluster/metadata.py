"""The cluster as the last Metadata answer described it, with no I/O inside.

`ClusterMetadata.update(response)` reads a decoded Metadata response body
(the protocol codec's dict) into typed snapshots: brokers (`BrokerMetadata`),
topics (`TopicMetadata`, with their topic ids) and each partition's leader,
leader epoch, replicas and ISR (`PartitionMetadata`), plus the cluster id
and controller. Both clients (fastkc.client.KafkaClient, fastkc.aio.client.
AioClient), the group machines, the fetch machine and the assignors read it.

A broker advertised at an address nothing could connect to is left out, with
a warning, as if it had not been sent (its partitions look leaderless until
a later answer): an empty host, a host name DNS cannot carry (longer than
253 bytes, a label longer than 63 bytes or an empty one: `a..b`, `.a`), a
port outside 1..65535 or a negative node id. `address_problem` is that rule,
also used by the connections (whoever passed an address on) and by the group
coordinator's FindCoordinator answer.

This module imports nothing from the I/O side (and nothing from
fastkc.config), so the config, the assignors and the machines can import it
without a cycle.
"""
import ipaddress
import logging
import string
from collections.abc import Container, Iterable
from typing import Any, NamedTuple

from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

#: a request or response body as the protocol codec reads and writes it
Body = dict[str, Any]

#: DNS's limits (RFC 1035 2.3.4): a name of at most 253 bytes written
#: without its root dot, labels of 1 to 63 bytes
MAX_HOST_BYTES = 253
MAX_LABEL_BYTES = 63

_NULL_TOPIC_ID = bytes(16)


class BrokerMetadata(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


class PartitionMetadata(NamedTuple):
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


class TopicMetadata(NamedTuple):
    name: str
    topic_id: bytes | None
    is_internal: bool
    partitions: dict[int, PartitionMetadata]
    error_code: int


#: the bytes a host name's label may hold (RFC 1123, and '_', which resolvers accept)
_HOST_LABEL_BYTES = frozenset((string.ascii_letters + string.digits + "-_").encode("ascii"))


def host_problem(host: object) -> str | None:
    """Why `host` (from the wire, or a bootstrap server the application
    gave) cannot be connected to, or None. An IP literal passes; a name must
    be one DNS can carry (RFC 1123: at most 253 bytes, labels of 1..63 of
    letters, digits, '-' and '_'); a single trailing dot (the DNS root) is
    allowed, as resolvers allow it."""
    if not isinstance(host, str) or not host:
        return "empty host"
    if "\0" in host:
        return "a NUL byte in the host name"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    try:
        # what the resolver would send (IDNA for a non-ASCII name); the idna
        # codec refuses empty and over-long labels itself
        encoded = name.encode("ascii") if name.isascii() else name.encode("idna")
    except UnicodeError:
        return "a host name DNS cannot carry"
    if len(encoded) > MAX_HOST_BYTES:
        return "a host name of {0} bytes (DNS allows {1})".format(len(encoded), MAX_HOST_BYTES)
    for label in encoded.split(b"."):
        if not label:
            return "an empty label in the host name"
        if len(label) > MAX_LABEL_BYTES:
            return "a host name label of {0} bytes (DNS allows {1})".format(len(label), MAX_LABEL_BYTES)
        if not all(c in _HOST_LABEL_BYTES for c in label):
            return "a character no host name has"
    return None


def address_problem(host: object, port: object, node_id: int = 0) -> str | None:
    """Why a broker advertised at host:port (as node_id) is not usable, or
    None. getaddrinfo would take port 70000 as 4464, and raise a bare
    UnicodeError for a 64-byte label: the address is checked before."""
    problem = host_problem(host)
    if problem is not None:
        return problem
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return "port {0!r} outside 1..65535".format(port)
    if node_id < 0:
        return "negative node id"
    return None


class ClusterMetadata:
    """What the last Metadata response said, plus bookkeeping for refreshes."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.topic_names_by_id: dict[bytes, str] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.last_refresh: float | None = None  # monotonic seconds of the last successful update
        self.all_topics_known = False

    def update(self, response: Body, *, all_topics: bool) -> None:
        brokers = {}
        for b in response["brokers"]:
            problem = address_problem(b["host"], b["port"], b["node_id"])
            if problem is not None:
                # nothing could connect there: leave it out (its partitions
                # look leaderless and are looked up again), as if not sent
                log.warning("ignoring broker %s advertised at %r:%s (not a usable address: %s)",
                            b["node_id"], loggable_host(b["host"]), b["port"], problem)
                continue
            brokers[b["node_id"]] = BrokerMetadata(b["node_id"], b["host"], b["port"], b["rack"])
        self.brokers = brokers
        self.cluster_id = response["cluster_id"]
        self.controller_id = response["controller_id"]
        fresh = {}
        for t in response["topics"]:
            if t["name"] is None:
                continue
            partitions = {
                p["partition_index"]: PartitionMetadata(p["partition_index"], p["leader_id"], p["leader_epoch"],
                                                        tuple(p["replica_nodes"]), tuple(p["isr_nodes"]),
                                                        p["error_code"])
                for p in t["partitions"]
            }
            topic_id = t["topic_id"] if t["topic_id"] != _NULL_TOPIC_ID else None
            fresh[t["name"]] = TopicMetadata(t["name"], topic_id, t["is_internal"], partitions, t["error_code"])
        if all_topics:
            self.topics = fresh
        else:
            self.topics.update(fresh)
        self.all_topics_known = all_topics
        self.topic_names_by_id = {t.topic_id: t.name for t in self.topics.values() if t.topic_id is not None}

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        topic = self.topics.get(tp.topic)
        if topic is None:
            return None
        return topic.partitions.get(tp.partition)

    def leader_for(self, tp: TopicPartition) -> int | None:
        meta = self.partition(tp)
        if meta is None or meta.leader < 0:
            return None
        return meta.leader

    def leaders_of(self, topics: Iterable[str]) -> set[int]:
        """The known brokers that lead a partition of `topics`."""
        leaders: set[int] = set()
        for name in topics:
            topic = self.topics.get(name)
            if topic is not None:
                leaders.update(p.leader for p in topic.partitions.values() if p.leader in self.brokers)
        return leaders


def loggable_host(host: object) -> object:
    """A host name from the wire as a log line shows it: a hostile one's
    start and its length."""
    if isinstance(host, str) and len(host) > 80:
        return "{0}... ({1} characters)".format(host[:60], len(host))
    return host


def metadata_request_body(topics: Iterable[str], all_topics: bool, allow_auto_create_topics: bool) -> Body:
    """The Metadata request a refresh sends (both clients, sync and asyncio):
    every topic (a pattern subscription, topics()) or the named ones."""
    names = None if all_topics else [{"name": t} for t in sorted(topics)]
    return {"topics": names, "allow_auto_topic_creation": bool(allow_auto_create_topics)}


def partition_counts(cluster: ClusterMetadata) -> dict[str, int]:
    """{topic: partition count} of the topics the cache describes without
    error: what a classic group's leader compares with the counts it
    assigned from (ClassicMachine.metadata_changed)."""
    return {name: len(t.partitions) for name, t in cluster.topics.items() if t.error_code == 0}


def metadata_incomplete(cluster: ClusterMetadata, topics: Container[str]) -> bool:
    """True when a wanted topic came back with an error or a partition
    without leader (an election in progress): look again after the backoff."""
    return any(t.error_code != 0 or any(p.leader < 0 for p in t.partitions.values())
               for name, t in cluster.topics.items() if name in topics)
