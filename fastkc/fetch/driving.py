"""What every driver of FetchMachine does with its client alike (the sync
Fetcher in fetch/driver.py, fastkc.aio's AioFetchDriver): hand the machine
a link to a ready connection, pass its wish for metadata on to the client,
and give it each new cluster view. The I/O (sending, waiting, decoding
ahead) stays each driver's own."""
from typing import Protocol

from fastkc.cluster import ClusterMetadata
from fastkc.fetch.machine import FetchMachine
from fastkc.fetch.requests import ConnectionLink, VersionedConnection


class FetchClient(Protocol):
    """The client calls the shared part makes (KafkaClient and AioClient
    both answer them)."""

    @property
    def cluster(self) -> ClusterMetadata: ...

    def ready(self, node_id: int) -> bool: ...

    def connection(self, node_id: int) -> VersionedConnection | None: ...

    def request_metadata_update(self, all_topics: bool = False) -> None: ...


class FetchDriverBase:
    """The shared part; a driver sets `client` and `machine` first."""

    client: FetchClient
    machine: FetchMachine

    def _link(self, node_id: int) -> ConnectionLink | None:
        """next_requests' link: the node's connection when it is ready."""
        if not self.client.ready(node_id):
            return None
        conn = self.client.connection(node_id)
        return None if conn is None else ConnectionLink(conn)

    def _flush_metadata_wish(self) -> None:
        if self.machine.metadata_wanted:
            self.machine.metadata_wanted = False
            self.client.request_metadata_update()

    def _metadata_updated(self) -> None:
        self.machine.on_metadata(self.client.cluster)
        self._flush_metadata_wish()
