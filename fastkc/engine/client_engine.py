"""ClientEngine: what every blocking front-end needs of the cluster,
whatever it consumes.

It owns the KafkaClient (connections, metadata, the wakeup socket pair),
the clock, the open/closed state and wakeup(). `ConsumerEngine` (this
package's `__init__`) adds the fetcher, the group and the Arrow stream on
top of it for KafkaConsumer and the tools built on it; KafkaShareConsumer
drives its share machines over a `ClientEngine` of its own. Both front-ends
therefore close, wake and report "closed" by the same rules.

The API (all on the thread that drives the front-end, except `wakeup`):

- lifecycle: `closed`, `check_open()`, `mark_closed()`, `close_client()`.
- waking: `wakeup()` (any thread) makes the blocking call in progress, or
  the next one, raise WakeupException once through `raise_wakeup()`;
  `forget_wakeup()` drops a pending one (close() is not interrupted).
- metadata: `cluster` (read-only view), `ensure_metadata(topics, timeout_ms)`,
  `leader_for(tp)`.
- `client`: the KafkaClient itself, for the driver that moves a machine's
  requests over its connections.
"""
import time
from collections.abc import Callable, Iterable
from typing import Any

from fastkc.client import KafkaClient
from fastkc.cluster import ClusterMetadata
from fastkc.errors import IllegalStateError, WakeupException
from fastkc.structs import TopicPartition


class ClientEngine:
    """See the module docstring. `owner` names the front-end in the
    IllegalStateError a call after close() raises ("KafkaConsumer is closed")."""

    def __init__(self, config: Any, *, owner: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._owner = owner
        self._closed = False
        self.client = KafkaClient(config, clock=clock)
        # wakeup(): a flag for the next call and the client's wakeup socket
        # pair for the poll in progress
        self._wakeup_pending = False
        self.client.enable_wakeup()

    # --- lifecycle -------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def mark_closed(self) -> None:
        """Refuse every later call (the front-end is closing)."""
        self._closed = True

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("{0} is closed".format(self._owner))

    def close_client(self) -> None:
        """Refuse every later call and close the connections."""
        self._closed = True
        self.client.close()

    # --- waking ----------------------------------------------------------------------
    def wakeup(self) -> None:
        """From any thread: the blocking call in progress (or the next one)
        raises WakeupException, once."""
        self._wakeup_pending = True
        self.client.wakeup()

    def raise_wakeup(self) -> None:
        if self._wakeup_pending:
            self._wakeup_pending = False
            raise WakeupException("interrupted by wakeup()")

    def forget_wakeup(self) -> None:
        """Drop a wakeup() not yet raised (close() runs to its end)."""
        self._wakeup_pending = False

    # --- metadata --------------------------------------------------------------------
    @property
    def cluster(self) -> ClusterMetadata:
        cluster: ClusterMetadata = self.client.cluster
        return cluster

    def ensure_metadata(self, topics: Iterable[str], timeout_ms: float) -> None:
        """Metadata of every topic in `topics` (one request for those not
        known yet); a topic that does not exist is absent afterwards.
        KafkaTimeoutError when no answer came within timeout_ms."""
        cluster = self.client.cluster
        unknown = [t for t in topics if t not in cluster.topics or cluster.topics[t].error_code != 0]
        if not unknown:
            return
        self.client.add_topics(unknown)
        self.client.wait_for_metadata(timeout_ms)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The node id of `tp`'s leader, or None while it is not known."""
        leader: int | None = self.client.cluster.leader_for(tp)
        return leader
