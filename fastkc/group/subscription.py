"""What a consumer is subscribed to, and the partitions that gives it
without a group: one state and one set of rules for `KafkaConsumer` and
`fastkc.aio.AIOKafkaConsumer`. I/O-free: the consumer hands in its cached
metadata and applies the answer.

The rules (kafka-python's and aiokafka's):
- a consumer subscribes to topics or to a pattern, or assigns partitions
  itself: the three are exclusive (IllegalStateError);
- a pattern matches the cluster's topic names (`re.match`), internal topics
  left out when exclude_internal_topics;
- without a group_id, a subscribed consumer is assigned every known
  partition of its topics, and follows metadata (new partitions, new
  matching topics); with one, the group assigns.
"""
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

from fastkc.errors import IllegalStateError
from fastkc.structs import TopicPartition

EXCLUSIVE = "Subscription to topics, partitions and pattern are mutually exclusive"

#: subscribe()'s pattern: a regular expression, or its source
Pattern = str | re.Pattern[str]


class TopicView(Protocol):
    """What the rules read of a topic's cached metadata (client.TopicMetadata)."""

    @property
    def is_internal(self) -> bool: ...

    @property
    def partitions(self) -> Collection[int]: ...

    @property
    def error_code(self) -> int: ...


def visible_topics(topics: Mapping[str, TopicView], exclude_internal: bool,
                   pattern: re.Pattern[str] | None = None) -> set[str]:
    """The topic names a consumer sees: those the metadata knows without an
    error, internal ones hidden when exclude_internal, and matching
    `pattern` when one is given."""
    return {name for name, meta in topics.items()
            if meta.error_code == 0 and not (exclude_internal and meta.is_internal)
            and (pattern is None or pattern.match(name))}


def compile_pattern(pattern: Pattern) -> re.Pattern[str]:
    return re.compile(pattern) if isinstance(pattern, str) else pattern


class SubscriptionState:
    """The subscription: None (none), a set of topics, or a pattern (whose
    matches are `topics`, once metadata said which)."""

    def __init__(self) -> None:
        self.topics: set[str] | None = None  # a set while subscribed
        self.pattern: re.Pattern[str] | None = None

    @property
    def subscribed(self) -> bool:
        return self.topics is not None

    def check_assign(self) -> None:
        """assign() is refused while subscribed."""
        if self.subscribed:
            raise IllegalStateError(EXCLUSIVE)

    def check_subscribe(self, topics: Collection[str], pattern: Pattern | None, assigned: bool) -> None:
        """subscribe() takes topics or a pattern, never both, and is
        refused while partitions are assigned by hand (`assigned`: the
        consumer has an assignment and no subscription). Truthiness, as
        kafka-python and aiokafka test it: an empty pattern is no pattern."""
        if topics and pattern:
            raise IllegalStateError(EXCLUSIVE)
        if assigned and not self.subscribed:
            raise IllegalStateError(EXCLUSIVE)

    def subscribe(self, topics: Iterable[str], pattern: Pattern | None) -> None:
        """Topics, or a pattern: its matches are unknown until metadata
        comes (`follow_metadata`)."""
        if pattern:
            self.pattern = compile_pattern(pattern)
            self.topics = set()
        else:
            self.pattern = None
            self.topics = set(topics)

    def unsubscribe(self) -> None:
        self.topics = None
        self.pattern = None

    def follow_metadata(self, topics: Mapping[str, TopicView], exclude_internal: bool) -> list[TopicPartition]:
        """A pattern's matches taken again from `topics`; every known
        partition of the subscribed topics, in (topic, partition) order
        (what a consumer without a group is assigned). Not subscribed:
        nothing."""
        if self.topics is None:
            return []
        if self.pattern is not None:
            self.topics = visible_topics(topics, exclude_internal, self.pattern)
        wanted: list[TopicPartition] = []
        for name in sorted(self.topics):
            meta = topics.get(name)
            if meta is None or meta.error_code != 0:
                continue
            wanted.extend(TopicPartition(name, p) for p in sorted(meta.partitions))
        return wanted
