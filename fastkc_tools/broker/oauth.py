"""The harness's OAUTHBEARER side: a small OIDC server and the broker settings.

With ``start(security=True)`` the harness runs, next to the nodes, one child
process (``python -m fastkc_tools.broker.oauth serve <dir>``) on 127.0.0.1 that
serves

- ``POST /token``: the OAuth 2 client-credentials grant (client id and secret
  by HTTP basic authentication, as Java's client sends them, or as form
  fields), answering an RS256 JWT (``iss``, ``aud``, ``sub`` = the client id,
  ``iat``, ``exp``, ``scope``) signed with a key generated at every start;
- ``GET /jwks``: that key's public half as a JWK Set, which the brokers
  fetch to validate the tokens.

The brokers get two OAUTHBEARER flavours:

- SASL_PLAINTEXT: tokens validated by Kafka's OAuthBearerValidatorCallbackHandler
  against /jwks, with the expected audience and issuer (the real OIDC set-up);
  Kafka 3.9.1+ fetches only URLs listed in the JVM property
  ``org.apache.kafka.sasl.oauthbearer.allowed.urls``, set on every node;
- SASL_SSL: Kafka's unsecured mode (unsigned ``alg: none`` JWTs with ``sub``,
  ``iat``, ``exp``; the quick start, tests only).

The key's private half is written to ``<dir>/signing-key.pem`` so tests can
mint tokens the broker must refuse (expired, wrong audience); ``server.json``
holds the port, URLs, clients and the server's pid (stop() ends it by pid,
like the nodes).

Written with the standard library's http.server (two endpoints on
127.0.0.1, test traffic only), pyjwt for the JWTs and cryptography for the key.
"""
import base64
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fastkc_tools.broker.errors import BrokerStartupError

SERVER_FILE = "server.json"
KEY_FILE = "signing-key.pem"
AUDIENCE = "fastkc-kafka"
#: the listener whose tokens the brokers validate against the JWKS
VALIDATED_LISTENER = "SASL_PLAINTEXT"
#: the listener in Kafka's unsecured mode (unsigned JWTs)
UNSECURED_LISTENER = "SASL_SSL"
_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
# client id → token lifetime in seconds. "fastkc-short" hands out tokens that
# expire within a test (re-authentication, refresh).
_CLIENT_LIFETIMES = {"fastkc": 3600, "fastkc-short": 20}


def _b64url_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _first(form: Mapping[str, list[str]], key: str) -> str | None:
    """A form field's first value (parse_qs lists every occurrence), None when absent."""
    values = form.get(key)
    return values[0] if values else None


class OidcServer:
    """The token endpoint and JWKS (in this process; ``serve`` runs it as
    the harness's child process)."""

    def __init__(self, directory: str, port: int = 0, clients: dict[str, tuple[str, int]] | None = None) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(8)
        pem = self._key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
        path = os.path.join(directory, KEY_FILE)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(pem)
        self._pem = pem
        # client id → (secret, token lifetime s); fresh secrets every start
        self.clients = clients or {cid: (secrets.token_urlsafe(18), life) for cid, life in _CLIENT_LIFETIMES.items()}
        numbers = self._key.public_key().public_numbers()
        self.jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                               "n": _b64url_uint(numbers.n), "e": _b64url_uint(numbers.e)}]}
        self.token_requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt: str, *args: Any) -> None:  # quiet: test traffic
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0] == "/jwks":
                    self._answer(200, server.jwks)
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if self.path.split("?")[0] != "/token":
                    self._answer(404, {"error": "not_found"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(min(length, 65536)).decode("utf-8", "replace"))
                status, body = server.grant(self.headers.get("Authorization"), form)
                self._answer(status, body)

            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.base_url = "http://127.0.0.1:{0}".format(self.port)
        self.issuer = self.base_url
        self._thread: threading.Thread | None = None

    @property
    def token_endpoint_url(self) -> str:
        return self.base_url + "/token"

    @property
    def jwks_url(self) -> str:
        return self.base_url + "/jwks"

    def grant(self, authorization: str | None, form: Mapping[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) for a token request (RFC 6749 4.4)."""
        self.token_requests += 1
        client_id: str | None
        secret: str | None
        if authorization and authorization.startswith("Basic "):
            try:
                pair = base64.b64decode(authorization[6:]).decode("utf-8")
            except ValueError:
                return 401, {"error": "invalid_client"}
            left, _, right = pair.partition(":")
            client_id, secret = urllib.parse.unquote_plus(left), urllib.parse.unquote_plus(right)
        else:
            client_id = _first(form, "client_id")
            secret = _first(form, "client_secret")
        if _first(form, "grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        known = self.clients.get(client_id) if client_id is not None else None
        if known is None or not secrets.compare_digest(known[0], secret or ""):
            return 401, {"error": "invalid_client"}
        scope = _first(form, "scope")
        token = self.sign(client_id or "", lifetime=known[1], scope=scope)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": known[1]}

    def sign(self, sub: str, *, lifetime: float = 3600, audience: str = AUDIENCE, issuer: str | None = None,
             scope: str | None = None, now: float | None = None) -> str:
        return sign_token(self._pem, self.kid, sub, lifetime=lifetime, audience=audience,
                          issuer=issuer or self.issuer, scope=scope, now=now)

    def start(self) -> "OidcServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="fastkc-oidc", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def describe(self) -> dict[str, Any]:
        return {
            "token_endpoint_url": self.token_endpoint_url,
            "jwks_url": self.jwks_url,
            "issuer": self.issuer,
            "audience": AUDIENCE,
            "clients": {cid: {"secret": s, "token_lifetime_s": life} for cid, (s, life) in self.clients.items()},
            "signing_key": os.path.join(self.directory, KEY_FILE),
            "kid": self.kid,
            "validated_listener": VALIDATED_LISTENER,
            "unsecured_listener": UNSECURED_LISTENER,
        }


def sign_token(private_pem: bytes, kid: str, sub: str, *, lifetime: float = 3600, audience: str = AUDIENCE,
               issuer: str | None = None, scope: str | None = None, now: float | None = None) -> str:
    """An RS256 JWT as the harness's token endpoint issues it (tests use it
    with other lifetimes, audiences or keys)."""
    import jwt

    now = int(time.time() if now is None else now)
    claims: dict[str, object] = {"sub": sub, "iat": now, "exp": now + int(lifetime), "aud": audience}
    if issuer:
        claims["iss"] = issuer
    if scope:
        claims["scope"] = scope
    return jwt.encode(claims, private_pem, algorithm="RS256", headers={"kid": kid})


def unsecured_token(sub: str, *, lifetime: float = 3600) -> str:
    """An unsigned JWT (alg none) for Kafka's unsecured OAUTHBEARER mode."""
    from fastkc.auth.oauthbearer import UnsecuredTokenProvider

    return UnsecuredTokenProvider(sub, lifetime).token()


# --- the harness's hooks ---------------------------------------------------------------
def broker_properties(described: Mapping[str, Any], mechanisms: Sequence[str]) -> dict[str, object]:
    """server.properties entries for OAUTHBEARER (see the module docstring).
    mechanisms: the harness's other SASL mechanisms (OAUTHBEARER is added)."""
    jaas = '{0} required unsecuredLoginStringClaim_sub="admin";'.format(_LOGIN_MODULE)
    validated = "listener.name.{0}.oauthbearer.".format(VALIDATED_LISTENER.lower())
    unsecured = "listener.name.{0}.oauthbearer.".format(UNSECURED_LISTENER.lower())
    return {
        "sasl.enabled.mechanisms": ",".join(list(mechanisms) + ["OAUTHBEARER"]),
        validated + "sasl.jaas.config": jaas,
        validated + "sasl.server.callback.handler.class": _VALIDATOR,
        # Read by the validator only (the unsecured listener ignores them).
        "sasl.oauthbearer.jwks.endpoint.url": described["jwks_url"],
        "sasl.oauthbearer.expected.audience": described["audience"],
        "sasl.oauthbearer.expected.issuer": described["issuer"],
        unsecured + "sasl.jaas.config": jaas,
    }


def jvm_options(described: Mapping[str, Any]) -> list[str]:
    return ["-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={0},{1}".format(
        described["jwks_url"], described["token_endpoint_url"])]


def start_server(directory: str, *, die_with_parent_prefix: Sequence[str] = (),
                 timeout: float = 30.0) -> dict[str, Any]:
    """Start the OIDC server as a child process in its own session; return
    its description (server.json) once it listens. `die_with_parent_prefix`:
    the harness's command prefix that ends the server with its parent (as
    kerberos.start_kdc takes it), so this module needs nothing of the harness."""
    stop_server(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, SERVER_FILE)
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    with open(os.path.join(directory, "server.log"), "wb") as out:
        proc = subprocess.Popen(
            list(die_with_parent_prefix)
            + [sys.executable, "-m", "fastkc_tools.broker.oauth", "serve", directory],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            with open(path, encoding="utf-8") as fh:
                described: dict[str, Any] = json.load(fh)
            described["pid"] = proc.pid
            return described
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(5)
    with open(os.path.join(directory, "server.log"), "rb") as fh:
        tail = fh.read()[-4000:].decode("utf-8", "replace")
    raise BrokerStartupError("the harness's OIDC server did not start", log_tail=tail)


def stop_server(directory: str, timeout: float = 10.0) -> None:
    """End the OIDC server recorded in `directory` (if it runs)."""
    try:
        with open(os.path.join(directory, SERVER_FILE), encoding="utf-8") as fh:
            pid = json.load(fh).get("server_pid")
    except (FileNotFoundError, ValueError):
        return
    if not pid or not _is_our_server(pid, directory):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _is_our_server(pid, directory):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        time.sleep(0.05)
    if _is_our_server(pid, directory):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _is_our_server(pid: int, directory: str) -> bool:
    """pid runs (not a zombie) and is this folder's server (pid reuse guard)."""
    try:
        with open("/proc/{0}/stat".format(pid), "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
        with open("/proc/{0}/cmdline".format(pid), "rb") as fh:
            return os.path.abspath(directory).encode() in fh.read()
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False


def describe_lines(described: Mapping[str, Any]) -> list[str]:
    """How to connect with OAUTHBEARER (for `fastkc broker status`)."""
    clients = described.get("clients", {})
    lines = ["OAUTHBEARER:",
             "  {0}: JWTs checked against {1} (audience {2}, issuer {3})".format(
                 described.get("validated_listener"), described.get("jwks_url"), described.get("audience"),
                 described.get("issuer")),
             "    token endpoint {0}".format(described.get("token_endpoint_url"))]
    for cid, item in sorted(clients.items()):
        lines.append("    client id {0} / secret {1} (tokens live {2} s)".format(
            cid, item["secret"], item["token_lifetime_s"]))
    lines.append("    fastkc: sasl_oauth_token_provider=fastkc.auth.oidc.OidcClientCredentialsProvider("
                 "token_endpoint_url, client_id, client_secret)")
    lines.append("  {0}: Kafka's unsecured mode (unsigned JWTs with sub, iat, exp)".format(
        described.get("unsecured_listener")))
    return lines


def _serve(directory: str) -> None:
    server = OidcServer(directory)
    described = server.describe()
    described["server_pid"] = os.getpid()
    path = os.path.join(directory, SERVER_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(described, fh, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)  # complete when it appears: the parent waits for it
    # SIGTERM (stop(), or the parent's death under die_with_parent) is
    # blocked before the server thread starts and then waited for here, so
    # no handler runs inside a lock the serving thread may hold.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    server.start()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        sys.exit("usage: python -m fastkc_tools.broker.oauth serve <dir>")
    _serve(sys.argv[2])
