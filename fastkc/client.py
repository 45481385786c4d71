"""The client: bootstrap, one connection per broker, the metadata cache, and
the single selector-driven poll loop everything runs in.

No thread and no busy loop: `poll(timeout)` blocks in select() (which releases
the GIL) until a socket is ready, a request deadline or reconnect backoff
expires, or the timeout passes, so an idle consumer uses no CPU.

Requests are sent with `send(node_id, api_name, body, callback)`; the callback
runs inside a later `poll` as callback(response, error), where response is
the decoded body dict (or, with raw=True, the payload and the version, for the
compiled Fetch parser). `request(node_id, …)` is the blocking form, used by
the consumer's offset look-ups; it polls the same loop, so fetches keep
flowing meanwhile.

Metadata (brokers, topics, partitions, leaders, leader epochs, topic ids) is
refreshed every metadata_max_age_ms, and at once when anything calls
`request_metadata_update()` — the fetcher does on NOT_LEADER_OR_FOLLOWER,
UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH and when
a connection is lost.
"""
import logging
import selectors
import time
from collections import namedtuple

from fastkc.config import build_ssl_context
from fastkc.conn import BrokerConnection, ConnectionState
from fastkc.errors import (
    AuthorizationError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    NodeNotReadyError,
    ProtocolParseError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    for_code,
)
from fastkc.protocol import codec

log = logging.getLogger(__name__)

BrokerMetadata = namedtuple("BrokerMetadata", ["node_id", "host", "port", "rack"])
PartitionMetadata = namedtuple("PartitionMetadata", ["partition", "leader", "leader_epoch", "replicas", "isr",
                                                     "error_code"])
TopicMetadata = namedtuple("TopicMetadata", ["name", "topic_id", "is_internal", "partitions", "error_code"])

_NULL_TOPIC_ID = bytes(16)
# Errors that no retry can fix: raised to the application at once.
_FATAL_CONNECT_ERRORS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError, AuthorizationError)


class ClusterMetadata:
    """What the last Metadata response said, plus bookkeeping for refreshes."""

    def __init__(self):
        self.brokers = {}  # node_id -> BrokerMetadata
        self.topics = {}  # name -> TopicMetadata
        self.topic_names_by_id = {}  # topic_id bytes -> name
        self.cluster_id = None
        self.controller_id = -1
        self.last_refresh = None  # monotonic seconds of the last successful update
        self.all_topics_known = False

    def update(self, response, *, all_topics):
        self.brokers = {
            b["node_id"]: BrokerMetadata(b["node_id"], b["host"], b["port"], b["rack"]) for b in response["brokers"]
        }
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

    def partition(self, tp):
        topic = self.topics.get(tp.topic)
        if topic is None:
            return None
        return topic.partitions.get(tp.partition)

    def leader_for(self, tp):
        meta = self.partition(tp)
        if meta is None or meta.leader < 0:
            return None
        return meta.leader


class KafkaClient:
    def __init__(self, config, *, clock=time.monotonic):
        self.config = config
        self._clock = clock
        self._selector = selectors.DefaultSelector()
        self._registered = {}  # conn -> (sock, events)
        self._conns = {}  # node_id -> BrokerConnection
        self._bootstrap_conn = None
        self.cluster = ClusterMetadata()
        self._ssl_context = None
        if config["security_protocol"] in ("SSL", "SASL_SSL"):
            self._ssl_context = build_ssl_context(config)
        self._metadata_topics = set()  # topics the consumer needs
        self.subscribe_all_topics = False  # a pattern subscription: every refresh asks for all topics
        self._metadata_wanted = False
        self._metadata_all_wanted = False
        self._metadata_in_flight = False
        self._metadata_failed_at = None
        self._fatal_error = None
        self.bootstrapped = False
        self._closed = False
        # lost-connection listeners (the fetcher resets fetch sessions)
        self.on_disconnect = []
        # called after each metadata update (the fetcher checks leader epochs)
        self.metadata_listeners = []

    # --- bootstrap ---------------------------------------------------------------
    def bootstrap(self, timeout_ms=None):
        """Connect to the first bootstrap server that answers and load the
        broker list. Raises NoBrokersAvailable after bootstrap_timeout_ms."""
        timeout_ms = self.config["bootstrap_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + timeout_ms / 1000.0
        servers = self.config["bootstrap_servers"]
        index = 0
        last_error = None
        conn = None
        while True:
            if conn is not None and conn.state is ConnectionState.DISCONNECTED and conn.last_error is not None:
                # this attempt failed
                self._unregister(conn)
                last_error = conn.last_error
                if isinstance(last_error, _FATAL_CONNECT_ERRORS):
                    raise last_error
                if conn._address_index >= len(conn._addresses):
                    index += 1  # every address of this server tried: the next server
                    conn = None
                else:
                    conn.last_error = None  # the next address of the same server, at once
                    conn._next_attempt = 0.0
            if conn is None:
                host, port = servers[index % len(servers)]
                conn = BrokerConnection(host, port, self.config, ssl_context=self._ssl_context, clock=self._clock)
                rounds = index // len(servers)
                if rounds:
                    # every server failed again: back off (doubling) before the next round
                    backoff_ms = min(self.config["reconnect_backoff_max_ms"],
                                     self.config["reconnect_backoff_ms"] * 2 ** min(rounds - 1, 30))
                    conn._next_attempt = self._clock() + backoff_ms / 1000.0
            if conn.state is ConnectionState.DISCONNECTED:
                conn.connect()
                self._sync(conn)
            if conn.ready:
                break
            remaining = deadline - self._clock()
            if remaining <= 0:
                self._unregister(conn)
                conn.close()
                raise NoBrokersAvailable("Unable to bootstrap from {0} within {1} ms{2}".format(
                    ",".join("{0}:{1}".format(h, p) for h, p in servers), timeout_ms,
                    " (last error: {0})".format(last_error or conn.last_error) if (last_error or conn.last_error)
                    else ""))
            wait = min(remaining, 0.05 + conn.backoff_remaining()) if conn.state is ConnectionState.DISCONNECTED \
                else remaining
            self._poll_sockets(wait)
        self._bootstrap_conn = conn
        response = self._request_on(conn, "Metadata", {"topics": [], "allow_auto_topic_creation": False},
                                    max(0.0, deadline - self._clock()) * 1000.0 + 1)
        self.cluster.update(response, all_topics=False)
        self.cluster.last_refresh = self._clock()
        self.bootstrapped = True
        # Reuse the bootstrap connection for the broker it reached.
        for broker in self.cluster.brokers.values():
            if (broker.host, broker.port) == (conn.host, conn.port) and broker.node_id not in self._conns:
                conn.node_id = broker.node_id
                self._conns[broker.node_id] = conn
                self._bootstrap_conn = None
                break

    # --- connections ---------------------------------------------------------------
    def _conn(self, node_id):
        conn = self._conns.get(node_id)
        if conn is None:
            broker = self.cluster.brokers.get(node_id)
            if broker is None:
                return None
            conn = BrokerConnection(broker.host, broker.port, self.config, node_id=node_id,
                                    ssl_context=self._ssl_context, clock=self._clock)
            self._conns[node_id] = conn
        elif conn.state is ConnectionState.DISCONNECTED:
            broker = self.cluster.brokers.get(node_id)
            if broker is not None and (broker.host, broker.port) != (conn.host, conn.port):
                # the broker moved: a new connection object for its new address
                self._unregister(conn)
                conn = BrokerConnection(broker.host, broker.port, self.config, node_id=node_id,
                                        ssl_context=self._ssl_context, clock=self._clock)
                self._conns[node_id] = conn
        return conn

    def ready(self, node_id):
        """True when a request can be sent to node_id now; otherwise starts
        connecting (respecting backoff) and returns False."""
        conn = self._conn(node_id)
        if conn is None:
            return False
        if conn.ready:
            return conn.can_send()
        if conn.state is ConnectionState.DISCONNECTED:
            conn.connect()
            self._sync(conn)
        return False

    def is_connected(self, node_id):
        conn = self._conns.get(node_id)
        return conn is not None and conn.ready

    def connection(self, node_id):
        return self._conns.get(node_id)

    def least_loaded_node(self):
        """A ready broker with the fewest requests in flight, else any known one."""
        best, best_load = None, None
        for node_id, conn in self._conns.items():
            if conn.ready and (best_load is None or conn.in_flight_count() < best_load):
                best, best_load = node_id, conn.in_flight_count()
        if best is not None:
            return best
        candidates = [n for n in self.cluster.brokers if self._conns.get(n) is None or
                      self._conns[n].backoff_remaining() == 0]
        if candidates:
            return candidates[0]
        return next(iter(self.cluster.brokers), None)

    # --- requests ------------------------------------------------------------------------
    def send(self, node_id, api_name, body, callback, *, raw=False, version=None):
        """Send a request to node_id (which must be ready()). The callback gets
        (decoded body, None) — or ((payload, version), None) when raw — or
        (None, error)."""
        conn = self._conn(node_id)
        if conn is None or not conn.ready:
            raise NodeNotReadyError("broker {0} is not ready".format(node_id))
        if version is None:
            version = conn.version_for(api_name)
        wrapped = _Decoding(self, conn, api_name, version, callback, raw)
        conn.send(api_name, body, wrapped, version=version)
        self._sync(conn)
        return version

    def _request_on(self, conn, api_name, body, timeout_ms):
        """Blocking request on one connection (bootstrap only)."""
        box = []
        version = conn.version_for(api_name)
        conn.send(api_name, body, _Decoding(self, conn, api_name, version, lambda r, e: box.append((r, e)), False),
                  version=version)
        self._sync(conn)
        deadline = self._clock() + timeout_ms / 1000.0
        while not box:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("{0} to {1}:{2} timed out".format(api_name, conn.host, conn.port))
            self._poll_sockets(remaining)
        response, error = box[0]
        if error is not None:
            raise error
        return response

    def request(self, api_name, body, timeout_ms, node_id=None):
        """Send to node_id (least loaded when None) and wait for the answer,
        reconnecting and retrying on connection errors until timeout_ms."""
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            target = self.least_loaded_node() if node_id is None else node_id
            if target is not None and self.ready(target):
                box = []
                self.send(target, api_name, body, lambda r, e: box.append((r, e)))
                while not box:
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise KafkaTimeoutError("{0} to broker {1} got no answer within {2} ms".format(
                            api_name, target, timeout_ms))
                    self.poll(remaining)
                response, error = box[0]
                if error is None:
                    return response
                if not getattr(error, "retriable", False):
                    raise error
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("{0}: no broker answered within {1} ms".format(api_name, timeout_ms))
            self.poll(min(remaining, self.config["retry_backoff_ms"] / 1000.0))
            self._raise_fatal()

    # --- metadata ------------------------------------------------------------------------
    def add_topics(self, topics):
        new = set(topics) - self._metadata_topics
        if new:
            self._metadata_topics |= new
            self._metadata_wanted = True

    def set_topics(self, topics):
        topics = set(topics)
        if topics - self._metadata_topics:
            self._metadata_wanted = True
        self._metadata_topics = topics

    def request_metadata_update(self, all_topics=False):
        self._metadata_wanted = True
        if all_topics:
            self._metadata_all_wanted = True

    def metadata_due(self):
        if self._metadata_wanted or self._metadata_all_wanted:
            return True
        last = self.cluster.last_refresh
        return last is None or self._clock() - last >= self.config["metadata_max_age_ms"] / 1000.0

    def _maybe_refresh_metadata(self):
        if self._metadata_in_flight or not self.bootstrapped or not self.metadata_due():
            return
        if self._metadata_failed_at is not None and \
                self._clock() - self._metadata_failed_at < self.config["retry_backoff_ms"] / 1000.0:
            return
        node_id = self.least_loaded_node()
        if node_id is None or not self.ready(node_id):
            return
        all_topics = self._metadata_all_wanted or self.subscribe_all_topics
        if all_topics:
            topics = None
        else:
            topics = [{"name": t} for t in sorted(self._metadata_topics)]
        body = {"topics": topics, "allow_auto_topic_creation": bool(self.config["allow_auto_create_topics"])}
        self._metadata_in_flight = True
        self._metadata_wanted = False
        self._metadata_all_wanted = False

        def answered(response, error):
            self._metadata_in_flight = False
            if error is not None:
                self._metadata_failed_at = self._clock()
                self._metadata_wanted = True
                self._metadata_all_wanted = self._metadata_all_wanted or all_topics
                return
            self._metadata_failed_at = None
            self.cluster.update(response, all_topics=all_topics)
            self.cluster.last_refresh = self._clock()
            retry = any(t.error_code != 0 or any(p.leader < 0 for p in t.partitions.values())
                        for name, t in self.cluster.topics.items() if name in self._metadata_topics)
            if retry:  # leader elections in progress: look again after the backoff
                self._metadata_wanted = True
                self._metadata_failed_at = self._clock()
            for listener in self.metadata_listeners:
                listener()

        self.send(node_id, "Metadata", body, answered)

    def wait_for_metadata(self, timeout_ms, all_topics=False):
        """Refresh metadata now and wait for it (blocking API calls)."""
        before = self.cluster.last_refresh
        self.request_metadata_update(all_topics=all_topics)
        deadline = self._clock() + timeout_ms / 1000.0
        while self.cluster.last_refresh == before or self._metadata_in_flight or \
                (all_topics and not self.cluster.all_topics_known):
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("no metadata within {0} ms".format(timeout_ms))
            self.poll(min(remaining, 0.1))
            self._raise_fatal()

    # --- the poll loop --------------------------------------------------------------------
    def poll(self, timeout):
        """Run the loop once: refresh metadata if due, wait up to `timeout`
        seconds for socket events (or the next deadline), handle them."""
        if self._closed:
            raise IllegalStateError("the client is closed")
        self._maybe_refresh_metadata()
        now = self._clock()
        wait = max(0.0, timeout)
        for conn in self._all_conns():
            deadline = conn.next_deadline()
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - now))
        if self._metadata_wanted and self._metadata_failed_at is not None:
            wait = min(wait, self.config["retry_backoff_ms"] / 1000.0)
        self._poll_sockets(wait)
        now = self._clock()
        for conn in self._all_conns():
            conn.check_timeouts(now)
            self._sync(conn)
        self._close_idle(now)

    def _poll_sockets(self, wait):
        if not self._registered:
            if wait > 0:
                time.sleep(min(wait, 0.05) if wait != float("inf") else 0.05)
            return
        events = self._selector.select(wait)
        for key, mask in events:
            conn = key.data
            if mask & selectors.EVENT_WRITE:
                conn.on_writable()
            if mask & selectors.EVENT_READ and conn.sock is not None:
                answered = conn.on_readable()
                for request, payload in answered:
                    request.callback(payload, None)
            self._sync(conn)

    def _all_conns(self):
        conns = list(self._conns.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        return conns

    def _close_idle(self, now):
        limit = self.config["connections_max_idle_ms"] / 1000.0
        for conn in list(self._conns.values()):
            if conn.ready and conn.idle_for(now) > limit:
                conn.close()
                self._sync(conn)
        if self._bootstrap_conn is not None and self._bootstrap_conn.idle_for(now) > 1.0:
            # no broker matched the bootstrap address: it has done its job
            self._unregister(self._bootstrap_conn)
            self._bootstrap_conn.close()
            self._bootstrap_conn = None

    def _sync(self, conn):
        """Keep the selector registration in step with the connection's socket.
        Registrations are by file descriptor, so one whose socket was closed
        meanwhile (a connection failing inside a callback) still unregisters
        cleanly and cannot collide with a new socket given the same number."""
        sock = conn.sock
        current = self._registered.get(conn)
        if sock is None:
            if current is not None:
                self._unregister(conn)
            return
        fd = sock.fileno()
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wants_write() else 0)
        if current is not None and (current[0] is not sock or current[1] != fd):
            self._unregister(conn, lost=False)
            current = None
        if current is None:
            self._selector.register(fd, events, conn)
            self._registered[conn] = (sock, fd, events)
        elif current[2] != events:
            self._selector.modify(fd, events, conn)
            self._registered[conn] = (sock, fd, events)

    def _unregister(self, conn, lost=True):
        current = self._registered.pop(conn, None)
        if current is not None:
            try:
                self._selector.unregister(current[1])
            except (KeyError, ValueError, OSError):
                pass
        if lost and current is not None and conn.last_error is not None and conn.node_id is not None \
                and not self._closed:
            self._connection_lost(conn)

    def _connection_lost(self, conn):
        if isinstance(conn.last_error, _FATAL_CONNECT_ERRORS):
            self._fatal_error = conn.last_error
        self.request_metadata_update()
        for listener in self.on_disconnect:
            listener(conn.node_id)

    def _raise_fatal(self):
        if self._fatal_error is not None:
            error, self._fatal_error = self._fatal_error, None
            raise error

    def raise_fatal(self):
        self._raise_fatal()

    def close(self):
        if self._closed:
            return
        self._closed = True
        for conn in self._all_conns():
            self._unregister(conn)
            conn.close()
        self._conns.clear()
        self._bootstrap_conn = None
        self._selector.close()


class _Decoding:
    """Wraps a caller's callback: decodes the payload (or hands it over raw)
    and turns a parse failure into an error for that request only."""

    __slots__ = ("client", "conn", "api_name", "version", "callback", "raw")

    def __init__(self, client, conn, api_name, version, callback, raw):
        self.client = client
        self.conn = conn
        self.api_name = api_name
        self.version = version
        self.callback = callback
        self.raw = raw

    def __call__(self, payload, error):
        if error is not None:
            self.callback(None, error)
            return
        if self.raw:
            self.callback((payload, self.version), None)
            return
        try:
            _, body = codec.decode_response(self.api_name, self.version, payload)
        except ProtocolParseError as exc:
            # a broker that sends a malformed body cannot be trusted with the
            # next answer on this connection either
            self.conn.close(exc)
            self.callback(None, exc)
            return
        self.callback(body, None)


def broker_error(code, what):
    """The typed error for a broker error code, with context."""
    return for_code(code)(what)


__all__ = ["KafkaClient", "ClusterMetadata", "BrokerMetadata", "PartitionMetadata", "TopicMetadata",
           "KafkaError", "KafkaConnectionError", "broker_error"]
