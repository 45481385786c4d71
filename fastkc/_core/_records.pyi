from collections.abc import Callable, Sequence
from typing import Any

from fastkc.structs import DecodedPartition, ScanInfo

_Buffer = bytes | bytearray | memoryview
_Deserializer = tuple[Callable[..., Any], bool] | None

def crc32c(data: _Buffer, crc: int = ...) -> int: ...
def crc32c_implementation() -> str: ...
def force_crc32c_software(force: bool) -> None: ...
def _set_untrack_records(flag: bool) -> None: ...
def decode_partition(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]],
    key_deserializer: _Deserializer,
    value_deserializer: _Deserializer,
    max_decompressed_bytes: int,
    max_batch_records: int = ...,
) -> DecodedPartition: ...
def decode_partition_arrow(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[tuple[int, int]],
    max_decompressed_bytes: int,
    max_batch_records: int = ...,
    zero_copy: bool = ...,
) -> DecodedPartition: ...
def scan_blob(data: _Buffer) -> ScanInfo: ...

class ArrowBuilder:
    def __init__(self, base: Sequence[int] | None = ..., zero_copy: bool = ...) -> None: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def totals(self) -> tuple[int, int, int, int, int, int]: ...
    @property
    def last_offset(self) -> int | None: ...
    def finish(self) -> Any: ...

class RecordStream:
    def __init__(
        self,
        data: _Buffer,
        topic: str,
        partition: int,
        fetch_offset: int,
        stop_offset: int,
        check_crcs: bool,
        read_committed: bool,
        aborted_transactions: Sequence[tuple[int, int]],
        max_decompressed_bytes: int,
        max_batch_records: int,
        arrow: bool = ...,
        key_deserializer: _Deserializer = ...,
        value_deserializer: _Deserializer = ...,
    ) -> None: ...
    def records(self, max_records: int, max_held_bytes: int | None = ...) -> list[Any]: ...
    def arrow(
        self,
        max_records: int,
        max_held_bytes: int | None = ...,
        base: Sequence[int] | None = ...,
        builder: ArrowBuilder | None = ...,
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
    def last_totals(self) -> tuple[int, int, int, int, int, int]: ...
