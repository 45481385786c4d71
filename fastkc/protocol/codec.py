"""The one generic encoder/decoder, driven by the declarations in messages.py.

Both directions for both requests and responses, so tests can play either
side and the compiled Fetch parser has an independent oracle and a generator
of test vectors.

Decoding: every field of the struct is present in the resulting dict; fields
absent from the version (or tagged fields not sent) hold their declared
defaults. Unknown tagged fields are kept raw under "_unknown_tags" ({tag:
bytes}) when there are any, and re-emitted by the encoder. Any malformation
(truncation, an impossible or negative non-null length, null where the
version does not allow it, an over-long varint, invalid UTF-8, a tagged field
whose value does not fill its declared size exactly, bytes left after the
body) raises fastkc.errors.ProtocolParseError with the byte position inside
the payload given to the decoder.

Encoding: missing keys take the field's default; keys that name no declared
field raise (a misspelt key would otherwise be dropped silently). Fields the
version does not have are not written (Kafka's "ignorable" distinction is not
enforced). Tagged fields equal to their default are omitted, as Kafka does.
Bad values (wrong type, out of range, null where not allowed) raise
fastkc.errors.IllegalArgumentError naming the field path.
"""
import struct as _struct
from typing import Any

from fastkc.errors import IllegalArgumentError, ProtocolParseError
from fastkc.protocol.messages import get_api
from fastkc.protocol.schema import Api, Field, Message, Struct, in_range
from fastkc.protocol.types import FIXED_SIZES, Malformed, Reader, Writer
from fastkc.structs import FetchPartitionResponse, FetchResponse, FetchTopicResponse

UNKNOWN_TAGS = "_unknown_tags"

_ABSENT, _REGULAR, _TAGGED = 0, 1, 2
# One step of a struct's plan: (Field, mode), or for mode _RUN a merged run of
# numbers ((struct.Struct, names, fields), _RUN). The mode says which; the
# first item is Any because telling them apart with isinstance would cost the
# per-field loop what the runs save.
_Step = tuple[Any, int]
_INT_TYPES = ("int8", "int16", "uint16", "int32", "uint32", "int64", "float64")

# (id(struct), version) -> [(field, mode)] in declaration order
_ORDER: dict[tuple[int, int], list[tuple[Field, int]]] = {}
# (id(struct), version, flexible) -> smallest encoded size of one struct
_MIN_SIZE: dict[tuple[int, int, bool], int] = {}


def _order(struct: Struct, version: int) -> list[tuple[Field, int]]:
    key = (id(struct), version)
    order = _ORDER.get(key)
    if order is None:
        order = []
        for f in struct.fields:
            if not in_range(version, f.versions):
                order.append((f, _ABSENT))
            elif f.tag is not None:
                order.append((f, _TAGGED))
            else:
                order.append((f, _REGULAR))
        _ORDER[key] = order
    return order


def _min_size_of_type(type_: str, struct: Struct | None, version: int, flexible: bool, nullable: bool) -> int:
    fixed = FIXED_SIZES.get(type_)
    if fixed is not None:
        return fixed
    if type_ == "string":
        return 1 if flexible else 2
    if type_ in ("bytes", "records", "array"):
        return 1 if flexible else 4
    # a struct: a nullable one may be a single -1 marker byte
    if nullable:
        return 1
    assert struct is not None  # every other type is a struct, which has one
    return _min_struct_size(struct, version, flexible)


def _min_struct_size(struct: Struct, version: int, flexible: bool) -> int:
    key = (id(struct), version, flexible)
    size = _MIN_SIZE.get(key)
    if size is None:
        size = 1 if flexible else 0  # the tagged-field count
        for f, mode in _order(struct, version):
            if mode == _REGULAR:
                size += _min_size_of_type(f.type, f.struct, version, flexible, f.is_nullable(version))
        _MIN_SIZE[key] = size
    return size


# --------------------------------------------------------------------------
# decoding
# --------------------------------------------------------------------------
# struct format codes of the fixed-size numbers (the Reader's, big-endian)
_STRUCT_CODES = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
                 "float64": "d"}
_RUN = 3
_TAG_FAST_PATH = True  # (a switch for the tests that compare with the general path)
# (id(struct), version) -> [(field, mode)] where consecutive regular
# fixed-size number fields are merged into one (_RUN, (Struct, names, fields))
_PLAN: dict[tuple[int, int], list[_Step]] = {}
# (code, count) -> struct.Struct of `count` numbers (arrays of numbers)
_ARRAY_STRUCTS: dict[tuple[str, int], _struct.Struct] = {}


def _plan(struct: Struct, version: int) -> list[_Step]:
    """_order() with runs of fixed-size numbers read by one unpack_from:
    a message of 10,000 partitions is 10,000 structs of such runs (Metadata,
    ListOffsets), and field-by-field dispatch is most of its decoding time.
    A run that does not fit in the bytes left is read field by field, so a
    truncation fails at the same field and position as without runs."""
    key = (id(struct), version)
    plan = _PLAN.get(key)
    if plan is None:
        plan = []
        run: list[Field] = []

        def close_run() -> None:
            if len(run) > 1:
                layout = _struct.Struct(">" + "".join(_STRUCT_CODES[f.type] for f in run))
                plan.append(((layout, tuple(f.name for f in run), tuple(run)), _RUN))
            elif run:
                plan.append((run[0], _REGULAR))
            run.clear()

        for f, mode in _order(struct, version):
            if mode == _REGULAR and f.type in _STRUCT_CODES:
                run.append(f)
                continue
            close_run()
            plan.append((f, mode))
        close_run()
        _PLAN[key] = plan
    return plan


def _decode_struct(struct: Struct, r: Reader, version: int, flexible: bool) -> Message:
    out: Message = {}
    tagged: dict[int, Field] | None = None
    for f, mode in _plan(struct, version):
        if mode == _REGULAR:
            out[f.name] = _decode_value(f.type, f, r, version, flexible, f.is_nullable(version))
        elif mode == _RUN:
            layout, names, fields = f
            if layout.size <= r.end - r.pos:
                out.update(zip(names, layout.unpack_from(r.data, r.pos)))
                r.pos += layout.size
            else:
                for field in fields:  # raises where the field-by-field read would
                    out[field.name] = _decode_value(field.type, field, r, version, flexible, False)
        else:
            out[f.name] = f.default()
            if mode == _TAGGED:
                if tagged is None:
                    tagged = {}
                tagged[f.tag] = f
    if flexible:
        if _TAG_FAST_PATH and r.pos < r.end and r.data[r.pos] == 0:
            r.pos += 1  # a zero tagged-field count, one byte: almost every struct
        else:
            unknown = _decode_tags(tagged or {}, r, version, out)
            if unknown:
                out[UNKNOWN_TAGS] = unknown
    return out


def _decode_tags(tagged: dict[int, Field], r: Reader, version: int, out: Message) -> dict[int, bytes] | None:
    count_pos = r.pos
    count = r.uvarint("tagged field count")
    # each tagged field takes at least two bytes (tag, size)
    if count * 2 > r.remaining():
        r.fail("tagged field count {0} cannot fit in {1} bytes".format(count, r.remaining()), count_pos)
    unknown: dict[int, bytes] | None = None
    seen: set[int] = set()
    for _ in range(count):
        tag_pos = r.pos
        tag = r.uvarint("tag")
        size = r.uvarint("tagged field size")
        if tag in seen:
            r.fail("tag {0} appears twice".format(tag), tag_pos)
        seen.add(tag)
        if size > r.remaining():
            r.fail("tagged field {0}: size {1} exceeds the {2} bytes left".format(tag, size, r.remaining()))
        f = tagged.get(tag)
        if f is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = r.raw(size, "unknown tagged field {0}".format(tag))
            continue
        sub = Reader(r.data, r.pos, r.pos + size)
        out[f.name] = _decode_value(f.type, f, sub, version, True, f.is_nullable(version))
        if sub.pos != sub.end:
            r.fail(
                "tagged field {0} ({1}): {2} of its {3} bytes unused".format(tag, f.name, sub.end - sub.pos, size),
                sub.pos,
            )
        r.pos = sub.end
    return unknown


def _decode_value(type_: str, f: Field, r: Reader, version: int, flexible: bool, nullable: bool) -> Any:
    name = f.name
    if type_ in _INT_TYPES:
        return getattr(r, type_)(name)
    if type_ == "string":
        pos = r.pos
        n = r.length(flexible, False, name)
        if n < 0:
            if not nullable:
                r.fail("{0}: null, but not nullable in v{1}".format(name, version), pos)
            return None
        return r.string_of(n, name)
    if type_ in ("bytes", "records"):
        pos = r.pos
        n = r.length(flexible, True, name)
        if n < 0:
            if not nullable:
                r.fail("{0}: null, but not nullable in v{1}".format(name, version), pos)
            return None
        return r.raw(n, name)
    if type_ == "bool":
        return r.bool(name)
    if type_ == "uuid":
        return r.uuid(name)
    if type_ == "array":
        pos = r.pos
        n = r.length(flexible, True, name)
        if n < 0:
            if not nullable:
                r.fail("{0}: null array, but not nullable in v{1}".format(name, version), pos)
            return None
        item = f.item
        if isinstance(item, str):
            min_size = _min_size_of_type(item, None, version, flexible, False)
            if n * min_size > r.remaining():
                r.fail("{0}: {1} elements cannot fit in {2} bytes".format(name, n, r.remaining()), pos)
            code = _STRUCT_CODES.get(item)
            if code is not None:
                # fixed-size numbers: the check above guarantees all n are there
                layout = _ARRAY_STRUCTS.get((code, n))
                if layout is None:
                    layout = _struct.Struct(">{0}{1}".format(n, code))
                    if n <= 64:  # replica lists and the like: few distinct lengths
                        _ARRAY_STRUCTS[(code, n)] = layout
                values = list(layout.unpack_from(r.data, r.pos))
                r.pos += layout.size
                return values
            return [_decode_value(item, f, r, version, flexible, False) for _ in range(n)]
        assert item is not None  # an array's item is a type name or a Struct
        min_size = max(1, _min_struct_size(item, version, flexible))
        if n * min_size > r.remaining():
            r.fail("{0}: {1} elements cannot fit in {2} bytes".format(name, n, r.remaining()), pos)
        return [_decode_struct(item, r, version, flexible) for _ in range(n)]
    if type_ == "struct":
        if nullable:
            # Kafka writes a nullable struct behind an int8 marker: -1 null, 1 present
            if r.int8(name + " null marker") < 0:
                return None
        assert f.struct is not None
        return _decode_struct(f.struct, r, version, flexible)
    raise AssertionError("undeclared type " + type_)


# --------------------------------------------------------------------------
# encoding
# --------------------------------------------------------------------------
class _EncodeError(Exception):
    pass


_MISSING = object()


def _encode_struct(struct: Struct, value: object, w: Writer, version: int, flexible: bool, path: str) -> None:
    if not isinstance(value, dict):
        raise _EncodeError("{0}: expected a dict, got {1!r}".format(path or "body", type(value).__name__))
    known = _field_names(struct)
    for key in value:
        if key not in known and key != UNKNOWN_TAGS:
            raise _EncodeError("{0}{1}: no such field".format(path + "." if path else "", key))
    tagged_items: list[tuple[int, bytes]] = []
    for f, mode in _plan(struct, version):
        if mode == _ABSENT:
            continue
        if mode == _RUN:
            layout, names, fields = f
            values = [value[fld.name] if fld.name in value else fld.default() for fld in fields]
            # plain ints that all fit: one pack; anything else (a bool, a
            # float, None, out of range) is written field by field, which
            # raises the error naming the field
            if all(type(v) is int for v in values):
                try:
                    w.raw(layout.pack(*values))
                    continue
                except _struct.error:
                    pass
            for fld, v in zip(fields, values):
                _encode_value(fld.type, fld, v, w, version, flexible, False,
                              path + "." + fld.name if path else fld.name)
            continue
        v = value.get(f.name, _MISSING)
        fpath = path + "." + f.name if path else f.name
        if mode == _REGULAR:
            if v is _MISSING:
                v = f.default()
            _encode_value(f.type, f, v, w, version, flexible, f.is_nullable(version), fpath)
        elif flexible and v is not _MISSING and v != f.default():
            sub = Writer()
            _encode_value(f.type, f, v, sub, version, True, f.is_nullable(version), fpath)
            tagged_items.append((f.tag, sub.getvalue()))
    if flexible:
        unknown = value.get(UNKNOWN_TAGS)
        if unknown:
            declared = {tag for tag, _ in tagged_items}
            for tag, raw in unknown.items():
                if tag in declared:
                    raise _EncodeError("{0}: unknown tag {1} collides with a declared one".format(path or "body", tag))
                tagged_items.append((tag, bytes(raw)))
        tagged_items.sort(key=lambda item: item[0])
        w.uvarint(len(tagged_items), "tagged field count")
        for tag, raw in tagged_items:
            w.uvarint(tag, "tag")
            w.uvarint(len(raw), "tagged field size")
            w.raw(raw)


_NAMES: dict[int, frozenset[str]] = {}


def _field_names(struct: Struct) -> frozenset[str]:
    names = _NAMES.get(id(struct))
    if names is None:
        names = frozenset(f.name for f in struct.fields)
        _NAMES[id(struct)] = names
    return names


def _encode_value(type_: str, f: Field, v: Any, w: Writer, version: int, flexible: bool, nullable: bool,
                  path: str) -> None:
    if v is None and type_ not in _INT_TYPES and type_ not in ("bool", "uuid"):
        if not nullable:
            raise _EncodeError("{0}: None, but not nullable in v{1}".format(path, version))
        if type_ == "struct":
            w.int8(-1)
        else:
            w.length(-1, flexible, type_ != "string", path)
        return
    if type_ in _INT_TYPES:
        if isinstance(v, bool) or not isinstance(v, (int, float) if type_ == "float64" else int):
            raise _EncodeError("{0}: expected {1}, got {2!r}".format(path, type_, v))
        getattr(w, type_)(v, path)
    elif type_ == "string":
        if not isinstance(v, str):
            raise _EncodeError("{0}: expected str, got {1!r}".format(path, v))
        raw = v.encode("utf-8")
        if not flexible and len(raw) > 0x7FFF:
            raise _EncodeError("{0}: {1} bytes exceed the int16 length of a string".format(path, len(raw)))
        w.length(len(raw), flexible, False, path)
        w.raw(raw)
    elif type_ in ("bytes", "records"):
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise _EncodeError("{0}: expected bytes, got {1!r}".format(path, type(v).__name__))
        raw = bytes(v)
        w.length(len(raw), flexible, True, path)
        w.raw(raw)
    elif type_ == "bool":
        w.bool(v, path)
    elif type_ == "uuid":
        w.uuid(v, path)
    elif type_ == "array":
        if not isinstance(v, (list, tuple)):
            raise _EncodeError("{0}: expected a list, got {1!r}".format(path, type(v).__name__))
        w.length(len(v), flexible, True, path)
        item = f.item
        if isinstance(item, str):
            for i, element in enumerate(v):
                if element is None:
                    raise _EncodeError("{0}[{1}]: array elements cannot be null".format(path, i))
                _encode_value(item, f, element, w, version, flexible, False, "{0}[{1}]".format(path, i))
        else:
            assert item is not None  # an array's item is a type name or a Struct
            for i, element in enumerate(v):
                _encode_struct(item, element, w, version, flexible, "{0}[{1}]".format(path, i))
    elif type_ == "struct":
        if nullable:
            w.int8(1)
        assert f.struct is not None
        _encode_struct(f.struct, v, w, version, flexible, path)
    else:
        raise AssertionError("undeclared type " + type_)


# --------------------------------------------------------------------------
# bodies and headers
# --------------------------------------------------------------------------
def _check_version(api: Api, version: object) -> None:
    if not isinstance(version, int) or not api.min_version <= version <= api.max_version:
        raise IllegalArgumentError(
            "{0} v{1!r} is not declared (fastkc speaks v{2}-v{3})".format(
                api.name, version, api.min_version, api.max_version
            )
        )


def encode_body(api_name: str | int, version: int, body: Message, *, response: bool = False) -> bytes:
    """Encode one request (or response) body, without any header."""
    api = get_api(api_name)
    _check_version(api, version)
    w = Writer()
    _encode_into(api, version, body, w, response)
    return w.getvalue()


def _encode_into(api: Api, version: int, body: Message, w: Writer, response: bool) -> None:
    struct = api.response if response else api.request
    encode_struct(struct, body, w, version, flexible=api.is_flexible(version),
                  name="{0} v{1} {2}".format(api.name, version, "response" if response else "request"))


def encode_struct(struct: Struct, value: Message, w: Writer, version: int, *, flexible: bool = False,
                  name: str = "struct") -> None:
    """Write one declared struct that is not a whole API message (also the
    consumer protocol's embedded Subscription / Assignment) into Writer `w`.
    Bad values raise IllegalArgumentError naming `name` and the field."""
    try:
        _encode_struct(struct, value, w, version, flexible, "")
    except (_EncodeError, ValueError) as exc:
        raise IllegalArgumentError("cannot encode {0}: {1}".format(name, exc)) from None


def decode_struct(struct: Struct, r: Reader, version: int, *, flexible: bool = False, api_name: str = "struct",
                  reported_version: int | None = None) -> Message:
    """Read one declared struct from Reader `r` (the counterpart of
    encode_struct). Malformed bytes raise ProtocolParseError naming
    `api_name`, `reported_version` (default `version`) and the byte position."""
    try:
        return _decode_struct(struct, r, version, flexible)
    except Malformed as exc:
        raise ProtocolParseError(exc.reason, api_name, version if reported_version is None else reported_version,
                                 exc.position) from None


def decode_body(api_name: str | int, version: int, data: bytes | bytearray | memoryview, *, response: bool = True,
                start: int = 0) -> Message:
    """Decode one body that fills data[start:] exactly."""
    api = get_api(api_name)
    _check_version(api, version)
    r = Reader(data, start)
    return _decode_whole(api, version, r, response)


def _decode_whole(api: Api, version: int, r: Reader, response: bool) -> Message:
    struct = api.response if response else api.request
    try:
        body = _decode_struct(struct, r, version, api.is_flexible(version))
        if r.pos != r.end:
            r.fail("{0} bytes left after the body".format(r.end - r.pos))
    except Malformed as exc:
        raise ProtocolParseError(
            exc.reason if response else "(request) " + exc.reason, api.name, version, exc.position
        ) from None
    return body


def request_header_version(api_name: str | int, version: int) -> int:
    """Request header v2 (with tagged fields) for flexible versions, else v1."""
    return 2 if get_api(api_name).is_flexible(version) else 1


def response_header_version(api_name: str | int, version: int) -> int:
    """Response header v1 (with tagged fields) for flexible versions, else v0.
    ApiVersions always answers with header v0, so a client can read the
    answer before it knows which versions the broker speaks."""
    api = get_api(api_name)
    if api.key == 18:
        return 0
    return 1 if api.is_flexible(version) else 0


def encode_request(api_name: str | int, version: int, body: Message, *, correlation_id: int,
                   client_id: str | None = "fastkc") -> bytes:
    """Request header + body (the size prefix is the connection's job)."""
    api = get_api(api_name)
    _check_version(api, version)
    w = Writer()
    try:
        w.int16(api.key, "request_api_key")
        w.int16(version, "request_api_version")
        w.int32(correlation_id, "correlation_id")
        # the client id stays a classic int16-length string even in header v2
        if client_id is None:
            w.int16(-1, "client_id length")
        else:
            raw = client_id.encode("utf-8")
            w.int16(len(raw), "client_id length")
            w.raw(raw)
    except ValueError as exc:
        raise IllegalArgumentError("cannot encode {0} request header: {1}".format(api.name, exc)) from None
    if api.is_flexible(version):
        w.uvarint(0, "header tagged field count")
    _encode_into(api, version, body, w, False)
    return w.getvalue()


def decode_request(data: bytes | bytearray | memoryview) -> tuple[dict[str, Any], Message]:
    """Parse a request (header + body); returns (header dict, body dict)."""
    r = Reader(data)
    try:
        api_key = r.int16("request_api_key")
        version = r.int16("request_api_version")
        correlation_id = r.int32("correlation_id")
        n = r.length(False, False, "client_id")
        client_id = None if n < 0 else r.string_of(n, "client_id")
    except Malformed as exc:
        raise ProtocolParseError("(request header) " + exc.reason, "", -1, exc.position) from None
    try:
        api = get_api(api_key)
    except KeyError:
        raise ProtocolParseError("request for undeclared api key {0}".format(api_key), "", version, 0) from None
    if not api.min_version <= version <= api.max_version:
        # bytes from the wire: a parse error, not a caller's mistake
        raise ProtocolParseError("request for undeclared version {0}".format(version), api.name, version, 2)
    header = {
        "api_key": api_key,
        "api_name": api.name,
        "api_version": version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    if api.is_flexible(version):
        try:
            _decode_tags({}, r, version, {})
        except Malformed as exc:
            raise ProtocolParseError("(request header) " + exc.reason, api.name, version, exc.position) from None
    return header, _decode_whole(api, version, r, False)


def encode_response(api_name: str | int, version: int, body: Message, *, correlation_id: int) -> bytes:
    """Response header + body, as a broker would send it after the size prefix."""
    api = get_api(api_name)
    _check_version(api, version)
    w = Writer()
    try:
        w.int32(correlation_id, "correlation_id")
    except ValueError as exc:
        raise IllegalArgumentError(str(exc)) from None
    if response_header_version(api_name, version) == 1:
        w.uvarint(0, "header tagged field count")
    _encode_into(api, version, body, w, True)
    return w.getvalue()


def decode_response_header(api_name: str | int, version: int,
                           data: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(correlation_id, offset of the body) of a response payload."""
    api = get_api(api_name)
    r = Reader(data)
    try:
        correlation_id = r.int32("correlation_id")
        if response_header_version(api_name, version) == 1:
            _decode_tags({}, r, version, {})
    except Malformed as exc:
        raise ProtocolParseError("(response header) " + exc.reason, api.name, version, exc.position) from None
    return correlation_id, r.pos


def decode_response(api_name: str | int, version: int,
                    data: bytes | bytearray | memoryview) -> tuple[int, Message]:
    """Parse a whole response payload (header included, size prefix not):
    returns (correlation_id, body dict)."""
    api = get_api(api_name)
    _check_version(api, version)
    correlation_id, start = decode_response_header(api_name, version, data)
    return correlation_id, _decode_whole(api, version, Reader(data, start), True)


# --------------------------------------------------------------------------
# the Fetch oracle: the codec's dict in the compiled parser's types
# --------------------------------------------------------------------------
def _pair_or_none(d: Message | None, first: str, second: str) -> tuple[int, int] | None:
    if d is None or (d[first] == -1 and d[second] == -1):
        return None
    return (d[first], d[second])


def to_fetch_response(correlation_id: int, body: Message, version: int) -> FetchResponse:
    """Map a decoded Fetch response onto fastkc.structs.FetchResponse, the
    type the compiled parser returns (records as bytes instead of a
    memoryview). Tagged structs that were not sent (equal to their default,
    which the encoder never sends) become None."""
    topics: list[FetchTopicResponse] = []
    for t in body["responses"]:
        partitions: list[FetchPartitionResponse] = []
        for p in t["partitions"]:
            aborted = p["aborted_transactions"]
            partitions.append(
                FetchPartitionResponse(
                    partition=p["partition_index"],
                    error_code=p["error_code"],
                    high_watermark=p["high_watermark"],
                    last_stable_offset=p["last_stable_offset"],
                    log_start_offset=p["log_start_offset"],
                    diverging_epoch=_pair_or_none(p["diverging_epoch"], "epoch", "end_offset"),
                    current_leader=_pair_or_none(p["current_leader"], "leader_id", "leader_epoch"),
                    snapshot_id=_pair_or_none(p["snapshot_id"], "end_offset", "epoch"),
                    aborted_transactions=None
                    if aborted is None
                    else [(a["producer_id"], a["first_offset"]) for a in aborted],
                    preferred_read_replica=p["preferred_read_replica"],
                    records=p["records"],
                )
            )
        topics.append(
            FetchTopicResponse(
                topic=t["topic"] if version < 13 else None,
                topic_id=t["topic_id"] if version >= 13 else None,
                partitions=partitions,
            )
        )
    return FetchResponse(
        correlation_id=correlation_id,
        throttle_time_ms=body["throttle_time_ms"],
        error_code=body["error_code"],
        session_id=body["session_id"],
        topics=topics,
        node_endpoints=[(n["node_id"], n["host"], n["port"], n["rack"]) for n in body["node_endpoints"]],
    )
