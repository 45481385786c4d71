"""`fastkc consume`'s renderers: kcat's -f format strings and -J objects,
joined column by column from a poll_arrow() batch."""
import re
from collections.abc import Callable
from typing import Any, Protocol

from fastkc.consume.arguments import UsageError
from fastkc.structs import TopicPartition

# pyarrow has no type information: its batches, arrays and scalars are Any here
Batch = Any

# The default output, as kcat's: the value and a newline.
DEFAULT_FORMAT = "%s\\n"

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
            # -s avro: the decoded JSON text (fastkc/consume/schema_values.py)
            column = batch.column(name + "_json") if decoded(batch, name) else self._bytes_column(batch, name)
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
                   lit(b',"key":'), self._key_or_value(batch, "key", b"key"),
                   lit(b',"payload":'), self._key_or_value(batch, "value", b"payload"), lit(b"}\n")]
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

    def _key_or_value(self, batch: Batch, name: str, label: bytes) -> Any:
        """As kcat -J: a JSON string (null for null); with -s avro the decoded
        JSON as it is, then "<name>_schema_id": id, or null then
        "<label>_error": why (kcat's key_error / payload_error)."""
        if not decoded(batch, name):
            return self._string_or_null(batch.column(name))
        pa, pc = self._pa, self._pc
        text = batch.column(name + "_json")
        ids = batch.column(name + "_schema_id")
        errors = batch.column(name + "_error")
        schema_id = pc.binary_join_element_wise(
            pa.scalar(b',"' + name.encode() + b'_schema_id":', pa.binary()), self._schema_ids(ids),
            pa.scalar(b"", pa.binary()))
        done = pc.binary_join_element_wise(text, schema_id, pa.scalar(b"", pa.binary()))  # null where no text
        failed = pc.binary_join_element_wise(
            pa.scalar(b'null,"' + label + b'_error":', pa.binary()), self._string_or_null(errors),
            pa.scalar(b"", pa.binary()))
        out = pc.if_else(pc.is_null(errors), done, failed)
        return pc.fill_null(out, b"null")  # a null key or value

    def _schema_ids(self, ids: Any) -> Any:
        """A schema id prints as a number, a GUID as a string."""
        pa, pc = self._pa, self._pc
        as_binary = ids.cast(pa.binary())
        numeric = pc.fill_null(pc.match_substring_regex(ids, r"^[0-9]+$"), False)
        return pc.if_else(numeric, as_binary, self._string_or_null(as_binary))

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


def decoded(batch: Batch, name: str) -> bool:
    """Whether -s avro decoded this field (fastkc/consume/schema_values.py)."""
    return bool(batch.schema.get_field_index(name + "_json") >= 0)


class Renderer(Protocol):
    def render(self, batch: Batch) -> bytes | memoryview: ...
