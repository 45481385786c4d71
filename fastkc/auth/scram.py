"""SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Written by hand: the exchange is a few lines of standard-library HMAC and
PBKDF2, and no well-kept Python SCRAM client exists that is not tied to one
database driver.
"""
import base64
import hashlib
import hmac
import os

from fastkc.auth import Config

# errors.py makes its code table's classes at import (globals()), which mypy
# cannot see; the ignore goes (warn_unused_ignores says so) once it declares them
from fastkc.errors import (
    KafkaConfigurationError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def check_config(config: Config) -> None:
    """Fail construction, naming the key, when PLAIN / SCRAM cannot run."""
    for key in ("sasl_plain_username", "sasl_plain_password"):
        if config[key] is None:
            raise KafkaConfigurationError("{0} is required for sasl_mechanism {1}".format(
                key, config["sasl_mechanism"]))
        if not isinstance(config[key], str):
            raise KafkaConfigurationError("{0} must be a str, not {1}".format(key, type(config[key]).__name__))


def new_exchange(config: Config, host: str) -> "SaslExchange":
    return SaslExchange(config["sasl_mechanism"], config["sasl_plain_username"], config["sasl_plain_password"])


class SaslExchange:
    """The client side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
    RFC 7677): first_message() then receive(server bytes) → next message, or
    None when authentication is complete and the server proved itself."""

    _HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self._nonce = nonce or base64.b64encode(os.urandom(24)).decode("ascii")
        self._step = 0
        self._server_signature: bytes | None = None
        self._client_first_bare = ""

    def first_message(self) -> bytes:
        self._step = 1
        if self.mechanism == "PLAIN":
            return b"\0" + self.username.encode("utf-8") + b"\0" + self.password.encode("utf-8")
        if self.mechanism not in self._HASHES:
            raise UnsupportedSaslMechanismError("fastkc does not implement SASL {0}".format(self.mechanism))
        name = self.username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = "n={0},r={1}".format(name, self._nonce)
        return ("n,," + self._client_first_bare).encode("utf-8")

    def receive(self, data: bytes) -> bytes | None:
        if self.mechanism == "PLAIN":
            return None
        if self._step == 1:
            self._step = 2
            return self._client_final(data)
        if self._step == 2:
            self._step = 3
            attrs = _scram_attributes(data)
            if "e" in attrs:
                raise SaslAuthenticationFailedError("SCRAM server error: {0}".format(attrs["e"]))
            if attrs.get("v") is None or self._server_signature is None or not hmac.compare_digest(
                    base64.b64decode(attrs["v"]), self._server_signature):
                raise SaslAuthenticationFailedError("SCRAM: the server's signature does not verify")
            return None
        raise SaslAuthenticationFailedError("SCRAM: unexpected message after the exchange ended")

    def _client_final(self, data: bytes) -> bytes:
        server_first = data.decode("utf-8")
        attrs = _scram_attributes(data)
        nonce, salt, iterations = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if nonce is None or salt is None or iterations is None or not nonce.startswith(self._nonce):
            raise SaslAuthenticationFailedError("SCRAM: malformed server-first message")
        try:
            rounds = int(iterations)
            salt_bytes = base64.b64decode(salt, validate=True)
        except ValueError:
            raise SaslAuthenticationFailedError("SCRAM: malformed salt or iteration count") from None
        if rounds < 4096:  # Kafka's own minimum; fewer means a downgrade attempt
            raise SaslAuthenticationFailedError("SCRAM: iteration count {0} below 4096".format(rounds))
        digest = self._HASHES[self.mechanism]
        salted = hashlib.pbkdf2_hmac(digest, self.password.encode("utf-8"), salt_bytes, rounds)
        client_key = hmac.new(salted, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        without_proof = "c=biws,r=" + nonce
        auth_message = ",".join((self._client_first_bare, server_first, without_proof)).encode("utf-8")
        signature = hmac.new(stored_key, auth_message, digest).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", digest).digest()
        self._server_signature = hmac.new(server_key, auth_message, digest).digest()
        return (without_proof + ",p=" + base64.b64encode(proof).decode("ascii")).encode("utf-8")


def _scram_attributes(data: bytes) -> dict[str, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationFailedError("SCRAM: server message is not UTF-8") from None
    attrs: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            attrs[key] = value
    return attrs

