"""Choose the decoding backend once, at import time, and say which.

`impl` is a module exposing the backend contract (see fastkc/_twin/records.py
for the reference implementation):

  decode_partition(data, topic, partition, fetch_offset, stop_offset,
                   check_crcs, read_committed, aborted_transactions,
                   key_deserializer, value_deserializer,
                   max_decompressed_bytes, max_batch_records=0) -> DecodedPartition
  decode_partition_arrow(data, topic, partition, fetch_offset, stop_offset,
                   check_crcs, read_committed, aborted_transactions,
                   max_decompressed_bytes, max_batch_records=0) -> DecodedPartition
                   (records is a pyarrow.RecordBatch)
  decode_share(data, topic, partition, acquired, check_crcs,
                   key_deserializer, value_deserializer,
                   max_decompressed_bytes, max_batch_records=0) -> ShareDecoded
  decode_share_arrow(data, topic, partition, acquired, check_crcs,
                   max_decompressed_bytes, max_batch_records=0,
                   zero_copy=False) -> ShareDecoded (records: a RecordBatch
                   with a delivery_count column)
      (acquired: checked (first, last, delivery_count) int triples, sorted
      and disjoint, fastkc.share_ranges.checked_acquired; a corrupt batch
      raises its CorruptRecordError with .share set)
  scan_blob(data) -> fastkc.structs.ScanInfo (the framing, headers only)
  replace_fields(records, fields) -> list: the records (tuples of one
      type) rebuilt with slot `index` of record i holding values[i], for
      each (index, values) of `fields` (the batch deserializers' step)
  check_blob(data, topic, partition, position) -> (records, next_offset)
      (the benchmark ceiling's CRC-only walk of complete v2 batches)
  RecordStream(data, topic, partition, fetch_offset, stop_offset, check_crcs,
               read_committed, aborted_transactions, max_decompressed_bytes,
               max_batch_records, arrow=False, key_deserializer=None,
               value_deserializer=None)
      .records(max_records, max_held_bytes=None) -> list
      .arrow(max_records, max_held_bytes=None, base=None, builder=None)
          -> RecordBatch; with builder, the records are appended to it and
          the count appended is returned
      .next_offset, .done, .leader_epoch, .held_bytes, .last_totals,
      .decompressed_bytes (decompressed bytes of the batches its handed-out
          steps opened, all together: what the record buffer charges a take)
  ArrowBuilder() -- .finish() -> one RecordBatch of every step appended
      (and empties it), .num_rows, .totals
  (max_batch_records 0: no bound; the resumable decoder's steps join to
  exactly the one-shot result.)

  Arguments arrive normalised by fastkc/records.py: stop_offset is -1 for
  "no bound"; read_committed is a bool; aborted_transactions is a list of
  (producer_id, first_offset) int pairs sorted by first_offset; each
  deserializer is None or (callable, full_form) where full_form=True means
  callable(topic, headers, data) and False means callable(data).

The Fetch response parser is chosen here too, with the records functions
(one choice, never a compiled parser beside twin records or the reverse):

  parse_fetch_response(payload, version) -> fastkc.structs.FetchResponse
  FETCH_MAX_VERSION: the highest Fetch version it reads

the compiled one (fastkc._core.fetch) with the compiled core, else the
generic protocol codec (its oracle); and `grow_bytearray(buf, size)` (the
connection's frame buffer, resized in place). Nothing else imports
fastkc._core.

Only FASTKC_PURE=1 selects the twin. Without it a missing compiled core is an
ImportError that says how to build it, never a silent slowdown: a job whose
workers picked up unbuilt sources fails at once instead of running several
times slower.
"""
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from fastkc.structs import DecodedPartition, FetchResponse, ScanInfo, ShareDecoded

if TYPE_CHECKING:
    # re-exported for the type checker: nothing else names fastkc._core
    from fastkc._core._json import JsonArrowDecoder as JsonArrowDecoder
    from fastkc._core._protobuf import ProtobufDecoder as ProtobufDecoder
    from fastkc._core._records import ArrowBuilder as ArrowBuilder
    from fastkc._core._records import RecordStream as RecordStream

_Buffer = bytes | bytearray | memoryview
# (deserializer, full_form) or None, as records.py normalises it
_Deserializer = tuple[Callable[..., Any], bool] | None


class RecordsBackend(Protocol):
    """The contract above, as the type checker sees it. Its stream and
    builder classes are typed as the compiled core's (fastkc/_core/_records.pyi):
    the twin implements the same interface and is held to it by the
    differential tests, not by the type checker (it is its oracle)."""

    def decode_partition(
        self, data: _Buffer, topic: str, partition: int, fetch_offset: int, stop_offset: int, check_crcs: bool,
        read_committed: bool, aborted_transactions: Sequence[tuple[int, int]] | None,
        key_deserializer: _Deserializer, value_deserializer: _Deserializer, max_decompressed_bytes: int,
        max_batch_records: int = 0, /,
    ) -> DecodedPartition: ...

    def decode_partition_arrow(
        self, data: _Buffer, topic: str, partition: int, fetch_offset: int, stop_offset: int, check_crcs: bool,
        read_committed: bool, aborted_transactions: Sequence[tuple[int, int]] | None, max_decompressed_bytes: int,
        max_batch_records: int = 0, /, zero_copy: bool = False,
    ) -> DecodedPartition: ...

    def decode_share(
        self, data: _Buffer, topic: str, partition: int, acquired: Sequence[tuple[int, int, int]], check_crcs: bool,
        key_deserializer: _Deserializer, value_deserializer: _Deserializer, max_decompressed_bytes: int,
        max_batch_records: int = 0, /,
    ) -> ShareDecoded: ...

    def decode_share_arrow(
        self, data: _Buffer, topic: str, partition: int, acquired: Sequence[tuple[int, int, int]], check_crcs: bool,
        max_decompressed_bytes: int, max_batch_records: int = 0, /, zero_copy: bool = False,
    ) -> ShareDecoded: ...

    def scan_blob(self, data: _Buffer, /) -> ScanInfo: ...

    def replace_fields(self, records: list[Any], fields: list[tuple[int, Sequence[Any]]], /) -> list[Any]: ...

    def check_blob(self, data: _Buffer, topic: str, partition: int, position: int, /) -> tuple[int, int]: ...

    @property
    def RecordStream(self) -> "type[RecordStream]": ...

    @property
    def ArrowBuilder(self) -> "type[ArrowBuilder]": ...


def _choose() -> tuple[str, RecordsBackend]:
    if os.environ.get("FASTKC_PURE", "") not in ("", "0"):
        from fastkc._twin import records as twin

        return "python", cast(RecordsBackend, twin)
    try:
        # the parser too: a build without it is no compiled core (one choice for both)
        from fastkc._core import fetch as compiled_fetch  # noqa: F401 (imported to be there)
        from fastkc._core import records as compiled
    except ImportError as exc:
        raise ImportError(
            "fastkc: the compiled core (fastkc._core) could not be imported: {0}. Install fastkc where a C "
            "compiler is available (pip install fastkc builds it; in a checkout: python3 setup.py build_ext "
            "--inplace), or set FASTKC_PURE=1 to run on the pure-Python twin, which is several times "
            "slower.".format(exc)) from exc
    return "c", compiled


name, impl = _choose()


if name == "c":
    from fastkc._core._fetch import grow_bytearray
    from fastkc._core.fetch import MAX_VERSION as _COMPILED_FETCH_MAX_VERSION
    from fastkc._core.fetch import parse_fetch_response as parse_fetch_response  # re-exported (the fetch planner)

    FETCH_MAX_VERSION = _COMPILED_FETCH_MAX_VERSION
else:
    from fastkc.protocol.messages import get_api as _get_api

    FETCH_MAX_VERSION = _get_api("Fetch").max_version

    def parse_fetch_response(buf: _Buffer, version: int) -> FetchResponse:
        """The twin of the compiled parser: the generic codec's decode."""
        from fastkc.protocol import codec

        correlation_id, body = codec.decode_response("Fetch", version, buf)
        return codec.to_fetch_response(correlation_id, body, version)

    def grow_bytearray(buf: bytearray, size: int) -> None:
        """The twin of the compiled helper: resize in place (zero-filled here)."""
        if size < len(buf):
            del buf[size:]
        else:
            buf.extend(bytes(size - len(buf)))


# The Avro program decoder (fastkc/schema_registry/avro.py uses it): the
# compiled one with the compiled core, else the twin, by the same choice.
if name == "c":
    from fastkc._core._avro import Decoder as _CompiledAvroDecoder

    AvroDecoderCore: "type[_CompiledAvroDecoder]" = _CompiledAvroDecoder
else:
    from fastkc._twin.avro import Decoder as _TwinAvroDecoder

    # the twin implements the compiled class's interface (held to it by the
    # differential tests, as the records twin)
    AvroDecoderCore = cast("type[_CompiledAvroDecoder]", _TwinAvroDecoder)


# The Protobuf program decoder (fastkc/schema_registry/protobuf.py uses it), by
# the same choice; imported on first use: its modules need the protobuf runtime
# (the schema-registry extra), which `import fastkc` must not.
def protobuf_decoder_core() -> "type[ProtobufDecoder]":
    if name == "c":
        from fastkc._core._protobuf import ProtobufDecoder as compiled

        return compiled
    from fastkc._twin.protobuf import Decoder as twin

    # the twin implements the compiled class's interface (held to it by the
    # differential tests, as the Avro twin)
    return cast("type[ProtobufDecoder]", twin)


# A message type's framed values parsed by the protobuf runtime, the prefix cut
# in a compiled loop (fastkc/schema_registry/protobuf_deserializer.py uses it),
# by the same choice.
def protobuf_parse_prefixed() -> "Callable[[Callable[[bytes], Any], list[Any], int, bytes, list[Any]], None]":
    if name == "c":
        from fastkc._core._protobuf import parse_prefixed as compiled

        return compiled
    from fastkc._twin.protobuf import parse_prefixed as twin

    return twin


# The JSON -> Arrow parser (fastkc/schema_registry/json_schema.py uses it): the
# compiled one, None under the twin, where the Python way (the reference the
# parser is checked against) builds the columns.
def json_arrow_decoder_core() -> "type[JsonArrowDecoder] | None":
    if name == "c":
        from fastkc._core._json import JsonArrowDecoder as compiled

        return compiled
    return None
