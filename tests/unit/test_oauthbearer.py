"""OAUTHBEARER: the client first message against kafka-python's own code, the
configuration checks, the exchange's error flow, and the OIDC provider's
cache / refresh / retry rules against a scripted token endpoint on 127.0.0.1."""
import base64
import json
import pickle
import threading
import time
import types
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest

from fastkc import KafkaConsumer
from fastkc.auth import AbstractTokenProvider, oauthbearer, oidc
from fastkc.errors import KafkaConfigurationError, SaslAuthenticationFailedError

kp_oauth = pytest.importorskip("kafka.net.sasl.oauth")

SECRET = "s3cr3t:with/odd+chars&more"


def _unsigned_jwt(sub="alice", lifetime=3600, now=None, **claims):
    now = int(time.time() if now is None else now)
    body = {"sub": sub, "iat": now, "exp": now + lifetime}
    body.update(claims)
    return jwt.encode(body, "k" * 32, algorithm="HS256")


class KafkaPythonProvider(kp_oauth.AbstractTokenProvider):
    """A provider written for kafka-python 3.0.12, unchanged."""

    def __init__(self, token, extensions=None):
        super().__init__()
        self._token = token
        self._extensions = extensions or {}
        self.calls = 0

    def token(self):
        self.calls += 1
        return self._token

    def extensions(self):
        return self._extensions


# --- the client first message: kafka-python is the oracle ------------------------------

@pytest.mark.parametrize("extensions", [
    {},
    {"traceId": "abc"},
    {"logicalCluster": "lkc-123", "identityPoolId": "pool-9Ab", "x": "v w\tz"},
])
def test_first_message_matches_kafka_python(extensions):
    token = _unsigned_jwt()
    provider = KafkaPythonProvider(token, extensions)
    theirs = kp_oauth.SaslMechanismOAuth(sasl_oauth_token_provider=provider).auth_bytes()
    ours = oauthbearer.new_exchange({"sasl_oauth_token_provider": provider}, "h").first_message()
    assert ours == theirs
    assert ours.startswith(b"n,,\x01auth=Bearer " + token.encode())
    assert ours.endswith(b"\x01\x01")


def test_kafka_python_provider_passes_fastkc_config_check():
    provider = KafkaPythonProvider(_unsigned_jwt(), {"traceId": "t"})
    oauthbearer.check_config({"sasl_oauth_token_provider": provider})
    # and through the consumer's own validation (construction fails later, at bootstrap)
    from fastkc.config import consumer_config

    consumer_config(dict(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider))


def test_token_fetched_per_authentication():
    # A fresh exchange per connection / re-authentication asks again, so a
    # refreshing provider hands out fresh tokens.
    provider = KafkaPythonProvider(_unsigned_jwt())
    for _ in range(3):
        oauthbearer.new_exchange({"sasl_oauth_token_provider": provider}, "h").first_message()
    assert provider.calls == 3


def test_abstract_token_provider_shape():
    with pytest.raises(TypeError):
        AbstractTokenProvider()

    class Mine(AbstractTokenProvider):
        def token(self):
            return "t"

    assert Mine().extensions() == {}
    assert oauthbearer.AbstractTokenProvider is AbstractTokenProvider


# --- configuration errors --------------------------------------------------------------

def _consumer_kwargs(provider):
    return dict(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                sasl_oauth_token_provider=provider)


class _NoToken:
    def extensions(self):
        return {}


class _Ext:
    def __init__(self, ext):
        self.ext = ext

    def token(self):
        return "t"

    def extensions(self):
        return self.ext


@pytest.mark.parametrize("provider, match", [
    (None, "sasl_oauth_token_provider is required"),
    (_NoToken(), "sasl_oauth_token_provider must have a token"),
    (_Ext({"auth": "x"}), "'auth' is reserved"),
    (_Ext({"trace1": "x"}), "ASCII letters"),
    (_Ext({"": "x"}), "ASCII letters"),
    (_Ext({"trace": ""}), "value of extension 'trace'"),
    (_Ext({"trace": "a\x01b"}), "value of extension 'trace'"),
    (_Ext({"trace": 5}), "value of extension 'trace'"),
    (_Ext(["trace"]), "must return a dict"),
])
def test_construction_rejects(provider, match):
    started = time.monotonic()
    with pytest.raises(KafkaConfigurationError, match=match) as info:
        KafkaConsumer(**_consumer_kwargs(provider))
    assert time.monotonic() - started < 1.0  # no connection attempted
    assert "a\x01b" not in str(info.value)


def test_extensions_raising_at_construction():
    class Boom(_Ext):
        def extensions(self):
            raise RuntimeError("cannot")

    with pytest.raises(KafkaConfigurationError, match=r"extensions\(\) raised RuntimeError"):
        KafkaConsumer(**_consumer_kwargs(Boom({})))


# --- the exchange ----------------------------------------------------------------------

class _Returns:
    def __init__(self, value):
        self.value = value

    def token(self):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.mark.parametrize("value, match", [
    (RuntimeError("the secret hunter2 leaked"), r"token\(\) raised RuntimeError"),
    ("", "an empty str"),
    (None, "NoneType"),
    (b"bytes-token", "bytes"),
    ("abc\x01auth=Bearer evil", "b64token"),
    ("has space", "b64token"),
])
def test_bad_provider_answers_are_typed(value, match):
    exchange = oauthbearer.new_exchange({"sasl_oauth_token_provider": _Returns(value)}, "h")
    with pytest.raises(SaslAuthenticationFailedError, match=match) as info:
        exchange.first_message()
    assert "OAUTHBEARER" in str(info.value)
    assert "hunter2" not in str(info.value) and "evil" not in str(info.value)


def test_success_and_refusal_flow():
    exchange = oauthbearer.new_exchange({"sasl_oauth_token_provider": _Returns(_unsigned_jwt())}, "h")
    exchange.first_message()
    assert exchange.receive(b"") is None

    exchange = oauthbearer.new_exchange({"sasl_oauth_token_provider": _Returns(_unsigned_jwt())}, "h")
    exchange.first_message()
    # RFC 7628 3.2.2: the error challenge is answered with a single \x01 ...
    assert exchange.receive(b'{"status":"invalid_token","scope":"x"}') == b"\x01"
    assert exchange.status == "invalid_token"
    # ... and a server that then reports success has still refused.
    with pytest.raises(SaslAuthenticationFailedError, match="refused the token .status invalid_token"):
        exchange.receive(b"")


def test_unreadable_error_challenge():
    exchange = oauthbearer.new_exchange({"sasl_oauth_token_provider": _Returns(_unsigned_jwt())}, "h")
    exchange.first_message()
    assert exchange.receive(b"\xff\xfe not json") == b"\x01"
    assert exchange.status == "unreadable error message"


# --- the OIDC provider against a scripted token endpoint --------------------------------

class TokenEndpoint:
    """A token endpoint on 127.0.0.1 whose answers a test scripts:
    `script` is a list of (status, body) or callables(request) → (status,
    body); the last entry repeats. Records every request."""

    def __init__(self, script, delay=0.0):
        self.script = list(script)
        self.requests = []
        self.delay = delay
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                endpoint.requests.append({"headers": dict(self.headers), "body": body, "path": self.path})
                step = endpoint.script[min(len(endpoint.requests) - 1, len(endpoint.script) - 1)]
                status, payload = step(endpoint.requests[-1]) if callable(step) else step
                if endpoint.delay:
                    time.sleep(endpoint.delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:{0}/oauth2/token".format(self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint_factory():
    made = []

    def make(script, delay=0.0):
        made.append(TokenEndpoint(script, delay))
        return made[-1]

    yield make
    for endpoint in made:
        endpoint.close()


def _ok(**kwargs):
    return lambda request: (200, {"access_token": _unsigned_jwt(**kwargs), "token_type": "Bearer"})


def _provider(url, **kwargs):
    kwargs.setdefault("retry_backoff_ms", 50)
    kwargs.setdefault("retry_backoff_max_ms", 1000)
    return oidc.OidcClientCredentialsProvider(url, "my client", SECRET, **kwargs)


def test_request_is_javas_client_credentials_grant(endpoint_factory):
    ep = endpoint_factory([_ok()])
    provider = _provider(ep.url, scope="kafka read")
    token = provider.token()
    assert jwt.decode(token, options={"verify_signature": False})["sub"] == "alice"
    request = ep.requests[0]
    assert urllib.parse.parse_qs(request["body"]) == {"grant_type": ["client_credentials"], "scope": ["kafka read"]}
    pair = base64.b64decode(request["headers"]["Authorization"].split(" ", 1)[1]).decode()
    # Java URL-encodes both halves before joining them with ':'
    assert pair == urllib.parse.quote_plus("my client") + ":" + urllib.parse.quote_plus(SECRET)
    assert request["headers"]["Accept"] == "application/json"


def test_sub_claim_name_is_configurable(endpoint_factory):
    ep = endpoint_factory([lambda r: (200, {"access_token": jwt.encode(
        {"client_id": "app", "exp": time.time() + 600}, "k" * 32, algorithm="HS256")})])
    assert _provider(ep.url, sub_claim_name="client_id").token()
    with pytest.raises(SaslAuthenticationFailedError, match="no sub claim"):
        _provider(ep.url).token()


def test_token_is_cached(endpoint_factory):
    ep = endpoint_factory([_ok()])
    provider = _provider(ep.url)
    assert provider.token() == provider.token() == provider.token()
    assert len(ep.requests) == 1 and provider.fetches == 1


def test_401_fails_fast_without_the_secret(endpoint_factory):
    ep = endpoint_factory([(401, {"error": "invalid_client", "error_description": "bad secret " + SECRET})])
    provider = _provider(ep.url, retry_backoff_max_ms=10000)
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as info:
        provider.token()
    assert time.monotonic() - started < 1.0
    assert len(ep.requests) == 1
    message = str(info.value)
    assert "OAUTHBEARER" in message and ep.url in message and "HTTP 401" in message and "invalid_client" in message
    assert SECRET not in message and "s3cr3t" not in message


def test_500_then_200_is_retried(endpoint_factory):
    ep = endpoint_factory([(500, {"error": "server_error"}), (503, b"busy"), _ok()])
    provider = _provider(ep.url)
    assert provider.token()
    assert len(ep.requests) == 3


def test_endpoint_down_fails_within_the_bound():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    provider = _provider("http://127.0.0.1:{0}/token".format(port), retry_backoff_ms=50, retry_backoff_max_ms=800)
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError, match=r"failed [3-9] attempt\(s\)") as info:
        provider.token()
    elapsed = time.monotonic() - started
    assert 0.3 < elapsed < 1.3, elapsed  # backoffs 50+100+200(+400) ms, never past the budget
    assert "Connection" in str(info.value) and SECRET not in str(info.value)


def test_endpoint_that_is_not_http():
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve():
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        provider = _provider("http://127.0.0.1:{0}/token".format(server.getsockname()[1]),
                             retry_backoff_max_ms=400)
        with pytest.raises(SaslAuthenticationFailedError, match="malformed HTTP answer"):
            provider.token()
    finally:
        stop.set()
        thread.join(2)
        server.close()


def test_silent_endpoint_bounded_by_retry_budget(endpoint_factory):
    ep = endpoint_factory([_ok()], delay=5.0)
    provider = _provider(ep.url, retry_backoff_max_ms=700, read_timeout_ms=10000)
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError, match="token endpoint"):
        provider.token()
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("answer, match", [
    ((200, b"<html>gateway</html>"), "not JSON"),
    ((200, {"token_type": "Bearer"}), "without an access_token"),
    ((200, {"access_token": "opaque-not-a-jwt"}), "not a JWT"),
    ((200, {"access_token": jwt.encode({"sub": "a"}, "k" * 32, algorithm="HS256")}), "no numeric exp"),
    ((200, {"access_token": jwt.encode({"exp": time.time() + 600}, "k" * 32, algorithm="HS256")}), "no sub"),
    (lambda r: (200, {"access_token": _unsigned_jwt(lifetime=-10)}), "expired"),
])
def test_garbage_answers_are_typed(endpoint_factory, answer, match):
    ep = endpoint_factory([answer])
    with pytest.raises(SaslAuthenticationFailedError, match=match) as info:
        _provider(ep.url).token()
    assert len(ep.requests) == 1  # not retried
    assert SECRET not in str(info.value)


class _Clock:
    """oidc's view of time.time(), moved by the test."""

    def __init__(self, monkeypatch):
        self.now = time.time()
        monkeypatch.setattr(oidc, "time", types.SimpleNamespace(time=lambda: self.now, monotonic=time.monotonic,
                                                              sleep=time.sleep))


def test_refreshed_before_expiry_javas_window(endpoint_factory, monkeypatch):
    clock = _Clock(monkeypatch)
    issued = int(clock.now)
    ep = endpoint_factory([lambda r: (200, {"access_token": _unsigned_jwt(now=clock.now, lifetime=3600)})])
    provider = _provider(ep.url)
    first = provider.token()
    # Java: 0.8 of the lifetime plus up to 0.05 jitter, at least 300 s before expiry
    assert issued + 0.8 * 3600 <= provider.refresh_at <= issued + 0.85 * 3600 + 1
    clock.now = issued + 2870
    assert provider.token() == first and len(ep.requests) == 1
    clock.now = issued + 3100  # past the window, still before exp: renewed early, in the background
    assert provider.token() == first  # the cached token meanwhile: nobody waits on the endpoint
    assert provider.wait_for_renewal(10)
    second = provider.token()
    assert second != first and len(ep.requests) == 2
    assert provider.token() == second and len(ep.requests) == 2  # cached again


def test_a_slow_endpoint_does_not_delay_authentication_while_the_token_is_good(endpoint_factory, monkeypatch):
    clock = _Clock(monkeypatch)
    issued = int(clock.now)
    ep = endpoint_factory([lambda r: (200, {"access_token": _unsigned_jwt(now=clock.now, lifetime=3600)})])
    provider = _provider(ep.url, retry_backoff_max_ms=5000)
    first = provider.token()
    ep.delay = 1.0  # the identity provider turns slow
    clock.now = issued + 3100
    began = time.monotonic()
    assert provider.token() == first
    assert provider.token() == first  # one renewal, not one per call
    assert time.monotonic() - began < 0.5
    assert provider.wait_for_renewal(10)
    assert provider.token() != first and len(ep.requests) == 2


def test_a_token_about_to_expire_is_not_handed_out_while_renewing(endpoint_factory, monkeypatch):
    clock = _Clock(monkeypatch)
    issued = int(clock.now)
    ep = endpoint_factory([lambda r: (200, {"access_token": _unsigned_jwt(now=clock.now, lifetime=3600)})])
    provider = _provider(ep.url)
    first = provider.token()
    clock.now = issued + 3599  # 1 s left (the renewal never got a chance): fetch and wait
    second = provider.token()
    assert second != first and len(ep.requests) == 2


def test_short_lifetime_uses_the_factor_alone(endpoint_factory, monkeypatch):
    clock = _Clock(monkeypatch)
    issued = int(clock.now)
    ep = endpoint_factory([lambda r: (200, {"access_token": _unsigned_jwt(now=clock.now, lifetime=100)})])
    provider = _provider(ep.url)
    provider.token()
    # 100 s < min period (60) + buffer (300): Java ignores both
    assert issued + 80 <= provider.refresh_at <= issued + 86


def test_failed_refresh_keeps_a_valid_token_then_fails(endpoint_factory, monkeypatch):
    clock = _Clock(monkeypatch)
    issued = int(clock.now)
    ep = endpoint_factory([lambda r: (200, {"access_token": _unsigned_jwt(now=clock.now, lifetime=3600)}),
                           (503, b"down")])
    provider = _provider(ep.url, retry_backoff_max_ms=200)
    first = provider.token()
    clock.now = issued + 3300  # refresh due, endpoint failing, token still valid
    assert provider.token() == first
    assert provider.wait_for_renewal(10)  # the background renewal failed (after its retries)...
    asked = len(ep.requests)
    assert asked >= 2
    assert provider.token() == first and len(ep.requests) == asked  # ...and is not tried again at once
    clock.now = issued + 3700  # expired: no token to fall back on
    with pytest.raises(SaslAuthenticationFailedError, match="503"):
        provider.token()


def test_threads_share_one_fetch(endpoint_factory):
    ep = endpoint_factory([_ok()], delay=0.3)
    provider = _provider(ep.url)
    tokens = []
    threads = [threading.Thread(target=lambda: tokens.append(provider.token())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(tokens) == 8 and len(set(tokens)) == 1
    assert len(ep.requests) == 1


def test_pickle_and_repr_keep_no_secret_material(endpoint_factory):
    ep = endpoint_factory([_ok()])
    provider = _provider(ep.url, extensions={"traceId": "t1"})
    token = provider.token()
    clone = pickle.loads(pickle.dumps(provider))
    assert token.encode() not in pickle.dumps(provider)  # the cached token stays behind
    assert clone.token() and clone.extensions() == {"traceId": "t1"}
    assert SECRET not in repr(provider)


@pytest.mark.parametrize("kwargs, match", [
    (dict(token_endpoint_url="ftp://x/token"), "http"),
    (dict(token_endpoint_url=None), "http"),
    (dict(client_id=""), "client_id"),
    (dict(client_secret="  "), "client_secret"),
    (dict(extensions={"auth": "x"}), "reserved"),
    (dict(retry_backoff_ms=500, retry_backoff_max_ms=100), "retry_backoff_max_ms"),
    (dict(refresh_window_factor=0.2), "refresh_window_factor"),
])
def test_provider_configuration_errors(kwargs, match):
    args = dict(token_endpoint_url="http://127.0.0.1:1/token", client_id="c", client_secret=SECRET)
    args.update(kwargs)
    with pytest.raises(KafkaConfigurationError, match=match) as info:
        oidc.OidcClientCredentialsProvider(**args)
    assert SECRET not in str(info.value)
