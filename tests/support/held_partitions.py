"""The fetch side of fastkc/group/committed_starts.py for tests whose group
driver runs without a fetcher: partitions held for their committed offsets,
and where each one started (`starts`: tp -> offset, or None when nothing was
committed and auto_offset_reset decides)."""


class HeldPartitions:
    def __init__(self):
        self.held = set()
        self.starts = {}

    def assigned_now(self):
        """The partitions the app holds now (a subclass's assignment)."""
        return set(getattr(self, "assigned", ()))

    def hold_for_committed(self, tp, held=True):
        if held:
            self.held.add(tp)
        elif tp in self.held:
            self.held.discard(tp)
            self.started(tp, None)

    def is_held(self, tp):
        return tp in self.held and tp in self.assigned_now()

    def seek(self, tp, offset, epoch):
        self.held.discard(tp)
        self.started(tp, offset)

    def started(self, tp, offset):
        self.starts[tp] = offset
