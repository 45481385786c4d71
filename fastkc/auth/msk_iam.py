"""SASL AWS_MSK_IAM: Amazon MSK's IAM access control.

The client sends one message, a JSON object: a SigV4 presigned "GET /?Action=
kafka-cluster:Connect" for the broker's host name (the query parameters as
keys, lower-cased), plus the payload version 2020_10_22, the host and a user
agent. The broker answers a JSON object with the same version and a request id,
or refuses with SaslAuthenticate error 58. One round trip; the broker is not
authenticated by SASL here (TLS does that: SASL_SSL is required, as in
kafka-python and AWS's own client library).

kafka-python 3.0.12 is the interface: mechanism name AWS_MSK_IAM, no keys of
its own, credentials from botocore's standard chain (environment, shared
files, SSO, web identity, container, instance metadata) and the region from
botocore's configuration (AWS_DEFAULT_REGION or the profile's region). The
signature is botocore's SigV4QueryAuth, never hand-written; the payload is
checked field by field against AWS's Java library (aws-msk-iam-auth) in
tests/unit/test_msk_iam_reference.py.

When credentials are looked up: kafka-python and AWS's Java library both look
them up lazily, at each authentication, so a consumer without credentials is
built fine and then fails connection after connection until its bootstrap
timeout. fastkc resolves the chain once at construction instead, so missing
credentials or a missing region are a KafkaConfigurationError right away
(the issue's "fail fast"). The resolved credentials object is botocore's own:
for temporary sources (assume-role, SSO, web identity, container, instance
metadata) it is a RefreshableCredentials that refreshes itself before expiry,
and each authentication -- each connection and each re-authentication, one
new_exchange() apiece -- signs with its current frozen value at that moment.

Secrets: the secret key never leaves botocore's signer; the session token is
part of the payload (AWS's format) but of no message fastkc raises or logs.
botocore logs the canonical request -- which holds the session token -- at
DEBUG on the "botocore.auth" logger; a filter on that logger (installed the
first time this mechanism signs) masks the token there.
"""
import hashlib
import json
import logging
import os
import re
import threading
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

from fastkc._version import __version__
from fastkc.auth import Config, PendingStep

# errors.py makes its code table's classes at import (globals()), which mypy
# cannot see; the ignore goes (warn_unused_ignores says so) once it declares them
from fastkc.errors import (
    KafkaConfigurationError,
    KafkaError,
    SaslAuthenticationFailedError,
)

# botocore's credentials objects (botocore has no type information here)
_Credentials = Any

MECHANISMS = ("AWS_MSK_IAM",)

#: the payload (and answer) format version AWS's library speaks
VERSION = "2020_10_22"
SERVICE = "kafka-cluster"
ACTION = "kafka-cluster:Connect"
#: seconds the presigned request stays valid (AWS's library: 15 minutes)
EXPIRES = 900

log = logging.getLogger(__name__)

# botocore's chain reads these; a change of any of them (a test, or an
# application switching profiles) means a different credential source.
_CHAIN_ENV = (
    "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_DEFAULT_REGION",
    "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_EC2_METADATA_DISABLED",
)

_lock = threading.Lock()
#: sha256 of the chain's environment -> (credentials, region): one botocore
#: credentials object per AWS environment per process, shared by every
#: consumer and connection (botocore's refreshable credentials are thread-safe)
_sources: dict[str, tuple[_Credentials, str]] = {}


def _chain_key() -> str:
    h = hashlib.sha256()  # a digest, so the secrets in the environment are not kept twice
    for name in _CHAIN_ENV:
        h.update(name.encode() + b"=" + os.environ.get(name, "\0").encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def _botocore() -> ModuleType:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.session
    except ImportError:
        raise KafkaConfigurationError(
            "sasl_mechanism AWS_MSK_IAM needs botocore (pip install 'fastkc[aws]')") from None
    module: ModuleType = botocore
    return module


def credential_source() -> tuple[_Credentials, str]:
    """(credentials, region) from botocore's chain, resolved once per AWS
    environment; KafkaConfigurationError naming AWS_MSK_IAM when either is
    missing (not cached, so fixing the environment is seen next time)."""
    botocore = _botocore()
    key = _chain_key()
    with _lock:
        found = _sources.get(key)
        if found is not None:
            return found
        session = botocore.session.Session()
        region: str | None = session.get_config_variable("region")
        if not region:
            raise KafkaConfigurationError(
                "sasl_mechanism AWS_MSK_IAM: no AWS region configured (set AWS_DEFAULT_REGION or a region "
                "in the AWS profile)")
        try:
            credentials = session.get_credentials()
        except Exception as exc:  # botocore raises many kinds (a broken profile, an SSO cache, ...)
            raise KafkaConfigurationError("sasl_mechanism AWS_MSK_IAM: botocore could not load AWS credentials: "
                                          "{0}".format(type(exc).__name__)) from None
        if credentials is None:
            raise KafkaConfigurationError(
                "sasl_mechanism AWS_MSK_IAM: botocore found no AWS credentials (environment, shared credentials "
                "and config files, SSO, web identity, container or instance metadata)")
        found = _sources[key] = (credentials, region)
        return found


def check_config(config: Config) -> None:
    """Fail construction when AWS_MSK_IAM cannot run: not over TLS, no
    botocore, no credentials or no region."""
    if config["security_protocol"] != "SASL_SSL":
        raise KafkaConfigurationError("security_protocol must be SASL_SSL for sasl_mechanism AWS_MSK_IAM, not "
                                      "{0!r}".format(config["security_protocol"]))
    credential_source()


def new_exchange(config: Config, host: str) -> "MskIamExchange":
    return MskIamExchange(host)


def user_agent() -> str:
    return "fastkc/{0}".format(__version__)


def signed_payload(host: str, credentials: _Credentials, region: str, agent: str | None = None) -> bytes:
    """The AWS_MSK_IAM client message for `host`, signed now with
    `credentials` (botocore credentials: access_key, secret_key, token)."""
    botocore = _botocore()
    _mask_botocore_debug_log()
    # The broker's own check rebuilds "GET https://<host>/?Action=..." with the
    # host header only and an empty body, as AWS's library presigns it.
    request = botocore.awsrequest.AWSRequest(method="GET", url="https://{0}/".format(host),
                                             params={"Action": ACTION})
    botocore.auth.SigV4QueryAuth(credentials, SERVICE, region, expires=EXPIRES).add_auth(request)
    url: str = request.url
    _, _, query = url.partition("?")
    payload = {"version": VERSION, "host": host, "user-agent": agent or user_agent()}
    for name, value in parse_qsl(query, keep_blank_values=True, strict_parsing=True):
        payload[name.lower()] = value
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


class MskIamExchange:
    """One AWS_MSK_IAM authentication of one connection."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._step = 0

    def first_message(self) -> bytes | PendingStep:
        self._step = 1
        credentials, region = credential_source()
        refresh_needed = getattr(credentials, "refresh_needed", None)
        if refresh_needed is not None and refresh_needed():
            # botocore refreshes on the next read (STS, the instance metadata
            # service, SSO): a network round trip bounded only by botocore's
            # own timeouts, so it runs off the polling thread (auth.PendingStep)
            return PendingStep(lambda: self._sign(credentials, region), self._refresh_too_slow,
                               "fastkc-msk-iam-{0}".format(self.host))
        return self._sign(credentials, region)

    def _refresh_too_slow(self) -> KafkaError:
        error: KafkaError = SaslAuthenticationFailedError(
            "AWS_MSK_IAM: refreshing the AWS credentials took longer than request_timeout_ms")
        return error

    def _sign(self, credentials: _Credentials, region: str) -> bytes:
        try:
            # a RefreshableCredentials refreshes here when its expiry is near
            frozen = credentials.get_frozen_credentials()
        except Exception as exc:
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: refreshing the AWS credentials failed ({0})".format(
                type(exc).__name__)) from None
        if not frozen.access_key or not frozen.secret_key:
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the AWS credentials have no access key or secret key")
        return signed_payload(self.host, frozen, region)

    def receive(self, data: bytes | None) -> None:
        if self._step != 1:
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: unexpected message after the exchange ended")
        self._step = 2
        # AWS's library: a non-empty JSON object with version 2020_10_22 and a
        # request-id means the broker accepted; anything else fails.
        if not data:
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the broker's answer is empty")
        try:
            answer = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the broker's answer is not JSON ({0} bytes)".format(
                len(data))) from None
        if not isinstance(answer, dict):
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the broker's answer is not a JSON object")
        if answer.get("version") != VERSION:
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the broker answered version {0!r}, expected {1}".format(
                _short(answer.get("version")), VERSION))
        request_id = answer.get("request-id")
        if not isinstance(request_id, str):
            raise SaslAuthenticationFailedError("AWS_MSK_IAM: the broker's answer has no request-id")
        log.debug("AWS_MSK_IAM: authenticated with %s (request-id %s)", self.host, _short(request_id))
        return None


def _short(value: object, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "..."


# --- botocore's DEBUG log ---------------------------------------------------------------------
_TOKEN_IN_QUERY = re.compile(r"(X-Amz-Security-Token=)[^&\s]+", re.IGNORECASE)
_masked = False


class _MaskSessionToken(logging.Filter):
    """Masks X-Amz-Security-Token=... in botocore.auth's records (its DEBUG
    'CanonicalRequest' line holds the presigned query, token included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot format is not ours to fix
            return True
        if "security-token" in message.lower():
            record.msg = _TOKEN_IN_QUERY.sub(r"\1***", message)
            record.args = ()
        return True


def _mask_botocore_debug_log() -> None:
    global _masked
    if not _masked:
        with _lock:
            if not _masked:
                logging.getLogger("botocore.auth").addFilter(_MaskSessionToken())
                _masked = True
