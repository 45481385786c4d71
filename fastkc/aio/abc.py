"""aiokafka 0.14's abstract classes (`aiokafka.abc`) and how the driver calls them.

ConsumerRebalanceListener: as in aiokafka, both callbacks are abstract and
each may be a plain function or a coroutine function; the consumer waits for
a callback (awaiting it when it returns a coroutine) before it goes on with
the rebalance, so a callback may call consumer methods (commit, seek,
position) on the partitions it is given. aiokafka has no
on_partitions_lost: a lost assignment is reported as revoked.

AbstractTokenProvider: SASL OAUTHBEARER's provider, whose token() is a
coroutine (kafka-python's, which fastkc's synchronous consumer takes, is a
plain method): the asyncio driver awaits it before the SASL step.
"""
import abc
import asyncio
from collections.abc import Awaitable, Callable

from fastkc.structs import TopicPartition


class ConsumerRebalanceListener(abc.ABC):
    """Callbacks run when the group changes this consumer's partitions
    (subscribe() only; an assign()ed consumer never rebalances).

    Every member runs on_partitions_revoked before any member runs
    on_partitions_assigned, so offsets saved in the first are there for the
    new owner's second."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> Awaitable[None] | None:
        """Called (function or coroutine) after fetching stopped and before
        the rebalance starts, with the partitions of the last assignment.
        With manual commits, commit what was consumed here. Not called by
        stop()."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> Awaitable[None] | None:
        """Called (function or coroutine) after the new assignment is known
        and before fetching starts again, with the whole new assignment."""


class AbstractTokenProvider(abc.ABC):
    """SASL OAUTHBEARER tokens for the asyncio consumer: `async def token()`
    returns the current token (reuse it until it nears expiry: it is asked
    for at every connection); extensions() optionally returns KIP-342's
    key/value extensions."""

    @abc.abstractmethod
    async def token(self) -> str:
        """The token (str). A synchronous source can be wrapped with
        `await asyncio.get_running_loop().run_in_executor(None, sync_token)`."""

    def extensions(self) -> dict[str, str]:
        return {}


def check_listener(listener: object) -> ConsumerRebalanceListener | None:
    """What subscribe(listener=...) accepts: None or a ConsumerRebalanceListener
    (aiokafka raises TypeError for anything else, and so does this)."""
    if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
        raise TypeError("listener should be an instance of ConsumerRebalanceListener")
    return listener


async def call_listener(callback: Callable[[list[TopicPartition]], object], partitions: list[TopicPartition]) -> object:
    """Run one listener callback the way aiokafka does: call it, and await
    what it returned if that is a coroutine (as aiokafka, only a coroutine:
    a future returned by a plain function is not waited for). Exceptions
    propagate: the driver decides what a failing callback does to the
    rebalance (aiokafka logs it and goes on)."""
    result = callback(partitions)
    if asyncio.iscoroutine(result):
        result = await result
    return result
