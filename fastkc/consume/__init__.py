"""`fastkc consume`: read topics to stdout (or to Arrow IPC / Parquet files), kcat-style.

The records come from `KafkaConsumer.poll_arrow()`, and every output is
rendered from the batch's columns: the `-f` format string becomes one
`binary_join_element_wise` over columns cast to bytes (pyarrow's kernels, no
Python object per record), so the default `%s\\n` costs a pass over the values.
`--json` (kcat's -J objects) is joined the same way; only the keys, values
and headers that need JSON escaping are escaped in Python, row by row
(no column kernel reproduces yajl's rules byte for byte).

Where we follow kcat 1.7.1 exactly (the differential test holds us to it):
the `-f` tokens and escapes (format.c: fmt_parse / fmt_add), empty and null keys
and values both printing nothing (or -Z's "NULL"), `%K`/`%S` giving -1 for null,
`%h` as `name=value,...` with "NULL" for a null header value, `-J`'s field
names and order (topic, partition, offset, tstype, ts, broker, headers, key,
payload) with yajl's escaping. Where we differ, on purpose:
- `-e` ends each partition at the end offset read when it was assigned, by
  position (a compacted or transactional tail has no record at end - 1);
  kcat's librdkafka EOF event follows the live high watermark instead.
- Nothing is printed on stderr but errors, and progress when stderr is a
  terminal (kcat prints "% Reached end of topic ..." lines unless -q).
- A closed stdout (`| head`) ends the run with status 0 and no message: the
  reader chose to stop. kcat dies by SIGPIPE (status 141 in a shell).
- Ctrl-C ends the run after the records already written (with -G, their
  offsets committed) with status 130, the shell's convention for SIGINT.

Exit statuses: 0 done, 1 a Kafka error (unreachable broker, unknown topic,
authorisation, timeout), 2 bad arguments or configuration, 130 interrupted.
"""
from fastkc.consume.command import add_arguments, run

__all__ = ["add_arguments", "run"]
