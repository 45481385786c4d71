"""The connection core (fastkc.net.core) with no socket at all: bytes and
clock ticks in, bytes, callbacks and deadlines out. Answers are encoded by the
generic codec; TLS is a server-side ssl.SSLObject over memory BIOs."""
import ssl
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkc import auth, errors
from fastkc.net import core as core_module
from fastkc.net.core import FIRST_FRAME_CHUNK, HANDSHAKE_MAX_FRAME, ConnectionCore, ConnectionState
from fastkc.protocol import codec
from fastkc.protocol.messages import ALL_APIS
from tests.support.framing import Framer, frame

CONFIG = {
    "client_id": "core-test",
    "request_timeout_ms": 1000,
    "max_in_flight_requests_per_connection": 5,
    "receive_message_max_bytes": 1 << 20,
    "security_protocol": "PLAINTEXT",
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 1000,
}
SASL = dict(CONFIG, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
            sasl_plain_password="secret")
API_KEYS = [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version} for a in ALL_APIS]


class Peer:
    """The broker's side of the byte stream: decodes what the core emits."""

    def __init__(self):
        self.framer = Framer()

    def take(self, core, now=0.0):
        out = bytes(core.data_to_send())
        core.sent(len(out), now)
        return [codec.decode_request(p) for p in self.framer.feed(out)]


def answer(header, body):
    return frame(codec.encode_response(header["api_name"], header["api_version"], body,
                                       correlation_id=header["correlation_id"]))


def api_versions_answer(header):
    return answer(header, {"error_code": 0, "api_keys": API_KEYS, "throttle_time_ms": 0})


def metadata_answer(header, n_brokers=1):
    return answer(header, {"brokers": [{"node_id": i, "host": "h{0}".format(i), "port": 9092}
                                       for i in range(n_brokers)], "topics": []})


def ready_core(config=CONFIG, now=0.0):
    core = ConnectionCore("broker", 9092, config)
    peer = Peer()
    core.start_connecting(now)
    core.transport_connected(now)
    [(header, _)] = peer.take(core)
    assert (header["api_name"], header["api_version"], header["client_id"]) == ("ApiVersions", 4, "core-test")
    assert core.receive(api_versions_answer(header), now) == []
    return core, peer


def test_handshake_with_no_socket():
    closed = []
    core, _ = ready_core()
    core.on_close = closed.append
    assert core.ready and core.next_deadline() is None
    assert core.version_for("Metadata") == max(a.max_version for a in ALL_APIS if a.name == "Metadata")
    core.close()
    assert core.state is ConnectionState.DISCONNECTED and len(closed) == 1


def test_illegal_transitions_raise():
    core = ConnectionCore("broker", 9092, CONFIG)
    with pytest.raises(errors.IllegalStateError, match="DISCONNECTED -> READY"):
        core._set_state(ConnectionState.READY)
    with pytest.raises(errors.IllegalStateError):
        core.transport_connected(0.0)  # not CONNECTING


def _pipeline(n_requests):
    core, peer = ready_core()
    for _ in range(n_requests):
        core.send("Metadata", {"topics": []}, None, now=0.0)
    stream = b"".join(metadata_answer(h, n_brokers=i + 1) for i, (h, _) in enumerate(peer.take(core)))
    return core, stream


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 5), cuts=st.lists(st.integers(0, 2000), max_size=30), zero_copy=st.booleans())
def test_any_chunking_of_the_stream_gives_the_same_answers(n, cuts, zero_copy):
    reference_core, stream = _pipeline(n)
    expected = [(r.correlation_id, bytes(p)) for r, p in reference_core.receive(stream, 1.0)]
    assert [cid for cid, _ in expected] == list(range(1, n + 1))

    core, same = _pipeline(n)
    assert same == stream
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    got = []
    for start, end in zip(bounds, bounds[1:]):
        chunk = stream[start:end]
        if zero_copy:
            while chunk:
                buf = core.get_buffer()
                k = min(len(buf), len(chunk))
                buf[:k] = chunk[:k]
                buf.release()
                chunk = chunk[k:]
                got += core.buffer_updated(k, 1.0)
        else:
            got += core.receive(chunk, 1.0)
    assert [(r.correlation_id, bytes(p)) for r, p in got] == expected
    assert core.ready and core.in_flight_count() == 0


@settings(max_examples=50, deadline=None)
@given(cuts=st.lists(st.integers(0, 400), max_size=10))
def test_any_chunking_of_the_handshake_answer_reaches_ready(cuts):
    core = ConnectionCore("broker", 9092, CONFIG)
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    [(header, _)] = Peer().take(core)
    stream = api_versions_answer(header)
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for start, end in zip(bounds, bounds[1:]):
        assert not core.ready
        core.receive(stream[start:end], 0.5)
    assert core.ready


@pytest.mark.parametrize("chunk", [None, 1 << 16, 3 * FIRST_FRAME_CHUNK + 1])
def test_a_frame_bigger_than_the_first_chunk_grows_its_buffer(chunk):
    core, peer = ready_core(dict(CONFIG, receive_message_max_bytes=64 << 20))
    core.send("Metadata", {"topics": []}, None, now=0.0)
    [(header, _)] = peer.take(core)
    body = bytes(range(256)) * ((5 * FIRST_FRAME_CHUNK + 12345) // 256)
    stream = frame(header["correlation_id"].to_bytes(4, "big") + body)
    step = chunk or len(stream)
    got = []
    for start in range(0, len(stream), step):
        got += core.receive(stream[start:start + step], 0.0)
    [(request, payload)] = got
    assert request.correlation_id == header["correlation_id"] and payload[4:] == body


def test_request_deadline_is_a_tick_away():
    core, _ = ready_core(now=10.0)
    got = []
    core.send("Metadata", {"topics": []}, lambda p, e: got.append(e), timeout_ms=500, now=10.0)
    assert core.next_deadline() == pytest.approx(10.5)
    core.tick(10.4)
    assert not got and core.ready
    core.tick(10.51)
    assert isinstance(got[0], errors.KafkaTimeoutError) and "no answer within 500 ms" in str(got[0])
    assert core.state is ConnectionState.DISCONNECTED and core.next_deadline() is None
    assert 10.51 + 0.04 <= core.next_attempt <= 10.51 + 0.06  # 50 ms ± 20 %


def test_connect_deadline():
    core = ConnectionCore("broker", 9092, CONFIG)
    core.start_connecting(5.0)
    assert core.next_deadline() == 6.0
    core.tick(6.0)
    assert core.state is ConnectionState.CONNECTING
    core.tick(6.01)
    assert isinstance(core.last_error, errors.KafkaTimeoutError) and "connecting to broker:9092" in str(core.last_error)


def test_a_handshake_frame_over_the_limit_fails_before_any_allocation():
    core = ConnectionCore("broker", 9092, CONFIG)
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    core.receive((HANDSHAKE_MAX_FRAME + 1).to_bytes(4, "big"), 0.0)
    assert isinstance(core.last_error, errors.KafkaProtocolError)
    assert "before the connection is ready" in str(core.last_error)


def test_a_frame_over_receive_message_max_bytes_fails_the_requests():
    core, peer = ready_core()
    got = []
    core.send("Metadata", {"topics": []}, lambda p, e: got.append(e), now=0.0)
    core.receive(((1 << 20) + 1).to_bytes(4, "big"), 0.0)
    assert isinstance(got[0], errors.KafkaProtocolError) and "outside 0..1048576" in str(got[0])


def test_an_answer_nobody_asked_for():
    core, peer = ready_core()
    core.receive(frame(b"\0\0\0\x07"), 0.0)
    assert isinstance(core.last_error, errors.CorrelationIdError) and "nobody asked for" in str(core.last_error)


def test_transport_lost_fails_every_request_and_counts_a_lost_connection():
    core, _ = ready_core()
    events, got = [], []
    core.on_event = events.append
    for _ in range(3):
        core.send("Metadata", {"topics": []}, lambda p, e: got.append(e), now=0.0)
    lost = errors.KafkaConnectionError("gone")
    core.transport_lost(lost, 1.0)
    assert got == [lost] * 3 and events == ["lost"] and core.lost == 1 and core.last_loss is lost


def test_a_requested_close_is_not_a_loss():
    core, _ = ready_core()
    events = []
    core.on_event = events.append
    core.close()
    assert events == [] and core.lost == 0 and core.last_loss is None


def _sasl_exchange(core, peer, now, lifetime_ms=0):
    [(handshake, body)] = peer.take(core, now)
    assert (handshake["api_name"], body["mechanism"]) == ("SaslHandshake", "PLAIN")
    core.receive(answer(handshake, {"error_code": 0, "mechanisms": ["PLAIN"]}), now)
    [(authenticate, body)] = peer.take(core, now)
    assert body["auth_bytes"] == b"\0alice\0secret"
    core.receive(answer(authenticate, {"error_code": 0, "error_message": None, "auth_bytes": b"",
                                       "session_lifetime_ms": lifetime_ms}), now)


def test_sasl_then_reauthentication_by_ticks():
    core = ConnectionCore("broker", 9092, SASL)
    peer = Peer()
    events = []
    core.on_event = events.append
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    [(header, _)] = peer.take(core)
    core.receive(api_versions_answer(header), 0.0)
    assert core.state is ConnectionState.AUTHENTICATING
    _sasl_exchange(core, peer, 1.0, lifetime_ms=10_000)
    assert core.ready
    due = core.next_deadline()
    assert 1.0 + 8.5 <= due <= 1.0 + 9.5
    core.tick(due - 0.001)
    assert core.ready
    core.tick(due)
    assert core.state is ConnectionState.REAUTHENTICATING and not core.can_send()
    _sasl_exchange(core, peer, due + 0.1, lifetime_ms=10_000)
    assert core.ready and core.reauthentications == 1 and events == ["reauthenticated"]


def test_a_refused_reauthentication_says_so():
    core = ConnectionCore("broker", 9092, SASL)
    peer = Peer()
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    [(header, _)] = peer.take(core)
    core.receive(api_versions_answer(header), 0.0)
    _sasl_exchange(core, peer, 0.0, lifetime_ms=1000)
    core.tick(core.next_deadline())
    [(handshake, _)] = peer.take(core)
    core.receive(answer(handshake, {"error_code": 0, "mechanisms": ["PLAIN"]}), 1.0)
    [(authenticate, _)] = peer.take(core)
    core.receive(answer(authenticate, {"error_code": 58, "error_message": "expired", "auth_bytes": b""}), 1.0)
    assert isinstance(core.last_error, errors.SaslAuthenticationFailedError)
    assert "re-authentication" in str(core.last_error) and core.reauth_failed
    assert core.failed_reauthentications == 1


def test_a_pending_sasl_step_is_polled_on_ticks(monkeypatch):
    release = threading.Event()

    class SlowExchange:
        def first_message(self):
            return auth.PendingStep(lambda: release.wait(5) and b"\0alice\0secret",
                                    lambda: errors.KafkaTimeoutError("slow step"), "test-pending")

        def receive(self, server_bytes):
            return None

    monkeypatch.setattr(core_module.auth, "new_exchange", lambda config, host: SlowExchange())
    core = ConnectionCore("broker", 9092, SASL)
    peer = Peer()
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    [(header, _)] = peer.take(core)
    core.receive(api_versions_answer(header), 0.0)
    [(handshake, _)] = peer.take(core)
    core.receive(answer(handshake, {"error_code": 0, "mechanisms": ["PLAIN"]}), 0.0)
    assert peer.take(core) == []  # the step is still computing
    assert core.next_deadline(0.2) == pytest.approx(0.21)
    core.tick(0.2)
    assert core.state is ConnectionState.AUTHENTICATING and peer.take(core) == []
    release.set()
    for _ in range(500):
        core.tick(0.3)
        sent = peer.take(core)
        if sent:
            break
        threading.Event().wait(0.01)
    [(authenticate, body)] = sent
    assert authenticate["api_name"] == "SaslAuthenticate" and body["auth_bytes"] == b"\0alice\0secret"


def test_a_pending_sasl_step_times_out_on_a_tick(monkeypatch):
    never = threading.Event()

    class StuckExchange:
        def first_message(self):
            return auth.PendingStep(lambda: never.wait(2) and b"", lambda: errors.KafkaTimeoutError("kdc silent"),
                                    "test-stuck")

    monkeypatch.setattr(core_module.auth, "new_exchange", lambda config, host: StuckExchange())
    core = ConnectionCore("broker", 9092, SASL)
    peer = Peer()
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    [(header, _)] = peer.take(core)
    core.receive(api_versions_answer(header), 0.0)
    [(handshake, _)] = peer.take(core)
    core.receive(answer(handshake, {"error_code": 0, "mechanisms": ["PLAIN"]}), 0.0)
    core.tick(1.01)
    assert isinstance(core.last_error, errors.KafkaTimeoutError) and "kdc silent" in str(core.last_error)
    never.set()


# --- TLS through memory BIOs on both sides ---------------------------------------------------
@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from fastkc_tools.broker import certs

    made = certs.generate(str(tmp_path_factory.mktemp("tls-core")))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(made.broker_keystore)
    return made, server


class TlsPeer:
    def __init__(self, server_context):
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = server_context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.framer = Framer()
        self.handshaken = False

    def exchange(self, core, respond=None, now=0.0):
        """Carry ciphertext both ways until neither side has more to say."""
        answered = []
        for _ in range(20):
            out = bytes(core.data_to_send())
            core.sent(len(out), now)
            if out:
                self.incoming.write(out)
            if not self.handshaken:
                try:
                    self.tls.do_handshake()
                    self.handshaken = True
                except ssl.SSLWantReadError:
                    pass
            if self.handshaken and respond is not None:
                try:
                    plain = self.tls.read(1 << 20)
                except ssl.SSLWantReadError:
                    plain = b""
                for payload in self.framer.feed(plain):
                    header, body = codec.decode_request(payload)
                    self.tls.write(respond(header, body))
            reply = self.outgoing.read()
            if reply:
                answered += core.receive(reply, now)
            if not out and not reply:
                break
        return answered


def _respond(header, body):
    if header["api_name"] == "ApiVersions":
        return api_versions_answer(header)
    return metadata_answer(header, n_brokers=3)


def test_tls_in_the_core_with_no_socket(tls):
    made, server = tls
    client = ssl.create_default_context(cafile=made.ca)
    core = ConnectionCore("127.0.0.1", 9093, dict(CONFIG, security_protocol="SSL"), ssl_context=client)
    peer = TlsPeer(server)
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    assert core.state is ConnectionState.HANDSHAKE and core.tls
    peer.exchange(core, _respond)
    assert core.ready, core.last_error
    core.send("Metadata", {"topics": []}, None, now=0.0)
    [(request, payload)] = peer.exchange(core, _respond)
    _, decoded = codec.decode_response("Metadata", request.version, payload)
    assert len(decoded["brokers"]) == 3


def test_tls_a_certificate_for_another_name_is_refused(tls):
    made, server = tls
    client = ssl.create_default_context(cafile=made.ca)
    core = ConnectionCore("not-the-broker.example", 9093, dict(CONFIG, security_protocol="SSL"), ssl_context=client)
    core.start_connecting(0.0)
    core.transport_connected(0.0)
    TlsPeer(server).exchange(core)
    assert isinstance(core.last_error, errors.SslAuthenticationError)
    assert "CERTIFICATE_VERIFY_FAILED" in str(core.last_error)


@settings(max_examples=300, deadline=None)
@given(noise=st.binary(max_size=600), cut=st.integers(0, 600), handshake=st.booleans())
def test_hostile_bytes_end_in_a_typed_error_or_in_waiting(noise, cut, handshake):
    # whatever a peer sends, the core either waits for more, answers, or
    # fails with a typed KafkaError; no other exception leaves receive()
    if handshake:
        core = ConnectionCore("broker", 9092, SASL)
        core.start_connecting(0.0)
        core.transport_connected(0.0)
        [(header, _)] = Peer().take(core)
        stream = api_versions_answer(header)[:cut % 64] + noise
    else:
        core, peer = ready_core()
        core.send("Metadata", {"topics": []}, None, now=0.0)
        core.send("Metadata", {"topics": []}, None, now=0.0)
        [(header, _), _] = peer.take(core)
        stream = metadata_answer(header)[:cut] + noise
    core.receive(stream, 1.0)
    if core.state is ConnectionState.DISCONNECTED:
        assert isinstance(core.last_error, errors.KafkaError), repr(core.last_error)
    core.tick(100.0)  # and every wait ends at its deadline
    assert core.state is ConnectionState.DISCONNECTED and isinstance(core.last_error, errors.KafkaError)


def test_the_core_imports_nothing_that_does_io_or_keeps_time():
    # the invariant the drivers rely on: every byte and every clock reading
    # comes from them (auth.PendingStep's thread is the mechanism's)
    from tests.support.imports import IO_AND_TIME, top_level_imports

    imported = top_level_imports(core_module.__file__)
    assert imported.isdisjoint(IO_AND_TIME), imported
