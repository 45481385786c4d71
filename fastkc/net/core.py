"""One broker connection's protocol, with no I/O inside: `ConnectionCore`.

The core is a state machine in the sans-I/O style (h11, asyncpg's protocol,
`ssl.SSLObject` over `ssl.MemoryBIO`): it never touches a socket, a
selector, a thread or a clock. A driver owns the transport and the time and
feeds the core what happened; the core answers with bytes to send, request
callbacks and the next moment it must be looked at. Three drivers sit on it:
`fastkc.conn.BrokerConnection` (a non-blocking socket under KafkaClient's
selector), `fastkc.net.blocking.BlockingConnection` (one request at a time,
for tools) and `fastkc.net.aio.AioConnection` (an asyncio protocol).

The interface (`now` is the driver's monotonic clock in seconds):

    start_connecting(now)        DISCONNECTED → CONNECTING: the driver opens a transport
    transport_connected(now)     the transport is up: TLS handshake or ApiVersions starts
    receive(data, now)           bytes from the transport (ciphertext under TLS);
                                 returns [(InFlightRequest, payload)], the callers'
                                 answers in order, for the driver to call back
    get_buffer() / buffer_updated(n, now)
                                 the same without a copy (plaintext only: the driver
                                 reads straight into the frame's final buffer)
    data_to_send() / sent(n, now)
                                 what the transport must write (ciphertext under TLS),
                                 and how much of it was written
    send(api_name, body, callback, version=None, timeout_ms=None, now=...)
                                 a caller's request (READY only); its correlation id
    wants_output()               data_to_send() is not empty
    tick(now)                    timeouts, a due re-authentication, a SASL step
                                 computed on another thread (auth.PendingStep)
    next_deadline(now=None)      when tick() must run next (None: only on events)
    maybe_reauthenticate(now)    start a due KIP-368 exchange before a request
    transport_lost(error, now)   the transport failed or hit EOF: fail with `error`
    fail(error, now, backoff_failures=0), close(error=None)
    state, ready, established, tls, can_send(), in_flight_count(),
    oldest_in_flight(), version_for(api_name), backoff_remaining(now), retry_at(when),
    idle_for(now), last_error, api_versions, api_versions_response

Hooks, set by the driver: on_close(error) runs once the core is DISCONNECTED
and before in-flight callbacks are failed (the driver closes its transport
there, so a callback that reconnects finds it gone); on_ready(); on_event(kind)
(kind in EVENTS, the client's counters); on_parse_error(api_name, exc) (the
client's policy for an unparseable handshake answer; absent: fail with exc);
offload(work, timeout_error, name) (how a SASL first message that may wait
runs elsewhere; None: inline).

States (ConnectionState), changed only through `_set_state`, which allows the
transitions of LEGAL_TRANSITIONS and raises IllegalTransition (fastkc.state_machine) on any other:

    DISCONNECTED → CONNECTING → [HANDSHAKE (TLS)] → API_VERSIONS → [AUTHENTICATING (SASL)] → READY
    READY ⇄ REAUTHENTICATING (KIP-368, SASL only)
    any state → DISCONNECTED (failure or close)

ApiVersions comes before SASL, as in the Java client: a broker answers it
unauthenticated, and its answer picks the SaslHandshake/SaslAuthenticate
versions; a broker that does not speak our ApiVersions version answers in the
v0 layout with UNSUPPORTED_VERSION and its own range, and we ask again within it.

Requests are size-prefixed, carry increasing correlation ids, and at most
max_in_flight_requests_per_connection await answers at once; Kafka answers in
order on one connection, so the oldest in-flight request is the one the next
frame must answer. A caller's callback is called as callback(payload, error):
the response payload (response header included; the caller decodes the body,
so the Fetch response goes to the compiled parser untouched) or an error and
None. When the connection fails every in-flight request gets the error. After
a failure the next attempt waits reconnect_backoff_ms doubled per
consecutive failure, up to reconnect_backoff_max_ms, ±20 % jitter.

Every phase is bounded by request_timeout_ms: the transport's connect and the
TLS handshake together by one deadline, ApiVersions and each SASL step by
their request's own deadline (a broker that drips bytes does not extend it).
A frame is never allocated on the broker's word alone: its announced size
must fit the phase (HANDSHAKE_MAX_FRAME before READY and for a
re-authentication answer, receive_message_max_bytes after), and its buffer
grows with the bytes that really arrive (FIRST_FRAME_CHUNK, then ×4), so a
broker that announces 90 MB and stalls costs one chunk, not 90 MB.

TLS runs inside the core, through an `ssl.SSLObject` over two
`ssl.MemoryBIO`s: the driver moves ciphertext only. A handshake the peer's
certificate (or protocol) makes impossible fails with the non-retriable
SslAuthenticationError; so does a TLS alert from the broker before READY
(TLS 1.3 refuses a client certificate after the client's side of the
handshake is done, on the first record the client reads).

Re-authentication (KIP-368). A broker with connections.max.reauth.ms (or a
credential that expires, OAUTHBEARER) answers the last SaslAuthenticate (v1+)
with session_lifetime_ms; past that lifetime it closes the connection at the
next request that is not a re-authentication. So the core re-authenticates at
a random 85-95 % of the lifetime, as the Java client does (the spread keeps a
client's connections from re-authenticating in lockstep): `next_deadline()`
includes that moment, so even an idle connection's driver wakes up, and
`tick()` starts it. READY → REAUTHENTICATING sends a new SaslHandshake and
SaslAuthenticate exchange, from a fresh exchange object (an OAUTHBEARER token
provider is asked again). While REAUTHENTICATING `can_send()` is false: the
broker reads nothing but the exchange until it completes, so callers wait.
Requests sent before it may still be in flight (a Fetch long-poll): their
answers arrive before the exchange's and go to their callbacks as usual; an
exchange step queued behind them gets request_timeout_ms from when it reaches
the head of the queue (the broker reads it only then: a held JoinGroup must
not time it out). Success returns to READY; a refusal fails the connection
with the typed error (reauth_failed tells the client that this connection
had been authenticated, so it reconnects instead of raising at once).
"""
import collections
import enum
import logging
import random
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastkc import _backend, auth
from fastkc._version import __version__
from fastkc.errors import (
    CorrelationIdError,
    IncompatibleBrokerVersion,
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
from fastkc.protocol import codec
from fastkc.protocol.messages import API_VERSIONS, get_api
from fastkc.state_machine import StateHolder

log = logging.getLogger("fastkc.conn")

#: a caller's callback(payload, error)
Callback = Callable[[Any, BaseException | None], None]
#: what the driver collects: the callers' answered requests and their payloads
Answered = list[tuple["InFlightRequest", bytearray]]

# The compiled core resizes without zero-filling; the backend (fastkc._backend,
# the one importer of fastkc._core) offers it as grow_bytearray. Without it a
# frame's buffer grows zero-filled, which is only slower.
_grow_bytearray: Callable[[bytearray, int], None] | None = getattr(_backend, "grow_bytearray", None)

_UNSUPPORTED_VERSION = 35

#: The largest frame accepted before READY. ApiVersions answers are a few KB
#: and SASL tokens smaller still; Kafka's own broker caps what it reads before
#: authentication at 512 KB (sasl.server.max.receive.size). A larger size
#: means the peer is not a Kafka broker (an HTTP server's "HTTP" reads as
#: 1.2 GB) or is hostile: fail at once instead of buffering.
HANDSHAKE_MAX_FRAME = 1 << 20
#: How often a driver looks at a SASL step computed on another thread
#: (auth.PendingStep); such steps are rare (GSSAPI's first), and 10 ms is
#: well below a KDC round trip.
PENDING_STEP_POLL_S = 0.01
#: The first allocation for a frame's payload; it grows ×4 as bytes arrive.
FIRST_FRAME_CHUNK = 1 << 20
#: Ciphertext read out of the TLS layer per call (one TLS record is ≤ 16 KB).
_TLS_READ = 1 << 17

#: Mechanisms whose first message is a computation, never a wait.
_INSTANT_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: Where in the session lifetime re-authentication starts: uniformly in this
#: window, as the Java client (SaslClientAuthenticator) does.
REAUTH_WINDOW = (0.85, 0.95)

#: What a connection reports to its owner's counters (on_event):
#: "reauthenticated", "reauth_failed" (any failure while re-authenticating),
#: "lost" (an authenticated connection failed: the broker closed it, a
#: timeout, ...; a close() asked for is not counted).
EVENTS = ("reauthenticated", "reauth_failed", "lost")


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKE = "handshake"
    API_VERSIONS = "api_versions"
    AUTHENTICATING = "authenticating"
    READY = "ready"
    REAUTHENTICATING = "reauthenticating"


_S = ConnectionState
LEGAL_TRANSITIONS = {
    _S.DISCONNECTED: {_S.CONNECTING},
    _S.CONNECTING: {_S.HANDSHAKE, _S.API_VERSIONS, _S.DISCONNECTED},
    _S.HANDSHAKE: {_S.API_VERSIONS, _S.DISCONNECTED},
    _S.API_VERSIONS: {_S.AUTHENTICATING, _S.READY, _S.DISCONNECTED},
    _S.AUTHENTICATING: {_S.READY, _S.DISCONNECTED},
    _S.READY: {_S.REAUTHENTICATING, _S.DISCONNECTED},
    _S.REAUTHENTICATING: {_S.READY, _S.DISCONNECTED},
}


def is_tls_alert(exc: BaseException) -> bool:
    """An alert the peer sent (OpenSSL reasons SSLV3_ALERT_*, TLSV1_ALERT_*,
    TLSV13_ALERT_*), as opposed to a local error or a plain EOF."""
    return isinstance(exc, ssl.SSLError) and "ALERT" in str(getattr(exc, "reason", None) or "")


class InFlightRequest:
    __slots__ = ("correlation_id", "api_name", "version", "callback", "deadline", "sent_at", "internal")

    def __init__(self, correlation_id: int, api_name: str, version: int, callback: Any, deadline: float,
                 sent_at: float, internal: bool = False) -> None:
        self.correlation_id = correlation_id
        self.api_name = api_name
        self.version = version
        #: a caller's callback(payload, error); for the core's own steps
        #: (internal) a method called with (request, payload)
        self.callback = callback
        self.deadline = deadline
        self.sent_at = sent_at
        #: the connection's own step (ApiVersions, SASL): its answer drives
        #: the state machine at once instead of going back to a caller
        self.internal = internal


def _deadline_of(request: InFlightRequest) -> float:
    return request.deadline


def pick_version(api_name: str, broker_versions: Mapping[int, tuple[int, int]]) -> int | None:
    """The highest version of `api_name` both fastkc and the broker speak, or
    None when there is none. broker_versions: {api_key: (min, max)}."""
    api = get_api(api_name)
    theirs = broker_versions.get(api.key)
    if theirs is None:
        return None
    lo, hi = max(api.min_version, theirs[0]), min(api.max_version, theirs[1])
    return hi if lo <= hi else None


def _fastkc_version() -> str:
    return __version__


class ConnectionCore(StateHolder[ConnectionState]):
    """See the module docstring. `config` holds kafka-python's keys:
    client_id, request_timeout_ms, max_in_flight_requests_per_connection,
    receive_message_max_bytes, security_protocol, reconnect_backoff_ms,
    reconnect_backoff_max_ms, and the sasl_* keys when SASL is on.
    `ssl_context` set: TLS over the transport."""

    #: offload(work, timeout_error, name) -> an auth.PendingStep computing
    #: work() elsewhere. Set by a driver that must not wait (asyncio:
    #: auth.PendingStep itself), it runs a SASL mechanism's first message
    #: that may wait on a third party (all but _INSTANT_MECHANISMS: an
    #: OAUTHBEARER token provider may call HTTP) off the driver's thread;
    #: None: inline, kafka-python's behaviour. The core starts no thread.
    # (the work may hand back a PendingStep itself: GSSAPI's first step)
    offload: Callable[[Callable[[], Any], Callable[[], BaseException], str], auth.PendingStep] | None = None
    #: KIP-368 re-authentication on/off. Only tests switch it off (the
    #: negative control: the broker must then close the connection at expiry).
    _reauth_enabled = True
    _LEGAL = LEGAL_TRANSITIONS

    def __init__(self, host: str, port: int, config: Mapping[str, Any], *,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self.config = config
        self._ssl_context = ssl_context
        self.on_close: Callable[[BaseException | None], None] | None = None
        self.on_ready: Callable[[], None] | None = None
        self.on_event: Callable[[str], None] | None = None
        self.on_parse_error: Callable[[str, ProtocolParseError], object] | None = None
        self._machine_name = "connection {0}:{1}".format(host, port)
        self._init_state(ConnectionState.DISCONNECTED)
        #: api_key -> (min, max) the broker speaks, from ApiVersions
        self.api_versions: dict[int, tuple[int, int]] = {}
        #: the decoded ApiVersions answer (tools read the broker's features)
        self.api_versions_response: dict[str, Any] | None = None
        #: api name -> the version requests use (highest common), filled lazily
        self.versions: dict[str, int] = {}
        self.last_error: BaseException | None = None
        self.failures = 0
        #: the driver's clock reading before which no new attempt starts
        self.next_attempt = 0.0
        self._now = 0.0
        self.last_activity = 0.0
        self._next_correlation_id = 0
        self._in_flight: collections.deque[InFlightRequest] = collections.deque()
        self._out = bytearray()
        self._body_view: memoryview | None = None
        self._reset_frame()
        self._connect_deadline = 0.0
        self._tls: ssl.SSLObject | None = None
        self._tls_in: ssl.MemoryBIO | None = None
        self._tls_out: ssl.MemoryBIO | None = None
        self._sasl: auth.Exchange | None = None
        self._sasl_pending: auth.PendingStep | None = None
        self._sasl_pending_deadline = 0.0
        self._last_sasl_sent = 0.0
        #: the driver's clock reading at which to re-authenticate (KIP-368), None: never
        self._reauth_at: float | None = None
        self._reauth_started = 0.0
        #: the broker's last session_lifetime_ms (0: no re-authentication)
        self.session_lifetime_ms = 0
        self.reauthentications = 0
        self.failed_reauthentications = 0
        #: the last failure happened while re-authenticating (the connection
        #: was authenticated once): the client reconnects rather than raise
        self.reauth_failed = False
        #: authenticated connections lost to a failure (not a requested close)
        self.lost = 0
        #: what the last of those failed with (last_error is cleared by a
        #: reconnect; this stays, so a count of losses can say why)
        self.last_loss: BaseException | None = None

    def __repr__(self) -> str:
        return "<ConnectionCore {0}:{1} {2}>".format(self.host, self.port, self.state.value)

    # --- state ------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.state is ConnectionState.READY

    @property
    def established(self) -> bool:
        """Connected and authenticated, possibly re-authenticating right now."""
        return self.state in (ConnectionState.READY, ConnectionState.REAUTHENTICATING)

    @property
    def connecting(self) -> bool:
        return self.state not in (ConnectionState.READY, ConnectionState.REAUTHENTICATING,
                                  ConnectionState.DISCONNECTED)

    @property
    def tls(self) -> bool:
        """True when the transport carries TLS records (receive() wants
        ciphertext; get_buffer() is not for this connection)."""
        return self._ssl_context is not None

    def in_flight_count(self) -> int:
        return len(self._in_flight)

    def oldest_in_flight(self) -> InFlightRequest | None:
        """The request the next frame must answer (its api_name, version), or None."""
        return self._in_flight[0] if self._in_flight else None

    def can_send(self) -> bool:
        return self.ready and len(self._in_flight) < self.config["max_in_flight_requests_per_connection"]

    def backoff_remaining(self, now: float) -> float:
        return max(0.0, self.next_attempt - now)

    def retry_at(self, when: float) -> None:
        """Let the next attempt start no later than `when` (the driver's
        clock), ending the backoff early: the cluster policy's word for a
        broker that metadata names leader of partitions someone waits for.
        The failure count stays: if that attempt fails too, the backoff
        after it is as long as it would have been."""
        self.next_attempt = min(self.next_attempt, when)

    def idle_for(self, now: float) -> float:
        return now - self.last_activity if not self._in_flight else 0.0

    def _reauthenticating(self) -> bool:
        return self.state is ConnectionState.REAUTHENTICATING

    def _in_state(self, state: ConnectionState) -> bool:
        # a method, not `self.state is ...` inline, where a step just taken
        # may have changed the state (mypy would keep the older narrowing)
        return self.state is state

    def _disconnected(self) -> bool:
        return self.state is ConnectionState.DISCONNECTED

    def _event(self, kind: str) -> None:
        if self.on_event is not None:
            self.on_event(kind)

    # --- connecting ---------------------------------------------------------------
    def start_connecting(self, now: float) -> None:
        """DISCONNECTED → CONNECTING: the driver is opening a transport. The
        connect (and TLS handshake) deadline starts now."""
        self._now = now
        self._set_state(ConnectionState.CONNECTING)
        self._reset_frame()
        self._out = bytearray()
        self._reauth_at = None
        self.reauth_failed = False
        self._connect_deadline = now + self.config["request_timeout_ms"] / 1000.0
        self.last_activity = now

    def transport_connected(self, now: float) -> None:
        """The transport is up: start the TLS handshake, or ApiVersions."""
        self._now = now
        if self._ssl_context is None:
            self._start_api_versions()
            return
        self._tls_in = tls_in = ssl.MemoryBIO()
        self._tls_out = tls_out = ssl.MemoryBIO()
        try:
            # The name checked against the certificate, without a trailing
            # dot (an FQDN's "host." names the same host), as kafka-python does.
            self._tls = self._ssl_context.wrap_bio(tls_in, tls_out, server_hostname=self.host.rstrip("."))
        except (ssl.SSLError, OSError, ValueError) as exc:
            self._fail(KafkaConnectionError("TLS setup with {0}:{1} failed: {2}".format(self.host, self.port, exc)))
            return
        self._set_state(ConnectionState.HANDSHAKE)
        self._tls_handshake()

    def _tls_handshake(self) -> None:
        assert self._tls is not None  # HANDSHAKE: transport_connected() made it
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            self._drain_tls_output()
            return
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ssl.SSLSyscallError) as exc:
            # the peer went away mid-handshake: a connection failure, retried
            self._fail(KafkaConnectionError("TLS handshake with {0}:{1}: connection closed: {2}".format(
                self.host, self.port, exc)))
            return
        except ssl.SSLError as exc:
            # certificate verification, no common protocol or cipher: fatal
            self._drain_tls_output()  # the alert we send tells the broker why
            self._fail(SslAuthenticationError("TLS handshake with {0}:{1} failed: {2}".format(
                self.host, self.port, exc)))
            return
        self._drain_tls_output()
        self._start_api_versions()

    def _drain_tls_output(self) -> None:
        if self._tls_out is not None and self._tls_out.pending:
            self._out += self._tls_out.read()

    def _emit(self, data: bytes) -> None:
        if self._tls is None or self._tls_out is None:
            self._out += data
            return
        try:
            self._tls.write(data)
        except ssl.SSLError as exc:  # the session is over (the peer's close_notify, an alert)
            self._fail(self._tls_refusal(exc) or KafkaConnectionError("send to {0}:{1} failed: {2}".format(
                self.host, self.port, exc)))
            return
        self._out += self._tls_out.read()

    def _start_api_versions(self, version: int | None = None) -> None:
        if self.state is not ConnectionState.API_VERSIONS:
            self._set_state(ConnectionState.API_VERSIONS)
        version = API_VERSIONS.max_version if version is None else version
        body: dict[str, Any] = {"client_software_name": "fastkc", "client_software_version": _fastkc_version()}
        self._send_now("ApiVersions", version, body, self._api_versions_answered, internal=True)

    def _api_versions_answered(self, request: InFlightRequest, payload: bytearray) -> None:
        version = request.version
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
        self.api_versions_response = answer
        self.versions = {}
        if self.config["security_protocol"] in ("SASL_PLAINTEXT", "SASL_SSL"):
            self._set_state(ConnectionState.AUTHENTICATING)
            self._start_sasl()
        else:
            self._become_ready()

    def _handshake_parse_failed(self, exc: ProtocolParseError) -> None:
        """An ApiVersions or SASL answer could not be parsed: the owner's
        policy decides what the attempt failed with (last_error)."""
        if self.on_parse_error is None:
            self._fail(exc)
            return
        self.on_parse_error(exc.api or "handshake", exc)

    def _become_ready(self) -> None:
        self._set_state(ConnectionState.READY)
        self.failures = 0
        self.last_error = None
        if self.on_ready is not None:
            self.on_ready()

    # --- SASL -----------------------------------------------------------------------
    def _auth_failed(self, error: BaseException) -> None:
        """The broker (or the mechanism) refused the exchange. During a
        re-authentication the connection had been authenticated: say so, so
        the client reconnects instead of raising at once."""
        if self._reauthenticating():
            self.reauth_failed = True
        self._fail(error)

    def _begin_reauthentication(self) -> None:
        """READY → REAUTHENTICATING: a new SaslHandshake + SaslAuthenticate
        exchange on this transport, behind whatever is in flight (the broker
        reads it after answering those)."""
        self._reauth_at = None
        self._set_state(ConnectionState.REAUTHENTICATING)
        self._reauth_started = self._now
        log.debug("%r re-authenticating with %s (session lifetime %d ms, %d requests in flight)", self,
                  self.config["sasl_mechanism"], self.session_lifetime_ms, len(self._in_flight))
        self._start_sasl()

    def _schedule_reauthentication(self, lifetime_ms: int | None) -> None:
        """Plan the next re-authentication from the broker's session lifetime,
        counted from when the last SaslAuthenticate left (before the broker
        started the session's clock, so the margin only grows)."""
        self.session_lifetime_ms = lifetime_ms or 0
        if self.session_lifetime_ms <= 0:
            self._reauth_at = None
            return
        fraction = random.uniform(*REAUTH_WINDOW)
        self._reauth_at = self._last_sasl_sent + self.session_lifetime_ms * fraction / 1000.0

    def reauthentication_due_in(self, now: float) -> float | None:
        """Seconds until this connection re-authenticates, or None."""
        if self._reauth_at is None:
            return None
        return self._reauth_at - now

    def maybe_reauthenticate(self, now: float) -> bool:
        """Start the re-authentication if it is due; True when one is under way."""
        if self.state is ConnectionState.READY and self._reauth_at is not None and self._reauth_enabled:
            if now >= self._reauth_at:
                self._now = now
                self._begin_reauthentication()
        return self._reauthenticating()

    def _start_sasl(self) -> None:
        mechanism = self.config["sasl_mechanism"]
        version = pick_version("SaslHandshake", self.api_versions)
        if version is None:
            self._fail(UnsupportedSaslMechanismError("{0}:{1} does not speak SaslHandshake".format(
                self.host, self.port)))
            return
        try:
            self._sasl = auth.new_exchange(self.config, self.host)
        except KafkaError as exc:
            self._auth_failed(exc)
            return
        self._send_now("SaslHandshake", version, {"mechanism": mechanism}, self._sasl_handshake_answered,
                       internal=True)

    def _sasl_handshake_answered(self, request: InFlightRequest, payload: bytearray) -> None:
        try:
            _, answer = codec.decode_response("SaslHandshake", request.version, payload)
        except ProtocolParseError as exc:
            self._handshake_parse_failed(exc)
            return
        if answer["error_code"]:
            what = " for re-authentication" if self._reauthenticating() else ""
            message = "SASL mechanism {0} refused by {1}:{2}{3} (it offers {4})".format(
                self.config["sasl_mechanism"], self.host, self.port, what, answer["mechanisms"])
            self._auth_failed(for_code(answer["error_code"])(message))
            return
        exchange = self._sasl
        assert exchange is not None  # _start_sasl() made it before asking
        if self.offload is not None and self.config["sasl_mechanism"] not in _INSTANT_MECHANISMS:
            # an OAUTHBEARER token provider may fetch a token over HTTP: off
            # the driver's thread (an event loop must not stall on it)
            mechanism = self.config["sasl_mechanism"]
            self._sasl_step(self.offload(exchange.first_message, lambda: KafkaTimeoutError(
                "SASL {0}: the first message for {1}:{2} was not ready within {3} ms".format(
                    mechanism, self.host, self.port, self.config["request_timeout_ms"])),
                "fastkc-sasl-first-{0}".format(self.host)))
            return
        try:
            first = exchange.first_message()
        except KafkaError as exc:
            self._auth_failed(exc)
            return
        self._sasl_step(first)

    def _sasl_step(self, message: "bytes | auth.PendingStep") -> None:
        """Send a step's message, or, for a step still being computed off the
        driver's thread (auth.PendingStep: GSSAPI asking the KDC), keep it
        until tick() finds it done or past request_timeout_ms."""
        if isinstance(message, auth.PendingStep):
            self._sasl_pending = message
            self._sasl_pending_deadline = self._now + self.config["request_timeout_ms"] / 1000.0
            self._check_pending_step(self._now)
            return
        self._sasl_send(message)

    def _check_pending_step(self, now: float) -> None:
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
            self._sasl_step(message)  # an offloaded first step may itself hand back a PendingStep (GSSAPI)
        elif now > self._sasl_pending_deadline:
            self._sasl_pending = None
            self._auth_failed(pending.timeout_error())

    def _sasl_send(self, auth_bytes: bytes) -> None:
        version = pick_version("SaslAuthenticate", self.api_versions)
        if version is None:
            self._fail(UnsupportedSaslMechanismError(
                "{0}:{1} does not speak SaslAuthenticate (pre-1.0 brokers are not supported)".format(
                    self.host, self.port)))
            return
        self._last_sasl_sent = self._now
        self._send_now("SaslAuthenticate", version, {"auth_bytes": auth_bytes}, self._sasl_answered, internal=True)

    def _sasl_answered(self, request: InFlightRequest, payload: bytearray) -> None:
        try:
            _, answer = codec.decode_response("SaslAuthenticate", request.version, payload)
        except ProtocolParseError as exc:
            self._handshake_parse_failed(exc)
            return
        if answer["error_code"]:
            self._auth_failed(for_code(answer["error_code"])("SASL {0} {1} with {2}:{3} failed: {4}".format(
                self.config["sasl_mechanism"], "re-authentication" if self._reauthenticating() else "authentication",
                self.host, self.port, answer["error_message"])))
            return
        exchange = self._sasl
        assert exchange is not None  # the exchange this answer belongs to
        try:
            reply = exchange.receive(answer["auth_bytes"])
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
                      (self._now - self._reauth_started) * 1000.0, self.reauthentications,
                      "{0:.0f}".format((self._reauth_at - self._now) * 1000.0) if self._reauth_at else "never")
            self._event("reauthenticated")
        else:
            self._become_ready()

    # --- sending ---------------------------------------------------------------------
    def send(self, api_name: str, body: dict[str, Any], callback: Callback, version: int | None = None,
             timeout_ms: float | None = None, *, now: float) -> int:
        """Queue a caller's request; returns its correlation id. The callback
        gets (payload, None) or (None, error). timeout_ms: this request's own
        timeout (JoinGroup, which the coordinator may hold for the rebalance
        timeout); request_timeout_ms when None."""
        if not self.ready:
            raise NodeNotReadyError("connection to {0}:{1} is {2}".format(self.host, self.port, self.state.value))
        if len(self._in_flight) >= self.config["max_in_flight_requests_per_connection"]:
            raise TooManyInFlightRequests("{0}:{1} already has {2} requests in flight".format(
                self.host, self.port, len(self._in_flight)))
        if version is None:
            version = self.version_for(api_name)
        self._now = now
        return self._send_now(api_name, version, body, callback, timeout_ms)

    def version_for(self, api_name: str) -> int:
        version = self.versions.get(api_name)
        if version is None:
            version = pick_version(api_name, self.api_versions)
            if version is None:
                raise IncompatibleBrokerVersion("{0}:{1} speaks no {2} version fastkc knows".format(
                    self.host, self.port, api_name))
            self.versions[api_name] = version
        return version

    def _send_now(self, api_name: str, version: int, body: dict[str, Any], callback: Any,
                  timeout_ms: float | None = None, internal: bool = False) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        payload = codec.encode_request(api_name, version, body, correlation_id=correlation_id,
                                       client_id=self.config["client_id"])
        now = self._now
        timeout_ms = self.config["request_timeout_ms"] if timeout_ms is None else timeout_ms
        deadline = now + timeout_ms / 1000.0
        if internal and self._in_flight:
            # a re-authentication step queued behind callers' requests (a
            # JoinGroup the coordinator holds for the rebalance): the broker
            # reads it only after answering them, so its own timeout cannot
            # run out before theirs; it restarts when it reaches the head
            deadline = max(r.deadline for r in self._in_flight) + timeout_ms / 1000.0
        self._in_flight.append(InFlightRequest(correlation_id, api_name, version, callback, deadline, now, internal))
        if self._tls is None:
            self._out += len(payload).to_bytes(4, "big")
            self._out += payload
        else:
            self._emit(len(payload).to_bytes(4, "big") + payload)
        return correlation_id

    def data_to_send(self) -> bytearray:
        """The bytes the transport must write next (a view valid until the
        next call into the core); empty when there are none."""
        return self._out

    def sent(self, n: int, now: float) -> None:
        """The transport wrote the first `n` bytes of data_to_send()."""
        if n:
            del self._out[:n]
            self.last_activity = now

    def wants_output(self) -> bool:
        return bool(self._out)

    # --- receiving --------------------------------------------------------------------
    def _reset_frame(self) -> None:
        self._head = bytearray(4)
        self._head_view = memoryview(self._head)
        self._head_got = 0
        if self._body_view is not None:
            self._body_view.release()
        self._body: bytearray | None = None
        self._body_view = None
        self._body_got = 0
        self._body_size = 0

    def get_buffer(self) -> memoryview:
        """Where the next plaintext bytes go: the rest of the 4-byte size, or
        the rest of the frame's payload buffer (grown ×4 when full). Read
        into it, then call buffer_updated(n, now). Two reads per frame,
        straight into their final buffers: the Fetch parser and the record
        decoder then work on this one buffer in place."""
        if self._body is None:
            return self._head_view[self._head_got:]
        if self._body_got == len(self._body):
            self._grow_body()
        assert self._body_view is not None  # made with the body
        return self._body_view[self._body_got:]

    def _grow_body(self) -> None:
        """The frame's buffer is full but the frame is not: grow it ×4 (at
        most to the announced size), in place and unfilled (realloc remaps a
        large buffer's pages), so a big Fetch response costs about what one
        exact allocation did."""
        assert self._body is not None and self._body_view is not None  # only for a frame's body
        self._body_view.release()
        size = min(self._body_size, 4 * len(self._body))
        if _grow_bytearray is not None:
            _grow_bytearray(self._body, size)
        else:
            self._body += bytes(size - len(self._body))
        self._body_view = memoryview(self._body)

    def buffer_updated(self, n: int, now: float, answered: Answered | None = None) -> Answered:
        """`n` plaintext bytes were written into get_buffer(). Returns the
        list of callers' (InFlightRequest, payload) answered so far."""
        self._now = now
        if answered is None:
            answered = []
        if self.state is ConnectionState.DISCONNECTED:
            return answered
        if self._body is None:
            self._head_got += n
            if self._head_got < 4:
                return answered
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
                return answered
        else:
            self._body_got += n
            if self._body_got < self._body_size:
                return answered
        payload = self._body
        assert payload is not None and self._body_view is not None  # the frame's body, complete
        self._body_view.release()
        self._body = self._body_view = None
        self.last_activity = now
        self._take_frame(payload, answered)
        return answered

    def receive(self, data: bytes | bytearray | memoryview, now: float) -> Answered:
        """Bytes from the transport (TLS records when tls). Returns the
        callers' answered [(InFlightRequest, payload)], in order; the core's
        own steps (ApiVersions, SASL) are handled here. Stops at a failure."""
        self._now = now
        answered: Answered = []
        if self._disconnected():
            return answered
        tls = self._tls
        n: int  # bytes read per step
        if tls is not None and self._tls_in is not None:
            self._tls_in.write(data)
            if self.state is ConnectionState.HANDSHAKE:
                self._tls_handshake()
                if not self._in_state(ConnectionState.API_VERSIONS):
                    return answered
            while not self._disconnected():
                buf = self.get_buffer()
                try:
                    # (typeshed says bytearray; any writable buffer is read into)
                    n = tls.read(min(len(buf), _TLS_READ), buf)  # type: ignore[arg-type, assignment]
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    self._fail(KafkaConnectionError("{0}:{1} closed the connection".format(self.host, self.port)))
                    break
                except ssl.SSLError as exc:
                    self._fail(self._tls_refusal(exc) or KafkaConnectionError(
                        "receive from {0}:{1} failed: {2}".format(self.host, self.port, exc)))
                    break
                finally:
                    # the slice must not outlive this step: growing the
                    # frame's buffer needs it unexported
                    buf.release()
                    self._drain_tls_output()  # a TLS 1.3 key update answered, say
                if not n:
                    break
                self.buffer_updated(n, now, answered)
            return answered
        view = memoryview(data)
        pos, end = 0, len(view)
        while pos < end and not self._disconnected():
            buf = self.get_buffer()
            n = min(len(buf), end - pos)
            buf[:n] = view[pos:pos + n]
            buf.release()  # unexported before the buffer may grow
            pos += n
            self.buffer_updated(n, now, answered)
        return answered

    def _tls_refusal(self, exc: ssl.SSLError) -> SslAuthenticationError | None:
        """SslAuthenticationError if `exc` is the broker refusing the TLS
        session, else None. With TLS 1.3 the client's side of the handshake
        ends before the server has checked the client's certificate, so a
        broker with ssl.client.auth=required answers a missing or untrusted
        one with an alert on the first record after the handshake (Kafka 4.3
        sends "bad certificate"). Before READY that alert is the handshake's
        verdict and no retry changes it: fatal, as the Java client's
        SslAuthenticationException. Anything once READY stays retriable."""
        if self.state in (ConnectionState.API_VERSIONS, ConnectionState.AUTHENTICATING) and is_tls_alert(exc):
            return SslAuthenticationError("TLS session with {0}:{1} refused by the broker: {2}".format(
                self.host, self.port, exc))
        return None

    def _take_frame(self, payload: bytearray, answered: Answered) -> None:
        if not self._in_flight:
            self._fail(CorrelationIdError("{0}:{1} sent a response nobody asked for".format(self.host, self.port)))
            return
        request = self._in_flight.popleft()
        got = int.from_bytes(payload[:4], "big", signed=True) if len(payload) >= 4 else None
        if got != request.correlation_id:
            self._fail(CorrelationIdError("{0}:{1}: {2} expected correlation id {3}, got {4}".format(
                self.host, self.port, request.api_name, request.correlation_id, got)), extra=[request])
            return
        if self._in_flight and self._in_flight[0].internal:
            # a re-authentication step that waited behind this answer: the
            # broker starts on it now, its request timeout too
            head = self._in_flight[0]
            head.deadline = min(head.deadline, self._now + self.config["request_timeout_ms"] / 1000.0)
            head.sent_at = self._now
        if not request.internal:
            # a caller's request (also one sent before a re-authentication
            # began): answered in order, its callback runs from the driver
            answered.append((request, payload))
        else:
            request.callback(request, payload)

    # --- time ------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """Fail the connection when its oldest request (or the connect) is
        overdue; poll a SASL step computed off-thread; start a
        re-authentication that is due."""
        self._now = now
        if self.state is ConnectionState.DISCONNECTED:
            return
        if self._sasl_pending is not None:
            self._check_pending_step(now)
            if self._disconnected():
                return
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKE):
            if now > self._connect_deadline:
                self._fail(KafkaTimeoutError("connecting to {0}:{1} timed out".format(self.host, self.port)))
            return
        if self._in_flight:
            # requests may carry their own timeouts: the earliest deadline counts
            request = min(self._in_flight, key=_deadline_of)
            if now > request.deadline:
                self._fail(KafkaTimeoutError("{0} to {1}:{2}: no answer within {3:.0f} ms{4}".format(
                    request.api_name, self.host, self.port, (request.deadline - request.sent_at) * 1000.0,
                    " (re-authenticating)" if self._reauthenticating() else "")))
                return
        self.maybe_reauthenticate(now)

    def next_deadline(self, now: float | None = None) -> float | None:
        """When tick() must next run (the driver's clock), or None: a connect
        or request deadline, a re-authentication that is due, or soon for a
        SASL step computed on another thread (that thread cannot wake the
        driver)."""
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKE):
            return self._connect_deadline
        due: float | None = None
        if self._in_flight:
            due = min(r.deadline for r in self._in_flight)
        if self.state is ConnectionState.READY and self._reauth_at is not None and self._reauth_enabled:
            due = self._reauth_at if due is None else min(due, self._reauth_at)
        if self._sasl_pending is not None:
            soon = min((self._now if now is None else now) + PENDING_STEP_POLL_S, self._sasl_pending_deadline)
            due = soon if due is None else min(due, soon)
        return due

    # --- failure and close -------------------------------------------------------------
    def transport_lost(self, error: BaseException, now: float) -> None:
        """The transport failed or the peer closed it: fail with `error` (a
        typed KafkaError the driver made from what it saw)."""
        self._now = now
        if self.state is ConnectionState.DISCONNECTED:
            return
        self._fail(error)

    def fail(self, error: BaseException, now: float, backoff_failures: int = 0) -> None:
        """Fail with `error` (every in-flight request gets it) and back off
        before the next attempt, as for a lost connection; the backoff
        exponent is at least `backoff_failures` (the client's count of parse
        failures, which a successful reconnect does not reset)."""
        self._now = now
        self.failures = max(self.failures, backoff_failures - 1)
        self._fail(error)

    def _fail(self, error: BaseException, extra: "Sequence[InFlightRequest]" = ()) -> None:
        self.last_error = error
        self.failures += 1
        if self._reauthenticating():
            self.failed_reauthentications += 1
            self._event("reauth_failed")
        if self.established:
            self.lost += 1
            self.last_loss = error
            self._event("lost")
        base = self.config["reconnect_backoff_ms"]
        ceiling = self.config["reconnect_backoff_max_ms"]
        backoff_ms = min(ceiling, base * (2 ** min(self.failures - 1, 30)))
        backoff_ms *= random.uniform(0.8, 1.2)
        self.next_attempt = self._now + min(backoff_ms, ceiling) / 1000.0
        log.debug("%s:%s failed: %s (next attempt in %.0f ms)", self.host, self.port, error, backoff_ms)
        self._teardown(error, extra)

    def close(self, error: BaseException | None = None) -> None:
        """Close now (no backoff penalty); in-flight requests fail with `error`."""
        if error is not None:
            self.last_error = error
        self._teardown(error or KafkaConnectionError("connection to {0}:{1} closed".format(self.host, self.port)), ())

    def _teardown(self, error: BaseException, extra: "Sequence[InFlightRequest]") -> None:
        was_up = self.state is not ConnectionState.DISCONNECTED
        if was_up:
            self._set_state(ConnectionState.DISCONNECTED)
        self._out = bytearray()
        self._tls = self._tls_in = self._tls_out = None
        self._sasl = None
        self._sasl_pending = None
        self._reauth_at = None
        self._reset_frame()
        if self.on_close is not None:
            self.on_close(error)
        pending = list(extra) + list(self._in_flight)
        self._in_flight.clear()
        for request in pending:
            if request.internal or request.callback is None:
                continue  # the core's own step: the failure is the connection's (last_error)
            try:
                request.callback(None, error)
            except Exception:  # one failing callback must not leave the others unfailed
                log.exception("callback of %s failed", request.api_name)
