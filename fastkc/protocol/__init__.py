"""Kafka wire protocol: declarative schemas (messages.py, in the compact form
of schema.py) and the one generic codec driven by them (codec.py).
Connections, which frame the payloads, live in fastkc.net."""
from fastkc.protocol.codec import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    to_fetch_response,
)
from fastkc.protocol.messages import ALL_APIS, APIS_BY_KEY, APIS_BY_NAME, get_api

__all__ = [
    "ALL_APIS",
    "APIS_BY_KEY",
    "APIS_BY_NAME",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_body",
    "encode_request",
    "encode_response",
    "get_api",
    "to_fetch_response",
]
