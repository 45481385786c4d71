"""`fastkc consume`'s -X KEY=VALUE and -F FILE: kafka-python consumer settings
typed from their names (kcat's librdkafka names and Java's dotted ones too)."""
import argparse

from fastkc.consume.arguments import UsageError

# Config keys whose values are Python objects: no command-line spelling.
_OBJECT_KEYS = frozenset({
    "key_deserializer", "value_deserializer", "default_offset_commit_callback", "socket_options",
    "ssl_context", "metric_reporters", "selector", "sasl_oauth_token_provider", "kafka_client",
})
# Keys the command sets from its own options.
_OWNED_KEYS = {
    "group_id": "use -G GROUP",
    "enable_auto_commit": "fastkc consume commits the offsets of what it has written (with -G)",
    "bootstrap_servers": None,  # allowed: -b overrides it
}
# Keys whose default is None but whose value is an integer.
_NONE_DEFAULT_INTS = frozenset({"receive_buffer_bytes", "send_buffer_bytes"})
# librdkafka's (kcat's) names for the common security settings, so that a
# kcat config file works; every other dotted name maps by '.' -> '_'.
_LIBRDKAFKA_NAMES = {
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "ssl.cipher.suites": "ssl_ciphers",
    "metadata.broker.list": "bootstrap_servers",
}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}

# --- configuration ---------------------------------------------------------------------
def _key_name(raw: str) -> str:
    key = raw.strip()
    if key in _LIBRDKAFKA_NAMES:
        return _LIBRDKAFKA_NAMES[key]
    return key.replace(".", "_").replace("-", "_")


def typed_setting(raw_key: str, raw_value: str) -> tuple[str, object]:
    """(kafka-python key, typed value) for one key=value; UsageError when the
    key is unknown or the value does not parse as the key's type."""
    from fastkc.config import CONSUMER_DEFAULTS

    key = _key_name(raw_key)
    value = raw_value.strip()
    if key not in CONSUMER_DEFAULTS:
        raise UsageError("unknown configuration key {0!r}: expected a kafka-python consumer key such as "
                         "security_protocol, sasl_mechanism, ssl_cafile".format(raw_key))
    if key in _OBJECT_KEYS:
        raise UsageError("configuration key {0!r} takes a Python object; it cannot be set from the "
                         "command line".format(key))
    if key in _OWNED_KEYS and _OWNED_KEYS[key] is not None:
        raise UsageError("configuration key {0!r} is not settable here: {1}".format(key, _OWNED_KEYS[key]))
    default = CONSUMER_DEFAULTS[key]
    try:
        if isinstance(default, bool):
            if value.lower() in _TRUE:
                return key, True
            if value.lower() in _FALSE:
                return key, False
            raise ValueError("expected true or false")
        if isinstance(default, int) or key in _NONE_DEFAULT_INTS:
            return key, int(value)
        if isinstance(default, float):
            return key, float(value)
        if key == "api_version":
            return key, tuple(int(part) for part in value.split("."))
        if key == "partition_assignment_strategy":
            return key, _assignors(value)
    except ValueError as exc:
        raise UsageError("configuration key {0!r}: bad value {1!r} ({2})".format(key, raw_value, exc)) from None
    return key, value


def _assignors(value: str) -> tuple[type, ...]:
    from fastkc import assignors

    by_name: dict[str, type] = {}
    for name in dir(assignors):
        cls = getattr(assignors, name)
        assignor_name = getattr(cls, "name", None)
        if isinstance(cls, type) and issubclass(cls, assignors.AbstractPartitionAssignor) and \
                isinstance(assignor_name, str):
            by_name[assignor_name] = cls
    chosen = []
    for name in value.split(","):
        name = name.strip()
        if name not in by_name:
            raise ValueError("unknown assignor {0!r}; known: {1}".format(name, ", ".join(sorted(by_name))))
        chosen.append(by_name[name])
    return tuple(chosen)


def read_config_file(path: str) -> dict[str, object]:
    """key=value lines (kcat's -F): '#' starts a comment line, blank lines are skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise UsageError("cannot read config file {0}: {1}".format(path, exc.strerror)) from None
    settings: dict[str, object] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise UsageError("{0}:{1}: expected key=value, got {2!r}".format(path, number, line))
        key, value = typed_setting(*line.split("=", 1))
        settings[key] = value
    return settings


def consumer_settings(args: argparse.Namespace) -> dict[str, object]:
    settings: dict[str, object] = {}
    if args.config_file:
        settings.update(read_config_file(args.config_file))
    for item in args.set or ():
        if "=" not in item:
            raise UsageError("-X {0}: expected key=value".format(item))
        key, value = typed_setting(*item.split("=", 1))
        settings[key] = value
    if args.bootstrap:
        settings["bootstrap_servers"] = args.bootstrap
    if "bootstrap_servers" not in settings:
        raise UsageError("no broker: give -b HOST:PORT (or bootstrap_servers in -F FILE)")
    # as kcat (librdkafka's allow.auto.create.topics=false): reading a topic
    # that does not exist is an error, not a way to create it
    settings.setdefault("allow_auto_create_topics", False)
    settings["enable_auto_commit"] = False
    if args.group:
        settings["group_id"] = args.group
        start = args.offset.kind if args.offset is not None else "stored"
        if start == "beginning":
            settings["auto_offset_reset"] = "earliest"
        elif start == "end":
            settings["auto_offset_reset"] = "latest"
    return settings
