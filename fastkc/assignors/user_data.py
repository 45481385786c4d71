"""The sticky assignors' subscription user data: StickyAssignor's (previous
assignment and generation) and CooperativeStickyAssignor's (generation only),
not version-prefixed, declared like the rest of the protocol."""
import logging
from collections.abc import Iterable

from fastkc.assignors.abstract import DEFAULT_GENERATION
from fastkc.errors import ProtocolParseError
from fastkc.protocol.codec import decode_struct, encode_struct
from fastkc.protocol.consumer_protocol import group_by_topic
from fastkc.protocol.schema import parse_struct
from fastkc.protocol.types import Reader, Writer
from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)


# StickyAssignor's user data: layout 0 without, layout 1 with the generation.
_STICKY_USER_DATA = parse_struct("""
previous_assignment  []       0+
  topic              string   0+
  partitions         [int32]  0+
generation           int32    1+  default=-1
""")
# CooperativeStickyAssignor's user data: the generation alone, for members
# whose subscription predates the generation field (v0/v1).
_COOPERATIVE_USER_DATA = parse_struct("""
generation  int32  0+  default=-1
""")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """The eager sticky assignor's user data (layout 1): previously owned
    partitions grouped per topic, and the generation they belong to."""
    w = Writer()
    body = {
        "previous_assignment": [{"topic": g.topic, "partitions": g.partitions}
                                for g in group_by_topic(list(partitions), sort=True)],
        "generation": generation,
    }
    encode_struct(_STICKY_USER_DATA, body, w, 1, name="sticky user data")  # IllegalArgumentError on bad values
    return w.getvalue()


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int]:
    """(owned partitions, generation) from sticky user data, as Java reads
    it: layout 1, else layout 0 (generation unknown: -1); bytes that fit
    neither mean no usable history ([], -1), never an error — a member's
    unreadable history must not stop the group from rebalancing."""
    if not data:
        return [], DEFAULT_GENERATION
    for layout in (1, 0):
        try:
            body = decode_struct(_STICKY_USER_DATA, Reader(data), layout)
        except ProtocolParseError:
            continue
        parts = [TopicPartition(e["topic"], p) for e in body["previous_assignment"] for p in e["partitions"]]
        generation: int = body["generation"] if layout == 1 else DEFAULT_GENERATION
        return parts, generation
    log.warning("ignoring sticky user data that fits no known layout (%d bytes)", len(data))
    return [], DEFAULT_GENERATION


def encode_cooperative_user_data(generation: int) -> bytes:
    """The cooperative-sticky user data: the generation as an int32, for
    leaders that read it there (members older than subscription v2)."""
    w = Writer()
    encode_struct(_COOPERATIVE_USER_DATA, {"generation": generation}, w, 0,
                  name="cooperative user data")  # IllegalArgumentError on bad values
    return w.getvalue()


def decode_cooperative_user_data(data: bytes | None) -> int:
    """The generation in cooperative-sticky user data; -1 when absent or
    unreadable (Java's fallback)."""
    if data is None:
        return DEFAULT_GENERATION
    try:
        generation: int = decode_struct(_COOPERATIVE_USER_DATA, Reader(data), 0)["generation"]
        return generation
    except ProtocolParseError:
        return DEFAULT_GENERATION
