"""Real broker bytes, no broker needed: every Fetch response captured by
tests/corpus/capture.py (Kafka 4.3.1, data written by librdkafka) must parse,
and each partition's records must decode to EXACTLY what the producer wrote
— all codecs, headers, nulls, committed and aborted transactions,
LogAppendTime — with both Fetch parsers and both decoding backends.
"""
import base64
import json
import os

import pytest

from fastkc import records
from fastkc._core.fetch import parse_fetch_response
from fastkc.protocol import codec

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "fetch")
with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as _fh:
    MANIFEST = json.load(_fh)

CAPTURES = MANIFEST["captures"]
TOPICS = MANIFEST["topics"]
TOPIC_BY_ID = {bytes.fromhex(info["topic_id"]): name for name, info in TOPICS.items()}


def _b(text):
    return None if text is None else base64.b64decode(text)


def _produced(name):
    return [dict(r, key=_b(r["key"]), value=_b(r["value"]),
                 headers=[(k, _b(v)) for k, v in r["headers"]]) for r in TOPICS[name]["records"]]


PRODUCED = {name: _produced(name) for name in TOPICS}


def _parse_with_codec(raw, version):
    correlation_id, body = codec.decode_response("Fetch", version, raw)
    return codec.to_fetch_response(correlation_id, body, version)


@pytest.fixture(params=["c", "codec"])
def parse_fetch(request):
    if request.param == "c":
        return parse_fetch_response
    return _parse_with_codec


def _read(capture):
    with open(os.path.join(CORPUS, capture["file"]), "rb") as fh:
        return fh.read()


def _expected(name, partition, fetch_offset, complete_through, read_committed):
    return [r for r in PRODUCED[name]
            if r["partition"] == partition
            and fetch_offset <= r["offset"] <= complete_through
            and not (read_committed and r["transaction"] == "aborted")]


def test_corpus_is_small_and_covers_what_it_claims():
    total = sum(os.path.getsize(os.path.join(CORPUS, f)) for f in os.listdir(CORPUS))
    assert total < 2 * 1024 * 1024
    assert {c["api_version"] for c in CAPTURES} >= {4, 12, 13, 18}
    assert {c["isolation_level"] for c in CAPTURES} == {0, 1}
    assert {info["codec"] for info in TOPICS.values()} == {"none", "gzip", "snappy", "lz4", "zstd"}
    outcomes = {r["transaction"] for recs in PRODUCED.values() for r in recs}
    assert outcomes == {None, "committed", "aborted"}
    assert any(r["timestamp_type"] == 1 for recs in PRODUCED.values() for r in recs)
    assert any(r["key"] is None for recs in PRODUCED.values() for r in recs)
    assert any(r["value"] is None for recs in PRODUCED.values() for r in recs)
    # The "cut" captures really end inside a batch somewhere.
    assert any(p["complete_through"] < max(r["offset"] for r in PRODUCED[name] if r["partition"] == int(pi))
               for c in CAPTURES if c["variant"] == "cut"
               for name, parts in c["partitions"].items() for pi, p in parts.items())


@pytest.mark.parametrize("capture", CAPTURES, ids=[c["file"] for c in CAPTURES])
def test_captured_fetch_decodes_to_the_produced_records(capture, parse_fetch, backend):
    version = capture["api_version"]
    read_committed = capture["isolation_level"] == 1
    response = parse_fetch(_read(capture), version)
    assert response.correlation_id == capture["correlation_id"]
    assert response.error_code == 0
    seen = set()
    for topic in response.topics:
        name = topic.topic if version < 13 else TOPIC_BY_ID[bytes(topic.topic_id)]
        for part in topic.partitions:
            params = capture["partitions"][name][str(part.partition)]
            seen.add((name, part.partition))
            assert part.error_code == 0
            if capture["variant"] != "cut":
                # Untruncated: the frame walk reaches the broker's high watermark
                # (a control marker may hold the last offset).
                assert params["complete_through"] == part.high_watermark - 1
                assert part.last_stable_offset == part.high_watermark
            aborted = part.aborted_transactions
            if read_committed and capture["variant"] == "full":
                # The broker lists exactly the aborted transactions the producer made.
                expected_aborted = sorted(first for p, first in TOPICS[name]["aborted_transactions"]
                                          if p == part.partition)
                assert sorted(first for _, first in (aborted or [])) == expected_aborted
            if not read_committed:
                assert not aborted  # only read_committed fetches carry them

            decoded = records.decode_partition(
                part.records if part.records is not None else b"",
                topic=name,
                partition=part.partition,
                fetch_offset=params["fetch_offset"],
                isolation_level="read_committed" if read_committed else "read_uncommitted",
                aborted_transactions=aborted or (),
            )
            want = _expected(name, part.partition, params["fetch_offset"], params["complete_through"],
                             read_committed)
            got = [
                {"offset": r.offset, "key": r.key, "value": r.value, "headers": list(r.headers),
                 "timestamp": r.timestamp, "timestamp_type": r.timestamp_type}
                for r in decoded.records
            ]
            assert got == [
                {"offset": r["offset"], "key": r["key"], "value": r["value"], "headers": r["headers"],
                 "timestamp": r["timestamp"], "timestamp_type": r["timestamp_type"]}
                for r in want
            ], (capture["file"], name, part.partition)
            assert all(r.topic == name and r.partition == part.partition for r in decoded.records)
            assert [r.serialized_key_size for r in decoded.records] == [
                -1 if r["key"] is None else len(r["key"]) for r in want]
            assert [r.serialized_value_size for r in decoded.records] == [
                -1 if r["value"] is None else len(r["value"]) for r in want]
            if params["complete_through"] >= params["fetch_offset"]:
                assert decoded.next_offset == params["complete_through"] + 1
            else:
                # Nothing complete at or past the fetch offset: stay put.
                assert decoded.next_offset <= params["fetch_offset"]
    assert seen == {(name, int(p)) for name, parts in capture["partitions"].items() for p in parts}


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c["variant"] == "full"],
                         ids=[c["file"] for c in CAPTURES if c["variant"] == "full"])
def test_compiled_parser_agrees_with_the_codec(capture):
    raw = _read(capture)
    fast = parse_fetch_response(raw, capture["api_version"])
    oracle = _parse_with_codec(raw, capture["api_version"])

    def plain(resp):
        return [(t.topic, None if t.topic_id is None else bytes(t.topic_id),
                 [(p._replace(records=None), None if p.records is None else bytes(p.records))
                  for p in t.partitions]) for t in resp.topics]

    assert fast._replace(topics=None) == oracle._replace(topics=None)
    assert plain(fast) == plain(oracle)
