"""A small synchronous Kafka client for tools, tests and the broker harness:
a blocking-socket driver of the connection core (fastkc.net.core).

One TCP (or TLS) connection, one request at a time, ApiVersions negotiated on
connect (by the core, with its v0 fallback). Not the consumer's connection
(that one pipelines requests under a selector); this is the simple,
dependable way to ask a broker something.

    with BlockingConnection("127.0.0.1", 9092) as conn:
        meta = conn.request("Metadata", {"topics": None})

The core does TLS (`ssl_context`) over the socket and, when `config` asks for
it (security_protocol SASL_PLAINTEXT / SASL_SSL and the sasl_* keys of
kafka-python), SASL; without SASL in `config` a caller may still send
SaslHandshake / SaslAuthenticate itself, as plain requests.

Errors: KafkaConnectionError when the connection cannot be made or is lost
(a broker closes the connection on a request version it does not speak),
KafkaTimeoutError when no complete answer arrives within `timeout` seconds,
CorrelationIdError / ProtocolParseError / KafkaProtocolError on a malformed
answer, SslAuthenticationError when TLS refuses, and IllegalArgumentError
when no version is spoken by both sides (raised before anything is sent).
After any of these but the last the connection is closed: the stream position
is unknown, so it cannot be reused.
"""
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from fastkc.errors import IllegalArgumentError, KafkaConnectionError, KafkaTimeoutError, ProtocolParseError
from fastkc.net.core import ConnectionCore, ConnectionState
from fastkc.protocol import codec
from fastkc.protocol.messages import API_VERSIONS, get_api

#: Kafka's own default for socket.request.max.bytes is 100 MiB; responses can
#: be larger (fetch.max.bytes may be raised): a tool accepts up to 1 GiB.
MAX_FRAME = 1 << 30
_RECV = 1 << 16


class BlockingConnection:
    def __init__(self, host: str, port: int, *, client_id: str = "fastkc", timeout: float = 10.0,
                 ssl_context: ssl.SSLContext | None = None, config: Mapping[str, Any] | None = None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        settings: dict[str, Any] = {
            "client_id": client_id,
            "request_timeout_ms": timeout * 1000.0,
            "max_in_flight_requests_per_connection": 1,
            "receive_message_max_bytes": MAX_FRAME,
            "security_protocol": "SSL" if ssl_context is not None else "PLAINTEXT",
            "reconnect_backoff_ms": 0,
            "reconnect_backoff_max_ms": 0,
        }
        settings.update(config or {})
        self._core = ConnectionCore(host, port, settings, ssl_context=ssl_context)
        self._core.on_close = self._close_socket
        self._sock: socket.socket | None = None
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except TimeoutError:
            raise KafkaTimeoutError("connecting to {0}:{1} timed out after {2}s".format(host, port, timeout)) from None
        except OSError as exc:
            raise KafkaConnectionError("cannot connect to {0}:{1}: {2}".format(host, port, exc)) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self._sock = sock
        now = time.monotonic()
        self._core.start_connecting(now)
        self._core.transport_connected(now)
        try:
            self._run_until(lambda: self._core.ready, "ApiVersions", API_VERSIONS.max_version)
        except BaseException:
            self.close()
            raise

    # --- context manager ------------------------------------------------------
    def __enter__(self) -> "BlockingConnection":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._core.state is not ConnectionState.DISCONNECTED:
            self._core.close()
        self._close_socket(None)

    def _close_socket(self, error: BaseException | None) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    @property
    def closed(self) -> bool:
        return self._sock is None

    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        """api_key -> (min, max) the broker supports, from ApiVersions."""
        versions: dict[int, tuple[int, int]] = self._core.api_versions
        return versions

    @property
    def api_versions_response(self) -> dict[str, Any] | None:
        response: dict[str, Any] | None = self._core.api_versions_response
        return response

    # --- versions ---------------------------------------------------------------
    def pick_version(self, api_name: str, version: int | None = None) -> int:
        """The version a request will use: the highest both sides speak when
        `version` is None, else `version` after checking both sides speak it."""
        api = get_api(api_name)
        ours = (api.min_version, api.max_version)
        theirs = self.api_versions.get(api.key)
        if theirs is None:
            raise IllegalArgumentError("broker {0}:{1} does not support {2}".format(self.host, self.port, api.name))
        lo, hi = max(ours[0], theirs[0]), min(ours[1], theirs[1])
        if version is None:
            if lo > hi:
                raise IllegalArgumentError(
                    "no common {0} version: fastkc v{1}-v{2}, broker v{3}-v{4}".format(api.name, *ours, *theirs)
                )
            return hi
        if not lo <= version <= hi:
            raise IllegalArgumentError(
                "{0} v{1} not spoken by both sides: fastkc v{2}-v{3}, broker v{4}-v{5}".format(
                    api.name, version, *ours, *theirs
                )
            )
        return version

    # --- requests ---------------------------------------------------------------
    def request(self, api_name: str, body: dict[str, Any], version: int | None = None) -> dict[str, Any]:
        """Send one request and return the decoded response body (a dict)."""
        version = self.pick_version(api_name, version)
        payload = self.request_raw(api_name, body, version=version)
        try:
            _, decoded = codec.decode_response(api_name, version, payload)
        except ProtocolParseError:
            # the stream is still in step, but a broker that sends a malformed
            # body cannot be trusted with the next request either
            self.close()
            raise
        return decoded

    def request_raw(self, api_name: str, body: dict[str, Any], version: int | None = None) -> bytes:
        """Send one request; return the whole response payload after the size
        prefix, response header included."""
        if self._sock is None:
            raise KafkaConnectionError("connection to {0}:{1} is closed".format(self.host, self.port))
        version = self.pick_version(api_name, version)
        if self._core.maybe_reauthenticate(time.monotonic()):
            # KIP-368: past the session's re-authentication point the broker
            # takes nothing but a new SASL exchange; it goes first
            self._run_until(lambda: self._core.ready, "SaslHandshake", None)
        outcome: list[tuple[bytes, BaseException | None]] = []
        self._core.send(api_name, body, lambda payload, error: outcome.append((payload, error)), version,
                        now=time.monotonic())
        self._run_until(lambda: outcome, api_name, version)
        payload, error = outcome[0]
        if error is not None:
            raise error
        try:
            codec.decode_response_header(api_name, version, payload)
        except ProtocolParseError:
            self.close()
            raise
        return payload

    def _run_until(self, done: Callable[[], object], api_name: str, version: int | None) -> None:
        """Move bytes between the socket and the core until done(); raise the
        core's error (the connection is then closed) when it fails first."""
        core = self._core
        while not done():
            sock = self._sock
            if core.state is ConnectionState.DISCONNECTED or sock is None:
                # (the socket goes only with the core's DISCONNECTED, which always names its error)
                raise core.last_error or KafkaConnectionError("connection to {0}:{1} is closed".format(
                    self.host, self.port))
            out = core.data_to_send()
            if out:
                try:
                    sock.sendall(out)
                except OSError as exc:
                    core.transport_lost(KafkaConnectionError("{0} v{1} to {2}:{3}: connection lost: {4}".format(
                        api_name, version, self.host, self.port, exc)), time.monotonic())
                    continue
                core.sent(len(out), time.monotonic())
            now = time.monotonic()
            deadline = core.next_deadline(now)
            wait = None if deadline is None else deadline - now
            if wait is not None and wait <= 0:
                core.tick(now)
                continue
            sock.settimeout(wait)
            try:
                data = sock.recv(_RECV)
            except TimeoutError:
                core.tick(time.monotonic())
                continue
            except OSError as exc:
                core.transport_lost(KafkaConnectionError("{0} v{1} to {2}:{3}: connection lost: {4}".format(
                    api_name, version, self.host, self.port, exc)), time.monotonic())
                continue
            if not data:
                awaited = core.oldest_in_flight()
                if awaited is not None:
                    api_name, version = awaited.api_name, awaited.version
                core.transport_lost(KafkaConnectionError(
                    "{0}:{1} closed the connection while {2} v{3} awaited its answer "
                    "(brokers do this on a request version they do not speak)".format(
                        self.host, self.port, api_name, version)), time.monotonic())
                continue
            for request, payload in core.receive(data, time.monotonic()):
                request.callback(payload, None)
        if core.state is ConnectionState.DISCONNECTED:
            # done() and failed at once: the bytes after the answer broke the
            # stream (an answer nobody asked for), so nothing more can be asked
            self._close_socket(None)
