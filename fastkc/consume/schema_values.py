"""`fastkc consume -s [key=|value=]avro -r URL`: Schema Registry Avro keys and
values printed as kcat prints them (fastkc/schema_registry/avro_json.py).

Each batch gets, per decoded field (key, value), three more columns the
renderers read (fastkc/consume/formats.py):
  <field>_json       the JSON text (null for a null field or a failure)
  <field>_schema_id  the frame's schema id, or its GUID (kcat -J's
                     key_schema_id / value_schema_id)
  <field>_error      why it could not be decoded (kcat -J's key_error /
                     payload_error), null when it was

A field that cannot be decoded (not framed, an unknown id, a registry that
is down, a corrupt payload) is reported on stderr with its topic, partition
and offset, as kcat does, the run goes on, and the exit status is 1 at the
end: nothing is skipped silently.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from fastkc.consume.arguments import UsageError

if TYPE_CHECKING:
    from fastkc.consume.formats import Renderer
    from fastkc.schema_registry.avro_json import AvroJsonWriter
    from fastkc.schema_registry.client import SchemaRegistryClient

Batch = Any  # pyarrow has no type information

FIELDS = ("key", "value")


def parse_serdes(specs: list[str]) -> set[str]:
    """-s values: 'avro' (key and value, as kcat), 'key=avro', 'value=avro'."""
    fields: set[str] = set()
    for spec in specs:
        target, _, serdes = spec.rpartition("=")
        if serdes != "avro":
            raise UsageError("-s {0}: the only deserializer is avro (kcat's pack formats are not "
                             "supported)".format(spec))
        if target == "":
            fields.update(FIELDS)
        elif target in FIELDS:
            fields.add(target)
        else:
            raise UsageError("-s {0}: expected avro, key=avro or value=avro".format(spec))
    return fields


class SchemaRegistryColumns:
    """Adds the decoded columns (module docstring) to each batch."""

    def __init__(self, url: str, fields: set[str], *, registry: SchemaRegistryClient | None = None,
                 err: Any = None) -> None:
        from fastkc.schema_registry import SchemaRegistryClient

        self.fields = [f for f in FIELDS if f in fields]
        self.registry = registry if registry is not None else SchemaRegistryClient({"url": url})
        self.failures = 0
        self._writers: dict[int | str, AvroJsonWriter] = {}
        self._err = err if err is not None else sys.stderr

    def close(self) -> None:
        self.registry.close()

    def add_columns(self, batch: Batch) -> Batch:
        for field in self.fields:
            texts, ids, errors = self._decode(batch, field)
            batch = _with_columns(batch, field, texts, ids, errors)
        return batch

    def _decode(self, batch: Batch, field: str) -> tuple[list[bytes | None], list[str | None], list[str | None]]:
        from fastkc.errors import KafkaError
        from fastkc.schema_registry.avro_deserializer import writer_schema_json
        from fastkc.schema_registry.avro_errors import AvroDecodeError
        from fastkc.schema_registry.avro_json import AvroJsonWriter
        from fastkc.schema_registry.framing import split_record

        n = batch.num_rows
        values = batch.column(field).to_pylist()
        headers = batch.column("headers").to_pylist()
        topics = batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist()
        offsets = batch.column("offset").to_pylist()
        texts: list[bytes | None] = [None] * n
        ids: list[str | None] = [None] * n
        errors: list[str | None] = [None] * n
        by_schema: dict[int | str, list[tuple[int, bytes]]] = defaultdict(list)
        for i, value in enumerate(values):
            if value is None:
                continue
            pairs = [(h["key"], h["value"]) for h in headers[i]] if headers[i] else None
            try:
                frame = split_record(value, pairs, is_key=field == "key", topic=topics[i],
                                     partition=partitions[i], offset=offsets[i])
            except KafkaError as exc:
                errors[i] = self._failed(field, topics[i], partitions[i], offsets[i], exc)
                continue
            ids[i] = str(frame.schema_key)
            by_schema[frame.schema_key].append((i, frame.payload))
        for key, members in by_schema.items():
            first = members[0][0]
            try:
                writer = self._writers.get(key)
                if writer is None:
                    writer = AvroJsonWriter(writer_schema_json(self.registry, key, topics[first],
                                                               partitions[first], offsets[first]))
                    self._writers[key] = writer
            except KafkaError as exc:
                for i, _ in members:
                    errors[i] = self._failed(field, topics[i], partitions[i], offsets[i], exc)
                continue
            rendered: list[bytes | None]
            try:
                rendered = list(writer.render_many([payload for _, payload in members]))
            except (AvroDecodeError, ValueError):
                # one bad payload fails the call: each on its own says which
                rendered = [None] * len(members)
                for j, (i, payload) in enumerate(members):
                    try:
                        rendered[j] = writer.render_many([payload])[0]
                    except (AvroDecodeError, ValueError) as exc:
                        errors[i] = self._failed(field, topics[i], partitions[i], offsets[i], exc)
            for (i, _), text in zip(members, rendered):
                texts[i] = text
        return texts, ids, errors

    def _failed(self, field: str, topic: str, partition: int, offset: int, exc: BaseException) -> str:
        """kcat's message, on stderr; the failure is counted (exit status 1)."""
        self.failures += 1
        reason = "{0}: {1}".format(type(exc).__name__, exc)
        self._err.write("% ERROR: Failed to deserialize {0} in message in {1} [{2}] at offset {3}: {4}\n".format(
            field, topic, partition, offset, reason))
        return reason


class DecodedRenderer:
    """A renderer whose batches get the decoded columns first."""

    def __init__(self, columns: SchemaRegistryColumns, renderer: Renderer) -> None:
        self.columns, self.renderer = columns, renderer

    def render(self, batch: Batch) -> bytes | memoryview:
        return self.renderer.render(self.columns.add_columns(batch))


def _with_columns(batch: Batch, field: str, texts: list[bytes | None], ids: list[str | None],
                  errors: list[str | None]) -> Batch:
    import pyarrow as pa

    batch = batch.append_column(field + "_json", pa.array(texts, pa.binary()))
    batch = batch.append_column(field + "_schema_id", pa.array(ids, pa.string()))
    return batch.append_column(field + "_error", pa.array(errors, pa.string()))
