"""The fetcher's logic with canned responses: positions and resets, fetch
sessions, pipelining, stale responses, error handling, truncation, corrupt
batches, the buffer cap. A scripted client stands in for the network: it
records every request the fetcher sends and the test answers it with bytes
encoded by the generic protocol codec (Fetch responses go through the same
parser the consumer uses)."""
import pytest

from fastkc import errors
from fastkc import records as fastkc_records
from fastkc.cluster.metadata import ClusterMetadata
from fastkc.config import consumer_config
from fastkc.fetch import Fetcher, FetchSession
from fastkc.protocol import codec
from fastkc.structs import TopicPartition
from tests.support import batchgen as bg

TOPIC = "t"
TOPIC_ID = bytes(range(1, 17))
TP0 = TopicPartition(TOPIC, 0)
TP1 = TopicPartition(TOPIC, 1)
FETCH_VERSION = 12


class FakeConn:
    def __init__(self):
        self.api_versions = {23: (0, 4)}

    def can_send(self):
        return True

    fetch_version = FETCH_VERSION

    def version_for(self, api_name):
        return self.fetch_version if api_name == "Fetch" else 0


class ScriptedClient:
    """What Fetcher needs of KafkaClient; sent requests wait in `sent`."""

    def __init__(self, partitions=(0, 1), leader_epoch=5):
        self.now = 1000.0
        self._clock = lambda: self.now
        self.cluster = ClusterMetadata()
        self.cluster.update(_metadata(partitions, leader_epoch), all_topics=False)
        self.sent = []
        self.metadata_requests = 0
        self.on_disconnect = []
        self.metadata_listeners = []
        self.conn = FakeConn()

    def ready(self, node_id):
        return True

    def is_connected(self, node_id):
        return True

    def connection(self, node_id):
        return self.conn

    def request_metadata_update(self, all_topics=False):
        self.metadata_requests += 1

    def parse_failed(self, conn, api_name, exc):
        """KafkaClient's policy, with a limit of one: the error itself."""
        return exc

    def parse_ok(self, conn, api_name):
        pass

    def send(self, node_id, api_name, body, callback, raw=False, version=None):
        self.sent.append((node_id, api_name, body, callback, raw, version))
        return version

    def take(self, api_name):
        """Pop the oldest sent request of that API."""
        for i, item in enumerate(self.sent):
            if item[1] == api_name:
                return self.sent.pop(i)
        raise AssertionError("no {0} request was sent; sent: {1}".format(api_name, [s[1] for s in self.sent]))

    def pending(self, api_name):
        return [s for s in self.sent if s[1] == api_name]


def _metadata(partitions, leader_epoch):
    return {
        "brokers": [{"node_id": 1, "host": "h", "port": 1, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [{
            "error_code": 0, "name": TOPIC, "topic_id": TOPIC_ID, "is_internal": False,
            "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": leader_epoch,
                            "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []} for p in partitions],
        }],
    }


# Every test here runs with decode_threads 0 and 1 (the decode worker:
# tests/unit/test_decode_worker.py has its own differential scripts); the
# fetchers a test made have their workers stopped after it.
_DECODE_THREADS = [0]
_MADE = []


@pytest.fixture(autouse=True, params=[0, 1], ids=["decode_threads=0", "decode_threads=1"])
def _decode_threads(request):
    _DECODE_THREADS[0] = request.param
    yield
    _DECODE_THREADS[0] = 0
    while _MADE:
        assert _MADE.pop().close_worker(10)


def _fetcher(client=None, **configs):
    client = client or ScriptedClient()
    configs.setdefault("bootstrap_servers", "h:1")
    configs.setdefault("decode_threads", _DECODE_THREADS[0])
    fetcher = Fetcher(client, consumer_config(configs))
    _MADE.append(fetcher)
    return client, fetcher


def _batch(base_offset, values, leader_epoch=5, **kwargs):
    return bg.record_batch(bg.records_from_values(values), base_offset=base_offset, leader_epoch=leader_epoch,
                           **kwargs)


def _answer_fetch(client, request, partitions, *, error_code=0, session_id=0, version=FETCH_VERSION):
    """partitions: {partition: dict of FetchPartition response fields}."""
    node_id, api, body, callback, raw, used = request
    assert api == "Fetch" and raw
    parts = []
    for p, fields in partitions.items():
        entry = {"partition_index": p, "error_code": 0, "high_watermark": 100, "last_stable_offset": 100,
                 "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                 "records": b""}
        entry.update(fields)
        parts.append(entry)
    response = {"throttle_time_ms": 0, "error_code": error_code, "session_id": session_id,
                "responses": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": parts}]}
    payload = codec.encode_response("Fetch", used, response, correlation_id=7)
    callback((payload, used), None)


def _answer_list_offsets(request, offsets, error_code=0, leader_epoch=5):
    node_id, api, body, callback, raw, used = request
    assert api == "ListOffsets"
    callback({"throttle_time_ms": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": p, "error_code": error_code, "timestamp": -1, "offset": o, "leader_epoch": leader_epoch}
        for p, o in offsets.items()]}]}, None)


def _fetch_offsets(request):
    body = request[2]
    return {(p["partition"]): p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}


def _positioned(offsets, **configs):
    """A fetcher with partitions at the given positions (via seek)."""
    client, fetcher = _fetcher(**configs)
    fetcher.assign([TopicPartition(TOPIC, p) for p in offsets])
    for p, o in offsets.items():
        fetcher.seek(TopicPartition(TOPIC, p), o)
    return client, fetcher


# --- the framing scan the fetcher pipelines with (scan_blob, C and twin) -------------

def _scans(blob):
    """scan_blob of both backends (the twin is the oracle): must agree."""
    from fastkc._twin import records as twin

    ours = fastkc_records.scan_blob(blob)
    assert twin.scan_blob(blob) == ours
    return ours


def test_scan_finds_the_end_of_the_last_complete_batch():
    blob = _batch(10, [b"a", b"b", b"c"], leader_epoch=3) + _batch(13, [b"d"], leader_epoch=4)
    info = _scans(blob)
    assert (info.next_offset, info.leader_epoch, info.complete_bytes, info.entries, info.tail) == \
        (14, 4, len(blob), 2, "none")


def test_scan_ignores_a_cut_tail():
    first = _batch(0, [b"a", b"b"])
    second = _batch(2, [b"c", b"d"])
    for cut in (1, 16, 30, len(second) - 1):
        info = _scans(first + second[:cut])
        assert (info.next_offset, info.leader_epoch, info.complete_bytes, info.tail) == (2, 5, len(first), "cut")
        assert info.tail_offset == (2 if cut >= 8 else -1)
        assert info.tail_size == (len(second) if cut >= 12 else -1)
    info = _scans(second[:20])
    assert (info.next_offset, info.leader_epoch, info.complete_bytes, info.tail) == (None, -1, 0, "cut")
    info = _scans(b"")
    assert (info.next_offset, info.complete_bytes, info.tail) == (None, 0, "none")


def test_scan_uses_last_offset_delta_not_record_count():
    # a compacted batch: three records left, offsets 0..9 covered
    batch = _batch(100, [b"x", b"y", b"z"], last_offset_delta=9)
    assert _scans(batch).next_offset == 110


def test_scan_legacy_message_sets():
    blob = bg.legacy_message(1, 4, b"k", b"v") + bg.legacy_message(1, 5, None, b"w")
    info = _scans(blob)
    assert (info.next_offset, info.leader_epoch, info.complete_bytes) == (6, -1, len(blob))


@pytest.mark.parametrize("length,magic,lod", [(-5, 2, 0), (10, 1, 0), (40, 2, 0), (100, 7, 0), (200, 2, -1)])
def test_scan_flags_headers_that_cannot_be_a_batch(length, magic, lod):
    good = _batch(0, [b"a"], leader_epoch=3)
    bad = bytearray(_batch(1, [b"b"]))
    bad[8:12] = length.to_bytes(4, "big", signed=True)
    bad[16] = magic
    bad[23:27] = lod.to_bytes(4, "big", signed=True)
    blob = good + bytes(bad)
    # the good batch counts; the fetcher hands the whole blob to the decoder, which raises
    info = _scans(blob)
    assert (info.next_offset, info.leader_epoch, info.complete_bytes, info.tail, info.tail_offset) == \
        (1, 3, len(good), "malformed", 1)
    assert info.reason
    info = _scans(bytes(bad))
    assert (info.next_offset, info.leader_epoch, info.complete_bytes, info.tail) == (None, -1, 0, "malformed")


# --- fetch sessions (KIP-227) ---------------------------------------------------------

def test_session_full_then_incremental_then_forgotten():
    session = FetchSession(1, incremental=True)
    wanted = {TP0: (0, 5, -1, 100), TP1: (0, 5, -1, 100)}
    session_id, epoch, send, forget = session.build(wanted)
    assert (session_id, epoch, [tp for tp, _ in send], forget) == (0, 0, [TP0, TP1], [])
    assert session.handle_response(0, 42, epoch)
    # only TP0 moved: only TP0 is sent
    session_id, epoch, send, forget = session.build({TP0: (10, 5, 5, 100), TP1: (0, 5, -1, 100)})
    assert (session_id, epoch, [tp for tp, _ in send], forget) == (42, 1, [TP0], [])
    assert session.handle_response(0, 42, epoch)
    # TP1 leaves the fetch: forgotten
    session_id, epoch, send, forget = session.build({TP0: (10, 5, 5, 100)})
    assert (session_id, epoch, send, forget) == (42, 2, [], [TP1])


@pytest.mark.parametrize("code", [70, 71])
def test_session_error_restarts_with_a_full_fetch(code):
    session = FetchSession(1, incremental=True)
    wanted = {TP0: (0, 5, -1, 100)}
    session.handle_response(0, 42, session.build(wanted)[1])
    assert session.build(wanted)[1] == 1
    assert not session.handle_response(code, 0, 1)
    assert session.build(wanted)[:2] == (0, 0)


def test_session_disabled_sends_everything_with_the_final_epoch():
    session = FetchSession(1, incremental=False)
    wanted = {TP0: (0, 5, -1, 100)}
    for _ in range(2):
        session_id, epoch, send, forget = session.build(wanted)
        assert (session_id, epoch, len(send)) == (0, -1, 1)
        session.handle_response(0, 0, epoch)


def test_broker_without_sessions_keeps_full_fetches():
    session = FetchSession(1, incremental=True)
    wanted = {TP0: (0, 5, -1, 100)}
    session.handle_response(0, 0, session.build(wanted)[1])  # session id 0: none created
    assert session.build(wanted)[:2] == (0, 0)


# --- positions and resets ------------------------------------------------------------------

def test_reset_uses_list_offsets_then_fetches_from_the_answer():
    client, fetcher = _fetcher(auto_offset_reset="earliest")
    fetcher.assign([TP0])
    fetcher.send_requests()
    request = client.take("ListOffsets")
    assert request[2]["topics"][0]["partitions"][0]["timestamp"] == -2
    assert not client.pending("Fetch")  # no position yet: no fetch
    _answer_list_offsets(request, {0: 17})
    assert fetcher.state(TP0).position == 17
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 17}


def test_reset_policy_none_raises_no_offset():
    client, fetcher = _fetcher(auto_offset_reset="none")
    fetcher.assign([TP0])
    with pytest.raises(errors.NoOffsetForPartitionError):
        fetcher.send_requests()


def test_latest_reset_asks_for_the_end():
    client, fetcher = _fetcher()
    fetcher.assign([TP0])
    fetcher.send_requests()
    assert client.take("ListOffsets")[2]["topics"][0]["partitions"][0]["timestamp"] == -1


# --- fetching, pipelining, delivery ----------------------------------------------------------------

def test_records_are_delivered_in_order_and_the_next_fetch_is_already_sent():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b"]) + _batch(2, [b"c"])}})
    # pipelining: the next fetch goes out before anything was decoded or delivered
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 3}
    assert fetcher.state(TP0).position == 0
    out = fetcher.fetched_records(500)
    assert [r.value for r in out[TP0]] == [b"a", b"b", b"c"]
    assert [r.offset for r in out[TP0]] == [0, 1, 2]
    assert fetcher.state(TP0).position == 3
    assert fetcher.state(TP0).position_epoch == 5
    assert fetcher.state(TP0).highwater == 100


def test_max_records_splits_a_fetch_across_polls():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"%d" % i for i in range(5)])}})
    first = fetcher.fetched_records(2)[TP0]
    assert [r.offset for r in first] == [0, 1] and fetcher.state(TP0).position == 2
    second = fetcher.fetched_records(2)[TP0]
    assert [r.offset for r in second] == [2, 3]
    third = fetcher.fetched_records(2)[TP0]
    assert [r.offset for r in third] == [4] and fetcher.state(TP0).position == 5
    assert fetcher.fetched_records(2) == {}
    assert fetcher.buffered_bytes() == 0


def test_records_below_the_fetch_offset_inside_a_batch_are_dropped():
    client, fetcher = _positioned({0: 2})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b", b"c", b"d"])}})
    assert [r.offset for r in fetcher.fetched_records(500)[TP0]] == [2, 3]


def test_seek_discards_buffered_data_and_stale_responses():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    in_flight = client.take("Fetch")
    fetcher.seek(TP0, 50)
    _answer_fetch(client, in_flight, {0: {"records": _batch(0, [b"old"])}})
    assert fetcher.fetched_records(500) == {}
    assert fetcher.buffered_bytes() == 0
    fetcher.send_requests()
    request = client.take("Fetch")
    assert _fetch_offsets(request) == {0: 50}
    _answer_fetch(client, request, {0: {"records": _batch(50, [b"new"])}})
    fetcher.seek(TP0, 50)  # seek again to the same offset: buffered data goes too
    assert fetcher.fetched_records(500) == {}


def test_paused_partition_is_neither_fetched_nor_returned():
    client, fetcher = _positioned({0: 0, 1: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a"])},
                                                  1: {"records": _batch(0, [b"b"])}})
    fetcher.pause(TP1)
    out = fetcher.fetched_records(500)
    assert list(out) == [TP0]
    fetcher.send_requests()
    assert set(_fetch_offsets(client.take("Fetch"))) == {0}
    fetcher.resume(TP1)
    assert [r.value for r in fetcher.fetched_records(500)[TP1]] == [b"b"]


def test_buffered_bytes_cap_holds_back_new_fetches():
    client, fetcher = _positioned({0: 0}, fetch_max_bytes=1000, max_partition_fetch_bytes=500)
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"x" * 600, b"y" * 600])}})
    assert fetcher.buffered_bytes() >= 1000
    fetcher.send_requests()
    assert not client.pending("Fetch")
    fetcher.fetched_records(500)
    assert fetcher.buffered_bytes() == 0
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 2}


def test_incremental_fetch_sends_only_moved_partitions():
    client, fetcher = _positioned({0: 0, 1: 0})
    fetcher.send_requests()
    first = client.take("Fetch")
    assert (first[2]["session_id"], first[2]["session_epoch"]) == (0, 0)
    _answer_fetch(client, first, {0: {"records": _batch(0, [b"a"])}}, session_id=9)
    fetcher.send_requests()
    second = client.take("Fetch")
    assert (second[2]["session_id"], second[2]["session_epoch"]) == (9, 1)
    assert _fetch_offsets(second) == {0: 1}  # partition 1 unchanged: not resent


def test_disabled_sessions_send_every_partition_each_time():
    client, fetcher = _positioned({0: 0, 1: 0}, enable_incremental_fetch_sessions=False)
    fetcher.send_requests()
    first = client.take("Fetch")
    assert first[2]["session_epoch"] == -1
    # a full fetch answers every partition asked (left out: asked after the backoff)
    _answer_fetch(client, first, {0: {"records": _batch(0, [b"a"])}, 1: {}})
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 1, 1: 0}


# --- errors ---------------------------------------------------------------------------------------------

def test_out_of_range_resets_by_policy():
    client, fetcher = _positioned({0: 500}, auto_offset_reset="earliest")
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"error_code": 1}})
    assert fetcher.state(TP0).position is None
    fetcher.send_requests()
    request = client.take("ListOffsets")
    assert request[2]["topics"][0]["partitions"][0]["timestamp"] == -2
    _answer_list_offsets(request, {0: 3})
    assert fetcher.state(TP0).position == 3


def test_out_of_range_with_policy_none_raises():
    client, fetcher = _positioned({0: 500}, auto_offset_reset="none")
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"error_code": 1}})
    with pytest.raises(errors.OffsetOutOfRangeError):
        fetcher.raise_pending()
    assert fetcher.state(TP0).position == 500


@pytest.mark.parametrize("code", [3, 6, 74, 75])
def test_leadership_errors_refresh_metadata_and_back_off(code):
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    before = client.metadata_requests
    _answer_fetch(client, client.take("Fetch"), {0: {"error_code": code}})
    assert client.metadata_requests > before
    fetcher.send_requests()
    assert not client.pending("Fetch")  # backing off
    client.now += 1.0
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 0}


def test_lost_connection_resets_the_session_and_retries_later():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    first = client.take("Fetch")
    _answer_fetch(client, first, {0: {"records": _batch(0, [b"a"])}}, session_id=9)
    fetcher.send_requests()
    request = client.take("Fetch")
    request[3](None, errors.KafkaConnectionError("gone"))
    client.now += 1.0
    fetcher.send_requests()
    again = client.take("Fetch")
    assert (again[2]["session_id"], again[2]["session_epoch"]) == (0, 0)
    assert _fetch_offsets(again) == {0: 1}


def test_corrupt_batch_delivers_records_before_it_then_raises():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    good = _batch(0, [b"a", b"b"])
    bad = bg.bad_crc(_batch(2, [b"c"]))
    _answer_fetch(client, client.take("Fetch"), {0: {"records": good + bad}})
    out = fetcher.fetched_records(500)
    assert [r.value for r in out[TP0]] == [b"a", b"b"]
    assert fetcher.state(TP0).position == 2
    with pytest.raises(errors.CorruptRecordError):
        fetcher.raise_pending()
    assert fetcher.state(TP0).position == 2  # left at the bad batch


def test_corrupt_first_batch_raises_at_once_and_stays():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": bg.bad_crc(_batch(0, [b"c"]))}})
    with pytest.raises(errors.CorruptRecordError):
        fetcher.fetched_records(500)
    assert fetcher.state(TP0).position == 0


def test_diverging_epoch_moves_the_position_back():
    client, fetcher = _positioned({0: 0}, auto_offset_reset="earliest")
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b", b"c", b"d"])}})
    fetcher.fetched_records(500)
    assert fetcher.state(TP0).position == 4
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"diverging_epoch": {"epoch": 5, "end_offset": 2}}})
    assert fetcher.state(TP0).position == 2
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 2}


def test_diverging_epoch_with_policy_none_raises_log_truncation():
    client, fetcher = _positioned({0: 0}, auto_offset_reset="none")
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b", b"c"])}})
    fetcher.fetched_records(500)
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"diverging_epoch": {"epoch": 5, "end_offset": 1}}})
    with pytest.raises(errors.LogTruncationError):
        fetcher.raise_pending()


def test_leader_epoch_change_validates_with_offset_for_leader_epoch():
    client, fetcher = _positioned({0: 0}, auto_offset_reset="latest")
    fetcher._metadata_updated()  # the epochs seen so far
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b", b"c"], leader_epoch=5)}})
    fetcher.fetched_records(500)
    assert fetcher.state(TP0).position_epoch == 5
    client.cluster.update(_metadata((0, 1), leader_epoch=6), all_topics=False)
    fetcher._metadata_updated()
    fetcher.send_requests()
    assert not client.pending("Fetch")  # fetching waits for the validation
    node_id, api, body, callback, raw, version = client.take("OffsetForLeaderEpoch")
    part = body["topics"][0]["partitions"][0]
    assert (part["current_leader_epoch"], part["leader_epoch"]) == (6, 5)
    callback({"throttle_time_ms": 0, "topics": [{"topic": TOPIC, "partitions": [
        {"error_code": 0, "partition": 0, "leader_epoch": 5, "end_offset": 1}]}]}, None)
    assert fetcher.state(TP0).position == 1  # truncated log: back to its end
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 1}


def test_preferred_read_replica_is_used_for_the_next_fetch():
    client = ScriptedClient()
    client.cluster.brokers[2] = client.cluster.brokers[1]._replace(node_id=2)
    client, fetcher = _fetcher(client, client_rack="r1")
    fetcher.assign([TP0])
    fetcher.seek(TP0, 0)
    fetcher.send_requests()
    request = client.take("Fetch")
    assert request[0] == 1 and request[2]["rack_id"] == "r1"
    _answer_fetch(client, request, {0: {"preferred_read_replica": 2}})
    fetcher.send_requests()
    assert client.take("Fetch")[0] == 2


def test_fetched_arrow_slices_across_calls_and_advances_positions():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"%d" % i for i in range(5)])}})
    first = fetcher.fetched_arrow(3)
    assert [b.num_rows for b in first] == [3]
    assert first[0].column("offset").to_pylist() == [0, 1, 2]
    assert fetcher.state(TP0).position == 3
    rest = fetcher.fetched_arrow(10)
    assert rest[0].column("value").to_pylist() == [b"3", b"4"]
    assert rest[0].column("partition").to_pylist() == [0, 0]
    assert fetcher.state(TP0).position == 5
    assert fetcher.metrics["records-consumed-total"] == 5
    assert fetcher.metrics["bytes-consumed-total"] > 0


def test_close_sessions_sends_the_final_epoch_once_no_fetch_is_in_flight():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a"])}}, session_id=9)
    fetcher.send_requests()
    in_flight = client.take("Fetch")
    assert fetcher.close_sessions() == set()  # a fetch is on the wire: left alone
    _answer_fetch(client, in_flight, {}, session_id=9)
    pending = fetcher.close_sessions()
    assert pending == {1}
    node_id, api, body, callback, raw, version = client.take("Fetch")
    assert (body["session_id"], body["session_epoch"], body["topics"]) == (9, -1, [])
    callback((b"", version), None)
    assert pending == set()


def test_update_offsets_false_leaves_the_position_and_fetches_again():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(0, [b"a", b"b"])}})
    fetcher.send_requests()  # the pipelined fetch from offset 2 goes out
    out = fetcher.fetched_records(500, update_offsets=False)
    assert [r.value for r in out[TP0]] == [b"a", b"b"]
    assert fetcher.state(TP0).position == 0
    assert fetcher.buffered_bytes() == 0
    pending = client.pending("Fetch")
    # the pipelined fetch (offset 2) is stale now; the next one asks from the position again
    assert [_fetch_offsets(p) for p in pending] == [{0: 2}]
    _answer_fetch(client, client.take("Fetch"), {0: {"records": _batch(2, [b"c"])}})
    assert fetcher.fetched_records(500) == {}  # stale answer dropped
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 0}


def test_topic_ids_from_fetch_v13():
    client, fetcher = _fetcher()
    client.conn.fetch_version = 17
    fetcher.assign([TP0])
    fetcher.seek(TP0, 0)
    fetcher.send_requests()
    request = client.take("Fetch")
    assert request[5] == 17
    assert request[2]["topics"][0]["topic_id"] == TOPIC_ID and "topic" not in request[2]["topics"][0]
    _answer_fetch(client, request, {0: {"records": _batch(0, [b"a"])}})
    assert [r.topic for r in fetcher.fetched_records(500)[TP0]] == [TOPIC]


def test_topic_without_id_falls_back_to_names():
    client, fetcher = _fetcher()
    client.conn.fetch_version = 17
    meta = _metadata((0,), 5)
    meta["topics"][0]["topic_id"] = bytes(16)  # a broker without topic ids
    client.cluster.update(meta, all_topics=False)
    fetcher.assign([TP0])
    fetcher.seek(TP0, 0)
    fetcher.send_requests()
    request = client.take("Fetch")
    assert request[5] == 12 and request[2]["topics"][0]["topic"] == TOPIC



def test_malformed_header_is_raised_from_poll_not_refetched_silently():
    client, fetcher = _positioned({0: 0})
    fetcher.send_requests()
    bad = bytearray(_batch(0, [b"a"]))
    bad[8:12] = (-1).to_bytes(4, "big", signed=True)
    _answer_fetch(client, client.take("Fetch"), {0: {"records": bytes(bad)}})
    fetcher.send_requests()
    assert not client.pending("Fetch")  # stalled until poll has raised
    with pytest.raises(errors.CorruptRecordError):
        fetcher.fetched_records(500)
    assert fetcher.state(TP0).position == 0
    client.now += 1.0  # after the retry backoff the partition is fetched again
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 0}


def test_a_full_fetch_answer_leaving_partitions_out_backs_them_off():
    # a broker that answers at once without the partitions must not be
    # fetched from in a loop: they wait retry_backoff_ms
    client, fetcher = _positioned({0: 0, 1: 0}, enable_incremental_fetch_sessions=False)
    fetcher.send_requests()
    _answer_fetch(client, client.take("Fetch"), {0: {}})
    fetcher.send_requests()
    second = client.take("Fetch")
    assert _fetch_offsets(second) == {0: 0}
    _answer_fetch(client, second, {0: {}})
    client.now += fetcher.config["retry_backoff_ms"] / 1000.0 + 0.001
    fetcher.send_requests()
    assert _fetch_offsets(client.take("Fetch")) == {0: 0, 1: 0}


def test_partition_order_rotates_between_fetches():
    client, fetcher = _positioned({0: 0, 1: 0}, enable_incremental_fetch_sessions=False)
    orders = []
    for _ in range(2):
        fetcher.send_requests()
        request = client.take("Fetch")
        orders.append([p["partition"] for p in request[2]["topics"][0]["partitions"]])
        _answer_fetch(client, request, {0: {}, 1: {}})
    assert sorted(orders) == [[0, 1], [1, 0]]
