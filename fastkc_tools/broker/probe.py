"""The readiness probe: a real ApiVersions + Metadata round trip.

A node counts as ready when it answers Metadata for the expected cluster id
and lists every expected node id among its brokers (a KRaft broker answers
ApiVersions before it has registered and been unfenced; Metadata's broker list
shows when it has). A log line is not enough: the socket may not be serving
yet. Checking the cluster id also rules out some other Kafka that happens to
listen on a reused port.
"""
from fastkc.net.blocking import BlockingConnection


def cluster_view(host: str, port: int, timeout: float = 5.0) -> tuple[str | None, list[int]]:
    """Connect (ApiVersions is negotiated on connect), send Metadata for no
    topics, and return (cluster_id, sorted node ids of the listed brokers)."""
    with BlockingConnection(host, port, client_id="fastkc-broker-probe", timeout=timeout) as conn:
        response = conn.request(
            "Metadata",
            {
                "topics": [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
    return response["cluster_id"], sorted(broker["node_id"] for broker in response["brokers"])
