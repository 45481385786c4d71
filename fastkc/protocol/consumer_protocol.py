"""The consumer protocol: what a consumer puts inside JoinGroup and SyncGroup.

A classic group's broker treats a member's subscription (JoinGroup
`protocols[].metadata`) and the leader's assignments (SyncGroup
`assignments[].assignment`) as opaque bytes; only the consumers read them. The
layout is Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment
"data" messages (clients/src/main/resources/common/message/, shipped in the
kafka-clients jar), written behind an int16 version prefix. Both are declared
below in the compact form of fastkc/protocol/schema.py and encoded by the one
generic codec, exactly like the API messages. tests/unit/
test_consumer_protocol.py checks the declarations against the published JSON
with the spec test's machinery and the bytes against kafka-python's;
tests/unit/test_assignors_vs_java.py has the Java client's ConsumerProtocol
write and read the same bytes.

Why here and not in messages.py: these are data messages with no API key and
no request/response pair, so they do not belong in ALL_APIS (everything
iterating it assumes an API); they are only ever used by the group code. The
codec's public entry points look messages up by API name, so this module
calls its struct-level encoder and decoder (the same code underneath).

Versions (non-flexible in every version):
  Subscription  v0 topics, user_data; v1 + owned_partitions (KIP-429);
                v2 + generation_id; v3 + rack_id (KIP-881)
  Assignment    v0-v3 the same layout: assigned_partitions, user_data

Reading follows the Java client (ConsumerProtocol.deserialize*): a negative
version is an error; a version newer than 3 is read with the v3 layout (newer
versions may only append fields); bytes after the known fields are ignored.
That last rule is load-bearing: Kafka 2.4's Java client wrote a v1 assignment
with a trailing int16 error code that later versions dropped, and members that
old still join groups. Anything cut short is a ProtocolParseError.

Writing follows the Java client too: version 3 by default, subscription topics
sorted, owned partitions sorted by (topic, partition) and grouped per topic,
assignment partitions grouped per topic in order of first appearance.
(librdkafka also writes subscriptions at v3, but assignments at v0 with empty
rather than null user data; both read the same.)
"""
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from fastkc import structs
from fastkc.errors import IllegalArgumentError, ProtocolParseError
from fastkc.protocol.codec import decode_struct, encode_struct
from fastkc.protocol.schema import Message, Struct, Versions, parse_struct, parse_versions
from fastkc.protocol.types import Malformed, Reader, Writer
from fastkc.structs import TopicPartition

PROTOCOL_TYPE = "consumer"

class DataMessage(NamedTuple):
    name: str
    versions: Versions
    flexible: Versions
    struct: Struct

SUBSCRIPTION_MESSAGE = DataMessage(
    "ConsumerProtocolSubscription", parse_versions("0-3"), parse_versions("none"), parse_struct("""
topics              [string]  0+
user_data           bytes     0+  null=0+ default=null
owned_partitions    []        1+
  topic             string    1+
  partitions        [int32]   1+
generation_id       int32     2+  default=-1
rack_id             string    3+  null=3+ default=null
"""))

ASSIGNMENT_MESSAGE = DataMessage(
    "ConsumerProtocolAssignment", parse_versions("0-3"), parse_versions("none"), parse_struct("""
assigned_partitions  []       0+
  topic              string   0+
  partitions         [int32]  0+
user_data            bytes    0+  null=0+ default=null
"""))

DATA_MESSAGES = (SUBSCRIPTION_MESSAGE, ASSIGNMENT_MESSAGE)

#: The newest layout fastkc knows, and what it writes unless told otherwise
#: (the Java client writes its newest version too).
HIGHEST_VERSION = 3

#: One topic's partitions inside a subscription or assignment. A namedtuple
#: so kafka-python-style code can both read `.topic` / `.partitions` and
#: unpack `for topic, partitions in assignment.assigned_partitions`.
class TopicPartitions(NamedTuple):
    topic: str
    partitions: list[int]


def _topic_partitions_of(items: Iterable[Any] | None, what: str) -> list[TopicPartitions]:
    """Normalise kafka-python / fastkc / plain shapes to [TopicPartitions]:
    objects with .topic and .partitions, or (topic, partitions) pairs."""
    out: list[TopicPartitions] = []
    for item in items or ():
        if hasattr(item, "topic") and hasattr(item, "partitions"):
            topic, partitions = item.topic, item.partitions
        else:
            try:
                topic, partitions = item
            except (TypeError, ValueError):
                raise IllegalArgumentError(
                    "{0}: expected (topic, partitions) or an object with .topic/.partitions, got {1!r}".format(
                        what, item)
                ) from None
        out.append(TopicPartitions(topic, list(partitions)))
    return out


def _flatten(groups: Iterable[TopicPartitions]) -> list[TopicPartition]:
    return [TopicPartition(g.topic, p) for g in groups for p in g.partitions]


class Subscription:
    """A member's subscription (JoinGroup protocol metadata).

    Attribute names and positional order are kafka-python 3's
    ConsumerProtocolSubscription(version, topics, user_data, owned_partitions,
    generation_id, rack_id), so assignors written for kafka-python read it
    unchanged. `version` is the version the bytes carried (or will carry);
    fields absent from it hold their defaults.
    """

    __slots__ = ("version", "topics", "user_data", "owned_partitions", "generation_id", "rack_id")

    TopicPartition = TopicPartitions  # kafka-python spells it ConsumerProtocolSubscription.TopicPartition

    def __init__(self, version: int = HIGHEST_VERSION, topics: Iterable[str] = (), user_data: bytes | None = None,
                 owned_partitions: Iterable[Any] = (), generation_id: int = -1, rack_id: str | None = None) -> None:
        if isinstance(topics, (str, bytes)):
            raise IllegalArgumentError("topics must be a collection of names, not {0!r}".format(topics))
        self.version = version
        self.topics = list(topics)
        self.user_data = user_data
        self.owned_partitions = _topic_partitions_of(owned_partitions, "owned_partitions")
        self.generation_id = generation_id
        self.rack_id = rack_id

    def owned_topic_partitions(self) -> list[structs.TopicPartition]:
        """Owned partitions as a flat list of fastkc TopicPartition."""
        return _flatten(self.owned_partitions)

    def encode(self, version: int | None = None) -> bytes:
        return encode_subscription(self, version)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> "Subscription":
        return decode_subscription(data)

    def _key(self) -> tuple[Any, ...]:
        return (self.version, self.topics, self.user_data, self.owned_partitions, self.generation_id, self.rack_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subscription) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable: equal by value, so not hashable

    def __repr__(self) -> str:
        return ("Subscription(version={0}, topics={1!r}, user_data={2!r}, owned_partitions={3!r}, "
                "generation_id={4}, rack_id={5!r})").format(*self._key())


class Assignment:
    """One member's assignment (SyncGroup assignment bytes).

    kafka-python 3's ConsumerProtocolAssignment(version, assigned_partitions,
    user_data), with its `assignment` alias and `partitions()` helper.
    """

    __slots__ = ("version", "assigned_partitions", "user_data")

    TopicPartition = TopicPartitions

    def __init__(self, version: int = HIGHEST_VERSION, assigned_partitions: Iterable[Any] = (),
                 user_data: bytes | None = None) -> None:
        self.version = version
        self.assigned_partitions = _topic_partitions_of(assigned_partitions, "assigned_partitions")
        self.user_data = user_data

    @property
    def assignment(self) -> list[TopicPartitions]:
        return self.assigned_partitions

    def partitions(self) -> list[structs.TopicPartition]:
        """The assigned partitions as a flat list of fastkc TopicPartition."""
        return _flatten(self.assigned_partitions)

    def encode(self, version: int | None = None) -> bytes:
        return encode_assignment(self, version)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> "Assignment":
        return decode_assignment(data)

    def _key(self) -> tuple[Any, ...]:
        return (self.version, self.assigned_partitions, self.user_data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Assignment) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable: equal by value, so not hashable

    def __repr__(self) -> str:
        return "Assignment(version={0}, assigned_partitions={1!r}, user_data={2!r})".format(*self._key())


# kafka-python's names, for code that imports them by name
ConsumerProtocolSubscription = Subscription
ConsumerProtocolAssignment = Assignment


def java_string_key(s: str) -> bytes:
    """Sort key ordering strings as java.lang.String.compareTo does (by UTF-16
    code unit; differs from Python's code point order above U+FFFF)."""
    return s.encode("utf-16-be", "surrogatepass")


def group_by_topic(partitions: Sequence[tuple[str, int]], *, sort: bool) -> list[TopicPartitions]:
    """[TopicPartition] -> [TopicPartitions]. sort=True: by (topic, partition),
    as the Java client writes owned partitions; sort=False: topics in order of
    first appearance, partitions in the order given, as it writes assignments."""
    items = sorted(partitions, key=lambda tp: (java_string_key(tp[0]), tp[1])) if sort else partitions
    index: dict[str, int] = {}
    out: list[TopicPartitions] = []
    for topic, partition in items:
        slot = index.get(topic)
        if slot is None:
            slot = index[topic] = len(out)
            out.append(TopicPartitions(topic, []))
        out[slot].partitions.append(partition)
    return out


def _check_write_version(message: DataMessage, version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 0x7FFF:
        raise IllegalArgumentError("{0}: version {1!r} is not an int16 >= 0".format(message.name, version))
    return min(version, message.versions[1])


def _encode(message: DataMessage, version: int, body: Message) -> bytes:
    layout = _check_write_version(message, version)
    w = Writer()
    w.int16(version, "version")
    encode_struct(message.struct, body, w, layout, name="{0} v{1}".format(message.name, version))
    return w.getvalue()


def _decode(message: DataMessage, data: object) -> tuple[int, Message]:
    if isinstance(data, str) or not isinstance(data, (bytes, bytearray, memoryview)):
        raise IllegalArgumentError("{0}: expected bytes, got {1}".format(message.name, type(data).__name__))
    r = Reader(data)
    version = -1
    try:
        version = r.int16("version")
        if version < 0:
            r.fail("unsupported version {0}".format(version), 0)
    except Malformed as exc:
        raise ProtocolParseError(exc.reason, message.name, version, exc.position) from None
    body = decode_struct(message.struct, r, min(version, message.versions[1]),
                         api_name=message.name, reported_version=version)
    # Trailing bytes are deliberately not an error (see the module docstring).
    return version, body


def encode_subscription(subscription: Any, version: int | None = None) -> bytes:
    """Bytes for JoinGroup's protocol metadata.

    `subscription`: a Subscription, kafka-python's ConsumerProtocolSubscription,
    or any object with .topics (and optionally .user_data, .owned_partitions,
    .generation_id, .rack_id, .version). `version` defaults to the object's own
    .version, else 3. Topics are written sorted and owned partitions sorted and
    grouped, as the Java client writes them."""
    if version is None:
        version = getattr(subscription, "version", None)
        if version is None:
            version = HIGHEST_VERSION
    topics = getattr(subscription, "topics", None)
    if topics is None or isinstance(topics, str):
        raise IllegalArgumentError("subscription needs a collection of topics, got {0!r}".format(topics))
    for topic in topics:
        if not isinstance(topic, str):
            raise IllegalArgumentError("subscription topics must be str, got {0!r}".format(topic))
    owned = _flatten(_topic_partitions_of(getattr(subscription, "owned_partitions", None), "owned_partitions"))
    for tp in owned:
        if not isinstance(tp.topic, str):
            raise IllegalArgumentError("owned_partitions: topic must be str, got {0!r}".format(tp.topic))
    names: list[str] = list(topics)
    body: Message = {
        "topics": sorted(names, key=java_string_key),
        "user_data": _user_data(getattr(subscription, "user_data", None)),
        "owned_partitions": [
            {"topic": g.topic, "partitions": g.partitions} for g in group_by_topic(owned, sort=True)
        ],
        "generation_id": getattr(subscription, "generation_id", -1),
        "rack_id": getattr(subscription, "rack_id", None),
    }
    return _encode(SUBSCRIPTION_MESSAGE, version, body)


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Bytes from JoinGroup's member metadata -> Subscription.

    As the Java client reads them: an empty rack id is None, and a negative
    generation is -1 (no generation)."""
    version, body = _decode(SUBSCRIPTION_MESSAGE, data)
    return Subscription(
        version,
        body["topics"],
        body["user_data"],
        [TopicPartitions(g["topic"], g["partitions"]) for g in body["owned_partitions"]],
        body["generation_id"] if body["generation_id"] >= 0 else -1,
        body["rack_id"] or None,
    )


def encode_assignment(assignment: Any, version: int | None = None) -> bytes:
    """Bytes for one member's SyncGroup assignment.

    `assignment`: an Assignment, kafka-python's ConsumerProtocolAssignment, a
    list of TopicPartition, or any object with .assigned_partitions (or the
    older .assignment) of (topic, partitions) pairs. Partitions are grouped
    per topic in order of first appearance, as the Java client groups them."""
    if isinstance(assignment, (list, tuple, set, frozenset)):
        assignment = Assignment(HIGHEST_VERSION, group_by_topic(list(assignment), sort=False), None)
    if version is None:
        version = getattr(assignment, "version", None)
        if version is None:
            version = HIGHEST_VERSION
    groups = getattr(assignment, "assigned_partitions", None)
    if groups is None:
        groups = getattr(assignment, "assignment", None)
    if groups is None:
        raise IllegalArgumentError("assignment has no assigned_partitions: {0!r}".format(assignment))
    flat = _flatten(_topic_partitions_of(groups, "assigned_partitions"))
    body = {
        "assigned_partitions": [
            {"topic": g.topic, "partitions": g.partitions} for g in group_by_topic(flat, sort=False)
        ],
        "user_data": _user_data(getattr(assignment, "user_data", None)),
    }
    return _encode(ASSIGNMENT_MESSAGE, version, body)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Bytes from SyncGroup's response -> Assignment.

    Fewer than two bytes (the broker sends zero bytes to a member the
    leader's assignor left out) is a ProtocolParseError, not an empty
    assignment: the Java client refuses it too (IllegalStateException), since
    it means the leader's assignor is broken, and silently consuming nothing
    would hide that."""
    version, body = _decode(ASSIGNMENT_MESSAGE, data)
    return Assignment(
        version,
        [TopicPartitions(g["topic"], g["partitions"]) for g in body["assigned_partitions"]],
        body["user_data"],
    )


def _user_data(value: object) -> bytes | None:
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        return None if value is None else bytes(value)
    encode = getattr(value, "encode", None)
    if encode is not None and not isinstance(value, str):
        # a kafka-python message object (its sticky assignor puts its
        # StickyAssignorUserData here): written as kafka-python writes it
        data = encode()
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
    raise IllegalArgumentError("user_data must be bytes or None, got {0}".format(type(value).__name__))


def with_member_state(subscription: Any, owned_partitions: Iterable[tuple[str, int]], generation_id: int,
                      rack_id: str | None) -> Subscription:
    """A copy of an assignor's subscription with the v1-v3 member fields
    filled in by the coordinator, as the Java ConsumerCoordinator fills them
    for every assignor (owned partitions, generation, rack), whatever the
    assignor itself put there. Accepts any subscription shape encode accepts."""
    return Subscription(
        HIGHEST_VERSION,
        list(subscription.topics),
        _user_data(getattr(subscription, "user_data", None)),
        group_by_topic(list(owned_partitions), sort=True),
        generation_id,
        rack_id or None,
    )


# --------------------------------------------------------------------------
# KIP-848: ConsumerGroupHeartbeat names partitions by topic id
# --------------------------------------------------------------------------
def resolve_heartbeat_assignment(topic_partitions: Iterable[Mapping[str, Any]] | None,
                                 topic_names_by_id: Mapping[bytes, str]) -> tuple[set[TopicPartition], set[bytes]]:
    """The `assignment.topic_partitions` of a ConsumerGroupHeartbeat response
    ([{topic_id, partitions}]) -> (set of TopicPartition whose topic id is
    known, set of unknown topic ids). The Java client keeps unresolved ids
    pending until metadata names them instead of dropping them; the caller
    does the same with the second set."""
    resolved: set[TopicPartition] = set()
    unresolved: set[bytes] = set()
    for entry in topic_partitions or ():
        topic_id = entry["topic_id"]
        name = topic_names_by_id.get(topic_id)
        if name is None:
            unresolved.add(topic_id)
            continue
        for partition in entry["partitions"]:
            resolved.add(TopicPartition(name, partition))
    return resolved, unresolved


def heartbeat_topic_partitions(partitions: Iterable[tuple[str, int]],
                               topic_ids_by_name: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """A set of TopicPartition -> the request's `topic_partitions` field
    ([{topic_id, partitions}], sorted for a stable request). A topic whose id
    is unknown raises IllegalArgumentError: owned partitions are reported by
    id only, so a missing id is a caller bug, not something to skip."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = []
    for topic in sorted(by_topic):
        topic_id = topic_ids_by_name.get(topic)
        if topic_id is None:
            raise IllegalArgumentError("no topic id known for owned topic {0!r}".format(topic))
        out.append({"topic_id": topic_id, "partitions": sorted(by_topic[topic])})
    return out
