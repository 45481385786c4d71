"""The fetch path's reactions to what brokers answer, shared by the planner
(Fetch) and the offset requests (ListOffsets, OffsetForLeaderEpoch): a
partition error gets the reaction fastkc.fetch.codes names for it; a
request that failed, or partitions an answer left out, are asked again
after retry_backoff_ms (never in a loop on instant answers)."""
import logging
from collections.abc import Iterable
from typing import Protocol

from fastkc.config import Config
from fastkc.errors import KafkaProtocolError, OffsetOutOfRangeError, TopicAuthorizationFailedError, for_code
from fastkc.fetch import codes
from fastkc.fetch.partitions import FetchPartitions
from fastkc.fetch.state import PartitionState
from fastkc.structs import TopicPartition

log = logging.getLogger("fastkc.fetch")


def fatal(error: BaseException | None) -> bool:
    """An error the driver's policy turned fatal (a connection's parse
    failures past its limit): the application sees it."""
    return isinstance(error, KafkaProtocolError) and not error.retriable


class BufferDropper(Protocol):
    """What a reset or a truncation asks of the record buffer (buffer.py)."""

    def drop(self, state: PartitionState) -> None:
        """Clear the partition's buffered fetches: fetched again from its position."""
        ...


class Reactions:
    def __init__(self, config: Config, partitions: FetchPartitions, buffer: BufferDropper) -> None:
        self.config = config
        self._partitions = partitions
        self._buffer = buffer
        self.backoff = config["retry_backoff_ms"] / 1000.0

    def retry_later(self, tps: Iterable[TopicPartition], now: float, error: BaseException | None = None,
                    metadata: bool = True) -> None:
        """Ask for `tps` again after the backoff (and fresh metadata first,
        unless `metadata` is False); `error` ended the request."""
        if fatal(error):  # the client's parse-failure limit was reached (or the broker's framing is broken)
            assert error is not None
            self._partitions.fail(error)
        self._partitions.replan()
        until = now + self.backoff
        states = self._partitions.states
        for tp in tps:
            state = states.get(tp)
            if state is not None:
                state.next_retry = until
        if metadata:
            self._partitions.want_metadata()

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        """The position of tp comes from a ListOffsets by `strategy`."""
        self._partitions.replan()
        state = self._partitions.states[tp]
        self._buffer.drop(state)
        state.await_reset(strategy)

    def partition_error(self, tp: TopicPartition, code: int, what: str, now: float,
                        state: PartitionState | None = None) -> None:
        """The reaction codes.reaction(code) names (documented there)."""
        partitions = self._partitions
        partitions.replan()
        state = state or partitions.states.get(tp)
        reaction = codes.reaction(code)
        if reaction == codes.RESET and state is not None:
            policy = self.config["auto_offset_reset"]
            if policy == "none":
                partitions.fail(OffsetOutOfRangeError("{0}: fetch offset {1} is out of range and "
                                                      "auto_offset_reset='none'".format(tp, state.fetch_offset)))
                state.next_retry = now + self.backoff
                return
            log.info("%s: offset %s out of range, resetting to %s", tp, state.fetch_offset, policy)
            self.request_reset(tp, policy)
            return
        if reaction == codes.FAIL:
            partitions.fail(TopicAuthorizationFailedError("{0} for {1}".format(what, tp)))
            return
        if reaction == codes.REFRESH_METADATA:
            if state is not None:
                state.preferred_replica = None
            partitions.want_metadata()
        else:
            log.warning("%s for %s: %s", what, tp, for_code(code).__name__)
        if state is not None:
            state.next_retry = now + self.backoff
