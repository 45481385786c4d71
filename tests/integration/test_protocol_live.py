"""The protocol layer against a real Kafka broker (the `kafka_broker` fixture):
ApiVersions negotiation, Metadata, ListOffsets, Fetch (records checked
against what an independent producer wrote), and the group APIs, each at
several versions."""
import time

import pytest

from fastkc import records as fastkc_records
from fastkc.errors import IllegalArgumentError
from fastkc.net.blocking import BlockingConnection
from fastkc.protocol import codec
from fastkc.protocol.messages import ALL_APIS
from tests.support.kafka_tools import Message, produce

FETCH_VERSIONS = [4, 5, 7, 11, 12, 13, 15, 16, 17, 18]


def _skip_unless_spoken(conn, api_name, version):
    """Older brokers (the 3.9 line) stop below the newest versions; newer ones
    dropped the oldest. Only versions both sides speak are sent."""
    from fastkc.protocol.messages import get_api

    lo, hi = conn.api_versions[get_api(api_name).key]
    if not lo <= version <= hi:
        pytest.skip("broker speaks {0} v{1}-v{2}".format(api_name, lo, hi))


def _connect(broker):
    host, port = broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return BlockingConnection(host, int(port), client_id="fastkc-live-test", timeout=15.0)


@pytest.fixture(scope="module")
def written(kafka_broker):
    from tests.support.kafka_tools import create_topic, unique_name

    topic = unique_name("protocol-live")
    create_topic(kafka_broker.bootstrap_servers, topic, partitions=2)
    messages = [
        Message(key=b"k%d" % i, value=b"v%d" % i if i != 3 else None, headers=(("h", b"x"),), partition=0)
        for i in range(7)
    ]
    return topic, produce(kafka_broker.bootstrap_servers, topic, messages)


# Advertised only where the broker has share groups on (the share.version feature, Kafka 4.1+)
SHARE_GROUP_APIS = ("ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge")


def _features(conn):
    return {f["name"]: f["max_version_level"] for f in conn.api_versions_response["finalized_features"]}


def test_api_versions_negotiated_on_connect(kafka_broker):
    with _connect(kafka_broker) as conn:
        share_groups = _features(conn).get("share.version", 0) >= 1
        for api in ALL_APIS:
            if api.name in SHARE_GROUP_APIS:
                assert (api.key in conn.api_versions) == share_groups, api.name
                if not share_groups:
                    continue
            assert api.key in conn.api_versions, api.name
            lo, hi = conn.api_versions[api.key]
            assert lo <= hi
        assert conn.api_versions[18][1] >= 3  # a 4.x broker answers ApiVersions v3+
        assert conn.api_versions_response["error_code"] == 0
        # every version in the broker's range that we declare encodes and is served
        for version in range(0, conn.api_versions[18][1] + 1):
            answer = conn.request("ApiVersions", {"client_software_name": "t", "client_software_version": "1"},
                                  version=version)
            assert answer["error_code"] == 0
            assert {k["api_key"] for k in answer["api_keys"]} == set(conn.api_versions)


@pytest.mark.parametrize("version", [0, 1, 4, 7, 9, 10, 12, 13])
def test_metadata(kafka_broker, written, version):
    topic, _ = written
    with _connect(kafka_broker) as conn:
        _skip_unless_spoken(conn, "Metadata", version)
        meta = conn.request("Metadata", {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
                            version=version)
    assert [b["port"] for b in meta["brokers"]] == [conn.port]
    (t,) = meta["topics"]
    assert (t["name"], t["error_code"]) == (topic, 0)
    assert sorted(p["partition_index"] for p in t["partitions"]) == [0, 1]
    node_ids = {b["node_id"] for b in meta["brokers"]}
    assert all(p["leader_id"] in node_ids for p in t["partitions"])
    if version >= 10:
        assert t["topic_id"] != bytes(16)
    else:
        assert t["topic_id"] == bytes(16)  # absent before v10: the default
    if version >= 2:
        assert meta["cluster_id"]


@pytest.mark.parametrize("version", [1, 2, 4, 6, 8, 10, 11])
def test_list_offsets(kafka_broker, written, version):
    topic, records = written
    with _connect(kafka_broker) as conn:
        _skip_unless_spoken(conn, "ListOffsets", version)
        answer = conn.request("ListOffsets", {
            "replica_id": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "timestamp": -1},
                {"partition_index": 1, "timestamp": -2},
            ]}],
        }, version=version)
    parts = {p["partition_index"]: p for p in answer["topics"][0]["partitions"]}
    assert parts[0]["error_code"] == 0 and parts[0]["offset"] == len(records)
    assert parts[1]["error_code"] == 0 and parts[1]["offset"] == 0


def _fetch_body(topic, topic_id, offset=0):
    return {
        "max_wait_ms": 200,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 1,
        "topics": [{
            "topic": topic,
            "topic_id": topic_id,
            "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}],
        }],
    }


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_records_equal_what_was_produced(kafka_broker, written, version):
    topic, records = written
    with _connect(kafka_broker) as conn:
        _skip_unless_spoken(conn, "Fetch", version)
        topic_id = conn.request("Metadata", {"topics": [{"name": topic}]})["topics"][0]["topic_id"]
        payload = conn.request_raw("Fetch", _fetch_body(topic, topic_id), version=version)
    cid, body = codec.decode_response("Fetch", version, payload)
    assert body["error_code"] == 0
    (t,) = body["responses"]
    if version >= 13:
        assert t["topic_id"] == topic_id
    else:
        assert t["topic"] == topic
    (p,) = t["partitions"]
    assert p["error_code"] == 0
    assert p["high_watermark"] == len(records) and p["last_stable_offset"] == len(records)
    decoded = fastkc_records.decode(p["records"], topic=topic, partition=0)
    got = [(r.offset, r.key, r.value, list(r.headers)) for r in decoded]
    want = [(w.offset, w.key, w.value, [(k, v) for k, v in w.headers]) for w in records]
    assert got == want
    # the oracle view the compiled Fetch parser is compared against
    as_struct = codec.to_fetch_response(cid, body, version)
    assert as_struct.topics[0].partitions[0].records == p["records"]
    from fastkc._core.fetch import parse_fetch_response

    compiled = parse_fetch_response(payload, version)
    assert compiled.correlation_id == cid
    cp = compiled.topics[0].partitions[0]
    assert bytes(cp.records) == p["records"]
    assert (cp.high_watermark, cp.last_stable_offset, cp.aborted_transactions) == (
        p["high_watermark"], p["last_stable_offset"], as_struct.topics[0].partitions[0].aborted_transactions)


def test_offset_for_leader_epoch(kafka_broker, written):
    topic, records = written
    with _connect(kafka_broker) as conn:
        for version in (2, 3, 4):
            answer = conn.request("OffsetForLeaderEpoch", {
                "replica_id": -1,
                "topics": [{"topic": topic, "partitions": [{"partition": 0, "leader_epoch": 0}]}],
            }, version=version)
            (p,) = answer["topics"][0]["partitions"]
            assert p["error_code"] == 0 and p["end_offset"] == len(records)


def test_version_outside_both_ranges_is_refused_before_sending(kafka_broker):
    with _connect(kafka_broker) as conn:
        with pytest.raises(IllegalArgumentError, match="Fetch v3"):
            conn.request("Fetch", {}, version=3)
        assert not conn.closed  # nothing was sent: the connection is still usable
        assert conn.request("Metadata", {"topics": []})["brokers"]


def _find_coordinator(conn, group, version):
    body = {"key": group, "key_type": 0, "coordinator_keys": [group]}
    for _ in range(60):
        answer = conn.request("FindCoordinator", body, version=version)
        error = answer["coordinators"][0]["error_code"] if version >= 4 else answer["error_code"]
        if error != 15:  # COORDINATOR_NOT_AVAILABLE until __consumer_offsets exists
            return answer, error
        time.sleep(0.5)
    raise AssertionError("no coordinator")


def test_classic_group_round(kafka_broker, written):
    topic, _ = written
    group = "protocol-live-group-%d" % time.time_ns()
    with _connect(kafka_broker) as conn:
        for version in (0, 3, 4, 6):
            answer, error = _find_coordinator(conn, group, version)
            assert error == 0
            node = answer["coordinators"][0]["node_id"] if version >= 4 else answer["node_id"]
            assert node >= 0
        join_body = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                     "member_id": "", "protocol_type": "consumer",
                     "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}
        joined = conn.request("JoinGroup", join_body)
        if joined["error_code"] == 79:  # MEMBER_ID_REQUIRED: join again with the given id
            join_body["member_id"] = joined["member_id"]
            joined = conn.request("JoinGroup", join_body)
        assert joined["error_code"] == 0
        member, generation = joined["member_id"], joined["generation_id"]
        assert joined["leader"] == member and joined["protocol_name"] == "range"
        assert [m["metadata"] for m in joined["members"]] == [b"\x00\x01"]
        synced = conn.request("SyncGroup", {
            "group_id": group, "generation_id": generation, "member_id": member,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": b"assigned"}]})
        assert synced["error_code"] == 0 and synced["assignment"] == b"assigned"
        assert conn.request("Heartbeat", {"group_id": group, "generation_id": generation,
                                          "member_id": member})["error_code"] == 0
        committed = conn.request("OffsetCommit", {
            "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_metadata": "m"}]}]}, version=9)
        assert committed["topics"][0]["partitions"][0]["error_code"] == 0
        for version in (1, 5, 7, 8, 9):
            if version >= 8:
                body = {"groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}]}
            else:
                body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
            fetched = conn.request("OffsetFetch", body, version=version)
            parts = (fetched["groups"][0]["topics"][0]["partitions"] if version >= 8
                     else fetched["topics"][0]["partitions"])
            assert (parts[0]["committed_offset"], parts[0]["metadata"], parts[0]["error_code"]) == (5, "m", 0)
        left = conn.request("LeaveGroup", {"group_id": group, "members": [{"member_id": member}]})
        assert left["error_code"] == 0 and left["members"][0]["error_code"] == 0


def test_consumer_group_heartbeat_join_and_leave(kafka_broker, written):
    topic, _ = written
    group = "protocol-live-848-%d" % time.time_ns()
    with _connect(kafka_broker) as conn:
        if _features(conn).get("group.version", 0) < 1:
            pytest.skip("the broker has not enabled KIP-848 groups (group.version feature)")
        _find_coordinator(conn, group, 6)
        body = {"group_id": group, "member_id": "fastkc-member-id-000001", "member_epoch": 0,
                "rebalance_timeout_ms": 10000, "subscribed_topic_names": [topic], "topic_partitions": []}
        answer = conn.request("ConsumerGroupHeartbeat", body)
        assert answer["error_code"] == 0, answer
        assert answer["member_epoch"] >= 1 and answer["heartbeat_interval_ms"] > 0
        body.update(member_epoch=-1)  # leave the group
        assert conn.request("ConsumerGroupHeartbeat", body)["error_code"] == 0


def test_share_group_apis_join_fetch_acknowledge_describe_and_leave(kafka_broker, written):
    """ShareGroupHeartbeat, ShareFetch (v1 and v2), ShareAcknowledge and
    ShareGroupDescribe as declared, against the real broker; the group is
    set to start at the earliest offset with IncrementalAlterConfigs first."""
    topic, messages = written
    group = "protocol-live-share-%d" % time.time_ns()
    member = "fastkc-share-member-00001"
    with _connect(kafka_broker) as conn:
        if _features(conn).get("share.version", 0) < 1:
            pytest.skip("the broker has not enabled share groups (share.version feature)")
        altered = conn.request("IncrementalAlterConfigs", {"resources": [{
            "resource_type": 32, "resource_name": group,  # a GROUP resource
            "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]})
        assert [r["error_code"] for r in altered["responses"]] == [0], altered
        _find_coordinator(conn, group, 6)
        topic_id = conn.request("Metadata", {"topics": [{"name": topic}]})["topics"][0]["topic_id"]
        epoch, assigned, deadline = 0, [], time.monotonic() + 30
        while not assigned:
            answer = conn.request("ShareGroupHeartbeat", {"group_id": group, "member_id": member,
                                                          "member_epoch": epoch, "subscribed_topic_names": [topic]})
            assert answer["error_code"] == 0, answer
            epoch = answer["member_epoch"]
            if answer["assignment"] is not None:
                assigned = answer["assignment"]["topic_partitions"]
            assert time.monotonic() < deadline, "no assignment"
            time.sleep(0.2)
        assert [(t["topic_id"], sorted(t["partitions"])) for t in assigned] == [(topic_id, [0, 1])]
        partitions = [{"partition_index": 0, "acknowledgement_batches": []}]
        fetch = {"group_id": group, "member_id": member, "share_session_epoch": 0, "max_wait_ms": 5000,
                 "min_bytes": 1, "max_records": 100, "batch_size": 100,
                 "topics": [{"topic_id": topic_id, "partitions": partitions}]}
        answer = conn.request("ShareFetch", fetch, version=1)
        assert answer["error_code"] == 0 and answer["acquisition_lock_timeout_ms"] > 0, answer
        (part,) = answer["responses"][0]["partitions"]
        assert part["error_code"] == 0 and part["records"]
        assert part["acquired_records"] == [{"first_offset": 0, "last_offset": len(messages) - 1,
                                             "delivery_count": 1}]
        # the acquired range REJECTed in a ShareFetch v2 (KIP-1222's version) of the same session
        partitions[0]["acknowledgement_batches"] = [
            {"first_offset": 0, "last_offset": len(messages) - 1, "acknowledge_types": [3]}]
        fetch.update(share_session_epoch=1, max_wait_ms=0)
        answer = conn.request("ShareFetch", fetch, version=2)
        (part,) = answer["responses"][0]["partitions"]
        assert (answer["error_code"], part["error_code"], part["acknowledge_error_code"]) == (0, 0, 0), answer
        assert part["acquired_records"] == []  # rejected: never delivered again
        # closing the session (epoch -1) through ShareAcknowledge
        answer = conn.request("ShareAcknowledge", {"group_id": group, "member_id": member,
                                                   "share_session_epoch": -1, "topics": []})
        assert answer["error_code"] == 0, answer
        described = conn.request("ShareGroupDescribe", {"group_ids": [group], "include_authorized_operations": True})
        (described_group,) = described["groups"]
        assert (described_group["error_code"], described_group["assignor_name"]) == (0, "simple")
        (described_member,) = described_group["members"]
        assert described_member["member_id"] == member
        assert described_member["assignment"]["topic_partitions"][0]["topic_name"] == topic
        left = conn.request("ShareGroupHeartbeat", {"group_id": group, "member_id": member, "member_epoch": -1})
        assert (left["error_code"], left["member_epoch"]) == (0, -1)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_configs(kafka_broker, written, version):
    topic, _ = written
    with _connect(kafka_broker) as conn:
        _skip_unless_spoken(conn, "DescribeConfigs", version)
        answer = conn.request("DescribeConfigs", {
            "resources": [{"resource_type": 2, "resource_name": topic,
                           "configuration_keys": ["cleanup.policy", "retention.ms"]}],
            "include_documentation": True,
        }, version=version)
    (result,) = answer["results"]
    assert (result["error_code"], result["resource_name"]) == (0, topic)
    configs = {c["name"]: c for c in result["configs"]}
    assert set(configs) == {"cleanup.policy", "retention.ms"}
    assert configs["cleanup.policy"]["value"] == "delete"
    if version >= 3:
        assert configs["retention.ms"]["documentation"]


# --- TLS and SASL through BlockingConnection (a broker with --security) ------------


def _address(info, listener):
    host, port = info.listeners[listener].split(",")[0].rsplit(":", 1)
    return host, int(port)


def _tls_context(info, client_cert):
    import ssl

    ctx = ssl.create_default_context(cafile=info.tls["ca"])
    if client_cert:
        ctx.load_cert_chain(info.tls["client_cert"], info.tls["client_key"])
    return ctx


def _sasl_plain(conn, user, password):
    handshake = conn.request("SaslHandshake", {"mechanism": "PLAIN"})
    assert handshake["error_code"] == 0 and "PLAIN" in handshake["mechanisms"]
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return conn.request("SaslAuthenticate", {"auth_bytes": token})


@pytest.mark.broker
def test_tls_with_client_certificate(secure_broker):
    host, port = _address(secure_broker, "SSL")
    with BlockingConnection(host, port, ssl_context=_tls_context(secure_broker, True), timeout=15) as conn:
        assert [b["port"] for b in conn.request("Metadata", {"topics": []})["brokers"]] == [port]


@pytest.mark.broker
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_plain_then_requests(secure_broker, listener):
    host, port = _address(secure_broker, listener)
    ctx = _tls_context(secure_broker, False) if listener == "SASL_SSL" else None
    user = "alice"
    password = secure_broker.credentials["users"][user]
    with BlockingConnection(host, port, ssl_context=ctx, timeout=15) as conn:
        answer = _sasl_plain(conn, user, password)
        assert answer["error_code"] == 0 and answer["error_message"] in ("", None)
        assert [b["port"] for b in conn.request("Metadata", {"topics": []})["brokers"]] == [port]


@pytest.mark.broker
def test_sasl_wrong_password_is_refused(secure_broker):
    host, port = _address(secure_broker, "SASL_PLAINTEXT")
    with BlockingConnection(host, port, timeout=15) as conn:
        answer = _sasl_plain(conn, "alice", "not-her-password")
    assert answer["error_code"] == 58  # SASL_AUTHENTICATION_FAILED
    assert "Authentication failed" in answer["error_message"]
