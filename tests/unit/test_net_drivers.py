"""One protocol suite for the three drivers of the connection core
(fastkc.net.core): the socket driver under a selector (fastkc.conn), the
blocking driver (fastkc.net.blocking) and the asyncio driver
(fastkc.net.aio), each against the fake broker of tests/support/fake_broker.py over
real sockets. The scenarios are the same for all three; so are the typed
errors, since the core makes them."""
import asyncio
import socket
import ssl
import struct
import time
import types

import pytest

from fastkc import errors
from fastkc.config import consumer_config
from fastkc.conn import FIRST_FRAME_CHUNK, BrokerConnection, ConnectionState
from fastkc.net.aio import AioConnection
from fastkc.net.blocking import BlockingConnection
from fastkc.protocol import codec
from tests.support import fake_broker as kit
from tests.support.conn_driver import drive
from tests.support.framing import frame

METADATA = {"topics": []}


class SocketDriver:
    """BrokerConnection, driven as KafkaClient.poll drives it."""

    name = "socket"

    def open(self, broker, ssl_context=None, **config):
        config.setdefault("bootstrap_servers", broker.bootstrap)
        config.setdefault("fetch_max_wait_ms", 100)
        self.conn = BrokerConnection("127.0.0.1", broker.port, consumer_config(config), ssl_context=ssl_context)
        self.conn.connect()
        drive(self.conn, lambda: self.conn.ready or self.conn.state is ConnectionState.DISCONNECTED, timeout=5)
        if not self.conn.ready:
            raise self.conn.last_error
        return self

    @property
    def api_versions(self):
        return self.conn.api_versions

    @property
    def core(self):
        return self.conn.core

    def requests(self, n, timeout_ms=None):
        got = []
        # as KafkaClient.ready() does: a due re-authentication goes first, the request waits
        self.conn.maybe_reauthenticate()
        drive(self.conn, lambda: self.conn.state is not ConnectionState.REAUTHENTICATING, timeout=5)
        for _ in range(n):
            self.conn.send("Metadata", METADATA, lambda p, e: got.append((p, e)), timeout_ms=timeout_ms)
        drive(self.conn, lambda: len(got) == n, timeout=5)
        for _, error in got:
            if error is not None:
                raise error
        return [payload for payload, _ in got]

    def close(self):
        self.conn.close()


class BlockingDriver:
    name = "blocking"

    def open(self, broker, ssl_context=None, **config):
        timeout = config.pop("request_timeout_ms", 5000) / 1000.0
        self.conn = BlockingConnection("127.0.0.1", broker.port, timeout=timeout, ssl_context=ssl_context,
                                       config=config)
        return self

    @property
    def api_versions(self):
        return self.conn.api_versions

    @property
    def core(self):
        return self.conn._core

    def requests(self, n, timeout_ms=None):
        # one request at a time: in order by construction, ids checked by the core
        return [self.conn.request_raw("Metadata", METADATA) for _ in range(n)]

    def close(self):
        self.conn.close()


class AioDriver:
    name = "aio"

    def open(self, broker, ssl_context=None, **config):
        self.loop = asyncio.new_event_loop()
        self.conn = AioConnection("127.0.0.1", broker.port, config, ssl_context=ssl_context)
        try:
            self.loop.run_until_complete(asyncio.wait_for(self.conn.connect(), 5))
        except BaseException:
            self.loop.close()
            raise
        return self

    @property
    def api_versions(self):
        return self.conn.api_versions

    @property
    def core(self):
        return self.conn.core

    def requests(self, n, timeout_ms=None):
        async def pipelined():
            calls = [self.conn.request("Metadata", METADATA, timeout_ms=timeout_ms, raw=True) for _ in range(n)]
            return await asyncio.wait_for(asyncio.gather(*calls), 5)

        return self.loop.run_until_complete(pipelined())

    def close(self):
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


DRIVERS = [SocketDriver, BlockingDriver, AioDriver]


@pytest.fixture(params=DRIVERS, ids=[d.name for d in DRIVERS])
def driver(request):
    return request.param()


@pytest.fixture
def broker():
    with kit.FakeBroker() as b:
        yield b
        assert not b.errors


def _ids(payloads):
    return [struct.unpack_from(">i", p)[0] for p in payloads]


def test_negotiation_picks_the_highest_common_versions(driver, broker):
    conn = driver.open(broker)
    try:
        assert broker.requests[0] == ("ApiVersions", 4)
        assert conn.api_versions[3][1] >= 12  # Metadata, as the kit advertises every version it knows
        payloads = conn.requests(1)
        assert broker.requests[-1][0] == "Metadata"
        _, answer = codec.decode_response("Metadata", broker.requests[-1][1], payloads[0])
        assert [b["node_id"] for b in answer["brokers"]] == [1]
    finally:
        conn.close()


def test_an_old_broker_answers_in_the_v0_layout_and_we_ask_again(driver, broker):
    def v0_layout(link, request):
        link.send(frame(codec.encode_response("ApiVersions", 0, {
            "error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]},
            correlation_id=request.correlation_id)))

    broker.script("ApiVersions", v0_layout, times=1)
    conn = driver.open(broker)
    try:
        assert [v for name, v in broker.requests if name == "ApiVersions"] == [4, 2]
        assert len(conn.requests(1)) == 1
    finally:
        conn.close()


def test_requests_are_answered_in_order(driver, broker):
    conn = driver.open(broker, max_in_flight_requests_per_connection=5)
    try:
        payloads = conn.requests(5)
        ids = _ids(payloads)
        assert ids == sorted(ids) and len(set(ids)) == 5 and ids[0] == 1  # ApiVersions was 0
    finally:
        conn.close()


def test_a_frame_over_the_limit_fails_at_once(driver, broker):
    broker.script("Metadata", kit.huge_frame(0x7FFFFFF0))
    conn = driver.open(broker)
    try:
        with pytest.raises(errors.KafkaProtocolError, match="frame size 2147483632 .* is outside"):
            conn.requests(1)
    finally:
        conn.close()


def test_a_truncated_frame_then_eof_is_a_connection_error(driver, broker):
    def cut_then_close(link, request):
        whole = request.framed()
        link.send(whole[:len(whole) // 2])
        link.shut()

    broker.script("Metadata", cut_then_close)
    conn = driver.open(broker)
    try:
        with pytest.raises(errors.KafkaConnectionError, match="closed the connection"):
            conn.requests(1)
    finally:
        conn.close()


def test_a_wrong_correlation_id_fails_the_request(driver, broker):
    broker.script("Metadata", kit.wrong_correlation())
    conn = driver.open(broker)
    try:
        with pytest.raises(errors.CorrelationIdError, match="expected correlation id 1, got 1001"):
            conn.requests(1)
    finally:
        conn.close()


def test_a_silent_broker_times_the_request_out(driver, broker):
    broker.script("Metadata", kit.silence())
    conn = driver.open(broker, request_timeout_ms=300)
    try:
        with pytest.raises(errors.KafkaTimeoutError, match="Metadata to .*: no answer within 300 ms"):
            conn.requests(1)
    finally:
        conn.close()


def test_a_silent_handshake_times_out(driver, broker):
    broker.script("ApiVersions", kit.silence())
    with pytest.raises(errors.KafkaTimeoutError, match="ApiVersions to .*: no answer within 300 ms"):
        driver.open(broker, request_timeout_ms=300)


def test_a_refused_connection_is_a_connection_error(driver):
    spare = socket.create_server(("127.0.0.1", 0))
    port = spare.getsockname()[1]
    spare.close()  # nothing listens there now
    nowhere = types.SimpleNamespace(port=port, bootstrap="127.0.0.1:{0}".format(port))
    with pytest.raises(errors.KafkaConnectionError, match="connect"):
        driver.open(nowhere)


SASL = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice"}


def test_sasl_plain_accepted(driver):
    with kit.FakeBroker(sasl=("alice", "secret")) as broker:
        conn = driver.open(broker, sasl_plain_password="secret", **SASL)
        try:
            assert [name for name, _ in broker.requests] == ["ApiVersions", "SaslHandshake", "SaslAuthenticate"]
            assert len(conn.requests(2)) == 2
        finally:
            conn.close()


def test_sasl_plain_refused(driver):
    with kit.FakeBroker(sasl=("alice", "secret")) as broker:
        with pytest.raises(errors.SaslAuthenticationFailedError, match="SASL PLAIN authentication .* failed"):
            driver.open(broker, sasl_plain_password="wrong", **SASL)


def test_sasl_reauthenticates_on_the_same_connection(driver):
    # KIP-368: a session of 300 ms, requests for a second: the driver's
    # ticks (or the blocking driver's check before a request) re-authenticate
    with kit.FakeBroker(sasl=("alice", "secret"), session_lifetime_ms=300) as broker:
        conn = driver.open(broker, sasl_plain_password="secret", **SASL)
        try:
            began = time.monotonic()
            while time.monotonic() - began < 1.0:
                assert len(conn.requests(1)) == 1
                time.sleep(0.05)
            assert conn.core.reauthentications >= 2 and conn.core.ready
            assert broker.connections == 1 and broker.count("SaslHandshake") == 1 + conn.core.reauthentications
        finally:
            conn.close()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from fastkc_tools.broker import certs

    mine = certs.generate(str(tmp_path_factory.mktemp("tls-broker")))
    other = certs.generate(str(tmp_path_factory.mktemp("tls-other")))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(mine.broker_keystore)
    return mine, other, server


def _client_context(cafile):
    context = ssl.create_default_context(cafile=cafile)
    return context


def test_tls_handshake_then_requests(driver, tls):
    mine, _, server = tls
    with kit.FakeBroker(tls=server) as broker:
        conn = driver.open(broker, ssl_context=_client_context(mine.ca), security_protocol="SSL")
        try:
            assert len(conn.requests(3)) == 3
        finally:
            conn.close()


def test_tls_with_an_untrusted_certificate_is_refused_for_good(driver, tls):
    _, other, server = tls
    with kit.FakeBroker(tls=server) as broker:
        with pytest.raises(errors.SslAuthenticationError, match="CERTIFICATE_VERIFY_FAILED") as info:
            driver.open(broker, ssl_context=_client_context(other.ca), security_protocol="SSL")
        assert not info.value.retriable


@pytest.mark.parametrize("size", [256 << 10, 5 * FIRST_FRAME_CHUNK + 12345], ids=["256K", "5M"])
@pytest.mark.parametrize("secure", [False, True], ids=["plain", "tls"])
def test_large_answers_arrive_whole(driver, tls, secure, size):
    # answers of many TLS records, and beyond the first frame chunk: the
    # frame's buffer grows while the driver reads into it
    mine, _, server = tls
    body = bytes(range(256)) * (size // 256)

    def big(link, request):
        # the kit's 50 ms socket timeout bounds a whole sendall: too short
        # for megabytes through TLS on a busy machine
        link.sock.settimeout(10.0)
        link.send(frame(struct.pack(">i", request.correlation_id) + body))
        link.sock.settimeout(0.05)

    with kit.FakeBroker(tls=server if secure else None) as broker:
        broker.script("Metadata", big)
        extra = {"ssl_context": _client_context(mine.ca), "security_protocol": "SSL"} if secure else {}
        conn = driver.open(broker, receive_message_max_bytes=64 << 20, **extra)
        try:
            payloads = conn.requests(2)
            assert [len(p) for p in payloads] == [4 + len(body)] * 2
            assert [p[4:] == body for p in payloads] == [True, True]
        finally:
            conn.close()


def test_aio_a_cancelled_request_leaves_the_connection_usable(broker):
    broker.script("Metadata", kit.delay(150), times=1)

    async def scenario():
        conn = AioConnection("127.0.0.1", broker.port)
        await conn.connect()
        slow = asyncio.ensure_future(conn.request("Metadata", METADATA))
        await asyncio.sleep(0.05)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        # the next answer is this request's, not the cancelled one's
        payload = await asyncio.wait_for(conn.request("Metadata", METADATA, raw=True), 2)
        state = conn.state
        await conn.close()
        return payload, state

    payload, state = asyncio.run(scenario())
    assert struct.unpack_from(">i", payload)[0] == 2 and state is ConnectionState.READY


def test_aio_waits_for_room_beyond_the_in_flight_limit(broker):
    broker.script("Metadata", kit.delay(50))

    async def scenario():
        conn = AioConnection("127.0.0.1", broker.port, {"max_in_flight_requests_per_connection": 2})
        await conn.connect()
        most = 0

        async def one():
            nonlocal most
            most = max(most, conn.core.in_flight_count())
            return await conn.request("Metadata", METADATA, raw=True)

        payloads = await asyncio.wait_for(asyncio.gather(*[one() for _ in range(6)]), 5)
        await conn.close()
        return payloads, most

    payloads, most = asyncio.run(scenario())
    assert _ids(payloads) == [1, 2, 3, 4, 5, 6] and most <= 2


def test_aio_a_failed_connection_fails_every_waiting_request(broker):
    broker.script("Metadata", kit.close())

    async def scenario():
        conn = AioConnection("127.0.0.1", broker.port)
        await conn.connect()
        results = await asyncio.gather(*[conn.request("Metadata", METADATA) for _ in range(3)],
                                       return_exceptions=True)
        after = None
        try:
            await conn.request("Metadata", METADATA)
        except errors.KafkaError as exc:
            after = exc
        await conn.close()
        return results, after

    results, after = asyncio.run(scenario())
    assert all(isinstance(r, errors.KafkaConnectionError) for r in results), results
    assert isinstance(after, errors.KafkaConnectionError)


def test_aio_a_slow_token_provider_does_not_stall_the_loop():
    # OAUTHBEARER's token() may call an identity provider over HTTP: the
    # asyncio driver runs it off the loop, which keeps ticking meanwhile
    from fastkc.auth.oauthbearer import UnsecuredTokenProvider
    from tests.support.fake_broker import OAuthFakeBroker

    class SlowProvider(UnsecuredTokenProvider):
        def token(self):
            time.sleep(0.3)
            return super().token()

    async def scenario(port):
        conn = AioConnection("127.0.0.1", port, {
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": SlowProvider("alice"), "request_timeout_ms": 2000})
        gaps = []

        async def heartbeat():
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        beat = asyncio.ensure_future(heartbeat())
        began = time.monotonic()
        await conn.connect()
        took = time.monotonic() - began
        payload = await conn.request("Metadata", METADATA, raw=True)
        beat.cancel()
        await conn.close()
        return took, max(gaps), payload

    with OAuthFakeBroker("accept") as broker:
        took, worst_gap, payload = asyncio.run(scenario(broker.port))
        assert broker.received and broker.received[0].startswith(b"n,,\x01auth=Bearer ")
    assert took >= 0.3 and worst_gap < 0.15 and len(payload) > 4
