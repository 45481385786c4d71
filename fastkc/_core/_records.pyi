# Stub of the compiled record decoder (fastkc/_core/_records.pyx); checked
# against the built module by tests/quality/test_stubs.py (mypy.stubtest).
from collections.abc import Callable, Sequence
from typing import Any, final

from fastkc.structs import ConsumerRecord, DecodedPartition, ScanInfo, ShareDecoded

_Buffer = bytes | bytearray | memoryview
# (deserializer, takes the whole ConsumerRecord) or None for raw bytes
_Deserializer = tuple[Callable[..., Any], bool] | None
# rows, key bytes, value bytes, header count, header key bytes, header value bytes
_Totals = tuple[int, int, int, int, int, int]

INT32_MAX_: int

def crc32c(data: _Buffer, crc: int = 0) -> int: ...
def crc32c_implementation() -> str: ...
def force_crc32c_software(force: bool) -> None: ...
def lz4_implementation() -> str: ...
def force_lz4_host(force: bool) -> None: ...
def _set_untrack_records(flag: bool) -> None: ...
def replace_fields(records: list[Any], fields: list[tuple[int, Sequence[Any]]]) -> list[Any]: ...
def decode_partition(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]] | None,
    key_deserializer: _Deserializer,
    value_deserializer: _Deserializer,
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
) -> DecodedPartition: ...
def decode_share(
    data: _Buffer,
    topic: str,
    partition: int,
    acquired: Sequence[tuple[int, int, int]],
    check_crcs: bool,
    key_deserializer: _Deserializer,
    value_deserializer: _Deserializer,
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
) -> ShareDecoded: ...
def decode_share_arrow(
    data: _Buffer,
    topic: str,
    partition: int,
    acquired: Sequence[tuple[int, int, int]],
    check_crcs: bool,
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
    zero_copy: bool = False,
) -> ShareDecoded: ...
def decode_partition_arrow(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]] | None,
    max_decompressed_bytes: int,
    max_batch_records: int = 0,
    zero_copy: bool = False,
) -> DecodedPartition: ...
def scan_blob(data: _Buffer) -> ScanInfo: ...
def check_blob(data: _Buffer, topic: str, partition: int, position: int) -> tuple[int, int]: ...

@final
class ArrowBuilder:
    def __new__(cls, base: Sequence[int] | None = None, zero_copy: bool = False) -> ArrowBuilder: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def totals(self) -> _Totals: ...
    @property
    def last_offset(self) -> int | None: ...
    # a pyarrow.RecordBatch (pyarrow has no type information here)
    def finish(self) -> Any: ...

@final
class RecordStream:
    def __new__(
        cls,
        data: _Buffer,
        topic: str,
        partition: int,
        fetch_offset: int,
        stop_offset: int,
        check_crcs: bool,
        read_committed: bool,
        aborted_transactions: Sequence[tuple[int, int]] | None,
        max_decompressed_bytes: int,
        max_batch_records: int,
        arrow: bool = False,
        key_deserializer: _Deserializer = None,
        value_deserializer: _Deserializer = None,
    ) -> RecordStream: ...
    def prepare(self, max_records: int, max_held_bytes: int | None = None) -> bool: ...
    @property
    def preparing(self) -> bool: ...
    @property
    def pending(self) -> bool: ...
    @property
    def prepared(self) -> int: ...
    def records(self, max_records: int, max_held_bytes: int | None = None) -> list[ConsumerRecord]: ...
    # a pyarrow.RecordBatch; with `builder`, the number of records appended to it
    def arrow(
        self,
        max_records: int,
        max_held_bytes: int | None = None,
        base: Sequence[int] | None = None,
        builder: ArrowBuilder | None = None,
    ) -> Any: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def done(self) -> bool: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def held_bytes(self) -> int: ...
    @property
    def decompressed_bytes(self) -> int: ...
    @property
    def last_totals(self) -> _Totals: ...
