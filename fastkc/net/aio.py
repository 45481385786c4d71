"""One broker connection for asyncio: an `asyncio.BufferedProtocol` driver of
the connection core (fastkc.net.core).

    conn = AioConnection("127.0.0.1", 9092, {"client_id": "me"})
    await conn.connect()                       # TCP, TLS, ApiVersions, SASL
    meta = await conn.request("Metadata", {"topics": []})
    raw = await conn.request("Fetch", body, raw=True)   # the payload, header included
    await conn.close()

TLS is the core's (ssl.SSLObject over memory BIOs), not asyncio's: the loop
moves ciphertext only, so the three drivers share one TLS path and its error
mapping. Plaintext frames are read straight into the core's frame buffers
(BufferedProtocol.get_buffer is the core's). Deadlines come from the core's
next_deadline() through one loop.call_at timer; nothing here blocks the loop
(GSSAPI's and AWS_MSK_IAM's slow steps, and here any mechanism's first
message but PLAIN's and SCRAM's -- an OAUTHBEARER token provider may call an
HTTP endpoint -- run on a thread of their own; the core polls them on ticks).

Requests are pipelined up to max_in_flight_requests_per_connection; a
request() beyond that, or during a KIP-368 re-authentication, waits for room
instead of failing. Cancelling an awaited request() leaves the connection
usable: the request stays in flight, its answer is read in order and dropped.
Errors are the core's typed ones (KafkaConnectionError, KafkaTimeoutError,
CorrelationIdError, KafkaProtocolError, SslAuthenticationError, SASL's);
once the connection has failed every request() raises the error it failed
with, and connect() may be called again for a new attempt.
"""
import asyncio
import socket
import ssl
from collections.abc import Mapping
from typing import Any, cast

from fastkc import auth
from fastkc.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, ProtocolParseError
from fastkc.net.core import Callback, ConnectionCore, ConnectionState
from fastkc.protocol import codec

#: The core's keys and kafka-python's defaults for them (config overrides).
DEFAULTS: dict[str, Any] = {
    "client_id": "fastkc",
    "request_timeout_ms": 30000,
    "max_in_flight_requests_per_connection": 5,
    "receive_message_max_bytes": 100000000,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 30000,
}
#: Ciphertext is received into a scratch buffer of this size under TLS.
_TLS_SCRATCH = 1 << 17


class AioConnection:
    def __init__(self, host: str, port: int, config: Mapping[str, Any] | None = None, *,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        settings = dict(DEFAULTS)
        settings["security_protocol"] = "SSL" if ssl_context is not None else "PLAINTEXT"
        settings.update(config or {})
        self.config = settings
        self.core = ConnectionCore(host, port, settings, ssl_context=ssl_context)
        self.core.offload = auth.PendingStep
        self.core.on_close = self._core_closed
        self.core.on_ready = self._core_ready
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._ready_waiter: asyncio.Future[None] | None = None
        self._closed_waiter: asyncio.Future[None] | None = None
        #: futures of request() calls waiting for room (in-flight limit,
        #: re-authentication): woken after every event
        self._room_waiters: list[asyncio.Future[None]] = []

    def __repr__(self) -> str:
        return "<AioConnection {0}:{1} {2}>".format(self.host, self.port, self.core.state.value)

    @property
    def state(self) -> ConnectionState:
        return self.core.state

    @property
    def ready(self) -> bool:
        return self.core.ready

    @property
    def last_error(self) -> BaseException | None:
        return self.core.last_error

    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        return self.core.api_versions

    def version_for(self, api_name: str) -> int:
        return self.core.version_for(api_name)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        assert loop is not None  # set by connect(), before the core has any event
        return loop

    # --- connecting ------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the connection and run its handshake (TLS, ApiVersions, SASL);
        raise the typed error it failed with."""
        core = self.core
        if core.ready:
            return
        if core.state is not ConnectionState.DISCONNECTED:
            raise NodeNotReadyError("connection to {0}:{1} is {2}".format(self.host, self.port, core.state.value))
        loop = self._loop = asyncio.get_running_loop()
        self._ready_waiter = waiter = loop.create_future()
        core.start_connecting(loop.time())
        self._reschedule()
        deadline = core.next_deadline(loop.time())
        assert deadline is not None  # CONNECTING has its connect deadline
        remaining = max(0.0, deadline - loop.time())
        try:
            await asyncio.wait_for(loop.create_connection(lambda: _Protocol(self), self.host, self.port),
                                   timeout=remaining)
        except TimeoutError:
            core.transport_lost(KafkaTimeoutError("connecting to {0}:{1} timed out".format(self.host, self.port)),
                                loop.time())
        except (OSError, UnicodeError, ValueError) as exc:  # the resolver's refusals (IDNA, NUL) too
            core.transport_lost(KafkaConnectionError("connect to {0}:{1} failed: {2}".format(
                self.host, self.port, exc)), loop.time())
        except BaseException:
            core.close()
            raise
        if not waiter.done():
            try:
                await asyncio.shield(waiter)
            except asyncio.CancelledError:
                core.close()
                raise
        waiter.result()  # the error the handshake failed with, raised

    def _core_ready(self) -> None:
        if self._ready_waiter is not None and not self._ready_waiter.done():
            self._ready_waiter.set_result(None)

    def _core_closed(self, error: BaseException | None) -> None:
        """The core went DISCONNECTED: drop the transport and the timer
        before any request's future learns of it."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.abort()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_at = None
        if error is not None and self._ready_waiter is not None and not self._ready_waiter.done():
            self._ready_waiter.set_exception(error)
            self._ready_waiter.exception()  # retrieved: a connect() nobody awaits logs nothing
        self._wake_room_waiters()

    # --- requests ----------------------------------------------------------------------
    async def request(self, api_name: str, body: dict[str, Any], version: int | None = None,
                      timeout_ms: float | None = None, raw: bool = False) -> Any:
        """Send one request and await its answer: the decoded body (a dict),
        or with raw=True the payload after the size prefix, response header
        included. timeout_ms: this request's own timeout (request_timeout_ms
        when None)."""
        core = self.core
        loop = self._loop or asyncio.get_running_loop()
        while True:
            if core.state is ConnectionState.DISCONNECTED:
                raise core.last_error or NodeNotReadyError(
                    "connection to {0}:{1} is not connected".format(self.host, self.port))
            if core.ready and core.maybe_reauthenticate(loop.time()):
                self._after_event()  # the exchange goes first; this request waits for it
            if core.can_send():
                break
            if core.state not in (ConnectionState.READY, ConnectionState.REAUTHENTICATING):
                raise NodeNotReadyError("connection to {0}:{1} is {2}".format(
                    self.host, self.port, core.state.value))
            waiter: asyncio.Future[None] = loop.create_future()
            self._room_waiters.append(waiter)
            await waiter
        version = core.version_for(api_name) if version is None else version
        answer: asyncio.Future[bytearray] = loop.create_future()

        def answered(payload: bytearray, error: BaseException | None) -> None:
            if answer.done():
                return  # the caller cancelled: the answer was read, in order, and is dropped
            if error is not None:
                answer.set_exception(error)
            else:
                answer.set_result(payload)

        core.send(api_name, body, answered, version, timeout_ms, now=loop.time())
        self._after_event()
        payload = await answer
        if raw:
            return payload
        try:
            _, decoded = codec.decode_response(api_name, version, payload)
        except ProtocolParseError as exc:
            # in step, but a broker that sends a malformed body cannot be
            # trusted with the next request either
            core.fail(exc, loop.time())
            raise
        return decoded

    def send_nowait(self, api_name: str, body: dict[str, Any], callback: Callback, version: int | None = None,
                    timeout_ms: float | None = None) -> int:
        """Put a request on the wire now, without awaiting anything (the
        asyncio fetch driver's pipelined fetches, sent from inside a get call
        that does not suspend): callback(payload, error) runs when it is
        answered, payload being the raw answer (header included). Raises
        NodeNotReadyError when the connection cannot take a request now
        (not ready, at its in-flight limit, re-authenticating). Returns the
        version sent."""
        core = self.core
        if not core.can_send():
            raise NodeNotReadyError("connection to {0}:{1} cannot take a request now ({2})".format(
                self.host, self.port, core.state.value))
        loop = self._loop or asyncio.get_running_loop()
        version = core.version_for(api_name) if version is None else version
        core.send(api_name, body, callback, version, timeout_ms, now=loop.time())
        self._after_event()
        return version

    # --- closing ------------------------------------------------------------------------
    async def close(self) -> None:
        """Close now; requests in flight fail with KafkaConnectionError."""
        closed = self._closed_waiter
        if self.core.state is not ConnectionState.DISCONNECTED:
            self.core.close()
        else:
            self._core_closed(None)
        if closed is not None and not closed.done():
            try:
                await asyncio.wait_for(asyncio.shield(closed), 1.0)
            except TimeoutError:
                pass

    # --- the driver's plumbing ------------------------------------------------------------
    def _after_event(self) -> None:
        """After anything fed to the core: write what it emits, re-arm the
        timer for its next deadline, wake requests waiting for room."""
        core = self.core
        transport = self._transport
        if transport is not None and core.wants_output():
            out = core.data_to_send()
            # a copy: the transport may keep a view of what it could not send yet
            transport.write(bytes(out))
            core.sent(len(out), self._running_loop().time())
        self._reschedule()
        self._wake_room_waiters()

    def _wake_room_waiters(self) -> None:
        waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _reschedule(self) -> None:
        loop = self._running_loop()
        due = self.core.next_deadline(loop.time())
        if due == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = due
        self._timer = None if due is None else loop.call_at(due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = self._timer_at = None
        self.core.tick(self._running_loop().time())
        self._after_event()


class _Protocol(asyncio.BufferedProtocol):
    def __init__(self, conn: AioConnection) -> None:
        self._conn = conn
        self._core = conn.core
        # under TLS ciphertext is read here, the plaintext into the core's buffers
        self._scratch_view = memoryview(bytearray(_TLS_SCRATCH)) if conn.core.tls else None
        self._transport: asyncio.Transport | None = None

    def _current(self) -> bool:
        """This protocol's transport is still the connection's (not one
        given up, nor the previous attempt's)."""
        return self._transport is not None and self._conn._transport is self._transport

    def connection_made(self, base_transport: asyncio.BaseTransport) -> None:
        # create_connection() makes stream transports (a duck type under uvloop: no isinstance)
        transport = cast(asyncio.Transport, base_transport)
        conn = self._conn
        loop = conn._running_loop()
        conn._closed_waiter = loop.create_future()
        if self._core.state is not ConnectionState.CONNECTING:
            transport.abort()  # the attempt was given up (timed out) while the connect was under way
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        conn._transport = self._transport = transport
        self._core.transport_connected(loop.time())
        conn._after_event()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._scratch_view is not None:
            return self._scratch_view
        if not self._current():
            return memoryview(bytearray(1 << 16))  # a stale transport's last bytes, dropped
        return self._core.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        conn = self._conn
        if not self._current():
            return
        now = conn._running_loop().time()
        if self._scratch_view is not None:
            answered = self._core.receive(self._scratch_view[:nbytes], now)
        else:
            answered = self._core.buffer_updated(nbytes, now)
        for request, payload in answered:
            request.callback(payload, None)
        conn._after_event()

    def eof_received(self) -> bool:
        conn = self._conn
        if not self._current():
            return False
        self._core.transport_lost(KafkaConnectionError("{0}:{1} closed the connection".format(
            conn.host, conn.port)), conn._running_loop().time())
        conn._after_event()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        conn = self._conn
        if self._current():
            conn._transport = None
            error = KafkaConnectionError("connection to {0}:{1} lost: {2}".format(conn.host, conn.port, exc)) \
                if exc is not None else KafkaConnectionError("{0}:{1} closed the connection".format(
                    conn.host, conn.port))
            self._core.transport_lost(error, conn._running_loop().time())
            conn._after_event()
        if conn._closed_waiter is not None and not conn._closed_waiter.done():
            conn._closed_waiter.set_result(None)
