"""Consumer configuration: kafka-python 3.x's keys and defaults, validated once.

The keys, their defaults, kinds, ranges, allowed values and cross-key rules
are declared in fastkc.config_schema; this module is kafka-python's view of
them. `consumer_config(configs)` returns a complete, checked dict; the
consumer, the client, the connections and the group member all read from it,
so a key is validated in one place. An unknown key raises
KafkaConfigurationError, as kafka-python does (a misspelt key would otherwise
be ignored silently); so does every bad value, naming its key.
"""

import logging
import os
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal, NoReturn, cast

from fastkc import auth
from fastkc.cluster.metadata import host_problem
from fastkc.config_schema import (
    SETTINGS,
    SETTINGS_BY_KEY,
    ConsumerConfig,
    Kind,
    check_rules,
    check_value,
)
from fastkc.errors import KafkaConfigurationError

log = logging.getLogger(__name__)


#: a consumer configuration: kafka-python's keys; the values are the caller's (checked below).
#: fastkc.config_schema.ConsumerConfig is the same dict typed key by key.
Config = ConsumerConfig

#: kafka-python's keys and defaults (with fastkc's additions), from the schema. The
#: default assignors are named ("range", "roundrobin"): KafkaConsumer shows the classes.
CONSUMER_DEFAULTS: dict[str, Any] = {setting.key: setting.default for setting in SETTINGS}

SECURITY_PROTOCOLS = SETTINGS_BY_KEY["security_protocol"].choices
_SSL_FILES = tuple(s.key for s in SETTINGS if s.kind is Kind.PATH and s.key.startswith("ssl_"))


def _fail(message: str) -> NoReturn:
    raise KafkaConfigurationError(message)


def _fail_on(key: str, message: str) -> NoReturn:
    # a cross-key rule's message already names its keys (kafka-python's wording)
    raise KafkaConfigurationError(message)


def consumer_config(configs: Mapping[str, Any]) -> Config:
    """The full configuration: defaults overlaid with `configs`, validated
    (every key by fastkc.config_schema, then its cross-key rules)."""
    unknown = set(configs).difference(CONSUMER_DEFAULTS)
    if unknown:
        _fail("Unrecognized configs: {0}".format(sorted(unknown)))
    config: dict[str, Any] = dict(CONSUMER_DEFAULTS)
    config["socket_options"] = list(CONSUMER_DEFAULTS["socket_options"])
    config.update(configs)
    for setting in SETTINGS:
        config[setting.key] = check_value(setting, config[setting.key])
    check_rules(config, _fail_on)

    # A Fetch response frame carries the records (up to fetch_max_bytes, or
    # one whole batch beyond it) plus headers: let the frame guard follow.
    frame_needed = config["fetch_max_bytes"] + config["max_partition_fetch_bytes"]
    if config["receive_message_max_bytes"] < frame_needed:
        config["receive_message_max_bytes"] = frame_needed

    servers = config["bootstrap_servers"]
    servers = servers.split(",") if isinstance(servers, str) else servers
    servers = [s.strip() for s in servers if s.strip()]
    if not servers:
        _fail("bootstrap_servers is empty")
    config["bootstrap_servers"] = [parse_host_port(s) for s in servers]
    _check_security(config)
    # every key was checked against its setting above, and ConsumerConfig
    # lists exactly the settings' keys (tests/unit/test_config_schema.py)
    return cast(Config, config)


def group_id_of(config: Config) -> str:
    """The group_id of a configuration a group member runs with (the
    consumers make one only when group_id is set)."""
    group_id = config["group_id"]
    if group_id is None:
        raise KafkaConfigurationError("a group member needs a group_id")
    return group_id


# --- the decoding budget ------------------------------------------------------
# Memory spent decoding must follow the configuration, not what a batch
# claims: a ~100 KB fetch of compression bombs must not be able to demand
# GiBs, nor a small batch of millions of empty records millions of objects.
# The consumer decodes one batch at a time (fastkc.records.record_stream), so
# three numbers bound it, all derived from max_partition_fetch_bytes (the
# largest batch the consumer is configured for: Kafka's docs ask for it to be
# >= the broker's max.message.bytes, which bounds a batch's compressed size):
#   - decompressed bytes per batch: 32x that (legitimate batch compression
#     ratios of real payloads -- JSON, logs, Avro -- are 3-20x), at least
#     16 MiB, at most 256 MiB (DEFAULT_MAX_DECOMPRESSED_BYTES). Beyond it:
#     DecompressedSizeLimitError. Defaults: 1 MiB → 32 MiB.
#   - records per batch: one per 64 of those bytes (batch_record_budget:
#     80-byte descriptors then stay <= 1.25x the byte budget, twice that for
#     the moment a batch larger than a step is split). Beyond it:
#     RecordCountLimitError. Defaults: 512 Ki records.
#   - decompressed buffers one decode step holds: a step that has handed out
#     records decompresses no further batch once the finished batches it
#     holds reach the per-batch budget, so at most ~2x that is alive (an
#     Arrow step counts the batches it parsed straight into its columns too:
#     their buffers are gone, but the columns hold a copy).
#   - decompressed bytes one take decodes (a poll(), getmany() or
#     poll_arrow(), across partitions): the same figure. Each step's
#     decompression is charged to the take that hands its records out
#     (fastkc.fetch.completed.TakeBudget); once a take that has handed out
#     records was charged the per-batch budget, it starts no further step:
#     the rest of the fetch stays buffered, raw, and the next take goes on
#     from there (that partition first), so nothing is skipped and positions
#     move only with what was handed out. A take's records thus come from at
#     most ~4x the budget of decompressed data (what it charged before its
#     last step, that step's ~2x, the rest of a batch an earlier take
#     opened), however many compressed batches a Fetch answer carries --
#     without it a fetch of many batches each under the per-batch cap made
#     one poll() hold GiBs. A take always runs its first step (progress); at
#     the default 500 records a poll it ends one early only when the batches
#     it opens decompress to more than the budget (records of ~64 KiB on).
#     Uncompressed batches charge nothing: their bytes are the fetched ones,
#     bounded by the buffer.
# Peak decode memory is thus ~2 x 32 MiB of buffers + 40 MiB of descriptors
# by default, plus the raw buffered fetches (capped at fetch_max_bytes), per
# partition being decoded -- and poll() finishes one partition's fetch before
# it starts decoding another's (the fetcher's in-line partition), as Java's
# consumer does -- and the records a take hands out hold ~4 x 32 MiB at most.
# Raise max_partition_fetch_bytes for data that legitimately compresses
# better than 32x.
MIN_BATCH_DECOMPRESSED_BYTES = 16 * 1024 * 1024
MAX_BATCH_DECOMPRESSED_BYTES = 256 * 1024 * 1024
BATCH_DECOMPRESSION_RATIO = 32


def decode_budget(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """(max_decompressed_bytes per batch, max_batch_records, max_held_bytes
    per step -- also the decompressed bytes one take decodes) for a validated
    consumer config; see the comment above."""
    from fastkc.records import batch_record_budget

    per_batch = BATCH_DECOMPRESSION_RATIO * config["max_partition_fetch_bytes"]
    per_batch = max(MIN_BATCH_DECOMPRESSED_BYTES, min(MAX_BATCH_DECOMPRESSED_BYTES, per_batch))
    return per_batch, batch_record_budget(per_batch), per_batch


def _check_security(config: Mapping[str, Any]) -> None:
    protocol = config["security_protocol"]
    if protocol.startswith("SASL"):
        auth.check_config(config)
    elif config["sasl_mechanism"] is not None:
        # Unused, as in the Java client (checked: kafka-clients 4.3.1 constructs
        # a consumer with security.protocol=PLAINTEXT or SSL and any
        # sasl.mechanism) and kafka-python 3: a warning, not an error, so
        # configurations that work there work here.
        log.warning("sasl_mechanism %r is ignored: security_protocol is %r (SASL needs SASL_PLAINTEXT or SASL_SSL)",
                    config["sasl_mechanism"], protocol)
    if protocol in ("SSL", "SASL_SSL"):
        build_ssl_context(config)  # every file read and checked now: errors name their key


def _check_host(host: str, server: str) -> None:
    """A bootstrap host must be an IP address or a name DNS can carry: the
    rule metadata answers are held to (fastkc.cluster.metadata.host_problem)."""
    problem = host_problem(host)
    if problem is not None:
        _fail("bootstrap server {0!r}: not a valid host ({1})".format(
            server if len(server) < 100 else server[:80] + "...", problem))


def parse_host_port(server: str, default_port: int = 9092) -> tuple[str, int]:
    """'host:port', '[v6]:port' or 'host' → (host, port)."""
    server = server.strip()
    if server.startswith("["):
        host, _, rest = server[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif server.count(":") == 1:
        host, _, port = server.partition(":")
    else:  # a bare host, or a bare IPv6 address
        host, port = server, ""
    if not host:
        _fail("bootstrap server {0!r} has no host".format(server))
    _check_host(host, server)
    if port == "":
        return host, default_port
    try:
        number = int(port)
    except ValueError:
        _fail("bootstrap server {0!r} has a bad port".format(server))
    if not 0 < number < 65536:
        _fail("bootstrap server {0!r} has a port outside 1..65535".format(server))
    return host, number


def build_ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """The SSLContext for SSL / SASL_SSL: the user's, or one from the ssl_* keys.
    Every file is read here; a missing, unreadable or non-PEM one, a key
    ssl_password does not decrypt, or a cipher list OpenSSL rejects, is a
    KafkaConfigurationError naming its key.

    Built as kafka-python 3.0.12's KafkaSSLTransport builds it (checked in its
    source), so a configuration verifies the same peers there and here:
    PROTOCOL_TLS_CLIENT (certificate always verified; ssl_check_hostname only
    switches the name check), TLS 1.2 at least, ssl_cafile or else the
    system's default CA store, the client chain with ssl_password, and
    ssl_crlfile checked for the broker's (leaf) certificate only
    (VERIFY_CRL_CHECK_LEAF). Not create_default_context(): from Python 3.13
    it adds VERIFY_X509_STRICT, which would refuse certificates kafka-python
    accepts. Where kafka-python 3.0.12 is broken, fastkc does what its
    documentation says instead: ssl_crlfile (kafka-python passes `crl=` to
    load_verify_locations, a TypeError at every connect) and ssl_ciphers
    (accepted, never applied there; applied here with set_ciphers, which
    governs TLS 1.2 and below: OpenSSL's TLS 1.3 suites are not a cipher
    list setting). A user's ssl_context is used as it is, every other ssl_*
    key ignored, as there."""
    if config["ssl_context"] is not None:
        given: ssl.SSLContext = config["ssl_context"]
        return given
    for key in _SSL_FILES:
        path = config[key]
        if path and not os.path.isfile(path):
            _fail("{0}: {1!r} is not a file".format(key, path))
        if path and not os.access(path, os.R_OK):
            _fail("{0}: {1!r} cannot be read".format(key, path))
    if config["ssl_keyfile"] and not config["ssl_certfile"]:
        _fail("ssl_keyfile is set without ssl_certfile")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = bool(config["ssl_check_hostname"])
    with _ssl_errors("ssl_cafile"):
        if config["ssl_cafile"]:
            context.load_verify_locations(config["ssl_cafile"])
        else:
            context.load_default_certs()
    if config["ssl_certfile"]:
        _load_client_chain(context, config)
    if config["ssl_crlfile"]:
        with _ssl_errors("ssl_crlfile"):
            # A PEM file of CRLs goes into the same X509 store as the CAs.
            context.load_verify_locations(config["ssl_crlfile"])
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if config["ssl_ciphers"]:
        with _ssl_errors("ssl_ciphers"):
            context.set_ciphers(config["ssl_ciphers"])
    return context


def _load_client_chain(context: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """load_cert_chain with ssl_password, always through a callback: given no
    password and an encrypted key, OpenSSL would otherwise prompt on the
    terminal ("Enter PEM pass phrase:") and block the constructor. The
    callback also tells a wrong password apart from a bad file, since
    OpenSSL reports both as "PEM lib". No message carries the password."""
    # str, bytes, or a callable returning one (checked by _check_security)
    password: Any = config["ssl_password"]
    asked: list[bool] = []

    def give_password() -> str | bytes | bytearray:
        asked.append(True)
        if password is None:
            return b""  # decryption fails at once; reported below
        if callable(password):
            try:
                value = password()
            except Exception as exc:
                # the user's callable failed: name the key, not its message
                # (it could hold the secret)
                raise KafkaConfigurationError(
                    "ssl_password: the callable raised {0}".format(type(exc).__name__)) from None
            if not isinstance(value, (str, bytes, bytearray)):
                raise KafkaConfigurationError("ssl_password: the callable returned {0}, not str or bytes".format(
                    type(value).__name__))
            return value
        given: str | bytes | bytearray = password
        return given

    key = "ssl_certfile" if not config["ssl_keyfile"] else "ssl_certfile / ssl_keyfile"
    try:
        context.load_cert_chain(config["ssl_certfile"], config["ssl_keyfile"], give_password)
    except KafkaConfigurationError:
        raise
    except (ssl.SSLError, OSError, ValueError, TypeError) as exc:
        if asked and password is None:
            raise KafkaConfigurationError(
                "ssl_password: the private key in {0} is encrypted and no ssl_password is set".format(
                    "ssl_keyfile" if config["ssl_keyfile"] else "ssl_certfile")) from None
        if asked and getattr(exc, "reason", None) is None:
            # OpenSSL's "PEM lib" after the password was asked for: the key
            # did not decrypt. (A key that decrypts but does not match the
            # certificate says KEY_VALUES_MISMATCH, reported as it is below.)
            raise KafkaConfigurationError(
                "ssl_password does not decrypt the private key in {0} ({1})".format(
                    "ssl_keyfile" if config["ssl_keyfile"] else "ssl_certfile", type(exc).__name__)) from None
        raise KafkaConfigurationError("{0}: {1}".format(key, exc)) from exc


class _ssl_errors:
    """Turn what ssl raises while loading `key` into KafkaConfigurationError."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __enter__(self) -> "_ssl_errors":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc is not None and isinstance(exc, (ssl.SSLError, OSError, ValueError, TypeError)):
            raise KafkaConfigurationError("{0}: {1}".format(self.key, exc)) from exc
        return False
