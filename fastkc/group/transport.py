"""The group's I/O: blocking requests to the group coordinator.

The group member runs on a thread of its own (heartbeats must go out while
the application is busy between polls), and fastkc's KafkaClient is not
thread-safe, so the group speaks through a KafkaClient of its own — its own
sockets and selector — and every use of it is serialised by the member's
lock. The consumer's fetch client is never touched from the group thread.

Everything here is I/O; the decisions (what an error code means, when to
rejoin, where the coordinator is) live in the state machines
(`*_machine.py`), which the driver (member.py) feeds with what this
transport's `call` / `request_any` / `metadata` return; tests drive them
through a fake with the same methods.
"""
import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from fastkc.client import KafkaClient
from fastkc.cluster.metadata import BrokerMetadata, ClusterMetadata
from fastkc.config import Config
from fastkc.errors import KafkaConnectionError, KafkaTimeoutError
from fastkc.group.coordinator_machine import Coordinator, CoordinatorUnknownError, is_coordinator_error

log = logging.getLogger(__name__)

#: on_answer(api_name, response, sent_at, answered_at): the coordinator metrics' hook
AnswerHook = Callable[[str, Any, float, float], None]

# Highest versions the group speaks: OffsetCommit/OffsetFetch v10 name
# topics by id only, which the commit path does not need.
VERSION_CAPS = {"OffsetCommit": 9, "OffsetFetch": 9}


class GroupTransport:
    """Blocking requests over a KafkaClient of the group's own."""

    def __init__(self, config: Config, client: KafkaClient | None = None) -> None:
        self.config = config
        self.client = client if client is not None else KafkaClient(config)
        if hasattr(self.client, "enable_wakeup"):
            self.client.enable_wakeup()
        self.coordinator_id: int | None = None
        self._bootstrapped = client is not None and client.bootstrapped
        self._aborted = False
        # (api_name, response, sent_at, answered_at) after each answered
        # request: the consumer's coordinator metrics (fastkc.metrics)
        self.on_answer: AnswerHook | None = None

    def _ensure_bootstrapped(self, timeout_ms: float) -> float:
        """Bootstrap once; returns what is left of timeout_ms for the call
        that needed it (the two share one bound, never twice timeout_ms)."""
        if self._bootstrapped:
            return timeout_ms
        clock = self.client.clock
        started = clock()
        self.client.bootstrap(timeout_ms=timeout_ms)
        self._bootstrapped = True
        return max(1.0, timeout_ms - (clock() - started) * 1000.0)

    # --- the coordinator ------------------------------------------------------------------
    def request_any(self, api_name: str, body: dict[str, Any], timeout_ms: float) -> Any:
        """A request to any broker (FindCoordinator): the decoded answer."""
        timeout_ms = self._ensure_bootstrapped(timeout_ms)
        return self.client.request(api_name, body, timeout_ms)

    def use_coordinator(self, coordinator: Coordinator) -> None:
        """Address calls to `coordinator` (coordinator_machine.Coordinator),
        remembering its address when our metadata does not know it yet."""
        cluster = self.client.cluster
        known = cluster.brokers.get(coordinator.node_id)
        if known is None or (known.host, known.port) != (coordinator.host, coordinator.port):
            cluster.brokers[coordinator.node_id] = BrokerMetadata(coordinator.node_id, coordinator.host,
                                                                  coordinator.port, None)
        self.coordinator_id = coordinator.node_id

    def coordinator_lost(self) -> None:
        if self.coordinator_id is not None:
            log.info("group coordinator %s marked unknown", self.coordinator_id)
        self.coordinator_id = None

    def abort(self) -> None:
        """From another thread (close()): end the call in progress — a
        JoinGroup the coordinator may hold for the whole rebalance timeout —
        with KafkaConnectionError, or the next call if none is."""
        self._aborted = True
        self.client.wakeup()

    def interruptible(self, check: Callable[[], None]) -> AbstractContextManager[None]:
        """The calls of this thread within the block end with check()'s
        error after each wait (KafkaClient.interruptible)."""
        return self.client.interruptible(check)

    def wake(self) -> None:
        """From another thread: end the current wait early, so an
        interruptible call sees its check."""
        self.client.wakeup()

    def _check_aborted(self, node_id: int) -> None:
        if self._aborted:
            self._aborted = False
            self.client.drop_connection(node_id)  # an answer may still come: the connection is not to be trusted
            raise KafkaConnectionError("the call to coordinator {0} was ended: the consumer is closing".format(
                node_id))

    # --- requests -------------------------------------------------------------------------
    def call(self, api_name: str, body: dict[str, Any], timeout_ms: float) -> Any:
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
        clock = client.clock
        deadline = clock() + timeout_ms / 1000.0
        while not client.ready(node_id):
            conn = client.connection(node_id)
            if conn is not None and conn.last_error is not None and conn.state.name == "DISCONNECTED":
                if not getattr(conn.last_error, "retriable", True) and not is_coordinator_error(conn.last_error) \
                        and not conn.reauth_failed:  # a refused re-authentication: reconnect first
                    raise conn.last_error  # the client's parse-failure limit, TLS or SASL: no retry helps
                self.coordinator_lost()
                raise CoordinatorUnknownError("coordinator {0} unreachable: {1}".format(node_id, conn.last_error))
            remaining = deadline - clock()
            if remaining <= 0:
                self.coordinator_lost()
                raise CoordinatorUnknownError("coordinator {0} not ready within {1} ms".format(node_id, timeout_ms))
            client.poll(min(remaining, 0.05))
        version = None
        cap = VERSION_CAPS.get(api_name)
        if cap is not None:
            ready = client.connection(node_id)
            assert ready is not None  # client.ready(node_id) just said True: the connection exists
            version = min(cap, ready.version_for(api_name))
        box: list[tuple[Any, BaseException | None]] = []
        request_timeout = timeout_ms if api_name == "JoinGroup" else None
        sent_at = clock()
        client.send(node_id, api_name, body, lambda r, e: box.append((r, e)), version=version,
                    timeout_ms=request_timeout)
        while not box:
            self._check_aborted(node_id)
            remaining = deadline - clock()
            if remaining <= 0:
                # the answer may still come; the connection cannot be trusted
                # to deliver it in order with the next request's
                client.drop_connection(node_id)
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
            self.on_answer(api_name, response, sent_at, clock())
        return response

    def metadata(self, topics: Iterable[str] | None, timeout_ms: float) -> ClusterMetadata:
        """The group client's metadata for `topics` (None: every topic),
        refreshed now (the leader's view for assignment, topic ids for
        KIP-848)."""
        timeout_ms = self._ensure_bootstrapped(timeout_ms)
        if topics is None:
            self.client.wait_for_metadata(timeout_ms, all_topics=True)
        else:
            self.client.set_topics(topics)
            self.client.wait_for_metadata(timeout_ms)
        return self.client.cluster

    def close(self) -> None:
        self.client.close()
