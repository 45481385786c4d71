"""The cluster, with no I/O inside: what the metadata says (`metadata`) and
the policy both clients follow (`core.ClusterCore`): metadata refresh rules,
leaders reconnected when they come back, least-loaded node, parse failures,
idle connections, fatal errors. fastkc.client.KafkaClient (selector) and
fastkc.aio.client.AioClient (asyncio) drive it; neither module imports the
other's internals.

Nothing here imports a socket, selector, thread, asyncio or clock, nor
fastkc.config (which imports the assignors, which import the metadata
types): `now` comes from the driver.
"""
from fastkc.cluster.core import FATAL_CONNECT_ERRORS, MAX_PARSE_FAILURES, ClusterCore, Link, RefreshRequest, is_fatal
from fastkc.cluster.metadata import (
    Body,
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
    address_problem,
    host_problem,
    metadata_incomplete,
    metadata_request_body,
)

__all__ = ["FATAL_CONNECT_ERRORS", "MAX_PARSE_FAILURES", "Body", "BrokerMetadata", "ClusterCore", "ClusterMetadata",
           "Link", "PartitionMetadata", "RefreshRequest", "TopicMetadata", "address_problem", "host_problem",
           "is_fatal", "metadata_incomplete", "metadata_request_body"]
