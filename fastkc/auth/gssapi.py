"""SASL GSSAPI (Kerberos V5, RFC 4752) through the `gssapi` package.

kafka-python 3.0.12's keys, with its semantics:
- ``sasl_kerberos_service_name`` (default "kafka") and
  ``sasl_kerberos_domain_name`` (default: the broker's host) make the
  broker's host-based service name ``service@host``;
- ``sasl_kerberos_name`` (a str ``service@host`` or a ``gssapi.Name``)
  names that target directly, and then the two keys above are ignored.
  (In kafka-python it is the *service* principal, not the client's.)

The client principal comes from the Kerberos environment as in kafka-python
(the default credential cache, KRB5CCNAME, or MIT's client keytab
KRB5_CLIENT_KTNAME), or, a fastkc addition for what Java's JAAS
``Krb5LoginModule useKeyTab=true keyTab=... principal=...`` does, from
``sasl_kerberos_keytab`` (+ optional ``sasl_kerberos_principal``): the
credentials are acquired from that keytab into a private in-memory cache
(gss_acquire_cred_from with the ``client_keytab`` and ``ccache`` store
entries), so neither the machine's default cache nor the process
environment is touched, and two consumers with different keytabs in one
process do not mix.

The exchange (RFC 4752 section 3.1):
  1. context establishment: the client's AP-REQ, the server's AP-REP
     (mutual authentication: the broker proves it holds the service key),
     then an empty client message;
  2. the server's wrapped 4-octet offer (security layers bit mask, max
     size); the client picks "no security layer" (Kafka offers no other)
     and answers wrap(0x01, size 0, authorization id = its principal, as
     Java's client does);
  3. the server's empty final answer.

Blocking: the first step talks to the KDC (AS-REQ from a keytab, TGS-REQ
for the service ticket) inside libkrb5, which cannot be interrupted. It runs
as an `auth.PendingStep` on a worker thread while the connection goes on
being polled (poll() keeps its timeout, other connections keep working); past
request_timeout_ms the attempt fails with SaslAuthenticationFailedError (the
worker ends on its own when libkrb5's kdc_timeout x max_retries expires).
Later steps are local computations.
"""
import hashlib
import os
import struct
from types import ModuleType
from typing import Any

from fastkc.auth import Config, PendingStep

# errors.py makes its code table's classes at import (globals()), which mypy
# cannot see; the ignore goes (warn_unused_ignores says so) once it declares them
from fastkc.errors import (
    KafkaConfigurationError,
    KafkaError,
    SaslAuthenticationFailedError,
)

MECHANISMS = ("GSSAPI",)

# RFC 4752 / RFC 2222 security layer bits
_LAYER_NONE = 1


def _import_gssapi() -> ModuleType:
    try:
        import gssapi
    except (ImportError, OSError) as exc:  # OSError: the package is there, libgssapi_krb5 is not
        raise KafkaConfigurationError(
            "sasl_mechanism GSSAPI needs the gssapi package and MIT Kerberos' libgssapi_krb5 "
            "(pip install 'fastkc[kerberos]'): {0}".format(exc)) from None
    return gssapi


def check_config(config: Config) -> None:
    """Fail construction, naming the key, when GSSAPI cannot run."""
    gssapi = _import_gssapi()
    name = config["sasl_kerberos_name"]
    if name is not None:
        if isinstance(name, str):
            if not name:
                raise KafkaConfigurationError("sasl_kerberos_name must not be empty")
        elif not isinstance(name, gssapi.Name):
            raise KafkaConfigurationError("sasl_kerberos_name must be a str or a gssapi.Name, not {0}".format(
                type(name).__name__))
    else:
        service = config["sasl_kerberos_service_name"]
        if not isinstance(service, str) or not service:
            raise KafkaConfigurationError(
                "sasl_kerberos_service_name (or sasl_kerberos_name) is required for sasl_mechanism GSSAPI")
    domain = config["sasl_kerberos_domain_name"]
    if domain is not None and not isinstance(domain, str):
        raise KafkaConfigurationError("sasl_kerberos_domain_name must be a str or None")
    principal = config["sasl_kerberos_principal"]
    if principal is not None and (not isinstance(principal, str) or not principal):
        raise KafkaConfigurationError("sasl_kerberos_principal must be a non-empty str or None")
    keytab = config["sasl_kerberos_keytab"]
    if keytab is not None:
        if not isinstance(keytab, (str, os.PathLike)):
            raise KafkaConfigurationError("sasl_kerberos_keytab must be a file path, not {0!r}".format(keytab))
        path = os.fspath(keytab)
        if path.startswith("FILE:"):
            path = path[len("FILE:"):]
        if not os.path.isfile(path):
            raise KafkaConfigurationError("sasl_kerberos_keytab {0!r}: no such file".format(os.fspath(keytab)))
        if not os.access(path, os.R_OK):
            raise KafkaConfigurationError("sasl_kerberos_keytab {0!r}: not readable".format(os.fspath(keytab)))


def new_exchange(config: Config, host: str) -> "GssapiExchange":
    return GssapiExchange(config, host)


def _target_name(gssapi: ModuleType, config: Config, host: str) -> Any:
    name = config["sasl_kerberos_name"]
    if isinstance(name, gssapi.Name):
        return name
    if name is None:
        name = "{0}@{1}".format(config["sasl_kerberos_service_name"], config["sasl_kerberos_domain_name"] or host)
    # As kafka-python: a host-based service name, canonicalized for Kerberos
    # (which follows krb5.conf's dns_canonicalize_hostname / rdns).
    return gssapi.Name(name, name_type=gssapi.NameType.hostbased_service).canonicalize(gssapi.MechType.kerberos)


def _credentials(gssapi: ModuleType, config: Config) -> Any:
    """Initiator credentials, or None for the Kerberos environment's default."""
    keytab, principal = config["sasl_kerberos_keytab"], config["sasl_kerberos_principal"]
    name = gssapi.Name(principal, name_type=gssapi.NameType.kerberos_principal) if principal else None
    if keytab is None:
        if name is None:
            return None
        return gssapi.Credentials(name=name, usage="initiate")
    keytab = os.fspath(keytab)
    # One in-memory cache per (keytab, principal) in this process: every
    # connection of every consumer using them shares the TGT and service
    # tickets instead of asking the KDC again; nothing is written to disk.
    tag = hashlib.sha256("{0}\0{1}".format(os.path.abspath(keytab.replace("FILE:", "", 1)),
                                          principal or "").encode("utf-8")).hexdigest()[:16]
    store = {"client_keytab": keytab, "ccache": "MEMORY:fastkc-gssapi-" + tag}
    return gssapi.Credentials(name=name, usage="initiate", store=store)


def _describe(exc: BaseException) -> str:
    """The GSS major/minor messages (library text: names, realms, file
    paths; never key material)."""
    gen = getattr(exc, "gen_message", None)
    if gen is not None:
        try:
            return str(gen())
        except Exception:  # noqa: BLE001 -- fall back to str() on a broken message table
            pass
    return str(exc)


class GssapiExchange:
    """The client side of one SASL GSSAPI authentication (see the module doc)."""

    mechanism = "GSSAPI"

    def __init__(self, config: Config, host: str) -> None:
        self._gssapi = _import_gssapi()
        self._config = config
        self._host = host
        self._ctx: Any = None  # the binding's SecurityContext, from the first step on
        self._step = "start"

    # --- the first step: the KDC, off the polling thread --------------------------------
    def _establish_first(self) -> tuple[Any, bytes | None]:
        gssapi = self._gssapi
        target = _target_name(gssapi, self._config, self._host)
        creds = _credentials(gssapi, self._config)
        flags = gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.out_of_sequence_detection
        ctx = gssapi.SecurityContext(name=target, creds=creds, usage="initiate", flags=flags,
                                     mech=gssapi.MechType.kerberos)
        token = ctx.step(None)
        return ctx, token

    def first_message(self) -> PendingStep:
        return PendingStep(self._first_step, self._no_ticket_in_time, "fastkc-gssapi-{0}".format(self._host))

    def _first_step(self) -> bytes:
        try:
            self._ctx, token = self._establish_first()
        except KafkaError:
            raise
        except Exception as exc:  # noqa: BLE001 -- GSSError, or the binding's ValueError/TypeError
            raise SaslAuthenticationFailedError(
                "SASL GSSAPI with {0}: could not start a Kerberos context for {1} ({2}): {3}".format(
                    self._host, self._target_text(), self._creds_text(), _describe(exc))) from None
        self._step = "context"
        return bytes(token or b"")

    def _no_ticket_in_time(self) -> KafkaError:
        error: KafkaError = SaslAuthenticationFailedError(
            "SASL GSSAPI with {0}: no Kerberos ticket within request_timeout_ms ({1} ms): the KDC (or a "
            "host name lookup) did not answer in time".format(self._host, self._config["request_timeout_ms"]))
        return error

    def _creds_text(self) -> str:
        keytab, principal = self._config["sasl_kerberos_keytab"], self._config["sasl_kerberos_principal"]
        if keytab is None:
            return "client {0} from the Kerberos environment".format(principal or "default principal")
        return "client {0} from keytab {1}".format(principal or "first principal", os.fspath(keytab))

    def _target_text(self) -> str:
        name = self._config["sasl_kerberos_name"]
        if name is not None:
            return str(name)
        return "{0}@{1}".format(self._config["sasl_kerberos_service_name"],
                                self._config["sasl_kerberos_domain_name"] or self._host)

    # --- the rest: local computations -----------------------------------------------
    def receive(self, data: bytes | None) -> bytes | None:
        data = bytes(data or b"")
        try:
            if self._step == "context":
                if self._ctx.complete:
                    # The context was complete after the first token (no
                    # mutual authentication): the server's first message is
                    # already the security-layer offer.
                    return self._answer_offer(data)
                token = self._ctx.step(data)
                if self._ctx.complete:
                    self._step = "offer"
                return bytes(token or b"")
            if self._step == "offer":
                return self._answer_offer(data)
            if self._step == "final":
                if data:
                    raise SaslAuthenticationFailedError(
                        "SASL GSSAPI with {0}: the server sent {1} bytes after the exchange ended".format(
                            self._host, len(data)))
                self._step = "done"
                return None
        except KafkaError:
            raise
        except Exception as exc:  # noqa: BLE001 -- a refused token is a GSSError; anything else is as fatal
            raise SaslAuthenticationFailedError("SASL GSSAPI with {0}: {1}".format(
                self._host, _describe(exc))) from None
        raise SaslAuthenticationFailedError("SASL GSSAPI: unexpected server message in step {0}".format(self._step))

    def _answer_offer(self, data: bytes) -> bytes:
        unwrapped = self._ctx.unwrap(data)
        offer = unwrapped.message
        if len(offer) != 4:
            raise SaslAuthenticationFailedError(
                "SASL GSSAPI with {0}: malformed security-layer offer ({1} bytes, expected 4)".format(
                    self._host, len(offer)))
        if not offer[0] & _LAYER_NONE:
            raise SaslAuthenticationFailedError(
                "SASL GSSAPI with {0}: the server requires a security layer (offer 0x{1:02x}); Kafka clients "
                "use none".format(self._host, offer[0]))
        # No security layer, so the maximum size we can receive MUST be 0
        # (RFC 4752 section 3.1); the authorization id is our own principal,
        # the identity we authenticated as (what Java's client sends).
        authzid = str(self._ctx.initiator_name).encode("utf-8")
        reply = struct.pack(">B3s", _LAYER_NONE, b"\0\0\0") + authzid
        self._step = "final"
        return bytes(self._ctx.wrap(reply, False).message)
