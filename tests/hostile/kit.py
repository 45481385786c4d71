"""A scriptable fake Kafka broker for hostile-broker tests.

`FakeBroker` listens on 127.0.0.1 (a free port), serves every connection on a
thread of its own, and answers what a consumer needs with sane defaults:
ApiVersions, Metadata (one broker: itself, node 1), FindCoordinator (itself),
JoinGroup/SyncGroup/Heartbeat/LeaveGroup (a one-member group; the consumer is
the leader), OffsetFetch/OffsetCommit (kept in memory), ListOffsets, Fetch
(one v2 batch per partition, from `tests/support/batchgen.py`),
OffsetForLeaderEpoch, and SaslHandshake/SaslAuthenticate (PLAIN, when
`sasl=(username, password)` is given; AWS_MSK_IAM, when `msk_iam=(access_key,
secret_key, session_token or None, region)` is given: `verify_msk_iam`
checks the payload's fields and signature, `broker.msk_iam` keeps each
payload with its verdict); `session_lifetime_ms` is what a
successful SaslAuthenticate v1+ answers, KIP-368's re-authentication deadline,
not enforced: count("SaslHandshake") tells how often a client authenticated). Requests are read with
`fastkc.protocol.framing`, answers encoded with `fastkc.protocol.codec`.

A test scripts any stage with `script(stage, action, times=None, skip=0)`:
`stage` is an API name ("Metadata", "Fetch", ...) or "connect" (acts right
after accept, before any request: a bootstrap server that misbehaves from the
first byte). The action then replaces the default answer for the next
`times` requests of that stage (None: forever), after `skip` requests were
answered normally. Actions (module-level factories):

    silence()               read on, answer nothing (a stalled broker)
    drip(ms, payload=None)  send the (default) answer one byte every `ms` ms
    huge_frame(size)        announce a frame of `size` bytes, send its correlation id, nothing more
    garbage(n=64)           a frame with the right correlation id, an impossible count, n noise bytes
    truncated(keep=0.5)     the default answer cut short (size prefix matches the cut)
    wrong_correlation()     the default answer with correlation id + 1000
    raw(data)               these bytes, as they are (frame them yourself)
    reset()                 RST (SO_LINGER 0, then close)
    close()                 orderly close (FIN)
    delay(ms)               the default answer, `ms` ms late
    answer(fn)              fn(request_header, request_body, default_body) -> body dict

An action is any callable(link, request): `link.send(bytes)`, `link.abort()`,
`link.shut()`, `link.wait(seconds)`, `link.stalled = True`; `request.header`,
`.body`, `.default_body()`, `.payload()` (the default answer, unframed),
`.framed()`. At the "connect" stage there is no request: the default answer
is an HTTP error line (what a client meets on a wrong port), which drip,
garbage and friends send or mangle. SASL is PLAIN only and, once answered,
not enforced (scripts decide what a broker refuses). Helpers for the checks
after close(): `open_fds()`, `client_threads()`, `wait_for(predicate)`.

Example:

    from tests.hostile.kit import FakeBroker, silence, garbage

    with FakeBroker(topics={"t": 2}, records=10) as broker:
        broker.script("Fetch", garbage(), times=3)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=500, ...)
        consumer.assign([TopicPartition("t", 0)])
        with pytest.raises(errors.KafkaError):
            consumer.poll(timeout_ms=2000)
        consumer.close()
        assert broker.count("Fetch") >= 1   # broker.requests: [(api_name, version), ...]
        # broker.connections: connections accepted so far; broker.errors: what
        # the kit itself raised while serving (a script's bug), to assert empty

Threads are named "fakebroker-…" (tests that look for leaked threads skip
them); `close()` stops every thread and closes every socket the kit opened.
"""
import datetime
import hmac
import itertools
import json
import os
import socket
import struct
import threading
import time
import uuid

from fastkc.protocol import codec
from fastkc.protocol.framing import Framer, frame
from fastkc.protocol.messages import ALL_APIS

# Imported here, not when the first Fetch is answered: batchgen pulls in the
# codec libraries (~0.6 s of CPU on a first import), which would otherwise be
# charged to the client's CPU budget in whichever scenario answers a Fetch first.
from tests.support.batchgen import Record, record_batch

NODE_ID = 1
THREAD_PREFIX = "fakebroker-"
_SIZE = struct.Struct(">i")


def verify_msk_iam(auth_bytes, host, access_key, secret_key, token, region, now=None):
    """Check an AWS_MSK_IAM client payload as MSK would: (payload dict or
    None, None if it verifies else the reason). The signature is recomputed
    with botocore's SigV4Auth from the given credentials over the payload's
    own query parameters (not with the client's code path: add_auth)."""
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials
    from botocore.utils import percent_encode_sequence

    try:
        payload = json.loads(bytes(auth_bytes).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "not JSON"
    if not isinstance(payload, dict):
        return None, "not a JSON object"
    fixed = {"version": "2020_10_22", "host": host, "action": "kafka-cluster:Connect",
             "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-signedheaders": "host", "x-amz-expires": "900"}
    for key, value in fixed.items():
        if payload.get(key) != value:
            return payload, "{0} is {1!r}, not {2!r}".format(key, payload.get(key), value)
    expected_keys = set(fixed) | {"user-agent", "x-amz-credential", "x-amz-date", "x-amz-signature"}
    if token:
        expected_keys.add("x-amz-security-token")
    if set(payload) != expected_keys:
        return payload, "keys {0}, expected {1}".format(sorted(payload), sorted(expected_keys))
    if not all(isinstance(v, str) for v in payload.values()) or not payload["user-agent"]:
        return payload, "a value is not a non-empty string"
    if token and payload["x-amz-security-token"] != token:
        return payload, "wrong session token"
    stamp = payload["x-amz-date"]
    try:
        signed_at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return payload, "x-amz-date is malformed"
    now = now or datetime.datetime.now(datetime.UTC)
    if abs((now - signed_at).total_seconds()) > 900:
        return payload, "x-amz-date is more than 15 minutes off"
    if payload["x-amz-credential"] != "{0}/{1}/{2}/kafka-cluster/aws4_request".format(access_key, stamp[:8], region):
        return payload, "x-amz-credential does not match the key, date and region"
    params = [("Action", payload["action"]), ("X-Amz-Algorithm", payload["x-amz-algorithm"]),
              ("X-Amz-Credential", payload["x-amz-credential"]), ("X-Amz-Date", stamp),
              ("X-Amz-Expires", payload["x-amz-expires"])]
    if token:
        params.append(("X-Amz-Security-Token", token))
    params.append(("X-Amz-SignedHeaders", payload["x-amz-signedheaders"]))
    request = botocore.awsrequest.AWSRequest(method="GET", url="https://{0}/?{1}".format(
        host, percent_encode_sequence(params)))
    request.context["timestamp"] = stamp
    signer = botocore.auth.SigV4Auth(botocore.credentials.Credentials(access_key, secret_key, token),
                                     "kafka-cluster", region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, payload["x-amz-signature"]):
        return payload, "signature does not verify"
    return payload, None


# --- actions ------------------------------------------------------------------------------
# An action is called as action(link, request) where link is the _Link of the
# connection and request a _Request (header, body, default answer bytes); it
# sends what it wants through link.


def silence():
    def act(link, request):
        link.stalled = True
    act.kind = "silence"
    return act


def drip(ms=1000, payload=None):
    def act(link, request):
        data = payload if payload is not None else request.framed()
        for i in range(len(data)):
            if not link.send(data[i:i + 1]) or link.wait(ms / 1000.0):
                return
    act.kind = "drip"
    return act


def huge_frame(size=0x7FFFFFFF, body=b""):
    def act(link, request):
        link.send(_SIZE.pack(size) + _SIZE.pack(request.correlation_id) + body)
        link.stalled = True
    act.kind = "huge_frame"
    return act


def garbage(n=64, seed=1):
    def act(link, request):
        noise = bytes((b * 151 + seed * 31 + 7) & 0xFF for b in range(n))
        link.send(frame(_SIZE.pack(request.correlation_id) + b"\xff\xff\xff\x7f" + noise))
    act.kind = "garbage"
    return act


def truncated(keep=0.5):
    def act(link, request):
        payload = request.payload()
        cut = max(4, int(len(payload) * keep))
        link.send(frame(payload[:cut]))
    act.kind = "truncated"
    return act


def wrong_correlation():
    def act(link, request):
        payload = request.payload()
        link.send(frame(_SIZE.pack((request.correlation_id + 1000) & 0x7FFFFFFF) + payload[4:]))
    act.kind = "wrong_correlation"
    return act


def raw(data):
    def act(link, request):
        link.send(data)
    act.kind = "raw"
    return act


def reset():
    def act(link, request):
        link.abort()
    act.kind = "reset"
    return act


def close():
    def act(link, request):
        link.shut()
    act.kind = "close"
    return act


def delay(ms):
    def act(link, request):
        if not link.wait(ms / 1000.0):
            link.send(request.framed())
    act.kind = "delay"
    return act


def answer(fn):
    def act(link, request):
        body = fn(request.header, request.body, request.default_body())
        link.send(frame(codec.encode_response(request.api_name, request.version, body,
                                              correlation_id=request.correlation_id)))
    act.kind = "answer"
    return act


def serve_log(batches):
    """Fetch answered as a broker serves a log of crafted batches
    ([(base offset, bytes)], in offset order): each partition gets the log
    from the batch holding its fetch offset on (nothing past the last)."""
    # one past the log: the last batch's base offset + its lastOffsetDelta + 1
    # (a v2 batch header: baseOffset 8, batchLength 4, partitionLeaderEpoch 4,
    # magic 1, crc 4, attributes 2, then lastOffsetDelta)
    last_base, last_blob = batches[-1]
    end = last_base + int.from_bytes(last_blob[23:27], "big", signed=True) + 1

    def serve(header, body, default):
        wanted = {p["partition"]: p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}
        for topic in default["responses"]:
            for part in topic["partitions"]:
                offset = wanted.get(part["partition_index"], 0)
                held = [i for i, (base, _) in enumerate(batches) if base <= offset]
                part["records"] = b"".join(blob for _, blob in batches[held[-1]:]) if held and offset < end else b""
        return default
    return answer(serve)


#: the misbehaviours every stage is tested with, by name
HOSTILE = {
    "silence": silence,
    "drip": lambda: drip(100),
    "huge_frame": huge_frame,
    "reset": reset,
    "close": close,
    "garbage": garbage,
}


class _Script:
    def __init__(self, action, times, skip):
        self.action = action
        self.times = times
        self.skip = skip


class _Request:
    def __init__(self, broker, header, body):
        self.broker = broker
        self.header = header
        self.body = body
        self.api_name = header["api_name"] if header else None
        self.version = header["api_version"] if header else 0
        self.correlation_id = header["correlation_id"] if header else 0
        self._body = None

    def default_body(self):
        if self._body is None:
            self._body = self.broker.default_answer(self.header, self.body)
        return self._body

    def payload(self):
        if self.header is None:  # the "connect" stage: no request yet, speak HTTP like a wrong endpoint
            return b"/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
        return codec.encode_response(self.api_name, self.version, self.default_body(),
                                     correlation_id=self.correlation_id)

    def framed(self):
        if self.header is None:
            return b"HTTP" + self.payload()
        return frame(self.payload())


class _Link:
    """One accepted connection, served by its own thread."""

    def __init__(self, broker, sock):
        self.broker = broker
        self.sock = sock
        self.stalled = False
        self.closed = False
        self.authenticated = broker.sasl is None

    def wait(self, seconds):
        """Sleep; True when the kit is stopping or the link is gone."""
        return self.broker._stop.wait(seconds) or self.closed

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def abort(self):
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.shut()

    def shut(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    def run(self):
        framer = Framer()
        self.sock.settimeout(0.05)
        try:
            action = self.broker._take("connect")
            if action is None and self.broker.tls is not None:
                self.sock.settimeout(2.0)
                try:
                    self.sock = self.broker.tls.wrap_socket(self.sock, server_side=True)
                except (OSError, ValueError):
                    return  # the client refused the certificate (or went away)
                self.sock.settimeout(0.05)
            if action is not None:
                action(self, _Request(self.broker, None, None))
            while not self.closed and not self.broker._stop.is_set():
                try:
                    chunk = self.sock.recv(1 << 16)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                if self.stalled:
                    continue
                for payload in framer.feed(chunk):
                    header, body = codec.decode_request(payload)
                    self.broker._record(header)
                    request = _Request(self.broker, header, body)
                    action = self.broker._take(header["api_name"])
                    if action is None:
                        self.send(request.framed())
                    else:
                        action(self, request)
                    if self.closed or self.stalled:
                        break
        except Exception as exc:  # a test's script (or the kit) is wrong: recorded, the link closed
            with self.broker._lock:
                self.broker.errors.append(exc)
        finally:
            self.shut()


class FakeBroker:
    """See the module docstring. `topics`: {name: partition count};
    `records`: records per partition (values b"v<offset>"); `sasl`:
    (username, password) to require SASL PLAIN; `api_versions`: {api name:
    (min, max)} overrides of what ApiVersions advertises; `tls`: a server
    ssl.SSLContext to speak TLS (a "connect" script acts before it, on the
    raw socket); `session_lifetime_ms`: see the module docstring."""

    def __init__(self, topics=None, records=10, sasl=None, api_versions=None, tls=None, msk_iam=None,
                 session_lifetime_ms=0):
        self.topics = dict(topics if topics is not None else {"t": 1})
        self.msk_iam_credentials = msk_iam
        self.msk_iam = []  # (payload dict or None, refusal reason or None) per AWS_MSK_IAM authentication
        self.topic_ids = {name: uuid.uuid5(uuid.NAMESPACE_DNS, name).bytes for name in self.topics}
        self.records = records
        self.sasl = sasl
        self.session_lifetime_ms = session_lifetime_ms
        self.tls = tls
        self.api_overrides = dict(api_versions or {})
        self.committed = {}  # (group, topic, partition) -> offset
        self.requests = []  # (api_name, version) in arrival order
        self.connections = 0  # connections accepted
        self.errors = []  # exceptions raised while serving (a broken script): tests assert it stays empty
        self._scripts = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._links = []
        self._threads = []
        self._members = itertools.count(1)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.bootstrap = "127.0.0.1:{0}".format(self.port)
        self._batches = {}
        accept = threading.Thread(target=self._accept_loop, name=THREAD_PREFIX + "accept", daemon=True)
        self._threads.append(accept)
        accept.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- scripting ---------------------------------------------------------------------------
    def script(self, stage, action, times=None, skip=0):
        """Answer the next `times` requests of `stage` (an API name or
        "connect") with `action`, after `skip` normal answers."""
        with self._lock:
            self._scripts[stage] = _Script(action, times, skip)
        return self

    def clear(self, stage=None):
        with self._lock:
            if stage is None:
                self._scripts.clear()
            else:
                self._scripts.pop(stage, None)

    def count(self, api_name):
        with self._lock:
            return sum(1 for name, _ in self.requests if name == api_name)

    def _take(self, stage):
        with self._lock:
            script = self._scripts.get(stage)
            if script is None:
                return None
            if script.skip > 0:
                script.skip -= 1
                return None
            if script.times is not None:
                if script.times <= 0:
                    return None
                script.times -= 1
            return script.action

    def _record(self, header):
        with self._lock:
            self.requests.append((header["api_name"], header["api_version"]))

    # --- serving -------------------------------------------------------------------------------
    def _accept_loop(self):
        n = 0
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            n += 1
            with self._lock:
                self.connections = n
            link = _Link(self, sock)
            thread = threading.Thread(target=link.run, name="{0}conn-{1}".format(THREAD_PREFIX, n), daemon=True)
            with self._lock:
                self._links.append(link)
                self._threads.append(thread)
            thread.start()

    def close(self):
        """Stop serving: every kit thread joined, every kit socket closed."""
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        for thread in list(self._threads):
            thread.join(5)
        with self._lock:
            links = list(self._links)
        for link in links:
            link.shut()

    # --- default answers ----------------------------------------------------------------------
    def default_answer(self, header, body):
        name = header["api_name"]
        handler = getattr(self, "_on_" + name, None)
        if handler is None:
            raise NotImplementedError("the fake broker does not answer {0}".format(name))
        return handler(header, body)

    def _on_ApiVersions(self, header, body):
        keys = []
        for api in ALL_APIS:
            lo, hi = self.api_overrides.get(api.name, (api.min_version, api.max_version))
            keys.append({"api_key": api.key, "min_version": lo, "max_version": hi})
        return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}

    def _on_SaslHandshake(self, header, body):
        offered = ["AWS_MSK_IAM"] if self.msk_iam_credentials else ["PLAIN"]
        ok = body["mechanism"] in offered
        return {"error_code": 0 if ok else 33, "mechanisms": offered}

    def _on_SaslAuthenticate(self, header, body):
        if self.msk_iam_credentials:
            access_key, secret_key, token, region = self.msk_iam_credentials
            payload, reason = verify_msk_iam(body["auth_bytes"], "127.0.0.1", access_key, secret_key, token, region)
            with self._lock:
                self.msk_iam.append((payload, reason))
            if reason is not None:
                # what MSK says, without the reason (a broker does not tell a client why)
                return {"error_code": 58, "error_message": "[fake-request-id]: Access denied", "auth_bytes": b""}
            answer = {"version": "2020_10_22", "request-id": str(uuid.uuid4())}
            return {"error_code": 0, "error_message": None, "auth_bytes": json.dumps(answer).encode()}
        user, password = self.sasl or ("", "")
        expected = b"\0" + user.encode() + b"\0" + password.encode()
        if body["auth_bytes"] == expected:
            return {"error_code": 0, "error_message": None, "auth_bytes": b"",
                    "session_lifetime_ms": self.session_lifetime_ms}
        return {"error_code": 58, "error_message": "Authentication failed: Invalid username or password",
                "auth_bytes": b""}

    def _broker_entry(self):
        return {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}

    def _on_Metadata(self, header, body):
        wanted = body["topics"]
        names = list(self.topics) if wanted is None else [t["name"] for t in wanted]
        topics = []
        for name in names:
            if name not in self.topics:
                topics.append({"error_code": 3, "name": name, "topic_id": bytes(16), "partitions": []})
                continue
            topics.append({"error_code": 0, "name": name, "topic_id": self.topic_ids[name], "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": 0,
                 "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
                for p in range(self.topics[name])]})
        return {"brokers": [self._broker_entry()], "cluster_id": "fake", "controller_id": NODE_ID,
                "topics": topics}

    def _on_FindCoordinator(self, header, body):
        me = self._broker_entry()
        keys = body.get("coordinator_keys") or [body.get("key")]
        return {"error_code": 0, "error_message": None, "node_id": NODE_ID, "host": me["host"], "port": me["port"],
                "coordinators": [{"key": k, "node_id": NODE_ID, "host": me["host"], "port": me["port"],
                                  "error_code": 0, "error_message": None} for k in keys]}

    def _on_JoinGroup(self, header, body):
        member = body["member_id"] or "member-{0}".format(next(self._members))
        protocol = body["protocols"][0]
        return {"error_code": 0, "generation_id": 1, "protocol_type": "consumer", "protocol_name": protocol["name"],
                "leader": member, "member_id": member,
                "members": [{"member_id": member, "group_instance_id": body.get("group_instance_id"),
                             "metadata": protocol["metadata"]}]}

    def _on_SyncGroup(self, header, body):
        mine = [a["assignment"] for a in body["assignments"] if a["member_id"] == body["member_id"]]
        return {"error_code": 0, "protocol_type": "consumer", "protocol_name": body.get("protocol_name"),
                "assignment": mine[0] if mine else b""}

    def _on_Heartbeat(self, header, body):
        return {"error_code": 0}

    def _on_LeaveGroup(self, header, body):
        return {"error_code": 0, "members": [{"member_id": m["member_id"], "group_instance_id":
                                              m.get("group_instance_id"), "error_code": 0}
                                             for m in body.get("members") or []]}

    def _committed_topics(self, group, topics, by_id):
        names_by_id = {v: k for k, v in self.topic_ids.items()}
        out = []
        for t in topics or []:
            name = names_by_id.get(t.get("topic_id")) if by_id else t["name"]
            parts = []
            for p in t["partition_indexes"]:
                with self._lock:
                    offset = self.committed.get((group, name, p), -1)
                parts.append({"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                              "metadata": "" if offset >= 0 else None, "error_code": 0})
            entry = {"partitions": parts}
            entry["topic_id" if by_id else "name"] = t.get("topic_id") if by_id else name
            out.append(entry)
        return out

    def _on_OffsetFetch(self, header, body):
        version = header["api_version"]
        if version >= 8:
            groups = []
            for g in body["groups"]:
                groups.append({"group_id": g["group_id"], "error_code": 0,
                               "topics": self._committed_topics(g["group_id"], g["topics"], version >= 10)})
            return {"groups": groups}
        return {"topics": self._committed_topics(body["group_id"], body["topics"], False), "error_code": 0}

    def _on_OffsetCommit(self, header, body):
        names_by_id = {v: k for k, v in self.topic_ids.items()}
        topics = []
        for t in body["topics"]:
            name = t["name"] if header["api_version"] < 10 else names_by_id.get(t["topic_id"])
            parts = []
            for p in t["partitions"]:
                with self._lock:
                    self.committed[(body["group_id"], name, p["partition_index"])] = p["committed_offset"]
                parts.append({"partition_index": p["partition_index"], "error_code": 0})
            topics.append({"name": t.get("name", ""), "topic_id": t.get("topic_id", bytes(16)), "partitions": parts})
        return {"topics": topics}

    def _on_ListOffsets(self, header, body):
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                offset = 0 if p["timestamp"] == -2 else self.records
                parts.append({"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1,
                              "offset": offset, "leader_epoch": 0})
            topics.append({"name": t["name"], "partitions": parts})
        return {"topics": topics}

    def _on_OffsetForLeaderEpoch(self, header, body):
        return {"topics": [{"topic": t["topic"], "partitions": [
            {"error_code": 0, "partition": p["partition"], "leader_epoch": 0, "end_offset": self.records}
            for p in t["partitions"]]} for t in body["topics"]]}

    def _batch(self, name, partition):
        key = (name, partition)
        blob = self._batches.get(key)
        if blob is None:
            recs = [Record(value=b"v%d" % i, offset_delta=i, timestamp_delta=i) for i in range(self.records)]
            blob = record_batch(recs, base_offset=0) if recs else b""
            self._batches[key] = blob
        return blob

    def _on_Fetch(self, header, body):
        version = header["api_version"]
        names_by_id = {v: k for k, v in self.topic_ids.items()}
        responses = []
        any_data = False
        for t in body["topics"]:
            name = names_by_id.get(t.get("topic_id")) if version >= 13 else t["topic"]
            parts = []
            for p in t["partitions"]:
                data = b""
                if name in self.topics and p["fetch_offset"] < self.records:
                    data = self._batch(name, p["partition"])
                    any_data = True
                parts.append({"partition_index": p["partition"], "error_code": 0 if name in self.topics else 3,
                              "high_watermark": self.records, "last_stable_offset": self.records,
                              "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                              "records": data})
            responses.append({"topic": t.get("topic", ""), "topic_id": t.get("topic_id", bytes(16)),
                              "partitions": parts})
        if not any_data:  # a real broker holds an empty fetch for max_wait_ms
            self._stop.wait(min(body["max_wait_ms"], 200) / 1000.0)
        return {"error_code": 0, "session_id": 0, "responses": responses}


def open_fds():
    """The file descriptors this process has open (Linux)."""
    return set(os.listdir("/proc/self/fd"))


def client_threads():
    """Live threads that are not the kit's."""
    return [t for t in threading.enumerate() if not t.name.startswith(THREAD_PREFIX)]


def wait_for(predicate, timeout=2.0, step=0.01):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
