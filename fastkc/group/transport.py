"""The group's I/O: blocking requests to the group coordinator.

The group member runs on a thread of its own (heartbeats must go out while
the application is busy between polls), and fastkc's KafkaClient is not
thread-safe, so the group speaks through a KafkaClient of its own — its own
sockets and selector — and every use of it is serialised by the member's
lock. The consumer's fetch client is never touched from the group thread.

Everything here is I/O; the decisions (what an error code means, when to
rejoin) live in the member classes, which tests drive with canned responses
through a fake with the same three methods (`find_coordinator`, `call`,
`metadata`).
"""
import logging

from fastkc.client import BrokerMetadata, KafkaClient
from fastkc.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    for_code,
)

log = logging.getLogger(__name__)

# Highest versions the group speaks: OffsetCommit/OffsetFetch v10 name
# topics by id only, which the commit path does not need.
VERSION_CAPS = {"OffsetCommit": 9, "OffsetFetch": 9}

#: Errors after which the coordinator must be looked up again (Java's
#: markCoordinatorUnknown cases).
COORDINATOR_ERRORS = (CoordinatorNotAvailableError, NotCoordinatorError, KafkaConnectionError)


class CoordinatorUnknownError(KafkaError):
    """The coordinator is not known or was lost; look it up again (retriable)."""

    retriable = True


class GroupTransport:
    """Blocking requests over a KafkaClient of the group's own."""

    def __init__(self, config, client=None):
        self.config = config
        self.client = client if client is not None else KafkaClient(config)
        if hasattr(self.client, "enable_wakeup"):
            self.client.enable_wakeup()
        self.coordinator_id = None
        self._bootstrapped = client is not None and client.bootstrapped
        self._aborted = False
        # (api_name, response, sent_at, answered_at) after each answered
        # request: the consumer's coordinator metrics (fastkc.metrics)
        self.on_answer = None

    def _ensure_bootstrapped(self, timeout_ms):
        if not self._bootstrapped:
            self.client.bootstrap(timeout_ms=timeout_ms)
            self._bootstrapped = True

    # --- coordinator lookup -------------------------------------------------------------
    def find_coordinator(self, group_id, timeout_ms, key_type=0):
        """Look the coordinator of `group_id` up once; sets coordinator_id.
        Raises the broker's error (COORDINATOR_NOT_AVAILABLE ... are retriable)."""
        self._ensure_bootstrapped(timeout_ms)
        response = self.client.request("FindCoordinator", {
            "key": group_id, "key_type": key_type, "coordinator_keys": [group_id],
        }, timeout_ms)
        if response.get("coordinators"):
            entry = response["coordinators"][0]
        else:
            entry = response
        if entry["error_code"]:
            raise for_code(entry["error_code"])(entry.get("error_message") or "FindCoordinator")
        node_id = entry["node_id"]
        if not entry["host"] or not 0 < entry["port"] < 65536 or node_id < 0:
            # nothing could connect there: as if the coordinator were not known yet
            log.warning("FindCoordinator named %r:%s (node %s), not a usable address", entry["host"], entry["port"],
                        node_id)
            raise CoordinatorNotAvailableError("coordinator advertised at {0!r}:{1}".format(
                entry["host"], entry["port"]))
        cluster = self.client.cluster
        known = cluster.brokers.get(node_id)
        if known is None or (known.host, known.port) != (entry["host"], entry["port"]):
            # a broker newer than our metadata: remember its address
            cluster.brokers[node_id] = BrokerMetadata(node_id, entry["host"], entry["port"], None)
        self.coordinator_id = node_id
        return node_id

    def coordinator_lost(self):
        if self.coordinator_id is not None:
            log.info("group coordinator %s marked unknown", self.coordinator_id)
        self.coordinator_id = None

    def abort(self):
        """From another thread (close()): end the call in progress — a
        JoinGroup the coordinator may hold for the whole rebalance timeout —
        with KafkaConnectionError, or the next call if none is."""
        self._aborted = True
        self.client.wakeup()

    def interruptible(self, check):
        """The calls of this thread within the block end with check()'s
        error after each wait (KafkaClient.interruptible)."""
        return self.client.interruptible(check)

    def wake(self):
        """From another thread: end the current wait early, so an
        interruptible call sees its check."""
        self.client.wakeup()

    def _check_aborted(self, node_id):
        if self._aborted:
            self._aborted = False
            conn = self.client.connection(node_id)
            if conn is not None:  # an answer may still come: the connection is not to be trusted
                conn.close()
                self.client._sync(conn)
            raise KafkaConnectionError("the call to coordinator {0} was ended: the consumer is closing".format(
                node_id))

    # --- requests -------------------------------------------------------------------------
    def call(self, api_name, body, timeout_ms):
        """Send to the coordinator and wait. A connection failure or timeout
        marks the coordinator unknown and raises CoordinatorUnknownError;
        broker error codes are the caller's to read. A JoinGroup carries
        timeout_ms as its own request timeout (the coordinator holds it until
        the group rebalanced, up to the rebalance timeout; the Java client
        gives it rebalance timeout + 5 s too); every other request has
        request_timeout_ms."""
        node_id = self.coordinator_id
        if node_id is None:
            raise CoordinatorUnknownError("no coordinator known")
        client = self.client
        deadline = client._clock() + timeout_ms / 1000.0
        while not client.ready(node_id):
            conn = client.connection(node_id)
            if conn is not None and conn.last_error is not None and conn.state.name == "DISCONNECTED":
                if not getattr(conn.last_error, "retriable", True) and not is_coordinator_error(conn.last_error) \
                        and not conn.reauth_failed:  # a refused re-authentication: reconnect first
                    raise conn.last_error  # the client's parse-failure limit, TLS or SASL: no retry helps
                self.coordinator_lost()
                raise CoordinatorUnknownError("coordinator {0} unreachable: {1}".format(node_id, conn.last_error))
            remaining = deadline - client._clock()
            if remaining <= 0:
                self.coordinator_lost()
                raise CoordinatorUnknownError("coordinator {0} not ready within {1} ms".format(node_id, timeout_ms))
            client.poll(min(remaining, 0.05))
        version = None
        cap = VERSION_CAPS.get(api_name)
        if cap is not None:
            version = min(cap, client.connection(node_id).version_for(api_name))
        box = []
        request_timeout = timeout_ms if api_name == "JoinGroup" else None
        sent_at = client._clock()
        client.send(node_id, api_name, body, lambda r, e: box.append((r, e)), version=version,
                    timeout_ms=request_timeout)
        while not box:
            self._check_aborted(node_id)
            remaining = deadline - client._clock()
            if remaining <= 0:
                # the answer may still come; the connection cannot be trusted
                # to deliver it in order with the next request's
                conn = client.connection(node_id)
                if conn is not None:
                    conn.close()
                    client._sync(conn)
                self.coordinator_lost()
                raise CoordinatorUnknownError("{0} to coordinator {1}: no answer within {2} ms".format(
                    api_name, node_id, timeout_ms))
            client.poll(remaining)
        response, error = box[0]
        if error is not None:
            if isinstance(error, (KafkaConnectionError, KafkaTimeoutError)):
                self.coordinator_lost()
                raise CoordinatorUnknownError("{0} to coordinator {1} failed: {2}".format(api_name, node_id, error))
            raise error
        if self.on_answer is not None:
            self.on_answer(api_name, response, sent_at, client._clock())
        return response

    def metadata(self, topics, timeout_ms):
        """The group client's metadata for `topics`, refreshed now (the
        leader's view for assignment, topic ids for KIP-848)."""
        self._ensure_bootstrapped(timeout_ms)
        self.client.set_topics(topics)
        self.client.wait_for_metadata(timeout_ms)
        return self.client.cluster

    def close(self):
        self.client.close()


def is_coordinator_error(exc):
    return isinstance(exc, COORDINATOR_ERRORS + (CoordinatorUnknownError, CoordinatorLoadInProgressError))
