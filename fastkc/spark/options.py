"""Options of the `fastkc` Spark source: Spark's Kafka source options, parsed
and validated the way Spark's KafkaSourceProvider does it.

Pure Python, no pyspark import: the driver and the tests use it directly.
Spark hands every option over as a string, keys case-insensitive; the
messages of rejected options are Spark's own (IllegalArgumentException there,
SparkKafkaOptionError here), so a job moved from format("kafka") fails the same
way. `kafka.*` options become fastkc.KafkaConsumer keyword arguments.
"""
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastkc.config_schema import SETTINGS_BY_KEY, TEXT_KINDS, Setting, key_for, value_from_text
from fastkc.spark.formats import RecordFormats, SparkFormatError, parse_formats

if TYPE_CHECKING:
    from fastkc.auth.oauthbearer import AbstractTokenProvider

#: Spark's options, keys lower-cased (values as the reader got them: str in practice)
Params = Mapping[str, Any]
Pair = tuple[str, int]

log = logging.getLogger(__name__)

EARLIEST = -2  # Spark's KafkaOffsetRangeLimit.EARLIEST in offset JSON
LATEST = -1  # KafkaOffsetRangeLimit.LATEST

# Spark's STRATEGY_OPTION_KEYS, in the order its messages list them.
_STRATEGIES = ("subscribe", "subscribepattern", "assign")


class SparkKafkaOptionError(ValueError):
    """An option Spark's Kafka source rejects; the message is Spark's."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends, before it is resolved against the broker.

    kind: "earliest" | "latest" | "offsets" (by_partition {(t, p): offset,
    -2 earliest, -1 latest}) | "timestamps" (by_partition {(t, p): ms}) |
    "timestamp" (one ms for every partition)."""

    kind: str
    by_partition: dict[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    strategy: str  # "assign" | "subscribe" | "subscribepattern"
    assign: tuple[tuple[str, int], ...]  # for assign
    topics: tuple[str, ...]  # for subscribe
    pattern: str | None  # for subscribepattern
    starting: OffsetSpec
    ending: OffsetSpec  # batch only
    no_match_strategy: str  # startingOffsetsByTimestampStrategy: "error" | "latest"
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int  # how long minOffsetsPerTrigger may hold a trigger back
    poll_timeout_ms: int
    consumer_config: dict[str, Any]  # KafkaConsumer keyword arguments (picklable)
    formats: RecordFormats | None = None  # keyFormat / valueFormat avro (fastkc/spark/formats.py)


def _lower(options: Mapping[Any, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in dict(options).items()}


def scala_bool(value: object, key: str) -> bool:
    # Scala's String.toBoolean: true/false in any case, else an error naming the input
    text = str(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise SparkKafkaOptionError('For input string: "{0}" (option {1})'.format(value, key))


def _scala_int(value: object, key: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise SparkKafkaOptionError('For input string: "{0}" (option {1})'.format(value, key)) from None


_DURATION = re.compile(r"(-?[0-9]+)\s*([a-z]+)?")
# Spark's JavaUtils.timeStringAsMs suffixes (no suffix: milliseconds)
_DURATION_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(value: object, key: str) -> int:
    match = _DURATION.fullmatch(str(value).strip().lower())
    if not match or match.group(2) not in _DURATION_MS:
        raise SparkKafkaOptionError("Invalid time string for option {0}: {1}".format(key, value))
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


def parse_assign(text: str) -> tuple[Pair, ...]:
    """{"t":[0,1]} → ((t, 0), (t, 1)); Spark's JsonUtils.partitions message on bad JSON."""
    bad = SparkKafkaOptionError('Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got ' + text)
    try:
        parsed = json.loads(text)
    except ValueError:
        raise bad from None
    if not isinstance(parsed, dict):
        raise bad
    out: list[Pair] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
            raise bad
        out.extend((topic, p) for p in parts)
    return tuple(out)


def _parse_partition_map(text: str, example: str) -> dict[Pair, int]:
    bad = SparkKafkaOptionError("Expected e.g. {0}, got {1}".format(example, text))
    try:
        parsed = json.loads(text)
    except ValueError:
        raise bad from None
    if not isinstance(parsed, dict):
        raise bad
    out: dict[Pair, int] = {}
    for topic, by_part in parsed.items():
        if not isinstance(by_part, dict):
            raise bad
        for part, value in by_part.items():
            try:
                p = int(part)
            except ValueError:
                raise bad from None
            if not isinstance(value, int) or isinstance(value, bool):
                raise bad
            out[(topic, p)] = value
    return out


def parse_partition_offsets(text: str) -> dict[Pair, int]:
    return _parse_partition_map(text, '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}')


def parse_partition_timestamps(text: str) -> dict[Pair, int]:
    return _parse_partition_map(text, '{"topicA":{"0": 1000, "1": 1000}, "topicB": {"0": 2000, "1": 2000}}')


def _range_limit(params: Params, timestamp_key: str, by_timestamp_key: str, offsets_key: str,
                 default: OffsetSpec) -> OffsetSpec:
    # Spark's precedence: global timestamp > per-partition timestamps > offsets
    if timestamp_key in params:
        return OffsetSpec("timestamp", timestamp=_scala_int(params[timestamp_key], timestamp_key))
    if by_timestamp_key in params:
        return OffsetSpec("timestamps", parse_partition_timestamps(params[by_timestamp_key].strip()))
    if offsets_key in params:
        text = params[offsets_key].strip()
        if text.lower() == "latest":
            return OffsetSpec("latest")
        if text.lower() == "earliest":
            return OffsetSpec("earliest")
        return OffsetSpec("offsets", parse_partition_offsets(text))
    return default


def _tp_str(tp: Pair) -> str:
    # Java's TopicPartition.toString
    return "{0}-{1}".format(tp[0], tp[1])


_AUTO_OFFSET_RESET_MESSAGE = """
Kafka option 'auto.offset.reset' is not supported.
Instead set the source option 'startingoffsets' to 'earliest' or 'latest'
to specify where to start. Structured Streaming manages which offsets are consumed
internally, rather than relying on the kafkaConsumer to do it. This will ensure that no
data is missed when new topics/partitions are dynamically subscribed. Note that
'startingoffsets' only applies when a new Streaming query is started, and
that resuming will always pick up from where the query left off. See the docs for more
details.
"""


def _validate_general(params: Params) -> str:
    chosen = [k for k in _STRATEGIES if k in params]
    if not chosen:
        raise SparkKafkaOptionError(
            "One of the following options must be specified for Kafka source: "
            + ", ".join(_STRATEGIES) + ". See the docs for more details.")
    if len(chosen) > 1:
        raise SparkKafkaOptionError(
            "Only one of the following options can be specified for Kafka source: "
            + ", ".join(_STRATEGIES) + ". See the docs for more details.")
    strategy = chosen[0]
    value = params[strategy]
    if strategy == "assign" and not value.strip().startswith("{"):
        raise SparkKafkaOptionError(
            "No topicpartitions to assign as specified value for option 'assign' is '{0}'".format(value))
    if strategy == "subscribe" and not [t for t in value.split(",") if t.strip()]:
        raise SparkKafkaOptionError(
            "No topics to subscribe to as specified value for option 'subscribe' is '{0}'".format(value))
    if strategy == "subscribepattern" and not value.strip():
        raise SparkKafkaOptionError(
            "Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{0}'".format(value))
    if "minpartitions" in params and _scala_int(params["minpartitions"], "minPartitions") <= 0:
        raise SparkKafkaOptionError("minPartitions must be positive")
    if "maxrecordsperpartition" in params and _scala_int(
            params["maxrecordsperpartition"], "maxRecordsPerPartition") <= 0:
        raise SparkKafkaOptionError("maxRecordsPerPartition must be positive")
    if "kafka.group.id" in params:
        log.warning("Kafka option 'kafka.group.id' has been set on this query: fastkc reads with manual "
                    "assignment and never joins a group, so it is not used")
    if "kafka.auto.offset.reset" in params:
        raise SparkKafkaOptionError(_AUTO_OFFSET_RESET_MESSAGE)
    if "kafka.key.deserializer" in params:
        raise SparkKafkaOptionError(
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with "
            "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys.")
    if "kafka.value.deserializer" in params:
        raise SparkKafkaOptionError(
            "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with "
            "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values.")
    for key in ("enable.auto.commit", "interceptor.classes"):
        if "kafka." + key in params:
            raise SparkKafkaOptionError("Kafka option '{0}' is not supported".format(key))
    if "kafka.bootstrap.servers" not in params:
        raise SparkKafkaOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    return strategy


def _validate_batch(params: Params) -> tuple[OffsetSpec, OffsetSpec]:
    starting = _range_limit(params, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
                            OffsetSpec("earliest"))
    if starting.kind == "latest":
        raise SparkKafkaOptionError("starting offset can't be latest for batch queries on Kafka")
    if starting.kind == "offsets":
        for tp, off in starting.by_partition.items():
            if off == LATEST:
                raise SparkKafkaOptionError(
                    "startingOffsets for {0} can't be latest for batch queries on Kafka".format(_tp_str(tp)))
    ending = _range_limit(params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets",
                          OffsetSpec("latest"))
    if ending.kind == "earliest":
        raise SparkKafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
    if ending.kind == "offsets":
        for tp, off in ending.by_partition.items():
            if off == EARLIEST:
                raise SparkKafkaOptionError(
                    "ending offset for {0} can't be earliest for batch queries on Kafka".format(_tp_str(tp)))
    if "maxoffsetspertrigger" in params:
        log.warning("maxOffsetsPerTrigger option ignored in batch queries")
    return starting, ending


def _validate_stream(params: Params) -> OffsetSpec:
    if "endingoffsets" in params:
        raise SparkKafkaOptionError("ending offset not valid in streaming queries")
    if "endingoffsetsbytimestamp" in params:
        raise SparkKafkaOptionError("ending timestamp not valid in streaming queries")
    if "endingtimestamp" in params:
        raise SparkKafkaOptionError("ending timestamp not valid in streaming queries")
    if "minoffsetspertrigger" in params and "maxoffsetspertrigger" in params:
        low = _scala_int(params["minoffsetspertrigger"], "minOffsetsPerTrigger")
        high = _scala_int(params["maxoffsetspertrigger"], "maxOffsetsPerTrigger")
        if low > high:
            raise SparkKafkaOptionError(
                "The value of minOffsetPerTrigger({0}) is higher than the maxOffsetsPerTrigger({1}).".format(low, high))
    starting = _range_limit(params, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
                            OffsetSpec("latest"))
    return starting


def validate_general(options: Mapping[Any, Any]) -> None:
    """The checks Spark makes for batch and streaming alike."""
    _validate_general({k: str(v) for k, v in _lower(options).items()})


# --- kafka.* → KafkaConsumer keyword arguments ---------------------------------------

# Spark options meaningless or unsafe for a manually assigned, group-less reader
_IGNORED = {"group.id", "client.id.prefix", "key.deserializer", "value.deserializer", "partition.assignment.strategy"}
# A JAAS option: key="quoted value" (backslash escapes, as Java's JAAS
# parser reads them) or a bare word (Krb5LoginModule's useKeyTab=true).
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')
_JAAS_ESCAPE = re.compile(r"\\(.)")

# OAUTHBEARER: Java's login callback handlers for OIDC (4.x name, and the
# 3.1-3.9 one), accepted as what they mean: fastkc's OIDC provider does their
# job. The JWT retrievers of KIP-1139 (4.1+) that fetch by client credentials.
_OIDC_HANDLERS = {
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}
_OIDC_RETRIEVERS = {
    "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
    "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever",
}
# Java's sasl.login.* settings → OidcClientCredentialsProvider arguments
_OIDC_TUNING = {
    "sasl.login.retry.backoff.ms": ("retry_backoff_ms", int),
    "sasl.login.retry.backoff.max.ms": ("retry_backoff_max_ms", int),
    "sasl.login.connect.timeout.ms": ("connect_timeout_ms", int),
    "sasl.login.read.timeout.ms": ("read_timeout_ms", int),
    "sasl.login.refresh.window.factor": ("refresh_window_factor", float),
    "sasl.login.refresh.window.jitter": ("refresh_window_jitter", float),
    "sasl.login.refresh.min.period.seconds": ("refresh_min_period_s", int),
    "sasl.login.refresh.buffer.seconds": ("refresh_buffer_s", int),
    "sasl.oauthbearer.sub.claim.name": ("sub_claim_name", str),
}
# KIP-1139 (Kafka 4.1+): client credentials as configs instead of JAAS options
_OIDC_CONFIG_KEYS = {
    "sasl.oauthbearer.token.endpoint.url": "url",
    "sasl.oauthbearer.client.credentials.client.id": "clientId",
    "sasl.oauthbearer.client.credentials.client.secret": "clientSecret",
    "sasl.oauthbearer.scope": "scope",
}


def parse_jaas(value: object) -> tuple[str, dict[str, str]]:
    """(login module class, {option: value}) of a one-module sasl.jaas.config,
    as Spark users write it: ``<class> required key="value" ...;``."""
    text = str(value).strip()
    module = text.split(None, 1)[0] if text else ""
    options: dict[str, str] = {}
    for key, quoted, bare in _JAAS_OPTION.findall(text[len(module):]):
        options[key] = _JAAS_ESCAPE.sub(r"\1", quoted) if quoted or not bare else bare
    return module, options


def _oauthbearer_provider(jaas: Mapping[str, str], oidc: Mapping[str, str],
                          tuning: Mapping[str, Any]) -> "AbstractTokenProvider":
    """The token provider Java would build from the JAAS options and the
    sasl.oauthbearer.* / sasl.login.* settings. Config keys win over JAAS
    options (Java 4.x reads the config first). Messages never carry values."""
    from fastkc.auth.oauthbearer import UnsecuredTokenProvider
    from fastkc.auth.oidc import OidcClientCredentialsProvider
    from fastkc.errors import KafkaConfigurationError

    extensions = {k[len("extension_"):]: v for k, v in jaas.items() if k.startswith("extension_")}
    settings = dict(jaas, **oidc)
    try:
        if "url" not in settings:
            if "unsecuredLoginStringClaim_sub" in jaas:
                lifetime = int(jaas.get("unsecuredLoginLifetimeSeconds", "3600"))
                return UnsecuredTokenProvider(jaas["unsecuredLoginStringClaim_sub"], lifetime, extensions)
            raise SparkKafkaOptionError(
                "OAUTHBEARER needs kafka.sasl.oauthbearer.token.endpoint.url (OIDC client credentials) or "
                "unsecuredLoginStringClaim_sub in kafka.sasl.jaas.config (unsecured mode)")
        for option in ("clientId", "clientSecret"):
            if not settings.get(option):
                raise SparkKafkaOptionError(
                    'OAUTHBEARER with a token endpoint needs {0}="..." in kafka.sasl.jaas.config'.format(option))
        return OidcClientCredentialsProvider(settings["url"], settings["clientId"], settings["clientSecret"],
                                             scope=settings.get("scope"), extensions=extensions or None, **tuning)
    except (KafkaConfigurationError, ValueError) as exc:
        if isinstance(exc, SparkKafkaOptionError):
            raise
        raise SparkKafkaOptionError("OAUTHBEARER settings: {0}".format(exc)) from None


def _krb5_login(fields: Mapping[str, str]) -> dict[str, str]:
    """Java's com.sun.security.auth.module.Krb5LoginModule line → fastkc's
    GSSAPI keys. useKeyTab=true keyTab="..." principal="...": credentials
    acquired from that keytab (sasl_kerberos_keytab / _principal, a private
    in-memory ticket cache); useTicketCache=true: the Kerberos environment's
    ticket cache (KRB5CCNAME), optionally for `principal`. Anything else would
    make Java prompt for a password, which a Kafka client cannot answer."""
    principal = fields.get("principal")
    if fields.get("useKeyTab", "").lower() == "true":
        if not fields.get("keyTab"):
            raise SparkKafkaOptionError('kafka.sasl.jaas.config: Krb5LoginModule useKeyTab=true needs keyTab="..."')
        config: dict[str, str] = {"sasl_kerberos_keytab": fields["keyTab"]}
    elif fields.get("useTicketCache", "").lower() == "true":
        if fields.get("ticketCache"):
            raise SparkKafkaOptionError("kafka.sasl.jaas.config: Krb5LoginModule ticketCache is not supported "
                                        "(set KRB5CCNAME on the executors)")
        config = {}
    else:
        raise SparkKafkaOptionError("kafka.sasl.jaas.config: Krb5LoginModule needs useKeyTab=true keyTab=\"...\" "
                                    "or useTicketCache=true")
    if principal:
        config["sasl_kerberos_principal"] = principal
    return config


# AWS_MSK_IAM as MSK's docs configure Java clients: IAMLoginModule in the JAAS
# line and IAMClientCallbackHandler; fastkc signs through botocore's default
# chain (fastkc/auth/msk_iam.py), as kafka-python does.
_MSK_IAM_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


def _msk_iam_login(fields: Mapping[str, str]) -> None:
    """IAMLoginModule's options pick a profile or a role in AWS's library;
    fastkc takes credentials from botocore's default chain only, so an option
    is an error rather than a silently different identity. Set AWS_PROFILE
    (or the role's credentials) in the executors' environment instead."""
    if fields:
        raise SparkKafkaOptionError(
            "kafka.sasl.jaas.config: IAMLoginModule options ({0}) are not supported; fastkc uses botocore's "
            "default credential chain (set AWS_PROFILE or AWS_* on the executors)".format(", ".join(sorted(fields))))


def _unshaded(class_name: str) -> str:
    # Databricks' runtime relocates the client under "kafkashaded."
    name = class_name.strip()
    return name[len("kafkashaded."):] if name.startswith("kafkashaded.") else name


# Scala's String.toBoolean, as Spark (and Java's ConfigDef) read a boolean option
_SCALA_BOOLEANS = {"true": True, "false": False}


def _convert(option: str, setting: Setting, text: str) -> object:
    """The typed value of a kafka.* option (its type: fastkc.config_schema)."""
    try:
        return value_from_text(setting, text.strip(), booleans=_SCALA_BOOLEANS)
    except ValueError:
        raise SparkKafkaOptionError('For input string: "{0}" (option kafka.{1})'.format(text, option)) from None


def consumer_config(params: Params) -> dict[str, Any]:
    """KafkaConsumer keyword arguments from the (lower-cased) `kafka.*` options.

    Java-only settings with an equivalent are translated (PEM trust/key stores,
    sasl.jaas.config for PLAIN/SCRAM, ssl.endpoint.identification.algorithm);
    settings fastkc cannot honour (JKS stores, other login modules) are errors,
    since ignoring a security setting would connect differently than asked."""
    java = {k[len("kafka."):]: v for k, v in params.items() if k.startswith("kafka.")}
    config = {}
    oauth_jaas, oidc, tuning = None, {}, {}
    for key, value in java.items():
        if key in _IGNORED:
            continue
        if key == "ssl.truststore.location":
            config["ssl_cafile"] = value
        elif key == "ssl.keystore.location":
            config["ssl_certfile"] = value
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise SparkKafkaOptionError(
                    "fastkc reads PEM files only: kafka.{0}={1} is not supported (convert the store to PEM)".format(
                        key, value))
        elif key == "ssl.keystore.password" or key == "ssl.truststore.password":
            continue  # PEM stores carry no store password; the key's is ssl.key.password
        elif key == "ssl.endpoint.identification.algorithm":
            config["ssl_check_hostname"] = value.strip().lower() == "https"
        elif key == "sasl.jaas.config":
            module, fields = parse_jaas(value)
            login = module.rsplit(".", 1)[-1]
            if login == "Krb5LoginModule":
                config.update(_krb5_login(fields))
                continue
            if login == "OAuthBearerLoginModule":
                oauth_jaas = fields  # turned into a provider below, with the endpoint settings
                continue
            if login == "IAMLoginModule":
                _msk_iam_login(fields)
                continue
            if login not in ("PlainLoginModule", "ScramLoginModule"):
                raise SparkKafkaOptionError(
                    "fastkc supports the PLAIN, SCRAM, OAUTHBEARER, Krb5 (GSSAPI) and AWS IAM login modules in "
                    "kafka.sasl.jaas.config only")
            if "username" not in fields or "password" not in fields:
                raise SparkKafkaOptionError("kafka.sasl.jaas.config needs username=\"...\" and password=\"...\"")
            config["sasl_plain_username"] = fields["username"]
            config["sasl_plain_password"] = fields["password"]
        elif key in _OIDC_CONFIG_KEYS:
            oidc[_OIDC_CONFIG_KEYS[key]] = value.strip()
        elif key in _OIDC_TUNING:
            name, kind = _OIDC_TUNING[key]
            try:
                tuning[name] = kind(value.strip())
            except ValueError:
                raise SparkKafkaOptionError('For input string: "{0}" (option kafka.{1})'.format(value, key)) from None
        elif key == "sasl.client.callback.handler.class":
            if _unshaded(value) != _MSK_IAM_HANDLER:
                raise SparkKafkaOptionError("kafka.{0}={1} is a Java class fastkc cannot run (it supports {2})".format(
                    key, value, _MSK_IAM_HANDLER))
        elif key == "sasl.login.callback.handler.class" or key == "sasl.oauthbearer.jwt.retriever.class":
            name = _unshaded(value)
            if name not in (_OIDC_HANDLERS if key.startswith("sasl.login") else _OIDC_RETRIEVERS):
                raise SparkKafkaOptionError(
                    "kafka.{0}={1} is a Java class fastkc cannot run (it supports {2})".format(
                        key, value, ", ".join(sorted(_OIDC_HANDLERS | _OIDC_RETRIEVERS))))
        else:
            known = key_for(key, librdkafka=False)  # Java's name, or a kafka-python key in dots
            setting = SETTINGS_BY_KEY[known] if known is not None else None
            if setting is not None and setting.kind in TEXT_KINDS:
                config[setting.key] = _convert(key, setting, value)
            else:
                # the Java client logs unknown keys and goes on; so do we
                log.warning("kafka.%s has no fastkc equivalent: ignored", key)
    if config.get("sasl_mechanism") == "OAUTHBEARER":
        config["sasl_oauth_token_provider"] = _oauthbearer_provider(oauth_jaas or {}, oidc, tuning)
    config.setdefault("client_id", "fastkc-spark")
    return config


def parse(options: Mapping[Any, Any], *, streaming: bool) -> SourceOptions:
    """SourceOptions from Spark's option map (raises SparkKafkaOptionError)."""
    params = _lower(options)
    params = {k: str(v) for k, v in params.items()}
    if streaming:
        starting = _validate_stream(params)
        ending = OffsetSpec("latest")
    else:
        starting, ending = _validate_batch(params)
    strategy = _validate_general(params)
    no_match = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if no_match not in ("error", "latest"):
        raise SparkKafkaOptionError(
            "startingOffsetsByTimestampStrategy must be 'error' or 'latest', not '{0}'".format(no_match))
    max_offsets = None
    if "maxoffsetspertrigger" in params and streaming:
        max_offsets = _scala_int(params["maxoffsetspertrigger"], "maxOffsetsPerTrigger")
        if max_offsets <= 0:
            raise SparkKafkaOptionError("maxOffsetsPerTrigger must be positive")
    min_offsets = None
    if "minoffsetspertrigger" in params and streaming:
        min_offsets = _scala_int(params["minoffsetspertrigger"], "minOffsetsPerTrigger")
        if min_offsets <= 0:
            raise SparkKafkaOptionError("minOffsetsPerTrigger must be positive")
    return SourceOptions(
        strategy=strategy,
        assign=parse_assign(params["assign"]) if strategy == "assign" else (),
        topics=tuple(t.strip() for t in params.get("subscribe", "").split(",") if t.strip()),
        pattern=params.get("subscribepattern", "").strip() or None,
        starting=starting,
        ending=ending,
        no_match_strategy=no_match,
        fail_on_data_loss=scala_bool(params.get("failondataloss", "true"), "failOnDataLoss"),
        include_headers=scala_bool(params.get("includeheaders", "false"), "includeHeaders"),
        min_partitions=_scala_int(params["minpartitions"], "minPartitions") if "minpartitions" in params else None,
        max_records_per_partition=(_scala_int(params["maxrecordsperpartition"], "maxRecordsPerPartition")
                                   if "maxrecordsperpartition" in params else None),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=duration_ms(params.get("maxtriggerdelay", "15m"), "maxTriggerDelay"),
        poll_timeout_ms=_scala_int(params.get("kafkaconsumer.polltimeoutms", "120000"), "kafkaConsumer.pollTimeoutMs"),
        consumer_config=consumer_config(params),
        formats=_formats(params, strategy),
    )


def formats_of(options: Mapping[Any, Any]) -> RecordFormats | None:
    """keyFormat / valueFormat of Spark's option map (the DataSource's schema())."""
    params = {k: str(v) for k, v in _lower(options).items()}
    return _formats(params, _validate_general(params))


def _formats(params: Params, strategy: str) -> RecordFormats | None:
    """keyFormat / valueFormat, the reader schemas resolved (formats.parse_formats)."""
    topics = tuple(t.strip() for t in params.get("subscribe", "").split(",") if t.strip())
    if strategy == "assign":
        topics = tuple(sorted({t for t, _ in parse_assign(params["assign"])}))
    try:
        return parse_formats(params, topics)
    except SparkFormatError as exc:
        raise SparkKafkaOptionError(str(exc)) from exc
