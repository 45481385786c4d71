"""The Arrow schema of decoded records, in a leaf module: the compiled core's
bridge, the pure-Python twin and the public `fastkc.records` all use it, and
the twin must not import `fastkc.records` (which chooses the backend, which
imports the twin)."""
from typing import Any


def arrow_schema(zero_copy: bool = False) -> Any:  # a pyarrow.Schema (pyarrow is untyped here)
    """key binary, value binary, topic string, partition int32, offset int64,
    timestamp timestamp[us, UTC], timestampType int32,
    headers list<struct<key: string, value: binary>> — all nullable.
    zero_copy=True: key and value are binary_view (see decode_arrow)."""
    import pyarrow as pa

    kv = pa.binary_view() if zero_copy else pa.binary()
    return pa.schema(
        [
            pa.field("key", kv),
            pa.field("value", kv),
            pa.field("topic", pa.string()),
            pa.field("partition", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("timestamp", pa.timestamp("us", tz="UTC")),
            pa.field("timestampType", pa.int32()),
            pa.field(
                "headers",
                pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])),
            ),
        ]
    )


def share_arrow_schema(zero_copy: bool = False) -> Any:
    """arrow_schema(zero_copy) plus `delivery_count` int16 (not null): the
    Arrow form of a share group's records (decode_share_arrow), each with how
    many times the broker has delivered it."""
    import pyarrow as pa

    return arrow_schema(zero_copy).append(pa.field("delivery_count", pa.int16(), nullable=False))
