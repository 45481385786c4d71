"""The asyncio cluster client: bootstrap, one AioConnection per broker, the
metadata cache and its refresh rules; the asyncio twin of fastkc.client.KafkaClient.

    client = AioClient(config)           # fastkc's core config (kafka-python's keys)
    await client.bootstrap()
    client.ready(node_id)                # True, or starts connecting and says False
    answer = await client.request("ListOffsets", body, node_id=1)
    await client.close()

What it shares with the sync client rather than copies: the cluster policy
(`fastkc.cluster.ClusterCore`: the metadata cache and its refresh rules,
leaders reconnected when they come back, least-loaded node, parse failures,
idle connections, fatal errors) and the connection core (each AioConnection
drives a `fastkc.net.core.ConnectionCore`, which keeps the per-connection
backoff: reconnect_backoff_ms doubling to reconnect_backoff_max_ms,
jittered). This module does the asyncio I/O and asks them.

One task of its own: `_metadata_loop`, which refreshes when the policy says
a refresh is due (every metadata_max_age_ms, at once on
`request_metadata_update()` — the fetch driver calls it when the fetch
machine sets `metadata_wanted`, and every lost connection does —,
retry_backoff_ms apart after a failure), and closes connections idle past
connections_max_idle_ms. Connecting to a broker is a
task per attempt (`ready()` starts it); listeners in `on_change` are called
when a connection becomes ready or metadata arrives, so the fetch driver
wakes at once instead of on its next tick. A connection that fails calls the
`on_disconnect` listeners with its node id (the fetch machine's
on_node_lost).
"""
import asyncio
import logging
import ssl
import time
from collections.abc import Callable, Iterable
from typing import Any

from fastkc.cluster import FATAL_CONNECT_ERRORS, Body, ClusterCore, ClusterMetadata, Link, is_fatal
from fastkc.cluster.core import ClusterCoreDriver
from fastkc.config import Config, build_ssl_context
from fastkc.errors import (
    IllegalStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    NodeNotReadyError,
    ProtocolParseError,
)
from fastkc.net.aio import AioConnection
from fastkc.net.core import Callback, ConnectionState
from fastkc.protocol import codec

log = logging.getLogger(__name__)

#: what a failed bootstrap attempt raises (the next server is tried, unless it is fatal)
_ATTEMPT_FAILED: tuple[type[BaseException], ...] = (
    KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, ProtocolParseError) + FATAL_CONNECT_ERRORS


class AioClient(ClusterCoreDriver):
    def __init__(self, config: Config) -> None:
        self.config = config
        #: the I/O-free cluster policy (shared with fastkc.client.KafkaClient)
        self.policy = ClusterCore.from_config(config)
        #: the metadata cache (the policy's)
        self.cluster: ClusterMetadata = self.policy.cluster
        self._ssl_context: ssl.SSLContext | None = None
        if config["security_protocol"] in ("SSL", "SASL_SSL"):
            self._ssl_context = config.get("ssl_context") or build_ssl_context(config)
        self._conns: dict[int, AioConnection] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}  # node_id -> the task of its connection attempt
        self._metadata_task: asyncio.Task[None] | None = None
        self._metadata_wake: asyncio.Event | None = None  # made on the running loop
        self._metadata_done: asyncio.Event | None = None  # set after each refresh attempt
        self.bootstrapped = False
        self.bootstrap_api_versions: dict[int, tuple[int, int]] | None = None
        self._closed = False
        self.on_disconnect: list[Callable[[int], None]] = []  # listener(node_id): a connection failed
        self.metadata_listeners: list[Callable[[], None]] = []  # listener(): metadata arrived
        # listener(): something a waiting driver may act on (ready, metadata)
        self.on_change: list[Callable[[], None]] = []

    def _clock(self) -> float:
        return time.monotonic()

    # --- bootstrap -------------------------------------------------------------------------
    async def bootstrap(self, timeout_ms: float | None = None) -> None:
        """Connect to one bootstrap server after the other (each with its own
        backoff) until one answers Metadata; as KafkaClient.bootstrap:
        authentication / TLS / authorization errors and a parse failure are
        raised at once, else NoBrokersAvailable after bootstrap_timeout_ms."""
        timeout_ms = self.config["bootstrap_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + timeout_ms / 1000.0
        servers = self.config["bootstrap_servers"]
        conns = [self._new_connection(host, port) for host, port in servers]
        last_error: BaseException | None = None
        turn = 0
        try:
            while True:
                now = self._clock()
                waits = [c.core.backoff_remaining(now) for c in conns]
                ready_at = [i for i, w in enumerate(waits) if w == 0]
                if ready_at:
                    i = min(ready_at, key=lambda k: (k - turn) % len(conns))
                    turn = i + 1
                    conn = conns[i]
                    try:
                        await asyncio.wait_for(self._bootstrap_from(conn), max(0.001, deadline - now))
                        break
                    except TimeoutError:
                        last_error = KafkaTimeoutError("bootstrap from {0}:{1} timed out".format(conn.host, conn.port))
                        await conn.close()
                    except _ATTEMPT_FAILED as exc:
                        if is_fatal(exc):
                            raise
                        # an unparseable handshake answer has no caller: the connection
                        # failed with the policy's verdict (as KafkaClient.bootstrap reads it)
                        verdict = conn.core.last_error
                        if verdict is not None and is_fatal(verdict):
                            raise verdict from None
                        last_error = exc
                        if conn.core.state is not ConnectionState.DISCONNECTED:
                            await conn.close()
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise NoBrokersAvailable("Unable to bootstrap from {0} within {1} ms{2}".format(
                        ",".join("{0}:{1}".format(h, p) for h, p in servers), timeout_ms,
                        " (last error: {0})".format(last_error) if last_error else ""))
                now = self._clock()
                await asyncio.sleep(min([remaining] + [c.core.backoff_remaining(now) for c in conns]))
        except BaseException:
            for other in conns:
                await other.close()
            raise
        for other in conns:
            if other is not conn:
                await other.close()
        self.bootstrapped = True
        self.bootstrap_api_versions = dict(conn.api_versions)
        # the bootstrap connection serves the broker it reached, else it is spare
        for broker in self.cluster.brokers.values():
            if (broker.host, broker.port) == (conn.host, conn.port) and broker.node_id not in self._conns:
                self._adopt(broker.node_id, conn)
                break
        else:
            await conn.close()
        self._start_metadata_loop()

    async def _bootstrap_from(self, conn: AioConnection) -> None:
        await conn.connect()
        response = await self._request_on(conn, "Metadata", {"topics": [], "allow_auto_topic_creation": False})
        self.policy.bootstrap_answered(response, self._clock())

    # --- connections ---------------------------------------------------------------------------
    def _new_connection(self, host: str, port: int) -> AioConnection:
        conn = AioConnection(host, port, self.config, ssl_context=self._ssl_context)
        core = conn.core

        def handshake_unparseable(api_name: str, exc: ProtocolParseError) -> BaseException:
            # an ApiVersions / SASL answer: the same policy as any answer (as KafkaClient's connections)
            return self.policy.parse_failed(core, api_name, exc, self._clock())

        core.on_parse_error = handshake_unparseable
        return conn

    def _adopt(self, node_id: int, conn: AioConnection) -> None:
        self._conns[node_id] = conn
        core_closed = conn.core.on_close
        assert core_closed is not None  # AioConnection hooks itself on at construction

        def closed(error: BaseException | None, conn: AioConnection = conn) -> None:
            core_closed(error)
            if error is not None and not self._closed and self._conns.get(node_id) is conn:
                self._connection_lost(node_id, conn, error)

        conn.core.on_close = closed

    def _connection_lost(self, node_id: int, conn: AioConnection, error: BaseException) -> None:
        self.policy.connection_failed(error, reauth_failed=conn.core.reauth_failed)
        self.request_metadata_update()
        for listener in list(self.on_disconnect):
            listener(node_id)
        self._changed()

    def _conn(self, node_id: int) -> AioConnection | None:
        conn = self._conns.get(node_id)
        broker = self.cluster.brokers.get(node_id)
        if conn is None or (conn.core.state is ConnectionState.DISCONNECTED and broker is not None
                            and (broker.host, broker.port) != (conn.host, conn.port)):
            if broker is None:
                return None
            # a new broker, or one that moved: a connection for its address
            conn = self._new_connection(broker.host, broker.port)
            self._adopt(node_id, conn)
        return conn

    def connection(self, node_id: int) -> AioConnection | None:
        return self._conns.get(node_id)

    def ready(self, node_id: int) -> bool:
        """True when a request can go to node_id now; otherwise starts
        connecting (unless backing off or under way) and returns False."""
        if self._closed:
            return False
        conn = self._conn(node_id)
        if conn is None:
            return False
        if conn.ready:
            return conn.core.can_send()
        if conn.state is ConnectionState.DISCONNECTED and node_id not in self._connecting:
            self.policy.connection_wanted(node_id, conn.core, self._clock())
        if conn.state is ConnectionState.DISCONNECTED and node_id not in self._connecting \
                and conn.core.backoff_remaining(self._clock()) == 0:
            task = asyncio.get_running_loop().create_task(self._connect(node_id, conn))
            self._connecting[node_id] = task
        return False

    def is_connected(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.core.established

    async def _connect(self, node_id: int, conn: AioConnection) -> None:
        try:
            await conn.connect()
        except Exception as exc:  # the core keeps the backoff; the machine's retry path runs
            log.debug("connecting to broker %s failed: %s", node_id, exc)
            # (for an unparseable handshake answer: the parse-failure policy's verdict)
            self.policy.connection_failed(conn.core.last_error if conn.core.last_error is not None else exc)
        finally:
            self._connecting.pop(node_id, None)
            self._changed()

    def least_loaded_node(self) -> int | None:
        """A ready broker with the fewest requests in flight, else one not backing off."""
        return self.policy.least_loaded_node(self._links(), self._clock())

    def _links(self) -> dict[int, Link]:
        """node id -> its connection's core: what the cluster policy reads."""
        return {node_id: conn.core for node_id, conn in self._conns.items()}

    async def _ready_connection(self, node_id: int | None, deadline: float) -> tuple[int, AioConnection]:
        while True:
            if self._closed:
                raise IllegalStateError("the client is closed")
            self.raise_fatal()
            target = self.least_loaded_node() if node_id is None else node_id
            if target is not None and self.ready(target):
                return target, self._conns[target]
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("broker {0} not ready in time".format(target))
            task = self._connecting.get(target) if target is not None else None
            if task is not None:
                await asyncio.wait([asyncio.shield(task)], timeout=remaining)
            else:
                await asyncio.sleep(min(remaining, self.config["retry_backoff_ms"] / 1000.0))

    # --- requests ----------------------------------------------------------------------------
    async def request(self, api_name: str, body: Body, timeout_ms: float | None = None, node_id: int | None = None,
                      raw: bool = False, version: int | None = None) -> Any:
        """Send to node_id (least loaded when None), connecting first, and
        await the answer; retriable failures are retried until timeout_ms
        (request_timeout_ms when None)."""
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            target, conn = await self._ready_connection(node_id, deadline)
            try:
                return await self._request_on(conn, api_name, body, version=version, raw=raw,
                                              timeout_ms=max(1.0, (deadline - self._clock()) * 1000.0))
            except Exception as exc:
                if not getattr(exc, "retriable", False) or self._clock() >= deadline:
                    raise
            await asyncio.sleep(min(max(0.0, deadline - self._clock()), self.config["retry_backoff_ms"] / 1000.0))

    async def _request_on(self, conn: AioConnection, api_name: str, body: Body, *, version: int | None = None,
                          raw: bool = False, timeout_ms: float | None = None) -> Any:
        """One request on `conn`, its answer decoded here (raw: the payload)
        so that a body that cannot be parsed meets the
        parse-failure policy, as every answer does."""
        version = conn.version_for(api_name) if version is None else version
        payload = await conn.request(api_name, body, version=version, timeout_ms=timeout_ms, raw=True)
        if raw:
            return payload
        try:
            _, decoded = codec.decode_response(api_name, version, payload)
        except ProtocolParseError as exc:
            raise self.policy.parse_failed(conn.core, api_name, exc, self._clock())  # noqa: B904 - its cause is set
        self.policy.parse_ok(conn.core, api_name)
        return decoded

    def send(self, node_id: int, api_name: str, body: Body, callback: Callback, *, raw: bool = False,
             version: int | None = None, timeout_ms: float | None = None) -> int:
        """Send to a ready node_id now (written before this returns: a get
        call that never suspends still pipelines its next fetches);
        callback(answer, error) runs when it is answered (answer: the decoded
        body, or (payload, version) when raw). timeout_ms: this request's own
        timeout, when not request_timeout_ms."""
        conn = self._conns.get(node_id)
        if conn is None or not conn.ready:
            raise NodeNotReadyError("broker {0} is not ready".format(node_id))
        version = conn.version_for(api_name) if version is None else version

        def answered(payload: bytearray, error: BaseException | None) -> None:
            if error is not None:
                callback(None, error)
            elif raw:
                callback((payload, version), None)
            else:
                try:
                    _, decoded = codec.decode_response(api_name, version, payload)
                except ProtocolParseError as exc:
                    callback(None, self.parse_failed(node_id, api_name, exc))
                    return
                self.parse_ok(node_id, api_name)
                callback(decoded, None)

        return conn.send_nowait(api_name, body, answered, version=version, timeout_ms=timeout_ms)

    # --- metadata -------------------------------------------------------------------------------
    def add_topics(self, topics: Iterable[str]) -> None:
        if self.policy.add_topics(topics):
            self._wake_metadata_loop()

    def set_topics(self, topics: Iterable[str]) -> None:
        if self.policy.set_topics(topics):
            self._wake_metadata_loop()

    def request_metadata_update(self, all_topics: bool = False) -> None:
        self.policy.request_update(all_topics)
        self._wake_metadata_loop()

    def _wake_metadata_loop(self) -> None:
        if self._metadata_wake is not None:
            self._metadata_wake.set()

    def _start_metadata_loop(self) -> None:
        if self._metadata_task is None:
            self._metadata_wake = asyncio.Event()
            self._metadata_done = asyncio.Event()
            self._metadata_task = asyncio.get_running_loop().create_task(self._metadata_loop())

    async def _metadata_loop(self) -> None:
        # both events exist once the loop runs (_start_metadata_loop made them first)
        assert self._metadata_wake is not None and self._metadata_done is not None
        while not self._closed:
            wait = self.policy.refresh_due_in(self._clock())
            if wait > 0:
                self._metadata_wake.clear()
                try:
                    await asyncio.wait_for(self._metadata_wake.wait(), min(wait, self.policy.idle_check_period))
                except TimeoutError:
                    pass
                self._close_idle()
                continue
            await self._refresh_metadata()
            self._metadata_done.set()
            self._metadata_done = asyncio.Event()

    def _close_idle(self) -> None:
        for node_id in self.policy.idle_nodes(self._links(), self._clock()):
            conn = self._conns.pop(node_id)  # a requested close: no loss reported
            asyncio.get_running_loop().create_task(conn.close())

    async def _refresh_metadata(self) -> None:
        refresh = self.policy.begin_refresh()
        try:
            response = await self.request("Metadata", refresh.body)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("metadata refresh failed: %s", exc)
            self.policy.refresh_failed(exc, self._clock())
            return
        self.policy.refresh_answered(response, self._clock(), self._links())
        for listener in list(self.metadata_listeners):
            listener()
        self._changed()

    async def wait_for_metadata(self, timeout_ms: float, all_topics: bool = False) -> None:
        """Refresh metadata now and wait for it."""
        deadline = self._clock() + timeout_ms / 1000.0
        before = self.cluster.last_refresh
        self.request_metadata_update(all_topics=all_topics)
        while self.cluster.last_refresh == before or (all_topics and not self.cluster.all_topics_known):
            self.raise_fatal()
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError("no metadata within {0} ms".format(timeout_ms))
            done = self._metadata_done
            if done is None:  # no metadata task before bootstrap(): nothing would ever answer
                raise IllegalStateError("the client is not bootstrapped")
            try:
                await asyncio.wait_for(done.wait(), remaining)
            except TimeoutError:
                pass

    # --- the rest ------------------------------------------------------------------------------
    def _changed(self) -> None:
        for listener in list(self.on_change):
            listener()


    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = list(self._connecting.values())
        if self._metadata_task is not None:
            tasks.append(self._metadata_task)
        for task in tasks:
            task.cancel()
        for conn in list(self._conns.values()):
            await conn.close()
        self._conns.clear()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- parse failures (the cluster policy's rule) ------------------------------------------------
    def parse_failed(self, node_id: int, api_name: str, exc: ProtocolParseError) -> BaseException:
        """A response of `api_name` from node_id could not be parsed: the
        policy closes that connection (with backoff) and says what the caller
        must see: a retriable KafkaConnectionError below MAX_PARSE_FAILURES
        in a row, the ProtocolParseError itself from then on."""
        conn = self._conns.get(node_id)
        if conn is None:  # closed and forgotten meanwhile (idle): nothing to fail, nothing to count
            lost = KafkaConnectionError("broker {0} closed after an unparseable {1} response: {2}".format(
                node_id, api_name, exc))
            lost.__cause__ = exc
            return lost
        return self.policy.parse_failed(conn.core, api_name, exc, self._clock())

    def parse_ok(self, node_id: int, api_name: str) -> None:
        conn = self._conns.get(node_id)
        if conn is not None:
            self.policy.parse_ok(conn.core, api_name)
