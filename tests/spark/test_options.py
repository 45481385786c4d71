"""Option parsing, range planning and admission control, without Spark or a
broker (fastkc.spark.options / fastkc.spark.ranges are pure Python)."""
import pytest

from fastkc.spark import options as so
from fastkc.spark import ranges as sr
from tests.support.spark_options import BATCH_CASES, STREAM_CASES


@pytest.mark.parametrize("opts,message", BATCH_CASES)
def test_batch_option_errors_are_sparks(opts, message):
    with pytest.raises(so.SparkKafkaOptionError) as info:
        so.parse(opts, streaming=False)
    assert message in str(info.value)


@pytest.mark.parametrize("opts,message", STREAM_CASES)
def test_stream_option_errors_are_sparks(opts, message):
    with pytest.raises(so.SparkKafkaOptionError) as info:
        so.parse(opts, streaming=True)
    assert message in str(info.value)


def test_keys_are_case_insensitive_and_defaults_are_sparks():
    batch = so.parse({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a, b"}, streaming=False)
    assert batch.topics == ("a", "b")
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert batch.fail_on_data_loss is True and batch.include_headers is False
    assert batch.consumer_config["bootstrap_servers"] == "h:1"
    stream = so.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a"}, streaming=True)
    assert stream.starting.kind == "latest"


def test_timestamp_options_take_precedence_over_offsets():
    opts = so.parse({"kafka.bootstrap.servers": "h:1", "assign": '{"t":[0,1]}', "startingOffsets": "earliest",
                     "startingOffsetsByTimestamp": '{"t":{"0":5,"1":6}}', "startingTimestamp": "7",
                     "endingOffsetsByTimestamp": '{"t":{"0":9,"1":9}}'}, streaming=False)
    assert opts.assign == (("t", 0), ("t", 1))
    assert opts.starting == so.OffsetSpec("timestamp", timestamp=7)
    assert opts.ending == so.OffsetSpec("timestamps", {("t", 0): 9, ("t", 1): 9})


def test_bad_boolean_is_rejected_not_read_as_false():
    with pytest.raises(so.SparkKafkaOptionError, match='For input string: "yes"'):
        so.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "failOnDataLoss": "yes"}, streaming=False)


def test_kafka_options_map_to_consumer_keywords():
    config = so.consumer_config({
        "kafka.bootstrap.servers": "h:1,h:2",
        "kafka.isolation.level": "read_committed",
        "kafka.fetch.max.wait.ms": "250",
        "kafka.check.crcs": "false",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="alice" password="s3\\"cret";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "",
        "kafka.group.id": "ignored",
    })
    assert config == {
        "bootstrap_servers": "h:1,h:2", "isolation_level": "read_committed", "fetch_max_wait_ms": 250,
        "check_crcs": False, "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice", "sasl_plain_password": 's3"cret',  # \" unescaped as Java's JAAS parser does
        "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": False, "client_id": "fastkc-spark",
    }


@pytest.mark.parametrize("key,value", [
    ("kafka.ssl.truststore.type", "JKS"),
    ("kafka.sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required;"),
    ("kafka.sasl.jaas.config", "org.example.CustomLoginModule required user=\"x\";"),
    # an IAM profile or role would sign as another identity than botocore's chain
    ("kafka.sasl.jaas.config", 'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="prod";'),
    ("kafka.sasl.client.callback.handler.class", "org.example.CustomHandler"),
])
def test_security_settings_fastkc_cannot_honour_are_errors(key, value):
    with pytest.raises(so.SparkKafkaOptionError):
        so.consumer_config({key: value})


def test_split_by_max_records_then_min_partitions():
    ranges = [sr.OffsetRange("t", 0, 0, 100), sr.OffsetRange("t", 1, 10, 10), sr.OffsetRange("t", 2, 5, 3)]
    capped = sr.split_ranges(ranges, max_records_per_partition=30)
    assert [(r.start, r.end) for r in capped] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    split = sr.split_ranges([sr.OffsetRange("a", 0, 0, 90), sr.OffsetRange("b", 0, 0, 10)], min_partitions=10)
    # proportional to size: 9 parts of 10 for a, 1 for b; contiguous, nothing lost
    assert ([(r.topic, r.start, r.end) for r in split if r.topic == "a"]
            == [("a", i * 10, i * 10 + 10) for i in range(9)])
    assert [(r.topic, r.start, r.end) for r in split if r.topic == "b"] == [("b", 0, 10)]


def test_rate_limit_shares_by_backlog_without_starving():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 7}
    end = {("t", 0): 1000, ("t", 1): 101, ("t", 2): 7, ("t", 3): 50}
    limited = sr.rate_limit(100, {**start, ("t", 3): 50}, end)
    assert limited[("t", 0)] == 99  # floor(100 * 1000 / 1001)
    assert limited[("t", 1)] == 101  # a share below one row rounds up to one
    assert limited[("t", 2)] == 7 and limited[("t", 3)] == 50  # no backlog: unchanged
    assert sr.rate_limit(10**9, start, end) == end


def test_checkpoint_offsets_round_trip_in_sparks_shape():
    offsets = {("b", 1): 5, ("a", 10): 7, ("a", 2): 0}
    as_json = sr.to_json_offsets(offsets)
    assert as_json == {"a": {"2": 0, "10": 7}, "b": {"1": 5}}
    assert sr.from_json_offsets(as_json) == offsets


def test_data_loss_fails_only_when_asked():
    with pytest.raises(sr.KafkaDataLossError, match='set the source option "failOnDataLoss" to "false"'):
        sr.report_data_loss(True, "gone")
    sr.report_data_loss(False, "gone")  # logged, not raised


def test_min_offsets_per_trigger_holds_back_until_backlog_or_delay():
    now = [100.0]
    delay = sr.TriggerDelay(min_rows=50, max_delay_ms=2000, clock=lambda: now[0])
    assert delay.hold(10) is True  # too little, too soon
    now[0] += 1.0
    assert delay.hold(49) is True
    assert delay.hold(50) is False  # enough rows: go, and the delay restarts
    now[0] += 1.5
    assert delay.hold(0) is True
    now[0] += 0.5
    assert delay.hold(0) is False  # maxTriggerDelay passed: go with what there is


def test_trigger_options_parse_like_sparks():
    opts = so.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "minOffsetsPerTrigger": "5",
                     "maxOffsetsPerTrigger": "9", "maxTriggerDelay": "2min"}, streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_offsets_per_trigger, opts.max_trigger_delay_ms) == (5, 9, 120000)
    assert so.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a"}, streaming=True).max_trigger_delay_ms == 900000
    assert so.duration_ms("250", "x") == 250 and so.duration_ms("3s", "x") == 3000
    with pytest.raises(so.SparkKafkaOptionError):
        so.duration_ms("soon", "maxTriggerDelay")


def test_msk_iam_as_amazon_documents_it_for_java_clients():
    config = so.consumer_config({
        "kafka.bootstrap.servers": "b-1.msk:9098", "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "AWS_MSK_IAM",
        "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
    })
    assert config == {"bootstrap_servers": "b-1.msk:9098", "security_protocol": "SASL_SSL",
                      "sasl_mechanism": "AWS_MSK_IAM", "client_id": "fastkc-spark"}


def test_jaas_values_quoted_or_bare_with_java_escapes():
    module, options = so.parse_jaas('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true '
                                    'keyTab="/etc/k \\"x\\".keytab" principal="c@R" storeKey=false;')
    assert module == "com.sun.security.auth.module.Krb5LoginModule"
    assert options == {"useKeyTab": "true", "keyTab": '/etc/k "x".keytab', "principal": "c@R", "storeKey": "false"}
