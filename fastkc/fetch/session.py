"""The client side of one broker's incremental fetch session (KIP-227).

The first Fetch to a broker is full (epoch 0) and creates the session; later
ones send only the partitions whose fetch state changed, plus the ones to
forget. Any top-level error, or a lost connection, starts a new full session
(the epoch rule is fastkc/session_epoch.py's, shared with share sessions).
"""
from fastkc import session_epoch
from fastkc.fetch.codes import NONE
from fastkc.session_epoch import SessionEpoch
from fastkc.structs import TopicPartition

#: what a session holds per partition: (fetch_offset, leader_epoch,
#: last_fetched_epoch, max_bytes)
PartitionFetch = tuple[int, int, int, int]


class FetchSession:
    INITIAL_EPOCH = session_epoch.INITIAL_EPOCH
    FINAL_EPOCH = session_epoch.FINAL_EPOCH

    def __init__(self, node_id: int, incremental: bool) -> None:
        self.node_id = node_id
        self.incremental = incremental
        self.session_id = 0
        self._epoch = SessionEpoch()
        self.partitions: dict[TopicPartition, PartitionFetch] = {}  # what the broker's session holds

    @property
    def epoch(self) -> int:
        """The epoch the next incremental Fetch carries."""
        return self._epoch.value

    def build(self, wanted: dict[TopicPartition, PartitionFetch],
              ) -> tuple[int, int, list[tuple[TopicPartition, PartitionFetch]], list[TopicPartition]]:
        """wanted: {tp: (fetch_offset, leader_epoch, last_fetched_epoch,
        max_bytes)} in fetch order. Returns (session_id, epoch, to_send,
        to_forget), to_send in the same order."""
        if not self.incremental:
            return 0, self.FINAL_EPOCH, list(wanted.items()), []
        if self.session_id == 0 or self._epoch.opening:
            self.partitions = dict(wanted)
            return self.session_id, self.INITIAL_EPOCH, list(wanted.items()), []
        to_send = [(tp, data) for tp, data in wanted.items() if self.partitions.get(tp) != data]
        to_forget = [tp for tp in self.partitions if tp not in wanted]
        for tp in to_forget:
            del self.partitions[tp]
        for tp, data in to_send:
            self.partitions[tp] = data
        return self.session_id, self.epoch, to_send, to_forget

    def handle_response(self, error_code: int, session_id: int, epoch_sent: int) -> bool:
        """Advance the session after a response (True) or reset it after a
        top-level error (False)."""
        if not self.incremental:
            return True
        if error_code != NONE:
            self.reset()
            return False
        if epoch_sent == self.INITIAL_EPOCH:
            if session_id == 0:  # the broker would not create a session: full fetches again
                self.reset()
                return True
            self.session_id = session_id
        self._epoch.answered()
        return True

    def reset(self) -> None:
        self.session_id = 0
        self._epoch.restart()
        self.partitions = {}

    def partitions_in_session(self) -> set[TopicPartition]:
        return set(self.partitions)
