"""The readiness probe: a real ApiVersions + Metadata round trip.

A node counts as ready when it answers Metadata and lists every expected node
id among its brokers (a KRaft broker answers ApiVersions before it has
registered and been unfenced; Metadata's broker list shows when it has). A log
line is not enough: the socket may not be serving yet.
"""


def _metadata_node_ids_fastkc(host, port, timeout=5.0):
    """Connect (ApiVersions is negotiated on connect), send Metadata for no
    topics, and return the sorted node ids of the brokers it lists."""
    from fastkc.protocol.blocking import BlockingConnection

    with BlockingConnection(host, port, timeout=timeout) as conn:
        response = conn.request(
            "Metadata",
            {
                "topics": [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
    return sorted(broker["node_id"] for broker in response["brokers"])


def _metadata_node_ids_confluent(host, port, timeout=5.0):
    """Interim probe until fastkc.protocol.blocking lands: librdkafka performs
    the same ApiVersions + Metadata exchange. Needs confluent-kafka (dev extra)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {
            "bootstrap.servers": "{0}:{1}".format(host, port),
            "socket.timeout.ms": int(timeout * 1000),
            "log_level": 0,
        }
    )
    metadata = admin.list_topics(timeout=timeout)
    return sorted(metadata.brokers)


# The one line to switch once fastkc.protocol.blocking is on main.
metadata_node_ids = _metadata_node_ids_confluent
