"""SchemaRegistryClient's settings: confluent-kafka's names, checked once.

Every key confluent-kafka's SchemaRegistryClient takes for reading and
registering schemas is accepted with the same meaning; an unknown key, a
wrong type or an impossible combination raises
SchemaRegistryConfigurationError (also a ValueError, as confluent-kafka
raises) naming the key. Differences, each deliberate:

- `timeout` (seconds) bounds each call as a whole (every retry on every URL),
  not only one HTTP exchange; default 30 s (confluent-kafka: no limit).
- `basic.auth.credentials.source` is read (confluent-kafka's Python client
  ignores it): URL takes user:password from the first URL, USER_INFO from
  `basic.auth.user.info`, SASL_INHERIT from `sasl.username` / `sasl.password`.
- `bearer.auth.credentials.source`: STATIC_TOKEN and CUSTOM; the OAuth
  client-credentials sources (OAUTHBEARER, OAUTHBEARER_AZURE_IMDS) are refused
  by name. `bearer.auth.logical.cluster` is optional (only Confluent Cloud
  needs it).
"""
import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from fastkc.schema_registry.errors import SchemaRegistryConfigurationError

BASIC_SOURCES = ("URL", "USER_INFO", "SASL_INHERIT")
BEARER_SOURCES = ("STATIC_TOKEN", "CUSTOM")
_UNSUPPORTED_BEARER_SOURCES = ("OAUTHBEARER", "OAUTHBEARER_AZURE_IMDS")

# Statuses worth another try: the registry is busy, restarting or behind a
# proxy that lost it (confluent-kafka retries the same ones).
RETRIABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

BearerFields = Mapping[str, str]


@dataclass(frozen=True)
class RegistryConfig:
    """The checked settings. `auth` is (user, password) for HTTP basic auth."""

    urls: tuple[str, ...]
    auth: tuple[str, str] | None
    bearer: Callable[[], BearerFields] | None
    ssl_context: ssl.SSLContext | None
    proxy: str | None
    timeout: float
    cache_capacity: int
    cache_latest_ttl_sec: float | None
    max_retries: int
    retries_wait_ms: int
    retries_max_wait_ms: int


def _error(key: str, what: str) -> SchemaRegistryConfigurationError:
    return SchemaRegistryConfigurationError("{0}: {1}".format(key, what))


def _number(conf: dict[str, Any], key: str, default: float, minimum: float) -> float:
    value = _optional_number(conf, key, minimum)
    return default if value is None else value


def _optional_number(conf: dict[str, Any], key: str, minimum: float) -> float | None:
    value = conf.pop(key, None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(key, "must be a number, not {0}".format(type(value).__name__))
    if value < minimum:
        raise _error(key, "must be at least {0}, not {1}".format(minimum, value))
    return float(value)


def _string(conf: dict[str, Any], key: str) -> str | None:
    value = conf.pop(key, None)
    if value is not None and not isinstance(value, str):
        raise _error(key, "must be a str, not {0}".format(type(value).__name__))
    return value


def _split_urls(raw: object) -> tuple[list[str], tuple[str, str] | None]:
    """The base URLs without user info, and the first URL's user:password."""
    if raw is None:
        raise _error("url", "is required")
    if not isinstance(raw, str):
        raise _error("url", "must be a str, not {0}".format(type(raw).__name__))
    urls = []
    url_auth = None
    for i, part in enumerate(p.strip().rstrip("/") for p in raw.split(",")):
        if not part:
            continue
        parts = urlsplit(part)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _error("url", "{0!r} is not an http:// or https:// URL".format(part))
        if parts.username is not None or parts.password is not None:
            if i == 0:
                url_auth = (unquote(parts.username or ""), unquote(parts.password or ""))
            # Credentials stay out of the URLs that error messages name.
            netloc = parts.hostname if parts.port is None else "{0}:{1}".format(parts.hostname, parts.port)
            if ":" in parts.hostname:
                netloc = "[{0}]".format(parts.hostname) + ("" if parts.port is None else ":{0}".format(parts.port))
            part = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        urls.append(part)
    if not urls:
        raise _error("url", "names no URL")
    return urls, url_auth


def _basic_auth(conf: dict[str, Any], url_auth: tuple[str, str] | None) -> tuple[str, str] | None:
    source = _string(conf, "basic.auth.credentials.source")
    user_info = _string(conf, "basic.auth.user.info")
    sasl_user = _string(conf, "sasl.username")
    sasl_password = _string(conf, "sasl.password")
    if source is None:
        # confluent-kafka's rule: the URL's user info, else basic.auth.user.info
        if user_info is not None and url_auth is not None:
            raise _error("basic.auth.user.info", "set together with user info in the url: keep one")
        source = "USER_INFO" if user_info is not None else "URL"
    source = source.upper()
    if source not in BASIC_SOURCES:
        raise _error("basic.auth.credentials.source", "must be one of {0}, not {1!r}".format(
            ", ".join(BASIC_SOURCES), source))
    if source == "URL":
        return url_auth
    if source == "USER_INFO":
        if user_info is None:
            raise _error("basic.auth.user.info", "is required by basic.auth.credentials.source=USER_INFO")
        user, sep, password = user_info.partition(":")
        if not sep:
            raise _error("basic.auth.user.info", "must be user:password")
        return user, password
    if sasl_user is None or sasl_password is None:
        raise _error("sasl.username", "sasl.username and sasl.password are required by "
                     "basic.auth.credentials.source=SASL_INHERIT")
    return sasl_user, sasl_password


def _bearer(conf: dict[str, Any]) -> Callable[[], BearerFields] | None:
    source = _string(conf, "bearer.auth.credentials.source")
    token = _string(conf, "bearer.auth.token")
    cluster = _string(conf, "bearer.auth.logical.cluster")
    pool = conf.pop("bearer.auth.identity.pool.id", None)
    function = conf.pop("bearer.auth.custom.provider.function", None)
    custom_config = conf.pop("bearer.auth.custom.provider.config", None)
    if source is None:
        if token is not None or function is not None:
            raise _error("bearer.auth.credentials.source", "is required with bearer.auth.token / "
                         "bearer.auth.custom.provider.function")
        return None
    if source in _UNSUPPORTED_BEARER_SOURCES:
        raise _error("bearer.auth.credentials.source", "{0} is not supported by fastkc; use STATIC_TOKEN "
                     "or CUSTOM".format(source))
    if source not in BEARER_SOURCES:
        raise _error("bearer.auth.credentials.source", "must be one of {0}, not {1!r}".format(
            ", ".join(BEARER_SOURCES), source))
    if source == "CUSTOM":
        if not callable(function):
            raise _error("bearer.auth.custom.provider.function", "must be a callable (config dict -> fields)")
        if not isinstance(custom_config, dict):
            raise _error("bearer.auth.custom.provider.config", "must be a dict")
        custom: Callable[[dict[str, Any]], BearerFields] = function
        frozen_config = dict(custom_config)
        return lambda: custom(frozen_config)
    if token is None:
        raise _error("bearer.auth.token", "is required by bearer.auth.credentials.source=STATIC_TOKEN")
    fields = {"bearer.auth.token": token}
    if cluster is not None:
        fields["bearer.auth.logical.cluster"] = cluster
    if pool is not None:
        fields["bearer.auth.identity.pool.id"] = pool if isinstance(pool, str) else ",".join(pool)
    return lambda: fields


def _ssl_context(conf: dict[str, Any], urls: list[str]) -> ssl.SSLContext | None:
    ca = conf.pop("ssl.ca.location", None)
    cert = _string(conf, "ssl.certificate.location")
    key = _string(conf, "ssl.key.location")
    key_password = _string(conf, "ssl.key.password")
    if (key is not None or key_password is not None) and cert is None:
        raise _error("ssl.key.location", "needs ssl.certificate.location")
    if ca is None and cert is None and not any(u.startswith("https:") for u in urls):
        return None
    try:
        if ca is False:
            # confluent-kafka's way to turn verification off
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif isinstance(ca, str):
            context = (ssl.create_default_context(capath=ca) if os.path.isdir(ca)
                       else ssl.create_default_context(cafile=ca))
        elif ca is None:
            context = ssl.create_default_context()
        else:
            raise _error("ssl.ca.location", "must be a path or False, not {0}".format(type(ca).__name__))
        if cert is not None:
            context.load_cert_chain(certfile=cert, keyfile=key, password=key_password)
    except (OSError, ssl.SSLError) as exc:
        raise _error("ssl.ca.location" if cert is None else "ssl.certificate.location",
                     "cannot be loaded: {0}".format(exc)) from exc
    return context


def parse_config(conf: Mapping[str, Any]) -> RegistryConfig:
    """Check `conf` (confluent-kafka's keys) and return the settings."""
    if not isinstance(conf, Mapping):
        raise SchemaRegistryConfigurationError("the configuration must be a dict, not {0}".format(
            type(conf).__name__))
    rest = dict(conf)
    urls, url_auth = _split_urls(rest.pop("url", None))
    auth = _basic_auth(rest, url_auth)
    bearer = _bearer(rest)
    if auth is not None and bearer is not None:
        raise _error("bearer.auth.credentials.source", "set together with basic auth: keep one")
    context = _ssl_context(rest, urls)
    proxy = _string(rest, "proxy")
    config = RegistryConfig(
        urls=tuple(urls),
        auth=auth,
        bearer=bearer,
        ssl_context=context,
        proxy=proxy,
        timeout=_number(rest, "timeout", 30.0, 0.001),
        cache_capacity=int(_number(rest, "cache.capacity", 1000, 1)),
        cache_latest_ttl_sec=_optional_number(rest, "cache.latest.ttl.sec", 0),
        max_retries=int(_number(rest, "max.retries", 3, 0)),
        retries_wait_ms=int(_number(rest, "retries.wait.ms", 1000, 0)),
        retries_max_wait_ms=int(_number(rest, "retries.max.wait.ms", 20000, 0)),
    )
    if rest:
        raise SchemaRegistryConfigurationError("unrecognized properties: {0}".format(", ".join(sorted(rest))))
    return config

