"""A small synchronous Kafka client for tools, tests and the broker harness.

One TCP (or TLS) connection, one request at a time, ApiVersions negotiated on
connect. Not the consumer's connection (that one pipelines requests); this is
the simple, dependable way to ask a broker something.

    with BlockingConnection("127.0.0.1", 9092) as conn:
        meta = conn.request("Metadata", {"topics": None})

Errors: KafkaConnectionError when the connection cannot be made or is lost
(a broker closes the connection on a request version it does not speak),
KafkaTimeoutError when no complete answer arrives within `timeout` seconds,
CorrelationIdError / ProtocolParseError / KafkaProtocolError on a malformed
answer, and IllegalArgumentError when no version is spoken by both sides
(raised before anything is sent). After any of these the connection is closed: the stream position is
unknown, so it cannot be reused.
"""
import socket

from fastkc.errors import (
    CorrelationIdError,
    IllegalArgumentError,
    KafkaConnectionError,
    KafkaProtocolError,
    KafkaTimeoutError,
    ProtocolParseError,
    for_code,
)
from fastkc.protocol import codec
from fastkc.protocol.framing import Framer, frame
from fastkc.protocol.messages import API_VERSIONS, get_api

_UNSUPPORTED_VERSION = 35


class BlockingConnection:
    def __init__(self, host, port, *, client_id="fastkc", timeout=10.0, ssl_context=None):
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        #: api_key -> (min, max) the broker supports, from ApiVersions
        self.api_versions = {}
        self._next_correlation_id = 0
        self._framer = Framer()
        self._sock = None
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except socket.timeout:
            raise KafkaTimeoutError("connecting to {0}:{1} timed out after {2}s".format(host, port, timeout)) from None
        except OSError as exc:
            raise KafkaConnectionError("cannot connect to {0}:{1}: {2}".format(host, port, exc)) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ssl_context is not None:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            sock.settimeout(timeout)
        except socket.timeout:
            sock.close()
            raise KafkaTimeoutError("TLS handshake with {0}:{1} timed out".format(host, port)) from None
        except OSError as exc:
            sock.close()
            raise KafkaConnectionError("TLS handshake with {0}:{1} failed: {2}".format(host, port, exc)) from None
        self._sock = sock
        try:
            self._negotiate()
        except BaseException:
            self.close()
            raise

    # --- context manager ------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    @property
    def closed(self):
        return self._sock is None

    # --- versions ---------------------------------------------------------------
    def _negotiate(self):
        """ApiVersions at our highest version; a broker that does not speak it
        answers in v0 layout with UNSUPPORTED_VERSION and its own range for
        ApiVersions, and we ask again at the highest common version."""
        version = API_VERSIONS.max_version
        body = {"client_software_name": "fastkc", "client_software_version": _fastkc_version()}
        for _ in range(2):
            payload = self.request_raw("ApiVersions", body, version=version)
            _, start = codec.decode_response_header("ApiVersions", version, payload)
            if len(payload) - start >= 2 and int.from_bytes(payload[start:start + 2], "big", signed=True) == _UNSUPPORTED_VERSION:
                _, answer = codec.decode_response("ApiVersions", 0, payload)
                broker = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
                broker_max = broker.get(API_VERSIONS.key, (0, 0))[1]
                if broker_max >= version:
                    break
                version = max(0, broker_max)
                continue
            _, answer = codec.decode_response("ApiVersions", version, payload)
            if answer["error_code"]:
                raise for_code(answer["error_code"])("ApiVersions v{0} refused".format(version))
            self.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
            self.api_versions_response = answer
            return
        self.close()
        raise KafkaConnectionError("ApiVersions negotiation with {0}:{1} did not converge".format(self.host, self.port))

    def pick_version(self, api_name, version=None):
        """The version a request will use: the highest both sides speak when
        `version` is None, else `version` after checking both sides speak it."""
        api = get_api(api_name)
        ours = (api.min_version, api.max_version)
        theirs = self.api_versions.get(api.key)
        if api.key == API_VERSIONS.key and not self.api_versions:
            theirs = ours  # during negotiation itself
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
    def request(self, api_name, body, version=None):
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

    def request_raw(self, api_name, body, version=None):
        """Send one request; return the whole response payload after the size
        prefix, response header included."""
        if self._sock is None:
            raise KafkaConnectionError("connection to {0}:{1} is closed".format(self.host, self.port))
        version = self.pick_version(api_name, version)
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        data = frame(
            codec.encode_request(api_name, version, body, correlation_id=correlation_id, client_id=self.client_id)
        )
        try:
            self._sock.sendall(data)
            payload = self._receive_one(api_name, version)
        except socket.timeout:
            self.close()
            raise KafkaTimeoutError(
                "{0} v{1} to {2}:{3}: no answer within {4}s".format(api_name, version, self.host, self.port, self.timeout)
            ) from None
        except KafkaProtocolError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise KafkaConnectionError(
                "{0} v{1} to {2}:{3}: connection lost: {4}".format(api_name, version, self.host, self.port, exc)
            ) from None
        try:
            got, _ = codec.decode_response_header(api_name, version, payload)
        except ProtocolParseError:
            self.close()
            raise
        if got != correlation_id:
            self.close()
            raise CorrelationIdError(
                "{0} v{1}: expected correlation id {2}, got {3}".format(api_name, version, correlation_id, got)
            )
        return payload

    def _receive_one(self, api_name, version):
        while True:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                self.close()
                raise KafkaConnectionError(
                    "{0}:{1} closed the connection while {2} v{3} awaited its answer "
                    "(brokers do this on a request version they do not speak)".format(
                        self.host, self.port, api_name, version
                    )
                )
            frames = self._framer.feed(chunk)
            if frames:
                if len(frames) > 1 or self._framer.buffered():
                    self.close()
                    raise CorrelationIdError("{0}:{1} sent bytes beyond the one awaited answer".format(self.host, self.port))
                return frames[0]


def _fastkc_version():
    try:
        from fastkc import __version__
    except ImportError:
        return "0"
    return __version__
