"""`fastkc consume`: read topics to stdout (or to Arrow IPC / Parquet files), kcat-style.

The records come from `KafkaConsumer.poll_arrow()`, and every output is
rendered from the batch's columns: the `-f` format string becomes one
`binary_join_element_wise` over columns cast to bytes (pyarrow's kernels, no
Python object per record), so the default `%s\\n` costs a pass over the values.
`--json` (kcat's -J objects) is joined the same way; only the keys, values
and headers that need JSON escaping are escaped in Python, row by row
(no column kernel reproduces yajl's rules byte for byte).

Where we follow kcat 1.7.1 exactly (the differential test holds us to it):
the `-f` tokens and escapes (format.c: fmt_parse / fmt_add), empty and null keys
and values both printing nothing (or -Z's "NULL"), `%K`/`%S` giving -1 for null,
`%h` as `name=value,...` with "NULL" for a null header value, `-J`'s field
names and order (topic, partition, offset, tstype, ts, broker, headers, key,
payload) with yajl's escaping. Where we differ, on purpose:
- `-e` ends each partition at the end offset read when it was assigned, by
  position (a compacted or transactional tail has no record at end - 1);
  kcat's librdkafka EOF event follows the live high watermark instead.
- Nothing is printed on stderr but errors, and progress when stderr is a
  terminal (kcat prints "% Reached end of topic ..." lines unless -q).
- A closed stdout (`| head`) ends the run with status 0 and no message: the
  reader chose to stop. kcat dies by SIGPIPE (status 141 in a shell).
- Ctrl-C ends the run after the records already written (with -G, their
  offsets committed) with status 130, the shell's convention for SIGINT.

Exit statuses: 0 done, 1 a Kafka error (unreachable broker, unknown topic,
authorisation, timeout), 2 bad arguments or configuration, 130 interrupted.
"""
import argparse
import datetime
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

# (errors.py makes its code table's classes at import, which mypy cannot see;
# the ignore goes, as warn_unused_ignores says, once it declares them)
from fastkc.errors import (
    KafkaConfigurationError,
    KafkaError,
    UnknownTopicOrPartitionError,
    WakeupException,
)
from fastkc.structs import TopicPartition

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer

# pyarrow has no type information: its batches, arrays and scalars are Any here
Batch = Any

# Keys the command sets from its own options.
_OWNED_KEYS = {
    "group_id": "use -G GROUP",
    "enable_auto_commit": "fastkc consume commits the offsets of what it has written (with -G)",
    "bootstrap_servers": None,  # allowed: -b overrides it
}
# The default output, as kcat's: the value and a newline.
DEFAULT_FORMAT = "%s\\n"
_STATS_INTERVAL_S = 0.25
_COMMIT_INTERVAL_S = 5.0


class UsageError(Exception):
    """A bad argument or configuration value: message on stderr, exit 2."""


# --- offsets and times ---------------------------------------------------------------
class StartSpec:
    """What -o says: kind in beginning, end, stored, offset, relative, timestamp."""

    def __init__(self, kind: str, value: int | None = None, stop_before_ms: int | None = None) -> None:
        self.kind = kind
        self.value = value
        self.stop_before_ms = stop_before_ms  # kcat's e@: stop at the first record at or past it

    def __repr__(self) -> str:
        return "StartSpec({0!r}, {1!r})".format(self.kind, self.value)


def parse_offset(text: str) -> StartSpec:
    """-o: beginning | end | stored | N | -N (N before the end) | @MS or s@MS
    (the first record at or after MS) | e@MS (stop before MS, kcat's)."""
    if text in ("beginning", "end", "stored"):
        return StartSpec(text)
    for prefix, kind in (("s@", "timestamp"), ("@", "timestamp"), ("e@", "stop")):
        if text.startswith(prefix):
            ms = text[len(prefix):]
            if not re.fullmatch(r"[0-9]+", ms):
                raise argparse.ArgumentTypeError("-o {0}: expected {1}<milliseconds since the epoch>".format(
                    text, prefix))
            if kind == "stop":
                return StartSpec("stop", stop_before_ms=int(ms))
            return StartSpec("timestamp", int(ms))
    if re.fullmatch(r"-?[0-9]+", text):
        n = int(text)
        return StartSpec("relative", -n) if n < 0 else StartSpec("offset", n)
    raise argparse.ArgumentTypeError(
        "invalid offset {0!r}: expected beginning, end, stored, N, -N, @MS, s@MS or e@MS".format(text))


def parse_time(text: str) -> int:
    """--from-time/--to-time: milliseconds since the epoch, or ISO-8601
    (a time without an offset is UTC, not the local zone: a stored timestamp
    has no zone either)."""
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "invalid time {0!r}: expected milliseconds since the epoch or ISO-8601 "
            "(2026-11-25T13:40:00Z)".format(text)) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000) if moment.microsecond == 0 else \
        (int(moment.timestamp()) * 1000 + moment.microsecond // 1000)


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


# --- the -f format ---------------------------------------------------------------------
_TOKENS = {"o": "offset", "k": "key", "K": "key_len", "s": "value", "S": "value_len", "t": "topic",
           "p": "partition", "T": "timestamp", "h": "headers"}


def _unescape(text: str) -> bytes:
    """kcat's fmt_add: \\n \\t \\r, \\xHH.., \\NNN (strtoul base 0: 0NN octal,
    else decimal), any other escaped character stands for itself."""
    out = bytearray()
    raw = text.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 0x5C and i + 1 < len(raw):
            i += 1
            c = raw[i]
            if c in b"tnr":
                out.append({0x74: 9, 0x6E: 10, 0x72: 13}[c])
            elif c == 0x78:  # x: hexadecimal digits, as many as there are
                m = re.match(rb"[0-9a-fA-F]+", raw[i + 1:])
                if m:
                    out.append(int(m.group(), 16) & 0xFF)
                    i += len(m.group())
                else:
                    i += 1
                    if i < len(raw):
                        out.append(raw[i])
                    else:
                        break
            elif 0x30 <= c <= 0x39:
                m = re.match(rb"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*", raw[i:])
                assert m is not None  # raw[i] is a digit, which one of the branches matches
                digits = m.group()
                if digits[:2].lower() == b"0x":
                    number = int(digits[2:], 16)
                elif digits.startswith(b"0"):
                    number = int(digits, 8)
                else:
                    number = int(digits)
                out.append(number & 0xFF)
                i += len(digits) - 1
            else:
                out.append(c)
        else:
            out.append(c)
        i += 1
    return bytes(out)


def parse_format(fmt: str) -> list[tuple[str, Any]]:
    """[("lit", bytes) | ("field", name)] from a kcat -f string; UsageError
    on an unknown or empty %-token."""
    parts: list[tuple[str, Any]] = []  # ("lit", bytes) or ("field", name)
    pos = 0
    while pos < len(fmt):
        cut = fmt.find("%", pos)
        if cut < 0:
            parts.append(("lit", _unescape(fmt[pos:])))
            break
        if cut > pos:
            parts.append(("lit", _unescape(fmt[pos:cut])))
        if cut + 1 >= len(fmt):
            raise UsageError("-f {0!r}: a lone % at the end (write %% for a percent sign)".format(fmt))
        letter = fmt[cut + 1]
        if letter == "%":
            parts.append(("lit", b"%"))
        elif letter in _TOKENS:
            parts.append(("field", _TOKENS[letter]))
        else:
            raise UsageError("-f {0!r}: unsupported formatter %{1} (known: %t %p %o %k %K %s %S %T %h "
                             "%%)".format(fmt, letter))
        pos = cut + 2
    merged: list[tuple[str, Any]] = []
    for kind, value in parts:  # adjacent literals as one column
        if kind == "lit" and merged and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + value)
        elif kind != "lit" or value:
            merged.append((kind, value))
    return merged


class FormatRenderer:
    """A batch's records as the bytes of a -f format, column by column."""

    def __init__(self, fmt: str, null_text: bytes | None = None) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self._pa, self._pc = pa, pc
        self.parts = parse_format(fmt)
        self.null_text = null_text

    def render(self, batch: Batch) -> bytes | memoryview:
        pa, pc = self._pa, self._pc
        n: int = batch.num_rows
        if n == 0:
            return b""
        columns = []
        for kind, value in self.parts:
            if kind == "lit":
                columns.append(pa.scalar(value, pa.binary()))
            else:
                columns.append(self._field(batch, value))
        if not any(isinstance(c, pa.Array) for c in columns):  # literals only
            literal: bytes = b"".join(c.as_py() for c in columns)
            return literal * n
        joined = pc.binary_join_element_wise(*columns, pa.scalar(b"", pa.binary()),
                                             null_handling="replace", null_replacement=b"")
        if isinstance(joined, pa.ChunkedArray):
            joined = joined.combine_chunks()
        offsets = joined.buffers()[1]
        first, last = _int32_at(offsets, joined.offset), _int32_at(offsets, joined.offset + n)
        data = joined.buffers()[2]
        return memoryview(data)[first:last] if data is not None else b""

    def _bytes_column(self, batch: Batch, name: str) -> Any:
        pa = self._pa
        column = batch.column(name)
        if column.type != pa.binary():
            column = column.cast(pa.binary())
        return column

    def _field(self, batch: Batch, name: str) -> Any:
        pa, pc = self._pa, self._pc
        if name in ("key", "value"):
            column = self._bytes_column(batch, name)
            if self.null_text is not None:
                # kcat -Z: empty and null alike print as the null text
                empty = pc.fill_null(pc.equal(pc.binary_length(column), 0), True)
                column = pc.if_else(empty, pa.scalar(self.null_text, pa.binary()), column)
            return column
        if name in ("key_len", "value_len"):
            column = batch.column(name[:-4])
            lengths = pc.fill_null(pc.binary_length(column), -1)
            return lengths.cast(pa.string()).cast(pa.binary())
        if name == "topic":
            return batch.column("topic").cast(pa.binary())
        if name in ("partition", "offset"):
            return batch.column(name).cast(pa.string()).cast(pa.binary())
        if name == "timestamp":
            return timestamp_ms(batch).cast(pa.string()).cast(pa.binary())
        if name == "headers":
            return self._headers(batch.column("headers"))
        raise AssertionError(name)

    def _headers(self, headers: Any) -> Any:
        """name=value,name=value (kcat's print_headers: NULL for a null value)."""
        pa, pc = self._pa, self._pc
        values = headers.values  # the whole child array: offsets index into it
        names = values.field("key").cast(pa.binary())
        header_values = pc.fill_null(values.field("value").cast(pa.binary()), b"NULL")
        rendered = pc.binary_join_element_wise(names, header_values, pa.scalar(b"=", pa.binary()))
        # no mask: pyarrow refuses one with the offsets of a sliced array; a
        # null list (no headers) renders as nothing whatever its offsets span
        lists = pa.ListArray.from_arrays(headers.offsets, rendered)
        joined = pc.binary_join(lists, pa.scalar(b",", pa.binary()))
        return pc.if_else(headers.is_null(), pa.scalar(b"", pa.binary()), joined)


def _int32_at(buffer: Any, index: int) -> int:
    import struct

    value: int = struct.unpack_from("<i", buffer, index * 4)[0]
    return value


def timestamp_ms(batch: Batch) -> Any:
    """The timestamp column as int64 milliseconds, -1 where there is none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    micros = batch.column("timestamp").cast(pa.int64())
    return pc.fill_null(pc.divide(micros, 1000), -1)


# --- -J: kcat's JSON objects -------------------------------------------------------------
_JSON_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x0C: b"\\f",
                 0x08: b"\\b"}
_JSON_NEEDS_ESCAPE = re.compile(rb'[\x00-\x1f"\\]')
# the same class for pyarrow's RE2 (which takes binary columns byte by byte)
_JSON_NEEDS_ESCAPE_RE2 = r'[\x00-\x1f"\\]'



def _json_escape_match(match: "re.Match[bytes]") -> bytes:
    c = match.group()[0]
    return _JSON_ESCAPES.get(c) or b"\\u00%02X" % c


def json_string(data: bytes) -> bytes:
    """yajl_gen_string's output (kcat's -J): quotes, backslash and control
    characters escaped (\\u00XX in capitals), every other byte as it is,
    invalid UTF-8 included."""
    return b'"' + _JSON_NEEDS_ESCAPE.sub(_json_escape_match, data) + b'"'


class JsonRenderer:
    """kcat -J's objects, built column by column like the -f formats: a key,
    value or header that needs JSON escaping (a quote, a backslash, a control
    character) is escaped in Python, row by row, and only those rows."""

    _TSTYPES = {0: b"create", 1: b"logappend"}

    def __init__(self, broker_of: Callable[[TopicPartition], int | None]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self._pa, self._pc = pa, pc
        self.broker_of = broker_of  # TopicPartition -> node id (kcat's "broker")

    def render(self, batch: Batch) -> bytes | memoryview:
        pa, pc = self._pa, self._pc
        n = batch.num_rows
        if n == 0:
            return b""

        def lit(b: bytes) -> Any:
            return pa.scalar(b, pa.binary())

        def as_text(column: Any) -> Any:
            return column.cast(pa.string()).cast(pa.binary())

        # topic names are [a-zA-Z0-9._-] (Kafka's rule): nothing to escape
        topic = batch.column("topic").cast(pa.binary())
        types = batch.column("timestampType")
        stamp = pc.if_else(pc.fill_null(pc.greater_equal(types, 0), False), as_text(timestamp_ms(batch)),
                           pa.scalar(None, pa.binary()))
        type_name = pc.if_else(pc.equal(types, 0), lit(b"create"),
                               pc.if_else(pc.equal(types, 1), lit(b"logappend"), lit(b"unknown")))
        timestamp = pc.binary_join_element_wise(lit(b',"tstype":"'), type_name, lit(b'","ts":'), stamp, lit(b""),
                                                null_handling="replace", null_replacement=b"")
        timestamp = pc.if_else(pc.is_null(stamp), lit(b""), timestamp)
        columns = [lit(b'{"topic":"'), topic, lit(b'","partition":'), as_text(batch.column("partition")),
                   lit(b',"offset":'), as_text(batch.column("offset")), timestamp,
                   lit(b',"broker":'), self._brokers(batch), self._headers(batch.column("headers")),
                   lit(b',"key":'), self._string_or_null(batch.column("key")),
                   lit(b',"payload":'), self._string_or_null(batch.column("value")), lit(b"}\n")]
        joined = pc.binary_join_element_wise(*columns, lit(b""), null_handling="replace", null_replacement=b"")
        offsets = joined.buffers()[1]
        first, last = _int32_at(offsets, joined.offset), _int32_at(offsets, joined.offset + n)
        return memoryview(joined.buffers()[2])[first:last]

    def _brokers(self, batch: Batch) -> Any:
        pa = self._pa
        topics = batch.column("topic").unique().to_pylist()
        partitions = batch.column("partition").unique().to_pylist()
        nodes: dict[tuple[str, int], bytes] = {}
        for topic in topics:
            for partition in partitions:
                node = self.broker_of(TopicPartition(topic, partition))
                nodes[(topic, partition)] = b"%d" % (node if node is not None else -1)
        if len(set(nodes.values())) == 1:
            return pa.scalar(next(iter(nodes.values())), pa.binary())
        return pa.array([nodes[tp] for tp in zip(batch.column("topic").to_pylist(),
                                                  batch.column("partition").to_pylist())], pa.binary())

    def _string_or_null(self, column: Any) -> Any:
        """JSON strings of a key or value column, null for null."""
        pa, pc = self._pa, self._pc
        if column.type != pa.binary():
            column = column.cast(pa.binary())
        quoted = pc.binary_join_element_wise(pa.scalar(b'"', pa.binary()), column, pa.scalar(b'"', pa.binary()),
                                             pa.scalar(b"", pa.binary()))  # null stays null
        needs = pc.fill_null(pc.match_substring_regex(column, _JSON_NEEDS_ESCAPE_RE2), False)
        if pc.any(needs).as_py():
            escaped = [json_string(v) for v in column.filter(needs).to_pylist()]
            quoted = pc.replace_with_mask(quoted, needs, pa.array(escaped, pa.binary()))
        return pc.fill_null(quoted, b"null")

    def _headers(self, headers: Any) -> Any:
        ""","headers":[name,value,...] for records that have headers (kcat
        leaves the field out otherwise); rendered in Python, row by row."""
        pa, pc = self._pa, self._pc
        has = pc.fill_null(pc.greater(pc.list_value_length(headers), 0), False)
        if not pc.any(has).as_py():
            return pa.scalar(b"", pa.binary())
        rendered: list[bytes] = []
        for row in headers.filter(has).to_pylist():
            rendered.append(b',"headers":[' + b",".join(
                json_string(h["key"].encode("utf-8")) + b"," +
                (json_string(h["value"]) if h["value"] is not None else b"null") for h in row) + b"]")
        return pc.replace_with_mask(pa.nulls(len(headers), pa.binary()), has, pa.array(rendered, pa.binary()))


# --- outputs -------------------------------------------------------------------------------
class Renderer(Protocol):
    def render(self, batch: Batch) -> bytes | memoryview: ...


class Output(Protocol):
    """Where the polled batches go (stdout, an IPC stream, a Parquet file)."""

    def write(self, batch: Batch) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class StdoutBytes:
    """Rendered batches to stdout's binary buffer, one write per batch."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.stream = sys.stdout.buffer

    def write(self, batch: Batch) -> None:
        data = self.renderer.render(batch)
        if len(data):
            self.stream.write(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


def plain_batch(batch: Batch) -> Batch:
    """key/value as binary (arrow_zero_copy gives binary_view, which Parquet
    and older readers do not take)."""
    import pyarrow as pa

    if batch.schema.field("key").type == pa.binary():
        return batch
    arrays = [c.cast(pa.binary()) if f.name in ("key", "value") else c
              for f, c in zip(batch.schema, batch.columns)]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


class ArrowIpcOutput:
    """The Arrow IPC stream format (the `.arrows` kind, readable batch by
    batch with pyarrow.ipc.open_stream), to a file or stdout ('-')."""

    def __init__(self, path: str, schema: Any) -> None:
        import pyarrow as pa

        self.stream = sys.stdout.buffer if path == "-" else open(path, "wb")
        self.writer = pa.ipc.new_stream(self.stream, schema)

    def write(self, batch: Batch) -> None:
        if batch.num_rows:
            self.writer.write_batch(plain_batch(batch))

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.writer.close()
        self.stream.flush()
        if self.stream is not sys.stdout.buffer:
            self.stream.close()


class ParquetOutput:
    """One Parquet row group per polled batch."""

    def __init__(self, path: str, schema: Any) -> None:
        import pyarrow.parquet as pq

        self.writer = pq.ParquetWriter(path, schema)

    def write(self, batch: Batch) -> None:
        if batch.num_rows:
            self.writer.write_batch(plain_batch(batch))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.writer.close()


# --- progress on a terminal -----------------------------------------------------------------
class Progress:
    """records, records/s and lag on stderr (rich), only when stderr is a terminal."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.status = self.console.status("starting")
        self.status.start()
        self.started = time.monotonic()
        self.last = 0.0

    def update(self, count: int, lag: int | None, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < _STATS_INTERVAL_S:
            return
        self.last = now
        rate = count / max(now - self.started, 1e-9)
        self.status.update("{0:,} records  {1:,.0f} records/s  lag {2}".format(
            count, rate, "?" if lag is None else "{0:,}".format(lag)))

    def close(self) -> None:
        self.status.stop()


# --- the run -----------------------------------------------------------------------------------
class _Interrupt:
    """SIGINT: the first asks the consumer to wake up and the loop to end
    cleanly (commit, close); a second one interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self.consumer: KafkaConsumer | None = None
        self.previous: Any = None  # what signal.signal() returned: a handler, SIG_DFL/SIG_IGN or None

    def install(self) -> None:
        self.previous = signal.signal(signal.SIGINT, self._handle)

    def asked(self) -> bool:
        """A SIGINT came (read through a call: the handler sets it meanwhile)."""
        return self.requested

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.consumer is not None:
            self.consumer.wakeup()


class ConsumeRun:
    def __init__(self, args: argparse.Namespace, out: Output | None) -> None:
        self.args = args
        self._out = out
        self._consumer: KafkaConsumer | None = None
        self.count = 0
        self.end: dict[TopicPartition, int] = {}  # end offset read when first seen (-e)
        self.done: set[TopicPartition] = set()  # partitions finished (-e, --to-time, e@)
        self.commit_at: dict[TopicPartition, int] = {}  # next offset after what has been written (-G)
        self.committed_at: dict[TopicPartition, int] = {}
        self.last_commit = time.monotonic()
        self.stop_ms: int | None = None  # stop at the first record past this (inclusive bound)
        self.stop_before_ms: int | None = None  # e@: stop at the first record at or past this

    @property
    def consumer(self) -> "KafkaConsumer":
        if self._consumer is None:
            raise RuntimeError("ConsumeRun.start() has not run")
        return self._consumer

    @property
    def out(self) -> Output:
        if self._out is None:
            raise RuntimeError("ConsumeRun has no output yet")
        return self._out

    @out.setter
    def out(self, out: Output) -> None:
        self._out = out

    # setup
    def start(self, consumer: "KafkaConsumer") -> None:
        args = self.args
        self._consumer = consumer
        if args.to_time is not None:
            self.stop_ms = args.to_time
        if args.offset is not None and args.offset.kind == "stop":
            self.stop_before_ms = args.offset.stop_before_ms
        partitions: list[TopicPartition] = []
        for topic in args.topic:
            known = consumer.partitions_for_topic(topic)
            if known is None:
                raise UnknownTopicOrPartitionError(
                    "unknown topic {0!r} (or no metadata for it within request_timeout_ms)".format(topic))
            if args.partition:
                missing = [p for p in args.partition if p not in known]
                if missing:
                    raise UnknownTopicOrPartitionError("topic {0!r} has no partition {1} (it has {2})".format(
                        topic, ", ".join(map(str, missing)), len(known)))
                partitions += [TopicPartition(topic, p) for p in args.partition]
            else:
                partitions += [TopicPartition(topic, p) for p in sorted(known)]
        if args.group:
            consumer.subscribe(args.topic, listener=_CommitOnRevoke(self))
            return
        consumer.assign(partitions)
        self._seek(partitions)
        if args.exit_at_end:
            self._note_ends(partitions)

    def _seek(self, partitions: Sequence[TopicPartition]) -> None:
        consumer, spec = self.consumer, self.args.offset
        from_ms = self.args.from_time
        if spec is not None and spec.kind == "timestamp":
            from_ms = spec.value
        if from_ms is not None:
            found = consumer.offsets_for_times({tp: from_ms for tp in partitions})
            ends = consumer.end_offsets([tp for tp, hit in found.items() if hit is None])
            for tp in partitions:
                hit = found[tp]
                consumer.seek(tp, hit.offset if hit is not None else ends[tp])
            return
        kind = spec.kind if spec is not None else "end"
        if kind in ("beginning", "stop"):
            consumer.seek_to_beginning(*partitions)
        elif kind == "end":
            consumer.seek_to_end(*partitions)
        elif kind == "offset":
            assert spec is not None  # "end" is the default kind
            for tp in partitions:
                consumer.seek(tp, spec.value)
        elif kind == "relative":
            assert spec is not None
            ends = consumer.end_offsets(partitions)
            starts = consumer.beginning_offsets(partitions)
            for tp in partitions:
                consumer.seek(tp, max(starts[tp], ends[tp] - spec.value))

    def _note_ends(self, partitions: Sequence[TopicPartition]) -> None:
        new = [tp for tp in partitions if tp not in self.end]
        if not new:
            return
        self.end.update(self.consumer.end_offsets(new))
        for tp in new:
            if self.consumer.position(tp) >= self.end[tp]:
                self._finish(tp)

    def _finish(self, tp: TopicPartition) -> None:
        self.done.add(tp)
        if tp in self.consumer.assignment():
            self.consumer.pause(tp)

    def finished(self) -> bool:
        args = self.args
        if args.count is not None and self.count >= args.count:
            return True
        bounded = args.exit_at_end or self.stop_ms is not None or self.stop_before_ms is not None
        if not bounded:
            return False
        assigned = set(self.consumer.assignment())
        return bool(assigned) and assigned <= self.done

    # the loop
    def run(self, progress: Progress | None = None) -> None:
        args = self.args
        consumer = self.consumer
        while not self.finished():
            if args.group and args.exit_at_end:
                self._note_ends(list(consumer.assignment()))
                if self.finished():
                    break
            remaining = None if args.count is None else args.count - self.count
            batch = consumer.poll_arrow(timeout_ms=200, max_records=remaining)
            if batch.num_rows:
                batch, limits = self._bound(batch)
                self.out.write(batch)
                self.count += batch.num_rows
                if args.group:
                    self._note_written(limits)
            self._check_partitions()
            if args.group and time.monotonic() - self.last_commit >= _COMMIT_INTERVAL_S:
                self.out.flush()
                self.commit()
            if progress is not None:
                progress.update(self.count, self._lag())
        self.out.flush()

    def _bound(self, batch: Batch) -> tuple[Batch, dict[TopicPartition, int]]:
        """Drop the records past -e's end offsets and past --to-time / e@,
        per partition; {tp: first dropped offset} for the partitions cut."""
        import pyarrow.compute as pc

        limits: dict[TopicPartition, int] = {}
        if self.end:
            for tp, end in self.end.items():
                if tp not in self.done and self.consumer.position(tp) > end:
                    limits[tp] = end
        if self.stop_ms is not None or self.stop_before_ms is not None:
            stamps = timestamp_ms(batch)
            late = pc.greater(stamps, self.stop_ms) if self.stop_ms is not None else None
            if self.stop_before_ms is not None:
                early_stop = pc.greater_equal(stamps, self.stop_before_ms)
                late = early_stop if late is None else pc.or_(late, early_stop)
            if pc.any(late).as_py():
                past = batch.filter(late)
                for topic, partition, offset in zip(past.column("topic").to_pylist(),
                                                    past.column("partition").to_pylist(),
                                                    past.column("offset").to_pylist()):
                    tp = TopicPartition(topic, partition)
                    if offset < limits.get(tp, offset + 1):
                        limits[tp] = offset
        if not limits:
            return batch, limits
        drop = None
        for tp, limit in limits.items():
            cut = pc.and_(pc.and_(pc.equal(batch.column("partition"), tp.partition),
                                  pc.equal(batch.column("topic"), tp.topic)),
                          pc.greater_equal(batch.column("offset"), limit))
            drop = cut if drop is None else pc.or_(drop, cut)
        for tp in limits:
            self._finish(tp)
        return batch.filter(pc.invert(drop)), limits

    def _check_partitions(self) -> None:
        consumer = self.consumer
        assigned = set(consumer.assignment())
        for tp, end in self.end.items():
            if tp not in self.done and tp in assigned and consumer.position(tp) >= end:
                self._finish(tp)

    def _lag(self) -> int | None:
        lag = 0
        consumer = self.consumer
        for tp in consumer.assignment():
            high = consumer.highwater(tp)
            if high is None:
                return None
            lag += max(0, high - consumer.position(tp))
        return lag

    # commits (-G): the offsets after what has been written and flushed
    def _note_written(self, limits: dict[TopicPartition, int]) -> None:
        for tp in self.consumer.assignment():
            position = self.consumer.position(tp)
            if tp in limits:
                position = min(position, limits[tp])
            self.commit_at[tp] = position

    def commit(self, partitions: Collection[TopicPartition] | None = None) -> None:
        from fastkc.structs import OffsetAndMetadata

        self.last_commit = time.monotonic()
        wanted = {tp: offset for tp, offset in self.commit_at.items()
                  if (partitions is None or tp in partitions) and self.committed_at.get(tp) != offset}
        if wanted:
            self.consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp, offset in wanted.items()})
            self.committed_at.update(wanted)


class _CommitOnRevoke:
    """Commit the written offsets of partitions the group takes away."""

    def __init__(self, run: ConsumeRun) -> None:
        self.run = run

    def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        taken = set(revoked)
        if taken & set(self.run.commit_at):
            self.run.out.flush()
            self.run.commit(taken)
        for tp in taken:
            self.run.commit_at.pop(tp, None)
            self.run.end.pop(tp, None)
            self.run.done.discard(tp)

    def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: Iterable[TopicPartition]) -> None:
        for tp in lost:
            self.run.commit_at.pop(tp, None)


def _check_arguments(args: argparse.Namespace) -> None:
    if args.partition and not args.topic:
        raise UsageError("-p needs -t TOPIC")
    if not args.topic:
        raise UsageError("give at least one topic with -t TOPIC")
    if args.group:
        if args.partition:
            raise UsageError("-G subscribes to whole topics: -p cannot be used with it")
        if args.offset is not None and args.offset.kind not in ("beginning", "end", "stored"):
            raise UsageError("with -G, -o is beginning, end or stored (where to start without a committed "
                             "offset); seek positions need assigned partitions (no -G)")
        if args.from_time is not None:
            raise UsageError("--from-time cannot be used with -G (the group's committed offsets decide)")
    elif args.offset is not None and args.offset.kind == "stored":
        raise UsageError("-o stored reads the group's committed offsets: it needs -G GROUP")
    if args.from_time is not None and args.offset is not None and args.offset.kind != "stop":
        raise UsageError("--from-time and -o both say where to start: give one")
    if args.count is not None and args.count < 1:
        raise UsageError("-c must be a positive count")
    if args.from_time is not None and args.to_time is not None and args.to_time < args.from_time:
        raise UsageError("--to-time is before --from-time")


def _make_output(args: argparse.Namespace) -> Output | None:
    from fastkc.records import arrow_schema

    if args.arrow_ipc:
        return ArrowIpcOutput(args.arrow_ipc, arrow_schema())
    if args.parquet:
        return ParquetOutput(args.parquet, arrow_schema())
    return None


def run(args: argparse.Namespace) -> int:
    """The `consume` subcommand; the exit status."""
    try:
        _check_arguments(args)
        settings = consumer_settings(args)
        if not (args.arrow_ipc or args.parquet or args.json):
            parse_format(args.format)  # a bad -f is a usage error before any connection
    except UsageError as exc:
        return _fail(str(exc), 2)
    interrupt = _Interrupt()
    interrupt.install()
    consumer: KafkaConsumer | None = None
    out: Output | None = None
    progress: Progress | None = None
    status = 0
    try:
        from fastkc import consumer as consumer_module

        try:
            consumer = consumer_module.KafkaConsumer(**settings)
        except KafkaConfigurationError as exc:
            return _fail("configuration: {0}".format(exc), 2)
        interrupt.consumer = consumer
        if interrupt.asked():
            return 130
        job = ConsumeRun(args, None)
        job.start(consumer)
        out = _make_output(args)
        if out is None:
            renderer: Renderer
            if args.json:
                renderer = JsonRenderer(consumer._client.cluster.leader_for)
            else:
                renderer = FormatRenderer(args.format, b"NULL" if args.null_as_text else None)
            out = StdoutBytes(renderer)
        job.out = out
        if sys.stderr.isatty() and not args.quiet:
            progress = Progress()
        try:
            job.run(progress)
        except WakeupException:
            pass
        if interrupt.asked():
            status = 130
        out.close()
        out = None
        if args.group:
            job.commit()
    except BrokenPipeError:
        # the reader has gone (`| head`): what it took is written; Python's
        # advice, so that the interpreter's own flush at exit finds a sink
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 0
    except KafkaConfigurationError as exc:
        status = _fail("configuration: {0}".format(exc), 2)
    except OSError as exc:  # an output that cannot be opened or written (not a closed pipe: above)
        status = _fail("output: {0}".format(exc), 1)
    except KafkaError as exc:
        status = _fail(_describe(exc), 1)
    except KeyboardInterrupt:
        status = 130
    finally:
        interrupt.restore()
        if progress is not None:
            progress.close()
        if out is not None:
            try:
                out.close()
            except (BrokenPipeError, OSError):
                pass
        if consumer is not None:
            try:
                consumer.close(autocommit=False)
            except Exception:  # closing must not turn a result into a traceback
                pass
    return status


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    # fastkc's errors render as "[Error N] Name: message": the message alone
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return name if not text or text == name else "{0}: {1}".format(name, text)


def _fail(message: str, status: int) -> int:
    print("fastkc consume: error: {0}".format(message), file=sys.stderr)
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Read Kafka topics to stdout, kcat-style (-C), or to Arrow IPC / Parquet files.\n\n"
        "Format tokens (-f): %t topic, %p partition, %o offset, %k key, %K key length (-1 null),\n"
        "%s value, %S value length (-1 null), %T timestamp (ms, -1 none), %h headers\n"
        "(name=value,...), %% a percent sign; escapes \\n \\t \\r \\xHH \\NNN.")
    parser.epilog = (
        "examples:\n"
        "  fastkc consume -b localhost:9092 -t orders -o beginning -e\n"
        "  fastkc consume -b localhost:9092 -t orders -p 0 -o -10 -e -f '%p/%o %k: %s (%T)\\n'\n"
        "  fastkc consume -b localhost:9092 -t orders -G audit --json -c 100\n"
        "  fastkc consume -b localhost:9092 -t orders --from-time 2026-11-25T00:00Z --to-time "
        "2026-11-26T00:00Z -e --parquet day.parquet\n\n"
        "exit status: 0 done (also when stdout closes early), 1 Kafka error, 2 bad arguments, "
        "130 interrupted")
    parser.add_argument("-b", "--bootstrap", metavar="HOST:PORT[,...]", help="bootstrap brokers")
    parser.add_argument("-t", "--topic", action="append", default=[], metavar="TOPIC",
                        help="topic to read (repeat for several)")
    parser.add_argument("-p", "--partition", action="append", type=int, metavar="N",
                        help="read only this partition of each topic (repeatable; not with -G)")
    parser.add_argument("-o", "--offset", type=parse_offset, metavar="OFFSET",
                        help="where to start: beginning | end | stored | N | -N (N before the end) | "
                             "@MS or s@MS (first record at or after MS) | e@MS (stop before MS). "
                             "Default: end; with -G, stored (beginning/end: where to start without a "
                             "committed offset)")
    parser.add_argument("-G", "--group", metavar="GROUP",
                        help="join this consumer group (subscribe) and commit the offsets of what was written")
    parser.add_argument("-c", "--count", type=int, metavar="N", help="exit after N records")
    parser.add_argument("-e", "--exit", dest="exit_at_end", action="store_true",
                        help="exit at the end of the partitions (their end offsets when assigned)")
    outputs = parser.add_mutually_exclusive_group()
    outputs.add_argument("-f", "--format", default=DEFAULT_FORMAT, metavar="FMT",
                         help="output format, kcat's (default: '%%s\\n')")
    outputs.add_argument("-J", "--json", action="store_true",
                         help="one JSON object per record, kcat -J's fields")
    outputs.add_argument("--arrow-ipc", metavar="FILE",
                         help="write the Arrow IPC stream format to FILE ('-': stdout)")
    outputs.add_argument("--parquet", metavar="FILE", help="write Parquet to FILE (a row group per batch)")
    parser.add_argument("-Z", dest="null_as_text", action="store_true",
                        help="print empty and null keys and values as NULL (kcat's -Z)")
    parser.add_argument("--from-time", type=parse_time, metavar="TIME",
                        help="start at the first record at or after TIME (ms or ISO-8601; UTC unless given)")
    parser.add_argument("--to-time", type=parse_time, metavar="TIME",
                        help="stop each partition at its first record after TIME")
    parser.add_argument("-X", dest="set", action="append", metavar="KEY=VALUE",
                        help="consumer setting with kafka-python's name (security_protocol=SASL_SSL, "
                             "sasl_mechanism=PLAIN, ...); Java's dotted names and kcat's librdkafka "
                             "security names are accepted too")
    parser.add_argument("-F", dest="config_file", metavar="FILE",
                        help="key=value settings, one a line (as -X); -X and -b override them")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on a terminal")
    parser.set_defaults(handler=run)
