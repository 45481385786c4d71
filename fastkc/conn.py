"""One broker connection: a non-blocking socket driven by the client's selector.

States (ConnectionState), changed only through `_set_state`, which allows the
legal transitions and raises IllegalStateError on any other:

    DISCONNECTED → CONNECTING → [HANDSHAKE (TLS)] → API_VERSIONS → [AUTHENTICATING (SASL)] → READY
    READY ⇄ REAUTHENTICATING (KIP-368, SASL only)
    any state → DISCONNECTED (failure or close)

ApiVersions comes before SASL, as in the Java client: a broker answers it
unauthenticated, and its answer picks the SaslHandshake/SaslAuthenticate
versions.

The connection does no blocking I/O and has no thread. The client's selector
says when the socket is readable or writable and calls `on_writable` /
`on_readable`; `check_timeouts` fails a request that waited longer than
request_timeout_ms. Requests are size-prefixed as fastkc.protocol.framing frames them, carry
increasing correlation ids, and at most max_in_flight_requests_per_connection
await answers at once; Kafka answers in order on one connection, so the
oldest in-flight request is the one the next frame must answer.

A request's callback is called as callback(payload, error): the response
payload (response header included; the caller decodes the body, so the Fetch
response goes to the compiled parser untouched) or an error and None. When the
connection fails every in-flight request gets the error. After a failure the
next connect waits reconnect_backoff_ms doubled per consecutive failure, up to
reconnect_backoff_max_ms, with ±20 % jitter so clients do not reconnect in
lockstep; each attempt uses the next resolved address of the host.

Every phase is bounded by request_timeout_ms: the TCP connect and the TLS
handshake together by one deadline, ApiVersions and each SASL step by their
request's own deadline (a broker that drips bytes does not extend it). A
frame is never allocated on the broker's word alone: its announced size must
fit the phase (HANDSHAKE_MAX_FRAME before READY — no ApiVersions or SASL
answer comes near it — and receive_message_max_bytes after), and its buffer
grows with the bytes that really arrive (FIRST_FRAME_CHUNK, then ×4), so a
broker that announces 90 MB and stalls costs one chunk, not 90 MB. A TLS
handshake the peer's certificate (or protocol) makes impossible fails with
the non-retriable SslAuthenticationError; so does a TLS alert from the broker
before READY (TLS 1.3 refuses a client certificate after the client's side of
the handshake is done: `_tls_refusal`).

Re-authentication (KIP-368). A broker with connections.max.reauth.ms (or a
credential that expires, OAUTHBEARER) answers the last SaslAuthenticate (v1+)
with session_lifetime_ms; past that lifetime it closes the connection at the
next request that is not a re-authentication (Kafka's SocketServer checks the
session on every request it reads). So the connection re-authenticates at a
random 85-95 % of the lifetime, as the Java client does (the spread keeps a
client's connections from re-authenticating in lockstep): `next_deadline()`
includes that moment, so the client's select wakes up even for an idle
connection, and `check_timeouts()` starts it. READY → REAUTHENTICATING sends a
new SaslHandshake and SaslAuthenticate exchange, from a fresh exchange object
(an OAUTHBEARER token provider is asked again), on the same socket. While
REAUTHENTICATING `can_send()` is false: the broker reads nothing but the
exchange until it completes (it fails any other request), so callers wait,
they are not failed. Requests sent before it may still be in flight (a
Fetch long-poll): Kafka answers in order on one connection, so their answers
arrive before the exchange's and go to their callbacks as usual; each
request keeps its own deadline, and an exchange step queued behind them gets
request_timeout_ms from when it reaches the head of the queue (the broker
reads it only then: a held JoinGroup must not time it out). Success returns to
READY (reauthentications += 1); a refusal fails the connection with the typed
error (reauth_failed tells the client that this connection had been
authenticated before, so it reconnects instead of raising at once; a refusal
on the new connection's authentication then reaches the application).
Session lifetime 0 or absent (a broker without re-authentication, or
SaslAuthenticate v0): nothing is scheduled.
"""
import collections
import enum
import errno
import logging
import os
import random
import socket
import ssl
import time

from fastkc.errors import (
    CorrelationIdError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    NodeNotReadyError,
    ProtocolParseError,
    SslAuthenticationError,
    TooManyInFlightRequests,
    UnsupportedSaslMechanismError,
    for_code,
)
from fastkc import auth
from fastkc.protocol import codec
from fastkc.protocol.messages import API_VERSIONS, get_api

log = logging.getLogger(__name__)

try:  # the compiled core resizes without zero-filling; the twin backend has no network hot path to protect
    from fastkc._core._fetch import grow_bytearray as _grow_bytearray
except ImportError:  # pragma: no cover - without the compiled core
    _grow_bytearray = None

_UNSUPPORTED_VERSION = 35

#: The largest frame accepted before READY. ApiVersions answers are a few KB
#: and SASL tokens smaller still; Kafka's own broker caps what it reads before
#: authentication at 512 KB (sasl.server.max.receive.size). A larger size
#: means the peer is not a Kafka broker (an HTTP server's "HTTP" reads as
#: 1.2 GB) or is hostile: fail at once instead of buffering.
HANDSHAKE_MAX_FRAME = 1 << 20
#: How often the poll loop looks at a SASL step computed on another thread
#: (auth.PendingStep); such steps are rare (GSSAPI's first), and 10 ms is
#: well below a KDC round trip.
PENDING_STEP_POLL_S = 0.01
#: The first allocation for a frame's payload; it grows ×4 as bytes arrive.
FIRST_FRAME_CHUNK = 1 << 20


def _is_tls_alert(exc):
    """An alert the peer sent (OpenSSL reasons SSLV3_ALERT_*, TLSV1_ALERT_*,
    TLSV13_ALERT_*), as opposed to a local error or a plain EOF."""
    return isinstance(exc, ssl.SSLError) and "ALERT" in str(getattr(exc, "reason", None) or "")


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKE = "handshake"
    API_VERSIONS = "api_versions"
    AUTHENTICATING = "authenticating"
    READY = "ready"
    REAUTHENTICATING = "reauthenticating"


_S = ConnectionState
_LEGAL_TRANSITIONS = {
    _S.DISCONNECTED: {_S.CONNECTING},
    _S.CONNECTING: {_S.HANDSHAKE, _S.API_VERSIONS, _S.DISCONNECTED},
    _S.HANDSHAKE: {_S.API_VERSIONS, _S.DISCONNECTED},
    _S.API_VERSIONS: {_S.AUTHENTICATING, _S.READY, _S.DISCONNECTED},
    _S.AUTHENTICATING: {_S.READY, _S.DISCONNECTED},
    _S.READY: {_S.REAUTHENTICATING, _S.DISCONNECTED},
    _S.REAUTHENTICATING: {_S.READY, _S.DISCONNECTED},
}

#: Where in the session lifetime re-authentication starts: uniformly in this
#: window, as the Java client (SaslClientAuthenticator) does.
REAUTH_WINDOW = (0.85, 0.95)

#: What a connection reports to its owner's counters (on_event):
#: "reauthenticated", "reauth_failed" (any failure while re-authenticating),
#: "lost" (an authenticated connection failed: the broker closed it, a
#: timeout, ...; a close() asked for is not counted).
EVENTS = ("reauthenticated", "reauth_failed", "lost")


class InFlightRequest:
    __slots__ = ("correlation_id", "api_name", "version", "callback", "deadline", "sent_at", "internal")

    def __init__(self, correlation_id, api_name, version, callback, deadline, sent_at, internal=False):
        self.correlation_id = correlation_id
        self.api_name = api_name
        self.version = version
        self.callback = callback
        self.deadline = deadline
        self.sent_at = sent_at
        #: the connection's own step (ApiVersions, SASL): its answer drives
        #: the state machine at once instead of going back to a caller
        self.internal = internal


def _deadline_of(request):
    return request.deadline


def pick_version(api_name, broker_versions):
    """The highest version of `api_name` both fastkc and the broker speak, or
    None when there is none. broker_versions: {api_key: (min, max)}."""
    api = get_api(api_name)
    theirs = broker_versions.get(api.key)
    if theirs is None:
        return None
    lo, hi = max(api.min_version, theirs[0]), min(api.max_version, theirs[1])
    return hi if lo <= hi else None


class BrokerConnection:
    #: KIP-368 re-authentication on/off. Only tests switch it off (the
    #: negative control: the broker must then close the connection at expiry).
    _reauth_enabled = True

    def __init__(self, host, port, config, *, node_id=None, ssl_context=None, clock=time.monotonic,
                 on_ready=None, on_parse_error=None, on_event=None):
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config
        self._ssl_context = ssl_context
        self._clock = clock
        self._on_ready = on_ready
        #: on_parse_error(conn, api_name, exc) -> error: the client's parse
        #: failure policy (it fails the connection); None: fail with exc
        self._on_parse_error = on_parse_error
        #: on_event(conn, kind), kind in EVENTS: the client's counters
        self._on_event = on_event
        self.state = ConnectionState.DISCONNECTED
        self.sock = None
        #: api_key -> (min, max) the broker speaks, from ApiVersions
        self.api_versions = {}
        #: api name -> the version requests use (highest common), filled when READY
        self.versions = {}
        self.last_error = None
        self.failures = 0
        self._next_attempt = 0.0
        self._addresses = []
        self._address_index = 0
        self._next_correlation_id = 0
        self._in_flight = collections.deque()
        self._out = bytearray()
        self._head = bytearray(4)
        self._head_view = memoryview(self._head)
        self._head_got = 0
        self._body = self._body_view = None
        self._sasl = None
        self._last_activity = clock()
        #: monotonic time at which to re-authenticate (KIP-368), None: never
        self._reauth_at = None
        #: the broker's last session_lifetime_ms (0: no re-authentication)
        self.session_lifetime_ms = 0
        #: successful re-authentications of this connection, over its reconnects
        self.reauthentications = 0
        self.failed_reauthentications = 0
        #: the last failure happened while re-authenticating (the connection
        #: was authenticated once): the client reconnects rather than raise
        self.reauth_failed = False
        self._reauth_started = 0.0
        #: authenticated connections lost to a failure (not a requested close)
        self.lost = 0

    def __repr__(self):
        return "<BrokerConnection node={0} {1}:{2} {3}>".format(self.node_id, self.host, self.port, self.state.value)

    # --- state ------------------------------------------------------------------
    def _set_state(self, new_state):
        if new_state not in _LEGAL_TRANSITIONS[self.state]:
            raise IllegalStateError("connection {0}:{1}: illegal transition {2} -> {3}".format(
                self.host, self.port, self.state.name, new_state.name))
        self.state = new_state

    @property
    def ready(self):
        return self.state is ConnectionState.READY

    @property
    def established(self):
        """Connected and authenticated, possibly re-authenticating right now
        (requests wait a moment; the connection is not lost)."""
        return self.state in (ConnectionState.READY, ConnectionState.REAUTHENTICATING)

    @property
    def connecting(self):
        return self.state not in (ConnectionState.READY, ConnectionState.REAUTHENTICATING,
                                  ConnectionState.DISCONNECTED)

    def in_flight_count(self):
        return len(self._in_flight)

    def can_send(self):
        return self.ready and len(self._in_flight) < self.config["max_in_flight_requests_per_connection"]

    def backoff_remaining(self, now=None):
        now = self._clock() if now is None else now
        return max(0.0, self._next_attempt - now)

    def wants_write(self):
        return self.state is ConnectionState.CONNECTING or bool(self._out) or (
            self.state is ConnectionState.HANDSHAKE and self._handshake_wants_write)

    # --- connecting ---------------------------------------------------------------
    def connect(self):
        """Start a connection attempt if DISCONNECTED and the backoff allows.
        Returns True when an attempt is under way (or the connection is up)."""
        if self.state is not ConnectionState.DISCONNECTED:
            return True
        now = self._clock()
        if now < self._next_attempt:
            return False
        if not self._addresses or self._address_index >= len(self._addresses):
            try:
                self._addresses = self._resolve()
            except OSError as exc:
                self._fail(KafkaConnectionError("cannot resolve {0}:{1}: {2}".format(self.host, self.port, exc)),
                           transition=False)
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
            self._fail(KafkaConnectionError("connect to {0}:{1} failed: {2}".format(self.host, self.port, exc)),
                       transition=False)
            return False
        self.sock = sock
        self._head = bytearray(4)
        self._head_view = memoryview(self._head)
        self._head_got = 0
        self._body = self._body_view = None
        self._out = bytearray()
        self._reauth_at = None
        self.reauth_failed = False
        self._set_state(ConnectionState.CONNECTING)
        self._connect_deadline = now + self.config["request_timeout_ms"] / 1000.0
        self._last_activity = now
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            self._fail(KafkaConnectionError("connect to {0}:{1} ({2}) failed: {3}".format(
                self.host, self.port, address[0], os.strerror(code))))
            return False
        return True

    def _resolve(self):
        # getaddrinfo would take port 70000 as 4464: an address from the wire
        # (Metadata, FindCoordinator) is checked here, whoever passed it on
        if not self.host or not isinstance(self.port, int) or not 0 < self.port < 65536:
            raise OSError("not a usable broker address")
        infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
        if not infos:
            raise OSError("no addresses")
        return infos

    def _tcp_connected(self):
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._fail(KafkaConnectionError("connect to {0}:{1} failed: {2}".format(
                self.host, self.port, os.strerror(code))))
            return
        if self._ssl_context is not None:
            try:
                # The name checked against the certificate, without a
                # trailing dot (an FQDN's "host." names the same host), as kafka-python does.
                self.sock = self._ssl_context.wrap_socket(
                    self.sock, server_hostname=self.host.rstrip("."), do_handshake_on_connect=False)
            except (ssl.SSLError, OSError) as exc:
                self._fail(KafkaConnectionError("TLS setup with {0}:{1} failed: {2}".format(self.host, self.port, exc)))
                return
            self._set_state(ConnectionState.HANDSHAKE)
            self._handshake_wants_write = True
            self._tls_handshake()
        else:
            self._start_api_versions()

    _handshake_wants_write = False

    def _tls_handshake(self):
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._handshake_wants_write = False
            return
        except ssl.SSLWantWriteError:
            self._handshake_wants_write = True
            return
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ssl.SSLSyscallError) as exc:
            # the peer went away mid-handshake: a connection failure, retried
            self._fail(KafkaConnectionError("TLS handshake with {0}:{1}: connection closed: {2}".format(
                self.host, self.port, exc)))
            return
        except ssl.SSLError as exc:
            # certificate verification, no common protocol or cipher: fatal
            self._fail(SslAuthenticationError("TLS handshake with {0}:{1} failed: {2}".format(
                self.host, self.port, exc)))
            return
        except OSError as exc:
            self._fail(KafkaConnectionError("TLS handshake with {0}:{1} failed: {2}".format(self.host, self.port, exc)))
            return
        self._handshake_wants_write = False
        self._start_api_versions()

    def _tls_refusal(self, exc):
        """SslAuthenticationError if `exc` is the broker refusing the TLS
        session, else None. With TLS 1.3 the client's side of the handshake
        ends before the server has checked the client's certificate, so a
        broker with ssl.client.auth=required answers a missing or untrusted
        one with an alert on the first read or write after the handshake
        (Kafka 4.3 sends "bad certificate"). Before READY that alert is the
        handshake's verdict and no retry changes it: fatal, as the Java
        client's SslAuthenticationException, instead of reconnecting until
        bootstrap_timeout_ms. A closed socket or EOF stays a retriable
        connection error; so does anything once READY."""
        if self.state not in (ConnectionState.API_VERSIONS, ConnectionState.AUTHENTICATING):
            return None
        if not _is_tls_alert(exc) and isinstance(self.sock, ssl.SSLSocket):
            # A send can fail first (EOF: the broker closed right after its
            # alert); the alert is then still waiting in the socket, ahead of
            # the close. One read surfaces it; the connection is failing anyway.
            try:
                self.sock.recv(1)
            except ssl.SSLError as pending:
                if _is_tls_alert(pending):
                    exc = pending
            except OSError:
                pass
        if _is_tls_alert(exc):
            return SslAuthenticationError("TLS session with {0}:{1} refused by the broker: {2}".format(
                self.host, self.port, exc))
        return None

    def _start_api_versions(self, version=None):
        if self.state is not ConnectionState.API_VERSIONS:
            self._set_state(ConnectionState.API_VERSIONS)
        version = API_VERSIONS.max_version if version is None else version
        body = {"client_software_name": "fastkc", "client_software_version": _fastkc_version()}
        self._send_now("ApiVersions", version, body, self._api_versions_answered, internal=True)

    def _api_versions_answered(self, payload, error):
        if error is not None:
            return  # the connection has already failed with it
        version = self._in_flight_version_of_last
        try:
            _, start = codec.decode_response_header("ApiVersions", version, payload)
            if len(payload) - start >= 2 and int.from_bytes(payload[start:start + 2], "big", signed=True) \
                    == _UNSUPPORTED_VERSION and version > 0:
                # Older brokers answer an ApiVersions version they do not know
                # in the v0 layout, with their own range: ask again within it.
                _, answer = codec.decode_response("ApiVersions", 0, payload)
                ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
                broker_max = ranges.get(API_VERSIONS.key, (0, 0))[1]
                self._start_api_versions(max(0, min(broker_max, version - 1)))
                return
            _, answer = codec.decode_response("ApiVersions", version, payload)
        except ProtocolParseError as exc:
            self._handshake_parse_failed(exc)
            return
        if answer["error_code"]:
            self._fail(for_code(answer["error_code"])("ApiVersions v{0} refused by {1}:{2}".format(
                version, self.host, self.port)))
            return
        self.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
        self.versions = {}
        protocol = self.config["security_protocol"]
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            self._set_state(ConnectionState.AUTHENTICATING)
            self._start_sasl()
        else:
            self._become_ready()

    def _handshake_parse_failed(self, exc):
        """An ApiVersions or SASL answer could not be parsed: the client's
        policy decides what the attempt failed with (last_error)."""
        if self._on_parse_error is None:
            self._fail(exc)
            return
        self._on_parse_error(self, exc.api or "handshake", exc)

    def _become_ready(self):
        self._set_state(ConnectionState.READY)
        self.failures = 0
        self.last_error = None
        if self._on_ready is not None:
            self._on_ready(self)

    # --- SASL -----------------------------------------------------------------------
    def _event(self, kind):
        if self._on_event is not None:
            self._on_event(self, kind)

    def _reauthenticating(self):
        return self.state is ConnectionState.REAUTHENTICATING

    def _auth_failed(self, error):
        """The broker (or the mechanism) refused the exchange. During a
        re-authentication the connection had been authenticated: say so, so
        the client reconnects instead of raising at once."""
        if self._reauthenticating():
            self.reauth_failed = True
        self._fail(error)

    def _begin_reauthentication(self):
        """READY → REAUTHENTICATING: a new SaslHandshake + SaslAuthenticate
        exchange on this socket, behind whatever is in flight (the broker
        reads it after answering those)."""
        self._reauth_at = None
        self._set_state(ConnectionState.REAUTHENTICATING)
        self._reauth_started = self._clock()
        log.debug("%r re-authenticating with %s (session lifetime %d ms, %d requests in flight)", self,
                  self.config["sasl_mechanism"], self.session_lifetime_ms, len(self._in_flight))
        self._start_sasl()

    def _schedule_reauthentication(self, lifetime_ms):
        """Plan the next re-authentication from the broker's session lifetime,
        counted from when the last SaslAuthenticate left (before the broker
        started the session's clock, so the margin only grows)."""
        self.session_lifetime_ms = lifetime_ms or 0
        if self.session_lifetime_ms <= 0:
            self._reauth_at = None
            return
        fraction = random.uniform(*REAUTH_WINDOW)
        self._reauth_at = self._last_sasl_sent + self.session_lifetime_ms * fraction / 1000.0

    def reauthentication_due_in(self, now=None):
        """Seconds until this connection re-authenticates, or None."""
        if self._reauth_at is None:
            return None
        now = self._clock() if now is None else now
        return self._reauth_at - now

    _last_sasl_sent = 0.0

    def _start_sasl(self):
        mechanism = self.config["sasl_mechanism"]
        version = pick_version("SaslHandshake", self.api_versions)
        if version is None:
            self._fail(UnsupportedSaslMechanismError("{0}:{1} does not speak SaslHandshake".format(self.host, self.port)))
            return
        try:
            self._sasl = auth.new_exchange(self.config, self.host)
        except KafkaError as exc:
            self._auth_failed(exc)
            return
        self._send_now("SaslHandshake", version, {"mechanism": mechanism}, self._sasl_handshake_answered,
                       internal=True)

    def _sasl_handshake_answered(self, payload, error):
        if error is not None:
            return
        try:
            _, answer = codec.decode_response("SaslHandshake", self._in_flight_version_of_last, payload)
        except ProtocolParseError as exc:
            self._handshake_parse_failed(exc)
            return
        if answer["error_code"]:
            what = " for re-authentication" if self._reauthenticating() else ""
            message = "SASL mechanism {0} refused by {1}:{2}{3} (it offers {4})".format(
                self.config["sasl_mechanism"], self.host, self.port, what, answer["mechanisms"])
            self._auth_failed(for_code(answer["error_code"])(message))
            return
        try:
            first = self._sasl.first_message()
        except KafkaError as exc:
            self._auth_failed(exc)
            return
        self._sasl_step(first)

    def _sasl_step(self, message):
        """Send a step's message, or, for a step still being computed off
        this thread (auth.PendingStep: GSSAPI asking the KDC), keep it until
        check_timeouts() finds it done or past request_timeout_ms."""
        if isinstance(message, auth.PendingStep):
            self._sasl_pending = message
            self._sasl_pending_deadline = self._clock() + self.config["request_timeout_ms"] / 1000.0
            self._check_pending_step(self._clock())
            return
        self._sasl_send(message)

    def _check_pending_step(self, now):
        pending = self._sasl_pending
        if pending is None:
            return
        if pending.done():
            self._sasl_pending = None
            try:
                message = pending.result()
            except KafkaError as exc:
                self._auth_failed(exc)
                return
            self._sasl_send(message)
        elif now > self._sasl_pending_deadline:
            self._sasl_pending = None
            self._auth_failed(pending.timeout_error())

    _sasl_pending = None
    _sasl_pending_deadline = 0.0

    def _sasl_send(self, auth_bytes):
        version = pick_version("SaslAuthenticate", self.api_versions)
        if version is None:
            self._fail(UnsupportedSaslMechanismError(
                "{0}:{1} does not speak SaslAuthenticate (pre-1.0 brokers are not supported)".format(self.host, self.port)))
            return
        self._last_sasl_sent = self._clock()
        self._send_now("SaslAuthenticate", version, {"auth_bytes": auth_bytes}, self._sasl_answered, internal=True)

    def _sasl_answered(self, payload, error):
        if error is not None:
            return
        try:
            _, answer = codec.decode_response("SaslAuthenticate", self._in_flight_version_of_last, payload)
        except ProtocolParseError as exc:
            self._handshake_parse_failed(exc)
            return
        if answer["error_code"]:
            self._auth_failed(for_code(answer["error_code"])("SASL {0} {1} with {2}:{3} failed: {4}".format(
                self.config["sasl_mechanism"], "re-authentication" if self._reauthenticating() else "authentication",
                self.host, self.port, answer["error_message"])))
            return
        try:
            reply = self._sasl.receive(answer["auth_bytes"])
        except KafkaError as exc:
            self._auth_failed(exc)
            return
        if reply is not None:
            self._sasl_step(reply)
            return
        self._sasl = None
        # the answer that completes the exchange carries the session lifetime (v1+; 0 in v0's default)
        self._schedule_reauthentication(answer["session_lifetime_ms"])
        if self._reauthenticating():
            self._set_state(ConnectionState.READY)
            self.reauthentications += 1
            log.debug("%r re-authenticated in %.0f ms (#%d; next in %s ms)", self,
                      (self._clock() - self._reauth_started) * 1000.0, self.reauthentications,
                      "{0:.0f}".format(self.reauthentication_due_in() * 1000.0) if self._reauth_at else "never")
            self._event("reauthenticated")
        else:
            self._become_ready()

    # --- sending ---------------------------------------------------------------------
    def send(self, api_name, body, callback, version=None, timeout_ms=None):
        """Queue one request; returns its correlation id. The callback runs
        from the client's poll with (payload, None) or (None, error).
        timeout_ms: this request's own timeout (JoinGroup, which the
        coordinator may hold for the rebalance timeout); request_timeout_ms
        when None."""
        if not self.ready:
            raise NodeNotReadyError("connection to {0}:{1} is {2}".format(self.host, self.port, self.state.value))
        if len(self._in_flight) >= self.config["max_in_flight_requests_per_connection"]:
            raise TooManyInFlightRequests("{0}:{1} already has {2} requests in flight".format(
                self.host, self.port, len(self._in_flight)))
        if version is None:
            version = self.version_for(api_name)
        return self._send_now(api_name, version, body, callback, timeout_ms)

    def version_for(self, api_name):
        version = self.versions.get(api_name)
        if version is None:
            version = pick_version(api_name, self.api_versions)
            if version is None:
                from fastkc.errors import IncompatibleBrokerVersion

                raise IncompatibleBrokerVersion("{0}:{1} speaks no {2} version fastkc knows".format(
                    self.host, self.port, api_name))
            self.versions[api_name] = version
        return version

    def _send_now(self, api_name, version, body, callback, timeout_ms=None, internal=False):
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        payload = codec.encode_request(api_name, version, body, correlation_id=correlation_id,
                                       client_id=self.config["client_id"])
        self._out += len(payload).to_bytes(4, "big")
        self._out += payload
        now = self._clock()
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = now + timeout_ms / 1000.0
        if internal and self._in_flight:
            # a re-authentication step queued behind callers' requests (a
            # JoinGroup the coordinator holds for the rebalance): the broker
            # reads it only after answering them, so its own timeout cannot
            # run out before theirs; it restarts when it reaches the head
            deadline = max(r.deadline for r in self._in_flight) + timeout_ms / 1000.0
        self._in_flight.append(InFlightRequest(correlation_id, api_name, version, callback, deadline, now, internal))
        self._flush()
        return correlation_id

    def _flush(self):
        if not self._out or self.sock is None:
            return
        try:
            sent = self.sock.send(self._out)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            return
        except OSError as exc:
            self._fail(self._tls_refusal(exc) or
                       KafkaConnectionError("send to {0}:{1} failed: {2}".format(self.host, self.port, exc)))
            return
        del self._out[:sent]
        self._last_activity = self._clock()

    # --- selector events ---------------------------------------------------------------
    def on_writable(self):
        if self.state is ConnectionState.CONNECTING:
            self._tcp_connected()
        elif self.state is ConnectionState.HANDSHAKE:
            self._tls_handshake()
        else:
            self._flush()

    def on_readable(self):
        """Read what the socket has; returns [(InFlightRequest, payload)] of the
        answers to caller requests (handshake answers are handled here)."""
        if self.state is ConnectionState.CONNECTING:
            self._tcp_connected()
            return []
        if self.state is ConnectionState.HANDSHAKE:
            self._tls_handshake()
            return []
        if self.sock is None:
            return []
        answered = []
        sock = self.sock
        while True:
            # Two reads per frame, straight into their final buffers: the
            # 4-byte size, then the whole payload into a bytearray of exactly
            # that size. No chunk is copied or joined; the Fetch parser and
            # the record decoder then work on this one buffer in place.
            try:
                if self._body is None:
                    n = sock.recv_into(self._head_view[self._head_got:])
                else:
                    if self._body_got == len(self._body):
                        self._grow_body()
                    n = sock.recv_into(self._body_view[self._body_got:])
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError as exc:
                self._fail(self._tls_refusal(exc) or KafkaConnectionError(
                    "receive from {0}:{1} failed: {2}".format(self.host, self.port, exc)))
                return answered
            if not n:
                self._fail(KafkaConnectionError("{0}:{1} closed the connection".format(self.host, self.port)))
                return answered
            if self._body is None:
                self._head_got += n
                if self._head_got < 4:
                    continue
                self._head_got = 0
                size = int.from_bytes(self._head, "big", signed=True)
                # the limit of what this frame answers: a Fetch that was in
                # flight when a re-authentication began may still be big
                expected = self._in_flight[0] if self._in_flight else None
                handshake = expected.internal if expected is not None else self.state is not ConnectionState.READY
                limit = HANDSHAKE_MAX_FRAME if handshake else self.config["receive_message_max_bytes"]
                if size < 0 or size > limit:
                    self._fail(KafkaProtocolError("frame size {0} from {1}:{2} is outside 0..{3}{4}".format(
                        size, self.host, self.port, limit,
                        "" if not handshake else " (a re-authentication answer)" if self._reauthenticating()
                        else " (before the connection is ready)")))
                    return answered
                self._body_size = size
                self._body = bytearray(min(size, FIRST_FRAME_CHUNK))
                self._body_view = memoryview(self._body)
                self._body_got = 0
                if size:
                    continue
            else:
                self._body_got += n
                if self._body_got < self._body_size:
                    continue
            payload = self._body
            self._body_view.release()
            self._body = self._body_view = None
            self._last_activity = self._clock()
            if not self._take_frame(payload, answered):
                return answered
        return answered

    _body_size = 0

    def _grow_body(self):
        """The frame's buffer is full but the frame is not: grow it ×4 (at
        most to the announced size), in place and unfilled (realloc remaps a
        large buffer's pages), so a big Fetch response costs about what one
        exact allocation did."""
        self._body_view.release()
        size = min(self._body_size, 4 * len(self._body))
        if _grow_bytearray is not None:
            _grow_bytearray(self._body, size)
        else:
            self._body += bytes(size - len(self._body))
        self._body_view = memoryview(self._body)

    def _take_frame(self, payload, answered):
        if not self._in_flight:
            self._fail(CorrelationIdError("{0}:{1} sent a response nobody asked for".format(self.host, self.port)))
            return False
        request = self._in_flight.popleft()
        got = int.from_bytes(payload[:4], "big", signed=True) if len(payload) >= 4 else None
        if got != request.correlation_id:
            self._fail(CorrelationIdError("{0}:{1}: {2} expected correlation id {3}, got {4}".format(
                self.host, self.port, request.api_name, request.correlation_id, got)), extra=[request])
            return False
        if self._in_flight and self._in_flight[0].internal:
            # a re-authentication step that waited behind this answer: the
            # broker starts on it now, its request timeout too
            head = self._in_flight[0]
            now = self._clock()
            head.deadline = min(head.deadline, now + self.config["request_timeout_ms"] / 1000.0)
            head.sent_at = now
        if not request.internal:
            # a caller's request (also one sent before a re-authentication
            # began): answered in order, its callback runs from the client
            answered.append((request, payload))
        else:
            # a handshake or authentication step: its callback drives the state machine now
            self._in_flight_version_of_last = request.version
            request.callback(payload, None)
            if self.state is ConnectionState.DISCONNECTED:
                return False
        return True

    _in_flight_version_of_last = 0

    def check_timeouts(self, now=None):
        """Fail the connection when its oldest request (or the connect) is
        overdue; start a re-authentication that is due."""
        now = self._clock() if now is None else now
        if self.state is ConnectionState.DISCONNECTED:
            return
        if self._sasl_pending is not None:
            self._check_pending_step(now)
            if self.state is ConnectionState.DISCONNECTED:
                return
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKE) and now > self._connect_deadline:
            self._fail(KafkaTimeoutError("connecting to {0}:{1} timed out".format(self.host, self.port)))
        elif self._in_flight:
            # requests may carry their own timeouts: the earliest deadline counts
            request = min(self._in_flight, key=_deadline_of)
            if now > request.deadline:
                self._fail(KafkaTimeoutError("{0} to {1}:{2}: no answer within {3:.0f} ms{4}".format(
                    request.api_name, self.host, self.port, (request.deadline - request.sent_at) * 1000.0,
                    " (re-authenticating)" if self._reauthenticating() else "")))
                return
        self.maybe_reauthenticate(now)

    def maybe_reauthenticate(self, now=None):
        """Start the re-authentication if it is due; True when one is under
        way. The client's poll calls it (through check_timeouts) when the
        deadline passes, and `KafkaClient.ready()` before every send: a
        thread that does not poll between its requests (the group member
        sleeps between heartbeats) re-authenticates before its next request,
        as the Java client does, instead of sending on an expired session
        (the broker accepts a re-authentication past expiry, never another
        request)."""
        if self.state is ConnectionState.READY and self._reauth_at is not None and self._reauth_enabled:
            now = self._clock() if now is None else now
            if now >= self._reauth_at:
                self._begin_reauthentication()
        return self.state is ConnectionState.REAUTHENTICATING

    def next_deadline(self):
        """When check_timeouts must next look (monotonic seconds), or None:
        a connect or request deadline, or a re-authentication that is due."""
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKE):
            return self._connect_deadline
        due = None
        if self._in_flight:
            due = min(r.deadline for r in self._in_flight)
        if self.state is ConnectionState.READY and self._reauth_at is not None and self._reauth_enabled:
            due = self._reauth_at if due is None else min(due, self._reauth_at)
        if self._sasl_pending is not None:
            # a step computed off this thread: look again soon (its thread
            # cannot wake the selector), and at its deadline at the latest
            soon = min(self._clock() + PENDING_STEP_POLL_S, self._sasl_pending_deadline)
            due = soon if due is None else min(due, soon)
        return due

    def idle_for(self, now=None):
        now = self._clock() if now is None else now
        return now - self._last_activity if not self._in_flight else 0.0

    # --- failure and close -------------------------------------------------------------
    def _fail(self, error, transition=True, extra=()):
        """Close the socket, fail every in-flight request with `error`, and
        schedule the next attempt with backoff."""
        self.last_error = error
        self.failures += 1
        if self._reauthenticating():
            self.failed_reauthentications += 1
            self._event("reauth_failed")
        if self.established:
            self.lost += 1
            self._event("lost")
        base = self.config["reconnect_backoff_ms"]
        ceiling = self.config["reconnect_backoff_max_ms"]
        backoff_ms = min(ceiling, base * (2 ** min(self.failures - 1, 30)))
        backoff_ms *= random.uniform(0.8, 1.2)
        self._next_attempt = self._clock() + min(backoff_ms, ceiling) / 1000.0
        log.debug("%r failed: %s (next attempt in %.0f ms)", self, error, backoff_ms)
        self._teardown(error, extra)

    def fail(self, error, backoff_failures=0):
        """Fail the connection with `error` (every in-flight request gets it)
        and back off before the next attempt, as for a lost connection; the
        backoff exponent is at least `backoff_failures` (the client's count of
        parse failures, which a successful reconnect does not reset)."""
        if self.state is ConnectionState.DISCONNECTED and self.sock is None:
            return
        self.failures = max(self.failures, backoff_failures - 1)
        self._fail(error)

    def close(self, error=None):
        """Close now (no backoff penalty); in-flight requests fail with `error`.
        With an error the close counts as a lost connection for the client
        (metadata refresh, fetch sessions reset); without one (idle, shutdown)
        it does not."""
        if error is not None:
            self.last_error = error
        self._teardown(error or KafkaConnectionError("connection to {0}:{1} closed".format(self.host, self.port)), ())

    def _teardown(self, error, extra):
        sock, self.sock = self.sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        if self.state is not ConnectionState.DISCONNECTED:
            self._set_state(ConnectionState.DISCONNECTED)
        self._out = bytearray()
        self._sasl = None
        self._sasl_pending = None
        self._reauth_at = None
        self._head_got = 0
        if self._body_view is not None:
            self._body_view.release()
        self._body = self._body_view = None
        pending = list(extra) + list(self._in_flight)
        self._in_flight.clear()
        for request in pending:
            if request.callback is not None:
                try:
                    request.callback(None, error)
                except Exception:  # one failing callback must not leave the others unfailed
                    log.exception("callback of %s failed", request.api_name)


def _fastkc_version():
    from fastkc import __version__

    return __version__
