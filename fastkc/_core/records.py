"""The compiled backend module (see fastkc/_backend.py for the contract).

Everything here is implemented in C (csrc/) behind the Cython bridge
fastkc/_core/_records.pyx; this module only names the contract's entry points.
"""
from fastkc._core._records import (
    ArrowBuilder,
    RecordStream,
    check_blob,
    crc32c,
    crc32c_implementation,
    decode_partition,
    decode_partition_arrow,
    decode_share,
    decode_share_arrow,
    force_crc32c_software,
    replace_fields,
    scan_blob,
)

__all__ = [
    "ArrowBuilder",
    "check_blob",
    "crc32c",
    "crc32c_implementation",
    "decode_partition",
    "decode_partition_arrow",
    "decode_share",
    "decode_share_arrow",
    "force_crc32c_software",
    "RecordStream",
    "replace_fields",
    "scan_blob",
]
