"""The fetch machine's requests (fastkc.request.Request, its tokens ints): what the
machine asks of a connection (`NodeLink`, next_requests' `Link`), and the
ledger that numbers requests and routes each answer to its handler
(`RequestLedger`, shared by the planner and the offset requests)."""
from collections.abc import Callable
from typing import Any, Protocol

from fastkc.config import Config
from fastkc.errors import IncompatibleBrokerVersion, ProtocolParseError
from fastkc.request import Request


class NodeLink(Protocol):
    """A ready connection as the machine sees it (ConnectionLink): the
    version it speaks of an API, None when it speaks none fastkc knows."""

    def version_for(self, api_name: str) -> int | None: ...


#: next_requests' `link`: a ready connection to node_id, or None (not now)
Link = Callable[[int], NodeLink | None]
#: a request's answer handler: (the answer, or None; the error that ended it,
#: or None; the driver's now) -> the ProtocolParseError of a Fetch payload the
#: parser refused
Handler = Callable[[Any, BaseException | None, float], "ProtocolParseError | None"]


def isolation_level(config: Config) -> int:
    """The isolation_level field of Fetch and ListOffsets bodies."""
    return 1 if config["isolation_level"] == "read_committed" else 0


class RequestLedger:
    """Requests made and not yet answered: a token each, its handler, and
    the requests due for the driver's next pass (the outbox)."""

    def __init__(self, request_timeout_ms: float) -> None:
        self._request_timeout_ms = request_timeout_ms  # every request's timeout_ms
        self._outbox: list[Request[int]] = []
        self._handlers: dict[int, Handler] = {}  # token -> the answer's handler
        self._next_token = 0

    def emit(self, node_id: int, api: str, body: dict[str, Any], handler: Handler, raw: bool = False,
             version: int | None = None, outbox: bool = True) -> Request[int]:
        """A new request; in the outbox unless `outbox` is False (the caller
        hands it to the driver itself)."""
        token = self._next_token
        self._next_token += 1
        self._handlers[token] = handler
        request = Request(node_id, api, body, self._request_timeout_ms, token, version, raw)
        if outbox:
            self._outbox.append(request)
        return request

    def take_outbox(self) -> list[Request[int]]:
        out, self._outbox = self._outbox, []
        return out

    def answer(self, token: int, payload_or_error: Any, now: float) -> ProtocolParseError | None:
        handler = self._handlers.pop(token, None)
        if handler is None:
            return None  # answered before (a driver's double report), or never ours
        if isinstance(payload_or_error, BaseException):
            return handler(None, payload_or_error, now)
        return handler(payload_or_error, None, now)


class VersionedConnection(Protocol):
    """A driver's connection (fastkc.conn.BrokerConnection, fastkc.net.aio.AioConnection)."""

    def version_for(self, api_name: str) -> int: ...


class ConnectionLink:
    """What the machine asks of a ready connection (next_requests' `link`):
    the versions it speaks. Both drivers hand their connections over in it."""

    __slots__ = ("conn",)

    def __init__(self, conn: VersionedConnection) -> None:
        self.conn = conn

    def version_for(self, api_name: str) -> int | None:
        try:
            return self.conn.version_for(api_name)
        except IncompatibleBrokerVersion:
            return None
