"""Kafka's published message specs (common/message/*.json in the
kafka-clients jar from Maven Central, resolved with mvn into
~/.cache/fastkc/specs/ once) and the field-by-field comparison of fastkc's
declarations with them: for tests/unit/test_protocol_specs.py, the consumer
protocol's test, and the assignors' test against Java (which runs the jar)."""
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile

import pytest

from fastkc.protocol.schema import INF, in_range, parse_versions
from fastkc.protocol.types import PRIMITIVES, ZERO_UUID

NEWEST = "4.3.1"
OLDEST_LINE = "3.9.2"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "fastkc", "specs")


def resolve_jar(group, artifact, version):
    """<artifact>-<version>.jar from Maven Central via mvn, cached in CACHE
    (resolved once: later runs, and other pytest workers, reuse it)."""
    jar = os.path.join(CACHE, "{0}-{1}.jar".format(artifact, version))
    if os.path.exists(jar):
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("mvn is not installed: cannot resolve {0}:{1} (apt-get install maven)".format(group, artifact))
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        # pytest workers may race; the first resolves, the others reuse
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(jar):
            return jar
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            proc = subprocess.run(
                [mvn, "-q", "-B", "dependency:copy", "-Dartifact={0}:{1}:{2}".format(group, artifact, version),
                 "-DoutputDirectory=" + tmp],
                capture_output=True, text=True, timeout=600,
            )
            got = os.path.join(tmp, os.path.basename(jar))
            assert proc.returncode == 0 and os.path.exists(got), (
                "mvn could not resolve {0}:{1}:{2}:\n{3}{4}".format(
                    group, artifact, version, proc.stdout[-2000:], proc.stderr[-2000:])
            )
            os.replace(got, jar)
    return jar


def resolve_clients_jar(version):
    """kafka-clients-<version>.jar, which carries the message specs."""
    return resolve_jar("org.apache.kafka", "kafka-clients", version)


_COMMENT = re.compile(r"^\s*//.*$", re.M)


def load_specs(version):
    specs = {}
    with zipfile.ZipFile(resolve_clients_jar(version)) as jar:
        for name in jar.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = jar.read(name).decode("utf-8")
                spec = json.loads(_COMMENT.sub("", text))
                specs[spec["name"]] = spec
    assert len(specs) > 100, "the jar no longer carries common/message/*.json"
    return specs


def snake(name):
    """Kafka's CamelCase field names in snake_case (TopicId -> topic_id)."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def _spec_fields(field, spec):
    """The child fields of a struct-typed spec field (inline or a common struct)."""
    if "fields" in field:
        return field["fields"]
    type_name = field["type"][2:] if field["type"].startswith("[]") else field["type"]
    for common in spec.get("commonStructs", []):
        if common["name"] == type_name:
            return common["fields"]
    raise AssertionError("struct type {0} has no fields in {1}".format(type_name, spec["name"]))


def _spec_kind(field):
    """("prim", name) | ("array", prim) | ("array", None) for structs | ("struct", None)."""
    t = field["type"]
    if t.startswith("[]"):
        return ("array", t[2:] if t[2:] in PRIMITIVES else None)
    if t in PRIMITIVES:
        return ("prim", t)
    return ("struct", None)


def _mine_kind(field):
    if field.type == "array":
        return ("array", field.item if isinstance(field.item, str) else None)
    if field.type == "struct":
        return ("struct", None)
    return ("prim", field.type)


def _spec_default(field, kind, versions):
    """The value Kafka's generated code gives the field when not set."""
    d = field.get("default")
    if d == "null":
        return None
    if kind[0] != "prim":
        return "<struct/array>"
    t = kind[1]
    if not isinstance(d, str) and d is not None:
        return d  # some specs write numbers and booleans unquoted
    if d is None:
        return {"bool": False, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID, "float64": 0.0}.get(t, 0)
    if t == "bool":
        return {"true": True, "false": False}[d]
    if t == "string":
        return d
    return int(d, 0)


def _mine_default(field, kind):
    value = field.default()
    if value is None:
        return None
    if kind[0] != "prim":
        return "<struct/array>"
    return value


def compare_exact(spec_fields, struct, spec, path, problems):
    mine = struct.fields
    spec_names = [snake(f["name"]) for f in spec_fields]
    my_names = [f.name for f in mine]
    if spec_names != my_names:
        problems.append("{0}: fields {1} != spec {2}".format(path or "<top>", my_names, spec_names))
        return
    for sf, mf in zip(spec_fields, mine):
        where = "{0}.{1}".format(path, mf.name) if path else mf.name
        kind = _spec_kind(sf)
        if kind != _mine_kind(mf):
            problems.append("{0}: type {1} != spec {2}".format(where, _mine_kind(mf), sf["type"]))
            continue
        versions = parse_versions(sf["versions"])
        if versions != mf.versions:
            problems.append("{0}: versions {1} != spec {2}".format(where, mf.versions, sf["versions"]))
        nullable = parse_versions(sf["nullableVersions"]) if "nullableVersions" in sf else None
        if nullable != mf.nullable:
            problems.append("{0}: nullable {1} != spec {2}".format(where, mf.nullable, sf.get("nullableVersions")))
        if sf.get("tag") != mf.tag:
            problems.append("{0}: tag {1} != spec {2}".format(where, mf.tag, sf.get("tag")))
        if "taggedVersions" in sf and parse_versions(sf["taggedVersions"]) != versions:
            problems.append("{0}: taggedVersions differ from versions; the compact form cannot say so".format(where))
        if "flexibleVersions" in sf:
            problems.append("{0}: a field-level flexibleVersions override is not supported".format(where))
        sd, md = _spec_default(sf, kind, versions), _mine_default(mf, kind)
        if sd != md:
            problems.append("{0}: default {1!r} != spec {2!r}".format(where, md, sf.get("default")))
        if kind[0] == "struct" or kind == ("array", None):
            child = mf.struct if kind[0] == "struct" else mf.item
            compare_exact(_spec_fields(sf, spec), child, spec, where, problems)


def spec_layout(fields, spec, version):
    out = []
    for f in fields:
        if not in_range(version, parse_versions(f["versions"])):
            continue
        kind = _spec_kind(f)
        nullable = "nullableVersions" in f and in_range(version, parse_versions(f["nullableVersions"]))
        children = None
        if kind[0] == "struct" or kind == ("array", None):
            children = spec_layout(_spec_fields(f, spec), spec, version)
        out.append((snake(f["name"]), kind, nullable, f.get("tag"), children))
    return out


def mine_layout(struct, version):
    out = []
    for f in struct.fields:
        if not in_range(version, f.versions):
            continue
        kind = _mine_kind(f)
        children = None
        if f.type == "struct":
            children = mine_layout(f.struct, version)
        elif f.type == "array" and not isinstance(f.item, str):
            children = mine_layout(f.item, version)
        out.append((f.name, kind, f.is_nullable(version), f.tag, children))
    return out


def versions_text(rng):
    lo, hi = rng
    if lo > hi:
        return "none"
    return "{0}+".format(lo) if hi == INF else "{0}-{1}".format(lo, hi)


