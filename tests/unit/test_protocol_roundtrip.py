"""Property tests of the generic codec over every declared API, version and
direction: encode -> decode gives the value back; kafka-python's independent
JSON-driven codec reads our bytes to the same values and re-encodes them to
the same bytes; corrupted bytes raise only ProtocolParseError.

FASTKC_SLOW=1 raises the number of examples per case.
"""
import os
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkc.errors import ProtocolParseError
from fastkc.protocol import codec
from fastkc.protocol.schema import in_range
from tests.support.protocol_strategies import MESSAGE_CASES, message_case_id, message_values

SLOW = os.environ.get("FASTKC_SLOW", "") not in ("", "0")
EXAMPLES = 300 if SLOW else 15

CASES = MESSAGE_CASES
_case_id = message_case_id


_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_encode_decode_round_trip(case):
    name, version, response = case

    @_settings
    @given(message_values(name, version, response=response))
    def check(value):
        if response:
            data = codec.encode_response(name, version, value, correlation_id=42)
            cid, decoded = codec.decode_response(name, version, data)
            assert cid == 42
        else:
            data = codec.encode_request(name, version, value, correlation_id=42, client_id="c")
            header, decoded = codec.decode_request(data)
            assert (header["api_name"], header["api_version"], header["correlation_id"]) == (name, version, 42)
        assert decoded == value
        # encoding is deterministic: the decoded value encodes to the same bytes
        if response:
            assert codec.encode_response(name, version, decoded, correlation_id=42) == data
        else:
            assert codec.encode_request(name, version, decoded, correlation_id=42, client_id="c") == data

    check()


# --- kafka-python's codec as an independent reader ---------------------------------
def _kafka_python_class(name, response):
    import kafka.protocol.admin.configs  # noqa: F401  (import registers the classes)
    import kafka.protocol.admin.topics  # noqa: F401
    import kafka.protocol.consumer.fetch  # noqa: F401
    import kafka.protocol.consumer.group  # noqa: F401
    import kafka.protocol.consumer.offsets  # noqa: F401
    import kafka.protocol.metadata.api_versions  # noqa: F401
    import kafka.protocol.metadata.find_coordinator  # noqa: F401
    import kafka.protocol.metadata.metadata  # noqa: F401
    import kafka.protocol.sasl  # noqa: F401
    from kafka.protocol.api_message import ApiMessage

    wanted = name + ("Response" if response else "Request")
    stack = [ApiMessage]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub.__name__ == wanted:
                return sub
            stack.append(sub)
    return None


def _project(value, struct, version):
    """Our value as kafka-python shows it: fields of the version only, tagged
    structs that are not sent as None, uuids as bytes."""
    out = {}
    for f in struct.fields:
        if not in_range(version, f.versions) or f.name in _KAFKA_PYTHON_RESHAPED:
            continue
        v = value[f.name]
        if f.type == "struct" and v is not None:
            v = None if (f.tag is not None and v == f.default()) else _project(v, f.struct, version)
        elif f.type == "array" and v is not None and not isinstance(f.item, str):
            v = [_project(e, f.item, version) for e in v]
        out[f.name] = v
    return out


# kafka-python turns these int32 bit sets into a set of operation names under
# another attribute; they are compared through the re-encoded bytes only.
_KAFKA_PYTHON_RESHAPED = frozenset(["cluster_authorized_operations", "topic_authorized_operations"])


def _read_kafka_python(obj, struct, version):
    """kafka-python's decoded object read field by field through its
    attributes (its to_dict() renames and reshapes some fields)."""
    out = {}
    for f in struct.fields:
        if not in_range(version, f.versions) or f.name in _KAFKA_PYTHON_RESHAPED:
            continue
        v = getattr(obj, f.name)
        if v is None and f.type == "uuid":
            v = bytes(16)  # kafka-python shows the zero uuid as None
        if v is not None and f.type == "struct":
            v = _read_kafka_python(v, f.struct, version)
        elif v is not None and f.type == "array":
            if isinstance(f.item, str):
                v = [_normalise(x) for x in v]
            else:
                v = [_read_kafka_python(x, f.item, version) for x in v]
        out[f.name] = _normalise(v)
    return out


def _normalise(v):
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, (memoryview, bytearray)):
        return bytes(v)
    return v


# kafka-python 3.0 has no classes for these (it knows only their API keys)
_NOT_IN_KAFKA_PYTHON = frozenset(
    ["ConsumerGroupHeartbeat", "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge"])
DIFF_CASES = [c for c in CASES if c[0] not in _NOT_IN_KAFKA_PYTHON]


@pytest.mark.parametrize("case", DIFF_CASES, ids=_case_id)
def test_kafka_python_reads_our_bytes_identically(case):
    name, version, response = case
    kp_class = _kafka_python_class(name, response)
    assert kp_class is not None, "kafka-python has no class for " + _case_id(case)
    from fastkc.protocol.messages import get_api

    api = get_api(name)
    struct = api.response if response else api.request

    @_settings
    @given(message_values(name, version, response=response, unknown_tags=False))
    def check(value):
        if name == "ApiVersions" and response:
            # kafka-python reads any failed ApiVersions answer in the v0 layout
            # (Kafka does that only for UNSUPPORTED_VERSION); compare successes
            value["error_code"] = 0
        data = codec.encode_body(name, version, value, response=response)
        theirs = kp_class.decode(data, version=version)
        assert _read_kafka_python(theirs, struct, version) == _project(value, struct, version)
        theirs._header = None  # some kafka-python classes re-set the version on encode and expect it
        assert bytes(theirs.encode()) == data

    check()


# --- corruption: only the typed error, never anything else ----------------------------
@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 16, 18])
def test_corrupted_fetch_responses_raise_only_the_typed_error(version):
    @_settings
    @given(message_values("Fetch", version, response=True), st.data())
    def check(value, data):
        raw = bytearray(codec.encode_response("Fetch", version, value, correlation_id=1))
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(0, len(raw)))
        try:
            codec.decode_response("Fetch", version, bytes(raw[:cut]))
        except ProtocolParseError as exc:
            assert 0 <= exc.position <= cut

    check()


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_random_bytes_raise_only_the_typed_error(case):
    name, version, response = case

    @_settings
    @given(st.binary(max_size=64))
    def check(data):
        try:
            if response:
                codec.decode_response(name, version, data)
            else:
                codec.decode_body(name, version, data, response=False)
        except ProtocolParseError as exc:
            assert 0 <= exc.position <= len(data)

    check()
