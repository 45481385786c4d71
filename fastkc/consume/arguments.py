"""`fastkc consume`'s option values: -o offsets, --from-time/--to-time times,
the checks across options, and UsageError (exit 2) for any bad one."""
import argparse
import datetime
import re


class UsageError(Exception):
    """A bad argument or configuration value: message on stderr, exit 2."""


# --- offsets and times ---------------------------------------------------------------
class StartSpec:
    """What -o says: kind in beginning, end, stored, offset, relative, timestamp."""

    def __init__(self, kind: str, value: int | None = None, stop_before_ms: int | None = None) -> None:
        self.kind = kind
        self.value = value
        self.stop_before_ms = stop_before_ms  # kcat's e@: stop at the first record at or past it

    def __repr__(self) -> str:
        return "StartSpec({0!r}, {1!r})".format(self.kind, self.value)


def parse_offset(text: str) -> StartSpec:
    """-o: beginning | end | stored | N | -N (N before the end) | @MS or s@MS
    (the first record at or after MS) | e@MS (stop before MS, kcat's)."""
    if text in ("beginning", "end", "stored"):
        return StartSpec(text)
    for prefix, kind in (("s@", "timestamp"), ("@", "timestamp"), ("e@", "stop")):
        if text.startswith(prefix):
            ms = text[len(prefix):]
            if not re.fullmatch(r"[0-9]+", ms):
                raise argparse.ArgumentTypeError("-o {0}: expected {1}<milliseconds since the epoch>".format(
                    text, prefix))
            if kind == "stop":
                return StartSpec("stop", stop_before_ms=int(ms))
            return StartSpec("timestamp", int(ms))
    if re.fullmatch(r"-?[0-9]+", text):
        n = int(text)
        return StartSpec("relative", -n) if n < 0 else StartSpec("offset", n)
    raise argparse.ArgumentTypeError(
        "invalid offset {0!r}: expected beginning, end, stored, N, -N, @MS, s@MS or e@MS".format(text))


def parse_time(text: str) -> int:
    """--from-time/--to-time: milliseconds since the epoch, or ISO-8601
    (a time without an offset is UTC, not the local zone: a stored timestamp
    has no zone either)."""
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "invalid time {0!r}: expected milliseconds since the epoch or ISO-8601 "
            "(2026-11-25T13:40:00Z)".format(text)) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000) if moment.microsecond == 0 else \
        (int(moment.timestamp()) * 1000 + moment.microsecond // 1000)


def check_arguments(args: argparse.Namespace) -> None:
    if args.partition and not args.topic:
        raise UsageError("-p needs -t TOPIC")
    if not args.topic:
        raise UsageError("give at least one topic with -t TOPIC")
    if args.group:
        if args.partition:
            raise UsageError("-G subscribes to whole topics: -p cannot be used with it")
        if args.offset is not None and args.offset.kind not in ("beginning", "end", "stored"):
            raise UsageError("with -G, -o is beginning, end or stored (where to start without a committed "
                             "offset); seek positions need assigned partitions (no -G)")
        if args.from_time is not None:
            raise UsageError("--from-time cannot be used with -G (the group's committed offsets decide)")
    elif args.offset is not None and args.offset.kind == "stored":
        raise UsageError("-o stored reads the group's committed offsets: it needs -G GROUP")
    if args.from_time is not None and args.offset is not None and args.offset.kind != "stop":
        raise UsageError("--from-time and -o both say where to start: give one")
    if args.serdes and not args.schema_registry:
        raise UsageError("-s avro reads writer schemas from a Schema Registry: give -r URL")
    if args.schema_registry and not args.serdes:
        raise UsageError("-r URL is for -s avro (say which fields to decode: -s value=avro)")
    if args.serdes and (args.arrow_ipc or args.parquet):
        raise UsageError("-s avro prints JSON text (-f or -J); the Arrow and Parquet outputs carry the "
                         "raw bytes")
    if args.count is not None and args.count < 1:
        raise UsageError("-c must be a positive count")
    if args.from_time is not None and args.to_time is not None and args.to_time < args.from_time:
        raise UsageError("--to-time is before --from-time")
