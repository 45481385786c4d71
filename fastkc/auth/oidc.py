"""An OAuth 2 client-credentials token provider for OAUTHBEARER (OIDC).

What Java's OAuthBearerLoginCallbackHandler (ClientCredentialsJwtRetriever +
HttpJwtRetriever in kafka-clients 4.x) and librdkafka's
``sasl.oauthbearer.method=oidc`` do, as a kafka-python token provider::

    provider = OidcClientCredentialsProvider(
        "https://idp.example/oauth2/token", "my-client", "my-secret", scope="kafka")
    KafkaConsumer(..., security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                  sasl_oauth_token_provider=provider)

kafka-python 3.0.12 has no OIDC configuration keys (its users bring their own
provider), so this is an addition: the names follow Java's settings.

The request (as Java's ClientSecretRequestFormatter writes it): a POST of
``grant_type=client_credentials[&scope=...]`` with HTTP basic authentication,
``Basic base64(urlencode(client_id):urlencode(client_secret))``, and
``Accept: application/json``. The answer's ``access_token`` must be a JWT
with ``exp`` and ``sub`` (Java's client-side validation); its claims are read
without verifying the signature (the broker verifies it against its JWKS) --
pyjwt decodes them, so no JOSE is written by hand here.

Caching and refresh follow Java's ExpiringCredentialRefreshingLogin: a token
is renewed once ``refresh_window_factor`` (0.8) of its lifetime, plus up to
``refresh_window_jitter`` (0.05) at random, has passed, but not sooner than
``refresh_min_period_s`` (60 s) after it was issued and not later than
``refresh_buffer_s`` (300 s) before it expires (when the lifetime is too short
for both, the factor alone decides). Renewal starts in token(), i.e. when a
connection authenticates, but while the cached token still has at least
``_MIN_HANDED_OUT_S`` (or 5 % of its life) to live it runs on a short-lived
background thread and token() returns the cached token at once, so an
authentication -- a re-authentication in the middle of consuming, on the
poll thread -- never waits on a slow identity provider while a good token
exists (Java renews on its own refresh thread for the same reason). Only with
no usable token does token() fetch and wait. If renewal fails while the
cached token is still valid, that token is used (Java keeps its credential
too), the failure is logged, and renewal is tried again after
``retry_backoff_max_ms``.

Retries (Java's Retry + HttpJwtRetriever): connection errors, timeouts and
HTTP answers other than the 4xx client errors (400-407, 409-415) and 501/505
are retried with exponential backoff from ``retry_backoff_ms`` (100) for at
most ``retry_backoff_max_ms`` (10 s) in total; those client errors (a wrong
secret gives 401) fail at once. Failures are SaslAuthenticationFailedError
naming OAUTHBEARER, the endpoint and the cause, never the secret or a token.

HTTP is the standard library's urllib.request: one POST per refresh needs no
connection pooling or session, timeouts and an ssl.SSLContext are supported,
and it keeps the mechanism free of another dependency. It honours the
http(s)_proxy / no_proxy environment variables, as librdkafka's libcurl does
(Java's client uses the JVM's proxy properties instead).

Thread-safe: the fetch connections and the group coordinator's connection
authenticate from different threads; one lock makes them share one token and
one refresh.
"""
import base64
import http.client
import json
import logging
import random
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from fastkc.auth.oauthbearer import AbstractTokenProvider, check_extensions

# errors.py makes its code table's classes at import (globals()), which mypy
# cannot see; the ignore goes (warn_unused_ignores says so) once it declares them
from fastkc.errors import (
    KafkaConfigurationError,
    SaslAuthenticationFailedError,
)

log = logging.getLogger(__name__)

# Java's HttpJwtRetriever.UNRETRYABLE_HTTP_CODES (kafka-clients 4.3.1): 408
# (timeout) and 429 are retried among the 4xx, 501 and 505 are not among the 5xx.
UNRETRYABLE_HTTP_CODES = frozenset(list(range(400, 408)) + list(range(409, 416)) + [501, 505])
# A token endpoint answer larger than this is not a token response.
_MAX_RESPONSE_BYTES = 1024 * 1024
# A cached token due for renewal is still handed out (the renewal running in
# the background) while it has at least this long, or 5 % of its life, left.
_MIN_HANDED_OUT_S = 5.0


class OidcClientCredentialsProvider(AbstractTokenProvider):
    """Client-credentials grant against ``token_endpoint_url``; see the module
    docstring. Arguments (Java's setting in brackets):

    token_endpoint_url   [sasl.oauthbearer.token.endpoint.url] http(s) URL
    client_id, client_secret  [clientId / clientSecret JAAS options]
    scope                [scope] optional
    extensions           [extension_<name> JAAS options] SASL extensions (KIP-342)
    retry_backoff_ms, retry_backoff_max_ms  [sasl.login.retry.backoff(.max).ms]
    connect_timeout_ms, read_timeout_ms     [sasl.login.connect/read.timeout.ms]
        per HTTP request, also capped by what remains of retry_backoff_max_ms
    refresh_window_factor, refresh_window_jitter, refresh_min_period_s,
    refresh_buffer_s     [sasl.login.refresh.*]
    sub_claim_name       [sasl.oauthbearer.sub.claim.name] the claim that must name the principal
    ssl_context          an ssl.SSLContext for an https endpoint (default:
                         the system's trust store)
    """

    def __init__(self, token_endpoint_url: str, client_id: str, client_secret: str, scope: str | None = None,
                 extensions: Mapping[str, str] | None = None, *, retry_backoff_ms: float = 100,
                 retry_backoff_max_ms: float = 10000, connect_timeout_ms: float = 10000,
                 read_timeout_ms: float = 10000, refresh_window_factor: float = 0.8,
                 refresh_window_jitter: float = 0.05, refresh_min_period_s: float = 60,
                 refresh_buffer_s: float = 300, sub_claim_name: str = "sub",
                 ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__()
        url = urllib.parse.urlsplit(token_endpoint_url if isinstance(token_endpoint_url, str) else "")
        if url.scheme not in ("http", "https") or not url.netloc:
            raise KafkaConfigurationError(
                "token_endpoint_url (sasl.oauthbearer.token.endpoint.url) must be an http(s) URL, not {0!r}".format(
                    token_endpoint_url))
        # checked as values of any type: a caller's configuration is not bound by the annotations
        texts: tuple[tuple[str, object], ...] = (("client_id", client_id), ("client_secret", client_secret))
        for name, value in texts:
            if not isinstance(value, str) or not value.strip():
                raise KafkaConfigurationError("{0} must be a non-empty str for the OIDC token provider".format(name))
        if scope is not None and not isinstance(scope, str):
            raise KafkaConfigurationError("scope must be a str or None")
        numbers: tuple[tuple[str, object], ...] = (
            ("retry_backoff_ms", retry_backoff_ms), ("retry_backoff_max_ms", retry_backoff_max_ms),
            ("connect_timeout_ms", connect_timeout_ms), ("read_timeout_ms", read_timeout_ms),
            ("refresh_min_period_s", refresh_min_period_s), ("refresh_buffer_s", refresh_buffer_s))
        for name, number in numbers:
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
                raise KafkaConfigurationError("{0} must be a non-negative number, not {1!r}".format(name, number))
        if retry_backoff_max_ms < retry_backoff_ms:
            raise KafkaConfigurationError("retry_backoff_max_ms ({0}) is less than retry_backoff_ms ({1})".format(
                retry_backoff_max_ms, retry_backoff_ms))
        if not 0.5 <= refresh_window_factor <= 1.0:  # Java's bounds for sasl.login.refresh.window.factor
            raise KafkaConfigurationError("refresh_window_factor must be within [0.5, 1.0]")
        if not 0.0 <= refresh_window_jitter <= 0.25:  # Java's bounds for the jitter
            raise KafkaConfigurationError("refresh_window_jitter must be within [0, 0.25]")
        self.token_endpoint_url = token_endpoint_url
        self.client_id = client_id.strip()
        self._client_secret = client_secret.strip()
        self.scope = scope.strip() if scope and scope.strip() else None
        self._extensions = check_extensions(extensions, where="OIDC provider extensions")
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.read_timeout_ms = read_timeout_ms
        self.refresh_window_factor = refresh_window_factor
        self.refresh_window_jitter = refresh_window_jitter
        self.refresh_min_period_s = refresh_min_period_s
        self.refresh_buffer_s = refresh_buffer_s
        if not isinstance(sub_claim_name, str) or not sub_claim_name.strip():
            raise KafkaConfigurationError("sub_claim_name must be a non-empty str")
        self.sub_claim_name = sub_claim_name.strip()
        self.ssl_context = ssl_context
        try:
            import jwt  # noqa: F401  (checked here so a missing extra fails construction, not a connection)
        except ImportError:
            raise KafkaConfigurationError(
                "the OIDC token provider needs pyjwt: pip install 'fastkc[oauth]'") from None
        self._init_runtime()

    def _init_runtime(self) -> None:
        self._lock = threading.Lock()
        self._token: str | None = None
        self._issued_at = 0.0  # wall clock (the JWT's iat, or when it was fetched)
        self._expires_at = 0.0  # wall clock (the JWT's exp)
        self._refresh_at = 0.0  # wall clock
        self._renewal: threading.Thread | None = None  # the background renewal thread while one runs
        self.fetches = 0  # successful token fetches (for tests and metrics)

    # Picklable (the Spark source ships its consumer configuration to the
    # executors): the lock and the cached token stay behind; each process
    # fetches its own.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in ("_lock", "_token", "_issued_at", "_expires_at", "_refresh_at", "_renewal", "fetches"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_runtime()

    def __repr__(self) -> str:
        # Never the secret or the token.
        return "OidcClientCredentialsProvider({0!r}, client_id={1!r}, scope={2!r})".format(
            self.token_endpoint_url, self.client_id, self.scope)

    # --- kafka-python's token provider interface ------------------------------------
    def token(self) -> str:
        with self._lock:
            now = time.time()
            if self._token is not None and now < self._refresh_at:
                return self._token
            if self._token is not None and now < self._expires_at - self._handout_margin():
                # due for renewal but still good for a while: renew off this thread
                if self._renewal is None:
                    self._renewal = threading.Thread(target=self._renew_in_background, daemon=True,
                                                     name="fastkc-oidc-renewal")
                    self._renewal.start()
                return self._token
            # No usable token: fetch and wait (under the lock: callers on
            # other threads wait for this same fetch).
            try:
                self._store(*self._fetch())
            except SaslAuthenticationFailedError as exc:
                if self._token is not None and time.time() < self._expires_at:
                    log.warning("OAUTHBEARER: refreshing the token failed, the cached one is valid for %.0f s "
                                "more: %s", self._expires_at - time.time(), exc)
                    return self._token
                raise
            assert self._token is not None  # _store() just set it
            return self._token

    def wait_for_renewal(self, timeout: float | None = None) -> bool:
        """Wait until a background renewal in progress has ended (tests, and
        a caller about to shut down); True when none is running any more."""
        renewal = self._renewal
        if renewal is not None:
            renewal.join(timeout)
            return not renewal.is_alive()
        return True

    def _handout_margin(self) -> float:
        """A cached token closer than this to its expiry is not handed out
        while a renewal runs: the broker would grant a session about to end."""
        return max(_MIN_HANDED_OUT_S, 0.05 * (self._expires_at - self._issued_at))

    def _store(self, token: str, issued_at: float, expires_at: float) -> None:
        self._token = token
        self._issued_at = issued_at
        self._expires_at = expires_at
        self._refresh_at = self._refresh_time(issued_at, expires_at)
        self.fetches += 1

    def _renew_in_background(self) -> None:
        try:
            fetched = self._fetch()
        except SaslAuthenticationFailedError as exc:
            with self._lock:
                log.warning("OAUTHBEARER: renewing the token failed, the cached one is valid for %.0f s more: %s",
                            self._expires_at - time.time(), exc)
                # try again later, not at every authentication meanwhile
                self._refresh_at = time.time() + self.retry_backoff_max_ms / 1000.0
                self._renewal = None
            return
        except Exception:  # noqa: BLE001 - a thread must not die silently; the next token() fetches itself
            log.exception("OAUTHBEARER: renewing the token failed")
            with self._lock:
                self._renewal = None
            return
        with self._lock:
            self._store(*fetched)
            self._renewal = None

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    # --- refresh timing -----------------------------------------------------------
    def _refresh_time(self, issued_at: float, expires_at: float) -> float:
        """When to fetch again (wall clock), Java's rule (module docstring)."""
        lifetime = max(0.0, expires_at - issued_at)
        delay = lifetime * (self.refresh_window_factor + random.uniform(0.0, self.refresh_window_jitter))
        if self.refresh_min_period_s + self.refresh_buffer_s <= lifetime:
            delay = max(self.refresh_min_period_s, min(delay, lifetime - self.refresh_buffer_s))
        return issued_at + delay

    @property
    def refresh_at(self) -> float:
        """Wall-clock time after which token() fetches a new token."""
        return self._refresh_at

    # --- the token endpoint ---------------------------------------------------------
    def _request(self) -> urllib.request.Request:
        body = "grant_type=client_credentials"
        if self.scope:
            body += "&scope=" + urllib.parse.quote_plus(self.scope)
        pair = "{0}:{1}".format(urllib.parse.quote_plus(self.client_id), urllib.parse.quote_plus(self._client_secret))
        headers = {
            "Authorization": "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii"),
            "Accept": "application/json",
            "Cache-Control": "no-cache",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        return urllib.request.Request(self.token_endpoint_url, data=body.encode("utf-8"), headers=headers,
                                      method="POST")

    def _fetch(self) -> tuple[str, float, float]:
        """(token, issued_at, expires_at), retrying as Java does; raises
        SaslAuthenticationFailedError."""
        began = time.monotonic()
        deadline = began + self.retry_backoff_max_ms / 1000.0
        attempt = 0
        while True:
            attempt += 1
            # Each request gets its own timeouts, but never outlives the
            # retry budget (at least 100 ms so a last attempt can connect).
            timeout = max(0.1, min(max(self.connect_timeout_ms, self.read_timeout_ms) / 1000.0,
                                   deadline - time.monotonic()))
            try:
                return self._attempt(timeout)
            except _Retriable as exc:
                cause = str(exc)
            now = time.monotonic()
            sleep = self.retry_backoff_ms / 1000.0 * (2 ** (attempt - 1))
            if now + sleep >= deadline:
                raise SaslAuthenticationFailedError(
                    "OAUTHBEARER: token endpoint {0} failed {1} attempt(s) within {2:.1f} s "
                    "(sasl.login.retry.backoff.max.ms {3}): {4}".format(
                        self.token_endpoint_url, attempt, now - began, self.retry_backoff_max_ms, cause))
            log.debug("OAUTHBEARER: token endpoint attempt %d failed (%s); retrying in %.0f ms",
                      attempt, cause, sleep * 1000)
            time.sleep(sleep)

    def _attempt(self, timeout: float) -> tuple[str, float, float]:
        url = self.token_endpoint_url
        try:
            with urllib.request.urlopen(self._request(), timeout=timeout, context=self._context()) as response:
                status: int = response.status
                payload: bytes = response.read(_MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                detail = _oauth_error(exc.read(4096))
            except (TimeoutError, OSError):
                detail = ""
            finally:
                exc.close()
            message = "HTTP {0}{1}".format(status, detail)
            if status in UNRETRYABLE_HTTP_CODES:
                raise SaslAuthenticationFailedError(
                    "OAUTHBEARER: token endpoint {0} refused the request of client id {1!r}: {2} "
                    "(not retried)".format(url, self.client_id, message)) from None
            raise _Retriable(message) from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Retriable("{0}: {1}".format(type(reason).__name__, reason)) from None
        except http.client.HTTPException as exc:
            # not HTTP at all (another service on the port), or cut short
            raise _Retriable("malformed HTTP answer ({0})".format(type(exc).__name__)) from None
        if status not in (200, 201):
            raise _Retriable("unexpected HTTP {0}".format(status))
        if len(payload) > _MAX_RESPONSE_BYTES:
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: token endpoint {0} answered more than {1} bytes".format(url, _MAX_RESPONSE_BYTES))
        return self._parse(payload)

    def _context(self) -> ssl.SSLContext | None:
        if urllib.parse.urlsplit(self.token_endpoint_url).scheme != "https":
            return None
        return self.ssl_context

    def _parse(self, payload: bytes) -> tuple[str, float, float]:
        """The access token and its times, checked as Java's client does
        (a JWT with exp and sub); garbage is not retried (Java neither)."""
        url = self.token_endpoint_url
        try:
            answer = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: token endpoint {0} answered something that is not JSON".format(url)) from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token.strip():
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: token endpoint {0} answered JSON without an access_token".format(url))
        token = token.strip()
        import jwt  # pyjwt: an optional dependency (the "oauth" extra), needed only here

        try:
            # The signature is the broker's to verify (against its JWKS); the
            # client only needs the times, as Java's ClientJwtValidator.
            claims = jwt.decode(token, options={"verify_signature": False, "verify_exp": False,
                                                "verify_iat": False, "verify_nbf": False, "verify_aud": False})
        except jwt.PyJWTError as exc:
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: token endpoint {0} answered an access_token that is not a JWT ({1})".format(
                    url, type(exc).__name__)) from None
        exp, iat, sub = claims.get("exp"), claims.get("iat"), claims.get(self.sub_claim_name)
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the access token from {0} has no numeric exp claim".format(url))
        if not isinstance(sub, str) or not sub.strip():
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the access token from {0} has no {1} claim".format(url, self.sub_claim_name))
        now = time.time()
        if exp <= now:
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the access token from {0} expired {1:.0f} s ago (exp claim); check the clocks".format(
                    url, now - exp))
        issued_at = iat if isinstance(iat, (int, float)) and not isinstance(iat, bool) and iat <= now else now
        return token, float(issued_at), float(exp)


class _Retriable(Exception):
    """A token endpoint failure worth another attempt (internal)."""


def _oauth_error(body: bytes) -> str:
    """' (error: invalid_client)' from an RFC 6749 error body, else ''.
    Only the error code is quoted: descriptions may echo the request."""
    try:
        error = json.loads(body.decode("utf-8")).get("error")
    except (UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if isinstance(error, str) and error.isprintable() and len(error) <= 64:
        return " (error: {0})".format(error)
    return ""
