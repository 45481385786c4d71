from typing import Any, Callable, Optional, Sequence, Tuple, Union

from fastkc.structs import DecodedPartition

_Buffer = Union[bytes, bytearray, memoryview]
_Deserializer = Optional[Tuple[Callable[..., Any], bool]]

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
    aborted_transactions: Sequence[Tuple[int, int]],
    key_deserializer: _Deserializer,
    value_deserializer: _Deserializer,
    max_decompressed_bytes: int,
) -> DecodedPartition: ...
def decode_partition_arrow(
    data: _Buffer,
    topic: str,
    partition: int,
    fetch_offset: int,
    stop_offset: int,
    check_crcs: bool,
    read_committed: bool,
    aborted_transactions: Sequence[Tuple[int, int]],
    max_decompressed_bytes: int,
) -> DecodedPartition: ...
