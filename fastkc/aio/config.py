"""aiokafka 0.14's AIOKafkaConsumer keywords, as a table, and their fastkc meaning.

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
- fetch_max_wait_ms must stay below request_timeout_ms (aiokafka does not
  check, and its fetches then time out).
fastkc additions (not in aiokafka 0.14): group_protocol ("classic" or
"consumer", KIP-848) and group_remote_assignor, as in fastkc's sync consumer;
decode_threads: 1 (the default) decompresses and parses fetched batches on a
thread of the consumer's own, with the GIL released, so a large batch never
holds the event loop; 0 does it on the loop (no thread hand-off per step).
"""
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from fastkc._version import __version__
from fastkc.aio.errors import ConfigTypeError, ConfigValueError

# aiokafka's default assignor is its RoundRobinPartitionAssignor: fastkc's has
# the same protocol name ("roundrobin"), so mixed groups agree on it
from fastkc.assignors import RoundRobinPartitionAssignor

# aiokafka accepts these SASL mechanisms and no others (its client's check)
SASL_MECHANISMS = ("PLAIN", "GSSAPI", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_IDLE_FOREVER_MS = 2 ** 31 - 1

# how a keyword reaches fastkc's core
SAME = "same"  # the same kafka-python key, the same value
DRIVER = "driver"  # only the asyncio driver reads it
DROPPED = "dropped"  # accepted for compatibility, no effect


#: a keyword's translation: (its value, every aiokafka keyword) -> {fastkc key: value}
ToCore = Callable[[Any, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Key:
    name: str
    default: object
    check: str  # a name in _CHECKS
    core: "str | ToCore"  # SAME, DRIVER, DROPPED, or a function (value, aio) -> {fastkc key: value}


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


# aiokafka 0.14's AIOKafkaConsumer.__init__ keywords, in its order, then fastkc's additions.
KEYS = (
    Key("loop", None, "loop", DROPPED),
    Key("bootstrap_servers", "localhost", "servers", SAME),
    Key("client_id", "fastkc-aio-" + __version__, "str", SAME),
    Key("group_id", None, "opt_str", SAME),
    Key("group_instance_id", None, "opt_str", SAME),
    Key("key_deserializer", None, "opt_callable", DRIVER),
    Key("value_deserializer", None, "opt_callable", DRIVER),
    Key("fetch_max_wait_ms", 500, "int>=0", SAME),
    Key("fetch_max_bytes", 52428800, "int>0", SAME),
    Key("fetch_min_bytes", 1, "int>=0", SAME),
    Key("max_partition_fetch_bytes", 1 * 1024 * 1024, "int>0", SAME),
    Key("request_timeout_ms", 40 * 1000, "int>0", SAME),
    Key("retry_backoff_ms", 100, "int>=0", SAME),
    Key("auto_offset_reset", "latest", "reset", SAME),
    Key("enable_auto_commit", True, "bool", SAME),
    Key("auto_commit_interval_ms", 5000, "int>0", SAME),
    Key("check_crcs", True, "bool", SAME),
    Key("metadata_max_age_ms", 5 * 60 * 1000, "int>=0", SAME),
    Key("partition_assignment_strategy", (RoundRobinPartitionAssignor,), "assignors", _assignors_to_core),
    Key("max_poll_interval_ms", 300000, "int>0", SAME),
    Key("rebalance_timeout_ms", None, "opt_int>0", DRIVER),
    Key("session_timeout_ms", 10000, "int>0", SAME),
    Key("heartbeat_interval_ms", 3000, "int>0", SAME),
    Key("consumer_timeout_ms", 200, "number>=0", DRIVER),
    Key("max_poll_records", None, "max_poll_records", DRIVER),
    Key("ssl_context", None, "ssl_context", SAME),
    Key("security_protocol", "PLAINTEXT", "security_protocol", SAME),
    Key("api_version", None, "api_version", DROPPED),
    Key("exclude_internal_topics", True, "bool", SAME),
    Key("connections_max_idle_ms", 540000, "opt_int>0", _idle_to_core),
    Key("isolation_level", "read_uncommitted", "isolation_level", SAME),
    Key("sasl_mechanism", "PLAIN", "str", _sasl_to_core),
    Key("sasl_plain_password", None, "opt_str", SAME),
    Key("sasl_plain_username", None, "opt_str", SAME),
    Key("sasl_kerberos_service_name", "kafka", "str", SAME),
    Key("sasl_kerberos_domain_name", None, "opt_str", SAME),
    Key("sasl_oauth_token_provider", None, "any", SAME),
    Key("client_rack", None, "opt_str", _rack_to_core),
    # fastkc additions
    Key("group_protocol", "classic", "group_protocol", SAME),
    Key("group_remote_assignor", None, "opt_str", SAME),
    Key("decode_threads", 1, "decode_threads", DRIVER),
)
KEYS_BY_NAME = {key.name: key for key in KEYS}
FASTKC_ADDITIONS = ("group_protocol", "group_remote_assignor", "decode_threads")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_error(name: str, want: str, value: object) -> NoReturn:
    raise ConfigTypeError("{0} must be {1}, not {2!r}".format(name, want, value))


def _value_error(name: str, message: str) -> NoReturn:
    raise ConfigValueError("{0}: {1}".format(name, message))


def _check_int(name: str, value: Any, *, minimum: int, optional: bool = False) -> Any:
    if optional and value is None:
        return value
    if not _is_int(value):
        _type_error(name, "an int" + (" or None" if optional else ""), value)
    if value < minimum:
        _value_error(name, "must be >= {0}, not {1}".format(minimum, value))
    return value


def _check(key: Key, value: Any) -> Any:
    """The checked (and, for auto_offset_reset, normalized) value of one keyword."""
    name, check = key.name, key.check
    if check == "int>0":
        return _check_int(name, value, minimum=1)
    if check == "int>=0":
        return _check_int(name, value, minimum=0)
    if check == "opt_int>0":
        return _check_int(name, value, minimum=1, optional=True)
    if check == "max_poll_records":
        # aiokafka raises ValueError for a wrong type here too
        if value is not None and (not _is_int(value) or value < 1):
            _value_error(name, "must be a positive int or None, not {0!r}".format(value))
        return value
    if check == "number>=0":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _type_error(name, "a number of milliseconds", value)
        if not value >= 0:
            _value_error(name, "must be >= 0, not {0!r}".format(value))
        return value
    if check == "bool":
        if not isinstance(value, bool):
            _type_error(name, "a bool", value)
        return value
    if check == "str":
        if not isinstance(value, str):
            _type_error(name, "a str", value)
        return value
    if check == "opt_str":
        if value is not None and not isinstance(value, str):
            _type_error(name, "a str or None", value)
        return value
    if check == "opt_callable":
        if value is not None and not callable(value):
            _type_error(name, "a callable or None", value)
        return value
    if check == "servers":
        if isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value)):
            return value
        _type_error(name, "a str or a list of str", value)
    if check == "reset":
        if not isinstance(value, str):
            _type_error(name, "a str", value)
        if value.lower() not in ("earliest", "latest", "none"):
            _value_error(name, "must be 'earliest', 'latest' or 'none', not {0!r}".format(value))
        return value.lower()
    if check == "isolation_level":
        if value not in ("read_uncommitted", "read_committed"):
            _value_error(name, "must be 'read_uncommitted' or 'read_committed', not {0!r}".format(value))
        return value
    if check == "security_protocol":
        if value not in SECURITY_PROTOCOLS:
            _value_error(name, "must be one of {0}, not {1!r}".format(SECURITY_PROTOCOLS, value))
        return value
    if check == "decode_threads":
        if not _is_int(value) or value not in (0, 1):
            _value_error(name, "must be 0 (decode on the event loop) or 1 (a decode thread), not {0!r}".format(value))
        return value
    if check == "group_protocol":
        if value not in ("classic", "consumer"):
            _value_error(name, "must be 'classic' or 'consumer', not {0!r}".format(value))
        return value
    if check == "ssl_context":
        import ssl

        if value is not None and not isinstance(value, ssl.SSLContext):
            _type_error(name, "an ssl.SSLContext or None", value)
        return value
    if check == "assignors":
        if not isinstance(value, (list, tuple)) or not value:
            _type_error(name, "a non-empty list or tuple of assignors", value)
        for assignor in value:
            if not isinstance(getattr(assignor, "name", None), str) or not callable(getattr(assignor, "assign", None)):
                _type_error(name, "assignors with a name and an assign() (AbstractPartitionAssignor)", assignor)
        return tuple(value)
    if check == "loop":
        if value is not None:
            warnings.warn("The loop argument is deprecated since 0.7.1, and scheduled for removal in 0.9.0",
                          DeprecationWarning, stacklevel=4)
        return value
    if check == "api_version":
        if value is not None:
            warnings.warn("The `api_version` parameter has been deprecated since 0.13.0. "
                          "It is now a no-op and will be removed in a future release. ",
                          DeprecationWarning, stacklevel=4)
        return value
    if check == "any":
        return value
    raise AssertionError("no check called {0!r} (key {1})".format(check, name))


@dataclass(frozen=True)
class AioConsumerConfig:
    aio: dict[str, Any]  # every aiokafka keyword (and fastkc addition), checked, defaults filled in
    core: dict[str, Any]  # fastkc.config.consumer_config's output: what fastkc's core runs with
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
    from fastkc.config import consumer_config

    return AioConsumerConfig(aio=aio, core=consumer_config(core), driver=driver)


def _check_together(aio: dict[str, Any]) -> None:
    """aiokafka's cross-key rules (its client's constructor), with its
    ValueError, and the one fastkc adds."""
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
    if aio["fetch_max_wait_ms"] >= aio["request_timeout_ms"]:
        _value_error("fetch_max_wait_ms", "must be below request_timeout_ms ({0} >= {1}): a fetch waits that long "
                     "inside a request that would time out first".format(aio["fetch_max_wait_ms"],
                                                                         aio["request_timeout_ms"]))
