"""Where `fastkc consume` writes: stdout, an Arrow IPC stream, a Parquet file;
and the progress line on a terminal."""
import sys
import time
from typing import Any, Protocol

from fastkc.consume.formats import Batch, Renderer

_STATS_INTERVAL_S = 0.25


class Output(Protocol):
    """Where the polled batches go (stdout, an IPC stream, a Parquet file)."""

    def write(self, batch: Batch) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class StdoutBytes:
    """Rendered batches to stdout's binary buffer, one write per batch."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.stream = sys.stdout.buffer

    def write(self, batch: Batch) -> None:
        data = self.renderer.render(batch)
        if len(data):
            self.stream.write(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


def plain_batch(batch: Batch) -> Batch:
    """key/value as binary (arrow_zero_copy gives binary_view, which Parquet
    and older readers do not take)."""
    import pyarrow as pa

    if batch.schema.field("key").type == pa.binary():
        return batch
    arrays = [c.cast(pa.binary()) if f.name in ("key", "value") else c
              for f, c in zip(batch.schema, batch.columns)]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


class ArrowIpcOutput:
    """The Arrow IPC stream format (the `.arrows` kind, readable batch by
    batch with pyarrow.ipc.open_stream), to a file or stdout ('-')."""

    def __init__(self, path: str, schema: Any) -> None:
        import pyarrow as pa

        self.stream = sys.stdout.buffer if path == "-" else open(path, "wb")
        self.writer = pa.ipc.new_stream(self.stream, schema)

    def write(self, batch: Batch) -> None:
        if batch.num_rows:
            self.writer.write_batch(plain_batch(batch))

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.writer.close()
        self.stream.flush()
        if self.stream is not sys.stdout.buffer:
            self.stream.close()


class ParquetOutput:
    """One Parquet row group per polled batch."""

    def __init__(self, path: str, schema: Any) -> None:
        import pyarrow.parquet as pq

        self.writer = pq.ParquetWriter(path, schema)

    def write(self, batch: Batch) -> None:
        if batch.num_rows:
            self.writer.write_batch(plain_batch(batch))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.writer.close()


# --- progress on a terminal -----------------------------------------------------------------
class Progress:
    """records, records/s and lag on stderr (rich), only when stderr is a terminal."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.status = self.console.status("starting")
        self.status.start()
        self.started = time.monotonic()
        self.last = 0.0

    def update(self, count: int, lag: int | None, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < _STATS_INTERVAL_S:
            return
        self.last = now
        rate = count / max(now - self.started, 1e-9)
        self.status.update("{0:,} records  {1:,.0f} records/s  lag {2}".format(
            count, rate, "?" if lag is None else "{0:,}".format(lag)))

    def close(self) -> None:
        self.status.stop()
