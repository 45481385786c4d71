"""What a share consumer owes the broker for each record it acquired, per
partition, I/O-free.

A record acquired by a ShareFetch moves through these stages:

    buffered  -> delivered  -> pending  -> sent  -> answered
    (fetched,    (handed to    (acknow-    (in a     (the broker's answer:
     not handed   the app by    ledged,     Share-    a result per partition
     out yet)     poll())       not sent)   Fetch or  for the commit calls and
                                            Share-    the callback)
                                            Acknowl.)

Buffered records live in the fetch machine; this module holds the rest.
An acquired offset with no record to hand out (compacted away, a control
record) goes straight to pending as a GAP, as Java's client does, so the
broker can archive it instead of redelivering it at every lock expiry.

RENEW (KIP-1222) is not final: the record stays delivered (its lock is
extended) and still needs a final acknowledgement; a final one given before
the RENEW went out replaces it.

On the wire, acknowledgements travel as runs of consecutive offsets:
(first_offset, last_offset, acknowledge_types) with one type when the whole
run shares it, else one type per offset (the batch form the ShareFetch and
ShareAcknowledge specs describe).
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from fastkc.errors import IllegalStateError


class AcknowledgeType(enum.IntEnum):
    """How the application settles a delivered record (wire values of
    KIP-932 and KIP-1222)."""

    ACCEPT = 1  # processed: never delivered again
    RELEASE = 2  # not processed: delivered again (delivery_count + 1), to any member
    REJECT = 3  # unprocessable: archived, never delivered again
    RENEW = 4  # still working on it: extend the acquisition lock (KIP-1222; ShareAcknowledge v2+)


#: the wire's type 0: an acquired offset without a record (the client's, never the application's)
GAP = 0

#: acknowledgement types that end a record's acquisition (RENEW does not)
FINAL_TYPES = frozenset((AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT))


class AckBatch(NamedTuple):
    """One run of consecutive offsets as the wire carries it."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


def to_batches(types_by_offset: Mapping[int, int]) -> list[AckBatch]:
    """{offset: type} -> the wire's runs: consecutive offsets form one
    batch; a batch whose offsets share a type carries it once."""
    if not types_by_offset:
        return []
    low, high = min(types_by_offset), max(types_by_offset)
    if high - low + 1 == len(types_by_offset):
        # the usual case (a poll's records, all accepted): one run, found with C-level passes only
        kinds = set(types_by_offset.values())
        if len(kinds) == 1:
            return [AckBatch(low, high, list(kinds))]
    batches: list[AckBatch] = []
    run: list[tuple[int, int]] = []
    for offset in sorted(types_by_offset):
        if run and offset != run[-1][0] + 1:
            batches.append(_batch(run))
            run = []
        run.append((offset, types_by_offset[offset]))
    if run:
        batches.append(_batch(run))
    return batches


def _batch(run: list[tuple[int, int]]) -> AckBatch:
    types = [kind for _, kind in run]
    if all(kind == types[0] for kind in types):
        types = types[:1]
    return AckBatch(run[0][0], run[-1][0], types)


def from_batches(batches: Iterable[Mapping[str, object]]) -> dict[int, int]:
    """The wire's runs -> {offset: type} (the tests' and fake brokers' reading)."""
    out: dict[int, int] = {}
    for batch in batches:
        first, last = int(batch["first_offset"]), int(batch["last_offset"])  # type: ignore[call-overload]
        types = list(batch["acknowledge_types"])  # type: ignore[call-overload]
        for index, offset in enumerate(range(first, last + 1)):
            out[offset] = int(types[0] if len(types) == 1 else types[index])
    return out


class PartitionAcks:
    """One partition's delivered, pending and sent acknowledgements."""

    __slots__ = ("delivered", "pending", "sent", "_renew_maybe")

    def __init__(self) -> None:
        self.delivered: dict[int, int] = {}  # offset -> delivery_count: the application holds it, unsettled
        self.pending: dict[int, int] = {}  # offset -> type: settled by the application, not sent yet
        self.sent: dict[int, int] = {}  # offset -> type: in a request on the wire
        self._renew_maybe = False  # a RENEW went into pending since it was last found without one

    def deliver(self, offset: int, delivery_count: int) -> None:
        self.delivered[offset] = delivery_count

    def gap(self, offset: int) -> None:
        self.pending[offset] = GAP

    def deliver_many(self, offsets: list[int], delivery_counts: Iterable[int]) -> None:
        """A poll's records of this partition (offsets in a list) become delivered."""
        self.delivered.update(zip(offsets, delivery_counts))

    def settle_many(self, offsets: list[int], kind: int) -> None:
        """Offsets (not delivered, distinct from anything pending) settled as
        one type: gaps and releases of a decoded fetch."""
        self.pending.update(dict.fromkeys(offsets, kind))

    def check_many(self, offsets: list[int]) -> bool:
        """True when every offset is delivered and none repeats: what
        acknowledge_many needs; the caller words the failure (one offset at
        a time, through acknowledge) only when this says False."""
        wanted = set(offsets)
        return len(wanted) == len(offsets) and self.delivered.keys() >= wanted

    def acknowledge_many(self, offsets: list[int], kind: AcknowledgeType) -> None:
        """Delivered records (check_many said so) settled as one type, with
        C-level dict passes instead of one Python step per record."""
        self.pending.update(dict.fromkeys(offsets, int(kind)))
        if kind not in FINAL_TYPES:
            self._renew_maybe = True
            return
        if len(offsets) == len(self.delivered):
            self.delivered.clear()  # distinct and all delivered: the whole delivery
        else:
            for offset in offsets:
                del self.delivered[offset]

    def acknowledge(self, offset: int, kind: AcknowledgeType, what: str) -> None:
        """The application settles one delivered record. Raises
        IllegalStateError (nothing changed) for a record this consumer did
        not deliver, or did deliver and the application settled already."""
        if offset not in self.delivered:
            settled = self.pending.get(offset, self.sent.get(offset))
            if settled is not None and settled != AcknowledgeType.RENEW:
                raise IllegalStateError("{0} was acknowledged already ({1}); a record is acknowledged once".format(
                    what, _name(settled)))
            raise IllegalStateError("{0} was not delivered by this consumer's last poll(), or was acknowledged "
                                    "and committed already".format(what))
        if kind in FINAL_TYPES:
            del self.delivered[offset]
        else:
            self._renew_maybe = True
        self.pending[offset] = int(kind)

    def acknowledge_all(self, kind: AcknowledgeType) -> int:
        """Every delivered record settled as `kind` (implicit mode, close)."""
        count = len(self.delivered)
        self.pending.update(dict.fromkeys(self.delivered, int(kind)))
        if kind in FINAL_TYPES:
            self.delivered.clear()
        else:
            self._renew_maybe = True
        return count

    def has_renew(self) -> bool:
        """A RENEW is pending (asked at every request round: the scan runs
        only after a RENEW went in, not for every poll's ACCEPTs)."""
        if not self._renew_maybe:
            return False
        self._renew_maybe = AcknowledgeType.RENEW in self.pending.values()
        return self._renew_maybe

    def take(self) -> dict[int, int]:
        """pending -> sent: what goes into the next request."""
        taken = self.pending
        self.pending = {}
        self._renew_maybe = False
        self.sent.update(taken)
        return taken

    def answered(self, offsets: Mapping[int, int]) -> None:
        """The broker answered these sent acknowledgements."""
        if len(offsets) == len(self.sent) and self.sent.keys() == offsets.keys():
            self.sent.clear()  # the usual case: one request in flight per leader carried all of them
            return
        for offset in offsets:
            self.sent.pop(offset, None)

    def forget_delivered(self) -> list[int]:
        """Fencing: the broker released what this member held; the
        application can no longer settle it."""
        offsets = sorted(self.delivered)
        self.delivered.clear()
        return offsets

    @property
    def idle(self) -> bool:
        return not (self.delivered or self.pending or self.sent)


def _name(kind: int) -> str:
    return "GAP" if kind == GAP else AcknowledgeType(kind).name
