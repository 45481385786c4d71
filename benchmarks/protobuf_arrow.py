"""Protobuf → Arrow speed: decode_arrow_column on N payloads of a 15-field
event, against decoding the same payloads to dicts (decode_many) and against
pyarrow.array(those dicts, type) after it.

    python3 benchmarks/protobuf_arrow.py [N] [--page-event]    (from the repository root)

--page-event: registry_poll.py's PageEvent (a map, a wrapper, a Timestamp,
a nested message) instead of this file's event.

Prints µs per row of each (best of 5).
"""
from __future__ import annotations

import os
import random
import sys
import time
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def event_type() -> Any:
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="bench_event.proto", package="bench", syntax="proto3")
    kind = fdp.enum_type.add(name="Kind")
    for i, name in enumerate(("UNKNOWN", "CLICK", "VIEW", "BUY")):
        kind.value.add(name=name, number=i)
    geo = fdp.message_type.add(name="Geo")
    geo.field.add(name="lat", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    geo.field.add(name="lon", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    geo.field.add(name="country", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    ev = fdp.message_type.add(name="Event")
    fields = [("event_id", F.TYPE_STRING), ("user_id", F.TYPE_INT64), ("session", F.TYPE_STRING),
              ("ts_ms", F.TYPE_INT64), ("kind", F.TYPE_ENUM), ("page", F.TYPE_STRING), ("referrer", F.TYPE_STRING),
              ("duration_ms", F.TYPE_INT32), ("price", F.TYPE_DOUBLE), ("quantity", F.TYPE_UINT32),
              ("is_mobile", F.TYPE_BOOL), ("score", F.TYPE_FLOAT), ("geo", F.TYPE_MESSAGE)]
    for i, (name, t) in enumerate(fields, 1):
        f = ev.field.add(name=name, number=i, type=t, label=F.LABEL_OPTIONAL)
        if t == F.TYPE_ENUM:
            f.type_name = ".bench.Kind"
        if t == F.TYPE_MESSAGE:
            f.type_name = ".bench.Geo"
    ev.field.add(name="tags", number=14, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    ev.field.add(name="item_ids", number=15, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return pool.FindMessageTypeByName("bench.Event")


def payloads(d: Any, n: int) -> list[bytes]:
    cls = message_factory.GetMessageClass(d)
    rnd = random.Random(7)
    out = []
    for i in range(n):
        m = cls(event_id=f"ev-{i:010d}", user_id=rnd.randrange(10**9), session=f"s{rnd.randrange(10**6)}",
                ts_ms=1_700_000_000_000 + i, kind=rnd.randrange(4), page=f"/p/{rnd.randrange(1000)}",
                referrer="https://example.com/" + "x" * rnd.randrange(20), duration_ms=rnd.randrange(60000),
                price=rnd.random() * 100, quantity=rnd.randrange(10), is_mobile=rnd.random() < 0.5,
                score=rnd.random(), tags=[f"t{rnd.randrange(50)}" for _ in range(rnd.randrange(4))],
                item_ids=[rnd.randrange(10**6) for _ in range(rnd.randrange(5))])
        m.geo.lat, m.geo.lon, m.geo.country = rnd.random() * 90, rnd.random() * 180, "DE"
        out.append(m.SerializeToString())
    return out


def best(f: Any, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    import pyarrow as pa

    from fastkc.schema_registry.protobuf import ProtobufDecoder

    args = [a for a in sys.argv[1:] if a != "--page-event"]
    n = int(args[0]) if args else 100_000
    if "--page-event" in sys.argv:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from registry_events import PageEvent, protobuf_event

        d = PageEvent.DESCRIPTOR
        data = [protobuf_event(i).SerializeToString() for i in range(n)]
    else:
        d = event_type()
        data = payloads(d, n)
    prefix = b"\0\0\0\0\1\0"
    column = pa.array([prefix + p for p in data], type=pa.binary())
    dec = ProtobufDecoder(d)
    arrow = dec.decode_arrow_column(column, len(prefix))
    dicts = dec.decode_many(data)
    t_arrow = best(lambda: dec.decode_arrow_column(column, len(prefix)))
    t_dicts = best(lambda: dec.decode_many(data))
    print(f"{n} payloads, {sum(map(len, data)) / n:.0f} bytes each, {len(arrow.type)} fields")
    print(f"decode_arrow_column:            {t_arrow / n * 1e6:.3f} us/row")
    print(f"decode_many (dicts):            {t_dicts / n * 1e6:.3f} us/row")
    try:
        t_pa = best(lambda: pa.array(dicts, type=arrow.type), runs=3)
    except pa.ArrowTypeError:  # the PageEvent's dicts hold what pyarrow cannot convert alone (enum names)
        print("pyarrow.array(dicts, type):     not comparable for this event")
        return
    print(f"pyarrow.array(dicts, type):     {t_pa / n * 1e6:.3f} us/row (after decode_many)")
    print(f"dicts + pyarrow.array:          {(t_dicts + t_pa) / n * 1e6:.3f} us/row")


if __name__ == "__main__":
    main()
