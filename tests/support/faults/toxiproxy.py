"""A small client for Toxiproxy's HTTP API (v2.5), and the server's process.

    server = ToxiproxyServer.start(log_path)      # 127.0.0.1, a free port
    proxy = server.client.create("node-1", listen=40001, upstream=40002)
    proxy.add("latency", latency=300, jitter=50)   # downstream by default
    with proxy.toxic("timeout", timeout=0):        # a blackhole while inside
        ...
    server.client.reset()                          # every proxy enabled, no toxics
    server.stop()

The binary comes from scripts/setup.sh (`go install .../cmd/server@v2.5.0`,
kept as ~/.cache/fastkc/bin/toxiproxy-server); `find_server()` looks there,
then on PATH, then at $FASTKC_TOXIPROXY.
"""
import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

from fastkc_tools.broker.resolve import cache_root

VERSION = "v2.5.0"


class ToxiproxyError(RuntimeError):
    pass


def find_server():
    """The toxiproxy-server path, or None."""
    explicit = os.environ.get("FASTKC_TOXIPROXY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    cached = os.path.join(cache_root(), "bin", "toxiproxy-server")
    if os.access(cached, os.X_OK):
        return cached
    return shutil.which("toxiproxy-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, base_url):
        self.base_url = base_url.rstrip("/")

    def _call(self, method, path, body=None, timeout=10.0):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError("{0} {1} -> {2}: {3}".format(
                method, path, exc.code, exc.read().decode("utf-8", "replace"))) from exc
        return json.loads(text) if text.strip() else None

    def version(self):
        req = urllib.request.Request(self.base_url + "/version")
        with urllib.request.urlopen(req, timeout=5.0) as resp:
            return resp.read().decode().strip()

    def create(self, name, *, listen, upstream, host="127.0.0.1"):
        self._call("POST", "/proxies", {"name": name, "listen": "{0}:{1}".format(host, listen),
                                        "upstream": "{0}:{1}".format(host, upstream), "enabled": True})
        return Proxy(self, name)

    def proxies(self):
        return {name: Proxy(self, name) for name in self._call("GET", "/proxies")}

    def reset(self):
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")


class Proxy:
    def __init__(self, client, name):
        self.client = client
        self.name = name

    def _path(self, rest=""):
        return "/proxies/" + self.name + rest

    def info(self):
        return self.client._call("GET", self._path())

    def set_enabled(self, enabled):
        """Disabled: the listener closes and every connection through it is
        cut (clients see refused connections until it is enabled again)."""
        self.client._call("POST", self._path(), {"enabled": bool(enabled)})

    def add(self, kind, *, stream="downstream", toxicity=1.0, name=None, **attributes):
        """Add a toxic; returns its name. kind: latency (latency, jitter ms),
        bandwidth (rate KB/s), slow_close (delay ms), timeout (timeout ms; 0
        holds data forever: a blackhole), reset_peer (timeout ms, then RST),
        slicer (average_size, size_variation bytes, delay µs), limit_data
        (bytes, then close)."""
        name = name or "{0}_{1}".format(kind, stream)
        self.client._call("POST", self._path("/toxics"), {
            "name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes})
        return name

    def remove(self, toxic_name):
        self.client._call("DELETE", self._path("/toxics/" + toxic_name))

    def toxics(self):
        return self.client._call("GET", self._path("/toxics"))

    @contextlib.contextmanager
    def toxic(self, kind, **kwargs):
        name = self.add(kind, **kwargs)
        try:
            yield name
        finally:
            with contextlib.suppress(ToxiproxyError):
                self.remove(name)


class ToxiproxyServer:
    def __init__(self, proc, port, log_path):
        self.proc = proc
        self.port = port
        self.log_path = log_path
        self.client = Client("http://127.0.0.1:{0}".format(port))

    @classmethod
    def start(cls, log_path, binary=None, timeout=15.0):
        binary = binary or find_server()
        if binary is None:
            raise ToxiproxyError("toxiproxy-server not found (run scripts/setup.sh; it needs Go)")
        port = free_port()
        log = open(log_path, "ab")
        prefix = []
        setpriv = shutil.which("setpriv")
        if setpriv:  # dies with the test session, like the brokers
            prefix = [setpriv, "--pdeathsig", "KILL", "--"]
        proc = subprocess.Popen(prefix + [binary, "-host", "127.0.0.1", "-port", str(port)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        server = cls(proc, port, log_path)
        deadline = time.monotonic() + timeout
        while True:
            try:
                server.client.version()
                return server
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    server.stop()
                    raise ToxiproxyError("toxiproxy-server did not answer on port {0}".format(port)) from exc
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
