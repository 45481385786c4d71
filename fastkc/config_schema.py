"""The consumer's configuration, declared once.

One `Setting` per key: kafka-python's name (the canonical key), its kind,
default, range or allowed values, a doc line, and its other spellings: the
Java client's dotted name, librdkafka's (kcat's `-X`) names where they differ,
whether aiokafka's AIOKafkaConsumer takes the same keyword, and Spark's
`kafka.`-prefixed option (derived). `RULES` are the cross-key rules.

The front-ends are adapters over this table: fastkc.config (kafka-python's
dict, validated by `check_value` and `check_rules`), fastkc.aio.config
(aiokafka's keywords, its defaults where they differ and its error types),
fastkc.spark.options (`kafka.*` options) and the CLI (`setting_from_text`).
docs/reference/configuration.md is generated from it
(scripts/gen_config_reference.py). Pure: imports nothing of fastkc but errors.
"""
import enum
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypedDict

from fastkc.deserializers import is_batch_deserializer
from fastkc.errors import KafkaConfigurationError

INT32_MAX = 0x7FFFFFFF

#: the built-in assignors' protocol names; the group resolves them to
#: fastkc.assignors' classes (fastkc.group.classic_machine.resolve_assignors)
ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")


class Kind(enum.Enum):
    """What a key's value is; `check_value` and `value_from_text` act on it."""

    INT = "int"
    NUMBER = "number"  # int or float (consumer_timeout_ms may be inf)
    BOOL = "bool"
    STR = "str"
    CHOICE = "choice"
    SERVERS = "host[:port] list"
    VERSION = "broker version"
    ASSIGNORS = "assignors"
    DESERIALIZER = "deserializer"
    CALLABLE = "callable"
    PATH = "file path"
    SECRET = "password"
    SSL_CONTEXT = "ssl.SSLContext"
    SOCKET_OPTIONS = "socket options"
    PRINCIPAL = "str or gssapi.Name"
    OBJECT = "object"
    UNSUPPORTED = "unsupported"  # accepted as None only (kafka-python's proxies)


#: kinds a command line or a Spark option can spell (the others take Python objects)
TEXT_KINDS = frozenset({Kind.INT, Kind.NUMBER, Kind.BOOL, Kind.STR, Kind.CHOICE, Kind.SERVERS, Kind.VERSION,
                        Kind.ASSIGNORS, Kind.PATH, Kind.SECRET, Kind.PRINCIPAL, Kind.UNSUPPORTED})


@dataclass(frozen=True)
class Setting:
    key: str  # kafka-python's name
    kind: Kind
    default: Any
    doc: str
    minimum: int | None = None  # INT / NUMBER: the least value; STR: the least length
    maximum: int | None = None
    choices: tuple[Any, ...] = ()  # CHOICE: the allowed values
    nullable: bool = False  # None is a value (besides a None default, which always is)
    java: str | None = None  # the Java consumer's name, None when it has no such key
    librdkafka: tuple[str, ...] = ()  # librdkafka's names where they differ from java's
    aiokafka: bool = False  # aiokafka's AIOKafkaConsumer has a keyword of this name (fastkc.aio.config)
    value_aliases: Mapping[str, str] = field(default_factory=dict)  # kafka-python's deprecated spellings
    secret: bool = False  # errors name the value's type, never the value

    @property
    def dotted(self) -> str:
        """The dotted spelling string front-ends accept for any key."""
        return self.java or self.key.replace("_", ".")

    @property
    def spark(self) -> str | None:
        """The Spark source's option (None: not settable from a string)."""
        return "kafka." + self.dotted if self.kind in TEXT_KINDS else None


def _default_commit_callback(offsets: object, response: object) -> bool:
    return True


_S = Setting
_MS = "milliseconds"
SETTINGS: tuple[Setting, ...] = (
    _S("bootstrap_servers", Kind.SERVERS, "localhost", "'host[:port]' strings (a list, or one comma-separated "
       "str) to bootstrap metadata from", java="bootstrap.servers", librdkafka=("metadata.broker.list",),
       aiokafka=True),
    _S("client_id", Kind.STR, "fastkc", "the name this client gives brokers (logs, quotas)", java="client.id",
       aiokafka=True),
    _S("client_rack", Kind.STR, "", "the rack this client runs in (KIP-392 fetch from the closest replica)",
       java="client.rack", aiokafka=True),
    _S("group_id", Kind.STR, None, "the consumer group to join; None: no group (assign() only, no commits)",
       java="group.id", aiokafka=True),
    _S("group_instance_id", Kind.STR, None, "a static member id (KIP-345)", minimum=1, java="group.instance.id",
       aiokafka=True),
    _S("group_protocol", Kind.CHOICE, "classic", "the group protocol: classic, or consumer (KIP-848)",
       choices=("classic", "consumer"), java="group.protocol"),
    _S("group_remote_assignor", Kind.STR, None, "the server-side assignor for group_protocol='consumer' "
       "(e.g. 'uniform', 'range'); None: the broker's default", java="group.remote.assignor"),
    _S("key_deserializer", Kind.DESERIALIZER, None, "f(bytes) or a Deserializer for record keys",
       java="key.deserializer", aiokafka=True),
    _S("value_deserializer", Kind.DESERIALIZER, None, "f(bytes) or a Deserializer for record values",
       java="value.deserializer", aiokafka=True),
    _S("enable_incremental_fetch_sessions", Kind.BOOL, True, "use KIP-227 fetch sessions"),
    _S("fetch_max_wait_ms", Kind.INT, 500, "how long a broker may hold a fetch for fetch_min_bytes", minimum=0,
       maximum=INT32_MAX, java="fetch.max.wait.ms", aiokafka=True),
    _S("fetch_min_bytes", Kind.INT, 1, "the least data a fetch waits for", minimum=0, maximum=INT32_MAX,
       java="fetch.min.bytes", aiokafka=True),
    _S("fetch_max_bytes", Kind.INT, 52428800, "the most record data one fetch asks for (a soft cap)", minimum=1,
       maximum=INT32_MAX, java="fetch.max.bytes", aiokafka=True),
    _S("max_partition_fetch_bytes", Kind.INT, 1048576, "the most record data one fetch asks for per partition",
       minimum=1, maximum=INT32_MAX, java="max.partition.fetch.bytes", aiokafka=True),
    _S("request_timeout_ms", Kind.INT, 30000, "how long a request may wait for its answer", minimum=1,
       maximum=INT32_MAX, java="request.timeout.ms", aiokafka=True),
    _S("retry_backoff_ms", Kind.INT, 100, "the pause before a failed request is retried", minimum=0,
       java="retry.backoff.ms", aiokafka=True),
    _S("reconnect_backoff_ms", Kind.INT, 50, "the first pause before reconnecting to a broker", minimum=0,
       java="reconnect.backoff.ms"),
    _S("reconnect_backoff_max_ms", Kind.INT, 30000, "the longest pause before reconnecting (doubles up to it)",
       minimum=0, java="reconnect.backoff.max.ms"),
    _S("max_in_flight_requests_per_connection", Kind.INT, 5, "requests sent to a broker before answers come",
       minimum=1),
    _S("auto_offset_reset", Kind.CHOICE, "latest", "where to start without a committed offset (or out of "
       "range): earliest, latest, or none (raise)", choices=("earliest", "latest", "none"),
       java="auto.offset.reset", aiokafka=True, value_aliases={"smallest": "earliest", "largest": "latest"}),
    _S("enable_auto_commit", Kind.BOOL, True, "commit positions every auto_commit_interval_ms",
       java="enable.auto.commit", aiokafka=True),
    _S("auto_commit_interval_ms", Kind.INT, 5000, "the period of automatic commits", minimum=1,
       java="auto.commit.interval.ms", aiokafka=True),
    _S("default_offset_commit_callback", Kind.CALLABLE, _default_commit_callback,
       "f(offsets, response) called after an asynchronous commit"),
    _S("check_crcs", Kind.BOOL, True, "verify each record batch's CRC32C", java="check.crcs", aiokafka=True),
    _S("isolation_level", Kind.CHOICE, "read_uncommitted", "read_committed hides aborted and open transactions",
       choices=("read_uncommitted", "read_committed"), java="isolation.level", aiokafka=True),
    _S("allow_auto_create_topics", Kind.BOOL, True, "let a metadata request create a missing topic",
       java="allow.auto.create.topics"),
    _S("metadata_max_age_ms", Kind.INT, 300000, "the period of metadata refreshes", minimum=0,
       java="metadata.max.age.ms", aiokafka=True),
    _S("client_dns_lookup", Kind.CHOICE, "use_all_dns_ips", "how bootstrap names are resolved",
       choices=("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only", "default"),
       java="client.dns.lookup"),
    _S("partition_assignment_strategy", Kind.ASSIGNORS, ("range", "roundrobin"), "assignors by name ({0}), "
       "class or instance, in order of preference; KafkaConsumer.config shows the classes".format(
           ", ".join(ASSIGNOR_NAMES)), choices=ASSIGNOR_NAMES, java="partition.assignment.strategy",
       aiokafka=True),
    _S("max_poll_records", Kind.INT, 500, "the most records one poll() returns", minimum=1,
       java="max.poll.records", aiokafka=True),
    _S("max_poll_interval_ms", Kind.INT, 300000, "the longest pause between polls before the member leaves the "
       "group", minimum=1, maximum=INT32_MAX, java="max.poll.interval.ms", aiokafka=True),
    _S("session_timeout_ms", Kind.INT, 45000, "how long the coordinator waits for a heartbeat", minimum=1,
       maximum=INT32_MAX, java="session.timeout.ms", aiokafka=True),
    _S("heartbeat_interval_ms", Kind.INT, 3000, "the period of heartbeats (below session_timeout_ms)",
       minimum=1, maximum=INT32_MAX, java="heartbeat.interval.ms", aiokafka=True),
    _S("receive_buffer_bytes", Kind.INT, None, "SO_RCVBUF; None: the OS default", minimum=1, maximum=INT32_MAX,
       java="receive.buffer.bytes"),
    _S("send_buffer_bytes", Kind.INT, None, "SO_SNDBUF; None: the OS default", minimum=1, maximum=INT32_MAX,
       java="send.buffer.bytes"),
    _S("receive_message_max_bytes", Kind.INT, 100000000, "the largest response frame accepted (raised to "
       "fetch_max_bytes + max_partition_fetch_bytes)", minimum=1, maximum=INT32_MAX),
    _S("socket_options", Kind.SOCKET_OPTIONS, [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
       "(level, option, value) tuples set on every broker socket"),
    _S("consumer_timeout_ms", Kind.NUMBER, float("inf"), "iteration stops after this long without a record "
       "(aiokafka's keyword of this name is its fetch task's wake-up period)", minimum=0, aiokafka=True),
    _S("security_protocol", Kind.CHOICE, "PLAINTEXT", "how broker connections are secured",
       choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), java="security.protocol", aiokafka=True),
    _S("ssl_context", Kind.SSL_CONTEXT, None, "a ready SSLContext; every other ssl_* key is then ignored",
       aiokafka=True),
    _S("ssl_check_hostname", Kind.BOOL, True, "check the broker certificate's host name"),
    _S("ssl_cafile", Kind.PATH, None, "PEM file of the CAs to trust (None: the system's)",
       librdkafka=("ssl.ca.location",)),
    _S("ssl_certfile", Kind.PATH, None, "PEM file of the client certificate chain",
       librdkafka=("ssl.certificate.location",)),
    _S("ssl_keyfile", Kind.PATH, None, "PEM file of the client private key", librdkafka=("ssl.key.location",)),
    _S("ssl_crlfile", Kind.PATH, None, "PEM file of CRLs checked for the broker's certificate",
       librdkafka=("ssl.crl.location",)),
    _S("ssl_password", Kind.SECRET, None, "the private key's password: str, bytes or a callable returning one",
       java="ssl.key.password", secret=True),
    _S("ssl_ciphers", Kind.STR, None, "an OpenSSL cipher list (TLS 1.2 and below)", java="ssl.cipher.suites"),
    _S("api_version", Kind.VERSION, None, "the broker release to assume, (2, 6) or '2.6'; None or 'auto': "
       "learnt from the broker", aiokafka=True),
    _S("bootstrap_timeout_ms", Kind.INT, 30000, "how long the constructor waits for a first broker", minimum=1),
    _S("connections_max_idle_ms", Kind.INT, 540000, "idle connections are closed after this long", minimum=1,
       java="connections.max.idle.ms", aiokafka=True),
    _S("metric_reporters", Kind.OBJECT, [], "metrics reporter classes", java="metric.reporters"),
    _S("metrics_enabled", Kind.BOOL, True, "keep kafka-python's consumer metrics"),
    _S("metrics_num_samples", Kind.INT, 2, "samples per metric window", minimum=1, java="metrics.num.samples"),
    _S("metrics_sample_window_ms", Kind.INT, 30000, "the length of a metric sample", minimum=1,
       java="metrics.sample.window.ms"),
    _S("metric_group_prefix", Kind.STR, "consumer", "the metrics' group name prefix"),
    _S("selector", Kind.OBJECT, None, "kafka-python's; accepted and ignored"),
    _S("exclude_internal_topics", Kind.BOOL, True, "pattern subscriptions skip internal topics",
       java="exclude.internal.topics", aiokafka=True),
    _S("sasl_mechanism", Kind.STR, None, "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI, OAUTHBEARER or "
       "AWS_MSK_IAM (with a SASL security_protocol)", java="sasl.mechanism", librdkafka=("sasl.mechanisms",),
       aiokafka=True),
    _S("sasl_plain_username", Kind.STR, None, "the PLAIN / SCRAM user", librdkafka=("sasl.username",),
       aiokafka=True),
    _S("sasl_plain_password", Kind.STR, None, "the PLAIN / SCRAM password", librdkafka=("sasl.password",),
       aiokafka=True, secret=True),
    _S("sasl_kerberos_name", Kind.PRINCIPAL, None, "GSSAPI: the brokers' 'service@host' name (overrides "
       "sasl_kerberos_service_name and the broker's host)"),
    _S("sasl_kerberos_service_name", Kind.STR, "kafka", "GSSAPI: the brokers' service name (None with "
       "sasl_kerberos_name)", nullable=True, java="sasl.kerberos.service.name", aiokafka=True),
    _S("sasl_kerberos_domain_name", Kind.STR, None, "GSSAPI: the brokers' host name to use", aiokafka=True),
    _S("sasl_kerberos_keytab", Kind.PATH, None, "GSSAPI: the client keytab (fastkc addition)"),
    _S("sasl_kerberos_principal", Kind.STR, None, "GSSAPI: the client principal (fastkc addition)"),
    _S("sasl_oauth_token_provider", Kind.OBJECT, None, "OAUTHBEARER: an AbstractTokenProvider", aiokafka=True),
    _S("proxy_url", Kind.UNSUPPORTED, None, "kafka-python's; not supported (None only)"),
    _S("socks5_proxy", Kind.UNSUPPORTED, None, "kafka-python's; not supported (None only)"),
    _S("kafka_client", Kind.OBJECT, None, "kafka-python's; accepted and ignored"),
    _S("arrow_zero_copy", Kind.BOOL, False, "poll_arrow(): keys and values as views into the fetched buffers "
       "(fastkc addition)"),
    _S("decode_threads", Kind.INT, 0, "0: decode on the polling thread; 1: one decode worker (fastkc addition)",
       minimum=0, maximum=1),
)
SETTINGS_BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}


# --- cross-key rules ---------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    keys: tuple[str, ...]  # the first is the one the error names
    holds: Callable[[Mapping[str, Any]], bool]
    message: str  # formatted with the config
    doc: str


RULES: tuple[Rule, ...] = (
    Rule(("reconnect_backoff_max_ms", "reconnect_backoff_ms"),
         lambda c: c["reconnect_backoff_max_ms"] >= c["reconnect_backoff_ms"],
         "reconnect_backoff_max_ms must be >= reconnect_backoff_ms",
         "reconnect_backoff_ms <= reconnect_backoff_max_ms"),
    # kafka-python's ordering: a fetch may wait fetch_max_wait_ms inside a
    # request that must not time out, on a connection not closed as idle meanwhile
    Rule(("connections_max_idle_ms", "request_timeout_ms", "fetch_max_wait_ms"),
         lambda c: c["fetch_max_wait_ms"] < c["request_timeout_ms"] < c["connections_max_idle_ms"],
         "connections_max_idle_ms ({connections_max_idle_ms}) must be larger than request_timeout_ms "
         "({request_timeout_ms}) which must be larger than fetch_max_wait_ms ({fetch_max_wait_ms}).",
         "fetch_max_wait_ms < request_timeout_ms < connections_max_idle_ms"),
    # kafka-python's Heartbeat (and Java's) with a classic group: a member whose
    # heartbeats come after its session ended would be expelled every time
    # (KIP-848's broker sets both for group_protocol='consumer')
    Rule(("heartbeat_interval_ms", "session_timeout_ms"),
         lambda c: c["group_id"] is None or c["group_protocol"] != "classic"
         or c["heartbeat_interval_ms"] < c["session_timeout_ms"],
         "heartbeat_interval_ms ({heartbeat_interval_ms}) must be lower than session_timeout_ms "
         "({session_timeout_ms})",
         "heartbeat_interval_ms < session_timeout_ms (with a group_id, group_protocol 'classic')"),
)


def check_rules(config: Mapping[str, Any], fail: Callable[[str, str], NoReturn]) -> None:
    """Every rule of RULES; `fail(key, message)` for the first that does not hold."""
    for rule in RULES:
        if not rule.holds(config):
            fail(rule.keys[0], rule.message.format(**config))


# --- values ------------------------------------------------------------------------
class ValueTypeError(KafkaConfigurationError):
    """A value of the wrong type (aiokafka's flavour raises its TypeError for it)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(setting: Setting, value: object) -> str:
    return type(value).__name__ if setting.secret else repr(value)


def _type_error(setting: Setting, want: str, value: object) -> NoReturn:
    raise ValueTypeError("{0} must be {1}, not {2}".format(setting.key, want, _shown(setting, value)))


def _value_error(setting: Setting, message: str) -> NoReturn:
    raise KafkaConfigurationError("{0} {1}".format(setting.key, message))


def _range_text(setting: Setting) -> str:
    low, high = setting.minimum, setting.maximum
    if high == INT32_MAX:
        return ">= {0} and <= {1} (an int32 on the wire)".format(low, high)
    if high is not None:
        return "in {0}..{1}".format(low, high)
    return ">= {0}".format(low)


def parse_version(value: object) -> tuple[int, ...] | None:
    """api_version as kafka-python 3 reads it: None or 'auto' (learn it from
    the broker), a tuple of ints such as (2, 6) or (0, 10, 2), or the older
    str form '2.6' / '0.10.2'. Anything else, and releases before 0.8.0
    (kafka-python: UnrecognizedBrokerVersion), raise ValueError."""
    if value is None or value == "auto":
        return None
    if isinstance(value, str):
        try:
            value = tuple(int(part) for part in value.split("."))  # int() as kafka-python reads each part
        except ValueError:
            raise ValueError("expected a version such as '2.6' or (2, 6), not {0!r}".format(value)) from None
    if not isinstance(value, tuple) or not value or not all(_is_int(part) and part >= 0 for part in value):
        raise ValueError("expected None, a tuple of ints such as (2, 6) or a str such as '2.6', not {0!r}".format(
            value))
    if value < (0, 8, 0):
        raise ValueError("{0!r} is older than any broker release (0.8.0)".format(value))
    return value


def check_value(setting: Setting, value: Any, *, aiokafka: bool = False) -> Any:
    """The checked (and, for VERSION and kafka-python's deprecated spellings,
    normalized) value of one key. Raises KafkaConfigurationError naming the
    key; ValueTypeError (one) when the type is wrong. kafka-python reads
    booleans by truth value and takes its deprecated spellings (smallest);
    aiokafka's flavour wants a bool and takes none."""
    kind = setting.kind
    if value is None and (setting.nullable or setting.default is None):
        return value
    if kind is Kind.INT or kind is Kind.NUMBER:
        numeric = _is_int(value) or (kind is Kind.NUMBER and isinstance(value, float))
        if not numeric:
            _type_error(setting, "an int" if kind is Kind.INT else "a number", value)
        if (setting.minimum is not None and not value >= setting.minimum) or \
                (setting.maximum is not None and value > setting.maximum):
            _value_error(setting, "must be {0}, not {1}".format(_range_text(setting), _shown(setting, value)))
    elif kind is Kind.BOOL:
        if aiokafka and not isinstance(value, bool):
            _type_error(setting, "a bool", value)
    elif kind is Kind.STR:
        if not isinstance(value, str):
            _type_error(setting, "a str", value)
        if setting.minimum is not None and len(value) < setting.minimum:
            _value_error(setting, "must be a non-empty str")
    elif kind is Kind.CHOICE:
        if not aiokafka and isinstance(value, str):
            value = setting.value_aliases.get(value, value)
        if value not in setting.choices:
            _value_error(setting, "must be one of {0}, not {1!r}".format(
                ", ".join(repr(c) for c in setting.choices), value))
    elif kind is Kind.SERVERS:
        if not (isinstance(value, str) or (isinstance(value, (list, tuple))
                                           and all(isinstance(s, str) for s in value))):
            _type_error(setting, "a str or a list of str", value)
    elif kind is Kind.VERSION:
        try:
            return parse_version(value)
        except ValueError as exc:
            _value_error(setting, str(exc))
    elif kind is Kind.ASSIGNORS:
        _check_assignors(setting, value)
    elif kind is Kind.DESERIALIZER:
        if not (callable(value) or callable(getattr(value, "deserialize", None)) or is_batch_deserializer(value)):
            _type_error(setting, "callable or an object with a deserialize() or deserialize_many() method", value)
    elif kind is Kind.CALLABLE:
        if not callable(value):
            _type_error(setting, "callable", value)
    elif kind is Kind.PATH:
        if not isinstance(value, (str, os.PathLike)):
            _type_error(setting, "a file path", value)
    elif kind is Kind.SECRET:
        if not isinstance(value, (str, bytes, bytearray)) and not callable(value):
            _type_error(setting, "a str, bytes or a callable returning one", value)
    elif kind is Kind.SSL_CONTEXT:
        if not isinstance(value, ssl.SSLContext):
            _type_error(setting, "an ssl.SSLContext", value)
    elif kind is Kind.SOCKET_OPTIONS:
        _check_socket_options(setting, value)
    elif kind is Kind.UNSUPPORTED:
        _value_error(setting, "is not supported by fastkc (only None), not {0!r}".format(value))
    return value


def _check_assignors(setting: Setting, value: Any) -> None:
    if not isinstance(value, (list, tuple)) or not value:
        _type_error(setting, "a non-empty list or tuple of assignors", value)
    for assignor in value:
        if isinstance(assignor, str):
            if assignor not in setting.choices:
                _value_error(setting, ": unknown assignor {0!r}; known: {1}".format(
                    assignor, ", ".join(setting.choices)))
        elif not isinstance(getattr(assignor, "name", None), str) or not callable(getattr(assignor, "assign", None)):
            _type_error(setting, "assignor names, or assignors with a name and an assign() "
                        "(AbstractPartitionAssignor)", assignor)


def _check_socket_options(setting: Setting, options: Any) -> None:
    if not isinstance(options, (list, tuple)):
        _type_error(setting, "a list of (level, option, value) tuples", options)
    for option in options:
        if not (isinstance(option, (list, tuple)) and len(option) == 3 and _is_int(option[0]) and _is_int(option[1])
                and (_is_int(option[2]) or isinstance(option[2], (bytes, bytearray)))):
            _type_error(setting, "(level: int, option: int, value: int or bytes) entries", option)


# --- strings: the CLI's -X / -F and Spark's kafka.* options --------------------------
#: the words a command line may use for a bool
TEXT_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False,
                 "off": False}
_BY_JAVA_NAME = {s.java: s.key for s in SETTINGS if s.java is not None}
_BY_LIBRDKAFKA_NAME = {name: s.key for s in SETTINGS for name in s.librdkafka}


def key_for(name: str, *, librdkafka: bool = True) -> str | None:
    """kafka-python's key for a kafka-python, Java or (unless told not to)
    librdkafka name, or any key written with dots or dashes for underscores;
    None if there is none."""
    name = name.strip()
    if librdkafka and name in _BY_LIBRDKAFKA_NAME:
        return _BY_LIBRDKAFKA_NAME[name]
    if name in _BY_JAVA_NAME:
        return _BY_JAVA_NAME[name]
    key = name.replace(".", "_").replace("-", "_")
    return key if key in SETTINGS_BY_KEY else None


class NotTextSettable(ValueError):
    """The key takes a Python object: no string spells its value."""


def value_from_text(setting: Setting, text: str, booleans: Mapping[str, bool] = TEXT_BOOLEANS) -> Any:
    """The typed value `text` spells for `setting`; ValueError when it does not
    parse as the key's kind (NotTextSettable for object kinds)."""
    kind = setting.kind
    if kind not in TEXT_KINDS:
        raise NotTextSettable("{0} takes a Python object".format(setting.key))
    if kind is Kind.BOOL:
        if text.lower() not in booleans:
            raise ValueError("expected true or false")
        return booleans[text.lower()]
    if kind is Kind.INT:
        return int(text)
    if kind is Kind.NUMBER:
        return float(text)
    if kind is Kind.VERSION:
        return parse_version(text)
    if kind is Kind.ASSIGNORS:
        names = tuple(name.strip() for name in text.split(","))
        unknown = [name for name in names if name not in setting.choices]
        if unknown:
            raise ValueError("unknown assignor {0!r}; known: {1}".format(unknown[0], ", ".join(setting.choices)))
        return names
    return text


def setting_from_text(name: str, text: str) -> tuple[str, Any]:
    """(kafka-python key, typed value) for a librdkafka, Java or kafka-python
    name and its text (the CLI's -X key=value). KeyError when no key has that
    name; ValueError (NotTextSettable for object kinds) when the text does not
    spell a value of the key's kind."""
    key = key_for(name)
    if key is None:
        raise KeyError(name)
    return key, value_from_text(SETTINGS_BY_KEY[key], text.strip())


# --- the typed form ----------------------------------------------------------------
class ConsumerConfig(TypedDict):
    """A validated consumer configuration, key by key (what consumer_config
    returns); tests/unit/test_config_schema.py checks it lists SETTINGS' keys."""

    bootstrap_servers: list[tuple[str, int]]
    client_id: str
    client_rack: str
    group_id: str | None
    group_instance_id: str | None
    group_protocol: str
    group_remote_assignor: str | None
    key_deserializer: Any
    value_deserializer: Any
    enable_incremental_fetch_sessions: bool
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    request_timeout_ms: int
    retry_backoff_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    max_in_flight_requests_per_connection: int
    auto_offset_reset: str
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    default_offset_commit_callback: Callable[[Any, Any], Any]
    check_crcs: bool
    isolation_level: str
    allow_auto_create_topics: bool
    metadata_max_age_ms: int
    client_dns_lookup: str
    partition_assignment_strategy: Any
    max_poll_records: int
    max_poll_interval_ms: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    receive_buffer_bytes: int | None
    send_buffer_bytes: int | None
    receive_message_max_bytes: int
    socket_options: list[tuple[int, int, int | bytes]]
    consumer_timeout_ms: float
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    ssl_check_hostname: bool
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_crlfile: str | None
    ssl_password: Any
    ssl_ciphers: str | None
    api_version: tuple[int, ...] | None
    bootstrap_timeout_ms: int
    connections_max_idle_ms: int
    metric_reporters: list[Any]
    metrics_enabled: bool
    metrics_num_samples: int
    metrics_sample_window_ms: int
    metric_group_prefix: str
    selector: Any
    exclude_internal_topics: bool
    sasl_mechanism: str | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_kerberos_name: Any
    sasl_kerberos_service_name: str | None
    sasl_kerberos_domain_name: str | None
    sasl_kerberos_keytab: str | None
    sasl_kerberos_principal: str | None
    sasl_oauth_token_provider: Any
    proxy_url: None
    socks5_proxy: None
    kafka_client: Any
    arrow_zero_copy: bool
    decode_threads: int
