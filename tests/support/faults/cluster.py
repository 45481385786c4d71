"""The fault campaign's cluster: three nodes, each behind its toxiproxy
proxy (tests/faults/conftest.py starts it once per session; the soak's long
mode starts its own)."""
from dataclasses import dataclass

from fastkc_tools import broker


@dataclass
class ProxiedCluster:
    info: object  # fastkc_tools.broker.BrokerInfo
    proxies: dict  # node id → tests.support.faults.toxiproxy.Proxy
    toxiproxy: object

    @property
    def bootstrap(self):
        """Through the proxies (the consumer under test)."""
        return self.info.listeners["PROXIED"]

    @property
    def direct(self):
        """Straight to the brokers (producer, admin, checks)."""
        return self.info.bootstrap_servers

    def node_alive(self, node_id):
        return broker.status(data_dir=self.info.data_dir).alive.get(node_id, False)

    def heal(self):
        """Every toxic removed, every proxy enabled, every node running."""
        self.toxiproxy.client.reset()
        for node in self.info.nodes:
            if not self.node_alive(node.node_id):
                broker.start_node(self.info, node.node_id, timeout=90.0, die_with_parent=True)
