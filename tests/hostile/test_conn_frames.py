"""One BrokerConnection against the fake broker: frame sizes per phase, frame
buffers grown as bytes arrive, TLS failures and handshake timeouts."""
import ssl
import struct
import time

import pytest

from fastkc import errors
from fastkc.config import build_ssl_context, consumer_config
from fastkc.conn import FIRST_FRAME_CHUNK, HANDSHAKE_MAX_FRAME, BrokerConnection, ConnectionState
from tests.support import fake_broker as kit
from tests.support.conn_driver import drive
from tests.support.framing import frame


def _conn(broker, ssl_context=None, **configs):
    configs.setdefault("bootstrap_servers", broker.bootstrap)
    configs.setdefault("request_timeout_ms", 300)
    configs.setdefault("fetch_max_wait_ms", 100)
    return BrokerConnection("127.0.0.1", broker.port, consumer_config(configs), ssl_context=ssl_context)


@pytest.fixture
def broker():
    with kit.FakeBroker() as b:
        yield b


@pytest.mark.parametrize("size", [FIRST_FRAME_CHUNK - 3, FIRST_FRAME_CHUNK + 1, 5 * FIRST_FRAME_CHUNK + 12345])
def test_frames_larger_than_the_first_chunk_arrive_whole(broker, size):
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)

    def big(link, request):
        link.send(frame(struct.pack(">i", request.correlation_id) + body))

    broker.script("Metadata", big)
    conn = _conn(broker)
    conn.connect()
    drive(conn, lambda: conn.ready)
    got = []
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append((p, e)))
    drive(conn, lambda: got)
    payload, error = got[0]
    assert error is None
    assert len(payload) == 4 + size and payload[4:] == body
    conn.close()


def test_a_huge_announced_frame_costs_one_chunk(broker):
    broker.script("Metadata", kit.huge_frame(90_000_000))
    conn = _conn(broker)
    conn.connect()
    drive(conn, lambda: conn.ready)
    got = []
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append((p, e)))
    drive(conn, lambda: conn.core._body is not None and conn.core._body_got >= 4)
    assert len(conn.core._body) == FIRST_FRAME_CHUNK
    drive(conn, lambda: got)  # then the request times out
    assert isinstance(got[0][1], errors.KafkaTimeoutError)
    assert conn.state is ConnectionState.DISCONNECTED


@pytest.mark.parametrize("stage", ["ApiVersions", "SaslHandshake", "SaslAuthenticate"])
def test_a_frame_too_big_for_the_handshake_fails_at_once(broker, stage):
    broker.sasl = ("alice", "secret")
    broker.script(stage, kit.huge_frame(HANDSHAKE_MAX_FRAME + 1))
    conn = _conn(broker, request_timeout_ms=5000, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                 sasl_plain_username="alice", sasl_plain_password="secret")
    began = time.monotonic()
    conn.connect()
    drive(conn, lambda: conn.state is ConnectionState.DISCONNECTED)
    assert time.monotonic() - began < 1.0
    assert isinstance(conn.last_error, errors.KafkaProtocolError) and "before the connection is ready" in \
        str(conn.last_error)


# --- TLS ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from fastkc_tools.broker import certs

    mine = certs.generate(str(tmp_path_factory.mktemp("tls-broker")))
    other = certs.generate(str(tmp_path_factory.mktemp("tls-other")))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(mine.broker_keystore)
    return mine, other, server


def _tls_client(broker, cafile):
    config = consumer_config({"bootstrap_servers": broker.bootstrap, "security_protocol": "SSL",
                              "ssl_cafile": cafile, "request_timeout_ms": 500, "fetch_max_wait_ms": 100})
    return BrokerConnection("127.0.0.1", broker.port, config, ssl_context=build_ssl_context(config))


def test_tls_handshake_completes_against_the_kit(tls):
    mine, _, server = tls
    with kit.FakeBroker(tls=server) as broker:
        conn = _tls_client(broker, mine.ca)
        conn.connect()
        drive(conn, lambda: conn.ready or conn.state is ConnectionState.DISCONNECTED)
        assert conn.ready, conn.last_error
        conn.close()


def test_a_certificate_that_does_not_verify_fails_at_once_and_for_good(tls):
    _, other, server = tls
    with kit.FakeBroker(tls=server) as broker:
        conn = _tls_client(broker, other.ca)  # trusts another CA
        began = time.monotonic()
        conn.connect()
        drive(conn, lambda: conn.state is ConnectionState.DISCONNECTED)
        assert time.monotonic() - began < 0.5
        assert isinstance(conn.last_error, errors.SslAuthenticationError)
        assert isinstance(conn.last_error, errors.KafkaConnectionError) and not conn.last_error.retriable


def _mtls_server(tls):
    mine, _, _ = tls
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(mine.broker_keystore)
    server.load_verify_locations(mine.ca)
    server.verify_mode = ssl.CERT_REQUIRED  # as ssl.client.auth=required
    return server


@pytest.mark.parametrize("with_certificate", [False, True], ids=["no-cert", "cert"])
def test_a_tls13_refusal_after_the_handshake_is_fatal_at_once(tls, with_certificate):
    # TLS 1.3: the client's handshake ends before the server has judged the
    # client certificate; its refusal is an alert on the first exchange
    # (ApiVersions). That is SslAuthenticationError, not a retriable drop.
    mine, _, _ = tls
    with kit.FakeBroker(tls=_mtls_server(tls)) as broker:
        extra = {"ssl_certfile": mine.client_cert, "ssl_keyfile": mine.client_key} if with_certificate else {}
        config = consumer_config(dict({"bootstrap_servers": broker.bootstrap, "security_protocol": "SSL",
                                       "ssl_cafile": mine.ca, "request_timeout_ms": 2000}, **extra))
        conn = BrokerConnection("127.0.0.1", broker.port, config, ssl_context=build_ssl_context(config))
        began = time.monotonic()
        conn.connect()
        drive(conn, lambda: conn.ready or conn.state is ConnectionState.DISCONNECTED)
        if with_certificate:
            assert conn.ready, conn.last_error
            conn.close()
            return
        assert time.monotonic() - began < 1.0
        assert isinstance(conn.last_error, errors.SslAuthenticationError), repr(conn.last_error)
        assert "ALERT_CERTIFICATE_REQUIRED" in str(conn.last_error)


def test_a_tls_broker_closing_after_the_handshake_stays_retriable(tls):
    # A plain close (EOF) after a good handshake is a connection failure like
    # any other: retried, never mistaken for a TLS refusal.
    mine, _, server = tls
    with kit.FakeBroker(tls=server) as broker:
        broker.script("ApiVersions", kit.close())
        conn = _tls_client(broker, mine.ca)
        conn.connect()
        drive(conn, lambda: conn.state is ConnectionState.DISCONNECTED)
        assert type(conn.last_error) is errors.KafkaConnectionError, repr(conn.last_error)
        assert conn.last_error.retriable


def test_a_silent_tls_server_times_out_the_handshake(tls):
    mine, _, _ = tls
    with kit.FakeBroker() as broker:  # plain TCP that never speaks TLS
        broker.script("connect", kit.silence())
        conn = _tls_client(broker, mine.ca)
        began = time.monotonic()
        conn.connect()
        drive(conn, lambda: conn.state is ConnectionState.DISCONNECTED)
        assert 0.4 < time.monotonic() - began < 1.5
        assert isinstance(conn.last_error, errors.KafkaTimeoutError)


def test_a_request_with_its_own_timeout_outlives_request_timeout_ms(broker):
    broker.script("Metadata", kit.silence())
    conn = _conn(broker, request_timeout_ms=300)
    conn.connect()
    drive(conn, lambda: conn.ready)
    got = []
    began = time.monotonic()
    conn.send("Metadata", {"topics": []}, lambda p, e: got.append(e), timeout_ms=900)
    drive(conn, lambda: got)
    assert 0.85 < time.monotonic() - began < 1.5
    assert isinstance(got[0], errors.KafkaTimeoutError) and "900 ms" in str(got[0])
