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

The cluster policy (refresh rules, least-loaded node, parse failures, idle
connections, fatal errors, leaders reconnected when they come back) is
fastkc.cluster.ClusterCore's, shared with the asyncio client: this module
does the I/O and asks it.

Failures, in one place (so every API behaves alike, whoever called it):
- Each connection phase has request_timeout_ms (conn.py); `bootstrap()`
  drives one bootstrap server at a time through connect, TLS, ApiVersions,
  SASL and the first Metadata, and when any of these fails or times out moves
  on to the next server, each server backing off (jittered, doubling) as its
  own connection does. Errors no retry can fix (SASL authentication, TLS
  verification, authorization) are raised at once.
- A response that cannot be parsed (the codec's or the Fetch parser's
  ProtocolParseError) closes its connection with backoff, and
  `parse_failed()` (the cluster core's rule) counts it per (broker address, API): below
  MAX_PARSE_FAILURES the caller gets a retriable KafkaConnectionError and its
  usual retry path (re-fetch, coordinator lookup, request retry, next
  bootstrap server) runs after the backoff; at the limit it gets the
  ProtocolParseError itself, which the public call raises. The count is
  cleared by the next good answer of that API from that broker. So a broker
  that sends garbage costs a bounded number of reconnects, with growing
  backoff, and the application sees a typed error: never a silent loop.
"""
import contextlib
import logging
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastkc.cluster import (
    MAX_PARSE_FAILURES,
    Body,
    BrokerMetadata,
    ClusterCore,
    ClusterMetadata,
    Link,
    PartitionMetadata,
    TopicMetadata,
    is_fatal,
)
from fastkc.cluster.core import SPARE_CONNECTION_IDLE_S, ClusterCoreDriver
from fastkc.config import Config, build_ssl_context
from fastkc.conn import BrokerConnection
from fastkc.errors import (
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    NodeNotReadyError,
    ProtocolParseError,
    for_code,
)
from fastkc.net.core import EVENTS as CONN_EVENTS
from fastkc.net.core import Callback, ConnectionState
from fastkc.protocol import codec

log = logging.getLogger(__name__)

_WAKEUP = object()  # the selector key data of the wakeup socket


class KafkaClient(ClusterCoreDriver):
    def __init__(self, config: Config, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._selector = selectors.DefaultSelector()
        # conn -> (sock, fd, events)
        self._registered: dict[BrokerConnection, tuple[socket.socket, int, int]] = {}
        self._conns: dict[int, BrokerConnection] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        #: the I/O-free cluster policy (metadata refreshes, least-loaded node,
        #: parse failures, idle connections, fatal errors): this client does its I/O
        self.policy = ClusterCore.from_config(config)
        #: the metadata cache (the policy's)
        self.cluster: ClusterMetadata = self.policy.cluster
        self._ssl_context: ssl.SSLContext | None = None
        if config["security_protocol"] in ("SSL", "SASL_SSL"):
            self._ssl_context = build_ssl_context(config)
        # (read, write) sockets, when enable_wakeup() was called
        self._wakeup_pair: tuple[socket.socket, socket.socket] | None = None
        # thread ident -> check(): raises to end that thread's blocking call
        # (the consumer's wakeup() in a commit() on the group's client)
        self._interrupt_checks: dict[int, Callable[[], None]] = {}
        self.bootstrapped = False
        #: api_key -> (min, max) of the broker the last bootstrap reached (its ApiVersions answer)
        self.bootstrap_api_versions: dict[int, tuple[int, int]] | None = None
        #: connection events over every connection this client made (conn.EVENTS):
        #: KIP-368 re-authentications, failed ones, authenticated connections lost
        self.counters = dict.fromkeys(CONN_EVENTS, 0)
        self._closed = False
        # lost-connection listeners (the fetcher resets fetch sessions)
        self.on_disconnect: list[Callable[[int], None]] = []
        # called after each metadata update (the fetcher checks leader epochs)
        self.metadata_listeners: list[Callable[[], None]] = []

    @property
    def clock(self) -> Callable[[], float]:
        """The monotonic clock (seconds) this client measures its deadlines
        on: a caller whose own bound shares a wait with this client's calls
        (the group transport, the fetcher) measures it on the same clock."""
        return self._clock

    # --- bootstrap ---------------------------------------------------------------
    def bootstrap(self, timeout_ms: float | None = None) -> None:
        """Connect to a bootstrap server and load the broker list from it.

        One attempt at a time: connect, TLS, ApiVersions, SASL and a Metadata
        request, each phase within request_timeout_ms. A failed attempt moves
        on to the next server in turn; each server backs off after its own
        failures (reconnect_backoff_ms doubling to reconnect_backoff_max_ms,
        ±20 % jitter, as the Java client's per-node backoff), so a silent,
        dripping or garbage-sending server costs one request timeout per
        attempt, never the whole bootstrap. SASL / TLS authentication and
        authorization failures are raised at once, a response that cannot be
        parsed once MAX_PARSE_FAILURES were seen from that server; otherwise
        NoBrokersAvailable after bootstrap_timeout_ms."""
        timeout_ms = self.config["bootstrap_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + timeout_ms / 1000.0
        servers = self.config["bootstrap_servers"]
        conns: dict[int, BrokerConnection] = {}  # server index -> its BrokerConnection (keeps its backoff)
        turn = 0
        conn: BrokerConnection | None = None
        # the Metadata request of the attempt: asked, and its (response, error) once answered
        asked = False
        answer: list[tuple[Any, BaseException | None]] = []
        last_error: BaseException | None = None
        try:
            while True:
                now = self._clock()
                if conn is None:
                    for k in range(len(servers)):
                        i = (turn + k) % len(servers)
                        candidate = conns.get(i)
                        if candidate is None:
                            host, port = servers[i]
                            candidate = conns[i] = self._new_connection(host, port)
                        if candidate.backoff_remaining(now) == 0:
                            conn, turn = candidate, i + 1
                            asked, answer = False, []
                            conn.connect()
                            self._sync(conn)
                            break
                elif conn.ready and not asked:
                    asked = True
                    version = conn.version_for("Metadata")
                    conn.send("Metadata", {"topics": [], "allow_auto_topic_creation": False},
                              _Decoding(self, conn, "Metadata", version, _collect_into(answer), False),
                              version=version)
                    self._sync(conn)
                if conn is not None and _answered_ok(answer):
                    break  # the broker list is in
                if conn is not None and (conn.state is ConnectionState.DISCONNECTED or answer):
                    # this attempt failed (connect, a handshake phase, or the Metadata request)
                    last_error = answer[0][1] if answer else conn.last_error
                    if conn.state is not ConnectionState.DISCONNECTED and last_error is not None:
                        # (still up: the Metadata request failed, with its error)
                        conn.fail(last_error)
                    self._unregister(conn)
                    if is_fatal(last_error):
                        assert last_error is not None  # is_fatal(None) is False; said for the type checker
                        raise last_error
                    if conn.has_untried_address():
                        conn.core.retry_at(now)  # the next address of the same server, at once
                        turn -= 1
                    conn = None
                    continue
                remaining = deadline - now
                if remaining <= 0:
                    raise NoBrokersAvailable("Unable to bootstrap from {0} within {1} ms{2}".format(
                        ",".join("{0}:{1}".format(h, p) for h, p in servers), timeout_ms,
                        " (last error: {0})".format(last_error) if last_error else ""))
                if conn is None:
                    wait = min([remaining] + [c.backoff_remaining(now) for c in conns.values()])
                else:
                    wait = remaining
                    due = conn.next_deadline()
                    if due is not None:
                        wait = min(wait, max(0.0, due - now))
                self._poll_sockets(wait)
                if conn is not None:
                    conn.check_timeouts()
                    self._sync(conn)
                self._check_interrupt()
        finally:
            for other in conns.values():
                if other is not conn or not _answered_ok(answer):
                    self._unregister(other, lost=False)
                    other.close()
        self.policy.bootstrap_answered(answer[0][0], self._clock())
        self.bootstrapped = True
        self.bootstrap_api_versions = dict(conn.api_versions)
        if self._bootstrap_conn is not None and self._bootstrap_conn is not conn:
            # a refreshed bootstrap: the previous bootstrap connection is spare
            self._unregister(self._bootstrap_conn, lost=False)
            self._bootstrap_conn.close()
        self._bootstrap_conn = conn
        # Reuse the bootstrap connection for the broker it reached.
        for broker in self.cluster.brokers.values():
            if (broker.host, broker.port) == (conn.host, conn.port) and broker.node_id not in self._conns:
                conn.node_id = broker.node_id
                self._conns[broker.node_id] = conn
                self._bootstrap_conn = None
                break

    # --- parse failures (see the module docstring) ------------------------------------------------
    def parse_failed(self, conn: BrokerConnection, api_name: str, exc: ProtocolParseError) -> BaseException:
        """A response of `api_name` from `conn` could not be parsed: the
        policy fails the connection with backoff and says what the caller
        must see — a retriable KafkaConnectionError below MAX_PARSE_FAILURES
        in a row from this broker for this API, the ProtocolParseError itself
        from then on."""
        error = self.policy.parse_failed(conn.core, api_name, exc, self._clock())
        self._sync(conn)
        return error

    def parse_ok(self, conn: BrokerConnection, api_name: str) -> None:
        self.policy.parse_ok(conn.core, api_name)

    # --- connections ---------------------------------------------------------------
    def _conn(self, node_id: int) -> BrokerConnection | None:
        conn = self._conns.get(node_id)
        if conn is None:
            broker = self.cluster.brokers.get(node_id)
            if broker is None:
                return None
            conn = self._new_connection(broker.host, broker.port, node_id)
            self._conns[node_id] = conn
        elif conn.state is ConnectionState.DISCONNECTED:
            broker = self.cluster.brokers.get(node_id)
            if broker is not None and (broker.host, broker.port) != (conn.host, conn.port):
                # the broker moved: a new connection object for its new address
                self._unregister(conn)
                conn = self._new_connection(broker.host, broker.port, node_id)
                self._conns[node_id] = conn
        return conn

    def _new_connection(self, host: str, port: int, node_id: int | None = None) -> BrokerConnection:
        return BrokerConnection(host, port, self.config, node_id=node_id, ssl_context=self._ssl_context,
                                clock=self._clock, on_parse_error=self.parse_failed, on_event=self._count)

    def _count(self, conn: BrokerConnection, kind: str) -> None:
        self.counters[kind] += 1

    def ready(self, node_id: int) -> bool:
        """True when a request can be sent to node_id now; otherwise starts
        connecting (respecting backoff) and returns False."""
        conn = self._conn(node_id)
        if conn is None:
            return False
        if conn.ready:
            if conn.maybe_reauthenticate():  # due: the exchange goes first, the caller waits for it
                self._sync(conn)
                return False
            return bool(conn.can_send())
        if conn.state is ConnectionState.DISCONNECTED:
            self.policy.connection_wanted(node_id, conn.core, self._clock())
            conn.connect()
            self._sync(conn)
        return False

    def is_connected(self, node_id: int | None) -> bool:
        conn = self._conns.get(node_id) if node_id is not None else None
        return conn is not None and bool(conn.established)

    def connection(self, node_id: int) -> BrokerConnection | None:
        return self._conns.get(node_id)

    def connected_to_any_broker(self) -> bool:
        """Some broker connection (one the metadata named) is established:
        the consumer's bootstrap_connected(). The bootstrap connection counts
        once it is matched to its broker."""
        return any(conn.established for conn in list(self._conns.values()))

    def drop_connection(self, node_id: int) -> None:
        """Close the connection to node_id now (no backoff; its requests in
        flight fail) and stop watching its socket: for a caller that stopped
        waiting for an answer (a timeout, an abort), which may still come but
        cannot be trusted to arrive in order with the next request's. The
        next ready(node_id) reconnects. Nothing happens without a connection."""
        conn = self._conns.get(node_id)
        if conn is not None:
            conn.close()
            self._sync(conn)

    def least_loaded_node(self) -> int | None:
        """A ready broker with the fewest requests in flight, else any known one."""
        return self.policy.least_loaded_node(self._links(), self._clock())

    def _links(self) -> dict[int, Link]:
        """node id -> its connection's core: what the cluster policy reads."""
        return {node_id: conn.core for node_id, conn in self._conns.items()}

    # --- requests ------------------------------------------------------------------------
    def send(self, node_id: int, api_name: str, body: Body, callback: Callback, *, raw: bool = False,
             version: int | None = None, timeout_ms: float | None = None) -> int:
        """Send a request to node_id (which must be ready()). The callback gets
        (decoded body, None) — or ((payload, version), None) when raw — or
        (None, error). timeout_ms: this request's own timeout, when not
        request_timeout_ms."""
        conn = self._conn(node_id)
        if conn is None or not conn.ready:
            raise NodeNotReadyError("broker {0} is not ready".format(node_id))
        if version is None:
            version = conn.version_for(api_name)
        wrapped = _Decoding(self, conn, api_name, version, callback, raw)
        conn.send(api_name, body, wrapped, version=version, timeout_ms=timeout_ms)
        self._sync(conn)
        return version

    def request(self, api_name: str, body: Body, timeout_ms: float, node_id: int | None = None) -> Any:
        """Send to node_id (least loaded when None) and wait for the answer,
        reconnecting and retrying on connection errors until timeout_ms."""
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            target = self.least_loaded_node() if node_id is None else node_id
            if target is not None and self.ready(target):
                box: list[tuple[Any, BaseException | None]] = []
                self.send(target, api_name, body, _collect_into(box))
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
            self.raise_fatal()

    # --- metadata ------------------------------------------------------------------------
    def add_topics(self, topics: Iterable[str]) -> None:
        self.policy.add_topics(topics)

    def set_topics(self, topics: Iterable[str]) -> None:
        self.policy.set_topics(topics)

    def request_metadata_update(self, all_topics: bool = False) -> None:
        self.policy.request_update(all_topics)

    def metadata_due(self) -> bool:
        """A refresh was asked for, or the cache is older than metadata_max_age_ms."""
        return self.policy.refresh_wanted(self._clock())

    def _maybe_refresh_metadata(self) -> None:
        if not self.bootstrapped or self.policy.refresh_due_in(self._clock()) > 0:
            return
        node_id = self.least_loaded_node()
        if node_id is None or not self.ready(node_id):
            return
        refresh = self.policy.begin_refresh()

        def answered(response: Body, error: BaseException | None) -> None:
            if error is not None:
                self.policy.refresh_failed(error, self._clock())
                return
            self.policy.refresh_answered(response, self._clock(), self._links())
            for listener in self.metadata_listeners:
                listener()

        self.send(node_id, "Metadata", refresh.body, answered)

    def wait_for_metadata(self, timeout_ms: float, all_topics: bool = False) -> None:
        """Refresh metadata now and wait for it (blocking API calls)."""
        before = self.cluster.last_refresh
        self.request_metadata_update(all_topics=all_topics)
        deadline = self._clock() + timeout_ms / 1000.0
        while self.cluster.last_refresh == before or self.policy.refresh_in_flight or \
                (all_topics and not self.cluster.all_topics_known):
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("no metadata within {0} ms".format(timeout_ms))
            self.poll(min(remaining, 0.1))
            self.raise_fatal()

    # --- the poll loop --------------------------------------------------------------------
    def poll(self, timeout: float) -> None:
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
        if self.bootstrapped:
            # the refresh's backoff or the cache's age; a refresh due now that
            # could not start waits for a connection (its deadlines wake us)
            due = self.policy.refresh_due_in(now)
            if due > 0:
                wait = min(wait, due)
        self._poll_sockets(wait)
        now = self._clock()
        for conn in self._all_conns():
            conn.check_timeouts(now)
            self._sync(conn)
        self._close_idle(now)
        self._check_interrupt()

    def _check_interrupt(self) -> None:
        if self._interrupt_checks:
            check = self._interrupt_checks.get(threading.get_ident())
            if check is not None:
                check()

    def _poll_sockets(self, wait: float) -> None:
        if not self._registered:
            if wait > 0:
                time.sleep(min(wait, 0.05) if wait != float("inf") else 0.05)
            return
        events = self._selector.select(wait)
        for key, mask in events:
            conn = key.data
            if conn is _WAKEUP:
                if self._wakeup_pair is not None:
                    try:
                        self._wakeup_pair[0].recv(64)
                    except OSError:
                        pass
                continue
            if mask & selectors.EVENT_WRITE:
                conn.on_writable()
            if mask & selectors.EVENT_READ and conn.sock is not None:
                answered = conn.on_readable()
                for request, payload in answered:
                    request.callback(payload, None)
            self._sync(conn)

    def _all_conns(self) -> list[BrokerConnection]:
        conns = list(self._conns.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        return conns

    def _close_idle(self, now: float) -> None:
        for node_id in self.policy.idle_nodes(self._links(), now):
            conn = self._conns[node_id]
            conn.close()
            self._sync(conn)
        if self._bootstrap_conn is not None and self._bootstrap_conn.idle_for(now) > SPARE_CONNECTION_IDLE_S:
            # no broker matched the bootstrap address: it has done its job
            self._unregister(self._bootstrap_conn)
            self._bootstrap_conn.close()
            self._bootstrap_conn = None

    def _sync(self, conn: BrokerConnection) -> None:
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

    def _unregister(self, conn: BrokerConnection, lost: bool = True) -> None:
        current = self._registered.pop(conn, None)
        if current is not None:
            try:
                self._selector.unregister(current[1])
            except (KeyError, ValueError, OSError):
                pass
        if lost and current is not None and conn.last_error is not None and conn.node_id is not None \
                and not self._closed:
            self._connection_lost(conn, conn.node_id)

    def _connection_lost(self, conn: BrokerConnection, node_id: int) -> None:
        self.policy.connection_failed(conn.last_error, reauth_failed=conn.reauth_failed)
        self.request_metadata_update()
        for listener in self.on_disconnect:
            listener(node_id)


    def enable_wakeup(self) -> None:
        """Let another thread interrupt a poll (`wakeup()`): a socket pair
        whose read end the selector watches. Only the group's client needs
        it (close() interrupts a JoinGroup the coordinator holds open)."""
        if self._wakeup_pair is None:
            pair = socket.socketpair()
            for sock in pair:
                sock.setblocking(False)
            self._selector.register(pair[0].fileno(), selectors.EVENT_READ, _WAKEUP)
            self._wakeup_pair = pair

    @contextlib.contextmanager
    def interruptible(self, check: Callable[[], None]) -> Iterator[None]:
        """Within the block, every poll() on the calling thread ends with
        check(), which raises to end the blocking call it serves (wakeup():
        WakeupException). Per thread, because the group's client is shared,
        under a lock, by the application's commits and the group thread,
        whose heartbeats a wakeup() must not interrupt."""
        ident = threading.get_ident()
        self._interrupt_checks[ident] = check
        try:
            yield
        finally:
            self._interrupt_checks.pop(ident, None)

    def wakeup(self) -> None:
        """From any thread: make the poll in progress (or the next) return."""
        pair = self._wakeup_pair
        if pair is not None:
            try:
                pair[1].send(b"\0")
            except OSError:  # full (a wakeup is pending anyway) or closed
                pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for conn in self._all_conns():
            self._unregister(conn)
            conn.close()
        self._conns.clear()
        self._bootstrap_conn = None
        self._selector.close()
        if self._wakeup_pair is not None:
            for sock in self._wakeup_pair:
                sock.close()


class _Decoding:
    """Wraps a caller's callback: decodes the payload (or hands it over raw)
    and turns a parse failure into an error for that request only."""

    __slots__ = ("client", "conn", "api_name", "version", "callback", "raw")

    def __init__(self, client: KafkaClient, conn: BrokerConnection, api_name: str, version: int, callback: Callback,
                 raw: bool) -> None:
        self.client = client
        self.conn = conn
        self.api_name = api_name
        self.version = version
        self.callback = callback
        self.raw = raw

    def __call__(self, payload: bytes | None, error: BaseException | None) -> None:
        if error is not None:
            self.callback(None, error)
            return
        assert payload is not None  # the connection calls back with a payload or an error
        if self.raw:
            self.callback((payload, self.version), None)
            return
        try:
            _, body = codec.decode_response(self.api_name, self.version, payload)
        except ProtocolParseError as exc:
            # a broker that sends a malformed body cannot be trusted with the
            # next answer on this connection either: the client's policy
            self.callback(None, self.client.parse_failed(self.conn, self.api_name, exc))
            return
        self.client.parse_ok(self.conn, self.api_name)
        self.callback(body, None)


def _answered_ok(answer: list[tuple[Any, BaseException | None]]) -> bool:
    """The bootstrap's Metadata box holds a good answer."""
    return bool(answer) and answer[0][1] is None


def _collect_into(box: list[Any]) -> Callback:
    """A callback that appends (response, error) to `box`. A function, not a
    lambda in the loop that rebinds `box`: each request's callback keeps the
    list it was given."""
    return lambda response, error: box.append((response, error))


def broker_error(code: int, what: str) -> BaseException:
    """The typed error for a broker error code, with context."""
    return for_code(code)(what)


# The metadata types live in fastkc.cluster (a pure module); named here too,
# where fastkc's own modules and users imported them from.
__all__ = ["KafkaClient", "ClusterMetadata", "BrokerMetadata", "PartitionMetadata", "TopicMetadata",
           "KafkaError", "KafkaConnectionError", "MAX_PARSE_FAILURES", "broker_error"]
