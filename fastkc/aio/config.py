"""aiokafka 0.14's AIOKafkaConsumer keywords, as a table, and their fastkc meaning.

The table is an adapter over fastkc.config_schema: a keyword both clients
have is checked by the schema's setting (aiokafka's flavour: a bool must be a
bool, no kafka-python spellings such as 'smallest'), with aiokafka's default
where it differs; only aiokafka's own keywords (loop, api_version,
rebalance_timeout_ms) carry a check of their own.

`resolve(**keywords)` checks a constructor's keywords and returns an
`AioConsumerConfig`: `aio`, every aiokafka keyword with its value (defaults
filled in); `core`, the configuration of fastkc's core in fastkc's
(kafka-python's) keys, validated by fastkc.config.consumer_config; and
`driver`, what only the asyncio driver uses. Every error is a
KafkaConfigurationError naming its key; where aiokafka's constructor raises
ValueError or TypeError for the same mistake the error is also one
(fastkc.aio.errors.ConfigValueError / ConfigTypeError), so `except` clauses
written for aiokafka keep catching it.

Where the same name means something else in aiokafka and in kafka-python
(the translation is in the table, row by row):
- consumer_timeout_ms: aiokafka's background fetch task's wake-up period
  (default 200); kafka-python's is when iteration stops. Driver only.
- max_poll_records: None (aiokafka's default) means getmany() returns every
  buffered record; kafka-python's default is 500. Driver only.
- rebalance_timeout_ms: aiokafka sends it in JoinGroup (default
  session_timeout_ms) and enforces max_poll_interval_ms itself; fastkc's
  group member, like kafka-python and Java, sends max_poll_interval_ms.
  Driver only until the group member takes a rebalance timeout of its own.
- key_deserializer / value_deserializer: aiokafka calls them as f(raw) for
  every record, None included; kafka-python also takes Deserializer objects
  (deserialize(topic, raw)). Driver only: it applies them.
- partition_assignment_strategy: aiokafka's built-in assignors become
  fastkc's of the same protocol name (range, roundrobin, sticky), so a group
  can mix both clients; others pass through (same interface).
- client_rack: None in aiokafka, "" in kafka-python.
- connections_max_idle_ms: None disables idle closing in aiokafka; fastkc
  needs a number above request_timeout_ms (a connection with a request in
  flight is not idle, so the core's check is only about idle connections):
  None becomes 2**31 - 1 ms, a smaller value request_timeout_ms + 1.
- sasl_mechanism: "PLAIN" by default in aiokafka; it reaches the core only
  with a SASL security_protocol (fastkc warns about a mechanism it ignores).
- sasl_oauth_token_provider: aiokafka's token() is a coroutine; the core
  takes the provider as it is and the driver must await token() for it.
- api_version (a deprecated no-op in aiokafka 0.14) and loop (deprecated)
  are accepted with aiokafka's DeprecationWarning and do not reach the core.
- ssl_context is aiokafka's only TLS setting (kafka-python's ssl_cafile,
  ssl_certfile, ... do not exist here) and is mandatory with SSL/SASL_SSL.
- auto_offset_reset: read case-insensitively, as aiokafka does; a value it
  does not know is an error here (aiokafka logs a warning and behaves as
  "none"; Java refuses it).
- fastkc's cross-key rules (fastkc.config_schema.RULES) hold here too, as
  ValueError: fetch_max_wait_ms must stay below request_timeout_ms (aiokafka
  does not check, and its fetches then time out); with a classic group,
  heartbeat_interval_ms below session_timeout_ms (kafka-python's and Java's
  rule; aiokafka does not check).
fastkc additions (not in aiokafka 0.14): group_protocol ("classic" or
"consumer", KIP-848) and group_remote_assignor, as in fastkc's sync consumer;
decode_threads: 1 (the default) decompresses and parses fetched batches on a
thread of the consumer's own, with the GIL released, so a large batch never
holds the event loop; 0 does it on the loop (no thread hand-off per step).
"""
import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from fastkc import config_schema
from fastkc._version import __version__
from fastkc.aio.errors import ConfigTypeError, ConfigValueError
from fastkc.config import Config
from fastkc.config_schema import SETTINGS_BY_KEY, Kind, ValueTypeError
from fastkc.errors import KafkaConfigurationError

# aiokafka accepts these SASL mechanisms and no others (its client's check)
SASL_MECHANISMS = ("PLAIN", "GSSAPI", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SECURITY_PROTOCOLS = SETTINGS_BY_KEY["security_protocol"].choices
_IDLE_FOREVER_MS = 2 ** 31 - 1

# how a keyword reaches fastkc's core
SAME = "same"  # the same kafka-python key, the same value
DRIVER = "driver"  # only the asyncio driver reads it
DROPPED = "dropped"  # accepted for compatibility, no effect


#: a keyword's translation: (its value, every aiokafka keyword) -> {fastkc key: value}
ToCore = Callable[[Any, dict[str, Any]], dict[str, Any]]
#: an aiokafka-only keyword's check: (name, value) -> the value
Check = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Key:
    name: str
    default: object
    check: "config_schema.Setting | Check"  # fastkc's setting (aiokafka's flavour of its check), or aiokafka's own
    core: "str | ToCore"  # SAME, DRIVER, DROPPED, or a function (value, aio) -> {fastkc key: value}
    type_errors_are_value_errors: bool = False  # aiokafka raises ValueError for a wrong type too


_FROM_SCHEMA = object()


def _shared(name: str, core: "str | ToCore" = SAME, default: object = _FROM_SCHEMA,
            value_errors_only: bool = False, **aiokafka_differences: Any) -> Key:
    """A keyword fastkc's schema declares; aiokafka's default and the
    setting's fields where aiokafka differs (None allowed, another kind)."""
    setting = dataclasses.replace(SETTINGS_BY_KEY[name], **aiokafka_differences)
    return Key(name, setting.default if default is _FROM_SCHEMA else default, setting, core, value_errors_only)


def _assignors_to_core(value: Any, aio: dict[str, Any]) -> dict[str, Any]:
    from fastkc.assignors import ASSIGNORS_BY_NAME

    core: list[Any] = []
    for assignor in value:
        module = getattr(assignor, "__module__", "") or ""
        name = getattr(assignor, "name", None)
        if module.startswith("aiokafka.") and name in ASSIGNORS_BY_NAME:
            core.append(ASSIGNORS_BY_NAME[name])
        else:
            core.append(assignor)
    return {"partition_assignment_strategy": core}


def _idle_to_core(value: Any, aio: dict[str, Any]) -> dict[str, Any]:
    if value is None:
        return {"connections_max_idle_ms": _IDLE_FOREVER_MS}
    return {"connections_max_idle_ms": max(value, aio["request_timeout_ms"] + 1)}


def _sasl_to_core(value: Any, aio: dict[str, Any]) -> dict[str, Any]:
    return {"sasl_mechanism": value if aio["security_protocol"].startswith("SASL") else None}


def _rack_to_core(value: Any, aio: dict[str, Any]) -> dict[str, Any]:
    return {"client_rack": value or ""}


def _check_loop(name: str, value: Any) -> Any:
    if value is not None:
        warnings.warn("The loop argument is deprecated since 0.7.1, and scheduled for removal in 0.9.0",
                      DeprecationWarning, stacklevel=5)
    return value


def _check_api_version(name: str, value: Any) -> Any:
    if value is not None:
        warnings.warn("The `api_version` parameter has been deprecated since 0.13.0. "
                      "It is now a no-op and will be removed in a future release. ",
                      DeprecationWarning, stacklevel=5)
    return value


def _check_rebalance_timeout(name: str, value: Any) -> Any:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ConfigTypeError("{0} must be an int or None, not {1!r}".format(name, value))
    if value is not None and value < 1:
        raise ConfigValueError("{0} must be >= 1, not {1}".format(name, value))
    return value


# aiokafka 0.14's AIOKafkaConsumer.__init__ keywords, in its order, then fastkc's additions;
# defaults are fastkc's schema's unless aiokafka's differ.
KEYS = (
    Key("loop", None, _check_loop, DROPPED),
    _shared("bootstrap_servers"),
    _shared("client_id", default="fastkc-aio-" + __version__),
    _shared("group_id"),
    _shared("group_instance_id"),
    # aiokafka calls them as f(raw): no Deserializer objects
    _shared("key_deserializer", DRIVER, kind=Kind.CALLABLE),
    _shared("value_deserializer", DRIVER, kind=Kind.CALLABLE),
    _shared("fetch_max_wait_ms"),
    _shared("fetch_max_bytes"),
    _shared("fetch_min_bytes"),
    _shared("max_partition_fetch_bytes"),
    _shared("request_timeout_ms", default=40 * 1000),
    _shared("retry_backoff_ms"),
    _shared("auto_offset_reset"),
    _shared("enable_auto_commit"),
    _shared("auto_commit_interval_ms"),
    _shared("check_crcs"),
    _shared("metadata_max_age_ms"),
    # aiokafka's default is its RoundRobinPartitionAssignor: fastkc's has the
    # same protocol name, so mixed groups agree on it
    _shared("partition_assignment_strategy", _assignors_to_core, default=("roundrobin",)),
    _shared("max_poll_interval_ms"),
    Key("rebalance_timeout_ms", None, _check_rebalance_timeout, DRIVER),
    _shared("session_timeout_ms", default=10000),
    _shared("heartbeat_interval_ms"),
    _shared("consumer_timeout_ms", DRIVER, default=200),
    _shared("max_poll_records", DRIVER, default=None, value_errors_only=True, nullable=True),
    _shared("ssl_context"),
    _shared("security_protocol"),
    Key("api_version", None, _check_api_version, DROPPED),
    _shared("exclude_internal_topics"),
    _shared("connections_max_idle_ms", _idle_to_core, nullable=True),
    _shared("isolation_level"),
    _shared("sasl_mechanism", _sasl_to_core, default="PLAIN"),
    _shared("sasl_plain_password"),
    _shared("sasl_plain_username"),
    _shared("sasl_kerberos_service_name"),
    _shared("sasl_kerberos_domain_name"),
    _shared("sasl_oauth_token_provider"),
    _shared("client_rack", _rack_to_core, default=None, nullable=True),
    # fastkc additions
    _shared("group_protocol"),
    _shared("group_remote_assignor"),
    _shared("decode_threads", DRIVER, default=1, value_errors_only=True),
)
KEYS_BY_NAME = {key.name: key for key in KEYS}
FASTKC_ADDITIONS = ("group_protocol", "group_remote_assignor", "decode_threads")


def _value_error(name: str, message: str) -> NoReturn:
    raise ConfigValueError("{0}: {1}".format(name, message))


def _rule_error(key: str, message: str) -> NoReturn:
    raise ConfigValueError(message)


def _check(key: Key, value: Any) -> Any:
    """The checked (and, for auto_offset_reset, normalized) value of one
    keyword: fastkc's schema's check with aiokafka's errors (ValueError or
    TypeError), or the keyword's own."""
    if not isinstance(key.check, config_schema.Setting):
        return key.check(key.name, value)
    setting = key.check
    if setting.key == "auto_offset_reset" and isinstance(value, str):
        value = value.lower()  # aiokafka reads it case-insensitively
    try:
        checked = config_schema.check_value(setting, value, aiokafka=True)
    except ValueTypeError as exc:
        if key.type_errors_are_value_errors:
            raise ConfigValueError(str(exc)) from None
        raise ConfigTypeError(str(exc)) from None
    except KafkaConfigurationError as exc:
        raise ConfigValueError(str(exc)) from None
    if setting.kind is Kind.ASSIGNORS:
        from fastkc.group.classic_machine import resolve_assignors

        return tuple(resolve_assignors(checked))
    return checked


@dataclass(frozen=True)
class AioConsumerConfig:
    aio: dict[str, Any]  # every aiokafka keyword (and fastkc addition), checked, defaults filled in
    core: Config  # fastkc.config.consumer_config's output: what fastkc's core runs with
    driver: dict[str, Any]  # the keywords only the asyncio driver reads


def resolve(**keywords: Any) -> AioConsumerConfig:
    """Check AIOKafkaConsumer's keywords and translate them (module docstring)."""
    unknown = sorted(set(keywords).difference(KEYS_BY_NAME))
    if unknown:
        raise ConfigTypeError("AIOKafkaConsumer got unexpected keyword argument(s) {0}".format(
            ", ".join(repr(name) for name in unknown)))
    aio: dict[str, Any] = {}
    for key in KEYS:
        aio[key.name] = _check(key, keywords.get(key.name, key.default))
    _check_together(aio)

    core: dict[str, Any] = {}
    driver: dict[str, Any] = {}
    for key in KEYS:
        value = aio[key.name]
        if key.core == SAME:
            core[key.name] = value
        elif key.core == DRIVER:
            driver[key.name] = value
        elif callable(key.core):
            core.update(key.core(value, aio))
    if driver["rebalance_timeout_ms"] is None:
        driver["rebalance_timeout_ms"] = aio["session_timeout_ms"]
    from fastkc.config import CONSUMER_DEFAULTS, consumer_config

    # fastkc's cross-key rules (fetch_max_wait_ms below request_timeout_ms: aiokafka does not check, and its
    # fetches then time out), raised as ValueError as aiokafka's own rules are
    config_schema.check_rules(dict(CONSUMER_DEFAULTS, **core), _rule_error)
    return AioConsumerConfig(aio=aio, core=consumer_config(core), driver=driver)


def _check_together(aio: dict[str, Any]) -> None:
    """aiokafka's cross-key rules (its client's constructor), with its ValueError."""
    protocol = aio["security_protocol"]
    if protocol in ("SSL", "SASL_SSL") and aio["ssl_context"] is None:
        _value_error("ssl_context", "is mandatory with security_protocol {0!r} (aiokafka's only TLS setting)".format(
            protocol))
    if protocol.startswith("SASL"):
        if aio["sasl_mechanism"] not in SASL_MECHANISMS:
            _value_error("sasl_mechanism", "must be one of {0}, not {1!r}".format(SASL_MECHANISMS,
                                                                                   aio["sasl_mechanism"]))
        if aio["sasl_mechanism"] == "PLAIN" and (aio["sasl_plain_username"] is None
                                                 or aio["sasl_plain_password"] is None):
            _value_error("sasl_plain_username", "sasl_plain_username and sasl_plain_password are required for "
                         "PLAIN sasl")
