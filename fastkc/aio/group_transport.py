"""The asyncio group driver's I/O: its own broker connections, as the sync
member has its own `GroupTransport`.

Two `AioConnection`s: one to any broker (FindCoordinator, Metadata; made
from bootstrap_servers, then from the brokers the metadata names) and one to
the group coordinator the CoordinatorMachine found. Nothing here decides
anything about the protocol: failures come back as typed errors for the
machines to read — a coordinator that cannot be reached, or that does not
answer in time, is `CoordinatorUnknownError` (the machine looks it up again);
a failure on the any-broker connection is the connection's own
`KafkaConnectionError` / `KafkaTimeoutError` (retriable, the machine backs
off).

The three methods the driver calls (`request_any`, `metadata`, `call`) are
what tests replace with a fake answering from a script.
"""
import asyncio
import logging
import ssl
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from fastkc.cluster.metadata import Body, ClusterMetadata
from fastkc.config import Config, build_ssl_context
from fastkc.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError, NoBrokersAvailable
from fastkc.group.coordinator_machine import Coordinator, CoordinatorUnknownError
from fastkc.group.transport import VERSION_CAPS
from fastkc.net.aio import AioConnection

log = logging.getLogger(__name__)

#: how a transport makes a connection: (host, port, config, ssl_context=) -> AioConnection
ConnectionFactory = Callable[..., AioConnection]


class GroupTransport(Protocol):
    """What the group driver asks of its transport (AioGroupTransport; a
    test's scripted fake)."""

    cluster: ClusterMetadata

    async def request_any(self, api_name: str, body: Body, timeout_ms: float) -> Any: ...

    async def metadata(self, topics: Iterable[str] | None, timeout_ms: float) -> ClusterMetadata: ...

    async def call(self, coordinator: Coordinator, api_name: str, body: Body, timeout_ms: float) -> Any: ...

    def coordinator_version(self, api_name: str) -> int: ...

    async def coordinator_lost(self) -> None: ...

    async def close(self) -> None: ...


class AioGroupTransport:
    def __init__(self, config: Config, *, connection_factory: ConnectionFactory = AioConnection) -> None:
        self.config = config
        self._connect = connection_factory
        self._ssl_context: ssl.SSLContext | None = None
        if config["security_protocol"] in ("SSL", "SASL_SSL"):
            self._ssl_context = build_ssl_context(config)
        self.cluster = ClusterMetadata()
        self._any: AioConnection | None = None  # for FindCoordinator / Metadata
        self._any_lock = asyncio.Lock()
        self._turn = 0  # the next address to try (round robin over failures)
        self._coordinator: tuple[int, str, int] | None = None  # (node_id, host, port) of _coordinator_conn
        self._coordinator_conn: AioConnection | None = None
        self._coordinator_lock = asyncio.Lock()
        self._closed = False

    def _new(self, host: str, port: int) -> AioConnection:
        return self._connect(host, port, self.config, ssl_context=self._ssl_context)

    # --- any broker ---------------------------------------------------------------------------
    def _addresses(self) -> list[tuple[str, int]]:
        brokers = [(b.host, b.port) for b in sorted(self.cluster.brokers.values(), key=lambda b: b.node_id)]
        seen = set(brokers)
        return brokers + [a for a in self.config["bootstrap_servers"] if a not in seen]

    async def _any_connection(self, timeout_ms: float) -> AioConnection:
        """A ready connection to some broker: the current one, else each
        address in turn (known brokers first, then bootstrap_servers) until
        one connects or the time is up."""
        async with self._any_lock:
            conn = self._any
            if conn is not None and conn.ready:
                return conn
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_ms / 1000.0
            last_error: KafkaError | None = None
            addresses = self._addresses()
            for _ in range(len(addresses)):
                host, port = addresses[self._turn % len(addresses)]
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                conn = self._new(host, port)
                try:
                    await asyncio.wait_for(conn.connect(), remaining)
                except TimeoutError:
                    await conn.close()
                    last_error = KafkaTimeoutError("connecting to {0}:{1} timed out".format(host, port))
                except KafkaError as exc:
                    await conn.close()
                    if not exc.retriable and not isinstance(exc, KafkaConnectionError):
                        raise  # TLS verification, SASL: no other broker helps
                    last_error = exc
                else:
                    self._any = conn
                    return conn
                self._turn += 1
            raise NoBrokersAvailable("no broker reachable for the group within {0} ms{1}".format(
                timeout_ms, " (last error: {0})".format(last_error) if last_error else ""))

    async def request_any(self, api_name: str, body: Body, timeout_ms: float) -> Any:
        """One request to any broker; the decoded answer."""
        conn = await self._any_connection(timeout_ms)
        try:
            return await asyncio.wait_for(conn.request(api_name, body), timeout_ms / 1000.0)
        except TimeoutError:
            # in order on the connection, but an answer this late is not waited for: start afresh
            await self._drop_any(conn)
            raise KafkaTimeoutError("{0}: no answer within {1} ms".format(api_name, timeout_ms)) from None
        except KafkaConnectionError:
            await self._drop_any(conn)
            raise

    async def _drop_any(self, conn: AioConnection) -> None:
        if self._any is conn:
            self._any = None
            self._turn += 1
        await conn.close()

    async def metadata(self, topics: Iterable[str] | None, timeout_ms: float) -> ClusterMetadata:
        """The cluster view for `topics` (None: every topic), fetched now."""
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False}
        response = await self.request_any("Metadata", body, timeout_ms)
        self.cluster.update(response, all_topics=topics is None)
        self.cluster.last_refresh = asyncio.get_running_loop().time()
        return self.cluster

    # --- the coordinator --------------------------------------------------------------------------
    def coordinator_version(self, api_name: str) -> int:
        """The coordinator connection's version of `api_name` (0 while it is
        not connected)."""
        conn = self._coordinator_conn
        if conn is None or not conn.ready:
            return 0
        return conn.version_for(api_name)

    async def _coordinator_connection(self, coordinator: Coordinator, timeout_ms: float) -> AioConnection:
        key = (coordinator.node_id, coordinator.host, coordinator.port)
        async with self._coordinator_lock:
            conn = self._coordinator_conn
            if conn is not None and self._coordinator == key and conn.ready:
                return conn
            if conn is not None:
                await conn.close()
            self._coordinator, conn = key, self._new(coordinator.host, coordinator.port)
            self._coordinator_conn = conn
            try:
                await asyncio.wait_for(conn.connect(), timeout_ms / 1000.0)
            except TimeoutError:
                await self.coordinator_lost()
                raise CoordinatorUnknownError("coordinator {0} not ready within {1} ms".format(
                    coordinator.node_id, timeout_ms)) from None
            except KafkaError as exc:
                await self.coordinator_lost()
                if not exc.retriable and not isinstance(exc, KafkaConnectionError):
                    raise  # TLS, SASL: no retry helps
                raise CoordinatorUnknownError("coordinator {0} unreachable: {1}".format(
                    coordinator.node_id, exc)) from exc
            return conn

    async def call(self, coordinator: Coordinator, api_name: str, body: Body, timeout_ms: float) -> Any:
        """One request to the coordinator (coordinator_machine.Coordinator).
        A JoinGroup carries timeout_ms as its own request timeout (the
        coordinator holds it for up to the rebalance timeout); the others
        have request_timeout_ms. Unreachable, lost or silent:
        CoordinatorUnknownError. Broker error codes are the machines'."""
        conn = await self._coordinator_connection(coordinator, timeout_ms)
        version = None
        cap = VERSION_CAPS.get(api_name)
        if cap is not None:
            version = min(cap, conn.version_for(api_name))
        request_timeout = timeout_ms if api_name == "JoinGroup" else None
        try:
            return await asyncio.wait_for(conn.request(api_name, body, version=version, timeout_ms=request_timeout),
                                          timeout_ms / 1000.0)
        except TimeoutError:
            await self._drop_coordinator(conn)
            raise CoordinatorUnknownError("{0} to coordinator {1}: no answer within {2} ms".format(
                api_name, coordinator.node_id, timeout_ms)) from None
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            await self._drop_coordinator(conn)
            raise CoordinatorUnknownError("{0} to coordinator {1} failed: {2}".format(
                api_name, coordinator.node_id, exc)) from exc

    async def _drop_coordinator(self, conn: AioConnection) -> None:
        if self._coordinator_conn is conn:
            self._coordinator_conn = self._coordinator = None
        await conn.close()

    async def coordinator_lost(self) -> None:
        """Forget the coordinator connection (the machine lost the coordinator)."""
        conn, self._coordinator_conn, self._coordinator = self._coordinator_conn, None, None
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        self._closed = True
        for conn in (self._any, self._coordinator_conn):
            if conn is not None:
                await conn.close()
        self._any = self._coordinator_conn = self._coordinator = None
