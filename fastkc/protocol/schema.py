"""The project's compact form for Kafka message layouts, and its parser.

A message body is written as indented text, one field per line:

    name  type  versions  [null=VERSIONS] [tag=N] [default=VALUE]

- name: snake_case of Kafka's field name (the spec test checks the mapping).
- type: a primitive (bool int8 int16 uint16 int32 uint32 int64 float64 uuid
  string bytes records), `[prim]` for an array of primitives, `[]` for an
  array of structs and `{}` for a single struct; a struct's fields follow on
  the next lines, indented two more spaces.
- versions: `N+`, `A-B`, `N` or `none`, Kafka's notation. Versions are
  absolute API versions at every nesting level.
- null=VERSIONS: the versions in which the field may be null.
- tag=N: a tagged field (flexible versions only) with tag N, present in the
  same versions as the field.
- default=VALUE: `null`, `true`, `false`, an integer (decimal or 0x...),
  or `''`. Without one, the type's zero: 0, false, "", b"", [], the zero
  uuid, None for records, and a struct of its fields' defaults.

A field absent from a version still appears in decoded messages, with its
default, so consumer code never branches on where a field sits in a version.
"""
import re
from typing import Any

from fastkc.protocol.types import PRIMITIVES, ZERO_UUID

#: an inclusive (lo, hi) version range; (1, 0) is empty
Versions = tuple[int, int]
#: a decoded message: every declared field by name (values as the codec makes them)
Message = dict[str, Any]

INF = 1 << 15  # above any API version (int16)


def parse_versions(text: str) -> Versions:
    """Kafka's version-range notation -> (lo, hi) inclusive; `none` is empty."""
    text = text.strip()
    if text == "none":
        return (1, 0)
    m = re.fullmatch(r"(\d+)\+", text)
    if m:
        return (int(m.group(1)), INF)
    m = re.fullmatch(r"(\d+)-(\d+)", text)
    if m:
        return (int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r"\d+", text)
    if m:
        return (int(text), int(text))
    raise ValueError("bad version range {0!r}".format(text))


def in_range(version: int, rng: Versions | None) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


_NO_DEFAULT = object()


class Field:
    """One declared field. `type` is a primitive name, "array" or "struct";
    `item` is the element type of an array (a primitive name or a Struct),
    `struct` the Struct of a struct field."""

    __slots__ = ("name", "type", "item", "struct", "versions", "nullable", "tag", "_default")

    def __init__(self, name: str, type_: str, versions: Versions, nullable: Versions | None = None,
                 tag: int | None = None, default: object = _NO_DEFAULT, item: "str | Struct | None" = None,
                 struct: "Struct | None" = None) -> None:
        self.name = name
        self.type = type_
        self.item = item
        self.struct = struct
        self.versions = versions
        self.nullable = nullable
        self.tag = tag
        self._default = default

    def __repr__(self) -> str:
        return "Field({0!r}, {1!r})".format(self.name, self.type if self.type != "array" else "[]")

    def is_nullable(self, version: int) -> bool:
        return in_range(version, self.nullable)

    @property
    def declared_default(self) -> object:
        """The explicit default, or _NO_DEFAULT (used by the spec test)."""
        return self._default

    def default(self) -> Any:
        """A fresh default value (lists and dicts are never shared)."""
        if self._default is not _NO_DEFAULT:
            if self._default is None:
                return None
            if self.struct is not None:
                return self.struct.defaults()
            return self._default
        t = self.type
        if t == "array":
            return []
        if self.struct is not None:
            return self.struct.defaults()
        if t == "bool":
            return False
        if t in ("string",):
            return ""
        if t == "bytes":
            return b""
        if t == "records":
            return None
        if t == "uuid":
            return ZERO_UUID
        if t == "float64":
            return 0.0
        return 0


class Struct:
    """An ordered list of fields plus a per-version plan cache."""

    __slots__ = ("fields", "_plans")

    def __init__(self, fields: list[Field]) -> None:
        self.fields = fields
        self._plans: dict[int, Plan] = {}

    def defaults(self) -> Message:
        return {f.name: f.default() for f in self.fields}

    def plan(self, version: int) -> "Plan":
        """(regular fields in wire order, {tag: field} for tagged fields,
        fields absent from this version) for `version`, cached."""
        plan = self._plans.get(version)
        if plan is None:
            regular: list[Field] = []
            tagged: dict[int, Field] = {}
            absent: list[Field] = []
            for f in self.fields:
                if not in_range(version, f.versions):
                    absent.append(f)
                elif f.tag is not None:
                    tagged[f.tag] = f
                else:
                    regular.append(f)
            plan = (tuple(regular), tagged, tuple(absent))
            self._plans[version] = plan
        return plan


# (regular fields in wire order, {tag: field}, fields absent from the version)
Plan = tuple[tuple[Field, ...], dict[int, Field], tuple[Field, ...]]


class Api:
    """One Kafka API: key, the versions we speak, the first flexible version,
    and the request/response body layouts."""

    __slots__ = ("name", "key", "versions", "flexible", "request", "response")

    def __init__(self, name: str, key: int, versions: Versions, flexible: Versions, request: Struct,
                 response: Struct) -> None:
        self.name = name
        self.key = key
        self.versions = versions
        self.flexible = flexible
        self.request = request
        self.response = response

    @property
    def min_version(self) -> int:
        return self.versions[0]

    @property
    def max_version(self) -> int:
        return self.versions[1]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, self.flexible)

    def __repr__(self) -> str:
        return "Api({0!r}, key={1})".format(self.name, self.key)


def _parse_default(text: str) -> object:
    if text == "null":
        return None
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "''":
        return ""
    return int(text, 0)


def parse_struct(text: str) -> Struct:
    """Parse the indented field list of one message body into a Struct."""
    lines: list[tuple[int, list[str]]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if line.strip():
            indent = len(line) - len(line.lstrip(" "))
            lines.append((indent, line.split()))
    pos, struct = _parse_level(lines, 0, lines[0][0] if lines else 0)
    if pos != len(lines):
        raise ValueError("bad indentation near {0!r}".format(lines[pos][1]))
    return struct


def _parse_level(lines: list[tuple[int, list[str]]], pos: int, indent: int) -> tuple[int, Struct]:
    fields: list[Field] = []
    while pos < len(lines) and lines[pos][0] == indent:
        words = lines[pos][1]
        if len(words) < 3:
            raise ValueError("field line needs name, type and versions: {0!r}".format(words))
        name, type_, versions = words[0], words[1], parse_versions(words[2])
        opts: dict[str, str] = {}
        for word in words[3:]:
            key, sep, value = word.partition("=")
            if not sep or key not in ("null", "tag", "default"):
                raise ValueError("unknown field option {0!r} on {1}".format(word, name))
            opts[key] = value
        nullable = parse_versions(opts["null"]) if "null" in opts else None
        tag = int(opts["tag"]) if "tag" in opts else None
        default = _parse_default(opts["default"]) if "default" in opts else _NO_DEFAULT
        pos += 1
        if type_ in ("[]", "{}"):
            if pos >= len(lines) or lines[pos][0] <= indent:
                raise ValueError("struct field {0} has no fields".format(name))
            pos, child = _parse_level(lines, pos, lines[pos][0])
            if type_ == "[]":
                field = Field(name, "array", versions, nullable, tag, default, item=child)
            else:
                field = Field(name, "struct", versions, nullable, tag, default, struct=child)
        elif type_.startswith("[") and type_.endswith("]") and type_[1:-1] in PRIMITIVES:
            field = Field(name, "array", versions, nullable, tag, default, item=type_[1:-1])
        elif type_ in PRIMITIVES:
            field = Field(name, type_, versions, nullable, tag, default)
        else:
            raise ValueError("unknown type {0!r} for {1}".format(type_, name))
        fields.append(field)
    if pos < len(lines) and lines[pos][0] > indent:
        raise ValueError("unexpected indentation at {0!r}".format(lines[pos][1]))
    return pos, Struct(fields)


def declare(name: str, key: int, versions: str, flexible: str, request: str, response: str) -> Api:
    return Api(
        name,
        key,
        parse_versions(versions),
        parse_versions(flexible),
        parse_struct(request),
        parse_struct(response),
    )
