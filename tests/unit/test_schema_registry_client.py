"""SchemaRegistryClient's error paths, retries, deadline and caches.

A small hand-written HTTP server stands in for a registry that fails: 5xx,
401/403, a hang, answers that are not the API's JSON, a registry that goes
away, hostile references. What a real registry answers is tested against one
in tests/integration/test_schema_registry_real.py.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fastkc.schema_registry import (
    MalformedSchemaResponseError,
    SchemaNotFoundError,
    SchemaRegistryClient,
    SchemaRegistryUnauthorizedError,
    SchemaRegistryUnreachableError,
    VersionNotFoundError,
)
from fastkc.schema_registry import client as client_module
from fastkc.schema_registry.cache import LruCache, SingleFlight

pytest.importorskip("httpx2")

AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


class FakeRegistry:
    """Answers from a script: path -> list of (status, body, delay seconds);
    the last answer of a list repeats. Unknown paths get 404 / 40403."""

    def __init__(self):
        self.script = {}
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake._answer(self)

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:{0}".format(self.server.server_address[1])

    def _answer(self, handler):
        path = handler.path.split("?")[0]
        with self.lock:
            self.requests.append((handler.command, path, dict(handler.headers)))
            answers = self.script.get(path)
            if answers:
                status, body, delay = answers[0] if len(answers) == 1 else answers.pop(0)
            else:
                status, body, delay = 404, {"error_code": 40403, "message": "not found"}, 0
        if delay:
            time.sleep(delay)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
        except OSError:
            pass  # the client gave up first (timeout tests)

    def on(self, path, *answers):
        self.script[path] = [a if len(a) == 3 else (a[0], a[1], 0) for a in answers]

    def count(self, path):
        with self.lock:
            return sum(1 for _, p, _ in self.requests if p == path)

    def close(self):
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()
            self.thread.join()


@pytest.fixture
def fake():
    registry = FakeRegistry()
    yield registry
    registry.close()


def _client(url, **conf):
    settings = {"url": url, "retries.wait.ms": 1, "retries.max.wait.ms": 5}
    settings.update(conf)
    return SchemaRegistryClient(settings)


def _dead_url():
    # a port nobody listens on: bound, then closed
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    return "http://127.0.0.1:{0}".format(port)


def test_a_5xx_is_retried_until_it_answers(fake):
    fake.on("/schemas/ids/1", (500, {"error_code": 50001}), (503, {}), (200, {"schema": AVRO}))
    with _client(fake.url) as client:
        assert client.get_schema(1).schema_str == AVRO
    assert fake.count("/schemas/ids/1") == 3


def test_a_registry_that_keeps_failing_is_unreachable_naming_url_and_id(fake):
    fake.on("/schemas/ids/7", (503, {"message": "busy"}))
    with _client(fake.url, **{"max.retries": 2}) as client:
        with pytest.raises(SchemaRegistryUnreachableError) as info:
            client.get_schema(7)
    assert fake.count("/schemas/ids/7") == 3  # the first try and max.retries more
    assert "schema id 7" in str(info.value) and fake.url in str(info.value) and "HTTP 503" in str(info.value)
    assert info.value.retriable


@pytest.mark.parametrize("status", [401, 403])
def test_unauthorized_is_final_at_once(fake, status):
    fake.on("/schemas/ids/3", (status, {"error_code": 40101, "message": "bad credentials"}))
    with _client(fake.url) as client:
        with pytest.raises(SchemaRegistryUnauthorizedError) as info:
            client.get_schema(3)
    assert fake.count("/schemas/ids/3") == 1
    error = info.value
    assert (error.http_status_code, error.error_code) == (status, 40101)
    assert "schema id 3" in str(error) and fake.url + "/schemas/ids/3" == error.url


def test_credentials_are_sent(fake):
    fake.on("/schemas/ids/1", (200, {"schema": AVRO}))
    with _client(fake.url, **{"basic.auth.user.info": "alice:secret"}) as client:
        client.get_schema(1)
    with _client(fake.url, **{"bearer.auth.credentials.source": "STATIC_TOKEN", "bearer.auth.token": "tok",
                              "bearer.auth.logical.cluster": "lsrc-9"}) as client:
        client.get_schema(1)
    basic, bearer = [headers for _, _, headers in fake.requests]
    assert basic["Authorization"] == "Basic YWxpY2U6c2VjcmV0"
    assert bearer["Authorization"] == "Bearer tok" and bearer["target-sr-cluster"] == "lsrc-9"


@pytest.mark.parametrize("body, why", [
    (b"<html>proxy error</html>", "not JSON"),
    ([1, 2], "JSON object"),
    ({"schema": 5}, "'schema' is not a string"),
    ({"schema": AVRO, "schemaType": 1}, "schemaType"),
    ({"schema": AVRO, "references": {"a": 1}}, "'references' is not a list"),
    ({"schema": AVRO, "references": [{"name": "a", "subject": "s"}]}, "reference"),
])
def test_malformed_answers_are_typed(fake, body, why):
    fake.on("/schemas/ids/4", (200, body))
    with _client(fake.url) as client:
        with pytest.raises(MalformedSchemaResponseError) as info:
            client.get_schema(4)
    assert why in str(info.value) and "schema id 4" in str(info.value)


def test_error_codes_map_to_types(fake):
    fake.on("/subjects/s/versions/9", (404, {"error_code": 40402, "message": "no version 9"}))
    with _client(fake.url) as client:
        with pytest.raises(SchemaNotFoundError) as info:
            client.get_schema(12345)
        assert info.value.error_code == 40403 and "12345" in str(info.value)
        with pytest.raises(VersionNotFoundError, match="subject 's' version 9"):
            client.get_version("s", 9)


def test_a_hanging_registry_costs_the_deadline_not_more(fake):
    fake.on("/schemas/ids/5", (200, {"schema": AVRO}, 3.0))
    with _client(fake.url, timeout=0.5) as client:
        began = time.monotonic()
        with pytest.raises(SchemaRegistryUnreachableError, match="within 0.5 s"):
            client.get_schema(5)
        assert time.monotonic() - began < 1.5


def test_a_registry_that_goes_away(fake):
    fake.on("/schemas/ids/1", (200, {"schema": AVRO}))
    fake.on("/schemas/ids/2", (200, {"schema": AVRO}))
    fake.on("/schemas/ids/3", (200, {"schema": AVRO}))
    with _client(fake.url, timeout=1.0, **{"cache.capacity": 2, "max.retries": 10}) as client:
        for schema_id in (1, 2, 3):
            client.get_schema(schema_id)
        fake.close()
        # cached schemas are still served; id 1 was evicted (capacity 2)
        assert client.get_schema(3).schema_str == client.get_schema(2).schema_str == AVRO
        began = time.monotonic()
        with pytest.raises(SchemaRegistryUnreachableError) as info:
            client.get_schema(1)
        assert time.monotonic() - began < 2.5
    assert "ConnectError" in str(info.value) and "schema id 1" in str(info.value)


def test_each_url_is_tried_in_turn_and_the_one_that_answered_is_kept(fake):
    fake.on("/schemas/ids/1", (200, {"schema": AVRO}))
    fake.on("/schemas/ids/2", (200, {"schema": AVRO}))
    dead = _dead_url()
    with _client("{0},{1}".format(dead, fake.url), **{"max.retries": 0}) as client:
        assert client.get_schema(1).schema_str == AVRO
        assert client.get_schema(2).schema_str == AVRO
        # the second call went to the URL that answered, not to the dead one first
        assert client._first_url == 1
    with _client("{0},{1}".format(dead, _dead_url()), **{"max.retries": 1}) as client:
        with pytest.raises(SchemaRegistryUnreachableError) as info:
            client.get_schema(1)
    assert "4 attempt(s)" in str(info.value) and dead in str(info.value)


def test_backoff_doubles_up_to_its_cap(fake, monkeypatch):
    fake.on("/schemas/ids/1", (500, {}))
    sleeps = []
    monkeypatch.setattr(client_module.random, "random", lambda: 0.5)
    client = SchemaRegistryClient({"url": fake.url, "max.retries": 5, "retries.wait.ms": 100,
                                   "retries.max.wait.ms": 500}, sleep=sleeps.append)
    with client, pytest.raises(SchemaRegistryUnreachableError):
        client.get_schema(1)
    # full jitter (0.5 here) of 100, 200, 400, then the 500 cap
    assert sleeps == pytest.approx([0.05, 0.1, 0.2, 0.25, 0.25])


def test_one_fetch_for_many_threads_missing_the_same_id(fake):
    fake.on("/schemas/ids/8", (200, {"schema": AVRO}, 0.3))
    results = []
    with _client(fake.url) as client:
        threads = [threading.Thread(target=lambda: results.append(client.get_schema(8))) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(results) == 8 and fake.count("/schemas/ids/8") == 1


def _version(subject, version, refs=()):
    return {"id": 100 + version, "subject": subject, "version": version, "schema": AVRO,
            "references": [{"name": n, "subject": s, "version": v} for n, s, v in refs]}


def test_reference_cycles_and_deep_chains_are_refused(fake):
    fake.on("/schemas/ids/1", (200, {"schema": AVRO, "references": [{"name": "a", "subject": "a", "version": 1}]}))
    fake.on("/subjects/a/versions/1", (200, _version("a", 1, [("b", "b", 1)])))
    fake.on("/subjects/b/versions/1", (200, _version("b", 1, [("a", "a", 1)])))
    depth = client_module.MAX_REFERENCE_DEPTH + 2
    fake.on("/schemas/ids/2", (200, {"schema": AVRO, "references": [{"name": "c0", "subject": "c0", "version": 1}]}))
    for i in range(depth):
        this, child = "c{0}".format(i), "c{0}".format(i + 1)
        fake.on("/subjects/{0}/versions/1".format(this), (200, _version(this, 1, [(child, child, 1)])))
    with _client(fake.url) as client:
        with pytest.raises(MalformedSchemaResponseError, match="cycle through 'a'"):
            client.resolve(1)
        with pytest.raises(MalformedSchemaResponseError, match="deeper than"):
            client.resolve(2)
        # a reference whose subject is gone names who referenced it
        fake.on("/schemas/ids/3", (200, {"schema": AVRO, "references": [{"name": "x", "subject": "gone",
                                                                          "version": 1}]}))
        fake.on("/subjects/gone/versions/1", (404, {"error_code": 40402, "message": "no such version"}))
        with pytest.raises(VersionNotFoundError, match="referenced as 'x' by schema id 3"):
            client.resolve(3)


def test_resolve_orders_dependencies_first_and_prefetch_fetches_only_the_unknown(fake):
    # a diamond: root -> (left, right) -> base
    fake.on("/schemas/ids/1", (200, {"schema": AVRO, "references": [
        {"name": "left", "subject": "left", "version": 1}, {"name": "right", "subject": "right", "version": 1}]}))
    fake.on("/subjects/left/versions/1", (200, _version("left", 1, [("base", "base", 1)])))
    fake.on("/subjects/right/versions/1", (200, _version("right", 1, [("base", "base", 1)])))
    fake.on("/subjects/base/versions/1", (200, _version("base", 1)))
    fake.on("/schemas/ids/2", (200, {"schema": AVRO}))
    with _client(fake.url) as client:
        resolved = client.resolve(1)
        assert list(resolved.referenced) == ["base", "left", "right"]
        assert fake.count("/subjects/base/versions/1") == 1
        assert not client.is_cached(2)
        assert set(client.prefetch([1, 2, 2, 1])) == {1, 2}
        assert client.is_cached(2)
        client.prefetch([1, 2])
    assert fake.count("/schemas/ids/1") == 1 and fake.count("/schemas/ids/2") == 1


def test_lru_cache_capacity_order_and_ttl():
    now = [0.0]
    cache = LruCache(2, ttl=10, clock=lambda: now[0])
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    now[0] = 10.0
    assert cache.get("a") is None and len(cache) == 1
    with pytest.raises(ValueError):
        LruCache(0)


def test_single_flight_does_not_cache_a_failure():
    flight = SingleFlight(LruCache(4))
    calls = []

    def failing():
        calls.append(1)
        raise SchemaNotFoundError("gone")

    for _ in range(2):
        with pytest.raises(SchemaNotFoundError):
            flight.get_or_load("k", failing)
    assert len(calls) == 2
    assert flight.get_or_load("k", lambda: 5) == 5 and flight.get_or_load("k", failing) == 5


def test_latest_version_is_cached_for_its_ttl(fake):
    fake.on("/subjects/s/versions/latest", (200, _version("s", 1)), (200, _version("s", 2)))
    now = [0.0]
    client = SchemaRegistryClient({"url": fake.url, "cache.latest.ttl.sec": 30}, clock=lambda: now[0])
    with client:
        assert client.get_latest_version("s").version == 1
        assert client.get_latest_version("s").version == 1
        now[0] = 31.0
        assert client.get_latest_version("s").version == 2
    assert fake.count("/subjects/s/versions/latest") == 2


def test_registry_errors_pickle_with_their_fields():
    import pickle

    error = SchemaNotFoundError("schema id 9: gone", "http://r/schemas/ids/9", 404, 40403)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is SchemaNotFoundError and str(copy) == str(error)
    assert (copy.url, copy.http_status_code, copy.error_code) == ("http://r/schemas/ids/9", 404, 40403)


def test_prefetch_overlaps_the_round_trips_of_new_ids(fake):
    for schema_id in (1, 2, 3):
        fake.on("/schemas/ids/{0}".format(schema_id), (200, {"schema": AVRO}, 0.4))
    with _client(fake.url) as client:
        began = time.monotonic()
        assert set(client.prefetch([1, 2, 3])) == {1, 2, 3}
        assert time.monotonic() - began < 1.0  # one after another: 1.2 s
        with pytest.raises(SchemaNotFoundError, match="schema id 4"):
            client.prefetch([1, 4, 5])
    assert all(fake.count("/schemas/ids/{0}".format(i)) == 1 for i in (1, 2, 3))
