"""Consumer configuration: kafka-python 3.x's keys and defaults, validated once.

`consumer_config(configs)` returns a complete, checked dict; the consumer, the
client, the connections and (later) the group coordinator all read from it, so
a key is validated in one place. An unknown key raises
KafkaConfigurationError, as kafka-python does (a misspelt key would otherwise
be ignored silently). Group keys (group_id, session_timeout_ms, …) are
accepted and validated even though groups are not implemented yet, so code
written for kafka-python constructs unchanged.
"""
import ipaddress
import logging
import os
import socket
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal, NoReturn

from fastkc import auth

# kafka-python's default, with fastkc's own classes of the same names and interface
from fastkc.assignors import RangePartitionAssignor, RoundRobinPartitionAssignor
from fastkc.errors import KafkaConfigurationError

_DEFAULT_ASSIGNORS = (RangePartitionAssignor, RoundRobinPartitionAssignor)

log = logging.getLogger(__name__)


#: a consumer configuration: kafka-python's keys; the values are the caller's (checked below)
Config = dict[str, Any]


def _default_commit_callback(offsets: object, response: object) -> bool:
    return True


CONSUMER_DEFAULTS: Config = {
    "bootstrap_servers": "localhost",
    "client_id": "fastkc",
    "client_rack": "",
    "group_id": None,
    "group_instance_id": None,
    # KIP-848 (fastkc addition, the Java client's group.protocol / group.remote.assignor):
    # "classic" or "consumer"; the server-side assignor for "consumer" (None: the broker's default)
    "group_protocol": "classic",
    "group_remote_assignor": None,
    "key_deserializer": None,
    "value_deserializer": None,
    "enable_incremental_fetch_sessions": True,
    "fetch_max_wait_ms": 500,
    "fetch_min_bytes": 1,
    "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1 * 1024 * 1024,
    "request_timeout_ms": 30000,
    "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 30000,
    "max_in_flight_requests_per_connection": 5,
    "auto_offset_reset": "latest",
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "default_offset_commit_callback": _default_commit_callback,
    "check_crcs": True,
    "isolation_level": "read_uncommitted",
    "allow_auto_create_topics": True,
    "metadata_max_age_ms": 5 * 60 * 1000,
    "client_dns_lookup": "use_all_dns_ips",
    "partition_assignment_strategy": _DEFAULT_ASSIGNORS,
    "max_poll_records": 500,
    "max_poll_interval_ms": 300000,
    "session_timeout_ms": 45000,
    "heartbeat_interval_ms": 3000,
    "receive_buffer_bytes": None,
    "send_buffer_bytes": None,
    "receive_message_max_bytes": 100000000,
    "socket_options": [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    "consumer_timeout_ms": float("inf"),
    "security_protocol": "PLAINTEXT",
    "ssl_context": None,
    "ssl_check_hostname": True,
    "ssl_cafile": None,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_crlfile": None,
    "ssl_password": None,
    "ssl_ciphers": None,
    "api_version": None,
    "bootstrap_timeout_ms": 30000,
    "connections_max_idle_ms": 9 * 60 * 1000,
    "metric_reporters": [],
    "metrics_enabled": True,
    "metrics_num_samples": 2,
    "metrics_sample_window_ms": 30000,
    "metric_group_prefix": "consumer",
    "selector": None,
    "exclude_internal_topics": True,
    "sasl_mechanism": None,
    "sasl_plain_username": None,
    "sasl_plain_password": None,
    "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka",
    "sasl_kerberos_domain_name": None,
    # fastkc additions (Java's JAAS Krb5LoginModule useKeyTab=true keyTab=... principal=...):
    # GSSAPI credentials from this client keytab, into a private in-memory cache
    "sasl_kerberos_keytab": None,
    "sasl_kerberos_principal": None,
    "sasl_oauth_token_provider": None,
    "proxy_url": None,
    "socks5_proxy": None,
    "kafka_client": None,
    # fastkc addition: poll_arrow()'s key and value as binary_view columns
    # pointing into the fetched (or decompressed) buffers instead of copies
    "arrow_zero_copy": False,
    # fastkc addition: decode the next step (decompression included) on a
    # background thread while the application handles the current records
    # (fastkc/decode_worker.py): 0 = everything on the polling thread, 1 = one
    # worker. 0 by default: measured on a 2-vCPU machine, the worker took
    # ~0.17 CPU-s of phase 1 but saved the polling thread only ~0.02 of its
    # ~0.32 per 1.8 M lz4 records, and poll() got slower (DESIGN.md, "The
    # decode worker")
    "decode_threads": 0,
}

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_DEPRECATED_RESETS = {"smallest": "earliest", "largest": "latest"}

_POSITIVE_INTS = (
    "fetch_max_bytes", "max_partition_fetch_bytes", "request_timeout_ms", "max_in_flight_requests_per_connection",
    "max_poll_records", "max_poll_interval_ms", "session_timeout_ms", "heartbeat_interval_ms",
    "receive_message_max_bytes", "bootstrap_timeout_ms", "connections_max_idle_ms", "metrics_num_samples",
    "metrics_sample_window_ms", "auto_commit_interval_ms",
)
_NON_NEGATIVE_INTS = (
    "fetch_max_wait_ms", "fetch_min_bytes", "retry_backoff_ms", "reconnect_backoff_ms", "reconnect_backoff_max_ms",
    "metadata_max_age_ms",
)
# Keys that travel in int32 protocol fields (Fetch max/min bytes and wait,
# ListOffsets timeout, JoinGroup session and rebalance timeouts, frame sizes):
# a larger value cannot be sent, so it is a configuration error.
_INT32_KEYS = (
    "fetch_max_bytes", "max_partition_fetch_bytes", "fetch_min_bytes", "fetch_max_wait_ms", "request_timeout_ms",
    "session_timeout_ms", "max_poll_interval_ms", "heartbeat_interval_ms", "receive_message_max_bytes",
)
_INT32_MAX = 0x7FFFFFFF
_SSL_FILES = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_crlfile")


def _fail(message: str) -> NoReturn:
    raise KafkaConfigurationError(message)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def consumer_config(configs: Mapping[str, Any]) -> Config:
    """The full configuration: defaults overlaid with `configs`, validated."""
    unknown = set(configs).difference(CONSUMER_DEFAULTS)
    if unknown:
        _fail("Unrecognized configs: {0}".format(sorted(unknown)))
    config = dict(CONSUMER_DEFAULTS)
    config["socket_options"] = list(CONSUMER_DEFAULTS["socket_options"])
    config.update(configs)

    for key in _POSITIVE_INTS:
        if not _is_int(config[key]) or config[key] <= 0:
            _fail("{0} must be a positive int, not {1!r}".format(key, config[key]))
    for key in _NON_NEGATIVE_INTS:
        if not _is_int(config[key]) or config[key] < 0:
            _fail("{0} must be a non-negative int, not {1!r}".format(key, config[key]))
    for key in _INT32_KEYS:
        if config[key] > _INT32_MAX:
            _fail("{0} must be at most {1} (an int32 on the wire), not {2!r}".format(key, _INT32_MAX, config[key]))
    if config["reconnect_backoff_max_ms"] < config["reconnect_backoff_ms"]:
        _fail("reconnect_backoff_max_ms must be >= reconnect_backoff_ms")

    reset = config["auto_offset_reset"]
    reset = _DEPRECATED_RESETS.get(reset, reset)
    if reset not in ("earliest", "latest", "none"):
        _fail("auto_offset_reset must be 'earliest', 'latest' or 'none', not {0!r}".format(reset))
    config["auto_offset_reset"] = reset

    if not _is_int(config["decode_threads"]) or config["decode_threads"] not in (0, 1):
        _fail("decode_threads must be 0 (decode on the polling thread) or 1 (one decode worker), not {0!r}".format(
            config["decode_threads"]))

    if config["isolation_level"] not in ("read_uncommitted", "read_committed"):
        _fail("isolation_level must be 'read_uncommitted' or 'read_committed', not {0!r}".format(
            config["isolation_level"]))

    # The same ordering kafka-python enforces: a fetch may wait fetch_max_wait_ms
    # inside a request that must not time out, on a connection that must not
    # be closed as idle meanwhile.
    if not (config["fetch_max_wait_ms"] < config["request_timeout_ms"] < config["connections_max_idle_ms"]):
        _fail(
            "connections_max_idle_ms ({0}) must be larger than request_timeout_ms ({1}) which must be "
            "larger than fetch_max_wait_ms ({2}).".format(
                config["connections_max_idle_ms"], config["request_timeout_ms"], config["fetch_max_wait_ms"])
        )
    # A Fetch response frame carries the records (up to fetch_max_bytes, or
    # one whole batch beyond it) plus headers: let the frame guard follow.
    frame_needed = config["fetch_max_bytes"] + config["max_partition_fetch_bytes"]
    if config["receive_message_max_bytes"] < frame_needed:
        config["receive_message_max_bytes"] = frame_needed

    servers = config["bootstrap_servers"]
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    elif isinstance(servers, (list, tuple)) and all(isinstance(s, str) for s in servers):
        servers = [s.strip() for s in servers if s.strip()]
    else:
        _fail("bootstrap_servers must be a str or a list of str, not {0!r}".format(servers))
    if not servers:
        _fail("bootstrap_servers is empty")
    config["bootstrap_servers"] = [parse_host_port(s) for s in servers]

    if not isinstance(config["client_id"], str):
        _fail("client_id must be a str")
    if not isinstance(config["client_rack"], str):
        _fail("client_rack must be a str")
    if config["group_id"] is not None and not isinstance(config["group_id"], str):
        _fail("group_id must be a str or None")
    if config["group_protocol"] not in ("classic", "consumer"):
        _fail("group_protocol must be 'classic' or 'consumer', not {0!r}".format(config["group_protocol"]))
    if config["group_remote_assignor"] is not None and not isinstance(config["group_remote_assignor"], str):
        _fail("group_remote_assignor must be a str (e.g. 'uniform', 'range') or None")
    if config["group_instance_id"] is not None and (not isinstance(config["group_instance_id"], str)
                                                    or not config["group_instance_id"]):
        _fail("group_instance_id must be a non-empty str or None")
    for key in ("key_deserializer", "value_deserializer"):
        value = config[key]
        if value is not None and not callable(value) and not callable(getattr(value, "deserialize", None)):
            _fail("{0} must be callable or have a deserialize() method".format(key))
    timeout = config["consumer_timeout_ms"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        _fail("consumer_timeout_ms must be a non-negative number")

    _check_socket_configs(config)
    _check_security(config)
    if config["client_dns_lookup"] not in ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only", "default"):
        _fail("client_dns_lookup must be 'use_all_dns_ips' or 'resolve_canonical_bootstrap_servers_only'")
    if config["proxy_url"] is not None or config["socks5_proxy"] is not None:
        _fail("fastkc does not support proxies (proxy_url / socks5_proxy)")
    return config


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
#     holds reach the per-batch budget, so at most ~2x that is alive.
# Peak decode memory is thus ~2 x 32 MiB of buffers + 40 MiB of descriptors
# by default, plus the raw buffered fetches (capped at fetch_max_bytes), per
# partition being decoded -- and poll() finishes one partition's fetch before
# it starts decoding another's (the fetcher's in-line partition), as Java's
# consumer does. Raise max_partition_fetch_bytes for data that legitimately
# compresses better than 32x.
MIN_BATCH_DECOMPRESSED_BYTES = 16 * 1024 * 1024
MAX_BATCH_DECOMPRESSED_BYTES = 256 * 1024 * 1024
BATCH_DECOMPRESSION_RATIO = 32


def decode_budget(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """(max_decompressed_bytes per batch, max_batch_records, max_held_bytes
    per step) for a validated consumer config; see the comment above."""
    from fastkc.records import batch_record_budget

    per_batch = BATCH_DECOMPRESSION_RATIO * config["max_partition_fetch_bytes"]
    per_batch = max(MIN_BATCH_DECOMPRESSED_BYTES, min(MAX_BATCH_DECOMPRESSED_BYTES, per_batch))
    return per_batch, batch_record_budget(per_batch), per_batch


def _check_socket_configs(config: Mapping[str, Any]) -> None:
    for key in ("send_buffer_bytes", "receive_buffer_bytes"):
        value = config[key]
        if value is not None and (not _is_int(value) or not 0 < value <= _INT32_MAX):
            _fail("{0} must be None (the OS default) or a positive int, not {1!r}".format(key, value))
    options = config["socket_options"]
    if not isinstance(options, (list, tuple)):
        _fail("socket_options must be a list of (level, option, value) tuples, not {0!r}".format(options))
    for option in options:
        if not (isinstance(option, (list, tuple)) and len(option) == 3 and _is_int(option[0]) and _is_int(option[1])
                and (_is_int(option[2]) or isinstance(option[2], (bytes, bytearray)))):
            _fail("socket_options entries must be (level: int, option: int, value: int or bytes), not {0!r}".format(
                option))


def _check_security(config: Mapping[str, Any]) -> None:
    protocol = config["security_protocol"]
    if protocol not in SECURITY_PROTOCOLS:
        _fail("security_protocol must be one of {0}, not {1!r}".format(SECURITY_PROTOCOLS, protocol))
    if protocol.startswith("SASL"):
        auth.check_config(config)
    elif config["sasl_mechanism"] is not None:
        # Unused, as in the Java client (checked: kafka-clients 4.3.1 constructs
        # a consumer with security.protocol=PLAINTEXT or SSL and any
        # sasl.mechanism) and kafka-python 3: a warning, not an error, so
        # configurations that work there work here.
        log.warning("sasl_mechanism %r is ignored: security_protocol is %r (SASL needs SASL_PLAINTEXT or SASL_SSL)",
                    config["sasl_mechanism"], protocol)
    if config["ssl_context"] is not None and not isinstance(config["ssl_context"], ssl.SSLContext):
        _fail("ssl_context must be an ssl.SSLContext")
    for key in _SSL_FILES:
        value = config[key]
        if value is not None and not isinstance(value, (str, os.PathLike)):
            _fail("{0} must be a file path, not {1!r}".format(key, value))
    if config["ssl_ciphers"] is not None and not isinstance(config["ssl_ciphers"], str):
        _fail("ssl_ciphers must be an OpenSSL cipher list string, not {0!r}".format(config["ssl_ciphers"]))
    password = config["ssl_password"]
    if password is not None and not isinstance(password, (str, bytes, bytearray)) and not callable(password):
        _fail("ssl_password must be a str, bytes or a callable returning one")
    if protocol in ("SSL", "SASL_SSL"):
        build_ssl_context(config)  # every file read and checked now: errors name their key


def _check_host(host: str, server: str) -> None:
    """A bootstrap host must be an IP address or a DNS name (RFC 1123: at most
    253 characters, labels of 1..63)."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    try:
        ascii_name = name.encode("idna").decode("ascii")
    except UnicodeError:
        _fail("bootstrap server {0!r}: {1!r} is not a valid host name".format(server, host))
    if len(ascii_name) > 253:
        _fail("bootstrap server {0!r}: host name longer than 253 characters".format(server[:80] + "..."))
    for label in ascii_name.split("."):
        if not 0 < len(label) <= 63:
            _fail("bootstrap server {0!r}: host name has an empty or over-long (> 63) label".format(
                server if len(server) < 100 else server[:80] + "..."))
        if not all(c.isalnum() or c in "-_" for c in label):
            _fail("bootstrap server {0!r}: {1!r} is not a valid host name".format(server, host))


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
