"""BlockingConnection against a scripted fake broker on 127.0.0.1: version
negotiation (including an old broker's v0 fallback answer), and every failure
mapped to its typed error with the connection closed afterwards."""
import socket
import threading

import pytest

from fastkc.errors import (
    CorrelationIdError,
    IllegalArgumentError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolParseError,
)
from fastkc.net.blocking import BlockingConnection
from fastkc.protocol import codec
from tests.support.framing import Framer, frame

BROKER_APIS = [(18, 0, 4), (3, 0, 12), (1, 4, 16), (12, 0, 4)]


def _api_versions_answer(version, apis=BROKER_APIS, error=0):
    return {"error_code": error,
            "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in apis]}


class FakeBroker:
    """Accepts one connection and hands each decoded request to `script`,
    which returns the framed bytes to send back, None to stay silent, the
    string "close", or ("close after", bytes) to send and then hang up."""

    def __init__(self, script):
        self.script = script
        self.requests = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.listener.accept()
        framer = Framer()
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                for payload in framer.feed(chunk):
                    header, body = codec.decode_request(payload)
                    self.requests.append((header, body))
                    answer = self.script(header, body)
                    if answer == "close":
                        return
                    if isinstance(answer, tuple):  # ("close after", bytes)
                        conn.sendall(answer[1])
                        return
                    if answer is not None:
                        conn.sendall(answer)
        finally:
            conn.close()
            self.listener.close()

    def close(self):
        self.thread.join(5)


def _normal(header, body):
    if header["api_name"] == "ApiVersions":
        return frame(codec.encode_response("ApiVersions", header["api_version"], _api_versions_answer(
            header["api_version"]), correlation_id=header["correlation_id"]))
    if header["api_name"] == "Heartbeat":
        return frame(codec.encode_response("Heartbeat", header["api_version"], {"error_code": 0},
                                           correlation_id=header["correlation_id"]))
    raise AssertionError(header)


def test_negotiates_and_picks_the_highest_common_version():
    broker = FakeBroker(_normal)
    with BlockingConnection("127.0.0.1", broker.port, client_id="me", timeout=5) as conn:
        assert conn.api_versions == {k: (lo, hi) for k, lo, hi in BROKER_APIS}
        assert conn.pick_version("Metadata") == 12  # broker max below ours (13)
        assert conn.pick_version("Fetch") == 16
        assert conn.request("Heartbeat", {"group_id": "g"}) == {"throttle_time_ms": 0, "error_code": 0}
        with pytest.raises(IllegalArgumentError, match="does not support ListOffsets"):
            conn.request("ListOffsets", {})
        with pytest.raises(IllegalArgumentError, match="Fetch v17"):
            conn.pick_version("Fetch", 17)
    broker.close()
    (av_header, av_body), (hb_header, _) = broker.requests
    assert (av_header["api_version"], av_header["client_id"]) == (4, "me")
    assert av_body["client_software_name"] == "fastkc"
    assert (hb_header["api_name"], hb_header["api_version"]) == ("Heartbeat", 4)
    assert hb_header["correlation_id"] == av_header["correlation_id"] + 1


def test_old_broker_answers_unsupported_version_in_v0_layout():
    def script(header, body):
        version = header["api_version"]
        if version > 2:
            # what Kafka does: error 35 in the v0 layout, with its ApiVersions range
            answer = codec.encode_response("ApiVersions", 0, _api_versions_answer(0, [(18, 0, 2)], error=35),
                                           correlation_id=header["correlation_id"])
            return frame(answer)
        return _normal(header, body)

    broker = FakeBroker(script)
    with BlockingConnection("127.0.0.1", broker.port, timeout=5) as conn:
        assert conn.api_versions[3] == (0, 12)
    broker.close()
    assert [h["api_version"] for h, _ in broker.requests] == [4, 2]


def test_wrong_correlation_id_raises_and_closes():
    def script(header, body):
        return frame(codec.encode_response("ApiVersions", header["api_version"],
                                           _api_versions_answer(0), correlation_id=header["correlation_id"] + 7))

    broker = FakeBroker(script)
    with pytest.raises(CorrelationIdError, match="expected correlation id 0, got 7"):
        BlockingConnection("127.0.0.1", broker.port, timeout=5)
    broker.close()


def test_silence_is_a_timeout():
    broker = FakeBroker(lambda header, body: None)
    with pytest.raises(KafkaTimeoutError, match="ApiVersions to .*: no answer within 300 ms"):
        BlockingConnection("127.0.0.1", broker.port, timeout=0.3)


def test_connection_closed_mid_answer():
    def script(header, body):
        whole = _normal(header, body)
        return ("close after", whole[: len(whole) // 2])

    broker = FakeBroker(script)
    with pytest.raises(KafkaConnectionError, match="closed the connection while ApiVersions v4"):
        BlockingConnection("127.0.0.1", broker.port, timeout=5)
    broker.close()


def test_connection_dropped_is_a_connection_error():
    broker = FakeBroker(lambda header, body: "close")
    with pytest.raises(KafkaConnectionError, match="closed the connection"):
        BlockingConnection("127.0.0.1", broker.port, timeout=5)
    broker.close()


def test_refused_connection():
    spare = socket.create_server(("127.0.0.1", 0))
    port = spare.getsockname()[1]
    spare.close()
    with pytest.raises(KafkaConnectionError, match="cannot connect"):
        BlockingConnection("127.0.0.1", port, timeout=2)


def test_malformed_answer_raises_the_parse_error_and_closes():
    def script(header, body):
        if header["api_name"] == "ApiVersions":
            return _normal(header, body)
        # a Heartbeat v4 answer cut short: header, then only half the throttle time
        return frame((header["correlation_id"]).to_bytes(4, "big") + b"\x00" + b"\x00\x00")

    broker = FakeBroker(script)
    conn = BlockingConnection("127.0.0.1", broker.port, timeout=5)
    with pytest.raises(ProtocolParseError) as info:
        conn.request("Heartbeat", {"group_id": "g"})
    assert info.value.api == "Heartbeat" and info.value.version == 4
    assert conn.closed
    with pytest.raises(KafkaConnectionError, match="is closed"):
        conn.request("Heartbeat", {"group_id": "g"})
    broker.close()


def test_request_raw_returns_header_and_body():
    broker = FakeBroker(_normal)
    with BlockingConnection("127.0.0.1", broker.port, timeout=5) as conn:
        raw = conn.request_raw("Heartbeat", {"group_id": "g"}, version=0)
    broker.close()
    assert raw[:4] == (1).to_bytes(4, "big")  # correlation id of the second request
    assert raw[4:] == b"\x00\x00"  # Heartbeat v0 body: error_code only, header v0
