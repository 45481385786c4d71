"""SchemaRegistryClient: confluent-kafka's client, for the reading side.

Same configuration keys (fastkc/schema_registry/config.py), same method names
and return shapes where a consumer uses them (get_schema, get_schema_by_guid,
get_latest_version, get_version, lookup_schema, register_schema), plus what a
batch decoder needs: `resolve` (a schema with its references, recursively)
and `prefetch` (the schemas of the ids a batch names, fetching only the
unknown ones, so a batch waits only for ids it has not seen).

HTTP goes through httpx2 (the client confluent-kafka's schemaregistry extra
installs on Python >= 3.10, so it adds nothing to such an environment): one
pooled `httpx2.Client`, which is thread-safe, shared by every thread using
this client. Each call has one deadline (`timeout`); inside it every URL is
tried in turn, a round at a time, with exponential backoff and full jitter
between rounds (`retries.wait.ms` doubling up to `retries.max.wait.ms`, at
most `max.retries` rounds after the first) on connection failures and on the
statuses in RETRIABLE_STATUSES. Other answers are final at once.
"""
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2

from fastkc.schema_registry.cache import LruCache, SingleFlight
from fastkc.schema_registry.config import RETRIABLE_STATUSES, RegistryConfig, parse_config
from fastkc.schema_registry.errors import (
    MalformedSchemaResponseError,
    SchemaNotFoundError,
    SchemaRegistryError,
    SchemaRegistryUnauthorizedError,
    SchemaRegistryUnreachableError,
    SubjectNotFoundError,
    VersionNotFoundError,
)

# References nest (a schema imports one that imports another): a chain deeper
# than this, or more schemas than _MAX_REFERENCED in one closure, is refused as
# malformed rather than followed (a hostile or broken registry cannot make a
# decoder walk forever).
MAX_REFERENCE_DEPTH = 32
_MAX_REFERENCED = 1000

# Concurrent look-ups of one prefetch (only when it has two or more unknown ids).
_PREFETCH_THREADS = 4

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

_NOT_FOUND_CODES: dict[int, type[SchemaRegistryError]] = {
    40401: SubjectNotFoundError,
    40402: VersionNotFoundError,
    40403: SchemaNotFoundError,
}


@dataclass(frozen=True)
class SchemaReference:
    """A schema's import of another: `name` as the importer spells it, and the
    subject and version that hold the imported schema."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """A schema as the registry stores it (confluent-kafka's Schema shape)."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        # confluent-kafka's callers pass a list; a tuple keeps Schema hashable.
        object.__setattr__(self, "references", tuple(self.references))


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema under a subject (confluent-kafka's RegisteredSchema shape)."""

    schema_id: int | None
    guid: str | None
    schema: Schema
    subject: str | None
    version: int | None


@dataclass(frozen=True)
class ResolvedSchema:
    """A schema with every schema it references, transitively: `referenced`
    maps each reference name to its schema, dependencies before dependents
    (the order a parser must read them in)."""

    schema: Schema
    referenced: Mapping[str, Schema]


def _backoff_seconds(wait_ms: int, max_wait_ms: int, round_number: int) -> float:
    """Full jitter: uniform in [0, min(wait * 2**round, max)) (as confluent-kafka)."""
    return random.random() * min(wait_ms * (2.0 ** round_number), max_wait_ms) / 1000.0


def _schema_key(schema_id_or_guid: int | str) -> str:
    """How messages name a schema: 'schema id 42' or 'schema GUID ...'."""
    kind = "GUID" if isinstance(schema_id_or_guid, str) else "id"
    return "schema {0} {1}".format(kind, schema_id_or_guid)


class SchemaRegistryClient:
    """A Schema Registry client with confluent-kafka's configuration and
    method names; thread-safe (one instance per process is the intent)."""

    def __init__(self, conf: Mapping[str, Any], *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._conf = dict(conf)
        self._config: RegistryConfig = parse_config(conf)
        # sleep and clock are injectable so the retry tests need not wait.
        self._sleep = sleep
        self._clock = clock
        self._http = httpx2.Client(
            verify=self._config.ssl_context if self._config.ssl_context is not None else True,
            auth=self._config.auth,
            proxy=self._config.proxy,
            timeout=self._config.timeout,
        )
        # The URL that answered last is tried first next time.
        self._url_lock = threading.Lock()
        self._first_url = 0
        capacity = self._config.cache_capacity
        self._by_id: SingleFlight[tuple[int, str | None], Schema] = SingleFlight(LruCache(capacity))
        self._by_guid: SingleFlight[tuple[str, str | None], Schema] = SingleFlight(LruCache(capacity))
        self._versions: SingleFlight[tuple[str, int, bool, str | None], RegisteredSchema] = SingleFlight(
            LruCache(capacity))
        self._latest: SingleFlight[tuple[str, str | None], RegisteredSchema] = SingleFlight(
            LruCache(capacity, ttl=self._config.cache_latest_ttl_sec, clock=clock))
        self._resolved: SingleFlight[int | str, ResolvedSchema] = SingleFlight(LruCache(capacity))
        self._registered: SingleFlight[tuple[str, Schema, bool], int] = SingleFlight(LruCache(capacity))

    # --- confluent-kafka's surface -------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as given."""
        return dict(self._conf)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "SchemaRegistryClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None) -> Schema:
        """The schema with this id (GET /schemas/ids/{id}); its references are
        named, not resolved (see `resolve`). Cached."""
        if isinstance(schema_id, bool) or not isinstance(schema_id, int):
            raise TypeError("schema_id must be an int, not {0}".format(type(schema_id).__name__))
        query = {k: v for k, v in (("subject", subject_name), ("format", fmt)) if v is not None}
        return self._by_id.get_or_load((schema_id, fmt), lambda: self._schema_at(
            "/schemas/ids/{0}".format(schema_id), query, _schema_key(schema_id)))

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Schema:
        """The schema with this GUID (GET /schemas/guids/{guid}): the header form's look-up. Cached."""
        text = str(uuid.UUID(str(guid)))
        query = {"format": fmt} if fmt is not None else None
        return self._by_guid.get_or_load((text, fmt), lambda: self._schema_at(
            "/schemas/guids/{0}".format(text), query, _schema_key(text)))

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        """The subject's newest version; cached for `cache.latest.ttl.sec`
        (until clear_latest_caches() when unset, as confluent-kafka does)."""
        what = "subject {0!r} latest version".format(subject_name)
        query = {"format": fmt} if fmt is not None else None
        return self._latest.get_or_load(
            (subject_name, fmt),
            lambda: self._parse_registered(
                self._get("/subjects/{0}/versions/latest".format(quote(subject_name, safe="")), query, what),
                what, subject_name))

    def get_version(self, subject_name: str, version: int | str, deleted: bool = False,
                    fmt: str | None = None) -> RegisteredSchema:
        """One version of a subject (GET /subjects/{s}/versions/{v}); "latest" or -1 → get_latest_version."""
        if version in ("latest", -1):
            return self.get_latest_version(subject_name, fmt)
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError("version must be an int or 'latest', not {0!r}".format(version))
        number = version
        what = "subject {0!r} version {1}".format(subject_name, number)
        query: dict[str, Any] = {"deleted": "true"} if deleted else {}
        if fmt is not None:
            query["format"] = fmt
        return self._versions.get_or_load(
            (subject_name, number, deleted, fmt),
            lambda: self._parse_registered(
                self._get("/subjects/{0}/versions/{1}".format(quote(subject_name, safe=""), number), query, what),
                what, subject_name))

    def lookup_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False,
                      deleted: bool = False) -> RegisteredSchema:
        """The registered version of `schema` under the subject (POST /subjects/{s})."""
        what = "subject {0!r} schema look-up".format(subject_name)
        answer = self._request("POST", "/subjects/{0}".format(quote(subject_name, safe="")),
                               {"normalize": _flag(normalize_schemas), "deleted": _flag(deleted)},
                               _schema_body(schema), what)
        return self._parse_registered(answer, what, subject_name, default_schema=schema)

    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        """Register `schema` under the subject (POST /subjects/{s}/versions); its id. Cached."""
        what = "subject {0!r} registration".format(subject_name)

        def register() -> int:
            answer = self._request("POST", "/subjects/{0}/versions".format(quote(subject_name, safe="")),
                                   {"normalize": _flag(normalize_schemas)}, _schema_body(schema), what)
            schema_id = answer.get("id") if isinstance(answer, dict) else None
            if isinstance(schema_id, bool) or not isinstance(schema_id, int):
                raise self._malformed(what, "no integer 'id' in {0!r}".format(answer))
            return schema_id

        return self._registered.get_or_load((subject_name, schema, normalize_schemas), register)

    def clear_latest_caches(self) -> None:
        self._latest.cache.clear()

    def clear_caches(self) -> None:
        for flight in (self._by_id, self._by_guid, self._versions, self._latest, self._resolved,
                       self._registered):
            flight.cache.clear()

    # --- for batch decoders --------------------------------------------------------------------

    def resolve(self, schema_id_or_guid: int | str) -> ResolvedSchema:
        """The schema with this id (int) or GUID (str) and everything it
        references, transitively (GET /subjects/{s}/versions/{v} per reference,
        each cached). Cycles, chains deeper than MAX_REFERENCE_DEPTH and more
        than 1000 referenced schemas are MalformedSchemaResponseError."""
        return self._resolved.get_or_load(schema_id_or_guid, lambda: self._resolve(schema_id_or_guid))

    def prefetch(self, ids: Iterable[int | str]) -> dict[int | str, ResolvedSchema]:
        """Resolve every id (int) or GUID (str) a batch names, fetching only
        those not cached yet, several at once; returns them all. The first
        failure is raised."""
        wanted = set(ids)
        unknown = [key for key in wanted if not self.is_cached(key)]
        if len(unknown) > 1:
            # A batch that crosses a schema change names a few new ids at
            # once: their round trips overlap instead of adding up.
            with ThreadPoolExecutor(max_workers=min(len(unknown), _PREFETCH_THREADS),
                                    thread_name_prefix="fastkc-schema-prefetch") as pool:
                for _ in pool.map(self.resolve, unknown):
                    pass
        return {key: self.resolve(key) for key in wanted}

    def is_cached(self, schema_id_or_guid: int | str) -> bool:
        """Whether `resolve` would answer without asking the registry."""
        return schema_id_or_guid in self._resolved.cache

    # --- internals ----------------------------------------------------------------------------

    def _resolve(self, key: int | str) -> ResolvedSchema:
        root = self.get_schema_by_guid(key) if isinstance(key, str) else self.get_schema(key)
        what = _schema_key(key)
        referenced: dict[str, Schema] = {}
        # (reference, depth, children done?) — an explicit stack: post-order,
        # so a dependency lands in `referenced` before what imports it.
        path: list[str] = []
        stack: list[tuple[SchemaReference, int, bool]] = [(r, 1, False) for r in reversed(root.references)]
        while stack:
            ref, depth, expanded = stack.pop()
            if expanded:
                path.pop()
                referenced.setdefault(ref.name, self._referenced_schema(ref, what))
                continue
            if ref.name in referenced:
                continue
            if ref.name in path:
                raise self._malformed(what, "reference cycle through {0!r}".format(ref.name))
            if depth > MAX_REFERENCE_DEPTH:
                raise self._malformed(what, "references nest deeper than {0}".format(MAX_REFERENCE_DEPTH))
            if len(referenced) + len(path) >= _MAX_REFERENCED:
                raise self._malformed(what, "more than {0} referenced schemas".format(_MAX_REFERENCED))
            path.append(ref.name)
            stack.append((ref, depth, True))
            child = self._referenced_schema(ref, what)
            stack.extend((r, depth + 1, False) for r in reversed(child.references))
        return ResolvedSchema(root, referenced)

    def _referenced_schema(self, ref: SchemaReference, what: str) -> Schema:
        try:
            return self.get_version(ref.subject, ref.version).schema
        except (SubjectNotFoundError, VersionNotFoundError) as exc:
            raise type(exc)("{0}, referenced as {1!r} by {2}".format(exc.error_message, ref.name, what),
                            exc.url, exc.http_status_code, exc.error_code) from exc

    def _get(self, path: str, query: Mapping[str, Any] | None, what: str) -> Any:
        return self._request("GET", path, query, None, what)

    def _schema_at(self, path: str, query: Mapping[str, Any] | None, what: str) -> Schema:
        return self._parse_schema(self._get(path, query, what), what)

    def _headers(self, body: bytes | None) -> dict[str, str]:
        headers = {"Accept": _ACCEPT}
        if body is not None:
            headers["Content-Type"] = _CONTENT_TYPE
        if self._config.bearer is not None:
            fields = self._config.bearer()
            token = fields.get("bearer.auth.token")
            if not token:
                raise SchemaRegistryUnauthorizedError("the bearer credentials provider gave no bearer.auth.token")
            headers["Authorization"] = "Bearer {0}".format(token)
            if fields.get("bearer.auth.logical.cluster"):
                headers["target-sr-cluster"] = fields["bearer.auth.logical.cluster"]
            if fields.get("bearer.auth.identity.pool.id"):
                headers["Confluent-Identity-Pool-Id"] = fields["bearer.auth.identity.pool.id"]
        return headers

    def _request(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, what: str) -> Any:
        content = json.dumps(body).encode("utf-8") if body is not None else None
        headers = self._headers(content)
        config = self._config
        deadline = self._clock() + config.timeout
        with self._url_lock:
            first = self._first_url
        order = [(first + i) % len(config.urls) for i in range(len(config.urls))]
        failures: list[str] = []
        for round_number in range(config.max_retries + 1):
            for index in order:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                url = config.urls[index] + path
                try:
                    response = self._http.request(method, url, params=query, content=content, headers=headers,
                                                  timeout=min(remaining, config.timeout))
                except httpx2.TransportError as exc:
                    failures.append("{0}: {1}".format(url, type(exc).__name__ + (": {0}".format(exc) if str(exc)
                                                                                  else "")))
                    continue
                if response.status_code in RETRIABLE_STATUSES:
                    failures.append("{0}: HTTP {1}".format(url, response.status_code))
                    continue
                with self._url_lock:
                    self._first_url = index
                return self._answer(response, url, what)
            remaining = deadline - self._clock()
            if remaining <= 0 or round_number == config.max_retries:
                break
            self._sleep(min(remaining, _backoff_seconds(config.retries_wait_ms, config.retries_max_wait_ms,
                                                        round_number)))
        raise SchemaRegistryUnreachableError(
            "{0}: no registry answered in {1} attempt(s) within {2:g} s; last: {3}".format(
                what, len(failures), config.timeout, failures[-1] if failures else "deadline passed first"),
            ", ".join(config.urls))

    def _answer(self, response: "httpx2.Response", url: str, what: str) -> Any:
        status = response.status_code
        try:
            payload = response.json() if response.content else None
        except ValueError:
            payload = None
            if 200 <= status < 300:
                raise self._malformed(what, "the answer is not JSON: {0!r}".format(response.content[:200]),
                                      url, status) from None
        if 200 <= status < 300:
            return payload
        code = payload.get("error_code", -1) if isinstance(payload, dict) else -1
        message = payload.get("message") if isinstance(payload, dict) else None
        detail = "{0}: {1}".format(what, message or response.text[:200] or "HTTP {0}".format(status))
        code = code if isinstance(code, int) and not isinstance(code, bool) else -1
        if status in (401, 403):
            raise SchemaRegistryUnauthorizedError(detail, url, status, code)
        error_class = _NOT_FOUND_CODES.get(code, SchemaRegistryError)
        raise error_class(detail, url, status, code)

    def _malformed(self, what: str, reason: str, url: str = "", status: int = -1) -> MalformedSchemaResponseError:
        return MalformedSchemaResponseError("{0}: malformed registry answer: {1}".format(what, reason),
                                            url or ", ".join(self._config.urls), status)

    def _parse_schema(self, answer: Any, what: str, default: Schema | None = None) -> Schema:
        if not isinstance(answer, dict):
            raise self._malformed(what, "expected a JSON object, got {0!r}".format(answer)[:300])
        schema_str = answer.get("schema")
        if schema_str is None and default is not None:
            return default
        if not isinstance(schema_str, str):
            raise self._malformed(what, "'schema' is not a string")
        schema_type = answer.get("schemaType", "AVRO")
        if not isinstance(schema_type, str):
            raise self._malformed(what, "'schemaType' is not a string")
        raw_refs = answer.get("references") or []
        if not isinstance(raw_refs, list):
            raise self._malformed(what, "'references' is not a list")
        refs = []
        for raw in raw_refs:
            if not (isinstance(raw, dict) and isinstance(raw.get("name"), str)
                    and isinstance(raw.get("subject"), str) and isinstance(raw.get("version"), int)
                    and not isinstance(raw.get("version"), bool)):
                raise self._malformed(what, "a reference is not {{name, subject, version}}: {0!r}".format(raw))
            refs.append(SchemaReference(raw["name"], raw["subject"], raw["version"]))
        return Schema(schema_str, schema_type.upper(), tuple(refs))

    def _parse_registered(self, answer: Any, what: str, subject: str,
                          default_schema: Schema | None = None) -> RegisteredSchema:
        schema = self._parse_schema(answer, what, default_schema)
        assert isinstance(answer, dict)  # _parse_schema checked it
        schema_id = answer.get("id")
        version = answer.get("version")
        guid = answer.get("guid")
        for name, value in (("id", schema_id), ("version", version)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise self._malformed(what, "{0!r} is not an integer".format(name))
        if guid is not None and not isinstance(guid, str):
            raise self._malformed(what, "'guid' is not a string")
        answered_subject = answer.get("subject", subject)
        return RegisteredSchema(schema_id, guid, schema, answered_subject if isinstance(answered_subject, str)
                                else subject, version)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _schema_body(schema: Schema) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": schema.schema_str}
    if schema.schema_type != "AVRO":
        body["schemaType"] = schema.schema_type
    if schema.references:
        body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                               for r in schema.references]
    return body
