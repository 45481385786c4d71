"""The fetcher's surroundings, scripted: `ScriptedClient` stands in for
KafkaClient (it keeps every request the fetcher sends in `sent`, and a test
answers it with bytes encoded by the generic protocol codec, so Fetch
responses go through the parser the consumer uses), plus fetchers positioned
on it and the answers a test gives. For the fetcher's tests
(tests/unit/test_fetcher*.py), the decode worker's, the fetch machine's and
the batch-bomb tests."""
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.fetch import Fetcher
from fastkc.structs import TopicPartition
from tests.support.fetch_scenarios import TOPIC, TOPIC_ID, TP0, batch, fetched  # noqa: F401  (re-exported)

TP1 = TopicPartition(TOPIC, 1)
FETCH_VERSION = 12


class FakeConn:
    def __init__(self):
        self.api_versions = {23: (0, 4)}

    def can_send(self):
        return True

    fetch_version = FETCH_VERSION

    def version_for(self, api_name):
        return self.fetch_version if api_name == "Fetch" else 0


class ScriptedClient:
    """What Fetcher needs of KafkaClient; sent requests wait in `sent`."""

    def __init__(self, partitions=(0, 1), leader_epoch=5):
        self.now = 1000.0
        self.clock = lambda: self.now  # KafkaClient.clock
        self.cluster = ClusterMetadata()
        self.cluster.update(metadata_answer(partitions, leader_epoch), all_topics=False)
        self.sent = []
        self.metadata_requests = 0
        self.on_disconnect = []
        self.metadata_listeners = []
        self.conn = FakeConn()

    def ready(self, node_id):
        return True

    def is_connected(self, node_id):
        return True

    def connection(self, node_id):
        return self.conn

    def request_metadata_update(self, all_topics=False):
        self.metadata_requests += 1

    def parse_failed(self, conn, api_name, exc):
        """KafkaClient's policy, with a limit of one: the error itself."""
        return exc

    def parse_ok(self, conn, api_name):
        pass

    def send(self, node_id, api_name, body, callback, raw=False, version=None, timeout_ms=None):
        self.sent.append((node_id, api_name, body, callback, raw, version))
        return version

    def take(self, api_name):
        """Pop the oldest sent request of that API."""
        for i, item in enumerate(self.sent):
            if item[1] == api_name:
                return self.sent.pop(i)
        raise AssertionError("no {0} request was sent; sent: {1}".format(api_name, [s[1] for s in self.sent]))

    def pending(self, api_name):
        return [s for s in self.sent if s[1] == api_name]


def metadata_answer(partitions, leader_epoch):
    return {
        "brokers": [{"node_id": 1, "host": "h", "port": 1, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [{
            "error_code": 0, "name": TOPIC, "topic_id": TOPIC_ID, "is_internal": False,
            "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": leader_epoch,
                            "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []} for p in partitions],
        }],
    }



def answer_fetch(client, request, partitions, *, error_code=0, session_id=0):
    """Answer a sent Fetch; partitions: {partition: dict of FetchPartition
    response fields} (fetch_scenarios.fetched builds the bytes)."""
    node_id, api, body, callback, raw, used = request
    assert api == "Fetch" and raw
    callback((fetched(partitions, error_code=error_code, session_id=session_id)(body, used), used), None)


def answer_list_offsets(request, offsets, error_code=0, leader_epoch=5):
    node_id, api, body, callback, raw, used = request
    assert api == "ListOffsets"
    callback({"throttle_time_ms": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": p, "error_code": error_code, "timestamp": -1, "offset": o, "leader_epoch": leader_epoch}
        for p, o in offsets.items()]}]}, None)


def fetch_offsets(request):
    body = request[2]
    return {(p["partition"]): p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}


def make_fetcher(client=None, **configs):
    """(client, a Fetcher on it): a ScriptedClient unless one is given."""
    client = client or ScriptedClient()
    configs.setdefault("bootstrap_servers", "h:1")
    return client, Fetcher(client, consumer_config(configs))


def position(fetcher, offsets):
    """Assign `fetcher` partitions of TOPIC at the given positions ({partition:
    offset}, via seek); returns the fetcher."""
    fetcher.assign([TopicPartition(TOPIC, p) for p in offsets])
    for p, o in offsets.items():
        fetcher.seek(TopicPartition(TOPIC, p), o)
    return fetcher


def positioned(offsets, **configs):
    """(client, fetcher) with partitions at the given positions; the caller
    closes the fetcher's decode worker if it asked for one."""
    client, fetcher = make_fetcher(**configs)
    return client, position(fetcher, offsets)
