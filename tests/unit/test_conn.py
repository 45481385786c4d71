"""BrokerConnection: the state machine, framing, correlation ids, in-flight
limits, timeouts, backoff, and SASL, against a scripted peer on a local socket
(tests/support/fake_broker.py's ScriptedPeer) that answers with bytes from
the generic codec (no Kafka here: these are the connection's own rules)."""
import base64
import socket
import time

import pytest

from fastkc import errors
from fastkc.auth.scram import SaslExchange
from fastkc.config import consumer_config
from fastkc.conn import BrokerConnection, ConnectionState, pick_version
from fastkc.protocol import codec
from tests.support.conn_driver import drive
from tests.support.fake_broker import ScriptedPeer, default_handler
from tests.support.framing import frame


def pump(conn, peer, until, timeout=3.0):
    """Drive both ends until until() or the timeout; returns the answers."""
    return drive(conn, until, timeout, service=peer.service)


def make_conn(peer, **configs):
    configs.setdefault("bootstrap_servers", "127.0.0.1:{0}".format(peer.port))
    return BrokerConnection("127.0.0.1", peer.port, consumer_config(configs))


@pytest.fixture
def peer():
    p = ScriptedPeer(default_handler)
    yield p
    p.close()


def test_illegal_transition_raises():
    conn = BrokerConnection("127.0.0.1", 1, consumer_config({}))
    with pytest.raises(errors.IllegalStateError):
        conn.core._set_state(ConnectionState.READY)
    conn.core._set_state(ConnectionState.CONNECTING)
    with pytest.raises(errors.IllegalStateError):
        conn.core._set_state(ConnectionState.AUTHENTICATING)


def test_connects_negotiates_versions_and_becomes_ready(peer):
    conn = make_conn(peer, client_id="me")
    assert conn.connect()
    assert conn.state is ConnectionState.CONNECTING
    pump(conn, peer, lambda: conn.ready)
    assert peer.requests[0][0]["api_name"] == "ApiVersions"
    assert peer.requests[0][0]["client_id"] == "me"
    # highest common version: ours up to the broker's max
    assert conn.version_for("Metadata") == 12
    assert conn.version_for("Fetch") == 17
    assert pick_version("JoinGroup", conn.api_versions) is None
    with pytest.raises(errors.IncompatibleBrokerVersion):
        conn.version_for("JoinGroup")


def test_requests_are_answered_in_order_with_correlation_ids(peer):
    conn = make_conn(peer)
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    got = []
    for _ in range(3):
        conn.send("Metadata", {"topics": []}, lambda p, e: got.append((p, e)))
    assert conn.in_flight_count() == 3
    pump(conn, peer, lambda: len(got) == 3)
    ids = [int.from_bytes(p[:4], "big") for p, e in got]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert all(e is None for _, e in got)
    assert conn.in_flight_count() == 0


def test_in_flight_limit(peer):
    conn = make_conn(peer, max_in_flight_requests_per_connection=2)
    peer.handler = lambda h, b: default_handler(h, b) if h["api_name"] == "ApiVersions" else None
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    conn.send("Metadata", {"topics": []}, lambda p, e: None)
    conn.send("Metadata", {"topics": []}, lambda p, e: None)
    assert not conn.can_send()
    with pytest.raises(errors.TooManyInFlightRequests):
        conn.send("Metadata", {"topics": []}, lambda p, e: None)


def test_send_before_ready_raises():
    conn = BrokerConnection("127.0.0.1", 1, consumer_config({}))
    with pytest.raises(errors.NodeNotReadyError):
        conn.send("Metadata", {"topics": []}, lambda p, e: None)


def test_wrong_correlation_id_fails_every_request(peer):
    conn = make_conn(peer)
    conn.connect()
    pump(conn, peer, lambda: conn.ready)

    def lying(header, body):
        return frame(codec.encode_response("Metadata", header["api_version"],
                                           {"brokers": [], "topics": []}, correlation_id=999))

    peer.handler = lying
    got = []
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append(e))
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append(e))
    pump(conn, peer, lambda: len(got) == 2)
    assert all(isinstance(e, errors.CorrelationIdError) for e in got)
    assert conn.state is ConnectionState.DISCONNECTED


def test_request_timeout_closes_and_backs_off(peer):
    conn = make_conn(peer, request_timeout_ms=200, fetch_max_wait_ms=100, reconnect_backoff_ms=1000,
                     reconnect_backoff_max_ms=5000)
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    peer.handler = lambda h, b: None
    got = []
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append(e))
    pump(conn, peer, lambda: got)
    assert isinstance(got[0], errors.KafkaTimeoutError)
    assert conn.state is ConnectionState.DISCONNECTED
    # jittered backoff: 1000 ms ± 20 %
    assert 0.75 <= conn.backoff_remaining() <= 1.2
    assert conn.connect() is False  # not before the backoff ends


def test_backoff_doubles_per_failure_up_to_the_ceiling():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens: every attempt is refused
    config = consumer_config({"reconnect_backoff_ms": 100, "reconnect_backoff_max_ms": 400})
    conn = BrokerConnection("127.0.0.1", port, config)
    seen = []
    for _ in range(5):
        conn._next_attempt = 0.0
        conn.connect()
        deadline = time.monotonic() + 2
        while conn.state is not ConnectionState.DISCONNECTED and time.monotonic() < deadline:
            conn.on_writable()
            time.sleep(0.005)
        seen.append(conn.backoff_remaining())
    assert isinstance(conn.last_error, errors.KafkaConnectionError)
    assert 0.07 <= seen[0] <= 0.12
    assert 0.15 <= seen[1] <= 0.24
    assert all(s <= 0.4 for s in seen) and seen[4] >= 0.3


def test_old_broker_api_versions_fallback(peer):
    def old_broker(header, body):
        if header["api_name"] == "ApiVersions" and header["api_version"] > 2:
            # an old broker answers an unknown ApiVersions version in v0 layout
            payload = codec.encode_response("ApiVersions", 0, {
                "error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]},
                correlation_id=header["correlation_id"])
            return frame(payload)
        return default_handler(header, body)

    peer.handler = old_broker
    conn = make_conn(peer)
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    assert [h["api_version"] for h, _ in peer.requests] == [4, 2]


def test_closed_by_peer_fails_requests(peer):
    conn = make_conn(peer)
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    got = []
    peer.handler = lambda h, b: None
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append(e))
    pump(conn, peer, lambda: len(peer.requests) == 2)
    peer.sock.close()
    peer.sock = None
    pump(conn, peer, lambda: got)
    assert isinstance(got[0], errors.KafkaConnectionError)


def test_sasl_plain_handshake(peer):
    def sasl(header, body):
        if header["api_name"] == "SaslHandshake":
            return {"error_code": 0, "mechanisms": ["PLAIN"]}
        if header["api_name"] == "SaslAuthenticate":
            ok = body["auth_bytes"] == b"\0alice\0secret"
            return {"error_code": 0 if ok else 58, "error_message": None if ok else "Authentication failed",
                    "auth_bytes": b""}
        return default_handler(header, body)

    peer.handler = sasl
    conn = make_conn(peer, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                     sasl_plain_username="alice", sasl_plain_password="secret")
    conn.connect()
    pump(conn, peer, lambda: conn.ready)
    assert [h["api_name"] for h, _ in peer.requests] == ["ApiVersions", "SaslHandshake", "SaslAuthenticate"]

    other = ScriptedPeer(sasl)
    try:
        bad = make_conn(other, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                        sasl_plain_username="alice", sasl_plain_password="wrong")
        bad.connect()
        pump(bad, other, lambda: bad.state is ConnectionState.DISCONNECTED and bad.last_error is not None)
        assert isinstance(bad.last_error, errors.SaslAuthenticationFailedError)
    finally:
        other.close()


# --- SCRAM (RFC 7677's SHA-256 example) ------------------------------------------------------

RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha256_rfc7677_vector():
    sasl = SaslExchange("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    assert sasl.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert sasl.receive(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert sasl.receive(RFC_SERVER_FINAL) is None


def test_scram_rejects_a_wrong_server_signature():
    sasl = SaslExchange("SCRAM-SHA-256", "user", "pencil", nonce=RFC_NONCE)
    sasl.first_message()
    sasl.receive(RFC_SERVER_FIRST)
    forged = b"v=" + base64.b64encode(b"\0" * 32)
    with pytest.raises(errors.SaslAuthenticationFailedError):
        sasl.receive(forged)


@pytest.mark.parametrize("server_first", [
    b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  # nonce not extending ours
    b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000",  # too few iterations
    b"r=rOprNGfwEbeRWgbNEkqOxyz,s=!!!,i=4096",  # salt not base64
    b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096",  # no salt
])
def test_scram_rejects_bad_server_first(server_first):
    sasl = SaslExchange("SCRAM-SHA-512", "user", "pencil", nonce=RFC_NONCE)
    sasl.first_message()
    with pytest.raises(errors.SaslAuthenticationFailedError):
        sasl.receive(server_first)


def test_scram_escapes_the_user_name():
    sasl = SaslExchange("SCRAM-SHA-512", "a=b,c", "x", nonce="n")
    assert sasl.first_message() == b"n,,n=a=3Db=2Cc,r=n"


def test_plain_message():
    assert SaslExchange("PLAIN", "u", "p").first_message() == b"\0u\0p"
