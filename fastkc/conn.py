"""One broker connection: a non-blocking socket driven by the client's
selector, over the I/O-free protocol core (fastkc.net.core.ConnectionCore,
whose docstring has the state machine, framing, timeouts, TLS, SASL and
KIP-368 re-authentication rules).

This driver does the socket work only: resolve and connect (each attempt
uses the next resolved address of the host, after the core's backoff), read
into the core's frame buffers (plaintext: straight into the final buffer;
TLS: ciphertext handed to the core, which decrypts), write what the core
emits, close. The client's selector says when the socket is readable or
writable and calls `on_writable` / `on_readable`; `check_timeouts` is the
core's tick and `next_deadline` its next deadline.
"""
import errno
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from fastkc.cluster.metadata import address_problem
from fastkc.config import Config
from fastkc.errors import KafkaConnectionError, ProtocolParseError
from fastkc.net.core import (  # noqa: F401 - the names callers and tests import from here
    EVENTS,
    FIRST_FRAME_CHUNK,
    HANDSHAKE_MAX_FRAME,
    LEGAL_TRANSITIONS,
    PENDING_STEP_POLL_S,
    REAUTH_WINDOW,
    ConnectionCore,
    ConnectionState,
    InFlightRequest,
    pick_version,
)

log = logging.getLogger(__name__)

#: Ciphertext read per recv under TLS.
_TLS_RECV = 1 << 17


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        config: Config,
        *,
        node_id: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_ready: "Callable[[BrokerConnection], None] | None" = None,
        on_parse_error: "Callable[[BrokerConnection, str, ProtocolParseError], BaseException] | None" = None,
        on_event: "Callable[[BrokerConnection, str], None] | None" = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config
        self._clock = clock
        self.core = core = ConnectionCore(host, port, config, ssl_context=ssl_context)
        core.on_close = self._close_socket
        if on_ready is not None:
            core.on_ready = lambda: on_ready(self)
        if on_parse_error is not None:
            #: the client's parse failure policy (it fails the connection)
            core.on_parse_error = lambda api_name, exc: on_parse_error(self, api_name, exc)
        if on_event is not None:
            core.on_event = lambda kind: on_event(self, kind)
        self.sock: socket.socket | None = None
        # getaddrinfo's answers, tried in turn
        self._addresses: list[tuple[Any, ...]] = []
        self._address_index = 0
        self._scratch: memoryview | None = None
        core.last_activity = clock()

    def __repr__(self) -> str:
        return "<BrokerConnection node={0} {1}:{2} {3}>".format(self.node_id, self.host, self.port, self.state.value)

    # --- the core's state, read (and for tests, set) through the driver --------------
    @property
    def state(self) -> ConnectionState:
        value: ConnectionState = self.core.state
        return value

    @property
    def ready(self) -> bool:
        value: bool = self.core.ready
        return value

    @property
    def established(self) -> bool:
        value: bool = self.core.established
        return value

    @property
    def connecting(self) -> bool:
        value: bool = self.core.connecting
        return value

    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        value: dict[int, tuple[int, int]] = self.core.api_versions
        return value

    @property
    def versions(self) -> dict[str, int]:
        value: dict[str, int] = self.core.versions
        return value

    @property
    def failures(self) -> int:
        value: int = self.core.failures
        return value

    @property
    def session_lifetime_ms(self) -> int:
        value: int = self.core.session_lifetime_ms
        return value

    @property
    def reauthentications(self) -> int:
        value: int = self.core.reauthentications
        return value

    @property
    def failed_reauthentications(self) -> int:
        value: int = self.core.failed_reauthentications
        return value

    @property
    def reauth_failed(self) -> bool:
        value: bool = self.core.reauth_failed
        return value

    @property
    def lost(self) -> int:
        value: int = self.core.lost
        return value

    @property
    def last_loss(self) -> BaseException | None:
        error: BaseException | None = self.core.last_loss
        return error

    @property
    def last_error(self) -> BaseException | None:
        error: BaseException | None = self.core.last_error
        return error

    @last_error.setter
    def last_error(self, error: BaseException | None) -> None:
        self.core.last_error = error

    @property
    def _next_attempt(self) -> float:
        value: float = self.core.next_attempt
        return value

    @_next_attempt.setter
    def _next_attempt(self, value: float) -> None:
        self.core.next_attempt = value

    def in_flight_count(self) -> int:
        count: int = self.core.in_flight_count()
        return count

    def can_send(self) -> bool:
        return bool(self.core.can_send())

    def backoff_remaining(self, now: float | None = None) -> float:
        remaining: float = self.core.backoff_remaining(self._clock() if now is None else now)
        return remaining

    def wants_write(self) -> bool:
        return self.core.state is ConnectionState.CONNECTING or bool(self.core.wants_output())

    def version_for(self, api_name: str) -> int:
        version: int = self.core.version_for(api_name)
        return version

    def reauthentication_due_in(self, now: float | None = None) -> float | None:
        due: float | None = self.core.reauthentication_due_in(self._clock() if now is None else now)
        return due

    def idle_for(self, now: float | None = None) -> float:
        idle: float = self.core.idle_for(self._clock() if now is None else now)
        return idle

    def has_untried_address(self) -> bool:
        """The host resolved to more addresses than this round of attempts tried."""
        return self._address_index < len(self._addresses)

    # --- connecting ---------------------------------------------------------------
    def connect(self) -> bool:
        """Start a connection attempt if DISCONNECTED and the backoff allows.
        Returns True when an attempt is under way (or the connection is up)."""
        core = self.core
        if core.state is not ConnectionState.DISCONNECTED:
            return True
        now = self._clock()
        if now < core.next_attempt:
            return False
        if not self._addresses or self._address_index >= len(self._addresses):
            try:
                self._addresses = self._resolve()
            except (OSError, UnicodeError, ValueError) as exc:  # the resolver's refusals (IDNA, NUL) too
                core.fail(KafkaConnectionError("cannot resolve {0}:{1}: {2}".format(self.host, self.port, exc)), now)
                return False
            self._address_index = 0
        family, socktype, proto, _, address = self._addresses[self._address_index]
        self._address_index += 1
        sock = socket.socket(family, socktype, proto)
        try:
            for option in self.config["socket_options"]:
                sock.setsockopt(*option)
            if self.config["receive_buffer_bytes"] is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.config["receive_buffer_bytes"])
            if self.config["send_buffer_bytes"] is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.config["send_buffer_bytes"])
            sock.setblocking(False)
            code = sock.connect_ex(address)
        except OSError as exc:
            sock.close()
            core.fail(KafkaConnectionError("connect to {0}:{1} failed: {2}".format(self.host, self.port, exc)), now)
            return False
        self.sock = sock
        core.start_connecting(now)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            core.transport_lost(KafkaConnectionError("connect to {0}:{1} ({2}) failed: {3}".format(
                self.host, self.port, address[0], os.strerror(code))), now)
            return False
        return True

    def _resolve(self) -> list[tuple[Any, ...]]:
        # getaddrinfo would take port 70000 as 4464, and raise a bare
        # UnicodeError for a 64-byte label: an address from the wire
        # (Metadata, FindCoordinator) is checked here, whoever passed it on
        problem = address_problem(self.host, self.port)
        if problem is not None:
            raise OSError("not a usable broker address: {0}".format(problem))
        infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
        if not infos:
            raise OSError("no addresses")
        return list(infos)

    def _tcp_connected(self) -> None:
        if self.sock is None:  # CONNECTING always has a socket; said for the type checker
            return
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.core.transport_lost(KafkaConnectionError("connect to {0}:{1} failed: {2}".format(
                self.host, self.port, os.strerror(code))), self._clock())
            return
        self.core.transport_connected(self._clock())
        self._flush()

    def _close_socket(self, error: BaseException | None) -> None:
        """The core went DISCONNECTED: the socket goes before any request's
        callback runs (a callback may start the next attempt)."""
        sock, self.sock = self.sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    # --- sending ---------------------------------------------------------------------
    def send(self, api_name: str, body: dict[str, Any], callback: Callable[[Any, BaseException | None], None],
             version: int | None = None, timeout_ms: float | None = None) -> int:
        """Queue one request; returns its correlation id. The callback runs
        from the client's poll with (payload, None) or (None, error).
        timeout_ms: this request's own timeout; request_timeout_ms when None."""
        correlation_id: int = self.core.send(api_name, body, callback, version, timeout_ms, now=self._clock())
        self._flush()
        return correlation_id

    def _flush(self) -> None:
        core = self.core
        if self.sock is None or not core.wants_output():
            return
        try:
            sent = self.sock.send(core.data_to_send())
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._send_failed(exc)
            return
        core.sent(sent, self._clock())

    def _send_failed(self, exc: OSError) -> None:
        # A send can fail first (EPIPE: a TLS broker closed right after the
        # alert that refuses our certificate); the alert may still wait in
        # the socket, ahead of the close: hand it to the core, whose verdict
        # (SslAuthenticationError) then beats the plain connection error.
        if self.core.tls and self.sock is not None:
            try:
                data = self.sock.recv(_TLS_RECV)
            except OSError:
                data = b""
            if data:
                # answers that came with it are answers: their callers hear so
                for request, payload in self.core.receive(data, self._clock()):
                    request.callback(payload, None)
        self.core.transport_lost(KafkaConnectionError("send to {0}:{1} failed: {2}".format(
            self.host, self.port, exc)), self._clock())

    # --- selector events ---------------------------------------------------------------
    def on_writable(self) -> None:
        if self.core.state is ConnectionState.CONNECTING:
            self._tcp_connected()
        else:
            self._flush()

    def on_readable(self) -> list[tuple[InFlightRequest, bytearray]]:
        """Read what the socket has; returns [(InFlightRequest, payload)] of the
        answers to caller requests (handshake answers are handled by the core)."""
        core = self.core
        if core.state is ConnectionState.CONNECTING:
            self._tcp_connected()
            return []
        sock = self.sock
        if sock is None:
            return []
        answered: list[tuple[InFlightRequest, bytearray]] = []
        tls = core.tls
        if tls and self._scratch is None:
            # one buffer for ciphertext, kept: a fresh 128 KB object per read
            # would be an mmap and its page faults every time
            self._scratch = memoryview(bytearray(_TLS_RECV))
        scratch = self._scratch
        while self.sock is sock:
            try:
                if tls and scratch is not None:
                    n = sock.recv_into(scratch)
                else:
                    n = sock.recv_into(core.get_buffer())
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                core.transport_lost(KafkaConnectionError("receive from {0}:{1} failed: {2}".format(
                    self.host, self.port, exc)), self._clock())
                break
            if not n:
                core.transport_lost(KafkaConnectionError("{0}:{1} closed the connection".format(
                    self.host, self.port)), self._clock())
                break
            if tls and scratch is not None:
                answered += core.receive(scratch[:n], self._clock())
            else:
                core.buffer_updated(n, self._clock(), answered)
        self._flush()
        return answered

    # --- time ---------------------------------------------------------------------------
    def check_timeouts(self, now: float | None = None) -> None:
        """Fail the connection when its oldest request (or the connect) is
        overdue; start a re-authentication that is due."""
        self.core.tick(self._clock() if now is None else now)
        self._flush()

    def maybe_reauthenticate(self, now: float | None = None) -> bool:
        """Start the re-authentication if it is due; True when one is under
        way. The client's poll calls it (through check_timeouts) when the
        deadline passes, and `KafkaClient.ready()` before every send: a
        thread that does not poll between its requests (the group member
        sleeps between heartbeats) re-authenticates before its next request,
        as the Java client does, instead of sending on an expired session."""
        under_way: bool = self.core.maybe_reauthenticate(self._clock() if now is None else now)
        self._flush()
        return under_way

    def next_deadline(self) -> float | None:
        """When check_timeouts must next look (monotonic seconds), or None."""
        deadline: float | None = self.core.next_deadline(self._clock())
        return deadline

    # --- failure and close -------------------------------------------------------------
    def fail(self, error: BaseException, backoff_failures: int = 0) -> None:
        """Fail the connection with `error` (every in-flight request gets it)
        and back off before the next attempt, as for a lost connection."""
        if self.core.state is ConnectionState.DISCONNECTED and self.sock is None:
            return
        self.core.fail(error, self._clock(), backoff_failures)

    def close(self, error: BaseException | None = None) -> None:
        """Close now (no backoff penalty); in-flight requests fail with `error`.
        With an error the close counts as a lost connection for the client
        (metadata refresh, fetch sessions reset); without one (idle, shutdown)
        it does not."""
        self.core.close(error)
        self._close_socket(error)
