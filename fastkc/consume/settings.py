"""`fastkc consume`'s -X KEY=VALUE and -F FILE: kafka-python consumer settings
typed from their names (kcat's librdkafka names and Java's dotted ones too)."""
import argparse

from fastkc.consume.arguments import UsageError

# Keys the command sets from its own options.
_OWNED_KEYS = {
    "group_id": "use -G GROUP",
    "enable_auto_commit": "fastkc consume commits the offsets of what it has written (with -G)",
    "bootstrap_servers": None,  # allowed: -b overrides it
}


# --- configuration ---------------------------------------------------------------------
def typed_setting(raw_key: str, raw_value: str) -> tuple[str, object]:
    """(kafka-python key, typed value) for one key=value (kafka-python's, Java's
    or librdkafka's name: fastkc.config_schema); UsageError when the key is
    unknown or the value does not parse as the key's type."""
    from fastkc.config_schema import NotTextSettable, setting_from_text

    try:
        key, value = setting_from_text(raw_key, raw_value)
    except KeyError:
        raise UsageError("unknown configuration key {0!r}: expected a kafka-python consumer key such as "
                         "security_protocol, sasl_mechanism, ssl_cafile".format(raw_key)) from None
    except NotTextSettable:
        raise UsageError("configuration key {0!r} takes a Python object; it cannot be set from the "
                         "command line".format(raw_key.strip())) from None
    except ValueError as exc:
        raise UsageError("configuration key {0!r}: bad value {1!r} ({2})".format(raw_key.strip(), raw_value, exc)) \
            from None
    if key in _OWNED_KEYS and _OWNED_KEYS[key] is not None:
        raise UsageError("configuration key {0!r} is not settable here: {1}".format(key, _OWNED_KEYS[key]))
    return key, value


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
