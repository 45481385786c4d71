"""The twin of fastkc/_core/_payloads.pxi's prefixed run: the one reading,
for the twins, of which values a Schema Registry frame prefix covers."""
from __future__ import annotations

from typing import Any


def prefixed_run(values: list[Any], start: int, prefix: bytes) -> list[bytes]:
    """The leading values from values[start] on that are bytes starting with
    `prefix`, each past it; the run ends at the first that is not.
    IndexError when start is outside [0, len(values)]."""
    if not 0 <= start <= len(values):
        raise IndexError("fastkc: start outside the payloads")
    run = []
    for value in values[start:]:
        if type(value) is not bytes or not value.startswith(prefix):
            break
        run.append(value[len(prefix):])
    return run
