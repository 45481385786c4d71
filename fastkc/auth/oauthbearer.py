"""SASL OAUTHBEARER (RFC 7628, KIP-255) with SASL extensions (KIP-342).

kafka-python 3.0.12's interface: ``sasl_oauth_token_provider`` is an object
with ``token() -> str`` and an optional ``extensions() -> dict``. A provider
written for kafka-python (a subclass of ``kafka.net.sasl.oauth.
AbstractTokenProvider``) works unchanged: fastkc only needs the two methods,
so it checks for them rather than for kafka-python's base class (fastkc does
not depend on kafka-python). ``AbstractTokenProvider`` below is the same shape
for providers written for fastkc.

The token is asked for once per authentication (in ``first_message``), never
kept by the connection: a provider that refreshes its token hands a fresh one
to every new connection and every re-authentication (KIP-368).

The exchange (RFC 7628 section 3.2): the client sends
``n,,\\x01auth=Bearer <token>\\x01<k>=<v>\\x01...\\x01\\x01``; a broker that
accepts answers with empty bytes. A broker that refuses answers with a JSON
error (``{"status":"invalid_token"}``) and waits for the client's ``\\x01``
before it fails the SaslAuthenticate with that error; we send the ``\\x01``
and keep the status so the failure names it.

Errors at authentication time are SaslAuthenticationFailedError, never
KafkaConfigurationError: the client treats a SASL failure as fatal and raises
it at once, where a configuration error met while connecting would be retried
until bootstrap_timeout_ms (the issue asks for fast failure). Messages name
OAUTHBEARER and never carry the token.
"""
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol

# errors.py makes its code table's classes at import (globals()), which mypy
# cannot see; the ignore goes (warn_unused_ignores says so) once it declares them
from fastkc.errors import (
    KafkaConfigurationError,
    KafkaError,
    SaslAuthenticationFailedError,
)

MECHANISMS = ("OAUTHBEARER",)

# KIP-342 / Java's OAuthBearerClientInitialResponse: extension names are
# ASCII letters, values printable ASCII plus space, tab, CR and LF; "auth" is
# the token's own key and may not be used by an extension.
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
_RESERVED_KEY = "auth"
# RFC 6750 b64token: the characters a bearer token may hold. Anything else
# (a \x01 above all) would change the message's structure.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class TokenSource(Protocol):
    """What sasl_oauth_token_provider must be: an object with token() (and
    optionally extensions(), looked up with getattr)."""

    def token(self) -> str: ...


class AbstractTokenProvider(ABC):
    """kafka-python's token provider shape: ``token()`` must be implemented,
    ``extensions()`` may be. token() is called for every authentication (each
    new connection, each re-authentication), so an implementation should
    cache its token and refresh it before it expires
    (fastkc.auth.oidc.OidcClientCredentialsProvider does)."""

    # kafka-python's base takes and ignores the config: a concrete method on
    # purpose, so a provider need not define __init__
    def __init__(self, **config: Any) -> None:  # noqa: B027
        pass

    @abstractmethod
    def token(self) -> str:
        """The access token (str) sent to the broker."""

    def extensions(self) -> dict[str, str]:
        """Optional SASL extensions (KIP-342): {name: value}, both str."""
        return {}


def check_extensions(extensions: object, error: type[KafkaError] = KafkaConfigurationError,
                     where: str = "sasl_oauth_token_provider.extensions()") -> dict[str, str]:
    """Check SASL extensions as Java's client does (KIP-342); returns them as a dict."""
    if extensions is None:
        return {}
    if not isinstance(extensions, dict):
        raise error("{0} must return a dict, not {1}".format(where, type(extensions).__name__))
    for key, value in extensions.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key):
            raise error("OAUTHBEARER: {0}: extension name {1!r} must be ASCII letters only (KIP-342)".format(
                where, key))
        if key == _RESERVED_KEY:
            raise error("OAUTHBEARER: {0}: the extension name 'auth' is reserved for the token (KIP-342)".format(
                where))
        # The value is not echoed: extensions can carry credentials
        # (Confluent Cloud's logicalCluster is harmless, others are not).
        if not isinstance(value, str) or not _EXTENSION_VALUE.fullmatch(value):
            raise error("OAUTHBEARER: {0}: the value of extension {1!r} must be a non-empty str of printable "
                        "ASCII, space, tab, CR or LF (KIP-342)".format(where, key))
    return dict(extensions)


def check_config(config: Mapping[str, Any]) -> None:
    """Fail construction, naming the key, when OAUTHBEARER cannot run."""
    provider = config["sasl_oauth_token_provider"]
    if provider is None:
        raise KafkaConfigurationError(
            "sasl_oauth_token_provider is required for sasl_mechanism OAUTHBEARER (an object with a token() "
            "method, e.g. fastkc.auth.oidc.OidcClientCredentialsProvider)")
    if not callable(getattr(provider, "token", None)):
        raise KafkaConfigurationError(
            "sasl_oauth_token_provider must have a token() method (kafka-python's AbstractTokenProvider "
            "shape), {0} has none".format(type(provider).__name__))
    extensions = getattr(provider, "extensions", None)
    if extensions is not None:
        if not callable(extensions):
            raise KafkaConfigurationError("sasl_oauth_token_provider.extensions must be a method")
        # Called once here so a malformed extension fails construction, not
        # the first connection; it is called again at every authentication.
        try:
            found = extensions()
        except Exception as exc:
            raise KafkaConfigurationError(
                "sasl_oauth_token_provider.extensions() raised {0}".format(type(exc).__name__)) from exc
        check_extensions(found)


def new_exchange(config: Mapping[str, Any], host: str) -> "OAuthBearerExchange":
    return OAuthBearerExchange(config["sasl_oauth_token_provider"])


def client_first_message(token: str, extensions: Mapping[str, str]) -> bytes:
    """RFC 7628's initial client response, as kafka-python and Java write it:
    no authzid, the token, then the extensions in the provider's order."""
    parts = ["n,,", "\x01auth=Bearer ", token]
    for key, value in extensions.items():
        parts += ["\x01", key, "=", value]
    parts.append("\x01\x01")
    return "".join(parts).encode("utf-8")


class OAuthBearerExchange:
    """One OAUTHBEARER authentication: first_message() asks the provider for
    the token, receive() completes or answers a refusal with \\x01."""

    def __init__(self, provider: TokenSource) -> None:
        self.provider = provider
        self._state = "new"  # new → sent → (refused) → done
        self._status: str | None = None

    def first_message(self) -> bytes:
        try:
            token: object = self.provider.token()
        except KafkaError:
            raise  # already typed and free of secrets (fastkc's own providers)
        except Exception as exc:
            # The provider's message may quote what it was handling: the
            # chained exception keeps it for debugging, the message does not.
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the token provider's token() raised {0} (see the chained exception)".format(
                    type(exc).__name__)) from exc
        if not isinstance(token, str) or not token:
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the token provider's token() returned {0}, not a non-empty str".format(
                    "an empty str" if token == "" else type(token).__name__))
        if not _B64TOKEN.fullmatch(token):
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the token provider's token() returned a str with characters a bearer token "
                "cannot hold (RFC 6750 b64token)")
        extensions = getattr(self.provider, "extensions", None)
        try:
            found = extensions() if extensions is not None else {}
        except Exception as exc:
            raise SaslAuthenticationFailedError(
                "OAUTHBEARER: the token provider's extensions() raised {0}".format(type(exc).__name__)) from exc
        found = check_extensions(found, SaslAuthenticationFailedError)
        self._state = "sent"
        return client_first_message(token, found)

    def receive(self, data: bytes | bytearray | memoryview | None) -> bytes | None:
        data = bytes(data or b"")
        if self._state == "sent":
            if not data:
                self._state = "done"
                return None
            # RFC 7628 3.2.2: an error challenge; the client must answer
            # with a single \x01 and the server then fails the exchange.
            self._status = _error_status(data)
            self._state = "refused"
            return b"\x01"
        if self._state == "refused":
            # A server that reports success after refusing: RFC 7628 says the
            # exchange has failed all the same.
            raise SaslAuthenticationFailedError("OAUTHBEARER: the broker refused the token (status {0})".format(
                self._status))
        raise SaslAuthenticationFailedError("OAUTHBEARER: unexpected message after the exchange ended")

    @property
    def status(self) -> str | None:
        """The broker's error status after a refusal (e.g. 'invalid_token')."""
        return self._status


def _error_status(data: bytes) -> str:
    try:
        status = json.loads(data.decode("utf-8")).get("status")
    except (ValueError, AttributeError):
        return "unreadable error message"
    return str(status)[:100] if status is not None else "no status"


class UnsecuredTokenProvider(AbstractTokenProvider):
    """Unsigned JWTs (``alg: none``) for a broker in Kafka's unsecured
    OAUTHBEARER mode (tests and quick starts only), what Java's
    OAuthBearerUnsecuredLoginCallbackHandler makes from the JAAS options
    ``unsecuredLoginStringClaim_sub`` and ``unsecuredLoginLifetimeSeconds``:
    claims sub, iat, exp; a new token for every authentication."""

    def __init__(self, sub: str, lifetime_s: float = 3600, extensions: Mapping[str, str] | None = None) -> None:
        super().__init__()
        if not isinstance(sub, str) or not sub.strip():
            raise KafkaConfigurationError("the unsecured OAUTHBEARER token needs a non-empty sub claim")
        self.sub = sub
        self.lifetime_s = int(lifetime_s)
        self._extensions = check_extensions(extensions, where="unsecured token provider extensions")

    def token(self) -> str:
        import base64
        import time

        now = int(time.time())

        def part(obj: object) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode("utf-8")).rstrip(b"=").decode("ascii")

        return part({"alg": "none"}) + "." + part({"sub": self.sub, "iat": now, "exp": now + self.lifetime_s}) + "."

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)
