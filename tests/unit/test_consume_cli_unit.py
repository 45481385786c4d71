"""`fastkc consume`'s parsing without a broker: -o, times, -X/-F typing,
the -f format's escapes and tokens, -J's string escaping, the renderers on
hand-built batches, and the argument checks that exit 2."""
import json
import subprocess
import sys

import pyarrow as pa
import pytest

from fastkc.consume import arguments, formats, settings
from fastkc.records import arrow_schema


@pytest.mark.parametrize("text, kind, value", [
    ("beginning", "beginning", None), ("end", "end", None), ("stored", "stored", None),
    ("0", "offset", 0), ("42", "offset", 42), ("-10", "relative", 10),
    ("@1700000000000", "timestamp", 1700000000000), ("s@5", "timestamp", 5),
])
def test_offsets(text, kind, value):
    spec = arguments.parse_offset(text)
    assert (spec.kind, spec.value) == (kind, value)


def test_stop_timestamp():
    spec = arguments.parse_offset("e@1234")
    assert (spec.kind, spec.stop_before_ms) == ("stop", 1234)


@pytest.mark.parametrize("text", ["junk", "", "@", "@12x", "s@-1", "e@", "1.5", "--3", "begin"])
def test_bad_offsets(text):
    with pytest.raises(Exception) as info:
        arguments.parse_offset(text)
    assert "offset" in str(info.value) or "@" in str(info.value)


@pytest.mark.parametrize("text, ms", [
    ("1700000000000", 1700000000000),
    ("2023-11-14T22:13:20Z", 1700000000000),
    ("2023-11-14T22:13:20", 1700000000000),  # no zone: UTC
    ("2023-11-14T23:13:20+01:00", 1700000000000),
    ("2023-11-14T22:13:20.123Z", 1700000000123),
])
def test_times(text, ms):
    assert arguments.parse_time(text) == ms


def test_bad_time():
    with pytest.raises(Exception, match="invalid time"):
        arguments.parse_time("yesterday")


@pytest.mark.parametrize("raw_key, raw_value, key, value", [
    ("fetch_max_wait_ms", "250", "fetch_max_wait_ms", 250),
    ("fetch.max.wait.ms", " 250 ", "fetch_max_wait_ms", 250),  # Java's dotted name
    ("check_crcs", "false", "check_crcs", False),
    ("check_crcs", "True", "check_crcs", True),
    ("security.protocol", "SASL_SSL", "security_protocol", "SASL_SSL"),
    ("sasl.username", "alice", "sasl_plain_username", "alice"),  # kcat's (librdkafka's) name
    ("ssl.ca.location", "/ca.pem", "ssl_cafile", "/ca.pem"),
    ("receive_buffer_bytes", "65536", "receive_buffer_bytes", 65536),
    ("api_version", "3.9", "api_version", (3, 9)),
    ("consumer_timeout_ms", "1500", "consumer_timeout_ms", 1500.0),
    # named; the group resolves the names to fastkc.assignors' classes
    ("partition_assignment_strategy", "roundrobin,range", "partition_assignment_strategy", ("roundrobin", "range")),
    ("api_version", "auto", "api_version", None),
])
def test_typed_settings(raw_key, raw_value, key, value):
    assert settings.typed_setting(raw_key, raw_value) == (key, value)


@pytest.mark.parametrize("raw_key, raw_value, message", [
    ("no_such_key", "1", "unknown configuration key"),
    ("fetch_max_wait_ms", "soon", "bad value"),
    ("check_crcs", "maybe", "bad value"),
    ("ssl_context", "x", "Python object"),
    ("group_id", "g", "-G"),
    ("enable_auto_commit", "true", "commits"),
    ("partition_assignment_strategy", "fair", "unknown assignor"),
])
def test_bad_settings(raw_key, raw_value, message):
    with pytest.raises(arguments.UsageError, match=message):
        settings.typed_setting(raw_key, raw_value)


def test_config_file(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# a kcat-style file\n\nbootstrap.servers=h1:9092,h2:9092\nsecurity_protocol = SSL\n"
                    "check.crcs=false\n")
    assert settings.read_config_file(str(path)) == {
        "bootstrap_servers": "h1:9092,h2:9092", "security_protocol": "SSL", "check_crcs": False}
    path.write_text("just a line\n")
    with pytest.raises(arguments.UsageError, match=":1: expected key=value"):
        settings.read_config_file(str(path))


@pytest.mark.parametrize("fmt, literal", [
    ("a\\tb\\nc\\r", b"a\tb\nc\r"),
    ("\\x41\\x7e", b"A~"),
    ("\\65\\066", b"A6"),  # decimal, octal after a leading zero (strtoul base 0)
    ("\\\\ \\q", b"\\ q"),
    ("100%%", b"100%"),
    ("end\\", b"end\\"),
])
def test_format_literals(fmt, literal):
    assert formats.parse_format(fmt) == [("lit", literal)]


def test_format_tokens():
    assert formats.parse_format("%t/%p@%o %k=%s %K %S %T %h\\n") == [
        ("field", "topic"), ("lit", b"/"), ("field", "partition"), ("lit", b"@"), ("field", "offset"),
        ("lit", b" "), ("field", "key"), ("lit", b"="), ("field", "value"), ("lit", b" "),
        ("field", "key_len"), ("lit", b" "), ("field", "value_len"), ("lit", b" "), ("field", "timestamp"),
        ("lit", b" "), ("field", "headers"), ("lit", b"\n")]


@pytest.mark.parametrize("fmt", ["%", "ab%", "%x", "%R"])
def test_bad_formats(fmt):
    with pytest.raises(arguments.UsageError, match="formatter|lone"):
        formats.parse_format(fmt)


@pytest.mark.parametrize("data, rendered", [
    (b"plain", b'"plain"'),
    (b'q"b\\s/', b'"q\\"b\\\\s/"'),
    (b"\n\r\t\x08\x0c", b'"\\n\\r\\t\\b\\f"'),
    (b"\x00\x01\x1f\x7f", b'"\\u0000\\u0001\\u001F\x7f"'),
    (b"\xff\xfe", b'"\xff\xfe"'),  # bytes as they are: yajl does not validate UTF-8
])
def test_json_strings(data, rendered):
    assert formats.json_string(data) == rendered


def _batch(rows):
    return pa.RecordBatch.from_pylist(rows, schema=arrow_schema())


ROWS = [
    {"key": b"k1", "value": b"v1", "topic": "t", "partition": 0, "offset": 5,
     "timestamp": 1700000000123000, "timestampType": 0,
     "headers": [{"key": "a", "value": b"1"}, {"key": "b", "value": None}, {"key": "c", "value": b""}]},
    {"key": None, "value": None, "topic": "t", "partition": 1, "offset": 6,
     "timestamp": 1700000000124000, "timestampType": 1, "headers": []},
    {"key": b"", "value": b"", "topic": "t", "partition": 1, "offset": 7,
     "timestamp": None, "timestampType": -1, "headers": None},
]


def test_format_renderer_columns():
    renderer = formats.FormatRenderer("%t %p %o [%k] %K [%s] %S %T {%h}\\n")
    assert bytes(renderer.render(_batch(ROWS))) == (
        b"t 0 5 [k1] 2 [v1] 2 1700000000123 {a=1,b=NULL,c=}\n"
        b"t 1 6 [] -1 [] -1 1700000000124 {}\n"
        b"t 1 7 [] 0 [] 0 -1 {}\n")
    # a slice starts at a non-zero offset of every column
    assert bytes(renderer.render(_batch(ROWS).slice(1, 1))) == b"t 1 6 [] -1 [] -1 1700000000124 {}\n"


def test_null_text():
    renderer = formats.FormatRenderer("%k:%s\\n", null_text=b"NULL")
    assert bytes(renderer.render(_batch(ROWS))) == b"k1:v1\nNULL:NULL\nNULL:NULL\n"


def test_literal_only_format():
    assert bytes(formats.FormatRenderer("x\\n").render(_batch(ROWS))) == b"x\nx\nx\n"


def test_json_renderer():
    lines = bytes(formats.JsonRenderer(lambda tp: 7).render(_batch(ROWS))).splitlines()
    assert lines[0] == (b'{"topic":"t","partition":0,"offset":5,"tstype":"create","ts":1700000000123,'
                        b'"broker":7,"headers":["a","1","b",null,"c",""],"key":"k1","payload":"v1"}')
    assert json.loads(lines[1]) == {"topic": "t", "partition": 1, "offset": 6, "tstype": "logappend",
                                    "ts": 1700000000124, "broker": 7, "key": None, "payload": None}
    assert json.loads(lines[2]) == {"topic": "t", "partition": 1, "offset": 7, "broker": 7,
                                    "key": "", "payload": ""}


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "fastkc.cli", "consume", *argv],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv, message", [
    (["-b", "h:1", "-t", "t", "-o", "junk"], "invalid offset"),
    (["-b", "h:1", "-p", "0"], "-p needs -t"),
    (["-b", "h:1"], "at least one topic"),
    (["-t", "t"], "no broker"),
    (["-b", "h:1", "-t", "t", "-X", "nope=1"], "unknown configuration key"),
    (["-b", "h:1", "-t", "t", "-X", "fetch_min_bytes"], "expected key=value"),
    (["-b", "h:1", "-t", "t", "-F", "/nonexistent/file"], "cannot read config file"),
    (["-b", "h:1", "-t", "t", "-J", "--parquet", "x.parquet"], "not allowed with"),
    (["-b", "h:1", "-t", "t", "-f", "%s", "--arrow-ipc", "-"], "not allowed with"),
    (["-b", "h:1", "-t", "t", "-f", "%q"], "unsupported formatter"),
    (["-b", "h:1", "-t", "t", "-o", "stored"], "needs -G"),
    (["-b", "h:1", "-t", "t", "-G", "g", "-p", "0"], "-p cannot be used"),
    (["-b", "h:1", "-t", "t", "-G", "g", "-o", "5"], "with -G"),
    (["-b", "h:1", "-t", "t", "-o", "5", "--from-time", "1000"], "give one"),
    (["-b", "h:1", "-t", "t", "-c", "0"], "positive"),
    (["-b", "h:1", "-t", "t", "-c", "x"], "invalid int"),
    (["-b", "h:1", "-t", "t", "--to-time", "last week"], "invalid time"),
    (["-b", "h:1", "-t", "t", "--from-time", "2000", "--to-time", "1000"], "before --from-time"),
    (["-b", "h:1", "-t", "t", "-X", "security_protocol=CARRIER_PIGEON"], "configuration"),
    (["-b", "h:1", "-t", "t", "-s", "value=avro"], "give -r URL"),
    (["-b", "h:1", "-t", "t", "-r", "http://h:1"], "-r URL is for -s avro"),
    (["-b", "h:1", "-t", "t", "-s", "value=json", "-r", "http://h:1"], "the only deserializer is avro"),
    (["-b", "h:1", "-t", "t", "-s", "payload=avro", "-r", "http://h:1"], "expected avro, key=avro or value=avro"),
    (["-b", "h:1", "-t", "t", "-s", "avro", "-r", "http://h:1", "--parquet", "x.parquet"], "prints JSON text"),
])
def test_bad_arguments_exit_2(argv, message):
    done = _cli(*argv)
    assert done.returncode == 2, done
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_json_renderer_escapes_only_what_needs_it():
    """Rows that need escaping (in a key, a value, a header) beside rows that
    do not, several brokers, and a slice: each line equals the row-by-row
    rendering with json_string."""
    rows = []
    for i in range(40):
        rows.append({"key": [b"k%d" % i, None, b'q"%d' % i, b"\x01"][i % 4],
                     "value": [b"plain", b"\xff\\", b"", None, b"tab\tnl\n"][i % 5],
                     "topic": "t", "partition": i % 3, "offset": i, "timestamp": 1000 * i, "timestampType": 0,
                     "headers": [{"key": "h\"", "value": [b"x", None, b"\x1f"][i % 3]}] if i % 2 else []})
    brokers = {0: 1, 1: 2, 2: 1}
    renderer = formats.JsonRenderer(lambda tp: brokers[tp.partition])
    batch = _batch(rows)
    for part, start in ((batch, 0), (batch.slice(7, 20), 7)):
        lines = bytes(renderer.render(part)).split(b"\n")[:-1]
        assert len(lines) == part.num_rows
        for line, row in zip(lines, rows[start:]):
            expected = (b'{"topic":"t","partition":%d,"offset":%d,"tstype":"create","ts":%d,"broker":%d'
                        % (row["partition"], row["offset"], row["offset"], brokers[row["partition"]]))
            if row["headers"]:
                h = row["headers"][0]
                expected += b',"headers":[' + formats.json_string(h["key"].encode()) + b"," + (
                    formats.json_string(h["value"]) if h["value"] is not None else b"null") + b"]"
            for name, field in ((b"key", "key"), (b"payload", "value")):
                v = row[field]
                expected += b',"' + name + b'":' + (formats.json_string(v) if v is not None else b"null")
            assert line == expected + b"}"
